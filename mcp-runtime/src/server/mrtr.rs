//! Turning a tool's input-required signal into an `InputRequiredResult` with sealed state: the
//! server's keys and limits handed to the request's MRTR ledger (`crate::mrtr`), which seals.

use mcp_types::{ErrorObject, InputRequiredResult};

use super::Inner;
use crate::context::RequestContext;
use crate::mrtr::Sealing;
pub(super) use crate::mrtr::state_refused;
use crate::state::ArgDigest;

/// Seals the next state for the requests the tool registered on this pass (see
/// `Mrtr::seal_next`).
pub(super) fn input_required(
    inner: &Inner,
    ctx: &mut RequestContext,
    method: &'static str,
    target: &str,
    arg_digest: Option<ArgDigest>,
) -> Result<InputRequiredResult, ErrorObject> {
    ctx.seal_next(Sealing {
        keyring: &inner.keyring,
        ttl: inner.state_ttl,
        max_rounds: inner.limits.max_rounds,
        method,
        target,
        arg_digest,
    })
}
