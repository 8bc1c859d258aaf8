//! [`HttpConfig`]: the settings of the Streamable HTTP transport and of the connection edge
//! that serves it, kept apart from both so each can read them without importing the other.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use super::allowlist::{HostAllowlist, OriginAllowlist};
use crate::server::InvalidLimit;
use crate::server::limits::nonzero;

/// Tunables for the HTTP transport and its connection edge ([`serve_router`](super::serve_router)).
///
/// Start from [`HttpConfig::default`] and change what you need with the `with_*` setters;
/// each one checks its value as it is set, so a config that exists can be served. Setters of
/// values that cannot be zero (timeouts, caps, sizes) and of the path and public URL return a
/// `Result` whose [`InvalidLimit`] says what to write; the others cannot fail. Each setting is
/// read back with the getter of the same name.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use mcp_runtime::transport::HttpConfig;
///
/// let config = HttpConfig::default()
///     .with_bind("127.0.0.1:9000".parse()?)
///     .with_request_timeout(Duration::from_secs(30))?
///     .with_public_url("https://mcp.example.com")?;
/// assert_eq!(config.request_timeout(), Duration::from_secs(30));
/// # Ok(()) }
/// ```
///
/// Rate limits on `tools/call` are not set here: they are the core's policy, per principal and
/// tool, and must hold on every transport, so they are set on the server
/// ([`ServerBuilder::rate_limit`](crate::server::ServerBuilder::rate_limit), see
/// [`rate_limit`](crate::rate_limit)); this transport only answers a refusal with 429 and
/// `Retry-After`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    pub(crate) bind: SocketAddr,
    pub(crate) path: String,
    pub(crate) max_body_bytes: usize,
    pub(crate) request_timeout: Duration,
    pub(crate) listen_timeout: Duration,
    pub(crate) sse_keep_alive: Duration,
    pub(crate) allowed_origins: OriginAllowlist,
    pub(crate) notification_buffer: usize,
    pub(crate) allowed_hosts: Option<HostAllowlist>,
    pub(crate) header_read_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) body_timeout: Duration,
    pub(crate) max_connections: usize,
    pub(crate) listen_backlog: u32,
    pub(crate) max_header_bytes: usize,
    pub(crate) max_buffered_body_bytes: usize,
    pub(crate) public_url: Option<String>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 8080)),
            path: "/mcp".to_owned(),
            max_body_bytes: 4 * 1024 * 1024,
            request_timeout: Duration::from_secs(120),
            listen_timeout: Duration::from_secs(3600),
            sse_keep_alive: Duration::from_secs(15),
            allowed_origins: OriginAllowlist::loopback(),
            notification_buffer: 64,
            allowed_hosts: None,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(30),
            max_connections: 1024,
            listen_backlog: 1024,
            max_header_bytes: 64 * 1024,
            max_buffered_body_bytes: 64 * 1024 * 1024,
            public_url: None,
        }
    }
}

/// The lower-cased host of an `http`/`https` URL (IPv6 in brackets), if it has one.
fn http_url_host(url: &str) -> Option<String> {
    let uri = url.trim().parse::<http::Uri>().ok()?;
    let scheme = uri.scheme_str()?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    let host = uri.host()?;
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Whether axum can route `path` as one literal path.
pub(crate) fn routable_path(path: &str) -> bool {
    path.starts_with('/') && !path.contains(['{', '}', '*'])
}

impl HttpConfig {
    /// Where to listen. Default `127.0.0.1:8080`: loopback, as the spec recommends for local
    /// servers.
    pub fn bind(&self) -> SocketAddr {
        self.bind
    }

    /// Sets [`HttpConfig::bind`] (default `127.0.0.1:8080`). Bind a public address only with
    /// real authentication.
    #[must_use]
    pub fn with_bind(mut self, bind: SocketAddr) -> Self {
        self.bind = bind;
        self
    }

    /// The MCP endpoint path. Default `/mcp`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Sets [`HttpConfig::path`] (default `/mcp`).
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

    /// Largest accepted request body, in bytes; larger bodies get 413. Default 4 MiB.
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    /// Sets [`HttpConfig::max_body_bytes`] (default 4 MiB).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for 0.
    pub fn with_max_body_bytes(mut self, bytes: usize) -> Result<Self, InvalidLimit> {
        self.max_body_bytes = nonzero("max_body_bytes", bytes)?;
        Ok(self)
    }

    /// How long one request (body upload plus handling) may take. Default 120 s.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// Sets [`HttpConfig::request_timeout`] (default 120 s).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for zero.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Result<Self, InvalidLimit> {
        self.request_timeout = nonzero("request_timeout", timeout)?;
        Ok(self)
    }

    /// How long a `subscriptions/listen` stream may stay open, in place of
    /// [`HttpConfig::request_timeout`]. Default 1 hour.
    pub fn listen_timeout(&self) -> Duration {
        self.listen_timeout
    }

    /// Sets [`HttpConfig::listen_timeout`] (default 1 hour). Keep it above the server's
    /// maximum listen duration (`ServerBuilder::max_listen_duration`, default 30 minutes),
    /// which ends the stream gracefully first.
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for zero.
    pub fn with_listen_timeout(mut self, timeout: Duration) -> Result<Self, InvalidLimit> {
        self.listen_timeout = nonzero("listen_timeout", timeout)?;
        Ok(self)
    }

    /// An SSE response (a `subscriptions/listen` stream, or a request that sends progress)
    /// that has sent nothing for this long gets a `: keep-alive` comment line, so that proxies
    /// which cut idle streams keep it open; clients ignore comments. Default 15 s.
    pub fn sse_keep_alive(&self) -> Duration {
        self.sse_keep_alive
    }

    /// Sets [`HttpConfig::sse_keep_alive`] (default 15 s).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for zero.
    pub fn with_sse_keep_alive(mut self, interval: Duration) -> Result<Self, InvalidLimit> {
        self.sse_keep_alive = nonzero("sse_keep_alive", interval)?;
        Ok(self)
    }

    /// Which `Origin` values may call the server. Default: loopback origins only.
    pub fn allowed_origins(&self) -> &OriginAllowlist {
        &self.allowed_origins
    }

    /// Sets [`HttpConfig::allowed_origins`] (default [`OriginAllowlist::loopback`]).
    #[must_use]
    pub fn with_allowed_origins(mut self, origins: OriginAllowlist) -> Self {
        self.allowed_origins = origins;
        self
    }

    /// How many notifications may queue per request before the handler waits. Default 64.
    pub fn notification_buffer(&self) -> usize {
        self.notification_buffer
    }

    /// Sets [`HttpConfig::notification_buffer`] (default 64), raised to at least 1: a request
    /// always has room for one notification.
    #[must_use]
    pub fn with_notification_buffer(mut self, messages: usize) -> Self {
        self.notification_buffer = messages.max(1);
        self
    }

    /// Which `Host` values the server answers to (421 otherwise). `None` (the default): loopback
    /// names (`localhost`, `127.0.0.1`, `[::1]`, any port) when the listener is on a loopback
    /// address, any host otherwise.
    pub fn allowed_hosts(&self) -> Option<&HostAllowlist> {
        self.allowed_hosts.as_ref()
    }

    /// Sets [`HttpConfig::allowed_hosts`] (default `None`: decided by the listener's address).
    #[must_use]
    pub fn with_allowed_hosts(mut self, hosts: Option<HostAllowlist>) -> Self {
        self.allowed_hosts = hosts;
        self
    }

    /// A request's headers must arrive within this long of its first byte (or of the
    /// connection's opening); otherwise the connection is closed. Default 10 s.
    pub fn header_read_timeout(&self) -> Duration {
        self.header_read_timeout
    }

    /// Sets [`HttpConfig::header_read_timeout`] (default 10 s).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for zero.
    pub fn with_header_read_timeout(mut self, timeout: Duration) -> Result<Self, InvalidLimit> {
        self.header_read_timeout = nonzero("header_read_timeout", timeout)?;
        Ok(self)
    }

    /// A keep-alive connection with no request in progress is closed after this long.
    /// Default 60 s.
    pub fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// Sets [`HttpConfig::idle_timeout`] (default 60 s).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for zero.
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Result<Self, InvalidLimit> {
        self.idle_timeout = nonzero("idle_timeout", timeout)?;
        Ok(self)
    }

    /// A request body must arrive within this long of its headers (408 on `/mcp`), separately
    /// from [`HttpConfig::request_timeout`]. Default 30 s.
    pub fn body_timeout(&self) -> Duration {
        self.body_timeout
    }

    /// Sets [`HttpConfig::body_timeout`] (default 30 s).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for zero.
    pub fn with_body_timeout(mut self, timeout: Duration) -> Result<Self, InvalidLimit> {
        self.body_timeout = nonzero("body_timeout", timeout)?;
        Ok(self)
    }

    /// Most connections open at once. At the cap, the connection that has waited on its client
    /// the longest is closed to make room; busy ones are never closed for room. Default 1024.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// Sets [`HttpConfig::max_connections`] (default 1024). Keep it below the process's
    /// open-file limit (`ulimit -n`).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for 0.
    pub fn with_max_connections(mut self, connections: usize) -> Result<Self, InvalidLimit> {
        self.max_connections = nonzero("max_connections", connections)?;
        Ok(self)
    }

    /// Length of the kernel's queue of new connections not yet accepted (the `listen`
    /// backlog; the system caps it, at `net.core.somaxconn` on Linux). Connections arriving
    /// while it is full have their handshake dropped and retried by the client only after a
    /// second, so it should hold a burst of clients connecting at once. Default 1024.
    pub fn listen_backlog(&self) -> u32 {
        self.listen_backlog
    }

    /// Sets [`HttpConfig::listen_backlog`] (default 1024); used by
    /// [`HttpServer::bind`](super::HttpServer::bind) and [`listen`](super::listen).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for 0.
    pub fn with_listen_backlog(mut self, connections: u32) -> Result<Self, InvalidLimit> {
        self.listen_backlog = nonzero("listen_backlog", connections)?;
        Ok(self)
    }

    /// Largest request head (request line plus headers), in bytes; 431 beyond. Default 64 KiB.
    pub fn max_header_bytes(&self) -> usize {
        self.max_header_bytes
    }

    /// Sets [`HttpConfig::max_header_bytes`] (default 64 KiB).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for 0.
    pub fn with_max_header_bytes(mut self, bytes: usize) -> Result<Self, InvalidLimit> {
        self.max_header_bytes = nonzero("max_header_bytes", bytes)?;
        Ok(self)
    }

    /// Most request-body bytes buffered at once across all connections; a body read that would
    /// exceed it fails (503 with `Retry-After` on `/mcp`). Default 64 MiB.
    pub fn max_buffered_body_bytes(&self) -> usize {
        self.max_buffered_body_bytes
    }

    /// Sets [`HttpConfig::max_buffered_body_bytes`] (default 64 MiB).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for 0.
    pub fn with_max_buffered_body_bytes(mut self, bytes: usize) -> Result<Self, InvalidLimit> {
        self.max_buffered_body_bytes = nonzero("max_buffered_body_bytes", bytes)?;
        Ok(self)
    }

    /// The base URL clients and browsers reach this server at, e.g. `https://mcp.example.com`
    /// behind a TLS proxy. Default `None`.
    ///
    /// Links an application mints for people (URL-mode elicitation pages) should start with
    /// it, never with [`HttpConfig::bind`], which may be private or unspecified (`0.0.0.0`).
    /// With [`HttpConfig::allowed_hosts`] left at `None`, its host is served too, so a proxy
    /// that keeps the public `Host` reaches a loopback-bound server.
    pub fn public_url(&self) -> Option<&str> {
        self.public_url.as_deref()
    }

    /// Sets [`HttpConfig::public_url`] (default `None`).
    ///
    /// # Errors
    /// [`InvalidLimit::PublicUrl`] unless it is an `http` or `https` URL with a host.
    pub fn with_public_url(mut self, url: impl Into<String>) -> Result<Self, InvalidLimit> {
        let url = url.into();
        if http_url_host(&url).is_none() {
            return Err(InvalidLimit::PublicUrl(url));
        }
        self.public_url = Some(url);
        Ok(self)
    }

    /// The host of [`HttpConfig::public_url`] (IPv6 in brackets, lower-cased), if it is set.
    pub fn public_host(&self) -> Option<String> {
        http_url_host(self.public_url.as_deref()?)
    }

    /// Checks that every limit can be met. The setters refuse unusable values, so this only
    /// guards the crate's own constructions (tests build configs field by field).
    pub(crate) fn check_limits(&self) -> Result<(), InvalidLimit> {
        if let Some(url) = &self.public_url
            && self.public_host().is_none()
        {
            return Err(InvalidLimit::PublicUrl(url.clone()));
        }
        let zero = [
            (self.header_read_timeout.is_zero(), "header_read_timeout"),
            (self.idle_timeout.is_zero(), "idle_timeout"),
            (self.body_timeout.is_zero(), "body_timeout"),
            (self.request_timeout.is_zero(), "request_timeout"),
            (self.listen_timeout.is_zero(), "listen_timeout"),
            (self.sse_keep_alive.is_zero(), "sse_keep_alive"),
            (self.max_connections == 0, "max_connections"),
            (self.listen_backlog == 0, "listen_backlog"),
            (self.max_header_bytes == 0, "max_header_bytes"),
            (self.max_buffered_body_bytes == 0, "max_buffered_body_bytes"),
            (self.max_body_bytes == 0, "max_body_bytes"),
        ];
        match zero.into_iter().find(|(is_zero, _)| *is_zero) {
            Some((_, name)) => Err(InvalidLimit::Zero(name)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_url_gives_its_host_and_is_checked() {
        let ok = HttpConfig::default()
            .with_public_url("https://MCP.example.com:8443/base")
            .unwrap();
        assert_eq!(ok.public_host().as_deref(), Some("mcp.example.com"));
        assert!(ok.check_limits().is_ok());
        let v6 = HttpConfig::default()
            .with_public_url("http://[::1]:9/")
            .unwrap();
        assert_eq!(v6.public_host().as_deref(), Some("[::1]"));
        for bad in ["ftp://x", "not a url", "/relative", "https://"] {
            assert!(
                matches!(
                    HttpConfig::default().with_public_url(bad),
                    Err(InvalidLimit::PublicUrl(_))
                ),
                "{bad}"
            );
        }
        assert!(HttpConfig::default().public_host().is_none());
    }

    #[test]
    fn setters_refuse_what_cannot_work() {
        let zero = HttpConfig::default().with_idle_timeout(Duration::ZERO);
        assert!(matches!(zero, Err(InvalidLimit::Zero("idle_timeout"))));
        assert!(HttpConfig::default().with_max_connections(0).is_err());
        for bad in ["mcp", "/{id}", "/a*"] {
            assert!(
                matches!(
                    HttpConfig::default().with_path(bad),
                    Err(InvalidLimit::Path(_))
                ),
                "{bad}"
            );
        }
        let config = HttpConfig::default()
            .with_path("/rpc")
            .unwrap()
            .with_notification_buffer(0);
        assert_eq!((config.path(), config.notification_buffer()), ("/rpc", 1));
        assert!(config.check_limits().is_ok());
    }
}
