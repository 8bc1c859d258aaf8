//! The SQLite task store: two handles on one file behave as two instances of a fleet.
#![cfg(feature = "sqlite")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcp_runtime::backend::sqlite::SqliteTaskStore;
use mcp_runtime::tasks::{TaskRecord, TaskStore, TaskStoreError, now_ms};
use mcp_types::TaskStatus;

mod tasks_support;

fn record(id: &str, owner: &str, status: TaskStatus, expires_ms: u64) -> TaskRecord {
    TaskRecord {
        result: Some(serde_json::json!({"content": []})),
        resume_state: Some("sealed".into()),
        ..tasks_support::record(id, owner, status, expires_ms)
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

    let write = |status| record("t1", "alice", status, later).next_revision();
    assert!(b.update(write(TaskStatus::Cancelled)).await.unwrap());
    // Both read revision 0: the first instance's completion loses.
    assert!(!a.update(write(TaskStatus::Completed)).await.unwrap());
    // Terminal rows never change, even at the right revision.
    let late = write(TaskStatus::Completed).next_revision();
    assert!(!a.update(late).await.unwrap());
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

mod limits {
    use mcp_runtime::backend::sqlite::SqliteTaskStore;
    use mcp_runtime::backend::sqlite::rusqlite;
    use mcp_runtime::tasks::{TaskLimits, TaskStore, now_ms};
    use mcp_types::TaskStatus;

    use super::tasks_support::{limits, record};

    async fn open(dir: &tempfile::TempDir, limits: Option<TaskLimits>) -> SqliteTaskStore {
        let store = SqliteTaskStore::open(dir.path().join("tasks.db"))
            .await
            .unwrap();
        match limits {
            Some(l) => store.with_limits(l),
            None => store,
        }
    }

    /// With the default limits (10,000 tasks, 32 per principal) one principal's tasks no
    /// longer pile up: before, the SQLite store kept every task until its expiry.
    #[tokio::test]
    async fn default_limits_bound_one_principal_and_spare_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, None).await;
        limits::others_cannot_evict(&store, 40, 32, now_ms() + 60_000).await;
    }

    #[tokio::test]
    async fn bobs_completed_task_survives_alice_creating_more_than_the_total() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, Some(TaskLimits::new(10, 5))).await;
        limits::others_cannot_evict(&store, 25, 5, now_ms() + 60_000).await;
    }

    #[tokio::test]
    async fn a_principal_at_its_share_is_refused_when_all_its_tasks_run() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, Some(TaskLimits::new(100, 3))).await;
        limits::share_refuses_when_all_are_live(&store, 3, now_ms() + 60_000).await;
    }

    /// Two processes on one file share the limits: the second sees the first's tasks.
    #[tokio::test]
    async fn a_full_store_refuses_newcomers_across_processes() {
        let dir = tempfile::tempdir().unwrap();
        let a = open(&dir, Some(TaskLimits::new(4, 3))).await;
        let b = open(&dir, Some(TaskLimits::new(4, 3))).await;
        let later = now_ms() + 60_000;
        limits::total_cap_refuses_and_evicts_only_the_creators_own(&b, later).await;
        let full = a
            .create(record("x", "xavier", TaskStatus::Working, later))
            .await;
        assert!(
            matches!(full, Err(mcp_runtime::tasks::TaskStoreError::Full(4))),
            "{full:?}"
        );
    }

    #[tokio::test]
    async fn expired_tasks_are_purged_and_do_not_count() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, Some(TaskLimits::new(100, 2))).await;
        limits::expired_tasks_do_not_count(&store, 2, now_ms() + 60_000).await;
    }

    /// A file written before the limits (no owner index) opens, keeps its tasks, and gains
    /// the index; its tasks count from then on.
    #[tokio::test]
    async fn a_file_from_before_the_limits_opens_and_counts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.db");
        let later = now_ms() + 60_000;
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE mcp_tasks (
                     task_id TEXT NOT NULL PRIMARY KEY, owner TEXT NOT NULL,
                     terminal INTEGER NOT NULL, revision INTEGER NOT NULL,
                     expires_ms INTEGER NOT NULL, record TEXT NOT NULL
                 ) WITHOUT ROWID;
                 CREATE INDEX mcp_tasks_expires_ms ON mcp_tasks (expires_ms);",
            )
            .unwrap();
            let old = record("old", "alice", TaskStatus::Working, later);
            conn.execute(
                "INSERT INTO mcp_tasks VALUES (?1, ?2, 0, 0, ?3, ?4)",
                rusqlite::params![
                    "old",
                    "alice",
                    i64::try_from(later).unwrap(),
                    serde_json::to_string(&old).unwrap()
                ],
            )
            .unwrap();
        }
        let store = SqliteTaskStore::open(&path)
            .await
            .unwrap()
            .with_limits(TaskLimits::new(10, 1));
        assert!(store.get("old", "alice").await.unwrap().is_some());
        assert!(
            store
                .create(record("new", "alice", TaskStatus::Working, later))
                .await
                .is_err()
        );
        let conn = rusqlite::Connection::open(&path).unwrap();
        let indexed: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'mcp_tasks_owner'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(indexed, 1);
    }
}

mod fleet {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use mcp_runtime::backend::sqlite::SqliteTaskStore;
    use mcp_runtime::prelude::*;
    use mcp_runtime::state::StateKeyring;
    use mcp_runtime::tasks::TaskSupport;
    use serde_json::{Value, json};

    /// A name.
    #[derive(ElicitForm)]
    struct NameForm {
        /// Name
        name: String,
    }

    /// Asks a name inside the task.
    #[tool(read_only, requires(form_elicitation))]
    async fn ask(ctx: &mut RequestContext) -> Result<String, HandlerError> {
        match ctx.elicit::<NameForm>("who", "Who?", ()).await? {
            Elicitation::Accepted(f) => Ok(format!("hi {}", f.name)),
            _ => Ok("nobody".to_owned()),
        }
    }

    fn instance(store: &SqliteTaskStore, keys: &StateKeyring) -> Server {
        Server::builder(Implementation::new("fleet", "1.0"))
            .tools(tools![ask].task("ask", TaskSupport::Optional))
            .task_store(Arc::new(store.clone()))
            .state_keys(keys.clone())
            .build()
            .unwrap()
    }

    fn req(method: &str, params: Value) -> Vec<u8> {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {
                "elicitation": {"form": {}},
                "extensions": {"io.modelcontextprotocol/tasks": {}}
            }
        });
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .unwrap()
    }

    async fn send(server: &Server, bytes: Vec<u8>) -> Value {
        let who = Principal::new("alice");
        serde_json::from_slice(&server.handle_bytes(&bytes, &who).await.unwrap()).unwrap()
    }

    async fn until(server: &Server, id: &str, status: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let r = send(server, req("tasks/get", json!({"taskId": id}))).await;
            if r["result"]["status"] == status {
                return r["result"].clone();
            }
            assert!(Instant::now() < deadline, "never {status}: {r}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// One instance creates the task, another answers its input round and runs it to the
    /// end: everything the second needs is in the shared store (and the shared keys).
    #[tokio::test]
    async fn any_instance_answers_for_a_task_another_created() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteTaskStore::open(dir.path().join("fleet.db"))
            .await
            .unwrap();
        let keys = StateKeyring::generate().unwrap();
        let (a, b) = (instance(&store, &keys), instance(&store, &keys));

        let created = send(
            &a,
            req("tools/call", json!({"name": "ask", "arguments": {}})),
        )
        .await;
        let id = created["result"]["taskId"].as_str().unwrap().to_owned();
        let waiting = until(&b, &id, "input_required").await;
        assert!(waiting["inputRequests"]["who"].is_object(), "{waiting}");

        let answer = json!({"who": {"action": "accept", "content": {"name": "Kim"}}});
        let ack = send(
            &b,
            req(
                "tasks/update",
                json!({"taskId": id, "inputResponses": answer}),
            ),
        )
        .await;
        assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
        let done = until(&a, &id, "completed").await;
        assert_eq!(done["result"]["content"][0]["text"], "hi Kim");
    }

    static SAW_CANCEL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    /// Waits, reporting no progress, until its task is cancelled.
    #[tool(read_only)]
    async fn quiet(ctx: &mut RequestContext) -> Result<String, HandlerError> {
        ctx.cancelled().await;
        SAW_CANCEL.store(true, std::sync::atomic::Ordering::SeqCst);
        Ok("stopped".to_owned())
    }

    /// Finding (issue 34): a task cancelled through one instance reached a handler running on
    /// another only at its next progress report, so a quiet handler ran on to its end. The
    /// instance running it now reads the task every `task_cancel_check`.
    #[tokio::test]
    async fn a_cancel_through_another_instance_reaches_a_quiet_handler_in_bounded_time() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteTaskStore::open(dir.path().join("cancel.db"))
            .await
            .unwrap();
        let keys = StateKeyring::generate().unwrap();
        let instance = || {
            Server::builder(Implementation::new("fleet", "1.0"))
                .tools(tools![quiet].task("quiet", TaskSupport::Required))
                .task_store(Arc::new(store.clone()))
                .state_keys(keys.clone())
                .task_cancel_check(Duration::from_millis(100))
                .build()
                .unwrap()
        };
        let (a, b) = (instance(), instance());
        let created = send(
            &a,
            req("tools/call", json!({"name": "quiet", "arguments": {}})),
        )
        .await;
        let id = created["result"]["taskId"].as_str().unwrap().to_owned();
        until(&b, &id, "working").await;
        let cancelled = send(&b, req("tasks/cancel", json!({"taskId": id}))).await;
        assert!(cancelled.get("error").is_none(), "{cancelled}");
        // Bounded: a few checks, far below "never".
        let deadline = Instant::now() + Duration::from_secs(5);
        while !SAW_CANCEL.load(std::sync::atomic::Ordering::SeqCst) {
            assert!(
                Instant::now() < deadline,
                "the handler on the other instance never saw the cancel"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let task = send(&a, req("tasks/get", json!({"taskId": id}))).await;
        assert_eq!(task["result"]["status"], "cancelled", "{task}");
    }
}
