//! The conformance fixtures, driven over real Streamable HTTP the way the official suite drives
//! them, so a regression shows up in `cargo test` without Node or the suite installed.
//!
//! Each test starts the fixture server in-process on a loopback port chosen by the kernel and
//! talks raw HTTP/1.1 to it (one request per connection).

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
    let config = HttpConfig {
        bind: SocketAddr::from(([127, 0, 0, 1], 0)),
        ..HttpConfig::default()
    };
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
