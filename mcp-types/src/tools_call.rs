//! `tools/call` read in one pass: [`ToolsCall`] and its [`ToolsCallParams`].
//!
//! `tools/call` is the hot path of an MCP server, and an MRTR retry sends the biggest body of
//! all (arguments, `inputResponses`, `requestState`, `_meta`). Building a full JSON tree of it
//! and then taking the tree apart again costs more than the rest of a server's own work on the
//! request. [`ToolsCall::read`] reads the envelope and `params` in one pass instead; only the
//! member values a server keeps (`id`, `arguments`, `inputResponses`, `requestState`, `_meta`)
//! become JSON values. The same [`ToolsCallParams`] is built from an
//! already parsed `params` object by [`ToolsCallParams::from_object`], so a server has one
//! reading of the params whichever way the message came in, and one set of checks
//! ([`ToolsCallParams::name`], [`ToolsCallParams::take_arguments`]).
//!
//! [`CallToolRequestParams`](crate::CallToolRequestParams) is the owned, fully typed model a
//! client builds and sends; this module is the server's reading, which must keep every member
//! exactly as sent (a `null` is not an absent member) and word each defect itself.
//!
//! Reading is an optimisation, never a second set of rules: [`ToolsCall::read`] only accepts a
//! plainly well-formed `tools/call` request whose every byte a strict parser read (no member it
//! does not know, no repeated member, every value parsed in full). Anything else (a
//! notification, another method, an unknown or repeated member, a non-string `name`...) gives
//! `None`: parse the whole tree instead, which words every error. So a message read here is
//! exactly one the general path would have accepted, with the same values.
//!
//! ```
//! use mcp_types::{CallMeta, ToolsCall};
//!
//! let raw = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",
//!     "arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
//!     "io.modelcontextprotocol/clientCapabilities":{}}}}"#;
//! let mut call = ToolsCall::read(raw).expect("a plain tools/call");
//! assert_eq!(call.params.name, "echo");
//! assert_eq!(call.params.protocol_version(), Some("2026-07-28"));
//! assert!(matches!(call.params.meta, CallMeta::Typed { .. }));
//! assert!(!call.exceeds_depth(64));
//! let arguments = call.params.take_arguments().expect("an object");
//! assert_eq!(arguments["text"], "hi");
//! ```

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::depth::{nesting, value_depth_exceeds};
use crate::{ClientCapabilities, ErrorObject, JsonObject, RequestId, RequestMeta};

/// The `_meta` key holding the request's protocol version.
const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

/// A well-formed `tools/call` request, read into its parts by [`ToolsCall::read`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolsCall {
    /// The request id as sent: a string or an integer.
    pub id: Value,
    /// The same id, typed.
    pub request_id: RequestId,
    /// The params.
    pub params: ToolsCallParams,
}

/// `tools/call` params, each member kept as sent. `name` is the only member whose type is
/// checked while reading; the others are checked where they are used
/// ([`ToolsCallParams::take_arguments`], `_meta` by [`RequestMeta`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolsCallParams {
    /// `params.name`.
    pub name: String,
    /// `params.arguments`, when present (any JSON value, `null` included).
    pub arguments: Option<Value>,
    /// `params.inputResponses`, when present (any JSON value).
    pub input_responses: Option<Value>,
    /// `params.requestState`, when present (any JSON value).
    pub request_state: Option<Value>,
    /// `params._meta`.
    pub meta: CallMeta,
}

/// `params._meta` of a `tools/call`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CallMeta {
    /// No `_meta` member.
    Absent,
    /// The plain shape (exactly a string `protocolVersion` and an object
    /// `clientCapabilities`), read straight into its type; `depth` is its nesting depth.
    Typed {
        /// The request's `_meta`, shared: a client sends the same `_meta` on every request,
        /// and one read serves them all (see [`ToolsCall::read`]).
        meta: Arc<RequestMeta>,
        /// How deep its arrays and objects nest (for the depth limit).
        depth: usize,
    },
    /// Anything else, as a tree: [`RequestMeta::from_meta_member`] reads it and words its
    /// errors.
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
    // `present` and `raw` keep a member even when its value is `null` (a plain `Option` would
    // drop it), so the general rules see exactly what was sent. The kept values are parsed in
    // full right here, in the one pass over the body (the tree parser's rules, so the same
    // values and the same refusals), rather than skipped as raw text and parsed again.
    #[serde(default, deserialize_with = "present")]
    arguments: Option<Value>,
    #[serde(default, rename = "inputResponses", deserialize_with = "present")]
    input_responses: Option<Value>,
    #[serde(default, rename = "requestState", deserialize_with = "present")]
    request_state: Option<Value>,
    // Raw: the plain shape is read straight into its type, anything else parsed as a tree.
    #[serde(default, borrow, rename = "_meta", deserialize_with = "raw")]
    meta: Option<&'a RawValue>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

fn raw<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// A string member that must equal `expected` (escaped spellings included).
fn exactly<'de, D: Deserializer<'de>>(d: D, expected: &'static str) -> Result<(), D::Error> {
    // A visitor, not `Cow<str>`: serde's `Cow` always deserializes owned, which allocated
    // twice per request here only to compare and drop.
    struct Exactly(&'static str);
    impl serde::de::Visitor<'_> for Exactly {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "the string {:?}", self.0)
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<(), E> {
            if text == self.0 {
                Ok(())
            } else {
                Err(E::custom("not read here"))
            }
        }
    }
    d.deserialize_str(Exactly(expected))
}

fn version_2_0<'de, D: Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    exactly(d, "2.0")
}

fn tools_call<'de, D: Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    exactly(d, crate::METHOD_TOOLS_CALL)
}

/// How many plain `_meta` texts each thread remembers (see [`plain_meta`]).
const META_MEMO_ENTRIES: usize = 4;
/// The longest `_meta` text remembered: a plain one is a version and a few capabilities.
const META_MEMO_MAX_BYTES: usize = 1024;

/// A plain `_meta` text already read on this thread, with what it read to.
struct MetaMemo {
    text: Box<str>,
    meta: Arc<RequestMeta>,
    depth: usize,
}

thread_local! {
    /// The last plain `_meta` texts read on this thread, oldest replaced first.
    static META_MEMO: std::cell::RefCell<([Option<MetaMemo>; META_MEMO_ENTRIES], usize)> =
        const { std::cell::RefCell::new(([const { None }; META_MEMO_ENTRIES], 0)) };
}

/// Reads the plain `_meta` shape (`None`: another shape, for the general path).
///
/// A client sends the same `_meta` text on every request, and reading it into a
/// `RequestMeta` (a large struct of nested capability maps) costs more than the rest of the
/// envelope. So the last few texts read on this thread are remembered with their result, and
/// the same bytes share it (a reference count, no copy of the ~1 KiB struct). The result is a
/// function of the bytes alone (nothing else goes in), so a remembered answer is exactly the
/// one a fresh read would give; the memo is bounded in entries and in text length. A reader
/// that changes its copy gets its own ([`Arc::make_mut`]); the remembered one never changes.
fn plain_meta(raw: &str) -> Option<(Arc<RequestMeta>, usize)> {
    let hit = META_MEMO.with_borrow(|(entries, _)| {
        entries
            .iter()
            .flatten()
            .find(|e| *e.text == *raw)
            .map(|e| (Arc::clone(&e.meta), e.depth))
    });
    if hit.is_some() {
        return hit;
    }
    let plain = serde_json::from_str::<PlainMeta>(raw).ok()?;
    let meta = Arc::new(RequestMeta::new(
        plain.protocol_version,
        plain.client_capabilities,
    ));
    let depth = nesting(raw.as_bytes());
    if raw.len() <= META_MEMO_MAX_BYTES {
        META_MEMO.with_borrow_mut(|(entries, next)| {
            entries[*next] = Some(MetaMemo {
                text: raw.into(),
                meta: Arc::clone(&meta),
                depth,
            });
            *next = (*next + 1) % META_MEMO_ENTRIES;
        });
    }
    Some((meta, depth))
}

impl ToolsCall {
    /// Reads `raw` as a well-formed `tools/call` request, or `None` (parse the whole tree
    /// instead: the message is not a plain `tools/call`, or it is malformed).
    ///
    /// A caller that also parses the message another way validates its UTF-8 once and calls
    /// [`ToolsCall::read_str`].
    pub fn read(raw: &[u8]) -> Option<Self> {
        Self::read_str(std::str::from_utf8(raw).ok()?)
    }

    /// [`ToolsCall::read`] of text already known to be UTF-8.
    ///
    /// Reading from a `str` rather than bytes, the parser need not validate each string it
    /// meets one by one (for an MRTR retry, the `requestState` alone is a few hundred bytes):
    /// one pass over the whole message, made by the caller, does it for all of them.
    pub fn read_str(raw: &str) -> Option<Self> {
        // `jsonrpc` and `method` were checked while reading.
        let Envelope {
            jsonrpc: (),
            method: (),
            id,
            params: p,
        } = serde_json::from_str(raw).ok()?;
        let id = parse(id)?;
        // A string or an integer that `RequestId` can hold (it has no room for integers above
        // i64::MAX); anything else is for the general path to refuse.
        let request_id = RequestId::from_value(&id)?;
        Some(Self {
            id,
            request_id,
            params: ToolsCallParams {
                name: p.name.into_owned(),
                arguments: p.arguments,
                input_responses: p.input_responses,
                request_state: p.request_state,
                meta: match p.meta {
                    None => CallMeta::Absent,
                    Some(raw) => match plain_meta(raw.get()) {
                        Some((meta, depth)) => CallMeta::Typed { meta, depth },
                        None => CallMeta::Tree(parse(raw)?),
                    },
                },
            },
        })
    }

    /// Whether the message nests arrays and objects more than `max` levels deep (the message
    /// itself and `params` are two levels above each member value).
    pub fn exceeds_depth(&self, max: usize) -> bool {
        let Some(budget) = max.checked_sub(2) else {
            return true;
        };
        let p = &self.params;
        let meta_too_deep = match &p.meta {
            CallMeta::Typed { depth, .. } => *depth > budget,
            CallMeta::Tree(meta) => value_depth_exceeds(meta, budget),
            CallMeta::Absent => false,
        };
        meta_too_deep
            || [&p.arguments, &p.input_responses, &p.request_state]
                .into_iter()
                .flatten()
                .any(|v| value_depth_exceeds(v, budget))
    }
}

impl ToolsCallParams {
    /// Takes the members out of a parsed `params` object in one pass (no hashing, no cloning);
    /// members it does not know are dropped.
    ///
    /// # Errors
    /// `-32602` when `name` is missing or not a string, worded for the client.
    pub fn from_object(params: JsonObject) -> Result<Self, ErrorObject> {
        let (mut name, mut arguments, mut input_responses, mut request_state) =
            (None, None, None, None);
        let mut meta = CallMeta::Absent;
        for (key, value) in params {
            match key.as_str() {
                "name" => name = Some(value),
                "arguments" => arguments = Some(value),
                "inputResponses" => input_responses = Some(value),
                "requestState" => request_state = Some(value),
                "_meta" => meta = CallMeta::Tree(value),
                _ => {}
            }
        }
        Ok(Self {
            name: Self::name(name)?,
            arguments,
            input_responses,
            request_state,
            meta,
        })
    }

    /// Checks a `name` member (`None` when absent): the tool to call, a string.
    ///
    /// # Errors
    /// `-32602`, worded for the client.
    pub fn name(name: Option<Value>) -> Result<String, ErrorObject> {
        match name {
            Some(Value::String(n)) => Ok(n),
            None => Err(ErrorObject::invalid_params(
                "Invalid params: tools/call needs \"name\", the tool to call",
            )),
            Some(_) => Err(ErrorObject::invalid_params(
                "Invalid params: \"name\" must be a string",
            )),
        }
    }

    /// Takes `arguments` as the object a tool receives (absent or `null` is empty).
    ///
    /// # Errors
    /// `-32602` when `arguments` is something else.
    pub fn take_arguments(&mut self) -> Result<JsonObject, ErrorObject> {
        match self.arguments.take() {
            None | Some(Value::Null) => Ok(JsonObject::new()),
            Some(Value::Object(a)) => Ok(a),
            Some(_) => Err(ErrorObject::invalid_params(
                "Invalid params: \"arguments\" must be an object",
            )),
        }
    }

    /// `_meta["io.modelcontextprotocol/protocolVersion"]`, when present and a string (what
    /// the HTTP `MCP-Protocol-Version` header must mirror).
    pub fn protocol_version(&self) -> Option<&str> {
        match &self.meta {
            CallMeta::Typed { meta, .. } => Some(&meta.protocol_version),
            CallMeta::Tree(meta) => meta.get(PROTOCOL_VERSION_META).and_then(Value::as_str),
            CallMeta::Absent => None,
        }
    }

    /// The request's `_meta`, read with the same rules and errors as
    /// [`RequestMeta::from_params`].
    ///
    /// # Errors
    /// What [`RequestMeta::from_meta_member`] refuses.
    pub fn take_meta(&mut self) -> Result<RequestMeta, crate::MetaError> {
        self.take_shared_meta().map(Arc::unwrap_or_clone)
    }

    /// [`ToolsCallParams::take_meta`], shared: the plain shape is read once per distinct
    /// `_meta` text on a thread and shared by every request that sends it, so taking it is a
    /// reference count, not a copy of a `RequestMeta` (about 1 KiB).
    ///
    /// # Errors
    /// What [`RequestMeta::from_meta_member`] refuses.
    pub fn take_shared_meta(&mut self) -> Result<Arc<RequestMeta>, crate::MetaError> {
        match std::mem::replace(&mut self.meta, CallMeta::Absent) {
            CallMeta::Typed { meta, .. } => Ok(meta),
            CallMeta::Tree(meta) => RequestMeta::from_meta_member(Some(&meta)).map(Arc::new),
            CallMeta::Absent => RequestMeta::from_meta_member(None).map(Arc::new),
        }
    }
}

/// Parses one member value in full, so it is checked exactly as the general path would.
fn parse(raw: &RawValue) -> Option<Value> {
    serde_json::from_str(raw.get()).ok()
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
        assert_eq!(call.params.name, "t");
        assert_eq!(call.params.arguments, Some(json!({"a": 1})));
        assert_eq!(
            call.params.input_responses,
            Some(json!({"k": {"action": "decline"}}))
        );
        assert_eq!(call.params.request_state, Some(json!("s")));
        assert_eq!(call.params.meta, CallMeta::Tree(json!({"m": true})));
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
        assert_eq!(call.params.name, "t");
        assert_eq!(call.params.arguments, Some(Value::Null));
        assert_eq!(call.params.meta, CallMeta::Absent);
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

    #[test]
    fn a_parsed_params_object_reads_the_same() {
        let call = ToolsCall::read(PLAIN.as_bytes()).unwrap();
        let tree: Value = serde_json::from_str(PLAIN).unwrap();
        let Value::Object(params) = tree["params"].clone() else {
            unreachable!()
        };
        assert_eq!(ToolsCallParams::from_object(params).unwrap(), call.params);
        let mut no_name = JsonObject::new();
        no_name.insert("arguments".into(), json!(1));
        assert!(ToolsCallParams::from_object(no_name).is_err());
    }

    #[test]
    fn arguments_must_be_an_object_or_null() {
        let mut call = ToolsCall::read(PLAIN.as_bytes()).unwrap();
        assert_eq!(call.params.take_arguments().unwrap()["a"], 1);
        for bad in [json!(1), json!([]), json!("x")] {
            call.params.arguments = Some(bad);
            assert!(call.params.take_arguments().is_err());
        }
        call.params.arguments = Some(Value::Null);
        assert!(call.params.take_arguments().unwrap().is_empty());
    }
}
