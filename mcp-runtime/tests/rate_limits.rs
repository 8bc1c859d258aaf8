//! Rate limits in the core, through `Server::handle_bytes` (and the in-process client): the
//! call past one principal's limit of one tool is refused with `-32023` and the right wait,
//! while other principals and other tools go on; later rounds and replayed retries are not
//! counted; task calls are limited before a task exists; a failing or stalled store fails
//! closed (or open, when configured) within the deadline. Windows are one day long, so no
//! test depends on the clock (unless it runs across midnight UTC).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod core_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use core_support::{call, meta, parse, request, retry};
use futures::future::BoxFuture;
use mcp_runtime::context::REPLAYED_META_KEY;
use mcp_runtime::prelude::*;
use mcp_runtime::rate_limit::{
    Hit, MAX_WINDOW, MemoryRateLimitStore, RateKey, RateLimit, RateLimitError, RateLimitStore,
    StoreFailure,
};
use mcp_runtime::tasks::TaskSupport;
use serde_json::{Value, json};

/// How many times a tool's code ran.
#[derive(Clone, Default)]
struct Runs(Arc<AtomicUsize>);

impl Runs {
    fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// Echoes, counting its runs.
#[tool(read_only)]
async fn echo(State(runs): State<Runs>) -> String {
    runs.0.fetch_add(1, Ordering::SeqCst);
    "echo".to_owned()
}

/// Another tool, with a limit of its own.
#[tool(read_only)]
async fn other(State(runs): State<Runs>) -> String {
    runs.0.fetch_add(1, Ordering::SeqCst);
    "other".to_owned()
}

/// Never limited.
#[tool(read_only)]
async fn free() -> String {
    "free".to_owned()
}

#[derive(ElicitForm)]
struct Confirm {
    /// Yes, do it
    confirm: bool,
}

/// Asks for a confirmation, then counts one effect under the claim.
#[tool(destructive, requires(form_elicitation))]
async fn act(ctx: &mut RequestContext, State(runs): State<Runs>) -> Result<String, HandlerError> {
    let outcome = ctx
        .elicit_with_commit::<Confirm, _, _>("confirm", "Sure?", (), move |c| {
            Ok(if c.confirm {
                runs.0.fetch_add(1, Ordering::SeqCst) + 1
            } else {
                0
            })
        })
        .await?;
    match outcome {
        Elicitation::Accepted(n) => Ok(format!("Done {n}.")),
        _ => Ok("Nothing done.".to_owned()),
    }
}

/// A long job that runs as a task for task-aware clients.
#[tool(read_only)]
async fn report(State(runs): State<Runs>) -> String {
    runs.0.fetch_add(1, Ordering::SeqCst);
    "report".to_owned()
}

fn per_day(n: u32) -> RateLimit {
    RateLimit::new(n, MAX_WINDOW)
}

async fn send(server: &Server, who: &str, bytes: &[u8]) -> Value {
    parse(server.handle_bytes(bytes, &Principal::new(who)).await)
}

fn text(r: &Value) -> &str {
    r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

/// Checks a `-32023` refusal's shape and returns its `retryAfter`.
fn assert_rate_limited(r: &Value, limit: u64, window: u64) -> u64 {
    let error = &r["error"];
    assert_eq!(error["code"], -32023, "{r}");
    let data = &error["data"];
    let secs = data["retryAfter"].as_u64().expect("retryAfter seconds");
    assert!((1..=window).contains(&secs), "{r}");
    assert_eq!(data["retryAfterMs"].as_u64(), Some(secs * 1000), "{r}");
    assert_eq!(data["limit"].as_u64(), Some(limit), "{r}");
    assert_eq!(data["window"].as_u64(), Some(window), "{r}");
    // Only the caller's own policy: no other principal's state, no count.
    let keys: Vec<&String> = data.as_object().unwrap().keys().collect();
    assert_eq!(
        keys.len(),
        4,
        "unexpected members in the refusal's data: {keys:?}"
    );
    let message = error["message"].as_str().unwrap();
    assert!(message.starts_with("Rate limited: at most"), "{message:?}");
    assert!(
        message.contains(&format!("retry in {secs} s")),
        "{message:?}"
    );
    secs
}

#[tokio::test]
async fn the_call_past_the_limit_is_refused_for_that_principal_and_tool_only() {
    let runs = Runs::default();
    let server = Server::builder(Implementation::new("t", "1.0"))
        .tools(tools![echo, other, free])
        .state(runs.clone())
        .rate_limit(per_day(3))
        .tool_rate_limit("other", per_day(1))
        .tool_without_rate_limit("free")
        .build()
        .unwrap();
    for i in 1..=3 {
        let r = send(&server, "alice", &call(i, "echo", json!({}), json!({}))).await;
        assert_eq!(text(&r), "echo", "call {i}: {r}");
    }
    assert_eq!(runs.get(), 3);
    let refused = send(&server, "alice", &call(4, "echo", json!({}), json!({}))).await;
    assert_eq!(refused["id"], 4, "{refused}");
    assert_rate_limited(&refused, 3, MAX_WINDOW.as_secs());
    // The refused call ran nothing.
    assert_eq!(runs.get(), 3);
    // Still refused: the window is over its limit until it ends.
    let again = send(&server, "alice", &call(5, "echo", json!({}), json!({}))).await;
    assert_eq!(again["error"]["code"], -32023, "{again}");

    // Another principal has its own count.
    for i in 1..=3 {
        let r = send(&server, "bob", &call(i, "echo", json!({}), json!({}))).await;
        assert_eq!(text(&r), "echo", "bob's call {i}: {r}");
    }
    // Another tool has its own count (and its own limit).
    let r = send(&server, "alice", &call(6, "other", json!({}), json!({}))).await;
    assert_eq!(text(&r), "other", "{r}");
    let r = send(&server, "alice", &call(7, "other", json!({}), json!({}))).await;
    assert_rate_limited(&r, 1, MAX_WINDOW.as_secs());
    // An exempt tool is never counted.
    for i in 0..10 {
        let r = send(
            &server,
            "alice",
            &call(10 + i, "free", json!({}), json!({})),
        )
        .await;
        assert_eq!(text(&r), "free", "{r}");
    }
    // Other methods are never counted.
    let list = send(
        &server,
        "alice",
        &request(30, "tools/list", json!({"_meta": meta(json!({}))})),
    )
    .await;
    assert!(list["result"]["tools"].is_array(), "{list}");
}

#[tokio::test]
async fn the_wait_is_the_rest_of_the_window_rounded_up() {
    let server = Server::builder(Implementation::new("t", "1.0"))
        .tools(tools![echo])
        .state(Runs::default())
        .rate_limit(RateLimit::per_minute(1))
        .build()
        .unwrap();
    let ok = send(&server, "alice", &call(1, "echo", json!({}), json!({}))).await;
    // Unless the minute just turned, the second call is in the same window.
    let refused = send(&server, "alice", &call(2, "echo", json!({}), json!({}))).await;
    if ok.get("result").is_some() && refused.get("error").is_some() {
        let secs = assert_rate_limited(&refused, 1, 60);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        let left_ms = 60_000 - (now.as_millis() % 60_000) as u64;
        // Rounded up from what is left (the clock moved on a little since).
        assert!(
            secs * 1000 >= left_ms && secs * 1000 < left_ms + 2000,
            "{secs} s for {left_ms} ms left"
        );
    }
}

#[tokio::test]
async fn later_rounds_and_replayed_retries_are_not_counted() {
    let runs = Runs::default();
    let server = Server::builder(Implementation::new("t", "1.0"))
        .tools(tools![act])
        .state(runs.clone())
        .tool_rate_limit("act", per_day(2))
        .build()
        .unwrap();
    let caps = json!({"elicitation": {"form": {}}});
    let accept = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    // First round: counted (1 of 2).
    let first = send(&server, "alice", &call(1, "act", json!({}), caps.clone())).await;
    let state = first["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();
    // The second round carries the state: not counted.
    let done = send(
        &server,
        "alice",
        &retry(2, "act", json!({}), caps.clone(), &state, accept.clone()),
    )
    .await;
    assert_eq!(text(&done), "Done 1.", "{done}");
    // Identical retries answered from the recorded outcome: not counted either.
    for id in 3..8 {
        let again = send(
            &server,
            "alice",
            &retry(id, "act", json!({}), caps.clone(), &state, accept.clone()),
        )
        .await;
        assert_eq!(text(&again), "Done 1.", "{again}");
        assert_eq!(again["result"]["_meta"][REPLAYED_META_KEY], true, "{again}");
    }
    assert_eq!(runs.get(), 1);
    // So one first call is still allowed (2 of 2) ...
    let second = send(&server, "alice", &call(8, "act", json!({}), caps.clone())).await;
    assert_eq!(second["result"]["resultType"], "input_required", "{second}");
    // ... and the next first call is over the limit.
    let third = send(&server, "alice", &call(9, "act", json!({}), caps.clone())).await;
    assert_rate_limited(&third, 2, MAX_WINDOW.as_secs());
    // The flow begun before the limit was reached can still finish: its round is not counted.
    let state2 = second["result"]["requestState"].as_str().unwrap();
    let done2 = send(
        &server,
        "alice",
        &retry(10, "act", json!({}), caps, state2, accept),
    )
    .await;
    assert_eq!(text(&done2), "Done 2.", "{done2}");
}

#[tokio::test]
async fn a_retry_with_a_forged_state_is_refused_before_the_count_and_costs_nothing() {
    let server = Server::builder(Implementation::new("t", "1.0"))
        .tools(tools![act])
        .state(Runs::default())
        .tool_rate_limit("act", per_day(1))
        .build()
        .unwrap();
    let caps = json!({"elicitation": {"form": {}}});
    for id in 1..5 {
        let forged = send(
            &server,
            "alice",
            &retry(id, "act", json!({}), caps.clone(), "v2.k1.bogus", json!({})),
        )
        .await;
        assert_eq!(forged["error"]["code"], -32602, "{forged}");
    }
    // The quota is intact.
    let first = send(&server, "alice", &call(9, "act", json!({}), caps)).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
}

#[tokio::test]
async fn a_task_call_is_limited_before_its_task_exists() {
    let runs = Runs::default();
    let server = Server::builder(Implementation::new("t", "1.0"))
        .tools(tools![report].task("report", TaskSupport::Optional))
        .state(runs.clone())
        .tool_rate_limit("report", per_day(1))
        .build()
        .unwrap();
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let created = send(
        &server,
        "alice",
        &call(1, "report", json!({}), tasks.clone()),
    )
    .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let refused = send(
        &server,
        "alice",
        &call(2, "report", json!({}), tasks.clone()),
    )
    .await;
    assert_rate_limited(&refused, 1, MAX_WINDOW.as_secs());
    // The counted task runs once; the refused call started nothing.
    let deadline = Instant::now() + Duration::from_secs(10);
    while runs.get() < 1 {
        assert!(Instant::now() < deadline, "the task never ran");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(runs.get(), 1);
    // A plain call of the same tool counts against the same limit.
    let plain = send(&server, "alice", &call(3, "report", json!({}), json!({}))).await;
    assert_eq!(plain["error"]["code"], -32023, "{plain}");
    // Bob's task is his own.
    let bobs = send(&server, "bob", &call(4, "report", json!({}), tasks)).await;
    assert_eq!(bobs["result"]["resultType"], "task", "{bobs}");
}

/// A store that always fails.
#[derive(Debug)]
struct Broken;

impl RateLimitStore for Broken {
    fn hit<'a>(
        &'a self,
        _: &'a RateKey,
        _: Duration,
    ) -> BoxFuture<'a, Result<Hit, RateLimitError>> {
        Box::pin(async {
            Err(RateLimitError::backend(
                "broken",
                "counting the call",
                "the disk is on fire",
            ))
        })
    }
}

/// A store that never answers.
#[derive(Debug)]
struct Stalled;

impl RateLimitStore for Stalled {
    fn hit<'a>(
        &'a self,
        _: &'a RateKey,
        _: Duration,
    ) -> BoxFuture<'a, Result<Hit, RateLimitError>> {
        Box::pin(futures::future::pending())
    }
}

fn with_store(store: Arc<dyn RateLimitStore>, runs: &Runs) -> mcp_runtime::server::ServerBuilder {
    Server::builder(Implementation::new("t", "1.0"))
        .tools(tools![echo, free])
        .state(runs.clone())
        .rate_limit(per_day(100))
        .tool_without_rate_limit("free")
        .rate_limit_store(store)
        .rate_limit_deadline(Duration::from_millis(200))
}

fn assert_unavailable(r: &Value) {
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert_eq!(
        r["error"]["data"],
        json!({"reason": "rate_limit_store_unavailable", "retryable": true}),
        "{r}"
    );
    let message = r["error"]["message"].as_str().unwrap();
    assert!(message.contains("nothing was run"), "{message}");
    assert!(
        !message.contains("fire"),
        "the store's error stays in the log: {message}"
    );
}

#[tokio::test]
async fn a_failing_store_fails_closed_by_default() {
    let runs = Runs::default();
    let server = with_store(Arc::new(Broken), &runs).build().unwrap();
    let r = send(&server, "alice", &call(1, "echo", json!({}), json!({}))).await;
    assert_unavailable(&r);
    assert_eq!(runs.get(), 0);
    // A tool without a limit never asks the store.
    let r = send(&server, "alice", &call(2, "free", json!({}), json!({}))).await;
    assert_eq!(text(&r), "free", "{r}");
}

#[tokio::test]
async fn a_stalled_store_is_given_up_at_the_deadline() {
    let runs = Runs::default();
    let server = with_store(Arc::new(Stalled), &runs).build().unwrap();
    let started = Instant::now();
    let r = send(&server, "alice", &call(1, "echo", json!({}), json!({}))).await;
    let took = started.elapsed();
    assert_unavailable(&r);
    assert!(
        took >= Duration::from_millis(190) && took < Duration::from_secs(5),
        "took {took:?}"
    );
    assert_eq!(runs.get(), 0);
}

#[tokio::test]
async fn failing_open_runs_the_call() {
    for store in [
        Arc::new(Broken) as Arc<dyn RateLimitStore>,
        Arc::new(Stalled),
    ] {
        let runs = Runs::default();
        let server = with_store(store, &runs)
            .rate_limit_on_store_failure(StoreFailure::Allow)
            .build()
            .unwrap();
        let r = send(&server, "alice", &call(1, "echo", json!({}), json!({}))).await;
        assert_eq!(text(&r), "echo", "{r}");
        assert_eq!(runs.get(), 1);
    }
}

#[tokio::test]
async fn a_full_memory_store_fails_closed() {
    let runs = Runs::default();
    let server = with_store(Arc::new(MemoryRateLimitStore::new(1)), &runs)
        .build()
        .unwrap();
    let r = send(&server, "alice", &call(1, "echo", json!({}), json!({}))).await;
    assert_eq!(text(&r), "echo", "{r}");
    // A second live counter does not fit: refused, retryable, and alice keeps counting.
    let r = send(&server, "bob", &call(2, "echo", json!({}), json!({}))).await;
    assert_unavailable(&r);
    let r = send(&server, "alice", &call(3, "echo", json!({}), json!({}))).await;
    assert_eq!(text(&r), "echo", "{r}");
}

#[test]
fn a_limit_for_an_unknown_tool_fails_the_build() {
    let err = Server::builder(Implementation::new("t", "1.0"))
        .tools(tools![free])
        .tool_rate_limit("fre", per_day(1))
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("`.tool_rate_limit(\"fre\", ..)`"), "{err}");
    assert!(err.contains("names no registered tool"), "{err}");
}

#[tokio::test]
async fn without_configuration_nothing_is_limited() {
    let runs = Runs::default();
    let server = Server::builder(Implementation::new("t", "1.0"))
        .tools(tools![echo])
        .state(runs.clone())
        .rate_limit_store(Arc::new(Broken))
        .build()
        .unwrap();
    for i in 0..50 {
        let r = send(&server, "alice", &call(i, "echo", json!({}), json!({}))).await;
        assert_eq!(text(&r), "echo", "{r}");
    }
    assert_eq!(runs.get(), 50);
}

#[cfg(feature = "client")]
#[tokio::test]
async fn the_in_process_client_types_the_refusal() {
    use mcp_runtime::client::{Client, ClientError};
    let server = Server::builder(Implementation::new("t", "1.0"))
        .tools(tools![echo])
        .state(Runs::default())
        .rate_limit(per_day(1))
        .build()
        .unwrap();
    let client = Client::in_process(server, Principal::new("alice"));
    let _ = client.call("echo", json!({})).await.unwrap();
    let err = client.call("echo", json!({})).await.unwrap_err();
    let ClientError::RateLimited { error, data } = &err else {
        panic!("not typed as rate limited: {err:?}");
    };
    assert_eq!(error.code(), mcp_types::ErrorCode::RateLimited);
    let data = data.as_deref().expect("typed data");
    let wait = data.retry_after().unwrap();
    assert!(
        wait >= Duration::from_secs(1) && wait <= MAX_WINDOW,
        "{wait:?}"
    );
    assert_eq!(
        (data.limit, data.window),
        (Some(1), Some(MAX_WINDOW.as_secs()))
    );
}

/// A store that answers counts but fails its ping.
#[derive(Debug)]
struct Unreachable;

impl RateLimitStore for Unreachable {
    fn hit<'a>(
        &'a self,
        _: &'a RateKey,
        _: Duration,
    ) -> BoxFuture<'a, Result<Hit, RateLimitError>> {
        Box::pin(async { Ok(Hit::new(1, Duration::from_secs(1))) })
    }

    fn ping(&self) -> BoxFuture<'_, Result<(), RateLimitError>> {
        Box::pin(async { Err(RateLimitError::backend("unreachable", "ping", "no route")) })
    }
}

#[tokio::test]
async fn readiness_checks_the_rate_limit_store_only_when_there_are_limits() {
    use mcp_runtime::service::McpService;
    let names = |checks: &[mcp_runtime::service::ReadinessCheck]| {
        checks.iter().map(|c| c.name.clone()).collect::<Vec<_>>()
    };
    let unlimited = Server::builder(Implementation::new("t", "1.0"))
        .tools(tools![free])
        .rate_limit_store(Arc::new(Unreachable))
        .build()
        .unwrap();
    let checks = unlimited.readiness().await;
    assert!(!names(&checks).contains(&"rate_limit_store".to_owned()));
    let call = |name: &str| {
        json!({"name": name, "arguments": {}})
            .as_object()
            .unwrap()
            .clone()
    };
    assert_eq!(unlimited.admission_wait("tools/call", &call("free")), None);
    let limited = Server::builder(Implementation::new("t", "1.0"))
        .tools(tools![free])
        .rate_limit(per_day(1))
        .rate_limit_store(Arc::new(Unreachable))
        .rate_limit_deadline(Duration::from_millis(300))
        .build()
        .unwrap();
    let checks = limited.readiness().await;
    let rate = checks
        .iter()
        .find(|c| c.name == "rate_limit_store")
        .expect("checked");
    assert!(
        rate.error.as_deref().unwrap().contains("no route"),
        "{rate:?}"
    );
    assert_eq!(
        limited.admission_wait("tools/call", &call("free")),
        Some(Duration::from_millis(300))
    );
    // Not counted, so no wait: a retry, another method.
    let mut retry = call("free");
    retry.insert("requestState".into(), json!("s"));
    assert_eq!(limited.admission_wait("tools/call", &retry), None);
    assert_eq!(limited.admission_wait("prompts/get", &call("free")), None);
}
