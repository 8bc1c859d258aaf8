//! [`open_task_store`]: a task store from the same spec string as the replay store's.

use std::sync::Arc;

use super::{TaskStore, TaskStoreError};

/// Opens the task store named by `spec`, written as for
/// [`replay::open_store`](crate::replay::open_store), so that one setting puts a server's
/// replay claims and its tasks in the same backend: `memory` (or `memory:N`, at most N live
/// tasks), `sqlite:PATH` (table `mcp_tasks`, beside the replay table in the same file),
/// `postgres://...` (table `mcp_tasks`) or `redis://...` (keys under `mcp:tasks`). A backend not
/// compiled in (features `sqlite`, `postgres`, `redis`) is an error naming the feature; a
/// scheme registered with [`backend::register`](crate::backend::register) opens its backend's
/// task store.
pub async fn open_task_store(spec: &str) -> Result<Arc<dyn TaskStore>, TaskStoreError> {
    match crate::backend::backend_for(spec) {
        Some(backend) => backend.task_store(spec.trim()).await,
        None => Err(TaskStoreError::InvalidSpec {
            spec: crate::replay::redact(spec.trim()),
            hint: crate::backend::UNKNOWN_SCHEME,
        }),
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
