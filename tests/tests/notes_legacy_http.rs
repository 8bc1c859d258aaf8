//! The real notes binary, `serve --http`, spoken to by a scripted 2025-11-25 HTTP client and a
//! modern client on the same port: `initialize` opens a session, `notes_delete`'s form arrives
//! on the POST's SSE stream as a live `elicitation/create`, the answer is POSTed back; decline
//! and cancel delete nothing, accept deletes; another principal's session id is refused; the
//! modern path still answers sessionless with `input_required`.

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use mcp_tests::notes::*;
use mcp_tests::{StdioServer, call_params, form_caps, http_post, spawn_notes_http};
use serde_json::{Value, json};

const ALICE: &str = "alice-token-0123456789abcdefghijklmnopqrstuv";
const BOB: &str = "bob-token-0123456789abcdefghijklmnopqrstuvwx";

fn start(fx: &NotesFixture) -> (StdioServer, SocketAddr) {
    start_with(fx, &[])
}

/// `serve --http` on an ephemeral loopback port with `extra` arguments.
fn start_with(fx: &NotesFixture, extra: &[&str]) -> (StdioServer, SocketAddr) {
    let root = fx.root();
    let auth = root.join("auth");
    std::fs::write(&auth, format!("alice {ALICE}\nbob {BOB}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let alice_ws = format!("alice={}", fx.notes.display());
    let mut args = vec![
        "serve",
        "--http",
        "127.0.0.1:0",
        "--auth-file",
        auth.to_str().unwrap(),
        "--workspace",
        alice_ws.as_str(),
        "--store",
        fx.store.as_str(),
        "--state-key-file",
        fx.key_file.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    spawn_notes_http(&args).unwrap()
}

/// One HTTP response read incrementally: status, headers, then (chunked) body events.
struct Exchange {
    status: u16,
    headers: Vec<(String, String)>,
    stream: TcpStream,
    raw: Vec<u8>,
    body: Vec<u8>,
    chunked: bool,
    done: bool,
}

impl Exchange {
    fn post(addr: SocketAddr, headers: &[(&str, &str)], body: &Value) -> Self {
        Self::send(addr, "POST", headers, &body.to_string())
    }

    fn send(addr: SocketAddr, verb: &str, headers: &[(&str, &str)], body: &str) -> Self {
        let mut head = format!(
            "{verb} /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
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
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        let mut raw = Vec::new();
        let end = loop {
            if let Some(p) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap();
            assert!(n > 0, "closed before headers");
            raw.extend_from_slice(&buf[..n]);
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
            status,
            headers,
            stream,
            raw: raw[end + 4..].to_vec(),
            body: Vec::new(),
            chunked,
            done: false,
        }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn fill(&mut self) -> bool {
        let mut buf = [0u8; 4096];
        let n = self.stream.read(&mut buf).unwrap();
        self.raw.extend_from_slice(&buf[..n]);
        n > 0
    }

    fn decode(&mut self) {
        if !self.chunked {
            self.body.append(&mut self.raw);
            return;
        }
        while let Some(pos) = self.raw.windows(2).position(|w| w == b"\r\n") {
            let size =
                usize::from_str_radix(std::str::from_utf8(&self.raw[..pos]).unwrap().trim(), 16)
                    .unwrap();
            if size == 0 {
                self.done = true;
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

    /// The whole body as JSON (plain JSON responses).
    fn json(mut self) -> Value {
        while self.fill() {}
        self.decode();
        serde_json::from_slice(&self.body).unwrap()
    }

    /// The next SSE event's JSON, or `None` at the end of the stream.
    fn next_event(&mut self) -> Option<Value> {
        loop {
            self.decode();
            if let Some(p) = self.body.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.body.drain(..p + 2).collect();
                let text = String::from_utf8(event).unwrap();
                let data: Vec<&str> = text
                    .lines()
                    .filter_map(|l| l.strip_prefix("data: "))
                    .collect();
                return Some(serde_json::from_str(&data.join("\n")).unwrap());
            }
            if self.done || !self.fill() {
                return None;
            }
        }
    }
}

struct LegacyClient {
    addr: SocketAddr,
    auth: String,
    session: String,
}

impl LegacyClient {
    fn connect(addr: SocketAddr, token: &str) -> Self {
        let auth = format!("Bearer {token}");
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "scripted-2025-11-25", "version": "0"}}});
        let r = Exchange::post(addr, &[("Authorization", &auth)], &init);
        assert_eq!(r.status, 200);
        let session = r
            .header("mcp-session-id")
            .expect("Mcp-Session-Id")
            .to_owned();
        let v = r.json();
        assert_eq!(v["result"]["protocolVersion"], "2025-11-25", "{v}");
        assert_eq!(v["result"]["serverInfo"]["name"], "notes-example");
        let c = Self {
            addr,
            auth,
            session,
        };
        let n = c.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(n.status, 202);
        c
    }

    fn post(&self, message: &Value) -> Exchange {
        Exchange::post(
            self.addr,
            &[
                ("Authorization", &self.auth),
                ("Mcp-Session-Id", &self.session),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
            message,
        )
    }

    /// `notes_delete`, answering the live elicitation with `answer`.
    fn delete(&self, id: i64, fx: &NotesFixture, answer: Value) -> (Value, Value) {
        let mut call = self.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "notes_delete", "arguments": fx.delete_args("shopping")}}));
        assert_eq!(call.status, 200);
        let ask = call.next_event().expect("elicitation/create on the stream");
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        let answered =
            self.post(&json!({"jsonrpc": "2.0", "id": ask["id"].clone(), "result": answer}));
        assert_eq!(answered.status, 202);
        let done = call.next_event().expect("the final response");
        assert_eq!(done["id"], id, "{done}");
        (done, ask)
    }
}

#[test]
fn one_http_server_serves_both_eras_on_the_real_binary() {
    let fx = NotesFixture::new().unwrap();
    let (_server, addr) = start(&fx);
    let alice = LegacyClient::connect(addr, ALICE);

    let (r, _) = alice.delete(1, &fx, json!({"action": "decline"}));
    assert!(text(&r).contains("declined"), "{r}");
    assert!(r["result"].get("resultType").is_none());
    assert!(fx.exists("shopping.md"));
    let (r, _) = alice.delete(2, &fx, json!({"action": "cancel"}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(fx.exists("shopping.md"));

    // Bob presenting Alice's session id: refused as unknown.
    let stolen = LegacyClient {
        addr,
        auth: format!("Bearer {BOB}"),
        session: alice.session.clone(),
    };
    let r = stolen.post(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}));
    assert_eq!(r.status, 404);

    // The modern path on the same port: sessionless, input_required.
    let modern = http_post(
        addr,
        Some(ALICE),
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": call_params("notes_delete", fx.delete_args("shopping"), form_caps())}),
    )
    .unwrap();
    assert_eq!(modern.status, 200, "{modern:?}");
    assert_eq!(result_type(&modern.json().unwrap()), Some("input_required"));

    let (r, ask) = alice.delete(3, &fx, choose("shopping.md", true));
    let offered = &ask["params"]["requestedSchema"]["properties"]["note_id"];
    assert!(offered.to_string().contains("shopping.md"), "{ask}");
    assert!(text(&r).contains("Deleted"), "{r}");
    assert!(!fx.exists("shopping.md"));

    // DELETE ends the session (Bob cannot); afterwards its id is unknown: 404.
    let bob_delete = Exchange::send(
        addr,
        "DELETE",
        &[
            ("Authorization", &stolen.auth),
            ("Mcp-Session-Id", &alice.session),
        ],
        "",
    );
    assert_eq!(bob_delete.status, 404);
    let ended = Exchange::send(
        addr,
        "DELETE",
        &[
            ("Authorization", &alice.auth),
            ("Mcp-Session-Id", &alice.session),
        ],
        "",
    );
    assert_eq!(ended.status, 204);
    let r = alice.post(&json!({"jsonrpc": "2.0", "id": 10, "method": "ping"}));
    assert_eq!(r.status, 404);
}

/// A client-chosen string that would forge a log line (and recolour a terminal) if logged raw.
const FORGED: &str = "x\n2026-01-01T00:00:00.000000Z  INFO forged: admin granted\r\x1b[31m";

/// Waits (bounded) until the server's stderr holds an ended line with `needle` that is about
/// the forged method; returns all of stderr. Other records may carry `needle` too (the
/// session's `initialize` also ends in "mcp request finished"), so the needle alone could end
/// the wait before the record under test is written.
fn stderr_once_logged(server: &StdioServer, needle: &str) -> String {
    server.stderr_when(Duration::from_secs(10), |e| {
        mcp_tests::ended_lines(e).any(|l| l.contains(needle) && l.contains("admin granted"))
    })
}

/// No forged line, no raw carriage return or escape; the value is there, escaped.
fn assert_log_escaped(stderr: &str) {
    assert!(
        !stderr.lines().any(|l| l.starts_with("2026-01-01T00:00:00")),
        "a forged log line appeared:\n{stderr}"
    );
    assert!(!stderr.contains('\r'), "raw CR in the log:\n{stderr:?}");
    assert!(!stderr.contains('\x1b'), "raw ESC in the log:\n{stderr:?}");
    assert!(
        stderr.contains(r"x\n2026-01-01T00:00:00.000000Z  INFO forged: admin granted\r\u{1b}[31m"),
        "the method is logged, escaped:\n{stderr}"
    );
}

#[test]
fn a_legacy_request_method_cannot_forge_log_lines() {
    let fx = NotesFixture::new().unwrap();
    let (server, addr) = start(&fx);
    let alice = LegacyClient::connect(addr, ALICE);
    let mut r = alice.post(&json!({"jsonrpc": "2.0", "id": 1, "method": FORGED}));
    assert_eq!(r.status, 200);
    let done = r.next_event().expect("the error response");
    assert_eq!(done["error"]["code"], -32601, "{done}");
    let stderr = stderr_once_logged(&server, "mcp request finished");
    assert_log_escaped(&stderr);
    // One record per request (the server logs at INFO): the request's span, not also an
    // adapter summary line naming the method a second time.
    let records = stderr
        .lines()
        .filter(|l| l.contains("admin granted"))
        .count();
    assert_eq!(records, 1, "{stderr}");
}

#[test]
fn a_modern_notification_method_cannot_forge_log_lines() {
    let fx = NotesFixture::new().unwrap();
    let (server, addr) = start(&fx);
    // A notification carries no Mcp-Method header: the method comes from the body only.
    let body = json!({"jsonrpc": "2.0", "method": FORGED}).to_string();
    let r = Exchange::send(
        addr,
        "POST",
        &[
            ("Authorization", &format!("Bearer {ALICE}")),
            ("MCP-Protocol-Version", "2026-07-28"),
        ],
        &body,
    );
    assert!(r.status < 500, "{}", r.status);
    assert_log_escaped(&stderr_once_logged(&server, "mcp notification"));
}

#[test]
fn a_form_left_unanswered_times_out_cleanly_and_deletes_nothing() {
    let fx = NotesFixture::new().unwrap();
    let (_server, addr) = start_with(&fx, &["--legacy-input-timeout-secs", "1"]);
    let alice = LegacyClient::connect(addr, ALICE);
    let mut call = alice.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "notes_delete", "arguments": fx.delete_args("shopping")}}));
    assert_eq!(call.status, 200);
    let ask = call.next_event().expect("elicitation/create on the stream");
    assert_eq!(ask["method"], "elicitation/create", "{ask}");

    // Nobody answers: the dialog is cancelled on the stream, the call says why.
    let cancelled = call.next_event().expect("notifications/cancelled");
    assert_eq!(
        cancelled["method"], "notifications/cancelled",
        "{cancelled}"
    );
    assert_eq!(cancelled["params"]["requestId"], ask["id"], "{cancelled}");
    let done = call.next_event().expect("the final response");
    assert_eq!(done["id"], 1, "{done}");
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert!(
        text(&done).contains("did not answer the form within 1 s"),
        "{done}"
    );

    // The late "yes, delete it" is refused with a reason and deletes nothing.
    let late = alice.post(&json!({"jsonrpc": "2.0", "id": ask["id"].clone(),
        "result": choose("shopping.md", true)}));
    assert_eq!(late.status, 409);
    let body = late.json();
    assert_eq!(body["error"]["code"], -32001, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("discarded and changed nothing"),
        "{body}"
    );
    assert!(fx.exists("shopping.md"));

    // The flow still works afterwards, answered in time.
    let (r, _) = alice.delete(2, &fx, choose("shopping.md", true));
    assert!(text(&r).contains("Deleted"), "{r}");
    assert!(!fx.exists("shopping.md"));
}
