//! [`Reply`]: the service's answer to one request.
//!
//! Besides the body, a reply says what kind it is ([`ReplyKind`]), so a transport can choose
//! its framing without parsing the body again. Two kinds carry more than a status: a request
//! the grant may not make ([`Reply::forbidden`], HTTP 403 with a scope challenge), and a
//! request refused under a rate limit ([`Reply::rate_limited`]): the `-32023` RateLimited
//! error of SEP-3304, which Streamable HTTP (and the 2025-11-25 adapter's HTTP half) sends as
//! **429 Too Many Requests** with `Retry-After: N` (delta-seconds, the same `N` as the body's
//! `error.data.retryAfter`) and `RateLimit-Limit` when the limit is known. stdio sends the
//! JSON-RPC error alone. See [`crate::rate_limit`] for when the core refuses.

use std::sync::Arc;

use bytes::Bytes;
use http::StatusCode;
use mcp_types::ErrorCode;

/// The service's answer to one request: a serialized JSON-RPC response plus what kind it is, so
/// the HTTP transport can pick the status code without parsing the body again.
#[derive(Debug, Clone)]
pub struct Reply {
    /// One serialized JSON-RPC response (result or error), without a trailing newline.
    pub body: Bytes,
    /// Result or error, and which error.
    pub kind: ReplyKind,
    /// The result is an `InputRequiredResult` (for the request span and metrics).
    pub(crate) input_required: bool,
    /// With [`ReplyKind::Forbidden`]: the scopes that would have allowed the request
    /// (space-separated), for the transport's step-up challenge; `None` when no scope would.
    step_up: Option<Arc<str>>,
}

impl Reply {
    /// A successful (`result`) response.
    pub fn result(body: Bytes) -> Self {
        Self {
            body,
            kind: ReplyKind::Result,
            input_required: false,
            step_up: None,
        }
    }

    /// An `error` response with the given JSON-RPC error code.
    pub fn error(code: ErrorCode, body: Bytes) -> Self {
        Self {
            body,
            kind: ReplyKind::Error { code },
            input_required: false,
            step_up: None,
        }
    }

    /// A `-32602` error caused by missing or malformed required `params._meta` fields, which
    /// the spec maps to HTTP 400 (unlike other `-32602` errors).
    pub fn malformed_meta(body: Bytes) -> Self {
        Self {
            body,
            kind: ReplyKind::MalformedMeta,
            input_required: false,
            step_up: None,
        }
    }

    /// A `-32600` refusal because the request's [`Grant`](super::Grant) may not make it: its
    /// credentials lack a required scope (`step_up` names every scope the request needs, so
    /// the client can obtain them), or the target declares none and scoped credentials are
    /// refused for it (`step_up` is `None`). HTTP answers 403 with a `WWW-Authenticate`
    /// challenge (`insufficient_scope`); other transports send the body as it is.
    pub fn forbidden(body: Bytes, step_up: Option<&str>) -> Self {
        Self {
            body,
            kind: ReplyKind::Forbidden,
            input_required: false,
            step_up: step_up.map(Arc::from),
        }
    }

    /// A `-32023` RateLimited error (`body` built with
    /// [`ErrorObject::rate_limited`](mcp_types::ErrorObject::rate_limited)): retry after
    /// `retry_after_secs` whole seconds (at least 1, the body's `error.data.retryAfter`);
    /// `limit` is the caller's own limit per window, when the body carries it. HTTP answers
    /// 429 with `Retry-After: {retry_after_secs}` (and `RateLimit-Limit: {limit}`); other
    /// transports send the body as it is.
    pub fn rate_limited(body: Bytes, retry_after_secs: u32, limit: Option<u32>) -> Self {
        Self {
            body,
            kind: ReplyKind::RateLimited {
                retry_after_secs: retry_after_secs.max(1),
                limit,
            },
            input_required: false,
            step_up: None,
        }
    }

    /// With [`ReplyKind::RateLimited`]: the whole seconds to wait before a retry (the HTTP
    /// `Retry-After` value).
    pub fn retry_after_secs(&self) -> Option<u32> {
        match self.kind {
            ReplyKind::RateLimited {
                retry_after_secs, ..
            } => Some(retry_after_secs),
            _ => None,
        }
    }

    /// With [`ReplyKind::Forbidden`]: the scopes a new token needs (space-separated), when a
    /// step-up would help.
    pub fn step_up_scope(&self) -> Option<&str> {
        self.step_up.as_deref()
    }

    /// The HTTP status this reply gets when sent as a plain JSON response.
    pub fn http_status(&self) -> StatusCode {
        self.kind.http_status()
    }
}

/// What a [`Reply`] carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplyKind {
    /// A `result` response.
    Result,
    /// An `error` response with this JSON-RPC error code.
    Error {
        /// The JSON-RPC error code (`error.code`).
        code: ErrorCode,
    },
    /// A `-32602` error because required `params._meta` fields are missing or malformed.
    MalformedMeta,
    /// A `-32600` error because the request's grant may not make the request (see
    /// [`Reply::forbidden`]).
    Forbidden,
    /// A `-32023` RateLimited error (see [`Reply::rate_limited`]).
    RateLimited {
        /// Whole seconds to wait before a retry, at least 1.
        retry_after_secs: u32,
        /// The caller's limit per window, when known.
        limit: Option<u32>,
    },
}

impl ReplyKind {
    /// The HTTP status for this kind (spec §Streamable HTTP): 404 for `-32601`; 400 for
    /// `-32020`/`-32021`/`-32022`, malformed `_meta`, and the envelope errors `-32700`/`-32600`;
    /// 403 for a request the grant may not make; 429 for a request refused under a rate limit
    /// ([`ReplyKind::RateLimited`], and a bare `-32023` error too);
    /// 200 for everything else, including other `-32602`s and `-32603`, because dual-era
    /// clients read a 400 with an unrecognised body as a legacy server.
    pub fn http_status(self) -> StatusCode {
        match self {
            Self::Result => StatusCode::OK,
            Self::MalformedMeta => StatusCode::BAD_REQUEST,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Error { code } => match code {
                ErrorCode::RateLimited => StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::MethodNotFound => StatusCode::NOT_FOUND,
                ErrorCode::HeaderMismatch
                | ErrorCode::MissingRequiredClientCapability
                | ErrorCode::UnsupportedProtocolVersion
                | ErrorCode::ParseError
                | ErrorCode::InvalidRequest => StatusCode::BAD_REQUEST,
                ErrorCode::InvalidParams | ErrorCode::InternalError | ErrorCode::Other(_) => {
                    StatusCode::OK
                }
            },
        }
    }
}
