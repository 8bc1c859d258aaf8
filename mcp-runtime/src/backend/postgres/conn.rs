//! What every PostgreSQL store shares: the pool it opens, table names it accepts, first-time
//! schema setup under a lock, and error text with the server's message.

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

/// The longest table name a store accepts (PostgreSQL's limit is 63 bytes; the stores derive
/// index and companion table names from it).
const MAX_TABLE_LEN: usize = 48;

/// What a rejected table name is told.
pub(crate) const TABLE_HINT: &str =
    "a table name is 1 to 48 of a-z 0-9 _, not starting with a digit";

/// Whether `table` is a name the stores interpolate into SQL: lower-case ASCII letters,
/// digits and `_`, not starting with a digit, at most 48 bytes. Quoting alone would not do:
/// the stores also derive index names from it.
pub(crate) fn valid_table(table: &str) -> bool {
    let mut bytes = table.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'_'))
        && table.len() <= MAX_TABLE_LEN
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_'))
}

/// Opens a pool on `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB`): at most 16
/// connections, a connection wait and a connect each bounded by 10 s. Connects lazily; the
/// caller's first query reports an unreachable server.
pub(crate) fn open_pool(url: &str) -> Result<Pool, PoolError> {
    let config: tokio_postgres::Config = url.parse().map_err(PoolError::Url)?;
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(16)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(10)))
        .create_timeout(Some(Duration::from_secs(10)))
        .build()
        .map_err(|e| PoolError::Build(e.to_string()))
}

/// Opens a pool on `url` for a store keeping its rows in `table`, and creates the table with
/// `ddl` (given the table name) under the advisory lock `mcp-{what}:{table}`. The error is the
/// text a store puts in its own error type: `PostgreSQL, <what failed>: <why>`.
pub(crate) async fn open_table(
    url: &str,
    table: &str,
    what: &str,
    ddl: impl FnOnce(&str) -> String,
) -> Result<Pool, String> {
    if !valid_table(table) {
        return Err(format!("invalid table name `{table}`: {TABLE_HINT}"));
    }
    let pool = open_pool(url).map_err(|e| format!("PostgreSQL, {e}"))?;
    let mut client = pool
        .get()
        .await
        .map_err(|e| format!("PostgreSQL connection: {e}"))?;
    setup_schema(
        &mut client,
        &format!("mcp-{what}:{table}"),
        &ddl(table),
        SCHEMA_SETUP_DEADLINE,
    )
    .await
    .map_err(|e| format!("PostgreSQL, setting up the {what} table: {e}"))?;
    Ok(pool)
}

/// Why [`open_pool`] failed; each store wraps it in its own error type.
#[derive(Debug)]
pub(crate) enum PoolError {
    /// The connection URL does not parse.
    Url(tokio_postgres::Error),
    /// The pool could not be built.
    Build(String),
}

impl std::fmt::Display for PoolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Url(e) => write!(f, "parsing the connection URL: {}", describe(e)),
            Self::Build(e) => write!(f, "building the connection pool: {e}"),
        }
    }
}

impl std::error::Error for PoolError {}

/// Milliseconds as PostgreSQL's `BIGINT`, saturating (a time past year 292 million).
pub(crate) fn i64_of(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// The driver's error with its causes (`db error: ERROR: ...`): `tokio_postgres::Error`'s own
/// text is only `db error`, and the server's message is in its source chain.
pub fn describe(e: &tokio_postgres::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// How long [`setup_schema`] may take in all, lock wait included, before it gives up.
pub const SCHEMA_SETUP_DEADLINE: Duration = Duration::from_secs(30);

/// Why [`setup_schema`] failed.
#[derive(Debug, thiserror::Error)]
pub enum SchemaSetupError {
    /// A step failed in the database.
    #[error("{step}: {}", describe(source))]
    Database {
        /// Which step: starting, locking, creating or committing.
        step: &'static str,
        /// The driver's error.
        source: tokio_postgres::Error,
    },
    /// The setup did not finish in time: most likely another instance holds the setup lock
    /// and is stuck. The transaction is rolled back.
    #[error(
        "schema setup took longer than {0:?} (another instance holding the setup lock?); \
         check the database's sessions (pg_locks) and retry"
    )]
    TimedOut(Duration),
}

/// Runs first-time schema setup (`ddl`, idempotent statements such as `CREATE TABLE IF NOT
/// EXISTS`) in one transaction under a transaction-scoped advisory lock named by `lock`,
/// bounded by `deadline` (normally [`SCHEMA_SETUP_DEADLINE`]). Use it for your own tables
/// beside the stores' as well.
///
/// Concurrent `CREATE TABLE IF NOT EXISTS` of the same table can still collide in
/// PostgreSQL's catalog (a unique violation on `pg_type`), so instances starting together
/// against one database would fail at random; the lock serialises them.
///
/// # Errors
/// Which step failed with the driver's error, or the deadline passed.
pub async fn setup_schema(
    client: &mut deadpool_postgres::Client,
    lock: &str,
    ddl: &str,
    deadline: Duration,
) -> Result<(), SchemaSetupError> {
    let step = |step| move |source| SchemaSetupError::Database { step, source };
    let setup = async {
        let tx = client
            .transaction()
            .await
            .map_err(step("starting the setup transaction"))?;
        tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&lock])
            .await
            .map_err(step("locking for schema setup"))?;
        tx.batch_execute(ddl)
            .await
            .map_err(step("creating the schema"))?;
        tx.commit().await.map_err(step("committing schema setup"))
    };
    // Dropping the transaction on timeout rolls it back, releasing the lock if it was taken.
    tokio::time::timeout(deadline, setup)
        .await
        .map_err(|_| SchemaSetupError::TimedOut(deadline))?
}

#[cfg(test)]
mod tests {
    use super::valid_table;

    #[test]
    fn table_names_are_validated() {
        assert!(valid_table("mcp_replay_nonces"));
        assert!(valid_table("_t1"));
        assert!(valid_table(&"a".repeat(48)));
        for bad in ["", "1t", "T", "a-b", "a\"b", "a;drop", "é", &"a".repeat(49)] {
            assert!(!valid_table(bad), "{bad}");
        }
    }
}
