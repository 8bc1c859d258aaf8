//! Redis task store, against `redis://127.0.0.1:6379/0` (override with `MCP_TEST_REDIS_URL`):
//! two stores on one prefix behave as two hosts of a fleet. Without a reachable server the
//! test prints `skipped: ...` and passes, unless `MCP_REQUIRE_REDIS` is set.
#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcp_runtime::backend::redis::RedisTaskStore;
use mcp_runtime::tasks::{TaskLimits, TaskRecord, TaskStore, TaskStoreError, now_ms};
use mcp_types::TaskStatus;
use tasks_support::limits;

mod tasks_support;

fn url() -> String {
    std::env::var("MCP_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".to_owned())
}

fn record(id: &str, owner: &str, status: TaskStatus, expires_ms: u64) -> TaskRecord {
    TaskRecord {
        result: Some(serde_json::json!({"content": [], "structuredContent": {}})),
        ..tasks_support::record(id, owner, status, expires_ms)
    }
}

async fn store(prefix: &str) -> Option<RedisTaskStore> {
    match RedisTaskStore::connect_with_prefix(&url(), prefix).await {
        Ok(s) => Some(s),
        Err(e) => {
            assert!(
                std::env::var_os("MCP_REQUIRE_REDIS").is_none(),
                "MCP_REQUIRE_REDIS is set but Redis at {} is unreachable: {e}",
                url()
            );
            println!("skipped: no Redis at {}: {e}", url());
            None
        }
    }
}

#[tokio::test]
async fn two_hosts_share_tasks_and_terminal_tasks_stay_final() {
    let mut r = [0u8; 4];
    getrandom::fill(&mut r).unwrap();
    let prefix = format!(
        "mcp:test:tasks:{}:{:08x}",
        std::process::id(),
        u32::from_le_bytes(r)
    );
    let Some(a) = store(&prefix).await else {
        return;
    };
    let b = store(&prefix).await.unwrap();
    let later = now_ms() + 60_000;

    a.create(record("t1", "alice", TaskStatus::Working, later))
        .await
        .unwrap();
    assert_eq!(
        b.get("t1", "alice").await.unwrap().unwrap(),
        record("t1", "alice", TaskStatus::Working, later)
    );
    assert!(b.get("t1", "mallory").await.unwrap().is_none());
    assert!(matches!(
        b.create(record("t1", "alice", TaskStatus::Working, later))
            .await,
        Err(TaskStoreError::Exists(_))
    ));
    let write = |status| record("t1", "alice", status, later).next_revision();
    let theft = record("t1", "mallory", TaskStatus::Failed, later).next_revision();
    assert!(!b.update(theft).await.unwrap());
    assert!(b.update(write(TaskStatus::Cancelled)).await.unwrap());
    assert!(!a.update(write(TaskStatus::Completed)).await.unwrap());
    let late = write(TaskStatus::Completed).next_revision();
    assert!(!a.update(late).await.unwrap());
    assert_eq!(
        a.get("t1", "alice").await.unwrap().unwrap().status,
        TaskStatus::Cancelled
    );
    // Redis expires the key itself at the task's expiry.
    a.create(record("old", "alice", TaskStatus::Working, 5))
        .await
        .unwrap();
    assert!(a.get("old", "alice").await.unwrap().is_none());
}

/// A store on a fresh prefix, with `limits`; `None` when Redis is unreachable.
async fn limited(limits: TaskLimits) -> Option<RedisTaskStore> {
    let mut r = [0u8; 4];
    getrandom::fill(&mut r).unwrap();
    let prefix = format!(
        "mcp:test:tasks:{}:{:08x}",
        std::process::id(),
        u32::from_le_bytes(r)
    );
    Some(store(&prefix).await?.with_limits(limits))
}

#[tokio::test]
async fn bobs_completed_task_survives_alice_creating_more_than_the_total() {
    let Some(store) = limited(TaskLimits::new(10, 5)).await else {
        return;
    };
    limits::others_cannot_evict(&store, 25, 5, now_ms() + 60_000).await;
}

#[tokio::test]
async fn a_principal_at_its_share_is_refused_when_all_its_tasks_run() {
    let Some(store) = limited(TaskLimits::new(100, 3)).await else {
        return;
    };
    limits::share_refuses_when_all_are_live(&store, 3, now_ms() + 60_000).await;
}

#[tokio::test]
async fn a_full_store_refuses_newcomers_and_evicts_only_the_creators_own() {
    let Some(store) = limited(TaskLimits::new(4, 3)).await else {
        return;
    };
    limits::total_cap_refuses_and_evicts_only_the_creators_own(&store, now_ms() + 60_000).await;
}

#[tokio::test]
async fn expired_tasks_are_purged_and_do_not_count() {
    let Some(store) = limited(TaskLimits::new(100, 2)).await else {
        return;
    };
    limits::expired_tasks_do_not_count(&store, 2, now_ms() + 60_000).await;
}
