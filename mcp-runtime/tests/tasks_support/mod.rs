//! What the task-store tests share: a task record with every optional part empty. Each store's
//! test fills in the parts it wants to see round-trip (`TaskRecord { result: .., ..record(..) }`).
#![allow(dead_code)]

use mcp_runtime::tasks::TaskRecord;
use mcp_types::TaskStatus;

/// Task `id` of `owner`, of tool `t`, created and updated at 1 ms, at revision 0.
pub fn record(id: &str, owner: &str, status: TaskStatus, expires_ms: u64) -> TaskRecord {
    TaskRecord {
        task_id: id.into(),
        owner: owner.into(),
        tool: "t".into(),
        status,
        status_message: None,
        created_ms: 1,
        updated_ms: 1,
        expires_ms,
        result: None,
        error: None,
        input_requests: None,
        collected: Default::default(),
        resume_state: None,
        arguments: Default::default(),
        capabilities: None,
        revision: 0,
    }
}

/// The limit scenarios every store must pass, written against the `TaskStore` trait alone
/// (each store's test builds the store with the limits the scenario names).
pub mod limits {
    use mcp_runtime::tasks::{TaskStore, TaskStoreError};
    use mcp_types::TaskStatus;

    use super::record;

    /// `owner`'s task `id`, run as the runtime runs one: created working, then completed.
    /// Created at `order` and expiring `order` ms after `expires`, as tasks created one after
    /// another with one TTL do (so "the oldest" is well defined).
    pub async fn finished(store: &dyn TaskStore, id: &str, owner: &str, expires: u64, order: u64) {
        let expires = expires.saturating_add(order);
        let mut working = record(id, owner, TaskStatus::Working, expires);
        (working.created_ms, working.updated_ms) = (order, order);
        store.create(working.clone()).await.unwrap();
        let mut done = working.next_revision();
        done.status = TaskStatus::Completed;
        done.result = Some(serde_json::json!({"content": []}));
        assert!(store.update(done).await.unwrap(), "completing {id}");
    }

    /// Bob's completed task is still there after alice created (and finished) `n` tasks,
    /// more than the store's total limit; alice keeps at most `share` of hers, the latest.
    pub async fn others_cannot_evict(store: &dyn TaskStore, n: u64, share: u64, expires: u64) {
        finished(store, "bob-1", "bob", expires, 1).await;
        for i in 0..n {
            finished(store, &format!("alice-{i}"), "alice", expires, 2 + i).await;
        }
        assert!(
            store.get("bob-1", "bob").await.unwrap().is_some(),
            "alice's tasks evicted bob's completed task"
        );
        let mut kept = Vec::new();
        for i in 0..n {
            if store
                .get(&format!("alice-{i}"), "alice")
                .await
                .unwrap()
                .is_some()
            {
                kept.push(i);
            }
        }
        let latest: Vec<u64> = (n.saturating_sub(share)..n).collect();
        assert_eq!(kept, latest, "alice keeps her latest {share} tasks");
    }

    /// A principal holding `share` tasks that are all still running is refused (nothing
    /// stored), others are not; once one of its tasks finishes, its next task replaces it.
    pub async fn share_refuses_when_all_are_live(store: &dyn TaskStore, share: u64, expires: u64) {
        for i in 0..share {
            let id = format!("a-{i}");
            store
                .create(record(&id, "alice", TaskStatus::Working, expires))
                .await
                .unwrap();
        }
        let refused = store
            .create(record("a-more", "alice", TaskStatus::Working, expires))
            .await;
        assert!(
            matches!(refused, Err(TaskStoreError::PrincipalFull(n)) if n as u64 == share),
            "{refused:?}"
        );
        assert!(store.get("a-more", "alice").await.unwrap().is_none());
        let err = TaskStoreError::PrincipalFull(3).to_error_object();
        assert_eq!(err.code().code(), -32600);
        assert_eq!(err.data().unwrap()["retryable"], true);
        // Another principal is not affected.
        store
            .create(record("b-1", "bob", TaskStatus::Working, expires))
            .await
            .unwrap();
        // Alice's first task ends: her next one takes its place.
        let mut done = record("a-0", "alice", TaskStatus::Completed, expires).next_revision();
        done.result = Some(serde_json::json!({"content": []}));
        assert!(store.update(done).await.unwrap());
        store
            .create(record("a-more", "alice", TaskStatus::Working, expires))
            .await
            .unwrap();
        assert!(store.get("a-0", "alice").await.unwrap().is_none());
        assert!(store.get("a-1", "alice").await.unwrap().is_some());
        assert!(store.get("a-more", "alice").await.unwrap().is_some());
    }

    /// A store limited to 4 tasks, 3 per principal: when full, a newcomer is refused (no one
    /// else's task gives way, finished or not), and a holder makes room from its own.
    pub async fn total_cap_refuses_and_evicts_only_the_creators_own(
        store: &dyn TaskStore,
        expires: u64,
    ) {
        for i in 0..3 {
            store
                .create(record(
                    &format!("a-{i}"),
                    "alice",
                    TaskStatus::Working,
                    expires,
                ))
                .await
                .unwrap();
        }
        finished(store, "b-0", "bob", expires, 1).await;
        let full = store
            .create(record("c-0", "carol", TaskStatus::Working, expires))
            .await;
        assert!(matches!(full, Err(TaskStoreError::Full(4))), "{full:?}");
        assert_eq!(
            TaskStoreError::Full(4).to_error_object().data().unwrap()["retryable"],
            true
        );
        assert!(store.get("b-0", "bob").await.unwrap().is_some());
        // Alice's are all running and she is at her share: refused, saying so.
        let full = store
            .create(record("a-3", "alice", TaskStatus::Working, expires))
            .await;
        assert!(
            matches!(full, Err(TaskStoreError::PrincipalFull(3))),
            "{full:?}"
        );
        // Bob gives up his own finished task for his next one.
        store
            .create(record("b-1", "bob", TaskStatus::Working, expires))
            .await
            .unwrap();
        assert!(store.get("b-0", "bob").await.unwrap().is_none());
        for i in 0..3 {
            assert!(
                store
                    .get(&format!("a-{i}"), "alice")
                    .await
                    .unwrap()
                    .is_some()
            );
        }
    }

    /// Expired tasks are purged on create and count against no limit (a store limited to
    /// `share` per principal).
    pub async fn expired_tasks_do_not_count(store: &dyn TaskStore, share: u64, expires: u64) {
        for i in 0..share {
            store
                .create(record(&format!("old-{i}"), "alice", TaskStatus::Working, 5))
                .await
                .unwrap();
        }
        for i in 0..share {
            store
                .create(record(
                    &format!("new-{i}"),
                    "alice",
                    TaskStatus::Working,
                    expires,
                ))
                .await
                .unwrap();
        }
        assert!(store.get("old-0", "alice").await.unwrap().is_none());
    }
}
