//! The Streamable HTTP transport: one POST per message, with the 2026-07-28 standard headers,
//! answered with JSON or an SSE stream.

use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST};
use http::{HeaderName, HeaderValue, Request, Uri};
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use serde_json::Value;

use super::ClientError;
use super::param_headers::encode;
use super::transport::{Outgoing, Transport};

/// Streamable HTTP to one MCP endpoint (`http://host:port/path`), optionally with a bearer
/// token.
///
/// Each message is its own POST on a fresh connection (no pool: requests are independent in
/// 2026-07-28, and a fresh connection per call keeps the transport stateless). Plain `http`
/// only: use it on loopback or behind a TLS-terminating proxy. Responses larger than
/// [`HttpTransport::max_response_bytes`] are refused.
#[derive(Clone)]
pub struct HttpTransport {
    uri: Uri,
    host: String,
    port: u16,
    token: Option<String>,
    max_response_bytes: usize,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is a secret: never printed.
        f.debug_struct("HttpTransport")
            .field("uri", &self.uri)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

impl HttpTransport {
    /// Default cap on one response body (16 MiB).
    pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 << 20;

    /// The endpoint at `url` (`http://…`; `https` is refused with a clear error).
    pub fn new(url: &str) -> Result<Self, ClientError> {
        let uri: Uri = url
            .parse()
            .map_err(|e| ClientError::Transport(format!("invalid URL {url:?}: {e}")))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(ClientError::Transport(
                    "https is not supported by this client; use http on loopback or a TLS-terminating proxy".into(),
                ));
            }
            _ => {
                return Err(ClientError::Transport(format!(
                    "URL {url:?} must start with http://"
                )));
            }
        }
        let host = uri
            .host()
            .ok_or_else(|| ClientError::Transport(format!("URL {url:?} has no host")))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(80);
        Ok(Self {
            uri,
            host,
            port,
            token: None,
            max_response_bytes: Self::DEFAULT_MAX_RESPONSE_BYTES,
        })
    }

    /// Sends `Authorization: Bearer {token}` with every request.
    #[must_use]
    pub fn bearer(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Refuses response bodies larger than `bytes`.
    #[must_use]
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    fn request(&self, message: &Outgoing) -> Result<Request<Full<Bytes>>, ClientError> {
        let path = self
            .uri
            .path_and_query()
            .map_or("/", http::uri::PathAndQuery::as_str);
        let authority = self
            .uri
            .authority()
            .map_or_else(|| self.host.clone(), |a| a.as_str().to_owned());
        let bad = |what: &str| ClientError::Request(format!("cannot send {what} as a header"));
        let mut builder = Request::post(path)
            .header(HOST, authority)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .header("mcp-protocol-version", &message.protocol_version)
            .header("mcp-method", &message.method);
        if let Some(name) = &message.name {
            builder = builder.header("mcp-name", encode(name));
        }
        for (name, value) in &message.param_headers {
            let name = HeaderName::try_from(format!("mcp-param-{name}"))
                .map_err(|_| bad("an x-mcp-header name"))?;
            let value = HeaderValue::try_from(value).map_err(|_| bad("a parameter value"))?;
            builder = builder.header(name, value);
        }
        if let Some(token) = &self.token {
            let mut value = HeaderValue::try_from(format!("Bearer {token}"))
                .map_err(|_| bad("the bearer token"))?;
            value.set_sensitive(true);
            builder = builder.header(AUTHORIZATION, value);
        }
        builder
            .body(Full::new(message.body.clone()))
            .map_err(|e| ClientError::Request(format!("cannot build the HTTP request: {e}")))
    }

    async fn post(&self, message: &Outgoing) -> Result<Value, ClientError> {
        let request = self.request(message)?;
        let transport = |e: &dyn std::fmt::Display| {
            ClientError::Transport(format!("HTTP to {}: {e}", self.uri))
        };
        let stream = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| transport(&e))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| transport(&e))?;
        // Drives the connection; it ends when the response is read and `sender` is dropped (or
        // when this call's future is dropped on timeout, which closes the socket: the server
        // treats that as cancellation).
        let driver = tokio::spawn(connection);
        let _abort = AbortOnDrop(driver);
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| transport(&e))?;
        let status = response.status();
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
        let mut body = response.into_body();
        if message.is_notification {
            return if status.is_success() {
                Ok(Value::Null)
            } else {
                Err(ClientError::Transport(format!(
                    "HTTP {status} for notification {}",
                    message.method
                )))
            };
        }
        let mut buf = BytesMut::new();
        let mut sse = SseParser::default();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| transport(&e))?;
            let Ok(chunk) = frame.into_data() else {
                continue;
            };
            if buf.len() + chunk.len() > self.max_response_bytes {
                return Err(ClientError::Transport(format!(
                    "the response to {} is larger than {} bytes",
                    message.method, self.max_response_bytes
                )));
            }
            buf.extend_from_slice(&chunk);
            if is_sse && let Some(found) = sse.response_in(&mut buf) {
                return Ok(found);
            }
        }
        if is_sse {
            return Err(ClientError::Transport(format!(
                "the SSE stream for {} ended without a response (HTTP {status})",
                message.method
            )));
        }
        match serde_json::from_slice::<Value>(&buf) {
            Ok(v) if v.get("result").is_some() || v.get("error").is_some() => Ok(v),
            _ => {
                let snippet = String::from_utf8_lossy(&buf[..buf.len().min(200)]).into_owned();
                Err(ClientError::Transport(format!(
                    "HTTP {status} for {} without a JSON-RPC response body: {snippet:?}",
                    message.method
                )))
            }
        }
    }
}

/// Aborts the connection task when the call ends (normally it has already finished).
struct AbortOnDrop(tokio::task::JoinHandle<Result<(), hyper::Error>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Incremental `text/event-stream` reader: returns the first event whose data is a JSON-RPC
/// response (notifications before it are skipped).
#[derive(Default)]
struct SseParser {
    data: String,
}

impl SseParser {
    fn response_in(&mut self, buf: &mut BytesMut) -> Option<Value> {
        while let Some(end) = buf.iter().position(|&b| b == b'\n') {
            let line = buf.split_to(end + 1);
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                let data = std::mem::take(&mut self.data);
                if let Ok(v) = serde_json::from_str::<Value>(&data)
                    && (v.get("result").is_some() || v.get("error").is_some())
                {
                    return Some(v);
                }
            } else if let Some(rest) = line.strip_prefix("data:") {
                if !self.data.is_empty() {
                    self.data.push('\n');
                }
                self.data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
            }
            // `event:`, `id:`, `retry:` and `:` comments carry nothing we need.
        }
        None
    }
}

impl Transport for HttpTransport {
    fn send<'a>(&'a self, message: &'a Outgoing) -> BoxFuture<'a, Result<Value, ClientError>> {
        Box::pin(self.post(message))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn sse_skips_notifications_and_finds_the_response_across_chunks() {
        let mut p = SseParser::default();
        let mut buf = BytesMut::from(
            &b": keep-alive\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,"[..],
        );
        assert!(p.response_in(&mut buf).is_none());
        buf.extend_from_slice(b"\"result\":{}}\r\n\r\n");
        let v = p.response_in(&mut buf).unwrap();
        assert_eq!(v["id"], 1);
    }

    #[test]
    fn https_and_garbage_urls_are_refused_with_a_reason() {
        assert!(HttpTransport::new("https://example.com/mcp").is_err());
        assert!(HttpTransport::new("not a url").is_err());
        assert!(HttpTransport::new("http://127.0.0.1:9/mcp").is_ok());
    }
}
