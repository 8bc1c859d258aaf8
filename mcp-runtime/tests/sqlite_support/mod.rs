//! What the SQLite replay-store tests share: nonces, a claim expiry, a store on a fresh file,
//! and a way to make commits fail as a full disk would.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use mcp_runtime::backend::sqlite::SqliteReplayStore;
use mcp_runtime::backend::sqlite::rusqlite;
use mcp_runtime::state::Nonce;

/// An expiry ten minutes away: long enough for any test.
pub fn later() -> SystemTime {
    SystemTime::now() + Duration::from_secs(600)
}

/// A nonce distinct for each `(seed, i)`: the seed keeps tests sharing a file apart.
pub fn nonce(seed: u8, i: u32) -> Nonce {
    let mut b = [seed; 16];
    b[..4].copy_from_slice(&i.to_le_bytes());
    Nonce::from_bytes(b)
}

/// A temporary directory (removed when dropped) and the path of a database file in it.
pub fn temp_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("replay.db");
    (dir, path)
}

/// A store on a fresh file, with the directory that holds it and the file's path.
pub async fn open_temp() -> (tempfile::TempDir, PathBuf, SqliteReplayStore) {
    let (dir, path) = temp_db();
    let store = SqliteReplayStore::open(&path).await.unwrap();
    (dir, path, store)
}

/// Makes every `COMMIT` that includes a new claim fail (a deferred foreign key violated by a
/// trigger on the claims table), as a full disk would; the `INSERT` itself succeeds.
pub fn break_commits(path: &Path) {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(
            "CREATE TABLE breaker_parent (id INTEGER PRIMARY KEY);
             CREATE TABLE breaker_child (
                 parent INTEGER REFERENCES breaker_parent (id) DEFERRABLE INITIALLY DEFERRED
             );
             CREATE TRIGGER breaker AFTER INSERT ON replay_nonces
             BEGIN INSERT INTO breaker_child VALUES (1); END;",
        )
        .unwrap();
}

/// Undoes [`break_commits`].
pub fn repair_commits(path: &Path) {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch("DROP TRIGGER breaker")
        .unwrap();
}
