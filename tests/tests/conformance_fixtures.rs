//! The conformance fixtures, driven over real Streamable HTTP the way the official suite drives
//! them, so a regression shows up in `cargo test` without Node or the suite installed.
//!
//! Each test starts the fixture server in-process on a loopback port chosen by the kernel and
//! talks raw HTTP/1.1 to it (one request per connection). The 2025-11-25 tests at the end use the
//! binary's own wiring (legacy adapter in front of the modern router) and answer the live
//! sampling/elicitation requests on the call's SSE stream.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

#[path = "../src/bin/conformance_server/mod.rs"]
#[allow(dead_code)]
mod conformance_server;

use std::net::SocketAddr;
use std::sync::Arc;

use mcp_runtime::Principal;
use mcp_runtime::prelude::*;
use mcp_runtime::transport::{AllowAnonymous, HttpConfig, HttpServer};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use conformance_server::{content, mrtr, schemas, streaming};

const VERSION: &str = "2026-07-28";

/// Starts the fixture server on 127.0.0.1:0 and returns its address.
async fn start() -> SocketAddr {
    let server = Server::builder(Implementation::new("conformance-test", "0"))
        .tools(
            content::tools()
                .merge(streaming::tools())
                .merge(mrtr::tools())
                .merge(schemas::tools()),
        )
        .build()
        .expect("fixture server builds");
    let config = HttpConfig::default().with_bind(SocketAddr::from(([127, 0, 0, 1], 0)));
    let auth = Arc::new(AllowAnonymous(Principal::new("conformance")));
    let bound = HttpServer::new(Arc::new(server), auth)
        .with_config(config)
        .bind()
        .await
        .expect("bind loopback");
    let addr = bound.local_addr().expect("bound address");
    tokio::spawn(bound.serve_with_shutdown(std::future::pending()));
    addr
}

/// One HTTP exchange: status, content type, and every JSON message in the body (one for a JSON
/// response, one per `data:` line for SSE).
struct Exchange {
    status: u16,
    content_type: String,
    messages: Vec<Value>,
}

impl Exchange {
    /// The JSON-RPC response (the last message carrying `result` or `error`).
    fn response(&self) -> &Value {
        self.messages
            .iter()
            .rev()
            .find(|m| m.get("result").is_some() || m.get("error").is_some())
            .expect("a JSON-RPC response in the body")
    }

    fn result(&self) -> &Value {
        let r = self.response();
        assert!(r.get("error").is_none(), "unexpected error: {r}");
        &r["result"]
    }

    fn notifications(&self, method: &str) -> Vec<&Value> {
        self.messages
            .iter()
            .filter(|m| m["method"] == method)
            .collect()
    }
}

fn default_caps() -> Value {
    json!({ "sampling": {}, "elicitation": {}, "roots": { "listChanged": true } })
}

/// Posts one request with the standard headers the suite sends; `meta` is merged over the
/// default per-request `_meta` (protocol version, client info, every client capability).
async fn call(addr: SocketAddr, method: &str, mut params: Value, meta: Value) -> Exchange {
    let mut full_meta = json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": { "name": "fixture-test", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": default_caps(),
    });
    if let (Some(m), Some(extra)) = (full_meta.as_object_mut(), meta.as_object()) {
        for (k, v) in extra {
            m.insert(k.clone(), v.clone());
        }
    }
    params["_meta"] = full_meta;
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let body = json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params }).to_string();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: {VERSION}\r\nMcp-Method: {method}\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(name) = name {
        head.push_str(&format!("Mcp-Name: {name}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("write head");
    stream.write_all(body.as_bytes()).await.expect("write body");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read response");
    parse_http(&raw)
}

fn parse_http(raw: &[u8]) -> Exchange {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").expect("HTTP head");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status code");
    let header = |name: &str| {
        head.lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
            })
            .unwrap_or_default()
    };
    let body = if header("transfer-encoding").eq_ignore_ascii_case("chunked") {
        dechunk(body)
    } else {
        body.to_owned()
    };
    let content_type = header("content-type");
    let messages = if content_type.starts_with("text/event-stream") {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| serde_json::from_str(d.trim()).expect("SSE data is JSON"))
            .collect()
    } else if body.trim().is_empty() {
        Vec::new()
    } else {
        vec![serde_json::from_str(body.trim()).expect("JSON body")]
    };
    Exchange {
        status,
        content_type,
        messages,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

fn tool_call(name: &str) -> Value {
    json!({ "name": name, "arguments": {} })
}

fn first_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn tools_list_names_and_describes_every_fixture() {
    let addr = start().await;
    let ex = call(addr, "tools/list", json!({}), json!({})).await;
    assert_eq!(ex.status, 200);
    let tools = ex.result()["tools"]
        .as_array()
        .expect("tools array")
        .clone();
    assert!(tools.len() >= 19, "only {} tools", tools.len());
    for tool in &tools {
        let name = tool["name"].as_str().expect("name");
        assert!(
            !name.is_empty()
                && name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c)),
            "bad tool name {name}"
        );
        assert!(
            tool["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{name} has no description"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
    }
}

#[tokio::test]
async fn content_fixtures_return_the_expected_blocks() {
    let addr = start().await;
    let simple = call(
        addr,
        "tools/call",
        json!({ "name": "test_simple_text" }),
        json!({}),
    )
    .await;
    assert_eq!(
        first_text(simple.result()),
        "This is a simple text response for testing."
    );

    let image = call(
        addr,
        "tools/call",
        tool_call("test_image_content"),
        json!({}),
    )
    .await;
    assert_eq!(image.result()["content"][0]["type"], "image");
    assert_eq!(image.result()["content"][0]["mimeType"], "image/png");

    let audio = call(
        addr,
        "tools/call",
        tool_call("test_audio_content"),
        json!({}),
    )
    .await;
    assert_eq!(audio.result()["content"][0]["mimeType"], "audio/wav");
    assert!(
        audio.result()["content"][0]["data"]
            .as_str()
            .is_some_and(|d| !d.is_empty())
    );

    let embedded = call(
        addr,
        "tools/call",
        tool_call("test_embedded_resource"),
        json!({}),
    )
    .await;
    let resource = &embedded.result()["content"][0]["resource"];
    assert_eq!(resource["uri"], "test://embedded-resource");
    assert_eq!(resource["mimeType"], "text/plain");

    let mixed = call(
        addr,
        "tools/call",
        tool_call("test_multiple_content_types"),
        json!({}),
    )
    .await;
    let types: Vec<&str> = mixed.result()["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|b| b["type"].as_str())
        .collect();
    assert_eq!(types, ["text", "image", "resource"]);

    let error = call(
        addr,
        "tools/call",
        tool_call("test_error_handling"),
        json!({}),
    )
    .await;
    assert_eq!(error.result()["isError"], true);
    assert_eq!(first_text(error.result()), content::ERROR_MESSAGE);
}

#[tokio::test]
async fn progress_arrives_on_the_post_stream_in_order() {
    let addr = start().await;
    let ex = call(
        addr,
        "tools/call",
        tool_call("test_tool_with_progress"),
        json!({ "progressToken": "progress-test-1" }),
    )
    .await;
    assert!(
        ex.content_type.starts_with("text/event-stream"),
        "{}",
        ex.content_type
    );
    let progress: Vec<f64> = ex
        .notifications("notifications/progress")
        .iter()
        .inspect(|n| assert_eq!(n["params"]["progressToken"], "progress-test-1"))
        .filter_map(|n| n["params"]["progress"].as_f64())
        .collect();
    assert_eq!(progress, [0.0, 50.0, 100.0]);
    assert!(ex.result()["content"].is_array());
}

#[tokio::test]
async fn logs_only_when_the_request_sets_a_log_level() {
    let addr = start().await;
    let quiet = call(
        addr,
        "tools/call",
        tool_call("test_tool_with_logging"),
        json!({}),
    )
    .await;
    assert!(quiet.notifications("notifications/message").is_empty());
    let loud = call(
        addr,
        "tools/call",
        tool_call("test_tool_with_logging"),
        json!({ "io.modelcontextprotocol/logLevel": "debug" }),
    )
    .await;
    let logs: Vec<&str> = loud
        .notifications("notifications/message")
        .iter()
        .filter_map(|n| n["params"]["data"].as_str())
        .collect();
    assert_eq!(
        logs,
        [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed"
        ]
    );
}

#[tokio::test]
async fn missing_sampling_capability_is_a_400_naming_exactly_sampling() {
    let addr = start().await;
    let ex = call(
        addr,
        "tools/call",
        tool_call("test_missing_capability"),
        json!({ "io.modelcontextprotocol/clientCapabilities": {} }),
    )
    .await;
    assert_eq!(ex.status, 400);
    let error = &ex.response()["error"];
    assert_eq!(error["code"], -32021);
    assert_eq!(
        error["data"]["requiredCapabilities"],
        json!({ "sampling": {} })
    );
    assert_eq!(ex.response()["id"], 7);
}

#[tokio::test]
async fn elicitation_round_trip_greets_the_user() {
    let addr = start().await;
    let tool = "test_input_required_result_elicitation";
    let first = call(addr, "tools/call", tool_call(tool), json!({})).await;
    let r1 = first.result();
    assert_eq!(r1["resultType"], "input_required");
    assert_eq!(
        r1["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    let schema = &r1["inputRequests"]["user_name"]["params"]["requestedSchema"];
    assert_eq!(schema["properties"]["name"]["type"], "string");
    assert_eq!(schema["required"], json!(["name"]));

    let mut retry = tool_call(tool);
    retry["inputResponses"] =
        json!({ "user_name": { "action": "accept", "content": { "name": "Alice" } } });
    retry["requestState"] = r1["requestState"].clone();
    let second = call(addr, "tools/call", retry, json!({})).await;
    assert_eq!(first_text(second.result()), "Hello, Alice!");
    assert_ne!(second.result()["resultType"], "input_required");
}

#[tokio::test]
async fn a_wrong_key_or_malformed_answer_is_asked_for_again() {
    let addr = start().await;
    let tool = "test_input_required_result_elicitation";
    for responses in [
        json!({ "wrong_key": { "action": "accept", "content": { "data": "x" } } }),
        json!({ "user_name": 12345 }),
    ] {
        let mut params = tool_call(tool);
        params["inputResponses"] = responses;
        let ex = call(addr, "tools/call", params, json!({})).await;
        assert_eq!(ex.result()["resultType"], "input_required");
        assert!(ex.result()["inputRequests"]["user_name"].is_object());
    }
}

#[tokio::test]
async fn multi_round_issues_a_fresh_state_per_round() {
    let addr = start().await;
    let tool = "test_input_required_result_multi_round";
    let r1 = call(addr, "tools/call", tool_call(tool), json!({})).await;
    let r1 = r1.result().clone();
    assert!(r1["inputRequests"]["step1"].is_object());

    let mut p2 = tool_call(tool);
    p2["inputResponses"] =
        json!({ "step1": { "action": "accept", "content": { "name": "Alice" } } });
    p2["requestState"] = r1["requestState"].clone();
    let r2 = call(addr, "tools/call", p2, json!({})).await;
    let r2 = r2.result().clone();
    assert_eq!(r2["resultType"], "input_required");
    assert!(r2["inputRequests"]["step2"].is_object());
    assert_ne!(r2["requestState"], r1["requestState"]);

    let mut p3 = tool_call(tool);
    p3["inputResponses"] =
        json!({ "step2": { "action": "accept", "content": { "color": "blue" } } });
    p3["requestState"] = r2["requestState"].clone();
    let r3 = call(addr, "tools/call", p3, json!({})).await;
    assert_eq!(first_text(r3.result()), "Alice likes blue.");
}

#[tokio::test]
async fn multiple_inputs_come_in_one_round_and_complete_together() {
    let addr = start().await;
    let tool = "test_input_required_result_multiple_inputs";
    let r1 = call(addr, "tools/call", tool_call(tool), json!({})).await;
    let r1 = r1.result().clone();
    let methods: Vec<&str> = ["user_name", "greeting", "client_roots"]
        .iter()
        .filter_map(|k| r1["inputRequests"][k]["method"].as_str())
        .collect();
    assert_eq!(
        methods,
        ["elicitation/create", "sampling/createMessage", "roots/list"]
    );

    let mut p2 = tool_call(tool);
    p2["inputResponses"] = json!({
        "user_name": { "action": "accept", "content": { "name": "Alice" } },
        "greeting": { "role": "assistant", "content": { "type": "text", "text": "Hi" },
                      "model": "m", "stopReason": "endTurn" },
        "client_roots": { "roots": [{ "uri": "file:///test/root", "name": "Test Root" }] },
    });
    p2["requestState"] = r1["requestState"].clone();
    let r2 = call(addr, "tools/call", p2, json!({})).await;
    assert_eq!(
        first_text(r2.result()),
        "Hi Alice (roots: file:///test/root)"
    );
}

#[tokio::test]
async fn tampered_state_is_a_json_rpc_error() {
    let addr = start().await;
    let tool = "test_input_required_result_tampered_state";
    let r1 = call(addr, "tools/call", tool_call(tool), json!({})).await;
    let state = r1.result()["requestState"]
        .as_str()
        .expect("state")
        .to_owned();
    let mut p2 = tool_call(tool);
    p2["inputResponses"] = json!({ "confirm": { "action": "accept", "content": { "ok": true } } });
    p2["requestState"] = json!(format!("{state}-TAMPERED"));
    let r2 = call(addr, "tools/call", p2, json!({})).await;
    assert_eq!(r2.response()["error"]["code"], -32602);
}

#[tokio::test]
async fn capability_fixture_asks_only_for_declared_capabilities() {
    let addr = start().await;
    let tool = "test_input_required_result_capabilities";
    let cases = [
        (json!({ "sampling": {} }), vec!["sampling/createMessage"]),
        (
            json!({ "elicitation": {}, "roots": {} }),
            vec!["elicitation/create", "roots/list"],
        ),
    ];
    for (caps, expected) in cases {
        let ex = call(
            addr,
            "tools/call",
            tool_call(tool),
            json!({ "io.modelcontextprotocol/clientCapabilities": caps }),
        )
        .await;
        let requests = ex.result()["inputRequests"]
            .as_object()
            .expect("inputRequests")
            .clone();
        let methods: Vec<&str> = requests
            .values()
            .filter_map(|r| r["method"].as_str())
            .collect();
        assert_eq!(methods, expected, "caps {caps}");
    }
    let none = call(
        addr,
        "tools/call",
        tool_call(tool),
        json!({ "io.modelcontextprotocol/clientCapabilities": {} }),
    )
    .await;
    assert_ne!(none.result()["resultType"], "input_required");
}

/// `json-schema-2020-12`: the hand-written schema is listed exactly as declared, every 2020-12
/// keyword included; `http-custom-header-server-validation`: the `#[tool]` schema carries the
/// `x-mcp-header` annotation on its string argument.
#[tokio::test]
async fn schema_fixtures_are_listed_as_declared() {
    let addr = start().await;
    let ex = call(addr, "tools/list", json!({}), json!({})).await;
    let tools = ex.result()["tools"]
        .as_array()
        .expect("tools array")
        .clone();
    let find = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed"))
            .clone()
    };
    let schema = &find("json_schema_2020_12_tool")["inputSchema"];
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["$defs"]["address"]["$anchor"], "addressDef");
    assert_eq!(schema["properties"]["address"]["$ref"], "#/$defs/address");
    assert_eq!(schema["allOf"][0]["anyOf"][1]["required"], json!(["email"]));
    assert_eq!(
        schema["if"]["properties"]["contactMethod"]["const"],
        "phone"
    );
    assert_eq!(schema["then"]["required"], json!(["phone"]));
    assert_eq!(schema["else"]["required"], json!(["email"]));
    assert_eq!(schema["additionalProperties"], false);

    let header_tool = find("test_param_header");
    let region = &header_tool["inputSchema"]["properties"]["region"];
    assert_eq!(region["type"], "string", "{header_tool}");
    assert_eq!(region["x-mcp-header"], "Region", "{header_tool}");
}

// ---- the 2025-11-25 era, through the legacy adapter ----------------------------------------

/// Starts the fixture server exactly as the binary wires it (both eras on one router).
async fn start_both_eras() -> SocketAddr {
    let config = HttpConfig::default().with_bind(SocketAddr::from(([127, 0, 0, 1], 0)));
    let server = conformance_server::build_server().expect("fixture server builds");
    let router = conformance_server::router(server, &config).expect("router");
    let listener = tokio::net::TcpListener::bind(config.bind())
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("bound address");
    tokio::spawn(async move {
        mcp_runtime::transport::serve_router(listener, router, &config, std::future::pending())
            .await
    });
    addr
}

/// A response read as it arrives: JSON messages from its (chunked) SSE or JSON body.
struct Live {
    stream: TcpStream,
    session: Option<String>,
    /// Undecoded bytes after the head.
    raw: Vec<u8>,
    chunked: bool,
    /// Decoded body not yet split into events.
    body: String,
}

impl Live {
    /// Posts `body` as a 2025-11-25 client (with `session` once one is open).
    async fn post(addr: SocketAddr, session: Option<&str>, body: &Value) -> Self {
        let body = body.to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\n",
            body.len()
        );
        if let Some(session) = session {
            head.push_str(&format!(
                "Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
            ));
        }
        head.push_str("\r\n");
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        stream.write_all(head.as_bytes()).await.expect("write head");
        stream.write_all(body.as_bytes()).await.expect("write body");
        let mut raw = Vec::new();
        let end = loop {
            if let Some(p) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
            let mut buf = [0u8; 4096];
            let n = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut buf))
                .await
                .expect("head within 10 s")
                .expect("read head");
            assert!(n > 0, "closed before the head");
            raw.extend_from_slice(&buf[..n]);
        };
        let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
        let session = head
            .lines()
            .find_map(|l| l.strip_prefix("mcp-session-id:"))
            .map(|v| {
                // Header values are case-sensitive: take the original bytes.
                let at = head.find(v).unwrap();
                String::from_utf8_lossy(&raw[at..at + v.len()])
                    .trim()
                    .to_owned()
            });
        Live {
            stream,
            session,
            chunked: head.contains("transfer-encoding: chunked"),
            raw: raw[end + 4..].to_vec(),
            body: String::new(),
        }
    }

    /// Moves complete chunks (or everything, unchunked) from `raw` into `body`.
    fn decode(&mut self) {
        if !self.chunked {
            self.body.push_str(&String::from_utf8_lossy(&self.raw));
            self.raw.clear();
            return;
        }
        while let Some(eol) = self.raw.windows(2).position(|w| w == b"\r\n") {
            let size =
                usize::from_str_radix(std::str::from_utf8(&self.raw[..eol]).unwrap().trim(), 16)
                    .expect("chunk size");
            if self.raw.len() < eol + 2 + size + 2 {
                return;
            }
            self.body
                .push_str(&String::from_utf8_lossy(&self.raw[eol + 2..eol + 2 + size]));
            self.raw.drain(..eol + 2 + size + 2);
        }
    }

    /// The next JSON message (an SSE `data:` event or the whole JSON body).
    async fn next(&mut self) -> Value {
        loop {
            self.decode();
            if let Some(end) = self.body.find("\n\n") {
                let event: String = self.body.drain(..end + 2).collect();
                let data: String = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim)
                    .collect();
                if !data.is_empty() {
                    return serde_json::from_str(&data).expect("JSON event");
                }
                continue;
            }
            if self.body.trim_start().starts_with('{')
                && let Ok(v) = serde_json::from_str(self.body.trim())
            {
                self.body.clear();
                return v;
            }
            let mut buf = [0u8; 4096];
            let n = tokio::time::timeout(
                std::time::Duration::from_secs(10),
                self.stream.read(&mut buf),
            )
            .await
            .expect("a message within 10 s")
            .expect("read body");
            assert!(
                n > 0,
                "stream ended before the next message: {:?}",
                self.body
            );
            self.raw.extend_from_slice(&buf[..n]);
        }
    }
}

/// `initialize` + `notifications/initialized` with sampling and form elicitation: the session.
async fn legacy_session(addr: SocketAddr) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"sampling": {}, "elicitation": {}},
        "clientInfo": {"name": "fixture-test", "version": "0"}
    }});
    let mut r = Live::post(addr, None, &init).await;
    let answer = r.next().await;
    assert_eq!(
        answer["result"]["protocolVersion"], "2025-11-25",
        "{answer}"
    );
    let session = r.session.clone().expect("Mcp-Session-Id on initialize");
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let _ack = Live::post(addr, Some(&session), &done).await;
    session
}

/// Calls `tool` in `session`, answers the one live request it makes with `answer` (after
/// `check` has seen it), and returns the tool's result text.
async fn legacy_call(
    addr: SocketAddr,
    session: &str,
    tool: &str,
    arguments: Value,
    check: impl FnOnce(&Value),
    answer: Value,
) -> String {
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": tool, "arguments": arguments}});
    let mut stream = Live::post(addr, Some(session), &call).await;
    let ask = stream.next().await;
    check(&ask);
    let reply = json!({"jsonrpc": "2.0", "id": ask["id"], "result": answer});
    let _ack = Live::post(addr, Some(session), &reply).await;
    let result = stream.next().await;
    assert!(result.get("error").is_none(), "{result}");
    assert_ne!(result["result"]["isError"], true, "{result}");
    first_text(&result["result"]).to_owned()
}

#[tokio::test]
async fn classic_sampling_and_elicitation_ask_2025_11_25_clients_live() {
    let addr = start_both_eras().await;
    let session = legacy_session(addr).await;

    let text = legacy_call(
        addr,
        &session,
        "test_sampling",
        json!({"prompt": "Test prompt"}),
        |ask| {
            assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
            assert_eq!(ask["params"]["maxTokens"], 100);
            assert_eq!(
                ask["params"]["messages"][0]["content"]["text"],
                "Test prompt"
            );
        },
        json!({"role": "assistant", "content": {"type": "text", "text": "Paris"},
               "model": "m", "stopReason": "endTurn"}),
    )
    .await;
    assert_eq!(text, "LLM response: Paris");

    let text = legacy_call(
        addr,
        &session,
        "test_elicitation",
        json!({"message": "Who are you?"}),
        |ask| {
            assert_eq!(ask["method"], "elicitation/create", "{ask}");
            assert_eq!(ask["params"]["message"], "Who are you?");
            let schema = &ask["params"]["requestedSchema"];
            assert_eq!(schema["required"], json!(["username", "email"]), "{schema}");
        },
        json!({"action": "accept", "content": {"username": "u", "email": "u@example.com"}}),
    )
    .await;
    assert!(text.starts_with("User response: action=accept"), "{text}");
    assert!(text.contains("u@example.com"), "{text}");
}

#[tokio::test]
async fn sep_forms_reach_2025_11_25_clients_unchanged_and_answers_are_echoed() {
    use conformance_server::classic::{EchoSchema, Sep1034Defaults, Sep1330Enums};
    let addr = start_both_eras().await;
    let session = legacy_session(addr).await;
    let cases = [
        (
            "test_elicitation_sep1034_defaults",
            Sep1034Defaults::schema(),
            json!({"name": "Jane", "age": 25, "verified": false}),
        ),
        (
            "test_elicitation_sep1330_enums",
            Sep1330Enums::schema(),
            json!({"untitledSingle": "option1", "titledMulti": ["value1", "value2"]}),
        ),
    ];
    for (tool, schema, content) in cases {
        let text = legacy_call(
            addr,
            &session,
            tool,
            json!({}),
            |ask| assert_eq!(ask["params"]["requestedSchema"], schema, "{tool}"),
            json!({"action": "accept", "content": content.clone()}),
        )
        .await;
        let echoed: Value = serde_json::from_str(
            text.strip_prefix("Elicitation completed: action=accept, content=")
                .unwrap_or_else(|| panic!("{tool}: {text}")),
        )
        .unwrap();
        assert_eq!(echoed, content, "{tool}");
    }
}

#[tokio::test]
async fn the_same_classic_fixture_is_an_input_round_for_modern_clients() {
    let addr = start_both_eras().await;
    let first = call(
        addr,
        "tools/call",
        json!({"name": "test_sampling", "arguments": {"prompt": "Hi"}}),
        json!({}),
    )
    .await;
    let r1 = first.result();
    assert_eq!(r1["resultType"], "input_required", "{r1}");
    let (key, ask) = r1["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert_eq!(ask["method"], "sampling/createMessage");
    let mut retry = json!({"name": "test_sampling", "arguments": {"prompt": "Hi"}});
    retry["inputResponses"] = json!({ key.clone(): {"role": "assistant",
        "content": {"type": "text", "text": "Hello"}, "model": "m"} });
    retry["requestState"] = r1["requestState"].clone();
    let second = call(addr, "tools/call", retry, json!({})).await;
    assert_eq!(first_text(second.result()), "LLM response: Hello");
}
