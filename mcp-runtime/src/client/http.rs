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
    /// The URL as given: the key of the OAuth token store and the resource it must match.
    #[cfg_attr(not(feature = "client-oauth"), allow(dead_code))]
    url: String,
    host: String,
    port: u16,
    token: Option<String>,
    max_response_bytes: usize,
    #[cfg(feature = "client-oauth")]
    oauth: Option<super::oauth::OAuthClient>,
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
            url: url.to_owned(),
            host,
            port,
            token: None,
            max_response_bytes: Self::DEFAULT_MAX_RESPONSE_BYTES,
            #[cfg(feature = "client-oauth")]
            oauth: None,
        })
    }

    /// Sends `Authorization: Bearer {token}` with every request.
    #[must_use]
    pub fn bearer(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Authorizes with `oauth` (feature `client-oauth`): a 401 runs discovery and the
    /// authorization code flow, a 403 `insufficient_scope` a step-up, and the request is sent
    /// again with the new token. Replaces [`HttpTransport::bearer`].
    #[cfg(feature = "client-oauth")]
    #[must_use]
    pub fn oauth(mut self, oauth: super::oauth::OAuthClient) -> Self {
        self.oauth = Some(oauth);
        self.token = None;
        self
    }

    /// Refuses response bodies larger than `bytes`.
    #[must_use]
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    fn request(
        &self,
        message: &Outgoing,
        token: Option<&str>,
    ) -> Result<Request<Full<Bytes>>, ClientError> {
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
        if let Some(token) = token {
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
        #[cfg(feature = "client-oauth")]
        if let Some(oauth) = &self.oauth {
            return self.post_authorized(oauth, message).await;
        }
        let (response, _abort) = self.exchange(message, self.token.as_deref()).await?;
        self.read(message, response).await
    }

    /// Sends with the OAuth client's token, authorizing on 401 and stepping up on 403
    /// `insufficient_scope`, each within its limit.
    #[cfg(feature = "client-oauth")]
    async fn post_authorized(
        &self,
        oauth: &super::oauth::OAuthClient,
        message: &Outgoing,
    ) -> Result<Value, ClientError> {
        use super::oauth::{AuthError, Challenge};
        // A 401 right after a fresh authorization means the token is not accepted: stop
        // rather than loop.
        const MAX_REAUTHORIZATIONS: u32 = 2;
        let mut reauthorized = 0;
        let mut stepped_up = 0;
        loop {
            let token = oauth.access_token(&self.url).await;
            let (response, abort) = self.exchange(message, token.as_deref()).await?;
            let status = response.status().as_u16();
            let challenge = response
                .headers()
                .get_all(http::header::WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(Challenge::parse)
                .find(|c| *c != Challenge::default())
                .unwrap_or_default();
            let forbidden = status == 403;
            // Anything but a 401 or a scope challenge (a 403 for another reason carries the
            // server's own JSON-RPC error) is read as usual.
            if status != 401 && !(forbidden && challenge.is_insufficient_scope()) {
                let value = self.read(message, response).await;
                drop(abort);
                return value;
            }
            drop((response, abort));
            if forbidden {
                if stepped_up >= oauth.max_step_ups() {
                    return Err(AuthError::StepUpLimit {
                        attempts: stepped_up,
                        scope: challenge.scope.unwrap_or_default(),
                    }
                    .into());
                }
                stepped_up += 1;
            } else {
                if reauthorized >= MAX_REAUTHORIZATIONS {
                    return Err(AuthError::StillUnauthorized {
                        attempts: reauthorized,
                    }
                    .into());
                }
                reauthorized += 1;
            }
            oauth
                .handle_challenge(&self.url, &challenge, forbidden, token.as_deref())
                .await?;
        }
    }

    /// Connects and sends one request; the guard keeps the connection driven until dropped.
    async fn exchange(
        &self,
        message: &Outgoing,
        token: Option<&str>,
    ) -> Result<(hyper::Response<hyper::body::Incoming>, AbortOnDrop), ClientError> {
        let request = self.request(message, token)?;
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
        let abort = AbortOnDrop(driver);
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| transport(&e))?;
        Ok((response, abort))
    }

    /// Reads the JSON-RPC response (JSON or SSE) out of an HTTP response.
    async fn read(
        &self,
        message: &Outgoing,
        response: hyper::Response<hyper::body::Incoming>,
    ) -> Result<Value, ClientError> {
        let transport = |e: &dyn std::fmt::Display| {
            ClientError::Transport(format!("HTTP to {}: {e}", self.uri))
        };
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
