//! In-process replay store.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;

use super::{ClaimAction, ClaimOutcome, Nonce, ReplayError, ReplayStore};

/// How often claims prune expired entries even when the store is not full.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// A replay store in this process's memory: only correct for a single-instance server.
///
/// Bounded: when it holds `capacity` claims it first drops expired ones, and if all are
/// still live it **refuses** the new claim with [`ReplayError::CapacityExhausted`] instead of
/// evicting a live claim (evicting would silently re-enable a replay). Expired claims are also
/// pruned at most once a minute during claims, and on [`ReplayStore::prune_expired`].
///
/// `claim_with` inserts the claim, runs the action without holding the lock, and removes the
/// claim again if the action fails or panics. While the action runs, concurrent claims of the
/// same nonce see `AlreadyUsed` (the SQL stores make them wait for the outcome instead).
#[derive(Debug)]
pub struct MemoryReplayStore {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    claims: HashMap<Nonce, SystemTime>,
    next_prune: SystemTime,
}

impl MemoryReplayStore {
    /// Capacity used by `open_store("memory")`.
    pub const DEFAULT_CAPACITY: usize = 100_000;

    /// An empty store holding at most `capacity` unexpired claims (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            inner: Mutex::new(Inner {
                claims: HashMap::new(),
                next_prune: SystemTime::now(),
            }),
        }
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
        // The map is consistent after every statement, so a panic elsewhere while holding the
        // lock cannot leave it half-updated; keep serving.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn claim_now(&self, nonce: Nonce, expires_at: SystemTime) -> Result<ClaimOutcome, ReplayError> {
        let now = SystemTime::now();
        let mut inner = self.lock();
        if inner.claims.contains_key(&nonce) {
            return Ok(ClaimOutcome::AlreadyUsed);
        }
        if inner.claims.len() >= self.capacity || now >= inner.next_prune {
            inner.claims.retain(|_, exp| *exp > now);
            inner.next_prune = now + PRUNE_EVERY;
        }
        if inner.claims.len() >= self.capacity {
            return Err(ReplayError::CapacityExhausted {
                capacity: self.capacity,
            });
        }
        inner.claims.insert(nonce, expires_at);
        Ok(ClaimOutcome::Claimed)
    }
}

impl ReplayStore for MemoryReplayStore {
    fn claim(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
    ) -> BoxFuture<'_, Result<ClaimOutcome, ReplayError>> {
        Box::pin(async move { self.claim_now(nonce, expires_at) })
    }

    fn claim_with(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
        action: ClaimAction,
    ) -> BoxFuture<'_, Result<ClaimOutcome, ReplayError>> {
        Box::pin(async move {
            if self.claim_now(nonce, expires_at)? == ClaimOutcome::AlreadyUsed {
                return Ok(ClaimOutcome::AlreadyUsed);
            }
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(action));
            let result = match outcome {
                Ok(Ok(())) => return Ok(ClaimOutcome::Claimed),
                Ok(Err(e)) => Err(ReplayError::ActionFailed(e)),
                Err(_) => Err(ReplayError::ActionPanicked),
            };
            self.lock().claims.remove(&nonce);
            result
        })
    }

    fn prune_expired(&self) -> BoxFuture<'_, Result<u64, ReplayError>> {
        Box::pin(async move {
            let now = SystemTime::now();
            let mut inner = self.lock();
            let before = inner.claims.len();
            inner.claims.retain(|_, exp| *exp > now);
            inner.next_prune = now + PRUNE_EVERY;
            Ok(u64::try_from(before - inner.claims.len()).unwrap_or(u64::MAX))
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
                        let outcome = futures::executor::block_on(store.claim(nonce, later()));
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
                tokio::spawn(async move { store.claim(nonce, later()).await.unwrap() })
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
            .claim(Nonce::from_bytes([1; 16]), later())
            .await
            .unwrap();
        store
            .claim(Nonce::from_bytes([2; 16]), later())
            .await
            .unwrap();
        let err = store
            .claim(Nonce::from_bytes([3; 16]), later())
            .await
            .unwrap_err();
        assert!(matches!(
            err,
            ReplayError::CapacityExhausted { capacity: 2 }
        ));
        // The refused nonce was not recorded; live claims are intact.
        assert_eq!(
            store
                .claim(Nonce::from_bytes([1; 16]), later())
                .await
                .unwrap(),
            ClaimOutcome::AlreadyUsed
        );

        let store = MemoryReplayStore::new(2);
        store.claim(Nonce::from_bytes([1; 16]), past).await.unwrap();
        store
            .claim(Nonce::from_bytes([2; 16]), later())
            .await
            .unwrap();
        // Full, but one claim is expired: it is dropped to make room.
        let n3 = Nonce::from_bytes([3; 16]);
        assert_eq!(
            store.claim(n3, later()).await.unwrap(),
            ClaimOutcome::Claimed
        );
        assert_eq!(store.len(), 2);
    }

    #[tokio::test]
    async fn prune_expired_counts_and_keeps_live() {
        let store = MemoryReplayStore::new(10);
        let past = SystemTime::now() - Duration::from_secs(1);
        store.claim(Nonce::from_bytes([1; 16]), past).await.unwrap();
        store.claim(Nonce::from_bytes([2; 16]), past).await.unwrap();
        store
            .claim(Nonce::from_bytes([3; 16]), later())
            .await
            .unwrap();
        assert_eq!(store.prune_expired().await.unwrap(), 2);
        assert_eq!(store.len(), 1);
        assert_eq!(
            store
                .claim(Nonce::from_bytes([3; 16]), later())
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
            .claim_with(n, later(), Box::new(|| Err(ActionError::new("disk full"))))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("disk full"), "{err}");
        let err = store
            .claim_with(n, later(), Box::new(|| panic!("boom")))
            .await
            .unwrap_err();
        assert!(matches!(err, ReplayError::ActionPanicked));
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let action: ClaimAction = Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        assert_eq!(
            store.claim_with(n, later(), action).await.unwrap(),
            ClaimOutcome::Claimed
        );
        let r = ran.clone();
        let action: ClaimAction = Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        assert_eq!(
            store.claim_with(n, later(), action).await.unwrap(),
            ClaimOutcome::AlreadyUsed
        );
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    }
}
