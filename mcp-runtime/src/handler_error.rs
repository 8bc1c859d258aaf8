//! [`HandlerError`]: how a handler fails, and how the runtime settles a failure into a result.
//!
//! Its own module, below both the tool API and the request context, so that the context (whose
//! elicitation methods raise the input-required signal) and the tool trait (whose `call` takes
//! the context) do not depend on each other in a cycle. Re-exported as
//! [`crate::tool::HandlerError`].

use std::fmt;

use mcp_types::{CallToolResult, ErrorObject};

/// Why a tool did not produce a normal result.
///
/// - [`HandlerError::tool`]: the tool ran and failed; the model gets an `isError: true` result
///   with the message (say what to do differently).
/// - [`HandlerError::invalid_arguments`]: the arguments were wrong; also an `isError: true` result,
///   so the model can correct itself and call again.
/// - [`HandlerError::protocol`]: a JSON-RPC error response instead of a result.
/// - The hidden *input required* signal produced by [`RequestContext`](crate::context::RequestContext)'s elicitation, sampling and
///   roots methods: propagate it with `?` and the runtime answers with an
///   `InputRequiredResult`. It cannot be built outside this crate.
pub struct HandlerError {
    kind: HandlerErrorKind,
}

#[derive(Debug)]
pub(crate) enum HandlerErrorKind {
    Tool(String),
    InvalidArguments(String),
    Protocol(ErrorObject),
    InputRequired,
}

impl HandlerError {
    /// A tool-level failure: becomes an `isError: true` result whose text is `message`.
    pub fn tool(message: impl Into<String>) -> Self {
        Self {
            kind: HandlerErrorKind::Tool(message.into()),
        }
    }

    /// The arguments were invalid: becomes an `isError: true` result; `message` should say
    /// what to fix.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Self {
            kind: HandlerErrorKind::InvalidArguments(message.into()),
        }
    }

    /// A JSON-RPC error response (use the `mcp_types::ErrorObject` constructors).
    pub fn protocol(error: ErrorObject) -> Self {
        Self {
            kind: HandlerErrorKind::Protocol(error),
        }
    }

    /// The hidden signal: the runtime must answer with an `InputRequiredResult`.
    pub(crate) fn input_required() -> Self {
        Self {
            kind: HandlerErrorKind::InputRequired,
        }
    }

    /// Whether this is the runtime's input-required signal (which a handler must propagate,
    /// not handle).
    pub fn is_input_required(&self) -> bool {
        matches!(self.kind, HandlerErrorKind::InputRequired)
    }

    /// The JSON-RPC error, when this is a protocol error.
    pub fn as_protocol(&self) -> Option<&ErrorObject> {
        match &self.kind {
            HandlerErrorKind::Protocol(e) => Some(e),
            _ => None,
        }
    }

    pub(crate) fn into_kind(self) -> HandlerErrorKind {
        self.kind
    }
}

impl fmt::Debug for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.kind, f)
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            HandlerErrorKind::Tool(m) => f.write_str(m),
            HandlerErrorKind::InvalidArguments(m) => write!(f, "invalid arguments: {m}"),
            HandlerErrorKind::Protocol(e) => fmt::Display::fmt(e, f),
            HandlerErrorKind::InputRequired => {
                f.write_str("input required (propagate this with `?`; the runtime answers it)")
            }
        }
    }
}

impl std::error::Error for HandlerError {}

impl From<ErrorObject> for HandlerError {
    fn from(e: ErrorObject) -> Self {
        Self::protocol(e)
    }
}

#[cfg(feature = "scope")]
impl From<crate::scope::ScopeError> for HandlerError {
    fn from(e: crate::scope::ScopeError) -> Self {
        Self::tool(e.to_string())
    }
}

#[cfg(feature = "scope")]
impl From<crate::scope::FsError> for HandlerError {
    fn from(e: crate::scope::FsError) -> Self {
        Self::tool(e.to_string())
    }
}

impl From<crate::form::FormError> for HandlerError {
    fn from(e: crate::form::FormError) -> Self {
        Self::invalid_arguments(e.to_string())
    }
}

/// What a tool function usually returns: `T` (anything [`IntoCallToolResult`](crate::tool::IntoCallToolResult)) or a
/// [`HandlerError`].
pub type ToolResult<T> = Result<T, HandlerError>;

/// Turns a tool's result into the `CallToolResult` to send, mapping tool-level errors to
/// `isError: true` results. Protocol errors and the input-required signal pass through.
pub(crate) fn settle(
    result: Result<CallToolResult, HandlerError>,
) -> Result<CallToolResult, HandlerError> {
    match result {
        Ok(r) => Ok(r),
        Err(e) => match e.kind {
            HandlerErrorKind::Tool(m) => Ok(CallToolResult::error(m)),
            HandlerErrorKind::InvalidArguments(m) => {
                Ok(CallToolResult::error(format!("Invalid arguments: {m}")))
            }
            kind => Err(HandlerError { kind }),
        },
    }
}
