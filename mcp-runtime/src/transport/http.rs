//! The Streamable HTTP transport (2026-07-28 shape): one endpoint, POST only, no sessions.
//! What a request goes through and what it gets back is documented on [`HttpServer`].

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use bytes::Bytes;
use futures::future::BoxFuture;
use http::header::ALLOW;
use http::{HeaderValue, Method, StatusCode};
use mcp_types::ErrorCode;
use tokio::net::TcpListener;

use super::allowlist::OriginAllowlist;
use super::auth::Authenticator;
pub use super::edge::{BodyError, read_body, serve_router};
use super::edge::{Endpoint, Routes, serve_routes};
use super::gates::{self, Refusal, json};
use super::headers;
pub use super::http_config::HttpConfig;
use super::response::{LOG_TARGET, RequestLog, Responder, handle_request, micros};
use crate::log_safe::LogSafe;
use crate::service::envelope::{self, Kind};
use crate::service::{
    CancellationToken, Grant, McpService, Message, NotificationSink, Reply, ReplyKind, RequestScope,
};

/// Why an [`HttpServer`] cannot be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// [`HttpConfig::path`] cannot be routed.
    #[error(
        "invalid MCP endpoint path `{0}`: it must start with `/` and contain no `{{`, `}}` or `*`"
    )]
    InvalidPath(String),
    /// The service cannot authorize the grants the authenticator produces
    /// ([`McpService::check_grants`]), e.g. OAuth on a server built without
    /// `scoped_authorization()`.
    #[error("cannot serve these credentials: {0}")]
    Grants(String),
}

/// A Streamable HTTP server for one [`McpService`]: the 2026-07-28 shape, one endpoint, POST
/// only, no sessions.
///
/// # Requests and answers
///
/// Each POST carries exactly one JSON-RPC request or notification and is checked in this order,
/// the first failure deciding the answer:
///
/// | Step | Failure | Status | Body |
/// |---|---|---|---|
/// | `Origin` present and not allowed ([`OriginAllowlist`]) | DNS-rebinding defence | 403 | JSON-RPC error `-32600`, no id |
/// | verb is not POST | legacy GET stream / DELETE session | 405, `Allow: POST` | empty |
/// | [`Authenticator`] | missing or unknown credentials | 401, `WWW-Authenticate: Bearer realm="mcp"[, error="invalid_token"]` | empty |
/// | [`Authenticator`] | ambiguous credentials (two `Authorization` headers) | 400 | `-32600`, no id |
/// | body size ([`HttpConfig::max_body_bytes`]) | too large | 413 | `-32600`, no id |
/// | body arrival ([`HttpConfig::body_timeout`]) | not received in time | 408 | `-32600`, no id |
/// | body budget ([`HttpConfig::max_buffered_body_bytes`]) | too many bodies in flight | 503, `Retry-After: 1` | `-32600`, no id |
/// | JSON parse | not JSON / not UTF-8 | 400 | `-32700`, no id |
/// | JSON-RPC shape | batch, response, `id: null`, no `method` | 400 | `-32600` (id echoed if usable) |
/// | headers vs body (§13.2) | missing/malformed/different `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*` | 400 | `-32020` (id echoed) |
/// | `Accept` | lists neither JSON nor SSE | 406 | `-32600` (id echoed) |
/// | the service | see [`ReplyKind::http_status`] | 200 / 400 / 403 / 404 / 429 (`-32023` rate limited: `Retry-After`, `RateLimit-Limit`) | the service's response |
///
/// Before any of this, the connection edge ([`serve_router`]) refuses a `Host` that is not
/// allowed (421) and two `Authorization` headers (400), and bounds header, idle and body waits,
/// connections and buffered bytes (see [`serve_router`]).
///
/// Responses:
/// - An accepted notification gets `202 Accepted` with an empty body. Notifications' headers are
///   checked leniently: none is required, but one present must not contradict the body.
/// - A request whose handler finishes without emitting notifications gets one
///   `application/json` response. As soon as the handler emits a notification (progress, log),
///   the response switches to `text/event-stream` (`X-Accel-Buffering: no`): the notifications,
///   then the final response as the last event, then the stream closes. A stream quiet for
///   [`HttpConfig::sse_keep_alive`] (a long `subscriptions/listen`) gets a `: keep-alive`
///   comment between events, so proxies that cut idle streams leave it open.
/// - `Accept` missing: treated as accepting both (lenient toward minimal clients). `Accept` with
///   JSON only: notifications are dropped and the response is plain JSON. SSE only: always SSE.
/// - Request timeout ([`HttpConfig::request_timeout`]): the handler is dropped and the client gets
///   a `-32603` "request timed out" error with the request's id (200 JSON, or the final SSE event),
///   so it can tell the failure apart from a proxy's 504. `subscriptions/listen` is exempt: it is
///   bounded by [`HttpConfig::listen_timeout`] instead (and normally ended earlier by the server,
///   at its maximum listen duration, with a complete result).
/// - Client disconnect drops the handler future and cancels the request's token; nothing more is
///   sent for it.
/// - `Mcp-Session-Id` and `Last-Event-ID` are ignored; no session id is ever minted.
///
/// `GET /healthz` and `GET /readyz` are answered beside the endpoint, without authentication
/// ([`HEALTHZ_PATH`](super::HEALTHZ_PATH), [`READYZ_PATH`](super::READYZ_PATH)).
///
/// Every request is logged once through `tracing`, at INFO: a request the service answers by
/// its request span's closing event (target [`REQUEST_TARGET`](crate::observe::REQUEST_TARGET),
/// see [`observe`](crate::observe)), which the transport opens and closes so that it also
/// carries the HTTP status; a request refused before the service, and a notification, by one
/// event of target `mcp_runtime::transport::http`. Each names its JSON-RPC id, method,
/// principal, status, outcome and latency as far as they are known. Headers, tokens and params
/// (which may hold `requestState`) are never logged.
pub struct HttpServer {
    service: Arc<dyn McpService>,
    pub(super) auth: Arc<dyn Authenticator>,
    config: HttpConfig,
    /// Routes served beside the MCP endpoint (e.g. OAuth protected-resource metadata).
    pub(super) routes: Option<Router>,
    /// The application's readiness checks (`/readyz`).
    checks: Vec<super::health::AppCheck>,
}

impl HttpServer {
    /// A server with the default [`HttpConfig`]. There is no default authenticator: pass
    /// [`BearerTokens`](super::auth::BearerTokens) or, for local development,
    /// [`AllowAnonymous`](super::auth::AllowAnonymous).
    pub fn new(service: Arc<dyn McpService>, auth: Arc<dyn Authenticator>) -> Self {
        Self {
            service,
            auth,
            config: HttpConfig::default(),
            routes: None,
            checks: Vec::new(),
        }
    }

    /// Adds a readiness check [`READYZ_PATH`](super::READYZ_PATH) runs besides the service's
    /// own: e.g. that the application's database answers. `check` returns why it is not
    /// ready; it is given [`READINESS_TIMEOUT`](super::READINESS_TIMEOUT).
    #[must_use]
    pub fn with_readiness_check<F>(mut self, name: impl Into<String>, check: F) -> Self
    where
        F: Fn() -> futures::future::BoxFuture<'static, Result<(), String>> + Send + Sync + 'static,
    {
        self.checks.push((name.into(), Arc::new(check)));
        self
    }

    /// Replaces the configuration.
    #[must_use]
    pub fn with_config(mut self, config: HttpConfig) -> Self {
        self.config = config;
        self
    }

    /// The configuration in use.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// The axum router serving the MCP endpoint, for embedding in a larger application.
    ///
    /// Serve the result with [`serve_router`]: the `Host` check, the header, idle and body
    /// deadlines, the connection cap and the body budget live there, not in the router.
    ///
    /// [`bind`](Self::bind) serves the same routes, but calls the MCP endpoint directly
    /// rather than through the router (no path matching or axum layers on the hot path);
    /// the answers are the same either way.
    ///
    /// # Errors
    /// [`SetupError`] when [`HttpConfig::path`] cannot be routed, or the service cannot
    /// authorize the credentials the authenticator accepts.
    pub fn router(&self) -> Result<Router, SetupError> {
        Ok(self.routes()?.1)
    }

    /// The MCP endpoint's handler and the whole router (the endpoint included).
    fn routes(&self) -> Result<(Arc<Shared>, Router), SetupError> {
        let path = &self.config.path;
        if !super::http_config::routable_path(path) {
            return Err(SetupError::InvalidPath(path.clone()));
        }
        self.service
            .check_grants(self.auth.scheme())
            .map_err(SetupError::Grants)?;
        let shared = Arc::new(Shared {
            responder: Responder {
                service: Arc::clone(&self.service),
                auth: Arc::clone(&self.auth),
                request_timeout: self.config.request_timeout,
                listen_timeout: self.config.listen_timeout,
                keep_alive: self.config.sse_keep_alive,
                notification_buffer: self.config.notification_buffer.max(1),
            },
            auth: Arc::clone(&self.auth),
            max_body_bytes: self.config.max_body_bytes,
            body_timeout: self.config.body_timeout,
            origins: self.config.allowed_origins.clone(),
        });
        let router = Router::new()
            .route(path, any(handle_mcp))
            .with_state(Arc::clone(&shared))
            .merge(super::health::router(
                Arc::clone(&self.service),
                self.checks.clone().into(),
            ));
        let router = match &self.routes {
            Some(routes) => router.merge(routes.clone()),
            None => router,
        };
        Ok((shared, router))
    }

    /// Binds [`HttpConfig::bind`], listening with [`HttpConfig::listen_backlog`] (see
    /// [`listen`](super::listen)).
    ///
    /// # Errors
    /// The bind error, or `InvalidInput` for a [`SetupError`] or invalid limits.
    pub async fn bind(self) -> io::Result<BoundHttpServer> {
        let (endpoint, router) = self
            .routes()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        self.config
            .check_limits()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let listener = super::listen(&self.config).await?;
        // The MCP endpoint is called directly; the router answers every other path.
        let routes = Routes::direct(&self.config.path, endpoint, router);
        Ok(BoundHttpServer {
            listener,
            routes,
            config: self.config,
            service: self.service,
        })
    }
}

/// A server bound to its address, ready to serve.
pub struct BoundHttpServer {
    listener: TcpListener,
    routes: Routes,
    config: HttpConfig,
    service: Arc<dyn McpService>,
}

impl BoundHttpServer {
    /// The address actually bound (useful with port 0).
    ///
    /// # Errors
    /// The socket's error.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until SIGTERM or Ctrl-C, then stops accepting and lets in-flight requests finish.
    ///
    /// # Errors
    /// An I/O error from the listener.
    pub async fn serve(self) -> io::Result<()> {
        self.serve_with_shutdown(shutdown_signal()).await
    }

    /// Serves until `shutdown` completes, then stops accepting and lets in-flight requests
    /// finish (each is bounded by the request timeout). Connections get the limits of the
    /// [`HttpConfig`] (see [`serve_router`]).
    ///
    /// # Errors
    /// An I/O error from the listener.
    pub async fn serve_with_shutdown(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        let service = self.service;
        let shutdown = async move {
            shutdown.await;
            // Open listen streams end with their result instead of being cut at the drain.
            service.shutting_down();
        };
        serve_routes(self.listener, self.routes, &self.config, shutdown).await
    }
}

/// Completes on Ctrl-C, or on SIGTERM on Unix.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            // No Ctrl-C handler available: rely on SIGTERM only.
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut sig) => {
                sig.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!(target: LOG_TARGET, "shutdown signal received; draining in-flight requests");
}

struct Shared {
    responder: Responder,
    auth: Arc<dyn Authenticator>,
    max_body_bytes: usize,
    body_timeout: Duration,
    origins: OriginAllowlist,
}

/// Logs and builds a rejection that happened before the service ran.
fn reject(status: StatusCode, body: Option<Bytes>, started: Instant, reason: &str) -> Response {
    log_rejection(status, started, reason);
    match body {
        Some(body) => json(status, body),
        None => status.into_response(),
    }
}

/// Logs a gate's refusal and turns it into the response.
fn refused(refusal: Refusal, started: Instant) -> Response {
    log_rejection(refusal.status, started, refusal.reason);
    refusal.into_response()
}

fn log_rejection(status: StatusCode, started: Instant, reason: &str) {
    tracing::info!(
        target: LOG_TARGET,
        status = status.as_u16(),
        outcome = "rejected",
        reason,
        latency_us = micros(started),
        "mcp request"
    );
}

impl Endpoint for Shared {
    fn serve(self: Arc<Self>, request: Request) -> BoxFuture<'static, Response> {
        let (parts, body) = request.into_parts();
        Box::pin(serve_mcp(self, parts, body))
    }
}

/// The MCP endpoint as an axum handler (the router path).
fn handle_mcp(
    State(shared): State<Arc<Shared>>,
    request: Request,
) -> impl Future<Output = Response> {
    let (parts, body) = request.into_parts();
    serve_mcp(shared, parts, body)
}

// This future is boxed and moved on every request, and glibc serves blocks under 1 KiB from
// its per-thread cache: so it takes the request in parts (not the whole `Request` beside
// them), its arguments are the async block's own (an `async fn` keeps a second copy), and the
// parsed message is gone before the long wait (`answer`).
#[allow(clippy::manual_async_fn)] // an `async fn` is what doubles the arguments
fn serve_mcp(
    shared: Arc<Shared>,
    parts: http::request::Parts,
    body: Body,
) -> impl Future<Output = Response> + Send {
    async move {
        // Tokio's clock (the same as `Instant::now()` unless a test paused time), so that the
        // request's timers below count from this one reading.
        let start = tokio::time::Instant::now();
        let started = start.into_std();

        // 1. Origin (DNS-rebinding defence), before anything else.
        if let Err(refusal) = gates::check_origin(&shared.origins, &parts.headers) {
            return refused(refusal, started);
        }

        // 2. Verb: only POST exists in this revision (no GET stream, no DELETE session).
        if parts.method != Method::POST {
            let mut response = reject(StatusCode::METHOD_NOT_ALLOWED, None, started, "verb");
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("POST"));
            return response;
        }

        // 3. Authentication, before the body is read.
        let grant = match gates::authenticate(shared.auth.as_ref(), &parts.headers).await {
            Ok(grant) => grant,
            Err(refusal) => return refused(refusal, started),
        };
        let principal = grant.principal.clone();

        // 4. The body: bounded in size, due within the body deadline (and the request's), and,
        // under `serve_router`, charged to the server-wide budget. One timer covers the whole
        // request; it is only registered with the runtime if something actually has to wait on it.
        // Both deadlines count from `start`: no further clock reads.
        let deadline = tokio::time::sleep_until(start + shared.responder.request_timeout);
        tokio::pin!(deadline);
        let body_timeout = shared.body_timeout.min(shared.responder.request_timeout);
        let raw = match gates::body_until(
            body,
            &parts.headers,
            shared.max_body_bytes,
            start + body_timeout,
            body_timeout,
        )
        .await
        {
            Ok(raw) => raw,
            Err(refusal) => return refused(refusal, started),
        };

        // Steps 5 to 7 in a block, so that the message's slot ends before the wait.
        let answer = {
            // 5. Parse once; the parsed value travels on to the service.
            let message = match Message::parse(raw) {
                Ok(message) => message,
                Err(_) => {
                    let body = envelope::error_body(
                        None,
                        ErrorCode::ParseError,
                        "Parse error: invalid JSON",
                    );
                    return reject(StatusCode::BAD_REQUEST, Some(body), started, "parse");
                }
            };

            // 6. Shape, then headers against the body.
            let (id, method) = match message.kind() {
                Kind::Invalid { id, reason } => {
                    let body = envelope::invalid_request_body(id, &reason);
                    return reject(
                        StatusCode::BAD_REQUEST,
                        Some(body),
                        started,
                        "invalid request",
                    );
                }
                Kind::Notification { method } => {
                    if let Err(err) =
                        headers::check_notification(&parts.headers, message.value(), method)
                    {
                        let body =
                            envelope::error_body(None, ErrorCode::HeaderMismatch, &err.to_string());
                        return reject(StatusCode::BAD_REQUEST, Some(body), started, "headers");
                    }
                    let method = method.to_owned();
                    return notification(&shared, message, grant, method, started).await;
                }
                Kind::Request { id, method } => {
                    let body = headers::BodyFacts::of_message(&message, method);
                    if let Err(err) = headers::check_request(&parts.headers, body, method) {
                        let body = envelope::error_body(
                            Some(id),
                            ErrorCode::HeaderMismatch,
                            &err.to_string(),
                        );
                        return reject(StatusCode::BAD_REQUEST, Some(body), started, "headers");
                    }
                    (id.clone(), method.to_owned())
                }
            };

            let accept = gates::accepts(&parts.headers);
            if !accept.json && !accept.sse {
                let body = envelope::error_body(
                    Some(&id),
                    ErrorCode::InvalidRequest,
                    "Not Acceptable: Accept must list application/json and text/event-stream",
                );
                return reject(StatusCode::NOT_ACCEPTABLE, Some(body), started, "accept");
            }

            // 7. The service.
            // The core holds a call's Mcp-Param-* headers to the tool's x-mcp-header rules.
            let mirrors = (method == mcp_types::METHOD_TOOLS_CALL)
                .then(|| headers::param_mirrors(&parts.headers));
            let log = RequestLog::open(id, method, principal, started);
            #[cfg(feature = "otel")]
            let grant = if crate::observe::otel::active() {
                (
                    grant,
                    headers::trace_context(&parts.headers),
                    headers::baggage(&parts.headers),
                )
            } else {
                (grant, None, None)
            };
            handle_request(
                &shared.responder,
                message,
                grant,
                mirrors,
                log,
                accept,
                deadline.as_mut(),
            )
        };
        answer.await
    }
}

async fn notification(
    shared: &Shared,
    message: Message,
    grant: Grant,
    method: String,
    started: Instant,
) -> Response {
    let principal = grant.principal.clone();
    let ctx = RequestScope::new(grant, NotificationSink::discard(), CancellationToken::new());
    let reply = shared.responder.service.handle(message, ctx).await;
    let (response, status, outcome) = match reply {
        None
        | Some(Reply {
            kind: ReplyKind::Result,
            ..
        }) => (
            StatusCode::ACCEPTED.into_response(),
            StatusCode::ACCEPTED,
            "accepted",
        ),
        Some(reply) => {
            // A rejected notification needs an error status; 200 would read as accepted.
            let status = match reply.http_status() {
                s if s.is_client_error() || s.is_server_error() => s,
                _ => StatusCode::BAD_REQUEST,
            };
            (json(status, reply.body), status, "rejected")
        }
    };
    tracing::info!(
        target: LOG_TARGET,
        method = %LogSafe(&method),
        principal = %LogSafe(&principal),
        status = status.as_u16(),
        outcome,
        latency_us = micros(started),
        "mcp notification"
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Principal;
    use crate::server::Server;
    use crate::transport::auth::AllowAnonymous;

    /// The endpoint's future is boxed and moved once per request: it must stay under the
    /// 1 KiB that glibc serves from its per-thread cache. It is 904 bytes (debug and release
    /// alike); it was 1,888 while it held the whole request and a second copy of its parts.
    #[test]
    fn the_endpoint_future_stays_small() {
        let server = Server::builder(mcp_types::Implementation::new("size", "1"))
            .build()
            .expect("server");
        let shared = Arc::new(Shared {
            responder: Responder {
                service: Arc::new(server),
                auth: Arc::new(AllowAnonymous(Principal::new("p"))),
                request_timeout: Duration::from_secs(1),
                listen_timeout: Duration::from_secs(1),
                keep_alive: Duration::from_secs(1),
                notification_buffer: 1,
            },
            auth: Arc::new(AllowAnonymous(Principal::new("p"))),
            max_body_bytes: 1024,
            body_timeout: Duration::from_secs(1),
            origins: OriginAllowlist::any(),
        });
        let (parts, body) = Request::new(Body::empty()).into_parts();
        let future = serve_mcp(shared, parts, body);
        let size = std::mem::size_of_val(&future);
        assert!(size <= 1000, "the endpoint's future is {size} bytes");
    }
}
