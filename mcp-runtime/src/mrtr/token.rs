//! Opening a retry's `requestState` into the ledger, and sealing the next state from it.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcp_types::{ErrorObject, InputResponses};

use super::{Mrtr, SealedInput};
use crate::Principal;
use crate::replay::ReplayStore;
use crate::state::{
    ArgDigest, Expectation, RandomnessUnavailable, StateError, StateKeyring, StatePayload,
    canonical_digest,
};

/// The `-32602` for a `requestState` that failed verification.
pub(crate) fn state_refused(e: &StateError) -> ErrorObject {
    ErrorObject::invalid_params(format!(
        "requestState is invalid or expired ({}): {e}. Restart the call without requestState and inputResponses.",
        e.reason()
    ))
}

/// What sealing the next state needs besides the ledger and the principal: the server's keys
/// and limits, and what the state is bound to.
pub(crate) struct Sealing<'a> {
    /// The keys the state is sealed with.
    pub(crate) keyring: &'a StateKeyring,
    /// How long a sealed state stays usable.
    pub(crate) ttl: Duration,
    /// The most rounds of input one call may take.
    pub(crate) max_rounds: u32,
    /// The request method the state is bound to.
    pub(crate) method: &'static str,
    /// What the method targets (tool or prompt name, resource URI).
    pub(crate) target: &'a str,
    /// The digest of the request's arguments, when the dispatcher computed it.
    pub(crate) arg_digest: Option<ArgDigest>,
}

impl Mrtr {
    /// The ledger of a retry: `token` verified against `expect` at `now`, and the retry's
    /// `responses`, which are only read under keys the verified state vouches for.
    ///
    /// # Errors
    /// The verification failure; answer it with [`state_refused`].
    pub(crate) fn open(
        store: Arc<dyn ReplayStore>,
        keyring: &StateKeyring,
        token: &str,
        expect: &Expectation<'_>,
        now: SystemTime,
        responses: InputResponses,
    ) -> Result<Self, StateError> {
        let opened = keyring.open(token, expect, now)?;
        Ok(Self::with(store, Some(opened), responses))
    }

    /// Seals the next state for the requests the tool registered on this pass, and moves
    /// them into the [`SealedInput`] that carries it.
    ///
    /// - First call: a fresh round-0 state.
    /// - Retry that consumed an answer (nonce claimed): the next round, fresh nonce, with this
    ///   pass's answers added to those carried from earlier rounds.
    /// - Retry that consumed nothing (missing or malformed responses, cancel): the same round,
    ///   nonce and expiry, so re-asking never mints a second usable confirmation and never
    ///   extends the window.
    pub(crate) fn seal_next(
        &mut self,
        principal: &Principal,
        sealing: Sealing<'_>,
    ) -> Result<SealedInput, ErrorObject> {
        if self.pending.is_empty() {
            return Err(ErrorObject::internal_error(
                "the tool signalled input required without asking for anything",
            ));
        }
        let now = SystemTime::now();
        let randomness = |e: RandomnessUnavailable| ErrorObject::internal_error(e.to_string());
        let first = self.opened.is_none();
        let mut payload = match &self.opened {
            None => {
                // Normally computed by the dispatcher; recompute defensively.
                let digest = sealing
                    .arg_digest
                    .unwrap_or_else(|| canonical_digest(&serde_json::Value::Null));
                let mut payload = StatePayload::new(
                    principal.as_str(),
                    sealing.method,
                    sealing.target,
                    digest,
                    now,
                    sealing.ttl,
                )
                .map_err(randomness)?;
                // The first leg's span becomes the flow's root (with the `otel` feature).
                payload.flow_trace = crate::observe::flow_to_seal();
                payload
            }
            Some(previous) if self.claimed && previous.round >= sealing.max_rounds => {
                crate::observe::refused("max_rounds");
                return Err(ErrorObject::invalid_params(format!(
                    "this call needed more than {} rounds of input; restart it without requestState",
                    sealing.max_rounds
                )));
            }
            Some(previous) if self.claimed => {
                let mut next = previous.next_round(now, sealing.ttl).map_err(randomness)?;
                for (k, _) in &self.fresh_answers {
                    if let Some(record) = self.fresh_record(k) {
                        next.answers.insert(k.clone(), record.to_value());
                    }
                }
                next
            }
            Some(previous) => previous.clone(),
        };
        payload.bindings = std::mem::take(&mut self.pending_bindings);
        for (k, v) in &self.new_correlations {
            payload.correlations.insert(k.clone(), *v);
        }
        let token = sealing
            .keyring
            .seal(&payload)
            .map_err(|e| ErrorObject::internal_error(format!("cannot seal request state: {e}")))?;
        if first {
            crate::observe::flow_started();
        }
        self.issued = Some((payload.nonce, payload.expires_at));
        #[cfg(feature = "otel")]
        if crate::observe::otel::active() {
            crate::observe::inputs_asked(&input_kinds(&self.pending), payload.round);
        }
        // No `_meta` here: the reply appends the server's cached one.
        Ok(SealedInput {
            requests: std::mem::take(&mut self.pending),
            request_state: token,
        })
    }
}

#[cfg(feature = "otel")]
/// The kinds of the input requests asked (a bounded set of names), each once, in order.
fn input_kinds(pending: &super::PendingRequests) -> Vec<&'static str> {
    let mut kinds = Vec::with_capacity(2);
    for (_, request) in pending.iter() {
        let kind = request.kind();
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds
}
