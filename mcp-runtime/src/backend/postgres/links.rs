//! [`PostgresLinkStore`](crate::backend::postgres::PostgresLinkStore): URL-mode links in a
//! PostgreSQL table, shared by a fleet of hosts.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;
use futures::future::BoxFuture;

use super::conn::{describe, i64_of, open_table};
use crate::state::CorrelationId;
use crate::url_elicitation::{LinkLimits, LinkRecord, LinkStore, LinkStoreError};

/// The longest one insert may take, waiting for the inserts lock included; then it fails
/// (and is rolled back) rather than hang.
pub(crate) const INSERT_DEADLINE: Duration = Duration::from_secs(10);

/// URL-mode links in a PostgreSQL table: every instance connected to the same database and
/// table sees the same links, so the instance serving a link's page and the one getting the
/// client's retry agree.
///
/// Bounds: a row is deleted once past its expiry (on every insert, and never returned after
/// it). [`LinkLimits`] (default [`LinkLimits::default`]: 10,000 links, 8 per principal;
/// [`with_limits`](Self::with_limits) changes them) hold for the whole fleet: each insert runs
/// in one transaction under an advisory lock on the table's inserts (held at most
/// 10 s). At most 16 pooled connections, each wait for one at most 10 s.
#[derive(Clone)]
pub struct PostgresLinkStore {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    table: String,
    limits: LinkLimits,
}

impl std::fmt::Debug for PostgresLinkStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresLinkStore")
            .field("table", &self.inner.table)
            .finish_non_exhaustive()
    }
}

fn backend(context: &'static str) -> impl FnOnce(tokio_postgres::Error) -> LinkStoreError {
    move |e| LinkStoreError::Backend(format!("PostgreSQL, {context}: {}", describe(&e)))
}

fn encode(link: &LinkRecord) -> Result<String, LinkStoreError> {
    serde_json::to_string(link)
        .map_err(|e| LinkStoreError::Backend(format!("cannot encode a link: {e}")))
}

fn decode(row: &tokio_postgres::Row) -> Result<LinkRecord, LinkStoreError> {
    let json: String = row.try_get(0).map_err(backend("reading a link row"))?;
    serde_json::from_str(&json)
        .map_err(|e| LinkStoreError::Backend(format!("a link row is corrupt: {e}")))
}

impl PostgresLinkStore {
    /// The table [`Self::connect`] uses.
    pub const DEFAULT_TABLE: &'static str = "mcp_url_links";

    /// Connects (a pool) to `url`, e.g. `postgres://user@host:5432/db`, creating the table
    /// if absent.
    ///
    /// # Errors
    /// [`LinkStoreError::Backend`] naming what failed.
    pub async fn connect(url: &str) -> Result<Self, LinkStoreError> {
        Self::connect_with_table(url, Self::DEFAULT_TABLE).await
    }

    /// Like [`Self::connect`] with another table name (1 to 48 of `a-z 0-9 _`, not starting
    /// with a digit).
    ///
    /// # Errors
    /// [`LinkStoreError::Backend`] naming what failed (an invalid table name included).
    pub async fn connect_with_table(url: &str, table: &str) -> Result<Self, LinkStoreError> {
        let pool = open_table(url, table, "links", |table| {
            format!(
                "CREATE TABLE IF NOT EXISTS \"{table}\" (
                     id          TEXT   NOT NULL PRIMARY KEY,
                     principal   TEXT   NOT NULL,
                     correlation TEXT   NOT NULL,
                     revision    BIGINT NOT NULL,
                     created_ms  BIGINT NOT NULL,
                     expires_ms  BIGINT NOT NULL,
                     record      TEXT   NOT NULL
                 );
                 CREATE UNIQUE INDEX IF NOT EXISTS \"{table}_flow\"
                     ON \"{table}\" (principal, correlation);
                 CREATE INDEX IF NOT EXISTS \"{table}_expires_ms\" ON \"{table}\" (expires_ms);"
            )
        })
        .await
        .map_err(LinkStoreError::Backend)?;
        Ok(Self {
            inner: Arc::new(Inner {
                pool,
                table: table.to_owned(),
                limits: LinkLimits::default(),
            }),
        })
    }

    /// The table this store uses.
    pub fn table(&self) -> &str {
        &self.inner.table
    }

    /// The same store with these limits (clamped as [`LinkLimits`] says). Give every
    /// instance sharing the table the same limits.
    #[must_use]
    pub fn with_limits(self, limits: LinkLimits) -> Self {
        Self {
            inner: Arc::new(Inner {
                pool: self.inner.pool.clone(),
                table: self.inner.table.clone(),
                limits: limits.clamped(),
            }),
        }
    }

    /// The limits this store enforces.
    pub fn limits(&self) -> LinkLimits {
        self.inner.limits
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, LinkStoreError> {
        self.inner
            .pool
            .get()
            .await
            .map_err(|e| LinkStoreError::Backend(format!("PostgreSQL connection: {e}")))
    }

    /// The insert itself, in one transaction (see the type's bounds).
    async fn insert_in_tx(
        &self,
        link: LinkRecord,
        json: &str,
        now_ms: u64,
    ) -> Result<LinkRecord, LinkStoreError> {
        let table = &self.inner.table;
        let limits = self.inner.limits;
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(backend("starting a transaction"))?;
        // Server-side deadlines too, so an abandoned transaction does not keep waiting there.
        tx.batch_execute("SET LOCAL lock_timeout = '10s'; SET LOCAL statement_timeout = '10s'")
            .await
            .map_err(backend("setting deadlines"))?;
        // Inserts into this table take turns: the counts below stay true until the commit.
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtext($1))",
            &[&format!("mcp-url-links-insert:{table}")],
        )
        .await
        .map_err(backend("locking for an insert"))?;
        tx.execute(
            &format!("DELETE FROM \"{table}\" WHERE expires_ms <= $1"),
            &[&i64_of(now_ms)],
        )
        .await
        .map_err(backend("pruning expired links"))?;
        let correlation = link.correlation.to_string();
        let existing = tx
            .query_opt(
                &format!(
                    "SELECT record FROM \"{table}\" WHERE principal = $1 AND correlation = $2"
                ),
                &[&link.principal, &correlation],
            )
            .await
            .map_err(backend("looking up the flow's link"))?;
        if let Some(row) = existing {
            return decode(&row);
        }
        let row = tx
            .query_one(
                &format!(
                    "SELECT (SELECT COUNT(*) FROM \"{table}\" WHERE principal = $1),
                            (SELECT COUNT(*) FROM \"{table}\")"
                ),
                &[&link.principal],
            )
            .await
            .map_err(backend("counting links"))?;
        let n = |i: usize| -> Result<usize, LinkStoreError> {
            let v: i64 = row.try_get(i).map_err(backend("reading the counts"))?;
            Ok(usize::try_from(v).unwrap_or(0))
        };
        let (own, total) = (n(0)?, n(1)?);
        let over_own = (own + 1).saturating_sub(limits.max_links_per_principal);
        if over_own > 0 {
            tx.execute(
                &format!(
                    "DELETE FROM \"{table}\" WHERE id IN (
                         SELECT id FROM \"{table}\" WHERE principal = $1
                         ORDER BY expires_ms, created_ms, id LIMIT $2)"
                ),
                &[
                    &link.principal,
                    &i64::try_from(over_own).unwrap_or(i64::MAX),
                ],
            )
            .await
            .map_err(backend("evicting the principal's oldest links"))?;
        }
        // What the per-principal eviction freed counts toward the total.
        let total = total.saturating_sub(over_own.min(own));
        let over_total = (total + 1).saturating_sub(limits.max_links);
        if over_total > 0 {
            tx.execute(
                &format!(
                    "DELETE FROM \"{table}\" WHERE id IN (
                         SELECT id FROM \"{table}\" ORDER BY expires_ms, created_ms, id LIMIT $1)"
                ),
                &[&i64::try_from(over_total).unwrap_or(i64::MAX)],
            )
            .await
            .map_err(backend("evicting the oldest links"))?;
        }
        tx.execute(
            &format!(
                "INSERT INTO \"{table}\"
                     (id, principal, correlation, revision, created_ms, expires_ms, record)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)"
            ),
            &[
                &link.id,
                &link.principal,
                &correlation,
                &i64_of(link.revision),
                &i64_of(link.created_ms),
                &i64_of(link.expires_ms),
                &json,
            ],
        )
        .await
        .map_err(backend("inserting a link"))?;
        tx.commit()
            .await
            .map_err(backend("committing a new link"))?;
        Ok(link)
    }

    async fn read_one(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Option<LinkRecord>, LinkStoreError> {
        let row = self
            .client()
            .await?
            .query_opt(sql, params)
            .await
            .map_err(backend("reading a link"))?;
        row.as_ref().map(decode).transpose()
    }
}

impl LinkStore for PostgresLinkStore {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn insert(
        &self,
        link: LinkRecord,
        now_ms: u64,
    ) -> BoxFuture<'_, Result<LinkRecord, LinkStoreError>> {
        Box::pin(async move {
            let json = encode(&link)?;
            // Dropping the transaction on timeout rolls it back: nothing half-written.
            tokio::time::timeout(INSERT_DEADLINE, self.insert_in_tx(link, &json, now_ms))
                .await
                .map_err(|_| {
                    LinkStoreError::Backend(format!(
                        "PostgreSQL, inserting a link: not done within {INSERT_DEADLINE:?}"
                    ))
                })?
        })
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<Option<LinkRecord>, LinkStoreError>> {
        Box::pin(async move {
            let table = &self.inner.table;
            self.read_one(
                &format!("SELECT record FROM \"{table}\" WHERE id = $1 AND expires_ms > $2"),
                &[&id, &i64_of(now_ms)],
            )
            .await
        })
    }

    fn find_flow<'a>(
        &'a self,
        principal: &'a str,
        correlation: &'a CorrelationId,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<Option<LinkRecord>, LinkStoreError>> {
        Box::pin(async move {
            let table = &self.inner.table;
            self.read_one(
                &format!(
                    "SELECT record FROM \"{table}\"
                     WHERE principal = $1 AND correlation = $2 AND expires_ms > $3"
                ),
                &[&principal, &correlation.to_string(), &i64_of(now_ms)],
            )
            .await
        })
    }

    fn update(&self, link: LinkRecord) -> BoxFuture<'_, Result<bool, LinkStoreError>> {
        Box::pin(async move {
            let json = encode(&link)?;
            let table = &self.inner.table;
            // A writer that read an older revision loses; the flow of a row never changes.
            let changed = self
                .client()
                .await?
                .execute(
                    &format!(
                        "UPDATE \"{table}\" SET record = $1, expires_ms = $2, revision = $3::BIGINT
                         WHERE id = $4 AND principal = $5 AND correlation = $6
                           AND revision = $3::BIGINT - 1"
                    ),
                    &[
                        &json,
                        &i64_of(link.expires_ms),
                        &i64_of(link.revision),
                        &link.id,
                        &link.principal,
                        &link.correlation.to_string(),
                    ],
                )
                .await
                .map_err(backend("updating a link"))?;
            Ok(changed == 1)
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), LinkStoreError>> {
        Box::pin(async move {
            let table = &self.inner.table;
            self.client()
                .await?
                .execute(&format!("DELETE FROM \"{table}\" WHERE id = $1"), &[&id])
                .await
                .map_err(backend("deleting a link"))?;
            Ok(())
        })
    }

    fn count(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, LinkStoreError>> {
        Box::pin(async move {
            let table = &self.inner.table;
            let row = self
                .client()
                .await?
                .query_one(
                    &format!("SELECT COUNT(*) FROM \"{table}\" WHERE expires_ms > $1"),
                    &[&i64_of(now_ms)],
                )
                .await
                .map_err(backend("counting links"))?;
            let n: i64 = row.try_get(0).map_err(backend("reading the count"))?;
            Ok(usize::try_from(n).unwrap_or(0))
        })
    }
}
