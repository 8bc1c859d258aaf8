//! Transports: how MCP messages reach the server core and how its answers get back.
//!
//! - [`service`]: the seam every transport drives, [`McpService`], and what flows through it
//!   ([`Message`], [`RequestContext`], [`Reply`]).
//! - [`stdio`]: newline-delimited JSON-RPC over stdin/stdout (or any byte stream).
//! - [`http`]: Streamable HTTP (2026-07-28 shape), POST-only and sessionless, with
//!   [`auth`]entication, `Origin` checks and header/body validation.
//! - [`edge`]: the connection loop any axum router is served with ([`serve_router`]): header,
//!   idle and body deadlines, a connection cap, a buffered-body budget, `Host` checks.

pub mod auth;
pub mod edge;
mod envelope;
mod headers;
pub mod http;
pub mod service;
pub mod stdio;
pub(crate) mod tools_call;

pub use auth::{AllowAnonymous, AuthFileError, AuthRejection, Authenticator, BearerTokens};
pub use headers::{HostAllowlist, HostPatternError, OriginAllowlist, OriginPatternError};
pub use http::{BodyError, BoundHttpServer, HttpConfig, HttpServer, read_body, serve_router};
pub use service::{
    CancellationToken, LazyReceiver, McpService, Message, NotificationSink, ParamHeader, Reply,
    ReplyKind, RequestContext,
};
pub use stdio::StdioConfig;
