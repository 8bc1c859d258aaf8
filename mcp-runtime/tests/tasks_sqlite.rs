//! The SQLite task store: two handles on one file behave as two instances of a fleet.
#![cfg(feature = "sqlite")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcp_runtime::tasks::sqlite::SqliteTaskStore;
use mcp_runtime::tasks::{TaskRecord, TaskStore, TaskStoreError, now_ms};
use mcp_types::TaskStatus;

fn record(id: &str, owner: &str, status: TaskStatus, expires_ms: u64) -> TaskRecord {
    TaskRecord {
        task_id: id.into(),
        owner: owner.into(),
        tool: "t".into(),
        status,
        status_message: None,
        created_ms: 1,
        updated_ms: 1,
        expires_ms,
        result: Some(serde_json::json!({"content": []})),
        error: None,
        input_requests: None,
        collected: Default::default(),
        resume_state: Some("sealed".into()),
        arguments: Default::default(),
        capabilities: None,
    }
}

#[tokio::test]
async fn a_task_created_by_one_instance_is_read_and_ended_by_another() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let a = SqliteTaskStore::open(&path).await.unwrap();
    let b = SqliteTaskStore::open(&path).await.unwrap();
    let later = now_ms() + 60_000;

    a.create(record("t1", "alice", TaskStatus::Working, later))
        .await
        .unwrap();
    let seen = b.get("t1", "alice").await.unwrap().unwrap();
    assert_eq!(seen, record("t1", "alice", TaskStatus::Working, later));
    assert!(b.get("t1", "mallory").await.unwrap().is_none());
    assert!(matches!(
        b.create(record("t1", "alice", TaskStatus::Working, later))
            .await,
        Err(TaskStoreError::Exists(_))
    ));

    assert!(
        b.update(record("t1", "alice", TaskStatus::Cancelled, later))
            .await
            .unwrap()
    );
    // The late completion on the first instance loses: terminal rows never change.
    assert!(
        !a.update(record("t1", "alice", TaskStatus::Completed, later))
            .await
            .unwrap()
    );
    assert_eq!(
        a.get("t1", "alice").await.unwrap().unwrap().status,
        TaskStatus::Cancelled
    );
}

#[tokio::test]
async fn expired_tasks_are_never_returned_and_are_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteTaskStore::open(dir.path().join("t.db"))
        .await
        .unwrap();
    store
        .create(record("old", "alice", TaskStatus::Working, 5))
        .await
        .unwrap();
    assert!(store.get("old", "alice").await.unwrap().is_none());
    // The next create prunes it, so its id is free again.
    store
        .create(record(
            "new",
            "alice",
            TaskStatus::Working,
            now_ms() + 60_000,
        ))
        .await
        .unwrap();
    store
        .create(record(
            "old",
            "alice",
            TaskStatus::Working,
            now_ms() + 60_000,
        ))
        .await
        .unwrap();
}
