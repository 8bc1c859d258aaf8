//! Helpers shared by the black-box integration tests.
//!
//! - [`binary`]: builds a workspace binary once per test process and returns its path.
//! - [`notes_client`], [`notes_transport`]: `notes-example serve --stdio` behind the typed
//!   client (`mcp_runtime::client`), which most tests use.
//! - [`StdioServer`]: spawns a server with `serve --stdio` and speaks raw newline-delimited
//!   JSON-RPC to it, for the tests that check the wire itself.
//! - [`http_post`]: one Streamable HTTP POST with the `MCP-*` headers the body implies.
//! - [`meta`], [`form_caps`], [`call_params`], [`retry_params`]: `_meta` and params builders.
//! - [`lesson_workspace`], [`file_uri`]: the lesson's notes on disk.
//! - [`notes`]: fixtures and result readers for the notes-example tests.
//! - [`haproxy`]: a real load balancer (HAProxy) in front of test servers.
//! - [`fleet`]: three notes servers behind HAProxy under faults, with concurrent agents.
//! - [`otlp`]: an in-test OTLP/HTTP receiver decoding the spans servers export.

pub mod fleet;
pub mod haproxy;
pub mod notes;
pub mod otlp;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use mcp_runtime::client::{Client, StdioTransport};
use serde_json::{Value, json};

/// The protocol revision the tests speak.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// How long a test waits for one response before failing.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(20);

/// Errors from the helpers: a message saying what went wrong, for `?` in tests.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The path of the binary `bin` of package `package`, built once per test process.
///
/// Honours `<PACKAGE>_BIN` (e.g. `NOTES_EXAMPLE_BIN`) when set. Otherwise runs
/// `cargo build -p PACKAGE --bin BIN --message-format=json` with the same cargo and target
/// directory as the running tests, and reads the executable path from cargo's own report, so it
/// works wherever the target directory is.
pub fn binary(package: &str, bin: &str) -> Result<PathBuf, Error> {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let env_name = format!("{}_BIN", package.to_uppercase().replace('-', "_"));
    if let Ok(path) = std::env::var(&env_name) {
        return Ok(PathBuf::from(path));
    }
    let cache = BUILT.get_or_init(Mutex::default);
    let mut cache = cache.lock().map_err(|_| "binary cache poisoned")?;
    let key = format!("{package}/{bin}");
    if let Some(path) = cache.get(&key) {
        return Ok(path.clone());
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest_dir = env!("CARGO_MANIFEST_DIR");
    let output = Command::new(cargo)
        .current_dir(manifest_dir)
        .args([
            "build",
            "-q",
            "-p",
            package,
            "--bin",
            bin,
            "--message-format=json",
        ])
        .stderr(Stdio::inherit())
        .output()?;
    if !output.status.success() {
        return Err(format!("cargo build -p {package} failed").into());
    }
    let stdout = String::from_utf8(output.stdout)?;
    let path = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == bin)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| format!("cargo reported no executable for {package}/{bin}"))?;
    cache.insert(key, path.clone());
    Ok(path)
}

/// The `notes-example` binary.
pub fn notes_binary() -> Result<PathBuf, Error> {
    binary("notes-example", "notes-example")
}

/// Spawns `notes-example` with `args` (which include `serve --http ADDR`) and waits until it
/// prints the address it listens on, so `ADDR` may use port 0.
///
/// # Errors
/// The spawn error, or the server's stderr if it did not start listening within
/// [`RESPONSE_TIMEOUT`].
pub fn spawn_notes_http(args: &[&str]) -> Result<(StdioServer, SocketAddr), Error> {
    spawn_notes_http_with_env(args, &[])
}

/// [`spawn_notes_http`] with extra environment variables `env` (e.g. `RUST_LOG`).
///
/// # Errors
/// As [`spawn_notes_http`].
pub fn spawn_notes_http_with_env(
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<(StdioServer, SocketAddr), Error> {
    let server = StdioServer::spawn_with_env(&notes_binary()?, args, env)?;
    let stderr = server.stderr_when(RESPONSE_TIMEOUT, |e| listening_address(e).is_some());
    match listening_address(&stderr) {
        Some(addr) => Ok((server, addr)),
        None => Err(format!("notes-example did not start listening: {stderr}").into()),
    }
}

/// The lines of a server's stderr that have ended: stderr arrives in chunks, and the last line
/// may be cut anywhere, before the part a test is about.
pub fn ended_lines(stderr: &str) -> std::str::Lines<'_> {
    stderr
        .rsplit_once('\n')
        .map_or("", |(ended, _)| ended)
        .lines()
}

/// The address in a server's `listening on http://ADDR/...` line, once that much of the line
/// has arrived. The address is whole only when the `/` after it is there: stderr comes in
/// chunks, and a line cut after half the port would parse as another port.
pub fn listening_address(stderr: &str) -> Option<SocketAddr> {
    let rest = stderr.split("listening on http://").nth(1)?;
    let (addr, _) = rest.split_once('/')?;
    addr.parse().ok()
}

/// `notes-example ARGS...` (which include `serve --stdio`) behind the typed client, with
/// extra environment variables `env`; the server's stderr is discarded.
///
/// Must be called inside a Tokio runtime (the transport spawns its reader).
pub fn notes_client(args: &[&str], env: &[(&str, &str)]) -> Result<Client, Error> {
    let transport = notes_transport(args, env)?;
    Ok(Client::builder(transport).timeout(RESPONSE_TIMEOUT).build())
}

/// The transport of [`notes_client`], for a test that configures its own client (protocol
/// version, capabilities, deadline).
pub fn notes_transport(args: &[&str], env: &[(&str, &str)]) -> Result<StdioTransport, Error> {
    let mut command = tokio::process::Command::new(notes_binary()?);
    command.args(args).stderr(Stdio::null());
    for (k, v) in env {
        command.env(k, v);
    }
    Ok(StdioTransport::spawn(command)?)
}

/// Client capabilities declaring form elicitation.
pub fn form_caps() -> Value {
    json!({"elicitation": {"form": {}}})
}

/// Request `_meta` with the protocol version, client info and `caps`.
pub fn meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-tests", "version": "0.1.0"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

/// `tools/call` params for a first leg.
pub fn call_params(tool: &str, arguments: Value, caps: Value) -> Value {
    json!({"_meta": meta(caps), "name": tool, "arguments": arguments})
}

/// `tools/call` params for a retry carrying `responses` and the echoed `request_state`.
pub fn retry_params(
    tool: &str,
    arguments: Value,
    caps: Value,
    responses: Value,
    request_state: &str,
) -> Value {
    json!({
        "_meta": meta(caps),
        "name": tool,
        "arguments": arguments,
        "inputResponses": responses,
        "requestState": request_state,
    })
}

/// An `ElicitResult` accepting `content`.
pub fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// Writes the lesson's notes under `root/notes` (three "TPS report" notes, one in a
/// subfolder, and a shopping list) and returns that directory.
pub fn lesson_workspace(root: &Path) -> Result<PathBuf, Error> {
    let notes = root.join("notes");
    notes_example::demo::write_lesson_notes(&notes)?;
    Ok(notes)
}

/// The `file:` URI of a directory (canonicalised), percent-encoding what needs it.
pub fn file_uri(dir: &Path) -> Result<String, Error> {
    let canonical = std::fs::canonicalize(dir)?;
    let path = canonical.to_str().ok_or("non-UTF-8 path")?;
    let mut out = String::from("file://");
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(out)
}

/// A server process spoken to over stdio.
///
/// Stdout is read by a thread into a channel, so waits have timeouts and a silent server fails
/// the test instead of hanging it. Stderr is collected for diagnostics. The child is killed on
/// drop.
pub struct StdioServer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    next_id: i64,
}

impl StdioServer {
    /// Spawns `program args...` with piped stdio.
    pub fn spawn(program: &Path, args: &[&str]) -> Result<Self, Error> {
        Self::spawn_with_env(program, args, &[])
    }

    /// Spawns with extra environment variables.
    pub fn spawn_with_env(
        program: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Self, Error> {
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let collected = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&collected);
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stderr);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                if let Ok(mut s) = sink.lock() {
                    s.push_str(&line);
                }
                line.clear();
            }
        });
        Ok(Self {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr: collected,
            next_id: 1,
        })
    }

    /// The server's process id (e.g. to read `/proc/PID/status`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Waits until `done` holds for what the server wrote to stderr, or `timeout` passed;
    /// returns that stderr either way (the caller's assertions say what was missing).
    pub fn stderr_when(&self, timeout: Duration, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let stderr = self.stderr();
            if done(&stderr) || Instant::now() >= deadline {
                return stderr;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Writes one raw line (a newline is appended).
    pub fn send_line(&mut self, line: &str) -> Result<(), Error> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        let written = stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush());
        written.map_err(|e| {
            // A failed write usually means the server exited; what it said is the diagnosis.
            std::thread::sleep(Duration::from_millis(100));
            format!(
                "writing to the server failed ({e}); stderr:\n{}",
                self.stderr()
            )
            .into()
        })
    }

    /// Sends a request with a fresh id and returns that id without waiting.
    pub fn send_request(&mut self, method: &str, params: Value) -> Result<i64, Error> {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&msg.to_string())?;
        Ok(id)
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) -> Result<(), Error> {
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_line(&msg.to_string())
    }

    /// The next line the server writes, parsed, or `None` after `timeout`.
    pub fn next_message(&self, timeout: Duration) -> Result<Option<Value>, Error> {
        match self.lines.recv_timeout(timeout) {
            Ok(line) => Ok(Some(serde_json::from_str(&line)?)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => {
                Err(format!("server closed stdout; stderr:\n{}", self.stderr()).into())
            }
        }
    }

    /// Waits for the response to request `id`, skipping notifications.
    pub fn response(&self, id: i64) -> Result<Value, Error> {
        let deadline = Instant::now() + RESPONSE_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(msg) = self.next_message(left)? else {
                return Err(format!(
                    "no response to request {id} within {RESPONSE_TIMEOUT:?}; stderr:\n{}",
                    self.stderr()
                )
                .into());
            };
            if msg.get("id") == Some(&json!(id)) {
                return Ok(msg);
            }
        }
    }

    /// Sends a request and waits for its response.
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, Error> {
        let id = self.send_request(method, params)?;
        self.response(id)
    }

    /// Closes stdin and waits (bounded) for the process to exit; returns its exit code.
    pub fn shutdown(mut self) -> Result<Option<i32>, Error> {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status.code());
            }
            if Instant::now() > deadline {
                self.child.kill()?;
                return Err("server did not exit after stdin closed".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response: status and body.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The status line and headers, as received.
    pub head: String,
    /// The body, de-chunked.
    pub body: String,
}

impl HttpResponse {
    /// The value of the first header named `name` (case-insensitive), if any.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then_some(value.trim())
        })
    }

    /// The body as JSON: a plain JSON body, or the last `data:` event of an SSE body.
    pub fn json(&self) -> Result<Value, Error> {
        let trimmed = self.body.trim();
        if trimmed.starts_with('{') {
            return Ok(serde_json::from_str(trimmed)?);
        }
        let data = trimmed
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("data:"))
            .ok_or("body is neither JSON nor SSE with data")?;
        Ok(serde_json::from_str(data.trim())?)
    }
}

/// POSTs one JSON-RPC message to `http://addr/mcp` with the `MCP-*` headers it implies and an
/// optional bearer token (HTTP/1.1, `Connection: close`).
pub fn http_post(
    addr: SocketAddr,
    token: Option<&str>,
    message: &Value,
) -> Result<HttpResponse, Error> {
    http_post_with(addr, token, message, &[])
}

/// [`http_post`] with `extra` headers (e.g. `traceparent`).
///
/// # Errors
/// As [`http_post`].
pub fn http_post_with(
    addr: SocketAddr,
    token: Option<&str>,
    message: &Value,
    extra: &[(&str, &str)],
) -> Result<HttpResponse, Error> {
    let body = message.to_string();
    let mut headers = String::new();
    headers.push_str(&format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    ));
    if let Some(version) =
        message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str()
    {
        headers.push_str(&format!("MCP-Protocol-Version: {version}\r\n"));
    }
    if let Some(method) = message["method"].as_str() {
        headers.push_str(&format!("Mcp-Method: {method}\r\n"));
        let target = match method {
            "tools/call" | "prompts/get" => message["params"]["name"].as_str(),
            "resources/read" => message["params"]["uri"].as_str(),
            _ => None,
        };
        if let Some(name) = target {
            headers.push_str(&format!("Mcp-Name: {name}\r\n"));
        }
    }
    if let Some(token) = token {
        headers.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    for (name, value) in extra {
        headers.push_str(&format!("{name}: {value}\r\n"));
    }
    headers.push_str("\r\n");
    exchange(addr, &headers, body.as_bytes())
}

/// GETs `path` from `addr` (HTTP/1.1, `Connection: close`): health probes, metrics.
pub fn http_get(addr: SocketAddr, path: &str) -> Result<HttpResponse, Error> {
    let head = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    exchange(addr, &head, b"")
}

/// Sends one request (head and body) and reads the whole response.
fn exchange(addr: SocketAddr, head: &str, body: &[u8]) -> Result<HttpResponse, Error> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(RESPONSE_TIMEOUT))?;
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8(raw)?;
    let (head, rest) = text
        .split_once("\r\n\r\n")
        .ok_or("malformed HTTP response")?;
    let status: u16 = head.split_whitespace().nth(1).ok_or("no status")?.parse()?;
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase().starts_with("transfer-encoding:")
            && l.to_ascii_lowercase().contains("chunked")
    });
    let body = if chunked {
        dechunk(rest)?
    } else {
        rest.to_owned()
    };
    Ok(HttpResponse {
        status,
        head: head.to_owned(),
        body,
    })
}

fn dechunk(mut rest: &str) -> Result<String, Error> {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").ok_or("bad chunk")?;
        let size = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)?;
        if size == 0 {
            return Ok(out);
        }
        out.push_str(after.get(..size).ok_or("short chunk")?);
        rest = after.get(size + 2..).ok_or("short chunk")?;
    }
}

#[cfg(test)]
mod tests {
    use super::listening_address;

    #[test]
    fn only_ended_lines_are_read() {
        let stderr = "first record\nsecond rec";
        assert_eq!(
            super::ended_lines(stderr).collect::<Vec<_>>(),
            ["first record"]
        );
        assert_eq!(super::ended_lines("cut before any newline").count(), 0);
        assert_eq!(super::ended_lines("a\nb\n").collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn an_address_is_read_only_once_its_line_has_got_past_it() {
        let line = "notes-example: listening on http://127.0.0.1:43817/mcp\n";
        // Every cut of the line before the `/`: no address yet (a cut after "127.0.0.1:43"
        // would otherwise read as port 43).
        for cut in 0..line.find("/mcp").unwrap_or(0) {
            assert_eq!(listening_address(&line[..cut]), None, "{:?}", &line[..cut]);
        }
        assert_eq!(
            listening_address(&line[..line.len() - 4]),
            Some("127.0.0.1:43817".parse().unwrap())
        );
        assert_eq!(
            listening_address(line),
            Some("127.0.0.1:43817".parse().unwrap())
        );
    }
}
