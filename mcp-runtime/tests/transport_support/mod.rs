//! Shared helpers for the transport tests: a tiny `McpService` and a raw HTTP/1.1 client.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)] // test helpers: panics are failures

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use mcp_runtime::service::{McpService, Message, ParamHeader, Reply, RequestScope};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub const VERSION: &str = "2026-07-28";

/// A service with a few test methods:
/// - `echo`: returns its params and the principal;
/// - `slow {ms}`: sleeps, counting drops before completion in `cancelled`;
/// - `progress {count, then_ms?}`: emits `count` progress notifications, optionally sleeps, answers;
/// - `badmeta`: a `-32602` malformed-`_meta` error; `fail {code}`: an error with that code;
/// - `tools/call`, `prompts/get`, `resources/read`: echo;
/// - anything else: `-32601`.
///
/// Notifications are recorded; `reject/me` notifications are rejected.
#[derive(Default)]
pub struct TestService {
    pub cancelled: Arc<AtomicUsize>,
    pub completed: Arc<AtomicUsize>,
    pub notifications: Arc<Mutex<Vec<Value>>>,
    pub rules: Vec<ParamHeader>,
}

impl TestService {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            rules: vec![
                ParamHeader::new("Region", ["region"]),
                ParamHeader::new("Count", ["opts", "count"]),
            ],
            ..Self::default()
        })
    }

    pub fn cancelled(&self) -> usize {
        self.cancelled.load(Ordering::SeqCst)
    }
}

fn result(id: &Value, result: Value) -> Reply {
    let body = json!({"jsonrpc":"2.0","id":id,"result":result});
    Reply::result(Bytes::from(serde_json::to_vec(&body).unwrap()))
}

fn error(id: Option<&Value>, code: i64, message: &str) -> Reply {
    let mut body = json!({"jsonrpc":"2.0","error":{"code":code,"message":message}});
    if let Some(id) = id {
        body["id"] = id.clone();
    }
    Reply::error(
        mcp_types::ErrorCode::from_code(code),
        Bytes::from(serde_json::to_vec(&body).unwrap()),
    )
}

/// Counts a drop that happens before `done` is set.
struct DropCounter {
    counter: Arc<AtomicUsize>,
    done: bool,
}

impl Drop for DropCounter {
    fn drop(&mut self) {
        if !self.done {
            self.counter.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl McpService for TestService {
    fn handle<'a>(&'a self, message: Message, ctx: RequestScope) -> BoxFuture<'a, Option<Reply>> {
        Box::pin(async move {
            let value = message.into_value();
            let method = value["method"].as_str().unwrap_or_default().to_owned();
            let params = value.get("params").cloned().unwrap_or(Value::Null);
            let Some(id) = value.get("id").cloned() else {
                self.notifications.lock().unwrap().push(value);
                if method == "reject/me" {
                    return Some(error(None, -32602, "notification rejected"));
                }
                return None;
            };
            let mut guard = DropCounter {
                counter: Arc::clone(&self.cancelled),
                done: false,
            };
            // Like the server core, hold a call's mirrored arguments (HTTP's Mcp-Param-*
            // headers) to the tool's rules.
            if method == "tools/call"
                && let Some(mirrors) = ctx.param_mirrors()
                && let Some(arguments) = params.get("arguments").and_then(Value::as_object)
                && let Err(mismatch) = mirrors.check(arguments, self.rules_of(&params))
            {
                let message = format!("Header mismatch: {mismatch}");
                return Some(error(Some(&id), -32020, &message));
            }
            let reply = match method.as_str() {
                "echo" | "tools/call" | "prompts/get" | "resources/read" => result(
                    &id,
                    json!({"resultType":"complete","params":params,"principal":ctx.principal().as_str()}),
                ),
                "slow" => {
                    let ms = params["ms"].as_u64().unwrap_or(1000);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    result(&id, json!({"resultType":"complete","slept":ms}))
                }
                "progress" => {
                    let count = params["count"].as_u64().unwrap_or(1);
                    for i in 1..=count {
                        let note = json!({"jsonrpc":"2.0","method":"notifications/progress",
                            "params":{"progressToken":"p","progress":i,"total":count}});
                        ctx.notifications.send_json(&note).await;
                    }
                    if let Some(ms) = params["then_ms"].as_u64() {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                    }
                    result(&id, json!({"resultType":"complete","sent":count}))
                }
                "badmeta" => {
                    let body = json!({"jsonrpc":"2.0","id":id,"error":{"code":-32602,
                        "message":"Invalid params: missing _meta protocolVersion"}});
                    Reply::malformed_meta(Bytes::from(serde_json::to_vec(&body).unwrap()))
                }
                "fail" => {
                    let code = params["code"].as_i64().unwrap_or(-32603);
                    error(Some(&id), code, "failed on purpose")
                }
                _ => error(Some(&id), -32601, "Method not found"),
            };
            guard.done = true;
            self.completed.fetch_add(1, Ordering::SeqCst);
            Some(reply)
        })
    }
}

impl TestService {
    /// The `x-mcp-header` rules of the tool a `tools/call`'s params name.
    fn rules_of(&self, params: &Value) -> &[ParamHeader] {
        if params["name"] == "weather" {
            &self.rules
        } else {
            &[]
        }
    }
}

/// A request body with the required `_meta`.
pub fn request(id: Value, method: &str, mut params: Value) -> Value {
    if params.is_null() {
        params = json!({});
    }
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params})
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The `data:` payloads of an SSE body, each parsed as JSON.
    pub fn sse_events(&self) -> Vec<Value> {
        let text = String::from_utf8(self.body.clone()).unwrap();
        text.split("\n\n")
            .filter_map(|event| {
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data: "))
                    .collect();
                // A block of comments only (`: keep-alive`) is no event, as for any SSE client.
                (!data.is_empty()).then(|| serde_json::from_str(&data.join("\n")).unwrap())
            })
            .collect()
    }
}

fn decode_chunked(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(pos) = raw.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size_text = std::str::from_utf8(&raw[..pos]).unwrap();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        raw = &raw[pos + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

/// Writes a raw HTTP/1.1 request (with `Connection: close`) and returns the open stream.
pub async fn send_raw(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    stream.flush().await.unwrap();
    stream
}

/// Reads a whole `Connection: close` response.
pub async fn read_response(mut stream: TcpStream) -> HttpResponse {
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw))
        .await
        .expect("response within 10 s")
        .unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("header end");
    let head = std::str::from_utf8(&raw[..split]).unwrap();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut response = HttpResponse {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    };
    if response.header("transfer-encoding") == Some("chunked") {
        response.body = decode_chunked(&response.body);
    }
    response
}

/// One full exchange.
pub async fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    read_response(send_raw(addr, method, path, headers, body).await).await
}

/// A whole MCP transport over Unix domain sockets: accept each connection and serve it with
/// the stream pipeline (`stdio::serve` takes any byte stream). Every guarantee of the stdio
/// transport (in-flight ids, cancellation, line limits, shutdown) and of the core (versions,
/// capabilities, scopes) comes with it; nothing is re-implemented here.
#[cfg(unix)]
#[allow(dead_code)] // not every test binary that includes this module serves a socket
pub async fn serve_unix(
    listener: tokio::net::UnixListener,
    service: Arc<dyn mcp_runtime::service::McpService>,
    grant: mcp_runtime::service::Grant,
    config: mcp_runtime::transport::stdio::StdioConfig,
) -> std::io::Result<()> {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (stream, _) = listener.accept().await?;
        let (read, write) = stream.into_split();
        connections.spawn(mcp_runtime::transport::stdio::serve(
            Arc::clone(&service),
            grant.clone(),
            read,
            write,
            config.clone(),
        ));
        while connections.try_join_next().is_some() {}
    }
}
