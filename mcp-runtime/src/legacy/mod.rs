//! An isolated adapter that speaks MCP **2025-11-25** to a pinned older peer, on top of the
//! unchanged 2026-07-28 core.
//!
//! Compiled with the cargo feature `legacy-2025-11-25` (on by default). Nothing outside this
//! module knows the older revision exists: tools still return input-required, and the
//! adapter turns each round into live server-to-client requests.
//!
//! # What it speaks
//!
//! - `initialize`: the client's `protocolVersion` is answered with [`LEGACY_PROTOCOL_VERSION`]
//!   (the only older revision supported; a client asking for another one gets ours and may
//!   disconnect, as the 2025-11-25 negotiation rules say). Capabilities and `instructions`
//!   come from the core's own `server/discover`, `serverInfo` from the server's
//!   `Implementation`. The client's capabilities are remembered for the session and attached
//!   to every request the adapter forwards.
//! - `notifications/initialized`, `ping`, `notifications/cancelled` (drops the request).
//! - `resources/subscribe` / `resources/unsubscribe` are acknowledged (`{}`, once `uri` is a
//!   non-empty string) but keep nothing: the modern core has no per-resource subscriptions and
//!   there is no standalone stream to carry `notifications/resources/updated`, so no update is
//!   ever sent and `resources.subscribe` is not advertised. Clients re-read to refresh.
//! - Every other request (`tools/list`, `tools/call`, ...) is forwarded to the modern dispatch
//!   with a synthesised `_meta` (protocol version, the session's client capabilities, and the
//!   client's `progressToken`). When the result is `input_required`, each input request is
//!   sent to the client as a JSON-RPC request (`elicitation/create`, `roots/list`,
//!   `sampling/createMessage`) correlated by a server-chosen id; the answers are collected
//!   into `inputResponses` and the call is re-dispatched with the echoed `requestState`,
//!   looping for multi-round flows (bounded by [`MAX_ADAPTER_ROUNDS`]). Modern-only result
//!   members (`resultType`, `ttlMs`, `cacheScope`) are removed from what the client sees.
//! - URL-mode elicitations get the `elicitationId` 2025-11-25 requires (random, per request).
//! - Each live request waits at most [`session::SessionLimits::input_timeout`] for the
//!   client's answer (default [`session::DEFAULT_INPUT_TIMEOUT`], 5 minutes). Then the adapter
//!   sends `notifications/cancelled` for it (`requestId`, `reason`), answers the call with a
//!   timeout (a `tools/call` gets an `isError` result saying the user did not answer in
//!   time; other methods JSON-RPC error [`session::INPUT_TIMEOUT_CODE`]), and a late answer is
//!   discarded (over HTTP: 409 with an error saying so). The tool never sees an answer, so
//!   nothing it would do with one happens.
//! - `notifications/roots/list_changed` is accepted and ignored: the adapter never caches
//!   roots, it asks `roots/list` each time a tool needs them.
//!
//! # Layering
//!
//! The adapter reaches the core only through the service seam,
//! [`McpService`](crate::service::McpService) (as the modern transports do): it forwards
//! each request as a [`Message`](crate::service::Message) to
//! [`McpService::handle`](crate::service::McpService::handle) under the request's
//! [`Grant`](crate::service::Grant), so the core authorizes it as it does a modern request
//! (over HTTP the adapter asks [`McpService::authorize`](crate::service::McpService::authorize)
//! first, to answer a refusal with 403 before its session is touched). It serves a
//! [`Server`](crate::server::Server) or any wrapper around one. A forwarded message therefore passes
//! the core's own size and depth limits and scope checks, like a modern one.
//!
//! # Security
//!
//! The adapter adds no authority. A legacy root list is delivered to the tool exactly like a
//! modern `roots/list` answer and never authorizes anything: the server's own [`crate::scope`]
//! policy still decides. The principal is the transport's (never `clientInfo`), the signed
//! `requestState` and one-time claims work exactly as on the modern path, and the adapter never
//! logs params or answers.
//!
//! # Eras per transport
//!
//! - stdio, per process ([`stdio::serve_auto`]): a first message `initialize` selects this
//!   adapter; anything else (e.g. `server/discover`, or a request with modern `_meta`) runs
//!   the modern transport for the whole process.
//! - Streamable HTTP, per request ([`http::LegacyHttp`], an axum middleware wrapped around the
//!   unchanged modern router): a 2025-era `MCP-Protocol-Version`, an `Mcp-Session-Id`, or a
//!   header-less `initialize` body selects the adapter; modern requests stay sessionless and
//!   untouched. `initialize` mints an `Mcp-Session-Id` bound to the authenticated principal;
//!   each request's server-to-client requests and notifications travel on that POST's SSE
//!   response, the client POSTs its answers back (202), `DELETE` ends the session, idle
//!   sessions expire (bounded count + TTL). See [`http`] for the full routing and status table.
//!
//! # Not supported over HTTP (2025-11-25)
//!
//! - The standalone `GET` SSE stream (405, which 2025-11-25 allows): nothing is ever sent
//!   outside a request's own stream.
//! - Resumability (`Last-Event-ID`, event ids): a dropped stream cancels its request; the
//!   client retries the call.
//! - Sessions live in one process's memory: several processes behind a load balancer need
//!   session affinity for 2025-11-25 clients (modern clients need none).

#[cfg(feature = "http")]
mod era;
#[cfg(feature = "http")]
pub mod http;
pub mod session;
#[cfg(feature = "http")]
mod session_table;
pub mod stdio;

/// The older protocol revision this adapter speaks.
pub const LEGACY_PROTOCOL_VERSION: &str = "2025-11-25";

/// Most input rounds the adapter drives for one request before giving up with `-32603`
/// (the core bounds rounds too; this guards against a client that keeps answering badly).
pub const MAX_ADAPTER_ROUNDS: usize = 64;
