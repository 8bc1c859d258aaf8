//! Reading a request body within bounds: a size limit, a deadline, and (under
//! [`serve_router`](super::serve_router)) the server-wide budget for buffered bodies.

use std::time::Duration;

use axum::body::Body;
use axum::response::IntoResponse;
use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderMap, HeaderValue, StatusCode};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use mcp_types::ErrorCode;

use crate::service::envelope;

/// Why reading a request body failed; [`BodyError::status`] is the HTTP answer to give.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The body is larger than the route allows.
    #[error("Request body larger than {limit} bytes")]
    TooLarge {
        /// The route's limit, in bytes.
        limit: usize,
    },
    /// The body did not arrive in time.
    #[error("Request body not received within {} ms; send the whole body promptly", after.as_millis())]
    TimedOut {
        /// The deadline that passed.
        after: Duration,
    },
    /// The server's budget for buffered request bodies is spent (many large uploads at once).
    #[error("Server busy: too many request bodies in flight; retry in a moment")]
    Busy,
    /// The connection broke or the body was malformed (e.g. bad chunked encoding).
    #[error("Request body could not be read")]
    Broken,
}

impl BodyError {
    /// The HTTP status for this failure: 413, 408, 503 or 400.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::TimedOut { .. } => StatusCode::REQUEST_TIMEOUT,
            Self::Busy => StatusCode::SERVICE_UNAVAILABLE,
            Self::Broken => StatusCode::BAD_REQUEST,
        }
    }

    /// A response with [`BodyError::status`] and a JSON-RPC error body (`-32600`, no id);
    /// `Busy` adds `Retry-After: 1`.
    pub fn into_response(self) -> axum::response::Response {
        let body = envelope::error_body(None, ErrorCode::InvalidRequest, &self.to_string());
        let mut response = (
            self.status(),
            [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
            body,
        )
            .into_response();
        if matches!(self, Self::Busy) {
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }

    /// Sorts an error from reading a body: the edge's own errors are found in the source
    /// chain (through axum's and `Limited`'s wrappers), anything else is `Broken`.
    fn classify(err: &(dyn std::error::Error + 'static), limit: usize) -> Self {
        let mut next = Some(err);
        while let Some(err) = next {
            if err.is::<LengthLimitError>() {
                return Self::TooLarge { limit };
            }
            if let Some(timeout) = err.downcast_ref::<BodyTimedOut>() {
                return Self::TimedOut { after: timeout.0 };
            }
            if err.is::<BudgetSpent>() {
                return Self::Busy;
            }
            next = err.source();
        }
        Self::Broken
    }
}

/// Reads a whole request body, at most `max_bytes`, within `timeout`.
///
/// For routes that must authenticate first: check the credentials in the request's headers,
/// then call this, so nothing is buffered for an unauthenticated client. A declared
/// `Content-Length` over the limit fails at once. Under [`serve_router`](super::serve_router) the body is also
/// charged to the server-wide `max_buffered_body_bytes` budget ([`BodyError::Busy`] when it is
/// spent) and bounded by `body_timeout`; `timeout` applies in any case, so the helper is safe in
/// a router served some other way too.
///
/// # Errors
/// [`BodyError`]; answer with [`BodyError::into_response`] or map its
/// [`status`](BodyError::status).
pub async fn read_body(
    body: Body,
    headers: &HeaderMap,
    max_bytes: usize,
    timeout: Duration,
) -> Result<Bytes, BodyError> {
    let deadline = tokio::time::Instant::now() + timeout;
    read_body_until(body, headers, max_bytes, deadline, timeout).await
}

/// [`read_body`] against a deadline the caller already computed (`timeout` is what the error
/// reports): a request's clock is read once, when it starts, not again for each timer.
pub(crate) async fn read_body_until(
    body: Body,
    headers: &HeaderMap,
    max_bytes: usize,
    deadline: tokio::time::Instant,
    timeout: Duration,
) -> Result<Bytes, BodyError> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > max_bytes as u64) {
        return Err(BodyError::TooLarge { limit: max_bytes });
    }
    match tokio::time::timeout_at(deadline, Limited::new(body, max_bytes).collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(err)) => Err(BodyError::classify(&*err, max_bytes)),
        Err(_) => Err(BodyError::TimedOut { after: timeout }),
    }
}

/// The body deadline passed (the error a body read under [`serve_router`] fails with).
#[derive(Debug, thiserror::Error)]
#[error("request body not received within {} ms", .0.as_millis())]
pub(super) struct BodyTimedOut(pub(super) Duration);

/// The server-wide budget for buffered request bodies is spent.
#[derive(Debug, thiserror::Error)]
#[error("the server's budget for buffered request bodies is spent")]
pub(super) struct BudgetSpent;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[test]
    fn body_errors_are_found_through_wrappers() {
        let wrapped = axum::Error::new(BodyTimedOut(Duration::from_secs(3)));
        assert!(matches!(
            BodyError::classify(&wrapped, 10),
            BodyError::TimedOut { after } if after == Duration::from_secs(3)
        ));
        let wrapped = axum::Error::new(BudgetSpent);
        assert!(matches!(BodyError::classify(&wrapped, 10), BodyError::Busy));
        let other = io::Error::other("boom");
        assert!(matches!(BodyError::classify(&other, 10), BodyError::Broken));
        assert_eq!(BodyError::Busy.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            BodyError::Busy
                .into_response()
                .headers()
                .get(RETRY_AFTER)
                .map(HeaderValue::as_bytes),
            Some(&b"1"[..])
        );
    }
}
