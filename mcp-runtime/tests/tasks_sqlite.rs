//! The SQLite task store: two handles on one file behave as two instances of a fleet.
#![cfg(feature = "sqlite")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcp_runtime::tasks::sqlite::SqliteTaskStore;
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

mod fleet {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use mcp_runtime::prelude::*;
    use mcp_runtime::state::StateKeyring;
    use mcp_runtime::tasks::TaskSupport;
    use mcp_runtime::tasks::sqlite::SqliteTaskStore;
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
}
