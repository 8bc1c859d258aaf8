//! Transports: how MCP messages reach the server core and how its answers get back.
//!
//! Every transport drives the seam in [`crate::service`]: it authenticates a message's sender
//! into a [`Grant`](crate::service::Grant) and hands both to an
//! [`McpService`](crate::service::McpService), which enforces every policy itself.
//!
//! - [`stdio`]: newline-delimited JSON-RPC over stdin/stdout (or any byte stream).
//! - [`http`]: Streamable HTTP (2026-07-28 shape), POST-only and sessionless, with
//!   [`auth`]entication, `Origin` checks and header/body validation.
//! - [`oauth`] (feature `oauth`): an OAuth 2.1 resource server for the HTTP edge (RFC 9728
//!   metadata, JWT access tokens checked against the issuer's keys, scopes).
//! - [`health`]: `/healthz` and `/readyz` beside the MCP endpoint.
//! - [`edge`]: the connection loop any axum router is served with ([`serve_router`]): header,
//!   idle and body deadlines, a connection cap, a buffered-body budget, `Host` checks.

#[cfg(feature = "http")]
mod allowlist;
pub mod auth;
#[cfg(feature = "http")]
mod body;
#[cfg(feature = "http")]
pub mod edge;
#[cfg(feature = "http")]
pub(crate) mod gates;
#[cfg(feature = "http")]
mod headers;
#[cfg(feature = "http")]
pub mod health;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "http")]
mod http_config;
#[cfg(all(feature = "http", feature = "metrics"))]
mod metrics;
#[cfg(feature = "oauth")]
pub mod oauth;
pub(crate) mod pipeline;
#[cfg(feature = "http")]
mod response;
pub mod stdio;

#[cfg(feature = "http")]
pub use allowlist::{HostAllowlist, HostPatternError, OriginAllowlist, OriginPatternError};
pub use auth::{
    AllowAnonymous, AuthFileError, AuthFuture, AuthRejection, Authenticator, BearerTokens,
};
#[cfg(feature = "http")]
pub use http::{BodyError, read_body, serve_router};
#[cfg(feature = "http")]
pub use http::{BoundHttpServer, HttpConfig, HttpServer};
pub use stdio::StdioConfig;
