//! Claiming a retry's one-time state, running [`ClaimWork`] under the claim, and answering an
//! identical retry with the outcome the claim recorded.

use mcp_types::{CallToolResult, ErrorObject};
use serde_json::{Map, Value};

use super::Mrtr;
use crate::Principal;
use crate::handler_error::HandlerError;
use crate::observe::{self, StoreTimer};
use crate::replay::{
    ClaimOutcome, ClaimWork, DuringWork, Fingerprint, RecordedOutcome, ReplayError,
};

/// The `_meta` key marking a result as the recorded outcome of an earlier, identical retry
/// (value `true`): the work it reports was carried out once, by that earlier retry.
pub const REPLAYED_META_KEY: &str = "dev.mcp-runtime/replayed";

impl Mrtr {
    /// What identifies an identical retry of this state: the principal, the nonce and the
    /// answers under every key the state vouches for.
    fn fingerprint(&self, principal: &Principal) -> Option<Fingerprint> {
        let state = self.opened.as_ref()?;
        let mut answers = Map::new();
        for key in state.bindings.keys() {
            if let Some(answer) = self.responses.get_raw(key) {
                answers.insert(key.clone(), answer.clone());
            }
        }
        Some(Fingerprint::new(
            principal,
            state.nonce,
            &Value::Object(answers),
        ))
    }

    /// The outcome recorded under this state's nonce, as this retry sees it: `Some(Some(..))`
    /// for an identical retry (same principal, same answers), `Some(None)` for the record of
    /// another use of the state, `None` when nothing readable is recorded (a store failure is
    /// logged: the caller's claim, or its refusal, stands on its own).
    async fn recorded(&self, principal: &Principal) -> Option<Option<RecordedOutcome>> {
        let (Some(state), Some(fingerprint)) = (&self.opened, self.fingerprint(principal)) else {
            return None;
        };
        let timer = StoreTimer::start("recorded_outcome");
        let recorded = self.store.recorded_outcome(state.nonce).await;
        timer.done(&recorded);
        match recorded {
            Ok(Some(bytes)) => Some(RecordedOutcome::decode(&bytes, fingerprint)),
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(reason = e.reason(), error = %e, "reading a recorded outcome failed");
                None
            }
        }
    }

    /// The refusal of a used state; when the claimant recorded its outcome for an identical
    /// retry, that outcome is kept in `replayed` for the dispatcher to answer with.
    async fn refuse_reuse(&mut self, principal: &Principal) -> HandlerError {
        if self.store.records_outcomes()
            && let Some(Some(outcome)) = self.recorded(principal).await
        {
            self.replayed = Some(outcome);
        }
        observe::claim("already_used");
        observe::refused(if self.replayed.is_some() {
            "replayed"
        } else {
            "already_used"
        });
        already_used()
    }

    /// Whether this pass must first look for an outcome an earlier retry of its state
    /// recorded ([`Mrtr::recorded_first`]): it carries a verified state, and the store records.
    pub(crate) fn may_have_recorded(&self) -> bool {
        self.opened.is_some() && !self.claimed && self.store.records_outcomes()
    }

    /// Recorded results first: before the tool runs again, the outcome an earlier retry of
    /// this state recorded. `Ok(true)`: it was this same retry (principal and answers), and
    /// the pass answers with it ([`Mrtr::finish_call`]) whatever the world looks like now;
    /// `Err`: the state was used with other answers (refused as already used); `Ok(false)`:
    /// nothing is recorded, and the pass runs as usual (its claim still decides). A store
    /// failure here is not an answer: the claim that follows has its own.
    pub(crate) async fn recorded_first(
        &mut self,
        principal: &Principal,
    ) -> Result<bool, HandlerError> {
        match self.recorded(principal).await {
            Some(Some(outcome)) => {
                self.replayed = Some(outcome);
                // Counted as before: the state was found used, and the retry replayed.
                observe::claim("already_used");
                observe::refused("replayed");
                Ok(true)
            }
            Some(None) => {
                observe::claim("already_used");
                observe::refused("already_used");
                Err(already_used())
            }
            None => Ok(false),
        }
    }

    /// Claims this retry's state nonce once per pass.
    pub(crate) async fn claim(&mut self, principal: &Principal) -> Result<(), HandlerError> {
        if self.claimed {
            return Ok(());
        }
        let state = self.opened.as_ref().ok_or_else(no_state)?;
        let timer = StoreTimer::start("claim");
        let outcome = self
            .store
            .claim_for(principal, state.nonce, state.expires_at_time())
            .await;
        timer.done(&outcome);
        match outcome {
            Ok(ClaimOutcome::Claimed) => {
                observe::claim("claimed");
                self.claimed = true;
                Ok(())
            }
            Ok(ClaimOutcome::AlreadyUsed) => Err(self.refuse_reuse(principal).await),
            Err(e) => {
                observe::claim("error");
                Err(store_failed(&e))
            }
        }
    }

    /// Claims this retry's state nonce and runs `work` as it says (see [`ClaimWork`]).
    pub(crate) async fn claim_work<R: Send + 'static>(
        &mut self,
        principal: &Principal,
        work: ClaimWork<R>,
    ) -> Result<R, HandlerError> {
        match work {
            ClaimWork::Nothing(value) => {
                self.claim(principal).await?;
                Ok(value)
            }
            ClaimWork::During(work) if self.claimed => {
                // The claim is already held by this pass; run the work directly.
                work().map_err(|e| HandlerError::tool(e.to_string()))
            }
            ClaimWork::During(work) => {
                let (work, output) = with_output(work);
                let state = self.opened.as_ref().ok_or_else(no_state)?;
                let timer = StoreTimer::start("claim_with");
                let outcome = self
                    .store
                    .claim_with_for(principal, state.nonce, state.expires_at_time(), work)
                    .await;
                timer.done(&outcome);
                self.settle(principal, outcome, output).await
            }
            ClaimWork::After(work) => {
                // Durable first: if the claim fails, nothing has been done.
                self.claim(principal).await?;
                match tokio::task::spawn_blocking(work).await {
                    Ok(Ok(out)) => Ok(out),
                    Ok(Err(e)) => Err(HandlerError::tool(format!(
                        "{e}. This confirmation is now used up; call the tool again to ask again."
                    ))),
                    Err(e) => {
                        tracing::error!(error = %e, "work after a committed claim did not finish");
                        Err(HandlerError::tool(
                            "The confirmed action stopped unexpectedly, so whether it took effect is unknown; check before asking again. This confirmation is now used up.",
                        ))
                    }
                }
            }
            ClaimWork::InTx(work) => {
                if self.claimed {
                    // A claim made earlier in this pass has committed already; a second
                    // transaction could not be atomic with it.
                    return Err(HandlerError::protocol(ErrorObject::internal_error(
                        "transactional work must be the first claim of its retry",
                    )));
                }
                let state = self.opened.as_ref().ok_or_else(no_state)?;
                let (work, output) = work.detach();
                let timer = StoreTimer::start("claim_in_tx");
                let outcome = self
                    .store
                    .claim_in_tx(state.nonce, state.expires_at_time(), work)
                    .await;
                timer.done(&outcome);
                self.settle(principal, outcome, output).await
            }
        }
    }

    /// The value claimed work left in `output`, or the error its claim outcome means.
    async fn settle<R>(
        &mut self,
        principal: &Principal,
        outcome: Result<ClaimOutcome, ReplayError>,
        output: impl FnOnce() -> Option<R>,
    ) -> Result<R, HandlerError> {
        let counted = match &outcome {
            Ok(ClaimOutcome::Claimed) | Err(ReplayError::ActionUnrecorded { .. }) => {
                Some("claimed")
            }
            // Counted by `refuse_reuse`.
            Ok(ClaimOutcome::AlreadyUsed) => None,
            Err(ReplayError::ActionFailed(_) | ReplayError::ActionPanicked) => Some("rolled_back"),
            Err(_) => Some("error"),
        };
        if let Some(result) = counted {
            observe::claim(result);
        }
        let carried_out = match outcome {
            Ok(ClaimOutcome::Claimed) => true,
            Ok(ClaimOutcome::AlreadyUsed) => return Err(self.refuse_reuse(principal).await),
            Err(ReplayError::ActionFailed(e)) => {
                return Err(HandlerError::tool(format!(
                    "{e} (nothing was changed; the confirmation can be retried)"
                )));
            }
            // The change was made; only its record failed. Report what happened (the value),
            // and tell the operator the store is failing.
            Err(ReplayError::ActionUnrecorded { cause }) => {
                tracing::error!(
                    reason = cause.reason(),
                    error = %cause,
                    "the work under a claim was carried out but the claim could not be committed"
                );
                false
            }
            Err(ReplayError::CommitOutcomeUnknown { cause }) => {
                tracing::error!(reason = cause.reason(), error = %cause, "claim commit outcome unknown");
                return Err(HandlerError::tool(
                    "The replay store lost its connection while committing, so whether the change was made is unknown; check before asking again.",
                ));
            }
            Err(e) => return Err(store_failed(&e)),
        };
        self.claimed = true;
        output().ok_or_else(|| {
            HandlerError::protocol(ErrorObject::internal_error(if carried_out {
                "the committed work produced no value"
            } else {
                "the work was carried out but produced no value"
            }))
        })
    }
}

impl Mrtr {
    /// Whether [`Mrtr::finish_call`] would hand `outcome` back unchanged: nothing was replayed
    /// and nothing is to be recorded (no claim, or a store that keeps no outcomes). Lets the
    /// dispatcher skip that future, and its state, on almost every call.
    pub(crate) fn finish_is_plain(&self) -> bool {
        self.replayed.is_none() && !(self.claimed && self.store.records_outcomes())
    }

    /// The final answer of a `tools/call` pass: the outcome recorded for an identical retry
    /// when this pass found one (marked with [`REPLAYED_META_KEY`]); otherwise `outcome`,
    /// recorded with the claim when this pass claimed, so an identical retry gets it again.
    pub(crate) async fn finish_call(
        &mut self,
        principal: &Principal,
        outcome: Result<CallToolResult, HandlerError>,
    ) -> Result<CallToolResult, HandlerError> {
        if let Some(recorded) = self.replayed.take() {
            return Ok(replayed_result(recorded));
        }
        let (Ok(result), true, true) = (&outcome, self.claimed, self.store.records_outcomes())
        else {
            return outcome;
        };
        let (Some(state), Some(fingerprint)) = (&self.opened, self.fingerprint(principal)) else {
            return outcome;
        };
        match serde_json::to_vec(result) {
            Ok(bytes) => {
                let record = RecordedOutcome::encode(fingerprint, &bytes);
                let timer = StoreTimer::start("record_outcome");
                let recorded = self
                    .store
                    .record_outcome(state.nonce, state.expires_at_time(), &record)
                    .await;
                timer.done(&recorded);
                if let Err(e) = recorded {
                    // The answer stands; an identical retry is refused as "already used".
                    tracing::warn!(reason = e.reason(), error = %e, "recording a claim's outcome failed");
                }
            }
            Err(e) => tracing::warn!(error = %e, "a claimed result did not serialise"),
        }
        outcome
    }
}

/// The result an identical retry gets.
fn replayed_result(recorded: RecordedOutcome) -> CallToolResult {
    let mut result = match recorded {
        RecordedOutcome::Kept(bytes) => match serde_json::from_slice::<CallToolResult>(&bytes) {
            Ok(result) => result,
            Err(_) => CallToolResult::error(
                "This confirmation was already carried out, but its recorded result could not be read back; check the outcome before asking again.",
            ),
        },
        RecordedOutcome::TooLarge { len } => CallToolResult::error(format!(
            "This confirmation was already carried out by an earlier retry, but its result ({len} bytes) was too large to keep for retries; check the outcome before asking again."
        )),
    };
    result
        .meta
        .get_or_insert_with(Default::default)
        .extra
        .insert(REPLAYED_META_KEY.to_owned(), Value::Bool(true));
    result
}

/// `work` storing its value where the returned reader finds it after the claim.
fn with_output<R: Send + 'static>(
    work: Box<dyn FnOnce() -> Result<R, crate::replay::ActionError> + Send>,
) -> (DuringWork, impl FnOnce() -> Option<R>) {
    let slot = std::sync::Arc::new(std::sync::Mutex::new(None));
    let out = std::sync::Arc::clone(&slot);
    let work: DuringWork = Box::new(move || {
        let value = work()?;
        if let Ok(mut guard) = out.lock() {
            *guard = Some(value);
        }
        Ok(())
    });
    (work, move || slot.lock().ok().and_then(|mut g| g.take()))
}

fn no_state() -> HandlerError {
    HandlerError::protocol(ErrorObject::internal_error("claim without request state"))
}

fn already_used() -> HandlerError {
    HandlerError::protocol(ErrorObject::invalid_params(
        "This confirmation was already used: its requestState was consumed by an earlier retry. Restart the call without requestState and inputResponses to ask again.",
    ))
}

fn store_failed(e: &ReplayError) -> HandlerError {
    if let ReplayError::PrincipalShareExhausted { .. } = e {
        // The caller's own doing, and something it can act on: a tool error it can read.
        return HandlerError::tool(format!("{e}; nothing was changed"));
    }
    HandlerError::protocol(ErrorObject::internal_error(format!(
        "replay store unavailable ({}); nothing was changed, retry later",
        e.reason()
    )))
}
