//! The seam between a transport and the server core: [`McpService`].
//!
//! A transport frames, authenticates and validates one JSON-RPC message, then hands it to the
//! service together with a [`RequestScope`]. The service answers with at most one [`Reply`]; the
//! notifications a request emits while it runs (progress, log) go through the context's
//! [`NotificationSink`] and end up on that request's own stream (the SSE response on HTTP, stdout
//! on stdio).

use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::StatusCode;
use mcp_types::ErrorCode;
use serde_json::Value;
use tokio::sync::{Notify, mpsc};
pub use tokio_util::sync::CancellationToken;

use super::envelope::{self, Kind};
pub use super::param_header::ParamHeader;
use crate::Principal;
use mcp_types::ToolsCall;

/// One incoming JSON-RPC message: the raw bytes plus what the transport already parsed.
///
/// Transports must parse every message once anyway (to tell requests from notifications, and on
/// HTTP to compare headers with the body), so the parsed form travels on and the service never
/// has to parse again. The raw bytes stay available for services that prefer to deserialize
/// straight into typed structs.
///
/// A well-formed `tools/call` request is read straight into its parts rather than into a full
/// JSON tree (the runtime's hot path); [`Message::value`] still returns the tree, building it
/// on first use.
#[derive(Debug, Clone)]
pub struct Message {
    raw: Bytes,
    parsed: Parsed,
}

#[derive(Debug, Clone)]
enum Parsed {
    /// The whole message as a JSON tree.
    Tree(Value),
    /// A `tools/call` request in parts; the tree is only built if someone asks for it.
    Call(Box<ToolsCall>, OnceLock<Value>),
}

/// What the server core dispatches on.
pub(crate) enum Body {
    /// Any message, as a tree.
    Tree(Value),
    /// A well-formed `tools/call` request, in parts.
    Call(Box<ToolsCall>),
}

impl Message {
    /// Parses raw bytes into a message.
    ///
    /// # Errors
    /// The JSON parse error, when `raw` is not valid UTF-8 JSON.
    pub fn parse(raw: Bytes) -> Result<Self, serde_json::Error> {
        if let Some(call) = ToolsCall::read(&raw) {
            return Ok(Self {
                raw,
                parsed: Parsed::Call(Box::new(call), OnceLock::new()),
            });
        }
        let value = serde_json::from_slice(&raw)?;
        Ok(Self {
            raw,
            parsed: Parsed::Tree(value),
        })
    }

    /// Builds a message from an already parsed value (serializing it for [`Message::raw`]).
    pub fn from_value(value: Value) -> Self {
        // Serializing a `Value` cannot fail: its map keys are always strings.
        let raw = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        Self {
            raw,
            parsed: Parsed::Tree(value),
        }
    }

    /// The bytes exactly as received.
    pub fn raw(&self) -> &Bytes {
        &self.raw
    }

    /// The parsed JSON value.
    pub fn value(&self) -> &Value {
        match &self.parsed {
            Parsed::Tree(value) => value,
            Parsed::Call(_, tree) => tree.get_or_init(|| tree_of(&self.raw)),
        }
    }

    /// Takes the parsed JSON value.
    pub fn into_value(self) -> Value {
        match self.parsed {
            Parsed::Tree(value) => value,
            Parsed::Call(_, tree) => tree.into_inner().unwrap_or_else(|| tree_of(&self.raw)),
        }
    }

    /// The `method` member, when present and a string.
    pub fn method(&self) -> Option<&str> {
        match &self.parsed {
            Parsed::Tree(value) => value.get("method").and_then(Value::as_str),
            Parsed::Call(..) => Some(mcp_types::METHOD_TOOLS_CALL),
        }
    }

    /// The `id` member, when present.
    pub fn id(&self) -> Option<&Value> {
        match &self.parsed {
            Parsed::Tree(value) => value.get("id"),
            Parsed::Call(call, _) => Some(&call.id),
        }
    }

    /// What kind of message this is, as far as a transport cares.
    pub(crate) fn kind(&self) -> Kind<'_> {
        match &self.parsed {
            Parsed::Tree(value) => envelope::classify(value),
            Parsed::Call(call, _) => Kind::Request {
                id: &call.id,
                method: mcp_types::METHOD_TOOLS_CALL,
            },
        }
    }

    /// The message as a `tools/call` read into its parts, when it is a plain, well-formed one
    /// (see [`ToolsCall::read`]); `None` for anything else (use [`Message::value`]).
    pub fn as_call(&self) -> Option<&ToolsCall> {
        match &self.parsed {
            Parsed::Call(call, _) => Some(call),
            Parsed::Tree(_) => None,
        }
    }

    /// Gives up the message for dispatch.
    pub(crate) fn into_body(self) -> Body {
        match self.parsed {
            Parsed::Tree(value) => Body::Tree(value),
            Parsed::Call(call, _) => Body::Call(call),
        }
    }
}

/// The tree of a message that was read into parts. Reading it into parts parsed every byte
/// with the same parser, so this cannot fail; `Null` is only a defensive fallback.
fn tree_of(raw: &[u8]) -> Value {
    serde_json::from_slice(raw).unwrap_or(Value::Null)
}

/// Where a running request sends its notifications (progress, log).
///
/// Each notification is one serialized JSON-RPC notification. Sending after the request was
/// cancelled, or after its transport went away, is a silent no-op that returns `false`: the
/// protocol forbids sending anything more for a cancelled request.
#[derive(Debug, Clone)]
pub struct NotificationSink {
    route: Route,
    cancel: CancellationToken,
}

#[derive(Debug, Clone)]
enum Route {
    /// Everything is dropped.
    Discard,
    /// A channel that exists from the start.
    Channel(mpsc::Sender<Bytes>),
    /// A channel created on the first send (see [`NotificationSink::lazy`]).
    Lazy(Arc<LazyRoute>),
}

/// The shared half of a lazily created channel.
#[derive(Debug)]
struct LazyRoute {
    capacity: usize,
    tx: OnceLock<mpsc::Sender<Bytes>>,
    /// The receiver, parked here by the first send until the transport takes it.
    rx: Mutex<Option<mpsc::Receiver<Bytes>>>,
    opened: Notify,
}

impl LazyRoute {
    fn sender(&self) -> &mpsc::Sender<Bytes> {
        self.tx.get_or_init(|| {
            let (tx, rx) = mpsc::channel(self.capacity);
            if let Ok(mut slot) = self.rx.lock() {
                *slot = Some(rx);
            }
            // `notify_one` stores a permit when nobody waits yet: the wake-up is never lost.
            self.opened.notify_one();
            tx
        })
    }
}

/// The transport's end of [`NotificationSink::lazy`]: learns when the handler first sends.
#[derive(Debug)]
pub struct LazyReceiver {
    route: Arc<LazyRoute>,
}

impl LazyReceiver {
    /// Completes with the channel's receiver once the handler sent its first notification
    /// (that notification is the first item). Never completes if the handler never sends.
    /// Cancel safe: dropping the future loses nothing.
    pub async fn opened(&self) -> mpsc::Receiver<Bytes> {
        loop {
            if let Some(rx) = self.try_take() {
                return rx;
            }
            self.route.opened.notified().await;
        }
    }

    /// The receiver, if the handler has sent anything yet (each receiver is handed out once).
    pub fn try_take(&self) -> Option<mpsc::Receiver<Bytes>> {
        self.route.tx.get()?;
        self.route.rx.lock().ok()?.take()
    }
}

impl NotificationSink {
    /// A sink feeding a bounded channel; `cancel` silences the sink once cancelled.
    ///
    /// Transports use this; services can use it in their own tests to observe notifications.
    pub fn channel(capacity: usize, cancel: CancellationToken) -> (Self, mpsc::Receiver<Bytes>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (Self::from_sender(tx, cancel), rx)
    }

    /// Like [`NotificationSink::channel`], but the channel is only created when the handler
    /// first sends: most requests emit nothing (no `progressToken`, no `logLevel`), and for
    /// them the per-request channel would be pure overhead. The transport waits on
    /// [`LazyReceiver::opened`] next to the handler.
    pub fn lazy(capacity: usize, cancel: CancellationToken) -> (Self, LazyReceiver) {
        let route = Arc::new(LazyRoute {
            capacity: capacity.max(1),
            tx: OnceLock::new(),
            rx: Mutex::new(None),
            opened: Notify::new(),
        });
        (
            Self {
                route: Route::Lazy(Arc::clone(&route)),
                cancel,
            },
            LazyReceiver { route },
        )
    }

    /// A sink feeding an existing channel (e.g. a writer shared by several requests).
    pub fn from_sender(tx: mpsc::Sender<Bytes>, cancel: CancellationToken) -> Self {
        Self {
            route: Route::Channel(tx),
            cancel,
        }
    }

    /// A sink that drops everything (for callers with no stream to notify).
    pub fn discard() -> Self {
        Self {
            route: Route::Discard,
            cancel: CancellationToken::new(),
        }
    }

    /// Sends one serialized notification; waits while the transport's buffer is full, which
    /// slows a chatty handler down to the client's pace instead of buffering without bound.
    ///
    /// Returns `false` when the notification was dropped (request cancelled or stream closed).
    pub async fn send(&self, notification: Bytes) -> bool {
        if self.cancel.is_cancelled() {
            return false;
        }
        let tx = match &self.route {
            Route::Discard => return false,
            Route::Channel(tx) => tx,
            Route::Lazy(route) => route.sender(),
        };
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => false,
            sent = tx.send(notification) => sent.is_ok(),
        }
    }

    /// Serializes and sends one notification; see [`NotificationSink::send`].
    pub async fn send_json(&self, notification: &Value) -> bool {
        match serde_json::to_vec(notification) {
            Ok(bytes) => self.send(Bytes::from(bytes)).await,
            Err(_) => false,
        }
    }

    /// Whether notifications can no longer be delivered.
    pub fn is_closed(&self) -> bool {
        self.cancel.is_cancelled()
            || match &self.route {
                Route::Discard => true,
                Route::Channel(tx) => tx.is_closed(),
                // Not created yet: open as long as the transport still holds its end.
                // Not created yet: open until cancelled (the transport cancels when it goes).
                Route::Lazy(route) => route.tx.get().is_some_and(mpsc::Sender::is_closed),
            }
    }
}

/// Everything a transport knows about one incoming message besides its body.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RequestScope {
    /// Who sent the message, as the transport authenticated it (never taken from `clientInfo`).
    pub principal: Principal,
    /// Where the request's progress and log notifications go.
    pub notifications: NotificationSink,
    /// Cancelled when the client cancels the request (stdio `notifications/cancelled`, HTTP
    /// disconnect), when it times out, or when it completes. Transports also drop the handler
    /// future at that point; the token is for work the handler spawned elsewhere.
    pub cancel: CancellationToken,
    /// The request span a transport opened for the core to adopt (see
    /// [`observe`](crate::observe)), so that one request makes one record.
    span: Option<Box<tracing::Span>>,
}

impl RequestScope {
    /// Builds a context.
    pub fn new(
        principal: Principal,
        notifications: NotificationSink,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            principal,
            notifications,
            cancel,
            span: None,
        }
    }

    /// Hands the transport's request span to the core.
    #[cfg(feature = "http")]
    pub(crate) fn with_span(mut self, span: Option<Box<tracing::Span>>) -> Self {
        self.span = span;
        self
    }

    /// Takes the transport's request span, if it opened one.
    pub(crate) fn take_span(&mut self) -> Option<Box<tracing::Span>> {
        self.span.take()
    }
}

/// The service's answer to one request: a serialized JSON-RPC response plus what kind it is, so
/// the HTTP transport can pick the status code without parsing the body again.
#[derive(Debug, Clone)]
pub struct Reply {
    /// One serialized JSON-RPC response (result or error), without a trailing newline.
    pub body: Bytes,
    /// Result or error, and which error.
    pub kind: ReplyKind,
    /// The result is an `InputRequiredResult` (for the request span and metrics).
    pub(crate) input_required: bool,
}

impl Reply {
    /// A successful (`result`) response.
    pub fn result(body: Bytes) -> Self {
        Self {
            body,
            kind: ReplyKind::Result,
            input_required: false,
        }
    }

    /// An `error` response with the given JSON-RPC error code.
    pub fn error(code: ErrorCode, body: Bytes) -> Self {
        Self {
            body,
            kind: ReplyKind::Error { code },
            input_required: false,
        }
    }

    /// A `-32602` error caused by missing or malformed required `params._meta` fields, which
    /// the spec maps to HTTP 400 (unlike other `-32602` errors).
    pub fn malformed_meta(body: Bytes) -> Self {
        Self {
            body,
            kind: ReplyKind::MalformedMeta,
            input_required: false,
        }
    }

    /// The HTTP status this reply gets when sent as a plain JSON response.
    pub fn http_status(&self) -> StatusCode {
        self.kind.http_status()
    }
}

/// What a [`Reply`] carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyKind {
    /// A `result` response.
    Result,
    /// An `error` response with this JSON-RPC error code.
    Error {
        /// The JSON-RPC error code (`error.code`).
        code: ErrorCode,
    },
    /// A `-32602` error because required `params._meta` fields are missing or malformed.
    MalformedMeta,
}

impl ReplyKind {
    /// The HTTP status for this kind (spec §Streamable HTTP): 404 for `-32601`; 400 for
    /// `-32020`/`-32021`/`-32022`, malformed `_meta`, and the envelope errors `-32700`/`-32600`;
    /// 200 for everything else, including other `-32602`s and `-32603`, because dual-era
    /// clients read a 400 with an unrecognised body as a legacy server.
    pub fn http_status(self) -> StatusCode {
        match self {
            Self::Result => StatusCode::OK,
            Self::MalformedMeta => StatusCode::BAD_REQUEST,
            Self::Error { code } => match code {
                ErrorCode::MethodNotFound => StatusCode::NOT_FOUND,
                ErrorCode::HeaderMismatch
                | ErrorCode::MissingRequiredClientCapability
                | ErrorCode::UnsupportedProtocolVersion
                | ErrorCode::ParseError
                | ErrorCode::InvalidRequest => StatusCode::BAD_REQUEST,
                ErrorCode::InvalidParams | ErrorCode::InternalError | ErrorCode::Other(_) => {
                    StatusCode::OK
                }
            },
        }
    }
}

/// The server core as the transports see it.
///
/// Object safe: transports hold an `Arc<dyn McpService>`.
pub trait McpService: Send + Sync + 'static {
    /// Handles one JSON-RPC request or notification sent by `ctx.principal`.
    ///
    /// The transport has already checked that `message` is a JSON object with `jsonrpc: "2.0"`
    /// and a string `method` (and, on HTTP, that the headers match the body); requests have a
    /// string or integer `id`.
    ///
    /// - For a request, return `Some(reply)` carrying the response with the request's id.
    ///   (A transport answers `-32603` if a live request yields `None`.)
    /// - For a notification, return `None` to accept it (HTTP answers 202). Returning
    ///   `Some(error reply without id)` rejects it: HTTP sends that body with a 4xx status,
    ///   stdio sends nothing, because nothing may answer a notification there.
    ///
    /// Notifications the request emits while it runs go to `ctx.notifications`. The future may
    /// be dropped at any await point (cancellation, client disconnect, timeout).
    fn handle<'a>(&'a self, message: Message, ctx: RequestScope) -> BoxFuture<'a, Option<Reply>>;

    /// [`McpService::handle`] for a transport that keeps the request's future beyond a borrow
    /// of the service (the HTTP transport, whose response body may stream it): the future owns
    /// the service's `Arc`. Default: `handle` inside a future that holds the `Arc`. Override it
    /// to build that future directly, one allocation (and one future layer) less per request.
    fn handle_owned(
        self: Arc<Self>,
        message: Message,
        ctx: RequestScope,
    ) -> BoxFuture<'static, Option<Reply>> {
        Box::pin(async move { self.handle(message, ctx).await })
    }

    /// Header rules a `tools/call` of `tool` must satisfy (its `x-mcp-header` properties, which
    /// become `Mcp-Param-*` headers on HTTP). Default: none.
    fn param_headers(&self, _tool: &str) -> &[ParamHeader] {
        &[]
    }

    /// OAuth scopes a request of `method` naming `name` (the tool or prompt name, or the
    /// resource URI of `resources/read`) requires; a transport refuses a token lacking any of
    /// them (HTTP 403 `insufficient_scope`). Default: none.
    fn required_scopes(&self, _method: &str, _name: &str) -> &[String] {
        &[]
    }

    /// Checks what the service needs to answer requests, for readiness probes (the HTTP
    /// transport's `/readyz`): each check's name and, when it failed, why. The transport
    /// bounds the wait. Default: nothing to check. [`Server`](crate::Server) checks its replay
    /// store ([`ReplayStore::ping`](crate::replay::ReplayStore::ping)) and its state keys.
    fn readiness(&self) -> BoxFuture<'_, Vec<ReadinessCheck>> {
        Box::pin(async { Vec::new() })
    }

    /// The transport stops taking requests (stdio input ended, HTTP shutdown began) and
    /// lets the in-flight ones finish: end long-lived streams (`subscriptions/listen`) with
    /// their final result now, rather than have them cut off at the grace limit. Default:
    /// nothing.
    fn shutting_down(&self) {}
}

/// The result of one readiness check ([`McpService::readiness`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadinessCheck {
    /// What was checked, e.g. `replay_store` (shown in `/readyz`).
    pub name: String,
    /// Why it is not ready; `None` when it is. Logged, not shown to the prober.
    pub error: Option<String>,
}

impl ReadinessCheck {
    /// A check named `name` with `result`.
    pub fn new(name: impl Into<String>, result: Result<(), String>) -> Self {
        Self {
            name: name.into(),
            error: result.err(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lazy_sink_creates_its_channel_on_the_first_send() {
        let cancel = CancellationToken::new();
        let (sink, lazy) = NotificationSink::lazy(4, cancel.clone());
        assert!(lazy.try_take().is_none(), "nothing sent, no channel");
        assert!(!sink.is_closed());
        let waiter = tokio::spawn(async move {
            let mut rx = lazy.opened().await;
            (rx.recv().await, rx.recv().await)
        });
        assert!(sink.send(Bytes::from_static(b"1")).await);
        assert!(sink.clone().send(Bytes::from_static(b"2")).await);
        let (first, second) = waiter.await.unwrap();
        assert_eq!(first.as_deref(), Some(&b"1"[..]));
        assert_eq!(second.as_deref(), Some(&b"2"[..]));
        cancel.cancel();
        assert!(sink.is_closed());
        assert!(
            !sink.send(Bytes::from_static(b"3")).await,
            "cancelled sinks drop"
        );
    }
}
