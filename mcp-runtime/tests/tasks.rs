//! The tasks extension end to end through `Server::handle_bytes`: negotiation, creation,
//! status, cancellation, input rounds inside a task, and input before a task.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod core_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use core_support::*;
use mcp_runtime::prelude::*;
use mcp_runtime::server::ServerBuilder;
use mcp_runtime::tasks::TaskSupport;
use mcp_runtime::tool::TaskStart;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// Released by the test to let `gated` finish: no timing decides an outcome.
#[derive(Clone)]
struct Gate(Arc<Semaphore>);

/// Set when a `gated` run is dropped before finishing (cancellation reached it).
#[derive(Clone, Default)]
struct Dropped(Arc<AtomicBool>);

struct SetOnDrop(Dropped);
impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.0.store(true, Ordering::SeqCst);
    }
}

/// Waits for the gate, then answers.
#[tool(read_only)]
async fn gated(
    State(gate): State<Gate>,
    State(dropped): State<Dropped>,
) -> Result<String, HandlerError> {
    let guard = SetOnDrop(dropped);
    let permit = gate
        .0
        .acquire()
        .await
        .map_err(|_| HandlerError::tool("gate closed"))?;
    permit.forget();
    std::mem::forget(guard);
    Ok("released".to_owned())
}

/// A plain tool.
#[tool(read_only)]
async fn plain() -> String {
    "plain".to_owned()
}

/// A name form.
#[derive(ElicitForm)]
struct NameForm {
    /// Name
    name: String,
}

fn name_of(e: Elicitation<NameForm>) -> String {
    match e {
        Elicitation::Accepted(f) => f.name,
        _ => "(none)".to_owned(),
    }
}

/// Asks two names in one round.
#[tool(read_only, requires(form_elicitation))]
async fn two_names(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    let a = ctx.try_elicit::<NameForm>("a", "First?", ()).await?;
    let b = ctx.try_elicit::<NameForm>("b", "Second?", ()).await?;
    ctx.await_inputs()?;
    Ok(format!(
        "{} and {}",
        name_of(a.unwrap()),
        name_of(b.unwrap())
    ))
}

/// Asks a name before becoming a task, then waits for the gate.
#[tool(read_only, requires(form_elicitation))]
async fn ask_then_work(
    ctx: &mut RequestContext,
    State(gate): State<Gate>,
) -> Result<String, HandlerError> {
    let name = name_of(ctx.elicit::<NameForm>("who", "Who?", ()).await?);
    let permit = gate
        .0
        .acquire()
        .await
        .map_err(|_| HandlerError::tool("gate closed"))?;
    permit.forget();
    Ok(format!("done for {name}"))
}

fn server(gate: Gate, dropped: Dropped) -> Server {
    Server::builder(Implementation::new("test", "1.0"))
        .tools(
            tools![gated, plain, two_names, ask_then_work]
                .task("gated", TaskSupport::Optional)
                .task("two_names", TaskSupport::Required)
                .task_with(
                    "ask_then_work",
                    TaskSupport::Required,
                    TaskStart::AfterInput,
                ),
        )
        .state(gate)
        .state(dropped)
        .build()
        .unwrap()
}

fn setup() -> (Server, Gate, Dropped) {
    let gate = Gate(Arc::new(Semaphore::new(0)));
    let dropped = Dropped::default();
    (server(gate.clone(), dropped.clone()), gate, dropped)
}

fn with_tasks(mut caps: Value) -> Value {
    caps["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    caps
}

fn alice() -> Principal {
    Principal::new("alice")
}

async fn send(server: &Server, bytes: Vec<u8>, who: &Principal) -> Value {
    parse(server.handle_bytes(&bytes, who).await)
}

fn task_req(id: i64, method: &str, task_id: &str, caps: Value, extra: Value) -> Vec<u8> {
    let mut params = json!({"_meta": meta(caps), "taskId": task_id});
    if let Value::Object(more) = extra {
        params.as_object_mut().unwrap().extend(more);
    }
    request(id, method, params)
}

async fn get(server: &Server, task_id: &str) -> Value {
    send(
        server,
        task_req(9, "tasks/get", task_id, with_tasks(json!({})), json!({})),
        &alice(),
    )
    .await
}

/// Polls `tasks/get` until `done` holds (bounded: a hang fails the test, timing decides
/// nothing).
async fn until(server: &Server, task_id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = get(server, task_id).await;
        if done(&r["result"]) {
            return r["result"].clone();
        }
        assert!(Instant::now() < deadline, "task never got there: {r}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn discover_and_list_advertise_the_extension() {
    let (server, ..) = setup();
    let d = send(
        &server,
        request(1, "server/discover", json!({"_meta": meta(json!({}))})),
        &alice(),
    )
    .await;
    assert_eq!(
        d["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    assert!(d["result"]["capabilities"].get("tasks").is_none());
    let l = send(
        &server,
        request(2, "tools/list", json!({"_meta": meta(json!({}))})),
        &alice(),
    )
    .await;
    let tools = l["result"]["tools"].as_array().unwrap();
    let support = |n: &str| {
        tools.iter().find(|t| t["name"] == n).unwrap()["execution"]["taskSupport"].clone()
    };
    assert_eq!(support("gated"), "optional");
    assert_eq!(support("two_names"), "required");
    assert_eq!(support("plain"), Value::Null);
}

#[tokio::test]
async fn without_the_extension_tools_run_plain_and_task_methods_are_refused() {
    let (server, gate, _) = setup();
    gate.0.add_permits(1);
    let r = send(&server, call(1, "gated", json!({}), json!({})), &alice()).await;
    assert_eq!(r["result"]["content"][0]["text"], "released", "{r}");
    assert!(r["result"].get("taskId").is_none());

    let r = send(
        &server,
        call(2, "two_names", json!({}), caps_form()),
        &alice(),
    )
    .await;
    assert_eq!(r["error"]["code"], -32021, "{r}");
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let r = send(
            &server,
            task_req(3, method, "x", json!({}), json!({"inputResponses": {}})),
            &alice(),
        )
        .await;
        assert_eq!(r["error"]["code"], -32021, "{method}: {r}");
    }
    for method in ["tasks/result", "tasks/list"] {
        let r = send(
            &server,
            task_req(4, method, "x", with_tasks(json!({})), json!({})),
            &alice(),
        )
        .await;
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
    }
}

#[tokio::test]
async fn a_task_is_created_flat_then_completes_with_its_result_inlined() {
    let (server, gate, _) = setup();
    let r = send(
        &server,
        call(1, "gated", json!({}), with_tasks(json!({}))),
        &alice(),
    )
    .await;
    let created = &r["result"];
    assert_eq!(created["resultType"], "task", "{r}");
    assert_eq!(created["status"], "working");
    assert!(created["ttlMs"].as_u64().unwrap() > 0);
    for absent in [
        "task",
        "result",
        "error",
        "inputRequests",
        "requestState",
        "ttl",
        "pollInterval",
    ] {
        assert!(created.get(absent).is_none(), "{absent} in {created}");
    }
    let id = created["taskId"].as_str().unwrap().to_owned();

    // Stored before announced; only its owner sees it.
    let now = get(&server, &id).await;
    assert_eq!(now["result"]["status"], "working", "{now}");
    assert_eq!(now["result"]["resultType"], "complete");
    assert!(now["result"].get("result").is_none());
    let other = send(
        &server,
        task_req(5, "tasks/get", &id, with_tasks(json!({})), json!({})),
        &Principal::new("mallory"),
    )
    .await;
    assert_eq!(other["error"]["code"], -32602, "{other}");
    let unknown = get(&server, "no-such-task").await;
    assert_eq!(unknown["error"]["code"], -32602);

    gate.0.add_permits(1);
    let done = until(&server, &id, |t| t["status"] == "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "released", "{done}");
    assert!(done["result"]["_meta"].is_null());
}

#[tokio::test]
async fn cancel_settles_to_cancelled_drops_the_handler_and_is_idempotent() {
    let (server, gate, dropped) = setup();
    let r = send(
        &server,
        call(1, "gated", json!({}), with_tasks(json!({}))),
        &alice(),
    )
    .await;
    let id = r["result"]["taskId"].as_str().unwrap().to_owned();
    // Let the handler start waiting before cancelling it.
    until(&server, &id, |t| t["status"] == "working").await;
    for n in 0..2 {
        let ack = send(
            &server,
            task_req(2 + n, "tasks/cancel", &id, with_tasks(json!({})), json!({})),
            &alice(),
        )
        .await;
        assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
        assert!(ack["result"].get("taskId").is_none() && ack["result"].get("status").is_none());
    }
    assert_eq!(get(&server, &id).await["result"]["status"], "cancelled");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !dropped.0.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "the handler was never dropped");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // A late release changes nothing.
    gate.0.add_permits(1);
    assert_eq!(get(&server, &id).await["result"]["status"], "cancelled");
}

#[tokio::test]
async fn input_rounds_inside_a_task_accept_partial_updates() {
    let (server, ..) = setup();
    let caps = with_tasks(caps_form());
    let r = send(
        &server,
        call(1, "two_names", json!({}), caps.clone()),
        &alice(),
    )
    .await;
    let id = r["result"]["taskId"].as_str().unwrap().to_owned();
    let waiting = until(&server, &id, |t| t["status"] == "input_required").await;
    let keys: Vec<_> = waiting["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["a", "b"]);
    assert!(waiting.get("requestState").is_none());

    let answer = |name: &str| json!({"action": "accept", "content": {"name": name}});
    let ack = send(
        &server,
        task_req(
            2,
            "tasks/update",
            &id,
            caps.clone(),
            json!({"inputResponses": {"a": answer("Ann"), "zzz": {"ignored": true}}}),
        ),
        &alice(),
    )
    .await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let partial = get(&server, &id).await["result"].clone();
    assert_eq!(partial["status"], "input_required");
    let left: Vec<_> = partial["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(left, ["b"]);

    send(
        &server,
        task_req(
            3,
            "tasks/update",
            &id,
            caps,
            json!({"inputResponses": {"b": answer("Bo")}}),
        ),
        &alice(),
    )
    .await;
    let done = until(&server, &id, |t| t["status"] == "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Ann and Bo", "{done}");
}

#[tokio::test]
async fn after_input_tools_ask_by_mrtr_first_and_become_a_task_afterwards() {
    let (server, gate, _) = setup();
    let caps = with_tasks(caps_form());
    let r = send(
        &server,
        call(1, "ask_then_work", json!({}), caps.clone()),
        &alice(),
    )
    .await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    assert!(r["result"].get("taskId").is_none());
    let state = r["result"]["requestState"].as_str().unwrap();
    let r = send(
        &server,
        retry(
            2,
            "ask_then_work",
            json!({}),
            caps,
            state,
            json!({"who": {"action": "accept", "content": {"name": "Zed"}}}),
        ),
        &alice(),
    )
    .await;
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    assert!(r["result"].get("requestState").is_none());
    let id = r["result"]["taskId"].as_str().unwrap().to_owned();
    gate.0.add_permits(1);
    let done = until(&server, &id, |t| t["status"] == "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "done for Zed");
}

#[test]
fn marking_an_unknown_tool_as_a_task_fails_the_build() {
    let err = Server::builder(Implementation::new("test", "1.0"))
        .tools(tools![plain].task("nope", TaskSupport::Optional))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
}

/// Arguments of `big`.
#[args]
struct BigArgs {
    /// How many bytes of text to return.
    bytes: usize,
}

/// Returns a text of `bytes` bytes.
#[tool(read_only)]
async fn big(args: BigArgs) -> String {
    "x".repeat(args.bytes)
}

fn big_server(builder: impl FnOnce(ServerBuilder) -> ServerBuilder) -> Server {
    let b = Server::builder(Implementation::new("test", "1.0"))
        .tools(
            tools![big, gated]
                .task("big", TaskSupport::Optional)
                .task("gated", TaskSupport::Optional),
        )
        .state(Gate(Arc::new(Semaphore::new(0))))
        .state(Dropped::default());
    builder(b).build().unwrap()
}

async fn start(server: &Server, tool: &str, args: Value, who: &Principal) -> Value {
    send(server, call(1, tool, args, with_tasks(json!({}))), who).await
}

/// Over the default cap (4 MiB of JSON), the task fails saying both sizes and what to do, and
/// `tasks/get` shows no result. Before the cap, such a result was kept for the task's TTL.
#[tokio::test]
async fn a_result_over_the_default_cap_fails_the_task_and_keeps_nothing() {
    let server = big_server(|b| b);
    let r = start(&server, "big", json!({"bytes": 5 * 1024 * 1024}), &alice()).await;
    let id = r["result"]["taskId"].as_str().unwrap().to_owned();
    let done = until(&server, &id, |t| t["status"] != "working").await;
    assert_eq!(done["status"], "failed", "{}", done["status"]);
    assert!(done.get("result").is_none());
    let error = &done["error"];
    assert_eq!(error["code"], -32603);
    assert_eq!(error["data"]["reason"], "task_result_too_large");
    assert_eq!(error["data"]["limit"], 4 * 1024 * 1024);
    let size = error["data"]["size"].as_u64().unwrap();
    assert!(size > 5 * 1024 * 1024, "{size}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains(&size.to_string()), "{message}");
    assert!(message.contains("4194304 bytes"), "{message}");
    assert!(message.contains("max_task_result_bytes"), "{message}");
}

/// The cap is the builder's: a result just under it completes, one just over fails.
#[tokio::test]
async fn the_result_cap_is_configurable() {
    let server = big_server(|b| b.max_task_result_bytes(4096));
    let small = start(&server, "big", json!({"bytes": 3000}), &alice()).await;
    let id = small["result"]["taskId"].as_str().unwrap().to_owned();
    let done = until(&server, &id, |t| t["status"] != "working").await;
    assert_eq!(done["status"], "completed", "{}", done["status"]);
    let large = start(&server, "big", json!({"bytes": 5000}), &alice()).await;
    let id = large["result"]["taskId"].as_str().unwrap().to_owned();
    let done = until(&server, &id, |t| t["status"] != "working").await;
    assert_eq!(done["status"], "failed");
    assert_eq!(done["error"]["data"]["limit"], 4096);
    assert!(done.get("result").is_none());
}

/// With the default store, one principal may have 32 tasks running; the 33rd is refused
/// with a retryable `-32600` and nothing is created, while another principal still gets
/// tasks. Before the share, the memory store took 10,000 tasks from anyone.
#[tokio::test]
async fn the_33rd_running_task_of_a_principal_is_refused_and_others_are_not() {
    let server = big_server(|b| b);
    for _ in 0..32 {
        let r = start(&server, "gated", json!({}), &alice()).await;
        assert_eq!(r["result"]["resultType"], "task", "{r}");
    }
    let refused = start(&server, "gated", json!({}), &alice()).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(refused["error"]["data"]["retryable"], true);
    assert_eq!(refused["error"]["data"]["limit"], 32);
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("32 tasks"), "{message}");
    let bob = start(&server, "gated", json!({}), &Principal::new("bob")).await;
    assert_eq!(bob["result"]["resultType"], "task", "{bob}");
}
