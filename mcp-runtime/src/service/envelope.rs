//! The little JSON-RPC knowledge transports need: classifying a parsed message and building the
//! error responses a transport sends on its own (before or instead of the service).
//!
//! Codes come only from [`mcp_types::ErrorCode`]; this module adds no numbers of its own.

use bytes::Bytes;
use mcp_types::ErrorCode;
use serde_json::{Map, Value};

use mcp_types::Envelope;

/// What a parsed message is, as far as a transport cares (by the rules of
/// [`mcp_types::classify_envelope`], the one classification every reader uses).
#[derive(Debug)]
pub(crate) enum Kind<'a> {
    /// A request: has a string or integer `id`.
    Request { id: &'a Value, method: &'a str },
    /// A notification: no `id` member.
    Notification { method: &'a str },
    /// Anything else (batch, response, `id: null`, missing `method`, wrong `jsonrpc`...).
    /// `id` is set when a usable id could be read, so the error can echo it.
    Invalid {
        id: Option<&'a Value>,
        reason: String,
    },
}

/// Whether `id` is a legal JSON-RPC request id in this revision (string or integer, not null).
pub(crate) fn is_valid_id(id: &Value) -> bool {
    mcp_types::is_request_id(id)
}

/// Classifies a parsed message a client sent: a response is refused like any other
/// non-request, since a 2026-07-28 server sends no requests to answer.
pub(crate) fn classify(value: &Value) -> Kind<'_> {
    match mcp_types::classify_envelope(value) {
        Ok(Envelope::Request { id, method, .. }) => Kind::Request { id, method },
        Ok(Envelope::Notification { method, .. }) => Kind::Notification { method },
        Ok(Envelope::Response { id }) => Kind::Invalid {
            id,
            reason: "clients must not send JSON-RPC responses to the server".to_owned(),
        },
        Err(e) => Kind::Invalid {
            id: e.id,
            reason: e.detail,
        },
    }
}

/// The `-32600` response to a message that is JSON but not a JSON-RPC message (`reason` says
/// what is wrong with it), the same on every transport.
pub(crate) fn invalid_request_body(id: Option<&Value>, reason: &str) -> Bytes {
    error_body(
        id,
        ErrorCode::InvalidRequest,
        &format!("Invalid Request: {reason}"),
    )
}

/// Builds one serialized JSON-RPC error response. The `id` member is omitted when `id` is `None`
/// or not a legal id, because this revision's schema does not allow `"id": null`.
pub(crate) fn error_body(id: Option<&Value>, code: ErrorCode, message: &str) -> Bytes {
    let mut error = Map::with_capacity(2);
    error.insert("code".into(), Value::from(code.code()));
    error.insert("message".into(), Value::from(message));
    let mut envelope = Map::with_capacity(3);
    envelope.insert("jsonrpc".into(), Value::from("2.0"));
    if let Some(id) = id.filter(|id| is_valid_id(id)) {
        envelope.insert("id".into(), id.clone());
    }
    envelope.insert("error".into(), Value::Object(error));
    Bytes::from(serde_json::to_vec(&Value::Object(envelope)).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn classifies_requests_notifications_and_garbage() {
        let req = json!({"jsonrpc":"2.0","id":7,"method":"tools/list"});
        assert!(matches!(
            classify(&req),
            Kind::Request {
                method: "tools/list",
                ..
            }
        ));
        let note = json!({"jsonrpc":"2.0","method":"notifications/cancelled"});
        assert!(matches!(classify(&note), Kind::Notification { .. }));
        let null_id = json!({"jsonrpc":"2.0","id":null,"method":"x"});
        assert!(matches!(classify(&null_id), Kind::Invalid { id: None, .. }));
        let float_id = json!({"jsonrpc":"2.0","id":1.5,"method":"x"});
        assert!(matches!(
            classify(&float_id),
            Kind::Invalid { id: None, .. }
        ));
        let response = json!({"jsonrpc":"2.0","id":"a","result":{}});
        assert!(matches!(
            classify(&response),
            Kind::Invalid { id: Some(_), .. }
        ));
        let old = json!({"jsonrpc":"1.0","id":1,"method":"x"});
        assert!(matches!(classify(&old), Kind::Invalid { id: Some(_), .. }));
        assert!(matches!(
            classify(&json!([req])),
            Kind::Invalid { id: None, .. }
        ));
    }

    #[test]
    fn error_body_omits_unusable_ids() {
        let body = error_body(None, ErrorCode::ParseError, "Parse error");
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            v,
            json!({"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}})
        );
        let body = error_body(Some(&Value::Null), ErrorCode::InvalidRequest, "x");
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert!(v.get("id").is_none());
        let body = error_body(Some(&json!("r-1")), ErrorCode::HeaderMismatch, "x");
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["id"], "r-1");
        assert_eq!(v["error"]["code"], -32020);
    }
}
