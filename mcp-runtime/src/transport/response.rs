//! How a Streamable HTTP request is answered once it passed the gates: one JSON body, or, when
//! the handler emits notifications and the client accepts it, an SSE stream of those
//! notifications followed by the reply. The request deadline covers both.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderName, HeaderValue, StatusCode};
use mcp_types::ErrorCode;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Sleep;
use tokio_util::sync::DropGuard;

use super::auth::Authenticator;
use super::gates::{self, Accepts, json, sse_event};
use crate::Principal;
use crate::observe::TransportSpan;
use crate::service::envelope;
use crate::service::{
    CancellationToken, Grant, LazyReceiver, McpService, Message, NotificationSink, ParamMirrors,
    Reply, ReplyKind, RequestScope,
};

/// The HTTP transport's log target: requests refused before the service, and notifications
/// (a request the service answers is recorded by its request span, see
/// [`observe`](crate::observe)).
pub(super) const LOG_TARGET: &str = "mcp_runtime::transport::http";

/// What answering a request needs: the service and the per-request bounds.
pub(super) struct Responder {
    pub(super) service: Arc<dyn McpService>,
    /// For the challenge of a request the core refused to its grant (403).
    pub(super) auth: Arc<dyn Authenticator>,
    pub(super) request_timeout: Duration,
    /// Replaces `request_timeout` for `subscriptions/listen`, a stream meant to stay open.
    pub(super) listen_timeout: Duration,
    /// How long an SSE response may stay quiet before a keep-alive comment.
    pub(super) keep_alive: Duration,
    pub(super) notification_buffer: usize,
}

/// Microseconds since `started`, for the logs.
pub(super) fn micros(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

const X_ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");
const EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");
/// An SSE comment line: clients skip it; proxies see traffic.
const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// A request's one log record: the request span, opened here and adopted by the core (see
/// [`TransportSpan`]), closed exactly once, with outcome `cancelled` if dropped unfinished
/// (client disconnect).
pub(super) struct RequestLog {
    pub(super) id: Value,
    pub(super) method: String,
    span: TransportSpan,
    done: bool,
}

impl RequestLog {
    /// Opens the record of a request that arrived at `started`.
    pub(super) fn open(id: Value, method: String, principal: Principal, started: Instant) -> Self {
        let span = TransportSpan::open(&method, &id, &principal, started);
        Self {
            id,
            method,
            span,
            done: false,
        }
    }

    /// The request was answered with `reply`, sent with `status`.
    fn answered(&mut self, status: StatusCode, reply: &Reply) {
        self.done = true;
        self.span.answered(status.as_u16(), reply);
    }

    /// The request deadline passed; the timeout error was sent with `status`.
    fn timed_out(&mut self, status: StatusCode) {
        self.done = true;
        self.span.close(
            Some(status.as_u16()),
            "timeout",
            Some(ErrorCode::InternalError.code()),
        );
    }
}

impl Drop for RequestLog {
    fn drop(&mut self) {
        if !self.done {
            self.span.close(None, "cancelled", None);
        }
    }
}

/// The request's grant, with the `otel` feature also the trace context and baggage of its
/// headers.
#[cfg(feature = "otel")]
pub(super) type TracedGrant = (
    Grant,
    Option<crate::observe::TraceContext>,
    Option<crate::observe::Baggage>,
);
/// The request's grant.
#[cfg(not(feature = "otel"))]
pub(super) type TracedGrant = Grant;

type HandlerFuture = Pin<Box<dyn Future<Output = Option<Reply>> + Send>>;

fn timeout_reply(id: &Value, timeout: Duration) -> Reply {
    Reply::error(
        ErrorCode::InternalError,
        envelope::error_body(
            Some(id),
            ErrorCode::InternalError,
            &format!(
                "Internal error: request timed out after {} ms",
                timeout.as_millis()
            ),
        ),
    )
}

fn no_reply(id: &Value) -> Reply {
    Reply::error(
        ErrorCode::InternalError,
        envelope::error_body(
            Some(id),
            ErrorCode::InternalError,
            "Internal error: the server produced no response",
        ),
    )
}

/// Answers a request that passed the gates.
///
/// A plain function that does the set-up and returns the waiting part: the future only holds
/// what the wait needs (the handler, the log, the guard), not the message, the context or the
/// SSE state it may never build; it sits inside the boxed future of every request.
pub(super) fn handle_request<'a>(
    shared: &'a Responder,
    message: Message,
    grant: TracedGrant,
    mirrors: Option<ParamMirrors>,
    mut log: RequestLog,
    accept: Accepts,
    mut deadline: Pin<&'a mut Sleep>,
) -> impl Future<Output = Response> + Send + 'a {
    let timeout = if log.method == mcp_types::METHOD_SUBSCRIPTIONS_LISTEN {
        // Exempt from the per-request timeout, bounded by its own (the server normally ends
        // the listen earlier, at its maximum listen duration, with a complete result).
        let listen_deadline = Instant::now() + shared.listen_timeout;
        deadline.as_mut().reset(listen_deadline.into());
        shared.listen_timeout
    } else {
        shared.request_timeout
    };
    let cancel = CancellationToken::new();
    // Dropping the guard (response sent, or client gone) cancels the request's token.
    let guard = cancel.clone().drop_guard();
    // Most requests emit no notification: the channel is created on the first send only.
    let (sink, lazy) = NotificationSink::lazy(shared.notification_buffer, cancel.clone());
    #[cfg(feature = "otel")]
    let (grant, trace, baggage) = grant;
    let mut ctx = RequestScope::new(grant, sink, cancel).with_span(log.span.handoff());
    #[cfg(feature = "otel")]
    {
        ctx = ctx.with_trace_context(trace).with_baggage(baggage);
    }
    if let Some(mirrors) = mirrors {
        ctx = ctx.with_param_mirrors(mirrors);
    }
    let mut handler: HandlerFuture = Arc::clone(&shared.service).handle_owned(message, ctx);
    let stream = SseStart {
        deadline: deadline.deadline(),
        timeout,
        keep_alive: shared.keep_alive,
    };
    async move {
        if !accept.json {
            // A refusal of the grant, or of headers that do not mirror the body, is decided
            // before any handler runs, so it is ready on the first poll; it is an HTTP 403 or
            // 400, not an event of a stream.
            if let Some(reply) = futures::FutureExt::now_or_never(&mut handler) {
                let reply = reply.unwrap_or_else(|| no_reply(&log.id));
                if reply.kind == ReplyKind::Forbidden {
                    log.answered(StatusCode::FORBIDDEN, &reply);
                    return gates::forbidden(shared.auth.as_ref(), reply);
                }
                // Likewise a rate-limit refusal decided at once (the memory store): 429. One
                // that waited on a shared store comes as the stream's final event instead.
                if matches!(reply.kind, ReplyKind::RateLimited { .. }) {
                    log.answered(StatusCode::TOO_MANY_REQUESTS, &reply);
                    return gates::rate_limited(reply);
                }
                if reply.kind
                    == (ReplyKind::Error {
                        code: ErrorCode::HeaderMismatch,
                    })
                {
                    log.answered(StatusCode::BAD_REQUEST, &reply);
                    return json(StatusCode::BAD_REQUEST, reply.body);
                }
                let mut sse = stream.state(None, None, None, log, guard);
                if let Some(mut rx) = lazy.try_take() {
                    while let Ok(note) = rx.try_recv() {
                        sse.pending.push(note);
                    }
                }
                sse.reply = Some(reply);
                return sse_response(sse);
            }
            return sse_response(stream.state(Some(handler), None, Some(lazy), log, guard));
        }

        // JSON phase: wait for the reply; switch to SSE on the first notification. The handler
        // is polled first: one that finishes on its first poll (the common case) never touches
        // the notification or timer machinery.
        let mut rx: Option<mpsc::Receiver<Bytes>> = None;
        loop {
            tokio::select! {
                biased;
                reply = &mut handler => {
                    let reply = reply.unwrap_or_else(|| no_reply(&log.id));
                    // Notifications queued in the same poll that produced the reply still go
                    // first.
                    if accept.sse && let Some(mut rx) = rx.take().or_else(|| lazy.try_take())
                        && let Ok(note) = rx.try_recv()
                    {
                        let mut sse = stream.state(None, None, None, log, guard);
                        sse.pending.push(note);
                        while let Ok(note) = rx.try_recv() {
                            sse.pending.push(note);
                        }
                        sse.reply = Some(reply);
                        return sse_response(sse);
                    }
                    let status = reply.http_status();
                    log.answered(status, &reply);
                    drop(guard);
                    if reply.kind == ReplyKind::Forbidden {
                        return gates::forbidden(shared.auth.as_ref(), reply);
                    }
                    if matches!(reply.kind, ReplyKind::RateLimited { .. }) {
                        return gates::rate_limited(reply);
                    }
                    return json(status, reply.body);
                },
                opened = lazy.opened(), if rx.is_none() => {
                    if accept.sse {
                        return sse_response(stream.state(Some(handler), Some(opened), None, log, guard));
                    }
                    // JSON only: the client cannot receive notifications; drain and drop them.
                    rx = Some(opened);
                },
                note = async { rx.as_mut()?.recv().await }, if rx.is_some() => {
                    if note.is_none() {
                        // Every sender is gone; `opened` never fires twice, so this stays quiet.
                        rx = None;
                    }
                },
                () = deadline.as_mut() => {
                    drop(handler);
                    let reply = timeout_reply(&log.id, timeout);
                    log.timed_out(StatusCode::OK);
                    return json(StatusCode::OK, reply.body);
                },
            }
        }
    }
}

/// What an SSE response needs besides the request's own parts, fixed when the request starts.
#[derive(Clone, Copy)]
struct SseStart {
    deadline: tokio::time::Instant,
    timeout: Duration,
    keep_alive: Duration,
}

impl SseStart {
    /// The state of an SSE response that starts now.
    fn state(
        self,
        handler: Option<HandlerFuture>,
        rx: Option<mpsc::Receiver<Bytes>>,
        lazy: Option<LazyReceiver>,
        log: RequestLog,
        guard: DropGuard,
    ) -> SseState {
        SseState {
            handler,
            rx,
            lazy,
            pending: Vec::new(),
            reply: None,
            deadline: self.deadline,
            timeout: self.timeout,
            keep_alive: self.keep_alive,
            log: Some(log),
            _guard: guard,
        }
    }
}

/// An SSE response in progress. Dropping it (client disconnect) drops the handler and cancels
/// the request.
struct SseState {
    handler: Option<HandlerFuture>,
    rx: Option<mpsc::Receiver<Bytes>>,
    /// The not-yet-created channel, until the handler first sends.
    lazy: Option<LazyReceiver>,
    /// Notifications already received, to send before anything else.
    pending: Vec<Bytes>,
    /// The final response, once known.
    reply: Option<Reply>,
    deadline: tokio::time::Instant,
    timeout: Duration,
    /// Quiet time after which a keep-alive comment is sent.
    keep_alive: Duration,
    log: Option<RequestLog>,
    _guard: DropGuard,
}

impl SseState {
    /// Moves the channel's receiver in once the handler has created it.
    fn adopt_lazy(&mut self) {
        if self.rx.is_none()
            && let Some(rx) = self.lazy.as_ref().and_then(LazyReceiver::try_take)
        {
            self.rx = Some(rx);
            self.lazy = None;
        }
    }

    /// The next event (or keep-alive comment), or `None` once the final response was sent.
    async fn next_event(&mut self) -> Option<Bytes> {
        if !self.pending.is_empty() {
            return Some(sse_event(&self.pending.remove(0)));
        }
        // Quiet since the last item sent, whatever the loop below wakes up for meanwhile.
        let quiet_until = tokio::time::Instant::now() + self.keep_alive;
        loop {
            self.adopt_lazy();
            if let Some(reply) = self.reply.take() {
                // Drain notifications the handler queued before returning, then the reply.
                if let Some(note) = self.rx.as_mut().and_then(|rx| rx.try_recv().ok()) {
                    self.reply = Some(reply);
                    return Some(sse_event(&note));
                }
                self.rx = None;
                self.lazy = None;
                if let Some(log) = self.log.as_mut() {
                    log.answered(StatusCode::OK, &reply);
                }
                return Some(sse_event(&reply.body));
            }
            let handler = self.handler.as_mut()?;
            let rx_open = self.rx.is_some();
            let lazy = self.lazy.as_ref();
            let lazy_waiting = !rx_open && lazy.is_some();
            tokio::select! {
                biased;
                note = async { self.rx.as_mut()?.recv().await }, if rx_open => match note {
                    Some(note) => return Some(sse_event(&note)),
                    None => self.rx = None,
                },
                opened = async { Some(lazy?.opened().await) }, if lazy_waiting => {
                    self.rx = opened;
                    self.lazy = None;
                },
                reply = handler => {
                    self.handler = None;
                    let id = self.log.as_ref().map_or(Value::Null, |l| l.id.clone());
                    self.reply = Some(reply.unwrap_or_else(|| no_reply(&id)));
                }
                () = tokio::time::sleep_until(self.deadline) => {
                    self.handler = None;
                    self.rx = None;
                    self.lazy = None;
                    let id = self.log.as_ref().map_or(Value::Null, |l| l.id.clone());
                    if let Some(log) = self.log.as_mut() {
                        log.timed_out(StatusCode::OK);
                    }
                    return Some(sse_event(&timeout_reply(&id, self.timeout).body));
                }
                // Each item is a whole event or this comment: never inside an event.
                () = tokio::time::sleep_until(quiet_until) => {
                    return Some(Bytes::from_static(KEEP_ALIVE));
                }
            }
        }
    }
}

fn sse_response(state: SseState) -> Response {
    let stream = futures::stream::unfold(state, |mut state| async move {
        let event = state.next_event().await?;
        Some((Ok::<_, std::convert::Infallible>(event), state))
    });
    (
        StatusCode::OK,
        [
            (CONTENT_TYPE, EVENT_STREAM),
            (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (X_ACCEL_BUFFERING, HeaderValue::from_static("no")),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}
