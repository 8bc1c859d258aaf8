//! [`SqliteRateLimitStore`](crate::backend::sqlite::SqliteRateLimitStore): counters in a SQLite
//! file, shared by every process on one host.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use rusqlite::{Connection, params};

use super::NAME;
use super::conn::{self, i64_of};
use crate::rate_limit::{Hit, RateKey, RateLimitError, RateLimitStore, now_ms, window_at};

/// The table (created if absent): one row per counter and window, deleted after its window.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS mcp_rate_limits (
        key        BLOB    NOT NULL CHECK (length(key) = 16),
        window_ms  INTEGER NOT NULL,
        hits       INTEGER NOT NULL,
        expires_ms INTEGER NOT NULL,
        PRIMARY KEY (key, window_ms)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS mcp_rate_limits_expires ON mcp_rate_limits (expires_ms);";

/// Counting one call: the row of (key, window) is created at 1 or incremented, in one
/// statement, and the new count returned.
const HIT_SQL: &str = "INSERT INTO mcp_rate_limits (key, window_ms, hits, expires_ms)
     VALUES (?1, ?2, 1, ?3)
     ON CONFLICT (key, window_ms) DO UPDATE SET hits = hits + 1
     RETURNING hits";

/// Minimum milliseconds between deletions of ended windows.
const PRUNE_INTERVAL_MS: u64 = 60_000;

/// Counters in a SQLite file (WAL mode, table `mcp_rate_limits`): every process that opens
/// the same file counts against the same limits. It may be the replay store's file (the
/// default when the server's replay store is a `SqliteReplayStore`): the tables do not
/// collide.
///
/// A call is one `INSERT .. ON CONFLICT DO UPDATE SET hits = hits + 1 RETURNING hits` on
/// the row of (key, window), atomic under SQLite's write lock, so concurrent processes each
/// get their own count. Windows use the local clock (one host, one clock). Rows of ended
/// windows are deleted at most once a minute. The connection is its own, with
/// `synchronous = NORMAL`: a counter survives a process crash but may lose its last calls on
/// power loss, which at worst lets a few calls more through in that window; a claim's
/// durability is not at stake here. Writes wait up to 10 s for another process's lock (the
/// server's deadline is shorter). Work runs on `tokio::task::spawn_blocking`.
#[derive(Debug, Clone)]
pub struct SqliteRateLimitStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    /// Opened on first use (or by
    /// [`SqliteRateLimitStore::open`](crate::backend::sqlite::SqliteRateLimitStore::open)).
    conn: Mutex<Option<Connection>>,
    /// Unix ms of the last deletion of ended windows.
    last_prune: AtomicU64,
}

fn sqlite(context: &'static str) -> impl FnOnce(rusqlite::Error) -> RateLimitError {
    move |e| RateLimitError::backend(NAME, context, e)
}

impl SqliteRateLimitStore {
    /// Opens (creating if needed) the store at `path`: WAL mode, a 10 s busy timeout, the
    /// table.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, RateLimitError> {
        let store = Self::lazy(path.as_ref());
        let inner = Arc::clone(&store.inner);
        blocking(move || inner.with_conn(|_| Ok(()))).await?;
        Ok(store)
    }

    /// A store on `path` that opens its connection on first use (so it can be made where no
    /// I/O may happen, e.g. from a replay store). An unusable file is reported by the first
    /// call.
    pub(crate) fn lazy(path: &Path) -> Self {
        Self {
            inner: Arc::new(Inner {
                path: path.to_owned(),
                conn: Mutex::new(None),
                last_prune: AtomicU64::new(0),
            }),
        }
    }

    /// The file this store uses.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }
}

impl Inner {
    /// Runs `f` on the connection, opening it first if needed (blocking).
    fn with_conn<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, RateLimitError>,
    ) -> Result<T, RateLimitError> {
        // A panic while holding the lock leaves no transaction open (every write is one
        // autocommit statement), so the connection stays usable.
        let mut slot = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(open_connection(&self.path)?);
        }
        match slot.as_ref() {
            Some(conn) => f(conn),
            None => Err(RateLimitError::Worker("no SQLite connection".into())),
        }
    }

    fn hit(&self, key: RateKey, window_secs: u64) -> Result<Hit, RateLimitError> {
        let now = now_ms();
        let (start, end) = window_at(now, window_secs);
        self.with_conn(|conn| {
            let count: i64 = conn
                .query_row(
                    HIT_SQL,
                    params![&key.as_bytes()[..], i64_of(start), i64_of(end)],
                    |row| row.get(0),
                )
                .map_err(sqlite("counting the call"))?;
            if now.saturating_sub(self.last_prune.load(Ordering::Relaxed)) >= PRUNE_INTERVAL_MS {
                self.last_prune.store(now, Ordering::Relaxed);
                // Best effort: a failed deletion only delays cleanup.
                if let Err(e) = conn.execute(
                    "DELETE FROM mcp_rate_limits WHERE expires_ms <= ?1",
                    params![i64_of(now)],
                ) {
                    tracing::warn!(error = %e, "rate-limit store: deleting ended windows failed");
                }
            }
            Ok(Hit::new(
                u64::try_from(count).unwrap_or(0),
                Duration::from_millis(end.saturating_sub(now)),
            ))
        })
    }
}

fn open_connection(path: &Path) -> Result<Connection, RateLimitError> {
    // The replay store's setup (WAL, waiting out concurrent openers, busy timeout), then a
    // cheaper durability for counters.
    let conn = conn::configure(path)
        .map_err(|e| RateLimitError::backend(NAME, "opening the database file", e))?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(sqlite("setting synchronous"))?;
    conn.execute_batch(SCHEMA)
        .map_err(sqlite("creating the mcp_rate_limits table"))?;
    Ok(conn)
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, RateLimitError> + Send + 'static,
) -> Result<T, RateLimitError> {
    conn::blocking(f, RateLimitError::Worker).await
}

impl RateLimitStore for SqliteRateLimitStore {
    fn name(&self) -> &'static str {
        NAME
    }

    fn hit<'a>(
        &'a self,
        key: &'a RateKey,
        window: Duration,
    ) -> BoxFuture<'a, Result<Hit, RateLimitError>> {
        let inner = Arc::clone(&self.inner);
        let key = *key;
        Box::pin(blocking(move || inner.hit(key, window.as_secs())))
    }

    fn ping(&self) -> BoxFuture<'_, Result<(), RateLimitError>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(blocking(move || {
            inner.with_conn(|conn| {
                conn.query_row("SELECT 1", [], |_| Ok(()))
                    .map_err(sqlite("checking the connection"))
            })
        }))
    }
}
