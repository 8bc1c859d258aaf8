//! Quiet SSE streams behind a real proxy: HAProxy with `timeout server` and `timeout client`
//! of 2 s cuts any response that sends nothing for 2 s. With `sse_keep_alive` at 0.5 s the
//! server's `: keep-alive` comments keep such a stream open past that, for 5 s of silence:
//!
//! - a 2025-11-25 client's pending question (`notes-example serve --http --sse-keep-alive
//!   0.5`, `notes_delete`'s `elicitation/create` left unanswered for 5 s, then answered: the
//!   note is deleted and the final response arrives on the same stream);
//! - a 2026-07-28 `tools/call` that sent a progress notification (so its response is an SSE
//!   stream) and then works for 5 s;
//! - a 2026-07-28 `subscriptions/listen` on a task that runs for 5 s.
//!
//! The same streams with a keep-alive longer than the proxy's timeout are cut after about
//! 2 s, which is what the comments prevent (so these tests fail if the comments stop).
//! Skipped with a printed reason when HAProxy is missing, unless `MCP_REQUIRE_HAPROXY` is set.

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_runtime::prelude::*;
use mcp_runtime::transport::{AllowAnonymous, HttpConfig, HttpServer, serve_router};
use mcp_tests::haproxy::{Haproxy, ProxyConfig, haproxy_or_skip};
use mcp_tests::notes::{NotesFixture, choose};
use mcp_tests::{PROTOCOL_VERSION, spawn_notes_http};
use serde_json::{Value, json};

/// The proxy's idle timeouts, both sides.
const PROXY_IDLE: Duration = Duration::from_secs(2);
/// How long each stream stays quiet: well past the proxy's idle timeout.
const QUIET: Duration = Duration::from_secs(5);
/// The keep-alive that must keep the streams open.
const KEEP_ALIVE: &str = "0.5";
/// A keep-alive longer than the proxy's idle timeout: the streams are cut.
const TOO_LONG: &str = "30";

fn proxy_in_front_of(binary: &std::path::Path, server: SocketAddr) -> Haproxy {
    Haproxy::start(
        binary,
        &ProxyConfig {
            servers: vec![server],
            timeout_client: PROXY_IDLE,
            timeout_server: PROXY_IDLE,
            health_checks: false,
        },
    )
    .unwrap()
}

/// What a stream delivered.
#[derive(Debug)]
enum Item {
    /// An SSE event's JSON data.
    Event(Value),
    /// A comment (`: keep-alive`).
    Comment,
    /// The connection ended (closed or reset), after this long since the request was sent.
    End(Duration),
}

/// One POST whose response is read incrementally, with the time each part arrived.
struct Streamed {
    stream: TcpStream,
    sent: Instant,
    status: u16,
    headers: Vec<(String, String)>,
    raw: Vec<u8>,
    body: Vec<u8>,
    chunked: bool,
    ended: bool,
}

impl Streamed {
    fn post(addr: SocketAddr, headers: &[(&str, &str)], body: &Value) -> Self {
        let body = body.to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\n\
             Content-Length: {}\r\n",
            body.len()
        );
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        let sent = Instant::now();
        let mut raw = Vec::new();
        let end = loop {
            if let Some(p) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
            assert!(
                sent.elapsed() < Duration::from_secs(10),
                "no response head within 10 s"
            );
            let mut buf = [0u8; 4096];
            match stream.read(&mut buf) {
                Ok(0) => panic!("closed before the response head"),
                Ok(n) => raw.extend_from_slice(&buf[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => panic!("reading the response head: {e}"),
            }
        };
        let head = String::from_utf8_lossy(&raw[..end]).to_string();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        let headers: Vec<(String, String)> = head
            .lines()
            .skip(1)
            .filter_map(|l| {
                let (k, v) = l.split_once(':')?;
                Some((k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            })
            .collect();
        let chunked = headers
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
        Self {
            stream,
            sent,
            status,
            headers,
            raw: raw[end + 4..].to_vec(),
            body: Vec::new(),
            chunked,
            ended: false,
        }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Moves whole chunks from `raw` to `body`.
    fn decode(&mut self) {
        if !self.chunked {
            self.body.append(&mut self.raw);
            return;
        }
        while let Some(pos) = self.raw.windows(2).position(|w| w == b"\r\n") {
            let size = std::str::from_utf8(&self.raw[..pos]).unwrap().trim();
            let size = usize::from_str_radix(size.split(';').next().unwrap(), 16).unwrap();
            if size == 0 {
                self.ended = true;
                return;
            }
            if self.raw.len() < pos + size + 4 {
                return;
            }
            self.body
                .extend_from_slice(&self.raw[pos + 2..pos + 2 + size]);
            self.raw.drain(..pos + size + 4);
        }
    }

    /// The next event or comment, the end of the stream, or `None` if nothing came by
    /// `until`.
    fn next(&mut self, until: Instant) -> Option<Item> {
        loop {
            self.decode();
            if let Some(p) = self.body.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.body.drain(..p + 2).collect();
                let text = String::from_utf8(block).unwrap();
                let data: Vec<&str> = text
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:").map(str::trim_start))
                    .collect();
                if data.is_empty() {
                    assert!(
                        text.lines().all(|l| l.is_empty() || l.starts_with(':')),
                        "an SSE block that is neither an event nor a comment: {text:?}"
                    );
                    return Some(Item::Comment);
                }
                return Some(Item::Event(serde_json::from_str(&data.join("\n")).unwrap()));
            }
            if self.ended {
                return Some(Item::End(self.sent.elapsed()));
            }
            if Instant::now() >= until {
                return None;
            }
            let mut buf = [0u8; 4096];
            match self.stream.read(&mut buf) {
                Ok(0) => self.ended = true,
                Ok(n) => self.raw.extend_from_slice(&buf[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                // Reset by the proxy: the stream is over too.
                Err(_) => self.ended = true,
            }
        }
    }

    /// The next event, counting the comments before it; `Err` with the time the stream ended
    /// (or `None` if still open at `until`).
    fn next_event(
        &mut self,
        until: Instant,
        comments: &mut usize,
    ) -> Result<Value, Option<Duration>> {
        loop {
            match self.next(until) {
                Some(Item::Event(v)) => return Ok(v),
                Some(Item::Comment) => *comments += 1,
                Some(Item::End(after)) => return Err(Some(after)),
                None => return Err(None),
            }
        }
    }

    /// Reads until `until`, counting comments; `Err` if an event arrived (the stream was not
    /// quiet) and the time it ended if it did.
    fn stay_quiet(&mut self, until: Instant, comments: &mut usize) -> Option<Duration> {
        loop {
            match self.next(until) {
                Some(Item::Event(v)) => panic!("the stream was to stay quiet, got {v}"),
                Some(Item::Comment) => *comments += 1,
                Some(Item::End(after)) => return Some(after),
                None => return None,
            }
        }
    }
}

/// How a quiet stream fared behind the proxy.
#[derive(Debug)]
enum Fate {
    /// It stayed open through the quiet time and delivered `last` (the final response).
    Survived { comments: usize, last: Value },
    /// The proxy cut it this long after the request.
    Cut { after: Duration, comments: usize },
}

impl Fate {
    fn survived(self) -> (usize, Value) {
        match self {
            Fate::Survived { comments, last } => (comments, last),
            cut => panic!("the quiet stream was cut: {cut:?}"),
        }
    }

    fn assert_cut(&self) {
        match self {
            // Cut at the proxy's idle timeout (give or take scheduling), before the quiet
            // time was over, with no comment to keep it open.
            Fate::Cut { after, comments } => {
                assert!(
                    *after >= PROXY_IDLE - Duration::from_millis(300) && *after < QUIET,
                    "cut after {after:?}, expected about {PROXY_IDLE:?}"
                );
                assert_eq!(*comments, 0);
            }
            survived => panic!("expected the proxy to cut the stream: {survived:?}"),
        }
    }
}

// ---- a 2025-11-25 client's pending question (notes-example) ----------------------------------

/// `notes-example serve --http` with `--sse-keep-alive keep_alive` behind the proxy; a
/// 2025-11-25 session calls `notes_delete`, leaves the form unanswered for [`QUIET`], then
/// accepts it.
fn legacy_question(proxy_bin: &std::path::Path, keep_alive: &str) -> (Fate, NotesFixture) {
    let fx = NotesFixture::new().unwrap();
    let notes = fx.notes.to_str().unwrap().to_owned();
    let key = fx.key_file.to_str().unwrap().to_owned();
    let (_server, addr) = spawn_notes_http(&[
        "serve",
        "--http",
        "127.0.0.1:0",
        "--principal",
        "alice",
        "--workspace",
        &notes,
        "--store",
        &fx.store,
        "--state-key-file",
        &key,
        "--sse-keep-alive",
        keep_alive,
    ])
    .unwrap();
    let proxy = proxy_in_front_of(proxy_bin, addr);
    let via = proxy.addr;

    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "keep-alive-test", "version": "0"}}});
    let opened = Streamed::post(via, &[], &init);
    assert_eq!(opened.status, 200, "{}", proxy.output());
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let session_headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let initialized = Streamed::post(
        via,
        &session_headers,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(initialized.status, 202);

    let mut call = Streamed::post(
        via,
        &session_headers,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "notes_delete", "arguments": fx.delete_args("shopping")}}),
    );
    assert_eq!(call.status, 200);
    assert_eq!(call.header("content-type"), Some("text/event-stream"));
    let mut comments = 0;
    let ask = call
        .next_event(Instant::now() + Duration::from_secs(5), &mut comments)
        .expect("elicitation/create on the stream");
    assert_eq!(ask["method"], "elicitation/create", "{ask}");

    // Nobody answers for QUIET: nothing but comments may come.
    let asked = Instant::now();
    if let Some(after) = call.stay_quiet(asked + QUIET, &mut comments) {
        return (Fate::Cut { after, comments }, fx);
    }
    let answered = Streamed::post(
        via,
        &session_headers,
        &json!({"jsonrpc": "2.0", "id": ask["id"].clone(), "result": choose("shopping.md", true)}),
    );
    assert_eq!(
        answered.status, 202,
        "the answer reached the waiting request"
    );
    let last = match call.next_event(Instant::now() + Duration::from_secs(5), &mut comments) {
        Ok(last) => last,
        Err(ended) => panic!("no final response after the answer (ended: {ended:?})"),
    };
    (Fate::Survived { comments, last }, fx)
}

#[test]
fn a_2025_11_25_clients_pending_question_outlives_the_proxy_idle_timeout() {
    let Some(proxy) = haproxy_or_skip("the legacy keep-alive test") else {
        return;
    };
    let (fate, fx) = legacy_question(&proxy, KEEP_ALIVE);
    let (comments, last) = fate.survived();
    // One comment per 0.5 s of the 5 s of silence (give or take the edges).
    assert!(comments >= 7, "{comments} keep-alive comments in {QUIET:?}");
    assert_eq!(last["id"], 1, "{last}");
    let text = last["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("Deleted shopping.md"), "{last}");
    assert!(!fx.exists("shopping.md"));

    // Comments less often than the proxy's timeout: the stream is cut, nothing is deleted.
    let (fate, fx) = legacy_question(&proxy, TOO_LONG);
    fate.assert_cut();
    assert!(fx.exists("shopping.md"));
}

// ---- 2026-07-28: a slow tool's SSE response, and subscriptions/listen (in process) -----------

/// Reports progress once (so the response becomes an SSE stream), then works quietly.
#[tool(read_only)]
async fn slow_after_progress(ctx: &mut RequestContext) -> String {
    ctx.progress(0, Some(1), Some("started")).await;
    tokio::time::sleep(QUIET).await;
    "finished after a quiet while".to_owned()
}

/// A task that works quietly, then completes.
#[tool(read_only, task)]
async fn slow_task(_ctx: &mut RequestContext) -> Result<String, HandlerError> {
    tokio::time::sleep(QUIET).await;
    Ok("task finished".to_owned())
}

/// An in-process 2026-07-28 server with `sse_keep_alive = keep_alive`, served on a loopback
/// port by `rt`.
fn modern_server(rt: &tokio::runtime::Runtime, keep_alive: Duration) -> SocketAddr {
    let server = Server::builder(Implementation::new("keep-alive", "1"))
        .tools(tools![slow_after_progress, slow_task])
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let config = HttpConfig::default()
        .with_bind(addr)
        .with_sse_keep_alive(keep_alive)
        .unwrap();
    let router = HttpServer::new(
        Arc::new(server),
        Arc::new(AllowAnonymous(Principal::new("alice"))),
    )
    .with_config(config.clone())
    .router()
    .unwrap();
    rt.spawn(async move {
        let _ = serve_router(listener, router, &config, std::future::pending()).await;
    });
    addr
}

fn modern_meta(caps: Value) -> Value {
    let mut meta = mcp_tests::meta(caps);
    meta["progressToken"] = json!("keep-alive");
    meta
}

fn tasks_caps() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

fn modern_post(addr: SocketAddr, method: &str, name: Option<&str>, params: Value) -> Streamed {
    let mut headers = vec![
        ("MCP-Protocol-Version", PROTOCOL_VERSION),
        ("Mcp-Method", method),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name));
    }
    Streamed::post(
        addr,
        &headers,
        &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
    )
}

/// Reads `stream` until the response to request 1, counting comments; `Cut` if it ends first.
fn until_response(mut stream: Streamed, comments: usize) -> Fate {
    let mut comments = comments;
    let until = Instant::now() + QUIET + Duration::from_secs(5);
    loop {
        match stream.next_event(until, &mut comments) {
            Ok(event) if event["id"] == 1 => {
                return Fate::Survived {
                    comments,
                    last: event,
                };
            }
            Ok(_) => {}
            Err(Some(after)) => return Fate::Cut { after, comments },
            Err(None) => panic!("neither a response nor the end within {:?}", QUIET * 2),
        }
    }
}

/// `slow_after_progress` through the proxy: the progress notification, then silence.
fn slow_tool(proxy_bin: &std::path::Path, keep_alive: Duration) -> Fate {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let proxy = proxy_in_front_of(proxy_bin, modern_server(&rt, keep_alive));
    let mut call = modern_post(
        proxy.addr,
        "tools/call",
        Some("slow_after_progress"),
        json!({"_meta": modern_meta(json!({})), "name": "slow_after_progress", "arguments": {}}),
    );
    assert_eq!(call.status, 200, "{}", proxy.output());
    let mut comments = 0;
    let progress = call
        .next_event(Instant::now() + Duration::from_secs(5), &mut comments)
        .expect("the progress notification");
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    until_response(call, comments)
}

/// `slow_task` as a task, then `subscriptions/listen` on it through the proxy: the
/// acknowledgement and the task's `working` status, then silence until it completes.
fn quiet_listen(proxy_bin: &std::path::Path, keep_alive: Duration) -> Fate {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let proxy = proxy_in_front_of(proxy_bin, modern_server(&rt, keep_alive));
    let mut created = modern_post(
        proxy.addr,
        "tools/call",
        Some("slow_task"),
        json!({"_meta": mcp_tests::meta(tasks_caps()), "name": "slow_task", "arguments": {}}),
    );
    assert_eq!(created.status, 200, "{}", proxy.output());
    while !created.ended {
        let mut buf = [0u8; 4096];
        match created.stream.read(&mut buf) {
            Ok(0) => created.ended = true,
            Ok(n) => created.raw.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("{e}"),
        }
        created.decode();
    }
    created.decode();
    let created: Value = serde_json::from_slice(&created.body).unwrap();
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();

    let mut listen = modern_post(
        proxy.addr,
        "subscriptions/listen",
        None,
        json!({"_meta": mcp_tests::meta(tasks_caps()), "notifications": {"taskIds": [task_id]}}),
    );
    assert_eq!(listen.status, 200);
    let mut comments = 0;
    let until = Instant::now() + Duration::from_secs(5);
    let ack = listen
        .next_event(until, &mut comments)
        .expect("the acknowledgement");
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    let working = listen
        .next_event(until, &mut comments)
        .expect("the task's status");
    assert_eq!(working["params"]["status"], "working", "{working}");
    let mut comments = 0;
    // Silence until the task completes; then its status, then the listen's own result.
    let until = Instant::now() + QUIET + Duration::from_secs(5);
    let done = match listen.next_event(until, &mut comments) {
        Ok(done) => done,
        Err(Some(after)) => return Fate::Cut { after, comments },
        Err(None) => panic!("no task status within {:?}", QUIET * 2),
    };
    assert_eq!(done["params"]["status"], "completed", "{done}");
    until_response(listen, comments)
}

#[test]
fn a_slow_tools_sse_response_outlives_the_proxy_idle_timeout() {
    let Some(proxy) = haproxy_or_skip("the slow tool keep-alive test") else {
        return;
    };
    let (comments, last) = slow_tool(&proxy, Duration::from_millis(500)).survived();
    assert!(comments >= 7, "{comments} keep-alive comments in {QUIET:?}");
    assert_eq!(
        last["result"]["content"][0]["text"], "finished after a quiet while",
        "{last}"
    );
    slow_tool(&proxy, Duration::from_secs(30)).assert_cut();
}

#[test]
fn a_quiet_subscriptions_listen_outlives_the_proxy_idle_timeout() {
    let Some(proxy) = haproxy_or_skip("the listen keep-alive test") else {
        return;
    };
    let (comments, last) = quiet_listen(&proxy, Duration::from_millis(500)).survived();
    assert!(comments >= 1, "{comments} keep-alive comments");
    assert_eq!(last["result"]["resultType"], "complete", "{last}");
    quiet_listen(&proxy, Duration::from_secs(30)).assert_cut();
}
