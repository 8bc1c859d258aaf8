//! [`Reply`]: the service's answer to one request.

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
}

impl Reply {
    /// A successful (`result`) response.
    pub fn result(body: Bytes) -> Self {
        Self {
            body,
            kind: ReplyKind::Result,
            input_required: false,
        }
    }

    /// An `error` response with the given JSON-RPC error code.
    pub fn error(code: ErrorCode, body: Bytes) -> Self {
        Self {
            body,
            kind: ReplyKind::Error { code },
            input_required: false,
        }
    }

    /// A `-32602` error caused by missing or malformed required `params._meta` fields, which
    /// the spec maps to HTTP 400 (unlike other `-32602` errors).
    pub fn malformed_meta(body: Bytes) -> Self {
        Self {
            body,
            kind: ReplyKind::MalformedMeta,
            input_required: false,
        }
    }

    /// The HTTP status this reply gets when sent as a plain JSON response.
    pub fn http_status(&self) -> StatusCode {
        self.kind.http_status()
    }
}

/// What a [`Reply`] carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

impl ReplyKind {
    /// The HTTP status for this kind (spec §Streamable HTTP): 404 for `-32601`; 400 for
    /// `-32020`/`-32021`/`-32022`, malformed `_meta`, and the envelope errors `-32700`/`-32600`;
    /// 200 for everything else, including other `-32602`s and `-32603`, because dual-era
    /// clients read a 400 with an unrecognised body as a legacy server.
    pub fn http_status(self) -> StatusCode {
        match self {
            Self::Result => StatusCode::OK,
            Self::MalformedMeta => StatusCode::BAD_REQUEST,
            Self::Error { code } => match code {
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
