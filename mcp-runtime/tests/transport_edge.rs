//! The HTTP connection edge (`serve_router`): header-read and idle timeouts, the body deadline,
//! the connection cap, the buffered-body budget, `Host` and duplicate `Authorization` checks,
//! over real loopback sockets with small limits.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns: panics are failures

mod transport_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_runtime::Principal;
use mcp_runtime::server::InvalidLimit;
use mcp_runtime::service::McpService;
use mcp_runtime::transport::{
    AllowAnonymous, Authenticator, BearerTokens, HostAllowlist, HttpConfig, HttpServer,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use transport_support::{TestService, VERSION, read_response, request};

const TOKEN: &str = "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0";
const OTHER: &str = "b3RoZXJ0b2tlbm90aGVydG9rZW5vdGhlcnRv";

struct Server {
    addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

/// Long defaults, so each test shortens only the limit it is about.
fn config() -> HttpConfig {
    HttpConfig::default()
        .with_bind("127.0.0.1:0".parse().unwrap())
        .with_header_read_timeout(Duration::from_secs(30))
        .unwrap()
        .with_idle_timeout(Duration::from_secs(30))
        .unwrap()
        .with_body_timeout(Duration::from_secs(30))
        .unwrap()
}

async fn start_with(config: HttpConfig, auth: Arc<dyn Authenticator>) -> Server {
    let service = TestService::new();
    let bound = HttpServer::new(service as Arc<dyn McpService>, auth)
        .with_config(config)
        .bind()
        .await
        .unwrap();
    let addr = bound.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(bound.serve_with_shutdown(async move {
        let _ = stopped.await;
    }));
    Server { addr, _stop: stop }
}

async fn start(config: HttpConfig) -> Server {
    start_with(config, Arc::new(AllowAnonymous(Principal::new("dev")))).await
}

/// A complete `echo` request; `extra` header lines end in `\r\n`.
fn echo_request(id: i64, host: &str, extra: &str, keep_alive: bool) -> Vec<u8> {
    let body = serde_json::to_vec(&request(json!(id), "echo", Value::Null)).unwrap();
    let connection = if keep_alive { "keep-alive" } else { "close" };
    let mut raw = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nConnection: {connection}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: {VERSION}\r\nMcp-Method: echo\r\n{extra}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(&body);
    raw
}

async fn send(addr: SocketAddr, raw: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(raw).await.unwrap();
    stream
}

/// Waits (at most `limit`) for the server to close `stream`, discarding anything it sends;
/// returns how long that took, or `None` if the connection was still open at `limit`.
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        let left = limit.checked_sub(started.elapsed())?;
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => {}
        }
    }
}

/// Reads exactly one `Content-Length` response from a keep-alive stream.
async fn read_one(stream: &mut TcpStream) -> (u16, Value) {
    let mut pending = Vec::new();
    loop {
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut chunk))
            .await
            .expect("a response within 5 s")
            .unwrap();
        assert!(n > 0, "connection closed before the response");
        pending.extend_from_slice(&chunk[..n]);
        if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
            let status = head.split(' ').nth(1).unwrap().parse().unwrap();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            if pending.len() >= end + 4 + length {
                let body = &pending[end + 4..end + 4 + length];
                return (status, serde_json::from_slice(body).unwrap_or(Value::Null));
            }
        }
    }
}

#[tokio::test]
async fn half_sent_headers_are_closed_at_the_header_timeout() {
    let server = start(
        config()
            .with_header_read_timeout(Duration::from_millis(300))
            .unwrap(),
    )
    .await;
    // A slowloris: a request line and half a header, then a byte now and then.
    let mut slow = send(
        server.addr,
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a",
    )
    .await;
    let trickle = async {
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if slow.write_all(b"a").await.is_err() {
                break;
            }
        }
    };
    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    let ((), closed) = tokio::join!(trickle, async {
        closed_within(&mut silent, Duration::from_secs(3)).await
    });
    let silent_after = closed.expect("a connection that sends nothing is closed");
    assert!(
        silent_after >= Duration::from_millis(250),
        "{silent_after:?}"
    );
    let slow_after = closed_within(&mut slow, Duration::from_secs(3)).await;
    assert!(
        slow_after.is_some(),
        "trickled headers must not keep the connection open"
    );
}

#[tokio::test]
async fn oversized_headers_are_431() {
    let server = start(config().with_max_header_bytes(8 * 1024).unwrap()).await;
    let big = format!("X-Big: {}\r\n", "h".repeat(20 * 1024));
    let response =
        read_response(send(server.addr, &echo_request(1, "127.0.0.1", &big, false)).await).await;
    assert_eq!(response.status, 431);
    let small = format!("X-Small: {}\r\n", "h".repeat(2 * 1024));
    let response =
        read_response(send(server.addr, &echo_request(2, "127.0.0.1", &small, false)).await).await;
    assert_eq!(response.status, 200);
}

#[tokio::test]
async fn idle_keep_alive_connection_is_closed_at_the_idle_timeout() {
    let server = start(
        config()
            .with_idle_timeout(Duration::from_millis(400))
            .unwrap(),
    )
    .await;
    let mut stream = send(server.addr, &echo_request(1, "127.0.0.1", "", true)).await;
    let (status, reply) = read_one(&mut stream).await;
    assert_eq!((status, reply["id"].clone()), (200, json!(1)));
    // Still usable while not idle too long.
    stream
        .write_all(&echo_request(2, "127.0.0.1", "", true))
        .await
        .unwrap();
    assert_eq!(read_one(&mut stream).await.0, 200);
    let after = closed_within(&mut stream, Duration::from_secs(3))
        .await
        .expect("an idle keep-alive connection is closed");
    assert!(after >= Duration::from_millis(350), "{after:?}");
}

#[tokio::test]
async fn a_body_must_arrive_within_the_body_timeout() {
    let server = start(
        config()
            .with_body_timeout(Duration::from_millis(300))
            .unwrap(),
    )
    .await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
         MCP-Protocol-Version: {VERSION}\r\nMcp-Method: echo\r\nContent-Length: 1000\r\n\r\n{{\"jsonrpc\""
    );
    let started = Instant::now();
    let stream = send(server.addr, head.as_bytes()).await;
    let response = tokio::time::timeout(Duration::from_secs(3), read_response(stream))
        .await
        .expect("answered well before the 120 s request timeout");
    assert_eq!(response.status, 408);
    assert_eq!(response.json()["error"]["code"], -32600);
    assert!(started.elapsed() >= Duration::from_millis(250));
}

/// Opens `count` connections that each stall in one way: half-sent headers, idle after a
/// response, or a body that never finishes.
async fn stalled(addr: SocketAddr, count: usize) -> Vec<TcpStream> {
    let mut out = Vec::new();
    for i in 0..count {
        let stream = match i % 3 {
            0 => send(addr, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a").await,
            1 => {
                let mut s = send(addr, &echo_request(1, "127.0.0.1", "", true)).await;
                // Idle only once answered (when it was admitted at all).
                let _ = tokio::time::timeout(Duration::from_millis(200), s.read(&mut [0u8; 4096]))
                    .await;
                s
            }
            _ => {
                let head = format!(
                    "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMCP-Protocol-Version: {VERSION}\r\n\
                     Mcp-Method: echo\r\nContent-Length: 100000\r\n\r\n{}",
                    " ".repeat(1000)
                );
                send(addr, head.as_bytes()).await
            }
        };
        out.push(stream);
    }
    out
}

async fn still_open(streams: &mut [TcpStream]) -> usize {
    let mut open = 0;
    for s in streams {
        if closed_within(s, Duration::from_millis(20)).await.is_none() {
            open += 1;
        }
    }
    open
}

#[tokio::test]
async fn stalled_connections_over_the_cap_do_not_starve_a_normal_client() {
    const CAP: usize = 8;
    let server = start(config().with_max_connections(CAP).unwrap()).await;
    let mut held = stalled(server.addr, 3 * CAP).await;
    // A normal client is served promptly although every slot was taken by a stalled client.
    let started = Instant::now();
    let stream = send(server.addr, &echo_request(7, "127.0.0.1", "", false)).await;
    let response = tokio::time::timeout(Duration::from_secs(2), read_response(stream))
        .await
        .expect("a normal client is served within 2 s");
    assert_eq!(response.status, 200);
    assert_eq!(response.json()["id"], 7);
    assert!(started.elapsed() < Duration::from_secs(2));
    // The cap holds: the stalled connections beyond it were closed.
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let open = still_open(&mut held).await;
        if open <= CAP {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{open} stalled connections open, cap {CAP}"
        );
    }
}

#[tokio::test]
async fn buffered_bodies_share_one_budget() {
    let server = start(config().with_max_buffered_body_bytes(64 * 1024).unwrap()).await;
    // One client holds most of the budget with a body it never finishes.
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMCP-Protocol-Version: {VERSION}\r\n\
         Mcp-Method: echo\r\nContent-Length: 200000\r\n\r\n{}",
        " ".repeat(60 * 1024)
    );
    let hog = send(server.addr, head.as_bytes()).await;
    // Another's 16 KiB body no longer fits: 503 with Retry-After (once the hog's bytes landed).
    let padding = format!("X-Pad: {}\r\n", "p".repeat(10));
    let big = {
        let body = serde_json::to_vec(&request(
            json!(9),
            "echo",
            json!({"blob": "b".repeat(16 * 1024)}),
        ))
        .unwrap();
        let mut raw = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{padding}\
             MCP-Protocol-Version: {VERSION}\r\nMcp-Method: echo\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        raw.extend_from_slice(&body);
        raw
    };
    let deadline = Instant::now() + Duration::from_secs(3);
    let refused = loop {
        let response = read_response(send(server.addr, &big).await).await;
        if response.status == 503 {
            break response;
        }
        assert_eq!(response.status, 200);
        assert!(Instant::now() < deadline, "the budget never ran out");
        tokio::task::yield_now().await;
    };
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert_eq!(refused.json()["error"]["code"], -32600);
    // The hog goes away: its bytes are returned and the same request fits again.
    drop(hog);
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let response = read_response(send(server.addr, &big).await).await;
        if response.status == 200 {
            assert_eq!(response.json()["id"], 9);
            break;
        }
        assert!(Instant::now() < deadline, "the budget was not returned");
        tokio::task::yield_now().await;
    }
}

async fn status_for(addr: SocketAddr, raw: &[u8]) -> (u16, Value) {
    let response = read_response(send(addr, raw).await).await;
    let body = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    (response.status, body)
}

#[tokio::test]
async fn host_must_be_allowed() {
    let server = start(config()).await;
    for ok in ["127.0.0.1", "localhost:8080", "[::1]:1", "LOCALHOST"] {
        let (status, _) = status_for(server.addr, &echo_request(1, ok, "", false)).await;
        assert_eq!(status, 200, "{ok}");
    }
    for bad in [
        "evil.example",
        "evil.example:80",
        "127.0.0.1.evil.example",
        "a@localhost",
    ] {
        let (status, body) = status_for(server.addr, &echo_request(1, bad, "", false)).await;
        assert_eq!(status, 421, "{bad}");
        assert_eq!(body["error"]["code"], -32600, "{bad}");
        assert!(body.get("id").is_none());
    }
    // An absolute-form target names the host too.
    let raw = String::from_utf8(echo_request(1, "127.0.0.1", "", false))
        .unwrap()
        .replacen("POST /mcp", "POST http://evil.example/mcp", 1);
    assert_eq!(status_for(server.addr, raw.as_bytes()).await.0, 421);
    // No Host at all.
    let raw = String::from_utf8(echo_request(1, "127.0.0.1", "", false))
        .unwrap()
        .replacen("Host: 127.0.0.1\r\n", "", 1);
    assert_eq!(status_for(server.addr, raw.as_bytes()).await.0, 400);

    let named = start(
        config().with_allowed_hosts(Some(HostAllowlist::parse(["mcp.example.com"]).unwrap())),
    )
    .await;
    let (status, _) = status_for(named.addr, &echo_request(1, "mcp.example.com", "", false)).await;
    assert_eq!(status, 200);
    let (status, _) = status_for(named.addr, &echo_request(1, "127.0.0.1", "", false)).await;
    assert_eq!(status, 421);
}

#[tokio::test]
async fn two_authorization_headers_are_400() {
    let tokens = BearerTokens::from_pairs([
        (Principal::new("ci"), TOKEN),
        (Principal::new("other"), OTHER),
    ])
    .unwrap();
    let server = start_with(config(), Arc::new(tokens)).await;
    let one = format!("Authorization: Bearer {TOKEN}\r\n");
    let (status, _) = status_for(server.addr, &echo_request(1, "127.0.0.1", &one, false)).await;
    assert_eq!(status, 200);
    for second in [TOKEN, OTHER] {
        let two = format!("{one}Authorization: Bearer {second}\r\n");
        let (status, body) =
            status_for(server.addr, &echo_request(1, "127.0.0.1", &two, false)).await;
        assert_eq!(status, 400);
        assert_eq!(body["error"]["code"], -32600);
    }
    // Also where the authenticator ignores credentials: the request is ambiguous all the same.
    let anonymous = start(config()).await;
    let two = format!("{one}Authorization: Bearer {OTHER}\r\n");
    let (status, _) = status_for(anonymous.addr, &echo_request(1, "127.0.0.1", &two, false)).await;
    assert_eq!(status, 400);
}

#[test]
fn zero_limits_are_refused_when_set() {
    let err = config()
        .with_max_connections(0)
        .expect_err("a zero connection cap is refused");
    assert!(matches!(err, InvalidLimit::Zero("max_connections")));
    assert!(err.to_string().contains("max_connections"), "{err}");
    let err = config()
        .with_listen_backlog(0)
        .expect_err("a zero accept queue is refused");
    assert!(matches!(err, InvalidLimit::Zero("listen_backlog")));
    assert_eq!(HttpConfig::default().listen_backlog(), 1024);
}

/// How many of `clients` new connections to a bound server that is not accepting yet complete
/// their handshake within half a second. The kernel queues them up to the listen backlog; past
/// it, it drops their handshakes, and a client retries only after a second.
#[cfg(target_os = "linux")]
async fn handshakes_held(backlog: u32, clients: usize) -> usize {
    let bound = HttpServer::new(
        TestService::new() as Arc<dyn McpService>,
        Arc::new(AllowAnonymous(Principal::new("dev"))),
    )
    .with_config(config().with_listen_backlog(backlog).unwrap())
    .bind()
    .await
    .unwrap();
    let addr = bound.local_addr().unwrap();
    let connects = (0..clients)
        .map(|_| tokio::time::timeout(Duration::from_millis(500), TcpStream::connect(addr)));
    let streams = futures::future::join_all(connects).await;
    streams.iter().filter(|c| matches!(c, Ok(Ok(_)))).count()
}

/// A burst of clients connecting at once, more than tokio's own listen backlog (128), waits
/// in the server's accept queue (`HttpConfig::listen_backlog`) instead of losing handshakes;
/// the same burst against a short queue does lose some, so the queue's length is what holds it.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_burst_of_new_connections_waits_for_accept() {
    // The kernel caps every backlog at net.core.somaxconn (128 by default before Linux 5.4).
    let cap = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    if cap.is_none_or(|cap| cap < 256) {
        eprintln!("skipped: net.core.somaxconn is {cap:?}, below the 256 this test listens with");
        return;
    }
    assert_eq!(handshakes_held(256, 200).await, 200);
    let held = handshakes_held(16, 40).await;
    assert!(
        (16..40).contains(&held),
        "{held} of 40 held by a queue of 16"
    );
}
