//! Replay store in a SQLite file, shared by every process on one host.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::{NAME, conn};
use crate::replay::{
    ActionError, Claim, ClaimOutcome, ClaimState, ClaimWith, DuringWork, FlowLedger, OutcomeStore,
    ReplayError, ReplayStore, Taken, TxWork, unix_secs_i64,
};
use crate::state::Nonce;

mod group;

/// The environment variable [`SqliteOptions::from_env`] reads: `0`, `off` or `false` turns
/// group commit off (one transaction, and one disk flush, per claim), for A/B measurements.
pub const GROUP_COMMIT_ENV: &str = "MCP_SQLITE_GROUP_COMMIT";

/// How a [`SqliteReplayStore`](crate::backend::sqlite::SqliteReplayStore) commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// Concurrent claims (and outcome records) share one transaction and one disk flush
    /// (up to 256 per transaction), each with its own truthful outcome; see
    /// [`SqliteReplayStore`](crate::backend::sqlite::SqliteReplayStore). Default on.
    pub group_commit: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self { group_commit: true }
    }
}

impl SqliteOptions {
    /// The defaults, with group commit turned off when [`GROUP_COMMIT_ENV`] is `0`, `off` or
    /// `false` (what [`SqliteReplayStore::open`](crate::backend::sqlite::SqliteReplayStore::open)
    /// and `open_store` use).
    pub fn from_env() -> Self {
        let off = std::env::var(GROUP_COMMIT_ENV).is_ok_and(|v| {
            let v = v.trim();
            v == "0" || v.eq_ignore_ascii_case("off") || v.eq_ignore_ascii_case("false")
        });
        Self::default().group_commit(!off)
    }

    /// Turns group commit on or off.
    pub fn group_commit(mut self, on: bool) -> Self {
        self.group_commit = on;
        self
    }
}

/// Work on a SQLite store's claim transaction ([`ClaimWith::InTx`]): `work` gets the
/// very `BEGIN IMMEDIATE` transaction that claims the nonce, runs on the store's blocking
/// thread, and commits with the claim or rolls back with it.
pub fn tx_work<R: Send + 'static>(
    work: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<R, ActionError> + Send + 'static,
) -> TxWork<R> {
    TxWork::new(NAME, |output| {
        SqliteTx(Box::new(move |tx| {
            output.put(work(tx)?);
            Ok(())
        }))
    })
}

/// The type [`tx_work`] hands the core, found again by [`TxWork::downcast`].
struct SqliteTx(SqliteWork);

/// What a [`SqliteTx`] runs.
type SqliteWork = Box<dyn FnOnce(&rusqlite::Transaction<'_>) -> Result<(), ActionError> + Send>;

/// The SQLite file was written by a newer build with an unknown schema (the source of a
/// [`ReplayError::Backend`]).
#[derive(Debug, thiserror::Error)]
#[error(
    "schema version {found} is newer than this build supports ({supported}); upgrade this server or use another file"
)]
pub struct SchemaTooNew {
    /// Version found in the file.
    pub found: i64,
    /// Highest version this build knows.
    pub supported: i64,
}

/// What runs under a claim: nothing, standalone work, or work on the claim's own transaction.
enum Under {
    Nothing,
    During(DuringWork),
    InTx(SqliteTx),
}

/// Minimum seconds between automatic prunes (one also runs on open).
const PRUNE_INTERVAL_SECS: i64 = 60;

/// Schema migrations, applied in order; the `schema_version` table records how many ran.
/// Append only: never edit a released entry.
const MIGRATIONS: &[&str] = &[
    // 1: the claims table. WITHOUT ROWID: the nonce is the key, no second b-tree needed.
    "CREATE TABLE replay_nonces (
         nonce      BLOB    NOT NULL PRIMARY KEY CHECK (length(nonce) = 16),
         expires_at INTEGER NOT NULL
     ) WITHOUT ROWID;
     CREATE INDEX replay_nonces_expires_at ON replay_nonces (expires_at);",
    // 2: the outcome recorded for identical retries (`OutcomeStore::record_outcome`).
    "ALTER TABLE replay_nonces ADD COLUMN outcome BLOB;",
    // 3: flows asked and not yet taken (`FlowLedger`), expiry in Unix milliseconds.
    "CREATE TABLE replay_flows (
         nonce         BLOB    NOT NULL PRIMARY KEY CHECK (length(nonce) = 16),
         expires_at_ms INTEGER NOT NULL,
         answered      INTEGER NOT NULL
     ) WITHOUT ROWID;
     CREATE INDEX replay_flows_expires_at ON replay_flows (expires_at_ms);",
];

/// Milliseconds since the Unix epoch, clamped to `i64`.
fn unix_ms_i64(t: SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A replay store in a SQLite file (WAL mode). Any number of processes may open the same
/// file; exactly one claim per nonce succeeds among all of them.
///
/// Each claim is a `BEGIN IMMEDIATE` transaction (taking SQLite's write lock up front, so
/// two claimers never both read "absent") doing `INSERT ... ON CONFLICT DO NOTHING` and
/// checking that one row changed. Other processes wait up to 10 s for the lock. Work runs on
/// `tokio::task::spawn_blocking`, so this store needs a Tokio runtime.
///
/// `synchronous = FULL`: a committed claim survives power loss, not just a process crash,
/// because a lost claim would re-enable a replay.
///
/// # Group commit
///
/// That durability costs a disk flush per `COMMIT`, far more than the claim itself. So
/// concurrent claims and outcome records of one store queue up and share a transaction: one
/// writer takes all that is waiting (up to 256) and runs each in its own `SAVEPOINT`, in
/// order, then commits once. Each claimant's answer is the one it would get from a transaction
/// of its own: `AlreadyUsed` if its nonce was taken (also earlier in the same batch), its
/// work's failure rolled back to its savepoint (its nonce and its writes with it, nothing
/// else), and no answer at all before the `COMMIT` succeeded; a failed `COMMIT` fails every
/// claim of the batch. In-transaction work ([`tx_work`]) sees the writes of the claims before
/// it in the batch as if they had committed; it must not end the transaction itself. Turn it
/// off with [`SqliteOptions`] (or [`GROUP_COMMIT_ENV`]) to measure the difference.
///
/// # Crash between the action and `COMMIT`
///
/// In [`ClaimWith::During`] the action runs after the `INSERT` and before `COMMIT`. If
/// the process dies in between (after, say, unlinking a file), SQLite discards the
/// uncommitted transaction on the next open: the nonce is unclaimed while the file is gone. A
/// retry of the same request re-claims the nonce, runs the action again, which finds no file
/// and (being convergent, see the [module docs](super)) treats that as done, then commits.
/// The unlink happened once; the nonce ends up claimed once. The same holds if the awaiting
/// future is dropped: the blocking task still finishes and commits or rolls back.
#[derive(Debug, Clone)]
pub struct SqliteReplayStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// Unix seconds of the last prune, to prune at most once per interval.
    last_prune: AtomicI64,
    /// Writes waiting for the next group commit.
    queue: Mutex<group::Queue>,
    /// Most writes per transaction (1 without group commit).
    max_batch: usize,
}

impl SqliteReplayStore {
    /// Opens (creating if needed) the store at `path`: sets WAL mode and a busy timeout,
    /// applies schema migrations, and prunes expired claims. Options from
    /// [`SqliteOptions::from_env`] (group commit on unless [`GROUP_COMMIT_ENV`] says off).
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, ReplayError> {
        Self::open_with(path, SqliteOptions::from_env()).await
    }

    /// [`open`](Self::open) with the given options.
    pub async fn open_with(
        path: impl AsRef<Path>,
        options: SqliteOptions,
    ) -> Result<Self, ReplayError> {
        let path = path.as_ref().to_owned();
        let inner = run_blocking(move || {
            let conn = open_connection(&path)?;
            let inner = Inner {
                path,
                conn: Mutex::new(conn),
                last_prune: AtomicI64::new(0),
                queue: Mutex::new(group::Queue::default()),
                max_batch: if options.group_commit {
                    group::MAX_BATCH
                } else {
                    1
                },
            };
            inner.prune(&inner.lock(), SystemTime::now())?;
            Ok(inner)
        })
        .await?;
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// Opens a connection to `path` set up the way this store sets up its own: WAL mode, a
    /// 10 s busy timeout, `synchronous = FULL`. The schema is left alone.
    ///
    /// For applications that keep their own tables in the store's file (to write them in the same
    /// transaction as a claim, see
    /// [`SqliteReplayStore::claim_in`](crate::backend::sqlite::SqliteReplayStore::claim_in)). It
    /// waits out other processes opening the file at the same moment, which a bare `PRAGMA
    /// journal_mode = WAL` does not. Blocking: call it from `spawn_blocking` inside async code.
    pub fn connect(path: impl AsRef<Path>) -> Result<Connection, ReplayError> {
        configure(path.as_ref())
    }

    /// The file this store uses.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The schema version recorded in the file.
    pub async fn schema_version(&self) -> Result<i64, ReplayError> {
        let inner = self.inner.clone();
        run_blocking(move || {
            inner
                .lock()
                .query_row("SELECT version FROM schema_version", [], |row| row.get(0))
                .map_err(sqlite("reading the schema version"))
        })
        .await
    }

    /// Claims `nonce` inside the caller's transaction `tx` on this store's file (opened with
    /// `BEGIN IMMEDIATE` so no other writer interleaves). The claim becomes durable only when
    /// the caller commits `tx`, together with whatever else it wrote; a rollback releases it.
    ///
    /// The `replay_nonces` table must exist in `tx`'s database: open this store on the file
    /// first (it applies the migrations).
    pub fn claim_in(
        tx: &rusqlite::Transaction<'_>,
        nonce: Nonce,
        expires_at: SystemTime,
    ) -> Result<ClaimOutcome, ReplayError> {
        let changed = tx
            .execute(
                "INSERT INTO replay_nonces (nonce, expires_at) VALUES (?1, ?2)
                 ON CONFLICT (nonce) DO NOTHING",
                params![&nonce.as_bytes()[..], unix_secs_i64(expires_at)],
            )
            .map_err(sqlite("inserting the nonce"))?;
        Ok(if changed == 1 {
            ClaimOutcome::Claimed
        } else {
            ClaimOutcome::AlreadyUsed
        })
    }

    async fn claim_inner(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
        under: Under,
    ) -> Result<ClaimOutcome, ReplayError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.submit(group::Op::Claim {
            nonce,
            expires_at,
            under,
            reply,
        });
        // The writer answers every operation it takes, also when the caller stops waiting.
        answer.await.map_err(|_| lost_answer())?
    }
}

/// The writer dropped an operation unanswered (the runtime is shutting down).
fn lost_answer() -> ReplayError {
    ReplayError::Worker("the SQLite replay store's writer stopped".into())
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Connection> {
        conn::lock(&self.conn)
    }

    fn queue(&self) -> MutexGuard<'_, group::Queue> {
        // Every update of the queue is a single push, drain or flag write: still consistent
        // after a panic elsewhere.
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Prunes expired claims if the last prune is older than the interval. Best effort: the
    /// claims already committed, a failed prune only delays cleanup.
    fn maybe_prune(&self, conn: &Connection) {
        let now = SystemTime::now();
        if unix_secs_i64(now) - self.last_prune.load(Ordering::Relaxed) >= PRUNE_INTERVAL_SECS
            && let Err(e) = self.prune(conn, now)
        {
            tracing::warn!(error = %e, "replay store: pruning expired nonces failed");
        }
    }

    fn prune(&self, conn: &Connection, now: SystemTime) -> Result<u64, ReplayError> {
        let now_secs = unix_secs_i64(now);
        let deleted = conn
            .execute(
                "DELETE FROM replay_nonces WHERE expires_at < ?1",
                params![now_secs],
            )
            .map_err(sqlite("pruning expired nonces"))?;
        self.last_prune.store(now_secs, Ordering::Relaxed);
        Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
    }
}

fn open_connection(path: &Path) -> Result<Connection, ReplayError> {
    let mut conn = configure(path)?;
    migrate(&mut conn)?;
    Ok(conn)
}

fn configure(path: &Path) -> Result<Connection, ReplayError> {
    conn::configure(path).map_err(|e| ReplayError::backend(NAME, "opening the store", e))
}

/// Brings the schema up to date inside one write transaction, so concurrent first opens by
/// several processes apply each migration exactly once.
fn migrate(conn: &mut Connection) -> Result<(), ReplayError> {
    let supported = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sqlite("starting the migration transaction"))?;
    tx.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        .map_err(sqlite("creating the schema_version table"))?;
    let current: Option<i64> = tx
        .query_row("SELECT max(version) FROM schema_version", [], |row| {
            row.get(0)
        })
        .map_err(sqlite("reading the schema version"))?;
    let current = match current {
        Some(v) => v,
        None => {
            tx.execute("INSERT INTO schema_version (version) VALUES (0)", [])
                .map_err(sqlite("initialising the schema version"))?;
            0
        }
    };
    if current > supported {
        return Err(ReplayError::backend(
            NAME,
            "opening the replay store",
            SchemaTooNew {
                found: current,
                supported,
            },
        ));
    }
    for (index, migration) in MIGRATIONS.iter().enumerate() {
        let version = i64::try_from(index + 1).unwrap_or(i64::MAX);
        if version <= current {
            continue;
        }
        tx.execute_batch(migration)
            .map_err(sqlite("applying a schema migration"))?;
        tx.execute("UPDATE schema_version SET version = ?1", params![version])
            .map_err(sqlite("recording the schema version"))?;
    }
    tx.commit().map_err(sqlite("committing schema migrations"))
}

fn sqlite(context: &'static str) -> impl FnOnce(rusqlite::Error) -> ReplayError {
    move |source| ReplayError::backend(NAME, context, source)
}

async fn run_blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ReplayError> + Send + 'static,
) -> Result<T, ReplayError> {
    conn::blocking(f, ReplayError::Worker).await
}

impl ReplayStore for SqliteReplayStore {
    fn name(&self) -> &'static str {
        NAME
    }

    /// A [`SqliteRateLimitStore`](crate::backend::sqlite::SqliteRateLimitStore) on this
    /// store's file (table `mcp_rate_limits`, a connection of its own opened on first use).
    fn rate_limit_store(&self) -> Option<Arc<dyn crate::rate_limit::RateLimitStore>> {
        Some(Arc::new(
            crate::backend::sqlite::SqliteRateLimitStore::lazy(self.path()),
        ))
    }

    /// Runs `InTx` work built by [`tx_work`]; any other is [`ReplayError::TxMismatch`].
    fn claim<'a>(&'a self, claim: Claim<'a>) -> BoxFuture<'a, Result<ClaimOutcome, ReplayError>> {
        let (nonce, expires_at) = (claim.nonce, claim.expires_at);
        let under = match claim.work {
            ClaimWith::Nothing => Under::Nothing,
            ClaimWith::During(work) => Under::During(work),
            ClaimWith::InTx(work) => match work.downcast::<SqliteTx>() {
                Ok(work) => Under::InTx(work),
                Err(other) => {
                    let err = other.mismatch(NAME);
                    return Box::pin(async move { Err(err) });
                }
            },
        };
        Box::pin(self.claim_inner(nonce, expires_at, under))
    }

    fn outcomes(&self) -> Option<&dyn OutcomeStore> {
        Some(self)
    }

    /// The table `replay_flows` in the same file.
    fn flow_ledger(&self) -> Option<&dyn FlowLedger> {
        Some(self)
    }

    fn ping(&self) -> BoxFuture<'_, Result<(), ReplayError>> {
        let inner = self.inner.clone();
        Box::pin(run_blocking(move || {
            inner
                .lock()
                .query_row("SELECT count(*) FROM replay_nonces WHERE 0", [], |_| Ok(()))
                .map_err(sqlite("pinging the database"))
        }))
    }

    fn prune_expired(&self) -> BoxFuture<'_, Result<u64, ReplayError>> {
        let inner = self.inner.clone();
        Box::pin(run_blocking(move || {
            inner.prune(&inner.lock(), SystemTime::now())
        }))
    }
}

impl OutcomeStore for SqliteReplayStore {
    fn record_outcome<'a>(
        &'a self,
        nonce: Nonce,
        expires_at: SystemTime,
        outcome: &'a [u8],
    ) -> BoxFuture<'a, Result<(), ReplayError>> {
        let _ = expires_at;
        let outcome = outcome.to_vec();
        Box::pin(async move {
            let (reply, answer) = tokio::sync::oneshot::channel();
            // Queued with the claims, so it shares their disk flush.
            self.submit(group::Op::Record {
                nonce,
                outcome,
                reply,
            });
            answer.await.map_err(|_| lost_answer())?
        })
    }

    fn claim_state(&self, nonce: Nonce) -> BoxFuture<'_, Result<ClaimState, ReplayError>> {
        let inner = self.inner.clone();
        Box::pin(run_blocking(move || {
            let now = unix_secs_i64(SystemTime::now());
            let found: Option<Option<Vec<u8>>> = inner
                .lock()
                .query_row(
                    "SELECT outcome FROM replay_nonces WHERE nonce = ?1 AND expires_at >= ?2",
                    params![&nonce.as_bytes()[..], now],
                    |row| row.get(0),
                )
                .optional()
                .map_err(sqlite("reading the claim"))?;
            Ok(match found {
                None => ClaimState::Unclaimed,
                Some(None) => ClaimState::Claimed,
                Some(Some(outcome)) => ClaimState::Recorded(outcome),
            })
        }))
    }
}

/// Rows of `replay_flows`; SQLite's write lock makes each sweep's `DELETE` see (and count)
/// only rows no other process removed first.
impl FlowLedger for SqliteReplayStore {
    fn flow_asked(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
        again: bool,
    ) -> BoxFuture<'_, Result<(), ReplayError>> {
        let inner = self.inner.clone();
        Box::pin(run_blocking(move || {
            // A first record never overwrites an answer that came first.
            let sql = if again {
                "INSERT INTO replay_flows (nonce, expires_at_ms, answered) VALUES (?1, ?2, 0)
                 ON CONFLICT (nonce) DO UPDATE
                 SET expires_at_ms = excluded.expires_at_ms, answered = 0"
            } else {
                "INSERT INTO replay_flows (nonce, expires_at_ms, answered) VALUES (?1, ?2, 0)
                 ON CONFLICT (nonce) DO NOTHING"
            };
            inner
                .lock()
                .execute(sql, params![&nonce.as_bytes()[..], unix_ms_i64(expires_at)])
                .map_err(sqlite("recording an asked flow"))?;
            Ok(())
        }))
    }

    fn flow_answered(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
    ) -> BoxFuture<'_, Result<(), ReplayError>> {
        let inner = self.inner.clone();
        Box::pin(run_blocking(move || {
            inner
                .lock()
                .execute(
                    "INSERT INTO replay_flows (nonce, expires_at_ms, answered) VALUES (?1, ?2, 1)
                     ON CONFLICT (nonce) DO UPDATE SET answered = 1",
                    params![&nonce.as_bytes()[..], unix_ms_i64(expires_at)],
                )
                .map_err(sqlite("recording an answered flow"))?;
            Ok(())
        }))
    }

    fn take_abandoned(
        &self,
        now: SystemTime,
        limit: usize,
    ) -> BoxFuture<'_, Result<Taken, ReplayError>> {
        let inner = self.inner.clone();
        Box::pin(run_blocking(move || {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let conn = inner.lock();
            let mut stmt = conn
                .prepare_cached(
                    "DELETE FROM replay_flows WHERE nonce IN (
                         SELECT nonce FROM replay_flows WHERE expires_at_ms < ?1
                         ORDER BY expires_at_ms LIMIT ?2)
                     RETURNING answered",
                )
                .map_err(sqlite("taking abandoned flows"))?;
            let answers = stmt
                .query_map(params![unix_ms_i64(now), limit], |row| row.get::<_, i64>(0))
                .map_err(sqlite("taking abandoned flows"))?;
            let mut taken = Taken::default();
            for answered in answers {
                let answered = answered.map_err(sqlite("taking abandoned flows"))?;
                taken.removed += 1;
                taken.abandoned += u64::from(answered == 0);
            }
            Ok(taken)
        }))
    }
}
