//! The outcome a claim records, so an identical retry gets the same answer.
//!
//! A retry whose response was lost is sent again unchanged: same principal, same
//! `requestState`, same answers. Its claim finds the nonce used; if the claimant recorded its
//! result under the same [`Fingerprint`], the retry gets that result again instead of "already
//! used". The store keeps the bytes opaquely ([`OutcomeStore::record_outcome`](crate::replay::OutcomeStore::record_outcome)); this
//! module owns their layout:
//!
//! ```text
//! "mcpo1" | fingerprint (32) | 0 | result JSON            (kept result)
//! "mcpo1" | fingerprint (32) | 1 | length (8, LE) | SHA-256 of the result (32)   (too large)
//! "mcpo1" | fingerprint (32) | 2 | JSON-RPC error object JSON   (the pass ended in that error)
//! "mcpo1" | fingerprint (32) | 3                                (the flow went on to another
//!                                                                round: nothing to replay)
//! ```
//!
//! Every claimed pass of a tool records one of these when it ends, so a copy of it that is
//! waiting for the outcome learns that it ended, whatever it ended with.

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::Principal;
use crate::state::{ArgDigest, Nonce, canonical_digest};

/// Largest result (serialized JSON bytes) kept for identical retries. A larger result is
/// recorded as its digest only, and an identical retry is told the call was carried out but
/// its result was too large to keep.
pub const MAX_RECORDED_OUTCOME: usize = 64 * 1024;

const MAGIC: &[u8] = b"mcpo1";
const DOMAIN: &[u8] = b"mcp-runtime/claim-fingerprint/v1\0";

/// Who retried what with which answers: principal, nonce and the canonical form of the
/// answers. Compared in constant time.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint(ArgDigest);

impl Fingerprint {
    pub(crate) fn new(principal: &Principal, nonce: Nonce, answers: &Value) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(DOMAIN);
        hasher.update((principal.as_str().len() as u64).to_le_bytes());
        hasher.update(principal.as_str().as_bytes());
        hasher.update(nonce.as_bytes());
        hasher.update(canonical_digest(answers).as_bytes());
        Self(ArgDigest::from_bytes(hasher.finalize().into()))
    }
}

/// What an identical retry is answered with.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RecordedOutcome {
    /// The serialized result, as first sent.
    Kept(Vec<u8>),
    /// The result was larger than [`MAX_RECORDED_OUTCOME`]: only its size is known.
    TooLarge {
        /// Its size in bytes.
        len: u64,
    },
    /// The pass ended in this JSON-RPC error (its error object's JSON).
    Failed(Vec<u8>),
    /// The pass went on to another round of questions: nothing to replay (an identical retry
    /// is refused as already used).
    Continued,
}

impl RecordedOutcome {
    /// The record of `result` (serialized JSON) for `fingerprint`.
    pub(crate) fn encode(fingerprint: Fingerprint, result: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAGIC.len() + 33 + result.len().min(MAX_RECORDED_OUTCOME));
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(fingerprint.0.as_bytes());
        if result.len() <= MAX_RECORDED_OUTCOME {
            out.push(0);
            out.extend_from_slice(result);
        } else {
            out.push(1);
            out.extend_from_slice(&(result.len() as u64).to_le_bytes());
            out.extend_from_slice(&Sha256::digest(result));
        }
        out
    }

    /// The record of a pass that ended in `error` (its JSON), for `fingerprint`.
    pub(crate) fn encode_failed(fingerprint: Fingerprint, error: &[u8]) -> Vec<u8> {
        let mut out = Self::header(fingerprint, 2);
        out.extend_from_slice(&error[..error.len().min(MAX_RECORDED_OUTCOME)]);
        out
    }

    /// The record of a pass that went on to another round, for `fingerprint`.
    pub(crate) fn encode_continued(fingerprint: Fingerprint) -> Vec<u8> {
        Self::header(fingerprint, 3)
    }

    fn header(fingerprint: Fingerprint, tag: u8) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAGIC.len() + 33);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(fingerprint.0.as_bytes());
        out.push(tag);
        out
    }

    /// The outcome recorded in `bytes` if it was recorded for `fingerprint`; `None` for
    /// another fingerprint or bytes this build does not understand.
    pub(crate) fn decode(bytes: &[u8], fingerprint: Fingerprint) -> Option<Self> {
        let rest = bytes.strip_prefix(MAGIC)?;
        let (recorded, rest) = rest.split_first_chunk::<32>()?;
        if Fingerprint(ArgDigest::from_bytes(*recorded)) != fingerprint {
            return None;
        }
        match rest.split_first()? {
            (0, result) => Some(Self::Kept(result.to_vec())),
            (1, rest) => {
                let (len, _digest) = rest.split_first_chunk::<8>()?;
                Some(Self::TooLarge {
                    len: u64::from_le_bytes(*len),
                })
            }
            (2, error) => Some(Self::Failed(error.to_vec())),
            (3, []) => Some(Self::Continued),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn records_decode_only_for_their_fingerprint() {
        let alice = Principal::new("alice");
        let n = Nonce::from_bytes([3; 16]);
        let fp = Fingerprint::new(&alice, n, &json!({"k": {"action": "accept"}}));
        // Key order does not matter; another answer, principal or nonce does.
        let same = Fingerprint::new(&alice, n, &json!({"k": {"action": "accept"}}));
        assert!(fp == same);
        let others = [
            Fingerprint::new(&alice, n, &json!({"k": {"action": "decline"}})),
            Fingerprint::new(
                &Principal::new("bob"),
                n,
                &json!({"k": {"action": "accept"}}),
            ),
            Fingerprint::new(
                &alice,
                Nonce::from_bytes([4; 16]),
                &json!({"k": {"action": "accept"}}),
            ),
        ];
        let record = RecordedOutcome::encode(fp, b"{\"content\":[]}");
        assert_eq!(
            RecordedOutcome::decode(&record, same),
            Some(RecordedOutcome::Kept(b"{\"content\":[]}".to_vec()))
        );
        for other in others {
            assert_eq!(RecordedOutcome::decode(&record, other), None);
        }
        let big = vec![b'x'; MAX_RECORDED_OUTCOME + 1];
        let record = RecordedOutcome::encode(fp, &big);
        assert!(record.len() < 100);
        assert_eq!(
            RecordedOutcome::decode(&record, fp),
            Some(RecordedOutcome::TooLarge {
                len: big.len() as u64
            })
        );
        let failed = RecordedOutcome::encode_failed(fp, b"{\"code\":-32603}");
        assert_eq!(
            RecordedOutcome::decode(&failed, fp),
            Some(RecordedOutcome::Failed(b"{\"code\":-32603}".to_vec()))
        );
        let continued = RecordedOutcome::encode_continued(fp);
        assert_eq!(
            RecordedOutcome::decode(&continued, fp),
            Some(RecordedOutcome::Continued)
        );
        for other in others {
            assert_eq!(RecordedOutcome::decode(&failed, other), None);
            assert_eq!(RecordedOutcome::decode(&continued, other), None);
        }
        assert_eq!(RecordedOutcome::decode(b"junk", fp), None);
        assert_eq!(RecordedOutcome::decode(&record[..40], fp), None);
    }
}
