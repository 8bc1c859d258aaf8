//! Streamable HTTP for 2025-11-25 clients, chosen per request, in front of the sessionless
//! 2026-07-28 router.
//!
//! [`LegacyHttp::wrap`] puts an axum middleware in front of the modern
//! [`HttpServer::router`](crate::transport::HttpServer::router). For each request on the MCP
//! path it decides the era ([`era_from_headers`], then [`is_legacy_initialize`] when only the
//! body can tell):
//!
//! | Request | Era |
//! |---|---|
//! | `MCP-Protocol-Version` is a 2025 revision (`2025-11-25`, `2025-06-18`, `2025-03-26`) | legacy |
//! | `MCP-Protocol-Version` is anything else, or `Mcp-Method` is present | modern (untouched) |
//! | `Mcp-Session-Id` present (and no modern header) | legacy |
//! | POST with none of these headers, body `initialize` without modern `_meta` | legacy: a new session |
//! | anything else | modern (the body is re-attached unchanged) |
//!
//! The body is only read ahead of the modern transport in the last two rows, and only after
//! the request passed the `Origin` check and the [`Authenticator`]; otherwise the modern
//! transport gives its own 403/401 without the body being read.
//!
//! # Legacy requests
//!
//! Checked in order: `Origin` (403), the same [`Authenticator`] as the modern transport (401),
//! verb (`POST` and `DELETE`; `GET` gets 405: no standalone SSE stream is offered, which
//! 2025-11-25 allows), body size (413), JSON (400 `-32700`), JSON-RPC shape (400 `-32600`;
//! batches are refused as in 2025-11-25), then:
//!
//! - `initialize` without `Mcp-Session-Id` opens a session: a random id of 256 bits
//!   (base64url), bound to the authenticated principal, returned in `Mcp-Session-Id` with the
//!   2025-11-25 `initialize` result (`application/json`). A principal holding
//!   [`LegacyHttpConfig::max_sessions_per_principal`] sessions loses its least recently used
//!   idle one; when [`LegacyHttpConfig::max_sessions`] live sessions exist (after dropping
//!   expired ones), the answer is 503 with `Retry-After`.
//! - Anything else without `Mcp-Session-Id`: 400.
//! - An unknown, expired, or another principal's session id: 404 (the client starts a new
//!   session, per 2025-11-25). A foreign principal cannot tell an existing session from a
//!   missing one.
//! - A request: its response comes on a `text/event-stream` response (when `Accept` allows SSE):
//!   the `elicitation/create`, `roots/list` and `sampling/createMessage` requests the adapter
//!   sends for input rounds, progress/log notifications, then the final response, then the
//!   stream closes; while nothing is sent, an SSE comment every
//!   [`LegacyHttpConfig::keep_alive`] keeps proxies from closing the stream. With `Accept: application/json` only, the response is plain JSON and a tool
//!   that needs client input fails (`-32603`: the client cannot be asked).
//! - A `tools/call` the core refuses under a rate limit ([`crate::rate_limit`]) is answered
//!   **429** with the `-32023` JSON-RPC error as its `application/json` body, `Retry-After`
//!   and `RateLimit-Limit`, like the 2026-07-28 transport does: before starting a stream the
//!   adapter waits up to the service's [`McpService::admission_wait`] (the rate-limit
//!   store's deadline) for that verdict. A call let through streams as above.
//! - A JSON-RPC response (the client's answer to one of those requests): 202; 409 with a
//!   JSON-RPC error (code `-32001`) explaining it when that request was cancelled after
//!   [`LegacyHttpConfig::input_timeout`] without an answer; 400 when no request of this
//!   session ever waited for that id (or it was already answered).
//! - A request waiting on the client longer than [`LegacyHttpConfig::input_timeout`]: the
//!   question is cancelled (`notifications/cancelled` with its id and a reason, on the
//!   request's stream), then a `tools/call` is answered with an `isError` tool result saying
//!   the user did not answer in time and nothing was done with an answer (what a 2025-11-25
//!   client shows the model and the user as the tool's outcome, so it can call again); other
//!   methods get JSON-RPC error `-32001`.
//! - A notification: 202 (`notifications/cancelled` cancels the named request of this session).
//! - `DELETE`: ends the session (204): waiting requests fail, in-flight ones are cancelled.
//!
//! Sessions idle longer than [`LegacyHttpConfig::idle_ttl`] expire (a session with a request in
//! flight is not idle). Expired sessions are dropped lazily, when looked up or when a new
//! session needs room, so no background task is needed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::header::{ALLOW, CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use mcp_types::{Envelope, ErrorCode, JsonObject, RequestId, classify_envelope};
use serde_json::Value;
use tokio::sync::mpsc;

use super::LEGACY_PROTOCOL_VERSION;
use super::session::{DEFAULT_INPUT_TIMEOUT, Delivery, LegacySession, SessionLimits};
use crate::Principal;
use crate::log_safe::LogSafe;
use crate::server::InvalidLimit;
use crate::server::limits::nonzero;
use crate::service::envelope;
use crate::service::{CancellationToken, Grant, McpService};
use crate::transport::gates::{self, Refusal};
use crate::transport::http_config::routable_path;
use crate::transport::pipeline::duplicate_id_body;
use crate::transport::{Authenticator, HttpConfig, OriginAllowlist};

const LOG_TARGET: &str = "mcp_runtime::legacy::http";

use super::era::MCP_PROTOCOL_VERSION;
pub use super::era::{
    HttpEra, MCP_SESSION_ID, SESSION_ERA_VERSIONS, era_from_headers, is_legacy_initialize,
};
use super::session_table::{Busy, Caps, Entry, make_room, mint_session_id};

/// The code deployed 2025-11-25 SDKs use for "session not found" (not a spec-defined code, so
/// it is an application code in `mcp_types`' terms).
const SESSION_NOT_FOUND: ErrorCode = ErrorCode::Other(-32001);

/// Tunables for the legacy HTTP adapter: start from [`LegacyHttpConfig::from_http`] (or
/// [`LegacyHttpConfig::default`]) and change what you need with the `with_*` setters, which
/// check as they set; read a setting back with the getter of the same name.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LegacyHttpConfig {
    pub(crate) path: String,
    pub(crate) max_sessions: usize,
    pub(crate) max_sessions_per_principal: usize,
    pub(crate) keep_alive: Option<Duration>,
    pub(crate) idle_ttl: Duration,
    pub(crate) max_body_bytes: usize,
    pub(crate) request_timeout: Duration,
    pub(crate) input_timeout: Duration,
    pub(crate) allowed_origins: OriginAllowlist,
    pub(crate) stream_buffer: usize,
}

impl Default for LegacyHttpConfig {
    fn default() -> Self {
        Self::from_http(&HttpConfig::default())
    }
}

impl LegacyHttpConfig {
    /// The same path, limits and origins as the modern transport's configuration.
    pub fn from_http(http: &HttpConfig) -> Self {
        Self {
            path: http.path.clone(),
            max_sessions: 1024,
            max_sessions_per_principal: 16,
            keep_alive: Some(http.sse_keep_alive),
            idle_ttl: Duration::from_secs(30 * 60),
            max_body_bytes: http.max_body_bytes,
            request_timeout: http.request_timeout,
            input_timeout: DEFAULT_INPUT_TIMEOUT,
            allowed_origins: http.allowed_origins.clone(),
            stream_buffer: http.notification_buffer,
        }
    }

    /// The MCP endpoint path (must match the modern router's). Default `/mcp`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Sets [`LegacyHttpConfig::path`] (default: the modern transport's, `/mcp`).
    ///
    /// # Errors
    /// [`InvalidLimit::Path`] unless it starts with `/` and has no `{`, `}` or `*`.
    pub fn with_path(mut self, path: impl Into<String>) -> Result<Self, InvalidLimit> {
        let path = path.into();
        if !routable_path(&path) {
            return Err(InvalidLimit::Path(path));
        }
        self.path = path;
        Ok(self)
    }

    /// Most live sessions at once; a new `initialize` beyond it gets 503. Default 1024.
    pub fn max_sessions(&self) -> usize {
        self.max_sessions
    }

    /// Sets [`LegacyHttpConfig::max_sessions`] (default 1024); lowers
    /// [`LegacyHttpConfig::max_sessions_per_principal`] to it if above.
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for 0.
    pub fn with_max_sessions(mut self, sessions: usize) -> Result<Self, InvalidLimit> {
        self.max_sessions = nonzero("max_sessions", sessions)?;
        self.max_sessions_per_principal = self.max_sessions_per_principal.min(sessions);
        Ok(self)
    }

    /// Most live sessions per principal; a new one beyond it ends that principal's least
    /// recently used idle session, so one principal cannot exhaust the server-wide bound.
    /// Default 16.
    pub fn max_sessions_per_principal(&self) -> usize {
        self.max_sessions_per_principal
    }

    /// Sets [`LegacyHttpConfig::max_sessions_per_principal`] (default 16), clamped to 1 ..=
    /// [`LegacyHttpConfig::max_sessions`].
    #[must_use]
    pub fn with_max_sessions_per_principal(mut self, sessions: usize) -> Self {
        self.max_sessions_per_principal = sessions.clamp(1, self.max_sessions);
        self
    }

    /// While a request's SSE stream has nothing to send (e.g. waiting on a human answering an
    /// elicitation), an SSE comment is sent this often so proxies keep it open. `None`: never.
    /// Default: the modern transport's `sse_keep_alive` (15 s).
    pub fn keep_alive(&self) -> Option<Duration> {
        self.keep_alive
    }

    /// Sets [`LegacyHttpConfig::keep_alive`] (default 15 s; `None`: never).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for `Some(Duration::ZERO)` (write `None` for never).
    pub fn with_keep_alive(mut self, interval: Option<Duration>) -> Result<Self, InvalidLimit> {
        self.keep_alive = interval.map(|i| nonzero("keep_alive", i)).transpose()?;
        Ok(self)
    }

    /// A session unused this long expires. Default 30 minutes.
    pub fn idle_ttl(&self) -> Duration {
        self.idle_ttl
    }

    /// Sets [`LegacyHttpConfig::idle_ttl`] (default 30 minutes).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for zero.
    pub fn with_idle_ttl(mut self, ttl: Duration) -> Result<Self, InvalidLimit> {
        self.idle_ttl = nonzero("idle_ttl", ttl)?;
        Ok(self)
    }

    /// Largest accepted request body, in bytes (413 beyond). Default 4 MiB.
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    /// Sets [`LegacyHttpConfig::max_body_bytes`] (default: the modern transport's, 4 MiB).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for 0.
    pub fn with_max_body_bytes(mut self, bytes: usize) -> Result<Self, InvalidLimit> {
        self.max_body_bytes = nonzero("max_body_bytes", bytes)?;
        Ok(self)
    }

    /// How long the server's own work for one input round of a legacy request may run (the
    /// waits for the client's answers are bounded by [`LegacyHttpConfig::input_timeout`]
    /// instead). Over it the client gets `-32603` "request timed out". Default: the modern
    /// transport's `request_timeout` (120 s).
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// Sets [`LegacyHttpConfig::request_timeout`] (default 120 s).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for zero.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Result<Self, InvalidLimit> {
        self.request_timeout = nonzero("request_timeout", timeout)?;
        Ok(self)
    }

    /// How long a request waits for the client to answer one `elicitation/create`,
    /// `roots/list` or `sampling/createMessage` (for a form: the person filling it in).
    /// When it expires the question is cancelled with `notifications/cancelled` on the
    /// request's stream, a `tools/call` is answered with an `isError` result saying the user
    /// did not answer in time (other methods: error `-32001`), and a late answer gets 409 with
    /// a JSON-RPC error saying so. Nothing the question was for is carried out. Default
    /// 5 minutes ([`DEFAULT_INPUT_TIMEOUT`]).
    pub fn input_timeout(&self) -> Duration {
        self.input_timeout
    }

    /// Sets [`LegacyHttpConfig::input_timeout`] (default 5 minutes).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for zero (every question would time out at once).
    pub fn with_input_timeout(mut self, timeout: Duration) -> Result<Self, InvalidLimit> {
        self.input_timeout = nonzero("input_timeout", timeout)?;
        Ok(self)
    }

    /// Which `Origin` values may call the server. Default: the modern transport's (loopback
    /// origins only).
    pub fn allowed_origins(&self) -> &OriginAllowlist {
        &self.allowed_origins
    }

    /// Sets [`LegacyHttpConfig::allowed_origins`] (default: loopback origins only).
    #[must_use]
    pub fn with_allowed_origins(mut self, origins: OriginAllowlist) -> Self {
        self.allowed_origins = origins;
        self
    }

    /// How many messages may queue on one request's SSE stream. Default 64.
    pub fn stream_buffer(&self) -> usize {
        self.stream_buffer
    }

    /// Sets [`LegacyHttpConfig::stream_buffer`] (default 64), raised to at least 1.
    #[must_use]
    pub fn with_stream_buffer(mut self, messages: usize) -> Self {
        self.stream_buffer = messages.max(1);
        self
    }
}

/// The 2025-11-25 Streamable HTTP adapter: sessions, and the middleware that routes to it.
#[derive(Clone)]
pub struct LegacyHttp {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LegacyHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacyHttp")
            .field("config", &self.inner.config)
            .field("sessions", &self.session_count())
            .finish_non_exhaustive()
    }
}

struct Inner {
    /// The modern core, reached only through the service seam.
    service: Arc<dyn McpService>,
    auth: Arc<dyn Authenticator>,
    config: LegacyHttpConfig,
    sessions: Mutex<HashMap<String, Arc<Entry>>>,
}

impl LegacyHttp {
    /// An adapter serving `service` (a [`Server`](crate::server::Server), or any
    /// `Arc<dyn McpService>`) to 2025-11-25 clients, authenticating with `auth` (pass the
    /// modern transport's authenticator, so both eras see the same principals).
    pub fn new(
        service: impl Into<Arc<dyn McpService>>,
        auth: Arc<dyn Authenticator>,
        config: LegacyHttpConfig,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                service: service.into(),
                auth,
                config,
                sessions: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// `modern` with the adapter in front: requests on [`LegacyHttpConfig::path`] that are
    /// 2025-11-25 go to the adapter; everything else reaches `modern` unchanged.
    pub fn wrap(&self, modern: Router) -> Router {
        modern.layer(axum::middleware::from_fn_with_state(
            Arc::clone(&self.inner),
            route,
        ))
    }

    /// How many sessions are live (expired ones not yet dropped included).
    pub fn session_count(&self) -> usize {
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

async fn route(State(inner): State<Arc<Inner>>, request: Request, next: Next) -> Response {
    if request.uri().path() != inner.config.path {
        return next.run(request).await;
    }
    match era_from_headers(request.method(), request.headers()) {
        HttpEra::Modern => next.run(request).await,
        HttpEra::Legacy => {
            let (parts, body) = request.into_parts();
            legacy(&inner, parts, Pending::Body(body)).await
        }
        HttpEra::NeedsBody => {
            let (parts, body) = request.into_parts();
            // Rejections are the modern transport's to give, before any body is read.
            if origin_refused(&inner, &parts.headers)
                || inner.auth.authenticate(&parts.headers).is_err()
            {
                return next.run(Request::from_parts(parts, body)).await;
            }
            let raw = match read_body(&inner, &parts.headers, body).await {
                Ok(raw) => raw,
                Err(response) => return response,
            };
            if is_legacy_initialize(&raw) {
                legacy(&inner, parts, Pending::Read(raw)).await
            } else {
                next.run(Request::from_parts(parts, Body::from(raw))).await
            }
        }
    }
}

/// A request body, read or not yet.
enum Pending {
    Body(Body),
    Read(Bytes),
}

fn origin_refused(inner: &Inner, headers: &HeaderMap) -> bool {
    gates::check_origin(&inner.config.allowed_origins, headers).is_err()
}

fn refuse(status: StatusCode, id: Option<&Value>, code: ErrorCode, message: &str) -> Response {
    tracing::info!(target: LOG_TARGET, status = status.as_u16(), reason = message, "legacy request refused");
    gates::json(status, envelope::error_body(id, code, message))
}

async fn read_body(inner: &Inner, headers: &HeaderMap, body: Body) -> Result<Bytes, Response> {
    let limit = inner.config.max_body_bytes;
    let timeout = inner.config.request_timeout;
    let deadline = tokio::time::Instant::now() + timeout;
    gates::body_until(body, headers, limit, deadline, timeout)
        .await
        .map_err(refused)
}

/// Logs a shared gate's refusal and turns it into the response.
fn refused(refusal: Refusal) -> Response {
    tracing::info!(target: LOG_TARGET, status = refusal.status.as_u16(), reason = refusal.reason, "legacy request refused");
    refusal.into_response()
}

/// The core's refusal of a request its grant may not make ([`McpService::authorize`]), as
/// the modern transport sends it: 403 with an `insufficient_scope` challenge. Asked before a
/// session is touched; the core enforces the same verdict on the forwarded request anyway.
fn forbidden(
    inner: &Inner,
    grant: &Grant,
    method: &str,
    params: &JsonObject,
    id: &Value,
) -> Option<Response> {
    let id = RequestId::from_value(id)?;
    let reply = inner.service.authorize(grant, &id, method, params)?;
    tracing::info!(target: LOG_TARGET, status = 403, reason = "insufficient scope", "legacy request refused");
    Some(gates::forbidden(&*inner.auth, reply))
}

fn session_header(headers: &HeaderMap) -> Option<&str> {
    headers.get(MCP_SESSION_ID).and_then(|v| v.to_str().ok())
}

fn not_found(id: Option<&Value>) -> Response {
    refuse(
        StatusCode::NOT_FOUND,
        id,
        SESSION_NOT_FOUND,
        "Session not found: it expired, was deleted, or never existed; send `initialize` without Mcp-Session-Id to start a new one",
    )
}

/// What a legacy POST body is.
enum Kind {
    Request {
        id: Value,
        method: String,
        params: JsonObject,
    },
    Notification {
        method: String,
        value: Value,
    },
    Response(Value),
}

/// Sorts a POST body by [`classify_envelope`]'s rules (the modern transports' too); a
/// client's response answers one of our requests here.
fn classify(value: Value) -> Result<Kind, (Option<Value>, String)> {
    enum Decided {
        Request(Value, String, JsonObject),
        Notification(String),
        Response,
    }
    let decided = match classify_envelope(&value) {
        Ok(Envelope::Request { id, method, params }) => Decided::Request(
            id.clone(),
            method.to_owned(),
            params.cloned().unwrap_or_default(),
        ),
        Ok(Envelope::Notification { method, .. }) => Decided::Notification(method.to_owned()),
        Ok(Envelope::Response { .. }) => Decided::Response,
        Err(e) => {
            let detail = if value.is_array() {
                "one JSON-RPC object per POST (batches are not part of 2025-11-25)".to_owned()
            } else {
                e.detail
            };
            return Err((e.id.cloned(), format!("Invalid Request: {detail}")));
        }
    };
    Ok(match decided {
        Decided::Request(id, method, params) => Kind::Request { id, method, params },
        Decided::Notification(method) => Kind::Notification { method, value },
        Decided::Response => Kind::Response(value),
    })
}

async fn legacy(inner: &Arc<Inner>, parts: Parts, body: Pending) -> Response {
    if let Err(refusal) = gates::check_origin(&inner.config.allowed_origins, &parts.headers) {
        return refused(refusal);
    }
    let grant = match gates::authenticate(inner.auth.as_ref(), &parts.headers).await {
        Ok(grant) => grant,
        Err(refusal) => return refused(refusal),
    };
    let principal = grant.principal.clone();
    if parts.method == Method::DELETE {
        return delete(inner, &parts.headers, &principal);
    }
    if parts.method != Method::POST {
        let mut response = StatusCode::METHOD_NOT_ALLOWED.into_response();
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("POST, DELETE"));
        return response;
    }
    if let Some(version) = parts.headers.get(MCP_PROTOCOL_VERSION)
        && version.to_str().ok().map(str::trim) != Some(LEGACY_PROTOCOL_VERSION)
    {
        return refuse(
            StatusCode::BAD_REQUEST,
            None,
            ErrorCode::InvalidRequest,
            "Bad Request: unsupported MCP-Protocol-Version; this server speaks 2025-11-25 (or 2026-07-28 without sessions)",
        );
    }
    let raw = match body {
        Pending::Read(raw) => raw,
        Pending::Body(body) => match read_body(inner, &parts.headers, body).await {
            Ok(raw) => raw,
            Err(response) => return response,
        },
    };
    let value: Value = match serde_json::from_slice(&raw) {
        Ok(v) => v,
        Err(_) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                None,
                ErrorCode::ParseError,
                "Parse error: invalid JSON",
            );
        }
    };
    let kind = match classify(value) {
        Ok(kind) => kind,
        Err((id, reason)) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                id.as_ref(),
                ErrorCode::InvalidRequest,
                &reason,
            );
        }
    };
    if let Kind::Request { id, method, params } = &kind
        && let Some(response) = forbidden(inner, &grant, method, params, id)
    {
        return response;
    }
    let Some(sid) = session_header(&parts.headers) else {
        return match kind {
            Kind::Request { id, method, params } if method == "initialize" => {
                open_session(inner, grant, id, params).await
            }
            Kind::Request { id, .. } => refuse(
                StatusCode::BAD_REQUEST,
                Some(&id),
                ErrorCode::InvalidRequest,
                "Bad Request: Mcp-Session-Id header required; send `initialize` first",
            ),
            _ => refuse(
                StatusCode::BAD_REQUEST,
                None,
                ErrorCode::InvalidRequest,
                "Bad Request: Mcp-Session-Id header required; send `initialize` first",
            ),
        };
    };
    let request_id = match &kind {
        Kind::Request { id, .. } => Some(id.clone()),
        _ => None,
    };
    let Some(entry) = lookup(inner, sid, &principal) else {
        return not_found(request_id.as_ref());
    };
    match kind {
        Kind::Response(value) => match entry.session.deliver_response(&value) {
            Delivery::Delivered => StatusCode::ACCEPTED.into_response(),
            // The request it answers was cancelled for want of an answer: say so, distinctly.
            Delivery::TimedOut { message } => refuse(
                StatusCode::CONFLICT,
                None,
                super::session::INPUT_TIMEOUT_CODE,
                &message,
            ),
            Delivery::Unknown => refuse(
                StatusCode::BAD_REQUEST,
                None,
                ErrorCode::InvalidRequest,
                "Invalid Request: no request of this session waits for that id (already answered, or never sent)",
            ),
        },
        Kind::Notification { method, value } => {
            if method == "notifications/cancelled" {
                entry.in_flight.cancel_notified(&value);
            } else {
                entry.session.handle_notification(&method);
            }
            StatusCode::ACCEPTED.into_response()
        }
        Kind::Request { id, method, params } => {
            request(inner, entry, &parts.headers, grant, id, method, params).await
        }
    }
}

/// The live session `sid` if it belongs to `principal`; drops it when expired.
fn lookup(inner: &Inner, sid: &str, principal: &Principal) -> Option<Arc<Entry>> {
    let mut sessions = inner
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let entry = Arc::clone(sessions.get(sid)?);
    if entry.expired(inner.config.idle_ttl) {
        sessions.remove(sid);
        entry.end();
        return None;
    }
    if entry.session.principal() != principal {
        tracing::warn!(target: LOG_TARGET, principal = %LogSafe(principal), "legacy session id presented by another principal; refused as unknown");
        return None;
    }
    entry.touch();
    Some(entry)
}

fn delete(inner: &Inner, headers: &HeaderMap, principal: &Principal) -> Response {
    let Some(sid) = session_header(headers) else {
        return refuse(
            StatusCode::BAD_REQUEST,
            None,
            ErrorCode::InvalidRequest,
            "Bad Request: DELETE needs the Mcp-Session-Id of the session to end",
        );
    };
    if lookup(inner, sid, principal).is_none() {
        return not_found(None);
    }
    let removed = inner
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(sid);
    if let Some(entry) = removed {
        entry.end();
    }
    StatusCode::NO_CONTENT.into_response()
}

async fn open_session(inner: &Arc<Inner>, grant: Grant, id: Value, params: JsonObject) -> Response {
    let Some(rpc_id) = RequestId::from_value(&id) else {
        return refuse(
            StatusCode::BAD_REQUEST,
            None,
            ErrorCode::InvalidRequest,
            "Invalid Request: bad id",
        );
    };
    // `initialize` sends nothing to the client; its channel is never read.
    let (tx, _rx) = mpsc::channel::<Bytes>(1);
    let limits = SessionLimits {
        request_timeout: Some(inner.config.request_timeout),
        input_timeout: inner.config.input_timeout,
    };
    let session = LegacySession::with_limits(
        Arc::clone(&inner.service),
        grant.clone(),
        tx.clone(),
        limits,
    );
    let reply = session
        .handle_request_via(&rpc_id, "initialize", params, CancellationToken::new(), &tx)
        .await;
    let ok = serde_json::from_slice::<Value>(&reply).is_ok_and(|v| v.get("result").is_some());
    if !ok {
        return gates::json(StatusCode::OK, reply);
    }
    let sid = match mint_session_id() {
        Ok(sid) => sid,
        Err(e) => {
            tracing::error!(target: LOG_TARGET, error = %e, "no randomness for a session id");
            return refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                Some(&id),
                ErrorCode::InternalError,
                "Internal error: could not mint a session id",
            );
        }
    };
    let Ok(header) = HeaderValue::from_str(&sid) else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let entry = Arc::new(Entry {
        session,
        last_used: Mutex::new(Instant::now()),
        busy: AtomicUsize::new(0),
        in_flight: Arc::default(),
    });
    {
        let mut sessions = inner
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let caps = Caps {
            idle_ttl: inner.config.idle_ttl,
            per_principal: inner.config.max_sessions_per_principal,
            total: inner.config.max_sessions,
        };
        if !make_room(&mut sessions, &grant.principal, caps) {
            let mut response = refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(&id),
                ErrorCode::InternalError,
                "Too many open 2025-11-25 sessions; retry later, or DELETE sessions you no longer use",
            );
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("30"));
            return response;
        }
        sessions.insert(sid, entry);
    }
    tracing::info!(target: LOG_TARGET, principal = %LogSafe(&grant.principal), "2025-11-25 session opened");
    let mut response = gates::json(StatusCode::OK, reply);
    response.headers_mut().insert(MCP_SESSION_ID, header);
    response
}

/// Whether a serialized JSON-RPC response is an error (for the request log only).
fn reply_is_error(reply: &[u8]) -> bool {
    /// Only the top-level `error` member matters; everything else is skipped unallocated.
    #[derive(serde::Deserialize)]
    struct Probe {
        error: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Probe>(reply).is_ok_and(|p| p.error.is_some())
}

async fn request(
    inner: &Arc<Inner>,
    entry: Arc<Entry>,
    headers: &HeaderMap,
    grant: Grant,
    id: Value,
    method: String,
    params: JsonObject,
) -> Response {
    let Some(rpc_id) = RequestId::from_value(&id) else {
        return refuse(
            StatusCode::BAD_REQUEST,
            None,
            ErrorCode::InvalidRequest,
            "Invalid Request: bad id",
        );
    };
    let Some(ticket) = entry.in_flight.begin(&id) else {
        return gates::json(StatusCode::BAD_REQUEST, duplicate_id_body(&id));
    };
    let cancel = ticket.token().clone();
    entry.busy.fetch_add(1, Ordering::SeqCst);
    let busy = Busy {
        entry: Arc::clone(&entry),
        ticket: Some(ticket),
    };
    let (tx, mut rx) = mpsc::channel::<Bytes>(inner.config.stream_buffer.max(1));
    let session = Arc::clone(&entry.session);
    // A `tools/call` may be refused under a rate limit before anything runs (429).
    let admission = inner.service.admission_wait(&method, &params);
    let started = Instant::now();
    let run = {
        let cancel = cancel.clone();
        let id = id.clone();
        async move {
            let _busy = busy;
            // The session bounds each round of server work and each wait for the client
            // (`request_timeout`, `input_timeout`); rounds are capped, so this ends.
            let handled = tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                r = session.handle_request_granted(&grant, &rpc_id, &method, params, cancel.clone(), &tx) => Some(r),
            };
            let outcome = match &handled {
                Some(reply) if reply_is_error(reply) => "error",
                Some(_) => "ok",
                None => "cancelled",
            };
            // The request's INFO record is its span (the core's for a forwarded request, the
            // adapter's own for what it answers itself), so this summary is DEBUG: one INFO
            // record per request, as on the modern transport. Never params, answers or the
            // session id.
            tracing::debug!(
                target: LOG_TARGET,
                request_id = %LogSafe(&id),
                method = %LogSafe(&method),
                principal = %LogSafe(session.principal()),
                outcome,
                latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
                "legacy mcp request"
            );
            // `None`: cancelled by the client; 2025-11-25 sends no response.
            handled.map(|reply| (reply, tx))
        }
    };
    if !gates::accepts(headers).sse {
        // JSON only: nothing can be sent to the client before the response, so input rounds fail.
        drop(rx);
        return match run.await {
            Some((reply, _)) => match rate_limited(&reply) {
                Some(refusal) => refusal.response(reply),
                None => gates::json(StatusCode::OK, reply),
            },
            None => StatusCode::ACCEPTED.into_response(),
        };
    }
    tokio::spawn(async move {
        if let Some((reply, tx)) = run.await {
            let _ = tx.send(reply).await;
        }
    });
    // Dropping the stream (response finished, or client gone) cancels the request.
    let guard = cancel.drop_guard();
    // The status is sent before the stream: wait as long as a rate-limit refusal can take,
    // so a refused call is a 429, not a stream. A call let through sends something first (a
    // notification, a question, its reply) or passes the wait; either way the stream goes on
    // from there, nothing lost.
    let mut first = None;
    if let Some(wait) = admission
        && let Ok(Some(message)) = tokio::time::timeout(wait + ADMISSION_SLACK, rx.recv()).await
    {
        if let Some(refusal) = rate_limited(&message) {
            return refusal.response(message);
        }
        first = Some(message);
    }
    let keep_alive = inner.config.keep_alive;
    let stream = futures::stream::unfold(
        (rx, guard, first),
        move |(mut rx, guard, first)| async move {
            if let Some(message) = first {
                let event = gates::sse_event(&message);
                return Some((Ok::<_, std::convert::Infallible>(event), (rx, guard, None)));
            }
            let event = match keep_alive {
                Some(every) => match tokio::time::timeout(every, rx.recv()).await {
                    Ok(message) => gates::sse_event(&message?),
                    Err(_) => Bytes::from_static(b": keep-alive\n\n"),
                },
                None => gates::sse_event(&rx.recv().await?),
            };
            Some((Ok::<_, std::convert::Infallible>(event), (rx, guard, None)))
        },
    );
    (
        StatusCode::OK,
        [
            (CONTENT_TYPE, HeaderValue::from_static("text/event-stream")),
            (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                HeaderName::from_static("x-accel-buffering"),
                HeaderValue::from_static("no"),
            ),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

/// Added to a service's [`McpService::admission_wait`] for the hops between the core's
/// verdict and this adapter (the session, the channel).
const ADMISSION_SLACK: Duration = Duration::from_millis(250);

/// A forwarded request's reply that is a `-32023` RateLimited error: what its 429 needs.
struct RateLimited {
    retry_after: Option<u32>,
    limit: Option<u32>,
}

impl RateLimited {
    /// The 429 carrying `reply` (the JSON-RPC error), with `Retry-After` and
    /// `RateLimit-Limit` as the error's data says.
    fn response(self, reply: Bytes) -> Response {
        tracing::info!(target: LOG_TARGET, status = 429, reason = "rate limited", "legacy request refused");
        let mut response = gates::json(StatusCode::TOO_MANY_REQUESTS, reply);
        gates::rate_limit_headers(response.headers_mut(), self.retry_after, self.limit);
        response
    }
}

/// Whether a serialized JSON-RPC message is a `-32023` error response, and its wait and
/// limit (`error.data.retryAfter`, `error.data.limit`).
fn rate_limited(reply: &[u8]) -> Option<RateLimited> {
    #[derive(serde::Deserialize)]
    struct Probe {
        error: Option<ProbeError>,
    }
    #[derive(serde::Deserialize)]
    struct ProbeError {
        code: i64,
        data: Option<ProbeData>,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct ProbeData {
        retry_after: Option<u64>,
        limit: Option<u64>,
    }
    let error = serde_json::from_slice::<Probe>(reply).ok()?.error?;
    if error.code != ErrorCode::RateLimited.code() {
        return None;
    }
    let data = error.data;
    let clamp = |v: Option<u64>| v.map(|v| u32::try_from(v).unwrap_or(u32::MAX));
    Some(RateLimited {
        retry_after: clamp(data.as_ref().and_then(|d| d.retry_after)),
        limit: clamp(data.as_ref().and_then(|d| d.limit)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rate_limited_replies_are_recognised_at_the_top_level_only() {
        let refused = rate_limited(
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32023,"message":"m","data":{"retryAfterMs":7000,"retryAfter":7,"limit":3,"window":60}}}"#,
        )
        .unwrap();
        assert_eq!((refused.retry_after, refused.limit), (Some(7), Some(3)));
        assert!(
            rate_limited(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"m"}}"#)
                .is_none()
        );
        assert!(
            rate_limited(br#"{"jsonrpc":"2.0","id":1,"result":{"error":{"code":-32023}}}"#)
                .is_none()
        );
        assert!(
            rate_limited(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#)
                .is_none()
        );
        assert!(rate_limited(b"garbage").is_none());
    }
    use serde_json::json;

    #[test]
    fn reply_error_probe_looks_at_the_top_level_only() {
        assert!(reply_is_error(
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}"#
        ));
        assert!(!reply_is_error(
            br#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"error":{"a":1}}}}"#
        ));
        assert!(!reply_is_error(b"garbage"));
    }

    proptest! {
        #[test]
        fn classify_and_detection_never_panic(raw in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = is_legacy_initialize(&raw);
            if let Ok(value) = serde_json::from_slice::<Value>(&raw) {
                let _ = classify(value);
            }
        }

        #[test]
        fn classify_sorts_json_rpc_objects(
            id in prop_oneof![any::<i64>().prop_map(Value::from), "[a-z0-9]{1,8}".prop_map(Value::from)],
            method in "[a-z/]{1,12}",
        ) {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": method});
            let is_request = matches!(classify(request), Ok(Kind::Request { .. }));
            prop_assert!(is_request);
            let note = json!({"jsonrpc": "2.0", "method": method});
            let is_note = matches!(classify(note), Ok(Kind::Notification { .. }));
            prop_assert!(is_note);
            let response = json!({"jsonrpc": "2.0", "id": id, "result": {}});
            prop_assert!(matches!(classify(response), Ok(Kind::Response(_))));
            let batch = json!([{"jsonrpc": "2.0", "id": id, "method": method}]);
            prop_assert!(classify(batch).is_err());
        }
    }
}
