//! What every SQLite store shares: how a connection to the file is opened and set up, the
//! worker thread its blocking calls run on, and the lock around its one connection.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rusqlite::Connection;

/// How long a statement waits for another process's lock (and an opener for the WAL switch)
/// before failing.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A step of opening a file that failed, with SQLite's error.
#[derive(Debug, thiserror::Error)]
#[error("{step}: {source}")]
pub(crate) struct OpenError {
    /// What was being done: opening, the busy timeout, WAL, synchronous.
    pub(crate) step: &'static str,
    /// SQLite's error.
    pub(crate) source: rusqlite::Error,
}

fn step(step: &'static str) -> impl FnOnce(rusqlite::Error) -> OpenError {
    move |source| OpenError { step, source }
}

/// Opens `path` (creating it) the way every store here wants it: WAL mode (waiting out other
/// processes switching it at the same moment), a [`BUSY_TIMEOUT`] busy timeout and
/// `synchronous = FULL`. Blocking.
pub(crate) fn configure(path: &Path) -> Result<Connection, OpenError> {
    let conn = Connection::open(path).map_err(step("opening the database file"))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(step("setting the busy timeout"))?;
    let mode = enable_wal(&conn)?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(
            mode,
            "SQLite store: SQLite refused WAL mode; the store stays correct but slower"
        );
    }
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(step("setting synchronous"))?;
    Ok(conn)
}

/// Switches the file to WAL mode, retrying while another connection holds it.
///
/// The switch needs an exclusive lock, and SQLite reports contention for it at once rather
/// than through the busy handler (waiting there could deadlock two switchers). Processes
/// opening a fresh file together would otherwise fail to start, so wait here instead, up to
/// [`BUSY_TIMEOUT`]. Once one switch lands the mode is stored in the file and the others see
/// WAL already set.
fn enable_wal(conn: &Connection) -> Result<String, OpenError> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(1);
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)) {
            Ok(mode) => return Ok(mode),
            Err(e) if is_busy(&e) && Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => return Err(step("enabling WAL mode")(e)),
        }
    }
}

/// Whether `e` is lock contention (worth waiting out) rather than a real failure.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// The store's one connection. A statement that panicked left no transaction open (each is
/// autocommit, or rolled back when its `Transaction` dropped), so a poisoned lock is usable.
pub(crate) fn lock(conn: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    conn.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs blocking SQLite work on Tokio's blocking pool; a worker that panicked or was cancelled
/// becomes the store's error through `worker`.
pub(crate) async fn blocking<T: Send + 'static, E: Send + 'static>(
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
    worker: impl FnOnce(String) -> E,
) -> Result<T, E> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| worker(e.to_string()))?
}

/// Milliseconds as SQLite's `INTEGER`, saturating (a time past year 292 million).
pub(crate) fn i64_of(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_file_opens_in_wal_mode_with_full_sync() {
        let dir = tempfile::tempdir().unwrap();
        let conn = configure(&dir.path().join("s.db")).unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        let sync: i64 = conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        assert_eq!((mode.as_str(), sync), ("wal", 2));
    }

    #[test]
    fn a_directory_is_no_database() {
        let dir = tempfile::tempdir().unwrap();
        let e = configure(dir.path()).unwrap_err();
        assert!(
            e.to_string().starts_with("opening the database file"),
            "{e}"
        );
    }
}
