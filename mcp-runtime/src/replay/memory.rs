//! In-process replay store.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;

use super::{
    Claim, ClaimOutcome, ClaimState, ClaimWith, DuringWork, FlowLedger, Nonce, OutcomeStore,
    ReplayError, ReplayStore, Taken,
};
use crate::Principal;

/// How often claims prune expired entries even when the store is not full.
const PRUNE_EVERY: Duration = Duration::from_secs(60);
/// Most bytes of recorded outcomes held at once; beyond it, outcomes are not recorded (an
/// identical retry is then refused like any other reuse).
const OUTCOME_BUDGET: usize = 32 * 1024 * 1024;

/// A replay store in this process's memory: only correct for a single-instance server.
///
/// Bounded: when it holds `capacity` claims it first drops expired ones, and if all are
/// still live it **refuses** the new claim with [`ReplayError::CapacityExhausted`] instead of
/// evicting a live claim (evicting would silently re-enable a replay). Expired claims are also
/// pruned at most once a minute during claims, and on [`ReplayStore::prune_expired`].
///
/// Fair: claims made on behalf of a principal (a [`Claim`] made [`by`](Claim::by) one, as the
/// runtime's are) count against that principal's
/// share, by default a tenth of the capacity ([`with_principal_share`](Self::with_principal_share)
/// changes it). A principal at its share gets [`ReplayError::PrincipalShareExhausted`] (after
/// its expired claims are dropped), so one client looping through confirmations (a decline
/// loop, say) cannot fill the store and lock every other principal out.
///
/// `claim_with` inserts the claim, runs the action on Tokio's blocking pool without holding
/// the lock, and removes the claim again if the action fails or panics. While the action runs,
/// concurrent claims of the same nonce see `AlreadyUsed` (the SQL stores make them wait for
/// the outcome instead).
#[derive(Debug)]
pub struct MemoryReplayStore {
    capacity: usize,
    share: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    claims: HashMap<Nonce, Held>,
    /// Live claims per principal (those made with a principal).
    held: HashMap<Principal, usize>,
    /// Bytes of all recorded outcomes.
    outcome_bytes: usize,
    next_prune: SystemTime,
    /// Flows asked and not yet taken ([`FlowLedger`]): nonce → the state's expiry and whether
    /// it was answered. At most `capacity` entries; beyond it a new flow is not tracked (and
    /// not counted if abandoned).
    flows: HashMap<Nonce, (SystemTime, bool)>,
}

#[derive(Debug)]
struct Held {
    expires_at: SystemTime,
    owner: Option<Principal>,
    outcome: Option<Box<[u8]>>,
}

impl Inner {
    /// Drops expired claims and their principals' counts.
    fn prune(&mut self, now: SystemTime) -> usize {
        let before = self.claims.len();
        let (held, bytes) = (&mut self.held, &mut self.outcome_bytes);
        self.claims.retain(|_, claim| {
            let keep = claim.expires_at > now;
            if !keep {
                if let Some(owner) = &claim.owner {
                    release(held, owner);
                }
                *bytes = bytes.saturating_sub(claim.outcome.as_ref().map_or(0, |o| o.len()));
            }
            keep
        });
        self.next_prune = now + PRUNE_EVERY;
        before - self.claims.len()
    }

    /// Forgets the claim of `nonce` (a failed action's).
    fn remove(&mut self, nonce: &Nonce) {
        if let Some(claim) = self.claims.remove(nonce) {
            if let Some(owner) = &claim.owner {
                release(&mut self.held, owner);
            }
            self.outcome_bytes = self
                .outcome_bytes
                .saturating_sub(claim.outcome.as_ref().map_or(0, |o| o.len()));
        }
    }
}

fn release(held: &mut HashMap<Principal, usize>, owner: &Principal) {
    if let Some(count) = held.get_mut(owner) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            held.remove(owner);
        }
    }
}

impl MemoryReplayStore {
    /// Capacity used by `open_store("memory")`.
    pub const DEFAULT_CAPACITY: usize = 100_000;

    /// An empty store holding at most `capacity` unexpired claims (at least 1), each principal
    /// at most a tenth of them (at least 1).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            capacity,
            share: (capacity / 10).max(1),
            inner: Mutex::new(Inner {
                claims: HashMap::new(),
                held: HashMap::new(),
                outcome_bytes: 0,
                next_prune: SystemTime::now(),
                flows: HashMap::new(),
            }),
        }
    }

    /// Sets how many unexpired claims one principal may hold (clamped to 1..=capacity).
    pub fn with_principal_share(mut self, share: usize) -> Self {
        self.share = share.clamp(1, self.capacity);
        self
    }

    /// How many unexpired claims one principal may hold.
    pub fn principal_share(&self) -> usize {
        self.share
    }

    /// Number of claims currently stored (expired ones included until pruned).
    pub fn len(&self) -> usize {
        self.lock().claims.len()
    }

    /// Whether no claims are stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The maps are consistent after every statement, so a panic elsewhere while holding the
        // lock cannot leave them half-updated; keep serving.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn claim_now(
        &self,
        principal: Option<&Principal>,
        nonce: Nonce,
        expires_at: SystemTime,
    ) -> Result<ClaimOutcome, ReplayError> {
        let now = SystemTime::now();
        let mut inner = self.lock();
        if inner.claims.contains_key(&nonce) {
            return Ok(ClaimOutcome::AlreadyUsed);
        }
        let held = |inner: &Inner| {
            principal
                .and_then(|p| inner.held.get(p))
                .copied()
                .unwrap_or(0)
        };
        let over_share = |inner: &Inner| principal.is_some() && held(inner) >= self.share;
        if inner.claims.len() >= self.capacity || over_share(&inner) || now >= inner.next_prune {
            inner.prune(now);
        }
        // The principal's own excess is refused first, so a principal over its share is told
        // so even when the whole store is full because of it.
        if over_share(&inner) {
            return Err(ReplayError::PrincipalShareExhausted { share: self.share });
        }
        if inner.claims.len() >= self.capacity {
            return Err(ReplayError::CapacityExhausted {
                capacity: self.capacity,
            });
        }
        inner.claims.insert(
            nonce,
            Held {
                expires_at,
                owner: principal.cloned(),
                outcome: None,
            },
        );
        if let Some(p) = principal {
            *inner.held.entry(p.clone()).or_insert(0) += 1;
        }
        Ok(ClaimOutcome::Claimed)
    }

    async fn claim_and_act(
        &self,
        principal: Option<&Principal>,
        nonce: Nonce,
        expires_at: SystemTime,
        action: DuringWork,
    ) -> Result<ClaimOutcome, ReplayError> {
        if self.claim_now(principal, nonce, expires_at)? == ClaimOutcome::AlreadyUsed {
            return Ok(ClaimOutcome::AlreadyUsed);
        }
        // The action may do file I/O: keep it off the async workers.
        let outcome =
            tokio::task::spawn_blocking(move || std::panic::catch_unwind(AssertUnwindSafe(action)))
                .await;
        let result = match outcome {
            Ok(Ok(Ok(()))) => return Ok(ClaimOutcome::Claimed),
            Ok(Ok(Err(e))) => Err(ReplayError::ActionFailed(e)),
            Ok(Err(_)) => Err(ReplayError::ActionPanicked),
            Err(e) => Err(ReplayError::Worker(e.to_string())),
        };
        self.lock().remove(&nonce);
        result
    }
}

impl ReplayStore for MemoryReplayStore {
    fn name(&self) -> &'static str {
        "memory"
    }

    /// A fresh [`MemoryRateLimitStore`](crate::rate_limit::MemoryRateLimitStore) (this process
    /// only, like this store).
    fn rate_limit_store(&self) -> Option<Arc<dyn crate::rate_limit::RateLimitStore>> {
        Some(Arc::new(crate::rate_limit::MemoryRateLimitStore::default()))
    }

    fn claim<'a>(&'a self, claim: Claim<'a>) -> BoxFuture<'a, Result<ClaimOutcome, ReplayError>> {
        let Claim {
            nonce,
            expires_at,
            principal,
            work,
            ..
        } = claim;
        match work {
            ClaimWith::Nothing => {
                Box::pin(async move { self.claim_now(principal, nonce, expires_at) })
            }
            ClaimWith::During(action) => {
                Box::pin(self.claim_and_act(principal, nonce, expires_at, action))
            }
            ClaimWith::InTx(work) => {
                let err = work.mismatch(self.name());
                Box::pin(async move { Err(err) })
            }
        }
    }

    fn outcomes(&self) -> Option<&dyn OutcomeStore> {
        Some(self)
    }

    fn flow_ledger(&self) -> Option<&dyn FlowLedger> {
        Some(self)
    }

    fn prune_expired(&self) -> BoxFuture<'_, Result<u64, ReplayError>> {
        Box::pin(async move {
            let pruned = self.lock().prune(SystemTime::now());
            Ok(u64::try_from(pruned).unwrap_or(u64::MAX))
        })
    }
}

/// A map in this process: correct for one instance only, like the claims.
impl FlowLedger for MemoryReplayStore {
    fn flow_asked(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
        again: bool,
    ) -> BoxFuture<'_, Result<(), ReplayError>> {
        Box::pin(async move {
            let mut inner = self.lock();
            let room = inner.flows.len() < self.capacity;
            match inner.flows.get_mut(&nonce) {
                Some(entry) if again => *entry = (expires_at, false),
                // The answer came first: it stays answered.
                Some(_) => {}
                None if room => {
                    inner.flows.insert(nonce, (expires_at, false));
                }
                None => tracing::warn!(
                    capacity = self.capacity,
                    "flow ledger full: this flow will not be counted if abandoned"
                ),
            }
            Ok(())
        })
    }

    fn flow_answered(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
    ) -> BoxFuture<'_, Result<(), ReplayError>> {
        Box::pin(async move {
            let mut inner = self.lock();
            let room = inner.flows.len() < self.capacity;
            match inner.flows.get_mut(&nonce) {
                Some(entry) => entry.1 = true,
                None if room => {
                    inner.flows.insert(nonce, (expires_at, true));
                }
                None => {}
            }
            Ok(())
        })
    }

    fn take_abandoned(
        &self,
        now: SystemTime,
        limit: usize,
    ) -> BoxFuture<'_, Result<Taken, ReplayError>> {
        Box::pin(async move {
            let mut inner = self.lock();
            let expired: Vec<Nonce> = inner
                .flows
                .iter()
                .filter(|(_, (expires_at, _))| *expires_at < now)
                .map(|(nonce, _)| *nonce)
                .take(limit)
                .collect();
            let mut taken = Taken::default();
            for nonce in &expired {
                if let Some((_, answered)) = inner.flows.remove(nonce) {
                    taken.removed += 1;
                    taken.abandoned += u64::from(!answered);
                }
            }
            Ok(taken)
        })
    }
}

impl OutcomeStore for MemoryReplayStore {
    /// Kept with the claim; not recorded (silently) once 32 MiB of
    /// outcomes are held, or when the claim is gone.
    fn record_outcome<'a>(
        &'a self,
        nonce: Nonce,
        expires_at: SystemTime,
        outcome: &'a [u8],
    ) -> BoxFuture<'a, Result<(), ReplayError>> {
        let _ = expires_at;
        Box::pin(async move {
            let mut inner = self.lock();
            if inner.outcome_bytes + outcome.len() > OUTCOME_BUDGET {
                return Ok(());
            }
            let Some(claim) = inner.claims.get_mut(&nonce) else {
                return Ok(());
            };
            let previous = claim.outcome.replace(outcome.into()).map_or(0, |o| o.len());
            inner.outcome_bytes = inner.outcome_bytes.saturating_sub(previous) + outcome.len();
            Ok(())
        })
    }

    fn claim_state(&self, nonce: Nonce) -> BoxFuture<'_, Result<ClaimState, ReplayError>> {
        Box::pin(async move {
            let now = SystemTime::now();
            let inner = self.lock();
            Ok(
                match inner
                    .claims
                    .get(&nonce)
                    .filter(|claim| claim.expires_at > now)
                {
                    None => ClaimState::Unclaimed,
                    Some(Held {
                        outcome: Some(outcome),
                        ..
                    }) => ClaimState::Recorded(outcome.to_vec()),
                    Some(_) => ClaimState::Claimed,
                },
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::ActionError;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn later() -> SystemTime {
        SystemTime::now() + Duration::from_secs(300)
    }

    #[test]
    fn many_threads_one_winner() {
        let store = Arc::new(MemoryReplayStore::new(10_000));
        for round in 0..20u8 {
            let nonce = Nonce::from_bytes([round; 16]);
            let wins = Arc::new(AtomicUsize::new(0));
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    let (store, wins) = (store.clone(), wins.clone());
                    std::thread::spawn(move || {
                        let outcome =
                            futures::executor::block_on(store.claim(Claim::new(nonce, later())));
                        if outcome.unwrap() == ClaimOutcome::Claimed {
                            wins.fetch_add(1, Ordering::SeqCst);
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            assert_eq!(wins.load(Ordering::SeqCst), 1, "round {round}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn many_tasks_one_winner() {
        let store = Arc::new(MemoryReplayStore::new(10_000));
        let nonce = Nonce::from_bytes([42; 16]);
        let tasks: Vec<_> = (0..64)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move { store.claim(Claim::new(nonce, later())).await.unwrap() })
            })
            .collect();
        let mut claimed = 0;
        for t in tasks {
            if t.await.unwrap() == ClaimOutcome::Claimed {
                claimed += 1;
            }
        }
        assert_eq!(claimed, 1);
    }

    #[tokio::test]
    async fn full_of_live_claims_refuses_but_prunes_expired() {
        let store = MemoryReplayStore::new(2);
        let past = SystemTime::now() - Duration::from_secs(1);
        store
            .claim(Claim::new(Nonce::from_bytes([1; 16]), later()))
            .await
            .unwrap();
        store
            .claim(Claim::new(Nonce::from_bytes([2; 16]), later()))
            .await
            .unwrap();
        let err = store
            .claim(Claim::new(Nonce::from_bytes([3; 16]), later()))
            .await
            .unwrap_err();
        assert!(matches!(
            err,
            ReplayError::CapacityExhausted { capacity: 2 }
        ));
        // The refused nonce was not recorded; live claims are intact.
        assert_eq!(
            store
                .claim(Claim::new(Nonce::from_bytes([1; 16]), later()))
                .await
                .unwrap(),
            ClaimOutcome::AlreadyUsed
        );

        let store = MemoryReplayStore::new(2);
        store
            .claim(Claim::new(Nonce::from_bytes([1; 16]), past))
            .await
            .unwrap();
        store
            .claim(Claim::new(Nonce::from_bytes([2; 16]), later()))
            .await
            .unwrap();
        // Full, but one claim is expired: it is dropped to make room.
        let n3 = Nonce::from_bytes([3; 16]);
        assert_eq!(
            store.claim(Claim::new(n3, later())).await.unwrap(),
            ClaimOutcome::Claimed
        );
        assert_eq!(store.len(), 2);
    }

    #[tokio::test]
    async fn prune_expired_counts_and_keeps_live() {
        let store = MemoryReplayStore::new(10);
        let past = SystemTime::now() - Duration::from_secs(1);
        store
            .claim(Claim::new(Nonce::from_bytes([1; 16]), past))
            .await
            .unwrap();
        store
            .claim(Claim::new(Nonce::from_bytes([2; 16]), past))
            .await
            .unwrap();
        store
            .claim(Claim::new(Nonce::from_bytes([3; 16]), later()))
            .await
            .unwrap();
        assert_eq!(store.prune_expired().await.unwrap(), 2);
        assert_eq!(store.len(), 1);
        assert_eq!(
            store
                .claim(Claim::new(Nonce::from_bytes([3; 16]), later()))
                .await
                .unwrap(),
            ClaimOutcome::AlreadyUsed
        );
    }

    #[tokio::test]
    async fn claim_with_releases_on_failure_and_panic() {
        let store = MemoryReplayStore::new(10);
        let n = Nonce::from_bytes([9; 16]);
        let err = store
            .claim(Claim::new(n, later()).during(Box::new(|| Err(ActionError::new("disk full")))))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("disk full"), "{err}");
        let err = store
            .claim(Claim::new(n, later()).during(Box::new(|| panic!("boom"))))
            .await
            .unwrap_err();
        assert!(matches!(err, ReplayError::ActionPanicked));
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let action: DuringWork = Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        assert_eq!(
            store
                .claim(Claim::new(n, later()).during(action))
                .await
                .unwrap(),
            ClaimOutcome::Claimed
        );
        let r = ran.clone();
        let action: DuringWork = Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        assert_eq!(
            store
                .claim(Claim::new(n, later()).during(action))
                .await
                .unwrap(),
            ClaimOutcome::AlreadyUsed
        );
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    }
}

#[cfg(test)]
mod share_tests {
    use super::*;

    fn later() -> SystemTime {
        SystemTime::now() + Duration::from_secs(300)
    }

    fn nonce(i: u32) -> Nonce {
        let mut b = [7u8; 16];
        b[..4].copy_from_slice(&i.to_le_bytes());
        Nonce::from_bytes(b)
    }

    /// One principal looping through confirmations fills only its own share: every other
    /// principal still claims, and the looping one gets its share back as its claims expire.
    #[tokio::test]
    async fn a_principal_at_its_share_does_not_lock_out_others() {
        let store = MemoryReplayStore::new(10).with_principal_share(4);
        let (mallory, alice) = (Principal::new("mallory"), Principal::new("alice"));
        let past = SystemTime::now() - Duration::from_secs(1);
        // One of mallory's claims is already expired: it is dropped first, not counted.
        store
            .claim(Claim::new(nonce(0), past).by(&mallory))
            .await
            .unwrap();
        for i in 1..=4 {
            assert_eq!(
                store
                    .claim(Claim::new(nonce(i), later()).by(&mallory))
                    .await
                    .unwrap(),
                ClaimOutcome::Claimed,
                "claim {i}"
            );
        }
        for i in 5..50 {
            let err = store
                .claim(Claim::new(nonce(i), later()).by(&mallory))
                .await
                .unwrap_err();
            assert!(
                matches!(err, ReplayError::PrincipalShareExhausted { share: 4 }),
                "{err}"
            );
            assert_eq!(err.reason(), "principal_share_exhausted");
        }
        // A decline loop through claim_with is bounded the same way.
        let err = store
            .claim(
                Claim::new(nonce(99), later())
                    .by(&mallory)
                    .during(Box::new(|| Ok(()))),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(err, ReplayError::PrincipalShareExhausted { .. }),
            "{err}"
        );
        for i in 100..104 {
            assert_eq!(
                store
                    .claim(Claim::new(nonce(i), later()).by(&alice))
                    .await
                    .unwrap(),
                ClaimOutcome::Claimed
            );
        }
        // Refused claims were not recorded; mallory's live ones still count as used.
        assert_eq!(
            store
                .claim(Claim::new(nonce(1), later()).by(&alice))
                .await
                .unwrap(),
            ClaimOutcome::AlreadyUsed
        );
        assert_eq!(store.len(), 8);
        // A failed action gives the share back.
        let bob = Principal::new("bob");
        let store = MemoryReplayStore::new(10).with_principal_share(1);
        let err = store
            .claim(
                Claim::new(nonce(1), later())
                    .by(&bob)
                    .during(Box::new(|| Err(crate::replay::ActionError::new("no")))),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, ReplayError::ActionFailed(_)), "{err}");
        assert_eq!(
            store
                .claim(Claim::new(nonce(2), later()).by(&bob))
                .await
                .unwrap(),
            ClaimOutcome::Claimed
        );
    }
}
