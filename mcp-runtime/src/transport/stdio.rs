//! The stdio transport: newline-delimited JSON-RPC over a byte stream (stdin/stdout, or any
//! reader and writer: [`serve`] serves a Unix socket or TCP connection the same way).
//!
//! Requests run through the transports' one request pipeline (`transport::pipeline`, shared
//! with the 2025-11-25 adapter): in-flight ids, cancellation, answers and shutdown. Policy is
//! the core's.
//!
//! - Every line read is one message; every line written is one response or notification, and
//!   nothing else ever reaches the writer (logs belong on stderr, via `tracing`).
//! - Requests run concurrently (one task each); their output is serialised through one writer
//!   task, so a slow request never blocks a fast one and lines never interleave.
//! - `notifications/cancelled {requestId}` drops that request's future; nothing more is written
//!   for it.
//! - Lines are read with a bounded buffer: an over-long line is skipped (never buffered whole)
//!   and answered with a `-32600` error without id; invalid UTF-8 or invalid JSON gets `-32700`.
//!   The server keeps serving after either.
//! - On EOF the server stops reading, lets in-flight requests finish for a short grace period,
//!   cancels whatever is left, flushes and returns.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mcp_types::ErrorCode;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::pipeline::{Answer, Pipeline};
use crate::log_safe::LogSafe;
use crate::server::InvalidLimit;
use crate::server::limits::nonzero;
use crate::service::Grant;
use crate::service::envelope::{self, Kind};
use crate::service::{
    CancellationToken, McpService, Message, NotificationSink, ReplyKind, RequestScope,
};

/// Tunables for [`serve`].
///
/// Start from [`StdioConfig::default`] and change what you need with the `with_*` setters;
/// read a setting back with the getter of the same name.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StdioConfig {
    pub(crate) max_line_bytes: usize,
    pub(crate) shutdown_grace: Duration,
    pub(crate) write_queue: usize,
}

impl Default for StdioConfig {
    fn default() -> Self {
        Self {
            max_line_bytes: 4 * 1024 * 1024,
            shutdown_grace: Duration::from_secs(5),
            write_queue: 256,
        }
    }
}

impl StdioConfig {
    /// The longest line accepted, in bytes (without the newline). Longer lines are rejected
    /// with `-32600` and skipped without being buffered. Default 4 MiB.
    pub fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// Sets [`StdioConfig::max_line_bytes`] (default 4 MiB).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for 0 (every message would be refused).
    pub fn with_max_line_bytes(mut self, bytes: usize) -> Result<Self, InvalidLimit> {
        self.max_line_bytes = nonzero("max_line_bytes", bytes)?;
        Ok(self)
    }

    /// How long in-flight requests may run after stdin reaches EOF before they are cancelled.
    /// Default 5 s.
    pub fn shutdown_grace(&self) -> Duration {
        self.shutdown_grace
    }

    /// Sets [`StdioConfig::shutdown_grace`] (default 5 s). Any value works: zero cancels
    /// in-flight requests as soon as stdin ends.
    #[must_use]
    pub fn with_shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// How many outgoing messages may queue for the writer before senders wait. Default 256.
    pub fn write_queue(&self) -> usize {
        self.write_queue
    }

    /// Sets [`StdioConfig::write_queue`] (default 256), raised to at least 1.
    #[must_use]
    pub fn with_write_queue(mut self, messages: usize) -> Self {
        self.write_queue = messages.max(1);
        self
    }
}

/// Serves MCP over the process's stdin and stdout with the default [`StdioConfig`].
///
/// `grant` is what every request runs under: typically a plain [`Principal`](crate::Principal),
/// the local OS user, with no scopes ([`Grant`]); a grant with scopes holds every request to
/// the scopes its tools, prompts and resources declare.
///
/// # Errors
/// An I/O error reading stdin or writing stdout.
pub async fn serve_stdio(service: Arc<dyn McpService>, grant: impl Into<Grant>) -> io::Result<()> {
    serve(
        service,
        grant,
        tokio::io::stdin(),
        tokio::io::stdout(),
        StdioConfig::default(),
    )
    .await
}

/// Serves MCP over any reader/writer pair until the reader reaches EOF (or the writer fails).
///
/// # Errors
/// An I/O error from `reader` or `writer`.
pub async fn serve<R, W>(
    service: Arc<dyn McpService>,
    grant: impl Into<Grant>,
    reader: R,
    writer: W,
    config: StdioConfig,
) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let grant: Grant = grant.into();
    let (tx, rx) = mpsc::channel::<Bytes>(config.write_queue.max(1));
    let mut writer_task = tokio::spawn(write_loop(writer, rx));
    let mut pipeline = Pipeline::new(tx, "stdio");
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();

    let read_result = loop {
        let read = tokio::select! {
            read = read_line_bounded(&mut reader, &mut line, config.max_line_bytes) => read,
            // The writer only stops early when the output is gone: nobody can hear us.
            written = &mut writer_task => {
                pipeline.abort().await;
                return flatten(written);
            }
        };
        match read {
            Err(err) => break Err(err),
            Ok(Line::Eof) => break Ok(()),
            Ok(Line::TooLong) => {
                tracing::warn!(
                    max_line_bytes = config.max_line_bytes,
                    "stdio: rejected over-long line"
                );
                let msg = format!(
                    "Invalid Request: message longer than {} bytes",
                    config.max_line_bytes
                );
                let body = envelope::error_body(None, ErrorCode::InvalidRequest, &msg);
                if !pipeline.send(body).await {
                    break Ok(());
                }
            }
            Ok(Line::Complete) => {
                let raw = Bytes::copy_from_slice(trim_line(&line));
                if raw.is_empty() {
                    continue;
                }
                dispatch(raw, &service, &grant, &mut pipeline).await;
            }
        }
    };

    // EOF (or a read error): let in-flight requests finish, within the grace period; open
    // streams (subscriptions/listen) are told to end now.
    service.shutting_down();
    pipeline.drain(config.shutdown_grace).await;
    drop(pipeline);
    let written = flatten(writer_task.await);
    read_result.and(written)
}

fn flatten(joined: Result<io::Result<()>, tokio::task::JoinError>) -> io::Result<()> {
    joined.map_err(io::Error::other)?
}

/// Strips the trailing `\r` of a CRLF line and surrounding ASCII whitespace.
fn trim_line(line: &[u8]) -> &[u8] {
    line.trim_ascii()
}

/// Handles one complete line: parse and classify it, then hand it to the pipeline.
async fn dispatch(
    raw: Bytes,
    service: &Arc<dyn McpService>,
    grant: &Grant,
    pipeline: &mut Pipeline,
) {
    let message = match Message::parse(raw) {
        Ok(message) => message,
        Err(err) => {
            tracing::debug!(error = %LogSafe(&err), "stdio: unparsable line");
            let body =
                envelope::error_body(None, ErrorCode::ParseError, "Parse error: invalid JSON");
            pipeline.send(body).await;
            return;
        }
    };
    let (id, method) = match message.kind() {
        Kind::Invalid { id, reason } => {
            let body = envelope::invalid_request_body(id, &reason);
            pipeline.send(body).await;
            return;
        }
        Kind::Notification { method } => {
            if method == "notifications/cancelled" {
                pipeline.in_flight().cancel_notified(message.value());
                return;
            }
            // Other notifications go to the service; nothing is ever written back for them.
            let service = Arc::clone(service);
            let ctx = RequestScope::new(
                grant.clone(),
                NotificationSink::discard(),
                CancellationToken::new(),
            );
            pipeline.background(async move {
                let _ = service.handle(message, ctx).await;
            });
            return;
        }
        Kind::Request { id, method } => (id.clone(), method.to_owned()),
    };
    let service = Arc::clone(service);
    let grant = grant.clone();
    let out = pipeline.sender();
    pipeline
        .request(id, &method, move |cancel| async move {
            let ctx = RequestScope::new(
                grant,
                NotificationSink::from_sender(out, cancel.clone()),
                cancel,
            );
            let reply = service.handle(message, ctx).await?;
            Some(Answer {
                ok: reply.kind == ReplyKind::Result,
                body: reply.body,
            })
        })
        .await;
}

/// Writes each queued message followed by a newline; flushes whenever the queue runs dry.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: mpsc::Receiver<Bytes>,
) -> io::Result<()> {
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(message) = next {
            writer.write_all(&single_line(message)).await?;
            writer.write_all(b"\n").await?;
            next = rx.try_recv().ok();
        }
        writer.flush().await?;
    }
    writer.flush().await?;
    writer.shutdown().await
}

/// Guarantees the one-message-per-line framing even for pretty-printed bodies: a raw CR or LF
/// in JSON can only be insignificant whitespace (inside strings they must be escaped), so
/// replacing it with a space keeps the message identical.
fn single_line(message: Bytes) -> Bytes {
    if !message.iter().any(|&b| b == b'\n' || b == b'\r') {
        return message;
    }
    message
        .iter()
        .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
        .collect::<Vec<u8>>()
        .into()
}

/// The outcome of reading one line.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// `buf` holds one line (without its newline). A final line without newline counts too.
    Complete,
    /// The line exceeded the cap; it was consumed and discarded.
    TooLong,
    /// End of input, nothing pending.
    Eof,
}

/// Reads one newline-terminated line into `buf` (cleared first), holding at most `max` bytes.
async fn read_line_bounded<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if buf.is_empty() {
                Line::Eof
            } else {
                Line::Complete
            });
        }
        let (chunk, found_newline) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], Some(i)),
            None => (available, None),
        };
        if !too_long {
            if buf.len() + chunk.len() > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let consumed = found_newline.map_or(chunk.len(), |i| i + 1);
        reader.consume(consumed);
        if found_newline.is_some() {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Complete
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    async fn lines(input: &[u8], max: usize) -> Vec<(Line, Vec<u8>)> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        let mut buf = Vec::new();
        loop {
            let line = read_line_bounded(&mut reader, &mut buf, max).await.unwrap();
            if line == Line::Eof {
                return out;
            }
            out.push((line, buf.clone()));
        }
    }

    #[test]
    fn single_line_flattens_pretty_json_without_changing_it() {
        let pretty =
            serde_json::to_vec_pretty(&serde_json::json!({"a": "x\ny", "b": [1, 2]})).unwrap();
        let flat = single_line(Bytes::from(pretty.clone()));
        assert!(!flat.contains(&b'\n'));
        let a: Value = serde_json::from_slice(&pretty).unwrap();
        let b: Value = serde_json::from_slice(&flat).unwrap();
        assert_eq!(a, b);
    }

    #[tokio::test]
    async fn bounded_reader_splits_and_caps_lines() {
        let got = lines(b"abc\n0123456789\nxy\nlast", 5).await;
        assert_eq!(
            got,
            vec![
                (Line::Complete, b"abc".to_vec()),
                (Line::TooLong, Vec::new()),
                (Line::Complete, b"xy".to_vec()),
                (Line::Complete, b"last".to_vec()),
            ]
        );
        // Exactly at the cap is fine.
        assert_eq!(
            lines(b"12345\n", 5).await,
            vec![(Line::Complete, b"12345".to_vec())]
        );
        assert!(lines(b"", 5).await.is_empty());
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// The bounded reader agrees with a naive split, except that lines over the cap are
            /// reported as too long instead of returned.
            #[test]
            fn bounded_reader_matches_naive_split(
                parts in proptest::collection::vec("[a-z{}\":]{0,12}", 0..8),
                max in 1usize..10,
            ) {
                let input = parts.join("\n");
                let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
                let got = rt.block_on(lines(input.as_bytes(), max));
                let mut expected: Vec<&str> = input.split('\n').collect();
                // A trailing empty piece is EOF, not a line.
                if expected.last() == Some(&"") {
                    expected.pop();
                }
                prop_assert_eq!(got.len(), expected.len());
                for ((kind, bytes), want) in got.iter().zip(expected) {
                    if want.len() > max {
                        prop_assert_eq!(kind, &Line::TooLong);
                    } else {
                        prop_assert_eq!(kind, &Line::Complete);
                        prop_assert_eq!(bytes.as_slice(), want.as_bytes());
                    }
                }
            }
        }
    }
}
