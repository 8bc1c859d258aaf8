//! The seam between the transports and the server core: [`McpService`], and what flows
//! through it.
//!
//! This module sits below both the handler API and the transports: the transports
//! (`crate::transport`, the 2025-11-25 adapter, the typed client's in-process harness) and the
//! core depend on it, never on each other. A transport frames and authenticates one JSON-RPC
//! [`Message`], then hands it to the service with a [`RequestScope`] carrying the
//! [`Grant`] it authenticated (who sent it, which scopes its credentials hold, by which
//! scheme). The service enforces every policy itself (versions, capabilities, scopes) and
//! answers with at most one [`Reply`]; the notifications a request emits while it runs
//! (progress, log) go through its [`NotificationSink`] and end up on that request's own stream
//! (the SSE response on HTTP, stdout on stdio).

use std::sync::Arc;

use futures::future::BoxFuture;
pub use tokio_util::sync::CancellationToken;

pub(crate) mod envelope;
mod grant;
mod message;
mod notifications;
mod param_header;
mod reply;
mod scope;

pub use grant::{AuthScheme, Grant};
pub(crate) use message::Body;
pub use message::Message;
pub use notifications::{LazyReceiver, NotificationSink};
pub use param_header::{MirrorMismatch, ParamHeader, ParamMirrors};
#[cfg(feature = "http")]
pub(crate) use param_header::{clip as param_header_clip, decode_sentinel};
pub use reply::{Reply, ReplyKind};
pub use scope::RequestScope;

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

    /// Whether `grant` may make the request `method` with `params` (its `name` or `uri`
    /// target), by the service's own policy: `None` when it may, else the refusal
    /// ([`Reply::forbidden`]). [`McpService::handle`] enforces the same verdict itself on
    /// every request; a transport asks beforehand only to answer a refusal in its own shape
    /// before it commits to a response (the 2025-11-25 adapter's 403, before its session is
    /// touched). Default: every request is allowed.
    fn authorize(
        &self,
        _grant: &Grant,
        _id: &mcp_types::RequestId,
        _method: &str,
        _params: &mcp_types::JsonObject,
    ) -> Option<Reply> {
        None
    }

    /// Whether the service can authorize the grants a transport authenticates by `scheme`;
    /// asked once, when the transport is set up, so that a server that would refuse (or,
    /// worse, silently mis-handle) every request of a whole class of credentials does not
    /// start. `Err(what to do)` stops the transport with that message.
    ///
    /// [`Server`](crate::server::Server) refuses [`AuthScheme::OAuth`] unless it was built with
    /// [`ServerBuilder::scoped_authorization`](crate::server::ServerBuilder::scoped_authorization):
    /// OAuth grants carry scopes, and only then has every tool, prompt and resource been
    /// checked at build time to declare the scopes it needs. Default: every scheme is fine.
    ///
    /// # Errors
    /// Why grants of this scheme cannot be served, and how to fix it.
    fn check_grants(&self, _scheme: AuthScheme) -> Result<(), String> {
        Ok(())
    }

    /// Checks what the service needs to answer requests, for readiness probes (the HTTP
    /// transport's `/readyz`): each check's name and, when it failed, why. The transport
    /// bounds the wait. Default: nothing to check. [`Server`](crate::server::Server) checks its replay
    /// store ([`ReplayStore::ping`](crate::replay::ReplayStore::ping)) and its state keys, and
    /// its rate-limit store when it has rate limits.
    fn readiness(&self) -> BoxFuture<'_, Vec<ReadinessCheck>> {
        Box::pin(async { Vec::new() })
    }

    /// The transport stops taking requests (stdio input ended, HTTP shutdown began) and
    /// lets the in-flight ones finish: end long-lived streams (`subscriptions/listen`) with
    /// their final result now, rather than have them cut off at the grace limit. Default:
    /// nothing.
    fn shutting_down(&self) {}

    /// How long this service may take, at most, to refuse the request `method` with `params`
    /// under a rate limit before any handler runs ([`Reply::rate_limited`]), or `None` when it
    /// will not count this request. A transport that must choose its HTTP status before it
    /// starts a stream (the 2025-11-25 adapter's SSE responses) waits this long for such a
    /// refusal, so that it can answer 429 rather than a stream. Default: `None`.
    /// [`Server`](crate::server::Server) answers its rate-limit store's deadline for a `tools/call`
    /// without `requestState` of a tool that has a limit.
    fn admission_wait(
        &self,
        method: &str,
        params: &mcp_types::JsonObject,
    ) -> Option<std::time::Duration> {
        let _ = (method, params);
        None
    }
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
