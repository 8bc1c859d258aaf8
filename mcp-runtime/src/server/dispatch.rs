//! One message in, at most one response out.

use std::panic::AssertUnwindSafe;

use bytes::Bytes;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use mcp_types::{
    ErrorCode, ErrorObject, JsonObject, JsonRpcErrorResponse, MetaError, MetaField, RequestId,
    RequestMeta, classify_client_message,
};
use serde::Serialize;
use serde_json::Value;

use super::limits::{check_depth, value_depth_exceeds};
use super::request::{RetryParts, Target};
use super::{SUPPORTED_VERSIONS, Server};
use crate::Principal;
use crate::members::member;
use crate::tool::{ToolErrorKind, settle};
use crate::transport::service::Body;
use crate::transport::tools_call::{CallMeta, ToolsCall};
use crate::transport::{
    CancellationToken, McpService, Message, NotificationSink, Reply, RequestContext,
};

const PREFIX: &[u8] = br#"{"jsonrpc":"2.0","id":"#;

impl Server {
    /// Handles one raw message sent by `principal`; returns the serialised response, or
    /// `None` for a notification. Notifications emitted by tools are dropped (use
    /// [`Server::handle_bytes_with`] to receive them).
    pub async fn handle_bytes(&self, bytes: &[u8], principal: &Principal) -> Option<Vec<u8>> {
        let ctx = RequestContext::new(
            principal.clone(),
            NotificationSink::discard(),
            CancellationToken::new(),
        );
        self.handle_bytes_with(bytes, ctx)
            .await
            .map(|r| r.body.to_vec())
    }

    /// Handles one raw message with a full transport context; the [`Reply`] says whether it
    /// is a result or which error (for HTTP status mapping, [`Reply::http_status`]).
    pub async fn handle_bytes_with(&self, bytes: &[u8], ctx: RequestContext) -> Option<Reply> {
        let limits = self.inner.limits;
        if bytes.len() > limits.max_message_bytes {
            return self.check_raw(bytes);
        }
        if let Some(call) = ToolsCall::read(bytes) {
            return self.dispatch_call(Box::new(call), ctx).await;
        }
        // Parse first (serde_json bounds its own recursion at 128 levels), then check the depth
        // limit on the tree: far cheaper than a byte-by-byte prescan of every message. Only a
        // message that fails to parse is scanned, so one nested past the parser's own limit
        // still gets the "too deep" answer rather than a parse error.
        match serde_json::from_slice::<Value>(bytes) {
            Ok(value) if value_depth_exceeds(&value, limits.max_depth) => {
                Some(too_deep(limits.max_depth))
            }
            Ok(value) => self.dispatch(value, ctx).await,
            Err(e) => Some(self.check_raw(bytes).unwrap_or_else(|| {
                error_reply(
                    None,
                    ErrorObject::parse_error(format!("Invalid JSON ({e})")),
                )
            })),
        }
    }

    /// Handles one already parsed message (its nesting depth is checked first).
    pub async fn handle_value(&self, value: Value, ctx: RequestContext) -> Option<Reply> {
        if value_depth_exceeds(&value, self.inner.limits.max_depth) {
            return Some(too_deep(self.inner.limits.max_depth));
        }
        self.dispatch(value, ctx).await
    }

    fn check_raw(&self, bytes: &[u8]) -> Option<Reply> {
        let limits = self.inner.limits;
        if bytes.len() > limits.max_message_bytes {
            return Some(error_reply(
                None,
                ErrorObject::invalid_request(format!(
                    "message is {} bytes, over the {}-byte limit",
                    bytes.len(),
                    limits.max_message_bytes
                )),
            ));
        }
        if check_depth(bytes, limits.max_depth).is_err() {
            return Some(too_deep(limits.max_depth));
        }
        None
    }

    async fn dispatch(&self, value: Value, rctx: RequestContext) -> Option<Reply> {
        let (id, method, params) = match envelope(value) {
            Ok(parts) => parts,
            Err(reply) => return Some(reply),
        };
        let Some(id) = id else {
            // Notifications (`notifications/cancelled` included) are accepted and never
            // answered; cancellation itself is the transport's job.
            return None;
        };
        let params = params.unwrap_or_default();
        let meta = match checked_meta(&id, RequestMeta::from_params(&params)) {
            Ok(meta) => meta,
            Err(reply) => return Some(reply),
        };
        Some(match method.as_str() {
            mcp_types::METHOD_SERVER_DISCOVER => cached_reply(&id, &self.inner.discover_json),
            mcp_types::METHOD_TOOLS_LIST if self.inner.offered.tools => {
                paged_reply(&id, &self.inner.tools_list, &params)
            }
            mcp_types::METHOD_TOOLS_CALL if self.inner.offered.tools => {
                match CallParts::take(params) {
                    Ok(call) => self.call_tool(&id, call, meta, rctx).await,
                    Err(e) => error_reply(Some(&id), e),
                }
            }
            mcp_types::METHOD_PROMPTS_LIST if self.inner.offered.prompts => {
                paged_reply(&id, &self.inner.prompts_list, &params)
            }
            mcp_types::METHOD_PROMPTS_GET if self.inner.offered.prompts => {
                self.get_prompt(&id, params, meta, rctx).await
            }
            mcp_types::METHOD_RESOURCES_LIST if self.inner.offered.resources => {
                paged_reply(&id, &self.inner.resources_list, &params)
            }
            mcp_types::METHOD_RESOURCES_TEMPLATES_LIST if self.inner.offered.resources => {
                paged_reply(&id, &self.inner.templates_list, &params)
            }
            mcp_types::METHOD_RESOURCES_READ if self.inner.offered.resources => {
                self.read_resource(&id, params, meta, rctx).await
            }
            mcp_types::METHOD_TASKS_GET
            | mcp_types::METHOD_TASKS_UPDATE
            | mcp_types::METHOD_TASKS_CANCEL
                if self.inner.offered.tasks =>
            {
                self.task_method(&id, &method, params, &meta, &rctx.principal)
                    .await
            }
            mcp_types::METHOD_COMPLETION_COMPLETE if self.inner.offered.completions => {
                self.complete(&id, params)
            }
            // Methods of capabilities this server does not advertise (and `subscriptions/listen`,
            // since no listChanged/subscribe is advertised) are not found.
            other => error_reply(Some(&id), ErrorObject::method_not_found(other)),
        })
    }

    /// Dispatches a `tools/call` request that was read into its parts
    /// ([`crate::transport::tools_call`]): the same checks, in the same order, as
    /// [`Server::dispatch`] makes on the tree of the same message.
    async fn dispatch_call(&self, call: Box<ToolsCall>, rctx: RequestContext) -> Option<Reply> {
        let max_depth = self.inner.limits.max_depth;
        if call.exceeds_depth(max_depth) {
            return Some(too_deep(max_depth));
        }
        let call = *call;
        let id = call.request_id;
        let meta = match call.meta {
            CallMeta::Typed { meta, .. } => Ok(*meta),
            CallMeta::Tree(meta) => RequestMeta::from_meta_member(Some(&meta)),
            CallMeta::Absent => RequestMeta::from_meta_member(None),
        };
        let meta = match checked_meta(&id, meta) {
            Ok(meta) => meta,
            Err(reply) => return Some(reply),
        };
        if !self.inner.offered.tools {
            return Some(error_reply(
                Some(&id),
                ErrorObject::method_not_found(mcp_types::METHOD_TOOLS_CALL),
            ));
        }
        let parts = CallParts::from_members(
            Some(Value::String(call.name)),
            call.arguments,
            call.input_responses,
            call.request_state,
        );
        Some(match parts {
            Ok(parts) => self.call_tool(&id, parts, meta, rctx).await,
            Err(e) => error_reply(Some(&id), e),
        })
    }

    async fn call_tool(
        &self,
        id: &RequestId,
        mut call: CallParts,
        meta: RequestMeta,
        rctx: RequestContext,
    ) -> Reply {
        let Some(tool) = self.inner.router.get(&call.name) else {
            return error_reply(Some(id), ErrorObject::unknown_tool(&call.name));
        };
        let support = tool.task_support();
        if support != mcp_types::TaskSupport::Forbidden {
            if super::tasks::declared(&meta.client_capabilities) {
                let tool = std::sync::Arc::clone(tool);
                return self
                    .call_as_task(id, tool, call, meta, rctx.principal)
                    .await;
            }
            if support == mcp_types::TaskSupport::Required {
                return error_reply(Some(id), super::tasks::extension_required());
            }
        }
        let target = Target {
            method: mcp_types::METHOD_TOOLS_CALL,
            name: &call.name,
        };
        let opened = match self.open_request(
            target,
            tool.required_capabilities(),
            &mut call.arguments,
            call.retry,
            meta,
            rctx,
        ) {
            Ok(opened) => opened,
            Err(e) => return error_reply(Some(id), e),
        };
        let (mut ctx, arg_digest) = (opened.ctx, opened.arg_digest);
        // A panicking tool must not take the connection down with it: answer -32603.
        let called = AssertUnwindSafe(tool.call(&mut ctx, call.arguments))
            .catch_unwind()
            .await;
        let target = Target {
            method: mcp_types::METHOD_TOOLS_CALL,
            name: &call.name,
        };
        self.settle_reply(id, called, &mut ctx, target, arg_digest)
            .await
    }

    /// The reply to one finished pass of a tool: its result, the input-required round, or
    /// the error.
    pub(super) async fn settle_reply(
        &self,
        id: &RequestId,
        called: std::thread::Result<Result<mcp_types::CallToolResult, crate::tool::ToolError>>,
        ctx: &mut crate::context::ToolContext,
        target: Target<'_>,
        arg_digest: Option<crate::state::ArgDigest>,
    ) -> Reply {
        let Ok(outcome) = called else {
            tracing::error!(tool = %crate::log_safe::LogSafe(target.name), "tool panicked");
            return error_reply(
                Some(id),
                ErrorObject::internal_error(format!(
                    "tool `{}` failed unexpectedly; nothing more is known, do not retry blindly",
                    target.name
                )),
            );
        };
        // An identical retry gets the recorded outcome; a claimed one is recorded.
        let outcome = ctx.finish_call(settle(outcome)).await;
        match outcome {
            Ok(result) if result.meta.is_none() && result.extra.is_empty() => {
                result_reply_with_meta(id, &result, &self.inner.result_meta_json)
            }
            Ok(mut result) => {
                result
                    .meta
                    .get_or_insert_with(|| self.inner.result_meta.clone())
                    .server_info
                    .get_or_insert_with(|| self.inner.info.clone());
                result_reply(id, &result)
            }
            Err(e) => match e.into_kind() {
                ToolErrorKind::InputRequired => {
                    self.input_required_reply(id, ctx, target, arg_digest)
                }
                ToolErrorKind::Protocol(e) => error_reply(Some(id), e),
                // `settle` turned these into results already.
                ToolErrorKind::Tool(m) | ToolErrorKind::InvalidArguments(m) => {
                    error_reply(Some(id), ErrorObject::internal_error(m))
                }
            },
        }
    }
}

/// `tools/call` params beyond `_meta`, taken out of the params object without cloning.
pub(super) struct CallParts {
    pub(super) name: String,
    pub(super) arguments: JsonObject,
    pub(super) retry: RetryParts,
}

impl CallParts {
    /// Takes the params apart in one pass over their members (no hashing, no cloning).
    fn take(params: JsonObject) -> Result<Self, ErrorObject> {
        let (mut name, mut arguments, mut responses, mut state) = (None, None, None, None);
        for (key, value) in params {
            match key.as_str() {
                "name" => name = Some(value),
                "arguments" => arguments = Some(value),
                "inputResponses" => responses = Some(value),
                "requestState" => state = Some(value),
                _ => {}
            }
        }
        Self::from_members(name, arguments, responses, state)
    }

    /// Checks the members' types (each `None` when absent).
    fn from_members(
        name: Option<Value>,
        arguments: Option<Value>,
        responses: Option<Value>,
        state: Option<Value>,
    ) -> Result<Self, ErrorObject> {
        let name = match name {
            Some(Value::String(n)) => n,
            None => {
                return Err(ErrorObject::invalid_params(
                    "Invalid params: tools/call needs \"name\", the tool to call",
                ));
            }
            Some(_) => {
                return Err(ErrorObject::invalid_params(
                    "Invalid params: \"name\" must be a string",
                ));
            }
        };
        let arguments = match arguments {
            None | Some(Value::Null) => JsonObject::new(),
            Some(Value::Object(a)) => a,
            Some(_) => {
                return Err(ErrorObject::invalid_params(
                    "Invalid params: \"arguments\" must be an object",
                ));
            }
        };
        let retry = RetryParts::from_members(responses, state)?;
        Ok(Self {
            name,
            arguments,
            retry,
        })
    }
}

type Envelope = (Option<RequestId>, String, Option<JsonObject>);

/// Splits a message into id, method and params, or the exact `-32600` reply.
///
/// Fast path: a well-formed request is taken apart without cloning; anything else goes to
/// `mcp_types::classify_client_message`, which words the error.
fn envelope(value: Value) -> Result<Envelope, Reply> {
    if let Value::Object(obj) = value {
        let well_formed = matches!(member(&obj, "jsonrpc"), Some(Value::String(v)) if v == "2.0")
            && matches!(member(&obj, "method"), Some(Value::String(_)))
            && member(&obj, "result").is_none()
            && member(&obj, "error").is_none()
            && matches!(member(&obj, "params"), None | Some(Value::Object(_)))
            && member(&obj, "id").is_none_or(|v| RequestId::from_value(v).is_some());
        if well_formed {
            // Taken apart in one pass over the members: no hashing, no cloning.
            let (mut id, mut method, mut params) = (None, String::new(), None);
            for (key, member) in obj {
                match (key.as_str(), member) {
                    ("id", v) => id = RequestId::from_value(&v),
                    ("method", Value::String(m)) => method = m,
                    ("params", Value::Object(p)) => params = Some(p),
                    _ => {}
                }
            }
            return Ok((id, method, params));
        }
        return Err(cold_envelope_error(&Value::Object(obj)));
    }
    Err(cold_envelope_error(&value))
}

fn cold_envelope_error(value: &Value) -> Reply {
    match classify_client_message(value) {
        Err(response) => serialize_error(&response),
        Ok(_) => error_reply(
            None,
            ErrorObject::invalid_request("not a JSON-RPC request or notification"),
        ),
    }
}

/// The request's `_meta`, or the reply refusing it: malformed, or a protocol version this
/// server does not speak.
fn checked_meta(
    id: &RequestId,
    meta: Result<RequestMeta, MetaError>,
) -> Result<RequestMeta, Reply> {
    let meta = meta.map_err(|e| meta_reply(id, &e))?;
    if !SUPPORTED_VERSIONS.contains(&meta.protocol_version.as_str()) {
        return Err(error_reply(
            Some(id),
            ErrorObject::unsupported_protocol_version(SUPPORTED_VERSIONS, &meta.protocol_version),
        ));
    }
    Ok(meta)
}

fn too_deep(max: usize) -> Reply {
    error_reply(
        None,
        ErrorObject::invalid_request(format!(
            "message nests arrays/objects deeper than {max} levels"
        )),
    )
}

fn meta_reply(id: &RequestId, e: &MetaError) -> Reply {
    let body = error_body(Some(id), e.to_error_object());
    // A missing/malformed required member maps to HTTP 400; other `_meta` defects are plain
    // invalid params.
    match e.field() {
        MetaField::Meta | MetaField::ProtocolVersion | MetaField::ClientCapabilities => {
            Reply::malformed_meta(body)
        }
        _ => Reply::error(ErrorCode::InvalidParams, body),
    }
}

pub(crate) fn error_reply(id: Option<&RequestId>, error: ErrorObject) -> Reply {
    let code = error.code();
    Reply::error(code, error_body(id, error))
}

fn error_body(id: Option<&RequestId>, error: ErrorObject) -> Bytes {
    let response = JsonRpcErrorResponse::new(id.cloned(), error);
    Bytes::from(serde_json::to_vec(&response).unwrap_or_default())
}

fn serialize_error(response: &JsonRpcErrorResponse) -> Reply {
    Reply::error(
        response.error.code(),
        Bytes::from(serde_json::to_vec(response).unwrap_or_default()),
    )
}

fn paged_reply(id: &RequestId, pages: &super::listing::Pages, params: &JsonObject) -> Reply {
    match pages.page(params.get("cursor")) {
        Ok(page) => cached_reply(id, page),
        Err(e) => error_reply(Some(id), e),
    }
}

fn cached_reply(id: &RequestId, result_json: &[u8]) -> Reply {
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
    let mut buf = Vec::with_capacity(256 + meta_json.len());
    write_head(&mut buf, id);
    if let Err(e) = serde_json::to_writer(&mut buf, result) {
        return error_reply(
            Some(id),
            ErrorObject::internal_error(format!("result failed to serialise: {e}")),
        );
    }
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

impl McpService for Server {
    fn handle<'a>(&'a self, message: Message, ctx: RequestContext) -> BoxFuture<'a, Option<Reply>> {
        Box::pin(async move {
            // The transport parsed the message already (serde_json caps nesting at 128 while
            // parsing): check the size, then the depth limit on the parsed tree, which is far
            // cheaper than rescanning every byte of the raw message.
            let limits = self.inner.limits;
            if message.raw().len() > limits.max_message_bytes {
                return self.check_raw(message.raw());
            }
            match message.into_body() {
                Body::Call(call) => self.dispatch_call(call, ctx).await,
                Body::Tree(value) => {
                    if value_depth_exceeds(&value, limits.max_depth) {
                        return Some(too_deep(limits.max_depth));
                    }
                    self.dispatch(value, ctx).await
                }
            }
        })
    }

    fn param_headers(&self, tool: &str) -> &[crate::transport::ParamHeader] {
        self.inner
            .param_headers
            .get(tool)
            .map_or(&[], Vec::as_slice)
    }

    fn required_scopes(&self, method: &str, name: &str) -> &[String] {
        self.inner
            .scopes
            .required(&self.inner.resources, method, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_types::{
        CallToolResult, ContentBlock, Implementation, InputRequests, InputRequiredResult,
        ResultMeta,
    };
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
        }

        let plain =
            InputRequiredResult::new(Some(InputRequests::default()), Some("s".into())).unwrap();
        let mut with_meta = plain.clone();
        with_meta.meta = Some(meta.clone());
        check(
            result_reply(&id, &with_meta).body,
            result_reply_with_meta(&id, &plain, &meta_json).body,
        );

        // An empty object gets `_meta` without a stray comma.
        let spliced = result_reply_with_meta(&id, &json!({}), &meta_json).body;
        let v: Value = serde_json::from_slice(&spliced).unwrap();
        assert_eq!(v["result"]["_meta"], serde_json::to_value(&meta).unwrap());
    }
}
