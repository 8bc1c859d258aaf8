//! The request span: one per request with its outcome, error code, refusal reason and MRTR
//! round, client-chosen values escaped, captured from a real `tracing` subscriber.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcp_runtime::prelude::*;
use serde_json::{Value, json};

mod log_capture;
use log_capture::{Capture, CaptureGuard, Format};

#[args]
struct TitleArgs {
    /// Which note
    title: String,
}

#[derive(ElicitForm)]
struct Confirm {
    /// Yes, do it
    confirm: bool,
}

/// Deletes after a confirmation.
#[tool(requires(form_elicitation))]
async fn delete(ctx: &mut RequestContext, args: TitleArgs) -> Result<String, HandlerError> {
    match ctx.elicit::<Confirm>("confirm", "Sure?", ()).await? {
        Elicitation::Accepted(c) if c.confirm => Ok(format!("deleted {}", args.title)),
        _ => Ok("kept".into()),
    }
}

/// Captures this test's JSON records at INFO (one subscriber for the whole binary).
fn capture() -> (Capture, CaptureGuard) {
    Capture::install(Format::Json, tracing::Level::INFO)
}

/// The `span` object of every `mcp request finished` event, in order.
fn finished(capture: &Capture) -> Vec<Value> {
    capture
        .text()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["fields"]["message"] == "mcp request finished")
        .map(|v| v["span"].clone())
        .collect()
}

fn call(id: Value, name: &str, title: &str, retry: Value) -> Vec<u8> {
    let mut params = json!({
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}},
        "name": name,
        "arguments": {"title": title}
    });
    for (k, v) in retry.as_object().unwrap() {
        params[k] = v.clone();
    }
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
    )
    .unwrap()
}

#[tokio::test]
async fn every_request_gets_one_span_with_its_outcome() {
    let (capture, _guard) = capture();

    let server = Server::builder(Implementation::new("spans", "0"))
        .tools(tools![delete])
        .build()
        .unwrap();
    let me = Principal::new("alice\n\u{1b}[31m");
    let send = async |b: Vec<u8>| -> Value {
        serde_json::from_slice(&server.handle_bytes(&b, &me).await.unwrap()).unwrap()
    };

    let first = send(call(json!(1), "delete", "groceries", json!({}))).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answer = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    // Changed arguments: refused.
    let changed = json!({"requestState": state, "inputResponses": answer});
    let r = send(call(json!(2), "delete", "other", changed.clone())).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    // The proper retry completes; its identical twin is answered with the recorded outcome.
    let r = send(call(json!(3), "delete", "groceries", changed.clone())).await;
    assert_eq!(
        r["result"]["content"][0]["text"], "deleted groceries",
        "{r}"
    );
    let r = send(call(json!(4), "delete", "groceries", changed)).await;
    assert_eq!(
        r["result"]["_meta"]["dev.mcp-runtime/replayed"], true,
        "{r}"
    );
    // Client-chosen values with a line break and an escape sequence.
    let r = send(call(
        json!("x\ny\u{1b}[2J"),
        "no\nsuch\u{1b}tool",
        "t",
        json!({}),
    ))
    .await;
    assert!(r["error"].is_object(), "{r}");

    let spans = finished(&capture);
    assert_eq!(spans.len(), 5, "{spans:#?}");
    for span in &spans {
        assert_eq!(span["name"], "mcp_request");
        assert_eq!(span["method"], "tools/call");
        assert_eq!(span["principal"], r"alice\n\u{1b}[31m", "{span}");
        assert!(span["latency_us"].is_u64(), "{span}");
        assert!(span["request_id"].is_u64(), "{span}");
    }
    assert_eq!(spans[0]["outcome"], "input_required");
    assert_eq!(spans[0]["target"], "delete");
    assert_eq!(spans[0]["mrtr_round"], 0);
    assert_eq!(spans[0]["jsonrpc_id"], "1");
    assert_eq!(spans[1]["outcome"], "error");
    assert_eq!(spans[1]["error_code"], -32602);
    assert_eq!(spans[1]["refusal"], "arguments_changed");
    assert_eq!(spans[2]["outcome"], "complete");
    assert_eq!(spans[2]["mrtr_round"], 1);
    assert!(spans[2].get("refusal").is_none(), "{}", spans[2]);
    assert_eq!(spans[3]["outcome"], "complete");
    assert_eq!(spans[3]["refusal"], "replayed");
    assert_eq!(spans[4]["outcome"], "error");
    assert_eq!(spans[4]["target"], r"no\nsuch\u{1b}tool");
    let id = spans[4]["jsonrpc_id"].as_str().unwrap();
    assert!(id.contains("2J") && !id.contains(['\n', '\u{1b}']), "{id}");
    // No raw control character reached the output.
    let raw = capture.text();
    assert!(!raw.contains('\u{1b}'), "{raw}");
    let ids: std::collections::HashSet<u64> = spans
        .iter()
        .map(|s| s["request_id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids.len(), 5, "request ids are unique");
}

#[cfg(feature = "http")]
mod transport_support;

/// Over Streamable HTTP the transport's record and the span's are one: a single INFO record
/// per request, with the HTTP status beside the span's fields.
#[cfg(feature = "http")]
#[tokio::test]
async fn an_http_request_makes_exactly_one_info_record() {
    use mcp_runtime::transport::{BearerTokens, HttpConfig, HttpServer};
    use std::sync::Arc;

    let (capture, _guard) = capture();

    let server = Server::builder(Implementation::new("spans", "0"))
        .tools(tools![delete])
        .build()
        .unwrap();
    let token = "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0";
    let tokens = BearerTokens::parse(&format!("alice {token}\n")).unwrap();
    let config = HttpConfig::default().with_bind("127.0.0.1:0".parse().unwrap());
    let bound = HttpServer::new(Arc::new(server), Arc::new(tokens))
        .with_config(config)
        .bind()
        .await
        .unwrap();
    let addr = bound.local_addr().unwrap();
    tokio::spawn(bound.serve_with_shutdown(std::future::pending()));

    let auth = format!("Bearer {token}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "delete"),
        ("Authorization", auth.as_str()),
    ];
    let body = call(json!("x\ny\u{1b}[2J"), "delete", "groceries", json!({}));
    let response = transport_support::exchange(addr, "POST", "/mcp", &headers, &body).await;
    assert_eq!(response.status, 200);
    let reply = response.json();
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");

    let text = capture.text();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["level"] == "INFO")
        .filter(|v| {
            v["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("mcp request"))
        })
        .collect();
    assert_eq!(records.len(), 1, "{text}");
    let record = &records[0];
    assert_eq!(record["target"], "mcp_runtime::request", "{record}");
    assert_eq!(record["fields"]["message"], "mcp request finished");
    let span = &record["span"];
    assert_eq!(span["name"], "mcp_request");
    assert_eq!(span["method"], "tools/call");
    assert_eq!(span["principal"], "alice");
    assert_eq!(span["target"], "delete");
    assert_eq!(span["outcome"], "input_required");
    assert_eq!(span["mrtr_round"], 0);
    assert_eq!(span["status"], 200, "{span}");
    assert!(span["latency_us"].is_u64(), "{span}");
    assert!(span["request_id"].is_u64(), "{span}");
    // Escaped, and written as the core writes it on stdio.
    assert_eq!(span["jsonrpc_id"], r#""x\\ny\\u{1b}[2J""#, "{span}");
    assert!(!text.contains('\u{1b}'), "{text}");
}

/// What the 2025-11-25 adapter answers itself (the handshake, `ping`, `logging/setLevel`, a
/// request before the handshake) gets the request span a forwarded request gets from the core.
#[cfg(feature = "legacy-2025-11-25")]
#[tokio::test]
async fn the_legacy_adapters_own_answers_get_the_request_span() {
    use mcp_runtime::legacy::session::LegacySession;
    use mcp_runtime::service::{CancellationToken, McpService};
    use std::sync::Arc;

    let (capture, _guard) = capture();

    let server = Server::builder(Implementation::new("spans", "0"))
        .tools(tools![delete])
        .build()
        .unwrap();
    let service: Arc<dyn McpService> = Arc::new(server);
    let (out, _rx) = tokio::sync::mpsc::channel(8);
    let session = LegacySession::new(service, Principal::new("bob\r"), out);
    let ask = async |id: i64, method: &str, params: Value| -> Value {
        let params = params.as_object().cloned().unwrap_or_default();
        let bytes = session
            .handle_request(&id.into(), method, params, CancellationToken::new())
            .await;
        serde_json::from_slice(&bytes).unwrap()
    };

    let r = ask(1, "tools/list", json!({})).await;
    assert_eq!(r["error"]["code"], -32600, "{r}");
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {}});
    let r = ask(2, "initialize", init).await;
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{r}");
    session.handle_notification("notifications/initialized");
    let r = ask(3, "ping", json!({})).await;
    assert!(r["result"].is_object(), "{r}");
    let r = ask(4, "logging/setLevel", json!({"level": 5})).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r = ask(5, "tools/list", json!({})).await;
    assert!(r["result"]["tools"].is_array(), "{r}");

    let spans = finished(&capture);
    let seen: Vec<(&str, &str)> = spans
        .iter()
        .map(|s| {
            (
                s["method"].as_str().unwrap(),
                s["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("tools/list", "error"),
            // The handshake asks the core for its capabilities: the core's span, inside.
            ("server/discover", "complete"),
            ("initialize", "complete"),
            ("ping", "complete"),
            ("logging/setLevel", "error"),
            // Forwarded: one span, the core's, not a second one from the adapter.
            ("tools/list", "complete"),
        ],
        "{spans:#?}"
    );
    assert_eq!(spans[0]["error_code"], -32600);
    assert_eq!(spans[2]["jsonrpc_id"], "2");
    assert_eq!(spans[4]["error_code"], -32602);
    for span in &spans {
        assert_eq!(span["name"], "mcp_request");
        assert_eq!(span["principal"], r"bob\r", "{span}");
        assert!(span["latency_us"].is_u64(), "{span}");
        assert!(span["request_id"].is_u64(), "{span}");
    }
}
