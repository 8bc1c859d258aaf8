//! [`Claim`]: one request to a [`ReplayStore`](super::ReplayStore), saying which nonce, until
//! when, for whom, and what runs under it.

use std::fmt;
use std::time::SystemTime;

use super::{DuringWork, Nonce, TxWork};
use crate::Principal;

/// What runs under a claim ([`Claim::work`]).
#[non_exhaustive]
pub enum ClaimWith {
    /// Nothing: the claim alone (durable before the caller acts).
    Nothing,
    /// Standalone work run while the claim is held; both commit or neither does.
    During(DuringWork),
    /// Work in the store's own transaction, built by that store's `tx_work` constructor.
    InTx(TxWork),
}

impl fmt::Debug for ClaimWith {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Nothing => "Nothing",
            Self::During(_) => "During(..)",
            Self::InTx(_) => "InTx(..)",
        })
    }
}

/// One claim of a nonce: [`ReplayStore::claim`](super::ReplayStore::claim) takes it whole.
///
/// ```
/// # use std::time::{Duration, SystemTime};
/// # use mcp_runtime::replay::{Claim, ClaimOutcome, MemoryReplayStore, ReplayStore};
/// # use mcp_runtime::state::Nonce;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryReplayStore::new(100);
/// let nonce = Nonce::from_bytes([7; 16]);
/// let until = SystemTime::now() + Duration::from_secs(600);
/// let first = store.claim(Claim::new(nonce, until)).await.unwrap();
/// let again = store
///     .claim(Claim::new(nonce, until).during(Box::new(|| Ok(()))))
///     .await
///     .unwrap();
/// assert_eq!((first, again), (ClaimOutcome::Claimed, ClaimOutcome::AlreadyUsed));
/// # });
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Claim<'a> {
    /// The nonce claimed.
    pub nonce: Nonce,
    /// The claim is remembered at least until then (the state token's expiry).
    pub expires_at: SystemTime,
    /// On whose behalf, when known: a store that bounds claims per principal counts it.
    pub principal: Option<&'a Principal>,
    /// What runs under the claim.
    pub work: ClaimWith,
}

impl<'a> Claim<'a> {
    /// The claim of `nonce` until `expires_at`, alone, on nobody's behalf.
    pub fn new(nonce: Nonce, expires_at: SystemTime) -> Self {
        Self {
            nonce,
            expires_at,
            principal: None,
            work: ClaimWith::Nothing,
        }
    }

    /// On behalf of `principal`.
    #[must_use]
    pub fn by(mut self, principal: &'a Principal) -> Self {
        self.principal = Some(principal);
        self
    }

    /// With `work` run while the claim is held ([`ClaimWith::During`]).
    #[must_use]
    pub fn during(mut self, work: DuringWork) -> Self {
        self.work = ClaimWith::During(work);
        self
    }

    /// With `work` in the store's own transaction ([`ClaimWith::InTx`]).
    #[must_use]
    pub fn in_tx(mut self, work: TxWork) -> Self {
        self.work = ClaimWith::InTx(work);
        self
    }
}
