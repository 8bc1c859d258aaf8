//! A per-thread scratch buffer for bytes that are written only to be hashed (argument and
//! binding digests): the hot MRTR path computes several per request, and a fresh `Vec` for
//! each is an allocation and a free on every call.

use std::cell::Cell;

/// A buffer that grew past this is dropped after use instead of kept, so one large input does
/// not pin memory on a worker thread for the rest of its life.
const KEEP_AT_MOST: usize = 16 * 1024;

thread_local! {
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Runs `f` with an empty buffer: this thread's scratch buffer, taken out for the call and put
/// back after it. A nested use (a hand-written form's binding writer may itself compute a
/// digest) finds the slot empty and starts from a new buffer, as does a use while the thread
/// shuts down.
pub(crate) fn with_buffer<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    let mut buf = SCRATCH.try_with(Cell::take).unwrap_or_default();
    buf.clear();
    let out = f(&mut buf);
    if buf.capacity() <= KEEP_AT_MOST {
        // Fails only while the thread shuts down; the buffer is then simply dropped.
        let _ = SCRATCH.try_with(|slot| slot.set(buf));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_use_starts_empty() {
        with_buffer(|b| b.extend_from_slice(b"first"));
        with_buffer(|b| {
            assert!(b.is_empty());
            b.extend_from_slice(b"second");
        });
    }

    #[test]
    fn a_nested_use_gets_its_own_buffer() {
        let (outer, inner) = with_buffer(|outer| {
            outer.extend_from_slice(b"outer");
            let inner = with_buffer(|inner| {
                inner.extend_from_slice(b"inner");
                inner.clone()
            });
            (outer.clone(), inner)
        });
        assert_eq!(outer, b"outer");
        assert_eq!(inner, b"inner");
    }

    #[test]
    fn a_large_buffer_is_not_kept() {
        with_buffer(|b| b.resize(KEEP_AT_MOST * 2, 0));
        let capacity = with_buffer(|b| b.capacity());
        assert!(capacity <= KEEP_AT_MOST, "{capacity}");
    }
}
