//! [`open_task_store`]: a task store from the same spec string as the replay store's.

use std::sync::Arc;

use super::{MemoryTaskStore, TaskStore, TaskStoreError};
use crate::replay::StoreSpec;

/// Opens the task store named by `spec`, written as for
/// [`replay::open_store`](crate::replay::open_store), so that one setting puts a server's
/// replay claims and its tasks in the same backend: `memory` (or `memory:N`, at most N live
/// tasks), `sqlite:PATH` (table `mcp_tasks`, beside the replay table in the same file),
/// `postgres://...` (table `mcp_tasks`) or `redis://...` (keys under `mcp:tasks`). A backend not
/// compiled in (features `sqlite`, `postgres`, `redis`) is an error naming the feature.
// A backend that is not compiled in leaves its path or URL unused.
#[cfg_attr(
    not(all(feature = "sqlite", feature = "postgres", feature = "redis")),
    allow(unused_variables)
)]
pub async fn open_task_store(spec: &str) -> Result<Arc<dyn TaskStore>, TaskStoreError> {
    let parsed = StoreSpec::parse(spec).map_err(|hint| TaskStoreError::InvalidSpec {
        spec: crate::replay::redact(spec.trim()),
        hint,
    })?;
    match parsed {
        StoreSpec::Memory(None) => Ok(Arc::new(MemoryTaskStore::default())),
        StoreSpec::Memory(Some(capacity)) => Ok(Arc::new(MemoryTaskStore::new(capacity))),
        StoreSpec::Sqlite(path) => {
            #[cfg(feature = "sqlite")]
            return Ok(Arc::new(super::sqlite::SqliteTaskStore::open(path).await?));
            #[cfg(not(feature = "sqlite"))]
            return Err(TaskStoreError::NotCompiledIn("sqlite"));
        }
        StoreSpec::Postgres(url) => {
            #[cfg(feature = "postgres")]
            return Ok(Arc::new(
                super::postgres::PostgresTaskStore::connect(url).await?,
            ));
            #[cfg(not(feature = "postgres"))]
            return Err(TaskStoreError::NotCompiledIn("postgres"));
        }
        StoreSpec::Redis(url) => {
            #[cfg(feature = "redis")]
            return Ok(Arc::new(super::redis::RedisTaskStore::connect(url).await?));
            #[cfg(not(feature = "redis"))]
            return Err(TaskStoreError::NotCompiledIn("redis"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bad_specs_say_what_to_write_and_hide_passwords() {
        for bad in [
            "",
            "mysql://u:secret@x/db",
            "memory:0",
            "memory:lots",
            "sqlite:",
        ] {
            let err = open_task_store(bad).await.unwrap_err();
            let message = err.to_string();
            assert!(
                matches!(err, TaskStoreError::InvalidSpec { .. }),
                "{bad}: {message}"
            );
            assert!(!message.contains("secret"), "{message}");
        }
        assert!(open_task_store("memory:3").await.is_ok());
    }
}
