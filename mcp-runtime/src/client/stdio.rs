//! The stdio transport: a child process speaking newline-delimited JSON-RPC on its
//! stdin/stdout.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use mcp_types::RequestId;
use serde_json::Value;
use tokio::io::{
    AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, BufReader,
};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

use super::ClientError;
use super::transport::{Outgoing, Transport};

/// Waiters by request id; `None` once the reader has stopped (no answer can come any more).
type Pending = Arc<Mutex<Option<HashMap<RequestId, oneshot::Sender<Value>>>>>;

/// Where requests are written: the child's stdin, or any stream given to
/// [`StdioTransport::connect`].
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// A server run as a child process, spoken to over its stdin/stdout.
///
/// A reader task routes each response line to the request with its id (notifications and
/// lines that are not JSON-RPC responses are skipped; a line longer than
/// [`StdioTransport::DEFAULT_MAX_LINE_BYTES`] ends the transport). The child's stderr is
/// inherited. The child is killed when the transport is dropped; [`StdioTransport::close`]
/// instead closes its stdin and waits (bounded) for it to exit.
///
/// A request that passes the client's deadline (or whose call is dropped) is cancelled with
/// `notifications/cancelled` naming its id.
pub struct StdioTransport {
    stdin: tokio::sync::Mutex<Option<Writer>>,
    pending: Pending,
    /// `None` when connected to streams rather than a spawned process.
    child: Option<tokio::sync::Mutex<Child>>,
    reader: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioTransport")
            .field("child", &self.child)
            .finish_non_exhaustive()
    }
}

impl StdioTransport {
    /// Default cap on one line from the server (16 MiB).
    pub const DEFAULT_MAX_LINE_BYTES: usize = 16 << 20;

    /// Spawns `command` (stdin and stdout are taken over; stderr is inherited).
    pub fn spawn(mut command: Command) -> Result<Self, ClientError> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| ClientError::Transport(format!("cannot start the server process: {e}")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ClientError::Transport(
                "the server process has no stdin/stdout pipes".into(),
            ));
        };
        let mut transport = Self::connect(stdout, stdin);
        transport.child = Some(tokio::sync::Mutex::new(child));
        Ok(transport)
    }

    /// Speaks newline-delimited JSON-RPC over a stream pair instead of a child process: a
    /// socket, a pipe, or `tokio::io::duplex` halves joined to
    /// [`crate::transport::stdio::serve`] in the same process (no binary to build). Must be
    /// called inside a Tokio runtime (it spawns the reader task).
    pub fn connect(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
    ) -> Self {
        let pending: Pending = Arc::new(Mutex::new(Some(HashMap::new())));
        let reader = tokio::spawn(read_responses(
            reader,
            pending.clone(),
            Self::DEFAULT_MAX_LINE_BYTES,
        ));
        Self {
            stdin: tokio::sync::Mutex::new(Some(Box::new(writer))),
            pending,
            child: None,
            reader,
        }
    }

    /// Closes the server's stdin (its signal to exit) and waits up to `grace` for it; kills
    /// it after that. Returns its exit status when it exited (`None` when it was killed, or
    /// when the transport was [connected](StdioTransport::connect) to streams: then closing
    /// the writer is all there is to do).
    pub async fn close(
        &self,
        grace: std::time::Duration,
    ) -> Result<Option<std::process::ExitStatus>, ClientError> {
        if let Some(mut stdin) = self.stdin.lock().await.take() {
            // Best effort: the server may already be gone.
            let _ = stdin.shutdown().await;
        }
        let Some(child) = &self.child else {
            return Ok(None);
        };
        let mut child = child.lock().await;
        match tokio::time::timeout(grace, child.wait()).await {
            Ok(status) => status
                .map(Some)
                .map_err(|e| ClientError::Transport(format!("waiting for the server: {e}"))),
            Err(_) => {
                child
                    .kill()
                    .await
                    .map_err(|e| ClientError::Transport(format!("killing the server: {e}")))?;
                Ok(None)
            }
        }
    }

    async fn write_line(&self, body: &[u8]) -> Result<(), ClientError> {
        if body.contains(&b'\n') {
            return Err(ClientError::Request(
                "a stdio message must not contain a newline".into(),
            ));
        }
        let mut guard = self.stdin.lock().await;
        let stdin = guard
            .as_mut()
            .ok_or_else(|| ClientError::Transport("the transport is closed".into()))?;
        let gone = |e: std::io::Error| {
            ClientError::Transport(format!("cannot write to the server process: {e}"))
        };
        stdin.write_all(body).await.map_err(gone)?;
        stdin.write_all(b"\n").await.map_err(gone)?;
        stdin.flush().await.map_err(gone)
    }

    async fn request(&self, message: &Outgoing) -> Result<Value, ClientError> {
        if message.is_notification {
            self.write_line(&message.body).await?;
            return Ok(Value::Null);
        }
        let id = message
            .id
            .clone()
            .ok_or_else(|| ClientError::Request("a request needs an id".into()))?;
        let (tx, rx) = oneshot::channel();
        let registered = match self.pending.lock() {
            Ok(mut guard) => guard
                .as_mut()
                .map(|map| map.insert(id.clone(), tx))
                .is_some(),
            Err(_) => false,
        };
        if !registered {
            return Err(ClientError::Transport(
                "the server process closed its stdout or sent an over-long line; start a new transport".into(),
            ));
        }
        // Removes the waiter however this call ends (answer, error, or timeout drop).
        let _cleanup = Forget(self.pending.clone(), id.clone());
        self.write_line(&message.body).await?;
        match rx.await {
            Ok(v) => Ok(v),
            Err(_) => Err(ClientError::Transport(
                "the server process closed its stdout (exited?) before answering".into(),
            )),
        }
    }
}

struct Forget(Pending, RequestId);

impl Drop for Forget {
    fn drop(&mut self) {
        if let Ok(mut guard) = self.0.lock()
            && let Some(map) = guard.as_mut()
        {
            map.remove(&self.1);
        }
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Reads lines until EOF or an over-long line, handing each response to its waiter. Dropping
/// the waiters' senders on exit fails every pending call with "closed its stdout".
async fn read_responses(stdout: impl AsyncRead + Unpin, pending: Pending, max: usize) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
        match (&mut reader).take(limit).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) if line.len() > max => break,
            Ok(_) => {}
        }
        let Ok(value) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let is_response = value.get("result").is_some() || value.get("error").is_some();
        let Some(id) = value.get("id").and_then(RequestId::from_value) else {
            continue;
        };
        if !is_response {
            continue;
        }
        let waiter = pending
            .lock()
            .ok()
            .and_then(|mut m| m.as_mut().and_then(|m| m.remove(&id)));
        if let Some(tx) = waiter {
            let _ = tx.send(value);
        }
    }
    if let Ok(mut guard) = pending.lock() {
        guard.take();
    }
}

impl Transport for StdioTransport {
    fn send<'a>(&'a self, message: &'a Outgoing) -> BoxFuture<'a, Result<Value, ClientError>> {
        Box::pin(self.request(message))
    }

    /// Sends `notifications/cancelled` naming the request (the stdio way to cancel: the
    /// server stops the request and sends nothing more for it; a response already on its way
    /// finds no waiter and is skipped).
    fn cancel<'a>(&'a self, request: &'a Outgoing, reason: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Some(id) = &request.id else {
                return;
            };
            let note = serde_json::json!({
                "jsonrpc": "2.0",
                "method": mcp_types::METHOD_NOTIFICATION_CANCELLED,
                "params": {"requestId": id, "reason": reason},
            });
            if let Ok(line) = serde_json::to_vec(&note) {
                // Best effort: a server that is gone has nothing left to cancel.
                let _ = self.write_line(&line).await;
            }
        })
    }
}
