//! Feature `metrics`: the Prometheus recorder counts dispatched requests by method and
//! outcome, and serves the exposition on a listener of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod transport_support;

use mcp_runtime::observe::PrometheusMetrics;
use mcp_runtime::prelude::*;
use serde_json::{Value, json};
use transport_support::exchange;

#[args]
struct NoArgs {}

#[derive(ElicitForm)]
struct Confirm {
    /// Yes
    confirm: bool,
}

/// Asks, then answers.
#[tool(requires(form_elicitation))]
async fn ask(ctx: &mut RequestContext, _args: NoArgs) -> Result<String, HandlerError> {
    // Only the round counts here, not the answer.
    let _ = ctx.elicit::<Confirm>("c", "Sure?", ()).await?;
    Ok("done".into())
}

fn call(id: i64, method: &str) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}},
        "name": "ask", "arguments": {}}}),
    )
    .unwrap()
}

#[tokio::test]
async fn requests_are_counted_and_served_for_prometheus() {
    let metrics = PrometheusMetrics::install().unwrap();
    assert!(
        PrometheusMetrics::install().is_err(),
        "one recorder per process"
    );
    let server = Server::builder(Implementation::new("metrics", "0"))
        .tools(tools![ask])
        .build()
        .unwrap();
    let me = Principal::new("me");
    let r: Value = serde_json::from_slice(
        &server
            .handle_bytes(&call(1, "tools/call"), &me)
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    server
        .handle_bytes(&call(2, "tools/list"), &me)
        .await
        .unwrap();
    server
        .handle_bytes(&call(3, "no/such\nmethod"), &me)
        .await
        .unwrap();

    let text = metrics.render();
    for line in [
        r#"mcp_requests_total{method="tools/call",outcome="input_required"} 1"#,
        r#"mcp_requests_total{method="tools/list",outcome="complete"} 1"#,
        r#"mcp_requests_total{method="other",outcome="error"} 1"#,
        r#"mcp_request_errors_total{method="other",code="-32601"} 1"#,
        r#"mcp_mrtr_rounds_total{method="tools/call"} 1"#,
        r#"mcp_requests_in_flight 0"#,
    ] {
        assert!(text.lines().any(|l| l == line), "{line}\n{text}");
    }
    assert!(
        text.contains(r#"mcp_request_duration_seconds_bucket{method="tools/call",le="0.01"}"#),
        "{text}"
    );

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(metrics.serve(listener, std::future::pending()));
    let response = exchange(addr, "GET", "/metrics", &[], b"").await;
    assert_eq!(response.status, 200);
    let body = String::from_utf8(response.body).unwrap();
    assert!(body.contains("mcp_requests_total"), "{body}");
}
