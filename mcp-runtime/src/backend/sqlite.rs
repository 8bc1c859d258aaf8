//! SQLite (feature `sqlite`): every store it backs, in one file shared by the processes of one
//! host.
//!
//! | store | type | table |
//! |---|---|---|
//! | one-time claims and recorded outcomes | [`SqliteReplayStore`] | `replay_nonces` |
//! | tasks | [`SqliteTaskStore`] | `mcp_tasks` |
//! | rate-limit windows | [`SqliteRateLimitStore`] | `mcp_rate_limits` |
//! | URL-mode links | [`SqliteLinkStore`] | `mcp_url_links` |
//!
//! Store URLs `sqlite:PATH` (or `sqlite://PATH`) open them through the
//! [backend registry](crate::backend); every store may share one file, the table names do not
//! collide. Each opens its file in WAL mode with a 10 s busy timeout, waiting out other
//! processes opening a fresh file at the same moment, and runs its blocking calls on Tokio's
//! blocking pool (so it needs a Tokio runtime). SQLite is built in (bundled): no system
//! library is needed.

mod conn;
mod links;
mod rate_limit;
mod replay;
mod tasks;

/// The SQLite binding the stores use (for [`tx_work`] and tables of your own).
pub use rusqlite;

pub use links::SqliteLinkStore;
pub use rate_limit::SqliteRateLimitStore;
pub use replay::{GROUP_COMMIT_ENV, SchemaTooNew, SqliteOptions, SqliteReplayStore, tx_work};
pub use tasks::SqliteTaskStore;

/// The name of every SQLite store ([`ReplayStore::name`](crate::replay::ReplayStore::name) and
/// the like), as metrics and errors show it.
pub const NAME: &str = "sqlite";
