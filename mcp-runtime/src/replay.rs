//! One-time use of request state: a store of claimed nonces shared by every instance.
//!
//! A sealed [`crate::state::StatePayload`] carries a random [`Nonce`]. Before acting on an
//! opened token, the server *claims* that nonce; the claim succeeds exactly once across every
//! instance sharing the store, so a replayed retry (same token sent twice, to the same or
//! another instance) finds [`ClaimOutcome::AlreadyUsed`] and does nothing.
//!
//! Stores: [`MemoryReplayStore`] (one process), `SqliteReplayStore` (processes on one host
//! sharing a file), `PostgresReplayStore` and `RedisReplayStore` (any number of hosts).
//! [`open_store`] picks one from a configuration string. A store of your own implements
//! [`ReplayStore`]; nothing in the core names a driver.
//!
//! # Work under a claim
//!
//! [`ClaimWork`] is the one vocabulary for what a confirmed answer changes: nothing, standalone
//! [`DuringWork`] while the claim is held, work after the claim committed, or [`TxWork`] in the
//! store's own transaction. The sections below say what each guarantees.
//!
//! # Claim plus mutation
//!
//! A [`ClaimWith::During`] claim runs a mutation *while the claim is held* so both take effect
//! or neither does: SQL stores insert the nonce, run the action and commit in one transaction
//! (action failure rolls back, the nonce stays claimable); the memory store claims, runs the
//! action and releases the nonce if the action fails.
//!
//! Because the action's effect (say, unlinking a file) lands outside the database, a crash
//! between the action and `COMMIT` leaves the effect done but the nonce unclaimed. That is
//! safe when the action is *convergent*: it checks the world and does nothing when its effect
//! is already there (unlink → "file already gone" counts as done). A later retry re-claims the
//! nonce, runs the action, finds nothing to do and commits; no effect happens twice. The
//! opposite order (commit, then act) would be unsafe: a crash after `COMMIT` would burn the
//! nonce with the effect never applied and no way to retry. Write actions accordingly.
//!
//! If `COMMIT` fails after the action succeeded (a full disk, say), the store says so with
//! [`ReplayError::ActionUnrecorded`]: the effect happened, the nonce is not recorded, and a
//! caller must not report "nothing was changed".
//!
//! # At most once: claim, commit, then act
//!
//! For a destructive action whose effect lies outside the database, converging is not always
//! enough: a crash between the effect and `COMMIT` leaves the nonce claimable, and if the world is
//! restored in between (a deleted file re-created under the same name), a retry acts on the new
//! object. The alternative is to make the claim durable *first* (a plain [`ClaimWith::Nothing`]
//! claim) and act after it (what [`ClaimWork::After`] does): a crash or a failure after the commit
//! leaves the confirmation used and the effect not applied, which the caller reports ("not done;
//! ask again"). That is *at most once*; the convergent claim-plus-action above is *at least once,
//! converging to once*; a transaction (below) is *exactly once*.
//!
//! # Claim and mutation in one database transaction
//!
//! When the data a handler mutates lives in the *same database* as the replay store, the
//! convergence argument above is not needed: a [`ClaimWith::InTx`] claim inserts the nonce and
//! hands the very same transaction to the [`TxWork`], which re-checks whatever it must and writes;
//! one `COMMIT` makes both durable, and any failure (or crash) before it rolls both back. Each
//! backend builds its own work (`backend::sqlite::tx_work`, `backend::postgres::tx_work`): the core
//! carries it without knowing its type, and a store given work built for another answers
//! [`ReplayError::TxMismatch`] naming both. The primitives are `SqliteReplayStore::claim_in` and
//! `PostgresReplayStore::claim_in`, which claim inside a caller's transaction. Each backend module
//! re-exports its driver crates (`backend::sqlite::rusqlite`, `backend::postgres::{tokio_postgres,
//! deadpool_postgres}`) so application code uses exactly the versions the stores do; the core names
//! none of them.
//!
//! # Features
//!
//! The memory store is always built.
//! [`SqliteReplayStore`](crate::backend::sqlite::SqliteReplayStore) needs the `sqlite` feature,
//! [`PostgresReplayStore`](crate::backend::postgres::PostgresReplayStore) the `postgres` feature;
//! [`open_store`] says which feature to enable for a specification whose store is compiled out.
//!
//! # Recorded outcomes
//!
//! After a claimed `tools/call` pass, the runtime hands its result to
//! [`OutcomeStore::record_outcome`] (opaque bytes: a fingerprint of principal, nonce and answers,
//! then the result, or only its digest past [`MAX_RECORDED_OUTCOME`]). A retry whose claim
//! finds the nonce used reads it back with [`OutcomeStore::claim_state`]; only a retry
//! with the same fingerprint gets the result again (marked with
//! [`crate::context::REPLAYED_META_KEY`]). The record lives and expires with the claim. A store
//! that records nothing (the trait's default) keeps refusing identical retries.
//!
//! # Abandoned flows
//!
//! A store may also keep a [`FlowLedger`] ([`ReplayStore::flow_ledger`]): the flows asked and
//! not yet answered, swept for expired entries so that each abandoned flow is counted once
//! across every instance sharing the store. It costs a write per input-required reply, so the
//! server keeps it only when asked to
//! ([`ServerBuilder::count_abandoned_flows`](crate::server::ServerBuilder::count_abandoned_flows)).
//!
//! # Expiry
//!
//! Claims carry the token's expiry. A claimed nonce must be remembered at least until then
//! (after it, the token itself is refused by [`crate::state::StateKeyring::open`]); stores
//! delete expired claims in [`ReplayStore::prune_expired`] and on their own schedule. A nonce
//! whose claim is still stored counts as used even past its expiry.

mod claim;
mod ledger;
mod memory;
mod outcome;
mod spec;
mod work;

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use futures::future::BoxFuture;

pub(crate) use spec::StoreSpec;

use crate::state::Nonce;
pub use claim::{Claim, ClaimWith};
pub use ledger::{FlowLedger, SWEEP_BATCH, Taken};
pub use memory::MemoryReplayStore;
pub use outcome::MAX_RECORDED_OUTCOME;
pub(crate) use outcome::{Fingerprint, RecordedOutcome};
pub use work::{ActionError, ClaimWork, DuringWork, TxOutput, TxWork};

/// The result of a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// This caller is the one and only claimant (and its work, if any, committed).
    Claimed,
    /// The nonce was claimed before: the request is a replay (the work did not run).
    AlreadyUsed,
}

/// Where the claim of a nonce stands ([`OutcomeStore::claim_state`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClaimState {
    /// Not claimed: never, or its claim expired, or the work under it failed and rolled
    /// the claim back.
    Unclaimed,
    /// Claimed, and no outcome is recorded (yet: the claimant may still be running).
    Claimed,
    /// Claimed, with this outcome recorded ([`OutcomeStore::record_outcome`]).
    Recorded(Vec<u8>),
}

/// Why a replay store operation failed. Messages say what to fix; none contains credentials.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The memory store holds `capacity` unexpired claims; it refuses new ones rather than
    /// forget live ones (forgetting would re-enable replays).
    #[error(
        "replay store is full ({capacity} unexpired nonces); raise its capacity, shorten state lifetimes, or use a SQLite/PostgreSQL store"
    )]
    CapacityExhausted {
        /// The configured capacity.
        capacity: usize,
    },
    /// The principal already holds its share of the memory store's unexpired claims; other
    /// principals can still claim. Nothing was claimed.
    #[error(
        "you hold {share} unexpired confirmations, your share of the replay store; wait for them to expire (the state lifetime) before confirming more"
    )]
    PrincipalShareExhausted {
        /// The per-principal share.
        share: usize,
    },
    /// The claim's action failed; the claim was rolled back and the nonce is still claimable.
    #[error("action run under the claim failed (claim rolled back): {0}")]
    ActionFailed(#[source] ActionError),
    /// The action panicked; the claim was rolled back.
    #[error("action run under the claim panicked (claim rolled back)")]
    ActionPanicked,
    /// A [`ClaimWith::During`] claim's action **succeeded** (its effect outside the database
    /// stands), but committing the claim then failed: the nonce is not recorded as used.
    /// Report the action as done; a retry of the same request re-runs the (convergent)
    /// action.
    #[error("the action under the claim was carried out, but recording the claim failed: {cause}")]
    ActionUnrecorded {
        /// Why the commit failed.
        cause: Box<ReplayError>,
    },
    /// The connection was lost while committing a claim transaction: whether the claim (and
    /// a [`ClaimWith::InTx`] action with it) took effect is unknown. Check the data
    /// before acting again.
    #[error("committing the claim transaction failed and its outcome is unknown: {cause}")]
    CommitOutcomeUnknown {
        /// What the commit reported.
        cause: Box<ReplayError>,
    },
    /// The store's backend (its driver, its server, its file) failed.
    #[error("{store} replay store: {context}: {}", error_chain(&**source))]
    Backend {
        /// The store's name ([`ReplayStore::name`]): `sqlite`, `postgres`, `redis`, ...
        store: &'static str,
        /// What was being done.
        context: &'static str,
        /// The underlying error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// A blocking worker task failed (runtime shutting down).
    #[error("replay store worker task failed: {0}")]
    Worker(String),
    /// A [`ClaimWith::InTx`] claim was given [`TxWork`] built for another store than this
    /// one (or this store runs no transactions, like the memory store); nothing was claimed.
    #[error(
        "the replay store ({store}) cannot run work in a {work} transaction; keep the replay store in the same database as the data the work changes"
    )]
    TxMismatch {
        /// The store's name ([`ReplayStore::name`]).
        store: &'static str,
        /// The name of the store the work was built for ([`TxWork::store`]).
        work: &'static str,
    },
    /// The store specification passed to [`open_store`] names a store this build of
    /// mcp-runtime was compiled without.
    #[error("{store}: support not compiled in; enable the `{feature}` feature of mcp-runtime")]
    NotCompiledIn {
        /// The store kind the specification asked for.
        store: &'static str,
        /// The Cargo feature of mcp-runtime that provides it.
        feature: &'static str,
    },
    /// The store specification passed to [`open_store`] is not understood.
    #[error("replay store `{spec}` not understood: {hint}")]
    InvalidSpec {
        /// The specification with any password removed.
        spec: String,
        /// What to write instead.
        hint: &'static str,
    },
}

impl ReplayError {
    /// A [`ReplayError::Backend`] error of the store `store`.
    pub fn backend(
        store: &'static str,
        context: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        Self::Backend {
            store,
            context,
            source: source.into(),
        }
    }

    /// A stable short code for logs and metrics (for a backend error, the store's name).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::CapacityExhausted { .. } => "capacity_exhausted",
            Self::PrincipalShareExhausted { .. } => "principal_share_exhausted",
            Self::ActionFailed(_) => "action_failed",
            Self::ActionPanicked => "action_panicked",
            Self::ActionUnrecorded { .. } => "action_unrecorded",
            Self::CommitOutcomeUnknown { .. } => "commit_outcome_unknown",
            Self::Backend { store, .. } => store,
            Self::Worker(_) => "worker",
            Self::InvalidSpec { .. } => "invalid_spec",
            Self::NotCompiledIn { .. } => "not_compiled_in",
            Self::TxMismatch { .. } => "tx_mismatch",
        }
    }
}

/// A store of claimed nonces shared by every instance of a server.
///
/// Object-safe; hold it as `Arc<dyn ReplayStore>`. A store of your own implements
/// [`claim`](Self::claim) (one method for every kind of [`Claim`]) and
/// [`prune_expired`](Self::prune_expired); it may keep outcomes for identical retries
/// ([`outcomes`](Self::outcomes), an [`OutcomeStore`]), run transactions (a
/// [`ClaimWith::InTx`] it built itself with a [`TxWork`] constructor of its own), and should
/// say its [`name`](Self::name).
pub trait ReplayStore: Send + Sync + fmt::Debug {
    /// A short name for errors and logs (`memory`, `sqlite`, `postgres`, `redis`). By default,
    /// the implementing type's name.
    fn name(&self) -> &'static str {
        std::any::type_name::<Self>()
    }

    /// Claims `claim.nonce` (remembered until at least `claim.expires_at`) and runs
    /// `claim.work` as [`ClaimWith`] says. Exactly one call per nonce, across every instance
    /// sharing the store, gets [`ClaimOutcome::Claimed`]; `AlreadyUsed` means the work did not
    /// run.
    ///
    /// - [`ClaimWith::Nothing`]: the claim alone.
    /// - [`ClaimWith::During`]: the work runs while the claim is held; both commit or neither
    ///   does. A failure of the work returns [`ReplayError::ActionFailed`] and leaves the nonce
    ///   claimable; a `COMMIT` failing after the work succeeded returns
    ///   [`ReplayError::ActionUnrecorded`] (the effect stands). See the [module docs](self) for
    ///   what a crash mid-way means.
    /// - [`ClaimWith::InTx`]: the work runs in the store's own transaction. A store takes only
    ///   the [`TxWork`] its own constructor built ([`TxWork::downcast`]); any other work, or any
    ///   at all for a store without transactions, is [`ReplayError::TxMismatch`] naming this
    ///   store ([`TxWork::mismatch`]), and nothing is claimed.
    ///
    /// A store that bounds claims per principal (the memory store) counts the claim against
    /// `claim.principal`.
    fn claim<'a>(&'a self, claim: Claim<'a>) -> BoxFuture<'a, Result<ClaimOutcome, ReplayError>>;

    /// The outcomes this store keeps for identical retries, or `None` (the default) when it
    /// keeps none: identical retries are then refused like any other reuse. The runtime
    /// serialises and fingerprints a claimed result only for a store that has them, so a store
    /// without costs nothing extra per claim. Every built-in store has them.
    fn outcomes(&self) -> Option<&dyn OutcomeStore> {
        None
    }

    /// The ledger of flows waiting for an answer, used to count abandoned flows
    /// ([`FlowLedger`]), or `None` (the default) when this store keeps none: a server asked to
    /// count abandoned flows on such a store fails to build
    /// ([`BuildError::NoFlowLedger`](crate::server::BuildError::NoFlowLedger)). Every built-in
    /// store has one.
    fn flow_ledger(&self) -> Option<&dyn FlowLedger> {
        None
    }

    /// Checks that the store can be reached (the HTTP transport's `/readyz`): a trivial round
    /// trip to its backend. Default: `Ok` (an in-process store is always reachable).
    fn ping(&self) -> BoxFuture<'_, Result<(), ReplayError>> {
        Box::pin(async { Ok(()) })
    }

    /// Deletes claims whose expiry has passed; returns how many were deleted.
    fn prune_expired(&self) -> BoxFuture<'_, Result<u64, ReplayError>>;

    /// A rate-limit store in the same backend as this replay store, sharing its connection
    /// or pool where it can, for a server with rate limits and no rate-limit store of its
    /// own ([`ServerBuilder::rate_limit_store`](crate::server::ServerBuilder::rate_limit_store)).
    /// Called once, when the server is built; it must not block (a store that needs I/O to
    /// open connects on first use). Every built-in store has one (see
    /// [`rate_limit`](crate::rate_limit)); the default, `None`, leaves the server counting in
    /// memory, per process.
    fn rate_limit_store(&self) -> Option<Arc<dyn crate::rate_limit::RateLimitStore>> {
        None
    }
}

/// The outcomes a [`ReplayStore`] keeps with its claims, so that an identical retry of a
/// claiming request is answered with what that request ended with
/// ([`ReplayStore::outcomes`]).
pub trait OutcomeStore: Send + Sync {
    /// Keeps `outcome` (opaque bytes, at most [`MAX_RECORDED_OUTCOME`] plus a small header)
    /// with the claim of `nonce` until `expires_at`. Called after the claim committed.
    fn record_outcome<'a>(
        &'a self,
        nonce: Nonce,
        expires_at: SystemTime,
        outcome: &'a [u8],
    ) -> BoxFuture<'a, Result<(), ReplayError>>;

    /// Where the claim of `nonce` stands: unclaimed, claimed with no outcome recorded (its
    /// claimant may still be at work), or claimed with its recorded outcome. The runtime asks
    /// this before a retry's tool code runs, so that a copy of a retry still in flight
    /// elsewhere is waited for rather than run again.
    fn claim_state(&self, nonce: Nonce) -> BoxFuture<'_, Result<ClaimState, ReplayError>>;
}

/// Opens a store from a configuration string:
///
/// - `memory` or `memory:CAPACITY`: [`MemoryReplayStore`] (single process only; each
///   principal may hold a tenth of the capacity);
/// - `sqlite:PATH`: [`SqliteReplayStore`](crate::backend::sqlite::SqliteReplayStore) on the file at
///   `PATH` (created if missing);
/// - `postgres://...` or `postgresql://...`:
///   [`PostgresReplayStore`](crate::backend::postgres::PostgresReplayStore) with that URL;
/// - `redis://HOST:PORT/DB`: `RedisReplayStore` on that database (feature `redis`);
/// - any scheme registered with [`backend::register`](crate::backend::register): that
///   backend's replay store.
///
/// The scheme picks the [`Backend`](crate::backend::Backend) (see [`crate::backend`]).
pub async fn open_store(spec: &str) -> Result<Arc<dyn ReplayStore>, ReplayError> {
    match crate::backend::backend_for(spec) {
        Some(backend) => backend.replay_store(spec.trim()).await,
        None => Err(ReplayError::InvalidSpec {
            spec: redact(spec.trim()),
            hint: crate::backend::UNKNOWN_SCHEME,
        }),
    }
}

/// `error` and its sources, joined with `: ` (driver errors keep the useful part, such as
/// "connection refused", in their sources).
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// `spec` with the password of a URL (`scheme://user:password@host`) replaced by `***`.
pub(crate) fn redact(spec: &str) -> String {
    let Some((scheme, rest)) = spec.split_once("://") else {
        return spec.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            let masked = if userinfo.contains(':') {
                format!("{user}:***")
            } else {
                user.to_owned()
            };
            format!("{scheme}://{masked}@{host}{tail}")
        }
        None => spec.to_owned(),
    }
}

/// Seconds since the Unix epoch, clamped to `i64` (SQL integer columns).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn unix_secs_i64(t: SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_passwords() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("postgres://h/db?x=1"), "postgres://h/db?x=1");
        assert_eq!(redact("sqlite:/a"), "sqlite:/a");
    }

    #[tokio::test]
    async fn open_store_errors_say_what_to_write() {
        for bad in ["", "mysql://x", "memory:0", "memory:lots", "sqlite:"] {
            let err = open_store(bad).await.unwrap_err();
            assert_eq!(err.reason(), "invalid_spec", "{bad}");
            let message = err.to_string();
            assert!(
                message.contains("sqlite:") || message.contains("memory:N"),
                "{message}"
            );
        }
        let err = open_store("mysql://root:hunter2@db/x").await.unwrap_err();
        assert!(!err.to_string().contains("hunter2"));
    }

    #[tokio::test]
    async fn open_store_memory() {
        let store = open_store("memory:4").await.unwrap();
        let n = Nonce::from_bytes([1; 16]);
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        assert_eq!(
            store.claim(Claim::new(n, later)).await.unwrap(),
            ClaimOutcome::Claimed
        );
        assert_eq!(
            store.claim(Claim::new(n, later)).await.unwrap(),
            ClaimOutcome::AlreadyUsed
        );
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn open_store_sqlite() {
        let n = Nonce::from_bytes([1; 16]);
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        let dir = tempfile::tempdir().unwrap();
        let spec = format!("sqlite:{}", dir.path().join("r.db").display());
        let store = open_store(&spec).await.unwrap();
        assert_eq!(
            store.claim(Claim::new(n, later)).await.unwrap(),
            ClaimOutcome::Claimed
        );
        assert_eq!(
            store.claim(Claim::new(n, later)).await.unwrap(),
            ClaimOutcome::AlreadyUsed
        );
    }

    /// A build without the `sqlite` feature names the feature to enable, and creates no file.
    #[cfg(not(feature = "sqlite"))]
    #[tokio::test]
    async fn open_store_sqlite_not_compiled_in() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let err = open_store(&format!("sqlite:{}", path.display()))
            .await
            .unwrap_err();
        assert_eq!(err.reason(), "not_compiled_in");
        assert_eq!(
            err.to_string(),
            "sqlite: support not compiled in; enable the `sqlite` feature of mcp-runtime"
        );
        assert!(!path.exists());
    }

    /// A build without the `postgres` feature names the feature to enable (and never echoes
    /// the URL's password).
    #[cfg(not(feature = "postgres"))]
    #[tokio::test]
    async fn open_store_postgres_not_compiled_in() {
        for spec in [
            "postgres://u:hunter2@127.0.0.1:1/db",
            "postgresql://u@127.0.0.1:1/db",
        ] {
            let err = open_store(spec).await.unwrap_err();
            assert_eq!(err.reason(), "not_compiled_in");
            assert_eq!(
                err.to_string(),
                "postgres: support not compiled in; enable the `postgres` feature of mcp-runtime"
            );
        }
    }
}
