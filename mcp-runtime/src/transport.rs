//! Transports: how MCP messages reach the server core and how its answers get back.
//!
//! Every transport drives the seam in [`crate::service`]: it authenticates a message's sender
//! into a [`Grant`](crate::service::Grant) and hands both to an
//! [`McpService`](crate::service::McpService), which enforces every policy itself.
//!
//! - [`stdio`]: newline-delimited JSON-RPC over stdin/stdout (or any byte stream).
//! - Streamable HTTP (feature `http`, the items at this module's root): [`HttpServer`]
//!   (2026-07-28 shape, POST-only and sessionless) configured by [`HttpConfig`], with
//!   authentication ([`Authenticator`], [`BearerTokens`]), `Origin` checks and header/body
//!   validation; `/healthz` and `/readyz` beside the MCP endpoint ([`HEALTHZ_PATH`],
//!   [`READYZ_PATH`]); and the connection loop any axum router is served with
//!   ([`serve_router`]): header, idle and body deadlines, a connection cap, a buffered-body
//!   budget, `Host` checks.
//! - [`oauth`] (feature `oauth`): an OAuth 2.1 resource server for the HTTP edge (RFC 9728
//!   metadata, JWT access tokens checked against the issuer's keys, scopes).

#[cfg(feature = "http")]
mod allowlist;
pub(crate) mod auth;
#[cfg(feature = "http")]
mod body;
#[cfg(feature = "http")]
pub(crate) mod edge;
#[cfg(feature = "http")]
pub(crate) mod gates;
#[cfg(feature = "http")]
mod headers;
#[cfg(feature = "http")]
pub(crate) mod health;
#[cfg(feature = "http")]
pub(crate) mod http;
#[cfg(feature = "http")]
pub(crate) mod http_config;
#[cfg(feature = "http")]
mod listener;
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
    MIN_TOKEN_LEN, bearer, challenge,
};
#[cfg(feature = "http")]
pub use health::{HEALTHZ_PATH, READINESS_TIMEOUT, READYZ_PATH};
#[cfg(feature = "http")]
pub use http::{BodyError, read_body, serve_router};
#[cfg(feature = "http")]
pub use http::{BoundHttpServer, HttpConfig, HttpServer, SetupError, shutdown_signal};
#[cfg(feature = "http")]
pub use listener::listen;
