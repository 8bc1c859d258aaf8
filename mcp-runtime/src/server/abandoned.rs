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

/// The most ledger writes in flight at once: a slow or stalled store makes the server skip
/// (and log) ledger writes rather than pile up background tasks.
const MAX_PENDING_WRITES: usize = 1024;

/// How long one background ledger write may take before it is abandoned (and its permit freed).
const WRITE_DEADLINE: Duration = Duration::from_secs(5);

/// The ledger's writer and sweeper for one server.
pub(super) struct AbandonedFlows {
    store: Arc<dyn ReplayStore>,
    every: Duration,
    sweeping: AtomicBool,
    writes: WriteGate,
}

impl AbandonedFlows {
    /// Counting on `store` (which must have a ledger), swept every `every`.
    pub(super) fn new(store: Arc<dyn ReplayStore>, every: Duration) -> Arc<Self> {
        let flows = Arc::new(Self {
            store,
            every,
            sweeping: AtomicBool::new(false),
            writes: WriteGate::new(MAX_PENDING_WRITES, WRITE_DEADLINE),
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
        let store = self.store.clone();
        let expires_at = UNIX_EPOCH + Duration::from_secs(expires_secs);
        self.writes.spawn("recording an answered flow", async move {
            match store.flow_ledger() {
                Some(ledger) => ledger.flow_answered(nonce, expires_at).await,
                None => Ok(()),
            }
        })
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
        self.writes.spawn("recording an asked flow", async move {
            if let Some(after) = issued.after {
                // Its failure was logged where it happened.
                let _ = after.await;
            }
            match store.flow_ledger() {
                Some(ledger) => {
                    ledger
                        .flow_asked(issued.nonce, expires_at, issued.again)
                        .await
                }
                None => Ok(()),
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

/// Runs background ledger writes with a cap on how many are in flight and a deadline on each.
struct WriteGate {
    permits: Arc<tokio::sync::Semaphore>,
    deadline: Duration,
}

impl WriteGate {
    fn new(max: usize, deadline: Duration) -> Self {
        Self {
            permits: Arc::new(tokio::sync::Semaphore::new(max)),
            deadline,
        }
    }

    /// Spawns `write` (`what` names it in logs) if a runtime is running and a permit is free;
    /// otherwise skips it with a warning. A failed or late write is logged, never retried.
    fn spawn<F>(&self, what: &'static str, write: F) -> Option<tokio::task::JoinHandle<()>>
    where
        F: std::future::Future<Output = Result<(), ReplayError>> + Send + 'static,
    {
        tokio::runtime::Handle::try_current().ok()?;
        let Ok(permit) = self.permits.clone().try_acquire_owned() else {
            tracing::warn!(
                limit = MAX_PENDING_WRITES,
                "flow ledger: too many writes in flight; skipped {what} (the flow may be miscounted)"
            );
            return None;
        };
        let deadline = self.deadline;
        Some(tokio::spawn(async move {
            match tokio::time::timeout(deadline, write).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "flow ledger: {what} failed"),
                Err(_) => tracing::warn!(?deadline, "flow ledger: {what} timed out"),
            }
            drop(permit);
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::WriteGate;
    use std::time::Duration;

    #[tokio::test]
    async fn stalled_writes_are_capped_and_time_out() {
        let gate = WriteGate::new(3, Duration::from_millis(50));
        let stalled = || std::future::pending::<Result<(), crate::replay::ReplayError>>();
        let started: Vec<_> = (0..5)
            .filter_map(|_| gate.spawn("a test write", stalled()))
            .collect();
        // Only three run at once; the rest are skipped, not queued.
        assert_eq!(started.len(), 3);
        assert_eq!(gate.permits.available_permits(), 0);
        // Past the deadline every stalled write gives up and frees its permit.
        for handle in started {
            handle.await.unwrap();
        }
        assert_eq!(gate.permits.available_permits(), 3);
        assert!(gate.spawn("a test write", async { Ok(()) }).is_some());
    }
}
