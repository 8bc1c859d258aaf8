//! [`RedisRateLimitStore`](crate::backend::redis::RedisRateLimitStore): counters in Redis, shared
//! by a fleet that already runs one.

use std::time::Duration;

use futures::future::BoxFuture;

use super::NAME;
use super::conn::{Failure, Link, PREFIX_HINT, URL_HINT, shown_prefix, valid_prefix};
use crate::rate_limit::{Hit, RateKey, RateLimitError, RateLimitStore};
use crate::replay::redact;

/// One counted call, atomic in Redis. `KEYS[1]` the counter (a hash: `w` the window's start,
/// `n` the count), `ARGV[1]` the window in ms. The window comes from Redis's own clock
/// (`TIME`), so every instance counts in the same windows. Returns `{count, ms left}`.
const HIT_SCRIPT: &str = r"
if redis.replicate_commands then pcall(redis.replicate_commands) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local len = tonumber(ARGV[1])
local start = now - (now % len)
local w = string.format('%.0f', start)
local n
if redis.call('HGET', KEYS[1], 'w') == w then
  n = redis.call('HINCRBY', KEYS[1], 'n', 1)
else
  redis.call('HSET', KEYS[1], 'w', w, 'n', 1)
  redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', start + len))
  n = 1
end
return {n, start + len - now}
";

/// Counters in Redis, one key per principal, tool and window length (`PREFIX:HEX(key)`, a
/// hash of the current window's start and count), expired by Redis itself at the end of
/// the window, so nothing needs deleting. Prefix `mcp:ratelimit` unless
/// [`with_prefix`](Self::with_prefix) says otherwise.
///
/// A call is one Lua script (atomic in Redis): it reads the time from Redis (`TIME`), starts
/// a new window or increments the current one, and returns the count and the time left. Every
/// instance using the same Redis database and prefix counts against the same limits. Each
/// command has a deadline (5 s); a connection error drops the connection and
/// the next call reconnects. Made from a `RedisReplayStore` (the server's default), it
/// connects to the same server and database with a connection of its own. Each script
/// touches only its one key, so it works on Redis Cluster.
pub struct RedisRateLimitStore {
    link: Link,
    prefix: String,
    /// The URL without its password, for `Debug`.
    shown: String,
}

impl std::fmt::Debug for RedisRateLimitStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisRateLimitStore")
            .field("url", &self.shown)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

fn failed(context: &'static str) -> impl FnOnce(Failure) -> RateLimitError {
    move |e| RateLimitError::backend(NAME, context, e)
}

impl RedisRateLimitStore {
    /// The key prefix used unless [`with_prefix`](Self::with_prefix) says otherwise.
    pub const DEFAULT_PREFIX: &'static str = "mcp:ratelimit";

    /// Connects to `url` (`redis://[USER:PASSWORD@]HOST:PORT/DB`) and checks it answers
    /// `PING`.
    pub async fn connect(url: &str) -> Result<Self, RateLimitError> {
        let shown = redact(url);
        let client = redis::Client::open(url).map_err(|_| RateLimitError::InvalidSpec {
            spec: shown.clone(),
            hint: URL_HINT,
        })?;
        let store = Self::with_client(client, shown);
        store.ping_inner().await?;
        Ok(store)
    }

    /// A store on `client` (connecting on first use), `shown` naming it in `Debug` output
    /// (without a password).
    pub(crate) fn with_client(client: redis::Client, shown: String) -> Self {
        Self {
            link: Link::new(client),
            prefix: Self::DEFAULT_PREFIX.to_owned(),
            shown,
        }
    }

    /// Uses `prefix` (1 to 64 characters, no whitespace) for this store's keys, so several
    /// servers can share one Redis database without sharing limits.
    pub fn with_prefix(mut self, prefix: &str) -> Result<Self, RateLimitError> {
        if !valid_prefix(prefix) {
            return Err(RateLimitError::InvalidSpec {
                spec: shown_prefix(prefix),
                hint: PREFIX_HINT,
            });
        }
        prefix.clone_into(&mut self.prefix);
        Ok(self)
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Runs `cmd` with the deadline, connecting if needed (see [`Link::query`]).
    async fn run<T: redis::FromRedisValue>(
        &self,
        context: &'static str,
        cmd: redis::Cmd,
    ) -> Result<T, RateLimitError> {
        self.link.query(cmd).await.map_err(failed(context))
    }

    async fn ping_inner(&self) -> Result<(), RateLimitError> {
        self.run::<String>("checking the connection", redis::cmd("PING"))
            .await
            .map(|_| ())
    }

    async fn hit_inner(&self, key: &RateKey, window: Duration) -> Result<Hit, RateLimitError> {
        let window_ms = window.as_secs().max(1).saturating_mul(1000);
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(HIT_SCRIPT)
            .arg(1)
            .arg(format!("{}:{}", self.prefix, key.hex()))
            .arg(window_ms);
        let (count, left): (i64, i64) = self.run("counting the call", cmd).await?;
        Ok(Hit::new(
            u64::try_from(count).unwrap_or(0),
            Duration::from_millis(u64::try_from(left).unwrap_or(0)),
        ))
    }
}

impl RateLimitStore for RedisRateLimitStore {
    fn name(&self) -> &'static str {
        NAME
    }

    fn hit<'a>(
        &'a self,
        key: &'a RateKey,
        window: Duration,
    ) -> BoxFuture<'a, Result<Hit, RateLimitError>> {
        Box::pin(self.hit_inner(key, window))
    }

    fn ping(&self) -> BoxFuture<'_, Result<(), RateLimitError>> {
        Box::pin(self.ping_inner())
    }
}
