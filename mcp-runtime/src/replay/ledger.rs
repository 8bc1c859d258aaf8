//! The ledger of flows waiting for an answer, so that abandoned flows are counted once across
//! a fleet ([`FlowLedger`]).

use std::time::SystemTime;

use futures::future::BoxFuture;

use super::ReplayError;
use crate::state::Nonce;

/// The most entries one [`FlowLedger::take_abandoned`] call takes; the sweep calls again
/// (within its deadline) while a call comes back full.
pub const SWEEP_BATCH: usize = 500;

/// Flows asked and not yet answered, shared by every instance of a server, so that a flow
/// nobody answered before its `requestState` expired (*abandoned*) is counted exactly once
/// fleet-wide ([`ServerBuilder::count_abandoned_flows`](crate::server::ServerBuilder::count_abandoned_flows)).
///
/// An entry is a state's nonce and expiry: [`flow_asked`](Self::flow_asked) when an
/// input-required reply carries the state, [`flow_answered`](Self::flow_answered) when a retry
/// brings it back, and [`take_abandoned`](Self::take_abandoned) removes expired entries
/// atomically, so that among every instance sweeping at once each entry is taken, and counted,
/// by exactly one.
pub trait FlowLedger: Send + Sync {
    /// Records that the state with `nonce`, usable until `expires_at`, awaits an answer.
    /// Recording the same nonce again keeps one entry.
    fn flow_asked(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
    ) -> BoxFuture<'_, Result<(), ReplayError>>;

    /// Records that a retry brought back the state with `nonce`: it is no longer waiting.
    /// Unknown nonces are ignored.
    fn flow_answered(&self, nonce: Nonce) -> BoxFuture<'_, Result<(), ReplayError>>;

    /// Removes at most `limit` entries whose expiry is before `now` and returns how many
    /// *this call* removed: an entry removed by a concurrent call (this or another instance)
    /// is not counted here.
    fn take_abandoned(
        &self,
        now: SystemTime,
        limit: usize,
    ) -> BoxFuture<'_, Result<u64, ReplayError>>;
}
