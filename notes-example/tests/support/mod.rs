//! Helpers shared by the connect-page tests: raw HTTP/1.1 on loopback, the
//! `notes_connect_export` call, and a spawned `notes-example serve --http` process.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub const ALICE: &str = "alice-token-0123456789abcdefghijklmnopqrstuv";
pub const BOB: &str = "bob-token-0123456789abcdefghijklmnopqrstuvwx";
pub const CONNECT_KEY: &str = "connect_export";

/// One HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// Lowercased names.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

pub fn parse_reply(raw: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines.next().unwrap()[9..12].parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Reply {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// One HTTP/1.1 exchange (the request should say `Connection: close`).
pub async fn exchange(addr: SocketAddr, head: String, body: &[u8]) -> Reply {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    stream.write_all(&request).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut raw))
        .await
        .expect("the server answers within 5 s")
        .unwrap();
    parse_reply(&raw)
}

/// `tools/call notes_connect_export` with `caps`, plus `extra` params (requestState...).
pub async fn call_connect(addr: SocketAddr, token: &str, caps: Value, extra: Value) -> Value {
    let mut params = json!({
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": caps},
        "name": "notes_connect_export", "arguments": {}});
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n\
         Mcp-Name: notes_connect_export\r\nAuthorization: Bearer {token}\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    let reply = exchange(addr, head, body.as_bytes()).await;
    assert!(reply.status == 200 || reply.status == 400, "{reply:?}");
    serde_json::from_str(&reply.body).unwrap()
}

pub fn url_caps() -> Value {
    json!({"elicitation": {"url": {}}})
}

/// The connect link of a fresh flow, and its requestState.
pub async fn fresh_link(addr: SocketAddr, token: &str) -> (String, String) {
    let r = call_connect(addr, token, url_caps(), json!({})).await;
    let url = r["result"]["inputRequests"][CONNECT_KEY]["params"]["url"]
        .as_str()
        .unwrap_or_else(|| panic!("no link in {r}"))
        .to_owned();
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();
    (url, state)
}

/// The params of an accepting retry.
pub fn accept(state: &str) -> Value {
    json!({"requestState": state, "inputResponses": {CONNECT_KEY: {"action": "accept"}}})
}

/// A temporary directory with two workspaces and an auth file for alice and bob.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub auth: PathBuf,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for who in ["alice", "bob"] {
            std::fs::create_dir_all(dir.path().join(who)).unwrap();
        }
        let auth = dir.path().join("auth");
        std::fs::write(&auth, format!("alice {ALICE}\nbob {BOB}\n")).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        Self { dir, auth }
    }

    /// `serve` arguments for an HTTP server on `bind` with both principals.
    pub fn serve_args(&self, bind: &str) -> Vec<String> {
        let d = self.dir.path();
        vec![
            "serve".into(),
            "--http".into(),
            bind.into(),
            "--auth-file".into(),
            self.auth.display().to_string(),
            "--workspace".into(),
            format!("alice={}", d.join("alice").display()),
            "--workspace".into(),
            format!("bob={}", d.join("bob").display()),
            "--store".into(),
            "memory".into(),
            "--no-sandbox".into(),
        ]
    }
}

fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_notes-example")
}

/// Runs `notes-example ARGS` to its exit (at most 20 s): (exit code, stderr).
pub fn run_to_exit(args: &[String]) -> (Option<i32>, String) {
    let mut child = Command::new(binary())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            return (status.code(), stderr);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("notes-example {args:?} did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A running `notes-example serve --http`, killed on drop.
pub struct Served {
    child: Child,
    pub addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl Served {
    /// Spawns the server and waits (at most 20 s) for its "listening on" line.
    pub fn start(args: &[String]) -> Self {
        let mut child = Command::new(binary())
            .args(args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = stderr.lock().unwrap().clone();
            if let Some(rest) = text.split("listening on http://").nth(1) {
                let addr = rest.split('/').next().unwrap().parse().unwrap();
                return Self {
                    child,
                    addr,
                    stderr,
                };
            }
            if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
                let _ = child.kill();
                let _ = child.wait();
                panic!("server did not start: {text}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
