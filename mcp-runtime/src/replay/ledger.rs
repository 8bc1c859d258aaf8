//! The ledger of flows waiting for an answer, so that abandoned flows are counted once across
//! a fleet ([`FlowLedger`]).

use std::time::SystemTime;

use futures::future::BoxFuture;

use super::ReplayError;
use crate::state::Nonce;

/// The most entries one [`FlowLedger::take_abandoned`] call takes; the sweep calls again
/// (within its deadline) while a call comes back full.
pub const SWEEP_BATCH: usize = 500;

/// What one [`FlowLedger::take_abandoned`] call removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Taken {
    /// Entries removed by this call (abandoned flows and expired answer marks).
    pub removed: u64,
    /// Of those, the flows never answered: this call's count of abandoned flows.
    pub abandoned: u64,
}

/// Flows asked and not yet answered, shared by every instance of a server, so that a flow
/// nobody answered before its `requestState` expired (*abandoned*) is counted exactly once
/// fleet-wide ([`ServerBuilder::count_abandoned_flows`](crate::server::ServerBuilder::count_abandoned_flows)).
///
/// An entry is a state's nonce and expiry: [`flow_asked`](Self::flow_asked) when an
/// input-required reply carries the state, [`flow_answered`](Self::flow_answered) when a retry
/// brings it back, and [`take_abandoned`](Self::take_abandoned) removes expired entries
/// atomically, so that among every instance sweeping at once each entry is taken, and counted,
/// by exactly one.
///
/// The runtime writes the ledger off the reply's path, so an answer may reach the store before
/// the record of the state it answers: an answer therefore leaves a mark (until the state's
/// expiry) that a later first record of the same nonce does not overwrite. Only a state asked
/// *again* (re-sealed with the nonce a retry brought back, recorded after that retry's answer)
/// clears the mark.
pub trait FlowLedger: Send + Sync {
    /// Records that the state with `nonce`, usable until `expires_at`, awaits an answer.
    /// `again` is false for a state sealed with a fresh nonce: an answer mark already there
    /// stays (the answer came first). `again` is true for a state re-sealed with the nonce of
    /// the retry being answered: it waits for an answer again.
    fn flow_asked(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
        again: bool,
    ) -> BoxFuture<'_, Result<(), ReplayError>>;

    /// Records that a retry brought back the state with `nonce` (usable until
    /// `expires_at`): it is answered, whether or not its record is there yet.
    fn flow_answered(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
    ) -> BoxFuture<'_, Result<(), ReplayError>>;

    /// Removes at most `limit` entries whose expiry is before `now` and says how many *this
    /// call* removed, and how many of those were never answered. An entry removed by a
    /// concurrent call (this or another instance) is not counted here.
    fn take_abandoned(
        &self,
        now: SystemTime,
        limit: usize,
    ) -> BoxFuture<'_, Result<Taken, ReplayError>>;
}
