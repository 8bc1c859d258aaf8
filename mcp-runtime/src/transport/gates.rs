//! The gates every HTTP request passes before a service sees it, shared by the 2026-07-28
//! transport ([`super::http`]) and the 2025-11-25 adapter (`crate::legacy::http`): Origin,
//! authentication, the bounded body and `Accept`; plus the SSE framing both write.
//!
//! One copy, so a hardening fix lands in both eras at once. Each gate returns a [`Refusal`]
//! instead of a response, so each transport can log it in its own format before sending it.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::{BufMut, Bytes, BytesMut};
use http::header::{ACCEPT, CONTENT_TYPE, ORIGIN, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue, StatusCode};
use mcp_types::ErrorCode;
use serde_json::Value;
use std::time::Duration;

use super::allowlist::OriginAllowlist;
use super::auth::{AuthRejection, Authenticator, challenge};
use super::body::{BodyError, read_body_until};
use crate::service::envelope;
use crate::service::{Grant, Reply};

const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");

/// A request turned away by a gate: what to send, and a short reason for the log.
#[derive(Debug)]
pub(crate) struct Refusal {
    /// The HTTP status.
    pub status: StatusCode,
    /// A JSON-RPC error body, when the refusal has one.
    pub body: Option<Bytes>,
    /// `WWW-Authenticate` for a 401.
    challenge: Option<HeaderValue>,
    /// Whether to add `Retry-After: 1` (a 503 from the shared body budget).
    retry_after: bool,
    /// A fixed, log-safe word for why (`origin`, `auth`, `body size`, ...).
    pub reason: &'static str,
}

impl Refusal {
    /// A refusal carrying a JSON-RPC error body with `code` and `message` (and `id` when
    /// known and legal).
    pub(crate) fn rpc(
        status: StatusCode,
        id: Option<&Value>,
        code: ErrorCode,
        message: &str,
        reason: &'static str,
    ) -> Self {
        Self {
            status,
            body: Some(envelope::error_body(id, code, message)),
            challenge: None,
            retry_after: false,
            reason,
        }
    }

    /// The response to send.
    pub(crate) fn into_response(self) -> Response {
        let mut response = match self.body {
            Some(body) => json(self.status, body),
            None => self.status.into_response(),
        };
        if let Some(challenge) = self.challenge {
            response.headers_mut().insert(WWW_AUTHENTICATE, challenge);
        }
        if self.retry_after {
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

/// A JSON response with the given status.
pub(crate) fn json(status: StatusCode, body: Bytes) -> Response {
    (status, [(CONTENT_TYPE, APPLICATION_JSON)], body).into_response()
}

/// DNS-rebinding defence: a request that names an `Origin` must name an allowed one. Requests
/// without `Origin` (non-browser clients) pass.
pub(crate) fn check_origin(origins: &OriginAllowlist, headers: &HeaderMap) -> Result<(), Refusal> {
    match headers.get(ORIGIN) {
        Some(origin) if !origin.to_str().is_ok_and(|o| origins.allows(o)) => Err(Refusal::rpc(
            StatusCode::FORBIDDEN,
            None,
            ErrorCode::InvalidRequest,
            "Forbidden: Origin not allowed",
            "origin",
        )),
        _ => Ok(()),
    }
}

/// Authenticates from the headers alone, before any body is read: 400 for an ambiguous
/// `Authorization`, 401 with a Bearer challenge otherwise (naming the resource metadata when
/// the authenticator has any, so an OAuth client can discover the authorization server).
pub(crate) async fn authenticate(
    auth: &dyn Authenticator,
    headers: &HeaderMap,
) -> Result<Grant, Refusal> {
    let error = match auth.authenticate_grant(headers).await {
        Ok(grant) => return Ok(grant),
        Err(AuthRejection::Malformed) => {
            return Err(Refusal::rpc(
                StatusCode::BAD_REQUEST,
                None,
                ErrorCode::InvalidRequest,
                "Bad Request: send exactly one Authorization header",
                "auth",
            ));
        }
        Err(AuthRejection::InvalidToken) => {
            Some(("invalid_token", "The access token is not valid"))
        }
        Err(AuthRejection::Missing) => None,
    };
    Err(Refusal {
        status: StatusCode::UNAUTHORIZED,
        body: None,
        challenge: Some(challenge(auth, error, None)),
        retry_after: false,
        reason: "auth",
    })
}

/// The 403 for a request the core refused to its grant ([`Reply::forbidden`]): the core's
/// JSON-RPC body, with a `WWW-Authenticate` challenge (RFC 6750 `insufficient_scope`) naming
/// every scope a new token needs when a step-up would help.
pub(crate) fn forbidden(auth: &dyn Authenticator, reply: Reply) -> Response {
    let scope = reply.step_up_scope();
    let description = if scope.is_some() {
        "The access token lacks a required scope"
    } else {
        "No scope grants access to this target"
    };
    let challenge = challenge(auth, Some(("insufficient_scope", description)), scope);
    let mut response = json(StatusCode::FORBIDDEN, reply.body);
    response.headers_mut().insert(WWW_AUTHENTICATE, challenge);
    response
}

/// The 429 for a request the core refused under a rate limit ([`Reply::rate_limited`]): the
/// core's JSON-RPC body (`-32023`), with `Retry-After` (delta-seconds, the body's
/// `error.data.retryAfter`) and `RateLimit-Limit` when the limit is known.
pub(crate) fn rate_limited(reply: Reply) -> Response {
    let (retry_after, limit) = match reply.kind {
        crate::service::ReplyKind::RateLimited {
            retry_after_secs,
            limit,
        } => (Some(retry_after_secs), limit),
        _ => (None, None),
    };
    let mut response = json(StatusCode::TOO_MANY_REQUESTS, reply.body);
    rate_limit_headers(response.headers_mut(), retry_after, limit);
    response
}

/// `Retry-After: {retry_after}` and `RateLimit-Limit: {limit}`, each when known.
pub(crate) fn rate_limit_headers(
    headers: &mut HeaderMap,
    retry_after: Option<u32>,
    limit: Option<u32>,
) {
    if let Some(secs) = retry_after {
        headers.insert(RETRY_AFTER, HeaderValue::from(secs.max(1)));
    }
    if let Some(limit) = limit {
        headers.insert(RATELIMIT_LIMIT, HeaderValue::from(limit));
    }
}

/// The `RateLimit-Limit` header SEP-3304 asks for beside `Retry-After`.
const RATELIMIT_LIMIT: http::HeaderName = http::HeaderName::from_static("ratelimit-limit");

/// Reads the body within `limit` bytes and by `deadline` (computed by the caller from the
/// request's start: no clock read here), charged to the server-wide budget under
/// [`super::serve_router`]; `timeout` is the allowance the refusal reports.
pub(crate) async fn body_until(
    body: Body,
    headers: &HeaderMap,
    limit: usize,
    deadline: tokio::time::Instant,
    timeout: Duration,
) -> Result<Bytes, Refusal> {
    read_body_until(body, headers, limit, deadline, timeout)
        .await
        .map_err(|err| {
            let reason = match err {
                BodyError::TooLarge { .. } => "body size",
                BodyError::TimedOut { .. } => "body timeout",
                BodyError::Busy => "body budget",
                BodyError::Broken => "body read",
            };
            let mut refusal = Refusal::rpc(
                err.status(),
                None,
                ErrorCode::InvalidRequest,
                &err.to_string(),
                reason,
            );
            refusal.retry_after = matches!(err, BodyError::Busy);
            refusal
        })
}

/// What the client's `Accept` header allows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Accepts {
    /// A plain JSON response.
    pub json: bool,
    /// An SSE stream.
    pub sse: bool,
}

/// Reads `Accept` (every header line, every item; `q=0` refuses an item). No `Accept` at all
/// accepts both: the spec does not say, and failing minimal clients helps nobody.
pub(crate) fn accepts(headers: &HeaderMap) -> Accepts {
    const BOTH: Accepts = Accepts {
        json: true,
        sse: true,
    };
    // What spec-following clients send, recognised without parsing.
    let mut values = headers.get_all(ACCEPT).iter();
    if let (Some(only), None) = (values.next(), values.next())
        && only.as_bytes() == b"application/json, text/event-stream"
    {
        return BOTH;
    }
    let mut seen = false;
    let mut out = Accepts {
        json: false,
        sse: false,
    };
    for value in headers.get_all(ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            seen = true;
            let mut parts = item.split(';');
            let media = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            if refused {
                continue;
            }
            let any = media == "*/*";
            out.json |= any
                || media.eq_ignore_ascii_case("application/json")
                || media.eq_ignore_ascii_case("application/*");
            out.sse |= any
                || media.eq_ignore_ascii_case("text/event-stream")
                || media.eq_ignore_ascii_case("text/*");
        }
    }
    if seen { out } else { BOTH }
}

/// Frames one JSON-RPC message as an SSE event. Compact JSON has no raw newlines, but a service
/// may hand over pretty-printed bytes, so each line becomes its own `data:` field.
pub(crate) fn sse_event(message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(message.len() + 8);
    for line in message.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        out.put_slice(b"data: ");
        out.put_slice(line);
        out.put_u8(b'\n');
    }
    out.put_u8(b'\n');
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_accept(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(ACCEPT, HeaderValue::from_str(v).unwrap());
        }
        headers
    }

    #[test]
    fn accept_is_read_across_lines_items_and_q_values() {
        let a = accepts(&with_accept(&["application/json, text/event-stream"]));
        assert!(a.json && a.sse);
        let a = accepts(&with_accept(&["application/json"]));
        assert!(a.json && !a.sse);
        let a = accepts(&with_accept(&["text/html", "text/*"]));
        assert!(!a.json && a.sse);
        let a = accepts(&with_accept(&["*/*, text/event-stream;q=0"]));
        assert!(a.json && a.sse, "*/* still allows both");
        let a = accepts(&with_accept(&["application/json;q=0, text/event-stream"]));
        assert!(!a.json && a.sse);
        let a = accepts(&with_accept(&["image/png"]));
        assert!(!a.json && !a.sse);
        let a = accepts(&HeaderMap::new());
        assert!(a.json && a.sse);
    }

    #[test]
    fn sse_events_frame_every_line() {
        assert_eq!(&sse_event(b"{\"a\":1}")[..], b"data: {\"a\":1}\n\n");
        assert_eq!(
            &sse_event(b"{\r\n\"a\":1\n}")[..],
            b"data: {\ndata: \"a\":1\ndata: }\n\n"
        );
    }

    #[test]
    fn a_foreign_origin_is_refused_with_403() {
        let origins = OriginAllowlist::default();
        let mut headers = HeaderMap::new();
        assert!(check_origin(&origins, &headers).is_ok());
        headers.insert(ORIGIN, HeaderValue::from_static("https://evil.example"));
        let refusal = check_origin(&origins, &headers).unwrap_err();
        assert_eq!(refusal.status, StatusCode::FORBIDDEN);
        assert_eq!(refusal.reason, "origin");
    }
}
