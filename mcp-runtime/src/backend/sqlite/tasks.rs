//! [`SqliteTaskStore`](crate::backend::sqlite::SqliteTaskStore): tasks in a SQLite file, shared by
//! every process on one host.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::conn::{self, i64_of, lock};
use crate::tasks::{TaskLimits, TaskRecord, TaskStore, TaskStoreError, now_ms};

/// The table (created if absent). One row per task: the record as JSON, plus the columns
/// the conditional update, the expiry and the limits need. The owner index is the only
/// addition since the first release: an older file gains it on open, and older builds still
/// read and write the file as before.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS mcp_tasks (
        task_id    TEXT    NOT NULL PRIMARY KEY,
        owner      TEXT    NOT NULL,
        terminal   INTEGER NOT NULL,
        revision   INTEGER NOT NULL,
        expires_ms INTEGER NOT NULL,
        record     TEXT    NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS mcp_tasks_expires_ms ON mcp_tasks (expires_ms);
    CREATE INDEX IF NOT EXISTS mcp_tasks_owner ON mcp_tasks (owner, terminal, expires_ms);";

/// Tasks in a SQLite file (WAL mode): every process that opens the same file sees the same
/// tasks, so any of them can answer `tasks/get`, `tasks/update` and `tasks/cancel`.
///
/// Bounds: a task row is deleted once past its expiry (on every create, and never returned
/// after it). [`TaskLimits`] (default [`TaskLimits::default`]: 10,000 tasks, 32 per
/// principal; [`with_limits`](Self::with_limits) changes them) hold for every process
/// sharing the file, checked and applied in one `BEGIN IMMEDIATE` transaction per create:
/// at a limit, the creating principal's own finished tasks closest to expiry are deleted to
/// make room, or the create is refused ([`TaskStoreError::PrincipalFull`],
/// [`TaskStoreError::Full`]) with nothing written. Writes wait up to 10 s for another
/// process's lock. Work runs on `tokio::task::spawn_blocking`, so this store needs a Tokio
/// runtime.
#[derive(Debug, Clone)]
pub struct SqliteTaskStore {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
    limits: TaskLimits,
}

impl SqliteTaskStore {
    /// Opens (creating if needed) the store at `path`. It may be the replay store's file:
    /// the table names do not collide.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, TaskStoreError> {
        let path = path.as_ref().to_path_buf();
        let for_open = path.clone();
        let conn = blocking(move || {
            let conn = conn::configure(&for_open)
                .map_err(|e| TaskStoreError::Backend(format!("SQLite, {e}")))?;
            conn.execute_batch(SCHEMA)
                .map_err(backend("creating the mcp_tasks table"))?;
            Ok(conn)
        })
        .await?;
        Ok(Self {
            path,
            conn: Arc::new(Mutex::new(conn)),
            limits: TaskLimits::default(),
        })
    }

    /// The same store with these limits (clamped as [`TaskLimits`] says). Give every process
    /// sharing the file the same limits: each enforces its own on the tasks it creates.
    #[must_use]
    pub fn with_limits(mut self, limits: TaskLimits) -> Self {
        self.limits = limits.clamped();
        self
    }

    /// The limits this store enforces.
    pub fn limits(&self) -> TaskLimits {
        self.limits
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

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, TaskStoreError> + Send + 'static,
) -> Result<T, TaskStoreError> {
    conn::blocking(f, |e| {
        TaskStoreError::Backend(format!("the SQLite worker failed: {e}"))
    })
    .await
}

fn backend(context: &'static str) -> impl FnOnce(rusqlite::Error) -> TaskStoreError {
    move |e| TaskStoreError::Backend(format!("SQLite, {context}: {e}"))
}

fn encode(record: &TaskRecord) -> Result<String, TaskStoreError> {
    serde_json::to_string(record)
        .map_err(|e| TaskStoreError::Backend(format!("cannot encode a task: {e}")))
}

impl TaskStore for SqliteTaskStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        let limits = self.limits;
        self.run(move |conn| {
            let json = encode(&record)?;
            // One write transaction: the counts, the evictions and the insert see no other
            // process's create in between, and a refusal rolls back whatever it did.
            let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
                .map_err(backend("starting a transaction"))?;
            tx.execute(
                "DELETE FROM mcp_tasks WHERE expires_ms <= ?1",
                params![i64_of(now_ms())],
            )
            .map_err(backend("pruning expired tasks"))?;
            let exists: bool = tx
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM mcp_tasks WHERE task_id = ?1)",
                    params![record.task_id],
                    |row| row.get(0),
                )
                .map_err(backend("checking a task id"))?;
            if exists {
                return Err(TaskStoreError::Exists(record.task_id));
            }
            let count = |sql: &str, owner: Option<&str>| -> Result<usize, TaskStoreError> {
                let n: i64 = match owner {
                    Some(o) => tx.query_row(sql, params![o], |row| row.get(0)),
                    None => tx.query_row(sql, [], |row| row.get(0)),
                }
                .map_err(backend("counting tasks"))?;
                Ok(usize::try_from(n).unwrap_or(0))
            };
            let own = count(
                "SELECT COUNT(*) FROM mcp_tasks WHERE owner = ?1",
                Some(&record.owner),
            )?;
            let total = count("SELECT COUNT(*) FROM mcp_tasks", None)?;
            let evict = limits.to_evict(own, total);
            if evict > 0 {
                // Only the creator's own finished tasks give way, those closest to expiry.
                let done = count(
                    "SELECT COUNT(*) FROM mcp_tasks WHERE owner = ?1 AND terminal = 1",
                    Some(&record.owner),
                )?;
                if done < evict {
                    return Err(limits.refusal(own));
                }
                tx.execute(
                    "DELETE FROM mcp_tasks WHERE task_id IN (
                         SELECT task_id FROM mcp_tasks WHERE owner = ?1 AND terminal = 1
                         ORDER BY expires_ms LIMIT ?2)",
                    params![record.owner, i64::try_from(evict).unwrap_or(i64::MAX)],
                )
                .map_err(backend("evicting finished tasks"))?;
            }
            tx.execute(
                "INSERT INTO mcp_tasks (task_id, owner, terminal, revision, expires_ms, record)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
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
            tx.commit().map_err(backend("committing a new task"))
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
