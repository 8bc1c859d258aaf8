//! The MRTR ledger of one request: what a retry brought (the verified state and its
//! responses), what this pass asked, which answers it took, and the one-time claim.
//!
//! [`crate::context::ToolContext`] is the tool-facing facade; the server opens the ledger
//! (`server/request.rs`) and seals the next state from it (`server/mrtr.rs`). Submodules:
//! `binding` (the digests binding what was shown under a key), `claim` (claiming, work under a
//! claim, recorded outcomes).

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_types::{ErrorObject, InputRequest, InputRequests, InputResponses};
use serde::Deserialize as _;
use serde_json::{Map, Value};

use crate::replay::{RecordedOutcome, ReplayStore};
use crate::state::{ArgDigest, CorrelationId, StatePayload};
use crate::tool::ToolError;

mod binding;
mod claim;

pub(crate) use binding::{binding_digest, form_binding_digest};
pub use claim::REPLAYED_META_KEY;

/// What a retry brought, and what this pass asked, for one `tools/call`.
pub(crate) struct Mrtr {
    pub(crate) store: Arc<dyn ReplayStore>,
    /// The verified state of this retry (None on a first call).
    pub(crate) opened: Option<StatePayload>,
    /// The retry's responses; only read under keys `opened` vouches for.
    pub(crate) responses: InputResponses,
    /// Input requests registered on this pass, in order.
    pub(crate) pending: InputRequests,
    /// Digest of what each pending request shows, sealed into the next state.
    pub(crate) pending_bindings: BTreeMap<String, ArgDigest>,
    /// Answers taken from this retry, in the order taken, carried into the next round's
    /// state. The responses themselves stay in `responses` under the same keys.
    pub(crate) fresh_answers: Vec<(String, FreshAnswer)>,
    /// Whether this pass claimed `opened`'s nonce.
    pub(crate) claimed: bool,
    /// Correlation ids minted on this pass (not yet in any sealed state).
    pub(crate) new_correlations: BTreeMap<String, CorrelationId>,
    /// The outcome an earlier, identical retry recorded, found when this pass's claim was
    /// refused: the call's answer (see [`Mrtr::finish_call`]).
    pub(crate) replayed: Option<RecordedOutcome>,
}

/// An answer taken from this retry on this pass. Its state record (`{"s", "r", "x"}`) is
/// only built when a later round needs it: most retries end the call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FreshAnswer {
    /// What was shown under the key.
    pub(crate) digest: ArgDigest,
    /// Whether the confirmation was carried out (`"x"`: not to be carried out again).
    pub(crate) executed: bool,
}

impl FreshAnswer {
    pub(crate) fn new(digest: ArgDigest) -> Self {
        FreshAnswer {
            digest,
            executed: false,
        }
    }
}

impl Mrtr {
    pub(crate) fn fresh(&self, key: &str) -> Option<FreshAnswer> {
        self.fresh_answers
            .iter()
            .find_map(|(k, a)| (k == key).then_some(*a))
    }

    pub(crate) fn record_fresh(&mut self, key: &str, answer: FreshAnswer) {
        match self.fresh_answers.iter_mut().find(|(k, _)| k == key) {
            Some((_, slot)) => *slot = answer,
            None => self.fresh_answers.push((key.to_owned(), answer)),
        }
    }

    /// The retry's response under `key` (`null` when absent).
    pub(crate) fn response(&self, key: &str) -> &Value {
        self.responses.get_raw(key).unwrap_or(&Value::Null)
    }

    /// The state record of the answer taken under `key` on this pass.
    pub(crate) fn fresh_record(&self, key: &str) -> Option<Value> {
        let answer = self.fresh(key)?;
        Some(answer_record(
            answer.digest,
            self.response(key).clone(),
            answer.executed,
        ))
    }

    pub(crate) fn register(&mut self, key: &str, digest: ArgDigest, request: InputRequest) {
        self.pending.insert(key.to_owned(), request);
        self.pending_bindings.insert(key.to_owned(), digest);
    }

    pub(crate) fn lookup(&self, key: &str, digest: ArgDigest) -> Result<Lookup, ToolError> {
        let Some(state) = &self.opened else {
            // Without a verified state nothing was asked: responses are ignored.
            return Ok(Lookup::Missing);
        };
        if let Some(record) = state.answers.get(key) {
            if record_digest(record) != Some(digest) {
                return Err(refused(
                    "what this tool would show under that key changed since it was answered (for example, the list of choices)",
                ));
            }
            return Ok(Lookup::Earlier(record.clone()));
        }
        if let Some(fresh) = self.fresh(key) {
            // Asked twice on one pass: hand back the same answer without a second claim.
            if fresh.digest == digest
                && let Some(record) = self.fresh_record(key)
            {
                return Ok(Lookup::Earlier(record));
            }
        }
        match state.bindings.get(key) {
            None => Ok(Lookup::Missing),
            Some(bound) if *bound != digest => Err(refused(
                "what this tool would show under that key changed since it was asked (for example, the list of choices)",
            )),
            Some(_) => Ok(if self.responses.contains_key(key) {
                Lookup::Fresh
            } else {
                Lookup::Missing
            }),
        }
    }
}

/// Where a keyed answer comes from.
pub(crate) enum Lookup {
    /// Accepted in an earlier round (inside the signed state).
    Earlier(Value),
    /// Sent with this retry (in `Mrtr::responses`) under a key the state says was asked.
    Fresh,
    /// Not answered yet.
    Missing,
}

/// The record of an accepted answer kept for later rounds: `{"s": binding, "r": response}`,
/// plus `"x": true` once its confirmation was carried out.
pub(crate) fn answer_record(digest: ArgDigest, response: Value, executed: bool) -> Value {
    let mut record = Map::with_capacity(3);
    record.insert("s".to_owned(), Value::String(digest.to_string()));
    record.insert("r".to_owned(), response);
    if executed {
        record.insert("x".to_owned(), Value::Bool(true));
    }
    Value::Object(record)
}

pub(crate) fn record_digest(record: &Value) -> Option<ArgDigest> {
    record.get("s").and_then(|s| ArgDigest::deserialize(s).ok())
}

/// The `-32602` for a retry whose state does not fit what the tool asks now.
pub(crate) fn refused(why: &str) -> ToolError {
    ToolError::protocol(ErrorObject::invalid_params(format!(
        "requestState is invalid: {why}; restart the call without requestState and inputResponses"
    )))
}
