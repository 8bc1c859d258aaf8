//! Turning a tool's input-required signal into the requests and sealed state of an
//! `InputRequiredResult`: the server's keys and limits handed to the request's MRTR ledger
//! (`crate::mrtr`), which seals.

use mcp_types::ErrorObject;

use super::Inner;
use crate::context::RequestContext;
pub(super) use crate::mrtr::state_refused;
use crate::mrtr::{SealedInput, Sealing};
use crate::state::ArgDigest;

/// Seals the next state for the requests the tool registered on this pass (see
/// `Mrtr::seal_next`).
pub(super) fn input_required(
    inner: &Inner,
    ctx: &mut RequestContext,
    method: &'static str,
    target: &str,
    arg_digest: Option<ArgDigest>,
) -> Result<SealedInput, ErrorObject> {
    ctx.seal_next(Sealing {
        keyring: &inner.keyring,
        ttl: inner.state_ttl,
        max_rounds: inner.limits.max_rounds,
        method,
        target,
        arg_digest,
    })
}
