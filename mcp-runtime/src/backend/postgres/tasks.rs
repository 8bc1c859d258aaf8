//! [`PostgresTaskStore`](crate::backend::postgres::PostgresTaskStore): tasks in a PostgreSQL table,
//! shared by a fleet of hosts.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;
use futures::future::BoxFuture;

use super::conn::{describe, i64_of, open_table};
use crate::tasks::{TaskLimits, TaskRecord, TaskStore, TaskStoreError, now_ms};

/// Tasks in a PostgreSQL table: every instance connected to the same database and table sees
/// the same tasks, so any of them can answer `tasks/get`, `tasks/update` and `tasks/cancel`.
///
/// Bounds: a row is deleted once past its expiry (on every create, and never returned after
/// it). [`TaskLimits`] (default [`TaskLimits::default`]: 10,000 tasks, 32 per principal;
/// [`with_limits`](Self::with_limits) changes them) hold for the whole fleet: each create
/// runs in one transaction under a lock on the table's creates (an advisory lock, held at
/// most 10 s like the rest of the transaction), so concurrent creates on
/// several hosts cannot both take the last place. At a limit the creating principal's own
/// finished tasks closest to expiry are deleted to make room, or the create is refused
/// ([`TaskStoreError::PrincipalFull`], [`TaskStoreError::Full`]) with nothing written. At most
/// 16 pooled connections, each wait for one at most 10 s.
#[derive(Clone)]
pub struct PostgresTaskStore {
    inner: Arc<Inner>,
}

/// The longest one create may take, waiting for the creates lock included; then it fails
/// (and is rolled back) rather than hang.
pub(crate) const CREATE_DEADLINE: Duration = Duration::from_secs(10);

struct Inner {
    pool: Pool,
    table: String,
    limits: TaskLimits,
}

impl std::fmt::Debug for PostgresTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresTaskStore")
            .field("table", &self.inner.table)
            .finish_non_exhaustive()
    }
}

fn backend(context: &'static str) -> impl FnOnce(tokio_postgres::Error) -> TaskStoreError {
    move |e| {
        let e = describe(&e);
        TaskStoreError::Backend(format!("PostgreSQL, {context}: {e}"))
    }
}

impl PostgresTaskStore {
    /// The table [`Self::connect`] uses.
    pub const DEFAULT_TABLE: &'static str = "mcp_tasks";

    /// Connects (a pool) to `url`, e.g. `postgres://user@host:5432/db`, creating the table
    /// if absent.
    pub async fn connect(url: &str) -> Result<Self, TaskStoreError> {
        Self::connect_with_table(url, Self::DEFAULT_TABLE).await
    }

    /// Like [`Self::connect`] with another table name (1 to 48 of `a-z 0-9 _`, not starting
    /// with a digit).
    pub async fn connect_with_table(url: &str, table: &str) -> Result<Self, TaskStoreError> {
        let pool = open_table(url, table, "tasks", |table| {
            format!(
                "CREATE TABLE IF NOT EXISTS \"{table}\" (
                     task_id    TEXT    NOT NULL PRIMARY KEY,
                     owner      TEXT    NOT NULL,
                     terminal   BOOLEAN NOT NULL,
                     revision   BIGINT  NOT NULL,
                     expires_ms BIGINT  NOT NULL,
                     record     TEXT    NOT NULL
                 );
                 CREATE INDEX IF NOT EXISTS \"{table}_expires_ms\" ON \"{table}\" (expires_ms);
                 CREATE INDEX IF NOT EXISTS \"{table}_owner\"
                     ON \"{table}\" (owner, terminal, expires_ms);"
            )
        })
        .await
        .map_err(TaskStoreError::Backend)?;
        Ok(Self {
            inner: Arc::new(Inner {
                pool,
                table: table.to_owned(),
                limits: TaskLimits::default(),
            }),
        })
    }

    /// The table this store uses.
    pub fn table(&self) -> &str {
        &self.inner.table
    }

    /// The same store with these limits (clamped as [`TaskLimits`] says). Give every
    /// instance sharing the table the same limits: each enforces its own on the tasks it
    /// creates.
    #[must_use]
    pub fn with_limits(self, limits: TaskLimits) -> Self {
        Self {
            inner: Arc::new(Inner {
                pool: self.inner.pool.clone(),
                table: self.inner.table.clone(),
                limits: limits.clamped(),
            }),
        }
    }

    /// The limits this store enforces.
    pub fn limits(&self) -> TaskLimits {
        self.inner.limits
    }

    /// The create itself, in one transaction (see the type's bounds).
    async fn create_in_tx(&self, record: &TaskRecord, json: &str) -> Result<(), TaskStoreError> {
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
        // Creates of this table take turns: the counts below stay true until the commit.
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtext($1))",
            &[&format!("mcp-tasks-create:{table}")],
        )
        .await
        .map_err(backend("locking for a create"))?;
        tx.execute(
            &format!("DELETE FROM \"{table}\" WHERE expires_ms <= $1"),
            &[&i64_of(now_ms())],
        )
        .await
        .map_err(backend("pruning expired tasks"))?;
        let row = tx
            .query_one(
                &format!(
                    "SELECT EXISTS (SELECT 1 FROM \"{table}\" WHERE task_id = $1),
                            (SELECT COUNT(*) FROM \"{table}\" WHERE owner = $2),
                            (SELECT COUNT(*) FROM \"{table}\" WHERE owner = $2 AND terminal),
                            (SELECT COUNT(*) FROM \"{table}\")"
                ),
                &[&record.task_id, &record.owner],
            )
            .await
            .map_err(backend("counting tasks"))?;
        let exists: bool = row.try_get(0).map_err(backend("reading the counts"))?;
        if exists {
            return Err(TaskStoreError::Exists(record.task_id.clone()));
        }
        let n = |i: usize| -> Result<usize, TaskStoreError> {
            let v: i64 = row.try_get(i).map_err(backend("reading the counts"))?;
            Ok(usize::try_from(v).unwrap_or(0))
        };
        let (own, own_done, total) = (n(1)?, n(2)?, n(3)?);
        let evict = limits.to_evict(own, total);
        if evict > 0 {
            // Only the creator's own finished tasks give way, those closest to expiry.
            if own_done < evict {
                return Err(limits.refusal(own));
            }
            tx.execute(
                &format!(
                    "DELETE FROM \"{table}\" WHERE task_id IN (
                         SELECT task_id FROM \"{table}\" WHERE owner = $1 AND terminal
                         ORDER BY expires_ms LIMIT $2)"
                ),
                &[&record.owner, &i64::try_from(evict).unwrap_or(i64::MAX)],
            )
            .await
            .map_err(backend("evicting finished tasks"))?;
        }
        tx.execute(
            &format!(
                "INSERT INTO \"{table}\" (task_id, owner, terminal, revision, expires_ms, record)
                 VALUES ($1, $2, $3, $4, $5, $6)"
            ),
            &[
                &record.task_id,
                &record.owner,
                &record.status.is_terminal(),
                &i64_of(record.revision),
                &i64_of(record.expires_ms),
                &json,
            ],
        )
        .await
        .map_err(backend("inserting a task"))?;
        tx.commit().await.map_err(backend("committing a new task"))
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, TaskStoreError> {
        self.inner
            .pool
            .get()
            .await
            .map_err(|e| TaskStoreError::Backend(format!("PostgreSQL connection: {e}")))
    }
}

fn encode(record: &TaskRecord) -> Result<String, TaskStoreError> {
    serde_json::to_string(record)
        .map_err(|e| TaskStoreError::Backend(format!("cannot encode a task: {e}")))
}

impl TaskStore for PostgresTaskStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        Box::pin(async move {
            let json = encode(&record)?;
            // Dropping the transaction on timeout rolls it back: nothing half-written.
            tokio::time::timeout(CREATE_DEADLINE, self.create_in_tx(&record, &json))
                .await
                .map_err(|_| {
                    TaskStoreError::Backend(format!(
                        "PostgreSQL, creating a task: not done within {CREATE_DEADLINE:?}"
                    ))
                })?
        })
    }

    fn get<'a>(
        &'a self,
        task_id: &'a str,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        Box::pin(async move {
            let table = &self.inner.table;
            let row = self
                .client()
                .await?
                .query_opt(
                    &format!(
                        "SELECT record FROM \"{table}\"
                         WHERE task_id = $1 AND owner = $2 AND expires_ms > $3"
                    ),
                    &[&task_id, &owner, &i64_of(now_ms())],
                )
                .await
                .map_err(backend("reading a task"))?;
            row.map(|row| {
                let json: String = row.try_get(0).map_err(backend("reading a task row"))?;
                serde_json::from_str(&json).map_err(|e| {
                    TaskStoreError::Backend(format!("task `{task_id}` has a corrupt row: {e}"))
                })
            })
            .transpose()
        })
    }

    fn update(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, TaskStoreError>> {
        Box::pin(async move {
            let json = encode(&record)?;
            let table = &self.inner.table;
            // Terminal rows never change, and a writer that read an older revision loses.
            let changed = self
                .client()
                .await?
                .execute(
                    &format!(
                        "UPDATE \"{table}\" SET record = $1, terminal = $2, expires_ms = $3,
                                revision = $6::BIGINT
                         WHERE task_id = $4 AND owner = $5 AND NOT terminal
                           AND revision = $6::BIGINT - 1"
                    ),
                    &[
                        &json,
                        &record.status.is_terminal(),
                        &i64_of(record.expires_ms),
                        &record.task_id,
                        &record.owner,
                        &i64_of(record.revision),
                    ],
                )
                .await
                .map_err(backend("updating a task"))?;
            Ok(changed == 1)
        })
    }
}
