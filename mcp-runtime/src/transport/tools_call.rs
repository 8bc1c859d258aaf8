//! A `tools/call` request read straight into its parts.
//!
//! `tools/call` is the hot path of an MCP server, and an MRTR retry sends the biggest body of
//! all (arguments, `inputResponses`, `requestState`, `_meta`). Building a full JSON tree of it
//! (one allocation per string, two per object, a hash per member) and then taking the tree
//! apart again costs more than the rest of the runtime's own work on the request. Here the
//! envelope and `params` are read into a struct instead; only the member values the runtime
//! keeps (`id`, `arguments`, `inputResponses`, `requestState`, `_meta`) become JSON values.
//!
//! This is an optimisation, never a second set of rules: a message is only read this way when
//! it is a plainly well-formed `tools/call` request whose every byte is read by a strict
//! parser (no member the reader does not know, no repeated member, every value parsed in
//! full). Anything else (a notification, another method, an unknown or repeated member, a
//! non-string `name`...) returns `None` and goes through the general path, which parses the
//! whole tree and words every error. So a message read here is exactly one the general path
//! would have accepted, with the same values.

use std::borrow::Cow;

use mcp_types::{ClientCapabilities, JsonObject, RequestId, RequestMeta};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::server::limits::{nesting, value_depth_exceeds};

/// The parts of a well-formed `tools/call` request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolsCall {
    /// The request id as sent: a string or an integer.
    pub(crate) id: Value,
    /// The same id, typed.
    pub(crate) request_id: RequestId,
    /// `params.name`.
    pub(crate) name: String,
    /// `params.arguments`, when present (any JSON value; `tools/call` rules apply later).
    pub(crate) arguments: Option<Value>,
    /// `params.inputResponses`, when present.
    pub(crate) input_responses: Option<Value>,
    /// `params.requestState`, when present.
    pub(crate) request_state: Option<Value>,
    /// `params._meta`.
    pub(crate) meta: CallMeta,
}

/// `params._meta` of a call read into parts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CallMeta {
    /// No `_meta` member.
    Absent,
    /// The plain shape (exactly a string `protocolVersion` and an object
    /// `clientCapabilities`), read straight into its type; `depth` is its nesting depth.
    Typed {
        /// The request's `_meta`.
        meta: Box<RequestMeta>,
        /// How deep its arrays and objects nest (for the depth limit).
        depth: usize,
    },
    /// Anything else, as a tree: the general rules read it and word its errors.
    Tree(Value),
}

/// The plain `_meta` shape. Optional members are left to the general path on purpose: a
/// `null` there is an error that a typed `Option` would silently read as absent.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainMeta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: String,
    // `ClientCapabilities` has flattened members, so only a JSON object deserializes into it,
    // as the general path requires.
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    client_capabilities: ClientCapabilities,
}

/// The JSON-RPC envelope; `deny_unknown_fields` sends anything unusual (a `result` or `error`
/// member, an extension member) to the general path.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a> {
    // `jsonrpc` and `method` are checked as they are read: clients send them before `params`,
    // so any other request (tools/list, a notification...) is turned away after a few bytes
    // instead of after a full parse.
    #[serde(deserialize_with = "version_2_0")]
    jsonrpc: (),
    #[serde(borrow)]
    id: &'a RawValue,
    #[serde(deserialize_with = "tools_call")]
    method: (),
    #[serde(borrow)]
    params: Params<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    // `raw` keeps a member even when its value is `null` (a plain `Option` would drop it), so
    // the general rules see exactly what was sent.
    #[serde(default, borrow, deserialize_with = "raw")]
    arguments: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "inputResponses", deserialize_with = "raw")]
    input_responses: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "requestState", deserialize_with = "raw")]
    request_state: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "_meta", deserialize_with = "raw")]
    meta: Option<&'a RawValue>,
}

fn raw<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// A string member that must equal `expected` (escaped spellings included).
fn exactly<'de, D: Deserializer<'de>>(d: D, expected: &str) -> Result<(), D::Error> {
    let text = <Cow<'de, str>>::deserialize(d)?;
    if text == expected {
        Ok(())
    } else {
        Err(serde::de::Error::custom("not read here"))
    }
}

fn version_2_0<'de, D: Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    exactly(d, "2.0")
}

fn tools_call<'de, D: Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    exactly(d, mcp_types::METHOD_TOOLS_CALL)
}

impl ToolsCall {
    /// Reads `raw` as a well-formed `tools/call` request, or `None` (use the general path).
    pub(crate) fn read(raw: &[u8]) -> Option<Self> {
        // `jsonrpc` and `method` were checked while reading.
        let Envelope {
            jsonrpc: (),
            method: (),
            id,
            params: p,
        } = serde_json::from_slice(raw).ok()?;
        let id = parse(id)?;
        // Both readers of ids must take it: the transport's (string or integer) and the
        // dispatcher's `RequestId` (which has no room for integers above i64::MAX).
        let request_id =
            RequestId::from_value(&id).filter(|_| super::envelope::is_valid_id(&id))?;
        Some(Self {
            id,
            request_id,
            name: p.name.into_owned(),
            arguments: member(p.arguments)?,
            input_responses: member(p.input_responses)?,
            request_state: member(p.request_state)?,
            meta: match p.meta {
                None => CallMeta::Absent,
                Some(raw) => match serde_json::from_str::<PlainMeta>(raw.get()) {
                    Ok(plain) => CallMeta::Typed {
                        meta: Box::new(RequestMeta {
                            protocol_version: plain.protocol_version,
                            client_capabilities: plain.client_capabilities,
                            client_info: None,
                            log_level: None,
                            progress_token: None,
                            extra: JsonObject::new(),
                        }),
                        depth: nesting(raw.get().as_bytes()),
                    },
                    Err(_) => CallMeta::Tree(parse(raw)?),
                },
            },
        })
    }

    /// Whether the message nests arrays and objects more than `max` levels deep (the message
    /// itself and `params` are two levels above each member value).
    pub(crate) fn exceeds_depth(&self, max: usize) -> bool {
        let Some(budget) = max.checked_sub(2) else {
            return true;
        };
        let typed_meta_too_deep = match &self.meta {
            CallMeta::Typed { depth, .. } => *depth > budget,
            CallMeta::Tree(meta) => value_depth_exceeds(meta, budget),
            CallMeta::Absent => false,
        };
        typed_meta_too_deep
            || [&self.arguments, &self.input_responses, &self.request_state]
                .into_iter()
                .flatten()
                .any(|v| value_depth_exceeds(v, budget))
    }
}

/// Parses one member value in full, so it is checked exactly as the general path would.
fn parse(raw: &RawValue) -> Option<Value> {
    serde_json::from_str(raw.get()).ok()
}

/// An optional member: `Some(None)` when absent, `None` when present but unreadable.
fn member(raw: Option<&RawValue>) -> Option<Option<Value>> {
    match raw {
        None => Some(None),
        Some(raw) => parse(raw).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PLAIN: &str = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":{"a":1},"inputResponses":{"k":{"action":"decline"}},"requestState":"s","_meta":{"m":true}}}"#;

    #[test]
    fn a_plain_call_is_read_into_its_parts() {
        let call = ToolsCall::read(PLAIN.as_bytes()).unwrap();
        assert_eq!(call.id, json!(3));
        assert_eq!(call.request_id, RequestId::Number(3));
        assert_eq!(call.name, "t");
        assert_eq!(call.arguments, Some(json!({"a": 1})));
        assert_eq!(
            call.input_responses,
            Some(json!({"k": {"action": "decline"}}))
        );
        assert_eq!(call.request_state, Some(json!("s")));
        assert_eq!(call.meta, CallMeta::Tree(json!({"m": true})));
        assert!(!call.exceeds_depth(4));
        assert!(
            call.exceeds_depth(3),
            "params.inputResponses.k is 3 + 2 deep"
        );
    }

    #[test]
    fn null_members_are_kept_and_escaped_keys_read() {
        let text = r#"{"jsonrpc":"2.0","id":"x","method":"tools\/call","params":{"n\u0061me":"t","arguments":null}}"#;
        let call = ToolsCall::read(text.as_bytes()).unwrap();
        assert_eq!(call.name, "t");
        assert_eq!(call.arguments, Some(Value::Null));
        assert_eq!(call.meta, CallMeta::Absent);
    }

    #[test]
    fn anything_unusual_is_left_to_the_general_path() {
        for text in [
            // a notification, another method, another version
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"t"}}"#,
            // ids the dispatcher cannot carry
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"t"}}"#,
            // unknown, repeated or response members; no params; a non-string name
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"},"x":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","x":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","name":"u"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"},"result":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#,
            // a lone surrogate the tree parser refuses, inside a value read raw
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":"\ud800"}}}"#,
            // not JSON at all, or trailing bytes
            r#"{"jsonrpc":"2.0","#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}} x"#,
        ] {
            assert!(ToolsCall::read(text.as_bytes()).is_none(), "{text}");
        }
    }
}
