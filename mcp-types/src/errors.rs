//! JSON-RPC error objects and the MCP error codes.
//!
//! [`ErrorObject`] can only be built through constructors that produce the spec's
//! exact shapes. The retired codes `-32002` (old resource-not-found) and `-32042`
//! (old URL-elicitation-required) cannot be produced by any constructor: the spec
//! says never to emit them. Received errors (deserialized) keep whatever code
//! they carried, so a client or proxy can still read and forward them.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Value, json};

use crate::capabilities::ClientCapabilities;

/// A JSON-RPC / MCP error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// `-32700`: the message is not valid JSON.
    ParseError,
    /// `-32600`: not a valid JSON-RPC request or notification.
    InvalidRequest,
    /// `-32601`: unknown method, or a method whose capability was not advertised.
    MethodNotFound,
    /// `-32602`: invalid params (including missing/malformed required `_meta`).
    InvalidParams,
    /// `-32603`: unexpected server failure.
    InternalError,
    /// `-32020`: an HTTP header is missing, malformed or disagrees with the body.
    HeaderMismatch,
    /// `-32021`: the request lacks a client capability the server needs.
    MissingRequiredClientCapability,
    /// `-32022`: the requested protocol version is not supported.
    UnsupportedProtocolVersion,
    /// `-32023`: the sender made too many requests; retry after `error.data.retryAfterMs`
    /// (SEP-3304, a proposal: see [`ErrorObject::rate_limited`]).
    RateLimited,
    /// Any other code (application-defined, or received from a peer).
    Other(i64),
}

impl ErrorCode {
    /// The numeric wire value.
    pub const fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::HeaderMismatch => -32020,
            ErrorCode::MissingRequiredClientCapability => -32021,
            ErrorCode::UnsupportedProtocolVersion => -32022,
            ErrorCode::RateLimited => -32023,
            ErrorCode::Other(c) => c,
        }
    }

    /// Maps a numeric code to its typed form (unknown codes become `Other`).
    pub fn from_code(code: i64) -> Self {
        match code {
            -32700 => ErrorCode::ParseError,
            -32600 => ErrorCode::InvalidRequest,
            -32601 => ErrorCode::MethodNotFound,
            -32602 => ErrorCode::InvalidParams,
            -32603 => ErrorCode::InternalError,
            -32020 => ErrorCode::HeaderMismatch,
            -32021 => ErrorCode::MissingRequiredClientCapability,
            -32022 => ErrorCode::UnsupportedProtocolVersion,
            -32023 => ErrorCode::RateLimited,
            other => ErrorCode::Other(other),
        }
    }
}

impl From<ErrorCode> for i64 {
    fn from(c: ErrorCode) -> i64 {
        c.code()
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(self.code())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        i64::deserialize(d).map(ErrorCode::from_code)
    }
}

/// Why [`ErrorObject::application`] refused a code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ErrorCodeError {
    /// The code lies in the range JSON-RPC and MCP reserve (`-32768..=-32000`).
    #[error(
        "error code {0} is reserved by JSON-RPC/MCP (-32768..=-32000); use the typed constructors \
         for spec-defined errors or pick an application code outside that range"
    )]
    Reserved(i64),
}

/// A JSON-RPC error object: `{ code, message, data? }`.
///
/// Fields are private so that every emitted error goes through a constructor that
/// produces the exact spec shape. Use the accessors to read a received error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    code: ErrorCode,
    message: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_util::present"
    )]
    data: Option<Value>,
}

impl ErrorObject {
    fn build(code: ErrorCode, message: String, data: Option<Value>) -> Self {
        ErrorObject {
            code,
            message,
            data,
        }
    }

    /// The error code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The optional `data` member (a present `null` is `Some(Value::Null)`).
    pub fn data(&self) -> Option<&Value> {
        self.data.as_ref()
    }

    /// Returns a copy with `data` replaced. The code is unchanged, so this cannot
    /// create a forbidden code.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32700` with message `"Parse error: {detail}"`.
    pub fn parse_error(detail: impl std::fmt::Display) -> Self {
        Self::build(
            ErrorCode::ParseError,
            format!("Parse error: {detail}"),
            None,
        )
    }

    /// `-32600` with message `"Invalid Request: {detail}"`.
    pub fn invalid_request(detail: impl std::fmt::Display) -> Self {
        Self::build(
            ErrorCode::InvalidRequest,
            format!("Invalid Request: {detail}"),
            None,
        )
    }

    /// `-32601` with message `"Method not found: {method}"`.
    pub fn method_not_found(method: &str) -> Self {
        Self::build(
            ErrorCode::MethodNotFound,
            format!("Method not found: {method}"),
            None,
        )
    }

    /// `-32601` for a method whose capability the server did not advertise, e.g.
    /// `("Prompts not supported", "Server does not support the prompts capability")`
    /// gives `{"code":-32601,"message":"Prompts not supported","data":{"reason":...}}`.
    pub fn capability_not_supported(message: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::build(
            ErrorCode::MethodNotFound,
            message.into(),
            Some(json!({ "reason": reason.into() })),
        )
    }

    /// `-32602` with the given message verbatim.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::build(ErrorCode::InvalidParams, message.into(), None)
    }

    /// `-32602` with message `"Unknown tool: {name}"`.
    pub fn unknown_tool(name: &str) -> Self {
        Self::invalid_params(format!("Unknown tool: {name}"))
    }

    /// `-32603` with the given message verbatim.
    pub fn internal_error(message: impl Into<String>) -> Self {
        Self::build(ErrorCode::InternalError, message.into(), None)
    }

    /// `-32020` with message `"Header mismatch: {detail}"`.
    pub fn header_mismatch(detail: impl std::fmt::Display) -> Self {
        Self::build(
            ErrorCode::HeaderMismatch,
            format!("Header mismatch: {detail}"),
            None,
        )
    }

    /// `-32021` with `data: {"requiredCapabilities": required}`. The message names
    /// the missing top-level capabilities, e.g. "Server requires the elicitation
    /// capability for this request".
    pub fn missing_required_client_capability(required: &ClientCapabilities) -> Self {
        let names = required.top_level_names();
        let message = match names.as_slice() {
            [] => "Server requires additional client capabilities for this request".to_owned(),
            [one] => format!("Server requires the {one} capability for this request"),
            many => format!(
                "Server requires the {} capabilities for this request",
                many.join(", ")
            ),
        };
        let data = MissingRequiredClientCapabilityData {
            required_capabilities: required.clone(),
        };
        // Serializing plain data structs of maps and strings cannot fail.
        let data = serde_json::to_value(data).unwrap_or(Value::Null);
        Self::build(
            ErrorCode::MissingRequiredClientCapability,
            message,
            Some(data),
        )
    }

    /// `-32022` with message `"Unsupported protocol version"` and
    /// `data: {"supported": [...], "requested": "..."}`.
    pub fn unsupported_protocol_version<S: AsRef<str>>(supported: &[S], requested: &str) -> Self {
        let data = json!({
            "supported": supported.iter().map(|s| s.as_ref()).collect::<Vec<_>>(),
            "requested": requested,
        });
        Self::build(
            ErrorCode::UnsupportedProtocolVersion,
            "Unsupported protocol version".to_owned(),
            Some(data),
        )
    }

    /// `-32023` RateLimited (SEP-3304): the sender made too many requests, with message
    /// `"Rate limited: {detail}"` and `data` as [`RateLimitedData`] serialises it, e.g.
    /// `{"retryAfterMs": 30000, "retryAfter": 30, "limit": 10, "window": 60}`.
    ///
    /// SEP-3304 is an open proposal. Its text names the wait `retryAfterMs` (milliseconds,
    /// and a client must prefer it to the HTTP `Retry-After` header); the issue it answers, and
    /// the HTTP header, count whole seconds. So the data carries both, for the same instant:
    /// `retryAfter` is a whole number of seconds, rounded up, at least 1, and `retryAfterMs` is
    /// exactly `retryAfter × 1000`. Over HTTP the response is `429 Too Many Requests` with
    /// `Retry-After: {retryAfter}` (and `RateLimit-Limit: {limit}` when `limit` is present).
    /// The optional quota members describe the caller's own limit only; never put another
    /// sender's quota state here.
    pub fn rate_limited(data: &RateLimitedData, detail: impl std::fmt::Display) -> Self {
        // Serializing a struct of integers cannot fail.
        let data = serde_json::to_value(data).unwrap_or(Value::Null);
        Self::build(
            ErrorCode::RateLimited,
            format!("Rate limited: {detail}"),
            Some(data),
        )
    }

    /// An application-defined error. Refuses every code in the reserved range
    /// `-32768..=-32000` (which includes the forbidden `-32002` and `-32042`).
    pub fn application(
        code: i64,
        message: impl Into<String>,
        data: Option<Value>,
    ) -> Result<Self, ErrorCodeError> {
        if (-32768..=-32000).contains(&code) {
            return Err(ErrorCodeError::Reserved(code));
        }
        Ok(Self::build(ErrorCode::Other(code), message.into(), data))
    }

    /// Reads typed `-32021` data, if this is such an error with well-formed data.
    pub fn missing_capability_data(&self) -> Option<MissingRequiredClientCapabilityData> {
        if self.code != ErrorCode::MissingRequiredClientCapability {
            return None;
        }
        self.data
            .clone()
            .and_then(|d| serde_json::from_value(d).ok())
    }

    /// Reads typed `-32023` data, if this is such an error with well-formed data (at least
    /// one of `retryAfterMs` and `retryAfter`).
    pub fn rate_limited_data(&self) -> Option<RateLimitedData> {
        if self.code != ErrorCode::RateLimited {
            return None;
        }
        self.data
            .clone()
            .and_then(|d| serde_json::from_value::<RateLimitedData>(d).ok())
            .filter(|d| d.retry_after().is_some())
    }

    /// Reads typed `-32022` data, if this is such an error with well-formed data.
    pub fn unsupported_version_data(&self) -> Option<UnsupportedProtocolVersionData> {
        if self.code != ErrorCode::UnsupportedProtocolVersion {
            return None;
        }
        self.data
            .clone()
            .and_then(|d| serde_json::from_value(d).ok())
    }
}

impl std::fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code.code())
    }
}

impl std::error::Error for ErrorObject {}

/// `error.data` of a `-32021` MissingRequiredClientCapability error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissingRequiredClientCapabilityData {
    /// The capabilities the request would have needed to declare.
    #[serde(rename = "requiredCapabilities")]
    pub required_capabilities: ClientCapabilities,
}

/// `error.data` of a `-32022` UnsupportedProtocolVersion error (both fields required).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnsupportedProtocolVersionData {
    /// Versions the server supports.
    pub supported: Vec<String>,
    /// The version the request asked for.
    pub requested: String,
}

/// `error.data` of a `-32023` RateLimited error ([`ErrorObject::rate_limited`]).
///
/// [`RateLimitedData::after_secs`] builds what this crate sends: both wait members, for the
/// same instant. A received error may carry either; [`RateLimitedData::retry_after`] reads
/// `retryAfterMs` first, as SEP-3304 asks of clients.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitedData {
    /// Milliseconds the client should wait before retrying (SEP-3304's member).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// Whole seconds the client should wait before retrying: the value of the HTTP
    /// `Retry-After` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// Requests the caller may make per window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// Requests the caller has left in the current window (SEP-3304; this crate never sends
    /// it: a refused caller has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining: Option<u64>,
    /// The window's length in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
}

impl RateLimitedData {
    /// A wait of `secs` whole seconds (at least 1): `retryAfter` = `secs` and `retryAfterMs` =
    /// `secs × 1000`, no quota members.
    pub fn after_secs(secs: u64) -> Self {
        let secs = secs.max(1);
        Self {
            retry_after_ms: Some(secs.saturating_mul(1000)),
            retry_after: Some(secs),
            limit: None,
            remaining: None,
            window: None,
        }
    }

    /// Adds the caller's own quota: `limit` requests per `window_secs` seconds.
    #[must_use]
    pub fn with_quota(mut self, limit: u64, window_secs: u64) -> Self {
        self.limit = Some(limit);
        self.window = Some(window_secs);
        self
    }

    /// How long to wait: `retryAfterMs` when present, else `retryAfter` seconds.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match (self.retry_after_ms, self.retry_after) {
            (Some(ms), _) => Some(std::time::Duration::from_millis(ms)),
            (None, Some(secs)) => Some(std::time::Duration::from_secs(secs)),
            (None, None) => None,
        }
    }
}
