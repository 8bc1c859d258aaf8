//! The floor under any MCP server on this stack: axum + serde_json alone, no MCP.
//!
//! Usage: `bare-axum [--replies DIR] [ADDR]` (default `127.0.0.1:8789`; loopback only).
//!
//! Answers the kit's `echo` body the way `bench-server` does (parse the request, reply with a
//! JSON-RPC result holding the text) and nothing else: no headers checked, no `_meta`, no
//! capabilities, no state. `bench/http.sh` runs it with `FLOOR=1` so our numbers can be read
//! against what the HTTP stack itself costs on the same machine in the same run.
//!
//! With `--replies DIR` it also answers the other cases with the same bytes as ours: `DIR`
//! holds `tools_list.json`, `call_first.json` and `call_retry.json`, replies captured from
//! `bench-server` before the run. A request is parsed into a `Value` as before, the reply for
//! its case (`tools/list`; `notes_delete` without or with `inputResponses`) is copied from the
//! parsed capture with the request's `id` and written out. That is the HTTP stack and a generic
//! JSON round trip carrying each case's own bytes (the retry's request is five times echo's), so
//! what ours costs above it is the MCP work itself: checks, state, digests, the tool.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::{CONTENT_TYPE, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// Replies captured from `bench-server`, one per case besides echo (absent without `--replies`).
#[derive(Default)]
struct Replies {
    tools_list: Option<Value>,
    call_first: Option<Value>,
    call_retry: Option<Value>,
}

impl Replies {
    fn load(dir: &Path) -> Result<Self, Box<dyn std::error::Error>> {
        let read = |case: &str| -> Result<Value, Box<dyn std::error::Error>> {
            let path = dir.join(format!("{case}.json"));
            let text = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", path.display()))?)
        };
        Ok(Self {
            tools_list: Some(read("tools_list")?),
            call_first: Some(read("call_first")?),
            call_retry: Some(read("call_retry")?),
        })
    }

    /// The captured reply for this request's case, if it is one of the captured cases.
    fn for_request(&self, request: &Value) -> Option<&Value> {
        let params = request.get("params");
        match request.get("method").and_then(Value::as_str) {
            Some("tools/list") => self.tools_list.as_ref(),
            Some("tools/call")
                if params.and_then(|p| p.get("name")).and_then(Value::as_str)
                    == Some("notes_delete") =>
            {
                if params.and_then(|p| p.get("inputResponses")).is_some() {
                    self.call_retry.as_ref()
                } else {
                    self.call_first.as_ref()
                }
            }
            _ => None,
        }
    }
}

async fn answer(State(replies): State<Arc<Replies>>, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let reply = match replies.for_request(&request) {
        Some(captured) => {
            let mut reply = captured.clone();
            if let Some(object) = reply.as_object_mut() {
                object.insert(
                    "id".to_owned(),
                    request.get("id").cloned().unwrap_or_default(),
                );
            }
            reply
        }
        None => {
            let text = request
                .pointer("/params/arguments/text")
                .and_then(Value::as_str)
                .unwrap_or_default();
            json!({
                "jsonrpc": "2.0",
                "id": request.get("id"),
                "result": {"resultType": "complete", "content": [{"type": "text", "text": text}]},
            })
        }
    };
    let mut response = serde_json::to_vec(&reply)
        .unwrap_or_default()
        .into_response();
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = "127.0.0.1:8789".to_owned();
    let mut replies = Replies::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--replies" {
            let dir = args.next().ok_or("--replies needs a directory")?;
            replies = Replies::load(Path::new(&dir))?;
        } else {
            addr = arg;
        }
    }
    let addr: SocketAddr = addr.parse()?;
    if !addr.ip().is_loopback() {
        return Err(format!("refusing to bind {addr}: loopback only").into());
    }
    let app = Router::new()
        .route("/mcp", post(answer))
        .with_state(Arc::new(replies));
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
            // SIGTERM ends the process through `exit`, so that a profiling build
            // (bench/pgo.sh) writes its profile; a task apart, so requests never see it.
            #[cfg(unix)]
            tokio::spawn(async {
                if let Ok(mut term) =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                {
                    term.recv().await;
                    std::process::exit(0);
                }
            });
            axum::serve(listener, app).await
        })?;
    Ok(())
}
