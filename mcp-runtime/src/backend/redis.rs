//! Redis (feature `redis`): every store it backs, for a fleet that already runs Redis.
//!
//! | store | type | default key prefix |
//! |---|---|---|
//! | one-time claims and recorded outcomes | [`RedisReplayStore`] | `mcp:replay` |
//! | tasks | [`RedisTaskStore`] | `mcp:tasks` |
//! | rate-limit windows | [`RedisRateLimitStore`] | `mcp:ratelimit` |
//!
//! URL-mode links have no Redis store (use PostgreSQL or SQLite for them). Store URLs
//! `redis://[USER:PASSWORD@]HOST:PORT/DB` open them through the
//! [backend registry](crate::backend). Each store keeps one multiplexed connection, reopened
//! after a connection error, and gives every command a deadline (5 s by default) that is the
//! only one: the driver's own shorter response timeout is off, so a slow answer is waited out
//! rather than reported as a failure while the command lands later. Durable only as far as
//! Redis persists: run it with `appendonly yes`.

mod conn;
mod rate_limit;
mod replay;
mod tasks;

pub use conn::COMMAND_TIMEOUT;
pub use rate_limit::RedisRateLimitStore;
pub use replay::RedisReplayStore;
pub use tasks::RedisTaskStore;

/// The name of every Redis store ([`ReplayStore::name`](crate::replay::ReplayStore::name) and
/// the like), as metrics and errors show it.
pub const NAME: &str = "redis";
