//! Helpers shared by the connect-page tests: raw HTTP/1.1 on loopback (the page itself), the
//! `notes_connect_export` call through the typed client (`mcp_runtime::client`), and a
//! spawned `notes-example serve --http` process.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_runtime::client::{Client as McpClient, ClientError, HttpTransport, Step};
use mcp_types::{
    CallToolResult, ClientCapabilities, ElicitResult, ElicitationCapability, InputResponses,
};
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

/// What one `tools/call notes_connect_export` came back with.
pub type ConnectStep = Result<Step<CallToolResult>, ClientError>;

/// A typed client of the MCP endpoint at `addr` presenting `token` and declaring `caps`.
pub fn mcp_client(addr: SocketAddr, token: &str, caps: ClientCapabilities) -> McpClient {
    let transport = HttpTransport::new(&format!("http://{addr}/mcp"))
        .unwrap()
        .bearer(token);
    McpClient::builder(transport)
        .capabilities(caps)
        .timeout(Duration::from_secs(20))
        .build()
}

/// `tools/call notes_connect_export` through the typed client declaring `caps`; with
/// `state`, the retry that accepts the link (consent given, page maybe not finished).
pub async fn call_connect(
    addr: SocketAddr,
    token: &str,
    caps: ClientCapabilities,
    state: Option<&str>,
) -> ConnectStep {
    let client = mcp_client(addr, token, caps);
    match state {
        None => client.call("notes_connect_export", ()).await,
        Some(state) => {
            let accept = InputResponses::new()
                .with(CONNECT_KEY, ElicitResult::accept(None))
                .unwrap();
            client
                .resume("notes_connect_export", (), accept, Some(state))
                .await
        }
    }
}

/// Client capabilities declaring URL-mode elicitation only.
pub fn url_caps() -> ClientCapabilities {
    ClientCapabilities::none().with_elicitation(ElicitationCapability::url())
}

/// The pending round's link, its message, and its requestState.
pub fn link_of(step: ConnectStep) -> (String, String, String) {
    let round = step.unwrap().pending().unwrap();
    let ask = round.url(CONNECT_KEY).unwrap();
    let state = round.request_state().unwrap().to_owned();
    (ask.url.clone(), ask.message.clone(), state)
}

/// The connect link of a fresh flow, and its requestState.
pub async fn fresh_link(addr: SocketAddr, token: &str) -> (String, String) {
    let (url, _, state) = link_of(call_connect(addr, token, url_caps(), None).await);
    (url, state)
}

/// The complete result's text and `isError` flag.
pub fn completed(step: ConnectStep) -> (String, bool) {
    let result = step.unwrap().complete().unwrap();
    (result.text(), result.is_error == Some(true))
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
            // The address is whole once the `/` after it has arrived: stderr comes in
            // chunks, and a line cut after "127.0.0." (or after half the port) must not be
            // read as the address.
            if let Some(rest) = text.split("listening on http://").nth(1)
                && let Some((addr, _)) = rest.split_once('/')
            {
                let addr = addr
                    .parse()
                    .unwrap_or_else(|e| panic!("unreadable address {addr:?} ({e}): {text}"));
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
