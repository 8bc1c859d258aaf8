//! The JSON-RPC 2.0 envelope and a classifier for incoming messages.
//!
//! [`classify`] and [`parse_message`] turn any JSON value (or raw bytes) into a
//! [`JsonRpcMessage`] or a ready-to-send [`JsonRpcErrorResponse`] (`-32700` or
//! `-32600`). When the message's `id` was readable it is echoed; otherwise the
//! error response has no `id` member at all (never `"id": null`).
//! [`classify_client_message`] additionally rejects what a client must never send
//! to a server (a response). All of them rest on [`classify_envelope`], which judges a parsed
//! message in place: the one set of envelope rules every reader uses.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::JsonObject;
use crate::errors::ErrorObject;

const_str!(
    /// The `"jsonrpc": "2.0"` member.
    JsonRpcVersion = "2.0"
);

/// A request id: a string or an integer, never `null`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl RequestId {
    /// Reads an id from a JSON value: a string or an integer that fits `i64`.
    pub fn from_value(v: &Value) -> Option<RequestId> {
        match v {
            Value::String(s) => Some(RequestId::String(s.clone())),
            Value::Number(n) => n.as_i64().map(RequestId::Number),
            _ => None,
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(s)
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// Serializes `value` into a JSON object, for typed params/results.
fn to_object<T: Serialize>(value: &T) -> Result<JsonObject, serde_json::Error> {
    match serde_json::to_value(value)? {
        Value::Object(o) => Ok(o),
        other => Err(serde_json::Error::custom(format!(
            "expected a value serializing to a JSON object, got {}",
            kind(&other)
        ))),
    }
}

/// A JSON-RPC request: `{jsonrpc, id, method, params?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcRequest {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The request id.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The params object (every concrete MCP request has one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<JsonObject>,
}

impl JsonRpcRequest {
    /// Builds a request from typed params (e.g. `CallToolRequestParams`).
    pub fn new<P: Serialize>(
        id: impl Into<RequestId>,
        method: impl Into<String>,
        params: &P,
    ) -> Result<Self, serde_json::Error> {
        Ok(JsonRpcRequest {
            jsonrpc: JsonRpcVersion,
            id: id.into(),
            method: method.into(),
            params: Some(to_object(params)?),
        })
    }

    /// Decodes `params` into a typed params struct (absent params decode as `{}`).
    pub fn params_as<P: DeserializeOwned>(&self) -> Result<P, serde_json::Error> {
        serde_json::from_value(Value::Object(self.params.clone().unwrap_or_default()))
    }
}

/// A JSON-RPC notification: `{jsonrpc, method, params?}` (no `id`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcNotification {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The notification method.
    pub method: String,
    /// The params object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<JsonObject>,
}

impl JsonRpcNotification {
    /// Builds a notification from typed params (e.g. `ProgressNotificationParams`).
    pub fn new<P: Serialize>(
        method: impl Into<String>,
        params: &P,
    ) -> Result<Self, serde_json::Error> {
        Ok(JsonRpcNotification {
            jsonrpc: JsonRpcVersion,
            method: method.into(),
            params: Some(to_object(params)?),
        })
    }

    /// Decodes `params` into a typed struct (absent params decode as `{}`).
    pub fn params_as<P: DeserializeOwned>(&self) -> Result<P, serde_json::Error> {
        serde_json::from_value(Value::Object(self.params.clone().unwrap_or_default()))
    }
}

/// A successful JSON-RPC response: `{jsonrpc, id, result}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcResponse {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result object (carries `resultType`).
    pub result: JsonObject,
}

impl JsonRpcResponse {
    /// Builds a response from a typed result (e.g. `CallToolResult`).
    pub fn new<R: Serialize>(id: RequestId, result: &R) -> Result<Self, serde_json::Error> {
        Ok(JsonRpcResponse {
            jsonrpc: JsonRpcVersion,
            id,
            result: to_object(result)?,
        })
    }

    /// Decodes `result` into a typed result struct.
    pub fn result_as<R: DeserializeOwned>(&self) -> Result<R, serde_json::Error> {
        serde_json::from_value(Value::Object(self.result.clone()))
    }
}

/// A JSON-RPC error response: `{jsonrpc, id?, error}`. `id` is omitted (not
/// `null`) when the request's id could not be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcErrorResponse {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request this answers, if it was readable.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null_id"
    )]
    pub id: Option<RequestId>,
    /// The error.
    pub error: ErrorObject,
}

/// `id` on an error response may be absent but never `null`.
fn non_null_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<RequestId>, D::Error> {
    RequestId::deserialize(d).map(Some)
}

impl JsonRpcErrorResponse {
    /// An error response for the given (possibly unknown) id.
    pub fn new(id: Option<RequestId>, error: ErrorObject) -> Self {
        JsonRpcErrorResponse {
            jsonrpc: JsonRpcVersion,
            id,
            error,
        }
    }
}

/// Any JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum JsonRpcMessage {
    /// A request (has `id` and `method`).
    Request(JsonRpcRequest),
    /// A notification (has `method`, no `id`).
    Notification(JsonRpcNotification),
    /// A success response (has `result`).
    Response(JsonRpcResponse),
    /// An error response (has `error`).
    ErrorResponse(JsonRpcErrorResponse),
}

impl<'de> Deserialize<'de> for JsonRpcMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        classify(&v).map_err(|e| D::Error::custom(e.error.message()))
    }
}

/// A message a client may send to a server: a request or a notification.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ClientMessage {
    /// A request.
    Request(JsonRpcRequest),
    /// A notification.
    Notification(JsonRpcNotification),
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses raw bytes (one message) into a [`JsonRpcMessage`]; invalid JSON or UTF-8
/// gives a `-32700` error response without `id`.
pub fn parse_message(bytes: &[u8]) -> Result<JsonRpcMessage, JsonRpcErrorResponse> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        JsonRpcErrorResponse::new(
            None,
            ErrorObject::parse_error(format!("Invalid JSON ({e})")),
        )
    })?;
    classify(&value)
}

/// Like [`parse_message`], but only accepts what a client may send to a server.
pub fn parse_client_message(bytes: &[u8]) -> Result<ClientMessage, JsonRpcErrorResponse> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        JsonRpcErrorResponse::new(
            None,
            ErrorObject::parse_error(format!("Invalid JSON ({e})")),
        )
    })?;
    classify_client_message(&value)
}

/// Classifies a message received by a server: requests and notifications pass;
/// responses are refused with `-32600` (clients must not send responses).
pub fn classify_client_message(value: &Value) -> Result<ClientMessage, JsonRpcErrorResponse> {
    match classify(value)? {
        JsonRpcMessage::Request(r) => Ok(ClientMessage::Request(r)),
        JsonRpcMessage::Notification(n) => Ok(ClientMessage::Notification(n)),
        JsonRpcMessage::Response(r) => Err(JsonRpcErrorResponse::new(
            Some(r.id),
            ErrorObject::invalid_request("clients must not send JSON-RPC responses to a server"),
        )),
        JsonRpcMessage::ErrorResponse(r) => Err(JsonRpcErrorResponse::new(
            r.id,
            ErrorObject::invalid_request("clients must not send JSON-RPC responses to a server"),
        )),
    }
}

/// What one JSON-RPC message is, read in place from its parsed tree: the one classification
/// of incoming messages that the owned [`classify`] and every transport and dispatcher of the
/// runtime build on, so a message is judged by the same rules whichever way it arrives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Envelope<'a> {
    /// A request: a string or integer `id`, a string `method`, `params` absent or an object.
    Request {
        /// The `id` member (a legal [`RequestId`]).
        id: &'a Value,
        /// The `method` member.
        method: &'a str,
        /// The `params` member, when present.
        params: Option<&'a JsonObject>,
    },
    /// A notification: no `id`, a string `method`, `params` absent or an object.
    Notification {
        /// The `method` member.
        method: &'a str,
        /// The `params` member, when present.
        params: Option<&'a JsonObject>,
    },
    /// A response: `result` (an object, with an `id`) or `error` (an error object).
    Response {
        /// The `id` member, when it is a legal [`RequestId`].
        id: Option<&'a Value>,
    },
}

/// Why a JSON value is not a JSON-RPC message: the `-32600` to answer, with the `id` to echo
/// when one was readable.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvelopeError<'a> {
    /// The message's `id`, when it is a legal [`RequestId`] (echoed in the error response).
    pub id: Option<&'a Value>,
    /// What is wrong, for the error message ("Invalid Request: " is prefixed by
    /// [`EnvelopeError::to_response`]).
    pub detail: String,
}

impl EnvelopeError<'_> {
    /// The `-32600` error response to send back.
    pub fn to_response(&self) -> JsonRpcErrorResponse {
        JsonRpcErrorResponse::new(
            self.id.and_then(RequestId::from_value),
            ErrorObject::invalid_request(&self.detail),
        )
    }
}

/// Whether `id` is a legal request id: a string, or an integer that fits `i64`.
pub fn is_request_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.as_i64().is_some(),
        _ => false,
    }
}

/// The members a classification looks at, read in one pass over the object (messages are
/// small: a scan beats five hash look-ups).
#[derive(Default)]
struct Members<'a> {
    jsonrpc: Option<&'a Value>,
    id: Option<&'a Value>,
    method: Option<&'a Value>,
    params: Option<&'a Value>,
    result: Option<&'a Value>,
    error: Option<&'a Value>,
}

/// Classifies a parsed JSON value as one JSON-RPC message, in place, or says why it is none.
///
/// The rules, in order: an object (not a batch array); `"jsonrpc": "2.0"`; an `id`, when
/// present, a string or an integer (never `null`); then either a string `method` (without
/// `result`/`error`, `params` absent or an object), or exactly one of `result` (an object,
/// with an `id`) and `error` (`{code, message, data?}`).
pub fn classify_envelope(value: &Value) -> Result<Envelope<'_>, EnvelopeError<'_>> {
    let obj = match value {
        Value::Object(o) => o,
        Value::Array(_) => {
            return Err(EnvelopeError {
                id: None,
                detail: "batch arrays are not supported; send a single JSON-RPC message object"
                    .to_owned(),
            });
        }
        other => {
            return Err(EnvelopeError {
                id: None,
                detail: format!(
                    "a JSON-RPC message must be a JSON object, got {}",
                    kind(other)
                ),
            });
        }
    };
    let mut m = Members::default();
    for (key, member) in obj {
        let slot = match key.as_str() {
            "jsonrpc" => &mut m.jsonrpc,
            "id" => &mut m.id,
            "method" => &mut m.method,
            "params" => &mut m.params,
            "result" => &mut m.result,
            "error" => &mut m.error,
            _ => continue,
        };
        *slot = Some(member);
    }
    // The id decides whether the error can be correlated, so read it first.
    let (id, id_problem) = match m.id {
        None => (None, None),
        Some(Value::Null) => (
            None,
            Some("id must be a string or an integer, not null".to_owned()),
        ),
        Some(v) if is_request_id(v) => (Some(v), None),
        Some(v) => (
            None,
            Some(format!(
                "id must be a string or an integer, got {}",
                describe_bad_id(v)
            )),
        ),
    };
    let fail = |detail: String| Err(EnvelopeError { id, detail });
    match m.jsonrpc {
        None => return fail("missing \"jsonrpc\": \"2.0\"".to_owned()),
        Some(Value::String(s)) if s == "2.0" => {}
        Some(other) => return fail(format!("\"jsonrpc\" must be \"2.0\", got {other}")),
    }
    if let Some(problem) = id_problem {
        return fail(problem);
    }
    if let Some(method) = m.method {
        let Value::String(method) = method else {
            return fail(format!("\"method\" must be a string, got {}", kind(method)));
        };
        if m.result.is_some() || m.error.is_some() {
            return fail(
                "a message cannot carry both \"method\" and \"result\"/\"error\"".to_owned(),
            );
        }
        let params = match m.params {
            None => None,
            Some(Value::Object(p)) => Some(p),
            Some(other) => {
                return fail(format!("\"params\" must be an object, got {}", kind(other)));
            }
        };
        return Ok(match id {
            Some(id) => Envelope::Request { id, method, params },
            None => Envelope::Notification { method, params },
        });
    }
    match (m.result, m.error) {
        (Some(_), Some(_)) => {
            fail("a response cannot carry both \"result\" and \"error\"".to_owned())
        }
        (Some(result), None) => {
            if id.is_none() {
                return fail("a result response must carry the request's id".to_owned());
            }
            match result {
                Value::Object(_) => Ok(Envelope::Response { id }),
                other => fail(format!("\"result\" must be an object, got {}", kind(other))),
            }
        }
        (None, Some(error)) => match ErrorObject::deserialize(error) {
            Ok(_) => Ok(Envelope::Response { id }),
            Err(e) => fail(format!(
                "\"error\" must be {{code: integer, message: string, data?}} ({e})"
            )),
        },
        (None, None) => {
            fail("missing \"method\" (or \"result\"/\"error\" for a response)".to_owned())
        }
    }
}

/// Classifies any JSON value as one JSON-RPC message, or returns the exact error
/// response to send back (`-32600`, echoing the id when it was readable). The rules are
/// [`classify_envelope`]'s; this builds the owned, typed message.
pub fn classify(value: &Value) -> Result<JsonRpcMessage, JsonRpcErrorResponse> {
    let envelope = classify_envelope(value).map_err(|e| e.to_response())?;
    let id = |v: Option<&Value>| v.and_then(RequestId::from_value);
    Ok(match envelope {
        Envelope::Request {
            id: rid,
            method,
            params,
        } => JsonRpcMessage::Request(JsonRpcRequest {
            jsonrpc: JsonRpcVersion,
            id: id(Some(rid)).ok_or_else(|| internal_mismatch(value))?,
            method: method.to_owned(),
            params: params.cloned(),
        }),
        Envelope::Notification { method, params } => {
            JsonRpcMessage::Notification(JsonRpcNotification {
                jsonrpc: JsonRpcVersion,
                method: method.to_owned(),
                params: params.cloned(),
            })
        }
        Envelope::Response { id: rid } => match (value.get("result"), value.get("error")) {
            (Some(Value::Object(result)), _) => JsonRpcMessage::Response(JsonRpcResponse {
                jsonrpc: JsonRpcVersion,
                id: id(rid).ok_or_else(|| internal_mismatch(value))?,
                result: result.clone(),
            }),
            (_, Some(error)) => {
                let error =
                    ErrorObject::deserialize(error).map_err(|_| internal_mismatch(value))?;
                JsonRpcMessage::ErrorResponse(JsonRpcErrorResponse::new(id(rid), error))
            }
            _ => return Err(internal_mismatch(value)),
        },
    })
}

/// Unreachable: [`classify_envelope`] vouched for the parts [`classify`] reads. A `-32600`
/// rather than a panic, should the two ever disagree.
fn internal_mismatch(value: &Value) -> JsonRpcErrorResponse {
    JsonRpcErrorResponse::new(
        value.get("id").and_then(RequestId::from_value),
        ErrorObject::invalid_request("malformed JSON-RPC message"),
    )
}

fn describe_bad_id(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => format!("the non-integer number {n}"),
        Value::Number(n) => format!("the out-of-range integer {n}"),
        other => kind(other).to_owned(),
    }
}
