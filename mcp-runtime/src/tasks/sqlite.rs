//! [`SqliteTaskStore`]: tasks in a SQLite file, shared by every process on one host.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, params};

use super::store::{TaskRecord, TaskStore, TaskStoreError, now_ms};

/// How long a write waits for another process's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The table (created if absent). One row per task: the record as JSON, plus the columns
/// the conditional update and the expiry need.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS mcp_tasks (
        task_id    TEXT    NOT NULL PRIMARY KEY,
        owner      TEXT    NOT NULL,
        terminal   INTEGER NOT NULL,
        revision   INTEGER NOT NULL,
        expires_ms INTEGER NOT NULL,
        record     TEXT    NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS mcp_tasks_expires_ms ON mcp_tasks (expires_ms);";

/// Tasks in a SQLite file (WAL mode): every process that opens the same file sees the same
/// tasks, so any of them can answer `tasks/get`, `tasks/update` and `tasks/cancel`.
///
/// Bounds: a task row is deleted once past its expiry (checked on every create, and never
/// returned after it), so the table holds at most the tasks created within one task TTL.
/// Writes wait up to 10 s for another process's lock. Work runs on
/// `tokio::task::spawn_blocking`, so this store needs a Tokio runtime.
#[derive(Debug, Clone)]
pub struct SqliteTaskStore {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
}

impl SqliteTaskStore {
    /// Opens (creating if needed) the store at `path`. It may be the replay store's file:
    /// the table names do not collide.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, TaskStoreError> {
        let path = path.as_ref().to_path_buf();
        let for_open = path.clone();
        let conn = blocking(move || {
            let conn = Connection::open(&for_open).map_err(backend("opening the file"))?;
            conn.busy_timeout(BUSY_TIMEOUT)
                .map_err(backend("setting the busy timeout"))?;
            conn.pragma_update(None, "journal_mode", "WAL")
                .map_err(backend("enabling WAL"))?;
            conn.execute_batch(SCHEMA)
                .map_err(backend("creating the mcp_tasks table"))?;
            Ok(conn)
        })
        .await?;
        Ok(Self {
            path,
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// The file this store uses.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, TaskStoreError> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, TaskStoreError>> {
        let conn = Arc::clone(&self.conn);
        Box::pin(blocking(move || f(&lock(&conn))))
    }
}

fn lock(conn: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    // A statement that panicked left no transaction open (each is autocommit).
    conn.lock().unwrap_or_else(|e| e.into_inner())
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, TaskStoreError> + Send + 'static,
) -> Result<T, TaskStoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| TaskStoreError::Backend(format!("the SQLite worker failed: {e}")))?
}

fn backend(context: &'static str) -> impl FnOnce(rusqlite::Error) -> TaskStoreError {
    move |e| TaskStoreError::Backend(format!("SQLite, {context}: {e}"))
}

fn i64_of(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

fn encode(record: &TaskRecord) -> Result<String, TaskStoreError> {
    serde_json::to_string(record)
        .map_err(|e| TaskStoreError::Backend(format!("cannot encode a task: {e}")))
}

impl TaskStore for SqliteTaskStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        self.run(move |conn| {
            let json = encode(&record)?;
            conn.execute(
                "DELETE FROM mcp_tasks WHERE expires_ms <= ?1",
                params![i64_of(now_ms())],
            )
            .map_err(backend("pruning expired tasks"))?;
            let inserted = conn
                .execute(
                    "INSERT INTO mcp_tasks (task_id, owner, terminal, revision, expires_ms, record)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (task_id) DO NOTHING",
                    params![
                        record.task_id,
                        record.owner,
                        record.status.is_terminal(),
                        i64_of(record.revision),
                        i64_of(record.expires_ms),
                        json
                    ],
                )
                .map_err(backend("inserting a task"))?;
            if inserted == 0 {
                return Err(TaskStoreError::Exists(record.task_id));
            }
            Ok(())
        })
    }

    fn get<'a>(
        &'a self,
        task_id: &'a str,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        let (task_id, owner) = (task_id.to_owned(), owner.to_owned());
        self.run(move |conn| {
            let json: Option<String> = conn
                .query_row(
                    "SELECT record FROM mcp_tasks
                     WHERE task_id = ?1 AND owner = ?2 AND expires_ms > ?3",
                    params![task_id, owner, i64_of(now_ms())],
                    |row| row.get(0),
                )
                .optional()
                .map_err(backend("reading a task"))?;
            json.map(|j| {
                serde_json::from_str(&j).map_err(|e| {
                    TaskStoreError::Backend(format!("task `{task_id}` has a corrupt row: {e}"))
                })
            })
            .transpose()
        })
    }

    fn update(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, TaskStoreError>> {
        self.run(move |conn| {
            let json = encode(&record)?;
            // Terminal rows never change, and a writer that read an older revision loses.
            let changed = conn
                .execute(
                    "UPDATE mcp_tasks SET record = ?1, terminal = ?2, expires_ms = ?3,
                            revision = ?6
                     WHERE task_id = ?4 AND owner = ?5 AND terminal = 0 AND revision = ?6 - 1",
                    params![
                        json,
                        record.status.is_terminal(),
                        i64_of(record.expires_ms),
                        record.task_id,
                        record.owner,
                        i64_of(record.revision)
                    ],
                )
                .map_err(backend("updating a task"))?;
            Ok(changed == 1)
        })
    }
}
