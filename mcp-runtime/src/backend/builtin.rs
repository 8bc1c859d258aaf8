//! The built-in backends: memory, SQLite, PostgreSQL and Redis. Each answers its own schemes
//! and opens every store its database backs; one compiled out still answers its scheme, with
//! an error naming the feature to enable.

// A backend that is not compiled in leaves its path or URL unused.
#![cfg_attr(
    not(all(feature = "sqlite", feature = "postgres", feature = "redis")),
    allow(unused_variables)
)]

use std::sync::Arc;

use futures::future::BoxFuture;

use super::Backend;
use crate::rate_limit::{MemoryRateLimitStore, RateLimitError, RateLimitStore};
use crate::replay::{MemoryReplayStore, ReplayError, ReplayStore, StoreSpec, redact};
use crate::tasks::{MemoryTaskStore, TaskStore, TaskStoreError};
use crate::url_elicitation::{LinkLimits, LinkStore, LinkStoreError, MemoryLinkStore};

/// Every built-in backend, registered before any other.
pub(super) fn all() -> Vec<Arc<dyn Backend>> {
    [
        ("memory", &["memory"][..]),
        ("sqlite", &["sqlite"]),
        ("postgres", &["postgres", "postgresql"]),
        ("redis", &["redis"]),
    ]
    .into_iter()
    .map(|(name, schemes)| Arc::new(Builtin { name, schemes }) as Arc<dyn Backend>)
    .collect()
}

/// A built-in backend: its scheme already says which database, so one reader of the spec
/// ([`StoreSpec`]) serves them all.
#[derive(Debug)]
struct Builtin {
    name: &'static str,
    schemes: &'static [&'static str],
}

impl Backend for Builtin {
    fn name(&self) -> &'static str {
        self.name
    }

    fn schemes(&self) -> &'static [&'static str] {
        self.schemes
    }

    fn replay_store<'a>(
        &'a self,
        spec: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn ReplayStore>, ReplayError>> {
        Box::pin(async move {
            let parsed = StoreSpec::parse(spec).map_err(|hint| ReplayError::InvalidSpec {
                spec: redact(spec),
                hint,
            })?;
            let store: Arc<dyn ReplayStore> = match parsed {
                StoreSpec::Memory(capacity) => Arc::new(MemoryReplayStore::new(
                    capacity.unwrap_or(MemoryReplayStore::DEFAULT_CAPACITY),
                )),
                #[cfg(feature = "sqlite")]
                StoreSpec::Sqlite(path) => {
                    Arc::new(crate::backend::sqlite::SqliteReplayStore::open(path).await?)
                }
                #[cfg(feature = "postgres")]
                StoreSpec::Postgres(url) => {
                    Arc::new(crate::backend::postgres::PostgresReplayStore::connect(url).await?)
                }
                #[cfg(feature = "redis")]
                StoreSpec::Redis(url) => {
                    Arc::new(crate::backend::redis::RedisReplayStore::connect(url).await?)
                }
                #[allow(unreachable_patterns)]
                other => {
                    let feature = missing(other);
                    return Err(ReplayError::NotCompiledIn {
                        store: feature,
                        feature,
                    });
                }
            };
            Ok(store)
        })
    }

    fn task_store<'a>(
        &'a self,
        spec: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn TaskStore>, TaskStoreError>> {
        Box::pin(async move {
            let parsed = StoreSpec::parse(spec).map_err(|hint| TaskStoreError::InvalidSpec {
                spec: redact(spec),
                hint,
            })?;
            let store: Arc<dyn TaskStore> = match parsed {
                StoreSpec::Memory(None) => Arc::new(MemoryTaskStore::default()),
                StoreSpec::Memory(Some(capacity)) => Arc::new(MemoryTaskStore::new(capacity)),
                #[cfg(feature = "sqlite")]
                StoreSpec::Sqlite(path) => {
                    Arc::new(crate::backend::sqlite::SqliteTaskStore::open(path).await?)
                }
                #[cfg(feature = "postgres")]
                StoreSpec::Postgres(url) => {
                    Arc::new(crate::backend::postgres::PostgresTaskStore::connect(url).await?)
                }
                #[cfg(feature = "redis")]
                StoreSpec::Redis(url) => {
                    Arc::new(crate::backend::redis::RedisTaskStore::connect(url).await?)
                }
                #[allow(unreachable_patterns)]
                other => return Err(TaskStoreError::NotCompiledIn(missing(other))),
            };
            Ok(store)
        })
    }

    fn rate_limit_store<'a>(
        &'a self,
        spec: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn RateLimitStore>, RateLimitError>> {
        Box::pin(async move {
            let parsed = StoreSpec::parse(spec).map_err(|hint| RateLimitError::InvalidSpec {
                spec: redact(spec),
                hint,
            })?;
            let store: Arc<dyn RateLimitStore> = match parsed {
                StoreSpec::Memory(capacity) => Arc::new(MemoryRateLimitStore::new(
                    capacity.unwrap_or(MemoryRateLimitStore::DEFAULT_CAPACITY),
                )),
                #[cfg(feature = "sqlite")]
                StoreSpec::Sqlite(path) => {
                    Arc::new(crate::backend::sqlite::SqliteRateLimitStore::open(path).await?)
                }
                #[cfg(feature = "postgres")]
                StoreSpec::Postgres(url) => {
                    Arc::new(crate::backend::postgres::PostgresRateLimitStore::connect(url).await?)
                }
                #[cfg(feature = "redis")]
                StoreSpec::Redis(url) => {
                    Arc::new(crate::backend::redis::RedisRateLimitStore::connect(url).await?)
                }
                #[allow(unreachable_patterns)]
                other => {
                    let feature = missing(other);
                    return Err(RateLimitError::NotCompiledIn {
                        store: feature,
                        feature,
                    });
                }
            };
            Ok(store)
        })
    }

    fn link_store<'a>(
        &'a self,
        spec: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn LinkStore>, LinkStoreError>> {
        Box::pin(async move {
            let invalid = |hint| LinkStoreError::InvalidSpec {
                spec: redact(spec),
                hint,
            };
            let store: Arc<dyn LinkStore> = match StoreSpec::parse(spec).map_err(invalid)? {
                StoreSpec::Memory(None) => Arc::new(MemoryLinkStore::new()),
                StoreSpec::Memory(Some(capacity)) => Arc::new(MemoryLinkStore::with_limits(
                    LinkLimits::new(capacity, LinkLimits::DEFAULT_MAX_LINKS_PER_PRINCIPAL),
                )),
                StoreSpec::Redis(_) => {
                    return Err(invalid(
                        "there is no Redis link store; use `memory`, `sqlite:PATH` or `postgres://...` (or a LinkStore of your own)",
                    ));
                }
                #[cfg(feature = "sqlite")]
                StoreSpec::Sqlite(path) => {
                    Arc::new(crate::backend::sqlite::SqliteLinkStore::open(path).await?)
                }
                #[cfg(feature = "postgres")]
                StoreSpec::Postgres(url) => {
                    Arc::new(crate::backend::postgres::PostgresLinkStore::connect(url).await?)
                }
                #[allow(unreachable_patterns)]
                other => return Err(LinkStoreError::NotCompiledIn(missing(other))),
            };
            Ok(store)
        })
    }
}

/// The feature a spec's backend needs (for one that is compiled out).
#[cfg_attr(
    all(feature = "sqlite", feature = "postgres", feature = "redis"),
    allow(dead_code)
)]
fn missing(spec: StoreSpec<'_>) -> &'static str {
    match spec {
        StoreSpec::Memory(_) => "memory",
        StoreSpec::Sqlite(_) => "sqlite",
        StoreSpec::Postgres(_) => "postgres",
        StoreSpec::Redis(_) => "redis",
    }
}
