//! [`MemoryRateLimitStore`]: counters in this process's memory.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;

use super::{Hit, RateKey, RateLimitError, RateLimitStore, now_ms, window_at};

/// This store's [`RateLimitStore::name`].
pub const NAME: &str = "memory";

/// Counters in memory: one process only (every instance of a fleet would count on its own),
/// forgotten on restart.
///
/// Bounded: at most `capacity` counters (one per principal and limited tool with a window
/// not yet over). A counter whose window has ended is dropped when room is needed; when every
/// counter is live, a call needing a new one fails with [`RateLimitError::Full`] (the server
/// then fails closed or open, see [`StoreFailure`](super::StoreFailure)) rather than forget a
/// live count. Expired counters are found without scanning while none can have expired (the
/// store remembers the earliest end of a window it holds).
#[derive(Debug)]
pub struct MemoryRateLimitStore {
    capacity: usize,
    state: Mutex<State>,
    clock: Clock,
}

#[derive(Debug, Default)]
struct State {
    counters: HashMap<RateKey, Counter>,
    /// No counter's window ends before this (Unix ms): a sweep before it finds nothing.
    earliest_end: u64,
}

#[derive(Debug, Clone, Copy)]
struct Counter {
    start: u64,
    end: u64,
    count: u64,
}

/// Where the time comes from: the system clock, or (tests) a hand-set one.
#[derive(Debug)]
enum Clock {
    System,
    #[cfg(test)]
    Manual(std::sync::Arc<std::sync::atomic::AtomicU64>),
}

impl Clock {
    fn now_ms(&self) -> u64 {
        match self {
            Clock::System => now_ms(),
            #[cfg(test)]
            Clock::Manual(ms) => ms.load(std::sync::atomic::Ordering::SeqCst),
        }
    }
}

impl Default for MemoryRateLimitStore {
    fn default() -> Self {
        Self::new(Self::DEFAULT_CAPACITY)
    }
}

impl MemoryRateLimitStore {
    /// Counters held at most unless [`MemoryRateLimitStore::new`] says otherwise (about
    /// 6 MB at most).
    pub const DEFAULT_CAPACITY: usize = 100_000;

    /// A store holding at most `capacity` counters (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            state: Mutex::new(State::default()),
            clock: Clock::System,
        }
    }

    /// The most counters this store holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Counters held now (live or not yet dropped).
    pub fn len(&self) -> usize {
        self.lock().counters.len()
    }

    /// Whether no counter is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic cannot leave a counter half-written: every update is one assignment.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn count(&self, key: &RateKey, window: Duration) -> Result<Hit, RateLimitError> {
        let now = self.clock.now_ms();
        let (start, end) = window_at(now, window.as_secs());
        let mut state = self.lock();
        let resets_in = Duration::from_millis(end.saturating_sub(now));
        if let Some(counter) = state.counters.get_mut(key) {
            if counter.start == start {
                counter.count = counter.count.saturating_add(1);
            } else {
                *counter = Counter {
                    start,
                    end,
                    count: 1,
                };
            }
            let count = counter.count;
            state.earliest_end = state.earliest_end.min(end);
            return Ok(Hit::new(count, resets_in));
        }
        if state.counters.len() >= self.capacity {
            if now >= state.earliest_end {
                state.counters.retain(|_, c| c.end > now);
                state.earliest_end = state
                    .counters
                    .values()
                    .map(|c| c.end)
                    .min()
                    .unwrap_or(u64::MAX);
            }
            if state.counters.len() >= self.capacity {
                return Err(RateLimitError::Full {
                    capacity: self.capacity,
                });
            }
        }
        if state.counters.is_empty() {
            state.earliest_end = end;
        } else {
            state.earliest_end = state.earliest_end.min(end);
        }
        state.counters.insert(
            *key,
            Counter {
                start,
                end,
                count: 1,
            },
        );
        Ok(Hit::new(1, resets_in))
    }
}

impl RateLimitStore for MemoryRateLimitStore {
    fn name(&self) -> &'static str {
        NAME
    }

    fn hit<'a>(
        &'a self,
        key: &'a RateKey,
        window: Duration,
    ) -> BoxFuture<'a, Result<Hit, RateLimitError>> {
        // Ready at once: no I/O, so a transport that polls once sees the verdict.
        Box::pin(std::future::ready(self.count(key, window)))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    fn manual(capacity: usize, start_ms: u64) -> (MemoryRateLimitStore, Arc<AtomicU64>) {
        let clock = Arc::new(AtomicU64::new(start_ms));
        let store = MemoryRateLimitStore {
            capacity,
            state: Mutex::new(State::default()),
            clock: Clock::Manual(Arc::clone(&clock)),
        };
        (store, clock)
    }

    const MIN: Duration = Duration::from_secs(60);

    fn key(p: &str) -> RateKey {
        RateKey::new(p, "tool", MIN)
    }

    #[test]
    fn counts_within_a_window_and_starts_over_in_the_next() {
        // 10 s into a one-minute window.
        let (store, clock) = manual(10, 1_000_000 * 60 + 10_000);
        for n in 1..=3 {
            let hit = store.count(&key("a"), MIN).unwrap();
            assert_eq!(hit.count, n);
            assert_eq!(hit.resets_in, Duration::from_secs(50));
        }
        clock.fetch_add(49_999, Ordering::SeqCst);
        let hit = store.count(&key("a"), MIN).unwrap();
        assert_eq!((hit.count, hit.resets_in), (4, Duration::from_millis(1)));
        // The window rolls over: the count starts again, the full window ahead.
        clock.fetch_add(1, Ordering::SeqCst);
        let hit = store.count(&key("a"), MIN).unwrap();
        assert_eq!((hit.count, hit.resets_in), (1, MIN));
        // Another key has its own count.
        assert_eq!(store.count(&key("b"), MIN).unwrap().count, 1);
        assert_eq!(store.count(&key("a"), MIN).unwrap().count, 2);
    }

    #[test]
    fn a_full_store_drops_ended_windows_and_refuses_rather_than_forget_live_ones() {
        let (store, clock) = manual(2, 60_000);
        store.count(&key("a"), MIN).unwrap();
        store.count(&key("b"), MIN).unwrap();
        // Full of live counters: a third key is refused, the live ones keep counting.
        let err = store.count(&key("c"), MIN).unwrap_err();
        assert!(matches!(err, RateLimitError::Full { capacity: 2 }), "{err}");
        assert!(err.to_string().contains("memory:N"), "{err}");
        assert_eq!(store.count(&key("a"), MIN).unwrap().count, 2);
        assert_eq!(store.len(), 2);
        // Once their window has ended, the old counters give way.
        clock.fetch_add(60_000, Ordering::SeqCst);
        assert_eq!(store.count(&key("c"), MIN).unwrap().count, 1);
        assert_eq!(store.len(), 1);
        assert_eq!(store.count(&key("a"), MIN).unwrap().count, 1);
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn a_counter_renewed_into_a_new_window_is_not_dropped_as_ended() {
        let (store, clock) = manual(2, 60_000);
        let short = Duration::from_secs(1);
        let k1 = RateKey::new("a", "t", short);
        store.count(&k1, short).unwrap();
        store.count(&key("b"), MIN).unwrap();
        // k1 moves into its next window; the sweep must keep it.
        clock.fetch_add(1_000, Ordering::SeqCst);
        assert_eq!(store.count(&k1, short).unwrap().count, 1);
        assert!(store.count(&key("c"), MIN).is_err());
        assert_eq!(store.count(&k1, short).unwrap().count, 2);
    }

    #[tokio::test]
    async fn concurrent_hits_each_get_their_own_count() {
        let store = Arc::new(MemoryRateLimitStore::new(16));
        let mut tasks = Vec::new();
        for _ in 0..64 {
            let store = Arc::clone(&store);
            tasks.push(tokio::spawn(async move {
                store.hit(&key("a"), MIN).await.unwrap().count
            }));
        }
        let mut counts = Vec::new();
        for t in tasks {
            counts.push(t.await.unwrap());
        }
        counts.sort_unstable();
        // Unless the test straddles a window boundary, the counts are exactly 1..=64.
        if counts[0] == 1 && counts.windows(2).all(|w| w[1] == w[0] + 1) {
            assert_eq!(counts.last(), Some(&64));
        } else {
            assert!(counts.iter().all(|c| *c >= 1 && *c <= 64));
        }
    }
}
