//! What every Redis store shares: one multiplexed connection, reopened after a connection
//! error, and a deadline on every command that is the only one.

use std::time::Duration;

use redis::aio::MultiplexedConnection;

/// The default deadline of every command and of connecting, for every Redis store
/// ([`RedisReplayStore::with_command_timeout`](super::RedisReplayStore::with_command_timeout)
/// changes it).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest key prefix a store accepts.
const MAX_PREFIX_LEN: usize = 64;

/// What a rejected key prefix is told.
pub(crate) const PREFIX_HINT: &str = "a key prefix is 1 to 64 characters without whitespace";

/// What a URL the driver rejects is told.
pub(crate) const URL_HINT: &str = "write `redis://HOST:PORT/DB`, e.g. `redis://127.0.0.1:6379/0`";

/// Whether `prefix` is usable before every key: 1 to 64 characters, none of them whitespace
/// or control characters (a key with them is legal in Redis, but not something an operator
/// can type into `redis-cli` to look at it).
pub(crate) fn valid_prefix(prefix: &str) -> bool {
    !prefix.is_empty()
        && prefix.len() <= MAX_PREFIX_LEN
        && !prefix.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// `prefix` cut to what an error may show.
pub(crate) fn shown_prefix(prefix: &str) -> String {
    prefix.chars().take(MAX_PREFIX_LEN).collect()
}

/// The options of every connection: no driver timeouts. The driver's own response timeout
/// (500 ms by default) would answer "failed" while the command may still land, well inside
/// the store's own deadline; the store's deadline is the only one.
pub(crate) fn connection_config() -> redis::AsyncConnectionConfig {
    redis::AsyncConnectionConfig::new()
        .set_connection_timeout(None)
        .set_response_timeout(None)
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// No answer within the deadline: the command may still land.
    #[error(
        "no answer within {} ms; check that Redis is running and reachable",
        .0.as_millis()
    )]
    TimedOut(Duration),
    /// Redis or the connection answered with an error.
    #[error(transparent)]
    Redis(#[from] redis::RedisError),
}

/// A store's connection to Redis: opened on first use, dropped after a connection-level error
/// or a timeout so the next command reconnects (after a Redis restart, say).
pub(crate) struct Link {
    client: redis::Client,
    slot: tokio::sync::Mutex<Option<MultiplexedConnection>>,
    timeout: Duration,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The client holds the URL and its password: show the deadline only.
        f.debug_struct("Link")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Link {
    /// A link on `client` with the default [`COMMAND_TIMEOUT`].
    pub(crate) fn new(client: redis::Client) -> Self {
        Self {
            client,
            slot: tokio::sync::Mutex::new(None),
            timeout: COMMAND_TIMEOUT,
        }
    }

    /// Opens a client on `url` (not connecting yet); `None` if the driver rejects the URL.
    pub(crate) fn open(url: &str) -> Option<Self> {
        redis::Client::open(url).ok().map(Self::new)
    }

    /// The same link with another deadline (at least 10 ms).
    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// Every command's deadline.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The client, for work that needs a connection of its own.
    pub(crate) fn client(&self) -> &redis::Client {
        &self.client
    }

    /// The live connection, connecting (within the deadline) if there is none.
    pub(crate) async fn get(&self) -> Result<MultiplexedConnection, Failure> {
        let mut slot = self.slot.lock().await;
        if let Some(conn) = slot.as_ref() {
            return Ok(conn.clone());
        }
        let conn = tokio::time::timeout(
            self.timeout,
            self.client
                .get_multiplexed_async_connection_with_config(&connection_config()),
        )
        .await
        .map_err(|_| Failure::TimedOut(self.timeout))??;
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// Runs `cmd` on `conn` within the deadline; a connection-level failure or a timeout drops
    /// the live connection so the next command reconnects.
    pub(crate) async fn run<T: redis::FromRedisValue>(
        &self,
        conn: &mut MultiplexedConnection,
        cmd: redis::Cmd,
    ) -> Result<T, Failure> {
        match tokio::time::timeout(self.timeout, cmd.query_async::<T>(conn)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => {
                if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
                    *self.slot.lock().await = None;
                }
                Err(e.into())
            }
            Err(_) => {
                *self.slot.lock().await = None;
                Err(Failure::TimedOut(self.timeout))
            }
        }
    }

    /// Connects if needed, then runs `cmd` ([`Self::get`] then [`Self::run`]).
    pub(crate) async fn query<T: redis::FromRedisValue>(
        &self,
        cmd: redis::Cmd,
    ) -> Result<T, Failure> {
        let mut conn = self.get().await?;
        self.run(&mut conn, cmd).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_checked() {
        assert!(valid_prefix("mcp:replay"));
        assert!(valid_prefix(&"p".repeat(64)));
        for bad in ["", "a b", "a\nb", "a\u{7}", &"p".repeat(65)] {
            assert!(!valid_prefix(bad), "{bad:?}");
        }
        assert_eq!(shown_prefix(&"p".repeat(100)).len(), 64);
    }

    #[test]
    fn debug_shows_no_url() {
        let link = Link::open("redis://user:hunter2@127.0.0.1:6379/0").unwrap();
        let shown = format!("{link:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[tokio::test]
    async fn an_unreachable_server_fails_within_the_deadline() {
        // Port 9 on loopback: nothing listens (connection refused) or, where a firewall drops
        // it, the deadline answers.
        let link = Link::open("redis://127.0.0.1:9/0")
            .unwrap()
            .with_timeout(Duration::from_millis(200));
        let started = std::time::Instant::now();
        let r = link.query::<String>(redis::cmd("PING")).await;
        assert!(r.is_err(), "{r:?}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
