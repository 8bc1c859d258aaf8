//! The typed client driving task-mode tools (`Client::call_tool_as_task`, `ToolTask`):
//! the short flow, input rounds inside a task (automatic and by hand), cancellation, the
//! wait's deadline, a failed task, plain answers, MRTR before the task, and HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code fails loudly by design

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_runtime::client::{Client, ClientError, InProcess, InputHandlers};
use mcp_runtime::prelude::*;
use mcp_types::{
    ElicitContentValue, ElicitRequestFormParams, ElicitResult, ErrorObject, InputResponses,
    TaskStatus,
};

#[args]
struct ExportArgs {
    /// How many items to bundle
    items: u32,
}

/// Bundles items slowly.
#[tool(read_only, task)]
async fn export(ctx: &mut RequestContext, args: ExportArgs) -> ToolResult<String> {
    for done in 0..args.items {
        ctx.progress(
            u64::from(done),
            Some(u64::from(args.items)),
            Some("bundling"),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(format!("bundle of {}", args.items))
}

/// Whether `slow` saw its cancellation.
#[derive(Clone, Default)]
struct Stopped(Arc<AtomicBool>);

/// Runs until cancelled (or a minute).
#[tool(task)]
async fn slow(ctx: &mut RequestContext, State(stopped): State<Stopped>) -> ToolResult<String> {
    tokio::select! {
        () = ctx.cancelled() => {
            stopped.0.store(true, Ordering::SeqCst);
            Err(HandlerError::tool("stopped"))
        }
        () = tokio::time::sleep(Duration::from_secs(60)) => Ok("late".into()),
    }
}

#[derive(ElicitForm)]
struct Confirm {
    /// Export everything?
    sure: bool,
}

/// Asks inside the task before it exports.
#[tool(task, requires(form_elicitation))]
async fn careful_export(ctx: &mut RequestContext) -> ToolResult<String> {
    match ctx
        .elicit::<Confirm>("confirm", "Export everything?", ())
        .await?
    {
        Elicitation::Accepted(c) if c.sure => Ok("exported".into()),
        _ => Ok("not exported".into()),
    }
}

/// Asks by plain MRTR first, then becomes a task once a pass keeps running.
#[tool(task, task_start = "after_input", requires(form_elicitation))]
async fn confirm_then_export(ctx: &mut RequestContext) -> ToolResult<String> {
    let Elicitation::Accepted(c) = ctx.elicit::<Confirm>("confirm", "Export?", ()).await? else {
        return Ok("not exported".into());
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    Ok(format!("exported: {}", c.sure))
}

/// Fails with a protocol error.
#[tool(task)]
async fn broken() -> ToolResult<String> {
    Err(HandlerError::protocol(ErrorObject::internal_error(
        "the disk is gone",
    )))
}

/// Not a task tool.
#[tool]
async fn hello() -> ToolResult<String> {
    Ok("hello".into())
}

fn server() -> Server {
    Server::builder(Implementation::new("tasks", "0.0.0"))
        .tools(tools![
            export,
            slow,
            careful_export,
            confirm_then_export,
            broken,
            hello
        ])
        .state(Stopped::default())
        .build()
        .unwrap()
}

/// Answers every form with `sure: true`.
fn sure() -> InputHandlers {
    InputHandlers::default().on_form(|_: ElicitRequestFormParams| async {
        let mut content = mcp_types::ElicitContent::new();
        content.insert("sure".into(), ElicitContentValue::Boolean(true));
        ElicitResult::accept(Some(content))
    })
}

#[tokio::test]
async fn a_task_flow_in_five_statements() -> Result<(), Box<dyn std::error::Error>> {
    let client = Client::in_process(server(), Principal::new("me"));
    let mut task = client
        .call_tool_as_task("export", serde_json::json!({"items": 3}))
        .await?;
    let result = task.wait(Duration::from_secs(10)).await?;
    assert_eq!(result.text(), "bundle of 3");
    Ok(())
}

#[tokio::test]
async fn the_task_is_polled_until_it_completes() {
    let client = Client::in_process(server(), Principal::new("me"));
    let mut task = client
        .call_tool_as_task("export", serde_json::json!({"items": 20}))
        .await
        .unwrap();
    assert_eq!(task.tool(), "export");
    assert_eq!(task.id().map(str::len), Some(32));
    assert_eq!(task.status(), TaskStatus::Working);
    assert!(task.result().is_none());
    let result = task.wait(Duration::from_secs(10)).await.unwrap();
    assert_eq!(result.text(), "bundle of 20");
    assert_eq!(task.status(), TaskStatus::Completed);
    assert_eq!(task.result().unwrap().text(), "bundle of 20");
    // Waiting again answers from what it has.
    assert_eq!(
        task.wait(Duration::from_millis(1)).await.unwrap().text(),
        "bundle of 20"
    );
}

#[tokio::test]
async fn input_inside_a_task_is_answered_by_the_handlers() {
    let client = Client::builder(InProcess::new(server(), Principal::new("me")))
        .handlers(sure())
        .build();
    let mut task = client
        .call_tool_as_task("careful_export", ())
        .await
        .unwrap();
    assert!(task.id().is_some());
    let result = task.wait(Duration::from_secs(10)).await.unwrap();
    assert_eq!(result.text(), "exported");
}

#[tokio::test]
async fn input_inside_a_task_can_be_answered_by_hand() {
    let client = Client::in_process(server(), Principal::new("me"));
    let mut task = client
        .call_tool_as_task("careful_export", ())
        .await
        .unwrap();
    // No form handler: the wait says so, and the task keeps waiting for its input.
    let err = task.wait(Duration::from_secs(10)).await.unwrap_err();
    assert!(matches!(err, ClientError::NoHandler { .. }), "{err}");
    assert_eq!(task.status(), TaskStatus::InputRequired);
    let keys: Vec<&String> = task
        .input_requests()
        .unwrap()
        .iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(keys, ["confirm"]);
    let no = InputResponses::new()
        .with("confirm", ElicitResult::decline())
        .unwrap();
    task.answer(no).await.unwrap();
    let result = task.wait(Duration::from_secs(10)).await.unwrap();
    assert_eq!(result.text(), "not exported");
}

#[tokio::test]
async fn a_cancelled_task_stops_its_handler() {
    let stopped = Stopped::default();
    let server = Server::builder(Implementation::new("tasks", "0.0.0"))
        .tools(tools![slow])
        .state(stopped.clone())
        .build()
        .unwrap();
    let client = Client::in_process(server, Principal::new("me"));
    let mut task = client.call_tool_as_task("slow", ()).await.unwrap();
    assert_eq!(task.cancel().await.unwrap(), TaskStatus::Cancelled);
    let err = task.wait(Duration::from_secs(5)).await.unwrap_err();
    assert!(matches!(err, ClientError::TaskCancelled { .. }), "{err}");
    // The handler saw its cancellation token fire.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !stopped.0.load(Ordering::SeqCst) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the handler never stopped"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn the_wait_ends_at_its_deadline_and_the_task_goes_on() {
    let client = Client::in_process(server(), Principal::new("me"));
    let mut task = client.call_tool_as_task("slow", ()).await.unwrap();
    let started = tokio::time::Instant::now();
    let err = task.wait(Duration::from_millis(200)).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    let ClientError::TaskDeadline { status, after, .. } = &err else {
        panic!("expected a deadline: {err}");
    };
    assert_eq!(*status, TaskStatus::Working);
    assert_eq!(*after, Duration::from_millis(200));
    assert!(err.to_string().contains("cancel"), "{err}");
    // Still running; cancelling it ends it.
    assert_eq!(task.refresh().await.unwrap(), TaskStatus::Working);
    assert_eq!(task.cancel().await.unwrap(), TaskStatus::Cancelled);
}

#[tokio::test]
async fn a_failed_task_returns_the_servers_error() {
    let client = Client::in_process(server(), Principal::new("me"));
    let mut task = client.call_tool_as_task("broken", ()).await.unwrap();
    let err = task.wait(Duration::from_secs(10)).await.unwrap_err();
    assert!(matches!(err, ClientError::TaskFailed { .. }), "{err}");
    assert!(err.to_string().contains("the disk is gone"), "{err}");
    assert_eq!(err.code().map(|c| c.code()), Some(-32603));
}

#[tokio::test]
async fn a_tool_without_tasks_answers_plainly() {
    let client = Client::in_process(server(), Principal::new("me"));
    let mut task = client.call_tool_as_task("hello", ()).await.unwrap();
    assert_eq!(task.id(), None);
    assert_eq!(task.status(), TaskStatus::Completed);
    assert_eq!(
        task.wait(Duration::from_secs(1)).await.unwrap().text(),
        "hello"
    );
    assert_eq!(task.cancel().await.unwrap(), TaskStatus::Completed);
}

#[tokio::test]
async fn input_before_the_task_is_answered_by_mrtr_rounds() {
    let client = Client::builder(InProcess::new(server(), Principal::new("me")))
        .handlers(sure())
        .build();
    let mut task = client
        .call_tool_as_task("confirm_then_export", ())
        .await
        .unwrap();
    assert!(
        task.id().is_some(),
        "the confirmed pass keeps running: a task"
    );
    let result = task.wait(Duration::from_secs(10)).await.unwrap();
    assert_eq!(result.text(), "exported: true");
}

#[tokio::test]
async fn a_step_call_that_starts_a_task_says_what_to_use() {
    let client = Client::in_process(server(), Principal::new("me")).with_tasks();
    let err = client
        .call("export", serde_json::json!({"items": 1}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("call_tool_as_task"), "{err}");
}

#[cfg(feature = "http")]
#[tokio::test]
async fn tasks_over_http_carry_their_id_in_mcp_name() {
    use mcp_runtime::client::HttpTransport;
    use mcp_runtime::service::McpService;
    use mcp_runtime::transport::{BearerTokens, HttpConfig, HttpServer};

    let tokens = BearerTokens::parse("alice s3cret-token-0123456789abcdefghijklmnop\n").unwrap();
    let service: Arc<dyn McpService> = Arc::new(server());
    let config = HttpConfig::default().with_bind("127.0.0.1:0".parse().unwrap());
    let bound = HttpServer::new(service, Arc::new(tokens))
        .with_config(config)
        .bind()
        .await
        .unwrap();
    let url = format!("http://{}/mcp", bound.local_addr().unwrap());
    let stop = tokio_util::sync::CancellationToken::new();
    let stopped = stop.clone();
    let serving = tokio::spawn(bound.serve_with_shutdown(async move { stopped.cancelled().await }));

    let client = Client::builder(
        HttpTransport::new(&url)
            .unwrap()
            .bearer("s3cret-token-0123456789abcdefghijklmnop"),
    )
    .handlers(sure())
    .timeout(Duration::from_secs(10))
    .build();
    let mut task = client
        .call_tool_as_task("careful_export", ())
        .await
        .unwrap();
    assert!(task.id().is_some());
    // tasks/get and tasks/update pass the edge's Mcp-Name check.
    assert_eq!(
        task.wait(Duration::from_secs(10)).await.unwrap().text(),
        "exported"
    );
    let mut slow = client.call_tool_as_task("slow", ()).await.unwrap();
    assert_eq!(slow.cancel().await.unwrap(), TaskStatus::Cancelled);

    stop.cancel();
    let _ = serving.await;
}
