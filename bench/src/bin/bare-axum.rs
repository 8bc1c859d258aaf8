//! The floor under any MCP server on this stack: axum + serde_json alone, no MCP.
//!
//! Usage: `bare-axum [ADDR]` (default `127.0.0.1:8789`; loopback only).
//!
//! Answers the kit's `echo` body the way `bench-server` does (parse the request, reply with a
//! JSON-RPC result holding the text) and nothing else: no headers checked, no `_meta`, no
//! capabilities, no state. `bench/http.sh` runs it with `FLOOR=1` so our numbers can be read
//! against what the HTTP stack itself costs on the same machine in the same run.

use std::net::SocketAddr;

use axum::Router;
use axum::body::Bytes;
use axum::http::header::{CONTENT_TYPE, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

async fn echo(body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let text = request
        .pointer("/params/arguments/text")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let reply = json!({
        "jsonrpc": "2.0",
        "id": request.get("id"),
        "result": {"resultType": "complete", "content": [{"type": "text", "text": text}]},
    });
    let mut response = serde_json::to_vec(&reply)
        .unwrap_or_default()
        .into_response();
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8789".to_owned())
        .parse()?;
    if !addr.ip().is_loopback() {
        return Err(format!("refusing to bind {addr}: loopback only").into());
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(async move {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            eprintln!(
                "bare-axum listening on http://{}/mcp (pid {})",
                listener.local_addr()?,
                std::process::id()
            );
            axum::serve(listener, Router::new().route("/mcp", post(echo))).await
        })?;
    Ok(())
}
