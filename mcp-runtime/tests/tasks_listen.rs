//! `subscriptions/listen` for task status over the real transports: the acknowledgement,
//! `notifications/tasks` carrying the subscription id, the closing result, another
//! principal's task left unacknowledged, cancellation, the per-principal cap, a change made
//! by another instance, shutdown, and the HTTP request-timeout exemption.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod core_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use core_support::{call, meta, request};
use mcp_runtime::prelude::*;
use mcp_runtime::service::McpService;
use mcp_runtime::tasks::{MemoryTaskStore, TaskStore};
use mcp_runtime::transport::stdio::{self, StdioConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::sync::Semaphore;

/// Permits that let `stepper` take its two steps.
#[derive(Clone)]
struct Steps(Arc<Semaphore>);

impl Steps {
    fn new() -> Self {
        Self(Arc::new(Semaphore::new(0)))
    }
    fn step(&self) {
        self.0.add_permits(1);
    }
}

/// Waits for a step, reports halfway, waits for another, completes.
#[tool(read_only, task)]
async fn stepper(
    ctx: &mut RequestContext,
    State(steps): State<Steps>,
) -> Result<String, HandlerError> {
    let take = || async {
        steps
            .0
            .acquire()
            .await
            .map(tokio::sync::SemaphorePermit::forget)
            .map_err(|_| HandlerError::tool("steps closed"))
    };
    take().await?;
    ctx.progress(1, Some(2), Some("halfway")).await;
    take().await?;
    Ok("stepped".to_owned())
}

fn tasks_caps() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

fn server_with(steps: &Steps, store: Option<Arc<dyn TaskStore>>) -> Server {
    let mut builder = Server::builder(Implementation::new("tasks-listen", "1"))
        .tools(tools![stepper])
        .state(steps.clone());
    if let Some(store) = store {
        builder = builder.task_store(store);
    }
    builder.build().unwrap()
}

fn listen(id: i64, task_ids: &[&str], caps: Value) -> Vec<u8> {
    request(
        id,
        "subscriptions/listen",
        json!({"_meta": meta(caps), "notifications": {"taskIds": task_ids}}),
    )
}

/// One stdio connection of `principal` to `server`.
struct Client {
    out: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
    serving: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Client {
    fn connect(server: &Server, principal: &str) -> Self {
        let service: Arc<dyn McpService> = Arc::new(server.clone());
        let (client_in, server_out) = tokio::io::duplex(256 * 1024);
        let (server_in, out) = tokio::io::duplex(256 * 1024);
        let serving = tokio::spawn(stdio::serve(
            service,
            Principal::new(principal),
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

    async fn send(&mut self, body: &[u8]) {
        self.out.write_all(body).await.unwrap();
        self.out.write_all(b"\n").await.unwrap();
    }

    /// The next line the server writes (bounded: a silent server fails the test).
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a message within 10 s")
            .unwrap()
            .expect("the stream is open");
        serde_json::from_str(&line).unwrap()
    }

    /// Sends a request and returns its response (no listen may be open meanwhile).
    async fn roundtrip(&mut self, body: &[u8]) -> Value {
        self.send(body).await;
        self.next().await
    }

    /// Creates a `stepper` task; its id.
    async fn create(&mut self, id: i64) -> String {
        let created = self
            .roundtrip(&call(id, "stepper", json!({}), tasks_caps()))
            .await;
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        created["result"]["taskId"].as_str().unwrap().to_owned()
    }
}

fn subscription_id(message: &Value) -> &Value {
    &message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
}

/// Checks `note` is a `notifications/tasks` of listen `sub` about `task_id`; its params.
fn task_note<'a>(note: &'a Value, sub: i64, task_id: &str) -> &'a Value {
    assert_eq!(note["method"], "notifications/tasks", "{note}");
    assert_eq!(subscription_id(note), &json!(sub), "{note}");
    assert_eq!(note["params"]["taskId"], task_id, "{note}");
    assert!(note["params"].get("resultType").is_none(), "{note}");
    &note["params"]
}

fn assert_closed(response: &Value, sub: i64) {
    assert_eq!(response["id"], sub, "{response}");
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
    assert_eq!(
        response["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], sub,
        "{response}"
    );
}

#[tokio::test]
async fn a_listen_acknowledges_streams_status_and_closes_when_the_task_ends() {
    let steps = Steps::new();
    let server = server_with(&steps, None);
    let mut alice = Client::connect(&server, "alice");
    let task_id = alice.create(1).await;

    // A task id that does not exist is simply not acknowledged.
    alice
        .send(&listen(
            7,
            &[&task_id, "no-such-task", &task_id],
            tasks_caps(),
        ))
        .await;
    let ack = alice.next().await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(subscription_id(&ack), 7, "{ack}");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"taskIds": [task_id]})
    );
    // The current state first.
    let now = alice.next().await;
    assert_eq!(task_note(&now, 7, &task_id)["status"], "working");

    steps.step();
    let halfway = alice.next().await;
    let params = task_note(&halfway, 7, &task_id);
    assert_eq!(params["status"], "working", "{halfway}");
    assert_eq!(params["statusMessage"], "halfway (1/2)", "{halfway}");

    steps.step();
    let done = alice.next().await;
    let params = task_note(&done, 7, &task_id);
    assert_eq!(params["status"], "completed", "{done}");
    assert_eq!(params["result"]["content"][0]["text"], "stepped", "{done}");

    assert_closed(&alice.next().await, 7);
    drop(alice.out);
    alice.serving.await.unwrap().unwrap();
}

#[tokio::test]
async fn another_principals_task_is_not_honoured_and_requests_are_checked() {
    let steps = Steps::new();
    let server = server_with(&steps, None);
    let mut alice = Client::connect(&server, "alice");
    let mut bob = Client::connect(&server, "bob");
    let task_id = alice.create(1).await;

    // Bob names Alice's task: acknowledged with nothing, and closed at once (nothing to send).
    bob.send(&listen(2, &[&task_id], tasks_caps())).await;
    let ack = bob.next().await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(ack["params"]["notifications"], json!({}), "{ack}");
    assert_closed(&bob.next().await, 2);

    // Only what was asked for is acknowledged: list-changed flags are not honoured.
    let flags = request(
        3,
        "subscriptions/listen",
        json!({"_meta": meta(tasks_caps()), "notifications": {"toolsListChanged": true}}),
    );
    bob.send(&flags).await;
    let ack = bob.next().await;
    assert_eq!(ack["params"]["notifications"], json!({}), "{ack}");
    assert_closed(&bob.next().await, 3);

    // taskIds without the tasks extension declared: the missing capability.
    let refused = alice.roundtrip(&listen(4, &[&task_id], json!({}))).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"],
        tasks_caps()["extensions"],
        "{refused}"
    );
    // Too many task ids, or a malformed filter: invalid params.
    let many: Vec<String> = (0..=64).map(|i| format!("t{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let refused = alice.roundtrip(&listen(5, &many, tasks_caps())).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let malformed = request(
        6,
        "subscriptions/listen",
        json!({"_meta": meta(tasks_caps()), "notifications": {"taskIds": "x"}}),
    );
    let refused = alice.roundtrip(&malformed).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

#[tokio::test]
async fn cancellation_ends_a_listen_and_frees_its_slot_under_the_per_principal_cap() {
    let steps = Steps::new();
    let server = server_with(&steps, None);
    let mut alice = Client::connect(&server, "alice");
    let task_id = alice.create(1).await;
    for sub in 10..18 {
        alice.send(&listen(sub, &[&task_id], tasks_caps())).await;
        let ack = alice.next().await;
        assert_eq!(subscription_id(&ack), sub, "{ack}");
        task_note(&alice.next().await, sub, &task_id);
    }
    // The ninth is refused while eight are open.
    let refused = alice
        .roundtrip(&listen(18, &[&task_id], tasks_caps()))
        .await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");

    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 10}});
    alice.send(&serde_json::to_vec(&cancel).unwrap()).await;
    // The cancelled listen's slot comes free (the transport drops it asynchronously).
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut sub = 19;
    loop {
        alice.send(&listen(sub, &[&task_id], tasks_caps())).await;
        let reply = alice.next().await;
        if reply["method"] == "notifications/subscriptions/acknowledged" {
            task_note(&alice.next().await, sub, &task_id);
            break;
        }
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        assert!(
            Instant::now() < deadline,
            "the cancelled listen kept its slot"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        sub += 1;
    }

    // The task ends: every open listen hears it and closes; the cancelled one says nothing.
    steps.step();
    steps.step();
    let mut open: Vec<i64> = (11..18).chain([sub]).collect();
    while !open.is_empty() {
        let message = alice.next().await;
        assert_ne!(subscription_id(&message), 10, "{message}");
        assert_ne!(message["id"], 10, "{message}");
        if let Some(id) = message["id"].as_i64() {
            assert_closed(&message, id);
            open.retain(|s| *s != id);
        }
    }
}

#[tokio::test]
async fn a_change_made_by_another_instance_is_seen_by_polling_the_store() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryTaskStore::default());
    let (steps_a, steps_b) = (Steps::new(), Steps::new());
    let server_a = server_with(&steps_a, Some(Arc::clone(&store)));
    let server_b = server_with(&steps_b, Some(store));
    let mut on_a = Client::connect(&server_a, "alice");
    let mut on_b = Client::connect(&server_b, "alice");
    let task_id = on_a.create(1).await;

    on_b.send(&listen(2, &[&task_id], tasks_caps())).await;
    let ack = on_b.next().await;
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([task_id]));
    task_note(&on_b.next().await, 2, &task_id);
    steps_a.step();
    steps_a.step();
    // Instance B never wrote the task: only its store poll can see these.
    let mut last = on_b.next().await;
    while last["params"]["status"] == "working" {
        task_note(&last, 2, &task_id);
        last = on_b.next().await;
    }
    assert_eq!(task_note(&last, 2, &task_id)["status"], "completed");
    assert_closed(&on_b.next().await, 2);
}

#[tokio::test]
async fn the_end_of_stdio_input_closes_an_open_listen_with_its_result() {
    let steps = Steps::new();
    let server = server_with(&steps, None);
    let mut alice = Client::connect(&server, "alice");
    let task_id = alice.create(1).await;
    alice.send(&listen(2, &[&task_id], tasks_caps())).await;
    alice.next().await;
    task_note(&alice.next().await, 2, &task_id);
    let started = Instant::now();
    // EOF: the listen ends with its result well before the shutdown grace cuts it off.
    alice.out.shutdown().await.unwrap();
    assert_closed(&alice.next().await, 2);
    assert!(started.elapsed() < StdioConfig::default().shutdown_grace());
    alice.serving.await.unwrap().unwrap();
}

#[cfg(feature = "http")]
mod transport_support;

/// Serves `server` to the anonymous principal `dev` over HTTP with `config` (on a free loopback
/// port); returns the address, the stop switch and the serving task.
#[cfg(feature = "http")]
async fn serve_http(
    server: Server,
    config: mcp_runtime::transport::HttpConfig,
) -> (
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    use mcp_runtime::transport::{AllowAnonymous, HttpServer};
    let config = config.with_bind("127.0.0.1:0".parse().unwrap());
    let bound = HttpServer::new(
        Arc::new(server) as Arc<dyn McpService>,
        Arc::new(AllowAnonymous(Principal::new("dev"))),
    )
    .with_config(config)
    .bind()
    .await
    .unwrap();
    let addr = bound.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(bound.serve_with_shutdown(async move {
        let _ = stopped.await;
    }));
    (addr, stop, serving)
}

/// The headers of a modern request for `method` (and tool `name`).
#[cfg(feature = "http")]
fn http_headers(
    method: &'static str,
    name: Option<&'static str>,
) -> Vec<(&'static str, &'static str)> {
    let mut h = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(name) = name {
        h.push(("Mcp-Name", name));
    }
    h
}

/// Starts a `stepper` task over HTTP (request `id`); returns its task id.
#[cfg(feature = "http")]
async fn create_over_http(addr: std::net::SocketAddr, id: i64) -> String {
    let created = transport_support::exchange(
        addr,
        "POST",
        "/mcp",
        &http_headers("tools/call", Some("stepper")),
        &call(id, "stepper", json!({}), tasks_caps()),
    )
    .await
    .json();
    created["result"]["taskId"].as_str().unwrap().to_owned()
}

#[cfg(feature = "http")]
#[tokio::test]
async fn over_http_a_listen_is_an_sse_stream_outliving_the_request_timeout() {
    use mcp_runtime::transport::HttpConfig;
    use transport_support::{read_response, send_raw};

    let steps = Steps::new();
    let config = HttpConfig::default()
        .with_request_timeout(Duration::from_secs(1))
        .unwrap();
    let (addr, stop, serving) = serve_http(server_with(&steps, None), config).await;
    let task_id = create_over_http(addr, 1).await;

    let started = Instant::now();
    let stream = send_raw(
        addr,
        "POST",
        "/mcp",
        &http_headers("subscriptions/listen", None),
        &listen(2, &[&task_id], tasks_caps()),
    )
    .await;
    // The task moves only after the ordinary request timeout has passed.
    let stepping = steps.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        stepping.step();
        tokio::time::sleep(Duration::from_millis(100)).await;
        stepping.step();
    });
    let response = read_response(stream).await;
    assert!(started.elapsed() >= Duration::from_millis(1500));
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    let events = response.sse_events();
    let (last, notes) = events.split_last().unwrap();
    assert_eq!(
        notes[0]["method"], "notifications/subscriptions/acknowledged",
        "{events:?}"
    );
    assert_eq!(
        notes[0]["params"]["notifications"]["taskIds"],
        json!([task_id])
    );
    for note in &notes[1..] {
        task_note(note, 2, &task_id);
    }
    assert_eq!(
        notes.last().unwrap()["params"]["status"],
        "completed",
        "{events:?}"
    );
    assert_closed(last, 2);

    stop.send(()).unwrap();
    serving.await.unwrap().unwrap();
}

/// A listen that has nothing to say for longer than `sse_keep_alive` gets `: keep-alive`
/// comments, each between two events, and our typed client reads through them to the result.
#[cfg(all(feature = "http", feature = "client"))]
#[tokio::test]
async fn a_quiet_listen_stream_gets_keep_alive_comments_that_clients_skip() {
    use mcp_runtime::client::{Client, HttpTransport};
    use mcp_runtime::transport::HttpConfig;
    use transport_support::{read_response, send_raw};

    let steps = Steps::new();
    let config = HttpConfig::default()
        .with_sse_keep_alive(Duration::from_millis(50))
        .unwrap();
    let (addr, _stop, _serving) = serve_http(server_with(&steps, None), config).await;
    let raw_task = create_over_http(addr, 1).await;
    let typed_task = create_over_http(addr, 2).await;
    // Both tasks stay quiet for several keep-alive intervals, then take their two steps.
    let stepping = steps.clone();
    tokio::spawn(async move {
        for _ in 0..2 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            stepping.step();
            tokio::time::sleep(Duration::from_millis(20)).await;
            stepping.step();
        }
    });

    // Both listens open at once, quiet until the steps: raw (comments on the wire, never
    // inside an event) and typed (the client reads past them to the listen's result).
    let raw = async {
        let body = listen(3, &[&raw_task], tasks_caps());
        let headers = http_headers("subscriptions/listen", None);
        read_response(send_raw(addr, "POST", "/mcp", &headers, &body).await).await
    };
    let client = Client::builder(HttpTransport::new(&format!("http://{addr}/mcp")).unwrap())
        .build()
        .with_capabilities(serde_json::from_value(tasks_caps()).unwrap());
    let params = json!({"notifications": {"taskIds": [typed_task]}});
    let typed =
        client.request::<Value>("subscriptions/listen", params.as_object().unwrap().clone());
    let (response, typed) = tokio::join!(raw, typed);

    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    let body = String::from_utf8(response.body.clone()).unwrap();
    let blocks: Vec<&str> = body.split("\n\n").filter(|b| !b.is_empty()).collect();
    let comments = blocks.iter().filter(|b| **b == ": keep-alive").count();
    assert!(comments >= 2, "{body}");
    for block in &blocks {
        assert!(
            *block == ": keep-alive" || !block.contains("keep-alive"),
            "a comment inside an event: {body}"
        );
    }
    let events = response.sse_events();
    assert_eq!(events.len(), blocks.len() - comments, "{body}");
    assert_closed(events.last().unwrap(), 3);

    let result = typed.unwrap();
    assert_eq!(result["resultType"], "complete", "{result}");
}
