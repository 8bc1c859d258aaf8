//! [`HttpConfig`]: the settings of the Streamable HTTP transport and of the connection edge
//! that serves it, kept apart from both so each can read them without importing the other.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use super::allowlist::{HostAllowlist, OriginAllowlist};

/// Tunables for the HTTP transport and its connection edge ([`serve_router`](super::serve_router)).
///
/// Rate limits on `tools/call` are not set here: they are the core's policy, per principal and
/// tool, and must hold on every transport, so they are set on the server
/// ([`ServerBuilder::rate_limit`](crate::ServerBuilder::rate_limit), see
/// [`rate_limit`](crate::rate_limit)); this transport only answers a refusal with 429 and
/// `Retry-After`.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Where to listen. Default `127.0.0.1:8080`: loopback, as the spec recommends for local
    /// servers. Bind a public address only with real authentication.
    pub bind: SocketAddr,
    /// The MCP endpoint path. Default `/mcp`.
    pub path: String,
    /// Largest accepted request body, in bytes; larger bodies get 413. Default 4 MiB.
    pub max_body_bytes: usize,
    /// How long one request (body upload plus handling) may take. Default 120 s.
    pub request_timeout: Duration,
    /// How long a `subscriptions/listen` stream may stay open, in place of
    /// [`HttpConfig::request_timeout`]. Keep it above the server's maximum listen duration
    /// (`ServerBuilder::max_listen_duration`, default 30 minutes), which ends the stream
    /// gracefully first. Default 1 hour.
    pub listen_timeout: Duration,
    /// An SSE response (a `subscriptions/listen` stream, or a request that sends progress)
    /// that has sent nothing for this long gets a `: keep-alive` comment line, so that proxies
    /// which cut idle streams keep it open; clients ignore comments. Default 15 s.
    pub sse_keep_alive: Duration,
    /// Which `Origin` values may call the server. Default: loopback origins only.
    pub allowed_origins: OriginAllowlist,
    /// How many notifications may queue per request before the handler waits. Default 64.
    pub notification_buffer: usize,
    /// Which `Host` values the server answers to (421 otherwise). `None` (the default): loopback
    /// names (`localhost`, `127.0.0.1`, `[::1]`, any port) when the listener is on a loopback
    /// address, any host otherwise.
    pub allowed_hosts: Option<HostAllowlist>,
    /// A request's headers must arrive within this long of its first byte (or of the
    /// connection's opening); otherwise the connection is closed. Default 10 s.
    pub header_read_timeout: Duration,
    /// A keep-alive connection with no request in progress is closed after this long.
    /// Default 60 s.
    pub idle_timeout: Duration,
    /// A request body must arrive within this long of its headers (408 on `/mcp`), separately
    /// from [`HttpConfig::request_timeout`]. Default 30 s.
    pub body_timeout: Duration,
    /// Most connections open at once. At the cap, the connection that has waited on its client
    /// the longest is closed to make room; busy ones are never closed for room. Keep it below
    /// the process's open-file limit (`ulimit -n`). Default 1024.
    pub max_connections: usize,
    /// Largest request head (request line plus headers), in bytes; 431 beyond. Default 64 KiB.
    pub max_header_bytes: usize,
    /// Most request-body bytes buffered at once across all connections; a body read that would
    /// exceed it fails (503 with `Retry-After` on `/mcp`). Default 64 MiB.
    pub max_buffered_body_bytes: usize,
    /// The base URL clients and browsers reach this server at, e.g. `https://mcp.example.com`
    /// behind a TLS proxy. Links an application mints for people (URL-mode elicitation pages)
    /// should start with it, never with [`HttpConfig::bind`], which may be private or
    /// unspecified (`0.0.0.0`). With `allowed_hosts` left at `None`, its host is served too, so
    /// a proxy that keeps the public `Host` reaches a loopback-bound server. Checked by
    /// [`HttpConfig::check_limits`]: `http` or `https`, with a host. Default `None`.
    pub public_url: Option<String>,
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
            max_header_bytes: 64 * 1024,
            max_buffered_body_bytes: 64 * 1024 * 1024,
            public_url: None,
        }
    }
}

/// A setting in [`HttpConfig`] that cannot work.
#[derive(Debug, thiserror::Error)]
pub enum InvalidLimit {
    /// A timeout, cap or size of zero.
    #[error("invalid HTTP limit: {0} must be greater than zero")]
    Zero(&'static str),
    /// [`HttpConfig::public_url`] is not an `http`/`https` URL with a host.
    #[error(
        "invalid public URL {0:?}: write http(s)://HOST[:PORT][/PATH], e.g. https://mcp.example.com"
    )]
    PublicUrl(String),
}

impl HttpConfig {
    /// The host of [`HttpConfig::public_url`] (IPv6 in brackets), if it is set and valid.
    pub fn public_host(&self) -> Option<String> {
        let uri = self
            .public_url
            .as_deref()?
            .trim()
            .parse::<http::Uri>()
            .ok()?;
        let scheme = uri.scheme_str()?;
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return None;
        }
        let host = uri.host()?;
        (!host.is_empty()).then(|| host.to_ascii_lowercase())
    }

    /// Checks that every limit can be met (timeouts, caps and sizes must be non-zero) and that
    /// a [`HttpConfig::public_url`] is usable.
    ///
    /// # Errors
    /// [`InvalidLimit`] naming the first unusable setting.
    pub fn check_limits(&self) -> Result<(), InvalidLimit> {
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
        let with = |url: &str| HttpConfig {
            public_url: Some(url.to_owned()),
            ..HttpConfig::default()
        };
        let ok = with("https://MCP.example.com:8443/base");
        assert_eq!(ok.public_host().as_deref(), Some("mcp.example.com"));
        assert!(ok.check_limits().is_ok());
        assert_eq!(
            with("http://[::1]:9/").public_host().as_deref(),
            Some("[::1]")
        );
        for bad in ["ftp://x", "not a url", "/relative", "https://"] {
            let config = with(bad);
            assert!(config.public_host().is_none(), "{bad}");
            assert!(
                matches!(config.check_limits(), Err(InvalidLimit::PublicUrl(_))),
                "{bad}"
            );
        }
        assert!(HttpConfig::default().public_host().is_none());
    }
}
