//! Turning a tool's input-required signal into an `InputRequiredResult` with sealed state.

use std::time::SystemTime;

use mcp_types::{ErrorObject, InputRequiredResult};

use super::Inner;
use crate::context::ToolContext;
use crate::state::{ArgDigest, StateError, StatePayload, canonical_digest};

/// The `-32602` for a `requestState` that failed verification.
pub(super) fn state_refused(e: &StateError) -> ErrorObject {
    ErrorObject::invalid_params(format!(
        "requestState is invalid or expired ({}): {e}. Restart the call without requestState and inputResponses.",
        e.reason()
    ))
}

/// Seals the next state for the requests the tool registered on this pass.
///
/// - First call: a fresh round-0 state.
/// - Retry that consumed an answer (nonce claimed): the next round, fresh nonce, with this
///   pass's answers added to those carried from earlier rounds.
/// - Retry that consumed nothing (missing or malformed responses, cancel): the same round,
///   nonce and expiry, so re-asking never mints a second usable confirmation and never extends
///   the window.
pub(super) fn input_required(
    inner: &Inner,
    ctx: &mut ToolContext,
    method: &'static str,
    target: &str,
    arg_digest: Option<ArgDigest>,
) -> Result<InputRequiredResult, ErrorObject> {
    let principal = ctx.principal().clone();
    // The pass is over: what it registered moves into the result instead of being copied.
    let mrtr = &mut ctx.mrtr;
    if mrtr.pending.is_empty() {
        return Err(ErrorObject::internal_error(
            "the tool signalled input required without asking for anything",
        ));
    }
    let now = SystemTime::now();
    let randomness =
        |e: crate::state::RandomnessUnavailable| ErrorObject::internal_error(e.to_string());
    let mut payload = match &mrtr.opened {
        None => {
            // Normally computed by the dispatcher; recompute defensively.
            let digest = arg_digest.unwrap_or_else(|| canonical_digest(&serde_json::Value::Null));
            StatePayload::new(
                principal.as_str(),
                method,
                target,
                digest,
                now,
                inner.state_ttl,
            )
            .map_err(randomness)?
        }
        Some(previous) if mrtr.claimed && previous.round >= inner.limits.max_rounds => {
            crate::observe::refused("max_rounds");
            return Err(ErrorObject::invalid_params(format!(
                "this call needed more than {} rounds of input; restart it without requestState",
                inner.limits.max_rounds
            )));
        }
        Some(previous) if mrtr.claimed => {
            let mut next = previous
                .next_round(now, inner.state_ttl)
                .map_err(randomness)?;
            for (k, _) in &mrtr.fresh_answers {
                if let Some(record) = mrtr.fresh_record(k) {
                    next.answers.insert(k.clone(), record);
                }
            }
            next
        }
        Some(previous) => previous.clone(),
    };
    payload.bindings = std::mem::take(&mut mrtr.pending_bindings);
    for (k, v) in &mrtr.new_correlations {
        payload.correlations.insert(k.clone(), *v);
    }
    let token = inner
        .keyring
        .seal(&payload)
        .map_err(|e| ErrorObject::internal_error(format!("cannot seal request state: {e}")))?;
    // No `_meta` here: the reply appends the server's cached one (`result_reply_with_meta`).
    InputRequiredResult::new(Some(std::mem::take(&mut mrtr.pending)), Some(token))
        .map_err(|e| ErrorObject::internal_error(e.to_string()))
}
