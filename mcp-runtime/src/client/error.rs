//! [`ClientError`]: everything a client call can fail with, the server's JSON-RPC errors typed
//! by code with their `data`.

use std::time::Duration;

use mcp_types::{
    ClientCapabilities, ErrorCode, ErrorObject, MissingRequiredClientCapabilityData,
    RateLimitedData, UnsupportedProtocolVersionData,
};

/// Why a client call failed.
///
/// The server's protocol errors keep the received [`ErrorObject`] (code, message, `data`), and
/// the codes a caller is expected to react to get their own variant with the typed `data`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// `-32020`: the server found an HTTP header missing, malformed or differing from the body.
    #[error("the server rejected the request headers: {0}")]
    HeaderMismatch(Box<ErrorObject>),
    /// `-32021`: the server needs a client capability this request did not declare; declare it
    /// (and handle its input requests) or do without the feature.
    #[error("the server requires client capabilities this request did not declare: {error}")]
    MissingCapability {
        /// The error as received.
        error: Box<ErrorObject>,
        /// `data.requiredCapabilities`, when the server sent it well-formed.
        required: Option<Box<ClientCapabilities>>,
    },
    /// `-32022`: the server does not speak the requested protocol version; pick one of
    /// `data.supported`.
    #[error("the server does not support this protocol version: {error}")]
    UnsupportedVersion {
        /// The error as received.
        error: Box<ErrorObject>,
        /// `data` (`supported`, `requested`), when the server sent it well-formed.
        data: Option<Box<UnsupportedProtocolVersionData>>,
    },
    /// `-32023`: the server refused the request under its rate limit; wait
    /// [`RateLimitedData::retry_after`] (with some jitter) before sending it again.
    #[error("the server is rate limiting this client: {error}")]
    RateLimited {
        /// The error as received.
        error: Box<ErrorObject>,
        /// `data` (`retryAfterMs`, `retryAfter`, quota), when the server sent it well-formed.
        data: Option<Box<RateLimitedData>>,
    },
    /// `-32602`: invalid params (unknown tool, bad arguments, malformed `_meta` or answers).
    #[error("the server rejected the params: {0}")]
    InvalidParams(Box<ErrorObject>),
    /// `-32601`: the server does not offer this method (or its capability).
    #[error("the server does not offer this method: {0}")]
    MethodNotFound(Box<ErrorObject>),
    /// Any other JSON-RPC error response.
    #[error("the server answered with an error: {0}")]
    Rpc(Box<ErrorObject>),
    /// The transport failed (process gone, connection refused, HTTP status without a JSON-RPC
    /// body, ...).
    #[error("transport failure: {0}")]
    Transport(String),
    /// No response within the client's deadline (see [`super::ClientBuilder::timeout`]); the
    /// request was cancelled on the server before this was returned.
    #[error(
        "no response to {method} within {after:?}; raise ClientBuilder::timeout if the server is slow"
    )]
    Timeout {
        /// The method that timed out.
        method: String,
        /// The deadline that passed.
        after: Duration,
    },
    /// The server's answer is not a valid response for the request.
    #[error("invalid response to {method}: {detail}")]
    Protocol {
        /// The method whose response was invalid.
        method: String,
        /// What was wrong.
        detail: String,
    },
    /// A request could not be built (arguments that do not serialize to a JSON object, ...).
    #[error("cannot build the request: {0}")]
    Request(String),
    /// Automatic mode: the server kept asking for input past the round limit.
    #[error(
        "the server still asked for input after {rounds} rounds; raise ClientBuilder::max_rounds or answer step by step"
    )]
    TooManyRounds {
        /// The limit that was reached.
        rounds: usize,
    },
    /// Automatic mode: an input request has no handler on this client.
    #[error(
        "the server asked for {method} under {key:?} and this client has no handler for it; register one on the ClientBuilder or use the step-by-step call"
    )]
    NoHandler {
        /// The input request's key.
        key: String,
        /// Its method (`elicitation/create` form or URL, `sampling/createMessage`, `roots/list`).
        method: String,
    },
    /// A task ([`super::ToolTask::wait`]) was still running, or waiting for input, when the
    /// wait's deadline passed. The task goes on: wait again with a longer deadline, or cancel
    /// it with [`super::ToolTask::cancel`].
    #[error(
        "task `{task_id}` is still {status} after {after:?}; wait again with a longer deadline, or cancel it (ToolTask::cancel)",
        status = status.as_str()
    )]
    TaskDeadline {
        /// The task.
        task_id: String,
        /// Its status when the deadline passed.
        status: mcp_types::TaskStatus,
        /// The deadline that passed.
        after: Duration,
    },
    /// A task ended with a protocol error (`failed`); `error` is the server's error, the same
    /// a plain call would have got. A tool's own failure is not this: it completes with
    /// `isError: true`.
    #[error("task `{task_id}` failed: {error}")]
    TaskFailed {
        /// The task.
        task_id: String,
        /// The server's error.
        error: Box<ErrorObject>,
    },
    /// A task was cancelled (by `tasks/cancel`, from this client or another holding its id)
    /// before it finished; its result is gone. Call the tool again to run it again.
    #[error("task `{task_id}` was cancelled before it finished; call the tool again to run it")]
    TaskCancelled {
        /// The task.
        task_id: String,
    },
    /// The server requires authorization and the OAuth client could not obtain an acceptable
    /// token (feature `client-oauth`).
    #[cfg(feature = "client-oauth")]
    #[error(transparent)]
    Authorization(Box<super::oauth::AuthError>),
    /// Step-by-step mode: a pending round was read or answered in a way that does not fit it
    /// (unknown key, a form read as a URL, a complete result expected while input is pending...).
    #[error("{0}")]
    Round(String),
}

#[cfg(feature = "client-oauth")]
impl From<super::oauth::AuthError> for ClientError {
    fn from(error: super::oauth::AuthError) -> Self {
        ClientError::Authorization(Box::new(error))
    }
}

impl ClientError {
    /// Sorts a received JSON-RPC error into its typed variant.
    pub fn from_error(error: ErrorObject) -> Self {
        let error = Box::new(error);
        match error.code() {
            ErrorCode::HeaderMismatch => ClientError::HeaderMismatch(error),
            ErrorCode::MissingRequiredClientCapability => {
                let required = error.missing_capability_data().map(
                    |d: MissingRequiredClientCapabilityData| Box::new(d.required_capabilities),
                );
                ClientError::MissingCapability { error, required }
            }
            ErrorCode::UnsupportedProtocolVersion => {
                let data = error.unsupported_version_data().map(Box::new);
                ClientError::UnsupportedVersion { error, data }
            }
            ErrorCode::RateLimited => {
                let data = error.rate_limited_data().map(Box::new);
                ClientError::RateLimited { error, data }
            }
            ErrorCode::InvalidParams => ClientError::InvalidParams(error),
            ErrorCode::MethodNotFound => ClientError::MethodNotFound(error),
            _ => ClientError::Rpc(error),
        }
    }

    /// The server's error object, when the failure is a JSON-RPC error response.
    pub fn error_object(&self) -> Option<&ErrorObject> {
        match self {
            ClientError::HeaderMismatch(e)
            | ClientError::InvalidParams(e)
            | ClientError::MethodNotFound(e)
            | ClientError::Rpc(e)
            | ClientError::MissingCapability { error: e, .. }
            | ClientError::UnsupportedVersion { error: e, .. }
            | ClientError::RateLimited { error: e, .. }
            | ClientError::TaskFailed { error: e, .. } => Some(&**e),
            _ => None,
        }
    }

    /// The JSON-RPC error code, when the failure is a JSON-RPC error response.
    pub fn code(&self) -> Option<ErrorCode> {
        self.error_object().map(ErrorObject::code)
    }
}
