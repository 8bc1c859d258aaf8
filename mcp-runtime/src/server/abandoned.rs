//! Counting abandoned flows ([`ServerBuilder::count_abandoned_flows`](super::ServerBuilder::count_abandoned_flows)):
//! the replay store's [`FlowLedger`](crate::replay::FlowLedger) written as states are issued
//! and answered, and swept for expired entries.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::mrtr::Issued;
use crate::replay::{ReplayError, ReplayStore, SWEEP_BATCH};
use crate::state::Nonce;

/// The longest one sweep keeps taking batches: a large backlog is worked off over several
/// sweeps rather than holding one for long.
const SWEEP_DEADLINE: Duration = Duration::from_secs(5);

/// The ledger's writer and sweeper for one server.
pub(super) struct AbandonedFlows {
    store: Arc<dyn ReplayStore>,
    every: Duration,
    sweeping: AtomicBool,
}

impl AbandonedFlows {
    /// Counting on `store` (which must have a ledger), swept every `every`.
    pub(super) fn new(store: Arc<dyn ReplayStore>, every: Duration) -> Arc<Self> {
        let flows = Arc::new(Self {
            store,
            every,
            sweeping: AtomicBool::new(false),
        });
        // Inside a runtime, sweep from the start: entries another instance left behind are
        // counted even if this one never issues a state. Outside, on first use.
        if tokio::runtime::Handle::try_current().is_ok() {
            flows.start_sweeper();
        }
        flows
    }

    /// Starts the periodic sweep once; it stops when the server is dropped.
    fn start_sweeper(self: &Arc<Self>) {
        if self.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(self);
        let every = self.every;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // The first tick is immediate; the first sweep waits one interval.
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(flows) = weak.upgrade() else { return };
                if let Err(e) = flows.sweep().await {
                    tracing::warn!(error = %e, "sweeping abandoned flows failed; retrying next interval");
                }
            }
        });
    }

    /// Marks the state `nonce` (expiring at `expires_secs`, Unix seconds) a retry brought
    /// back as answered, in the background; the handle lets a state sealed on the same pass be
    /// recorded after it.
    pub(super) fn answered(
        &self,
        nonce: Nonce,
        expires_secs: u64,
    ) -> Option<tokio::task::JoinHandle<()>> {
        tokio::runtime::Handle::try_current().ok()?;
        let store = self.store.clone();
        let expires_at = UNIX_EPOCH + Duration::from_secs(expires_secs);
        Some(tokio::spawn(async move {
            if let Some(ledger) = store.flow_ledger()
                && let Err(e) = ledger.flow_answered(nonce, expires_at).await
            {
                tracing::warn!(error = %e, "flow ledger: recording an answered flow failed");
            }
        }))
    }

    /// Records the state an input-required reply carries, in the background, after the
    /// record of the answer this retry brought (if any).
    pub(super) fn asked(self: &Arc<Self>, issued: Issued) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        self.start_sweeper();
        let store = self.store.clone();
        let expires_at = UNIX_EPOCH + Duration::from_secs(issued.expires_secs);
        tokio::spawn(async move {
            if let Some(after) = issued.after {
                // Its failure was logged where it happened.
                let _ = after.await;
            }
            if let Some(ledger) = store.flow_ledger()
                && let Err(e) = ledger
                    .flow_asked(issued.nonce, expires_at, issued.again)
                    .await
            {
                tracing::warn!(error = %e, "flow ledger: recording an asked flow failed");
            }
        });
    }

    /// Takes every expired entry (in batches, for at most [`SWEEP_DEADLINE`]) and counts the
    /// ones this instance took as abandoned flows; returns how many.
    pub(super) async fn sweep(&self) -> Result<u64, ReplayError> {
        let Some(ledger) = self.store.flow_ledger() else {
            return Ok(0);
        };
        let started = Instant::now();
        let mut total = 0u64;
        let result = loop {
            let now = SystemTime::now();
            let remaining = SWEEP_DEADLINE.saturating_sub(started.elapsed());
            match tokio::time::timeout(remaining, ledger.take_abandoned(now, SWEEP_BATCH)).await {
                Ok(Ok(taken)) => {
                    total = total.saturating_add(taken.abandoned);
                    if taken.removed < SWEEP_BATCH as u64 || started.elapsed() >= SWEEP_DEADLINE {
                        break Ok(total);
                    }
                }
                Ok(Err(e)) => break Err(e),
                // A batch still running when the deadline passed may commit: its entries are
                // then gone uncounted (an undercount, never a double count).
                Err(_) => break Ok(total),
            }
        };
        crate::observe::flows_abandoned(total);
        result
    }
}
