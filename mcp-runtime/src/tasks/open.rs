//! [`open_task_store`]: a task store from the same spec string as the replay store's.

use std::sync::Arc;

use super::{MemoryTaskStore, TaskStore, TaskStoreError};

/// Opens the task store named by `spec`, written as for
/// [`replay::open_store`](crate::replay::open_store), so that one setting puts a server's
/// replay claims and its tasks in the same backend: `memory` (or `memory:N`, at most N live
/// tasks), `sqlite:PATH` (table `mcp_tasks`, beside the replay table in the same file),
/// `postgres://...` (table `mcp_tasks`) or `redis://...` (keys under `mcp:tasks`). A backend not
/// compiled in (features `sqlite`, `postgres`, `redis`) is an error naming the feature.
pub async fn open_task_store(spec: &str) -> Result<Arc<dyn TaskStore>, TaskStoreError> {
    let spec = spec.trim();
    let invalid = |hint: &'static str| TaskStoreError::InvalidSpec {
        spec: crate::replay::redact(spec),
        hint,
    };
    if spec == "memory" {
        return Ok(Arc::new(MemoryTaskStore::default()));
    }
    if let Some(capacity) = spec.strip_prefix("memory:") {
        let capacity: usize = capacity
            .parse()
            .ok()
            .filter(|c| *c > 0)
            .ok_or_else(|| invalid("write `memory` or `memory:N` with N a positive integer"))?;
        return Ok(Arc::new(MemoryTaskStore::new(capacity)));
    }
    if let Some(path) = spec.strip_prefix("sqlite:") {
        let path = path.strip_prefix("//").unwrap_or(path);
        if path.is_empty() {
            return Err(invalid(
                "write `sqlite:PATH`, e.g. `sqlite:/var/lib/mcp/state.db`",
            ));
        }
        #[cfg(feature = "sqlite")]
        return Ok(Arc::new(super::sqlite::SqliteTaskStore::open(path).await?));
        #[cfg(not(feature = "sqlite"))]
        return Err(TaskStoreError::NotCompiledIn("sqlite"));
    }
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        #[cfg(feature = "postgres")]
        return Ok(Arc::new(
            super::postgres::PostgresTaskStore::connect(spec).await?,
        ));
        #[cfg(not(feature = "postgres"))]
        return Err(TaskStoreError::NotCompiledIn("postgres"));
    }
    if spec.starts_with("redis://") {
        #[cfg(feature = "redis")]
        return Ok(Arc::new(super::redis::RedisTaskStore::connect(spec).await?));
        #[cfg(not(feature = "redis"))]
        return Err(TaskStoreError::NotCompiledIn("redis"));
    }
    Err(invalid(
        "expected `memory`, `memory:N`, `sqlite:PATH`, `postgres://USER@HOST:PORT/DB` or `redis://HOST:PORT/DB`",
    ))
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
