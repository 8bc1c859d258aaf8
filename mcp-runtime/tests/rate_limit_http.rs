//! Rate limits over Streamable HTTP, on real sockets: a refused `tools/call` is answered 429
//! with `Retry-After` equal to the body's `error.data.retryAfter` and `RateLimit-Limit`, on
//! the 2026-07-28 transport and on the 2025-11-25 adapter's HTTP half, whether the verdict is
//! ready at once (memory store) or waits on a shared store (SQLite, on a blocking thread).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: panics are failures

mod transport_support;

use std::net::SocketAddr;
use std::sync::Arc;

use mcp_runtime::prelude::*;
use mcp_runtime::rate_limit::{MAX_WINDOW, RateLimit, RateLimitStore};
use mcp_runtime::service::McpService;
use mcp_runtime::transport::{Authenticator, BearerTokens, HttpConfig, HttpServer};
use serde_json::{Value, json};
use transport_support::{HttpResponse, VERSION, exchange, request};

const ALICE: &str = "YWxpY2UtdG9rZW4tZm9yLXJhdGUtbGltaXQtdGVzdHM";
const BOB: &str = "Ym9iLXRva2VuLWZvci1yYXRlLWxpbWl0LXRlc3RzLXg";

/// Echoes.
#[tool(read_only)]
async fn echo() -> String {
    "echo".to_owned()
}

fn auth() -> Arc<dyn Authenticator> {
    Arc::new(
        BearerTokens::from_pairs([
            (Principal::new("alice"), ALICE),
            (Principal::new("bob"), BOB),
        ])
        .unwrap(),
    )
}

/// Serves a server allowing two `echo` calls a day per principal, counted in `store`
/// (default: the memory store), on the modern transport and, with the adapter, the
/// 2025-11-25 one.
async fn start(store: Option<Arc<dyn RateLimitStore>>) -> SocketAddr {
    let mut builder = Server::builder(Implementation::new("rate-http", "1.0"))
        .tools(tools![echo])
        .rate_limit(RateLimit::new(2, MAX_WINDOW));
    if let Some(store) = store {
        builder = builder.rate_limit_store(store);
    }
    let server = builder.build().unwrap();
    let modern = HttpServer::new(Arc::new(server.clone()) as Arc<dyn McpService>, auth())
        .with_config(HttpConfig::default())
        .router()
        .unwrap();
    #[cfg(feature = "legacy-2025-11-25")]
    let modern = mcp_runtime::legacy::http::LegacyHttp::new(
        server,
        auth(),
        mcp_runtime::legacy::http::LegacyHttpConfig::default(),
    )
    .wrap(modern);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, modern).await });
    addr
}

async fn call(addr: SocketAddr, token: &str, id: i64, accept: &str) -> HttpResponse {
    let auth = format!("Bearer {token}");
    let body = request(
        json!(id),
        "tools/call",
        json!({"name": "echo", "arguments": {}}),
    );
    exchange(
        addr,
        "POST",
        "/mcp",
        &[
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", accept),
            ("MCP-Protocol-Version", VERSION),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "echo"),
        ],
        body.to_string().as_bytes(),
    )
    .await
}

/// The body of a response, JSON or the last event of an SSE stream.
fn reply(r: &HttpResponse) -> Value {
    if r.header("content-type") == Some("text/event-stream") {
        r.sse_events().pop().expect("an event")
    } else {
        r.json()
    }
}

/// A 429 whose headers agree with its `-32023` body.
fn assert_429(r: &HttpResponse, id: i64) {
    let body = String::from_utf8_lossy(&r.body);
    assert_eq!(r.status, 429, "{body}");
    assert_eq!(r.header("content-type"), Some("application/json"), "{body}");
    let v = r.json();
    assert_eq!(v["id"], id, "{v}");
    assert_eq!(v["error"]["code"], -32023, "{v}");
    let secs = v["error"]["data"]["retryAfter"].as_u64().unwrap();
    assert!(secs >= 1 && secs <= MAX_WINDOW.as_secs(), "{v}");
    assert_eq!(
        r.header("retry-after"),
        Some(secs.to_string().as_str()),
        "{v}"
    );
    assert_eq!(r.header("ratelimit-limit"), Some("2"), "{v}");
}

const BOTH: &str = "application/json, text/event-stream";

async fn limited_over_the_modern_transport(store: Option<Arc<dyn RateLimitStore>>) {
    let addr = start(store).await;
    for id in 1..=2 {
        let r = call(addr, ALICE, id, BOTH).await;
        assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
        assert_eq!(reply(&r)["result"]["content"][0]["text"], "echo");
    }
    assert_429(&call(addr, ALICE, 3, BOTH).await, 3);
    // Clients that accept only JSON, or only SSE, get the same 429.
    assert_429(&call(addr, ALICE, 4, "application/json").await, 4);
    let sse_only = call(addr, ALICE, 5, "text/event-stream").await;
    if sse_only.status == 429 {
        assert_429(&sse_only, 5);
    } else {
        // A verdict that waited on a shared store reaches a client accepting only SSE as
        // the stream's final event (documented): the same error.
        assert_eq!(sse_only.status, 200);
        assert_eq!(reply(&sse_only)["error"]["code"], -32023);
    }
    // Another principal is not affected.
    let r = call(addr, BOB, 6, BOTH).await;
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
}

#[tokio::test]
async fn a_refused_call_is_a_429_with_retry_after() {
    limited_over_the_modern_transport(None).await;
}

#[tokio::test]
async fn a_verdict_ready_at_once_is_a_429_for_an_sse_only_client() {
    let addr = start(None).await;
    for id in 1..=2 {
        assert_eq!(call(addr, ALICE, id, "text/event-stream").await.status, 200);
    }
    assert_429(&call(addr, ALICE, 3, "text/event-stream").await, 3);
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verdict_from_a_shared_store_is_a_429_too() {
    let dir = tempfile::tempdir().unwrap();
    let store = mcp_runtime::backend::sqlite::SqliteRateLimitStore::open(dir.path().join("rl.db"))
        .await
        .unwrap();
    limited_over_the_modern_transport(Some(Arc::new(store))).await;
}

/// A scripted 2025-11-25 client: `initialize`, `notifications/initialized`, then calls.
#[cfg(feature = "legacy-2025-11-25")]
mod legacy {
    use super::*;

    pub(super) struct Session {
        addr: SocketAddr,
        auth: String,
        id: String,
    }

    impl Session {
        pub(super) async fn open(addr: SocketAddr, token: &str) -> Self {
            let auth = format!("Bearer {token}");
            let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "scripted", "version": "0"}}});
            let r = exchange(
                addr,
                "POST",
                "/mcp",
                &[
                    ("Authorization", auth.as_str()),
                    ("Content-Type", "application/json"),
                    ("Accept", BOTH),
                ],
                body.to_string().as_bytes(),
            )
            .await;
            assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
            let id = r.header("mcp-session-id").unwrap().to_owned();
            let s = Self { addr, auth, id };
            let n = s
                .post(
                    &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                    BOTH,
                )
                .await;
            assert_eq!(n.status, 202);
            s
        }

        pub(super) async fn post(&self, message: &Value, accept: &str) -> HttpResponse {
            exchange(
                self.addr,
                "POST",
                "/mcp",
                &[
                    ("Authorization", self.auth.as_str()),
                    ("Mcp-Session-Id", self.id.as_str()),
                    ("MCP-Protocol-Version", "2025-11-25"),
                    ("Content-Type", "application/json"),
                    ("Accept", accept),
                ],
                message.to_string().as_bytes(),
            )
            .await
        }

        pub(super) async fn call(&self, id: i64, accept: &str) -> HttpResponse {
            self.post(
                &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                        "params": {"name": "echo", "arguments": {}}}),
                accept,
            )
            .await
        }
    }

    pub(super) async fn limited(store: Option<Arc<dyn RateLimitStore>>) {
        let addr = start(store).await;
        let alice = Session::open(addr, ALICE).await;
        for id in 1..=2 {
            let r = alice.call(id, BOTH).await;
            assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
            assert_eq!(reply(&r)["result"]["content"][0]["text"], "echo");
        }
        // The SSE-accepting client gets a 429, not a stream.
        assert_429(&alice.call(3, BOTH).await, 3);
        // The JSON-only one too.
        assert_429(&alice.call(4, "application/json").await, 4);
        // Modern and 2025-11-25 calls of one principal count together (one core).
        assert_429(&call(addr, ALICE, 5, BOTH).await, 5);
        // Bob is not affected.
        let bob = Session::open(addr, BOB).await;
        let r = bob.call(6, BOTH).await;
        assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    }
}

#[cfg(feature = "legacy-2025-11-25")]
#[tokio::test]
async fn the_2025_11_25_adapter_answers_429_too() {
    legacy::limited(None).await;
}

#[cfg(all(feature = "legacy-2025-11-25", feature = "sqlite"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_2025_11_25_adapter_waits_for_a_shared_stores_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let store = mcp_runtime::backend::sqlite::SqliteRateLimitStore::open(dir.path().join("rl.db"))
        .await
        .unwrap();
    legacy::limited(Some(Arc::new(store))).await;
}
