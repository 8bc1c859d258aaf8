//! The MRTR ledger of one request: what a retry brought (the verified state and its
//! responses), what this pass asked, which answers it took, and the one-time claim.
//!
//! This module owns the ledger's whole life: the server opens it from a retry's
//! `requestState` ([`Mrtr::open`]), the tool-facing facade
//! ([`crate::context::RequestContext`]) looks answers up and claims them through it, and the
//! server seals the next state from it ([`Mrtr::seal_next`]). Submodules: `binding` (the
//! digests binding what was shown under a key), `claim` (claiming, work under a claim, recorded
//! outcomes), `pending` (this pass's input requests, as they will be sent), `record` (the
//! typed answer record carried in the state), `token` (opening a retry's state and sealing
//! the next one).

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_types::{ErrorObject, InputRequest, InputResponses};
use serde_json::Value;

use crate::handler_error::HandlerError;
use crate::replay::{RecordedOutcome, ReplayStore};
use crate::state::{ArgDigest, CorrelationId, RandomnessUnavailable, StatePayload};

mod binding;
mod claim;
mod pending;
mod record;
mod token;

pub(crate) use binding::{binding_digest, form_binding_digest};
pub use claim::REPLAYED_META_KEY;
pub(crate) use pending::{PendingRequest, PendingRequests, SealedInput};
pub(crate) use record::AnswerRecord;
pub(crate) use token::{Sealing, state_refused};

/// What a retry brought, and what this pass asked, for one `tools/call`.
pub(crate) struct Mrtr {
    store: Arc<dyn ReplayStore>,
    /// The verified state of this retry (None on a first call).
    opened: Option<StatePayload>,
    /// The retry's responses; only read under keys `opened` vouches for.
    responses: InputResponses,
    /// Input requests registered on this pass, in order.
    pending: PendingRequests,
    /// Digest of what each pending request shows, sealed into the next state.
    pending_bindings: BTreeMap<String, ArgDigest>,
    /// Answers taken from this retry, in the order taken, carried into the next round's
    /// state. The responses themselves stay in `responses` under the same keys.
    fresh_answers: Vec<(String, FreshAnswer)>,
    /// Whether this pass claimed `opened`'s nonce.
    claimed: bool,
    /// Correlation ids minted on this pass (not yet in any sealed state).
    new_correlations: BTreeMap<String, CorrelationId>,
    /// The outcome an earlier, identical retry recorded, found when this pass's claim was
    /// refused: the call's answer (see [`Mrtr::finish_call`]).
    replayed: Option<RecordedOutcome>,
    /// What this pass asked under each key, in order (see [`Mrtr::note_ask`]).
    asked: Vec<(String, AskShape)>,
    /// The first key this pass asked two different questions under: the author's bug,
    /// reported by [`crate::context::RequestContext::settle_pass`].
    reused: Option<Box<KeyReuse>>,
    /// How long to wait for the outcome of a copy of this retry still at work elsewhere
    /// ([`crate::server::Limits::duplicate_wait`]); `None` when the request records no
    /// outcomes (prompts and resources: a claim without one is simply used).
    duplicate_wait: Option<std::time::Duration>,
    /// [`Mrtr::recorded_first`] answered this pass itself (a refusal), so no tool code ran
    /// and there is nothing to look up again at the end.
    answered_early: bool,
    /// The nonce and expiry (Unix seconds) of the state this pass sealed, for the ledger of
    /// abandoned flows.
    issued: Option<(crate::state::Nonce, u64)>,
    /// The ledger's removal of the state this retry brought back, still running: recording a
    /// state sealed on this pass waits for it (a re-ask keeps the same nonce).
    answering: Option<tokio::task::JoinHandle<()>>,
}

/// A state sealed on this pass, as the ledger of abandoned flows records it.
pub(crate) struct Issued {
    /// The state's nonce.
    pub(crate) nonce: crate::state::Nonce,
    /// Its expiry, Unix seconds.
    pub(crate) expires_secs: u64,
    /// Re-sealed with the nonce of the state this retry brought back (asked again).
    pub(crate) again: bool,
    /// The ledger's record of that retry's answer, still running: this record follows it.
    pub(crate) after: Option<tokio::task::JoinHandle<()>>,
}

/// An answer taken from this retry on this pass. Its [`AnswerRecord`] is only built when a
/// later round needs it: most retries end the call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FreshAnswer {
    /// What was shown under the key.
    pub(crate) digest: ArgDigest,
    /// Whether the confirmation was carried out ([`AnswerRecord::executed`]).
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
    /// The ledger of a request that brought no verified state (a first call, or a detached
    /// context): retry responses are never read.
    pub(crate) fn first(store: Arc<dyn ReplayStore>) -> Self {
        Self::with(store, None, InputResponses::default())
    }

    fn with(
        store: Arc<dyn ReplayStore>,
        opened: Option<StatePayload>,
        responses: InputResponses,
    ) -> Self {
        Mrtr {
            store,
            opened,
            responses,
            pending: PendingRequests::default(),
            pending_bindings: BTreeMap::new(),
            fresh_answers: Vec::new(),
            claimed: false,
            new_correlations: BTreeMap::new(),
            replayed: None,
            asked: Vec::new(),
            reused: None,
            duplicate_wait: None,
            answered_early: false,
            issued: None,
            answering: None,
        }
    }

    /// Makes this a retry whose claimed passes record their outcomes (a `tools/call`), and
    /// sets how long a copy of it waits for another copy's outcome.
    pub(crate) fn with_duplicate_wait(mut self, wait: std::time::Duration) -> Self {
        self.duplicate_wait = Some(wait);
        self
    }

    /// The round of the verified state this retry brought (`None` on a first call).
    pub(crate) fn opened_round(&self) -> Option<u32> {
        self.opened.as_ref().map(|p| p.round)
    }

    /// The nonce and expiry (Unix seconds) of the verified state this retry carries (`None`
    /// on a first call).
    pub(crate) fn opened_nonce(&self) -> Option<(crate::state::Nonce, u64)> {
        self.opened.as_ref().map(|p| (p.nonce, p.expires_at))
    }

    /// Keeps the ledger's record of the opened state's answer, for [`Mrtr::take_issued`] to
    /// wait on.
    pub(crate) fn set_answering(&mut self, answering: tokio::task::JoinHandle<()>) {
        self.answering = Some(answering);
    }

    /// The state sealed on this pass, for the ledger of abandoned flows: `None` when none was.
    pub(crate) fn take_issued(&mut self) -> Option<Issued> {
        let (nonce, expires_secs) = self.issued.take()?;
        Some(Issued {
            nonce,
            expires_secs,
            again: self.opened.as_ref().is_some_and(|p| p.nonce == nonce),
            after: self.answering.take(),
        })
    }

    /// Where this flow's trace began, as its verified state says (`None` on a first call).
    pub(crate) fn flow_trace(&self) -> Option<crate::state::FlowTrace> {
        self.opened.as_ref().and_then(|p| p.flow_trace)
    }

    /// How many rounds of input the flow took, when this pass is a retry that answered one
    /// (and was not answered by a recorded outcome): the flow ends here if the pass ends with
    /// a result.
    pub(crate) fn flow_rounds(&self) -> Option<u32> {
        match &self.opened {
            Some(p) if self.claimed && self.replayed.is_none() => Some(p.round.saturating_add(1)),
            _ => None,
        }
    }

    /// The MRTR round of this pass: 0 on a first call, then one more per answered round.
    pub(crate) fn round(&self) -> u32 {
        self.opened.as_ref().map_or(0, |p| {
            if self.claimed {
                p.round.saturating_add(1)
            } else {
                p.round
            }
        })
    }

    /// The retry's responses (empty unless its state verified).
    pub(crate) fn responses(&self) -> &InputResponses {
        &self.responses
    }

    /// Whether this pass registered an input request.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The keys of the input requests this pass registered, in order.
    pub(crate) fn pending_keys(&self) -> impl Iterator<Item = &String> {
        self.pending.keys()
    }

    /// The correlation id of the flow's out-of-band step under `key`: the one the state
    /// carries, or one minted on this pass (and sealed into the next state).
    pub(crate) fn correlation_id(
        &mut self,
        key: &str,
    ) -> Result<CorrelationId, RandomnessUnavailable> {
        if let Some(id) = self
            .opened
            .as_ref()
            .and_then(|state| state.correlations.get(key))
        {
            return Ok(*id);
        }
        if let Some(id) = self.new_correlations.get(key) {
            return Ok(*id);
        }
        let id = CorrelationId::random()?;
        self.new_correlations.insert(key.to_owned(), id);
        Ok(id)
    }

    /// Whether the verified state says `key` was asked (or answered) earlier in this flow.
    pub(crate) fn was_asked(&self, key: &str) -> bool {
        self.opened
            .as_ref()
            .is_some_and(|s| s.bindings.contains_key(key) || s.answers.contains_key(key))
    }

    /// Every correlation id of this flow: carried by the state or minted on this pass.
    pub(crate) fn correlations(&self) -> impl Iterator<Item = &CorrelationId> {
        self.opened
            .iter()
            .flat_map(|s| s.correlations.values())
            .chain(self.new_correlations.values())
    }

    fn fresh(&self, key: &str) -> Option<FreshAnswer> {
        self.fresh_answers
            .iter()
            .find_map(|(k, a)| (k == key).then_some(*a))
    }

    /// Records the answer taken under `key` on this pass (replacing an earlier one).
    pub(crate) fn record_fresh(&mut self, key: &str, answer: FreshAnswer) {
        match self.fresh_answers.iter_mut().find(|(k, _)| k == key) {
            Some((_, slot)) => *slot = answer,
            None => self.fresh_answers.push((key.to_owned(), answer)),
        }
    }

    /// Claims this retry's state (once per pass) and records the answer taken under `key`.
    ///
    /// Not an `async fn`, which would store its arguments twice in every asking tool's future.
    #[allow(clippy::manual_async_fn)] // see above
    pub(crate) fn take(
        &mut self,
        principal: &crate::Principal,
        key: &str,
        answer: FreshAnswer,
    ) -> impl Future<Output = Result<(), HandlerError>> {
        async move {
            self.claim(principal).await?;
            self.record_fresh(key, answer);
            Ok(())
        }
    }

    /// The retry's response under `key` (`null` when absent).
    pub(crate) fn response(&self, key: &str) -> &Value {
        self.responses.get_raw(key).unwrap_or(&Value::Null)
    }

    /// The state record of the answer taken under `key` on this pass.
    fn fresh_record(&self, key: &str) -> Option<AnswerRecord> {
        let answer = self.fresh(key)?;
        Some(AnswerRecord {
            digest: answer.digest,
            response: self.response(key).clone(),
            executed: answer.executed,
        })
    }

    /// Registers an input request of this pass, with the digest of what it shows.
    pub(crate) fn register(&mut self, key: &str, digest: ArgDigest, request: InputRequest) {
        self.register_pending(key, digest, PendingRequest::Typed(Box::new(request)));
    }

    /// Registers a form-mode elicitation whose `requestedSchema` is already written as JSON
    /// (see [`PendingRequest::Form`]).
    pub(crate) fn register_form(
        &mut self,
        key: &str,
        digest: ArgDigest,
        message: String,
        schema: Vec<u8>,
    ) {
        // Sent as written: a hand-written writer's bytes were read back before they got here
        // (`RequestContext::elicit`); the derive's, held to serde's by a property test, are
        // asserted in debug builds.
        debug_assert!(
            serde_json::from_slice::<serde::de::IgnoredAny>(&schema).is_ok(),
            "ElicitForm::write_requested_schema wrote something that is not JSON"
        );
        self.register_pending(key, digest, PendingRequest::Form { message, schema });
    }

    fn register_pending(&mut self, key: &str, digest: ArgDigest, request: PendingRequest) {
        self.pending.insert(key, request);
        self.pending_bindings.insert(key.to_owned(), digest);
    }

    /// Notes that this pass asks `shape` under `key`, before the answer is looked up.
    ///
    /// One pass asking two different questions under one key (two form types, or a form and
    /// a sampling request) is the author's bug, not the client's: the retry brings one answer
    /// per key, so whichever question comes second could never be answered, and the client
    /// told to restart would loop. It is remembered (the pass then fails with the server-bug
    /// error naming the handler and the key, whatever the handler returns) and this ask fails.
    /// The same question asked again under its key (a changed list of choices included) is no
    /// bug: [`Mrtr::lookup`] decides about it.
    pub(crate) fn note_ask(&mut self, key: &str, shape: AskShape) -> Result<(), HandlerError> {
        match self.asked.iter().find(|(k, _)| k == key) {
            Some((_, first)) if *first == shape => Ok(()),
            Some((_, first)) => {
                let reuse = KeyReuse {
                    key: key.to_owned(),
                    first: *first,
                    second: shape,
                };
                let error =
                    HandlerError::protocol(ErrorObject::internal_error(reuse.message(None)));
                if self.reused.is_none() {
                    self.reused = Some(Box::new(reuse));
                }
                Err(error)
            }
            None => {
                if self.asked.is_empty() {
                    // Most passes ask one thing (see `register`).
                    self.asked.reserve_exact(1);
                }
                self.asked.push((key.to_owned(), shape));
                Ok(())
            }
        }
    }

    /// The first key this pass asked two different questions under (see [`Mrtr::note_ask`]).
    pub(crate) fn key_reuse(&self) -> Option<&KeyReuse> {
        self.reused.as_deref()
    }

    /// Where the answer under `key` comes from, given what the tool would show now.
    pub(crate) fn lookup(&self, key: &str, digest: ArgDigest) -> Result<Lookup, HandlerError> {
        let Some(state) = &self.opened else {
            // Without a verified state nothing was asked: responses are ignored.
            return Ok(Lookup::Missing);
        };
        if let Some(record) = state.answers.get(key) {
            return match AnswerRecord::from_value(record) {
                Some(record) if record.digest == digest => Ok(Lookup::Earlier(record)),
                _ => Err(refused(
                    "what this tool would show under that key changed since it was answered (for example, the list of choices)",
                )),
            };
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

/// What kind of question an ask is: a form of one type, or one of the other requests. Two
/// different kinds under one key in one pass are the author's bug (see [`Mrtr::note_ask`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AskShape {
    id: std::any::TypeId,
    /// The form's type name, or what the request is.
    name: &'static str,
    form: bool,
}

impl AskShape {
    /// The form `F`.
    pub(crate) fn form<F: 'static>() -> Self {
        AskShape {
            id: std::any::TypeId::of::<F>(),
            name: std::any::type_name::<F>(),
            form: true,
        }
    }

    /// A request answered with a `T` (`what` says what it is: "a sampling request").
    pub(crate) fn request<T: 'static>(what: &'static str) -> Self {
        AskShape {
            id: std::any::TypeId::of::<T>(),
            name: what,
            form: false,
        }
    }

    fn describe(&self) -> String {
        if self.form {
            format!("the form `{}`", self.name)
        } else {
            self.name.to_owned()
        }
    }
}

/// Two different questions asked under one key in one pass.
#[derive(Debug)]
pub(crate) struct KeyReuse {
    key: String,
    first: AskShape,
    second: AskShape,
}

impl KeyReuse {
    /// The server-bug message, naming the handler when it is known (`"tool `x`"`).
    pub(crate) fn message(&self, handler: Option<&dyn std::fmt::Display>) -> String {
        let who = match handler {
            Some(h) => h.to_string(),
            None => "this handler".to_owned(),
        };
        let key = crate::log_safe::LogSafe(&self.key);
        if self.first.form && self.second.form {
            format!(
                "server bug: {who} asks two different forms under the key `{key}` ({}, then {}); \
                 give each form its own key (a retry brings one answer per key, so the second \
                 form could never be answered)",
                self.first.describe(),
                self.second.describe(),
            )
        } else {
            format!(
                "server bug: {who} asks two different things under the key `{key}` ({}, then \
                 {}); give each its own key (a retry brings one answer per key, so the second \
                 could never be answered)",
                self.first.describe(),
                self.second.describe(),
            )
        }
    }
}

/// Where a keyed answer comes from.
pub(crate) enum Lookup {
    /// Accepted in an earlier round (inside the signed state).
    Earlier(AnswerRecord),
    /// Sent with this retry (in `Mrtr::responses`) under a key the state says was asked.
    Fresh,
    /// Not answered yet.
    Missing,
}

/// The `-32602` for a retry whose state does not fit what the tool asks now.
pub(crate) fn refused(why: &str) -> HandlerError {
    HandlerError::protocol(ErrorObject::invalid_params(format!(
        "requestState is invalid: {why}; restart the call without requestState and inputResponses"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::MemoryReplayStore;
    use mcp_types::{ElicitRequest, RequestedSchema, StringSchema};

    fn request() -> InputRequest {
        ElicitRequest::form(
            "Which one?",
            RequestedSchema::new().field("id", StringSchema::new(), true),
        )
        .into()
    }

    #[test]
    fn one_key_holds_one_kind_of_question_per_pass() {
        struct Pick;
        struct Confirm;
        let mut mrtr = Mrtr::first(Arc::new(MemoryReplayStore::new(16)));
        // The same form again under its key, and another form under another key: fine.
        mrtr.note_ask("pick", AskShape::form::<Pick>()).unwrap();
        mrtr.note_ask("pick", AskShape::form::<Pick>()).unwrap();
        mrtr.note_ask("confirm", AskShape::form::<Confirm>())
            .unwrap();
        assert!(mrtr.key_reuse().is_none());
        // Another form, or a sampling request, under a used key: the author's bug.
        let e = mrtr
            .note_ask("pick", AskShape::form::<Confirm>())
            .unwrap_err();
        let message = e.as_protocol().unwrap().message().to_owned();
        assert!(
            message.contains("two different forms under the key `pick`"),
            "{message}"
        );
        let e = mrtr
            .note_ask("confirm", AskShape::request::<u8>("a sampling request"))
            .unwrap_err();
        assert!(e.as_protocol().is_some());
        // The first reuse is the one reported.
        let first = mrtr.key_reuse().unwrap().message(Some(&"tool `t`"));
        assert!(
            first.starts_with("server bug: tool `t` asks two different forms under the key `pick`"),
            "{first}"
        );
    }

    #[test]
    fn requests_are_registered_in_order_with_their_bindings() {
        let mut mrtr = Mrtr::first(Arc::new(MemoryReplayStore::new(16)));
        mrtr.register("pick", ArgDigest::from_bytes([7; 32]), request());
        mrtr.register_form(
            "confirm",
            ArgDigest::from_bytes([8; 32]),
            "Sure?".into(),
            br#"{"type":"object","properties":{}}"#.to_vec(),
        );
        assert!(mrtr.has_pending());
        assert_eq!(mrtr.pending_keys().collect::<Vec<_>>(), ["pick", "confirm"]);
        assert_eq!(
            mrtr.pending_bindings.get("confirm"),
            Some(&ArgDigest::from_bytes([8; 32]))
        );
    }
}
