//! A typed MCP 2026-07-28 client (feature `client`): the in-process test harness for tool
//! authors, and a real client over stdio or Streamable HTTP.
//!
//! - **Transports**: [`InProcess`] (a [`Server`] value, no port and no process),
//!   [`StdioTransport`] (a child process), [`HttpTransport`] (a Streamable HTTP URL with an
//!   optional bearer token), or any [`Transport`].
//! - **Requests**: [`Client::discover`], [`Client::list_tools`], [`Client::call_tool`],
//!   [`Client::list_prompts`], [`Client::get_prompt`], [`Client::list_resources`],
//!   [`Client::list_resource_templates`], [`Client::read_resource`], [`Client::complete`], each
//!   with its typed result. Every request carries `_meta` (protocol version, client capabilities,
//!   client info) set once on the builder; [`Client::with_capabilities`] and
//!   [`Client::with_meta`] override it for the calls made through the returned handle.
//! - **MRTR, automatic**: [`Client::call_tool`], [`Client::get_prompt`] and
//!   [`Client::read_resource`] answer every input request of a round with the builder's
//!   handlers and retry with `inputResponses` and the exact `requestState`, for at most
//!   [`ClientBuilder::max_rounds`] rounds.
//! - **MRTR, step by step**: [`Client::call`], [`Client::get_prompt_step`] and
//!   [`Client::read_resource_step`] return a [`Step`]: the complete result, or a pending
//!   [`Round`] to read ([`Round::form`] gives the form under a key as the author's own
//!   `ElicitForm` type with its offered choices) and answer ([`Round::accept`],
//!   [`Round::decline`], [`Round::cancel`]) before [`Round::retry`].
//! - **Tasks**: [`Client::call_tool_as_task`] calls a tool with the tasks extension declared
//!   and returns a [`ToolTask`]: [`ToolTask::wait`] polls `tasks/get` with backoff until the
//!   result (answering input rounds inside the task with the handlers) or a deadline,
//!   [`ToolTask::cancel`] sends `tasks/cancel`.
//! - **By hand**: [`Client::resume`] retries a `tools/call` with any `inputResponses` and
//!   `requestState`; [`Client::request`] sends any method with any params (this handle's
//!   `_meta` merged in).
//! - **OAuth** (feature `client-oauth`): `HttpTransport::oauth` with an `oauth::OAuthClient`
//!   authorizes on the server's 401 (discovery, PKCE authorization code flow, registration,
//!   refresh, step-up on 403 `insufficient_scope`); see the `oauth` module.
//! - **Errors**: [`ClientError`] types `-32020`, `-32021`, `-32022`, `-32602` and `-32601` with
//!   their `data`.
//!
//! Every call has a deadline ([`ClientBuilder::timeout`]), every round loop a cap, every
//! response a size bound (on the byte transports). A request the client gives up on (its
//! deadline passed, or the caller dropped the call) is cancelled on the server: over stdio with
//! `notifications/cancelled` naming it, over HTTP and in process by dropping it (see
//! [`Transport::cancel`]).
//!
//! # Example: test an elicitating tool in-process
//!
//! ```
//! use mcp_runtime::client::Client;
//! use mcp_runtime::prelude::*;
//!
//! #[derive(ElicitForm)]
//! struct Confirm {
//!     /// Really?
//!     sure: bool,
//! }
//!
//! /// Asks before it answers.
//! #[tool(requires(form_elicitation))]
//! async fn careful(ctx: &mut RequestContext) -> ToolResult<String> {
//!     match ctx.elicit::<Confirm>("confirm", "Sure?", ()).await? {
//!         Elicitation::Accepted(c) if c.sure => Ok("done".into()),
//!         _ => Ok("not done".into()),
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::builder(Implementation::new("demo", "1.0")).tools(tools![careful]).build()?;
//! let client = Client::in_process(server, Principal::new("me"));
//! let mut round = client.call("careful", ()).await?.pending()?;
//! assert_eq!(round.form::<Confirm>("confirm")?.fields(), ["sure"]);
//! round.accept("confirm", &Confirm { sure: true })?;
//! assert_eq!(round.retry().await?.complete()?.text(), "done");
//! # Ok(())
//! # }
//! ```

// A pending round is returned by value in `Step`: boxing it would only add noise for every
// caller of a non-hot path (the same trade-off as mcp-types).
#![allow(clippy::large_enum_variant)]

mod error;
mod handlers;
mod http;
#[cfg(feature = "client-oauth")]
pub mod oauth;
mod param_headers;
mod round;
mod stdio;
mod task;
mod transport;

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use mcp_types::{
    CallToolResult, ClientCapabilities, CompleteResult, CompletionArgument, CompletionContext,
    CompletionReference, DiscoverResult, ElicitationCapability, GetPromptResult, Implementation,
    InputResponses, JsonObject, JsonRpcErrorResponse, JsonRpcMessage, JsonRpcRequest,
    LATEST_PROTOCOL_VERSION, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, MaybeInputRequired, ReadResourceResult, RequestId, RequestMeta, Tool,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use error::ClientError;
pub use handlers::InputHandlers;
pub use http::HttpTransport;
pub use round::{FormRequest, Round, Step};
pub use stdio::StdioTransport;
pub use task::{DEFAULT_POLL_CAP, FIRST_POLL, MAX_POLL, ToolTask};
pub use transport::{InProcess, Outgoing, Transport};

use mcp_types::ParamHeaderRule as HeaderRule;

use crate::server::Server;

/// Configures a [`Client`].
#[derive(Debug)]
pub struct ClientBuilder {
    transport: Arc<dyn Transport>,
    info: Implementation,
    capabilities: Option<ClientCapabilities>,
    protocol_version: String,
    handlers: InputHandlers,
    max_rounds: usize,
    timeout: Duration,
    retry_version: bool,
}

impl std::fmt::Debug for dyn Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Transport")
    }
}

impl ClientBuilder {
    /// Default cap on automatic rounds.
    pub const DEFAULT_MAX_ROUNDS: usize = 8;
    /// Default deadline of one request.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

    /// `clientInfo` sent in every request's `_meta` (default `mcp-runtime-client`).
    #[must_use]
    pub fn client_info(mut self, info: Implementation) -> Self {
        self.info = info;
        self
    }

    /// The capabilities declared in every request's `_meta`, replacing the default (form and
    /// URL elicitation, plus what the registered handlers serve).
    #[must_use]
    pub fn capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.capabilities = Some(capabilities);
        self
    }

    /// The protocol version sent in every request (default the latest, `2026-07-28`).
    #[must_use]
    pub fn protocol_version(mut self, version: impl Into<String>) -> Self {
        self.protocol_version = version.into();
        self
    }

    /// The handlers of automatic mode; each also declares its capability.
    #[must_use]
    pub fn handlers(mut self, handlers: InputHandlers) -> Self {
        self.handlers = handlers;
        self
    }

    /// How many `input_required` rounds automatic mode answers before it gives up with
    /// [`ClientError::TooManyRounds`] (default [`Self::DEFAULT_MAX_ROUNDS`], at least 1).
    #[must_use]
    pub fn max_rounds(mut self, rounds: usize) -> Self {
        self.max_rounds = rounds.max(1);
        self
    }

    /// Whether a request refused with `-32022` is re-sent once with a version from
    /// `data.supported` that this client speaks (default on; turn it off to observe the
    /// error itself).
    #[must_use]
    pub fn retry_supported_version(mut self, retry: bool) -> Self {
        self.retry_version = retry;
        self
    }

    /// The deadline of each request (default [`Self::DEFAULT_TIMEOUT`]). A request that
    /// passes it is cancelled on the server, then fails with [`ClientError::Timeout`].
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Builds the client.
    pub fn build(self) -> Client {
        let base = self.capabilities.unwrap_or_else(|| {
            ClientCapabilities::none().with_elicitation(ElicitationCapability::form_and_url())
        });
        let capabilities = self.handlers.declare(base);
        let meta = RequestMeta {
            protocol_version: self.protocol_version,
            client_capabilities: capabilities,
            client_info: Some(self.info),
            log_level: None,
            progress_token: None,
            extra: JsonObject::new(),
        };
        Client {
            inner: Arc::new(Inner {
                transport: self.transport,
                handlers: self.handlers,
                max_rounds: self.max_rounds,
                timeout: self.timeout,
                retry_version: self.retry_version,
                next_id: AtomicI64::new(1),
                tool_headers: Mutex::new(HashMap::new()),
            }),
            meta,
        }
    }
}

struct Inner {
    transport: Arc<dyn Transport>,
    handlers: InputHandlers,
    max_rounds: usize,
    timeout: Duration,
    retry_version: bool,
    next_id: AtomicI64,
    /// `x-mcp-header` rules of the tools seen in `tools/list`, by tool name.
    tool_headers: Mutex<HashMap<String, Vec<HeaderRule>>>,
}

/// A typed MCP client. Cheap to clone; clones share the transport and the request ids.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    meta: RequestMeta,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("meta", &self.meta)
            .field("handlers", &self.inner.handlers)
            .finish_non_exhaustive()
    }
}

/// The parts of an MRTR-capable request that every round repeats.
#[derive(Debug, Clone)]
pub(crate) struct MrtrCall {
    method: &'static str,
    params: JsonObject,
}

impl Client {
    /// Starts configuring a client over `transport`.
    pub fn builder(transport: impl Transport) -> ClientBuilder {
        ClientBuilder {
            transport: Arc::new(transport),
            info: Implementation::new("mcp-runtime-client", env!("CARGO_PKG_VERSION")),
            capabilities: None,
            protocol_version: LATEST_PROTOCOL_VERSION.to_owned(),
            handlers: InputHandlers::default(),
            max_rounds: ClientBuilder::DEFAULT_MAX_ROUNDS,
            timeout: ClientBuilder::DEFAULT_TIMEOUT,
            retry_version: true,
        }
    }

    /// A client of `server` in this process, authenticated as `grant` (a plain [`Principal`](crate::Principal)
    /// is a local grant without scopes; [`Grant::scoped`](crate::service::Grant::scoped)
    /// tests what a token with those scopes may do), with the default settings (form and URL
    /// elicitation declared, no handlers): the test harness.
    pub fn in_process(server: Server, grant: impl Into<crate::service::Grant>) -> Client {
        Self::builder(InProcess::new(server, grant)).build()
    }

    /// The `_meta` sent with every request through this handle.
    pub fn meta(&self) -> &RequestMeta {
        &self.meta
    }

    /// A handle whose requests carry `meta` instead (same transport, same ids).
    #[must_use]
    pub fn with_meta(&self, meta: RequestMeta) -> Client {
        Client {
            inner: self.inner.clone(),
            meta,
        }
    }

    /// A handle whose requests declare `capabilities` instead.
    #[must_use]
    pub fn with_capabilities(&self, capabilities: ClientCapabilities) -> Client {
        let mut meta = self.meta.clone();
        meta.client_capabilities = capabilities;
        self.with_meta(meta)
    }

    /// `server/discover`.
    pub async fn discover(&self) -> Result<DiscoverResult, ClientError> {
        self.request("server/discover", JsonObject::new()).await
    }

    /// One page of `tools/list`. Tools whose `x-mcp-header` annotations break the spec's rules
    /// are dropped (a call to them could not be sent correctly over HTTP); the others' header
    /// rules are remembered for `tools/call`.
    pub async fn list_tools(&self, cursor: Option<&str>) -> Result<ListToolsResult, ClientError> {
        let mut result: ListToolsResult = self.request("tools/list", cursor_params(cursor)).await?;
        result.tools.retain(|tool| self.remember_tool(tool));
        Ok(result)
    }

    /// Every page of `tools/list` (at most 1000 pages).
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>, ClientError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..1000 {
            let page = self.list_tools(cursor.as_deref()).await?;
            tools.extend(page.tools);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(tools),
            }
        }
        Err(ClientError::Protocol {
            method: "tools/list".into(),
            detail: "more than 1000 pages; the server's cursors never end".into(),
        })
    }

    fn remember_tool(&self, tool: &Tool) -> bool {
        let Ok(rules) = param_headers::rules(tool) else {
            return false;
        };
        if let Ok(mut map) = self.inner.tool_headers.lock() {
            if rules.is_empty() {
                map.remove(&tool.name);
            } else {
                map.insert(tool.name.clone(), rules);
            }
        }
        true
    }

    /// `tools/call`, step by step: the complete result or a pending round. `arguments` is any
    /// value serializing to a JSON object (or `()` for none).
    pub async fn call(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<Step<CallToolResult>, ClientError> {
        let call = self.tool_call(name, arguments)?;
        self.mrtr_step(call, None, None, 1).await
    }

    /// `tools/call` in automatic mode: every round is answered by the handlers.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, ClientError> {
        let call = self.tool_call(name, arguments)?;
        self.mrtr_auto(call).await
    }

    /// `tools/call` resumed by hand: sends `responses` as `inputResponses` and
    /// `request_state` verbatim (the client never reads it), and returns the next [`Step`].
    ///
    /// [`Round::retry`] is the usual way to answer a round; this is the escape hatch around
    /// it, for a client that kept a round's `requestState` elsewhere (to finish the call after
    /// a restart, or on another connection to another instance), and for tests of a server's
    /// state checks: a state replayed after use, tampered with, expired, moved to another tool
    /// or arguments, or answers that [`Round`]'s typed constructors would refuse to build
    /// (insert raw JSON into `responses.0`). A returned pending round is numbered 2.
    pub async fn resume(
        &self,
        name: &str,
        arguments: impl Serialize,
        responses: InputResponses,
        request_state: Option<&str>,
    ) -> Result<Step<CallToolResult>, ClientError> {
        let call = self.tool_call(name, arguments)?;
        let state = request_state.map(str::to_owned);
        self.mrtr_step(call, Some(responses), state, 2).await
    }

    fn tool_call(&self, name: &str, arguments: impl Serialize) -> Result<MrtrCall, ClientError> {
        let mut params = JsonObject::new();
        params.insert("name".into(), Value::String(name.to_owned()));
        if let Some(args) = arguments_object(arguments)? {
            params.insert("arguments".into(), Value::Object(args));
        }
        Ok(MrtrCall {
            method: "tools/call",
            params,
        })
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListPromptsResult, ClientError> {
        self.request("prompts/list", cursor_params(cursor)).await
    }

    /// `prompts/get`, step by step.
    pub async fn get_prompt_step(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<Step<GetPromptResult>, ClientError> {
        let call = self.prompt_call(name, arguments)?;
        self.mrtr_step(call, None, None, 1).await
    }

    /// `prompts/get` in automatic mode.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<GetPromptResult, ClientError> {
        let call = self.prompt_call(name, arguments)?;
        self.mrtr_auto(call).await
    }

    fn prompt_call(&self, name: &str, arguments: impl Serialize) -> Result<MrtrCall, ClientError> {
        let mut params = JsonObject::new();
        params.insert("name".into(), Value::String(name.to_owned()));
        if let Some(args) = arguments_object(arguments)? {
            params.insert("arguments".into(), Value::Object(args));
        }
        Ok(MrtrCall {
            method: "prompts/get",
            params,
        })
    }

    /// One page of `resources/list`.
    pub async fn list_resources(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourcesResult, ClientError> {
        self.request("resources/list", cursor_params(cursor)).await
    }

    /// One page of `resources/templates/list`.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourceTemplatesResult, ClientError> {
        self.request("resources/templates/list", cursor_params(cursor))
            .await
    }

    /// `resources/read`, step by step.
    pub async fn read_resource_step(
        &self,
        uri: &str,
    ) -> Result<Step<ReadResourceResult>, ClientError> {
        self.mrtr_step(resource_call(uri), None, None, 1).await
    }

    /// `resources/read` in automatic mode.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        self.mrtr_auto(resource_call(uri)).await
    }

    /// `completion/complete` of argument `name` (typed so far: `value`) of a prompt or
    /// resource template, with already-resolved arguments in `context`.
    pub async fn complete(
        &self,
        reference: CompletionReference,
        name: &str,
        value: &str,
        context: Option<CompletionContext>,
    ) -> Result<CompleteResult, ClientError> {
        let mut params = JsonObject::new();
        let encode = |v: Result<Value, serde_json::Error>| {
            v.map_err(|e| ClientError::Request(format!("cannot encode completion params: {e}")))
        };
        params.insert("ref".into(), encode(serde_json::to_value(&reference))?);
        let argument = CompletionArgument {
            name: name.to_owned(),
            value: value.to_owned(),
            extra: JsonObject::new(),
        };
        params.insert("argument".into(), encode(serde_json::to_value(&argument))?);
        if let Some(context) = context {
            params.insert("context".into(), encode(serde_json::to_value(&context))?);
        }
        self.request("completion/complete", params).await
    }

    /// Any request, with this handle's `_meta` added (keys already in `params._meta` win), its
    /// result decoded as `T`.
    pub async fn request<T: DeserializeOwned>(
        &self,
        method: &str,
        params: JsonObject,
    ) -> Result<T, ClientError> {
        let result = self.send(method, params).await?;
        decode(method, result)
    }

    /// Sends a notification (no response).
    pub async fn notify(&self, method: &str, params: JsonObject) -> Result<(), ClientError> {
        let mut message = JsonObject::new();
        message.insert("jsonrpc".into(), Value::String("2.0".into()));
        message.insert("method".into(), Value::String(method.to_owned()));
        message.insert("params".into(), Value::Object(params));
        let body = serde_json::to_vec(&message)
            .map_err(|e| ClientError::Request(format!("cannot encode {method}: {e}")))?;
        let outgoing = Outgoing {
            body: Bytes::from(body),
            method: method.to_owned(),
            name: None,
            protocol_version: self.meta.protocol_version.clone(),
            param_headers: Vec::new(),
            is_notification: true,
            id: None,
        };
        self.bounded(method, self.inner.transport.send(&outgoing))
            .await
            .map(|_| ())
    }

    async fn bounded<T>(
        &self,
        method: &str,
        fut: impl Future<Output = Result<T, ClientError>>,
    ) -> Result<T, ClientError> {
        match tokio::time::timeout(self.inner.timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(ClientError::Timeout {
                method: method.to_owned(),
                after: self.inner.timeout,
            }),
        }
    }

    /// Sends one request and waits for its response within the deadline. A request the client
    /// gives up on is cancelled on the server, as the spec's cancellation rules ask: on the
    /// deadline before [`ClientError::Timeout`] is returned, and when the caller drops the call
    /// (then from a spawned task).
    async fn exchange(&self, outgoing: &Outgoing) -> Result<Value, ClientError> {
        let mut armed = CancelOnDrop {
            transport: self.inner.transport.clone(),
            request: Some(outgoing.clone()),
        };
        let sent = tokio::time::timeout(self.inner.timeout, self.inner.transport.send(outgoing));
        match sent.await {
            Ok(response) => {
                armed.request = None;
                response
            }
            Err(_) => {
                // The send future is gone by now (a late response finds no waiter); tell the
                // server before reporting the timeout.
                armed.request = None;
                let reason = format!("no response within {:?}", self.inner.timeout);
                let cancel = self.inner.transport.cancel(outgoing, &reason);
                let _ = tokio::time::timeout(CANCEL_DEADLINE, cancel).await;
                Err(ClientError::Timeout {
                    method: outgoing.method.clone(),
                    after: self.inner.timeout,
                })
            }
        }
    }

    /// Sends one request; on `-32022` whose `data.supported` lists a version this client
    /// speaks, re-sends it once (new id) with that version.
    async fn send(&self, method: &str, params: JsonObject) -> Result<JsonObject, ClientError> {
        match self.send_once(method, params.clone(), None).await {
            Err(ClientError::UnsupportedVersion {
                data: Some(data), ..
            }) if self.inner.retry_version
                && data.supported.iter().any(|v| v == LATEST_PROTOCOL_VERSION) =>
            {
                self.send_once(method, params, Some(LATEST_PROTOCOL_VERSION))
                    .await
            }
            other => other,
        }
    }

    async fn send_once(
        &self,
        method: &str,
        mut params: JsonObject,
        version: Option<&str>,
    ) -> Result<JsonObject, ClientError> {
        let mut meta = match serde_json::to_value(&self.meta) {
            Ok(Value::Object(m)) => m,
            _ => JsonObject::new(),
        };
        if let Some(Value::Object(own)) = params.remove("_meta") {
            meta.extend(own);
        }
        if let Some(version) = version {
            meta.insert(
                mcp_types::PROTOCOL_VERSION_KEY.into(),
                Value::String(version.to_owned()),
            );
        }
        let protocol_version = meta
            .get(mcp_types::PROTOCOL_VERSION_KEY)
            .and_then(Value::as_str)
            .unwrap_or(&self.meta.protocol_version)
            .to_owned();
        params.insert("_meta".into(), Value::Object(meta));
        let name = match method {
            "tools/call" | "prompts/get" => params.get("name"),
            "resources/read" => params.get("uri"),
            // Over HTTP the task methods name their task in `Mcp-Name`.
            mcp_types::METHOD_TASKS_GET
            | mcp_types::METHOD_TASKS_UPDATE
            | mcp_types::METHOD_TASKS_CANCEL => params.get("taskId"),
            _ => None,
        }
        .and_then(Value::as_str)
        .map(str::to_owned);
        let param_headers = match (method, &name) {
            ("tools/call", Some(tool)) => {
                let rules = self
                    .inner
                    .tool_headers
                    .lock()
                    .ok()
                    .and_then(|m| m.get(tool).cloned())
                    .unwrap_or_default();
                let args = match params.get("arguments") {
                    Some(Value::Object(a)) => Some(a),
                    _ => None,
                };
                param_headers::headers(&rules, args)
            }
            _ => Vec::new(),
        };
        let id = RequestId::Number(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let request = JsonRpcRequest {
            jsonrpc: mcp_types::JsonRpcVersion,
            id: id.clone(),
            method: method.to_owned(),
            params: Some(params),
        };
        let body = serde_json::to_vec(&request)
            .map_err(|e| ClientError::Request(format!("cannot encode {method}: {e}")))?;
        let outgoing = Outgoing {
            body: Bytes::from(body),
            method: method.to_owned(),
            name,
            protocol_version,
            param_headers,
            is_notification: false,
            id: Some(id.clone()),
        };
        let response = self.exchange(&outgoing).await?;
        let protocol = |detail: String| ClientError::Protocol {
            method: method.to_owned(),
            detail,
        };
        match mcp_types::classify(&response) {
            Ok(JsonRpcMessage::Response(r)) if r.id == id => Ok(r.result),
            Ok(JsonRpcMessage::ErrorResponse(JsonRpcErrorResponse { id: rid, error, .. }))
                if rid.as_ref().is_none_or(|r| *r == id) =>
            {
                Err(ClientError::from_error(error))
            }
            Ok(JsonRpcMessage::Response(r)) => Err(protocol(format!(
                "response id {} does not match request id {id}",
                r.id
            ))),
            Ok(_) => Err(protocol("expected a response, got another message".into())),
            Err(e) => Err(protocol(format!(
                "not a JSON-RPC response ({})",
                e.error.message()
            ))),
        }
    }

    pub(crate) async fn mrtr_step<T: DeserializeOwned>(
        &self,
        call: MrtrCall,
        responses: Option<InputResponses>,
        state: Option<String>,
        number: usize,
    ) -> Result<Step<T>, ClientError> {
        let mut params = call.params.clone();
        if let Some(responses) = responses {
            let v = serde_json::to_value(&responses)
                .map_err(|e| ClientError::Request(format!("cannot encode inputResponses: {e}")))?;
            params.insert("inputResponses".into(), v);
        }
        if let Some(state) = state {
            params.insert("requestState".into(), Value::String(state));
        }
        let result = self.send(call.method, params).await?;
        if result.get("resultType").and_then(Value::as_str) == Some("task") {
            return Err(ClientError::Protocol {
                method: call.method.to_owned(),
                detail: "the server started a task (resultType \"task\") because this request declared the tasks extension; call it with Client::call_tool_as_task, which waits for the task".into(),
            });
        }
        match decode::<MaybeInputRequired<T>>(call.method, result)? {
            MaybeInputRequired::Complete(t) => Ok(Step::Complete(t)),
            MaybeInputRequired::InputRequired(result) => Ok(Step::Pending(Round {
                client: self.clone(),
                call,
                result,
                responses: InputResponses::new(),
                number,
                marker: PhantomData,
            })),
        }
    }

    async fn mrtr_auto<T: DeserializeOwned>(&self, call: MrtrCall) -> Result<T, ClientError> {
        let mut step = self.mrtr_step(call, None, None, 1).await?;
        loop {
            let mut round = match step {
                Step::Complete(t) => return Ok(t),
                Step::Pending(round) => round,
            };
            if round.number() > self.inner.max_rounds {
                return Err(ClientError::TooManyRounds {
                    rounds: self.inner.max_rounds,
                });
            }
            let requests: Vec<_> = round
                .input_requests()
                .map(|r| r.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default();
            for (key, request) in requests {
                let answer = self.inner.handlers.answer(&key, &request).await?;
                round.answer(&key, answer)?;
            }
            step = round.retry().await?;
        }
    }
}

/// How long the client spends telling a server that it gave up on a request.
const CANCEL_DEADLINE: Duration = Duration::from_secs(1);

/// Cancels a request on the server if its call is dropped before the response arrived.
struct CancelOnDrop {
    transport: Arc<dyn Transport>,
    /// `Some` while the request is unanswered.
    request: Option<Outgoing>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(request) = self.request.take() else {
            return;
        };
        // Dropped outside a runtime (the runtime itself is going away): nothing can be sent.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let transport = self.transport.clone();
        runtime.spawn(async move {
            let cancel = transport.cancel(&request, "the client dropped the request");
            let _ = tokio::time::timeout(CANCEL_DEADLINE, cancel).await;
        });
    }
}

fn resource_call(uri: &str) -> MrtrCall {
    let mut params = JsonObject::new();
    params.insert("uri".into(), Value::String(uri.to_owned()));
    MrtrCall {
        method: "resources/read",
        params,
    }
}

fn cursor_params(cursor: Option<&str>) -> JsonObject {
    let mut params = JsonObject::new();
    if let Some(c) = cursor {
        params.insert("cursor".into(), Value::String(c.to_owned()));
    }
    params
}

fn arguments_object(arguments: impl Serialize) -> Result<Option<JsonObject>, ClientError> {
    match serde_json::to_value(arguments) {
        Ok(Value::Object(o)) => Ok(Some(o)),
        Ok(Value::Null) => Ok(None),
        Ok(other) => Err(ClientError::Request(format!(
            "arguments must serialize to a JSON object (or unit for none), got {other}"
        ))),
        Err(e) => Err(ClientError::Request(format!(
            "cannot encode the arguments: {e}"
        ))),
    }
}

fn decode<T: DeserializeOwned>(method: &str, result: JsonObject) -> Result<T, ClientError> {
    serde_json::from_value(Value::Object(result)).map_err(|e| ClientError::Protocol {
        method: method.to_owned(),
        detail: format!("the result does not have the expected shape ({e})"),
    })
}
