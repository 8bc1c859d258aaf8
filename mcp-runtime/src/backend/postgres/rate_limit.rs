//! [`PostgresRateLimitStore`](crate::backend::postgres::PostgresRateLimitStore): counters in a
//! PostgreSQL table, shared by a fleet of hosts.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use deadpool_postgres::Pool;
use futures::future::BoxFuture;

use super::NAME;
use super::conn::{
    SCHEMA_SETUP_DEADLINE, TABLE_HINT, describe, open_pool, setup_schema, valid_table,
};
use crate::rate_limit::{Hit, RateKey, RateLimitError, RateLimitStore, now_ms};

/// Minimum milliseconds between deletions of ended windows.
const PRUNE_INTERVAL_MS: u64 = 60_000;

/// Counters in a PostgreSQL table (`mcp_rate_limits` unless [`with_table`](Self::with_table)
/// says otherwise): every instance connected to the same database and table counts against
/// the same limits, so a fleet enforces one limit.
///
/// A call is one statement: `INSERT .. ON CONFLICT (key, window_ms) DO UPDATE SET hits =
/// hits + 1 RETURNING ..`, atomic under the row's unique index, with the window computed
/// from the **database's clock** (`clock_timestamp()`), so instances whose clocks disagree
/// still count in the same windows. Rows of ended windows are deleted at most once a minute
/// by the instance that notices. The table is created on first use (under the same advisory
/// lock as the other tables' setup). Made from a `PostgresReplayStore` (the server's default),
/// it uses that store's connection pool.
#[derive(Clone)]
pub struct PostgresRateLimitStore {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    table: String,
    hit_sql: String,
    ready: tokio::sync::OnceCell<()>,
    last_prune: AtomicU64,
}

impl std::fmt::Debug for PostgresRateLimitStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The pool's config holds the password; show the table only.
        f.debug_struct("PostgresRateLimitStore")
            .field("table", &self.inner.table)
            .finish_non_exhaustive()
    }
}

fn pg(context: &'static str) -> impl FnOnce(tokio_postgres::Error) -> RateLimitError {
    move |e| RateLimitError::backend(NAME, context, describe(&e))
}

fn invalid_table(table: &str) -> RateLimitError {
    RateLimitError::InvalidSpec {
        spec: table.chars().take(64).collect(),
        hint: TABLE_HINT,
    }
}

impl PostgresRateLimitStore {
    /// The table used unless [`with_table`](Self::with_table) says otherwise.
    pub const DEFAULT_TABLE: &'static str = "mcp_rate_limits";

    /// Connects (a pool of at most 16 connections, each wait at most 10 s) to `url`
    /// (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB`) and creates [`Self::DEFAULT_TABLE`] if
    /// missing.
    pub async fn connect(url: &str) -> Result<Self, RateLimitError> {
        Self::connect_with_table(url, Self::DEFAULT_TABLE).await
    }

    /// Like [`Self::connect`] with another table (1 to 48 of `a-z 0-9 _`, not starting with a
    /// digit), e.g. one per deployment.
    pub async fn connect_with_table(url: &str, table: &str) -> Result<Self, RateLimitError> {
        if !valid_table(table) {
            return Err(invalid_table(table));
        }
        let pool = open_pool(url).map_err(|e| RateLimitError::backend(NAME, "opening", e))?;
        let store = Self::on(pool, table.to_owned());
        store.ensure_table().await?;
        Ok(store)
    }

    /// A store over `pool` (e.g. a replay store's, `PostgresReplayStore::pool`), on
    /// [`Self::DEFAULT_TABLE`], created on first use.
    pub fn with_pool(pool: Pool) -> Self {
        Self::on(pool, Self::DEFAULT_TABLE.to_owned())
    }

    /// The same pool on another table (1 to 48 of `a-z 0-9 _`, not starting with a digit),
    /// e.g. one per deployment; created on first use.
    pub fn with_table(self, table: &str) -> Result<Self, RateLimitError> {
        if !valid_table(table) {
            return Err(invalid_table(table));
        }
        Ok(Self::on(self.inner.pool.clone(), table.to_owned()))
    }

    /// A store over `pool` on `table`, already known to be a valid name (a replay table's
    /// name with a suffix); created on first use.
    pub(crate) fn with_pool_on(pool: Pool, table: String) -> Self {
        Self::on(pool, table)
    }

    fn on(pool: Pool, table: String) -> Self {
        let hit_sql = format!(
            "WITH clock AS (SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms)
             INSERT INTO \"{table}\" AS r (key, window_ms, hits, expires_ms)
             SELECT $1, clock.ms - clock.ms % $2, 1, clock.ms - clock.ms % $2 + $2 FROM clock
             ON CONFLICT (key, window_ms) DO UPDATE SET hits = r.hits + 1
             RETURNING r.hits, r.expires_ms, (SELECT ms FROM clock)"
        );
        Self {
            inner: Arc::new(Inner {
                pool,
                table,
                hit_sql,
                ready: tokio::sync::OnceCell::new(),
                last_prune: AtomicU64::new(0),
            }),
        }
    }

    /// The table this store uses.
    pub fn table(&self) -> &str {
        &self.inner.table
    }

    async fn client(&self) -> Result<deadpool_postgres::Client, RateLimitError> {
        self.inner
            .pool
            .get()
            .await
            .map_err(|e| RateLimitError::backend(NAME, "getting a connection", e))
    }

    /// Creates the table once (a failure is retried by the next call).
    async fn ensure_table(&self) -> Result<(), RateLimitError> {
        self.inner
            .ready
            .get_or_try_init(|| async {
                let table = &self.inner.table;
                let mut client = self.client().await?;
                setup_schema(
                    &mut client,
                    &format!("mcp-rate-limits:{table}"),
                    &format!(
                        "CREATE TABLE IF NOT EXISTS \"{table}\" (
                             key        BYTEA  NOT NULL CHECK (octet_length(key) = 16),
                             window_ms  BIGINT NOT NULL,
                             hits       BIGINT NOT NULL,
                             expires_ms BIGINT NOT NULL,
                             PRIMARY KEY (key, window_ms)
                         );
                         CREATE INDEX IF NOT EXISTS \"{table}_expires\" ON \"{table}\" (expires_ms);"
                    ),
                    SCHEMA_SETUP_DEADLINE,
                )
                .await
                .map_err(|e| {
                    RateLimitError::backend(NAME, "setting up the rate-limit table", e)
                })
            })
            .await
            .map(|_| ())
    }

    async fn hit_inner(&self, key: &RateKey, window: Duration) -> Result<Hit, RateLimitError> {
        self.ensure_table().await?;
        let window_ms =
            i64::try_from(window.as_secs().max(1).saturating_mul(1000)).unwrap_or(i64::MAX);
        let client = self.client().await?;
        let row = client
            .query_one(
                self.inner.hit_sql.as_str(),
                &[&&key.as_bytes()[..], &window_ms],
            )
            .await
            .map_err(pg("counting the call"))?;
        let hits: i64 = row.get(0);
        let end: i64 = row.get(1);
        let now: i64 = row.get(2);
        self.maybe_prune(&client).await;
        Ok(Hit::new(
            u64::try_from(hits).unwrap_or(0),
            Duration::from_millis(u64::try_from(end.saturating_sub(now)).unwrap_or(0)),
        ))
    }

    /// Deletes rows of ended windows, at most once a minute per instance; best effort.
    async fn maybe_prune(&self, client: &deadpool_postgres::Client) {
        let now = now_ms();
        if now.saturating_sub(self.inner.last_prune.load(Ordering::Relaxed)) < PRUNE_INTERVAL_MS {
            return;
        }
        self.inner.last_prune.store(now, Ordering::Relaxed);
        let sql = format!(
            "DELETE FROM \"{}\" WHERE expires_ms <= floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint",
            self.inner.table
        );
        if let Err(e) = client.execute(sql.as_str(), &[]).await {
            tracing::warn!(error = %describe(&e), "rate-limit store: deleting ended windows failed");
        }
    }
}

impl RateLimitStore for PostgresRateLimitStore {
    fn name(&self) -> &'static str {
        NAME
    }

    fn hit<'a>(
        &'a self,
        key: &'a RateKey,
        window: Duration,
    ) -> BoxFuture<'a, Result<Hit, RateLimitError>> {
        Box::pin(self.hit_inner(key, window))
    }

    fn ping(&self) -> BoxFuture<'_, Result<(), RateLimitError>> {
        Box::pin(async move {
            let client = self.client().await?;
            client
                .query_one("SELECT 1", &[])
                .await
                .map_err(pg("checking the connection"))?;
            Ok(())
        })
    }
}
