//! Transports: how MCP messages reach the server core and how its answers get back.
//!
//! - [`service`]: the seam every transport drives, [`McpService`], and what flows through it
//!   ([`Message`], [`RequestContext`], [`Reply`]).
//! - [`stdio`]: newline-delimited JSON-RPC over stdin/stdout (or any byte stream).
//! - [`http`]: Streamable HTTP (2026-07-28 shape), POST-only and sessionless, with
//!   [`auth`]entication, `Origin` checks and header/body validation.

pub mod auth;
mod envelope;
#[cfg(feature = "http")]
mod headers;
#[cfg(feature = "http")]
pub mod http;
pub mod service;
pub mod stdio;
pub(crate) mod tools_call;

pub use auth::{AllowAnonymous, AuthFileError, AuthRejection, Authenticator, BearerTokens};
#[cfg(feature = "http")]
pub use headers::{OriginAllowlist, OriginPatternError};
#[cfg(feature = "http")]
pub use http::{BoundHttpServer, HttpConfig, HttpServer};
pub use service::{
    CancellationToken, LazyReceiver, McpService, Message, NotificationSink, ParamHeader, Reply,
    ReplyKind, RequestContext,
};
pub use stdio::StdioConfig;
