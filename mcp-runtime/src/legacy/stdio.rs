//! stdio with the era chosen per process: the first message decides.

use std::io;
use std::sync::Arc;

use bytes::Bytes;
use mcp_types::{Envelope, ErrorObject, RequestId, classify_envelope};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::session::{Delivery, LegacySession, SessionLimits, error_response};
use crate::service::Grant;
use crate::service::McpService;
use crate::transport::pipeline::{Answer, Pipeline};
use crate::transport::stdio::{StdioConfig, serve};

/// Which revision a stdio process speaks, decided by its first message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// The first message was `initialize`: 2025-11-25 through the adapter.
    Legacy,
    /// Anything else (`server/discover`, a request with modern `_meta`, ...): 2026-07-28.
    Modern,
}

/// Decides the era from the first line a client sent.
pub fn era_of(first_line: &[u8]) -> Era {
    match serde_json::from_slice::<Value>(first_line) {
        Ok(v) if v.get("method").and_then(Value::as_str) == Some("initialize") => Era::Legacy,
        _ => Era::Modern,
    }
}

/// Serves stdin/stdout, picking the era from the first message (see [`serve_auto`]).
///
/// # Errors
/// An I/O error reading stdin or writing stdout.
pub async fn serve_stdio_auto(
    service: impl Into<Arc<dyn McpService>>,
    grant: impl Into<Grant>,
) -> io::Result<()> {
    serve_auto(
        service,
        grant,
        tokio::io::stdin(),
        tokio::io::stdout(),
        StdioConfig::default(),
    )
    .await
}

/// Serves one stdio connection: when the first message is `initialize`, the whole process
/// speaks 2025-11-25 through the adapter (with [`SessionLimits::default`]: a question to the
/// client is cancelled after [`DEFAULT_INPUT_TIMEOUT`](super::session::DEFAULT_INPUT_TIMEOUT)
/// without an answer); otherwise the first line is replayed into the modern
/// [`crate::transport::stdio::serve`] unchanged.
///
/// # Errors
/// An I/O error from `reader` or `writer`.
pub async fn serve_auto<R, W>(
    service: impl Into<Arc<dyn McpService>>,
    grant: impl Into<Grant>,
    reader: R,
    writer: W,
    config: StdioConfig,
) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_auto_with_limits(
        service,
        grant,
        reader,
        writer,
        config,
        SessionLimits::default(),
    )
    .await
}

/// Like [`serve_auto`], with the 2025-11-25 session's time limits given (e.g. a shorter or
/// longer [`SessionLimits::input_timeout`] for people answering forms).
///
/// # Errors
/// An I/O error from `reader` or `writer`.
pub async fn serve_auto_with_limits<R, W>(
    service: impl Into<Arc<dyn McpService>>,
    grant: impl Into<Grant>,
    reader: R,
    writer: W,
    config: StdioConfig,
    limits: SessionLimits,
) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let service = service.into();
    let mut reader = BufReader::new(reader);
    let mut first = Vec::new();
    loop {
        first.clear();
        let limit = u64::try_from(config.max_line_bytes).unwrap_or(u64::MAX);
        let n = (&mut reader)
            .take(limit.saturating_add(1))
            .read_until(b'\n', &mut first)
            .await?;
        if n == 0 || !first.trim_ascii().is_empty() {
            break;
        }
    }
    if era_of(first.trim_ascii()) == Era::Legacy {
        let session = (service, grant.into(), limits);
        return serve_legacy(session, first, reader, writer, config).await;
    }
    if !first.ends_with(b"\n") && !first.is_empty() {
        first.push(b'\n');
    }
    let replay = std::io::Cursor::new(first).chain(reader);
    serve(service, grant.into(), replay, writer, config).await
}

async fn serve_legacy<R, W>(
    (service, grant, limits): (Arc<dyn McpService>, Grant, SessionLimits),
    first: Vec<u8>,
    mut reader: BufReader<R>,
    writer: W,
    config: StdioConfig,
) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<Bytes>(config.write_queue.max(1));
    let writer_task = tokio::spawn(write_loop(writer, rx));
    let session = LegacySession::with_limits(service, grant, tx.clone(), limits);
    let mut pipeline = Pipeline::new(tx, "legacy stdio");
    let mut line = first;
    let limit = u64::try_from(config.max_line_bytes).unwrap_or(u64::MAX);
    let read_result = loop {
        let trimmed = line.trim_ascii();
        if trimmed.len() > config.max_line_bytes {
            let body = error_response(
                None,
                ErrorObject::invalid_request(format!(
                    "message longer than {} bytes",
                    config.max_line_bytes
                )),
            );
            pipeline.send(body).await;
        } else if !trimmed.is_empty() {
            on_message(trimmed, &session, &mut pipeline).await;
        }
        line.clear();
        match (&mut reader)
            .take(limit.saturating_add(1))
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) => break Ok(()),
            Ok(_) => {}
            Err(e) => break Err(e),
        }
    };
    // EOF: requests waiting on the client cannot be answered any more.
    session.close();
    pipeline.drain(config.shutdown_grace).await;
    pipeline.abort().await;
    drop(pipeline);
    drop(session);
    let written = writer_task.await.map_err(io::Error::other)?;
    read_result.and(written)
}

async fn on_message(raw: &[u8], session: &Arc<LegacySession>, pipeline: &mut Pipeline) {
    let value: Value = match serde_json::from_slice(raw) {
        Ok(v) => v,
        Err(_) => {
            pipeline
                .send(error_response(
                    None,
                    ErrorObject::parse_error("invalid JSON"),
                ))
                .await;
            return;
        }
    };
    // One classification for every reader (mcp_types::classify_envelope); only a client's
    // response to one of our requests is legal here beyond requests and notifications.
    let envelope = match classify_envelope(&value) {
        Ok(envelope) => envelope,
        Err(e) => {
            let id = e.id.and_then(RequestId::from_value);
            let body = error_response(id.as_ref(), ErrorObject::invalid_request(&e.detail));
            pipeline.send(body).await;
            return;
        }
    };
    match envelope {
        // A response to one of our requests (elicitation/create, roots/list, ...).
        Envelope::Response { .. } => match session.deliver_response(&value) {
            Delivery::Delivered => {}
            // JSON-RPC has no reply to a response: the client already got
            // notifications/cancelled for it.
            Delivery::TimedOut { .. } => {
                tracing::info!(
                    "legacy stdio: late answer to a request cancelled after its input timeout; discarded"
                );
            }
            Delivery::Unknown => {
                tracing::debug!("legacy stdio: response to no pending request ignored");
            }
        },
        Envelope::Notification {
            method: "notifications/cancelled",
            ..
        } => {
            pipeline.in_flight().cancel_notified(&value);
        }
        Envelope::Notification { method, .. } => session.handle_notification(method),
        Envelope::Request { id, method, params } => {
            let Some(request_id) = RequestId::from_value(id) else {
                return;
            };
            let params = params.cloned().unwrap_or_default();
            let session = Arc::clone(session);
            let method_owned = method.to_owned();
            pipeline
                .request(id.clone(), method, move |cancel| async move {
                    let body = session
                        .handle_request(&request_id, &method_owned, params, cancel)
                        .await;
                    Some(Answer { body, ok: true })
                })
                .await;
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: mpsc::Receiver<Bytes>,
) -> io::Result<()> {
    while let Some(message) = rx.recv().await {
        writer.write_all(&message).await?;
        writer.write_all(b"\n").await?;
        writer.flush().await?;
    }
    Ok(())
}
