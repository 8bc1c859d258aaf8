//! Streamable HTTP transport over real sockets.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns: panics are failures

mod log_capture;
mod transport_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use log_capture::{Capture, Format};
use mcp_runtime::Principal;
use mcp_runtime::service::McpService;
use mcp_runtime::transport::{AllowAnonymous, Authenticator, BearerTokens, HttpConfig, HttpServer};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use transport_support::{TestService, VERSION, exchange, read_response, request, send_raw};

const TOKEN: &str = "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0";

struct Server {
    addr: SocketAddr,
    service: Arc<TestService>,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start_with(config: HttpConfig, auth: Arc<dyn Authenticator>) -> Server {
    let service = TestService::new();
    let config = config.with_bind("127.0.0.1:0".parse().unwrap());
    let bound = HttpServer::new(Arc::clone(&service) as Arc<dyn McpService>, auth)
        .with_config(config)
        .bind()
        .await
        .unwrap();
    let addr = bound.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let done = tokio::spawn(bound.serve_with_shutdown(async move {
        let _ = stopped.await;
    }));
    Server {
        addr,
        service,
        stop: Some(stop),
        done,
    }
}

async fn start() -> Server {
    start_with(
        HttpConfig::default(),
        Arc::new(AllowAnonymous(Principal::new("dev"))),
    )
    .await
}

/// Headers a conforming client sends for `method` (and `name`, when the method has one).
fn mcp_headers<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", VERSION),
        ("Mcp-Method", method),
    ];
    if let Some(name) = name {
        h.push(("Mcp-Name", name));
    }
    h
}

async fn post(
    server: &Server,
    headers: &[(&str, &str)],
    body: &Value,
) -> transport_support::HttpResponse {
    exchange(
        server.addr,
        "POST",
        "/mcp",
        headers,
        &serde_json::to_vec(body).unwrap(),
    )
    .await
}

fn assert_header_mismatch(
    response: &transport_support::HttpResponse,
    id: Option<Value>,
    needle: &str,
) {
    assert_eq!(
        response.status,
        400,
        "{:?}",
        String::from_utf8_lossy(&response.body)
    );
    let body = response.json();
    assert_eq!(body["error"]["code"], -32020, "{body}");
    assert_eq!(body.get("id").cloned(), id, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(needle),
        "{message:?} should mention {needle:?}"
    );
}

#[tokio::test]
async fn plain_request_gets_json_and_no_session() {
    let server = start().await;
    let mut headers = mcp_headers("echo", None);
    headers.push(("Mcp-Session-Id", "abc123"));
    let response = post(
        &server,
        &headers,
        &request(json!(1), "echo", json!({"x": 1})),
    )
    .await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert!(
        response.header("mcp-session-id").is_none(),
        "never mint or echo a session id"
    );
    let body = response.json();
    assert_eq!(body["id"], 1);
    assert_eq!(body["result"]["params"]["x"], 1);
    assert_eq!(body["result"]["principal"], "dev");
}

#[tokio::test]
async fn get_and_delete_are_405_with_allow_post() {
    let server = start().await;
    for verb in ["GET", "DELETE", "PUT"] {
        let response = exchange(
            server.addr,
            verb,
            "/mcp",
            &[("Accept", "text/event-stream")],
            b"",
        )
        .await;
        assert_eq!(response.status, 405, "{verb}");
        assert_eq!(response.header("allow"), Some("POST"), "{verb}");
    }
    // Other paths are not the MCP endpoint.
    let response = exchange(server.addr, "POST", "/other", &[], b"{}").await;
    assert_eq!(response.status, 404);
}

#[tokio::test]
async fn accepted_notification_is_202_with_empty_body() {
    let server = start().await;
    let note = json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}});
    // Lenient: a notification needs no MCP headers at all.
    let response = post(&server, &[("Content-Type", "application/json")], &note).await;
    assert_eq!(response.status, 202);
    assert!(response.body.is_empty());
    assert_eq!(server.service.notifications.lock().unwrap().len(), 1);
    // ...but a present header that contradicts the body is still a mismatch, without id.
    let response = post(&server, &[("Mcp-Method", "notifications/other")], &note).await;
    assert_header_mismatch(&response, None, "Mcp-Method");
    // A notification the service rejects gets an error status, never 202.
    let reject = json!({"jsonrpc":"2.0","method":"reject/me"});
    let response = post(&server, &[], &reject).await;
    assert_eq!(response.status, 400);
    assert!(response.json().get("id").is_none());
}

#[tokio::test]
async fn reply_kinds_map_to_statuses() {
    let server = start().await;
    let response = post(
        &server,
        &mcp_headers("nope/nope", None),
        &request(json!("a"), "nope/nope", Value::Null),
    )
    .await;
    assert_eq!(response.status, 404);
    assert_eq!(response.json()["error"]["code"], -32601);
    assert_eq!(response.json()["id"], "a");

    let response = post(
        &server,
        &mcp_headers("badmeta", None),
        &request(json!(2), "badmeta", Value::Null),
    )
    .await;
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["error"]["code"], -32602);

    for (code, status) in [(-32602, 200), (-32603, 200), (-32021, 400), (-32022, 400)] {
        let body = request(json!(3), "fail", json!({"code": code}));
        let response = post(&server, &mcp_headers("fail", None), &body).await;
        assert_eq!(response.status, status, "code {code}");
        assert_eq!(response.json()["error"]["code"], code);
    }
}

#[tokio::test]
async fn envelope_errors_are_400() {
    let server = start().await;
    let response = exchange(
        server.addr,
        "POST",
        "/mcp",
        &mcp_headers("echo", None),
        b"{not json",
    )
    .await;
    assert_eq!(response.status, 400);
    let body = response.json();
    assert_eq!(body["error"]["code"], -32700);
    assert!(body.get("id").is_none());

    let batch = json!([request(json!(1), "echo", Value::Null)]);
    let response = post(&server, &mcp_headers("echo", None), &batch).await;
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["error"]["code"], -32600);

    let null_id = json!({"jsonrpc":"2.0","id":null,"method":"echo"});
    let response = post(&server, &mcp_headers("echo", None), &null_id).await;
    assert_eq!(response.status, 400);
    assert!(response.json().get("id").is_none());
}

#[tokio::test]
async fn protocol_version_header_rules() {
    let server = start().await;
    let body = request(json!(10), "echo", Value::Null);
    let headers: Vec<_> = mcp_headers("echo", None)
        .into_iter()
        .filter(|(k, _)| *k != "MCP-Protocol-Version")
        .collect();
    assert_header_mismatch(
        &post(&server, &headers, &body).await,
        Some(json!(10)),
        "MCP-Protocol-Version",
    );

    let mut wrong = headers.clone();
    wrong.push(("MCP-Protocol-Version", "2025-11-25"));
    assert_header_mismatch(
        &post(&server, &wrong, &body).await,
        Some(json!(10)),
        "2025-11-25",
    );

    // Header names are case-insensitive.
    let mut lower = headers.clone();
    lower.push(("mcp-protocol-version", VERSION));
    assert_eq!(post(&server, &lower, &body).await.status, 200);
}

#[tokio::test]
async fn method_header_rules() {
    let server = start().await;
    let body = request(json!(11), "tools/call", json!({"name": "search"}));
    let mut headers = mcp_headers("TOOLS/CALL", Some("search"));
    assert_header_mismatch(
        &post(&server, &headers, &body).await,
        Some(json!(11)),
        "TOOLS/CALL",
    );
    headers.retain(|(k, _)| *k != "Mcp-Method");
    assert_header_mismatch(
        &post(&server, &headers, &body).await,
        Some(json!(11)),
        "Mcp-Method",
    );
}

#[tokio::test]
async fn name_header_rules() {
    let server = start().await;
    let body = request(json!(12), "tools/call", json!({"name": "search"}));
    assert_eq!(
        post(&server, &mcp_headers("tools/call", Some("search")), &body)
            .await
            .status,
        200
    );
    assert_header_mismatch(
        &post(&server, &mcp_headers("tools/call", Some("Search")), &body).await,
        Some(json!(12)),
        "'Search' does not match body value 'search'",
    );
    assert_header_mismatch(
        &post(&server, &mcp_headers("tools/call", None), &body).await,
        Some(json!(12)),
        "Mcp-Name",
    );

    let prompt = request(json!(13), "prompts/get", json!({"name": "greet"}));
    assert_eq!(
        post(&server, &mcp_headers("prompts/get", Some("greet")), &prompt)
            .await
            .status,
        200
    );
    assert_header_mismatch(
        &post(&server, &mcp_headers("prompts/get", Some("other")), &prompt).await,
        Some(json!(13)),
        "Mcp-Name",
    );

    let read = request(
        json!(14),
        "resources/read",
        json!({"uri": "file:///notes/a.md"}),
    );
    assert_eq!(
        post(
            &server,
            &mcp_headers("resources/read", Some("file:///notes/a.md")),
            &read
        )
        .await
        .status,
        200
    );
    assert_header_mismatch(
        &post(
            &server,
            &mcp_headers("resources/read", Some("file:///notes/b.md")),
            &read,
        )
        .await,
        Some(json!(14)),
        "Mcp-Name",
    );

    // The tasks extension's methods mirror params.taskId.
    for (n, method) in ["tasks/get", "tasks/update", "tasks/cancel"]
        .into_iter()
        .enumerate()
    {
        let id = json!(20 + n);
        let task = request(
            id.clone(),
            method,
            json!({"taskId": "t-1", "inputResponses": {}}),
        );
        // Matching headers pass the transport (the test service knows no tasks method).
        assert_ne!(
            post(&server, &mcp_headers(method, Some("t-1")), &task)
                .await
                .status,
            400,
            "{method}"
        );
        assert_header_mismatch(
            &post(&server, &mcp_headers(method, Some("t-2")), &task).await,
            Some(id.clone()),
            "Mcp-Name",
        );
        assert_header_mismatch(
            &post(&server, &mcp_headers(method, None), &task).await,
            Some(id),
            "Mcp-Name",
        );
    }
}

#[tokio::test]
async fn name_header_base64_sentinel() {
    let server = start().await;
    let body = request(json!(15), "tools/call", json!({"name": "météo"}));
    // "météo" in UTF-8, base64-encoded.
    let ok = mcp_headers("tools/call", Some("=?base64?bcOpdMOpbw==?="));
    assert_eq!(post(&server, &ok, &body).await.status, 200);
    let other = mcp_headers("tools/call", Some("=?base64?bWV0ZW8=?=")); // "meteo"
    assert_header_mismatch(
        &post(&server, &other, &body).await,
        Some(json!(15)),
        "meteo",
    );
    let broken = mcp_headers("tools/call", Some("=?base64?@@@?="));
    assert_header_mismatch(
        &post(&server, &broken, &body).await,
        Some(json!(15)),
        "invalid characters",
    );
    // The markers are case-sensitive: an uppercase sentinel is a literal (mismatching) value.
    let upper = mcp_headers("tools/call", Some("=?BASE64?bcOpdMOpbw==?="));
    assert_header_mismatch(
        &post(&server, &upper, &body).await,
        Some(json!(15)),
        "Mcp-Name",
    );
}

#[tokio::test]
async fn param_header_rules() {
    let server = start().await;
    let body = request(
        json!(16),
        "tools/call",
        json!({"name":"weather","arguments":{"region":"eu-west","opts":{"count":3}}}),
    );
    let mut headers = mcp_headers("tools/call", Some("weather"));
    headers.push(("Mcp-Param-Region", "eu-west"));
    headers.push(("mcp-param-count", "3.0"));
    assert_eq!(post(&server, &headers, &body).await.status, 200);

    let mut wrong = mcp_headers("tools/call", Some("weather"));
    wrong.push(("Mcp-Param-Region", "EU-WEST"));
    wrong.push(("Mcp-Param-Count", "3"));
    assert_header_mismatch(
        &post(&server, &wrong, &body).await,
        Some(json!(16)),
        "Mcp-Param-Region",
    );

    let mut missing = mcp_headers("tools/call", Some("weather"));
    missing.push(("Mcp-Param-Region", "=?base64?ZXUtd2VzdA==?="));
    assert_header_mismatch(
        &post(&server, &missing, &body).await,
        Some(json!(16)),
        "Mcp-Param-Count",
    );

    // Null or absent values need no header.
    let sparse = request(
        json!(17),
        "tools/call",
        json!({"name":"weather","arguments":{"region":null}}),
    );
    assert_eq!(
        post(
            &server,
            &mcp_headers("tools/call", Some("weather")),
            &sparse
        )
        .await
        .status,
        200
    );
}

#[tokio::test]
async fn foreign_origin_is_403_without_id() {
    let server = start().await;
    let body = request(json!(20), "echo", Value::Null);
    let mut headers = mcp_headers("echo", None);
    headers.push(("Origin", "http://evil.example"));
    let response = post(&server, &headers, &body).await;
    assert_eq!(response.status, 403);
    let json = response.json();
    assert!(json.get("id").is_none());
    assert!(json["error"]["code"].is_i64());
    // Origin is checked before the verb.
    let response = exchange(
        server.addr,
        "GET",
        "/mcp",
        &[("Origin", "http://evil.example")],
        b"",
    )
    .await;
    assert_eq!(response.status, 403);

    let mut local = mcp_headers("echo", None);
    local.push(("Origin", "http://localhost:5173"));
    assert_eq!(post(&server, &local, &body).await.status, 200);
}

#[tokio::test]
async fn bearer_auth_gates_everything() {
    let tokens = BearerTokens::parse(&format!("alice {TOKEN}\n")).unwrap();
    let server = start_with(HttpConfig::default(), Arc::new(tokens)).await;
    // Rejected before the body is even parsed.
    let response = exchange(server.addr, "POST", "/mcp", &[], b"garbage").await;
    assert_eq!(response.status, 401);
    let challenge = response.header("www-authenticate").unwrap();
    assert!(
        challenge.starts_with("Bearer") && challenge.contains("realm="),
        "{challenge}"
    );

    let body = request(json!(21), "echo", Value::Null);
    let mut bad = mcp_headers("echo", None);
    bad.push((
        "Authorization",
        "Bearer Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx1",
    ));
    let response = post(&server, &bad, &body).await;
    assert_eq!(response.status, 401);
    assert!(
        response
            .header("www-authenticate")
            .unwrap()
            .contains(r#"error="invalid_token""#)
    );
    assert_eq!(
        server
            .service
            .completed
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );

    let auth = format!("Bearer {TOKEN}");
    let mut good = mcp_headers("echo", None);
    good.push(("Authorization", &auth));
    let response = post(&server, &good, &body).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.json()["result"]["principal"], "alice");
}

#[tokio::test]
async fn oversized_body_is_413() {
    let config = HttpConfig::default().with_max_body_bytes(256).unwrap();
    let server = start_with(config, Arc::new(AllowAnonymous(Principal::new("dev")))).await;
    let body = request(json!(22), "echo", json!({"pad": "x".repeat(400)}));
    let response = post(&server, &mcp_headers("echo", None), &body).await;
    assert_eq!(response.status, 413);
    assert_eq!(response.json()["error"]["code"], -32600);
    let small = request(json!(23), "echo", Value::Null);
    assert_eq!(
        post(&server, &mcp_headers("echo", None), &small)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn notifications_switch_to_sse_and_final_response_closes() {
    let server = start().await;
    let body = request(json!("p1"), "progress", json!({"count": 3, "then_ms": 20}));
    let response = post(&server, &mcp_headers("progress", None), &body).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    assert_eq!(response.header("x-accel-buffering"), Some("no"));
    let events = response.sse_events();
    assert_eq!(events.len(), 4, "{events:?}");
    for (i, event) in events[..3].iter().enumerate() {
        assert_eq!(event["method"], "notifications/progress");
        assert_eq!(event["params"]["progress"], i as u64 + 1);
    }
    assert_eq!(events[3]["id"], "p1");
    assert_eq!(events[3]["result"]["sent"], 3);

    // Notifications emitted right before returning still precede the final response.
    let body = request(json!("p2"), "progress", json!({"count": 2}));
    let response = post(&server, &mcp_headers("progress", None), &body).await;
    let events = response.sse_events();
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[2]["id"], "p2");
}

#[tokio::test]
async fn accept_header_decides_stream_kind() {
    let server = start().await;
    let body = request(json!(30), "progress", json!({"count": 2}));
    let mut json_only = mcp_headers("progress", None);
    json_only.retain(|(k, _)| *k != "Accept");
    json_only.push(("Accept", "application/json"));
    let response = post(&server, &json_only, &body).await;
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.json()["result"]["sent"], 2);

    let mut sse_only = mcp_headers("echo", None);
    sse_only.retain(|(k, _)| *k != "Accept");
    sse_only.push(("Accept", "text/event-stream"));
    let response = post(&server, &sse_only, &request(json!(31), "echo", Value::Null)).await;
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    assert_eq!(response.sse_events()[0]["id"], 31);

    let mut html = mcp_headers("echo", None);
    html.retain(|(k, _)| *k != "Accept");
    html.push(("Accept", "text/html"));
    let response = post(&server, &html, &request(json!(32), "echo", Value::Null)).await;
    assert_eq!(response.status, 406);
}

#[tokio::test]
async fn timeout_answers_internal_error_with_id() {
    let config = HttpConfig::default()
        .with_request_timeout(Duration::from_millis(150))
        .unwrap();
    let server = start_with(config, Arc::new(AllowAnonymous(Principal::new("dev")))).await;
    let body = request(json!(40), "slow", json!({"ms": 5000}));
    let response = post(&server, &mcp_headers("slow", None), &body).await;
    assert_eq!(response.status, 200);
    let json = response.json();
    assert_eq!(json["id"], 40);
    assert_eq!(json["error"]["code"], -32603);
    assert_eq!(server.service.cancelled(), 1, "the handler was dropped");
}

async fn wait_for(mut check: impl FnMut() -> bool) -> bool {
    for _ in 0..100 {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn client_disconnect_cancels_request() {
    let server = start().await;
    let body = serde_json::to_vec(&request(json!(50), "slow", json!({"ms": 10_000}))).unwrap();
    let stream = send_raw(
        server.addr,
        "POST",
        "/mcp",
        &mcp_headers("slow", None),
        &body,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(stream);
    assert!(
        wait_for(|| server.service.cancelled() == 1).await,
        "JSON-phase request not cancelled"
    );

    // Same once the response has become an SSE stream.
    let body = serde_json::to_vec(&request(
        json!(51),
        "progress",
        json!({"count": 1, "then_ms": 10_000}),
    ))
    .unwrap();
    let stream = send_raw(
        server.addr,
        "POST",
        "/mcp",
        &mcp_headers("progress", None),
        &body,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(stream);
    assert!(
        wait_for(|| server.service.cancelled() == 2).await,
        "SSE request not cancelled"
    );
}

#[tokio::test]
async fn graceful_shutdown_finishes_in_flight_requests() {
    let mut server = start().await;
    let body = serde_json::to_vec(&request(json!(60), "slow", json!({"ms": 200}))).unwrap();
    let stream = send_raw(
        server.addr,
        "POST",
        "/mcp",
        &mcp_headers("slow", None),
        &body,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    server.stop.take().unwrap().send(()).unwrap();
    let response = read_response(stream).await;
    assert_eq!(response.json()["result"]["slept"], 200);
    tokio::time::timeout(Duration::from_secs(5), &mut server.done)
        .await
        .expect("server stops after draining")
        .unwrap()
        .unwrap();
    assert!(
        tokio::net::TcpStream::connect(server.addr).await.is_err(),
        "listener closed"
    );
}

/// What a test running beside ours does: a server on its own thread, not capturing, refuses
/// a wrong token, so the refusal's log callsite is first reached there.
fn refuse_on_another_thread() {
    std::thread::spawn(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let tokens = BearerTokens::parse(&format!("alice {TOKEN}\n")).unwrap();
            let server = start_with(HttpConfig::default(), Arc::new(tokens)).await;
            let mut headers = mcp_headers("echo", None);
            headers.push(("Authorization", "Bearer WRONGTOKENWRONGTOKENWRONGTOKEN00"));
            let body = request(json!(1), "echo", Value::Null);
            assert_eq!(post(&server, &headers, &body).await.status, 401);
        });
    })
    .join()
    .unwrap();
}

#[tokio::test]
async fn logs_name_the_request_but_never_secrets() {
    let (logs, _capturing) = Capture::install(Format::Text, tracing::Level::TRACE);
    // Holds however the tests beside this one touched the log callsites first.
    refuse_on_another_thread();
    let tokens = BearerTokens::parse(&format!("alice {TOKEN}\n")).unwrap();
    let server = start_with(HttpConfig::default(), Arc::new(tokens)).await;
    let auth = format!("Bearer {TOKEN}");
    let mut headers = mcp_headers("tools/call", Some("search"));
    headers.push(("Authorization", &auth));
    let body = request(
        json!("req-77"),
        "tools/call",
        json!({"name":"search","requestState":"SECRET-STATE-abc","inputResponses":{"k":"SECRET-ANSWER"}}),
    );
    assert_eq!(post(&server, &headers, &body).await.status, 200);
    let mut bad = mcp_headers("echo", None);
    let wrong = "Bearer WRONGTOKENWRONGTOKENWRONGTOKEN00";
    bad.push(("Authorization", wrong));
    assert_eq!(
        post(&server, &bad, &request(json!(2), "echo", Value::Null))
            .await
            .status,
        401
    );

    let text = logs.text();
    assert!(
        text.contains("req-77") && text.contains("tools/call") && text.contains("alice"),
        "{text}"
    );
    assert!(text.contains("status=401"), "{text}");
    for secret in [
        TOKEN,
        "WRONGTOKEN",
        "SECRET-STATE",
        "SECRET-ANSWER",
        "Bearer",
    ] {
        assert!(!text.contains(secret), "log leaked {secret}: {text}");
    }
}

#[tokio::test]
async fn bodies_up_to_the_limit_are_accepted() {
    // Larger than axum's 2 MiB default extractor limit, below our 4 MiB default.
    let server = start().await;
    let body = request(
        json!(70),
        "echo",
        json!({"pad": "y".repeat(3 * 1024 * 1024)}),
    );
    let response = post(&server, &mcp_headers("echo", None), &body).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.json()["id"], 70);
}

#[tokio::test]
async fn keep_alive_connection_serves_several_requests() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = start().await;
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut pending = Vec::new();
    for id in 1..=3 {
        let body = serde_json::to_vec(&request(json!(id), "echo", Value::Null)).unwrap();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (k, v) in mcp_headers("echo", None) {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(&body).await.unwrap();
        // Read exactly one response: headers, then Content-Length bytes.
        let (head_end, length) = loop {
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "connection closed after {} responses", id - 1);
            pending.extend_from_slice(&chunk[..n]);
            if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap();
                if pending.len() >= end + 4 + length {
                    break (end + 4, length);
                }
            }
        };
        let reply: Value = serde_json::from_slice(&pending[head_end..head_end + length]).unwrap();
        assert_eq!(reply["id"], id);
        pending.drain(..head_end + length);
    }
}

/// The bound server calls the MCP endpoint directly, without the router; it must answer
/// exactly the paths the router answers when the same server is embedded with `router()`.
#[tokio::test]
async fn the_endpoint_answers_its_own_path_the_way_the_router_does() {
    let bound = start().await;
    let embedded = {
        let service = TestService::new();
        let router = HttpServer::new(
            service as Arc<dyn McpService>,
            Arc::new(AllowAnonymous(Principal::new("dev"))),
        )
        .router()
        .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            mcp_runtime::transport::serve_router(
                listener,
                router,
                &HttpConfig::default(),
                std::future::pending(),
            )
            .await
        });
        addr
    };
    let body = serde_json::to_vec(&request(json!(7), "echo", json!({"x": 1}))).unwrap();
    let headers = mcp_headers("echo", None);
    for addr in [bound.addr, embedded] {
        let seen =
            async |verb: &str, path: &str| exchange(addr, verb, path, &headers, &body).await.status;
        // The query is not part of the path.
        let served = exchange(addr, "POST", "/mcp?trace=1", &headers, &body).await;
        assert_eq!(served.status, 200, "{addr}");
        assert_eq!(served.json()["result"]["params"]["x"], 1);
        assert_eq!(seen("POST", "/mcp/").await, 404, "{addr}: a trailing slash");
        assert_eq!(
            seen("POST", "/MCP").await,
            404,
            "{addr}: paths are case-sensitive"
        );
        assert_eq!(
            seen("POST", "/mcp/x").await,
            404,
            "{addr}: below the endpoint"
        );
        assert_eq!(seen("DELETE", "/mcp").await, 405, "{addr}: the verb check");
        assert_eq!(
            seen("GET", "/healthz").await,
            200,
            "{addr}: the router's own routes"
        );
    }
}
