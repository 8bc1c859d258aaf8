//! The 2025-11-25 adapter over Streamable HTTP, on real sockets, beside the modern transport on
//! the same server: a scripted 2025-11-25 client opens a session with `initialize`, calls a
//! form-eliciting tool whose `elicitation/create` arrives on the POST's SSE stream, answers it
//! with a second POST, and sees the same outcomes as the modern path (counted deletions).
#![cfg(feature = "legacy-2025-11-25")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: panics are failures

mod core_support;
mod transport_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use core_support::{DeleteTool, Effects, notes};
use mcp_runtime::legacy::http::{LegacyHttp, LegacyHttpConfig};
use mcp_runtime::prelude::*;
use mcp_runtime::service::McpService;
use mcp_runtime::transport::{Authenticator, BearerTokens, HttpConfig, HttpServer};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use transport_support::{exchange, send_raw};

const ALICE: &str = "YWxpY2UtdG9rZW4tZm9yLWxlZ2FjeS1odHRwLXRlc3Rz";
const BOB: &str = "Ym9iLXRva2VuLWZvci1sZWdhY3ktaHR0cC10ZXN0cy14";

struct Harness {
    addr: SocketAddr,
    effects: Effects,
    legacy: LegacyHttp,
}

async fn start_with(config: LegacyHttpConfig) -> Harness {
    let effects = Effects::default();
    let server = Server::builder(Implementation::new("legacy-http-test", "0.3.0"))
        .tools(tools![DeleteTool])
        .state(effects.clone())
        .state(notes(&["n1", "n2", "other"]))
        .build()
        .unwrap();
    let auth: Arc<dyn Authenticator> = Arc::new(
        BearerTokens::from_pairs([
            (Principal::new("alice"), ALICE),
            (Principal::new("bob"), BOB),
        ])
        .unwrap(),
    );
    let modern = HttpServer::new(
        Arc::new(server.clone()) as Arc<dyn McpService>,
        Arc::clone(&auth),
    )
    .with_config(HttpConfig::default())
    .router()
    .unwrap();
    let legacy = LegacyHttp::new(server, auth, config);
    let app = legacy.wrap(modern);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    Harness {
        addr,
        effects,
        legacy,
    }
}

async fn start() -> Harness {
    start_with(LegacyHttpConfig::default()).await
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// A scripted 2025-11-25 HTTP client.
struct Legacy {
    addr: SocketAddr,
    auth: String,
    session: String,
}

impl Legacy {
    async fn connect(addr: SocketAddr, token: &str, caps: Value) -> (Self, Value) {
        let auth = bearer(token);
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": caps,
            "clientInfo": {"name": "scripted-2025-11-25", "version": "0"}}});
        let r = exchange(
            addr,
            "POST",
            "/mcp",
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
            ],
            body.to_string().as_bytes(),
        )
        .await;
        assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
        let session = r.header("mcp-session-id").expect("a session id").to_owned();
        let c = Self {
            addr,
            auth,
            session,
        };
        let n = c
            .post_status(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(n, 202);
        (c, r.json())
    }

    fn headers(&self) -> Vec<(&str, &str)> {
        vec![
            ("Authorization", self.auth.as_str()),
            ("Mcp-Session-Id", self.session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ]
    }

    /// POSTs a message and returns only the status (responses, notifications).
    async fn post_status(&self, message: &Value) -> u16 {
        exchange(
            self.addr,
            "POST",
            "/mcp",
            &self.headers(),
            message.to_string().as_bytes(),
        )
        .await
        .status
    }

    /// POSTs a request and opens its SSE response stream.
    async fn open(&self, id: i64, method: &str, params: Value) -> Sse {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        Sse::open(
            send_raw(
                self.addr,
                "POST",
                "/mcp",
                &self.headers(),
                body.to_string().as_bytes(),
            )
            .await,
        )
        .await
    }

    /// `tools/call delete`, answering the live `elicitation/create` with `answer`.
    async fn delete(&self, id: i64, answer: Value) -> (Value, Value) {
        let mut sse = self
            .open(
                id,
                "tools/call",
                json!({"name": "delete", "arguments": {"title": "n"}}),
            )
            .await;
        assert_eq!(sse.status, 200);
        let ask = sse.next().await.expect("elicitation/create on the stream");
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        let status = self
            .post_status(&json!({"jsonrpc": "2.0", "id": ask["id"].clone(), "result": answer}))
            .await;
        assert_eq!(status, 202);
        let done = sse.next().await.expect("the final response");
        assert_eq!(done["id"], id, "{done}");
        assert!(
            sse.next().await.is_none(),
            "the stream closes after the response"
        );
        (done, ask)
    }
}

/// An SSE response read incrementally (chunked transfer encoding decoded by hand).
struct Sse {
    status: u16,
    content_type: String,
    stream: TcpStream,
    raw: Vec<u8>,
    data: Vec<u8>,
    done: bool,
    /// Comment-only events (keep-alives) seen so far.
    comments: usize,
}

impl Sse {
    async fn open(mut stream: TcpStream) -> Self {
        let mut raw = Vec::new();
        let head_end = loop {
            if let Some(p) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
            let mut buf = [0u8; 4096];
            let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
                .await
                .expect("response headers within 5 s")
                .unwrap();
            assert!(n > 0, "connection closed before headers");
            raw.extend_from_slice(&buf[..n]);
        };
        let head = String::from_utf8_lossy(&raw[..head_end]).to_string();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        let content_type = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-type")
                    .then(|| v.trim().to_owned())
            })
            .unwrap_or_default();
        let rest = raw[head_end + 4..].to_vec();
        Self {
            status,
            content_type,
            stream,
            raw: rest,
            data: Vec::new(),
            done: false,
            comments: 0,
        }
    }

    /// Moves every complete chunk from `raw` into `data`.
    fn decode(&mut self) {
        while let Some(pos) = self.raw.windows(2).position(|w| w == b"\r\n") {
            let size =
                usize::from_str_radix(std::str::from_utf8(&self.raw[..pos]).unwrap().trim(), 16)
                    .unwrap();
            if size == 0 {
                self.done = true;
                return;
            }
            if self.raw.len() < pos + 2 + size + 2 {
                return;
            }
            self.data
                .extend_from_slice(&self.raw[pos + 2..pos + 2 + size]);
            self.raw.drain(..pos + 2 + size + 2);
        }
    }

    /// The next event's JSON, or `None` when the stream ended.
    async fn next(&mut self) -> Option<Value> {
        loop {
            self.decode();
            if let Some(p) = self.data.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.data.drain(..p + 2).collect();
                let text = String::from_utf8(event).unwrap();
                let data: Vec<&str> = text
                    .lines()
                    .filter_map(|l| l.strip_prefix("data: "))
                    .collect();
                if data.is_empty() {
                    // A comment-only event (keep-alive).
                    self.comments += 1;
                    continue;
                }
                return Some(serde_json::from_str(&data.join("\n")).unwrap());
            }
            if self.done {
                return None;
            }
            let mut buf = [0u8; 4096];
            let n = tokio::time::timeout(Duration::from_secs(5), self.stream.read(&mut buf))
                .await
                .expect("an event within 5 s")
                .unwrap();
            if n == 0 {
                return None;
            }
            self.raw.extend_from_slice(&buf[..n]);
        }
    }
}

fn form_caps() -> Value {
    json!({"elicitation": {}})
}

#[tokio::test]
async fn initialize_mints_a_session_and_answers_2025_11_25() {
    let h = start().await;
    let (a, init) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(
        init["result"]["serverInfo"],
        json!({"name": "legacy-http-test", "version": "0.3.0"})
    );
    assert!(init["result"]["capabilities"]["tools"].is_object());
    // 256 random bits, base64url: 43 visible ASCII characters; a second session differs.
    assert_eq!(a.session.len(), 43);
    assert!(
        a.session
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );
    let (b, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    assert_ne!(a.session, b.session);
    assert_eq!(h.legacy.session_count(), 2);
    // A failed initialize opens no session.
    let r = exchange(
        h.addr,
        "POST",
        "/mcp",
        &[("Authorization", &bearer(ALICE)), ("Content-Type", "application/json")],
        br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":"nope"}}"#,
    )
    .await;
    assert_eq!(r.json()["error"]["code"], -32602, "{:?}", r.json());
    assert!(r.header("mcp-session-id").is_none());
    assert_eq!(h.legacy.session_count(), 2);

    // tools/list on the session: the response on the SSE stream, modern members removed.
    let mut sse = a.open(1, "tools/list", json!({})).await;
    assert!(
        sse.content_type.starts_with("text/event-stream"),
        "{}",
        sse.content_type
    );
    let list = sse.next().await.unwrap();
    assert_eq!(list["result"]["tools"][0]["name"], "delete", "{list}");
    assert!(list["result"].get("resultType").is_none());
    assert!(sse.next().await.is_none());
}

#[tokio::test]
async fn accept_decline_cancel_over_http() {
    let h = start().await;
    let (a, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;

    let (done, ask) = a.delete(1, json!({"action": "decline"})).await;
    assert!(done["result"]["content"][0]["text"].is_string(), "{done}");
    assert_eq!(h.effects.count(), 0);
    assert_eq!(ask["params"]["message"], "Which note should I delete?");
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["note_id"]["enum"],
        json!(["n1", "n2"])
    );

    let (done, _) = a.delete(2, json!({"action": "cancel"})).await;
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert_eq!(h.effects.count(), 0);

    let (done, _) = a
        .delete(
            3,
            json!({"action": "accept", "content": {"note_id": "n2", "confirm": true}}),
        )
        .await;
    assert_eq!(done["result"]["content"][0]["text"], "Deleted n2", "{done}");
    assert_eq!(h.effects.count(), 1);

    // An answer to an id nobody waits for (already answered) is refused.
    let status = a
        .post_status(&json!({"jsonrpc": "2.0", "id": "srv-1", "result": {"action": "accept"}}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(h.effects.count(), 1);
}

#[tokio::test]
async fn another_principal_cannot_use_or_answer_a_session() {
    let h = start().await;
    let (a, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    // Bob presents Alice's session id: refused as unknown, on requests and on answers.
    let stolen = Legacy {
        addr: h.addr,
        auth: bearer(BOB),
        session: a.session.clone(),
    };
    let sse = stolen.open(1, "tools/list", json!({})).await;
    assert_eq!(sse.status, 404);
    let mut pending = a
        .open(
            2,
            "tools/call",
            json!({"name": "delete", "arguments": {"title": "n"}}),
        )
        .await;
    let ask = pending.next().await.unwrap();
    let forged = json!({"jsonrpc": "2.0", "id": ask["id"].clone(),
                        "result": {"action": "accept", "content": {"note_id": "n2", "confirm": true}}});
    assert_eq!(stolen.post_status(&forged).await, 404);
    assert_eq!(h.effects.count(), 0);
    // Alice's session still works: she declines.
    let status = a
        .post_status(
            &json!({"jsonrpc": "2.0", "id": ask["id"].clone(), "result": {"action": "decline"}}),
        )
        .await;
    assert_eq!(status, 202);
    let done = pending.next().await.unwrap();
    assert_eq!(done["id"], 2);
    assert_eq!(h.effects.count(), 0);
    // Bob cannot end Alice's session either.
    let r = exchange(
        h.addr,
        "DELETE",
        "/mcp",
        &[
            ("Authorization", &bearer(BOB)),
            ("Mcp-Session-Id", &a.session),
        ],
        b"",
    )
    .await;
    assert_eq!(r.status, 404);
    // Without credentials: 401 before anything else.
    let r = exchange(
        h.addr,
        "POST",
        "/mcp",
        &[
            ("Mcp-Session-Id", &a.session),
            ("Content-Type", "application/json"),
        ],
        br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    )
    .await;
    assert_eq!(r.status, 401);
    assert!(r.header("www-authenticate").unwrap().starts_with("Bearer"));
}

#[tokio::test]
async fn unknown_session_404_missing_session_400_delete_ends_it() {
    let h = start().await;
    let ghost = Legacy {
        addr: h.addr,
        auth: bearer(ALICE),
        session: "bm8tc3VjaC1zZXNzaW9uLWF0LWFsbC1ldmVyLWV2ZXI".into(),
    };
    let sse = ghost.open(1, "tools/list", json!({})).await;
    assert_eq!(sse.status, 404);

    // A 2025-era request without a session id: 400.
    let r = exchange(
        h.addr,
        "POST",
        "/mcp",
        &[
            ("Authorization", &bearer(ALICE)),
            ("MCP-Protocol-Version", "2025-11-25"),
            ("Content-Type", "application/json"),
        ],
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(r.status, 400);

    let (a, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    let ping = a.open(1, "ping", json!({})).await;
    assert_eq!(ping.status, 200);
    let headers = [
        ("Authorization", a.auth.as_str()),
        ("Mcp-Session-Id", a.session.as_str()),
    ];
    let r = exchange(h.addr, "DELETE", "/mcp", &headers, b"").await;
    assert_eq!(r.status, 204);
    assert_eq!(h.legacy.session_count(), 0);
    let sse = a.open(2, "ping", json!({})).await;
    assert_eq!(sse.status, 404);
    let r = exchange(h.addr, "DELETE", "/mcp", &headers, b"").await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn sessions_expire_when_idle_and_are_bounded() {
    let h = start_with(
        LegacyHttpConfig::default()
            .with_max_sessions(2)
            .unwrap()
            .with_idle_ttl(Duration::from_millis(300))
            .unwrap(),
    )
    .await;
    let (a, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    let (_b, _) = Legacy::connect(h.addr, BOB, form_caps()).await;
    // Full: a third initialize is refused with 503 and Retry-After.
    let r = exchange(
        h.addr,
        "POST",
        "/mcp",
        &[("Authorization", &bearer(ALICE)), ("Content-Type", "application/json")],
        br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}"#,
    )
    .await;
    assert_eq!(r.status, 503);
    assert!(r.header("retry-after").is_some());
    tokio::time::sleep(Duration::from_millis(450)).await;
    // Idle past the TTL: gone (404), and new sessions fit again.
    let sse = a.open(1, "ping", json!({})).await;
    assert_eq!(sse.status, 404);
    let (c, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    let mut ping = c.open(1, "ping", json!({})).await;
    assert_eq!(ping.next().await.unwrap()["result"], json!({}));
}

#[tokio::test]
async fn a_session_waiting_on_the_client_does_not_expire() {
    let h = start_with(
        LegacyHttpConfig::default()
            .with_idle_ttl(Duration::from_millis(200))
            .unwrap()
            .with_keep_alive(Some(Duration::from_millis(50)))
            .unwrap(),
    )
    .await;
    let (a, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    let mut sse = a
        .open(
            1,
            "tools/call",
            json!({"name": "delete", "arguments": {"title": "n"}}),
        )
        .await;
    let ask = sse.next().await.unwrap();
    tokio::time::sleep(Duration::from_millis(350)).await;
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"].clone(),
                        "result": {"action": "accept", "content": {"note_id": "n1", "confirm": true}}});
    assert_eq!(a.post_status(&answer).await, 202);
    let done = sse.next().await.unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "Deleted n1", "{done}");
    assert_eq!(h.effects.count(), 1);
    // While it waited on the answer, the stream carried keep-alive comments.
    assert!(sse.comments >= 2, "{} keep-alives", sse.comments);
}

#[tokio::test]
async fn one_principal_cannot_crowd_out_the_others() {
    let h = start_with(
        LegacyHttpConfig::default()
            .with_max_sessions(3)
            .unwrap()
            .with_max_sessions_per_principal(2),
    )
    .await;
    let (a1, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    let (a2, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    let (b1, _) = Legacy::connect(h.addr, BOB, form_caps()).await;
    // A third Alice session ends her least recently used one, not Bob's.
    let mut ping = a2.open(1, "ping", json!({})).await;
    assert!(ping.next().await.is_some());
    let (a3, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    assert_eq!(a1.open(2, "ping", json!({})).await.status, 404);
    for live in [&a2, &a3, &b1] {
        assert_eq!(live.open(3, "ping", json!({})).await.status, 200);
    }
    // The server is full (3) and Bob holds fewer than his share: 503, nothing evicted.
    let r = exchange(
        h.addr,
        "POST",
        "/mcp",
        &[("Authorization", &bearer(BOB)), ("Content-Type", "application/json")],
        br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}"#,
    )
    .await;
    assert_eq!(r.status, 503);
    assert_eq!(h.legacy.session_count(), 3);
}

#[tokio::test]
async fn modern_requests_on_the_same_server_stay_sessionless() {
    let h = start().await;
    let (_a, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    let body = transport_support::request(json!(1), "tools/list", json!({}));
    let r = exchange(
        h.addr,
        "POST",
        "/mcp",
        &[
            ("Authorization", &bearer(ALICE)),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
        ],
        body.to_string().as_bytes(),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    assert!(r.header("mcp-session-id").is_none());
    let v = r.json();
    assert_eq!(v["result"]["tools"][0]["name"], "delete", "{v}");
    assert_eq!(v["result"]["resultType"], "complete", "{v}");

    // A modern tools/call gets input_required (MRTR), not a live elicitation.
    let body = transport_support::request(
        json!(2),
        "tools/call",
        json!({"name": "delete", "arguments": {"title": "n"}}),
    );
    let mut body = body;
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = form_caps();
    let r = exchange(
        h.addr,
        "POST",
        "/mcp",
        &[
            ("Authorization", &bearer(ALICE)),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "delete"),
        ],
        body.to_string().as_bytes(),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["result"]["resultType"], "input_required");
    assert_eq!(h.effects.count(), 0);

    // A header-less POST that is not `initialize` reaches the modern transport, body intact
    // (which then refuses it for its missing headers, as it would without the adapter).
    let r = exchange(
        h.addr,
        "POST",
        "/mcp",
        &[
            ("Authorization", &bearer(ALICE)),
            ("Content-Type", "application/json"),
        ],
        body.to_string().as_bytes(),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32020, "{:?}", r.json());
    // A modern `initialize` (with `_meta`) is not a legacy handshake: no session.
    let modern_init = transport_support::request(json!(3), "initialize", json!({}));
    let r = exchange(
        h.addr,
        "POST",
        "/mcp",
        &[
            ("Authorization", &bearer(ALICE)),
            ("Content-Type", "application/json"),
        ],
        modern_init.to_string().as_bytes(),
    )
    .await;
    assert!(r.header("mcp-session-id").is_none());
    assert_eq!(h.legacy.session_count(), 1);
}

#[tokio::test]
async fn concurrent_requests_in_one_session_ask_on_their_own_streams() {
    let h = start().await;
    let (a, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    let args = json!({"name": "delete", "arguments": {"title": "n"}});
    let mut first = a.open(1, "tools/call", args.clone()).await;
    let mut second = a.open(2, "tools/call", args).await;
    let ask1 = first.next().await.unwrap();
    let ask2 = second.next().await.unwrap();
    assert_ne!(ask1["id"], ask2["id"]);
    // Answer the second first: each answer reaches its own request.
    let accept = json!({"jsonrpc": "2.0", "id": ask2["id"].clone(),
                        "result": {"action": "accept", "content": {"note_id": "n1", "confirm": true}}});
    assert_eq!(a.post_status(&accept).await, 202);
    let done2 = second.next().await.unwrap();
    assert_eq!(done2["id"], 2);
    assert_eq!(
        done2["result"]["content"][0]["text"], "Deleted n1",
        "{done2}"
    );
    let decline =
        json!({"jsonrpc": "2.0", "id": ask1["id"].clone(), "result": {"action": "decline"}});
    assert_eq!(a.post_status(&decline).await, 202);
    let done1 = first.next().await.unwrap();
    assert_eq!(done1["id"], 1);
    assert!(
        done1["result"].get("isError").is_none_or(|e| e == false),
        "{done1}"
    );
    assert_eq!(h.effects.count(), 1);
}

#[tokio::test]
async fn cancelled_requests_end_without_a_response_and_delete_nothing() {
    let h = start().await;
    let (a, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    let mut sse = a
        .open(
            7,
            "tools/call",
            json!({"name": "delete", "arguments": {"title": "n"}}),
        )
        .await;
    let ask = sse.next().await.unwrap();
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 7, "reason": "user closed the dialog"}});
    assert_eq!(a.post_status(&cancel).await, 202);
    assert!(sse.next().await.is_none(), "no response after cancellation");
    // The late answer finds nobody waiting.
    let late = json!({"jsonrpc": "2.0", "id": ask["id"].clone(),
                      "result": {"action": "accept", "content": {"note_id": "n1", "confirm": true}}});
    assert_eq!(a.post_status(&late).await, 400);
    assert_eq!(h.effects.count(), 0);
}

#[tokio::test]
async fn a_dropped_stream_cancels_its_request() {
    let h = start().await;
    let (a, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    let mut sse = a
        .open(
            1,
            "tools/call",
            json!({"name": "delete", "arguments": {"title": "n"}}),
        )
        .await;
    let ask = sse.next().await.unwrap();
    drop(sse);
    let late = json!({"jsonrpc": "2.0", "id": ask["id"].clone(),
                      "result": {"action": "accept", "content": {"note_id": "n1", "confirm": true}}});
    // The server notices the closed connection and withdraws the pending question, so a late
    // answer (even an accepting one) finds nobody waiting and deletes nothing.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(a.post_status(&late).await, 400);
    assert_eq!(h.effects.count(), 0);
}

#[tokio::test]
async fn json_only_clients_and_other_verbs() {
    let h = start().await;
    let (a, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    let mut headers = a.headers();
    headers.retain(|(k, _)| *k != "Accept");
    headers.push(("Accept", "application/json"));
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let r = exchange(
        h.addr,
        "POST",
        "/mcp",
        &headers,
        list.to_string().as_bytes(),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["result"]["tools"][0]["name"], "delete");
    // A tool needing input cannot ask a JSON-only client: an error, nothing deleted.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "delete", "arguments": {"title": "n"}}});
    let r = exchange(
        h.addr,
        "POST",
        "/mcp",
        &headers,
        call.to_string().as_bytes(),
    )
    .await;
    assert_eq!(r.json()["error"]["code"], -32603, "{:?}", r.json());
    assert_eq!(h.effects.count(), 0);
    // No standalone GET stream.
    let r = exchange(h.addr, "GET", "/mcp", &a.headers(), b"").await;
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("POST, DELETE"));
}

#[tokio::test]
async fn an_unanswered_form_times_out_is_cancelled_and_a_late_answer_is_told_so() {
    let h = start_with(
        LegacyHttpConfig::default()
            .with_input_timeout(Duration::from_millis(300))
            .unwrap(),
    )
    .await;
    let (a, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    let mut sse = a
        .open(
            7,
            "tools/call",
            json!({"name": "delete", "arguments": {"title": "n"}}),
        )
        .await;
    let ask = sse.next().await.unwrap();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");

    // Nobody answers: the server cancels its question on the same stream, then answers the
    // call with a tool error that says why.
    let cancelled = sse.next().await.expect("notifications/cancelled");
    assert_eq!(
        cancelled["method"], "notifications/cancelled",
        "{cancelled}"
    );
    assert_eq!(cancelled["params"]["requestId"], ask["id"], "{cancelled}");
    assert!(cancelled["params"]["reason"].is_string(), "{cancelled}");
    assert!(cancelled.get("id").is_none(), "a notification: {cancelled}");
    let done = sse.next().await.expect("the final response");
    assert_eq!(done["id"], 7, "{done}");
    assert_eq!(done["result"]["isError"], true, "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("did not answer the form within 300 ms") && text.contains("nothing was done"),
        "{text}"
    );
    assert!(sse.next().await.is_none(), "the stream closes");

    // The answer arrives late: refused with a reason, and it changes nothing.
    let late = json!({"jsonrpc": "2.0", "id": ask["id"].clone(),
        "result": {"action": "accept", "content": {"note_id": "n1", "confirm": true}}});
    let mut headers = a.headers();
    headers.retain(|(k, _)| *k != "Accept");
    let r = exchange(
        h.addr,
        "POST",
        "/mcp",
        &headers,
        late.to_string().as_bytes(),
    )
    .await;
    assert_eq!(r.status, 409);
    let body = r.json();
    assert_eq!(body["error"]["code"], -32001, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("Too late") && message.contains("elicitation/create"),
        "{message}"
    );
    assert_eq!(h.effects.count(), 0, "nothing was deleted");

    // An id that never existed is still a plain 400.
    let never = json!({"jsonrpc": "2.0", "id": "srv-999", "result": {"action": "cancel"}});
    assert_eq!(a.post_status(&never).await, 400);
}

#[tokio::test]
async fn an_answer_within_the_input_timeout_still_counts() {
    let h = start_with(
        LegacyHttpConfig::default()
            .with_input_timeout(Duration::from_secs(5))
            .unwrap(),
    )
    .await;
    let (a, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    let (done, _) = a
        .delete(
            1,
            json!({"action": "accept", "content": {"note_id": "n2", "confirm": true}}),
        )
        .await;
    assert_eq!(done["result"]["content"][0]["text"], "Deleted n2", "{done}");
    assert_eq!(h.effects.count(), 1);
}

#[tokio::test]
async fn resource_subscriptions_are_acknowledged_and_need_a_uri() {
    let h = start().await;
    let (a, _) = Legacy::connect(h.addr, ALICE, form_caps()).await;
    for (id, method) in [(1, "resources/subscribe"), (2, "resources/unsubscribe")] {
        let mut sse = a.open(id, method, json!({"uri": "test://watched"})).await;
        let answer = sse.next().await.unwrap();
        assert_eq!(answer["result"], json!({}), "{method}: {answer}");
    }
    for params in [json!({}), json!({"uri": ""}), json!({"uri": 7})] {
        let mut sse = a.open(3, "resources/subscribe", params.clone()).await;
        let answer = sse.next().await.unwrap();
        assert_eq!(answer["error"]["code"], -32602, "{params}: {answer}");
    }
}
