//! Claiming a retry's one-time state, running [`ClaimWork`] under the claim, and answering an
//! identical retry with the outcome the claim recorded.

use mcp_types::{CallToolResult, ErrorObject};
use serde_json::{Map, Value};

use super::Mrtr;
use crate::Principal;
use crate::handler_error::HandlerError;
use crate::observe::{self, StoreTimer};
use crate::replay::{
    Claim, ClaimOutcome, ClaimState, ClaimWork, DuringWork, Fingerprint, RecordedOutcome,
    ReplayError,
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

    /// Where the claim of this state's nonce stands, as this retry sees it. A store failure
    /// is logged and read as [`ClaimLookup::Unreadable`]: the caller's claim, or its refusal,
    /// stands on its own.
    async fn claim_lookup(&self, principal: &Principal) -> ClaimLookup {
        let (Some(state), Some(fingerprint)) = (&self.opened, self.fingerprint(principal)) else {
            return ClaimLookup::Nothing;
        };
        let Some(outcomes) = self.store.outcomes() else {
            return ClaimLookup::Nothing;
        };
        let timer = StoreTimer::start("recorded_outcome");
        let found = outcomes.claim_state(state.nonce).await;
        timer.done(&found);
        match found {
            Ok(ClaimState::Recorded(bytes)) => match RecordedOutcome::decode(&bytes, fingerprint) {
                // A flow that went on to another round has nothing to replay.
                Some(RecordedOutcome::Continued) | None => ClaimLookup::Other,
                Some(outcome) => ClaimLookup::Same(outcome),
            },
            Ok(ClaimState::Claimed) => ClaimLookup::Pending,
            Ok(_) => ClaimLookup::Nothing,
            Err(e) => {
                tracing::warn!(reason = e.reason(), error = %e, "reading a claim failed");
                ClaimLookup::Unreadable
            }
        }
    }

    /// [`Mrtr::claim_lookup`], waiting (within the duplicate wait) while another copy of this
    /// retry holds the claim and has not recorded its outcome yet.
    async fn settled_lookup(&self, principal: &Principal) -> ClaimLookup {
        let mut found = self.claim_lookup(principal).await;
        let Some(wait) = self.duplicate_wait else {
            return found;
        };
        if !matches!(found, ClaimLookup::Pending) {
            return found;
        }
        let deadline = tokio::time::Instant::now() + wait;
        let mut pause = std::time::Duration::from_millis(20);
        while matches!(found, ClaimLookup::Pending) {
            let now = tokio::time::Instant::now();
            if now >= deadline {
                break;
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 2).min(std::time::Duration::from_millis(500));
            found = self.claim_lookup(principal).await;
        }
        found
    }

    /// The refusal of a used state. When another copy of this retry holds the claim, its
    /// outcome is waited for: an identical retry's recorded outcome is kept in `replayed` for
    /// the dispatcher to answer with; one still not recorded by the end of the wait is a
    /// retryable "in progress" error, never "restart the call".
    async fn refuse_reuse(&mut self, principal: &Principal) -> HandlerError {
        let mut refusal = already_used();
        if self.store.outcomes().is_some() {
            match self.settled_lookup(principal).await {
                ClaimLookup::Same(outcome) => self.replayed = Some(outcome),
                ClaimLookup::Pending => {
                    if let Some(waited) = self.duplicate_wait {
                        refusal = in_progress(waited);
                    }
                }
                // The claim that refused this one is gone again: it was released unused (a
                // claim that landed after its deadline, whose caller did nothing).
                ClaimLookup::Nothing => refusal = released(),
                ClaimLookup::Unreadable => refusal = outcome_unreadable(),
                ClaimLookup::Other => {}
            }
        }
        observe::claim("already_used");
        observe::refused(if self.replayed.is_some() {
            "replayed"
        } else {
            "already_used"
        });
        refusal
    }

    /// Whether this pass must first look for an outcome an earlier retry of its state
    /// recorded ([`Mrtr::recorded_first`]): it carries a verified state, and the store records.
    pub(crate) fn may_have_recorded(&self) -> bool {
        self.opened.is_some() && !self.claimed && self.store.outcomes().is_some()
    }

    /// Recorded results first: before the tool runs again, the outcome an earlier retry of
    /// this state recorded, waiting for it while another copy of this retry is still at work
    /// (within the duplicate wait). `Ok(true)`: it was this same retry (principal and
    /// answers), and the pass answers with it ([`Mrtr::finish_call`]) whatever the world
    /// looks like now; `Err`: the state was used with other answers (refused as already
    /// used), or the other copy is still at work after the wait (retryable); `Ok(false)`:
    /// nothing is claimed, and the pass runs as usual (its claim still decides). A store
    /// failure here is not an answer: the claim that follows has its own.
    pub(crate) async fn recorded_first(
        &mut self,
        principal: &Principal,
    ) -> Result<bool, HandlerError> {
        match self.settled_lookup(principal).await {
            ClaimLookup::Same(outcome) => {
                self.replayed = Some(outcome);
                // Counted as before: the state was found used, and the retry replayed.
                observe::claim("already_used");
                observe::refused("replayed");
                Ok(true)
            }
            ClaimLookup::Other => {
                self.answered_early = true;
                observe::claim("already_used");
                observe::refused("already_used");
                Err(already_used())
            }
            ClaimLookup::Pending => {
                self.answered_early = true;
                observe::claim("already_used");
                observe::refused("in_progress");
                Err(in_progress(self.duplicate_wait.unwrap_or_default()))
            }
            // The store could not say whether an earlier copy carried this confirmation out:
            // running the tool now could only report this pass's view ("nothing was
            // changed"), which says nothing about that copy. Retryable, and says so.
            ClaimLookup::Unreadable => {
                self.answered_early = true;
                observe::refused("outcome_unreadable");
                Err(outcome_unreadable())
            }
            ClaimLookup::Nothing => Ok(false),
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
            .claim(Claim::new(state.nonce, state.expires_at_time()).by(principal))
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
                    .claim(
                        Claim::new(state.nonce, state.expires_at_time())
                            .by(principal)
                            .during(work),
                    )
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
                    .claim(
                        Claim::new(state.nonce, state.expires_at_time())
                            .by(principal)
                            .in_tx(work),
                    )
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
        self.replayed.is_none() && !(self.opened.is_some() && self.store.outcomes().is_some())
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
            return replayed_result(recorded);
        }
        if !self.claimed {
            return self.unclaimed_final(principal, outcome).await;
        }
        let (Some(outcomes), Some(state), Some(fingerprint)) = (
            self.store.outcomes(),
            &self.opened,
            self.fingerprint(principal),
        ) else {
            return outcome;
        };
        // Whatever the pass ended with is recorded, so a copy of it waiting for the outcome
        // learns that it ended (and, for a result or an error, gets the same answer).
        let record = match &outcome {
            Ok(result) => match serde_json::to_vec(result) {
                Ok(bytes) => RecordedOutcome::encode(fingerprint, &bytes),
                Err(e) => {
                    tracing::warn!(error = %e, "a claimed result did not serialise");
                    RecordedOutcome::encode_continued(fingerprint)
                }
            },
            Err(e) => match e.as_protocol().map(serde_json::to_vec) {
                Some(Ok(bytes)) => RecordedOutcome::encode_failed(fingerprint, &bytes),
                _ => RecordedOutcome::encode_continued(fingerprint),
            },
        };
        let timer = StoreTimer::start("record_outcome");
        let recorded = outcomes
            .record_outcome(state.nonce, state.expires_at_time(), &record)
            .await;
        timer.done(&recorded);
        if let Err(e) = recorded {
            // The answer stands; an identical retry waits, then hears "in progress".
            tracing::warn!(reason = e.reason(), error = %e, "recording a claim's outcome failed");
        }
        outcome
    }
}

impl Mrtr {
    /// The final answer of a retry pass that claimed nothing (the tool found nothing to do,
    /// or refused what it was shown). If meanwhile another copy of this very retry claimed
    /// the state, this pass's view is stale (the note it did not find is gone because of that
    /// copy): the answer is that copy's recorded outcome, waited for like any duplicate's,
    /// so the reply says what really happened. A pass that asks again is left alone.
    async fn unclaimed_final(
        &mut self,
        principal: &Principal,
        outcome: Result<CallToolResult, HandlerError>,
    ) -> Result<CallToolResult, HandlerError> {
        if self.opened.is_none()
            || self.answered_early
            || outcome.as_ref().is_err_and(HandlerError::is_input_required)
        {
            return outcome;
        }
        match self.settled_lookup(principal).await {
            ClaimLookup::Same(recorded) => {
                observe::refused("replayed");
                replayed_result(recorded)
            }
            ClaimLookup::Pending => Err(in_progress(self.duplicate_wait.unwrap_or_default())),
            // Whether another copy claimed meanwhile is unknown, so this pass's view is no
            // answer either.
            ClaimLookup::Unreadable => Err(outcome_unreadable()),
            ClaimLookup::Other | ClaimLookup::Nothing => outcome,
        }
    }
}

/// Where the claim of a retry's state stands, as that retry sees it.
enum ClaimLookup {
    /// Not claimed.
    Nothing,
    /// Claimed by a copy of this retry (or another use) whose outcome is not recorded yet.
    Pending,
    /// Claimed by an identical retry, which recorded this outcome.
    Same(RecordedOutcome),
    /// Claimed with other answers or by another principal.
    Other,
    /// The store could not say.
    Unreadable,
}

/// The answer an identical retry gets: the recorded result, or the recorded error.
fn replayed_result(recorded: RecordedOutcome) -> Result<CallToolResult, HandlerError> {
    let mut result = match recorded {
        RecordedOutcome::Failed(bytes) => {
            return Err(HandlerError::protocol(
                serde_json::from_slice::<ErrorObject>(&bytes).unwrap_or_else(|_| {
                    ErrorObject::internal_error(
                        "This confirmation was already used by an earlier retry, which failed, but its error could not be read back; check the outcome before asking again.",
                    )
                }),
            ));
        }
        // Never handed out as `Same` (see `claim_lookup`); answered like any reuse.
        RecordedOutcome::Continued => return Err(already_used()),
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
    Ok(result)
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

/// The answer to a copy of a retry whose other copy still holds the claim, unfinished, after
/// the duplicate wait: retryable, with a retry time, never "restart the call".
fn in_progress(waited: std::time::Duration) -> HandlerError {
    let retry_after = IN_PROGRESS_RETRY_AFTER_SECS;
    HandlerError::protocol(
        ErrorObject::internal_error(format!(
            "This confirmation is still being carried out by an earlier copy of this request \
             (waited {}s for its outcome). Send this same request again, with the same \
             requestState and inputResponses, in {retry_after}s to get that outcome; do not ask \
             the user again. If this answer keeps coming, that copy stopped before recording \
             its outcome, so whether the action took effect is unknown: check before asking \
             again.",
            waited.as_secs()
        ))
        .with_data(serde_json::json!({ "retryAfter": retry_after, "reason": "in_progress" })),
    )
}

/// The answer to a retry whose earlier copies' outcome the replay store could not tell:
/// retryable, with a retry time, and never "nothing was changed" (one of them may have
/// carried the confirmation out).
fn outcome_unreadable() -> HandlerError {
    let retry_after = IN_PROGRESS_RETRY_AFTER_SECS;
    HandlerError::protocol(
        ErrorObject::internal_error(format!(
            "The replay store did not answer, so whether an earlier copy of this request \
             already carried out this confirmation is unknown for now. Send this same request \
             again, with the same requestState and inputResponses, in {retry_after}s; do not \
             ask the user again."
        ))
        .with_data(
            serde_json::json!({ "retryAfter": retry_after, "reason": "outcome_unreadable" }),
        ),
    )
}

/// The answer to a retry whose claim was refused by a claim released since, unused: retryable
/// at once, with the same state.
fn released() -> HandlerError {
    HandlerError::protocol(
        ErrorObject::internal_error(
            "This confirmation was held by an earlier copy of this request that was released \
             without carrying it out, so nothing was changed. Send this same request again, \
             with the same requestState and inputResponses; do not ask the user again.",
        )
        .with_data(serde_json::json!({ "retryAfter": 1, "reason": "claim_released" })),
    )
}

/// Seconds an "in progress" answer asks the client to wait before resending.
const IN_PROGRESS_RETRY_AFTER_SECS: u64 = 2;

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
