//! What a task's handler sees, over the stdio transport: `#[tool(task ..)]` opts a tool in
//! (no `.task(..)` call), `tasks/cancel` reaches the handler's cancellation token, and its
//! progress becomes the task's `statusMessage`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod core_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use core_support::*;
use mcp_runtime::extract::Cancellation;
use mcp_runtime::prelude::*;
use mcp_runtime::service::McpService;
use mcp_runtime::tasks::TaskSupport;
use mcp_runtime::tool::TaskStart;
use mcp_runtime::tool::ToolHandler;
use mcp_runtime::transport::stdio::{self, StdioConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

/// Set by `watchful` once its cancellation token fired and it stopped.
#[derive(Clone, Default)]
struct SawCancel(Arc<AtomicBool>);

/// Reports progress, then works until cancelled (or 30 s, which fails the test).
#[tool(read_only, task)]
async fn watchful(
    ctx: &mut RequestContext,
    cancel: Cancellation,
    State(saw): State<SawCancel>,
) -> Result<String, HandlerError> {
    ctx.progress(1, Some(3), Some("step one")).await;
    tokio::select! {
        () = cancel.cancelled() => {
            assert!(ctx.is_cancelled(), "the context and the extractor share the token");
            saw.0.store(true, Ordering::SeqCst);
            Err(HandlerError::tool("stopped: cancelled"))
        }
        () = tokio::time::sleep(Duration::from_secs(30)) => Ok("never cancelled".to_owned()),
    }
}

/// Only as a task.
#[tool(read_only, task = "required")]
async fn only_task() -> String {
    "done".to_owned()
}

/// A task once its input is in.
#[tool(read_only, task, task_start = "after_input")]
async fn later() -> String {
    "later".to_owned()
}

#[test]
fn the_attribute_sets_support_and_start() {
    // The generated handler structs (the functions' names in the type namespace).
    let (watchful, only_task, later) = (watchful {}, only_task {}, later {});
    assert_eq!(watchful.task_support(), TaskSupport::Optional);
    assert_eq!(watchful.task_start(), TaskStart::OnCall);
    assert_eq!(only_task.task_support(), TaskSupport::Required);
    assert_eq!(later.task_support(), TaskSupport::Optional);
    assert_eq!(later.task_start(), TaskStart::AfterInput);
    assert_eq!(
        later.descriptor().extra["execution"],
        json!({"taskSupport": "optional"})
    );
    // A builder registration still wraps (and may override) the attribute's choice.
    let router = tools![only_task].task("only_task", TaskSupport::Optional);
    assert_eq!(
        router.get("only_task").unwrap().task_support(),
        TaskSupport::Optional
    );
}

/// A client on the stdio transport: one line out, one line back (no notifications are sent
/// on calls without a progressToken).
struct Client {
    out: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
    serving: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Client {
    fn start(saw: SawCancel) -> Self {
        let server = Server::builder(Implementation::new("tasks-handler", "1"))
            .tools(tools![watchful, only_task, later])
            .state(saw)
            .build()
            .unwrap();
        let service: Arc<dyn McpService> = Arc::new(server);
        let (client_in, server_out) = tokio::io::duplex(64 * 1024);
        let (server_in, out) = tokio::io::duplex(64 * 1024);
        let serving = tokio::spawn(stdio::serve(
            service,
            Principal::new("local"),
            server_in,
            server_out,
            StdioConfig::default(),
        ));
        Self {
            out,
            lines: BufReader::new(client_in).lines(),
            serving,
        }
    }

    async fn roundtrip(&mut self, body: Vec<u8>) -> Value {
        self.out.write_all(&body).await.unwrap();
        self.out.write_all(b"\n").await.unwrap();
        let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
            .await
            .expect("an answer within 20 s")
            .unwrap()
            .unwrap();
        serde_json::from_str(&line).unwrap()
    }

    async fn task(&mut self, id: i64, method: &str, task_id: &str) -> Value {
        let params = json!({"_meta": meta(tasks_caps()), "taskId": task_id});
        self.roundtrip(request(id, method, params)).await
    }

    /// Polls `tasks/get` until `done` holds (bounded: a hang fails the test).
    async fn until(&mut self, task_id: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let r = self.task(90, "tasks/get", task_id).await;
            if done(&r["result"]) {
                return r["result"].clone();
            }
            assert!(Instant::now() < deadline, "task never got there: {r}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn stop(self) {
        drop(self.out);
        self.serving.await.unwrap().unwrap();
    }
}

fn tasks_caps() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

#[tokio::test]
async fn cancel_reaches_the_handler_and_progress_reaches_the_task() {
    let saw = SawCancel::default();
    let mut client = Client::start(saw.clone());
    let created = client
        .roundtrip(call(1, "watchful", json!({}), tasks_caps()))
        .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();

    // The handler's progress shows as the task's statusMessage while it works.
    let working = client
        .until(&task_id, |t| t["statusMessage"] == "step one (1/3)")
        .await;
    assert_eq!(working["status"], "working", "{working}");
    assert!(!saw.0.load(Ordering::SeqCst));

    let ack = client.task(2, "tasks/cancel", &task_id).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    // The handler saw its token fire and returned on its own (within the grace).
    let deadline = Instant::now() + Duration::from_secs(20);
    while !saw.0.load(Ordering::SeqCst) {
        assert!(
            Instant::now() < deadline,
            "the handler never saw the cancellation"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Its late result does not overwrite the cancellation.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cancelled = client.task(3, "tasks/get", &task_id).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert!(cancelled["result"].get("result").is_none(), "{cancelled}");
    client.stop().await;
}

#[tokio::test]
async fn a_required_task_tool_is_refused_without_the_extension_and_listed_as_required() {
    let mut client = Client::start(SawCancel::default());
    let refused = client
        .roundtrip(call(1, "only_task", json!({}), json!({})))
        .await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"],
        tasks_caps()["extensions"],
        "{refused}"
    );
    let listed = client
        .roundtrip(request(2, "tools/list", json!({"_meta": meta(json!({}))})))
        .await;
    let tools = listed["result"]["tools"].as_array().unwrap();
    let only = tools.iter().find(|t| t["name"] == "only_task").unwrap();
    assert_eq!(only["execution"]["taskSupport"], "required", "{only}");
    let created = client
        .roundtrip(call(3, "only_task", json!({}), tasks_caps()))
        .await;
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let done = client.until(&task_id, |t| t["status"] == "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "done", "{done}");
    client.stop().await;
}
