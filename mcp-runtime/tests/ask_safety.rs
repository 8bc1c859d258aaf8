//! Safe by construction: a question a handler asked is sent even when the handler swallows
//! the input-required signal; an ask the handler did not declare fails loudly (a server bug)
//! whatever the client declared; and a declared requirement refuses a client before any of
//! the handler's code runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use mcp_runtime::prelude::*;
use mcp_runtime::tool::IntoCallToolResult;
use mcp_runtime::tool::ToolHandler;
use mcp_types::CallToolResult;
use mcp_types::{
    ClientCapabilities, CreateMessageRequestParams, ErrorObject, InputSchema, JsonObject,
    SamplingMessage, Tool,
};
use serde_json::{Value, json};

mod log_capture;
use log_capture::{Capture, CaptureGuard, Format};

#[derive(ElicitForm)]
struct Confirm {
    /// Yes, do it
    confirm: bool,
}

/// Counts runs and side effects, so a test can tell what ran.
#[derive(Clone, Default)]
struct Counts {
    runs: Arc<AtomicUsize>,
    done: Arc<AtomicUsize>,
}

impl Counts {
    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
    fn done(&self) -> usize {
        self.done.load(Ordering::SeqCst)
    }
}

/// Swallows the signal with `if let`: on the first pass it would answer "nothing done".
#[tool(destructive, requires(form_elicitation))]
async fn delete_if_let(
    ctx: &mut RequestContext,
    State(counts): State<Counts>,
) -> Result<String, HandlerError> {
    if let Ok(Elicitation::Accepted(c)) = ctx.elicit::<Confirm>("confirm", "Sure?", ()).await
        && c.confirm
    {
        counts.done.fetch_add(1, Ordering::SeqCst);
        return Ok("deleted".into());
    }
    Ok("nothing done".into())
}

/// Swallows the signal with `unwrap_or`.
#[tool(destructive, requires(form_elicitation))]
async fn delete_unwrap_or(
    ctx: &mut RequestContext,
    State(counts): State<Counts>,
) -> Result<String, HandlerError> {
    match ctx
        .elicit::<Confirm>("confirm", "Sure?", ())
        .await
        .unwrap_or(Elicitation::Declined)
    {
        Elicitation::Accepted(c) if c.confirm => {
            counts.done.fetch_add(1, Ordering::SeqCst);
            Ok("deleted".into())
        }
        _ => Ok("nothing done".into()),
    }
}

/// Swallows the signal and fails with a tool-level error instead.
#[tool(destructive, requires(form_elicitation))]
async fn delete_or_fail(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    match ctx.elicit::<Confirm>("confirm", "Sure?", ()).await {
        Ok(Elicitation::Accepted(c)) if c.confirm => Ok("deleted".into()),
        _ => Err(HandlerError::tool("nothing done")),
    }
}

/// Registers with `try_elicit` and never calls `await_inputs`.
#[tool(destructive, requires(form_elicitation))]
async fn delete_without_await(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    match ctx.try_elicit::<Confirm>("confirm", "Sure?", ()).await? {
        Some(Elicitation::Accepted(c)) if c.confirm => Ok("deleted".into()),
        _ => Ok("nothing done".into()),
    }
}

/// Swallows the signal, then refuses the request with a protocol error: the refusal stands.
#[tool(destructive, requires(form_elicitation))]
async fn delete_or_refuse(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    match ctx.elicit::<Confirm>("confirm", "Sure?", ()).await {
        Ok(Elicitation::Accepted(_)) => Ok("deleted".into()),
        _ => Err(HandlerError::protocol(ErrorObject::invalid_params(
            "refused by the server",
        ))),
    }
}

/// A task that swallows the signal.
#[tool(destructive, task = "required", requires(form_elicitation))]
async fn delete_in_task(
    ctx: &mut RequestContext,
    State(counts): State<Counts>,
) -> Result<String, HandlerError> {
    let answer = ctx
        .elicit::<Confirm>("confirm", "Sure?", ())
        .await
        .unwrap_or(Elicitation::Cancelled);
    match answer {
        Elicitation::Accepted(c) if c.confirm => {
            counts.done.fetch_add(1, Ordering::SeqCst);
            Ok("deleted in a task".into())
        }
        _ => Ok("nothing done".into()),
    }
}

/// A prompt that swallows the signal.
#[prompt(requires(form_elicitation))]
async fn confirm_prompt(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    Ok(match ctx.elicit::<Confirm>("confirm", "Sure?", ()).await {
        Ok(Elicitation::Accepted(c)) if c.confirm => "confirmed".to_owned(),
        _ => "nothing confirmed".to_owned(),
    })
}

/// A resource that swallows the signal.
#[resource(uri = "mem://guarded", requires(form_elicitation))]
async fn guarded(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    Ok(
        match ctx.elicit::<Confirm>("confirm", "Show it?", ()).await {
            Ok(Elicitation::Accepted(c)) if c.confirm => "the contents".to_owned(),
            _ => "nothing shown".to_owned(),
        },
    )
}

/// Declares form elicitation, and counts its run before it asks.
#[tool(destructive, requires(form_elicitation))]
async fn declared_counting(
    ctx: &mut RequestContext,
    State(counts): State<Counts>,
) -> Result<String, HandlerError> {
    counts.runs.fetch_add(1, Ordering::SeqCst);
    match ctx.elicit::<Confirm>("confirm", "Sure?", ()).await? {
        Elicitation::Accepted(c) if c.confirm => Ok("deleted".into()),
        _ => Ok("kept".into()),
    }
}

/// Uses sampling only when the client has it.
#[tool(read_only, optional(sampling))]
async fn maybe_sample(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    if !ctx.client_capabilities().supports_sampling() {
        return Ok("no model to ask".into());
    }
    let ask = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 10);
    Ok(format!("model {}", ctx.sample("s", ask).await?.model))
}

/// Which note: one of the candidates the server holds when it asks.
#[derive(ElicitForm)]
struct PickNote {
    /// The note
    #[form(choices)]
    note: String,
}

/// The notes a pick offers; a test changes them between rounds.
#[derive(Clone, Default)]
struct Candidates(Arc<Mutex<Vec<String>>>);

impl Candidates {
    fn of(notes: &[&str]) -> Self {
        let candidates = Self::default();
        candidates.set(notes);
        candidates
    }
    fn set(&self, notes: &[&str]) {
        *self.0.lock().unwrap() = notes.iter().map(|n| (*n).to_owned()).collect();
    }
    fn get(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// The author's bug, in one pass: two forms registered under one key.
#[tool(destructive, requires(form_elicitation))]
async fn one_key_one_pass(
    ctx: &mut RequestContext,
    State(candidates): State<Candidates>,
) -> Result<String, HandlerError> {
    let pick = ctx
        .try_elicit::<PickNote>(
            "choice",
            "Which one?",
            PickNote::choices().note(candidates.get()),
        )
        .await?;
    let confirm = ctx.try_elicit::<Confirm>("choice", "Sure?", ()).await?;
    ctx.await_inputs()?;
    Ok(format!("{} {}", pick.is_some(), confirm.is_some()))
}

/// The author's bug, across rounds: the key of the pick reused for the confirmation.
#[tool(destructive, requires(form_elicitation))]
async fn one_key_two_rounds(
    ctx: &mut RequestContext,
    State(candidates): State<Candidates>,
) -> Result<String, HandlerError> {
    let choices = PickNote::choices().note(candidates.get());
    let Elicitation::Accepted(pick) = ctx
        .elicit::<PickNote>("choice", "Which one?", choices)
        .await?
    else {
        return Ok("nothing picked".into());
    };
    match ctx.elicit::<Confirm>("choice", "Sure?", ()).await? {
        Elicitation::Accepted(c) if c.confirm => Ok(format!("deleted {}", pick.note)),
        _ => Ok("kept".into()),
    }
}

/// The same, with the sampling request under the form's key: swallowed, still a server bug.
#[tool(requires(form_elicitation, sampling))]
async fn one_key_form_and_sampling(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    let _ = ctx.try_elicit::<Confirm>("ask", "Sure?", ()).await?;
    let ask = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 10);
    let sampled = ctx.try_sample("ask", ask).await.ok().flatten();
    Ok(format!("{}", sampled.is_some()))
}

/// Done right: one key per form; the candidates may change between rounds.
#[tool(destructive, requires(form_elicitation))]
async fn pick_then_confirm(
    ctx: &mut RequestContext,
    State(candidates): State<Candidates>,
) -> Result<String, HandlerError> {
    let choices = PickNote::choices().note(candidates.get());
    let Elicitation::Accepted(pick) = ctx
        .elicit::<PickNote>("choice", "Which one?", choices)
        .await?
    else {
        return Ok("nothing picked".into());
    };
    match ctx.elicit::<Confirm>("confirm", "Sure?", ()).await? {
        Elicitation::Accepted(c) if c.confirm => Ok(format!("deleted {}", pick.note)),
        _ => Ok("kept".into()),
    }
}

/// A hand-written tool that asks in the mode `arguments.mode` names without declaring any:
/// what `#[tool]` cannot see. It counts its runs before asking.
struct Undeclared(Tool, ClientCapabilities);

impl Default for Undeclared {
    fn default() -> Self {
        let Value::Object(o) = json!({"type": "object"}) else {
            unreachable!()
        };
        Self(
            Tool::new("undeclared", InputSchema::new(o).unwrap()),
            ClientCapabilities::none(),
        )
    }
}

/// A hand-written form whose `write_requested_schema` breaks its contract: it writes half a
/// schema.
struct HalfWritten;

impl ElicitForm for HalfWritten {
    type Choices = ();
    fn choices() {}
    fn requested_schema(_: &()) -> mcp_types::RequestedSchema {
        Confirm::requested_schema(&())
    }
    fn from_content(_: &JsonObject, _: &()) -> Result<Self, mcp_runtime::form::FormError> {
        Ok(Self)
    }
    fn write_requested_schema(_: &(), out: &mut Vec<u8>) {
        out.extend_from_slice(br#"{"type":"object","properties":"#);
    }
}

/// Asks the half-written form.
#[tool(requires(form_elicitation))]
async fn ask_half_written(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    match ctx.elicit::<HalfWritten>("half", "Sure?", ()).await? {
        Elicitation::Accepted(_) => Ok("answered".into()),
        Elicitation::Declined | Elicitation::Cancelled => Ok("not answered".into()),
    }
}

/// A helper that asks: a call `#[tool]` would not see.
async fn confirm_in_helper(ctx: &mut RequestContext) -> Result<bool, HandlerError> {
    Ok(matches!(
        ctx.elicit::<Confirm>("confirm", "Sure?", ()).await?,
        Elicitation::Accepted(Confirm { confirm: true })
    ))
}

impl ToolHandler for Undeclared {
    fn descriptor(&self) -> &Tool {
        &self.0
    }
    fn required_capabilities(&self) -> &ClientCapabilities {
        &self.1
    }
    fn call<'a>(
        &'a self,
        ctx: &'a mut RequestContext,
        args: JsonObject,
    ) -> BoxFuture<'a, Result<CallToolResult, HandlerError>> {
        Box::pin(async move {
            ctx.state::<Counts>()?.runs.fetch_add(1, Ordering::SeqCst);
            let text = match args.get("mode").and_then(Value::as_str).unwrap_or("") {
                "form" => format!("confirmed: {}", confirm_in_helper(ctx).await?),
                // The server-bug error swallowed too: the call still fails with it.
                "swallow" => format!(
                    "confirmed: {}",
                    confirm_in_helper(ctx).await.unwrap_or(false)
                ),
                "url" => {
                    let _ = ctx
                        .elicit_url("pay", "Pay here", "https://pay.example/x")
                        .await?;
                    "paid".to_owned()
                }
                "sampling" => {
                    let ask =
                        CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 10);
                    format!("model {}", ctx.sample("s", ask).await?.model)
                }
                "roots" => format!("{} roots", ctx.list_roots("r").await?.len()),
                _ => "asked nothing".to_owned(),
            };
            text.into_call_tool_result()
        })
    }
}

fn server() -> (Server, Counts) {
    server_with(Candidates::of(&["groceries", "todo"]))
}

/// The test server, offering `candidates` to pick from.
fn server_with(candidates: Candidates) -> (Server, Counts) {
    let counts = Counts::default();
    let server = Server::builder(Implementation::new("ask-safety", "1"))
        .tools(tools![
            delete_if_let,
            delete_unwrap_or,
            delete_or_fail,
            delete_without_await,
            delete_or_refuse,
            delete_in_task,
            declared_counting,
            maybe_sample,
            one_key_one_pass,
            one_key_two_rounds,
            one_key_form_and_sampling,
            pick_then_confirm,
            ask_half_written,
            Undeclared
        ])
        .prompts(prompts![confirm_prompt])
        .resources(resources![guarded])
        .state(counts.clone())
        .state(candidates)
        .build()
        .unwrap();
    (server, counts)
}

fn form() -> Value {
    json!({"elicitation": {"form": {}}})
}

/// Every capability a client can declare.
fn everything() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}, "context": {}}, "roots": {}})
}

fn with_tasks(mut caps: Value) -> Value {
    caps["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    caps
}

async fn send(server: &Server, method: &str, caps: Value, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
    });
    let body =
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .unwrap();
    let out = server
        .handle_bytes(&body, &Principal::new("alice"))
        .await
        .expect("a response");
    serde_json::from_slice(&out).unwrap()
}

async fn call(server: &Server, tool: &str, caps: Value, args: Value) -> Value {
    send(
        server,
        "tools/call",
        caps,
        json!({"name": tool, "arguments": args}),
    )
    .await
}

fn accept() -> Value {
    json!({"confirm": {"action": "accept", "content": {"confirm": true}}})
}

/// Checks `r` is the input-required answer asking the `Confirm` form under `confirm`, and
/// returns its state.
fn asks_confirm(r: &Value) -> String {
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    let request = &result["inputRequests"]["confirm"];
    assert_eq!(request["method"], "elicitation/create", "{r}");
    assert_eq!(
        request["params"]["requestedSchema"]["properties"]["confirm"]["type"], "boolean",
        "{r}"
    );
    result["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned()
}

/// Captures this test's own events at WARN and above (one subscriber for the whole binary).
fn capture() -> (Capture, CaptureGuard) {
    Capture::install(Format::Text, tracing::Level::WARN)
}

/// The first call asks although the tool swallowed the signal; the retry that accepts gets
/// the tool's real action.
async fn swallowed_then_acted(tool: &str) {
    let (server, counts) = server();
    let (capture, _guard) = capture();
    let first = call(&server, tool, form(), json!({})).await;
    let state = asks_confirm(&first);
    assert_eq!(counts.done(), 0);
    let log = capture.text();
    assert!(
        log.contains("WARN")
            && log.contains(&format!("tool `{tool}`"))
            && log.contains("`confirm`")
            && log.contains("with `?`"),
        "{log}"
    );
    let retry = send(
        &server,
        "tools/call",
        form(),
        json!({"name": tool, "arguments": {}, "requestState": state, "inputResponses": accept()}),
    )
    .await;
    assert_eq!(retry["result"]["content"][0]["text"], "deleted", "{retry}");
    assert_eq!(counts.done(), 1);
}

#[tokio::test]
async fn a_swallowed_if_let_still_asks_then_acts_on_the_answer() {
    swallowed_then_acted("delete_if_let").await;
}

#[tokio::test]
async fn a_swallowed_unwrap_or_still_asks_then_acts_on_the_answer() {
    swallowed_then_acted("delete_unwrap_or").await;
}

#[tokio::test]
async fn a_tool_error_after_a_swallowed_ask_still_asks() {
    let (server, _) = server();
    let first = call(&server, "delete_or_fail", form(), json!({})).await;
    let state = asks_confirm(&first);
    let retry = send(
        &server,
        "tools/call",
        form(),
        json!({"name": "delete_or_fail", "arguments": {}, "requestState": state,
               "inputResponses": accept()}),
    )
    .await;
    assert_eq!(retry["result"]["content"][0]["text"], "deleted", "{retry}");
}

#[tokio::test]
async fn a_try_elicit_without_await_inputs_still_asks() {
    let (server, _) = server();
    let first = call(&server, "delete_without_await", form(), json!({})).await;
    asks_confirm(&first);
}

#[tokio::test]
async fn a_protocol_error_after_an_ask_passes_through() {
    let (server, _) = server();
    let r = call(&server, "delete_or_refuse", form(), json!({})).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(r["error"]["message"], "refused by the server", "{r}");
}

#[tokio::test]
async fn a_swallowing_task_tool_ends_in_input_required() {
    let (server, counts) = server();
    let caps = with_tasks(form());
    let created = call(&server, "delete_in_task", caps.clone(), json!({})).await;
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    let poll = async |done: &dyn Fn(&Value) -> bool| -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let r = send(&server, "tasks/get", caps.clone(), json!({"taskId": id})).await;
            if done(&r["result"]) {
                return r["result"].clone();
            }
            assert!(Instant::now() < deadline, "the task never got there: {r}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let waiting = poll(&|t| t["status"] != "working").await;
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    assert_eq!(
        waiting["inputRequests"]["confirm"]["method"], "elicitation/create",
        "{waiting}"
    );
    assert_eq!(counts.done(), 0);
    let ack = send(
        &server,
        "tasks/update",
        caps.clone(),
        json!({"taskId": id, "inputResponses": accept()}),
    )
    .await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = poll(&|t| t["status"] != "working" && t["status"] != "input_required").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "deleted in a task");
    assert_eq!(counts.done(), 1);
}

#[tokio::test]
async fn a_swallowing_prompt_or_resource_still_asks() {
    let (server, _) = server();
    let r = send(
        &server,
        "prompts/get",
        form(),
        json!({"name": "confirm_prompt"}),
    )
    .await;
    let state = asks_confirm(&r);
    let r = send(
        &server,
        "prompts/get",
        form(),
        json!({"name": "confirm_prompt", "requestState": state, "inputResponses": accept()}),
    )
    .await;
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"], "confirmed",
        "{r}"
    );

    let r = send(
        &server,
        "resources/read",
        form(),
        json!({"uri": "mem://guarded"}),
    )
    .await;
    let state = asks_confirm(&r);
    let r = send(
        &server,
        "resources/read",
        form(),
        json!({"uri": "mem://guarded", "requestState": state, "inputResponses": accept()}),
    )
    .await;
    assert_eq!(r["result"]["contents"][0]["text"], "the contents", "{r}");
}

#[tokio::test]
async fn an_undeclared_ask_is_a_server_bug_even_for_a_fully_capable_client() {
    let (server, counts) = server();
    let (capture, _guard) = capture();
    for (mode, declare) in [
        ("form", "requires(form_elicitation)"),
        ("swallow", "requires(form_elicitation)"),
        ("url", "requires(url_elicitation)"),
        ("sampling", "requires(sampling)"),
        ("roots", "requires(roots)"),
    ] {
        let r = call(&server, "undeclared", everything(), json!({"mode": mode})).await;
        assert_eq!(r["error"]["code"], -32603, "{mode}: {r}");
        let message = r["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("server bug")
                && message.contains("tool `undeclared`")
                && message.contains(declare)
                && message.contains("ToolHandler::required_capabilities"),
            "{mode}: {message}"
        );
    }
    assert_eq!(counts.runs(), 5);
    let log = capture.text();
    assert_eq!(log.matches("ERROR").count(), 5, "{log}");
    assert!(log.contains("server bug: tool `undeclared`"), "{log}");
    // A call that asks nothing is not affected.
    let r = call(&server, "undeclared", everything(), json!({})).await;
    assert_eq!(r["result"]["content"][0]["text"], "asked nothing", "{r}");
}

#[tokio::test]
async fn a_declared_requirement_refuses_the_client_before_the_tool_runs() {
    let (server, counts) = server();
    for caps in [
        json!({}),
        json!({"elicitation": {"url": {}}}),
        json!({"sampling": {}, "roots": {}}),
    ] {
        let r = call(&server, "declared_counting", caps.clone(), json!({})).await;
        assert_eq!(r["error"]["code"], -32021, "{caps}: {r}");
        assert_eq!(
            r["error"]["data"],
            json!({"requiredCapabilities": {"elicitation": {"form": {}}}}),
            "{caps}"
        );
    }
    assert_eq!(counts.runs(), 0, "no tool code ran");
    let r = call(&server, "declared_counting", form(), json!({})).await;
    asks_confirm(&r);
    assert_eq!(counts.runs(), 1);
}

#[tokio::test]
async fn an_optional_capability_is_not_required_but_allows_the_ask() {
    let (server, _) = server();
    let r = call(&server, "maybe_sample", form(), json!({})).await;
    assert_eq!(r["result"]["content"][0]["text"], "no model to ask", "{r}");
    let r = call(&server, "maybe_sample", json!({"sampling": {}}), json!({})).await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    assert_eq!(
        r["result"]["inputRequests"]["s"]["method"], "sampling/createMessage",
        "{r}"
    );
}

/// Checks `r` is the server-bug error of tool `tool` asking two different things under `key`.
fn key_reuse_error(r: &Value, tool: &str, key: &str) -> String {
    assert_eq!(r["error"]["code"], -32603, "{r}");
    let message = r["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with("server bug: ")
            && message.contains(&format!("tool `{tool}`"))
            && message.contains(&format!("under the key `{key}`"))
            && message.contains("its own key"),
        "{message}"
    );
    message
}

#[tokio::test]
async fn two_forms_under_one_key_in_one_pass_are_a_server_bug_on_the_first_call() {
    let (server, _) = server();
    let (capture, _guard) = capture();
    let r = call(&server, "one_key_one_pass", form(), json!({})).await;
    let message = key_reuse_error(&r, "one_key_one_pass", "choice");
    assert!(
        message.contains("two different forms")
            && message.contains("PickNote")
            && message.contains("Confirm"),
        "{message}"
    );
    let log = capture.text();
    assert!(
        log.contains("ERROR")
            && log.contains("tool `one_key_one_pass`")
            && log.contains("`choice`"),
        "{log}"
    );
}

#[tokio::test]
async fn a_key_reused_in_a_later_round_is_a_server_bug_not_a_restart() {
    let (server, _) = server();
    let (capture, _guard) = capture();
    let first = call(&server, "one_key_two_rounds", form(), json!({})).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap();
    // Before: -32602 "requestState is invalid: ... restart the call", on every restart.
    let retry = send(
        &server,
        "tools/call",
        form(),
        json!({"name": "one_key_two_rounds", "arguments": {}, "requestState": state,
               "inputResponses": {"choice": {"action": "accept", "content": {"note": "todo"}}}}),
    )
    .await;
    let message = key_reuse_error(&retry, "one_key_two_rounds", "choice");
    assert!(message.contains("two different forms"), "{message}");
    assert!(capture.text().contains("ERROR"), "{}", capture.text());
}

#[tokio::test]
async fn a_form_and_a_sampling_request_under_one_key_are_a_server_bug_even_swallowed() {
    let (server, _) = server();
    let r = call(
        &server,
        "one_key_form_and_sampling",
        everything(),
        json!({}),
    )
    .await;
    let message = key_reuse_error(&r, "one_key_form_and_sampling", "ask");
    assert!(
        message.contains("two different things") && message.contains("a sampling request"),
        "{message}"
    );
}

#[tokio::test]
async fn changed_candidates_are_asked_again_not_a_server_bug() {
    let candidates = Candidates::of(&["groceries", "todo"]);
    let (server, _) = server_with(candidates.clone());
    let first = call(&server, "pick_then_confirm", form(), json!({})).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    // The world changes between rounds: what the pick would show now is not what was shown.
    candidates.set(&["groceries", "todo", "ideas"]);
    let retry = send(
        &server,
        "tools/call",
        form(),
        json!({"name": "pick_then_confirm", "arguments": {}, "requestState": state,
               "inputResponses": {"choice": {"action": "accept", "content": {"note": "todo"}}}}),
    )
    .await;
    assert_eq!(retry["error"]["code"], -32602, "{retry}");
    let message = retry["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("changed since it was asked") && message.contains("restart the call"),
        "{message}"
    );
    // The restart asks again, offering what there is now.
    let again = call(&server, "pick_then_confirm", form(), json!({})).await;
    assert_eq!(
        again["result"]["inputRequests"]["choice"]["params"]["requestedSchema"]["properties"]["note"]
            ["enum"],
        json!(["groceries", "todo", "ideas"]),
        "{again}"
    );
    // And the flow runs to its end: one key per form.
    let state = again["result"]["requestState"].as_str().unwrap().to_owned();
    let picked = send(
        &server,
        "tools/call",
        form(),
        json!({"name": "pick_then_confirm", "arguments": {}, "requestState": state,
               "inputResponses": {"choice": {"action": "accept", "content": {"note": "ideas"}}}}),
    )
    .await;
    assert_eq!(picked["result"]["resultType"], "input_required", "{picked}");
    let state = picked["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    let done = send(
        &server,
        "tools/call",
        form(),
        json!({"name": "pick_then_confirm", "arguments": {}, "requestState": state,
               "inputResponses": accept()}),
    )
    .await;
    assert_eq!(
        done["result"]["content"][0]["text"], "deleted ideas",
        "{done}"
    );
}

/// A hand-written form whose schema writer breaks its contract fails the call with -32603
/// naming the form, in every build (not a debug assertion), and nothing broken is sent.
#[tokio::test]
async fn a_hand_written_schema_that_is_not_json_fails_loudly() {
    let (server, _) = server();
    let r = call(&server, "ask_half_written", form(), json!({})).await;
    assert_eq!(r["error"]["code"], -32603, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(message.contains("HalfWritten"), "{message}");
    assert!(message.contains("write_requested_schema"), "{message}");
    assert!(r.get("result").is_none(), "{r}");
}
