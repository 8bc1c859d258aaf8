//! Rate limits on `tools/call`: per principal and per tool, with a default for every tool,
//! counted in a store that every instance of a fleet shares, so the fleet enforces one limit.
//!
//! # What is limited
//!
//! A server configured with limits ([`ServerBuilder::rate_limit`](crate::server::ServerBuilder::rate_limit),
//! [`ServerBuilder::tool_rate_limit`](crate::server::ServerBuilder::tool_rate_limit)) counts every
//! `tools/call` of a tool that has a limit, keyed by (principal, tool): each principal has
//! its own count for each tool, and one principal using up its quota of one tool changes
//! nothing for another principal, nor for another tool. **Without configuration nothing is
//! limited** (the default).
//!
//! The check is made in the server core, after authorization and before any code of the tool
//! runs, whichever way the request came (Streamable HTTP, stdio, the 2025-11-25 adapter,
//! [`Server::handle_bytes`](crate::server::Server::handle_bytes), the in-process client); plain and
//! task-augmented calls alike. A refused call runs nothing and creates no task.
//!
//! What counts is a **flow**, not a round: only the first call of a flow, a `tools/call`
//! without `requestState`, is counted. A retry carrying a `requestState` (the next round of
//! a multi round-trip call, or an identical retry that the runtime answers with the outcome it
//! recorded) is never counted: its state was issued, signed and bound to this principal,
//! tool and arguments by a first call that was counted, and a state that does not verify is
//! refused before the check. So a confirmation flow of two rounds costs one call of the
//! quota, and retrying after a lost reply costs nothing. (A state lives for the state TTL,
//! [`ServerBuilder::state_ttl`](crate::server::ServerBuilder::state_ttl), and at most
//! [`Limits::max_rounds`](crate::server::Limits::max_rounds) rounds: that bounds what one
//! counted call can lead to.) `tasks/update`, `tasks/get` and `tasks/cancel` are not
//! `tools/call` and are not counted.
//!
//! # The algorithm: fixed windows
//!
//! Each limit is `limit` calls per `window` (whole seconds). Time is cut into windows of that
//! length aligned to the Unix epoch; a call adds one to the counter of (principal, tool,
//! window) and is refused when the counter passes `limit`. Every store does this in one
//! atomic step (the memory store under a lock, SQLite and PostgreSQL with one
//! `INSERT .. ON CONFLICT DO UPDATE .. RETURNING`, Redis with one Lua script), so concurrent
//! calls on any number of instances never let more than `limit` through in one window. A
//! refused call is counted too, which changes nothing: the window is over its limit until it
//! ends. The PostgreSQL and Redis stores read the time from the database, so instances with
//! skewed clocks still share windows; the memory and SQLite stores use the local clock.
//! At a window's boundary a principal may make up to `limit` calls on each side of it, so a
//! burst of `2 × limit` is possible across one boundary: choose the limit accordingly.
//!
//! # The answer: `-32023` RateLimited (SEP-3304)
//!
//! A refused call gets the JSON-RPC error `-32023` "RateLimited" proposed by SEP-3304
//! (an open proposal), built by
//! [`ErrorObject::rate_limited`](mcp_types::ErrorObject::rate_limited):
//!
//! ```json
//! {"code": -32023, "message": "Rate limited: at most 10 calls of `notes_delete` per 60 s; retry in 17 s",
//!  "data": {"retryAfterMs": 17000, "retryAfter": 17, "limit": 10, "window": 60}}
//! ```
//!
//! `retryAfter` is the time until the window ends, in whole seconds, **rounded up, at least
//! 1**; `retryAfterMs` is the same instant in milliseconds (exactly `retryAfter × 1000`), the
//! member SEP-3304's text names. `limit` and `window` are the caller's own limit: no other
//! principal's count or quota is ever revealed (not even how much of its own window is left).
//! Over Streamable HTTP the response is **429 Too Many Requests** with `Retry-After:
//! {retryAfter}` and `RateLimit-Limit: {limit}` (on the 2025-11-25 adapter's HTTP half too);
//! on stdio, the JSON-RPC error alone. See [`Reply::rate_limited`](crate::service::Reply::rate_limited).
//!
//! # The store, its deadline, and failures
//!
//! Counters live in a [`RateLimitStore`]. Unless one is given
//! ([`ServerBuilder::rate_limit_store`](crate::server::ServerBuilder::rate_limit_store)), the server
//! uses the replay store's own ([`ReplayStore::rate_limit_store`](crate::replay::ReplayStore::rate_limit_store)),
//! so one `--store` setting puts claims, tasks and counters in the same backend: the memory
//! replay store gives a [`MemoryRateLimitStore`] (one process), a SQLite one a
//! `sqlite::SqliteRateLimitStore` on the same file (every process of the host), a PostgreSQL
//! one a `postgres::PostgresRateLimitStore` on the same connection pool (table
//! `mcp_rate_limits`), a Redis one a `redis::RedisRateLimitStore` on the same server and
//! database (keys under `mcp:ratelimit`). A replay store of your own that offers none leaves
//! the server with a memory store, counting per process (a warning says so at build).
//! [`open_rate_limit_store`] opens one from the same spec strings as the replay store.
//!
//! Every check has a deadline ([`ServerBuilder::rate_limit_deadline`](crate::server::ServerBuilder::rate_limit_deadline),
//! default [`DEFAULT_DEADLINE`], 2 s). When the store fails or does not answer in time, the
//! server **fails closed** by default ([`StoreFailure::Refuse`]): the call is refused with
//! `-32603` and `data: {"reason": "rate_limit_store_unavailable", "retryable": true}`, nothing
//! ran, and the client may retry. [`StoreFailure::Allow`] fails open instead (the call runs
//! unlimited, and the failure is logged). A check never waits longer than its deadline.
//!
//! # Configuring
//!
//! ```
//! use std::time::Duration;
//! use mcp_runtime::prelude::*;
//! use mcp_runtime::rate_limit::RateLimit;
//!
//! /// Says hello.
//! #[tool]
//! async fn hello() -> ToolResult<String> {
//!     Ok("hello".into())
//! }
//!
//! /// Says goodbye.
//! #[tool]
//! async fn goodbye() -> ToolResult<String> {
//!     Ok("goodbye".into())
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::builder(Implementation::new("limited", "1.0"))
//!     .tools(tools![hello, goodbye])
//!     // Every tool: 60 calls a minute per principal.
//!     .rate_limit(RateLimit::per_minute(60))
//!     // `goodbye`: 10 calls per 30 seconds per principal instead.
//!     .tool_rate_limit("goodbye", RateLimit::new(10, Duration::from_secs(30)))
//!     .build()?;
//! # let _ = server;
//! # Ok(())
//! # }
//! ```
//!
//! Limits also read from text (`"60/min"`, `"10/30s"`, `"1000/h"`; see [`RateLimit`]'s
//! `FromStr`), as notes-example's `--rate-limit` and `--tool-rate-limit` flags do.
//!
//! Why not in [`HttpConfig`](crate::transport::HttpConfig): a limit set at the HTTP edge
//! would not hold for stdio or the in-process client, and would not know the principal's
//! tool before the body is parsed. Limits are the core's policy, set on the builder; the HTTP
//! edge only maps the refusal to 429.

mod memory;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use sha2::{Digest, Sha256};

pub use memory::MemoryRateLimitStore;

use crate::replay::redact;

/// How long one check may wait for the store unless
/// [`ServerBuilder::rate_limit_deadline`](crate::server::ServerBuilder::rate_limit_deadline) says
/// otherwise.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(2);

/// The longest window a [`RateLimit`] accepts: one day.
pub const MAX_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// At most `limit` calls per `window`, per principal and tool.
///
/// The window is a whole number of seconds, 1 s to [`MAX_WINDOW`] (a fraction is rounded up);
/// the limit is at least 1 call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateLimit {
    limit: u32,
    window_secs: u32,
}

impl RateLimit {
    /// `limit` calls (at least 1) per `window` (rounded up to whole seconds, clamped to
    /// 1 s ..= [`MAX_WINDOW`]).
    pub fn new(limit: u32, window: Duration) -> Self {
        let mut secs = window.as_secs();
        if window.subsec_nanos() > 0 {
            secs = secs.saturating_add(1);
        }
        let secs = secs.clamp(1, MAX_WINDOW.as_secs());
        Self {
            limit: limit.max(1),
            window_secs: u32::try_from(secs).unwrap_or(u32::MAX),
        }
    }

    /// `limit` calls per second.
    pub fn per_second(limit: u32) -> Self {
        Self::new(limit, Duration::from_secs(1))
    }

    /// `limit` calls per minute.
    pub fn per_minute(limit: u32) -> Self {
        Self::new(limit, Duration::from_secs(60))
    }

    /// `limit` calls per hour.
    pub fn per_hour(limit: u32) -> Self {
        Self::new(limit, Duration::from_secs(3600))
    }

    /// Calls allowed per window.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// The window.
    pub fn window(&self) -> Duration {
        Duration::from_secs(u64::from(self.window_secs))
    }
}

impl fmt::Display for RateLimit {
    /// `60/min`, `10/30s`, `5/h`: what [`FromStr`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.window_secs {
            1 => write!(f, "{}/s", self.limit),
            60 => write!(f, "{}/min", self.limit),
            3600 => write!(f, "{}/h", self.limit),
            86_400 => write!(f, "{}/day", self.limit),
            secs => write!(f, "{}/{secs}s", self.limit),
        }
    }
}

/// Why a rate limit's text did not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "rate limit `{text}` not understood: {hint}; write CALLS/WINDOW, e.g. `60/min`, `10/30s`, `1000/h` (windows: s, min, h, day, optionally with a count such as 5min; at most 1 day)"
)]
pub struct ParseRateLimitError {
    text: String,
    hint: &'static str,
}

impl FromStr for RateLimit {
    type Err = ParseRateLimitError;

    /// Reads `CALLS/WINDOW`: CALLS a positive integer, WINDOW a unit (`s`, `sec`, `second`,
    /// `m`, `min`, `minute`, `h`, `hour`, `d`, `day`; plurals too) optionally preceded by a
    /// count (`30s`, `5min`), at most one day. Spaces around the parts are ignored.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = |hint| ParseRateLimitError {
            text: text.chars().take(64).collect(),
            hint,
        };
        let (calls, window) = text.split_once('/').ok_or_else(|| err("no `/`"))?;
        let calls: u32 = calls
            .trim()
            .parse()
            .ok()
            .filter(|c| *c > 0)
            .ok_or_else(|| err("CALLS must be a whole number from 1 to 4294967295"))?;
        let window = window.trim();
        let digits = window.find(|c: char| !c.is_ascii_digit()).unwrap_or(0);
        let (count, unit) = window.split_at(digits);
        let count: u64 = if count.is_empty() {
            1
        } else {
            count
                .parse()
                .ok()
                .filter(|c| *c > 0)
                .ok_or_else(|| err("the window's count must be a positive whole number"))?
        };
        let unit_secs = match unit.trim().to_ascii_lowercase().as_str() {
            "s" | "sec" | "secs" | "second" | "seconds" => 1,
            "m" | "min" | "mins" | "minute" | "minutes" => 60,
            "h" | "hr" | "hour" | "hours" => 3600,
            "d" | "day" | "days" => 86_400,
            _ => return Err(err("unknown window unit")),
        };
        let secs = count
            .checked_mul(unit_secs)
            .filter(|s| *s <= MAX_WINDOW.as_secs())
            .ok_or_else(|| err("the window is longer than one day"))?;
        Ok(Self::new(calls, Duration::from_secs(secs)))
    }
}

/// What a server does when its [`RateLimitStore`] fails or misses the check's deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum StoreFailure {
    /// Fail closed (the default): refuse the call with `-32603`,
    /// `data: {"reason": "rate_limit_store_unavailable", "retryable": true}`; nothing runs.
    #[default]
    Refuse,
    /// Fail open: run the call as if it had no limit, and log the failure.
    Allow,
}

/// The counter a call is counted under: a digest of (principal, tool, window length), so that
/// a store holds neither principal names nor unbounded keys, and limits of different window
/// lengths never share a counter.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateKey([u8; 16]);

impl RateKey {
    /// The key of `principal`'s calls of `tool` counted in windows of `window`.
    pub fn new(principal: &str, tool: &str, window: Duration) -> Self {
        let mut h = Sha256::new();
        h.update(b"mcp-rate-limit/v1\0");
        h.update((principal.len() as u64).to_be_bytes());
        h.update(principal.as_bytes());
        h.update((tool.len() as u64).to_be_bytes());
        h.update(tool.as_bytes());
        h.update(window.as_secs().to_be_bytes());
        let digest = h.finalize();
        let mut key = [0u8; 16];
        key.copy_from_slice(&digest[..16]);
        Self(key)
    }

    /// The key's 16 bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The key as 32 lower-case hex digits.
    pub fn hex(&self) -> String {
        use std::fmt::Write as _;
        self.0.iter().fold(String::with_capacity(32), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    }
}

impl fmt::Debug for RateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RateKey({})", self.hex())
    }
}

/// One counted call: the counter after it, and how long its window still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hit {
    /// Calls counted in the current window, this one included.
    pub count: u64,
    /// Time left until the window ends (and the counter starts again from zero).
    pub resets_in: Duration,
}

impl Hit {
    /// A hit: the counter is `count` and its window ends in `resets_in`.
    pub fn new(count: u64, resets_in: Duration) -> Self {
        Self { count, resets_in }
    }
}

/// Why a rate-limit store operation failed. Messages say what to fix; none contains
/// credentials.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RateLimitError {
    /// The memory store holds `capacity` counters of unfinished windows and refuses a new
    /// one rather than forget a live one (forgetting would reset someone's count).
    #[error(
        "rate-limit store is full ({capacity} live counters); raise its capacity (`memory:N`), shorten the windows, or use a shared store"
    )]
    Full {
        /// The configured capacity.
        capacity: usize,
    },
    /// The store's backend (its driver, its server, its file) failed.
    #[error("{store} rate-limit store: {context}: {}", crate::replay::error_chain(&**source))]
    Backend {
        /// The store's name ([`RateLimitStore::name`]).
        store: &'static str,
        /// What was being done.
        context: &'static str,
        /// The underlying error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// The store did not answer within the check's deadline.
    #[error(
        "rate-limit store gave no answer within {0:?}; check that its backend is reachable, or raise ServerBuilder::rate_limit_deadline"
    )]
    Timeout(Duration),
    /// A blocking worker task failed (runtime shutting down).
    #[error("rate-limit store worker task failed: {0}")]
    Worker(String),
    /// The specification passed to [`open_rate_limit_store`] names a store this build was
    /// compiled without.
    #[error("{store}: support not compiled in; enable the `{feature}` feature of mcp-runtime")]
    NotCompiledIn {
        /// The store kind the specification asked for.
        store: &'static str,
        /// The Cargo feature of mcp-runtime that provides it.
        feature: &'static str,
    },
    /// The specification passed to [`open_rate_limit_store`] is not understood.
    #[error("rate-limit store `{spec}` not understood: {hint}")]
    InvalidSpec {
        /// The specification with any password removed.
        spec: String,
        /// What to write instead.
        hint: &'static str,
    },
}

impl RateLimitError {
    /// A [`RateLimitError::Backend`] error of the store `store`.
    pub fn backend(
        store: &'static str,
        context: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        Self::Backend {
            store,
            context,
            source: source.into(),
        }
    }

    /// A stable short code for logs and metrics (for a backend error, the store's name).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Full { .. } => "full",
            Self::Backend { store, .. } => store,
            Self::Timeout(_) => "timeout",
            Self::Worker(_) => "worker",
            Self::NotCompiledIn { .. } => "not_compiled_in",
            Self::InvalidSpec { .. } => "invalid_spec",
        }
    }
}

/// Counters of calls per window, shared by every instance of a server that should enforce
/// one limit.
///
/// Object-safe; hold it as `Arc<dyn RateLimitStore>`. A store of your own implements
/// [`hit`](Self::hit) atomically (two instances counting the same key at once must get two
/// different counts) and should say its [`name`](Self::name). The server bounds every call
/// with its own deadline; a store should still not hold resources past it.
pub trait RateLimitStore: Send + Sync + fmt::Debug {
    /// A short name for errors and logs (`memory`, `sqlite`, `postgres`, `redis`). By default,
    /// the implementing type's name.
    fn name(&self) -> &'static str {
        std::any::type_name::<Self>()
    }

    /// Counts one call under `key` in the current window of length `window` (whole seconds,
    /// windows aligned to the Unix epoch on the store's clock), atomically across every
    /// instance sharing the store, and returns the count including this call with the time
    /// left in the window. A counter is forgotten once its window has ended.
    fn hit<'a>(
        &'a self,
        key: &'a RateKey,
        window: Duration,
    ) -> BoxFuture<'a, Result<Hit, RateLimitError>>;

    /// Checks that the store can be reached (the HTTP transport's `/readyz`). Default: `Ok`.
    fn ping(&self) -> BoxFuture<'_, Result<(), RateLimitError>> {
        Box::pin(async { Ok(()) })
    }
}

/// Opens a rate-limit store from the replay store's kind of specification, so that one
/// setting names one backend for claims, tasks and counters:
///
/// - `memory` or `memory:N`: [`MemoryRateLimitStore`] (one process; at most N live counters,
///   default [`MemoryRateLimitStore::DEFAULT_CAPACITY`]);
/// - `sqlite:PATH`: `sqlite::SqliteRateLimitStore` on that file (table `mcp_rate_limits`);
/// - `postgres://...`: `postgres::PostgresRateLimitStore` (table `mcp_rate_limits`);
/// - `redis://HOST:PORT/DB`: `redis::RedisRateLimitStore` (keys under `mcp:ratelimit`).
///
/// A backend not compiled in (features `sqlite`, `postgres`, `redis`) is an error naming the
/// feature.
pub async fn open_rate_limit_store(spec: &str) -> Result<Arc<dyn RateLimitStore>, RateLimitError> {
    match crate::backend::backend_for(spec) {
        Some(backend) => backend.rate_limit_store(spec.trim()).await,
        None => Err(RateLimitError::InvalidSpec {
            spec: redact(spec.trim()),
            hint: crate::backend::UNKNOWN_SCHEME,
        }),
    }
}

/// Milliseconds since the Unix epoch on the local clock (0 before 1970).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The window of length `window_secs` holding `now_ms`: its start and end, in Unix
/// milliseconds.
pub(crate) fn window_at(now_ms: u64, window_secs: u64) -> (u64, u64) {
    let len = window_secs.max(1).saturating_mul(1000);
    let start = now_ms - now_ms % len;
    (start, start.saturating_add(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_from_text_and_back() {
        let cases = [
            ("60/min", RateLimit::per_minute(60)),
            (" 10 / 30s ", RateLimit::new(10, Duration::from_secs(30))),
            ("1000/h", RateLimit::per_hour(1000)),
            ("5/second", RateLimit::per_second(5)),
            ("7/5MIN", RateLimit::new(7, Duration::from_secs(300))),
            ("2/day", RateLimit::new(2, MAX_WINDOW)),
            ("3/2hours", RateLimit::new(3, Duration::from_secs(7200))),
        ];
        for (text, want) in cases {
            let got: RateLimit = text.parse().unwrap();
            assert_eq!(got, want, "{text}");
            assert_eq!(got.to_string().parse::<RateLimit>().unwrap(), got, "{text}");
        }
        assert_eq!(RateLimit::per_minute(60).to_string(), "60/min");
        assert_eq!(
            RateLimit::new(10, Duration::from_secs(30)).to_string(),
            "10/30s"
        );
    }

    #[test]
    fn bad_text_says_what_to_write() {
        for bad in [
            "",
            "60",
            "0/min",
            "-1/min",
            "x/min",
            "60/",
            "60/fortnight",
            "60/0s",
            "1/2days",
            "60/min/s",
        ] {
            let err = bad.parse::<RateLimit>().unwrap_err().to_string();
            assert!(err.contains("e.g. `60/min`"), "{bad}: {err}");
        }
    }

    #[test]
    fn windows_are_whole_seconds_within_bounds_and_limits_positive() {
        let l = RateLimit::new(0, Duration::from_millis(1500));
        assert_eq!((l.limit(), l.window()), (1, Duration::from_secs(2)));
        assert_eq!(
            RateLimit::new(1, Duration::ZERO).window(),
            Duration::from_secs(1)
        );
        assert_eq!(
            RateLimit::new(1, Duration::from_secs(10 * 86_400)).window(),
            MAX_WINDOW
        );
    }

    #[test]
    fn keys_separate_principals_tools_and_windows() {
        let w = Duration::from_secs(60);
        let a = RateKey::new("alice", "t", w);
        assert_eq!(a, RateKey::new("alice", "t", w));
        assert_ne!(a, RateKey::new("bob", "t", w));
        assert_ne!(a, RateKey::new("alice", "u", w));
        assert_ne!(a, RateKey::new("alice", "t", Duration::from_secs(61)));
        // Length-prefixed: moving a byte from one part to the other changes the key.
        assert_ne!(RateKey::new("ab", "c", w), RateKey::new("a", "bc", w));
        assert_eq!(a.hex().len(), 32);
    }

    #[test]
    fn windows_align_to_the_epoch() {
        assert_eq!(window_at(125_000, 60), (120_000, 180_000));
        assert_eq!(window_at(120_000, 60), (120_000, 180_000));
        assert_eq!(window_at(999, 1), (0, 1000));
    }

    #[tokio::test]
    async fn open_specs_and_errors() {
        let store = open_rate_limit_store("memory:4").await.unwrap();
        let key = RateKey::new("p", "t", Duration::from_secs(60));
        let hit = store.hit(&key, Duration::from_secs(60)).await.unwrap();
        assert_eq!(hit.count, 1);
        for bad in ["", "mysql://u:hunter2@x/db", "memory:0", "sqlite:"] {
            let err = open_rate_limit_store(bad).await.unwrap_err();
            assert_eq!(err.reason(), "invalid_spec", "{bad}");
            assert!(!err.to_string().contains("hunter2"));
        }
    }
}
