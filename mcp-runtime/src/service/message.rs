//! [`Message`]: one incoming JSON-RPC message, parsed once by the transport.

use std::sync::OnceLock;

use bytes::Bytes;
use mcp_types::ToolsCall;
use serde_json::Value;

use crate::service::envelope::{self, Kind};

/// One incoming JSON-RPC message: the raw bytes plus what the transport already parsed.
///
/// Transports must parse every message once anyway (to tell requests from notifications, and on
/// HTTP to compare headers with the body), so the parsed form travels on and the service never
/// has to parse again. The raw bytes stay available for services that prefer to deserialize
/// straight into typed structs.
///
/// A well-formed `tools/call` request is read straight into its parts rather than into a full
/// JSON tree (the runtime's hot path); [`Message::value`] still returns the tree, building it
/// on first use.
#[derive(Debug, Clone)]
pub struct Message {
    raw: Bytes,
    parsed: Parsed,
}

#[derive(Debug, Clone)]
enum Parsed {
    /// The whole message as a JSON tree.
    Tree(Value),
    /// A `tools/call` request in parts; the tree is only built if someone asks for it.
    Call(Box<ToolsCall>, OnceLock<Value>),
}

/// What the server core dispatches on.
pub(crate) enum Body {
    /// Any message, as a tree.
    Tree(Value),
    /// A well-formed `tools/call` request, in parts.
    Call(Box<ToolsCall>),
}

impl Message {
    /// Parses raw bytes into a message.
    ///
    /// # Errors
    /// The JSON parse error, when `raw` is not valid UTF-8 JSON.
    pub fn parse(raw: Bytes) -> Result<Self, serde_json::Error> {
        // UTF-8 is checked once, over the whole message, and the parsers then read text:
        // reading bytes, serde_json would validate every string again as it meets it.
        let Ok(text) = std::str::from_utf8(&raw) else {
            // Not UTF-8, so not JSON: the byte parser words the error.
            return serde_json::from_slice::<Value>(&raw).map(|value| Self {
                raw,
                parsed: Parsed::Tree(value),
            });
        };
        if let Some(call) = ToolsCall::read_str(text) {
            return Ok(Self {
                raw,
                parsed: Parsed::Call(Box::new(call), OnceLock::new()),
            });
        }
        let value = serde_json::from_str(text)?;
        Ok(Self {
            raw,
            parsed: Parsed::Tree(value),
        })
    }

    /// Builds a message from an already parsed value (serializing it for [`Message::raw`]).
    pub fn from_value(value: Value) -> Self {
        // Serializing a `Value` cannot fail: its map keys are always strings.
        let raw = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        Self {
            raw,
            parsed: Parsed::Tree(value),
        }
    }

    /// The bytes exactly as received.
    pub fn raw(&self) -> &Bytes {
        &self.raw
    }

    /// The parsed JSON value.
    pub fn value(&self) -> &Value {
        match &self.parsed {
            Parsed::Tree(value) => value,
            Parsed::Call(_, tree) => tree.get_or_init(|| tree_of(&self.raw)),
        }
    }

    /// Takes the parsed JSON value.
    pub fn into_value(self) -> Value {
        match self.parsed {
            Parsed::Tree(value) => value,
            Parsed::Call(_, tree) => tree.into_inner().unwrap_or_else(|| tree_of(&self.raw)),
        }
    }

    /// The `method` member, when present and a string.
    pub fn method(&self) -> Option<&str> {
        match &self.parsed {
            Parsed::Tree(value) => value.get("method").and_then(Value::as_str),
            Parsed::Call(..) => Some(mcp_types::METHOD_TOOLS_CALL),
        }
    }

    /// The `id` member, when present.
    pub fn id(&self) -> Option<&Value> {
        match &self.parsed {
            Parsed::Tree(value) => value.get("id"),
            Parsed::Call(call, _) => Some(&call.id),
        }
    }

    /// What kind of message this is, as far as a transport cares.
    pub(crate) fn kind(&self) -> Kind<'_> {
        match &self.parsed {
            Parsed::Tree(value) => envelope::classify(value),
            Parsed::Call(call, _) => Kind::Request {
                id: &call.id,
                method: mcp_types::METHOD_TOOLS_CALL,
            },
        }
    }

    /// The message as a `tools/call` read into its parts, when it is a plain, well-formed one
    /// (see [`ToolsCall::read`]); `None` for anything else (use [`Message::value`]).
    pub fn as_call(&self) -> Option<&ToolsCall> {
        match &self.parsed {
            Parsed::Call(call, _) => Some(call),
            Parsed::Tree(_) => None,
        }
    }

    /// Gives up the message for dispatch.
    pub(crate) fn into_body(self) -> Body {
        match self.parsed {
            Parsed::Tree(value) => Body::Tree(value),
            Parsed::Call(call, _) => Body::Call(call),
        }
    }
}

/// The tree of a message that was read into parts. Reading it into parts parsed every byte
/// with the same parser, so this cannot fail; `Null` is only a defensive fallback.
fn tree_of(raw: &[u8]) -> Value {
    serde_json::from_slice(raw).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_is_checked_once_and_every_kind_of_message_still_reads() {
        // Not UTF-8 (inside a string): the byte parser's error, never a message.
        let bad = Bytes::from_static(b"{\"jsonrpc\":\"2.0\",\"method\":\"x\xff\"}");
        assert!(Message::parse(bad).is_err());
        // A plain tools/call is read into its parts...
        let call = Message::parse(Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t\u00e9"}}"#,
        ))
        .unwrap();
        assert!(matches!(call.parsed, Parsed::Call(..)));
        assert_eq!(call.value()["params"]["name"], "t\u{e9}");
        // ...anything else becomes a tree, multi-byte text included.
        let list = Message::parse(Bytes::from(
            r#"{"jsonrpc":"2.0","id":"é","method":"tools/list"}"#.as_bytes(),
        ))
        .unwrap();
        assert!(matches!(list.parsed, Parsed::Tree(..)));
        assert_eq!(list.value()["id"], "é");
    }
}
