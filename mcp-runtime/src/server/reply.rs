//! The byte-level reply writer: JSON-RPC responses written straight into bytes.
//!
//! A result is written as the fixed head `{"jsonrpc":"2.0","id":<id>,"result":` followed by
//! the serialised result, never through an envelope struct: cached results (discover, lists)
//! are copied in as bytes, and the server's default result `_meta` is spliced in already
//! serialised instead of being cloned into every response.

use bytes::Bytes;
use mcp_types::{CallToolResult, ErrorObject, JsonRpcErrorResponse, RequestId};
use serde::Serialize;

use super::json_writer::write_str;
use crate::mrtr::SealedInput;
use crate::service::Reply;

const PREFIX: &[u8] = br#"{"jsonrpc":"2.0","id":"#;

pub(crate) fn error_reply(id: Option<&RequestId>, error: ErrorObject) -> Reply {
    let code = error.code();
    Reply::error(code, error_body(id, error))
}

/// A `-32023` RateLimited reply (`error` from [`ErrorObject::rate_limited`]), which HTTP
/// sends as 429 with `Retry-After`.
pub(super) fn rate_limited_reply(
    id: &RequestId,
    error: ErrorObject,
    retry_after_secs: u32,
    limit: Option<u32>,
) -> Reply {
    Reply::rate_limited(error_body(Some(id), error), retry_after_secs, limit)
}

pub(super) fn error_body(id: Option<&RequestId>, error: ErrorObject) -> Bytes {
    let response = JsonRpcErrorResponse::new(id.cloned(), error);
    Bytes::from(serde_json::to_vec(&response).unwrap_or_default())
}

pub(super) fn serialize_error(response: &JsonRpcErrorResponse) -> Reply {
    Reply::error(
        response.error.code(),
        Bytes::from(serde_json::to_vec(response).unwrap_or_default()),
    )
}

pub(super) fn cached_reply(id: &RequestId, result_json: &[u8]) -> Reply {
    let mut buf = Vec::with_capacity(result_json.len() + 48);
    write_head(&mut buf, id);
    buf.extend_from_slice(result_json);
    buf.push(b'}');
    Reply::result(Bytes::from(buf))
}

pub(super) fn result_reply(id: &RequestId, result: &impl Serialize) -> Reply {
    let mut buf = Vec::with_capacity(256);
    write_head(&mut buf, id);
    if let Err(e) = serde_json::to_writer(&mut buf, result) {
        return error_reply(
            Some(id),
            ErrorObject::internal_error(format!("result failed to serialise: {e}")),
        );
    }
    buf.push(b'}');
    Reply::result(Bytes::from(buf))
}

/// [`result_reply`] for a result without `_meta` and without extension members, given the
/// server's default `_meta` already serialised: the same bytes as setting `meta` and
/// serialising (`_meta` is the last member of such a result), without cloning the server info
/// for every response.
pub(super) fn result_reply_with_meta(
    id: &RequestId,
    result: &impl Serialize,
    meta_json: &[u8],
) -> Reply {
    reply_with_meta(id, meta_json, |buf| serde_json::to_writer(buf, result))
}

/// [`result_reply_with_meta`] for a `CallToolResult` without `_meta` and without extension
/// members: the same bytes, with its text content written in place (see `json_writer`).
pub(super) fn call_result_reply_with_meta(
    id: &RequestId,
    result: &CallToolResult,
    meta_json: &[u8],
) -> Reply {
    reply_with_meta(id, meta_json, |buf| {
        super::json_writer::write_call_tool_result(buf, result)
    })
}

/// A result written by `write`, with the server's serialised `_meta` spliced in as its last
/// member.
fn reply_with_meta(
    id: &RequestId,
    meta_json: &[u8],
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), serde_json::Error>,
) -> Reply {
    let mut buf = Vec::with_capacity(256 + meta_json.len());
    write_head(&mut buf, id);
    if let Err(e) = write(&mut buf) {
        return error_reply(
            Some(id),
            ErrorObject::internal_error(format!("result failed to serialise: {e}")),
        );
    }
    splice_meta(&mut buf, meta_json);
    buf.push(b'}');
    Reply::result(Bytes::from(buf))
}

/// The `InputRequiredResult` of a pass that asked (its requests and sealed state, with the
/// server's serialised `_meta` as the last member): the bytes serde writes for the same result
/// built as [`mcp_types::InputRequiredResult`] with `_meta` set, written in place. The `requestState` is
/// copied as is when it needs no JSON escaping (the server's own tokens never do: a key id and
/// base64url), and a derived form's `requestedSchema` is copied as written.
pub(super) fn input_required_reply_with_meta(
    id: &RequestId,
    sealed: &SealedInput,
    meta_json: &[u8],
) -> Reply {
    let state = &sealed.request_state;
    // The form's schema is most of the rest; sized so a typical reply does not regrow.
    let mut buf = Vec::with_capacity(1024 + state.len() + meta_json.len());
    write_head(&mut buf, id);
    buf.extend_from_slice(br#"{"resultType":"input_required","inputRequests":"#);
    if let Err(e) = super::json_writer::write_input_requests(&mut buf, &sealed.requests) {
        return error_reply(
            Some(id),
            ErrorObject::internal_error(format!("result failed to serialise: {e}")),
        );
    }
    buf.extend_from_slice(br#","requestState":"#);
    write_str(&mut buf, state);
    buf.push(b'}');
    splice_meta(&mut buf, meta_json);
    buf.push(b'}');
    Reply::result(Bytes::from(buf))
}

/// Appends `"_meta":<meta_json>` as the last member of the JSON object that `buf` ends with.
fn splice_meta(buf: &mut Vec<u8>, meta_json: &[u8]) {
    if buf.last() != Some(&b'}') {
        // Not an object (cannot happen for result types): leave it alone.
        return;
    }
    buf.pop();
    if buf.last() != Some(&b'{') {
        buf.push(b',');
    }
    buf.extend_from_slice(br#""_meta":"#);
    buf.extend_from_slice(meta_json);
    buf.push(b'}');
}

fn write_head(buf: &mut Vec<u8>, id: &RequestId) {
    buf.extend_from_slice(PREFIX);
    // A RequestId is a string or an integer; serialising it cannot fail.
    let _ = serde_json::to_writer(&mut *buf, id);
    buf.extend_from_slice(br#","result":"#);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mrtr::{PendingRequest, PendingRequests};
    use mcp_types::{
        CallToolResult, ContentBlock, ElicitRequest, Implementation, InputRequests,
        InputRequiredResult, RequestedSchema, ResultMeta, StringSchema,
    };
    use serde_json::Value;
    use serde_json::json;

    /// The cached `_meta` appended to a result serialises exactly as setting it would.
    #[test]
    fn spliced_meta_is_byte_identical_to_a_set_meta() {
        let mut info = Implementation::new("srv", "1.2.3");
        info.title = Some("A \"quoted\" server".into());
        let meta = ResultMeta::with_server_info(info);
        let meta_json = serde_json::to_vec(&meta).unwrap();
        let id = RequestId::Number(7);
        let check = |expected: Bytes, spliced: Bytes| {
            assert_eq!(
                String::from_utf8_lossy(&spliced),
                String::from_utf8_lossy(&expected)
            );
        };

        let mut structured = CallToolResult::success(vec![ContentBlock::text("x")]);
        structured.structured_content = Some(json!({"n": 1}));
        structured.is_error = Some(false);
        for plain in [
            CallToolResult::success(vec![ContentBlock::text("hi")]),
            CallToolResult::error("boom"),
            structured,
        ] {
            let mut with_meta = plain.clone();
            with_meta.meta = Some(meta.clone());
            check(
                result_reply(&id, &with_meta).body,
                result_reply_with_meta(&id, &plain, &meta_json).body,
            );
            check(
                result_reply(&id, &with_meta).body,
                call_result_reply_with_meta(&id, &plain, &meta_json).body,
            );
        }

        let plain =
            InputRequiredResult::new(Some(InputRequests::default()), Some("s".into())).unwrap();
        let mut with_meta = plain.clone();
        with_meta.meta = Some(meta.clone());
        check(
            result_reply(&id, &with_meta).body,
            result_reply_with_meta(&id, &plain, &meta_json).body,
        );

        // The in-place writer of an InputRequiredResult: the same bytes as the serde path,
        // for every shape it takes (a state that needs escaping, a form whose schema was
        // written as JSON, and a typed one).
        let schema = RequestedSchema::new().field("id", StringSchema::new(), true);
        let typed = InputRequests::default()
            .with(
                "pick",
                ElicitRequest::form("Which \"one\"?\n", schema.clone()),
            )
            .with(
                "url",
                ElicitRequest::url("Open it", "https://example.com/x"),
            );
        let mut written = PendingRequests::default();
        written.insert(
            "pick",
            PendingRequest::Form {
                message: "Which \"one\"?\n".into(),
                schema: serde_json::to_vec(&schema).unwrap(),
            },
        );
        written.insert(
            "url",
            PendingRequest::Typed(Box::new(
                ElicitRequest::url("Open it", "https://example.com/x").into(),
            )),
        );
        for requests in [PendingRequests::from(typed.clone()), written] {
            for state in ["v2.k.AAAA-_.BBBB", "a \"quoted\"\\ state\u{1}é"] {
                let mut expected =
                    InputRequiredResult::new(Some(typed.clone()), Some(state.into())).unwrap();
                expected.meta = Some(meta.clone());
                let sealed = SealedInput {
                    requests: requests.clone(),
                    request_state: state.into(),
                };
                check(
                    result_reply(&id, &expected).body,
                    input_required_reply_with_meta(&id, &sealed, &meta_json).body,
                );
            }
        }

        // An empty object gets `_meta` without a stray comma.
        let spliced = result_reply_with_meta(&id, &json!({}), &meta_json).body;
        let v: Value = serde_json::from_slice(&spliced).unwrap();
        assert_eq!(v["result"]["_meta"], serde_json::to_value(&meta).unwrap());
    }
}
