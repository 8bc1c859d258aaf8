//! The binary encoding of a [`StatePayload`] inside a version-2 token.
//!
//! Version 1 carried the payload as JSON, with its digests and nonce base64-encoded inside the
//! (again base64-encoded) JSON text. Version 2 writes the same fields as bytes: the token is
//! about a third shorter, so every retry uploads, MACs and decodes less, and opening it needs
//! no JSON parser except for the answers of earlier rounds (kept as JSON text because they are
//! arbitrary JSON values).
//!
//! Layout, in this order (`uvarint` is unsigned LEB128, minimal, at most 64 bits; `str` is a
//! `uvarint` byte length followed by that many bytes of UTF-8):
//!
//! ```text
//! principal   str
//! method      str
//! target      str
//! arg_digest  32 bytes
//! bindings    uvarint count, then count x (key str, digest 32 bytes), keys strictly ascending
//! round       uvarint (fits u32)
//! answers     uvarint count, then count x (key str, value str holding JSON), keys distinct
//! issued_at   uvarint
//! expires_at  uvarint
//! nonce       16 bytes
//! correlations uvarint count, then count x (key str, id 16 bytes), keys strictly ascending
//! flow_trace  absent (no bytes), or 0x01, trace id 16 bytes, span id 8 bytes
//! ```
//!
//! `flow_trace` came later: a payload without one is encoded exactly as before, so tokens
//! sealed by earlier builds still open (and theirs, without the field, are the same bytes).
//!
//! Decoding is strict: trailing bytes, non-minimal varints, unsorted or repeated keys and
//! invalid UTF-8 are all refused, so a payload has exactly one encoding (up to the spelling of
//! the answers' JSON text, which serde_json reads). The bytes are only
//! decoded after the MAC has been verified, but the decoder still treats them as untrusted:
//! every length is checked against what is left, and nothing can panic.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{ArgDigest, CorrelationId, FlowTrace, Nonce, StatePayload};

/// Why an authenticated payload could not be read; the caller maps it to
/// [`super::StateError::InvalidPayload`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unreadable;

/// Appends the encoding of `payload` to `out`.
pub(crate) fn encode(payload: &StatePayload, out: &mut Vec<u8>) {
    put_str(out, &payload.principal);
    put_str(out, &payload.method);
    put_str(out, &payload.target);
    out.extend_from_slice(payload.arg_digest.as_bytes());
    put_uvarint(out, payload.bindings.len() as u64);
    for (key, digest) in &payload.bindings {
        put_str(out, key);
        out.extend_from_slice(digest.as_bytes());
    }
    put_uvarint(out, u64::from(payload.round));
    put_uvarint(out, payload.answers.len() as u64);
    for (key, value) in &payload.answers {
        put_str(out, key);
        // A `Value` always serialises (its keys are strings); written with a length prefix.
        let json = serde_json::to_vec(value).unwrap_or_default();
        put_uvarint(out, json.len() as u64);
        out.extend_from_slice(&json);
    }
    put_uvarint(out, payload.issued_at);
    put_uvarint(out, payload.expires_at);
    out.extend_from_slice(payload.nonce.as_bytes());
    put_uvarint(out, payload.correlations.len() as u64);
    for (key, id) in &payload.correlations {
        put_str(out, key);
        out.extend_from_slice(id.0.as_bytes());
    }
    if let Some(flow) = &payload.flow_trace {
        out.push(FLOW_TRACE_TAG);
        out.extend_from_slice(&flow.trace_id);
        out.extend_from_slice(&flow.span_id);
    }
}

/// The byte that starts the optional flow-trace field.
const FLOW_TRACE_TAG: u8 = 0x01;

/// Reads a payload written by [`encode`]; the whole input must be consumed.
pub(crate) fn decode(bytes: &[u8]) -> Result<StatePayload, Unreadable> {
    let mut r = Reader { rest: bytes };
    let principal = r.string()?;
    let method = r.string()?;
    let target = r.string()?;
    let arg_digest = ArgDigest::from_bytes(r.array()?);

    let bindings = sorted_map(&mut r, |r| Ok(ArgDigest::from_bytes(r.array()?)))?;

    let round = u32::try_from(r.uvarint()?).map_err(|_| Unreadable)?;

    let mut answers = Map::new();
    for _ in 0..r.count()? {
        let key = r.string()?;
        let value: Value = serde_json::from_slice(r.bytes()?).map_err(|_| Unreadable)?;
        if answers.insert(key, value).is_some() {
            return Err(Unreadable);
        }
    }

    let issued_at = r.uvarint()?;
    let expires_at = r.uvarint()?;
    let nonce = Nonce::from_bytes(r.array()?);

    let correlations = sorted_map(&mut r, |r| Ok(CorrelationId(Nonce::from_bytes(r.array()?))))?;

    let flow_trace = match r.rest.first() {
        None => None,
        Some(&FLOW_TRACE_TAG) => {
            r.rest = &r.rest[1..];
            let trace_id = r.array()?;
            let span_id = r.array()?;
            // Zero ids are never written: refusing them keeps one encoding per payload.
            Some(FlowTrace::new(trace_id, span_id).ok_or(Unreadable)?)
        }
        Some(_) => return Err(Unreadable),
    };

    if !r.rest.is_empty() {
        return Err(Unreadable);
    }
    Ok(StatePayload {
        principal,
        method,
        target,
        arg_digest,
        bindings,
        round,
        answers,
        issued_at,
        expires_at,
        nonce,
        correlations,
        flow_trace,
    })
}

/// A count, then that many (key, value) entries with strictly ascending keys.
fn sorted_map<'a, T>(
    r: &mut Reader<'a>,
    mut value: impl FnMut(&mut Reader<'a>) -> Result<T, Unreadable>,
) -> Result<BTreeMap<String, T>, Unreadable> {
    let mut map = BTreeMap::new();
    for _ in 0..r.count()? {
        let key = r.string()?;
        if map.last_key_value().is_some_and(|(prev, _)| *prev >= key) {
            return Err(Unreadable);
        }
        let v = value(r)?;
        map.insert(key, v);
    }
    Ok(map)
}

fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        // Truncation is the point: the low seven bits, with the continuation bit set.
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_uvarint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn uvarint(&mut self) -> Result<u64, Unreadable> {
        let mut value = 0u64;
        for (i, &byte) in self.rest.iter().enumerate().take(10) {
            let bits = u64::from(byte & 0x7f);
            // The tenth byte may only carry the single remaining bit of a u64.
            if i == 9 && byte > 1 {
                return Err(Unreadable);
            }
            value |= bits << (7 * i);
            if byte & 0x80 == 0 {
                // Minimal: no trailing zero group (except the value 0 itself).
                if i > 0 && byte == 0 {
                    return Err(Unreadable);
                }
                self.rest = &self.rest[i + 1..];
                return Ok(value);
            }
        }
        Err(Unreadable)
    }

    /// A length or count: must fit what is left (each item takes at least one byte), which
    /// also bounds every loop and allocation by the input size.
    fn count(&mut self) -> Result<usize, Unreadable> {
        let n = self.uvarint()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.rest.len())
            .ok_or(Unreadable)
    }

    fn bytes(&mut self) -> Result<&'a [u8], Unreadable> {
        let len = self.count()?;
        let (head, tail) = self.rest.split_at(len);
        self.rest = tail;
        Ok(head)
    }

    fn string(&mut self) -> Result<String, Unreadable> {
        std::str::from_utf8(self.bytes()?)
            .map(str::to_owned)
            .map_err(|_| Unreadable)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Unreadable> {
        let (head, tail) = self.rest.split_first_chunk::<N>().ok_or(Unreadable)?;
        self.rest = tail;
        Ok(*head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint_bytes(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put_uvarint(&mut out, v);
        out
    }

    #[test]
    fn varints_round_trip_at_the_edges() {
        for v in [
            0,
            1,
            127,
            128,
            300,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX,
        ] {
            let bytes = varint_bytes(v);
            let mut r = Reader { rest: &bytes };
            assert_eq!(r.uvarint(), Ok(v), "{v}");
            assert!(r.rest.is_empty());
        }
        assert_eq!(varint_bytes(u64::MAX).len(), 10);
    }

    #[test]
    fn non_minimal_and_overlong_varints_are_refused() {
        for bad in [
            &[0x80, 0x00][..],                                             // 0 in two bytes
            &[0xff, 0x00],                                                 // trailing zero group
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02], // > u64::MAX
            &[
                0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
            ], // 11 bytes
            &[0x80],                                                       // truncated
            &[],
        ] {
            assert_eq!(Reader { rest: bad }.uvarint(), Err(Unreadable), "{bad:?}");
        }
    }

    #[test]
    fn a_length_past_the_end_is_refused_without_allocating() {
        let mut bytes = varint_bytes(u64::MAX);
        bytes.push(b'a');
        assert_eq!(Reader { rest: &bytes }.string(), Err(Unreadable));
    }
}
