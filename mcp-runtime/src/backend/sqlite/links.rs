//! [`SqliteLinkStore`](crate::backend::sqlite::SqliteLinkStore): URL-mode links in a SQLite file,
//! shared by every process on one host.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::conn::{self, i64_of, lock};
use crate::state::CorrelationId;
use crate::url_elicitation::{LinkLimits, LinkRecord, LinkStore, LinkStoreError};

/// The table (created if absent): the record as JSON, plus the columns the lookups, the
/// conditional update, the expiry and the limits need. One link per flow.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS mcp_url_links (
        id          TEXT    NOT NULL PRIMARY KEY,
        principal   TEXT    NOT NULL,
        correlation TEXT    NOT NULL,
        revision    INTEGER NOT NULL,
        created_ms  INTEGER NOT NULL,
        expires_ms  INTEGER NOT NULL,
        record      TEXT    NOT NULL
    ) WITHOUT ROWID;
    CREATE UNIQUE INDEX IF NOT EXISTS mcp_url_links_flow ON mcp_url_links (principal, correlation);
    CREATE INDEX IF NOT EXISTS mcp_url_links_expires_ms ON mcp_url_links (expires_ms);";

/// URL-mode links in a SQLite file (WAL mode): every process that opens the same file sees the
/// same links, so the process serving the page and the one getting the client's retry agree.
///
/// Bounds: a row is deleted once past its expiry (on every insert, and never returned after
/// it). [`LinkLimits`] (default [`LinkLimits::default`]: 10,000 links, 8 per principal;
/// [`with_limits`](Self::with_limits) changes them) hold for every process sharing the file,
/// checked and applied in one `BEGIN IMMEDIATE` transaction per insert. Writes wait up to 10 s
/// for another process's lock. Work runs on `tokio::task::spawn_blocking`, so this store
/// needs a Tokio runtime.
#[derive(Debug, Clone)]
pub struct SqliteLinkStore {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
    limits: LinkLimits,
}

impl SqliteLinkStore {
    /// Opens (creating if needed) the store at `path`. It may be the replay or task store's
    /// file: the table names do not collide.
    ///
    /// # Errors
    /// [`LinkStoreError::Backend`] naming what failed (opening, WAL, the table).
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, LinkStoreError> {
        let path = path.as_ref().to_path_buf();
        let for_open = path.clone();
        let conn = blocking(move || {
            let conn = conn::configure(&for_open)
                .map_err(|e| LinkStoreError::Backend(format!("SQLite, {e}")))?;
            conn.execute_batch(SCHEMA)
                .map_err(backend("creating the mcp_url_links table"))?;
            Ok(conn)
        })
        .await?;
        Ok(Self {
            path,
            conn: Arc::new(Mutex::new(conn)),
            limits: LinkLimits::default(),
        })
    }

    /// The same store with these limits (clamped as [`LinkLimits`] says). Give every process
    /// sharing the file the same limits.
    #[must_use]
    pub fn with_limits(mut self, limits: LinkLimits) -> Self {
        self.limits = limits.clamped();
        self
    }

    /// The limits this store enforces.
    pub fn limits(&self) -> LinkLimits {
        self.limits
    }

    /// The file this store uses.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, LinkStoreError> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, LinkStoreError>> {
        let conn = Arc::clone(&self.conn);
        Box::pin(blocking(move || f(&lock(&conn))))
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, LinkStoreError> + Send + 'static,
) -> Result<T, LinkStoreError> {
    conn::blocking(f, |e| {
        LinkStoreError::Backend(format!("the SQLite worker failed: {e}"))
    })
    .await
}

fn backend(context: &'static str) -> impl FnOnce(rusqlite::Error) -> LinkStoreError {
    move |e| LinkStoreError::Backend(format!("SQLite, {context}: {e}"))
}

fn encode(link: &LinkRecord) -> Result<String, LinkStoreError> {
    serde_json::to_string(link)
        .map_err(|e| LinkStoreError::Backend(format!("cannot encode a link: {e}")))
}

fn decode(json: &str) -> Result<LinkRecord, LinkStoreError> {
    serde_json::from_str(json)
        .map_err(|e| LinkStoreError::Backend(format!("a link row is corrupt: {e}")))
}

fn read_one(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Option<LinkRecord>, LinkStoreError> {
    let json: Option<String> = conn
        .query_row(sql, params, |row| row.get(0))
        .optional()
        .map_err(backend("reading a link"))?;
    json.as_deref().map(decode).transpose()
}

fn count(tx: &Connection, principal: Option<&str>) -> Result<usize, LinkStoreError> {
    let n: i64 = match principal {
        Some(p) => tx.query_row(
            "SELECT COUNT(*) FROM mcp_url_links WHERE principal = ?1",
            params![p],
            |row| row.get(0),
        ),
        None => tx.query_row("SELECT COUNT(*) FROM mcp_url_links", [], |row| row.get(0)),
    }
    .map_err(backend("counting links"))?;
    Ok(usize::try_from(n).unwrap_or(0))
}

impl LinkStore for SqliteLinkStore {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn insert(
        &self,
        link: LinkRecord,
        now_ms: u64,
    ) -> BoxFuture<'_, Result<LinkRecord, LinkStoreError>> {
        let limits = self.limits;
        self.run(move |conn| {
            let json = encode(&link)?;
            // One write transaction: the purge, the flow check, the evictions and the insert
            // see no other process's insert in between.
            let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
                .map_err(backend("starting a transaction"))?;
            tx.execute(
                "DELETE FROM mcp_url_links WHERE expires_ms <= ?1",
                params![i64_of(now_ms)],
            )
            .map_err(backend("pruning expired links"))?;
            if let Some(existing) = read_one(
                &tx,
                "SELECT record FROM mcp_url_links WHERE principal = ?1 AND correlation = ?2",
                params![link.principal, link.correlation.to_string()],
            )? {
                return Ok(existing);
            }
            let own = count(&tx, Some(&link.principal))?;
            let over_own = (own + 1).saturating_sub(limits.max_links_per_principal);
            if over_own > 0 {
                tx.execute(
                    "DELETE FROM mcp_url_links WHERE id IN (
                         SELECT id FROM mcp_url_links WHERE principal = ?1
                         ORDER BY expires_ms, created_ms, id LIMIT ?2)",
                    params![link.principal, i64::try_from(over_own).unwrap_or(i64::MAX)],
                )
                .map_err(backend("evicting the principal's oldest links"))?;
            }
            let total = count(&tx, None)?;
            let over_total = (total + 1).saturating_sub(limits.max_links);
            if over_total > 0 {
                tx.execute(
                    "DELETE FROM mcp_url_links WHERE id IN (
                         SELECT id FROM mcp_url_links
                         ORDER BY expires_ms, created_ms, id LIMIT ?1)",
                    params![i64::try_from(over_total).unwrap_or(i64::MAX)],
                )
                .map_err(backend("evicting the oldest links"))?;
            }
            tx.execute(
                "INSERT INTO mcp_url_links
                     (id, principal, correlation, revision, created_ms, expires_ms, record)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    link.id,
                    link.principal,
                    link.correlation.to_string(),
                    i64_of(link.revision),
                    i64_of(link.created_ms),
                    i64_of(link.expires_ms),
                    json
                ],
            )
            .map_err(backend("inserting a link"))?;
            tx.commit().map_err(backend("committing a new link"))?;
            Ok(link)
        })
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<Option<LinkRecord>, LinkStoreError>> {
        let id = id.to_owned();
        self.run(move |conn| {
            read_one(
                conn,
                "SELECT record FROM mcp_url_links WHERE id = ?1 AND expires_ms > ?2",
                params![id, i64_of(now_ms)],
            )
        })
    }

    fn find_flow<'a>(
        &'a self,
        principal: &'a str,
        correlation: &'a CorrelationId,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<Option<LinkRecord>, LinkStoreError>> {
        let (principal, correlation) = (principal.to_owned(), correlation.to_string());
        self.run(move |conn| {
            read_one(
                conn,
                "SELECT record FROM mcp_url_links
                 WHERE principal = ?1 AND correlation = ?2 AND expires_ms > ?3",
                params![principal, correlation, i64_of(now_ms)],
            )
        })
    }

    fn update(&self, link: LinkRecord) -> BoxFuture<'_, Result<bool, LinkStoreError>> {
        self.run(move |conn| {
            let json = encode(&link)?;
            // A writer that read an older revision loses; the flow of a row never changes.
            let changed = conn
                .execute(
                    "UPDATE mcp_url_links SET record = ?1, expires_ms = ?2, revision = ?3
                     WHERE id = ?4 AND principal = ?5 AND correlation = ?6
                       AND revision = ?3 - 1",
                    params![
                        json,
                        i64_of(link.expires_ms),
                        i64_of(link.revision),
                        link.id,
                        link.principal,
                        link.correlation.to_string()
                    ],
                )
                .map_err(backend("updating a link"))?;
            Ok(changed == 1)
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), LinkStoreError>> {
        let id = id.to_owned();
        self.run(move |conn| {
            conn.execute("DELETE FROM mcp_url_links WHERE id = ?1", params![id])
                .map_err(backend("deleting a link"))?;
            Ok(())
        })
    }

    fn count(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, LinkStoreError>> {
        self.run(move |conn| {
            let n: i64 = conn
                .query_row(
                    "SELECT COUNT(*) FROM mcp_url_links WHERE expires_ms > ?1",
                    params![i64_of(now_ms)],
                    |row| row.get(0),
                )
                .map_err(backend("counting links"))?;
            Ok(usize::try_from(n).unwrap_or(0))
        })
    }
}
