//! PostgreSQL (feature `postgres`): every store it backs, for a fleet of instances sharing one
//! database.
//!
//! | store | type | default table |
//! |---|---|---|
//! | one-time claims and recorded outcomes | [`PostgresReplayStore`] | `mcp_replay_nonces` |
//! | tasks | [`PostgresTaskStore`] | `mcp_tasks` |
//! | rate-limit windows | [`PostgresRateLimitStore`] | `mcp_rate_limits` |
//! | URL-mode links | [`PostgresLinkStore`] | `mcp_url_links` |
//!
//! Store URLs `postgres://USER[:PASSWORD]@HOST[:PORT]/DB` (or `postgresql://`) open them
//! through the [backend registry](crate::backend). Each store opens a pool of at most 16
//! connections, without TLS: run it on a trusted network or a local socket. Tables are created
//! on first use under an advisory lock ([`setup_schema`], also yours for your own tables).

mod conn;
mod links;
mod rate_limit;
mod replay;
mod tasks;

/// The connection pool the stores use (for application tables in the same database).
pub use deadpool_postgres;
/// The PostgreSQL driver the stores use (for [`tx_work`]).
pub use tokio_postgres;

pub use conn::{SCHEMA_SETUP_DEADLINE, SchemaSetupError, describe, setup_schema};
pub use links::PostgresLinkStore;
pub use rate_limit::PostgresRateLimitStore;
pub use replay::{PostgresReplayStore, tx_work};
pub use tasks::PostgresTaskStore;

/// The name of every PostgreSQL store ([`ReplayStore::name`](crate::replay::ReplayStore::name)
/// and the like), as metrics and errors show it.
pub const NAME: &str = "postgres";
