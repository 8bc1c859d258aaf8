//! Replay store in PostgreSQL, shared by any number of hosts.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::SystemTime;

use deadpool_postgres::Pool;
use futures::future::BoxFuture;

use super::NAME;
use super::conn::{SCHEMA_SETUP_DEADLINE, TABLE_HINT, open_pool, setup_schema, valid_table};
use crate::replay::{
    ActionError, Claim, ClaimOutcome, ClaimState, ClaimWith, DuringWork, FlowLedger, OutcomeStore,
    ReplayError, ReplayStore, Taken, TxWork, unix_secs_i64,
};
use crate::state::Nonce;

/// Work on a PostgreSQL store's claim transaction ([`ClaimWith::InTx`]): `work` gets
/// the very transaction that inserted the claim, and its writes commit with the claim or roll
/// back with it.
pub fn tx_work<R: Send + 'static>(
    work: impl for<'t> FnOnce(
        &'t tokio_postgres::Transaction<'t>,
    ) -> BoxFuture<'t, Result<R, ActionError>>
    + Send
    + 'static,
) -> TxWork<R> {
    TxWork::new(NAME, |output| {
        PgTx(Box::new(move |tx| {
            Box::pin(async move {
                output.put(work(tx).await?);
                Ok(())
            })
        }))
    })
}

/// The type [`tx_work`] hands the core, found again by [`TxWork::downcast`].
#[allow(clippy::type_complexity)]
struct PgTx(
    Box<
        dyn for<'t> FnOnce(
                &'t tokio_postgres::Transaction<'t>,
            ) -> BoxFuture<'t, Result<(), ActionError>>
            + Send,
    >,
);

/// What runs under a claim: standalone work, or work on the claim's own transaction.
enum Under {
    During(DuringWork),
    InTx(PgTx),
}

/// The PostgreSQL error of `context`.
fn pg(context: &'static str) -> impl FnOnce(tokio_postgres::Error) -> ReplayError {
    move |source| ReplayError::backend(NAME, context, source)
}

/// Minimum seconds between automatic prunes (one also runs on connect).
const PRUNE_INTERVAL_SECS: i64 = 60;

/// A replay store in a PostgreSQL table, over a connection pool (no TLS: run it on a trusted
/// network or a local socket).
///
/// A claim is one `INSERT ... ON CONFLICT (nonce) DO NOTHING RETURNING`: the unique index makes
/// concurrent claimers of one nonce wait for each other, and exactly one gets a row back.
/// `claim_with` runs that insert, the action (on a blocking thread) and `COMMIT` in one
/// transaction; a concurrent claimer waits for that transaction and then sees the outcome.
/// A crash (or a dropped future) before `COMMIT` rolls the claim back; see the
/// [module docs](super) for why that is safe with a convergent action.
#[derive(Clone)]
pub struct PostgresReplayStore {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    table: String,
    insert_sql: String,
    prune_sql: String,
    record_sql: String,
    recorded_sql: String,
    /// [`FlowLedger`] statements, on the table `TABLE_flows`.
    flow_asked_sql: String,
    flow_asked_again_sql: String,
    flow_answered_sql: String,
    flow_take_sql: String,
    last_prune: AtomicI64,
}

impl std::fmt::Debug for PostgresReplayStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The pool's config holds the password; show the table only.
        f.debug_struct("PostgresReplayStore")
            .field("table", &self.inner.table)
            .finish_non_exhaustive()
    }
}

impl PostgresReplayStore {
    /// Table used by [`Self::connect`].
    pub const DEFAULT_TABLE: &'static str = "mcp_replay_nonces";

    /// Connects to `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB`), creates the
    /// [`Self::DEFAULT_TABLE`] table if missing and prunes expired claims.
    pub async fn connect(url: &str) -> Result<Self, ReplayError> {
        Self::connect_with_table(url, Self::DEFAULT_TABLE).await
    }

    /// Like [`Self::connect`] with another table name (lower-case letters, digits and `_`,
    /// starting with a letter or `_`, at most 48 characters), e.g. one per deployment.
    pub async fn connect_with_table(url: &str, table: &str) -> Result<Self, ReplayError> {
        if !valid_table(table) {
            return Err(ReplayError::InvalidSpec {
                spec: table.to_owned(),
                hint: TABLE_HINT,
            });
        }
        let pool = open_pool(url).map_err(|e| ReplayError::backend(NAME, "opening", e))?;
        let store = Self {
            inner: Arc::new(Inner {
                pool,
                table: table.to_owned(),
                insert_sql: format!(
                    "INSERT INTO \"{table}\" (nonce, expires_at) VALUES ($1, $2)
                     ON CONFLICT (nonce) DO NOTHING RETURNING 1"
                ),
                prune_sql: format!("DELETE FROM \"{table}\" WHERE expires_at < $1"),
                record_sql: format!("UPDATE \"{table}\" SET outcome = $2 WHERE nonce = $1"),
                recorded_sql: format!(
                    "SELECT outcome FROM \"{table}\" WHERE nonce = $1 AND expires_at >= $2"
                ),
                // A first record never overwrites an answer that came first.
                flow_asked_sql: format!(
                    "INSERT INTO \"{table}_flows\" (nonce, expires_at, answered)
                     VALUES ($1, $2, false) ON CONFLICT (nonce) DO NOTHING"
                ),
                flow_asked_again_sql: format!(
                    "INSERT INTO \"{table}_flows\" (nonce, expires_at, answered)
                     VALUES ($1, $2, false) ON CONFLICT (nonce)
                     DO UPDATE SET expires_at = EXCLUDED.expires_at, answered = false"
                ),
                flow_answered_sql: format!(
                    "INSERT INTO \"{table}_flows\" (nonce, expires_at, answered)
                     VALUES ($1, $2, true) ON CONFLICT (nonce) DO UPDATE SET answered = true"
                ),
                // SKIP LOCKED: concurrent sweepers take disjoint rows instead of waiting; a row
                // deleted by another sweeper first is not returned here.
                flow_take_sql: format!(
                    "DELETE FROM \"{table}_flows\" WHERE nonce IN (
                         SELECT nonce FROM \"{table}_flows\" WHERE expires_at < $1
                         ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
                     RETURNING answered"
                ),
                last_prune: AtomicI64::new(0),
            }),
        };
        store.create_table().await?;
        store.prune_at(SystemTime::now()).await?;
        Ok(store)
    }

    /// The table this store uses.
    pub fn table(&self) -> &str {
        &self.inner.table
    }

    /// The connection pool, for application tables kept in the same database (so their
    /// mutations can share a claim's transaction through [`ClaimWith::InTx`]).
    pub fn pool(&self) -> &Pool {
        &self.inner.pool
    }

    /// Claims `nonce` inside the caller's transaction `tx` on this store's database. The claim
    /// becomes durable only when the caller commits `tx`, together with whatever else it
    /// wrote; a rollback releases it. A concurrent claimer of the same nonce waits on the
    /// unique index until `tx` ends, then sees [`ClaimOutcome::AlreadyUsed`] if it committed.
    pub async fn claim_in(
        &self,
        tx: &tokio_postgres::Transaction<'_>,
        nonce: Nonce,
        expires_at: SystemTime,
    ) -> Result<ClaimOutcome, ReplayError> {
        let row = tx
            .query_opt(
                self.inner.insert_sql.as_str(),
                &[&&nonce.as_bytes()[..], &expires_at],
            )
            .await
            .map_err(pg("inserting the nonce"))?;
        Ok(if row.is_some() {
            ClaimOutcome::Claimed
        } else {
            ClaimOutcome::AlreadyUsed
        })
    }

    async fn client(&self) -> Result<deadpool_postgres::Client, ReplayError> {
        self.inner
            .pool
            .get()
            .await
            .map_err(|e| ReplayError::backend(NAME, "getting a connection", e))
    }

    async fn create_table(&self) -> Result<(), ReplayError> {
        let table = &self.inner.table;
        let mut client = self.client().await?;
        setup_schema(
            &mut client,
            &format!("mcp-replay:{table}"),
            &format!(
                "CREATE TABLE IF NOT EXISTS \"{table}\" (
                     nonce      BYTEA       NOT NULL PRIMARY KEY CHECK (octet_length(nonce) = 16),
                     expires_at TIMESTAMPTZ NOT NULL
                 );
                 CREATE INDEX IF NOT EXISTS \"{table}_expires_at\" ON \"{table}\" (expires_at);
                 ALTER TABLE \"{table}\" ADD COLUMN IF NOT EXISTS outcome BYTEA;
                 CREATE TABLE IF NOT EXISTS \"{table}_flows\" (
                     nonce      BYTEA       NOT NULL PRIMARY KEY CHECK (octet_length(nonce) = 16),
                     expires_at TIMESTAMPTZ NOT NULL,
                     answered   BOOLEAN     NOT NULL
                 );
                 CREATE INDEX IF NOT EXISTS \"{table}_flows_expires_at\"
                     ON \"{table}_flows\" (expires_at);"
            ),
            SCHEMA_SETUP_DEADLINE,
        )
        .await
        .map_err(|e| ReplayError::backend(NAME, "setting up the replay table", e))
    }

    async fn prune_at(&self, now: SystemTime) -> Result<u64, ReplayError> {
        let client = self.client().await?;
        let deleted = client
            .execute(&self.inner.prune_sql, &[&now])
            .await
            .map_err(pg("pruning expired nonces"))?;
        self.inner
            .last_prune
            .store(unix_secs_i64(now), Ordering::Relaxed);
        Ok(deleted)
    }

    async fn maybe_prune(&self) {
        let now = SystemTime::now();
        if unix_secs_i64(now) - self.inner.last_prune.load(Ordering::Relaxed) >= PRUNE_INTERVAL_SECS
        {
            // Best effort: a failed prune only delays cleanup.
            if let Err(e) = self.prune_at(now).await {
                tracing::warn!(error = %e, "replay store: pruning expired nonces failed");
            }
        }
    }

    async fn claim_plain(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
    ) -> Result<ClaimOutcome, ReplayError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(&self.inner.insert_sql)
            .await
            .map_err(pg("preparing the claim"))?;
        let row = client
            .query_opt(&stmt, &[&&nonce.as_bytes()[..], &expires_at])
            .await
            .map_err(pg("inserting the nonce"))?;
        drop(client);
        self.maybe_prune().await;
        Ok(if row.is_some() {
            ClaimOutcome::Claimed
        } else {
            ClaimOutcome::AlreadyUsed
        })
    }

    async fn claim_and_act(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
        action: Under,
    ) -> Result<ClaimOutcome, ReplayError> {
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(pg("starting the claim transaction"))?;
        let stmt = tx
            .prepare_cached(&self.inner.insert_sql)
            .await
            .map_err(pg("preparing the claim"))?;
        let row = tx
            .query_opt(&stmt, &[&&nonce.as_bytes()[..], &expires_at])
            .await
            .map_err(pg("inserting the nonce"))?;
        if row.is_none() {
            tx.rollback()
                .await
                .map_err(pg("ending the claim transaction"))?;
            return Ok(ClaimOutcome::AlreadyUsed);
        }
        let acted_outside = matches!(action, Under::During(_));
        let failure = match action {
            Under::During(action) => {
                let result = tokio::task::spawn_blocking(move || {
                    std::panic::catch_unwind(AssertUnwindSafe(action))
                })
                .await;
                match result {
                    Ok(Ok(Ok(()))) => None,
                    Ok(Ok(Err(e))) => Some(ReplayError::ActionFailed(e)),
                    Ok(Err(_)) => Some(ReplayError::ActionPanicked),
                    Err(e) => Some(ReplayError::Worker(e.to_string())),
                }
            }
            Under::InTx(action) => {
                let inner: &tokio_postgres::Transaction<'_> = &tx;
                let run = AssertUnwindSafe((action.0)(inner));
                match futures::FutureExt::catch_unwind(run).await {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(ReplayError::ActionFailed(e)),
                    Err(_) => Some(ReplayError::ActionPanicked),
                }
            }
        };
        if let Some(failure) = failure {
            if let Err(e) = tx.rollback().await {
                // The server rolls back anyway when the connection drops the transaction.
                tracing::warn!(error = %e, "replay store: rollback after failed action failed");
            }
            return Err(failure);
        }
        if let Err(e) = tx.commit().await {
            // The server answered with an error: it rolled back. No answer (the connection
            // broke): the commit may or may not have landed.
            let answered = e.as_db_error().is_some();
            let cause = Box::new(pg("committing the claim")(e));
            return Err(if acted_outside {
                ReplayError::ActionUnrecorded { cause }
            } else if answered {
                *cause
            } else {
                ReplayError::CommitOutcomeUnknown { cause }
            });
        }
        drop(client);
        self.maybe_prune().await;
        Ok(ClaimOutcome::Claimed)
    }
}

impl ReplayStore for PostgresReplayStore {
    fn name(&self) -> &'static str {
        NAME
    }

    /// A [`PostgresRateLimitStore`](crate::backend::postgres::PostgresRateLimitStore) on
    /// this store's connection pool: table `mcp_rate_limits` beside the default replay table,
    /// `TABLE_rate_limits` beside a replay table `TABLE` of your choice (created on first use).
    fn rate_limit_store(&self) -> Option<Arc<dyn crate::rate_limit::RateLimitStore>> {
        use crate::backend::postgres::PostgresRateLimitStore;
        let table = if self.inner.table == Self::DEFAULT_TABLE {
            PostgresRateLimitStore::DEFAULT_TABLE.to_owned()
        } else {
            format!("{}_rate_limits", self.inner.table)
        };
        Some(Arc::new(PostgresRateLimitStore::with_pool_on(
            self.inner.pool.clone(),
            table,
        )))
    }

    /// Runs `InTx` work built by [`tx_work`]; any other is [`ReplayError::TxMismatch`].
    fn claim<'a>(&'a self, claim: Claim<'a>) -> BoxFuture<'a, Result<ClaimOutcome, ReplayError>> {
        let (nonce, expires_at) = (claim.nonce, claim.expires_at);
        match claim.work {
            ClaimWith::Nothing => Box::pin(self.claim_plain(nonce, expires_at)),
            ClaimWith::During(work) => {
                Box::pin(self.claim_and_act(nonce, expires_at, Under::During(work)))
            }
            ClaimWith::InTx(work) => match work.downcast::<PgTx>() {
                Ok(work) => Box::pin(self.claim_and_act(nonce, expires_at, Under::InTx(work))),
                Err(other) => {
                    let err = other.mismatch(NAME);
                    Box::pin(async move { Err(err) })
                }
            },
        }
    }

    fn outcomes(&self) -> Option<&dyn OutcomeStore> {
        Some(self)
    }

    /// The table `TABLE_flows` beside the claims.
    fn flow_ledger(&self) -> Option<&dyn FlowLedger> {
        Some(self)
    }

    fn ping(&self) -> BoxFuture<'_, Result<(), ReplayError>> {
        Box::pin(async move {
            let client = self.client().await?;
            client
                .simple_query("SELECT 1")
                .await
                .map_err(pg("pinging the database"))?;
            Ok(())
        })
    }

    fn prune_expired(&self) -> BoxFuture<'_, Result<u64, ReplayError>> {
        Box::pin(self.prune_at(SystemTime::now()))
    }
}

impl OutcomeStore for PostgresReplayStore {
    fn record_outcome<'a>(
        &'a self,
        nonce: Nonce,
        expires_at: SystemTime,
        outcome: &'a [u8],
    ) -> BoxFuture<'a, Result<(), ReplayError>> {
        let _ = expires_at;
        Box::pin(async move {
            let client = self.client().await?;
            client
                .execute(&self.inner.record_sql, &[&&nonce.as_bytes()[..], &outcome])
                .await
                .map_err(pg("recording the outcome"))?;
            Ok(())
        })
    }

    fn claim_state(&self, nonce: Nonce) -> BoxFuture<'_, Result<ClaimState, ReplayError>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    &self.inner.recorded_sql,
                    &[&&nonce.as_bytes()[..], &SystemTime::now()],
                )
                .await
                .map_err(pg("reading the claim"))?;
            let Some(row) = row else {
                return Ok(ClaimState::Unclaimed);
            };
            Ok(
                match row
                    .try_get::<_, Option<Vec<u8>>>(0)
                    .map_err(pg("reading the claim"))?
                {
                    Some(outcome) => ClaimState::Recorded(outcome),
                    None => ClaimState::Claimed,
                },
            )
        })
    }
}

/// Rows of `TABLE_flows`; a sweep is one `DELETE ... RETURNING` whose rows are the ones this
/// call removed.
impl FlowLedger for PostgresReplayStore {
    fn flow_asked(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
        again: bool,
    ) -> BoxFuture<'_, Result<(), ReplayError>> {
        Box::pin(async move {
            let sql = if again {
                &self.inner.flow_asked_again_sql
            } else {
                &self.inner.flow_asked_sql
            };
            let client = self.client().await?;
            client
                .execute(sql, &[&&nonce.as_bytes()[..], &expires_at])
                .await
                .map_err(pg("recording an asked flow"))?;
            Ok(())
        })
    }

    fn flow_answered(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
    ) -> BoxFuture<'_, Result<(), ReplayError>> {
        Box::pin(async move {
            let client = self.client().await?;
            client
                .execute(
                    &self.inner.flow_answered_sql,
                    &[&&nonce.as_bytes()[..], &expires_at],
                )
                .await
                .map_err(pg("recording an answered flow"))?;
            Ok(())
        })
    }

    fn take_abandoned(
        &self,
        now: SystemTime,
        limit: usize,
    ) -> BoxFuture<'_, Result<Taken, ReplayError>> {
        Box::pin(async move {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let client = self.client().await?;
            let rows = client
                .query(&self.inner.flow_take_sql, &[&now, &limit])
                .await
                .map_err(pg("taking abandoned flows"))?;
            let mut taken = Taken::default();
            for row in rows {
                let answered: bool = row.try_get(0).map_err(pg("taking abandoned flows"))?;
                taken.removed += 1;
                taken.abandoned += u64::from(!answered);
            }
            Ok(taken)
        })
    }
}
