//! `notes-example serve --http` at its connection edge: slow, idle and slow-body clients over
//! the connection cap cannot starve a normal client or grow the server's memory past a bound;
//! `Host` and duplicate `Authorization` are refused on every route (modern, 2025-11-25,
//! connect page).

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcp_tests::notes::*;
use mcp_tests::{
    StdioServer, call_params, form_caps, http_post, meta, retry_params, spawn_notes_http,
};
use serde_json::{Value, json};

const ALICE: &str = "alice-token-0123456789abcdefghijklmnopqrstuv";

/// Starts `serve --http 127.0.0.1:0` on the fixture with `extra` flags.
fn start(fx: &NotesFixture, extra: &[&str]) -> (StdioServer, SocketAddr) {
    let notes = fx.notes.to_str().unwrap().to_owned();
    let mut args = vec![
        "serve",
        "--http",
        "127.0.0.1:0",
        "--workspace",
        notes.as_str(),
        "--store",
        fx.store.as_str(),
        "--state-key-file",
        fx.key_file.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    spawn_notes_http(&args).unwrap()
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A `/proc/PID/status` field in KiB (`VmRSS`, `VmHWM`).
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// One timed POST that must be answered within `limit`.
fn timed_post(addr: SocketAddr, message: &Value, limit: Duration) -> Value {
    let started = Instant::now();
    let response = http_post(addr, None, message).unwrap();
    let took = started.elapsed();
    assert!(took < limit, "answered after {took:?} (limit {limit:?})");
    assert_eq!(response.status, 200, "{response:?}");
    response.json().unwrap()
}

/// The kinds of stalled client the attacker keeps open.
#[derive(Clone, Copy)]
enum Stall {
    /// 40 KiB of an unfinished header, then a byte now and then.
    Headers,
    /// A finished request on a keep-alive connection, then silence.
    Idle,
    /// Headers of a 1 MB body, 256 KiB of it, then a byte now and then.
    Body,
}

fn open_stalled(addr: SocketAddr, kind: Stall) -> Option<TcpStream> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    stream
        .set_write_timeout(Some(Duration::from_millis(500)))
        .ok()?;
    let payload = match kind {
        Stall::Headers => {
            let mut p = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").into_bytes();
            p.extend(std::iter::repeat_n(b'a', 40 * 1024));
            p
        }
        Stall::Idle => {
            let body = rpc(1, "server/discover", json!({"_meta": meta(json!({}))})).to_string();
            format!(
                "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                 Accept: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\n\
                 Mcp-Method: server/discover\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .into_bytes()
        }
        Stall::Body => {
            let mut p = format!(
                "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                 MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n\
                 Content-Length: 1000000\r\n\r\n{{\"a\":\""
            )
            .into_bytes();
            p.extend(std::iter::repeat_n(b'b', 256 * 1024));
            p
        }
    };
    stream.write_all(&payload).ok()?;
    stream.set_nonblocking(true).ok()?;
    Some(stream)
}

/// Whether the server has closed `stream` (reading and discarding whatever it sent).
fn server_closed(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}

/// Keeps `count` stalled clients open against `addr` until `stop`, reopening the ones the
/// server closes; counts the closes.
fn attack(addr: SocketAddr, count: usize, stop: Arc<AtomicBool>, closed: Arc<AtomicUsize>) {
    let kinds = [Stall::Headers, Stall::Idle, Stall::Body];
    let mut held: Vec<(Stall, Option<TcpStream>)> =
        (0..count).map(|i| (kinds[i % kinds.len()], None)).collect();
    while !stop.load(Ordering::Relaxed) {
        for (kind, slot) in &mut held {
            match slot {
                None => *slot = open_stalled(addr, *kind),
                Some(stream) => {
                    if server_closed(stream) {
                        closed.fetch_add(1, Ordering::Relaxed);
                        *slot = None;
                    } else if !matches!(kind, Stall::Idle) {
                        // A trickle: enough to look alive, never enough to finish.
                        let _ = stream.write(b"c");
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Bound on the server's peak RSS growth under the attack below (debug build).
const RSS_GROWTH_LIMIT_KIB: u64 = 24 * 1024;

#[test]
fn stalled_clients_over_the_cap_neither_starve_the_notes_flow_nor_grow_memory() {
    const CAP: usize = 24;
    const ATTACKERS: usize = 90;
    let fx = NotesFixture::new().unwrap();
    let cap = CAP.to_string();
    let (server, addr) = start(
        &fx,
        &[
            "--max-connections",
            &cap,
            "--header-timeout-secs",
            "30",
            "--idle-timeout-secs",
            "30",
            "--body-timeout-secs",
            "30",
            "--max-buffered-body-bytes",
            "1048576",
        ],
    );
    let discover = rpc(1, "server/discover", json!({"_meta": meta(json!({}))}));
    timed_post(addr, &discover, Duration::from_secs(5));
    let baseline = status_kib(server.pid(), "VmRSS");

    let stop = Arc::new(AtomicBool::new(false));
    let closed = Arc::new(AtomicUsize::new(0));
    // Stops the attacker however this test ends, a failed assertion included.
    let _stop_on_exit = StopOnDrop(Arc::clone(&stop));
    let attacker = {
        let (stop, closed) = (Arc::clone(&stop), Arc::clone(&closed));
        std::thread::spawn(move || attack(addr, ATTACKERS, stop, closed))
    };
    // Let the attack fill every slot before the normal client arrives.
    let filled = Instant::now() + Duration::from_secs(10);
    while closed.load(Ordering::Relaxed) < ATTACKERS - CAP {
        assert!(Instant::now() < filled, "the attack never filled the cap");
        std::thread::sleep(Duration::from_millis(50));
    }

    // The whole confirmation flow, every leg answered within 2 s.
    let limit = Duration::from_secs(2);
    let args = fx.delete_args("tps");
    let call = |id| {
        rpc(
            id,
            "tools/call",
            call_params("notes_delete", args.clone(), form_caps()),
        )
    };
    let retry = |id, response: Value, state: &str| {
        rpc(
            id,
            "tools/call",
            retry_params(
                "notes_delete",
                args.clone(),
                form_caps(),
                json!({ DELETE_KEY: response }),
                state,
            ),
        )
    };
    let first = timed_post(addr, &call(10), limit);
    assert_eq!(result_type(&first), Some("input_required"), "{first}");
    let state = request_state(&first).unwrap();
    let cancelled = timed_post(addr, &retry(11, json!({"action": "cancel"}), &state), limit);
    assert!(!is_success(&cancelled), "{cancelled}");
    assert!(fx.exists("tps-report.md"));
    let done = timed_post(
        addr,
        &retry(12, choose("tps-report.md", true), &state),
        limit,
    );
    assert!(is_success(&done), "{done}");
    assert!(!fx.exists("tps-report.md"));
    let replay = timed_post(
        addr,
        &retry(13, choose("tps-report-draft.md", true), &state),
        limit,
    );
    assert!(is_refusal(&replay), "{replay}");
    assert!(fx.exists("tps-report-draft.md"));
    let first = timed_post(addr, &call(14), limit);
    let state = request_state(&first).unwrap();
    let declined = timed_post(
        addr,
        &retry(15, json!({"action": "decline"}), &state),
        limit,
    );
    assert!(is_success(&declined), "{declined}");

    stop.store(true, Ordering::Relaxed);
    attacker.join().unwrap();
    let peak = status_kib(server.pid(), "VmHWM");
    assert!(
        peak <= baseline + RSS_GROWTH_LIMIT_KIB,
        "peak RSS {peak} KiB, baseline {baseline} KiB, allowed growth {RSS_GROWTH_LIMIT_KIB} KiB"
    );
    eprintln!(
        "stress: baseline {baseline} KiB, peak {peak} KiB, stalled connections closed by the server: {}",
        closed.load(Ordering::Relaxed)
    );
}

/// Sends `raw` and returns the status and JSON body (if any).
fn raw_exchange(addr: SocketAddr, raw: &str) -> (u16, Value) {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(raw.as_bytes()).unwrap();
    let mut out = Vec::new();
    stream.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out);
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (
        status,
        serde_json::from_str(body.trim()).unwrap_or(Value::Null),
    )
}

/// A POST to `path` with the given Host and extra header lines.
fn post_raw(path: &str, host: &str, extra: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         {extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn modern_discover() -> (String, String) {
    let body = rpc(1, "server/discover", json!({"_meta": meta(json!({}))})).to_string();
    let headers = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\n";
    (headers.to_owned(), body)
}

fn legacy_initialize() -> (String, String) {
    let body = rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}),
    )
    .to_string();
    ("MCP-Protocol-Version: 2025-11-25\r\n".to_owned(), body)
}

#[test]
fn host_is_checked_on_every_route() {
    let fx = NotesFixture::new().unwrap();
    let (_server, addr) = start(&fx, &[]);
    let (modern_h, modern_b) = modern_discover();
    let (legacy_h, legacy_b) = legacy_initialize();
    let good = addr.to_string();
    for host in [good.as_str(), "localhost"] {
        let (status, _) = raw_exchange(addr, &post_raw("/mcp", host, &modern_h, &modern_b));
        assert_eq!(status, 200, "modern, Host {host}");
        let (status, _) = raw_exchange(addr, &post_raw("/mcp", host, &legacy_h, &legacy_b));
        assert_eq!(status, 200, "legacy, Host {host}");
    }
    for host in ["attacker.example", "attacker.example:80"] {
        for (what, path, headers, body) in [
            ("modern", "/mcp", modern_h.as_str(), modern_b.as_str()),
            ("legacy", "/mcp", legacy_h.as_str(), legacy_b.as_str()),
            ("connect page", "/connect/anything", "", "token=x"),
        ] {
            let (status, body) = raw_exchange(addr, &post_raw(path, host, headers, body));
            assert_eq!(status, 421, "{what}, Host {host}");
            assert_eq!(body["error"]["code"], -32600, "{what}: {body}");
        }
    }

    // --allowed-host names the hosts served; loopback names are then refused.
    let fx = NotesFixture::new().unwrap();
    let (_server, addr) = start(&fx, &["--allowed-host", "notes.example.com"]);
    let (status, _) = raw_exchange(
        addr,
        &post_raw("/mcp", "notes.example.com", &modern_h, &modern_b),
    );
    assert_eq!(status, 200);
    let (status, _) = raw_exchange(addr, &post_raw("/mcp", "localhost", &modern_h, &modern_b));
    assert_eq!(status, 421);

    // --public-url on a loopback bind: a proxy keeping the public Host is served, loopback
    // names still are, anything else is not.
    let fx = NotesFixture::new().unwrap();
    let (_server, addr) = start(&fx, &["--public-url", "https://Notes.Example.com/base"]);
    for (host, want) in [
        ("notes.example.com", 200),
        ("notes.example.com:443", 200),
        ("localhost", 200),
        ("attacker.example", 421),
    ] {
        let (status, _) = raw_exchange(addr, &post_raw("/mcp", host, &modern_h, &modern_b));
        assert_eq!(status, want, "--public-url, Host {host}");
    }
}

#[test]
fn two_authorization_headers_are_400_on_every_era() {
    let fx = NotesFixture::new().unwrap();
    let auth = fx.root().join("auth");
    std::fs::write(&auth, format!("alice {ALICE}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let notes = format!("alice={}", fx.notes.display());
    let args = [
        "serve",
        "--http",
        "127.0.0.1:0",
        "--auth-file",
        auth.to_str().unwrap(),
        "--workspace",
        notes.as_str(),
        "--store",
        fx.store.as_str(),
        "--state-key-file",
        fx.key_file.to_str().unwrap(),
    ];
    let (_server, addr) = spawn_notes_http(&args).unwrap();
    let host = addr.to_string();
    let one = format!("Authorization: Bearer {ALICE}\r\n");
    let two = format!("{one}Authorization: Bearer {ALICE}\r\n");
    for (what, (headers, body)) in [
        ("modern", modern_discover()),
        ("legacy", legacy_initialize()),
    ] {
        let (status, _) = raw_exchange(
            addr,
            &post_raw("/mcp", &host, &format!("{headers}{one}"), &body),
        );
        assert_eq!(status, 200, "{what}, one header");
        let (status, reply) = raw_exchange(
            addr,
            &post_raw("/mcp", &host, &format!("{headers}{two}"), &body),
        );
        assert_eq!(status, 400, "{what}, two headers");
        assert_eq!(reply["error"]["code"], -32600, "{what}: {reply}");
    }
}
