//! One 2025-11-25 session: the `initialize` handshake, then every request forwarded to the
//! modern core, with input rounds turned into live server-to-client requests.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use mcp_types::{
    CLIENT_CAPABILITIES_KEY, ErrorCode, ErrorObject, JsonObject, JsonRpcErrorResponse,
    LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY, RequestId, SERVER_INFO_KEY,
};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use super::{LEGACY_PROTOCOL_VERSION, MAX_ADAPTER_ROUNDS};
use crate::Principal;
use crate::log_safe::LogSafe;
use crate::observe::RequestObserver;
use crate::server::InvalidLimit;
use crate::server::limits::nonzero;
use crate::service::{
    CancellationToken, Grant, McpService, Message, NotificationSink, Reply, RequestScope,
};

/// A response the client sent to one of our requests: `Ok(result)` or `Err(error object)`.
type ClientAnswer = Result<Value, Value>;

/// How long a session waits for a client to answer one server-to-client request
/// (`elicitation/create`, `roots/list`, `sampling/createMessage`) unless configured otherwise:
/// 5 minutes, time for a person to read and fill in a form; an abandoned dialog does not pin
/// the request for longer.
pub const DEFAULT_INPUT_TIMEOUT: Duration = Duration::from_secs(300);

/// JSON-RPC error code for a request abandoned because the client did not answer in time
/// (the code widely deployed 2025-11-25 client SDKs name "request timed out").
pub const INPUT_TIMEOUT_CODE: ErrorCode = ErrorCode::Other(-32001);

/// How many timed-out request ids a session remembers, to answer a late reply clearly.
const REMEMBERED_TIMEOUTS: usize = 64;

/// The time limits of one session: start from [`SessionLimits::default`] and change them with
/// the `with_*` setters; read them back with the getters of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionLimits {
    pub(crate) request_timeout: Option<Duration>,
    pub(crate) input_timeout: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            request_timeout: None,
            input_timeout: DEFAULT_INPUT_TIMEOUT,
        }
    }
}

impl SessionLimits {
    /// How long one pass through the server's own dispatch (one input round) may run; `None`
    /// (the default): no limit (stdio, where the client cancels). Over HTTP:
    /// [`LegacyHttpConfig::request_timeout`](super::http::LegacyHttpConfig::request_timeout).
    pub fn request_timeout(&self) -> Option<Duration> {
        self.request_timeout
    }

    /// Sets [`SessionLimits::request_timeout`] (default `None`: no limit).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for `Some(Duration::ZERO)` (write `None` for no limit).
    pub fn with_request_timeout(mut self, timeout: Option<Duration>) -> Result<Self, InvalidLimit> {
        self.request_timeout = timeout.map(|t| nonzero("request_timeout", t)).transpose()?;
        Ok(self)
    }

    /// How long the session waits for the client's answer to one of its requests. When it
    /// expires the request is cancelled (`notifications/cancelled` to the client), the call
    /// that needed it is answered with a timeout (a `tools/call` with an `isError` result
    /// saying the user did not answer in time, other methods with error
    /// [`INPUT_TIMEOUT_CODE`]), and a late answer is refused as such. Default
    /// [`DEFAULT_INPUT_TIMEOUT`].
    pub fn input_timeout(&self) -> Duration {
        self.input_timeout
    }

    /// Sets [`SessionLimits::input_timeout`] (default [`DEFAULT_INPUT_TIMEOUT`], 5 minutes).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for zero (every question would time out at once).
    pub fn with_input_timeout(mut self, timeout: Duration) -> Result<Self, InvalidLimit> {
        self.input_timeout = nonzero("input_timeout", timeout)?;
        Ok(self)
    }
}

/// What became of a response the client sent ([`LegacySession::deliver_response`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// It answered a request of ours that was waiting.
    Delivered,
    /// It answers a request of ours that was cancelled after waiting
    /// [`SessionLimits::input_timeout`]; it was discarded. `message` explains this to the
    /// client.
    TimedOut {
        /// A sentence for the client: what was cancelled, when, and what to do.
        message: String,
    },
    /// Nothing of ours waits for that id (already answered, never sent, or no id).
    Unknown,
}

/// A request of ours the client did not answer in time.
struct Expired {
    /// The id, serialized (the `waiting` key).
    id: String,
    method: String,
}

/// One 2025-11-25 session over some byte transport.
///
/// The transport feeds it every message it reads ([`LegacySession::handle_request`],
/// [`LegacySession::handle_notification`], [`LegacySession::deliver_response`]) and writes
/// every message that appears on the outgoing channel given to [`LegacySession::new`]
/// (server-to-client requests and notifications; responses are returned to the caller).
pub struct LegacySession {
    /// The modern core, reached only through the service seam.
    service: Arc<dyn McpService>,
    /// What the session was opened under; each request may bring its own (HTTP: each POST
    /// is authenticated anew, see [`LegacySession::handle_request_granted`]).
    grant: Grant,
    out: mpsc::Sender<Bytes>,
    /// The client's capabilities from `initialize`, modern-shaped; `None` before it.
    client_caps: Mutex<Option<Value>>,
    /// `logging/setLevel`, forwarded as the modern per-request `logLevel`.
    log_level: Mutex<Option<Value>>,
    initialized: AtomicBool,
    /// Our requests to the client still awaiting an answer, by id.
    waiting: Mutex<HashMap<String, oneshot::Sender<ClientAnswer>>>,
    /// Our requests cancelled for want of an answer, newest last (bounded).
    expired: Mutex<VecDeque<Expired>>,
    next_id: AtomicU64,
    limits: SessionLimits,
}

impl std::fmt::Debug for LegacySession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacySession")
            .field("principal", &self.grant.principal)
            .field("initialized", &self.initialized.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Why a forwarded request failed: an error object to answer the client with.
type Failure = Value;

/// Why asking the client failed.
enum AskFailure {
    /// It did not answer within [`SessionLimits::input_timeout`]; the question was cancelled.
    TimedOut { method: String },
    /// Any other failure: an error object to answer the client with.
    Failed(Failure),
}

impl From<Failure> for AskFailure {
    fn from(failure: Failure) -> Self {
        Self::Failed(failure)
    }
}

impl LegacySession {
    /// A session for `grant` (the transport's authenticated identity, never `clientInfo`; a
    /// plain [`Principal`] is a local, unscoped grant) that writes outgoing messages to `out`,
    /// with [`SessionLimits::default`].
    ///
    /// `service` is the modern core: a [`Server`](crate::server::Server), or any
    /// `Arc<dyn McpService>` (e.g. a wrapper around one).
    pub fn new(
        service: impl Into<Arc<dyn McpService>>,
        grant: impl Into<Grant>,
        out: mpsc::Sender<Bytes>,
    ) -> Arc<Self> {
        Self::with_limits(service, grant, out, SessionLimits::default())
    }

    /// Like [`LegacySession::new`], with explicit time limits.
    pub fn with_limits(
        service: impl Into<Arc<dyn McpService>>,
        grant: impl Into<Grant>,
        out: mpsc::Sender<Bytes>,
        limits: SessionLimits,
    ) -> Arc<Self> {
        Arc::new(Self {
            service: service.into(),
            grant: grant.into(),
            out,
            client_caps: Mutex::new(None),
            log_level: Mutex::new(None),
            initialized: AtomicBool::new(false),
            waiting: Mutex::new(HashMap::new()),
            expired: Mutex::new(VecDeque::new()),
            next_id: AtomicU64::new(1),
            limits,
        })
    }

    /// Whether `initialize` succeeded on this session.
    pub fn is_initialized(&self) -> bool {
        self.client_caps
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// Handles one client request; returns the serialized response (result or error).
    /// `cancel` aborts it (client `notifications/cancelled`, transport gone).
    pub async fn handle_request(
        &self,
        id: &RequestId,
        method: &str,
        params: JsonObject,
        cancel: CancellationToken,
    ) -> Bytes {
        self.handle_request_via(id, method, params, cancel, &self.out)
            .await
    }

    /// Like [`LegacySession::handle_request`], but the request's server-to-client requests
    /// and notifications go to `out` instead of the session's channel. Streamable HTTP uses
    /// this: each POST has its own SSE response stream, and what a request asks the client
    /// must travel on that request's stream.
    pub async fn handle_request_via(
        &self,
        id: &RequestId,
        method: &str,
        params: JsonObject,
        cancel: CancellationToken,
        out: &mpsc::Sender<Bytes>,
    ) -> Bytes {
        self.handle_request_granted(&self.grant, id, method, params, cancel, out)
            .await
    }

    /// Like [`LegacySession::handle_request_via`], under `grant` rather than the session's
    /// own: what this request's credentials allow (the principal must be the session's).
    /// The core authorizes the forwarded request against it.
    pub async fn handle_request_granted(
        &self,
        grant: &Grant,
        id: &RequestId,
        method: &str,
        params: JsonObject,
        cancel: CancellationToken,
        out: &mpsc::Sender<Bytes>,
    ) -> Bytes {
        if self.answers_itself(method) {
            // Not forwarded, so no core span: the adapter's own answer gets the same one.
            let observer = RequestObserver::start(method, id, &self.grant.principal, || None, None);
            let work = async {
                let outcome = self.answer_own(method, params, out).await;
                own_reply(id, outcome)
            };
            return observer.run(work).await.body;
        }
        let outcome = self.forward(grant, id, method, params, &cancel, out).await;
        match outcome {
            Ok(result) => response_bytes(&json!({"jsonrpc": "2.0", "id": id, "result": result})),
            Err(error) => response_bytes(&json!({"jsonrpc": "2.0", "id": id, "error": error})),
        }
    }

    /// Whether the adapter answers `method` itself rather than forwarding it to the core.
    fn answers_itself(&self, method: &str) -> bool {
        matches!(method, "initialize" | "ping")
            || !self.is_initialized()
            || matches!(
                method,
                "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe"
            )
    }

    /// The adapter's own answer to a method it does not forward ([`Self::answers_itself`]).
    async fn answer_own(
        &self,
        method: &str,
        params: JsonObject,
        out: &mpsc::Sender<Bytes>,
    ) -> Result<Value, Failure> {
        match method {
            "initialize" => self.initialize(params, out).await,
            "ping" => Ok(json!({})),
            "logging/setLevel" if self.is_initialized() => self.set_level(&params),
            "resources/subscribe" | "resources/unsubscribe" if self.is_initialized() => {
                acknowledge_subscription(&params)
            }
            _ => Err(error_value(ErrorObject::invalid_request(
                "send `initialize` first: this server speaks 2025-11-25 on this connection only after the handshake",
            ))),
        }
    }

    /// Handles one client notification (`notifications/initialized`,
    /// `notifications/roots/list_changed`; others are ignored). `notifications/cancelled` is
    /// the transport's job: it cancels the request's token.
    pub fn handle_notification(&self, method: &str) {
        match method {
            "notifications/initialized" => self.initialized.store(true, Ordering::Relaxed),
            // Roots are never cached: every tool that needs them asks `roots/list` afresh.
            "notifications/roots/list_changed" => {
                tracing::debug!("legacy: client roots changed (not cached; nothing to do)");
            }
            _ => {}
        }
    }

    /// Routes a client response to the request of ours it answers: [`Delivery::Delivered`],
    /// [`Delivery::TimedOut`] for an answer to a request cancelled for want of an answer, or
    /// [`Delivery::Unknown`] when nothing waits for that id.
    pub fn deliver_response(&self, message: &Value) -> Delivery {
        let Some(id) = message.get("id").map(Value::to_string) else {
            return Delivery::Unknown;
        };
        let waiting = self
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        let Some(tx) = waiting else {
            return self.late_answer(&id);
        };
        let answer = match (message.get("result"), message.get("error")) {
            (Some(result), None) => Ok(result.clone()),
            (None, Some(error)) => Err(error.clone()),
            _ => Err(
                json!({"code": ErrorCode::InvalidRequest.code(), "message": "malformed response"}),
            ),
        };
        if tx.send(answer).is_ok() {
            Delivery::Delivered
        } else {
            // The asker gave up this very moment (timeout or cancel).
            self.late_answer(&id)
        }
    }

    /// The verdict on an answer to `id`, which nothing waits for any more.
    fn late_answer(&self, id: &str) -> Delivery {
        let expired = self.expired.lock().unwrap_or_else(PoisonError::into_inner);
        match expired.iter().find(|e| e.id == id) {
            Some(e) => Delivery::TimedOut {
                message: format!(
                    "Too late: the server cancelled `{}` (id {}) after waiting {} for an answer \
                     and sent notifications/cancelled for it; this answer was discarded and changed \
                     nothing. The request that asked has already been answered with a timeout: \
                     call it again to start over.",
                    e.method,
                    e.id,
                    human(self.limits.input_timeout)
                ),
            },
            None => Delivery::Unknown,
        }
    }

    /// The principal this session was opened for (HTTP binds its session id to it).
    pub fn principal(&self) -> &Principal {
        &self.grant.principal
    }

    /// Fails every request of ours still waiting (the client went away).
    pub fn close(&self) {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    async fn initialize(
        &self,
        params: JsonObject,
        out: &mpsc::Sender<Bytes>,
    ) -> Result<Value, Failure> {
        if self.is_initialized() {
            return Err(error_value(ErrorObject::invalid_request(
                "this connection is already initialized; `initialize` is sent once",
            )));
        }
        if !matches!(params.get("protocolVersion"), Some(Value::String(_))) {
            return Err(error_value(ErrorObject::invalid_params(
                "Invalid params: initialize needs \"protocolVersion\" (a string)",
            )));
        }
        let caps = match params.get("capabilities") {
            Some(Value::Object(c)) => modern_capabilities(c),
            None => Value::Object(Map::new()),
            Some(_) => {
                return Err(error_value(ErrorObject::invalid_params(
                    "Invalid params: \"capabilities\" must be an object",
                )));
            }
        };
        *self
            .client_caps
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(caps);
        // Capabilities, instructions and serverInfo come from the core's own discover result.
        let discover = self
            .dispatch_once(
                &self.grant,
                &RequestId::from("init"),
                mcp_types::METHOD_SERVER_DISCOVER,
                self.with_meta(JsonObject::new()),
                &CancellationToken::new(),
                out,
            )
            .await;
        let discover = match discover {
            Ok(d) => d,
            Err(e) => {
                *self
                    .client_caps
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = None;
                return Err(e);
            }
        };
        let mut result = Map::new();
        result.insert("protocolVersion".into(), LEGACY_PROTOCOL_VERSION.into());
        result.insert(
            "capabilities".into(),
            discover.get("capabilities").cloned().unwrap_or(json!({})),
        );
        let info = discover
            .get("_meta")
            .and_then(|m| m.get(SERVER_INFO_KEY))
            .cloned()
            .unwrap_or(json!({"name": "mcp-server", "version": "0"}));
        result.insert("serverInfo".into(), info);
        if let Some(instructions) = discover.get("instructions") {
            result.insert("instructions".into(), instructions.clone());
        }
        Ok(Value::Object(result))
    }

    fn set_level(&self, params: &JsonObject) -> Result<Value, Failure> {
        match params.get("level") {
            Some(level @ Value::String(_)) => {
                *self
                    .log_level
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(level.clone());
                Ok(json!({}))
            }
            _ => Err(error_value(ErrorObject::invalid_params(
                "Invalid params: logging/setLevel needs \"level\", e.g. \"info\"",
            ))),
        }
    }

    /// The request's params with the modern `_meta` this session implies added (the client's
    /// own `_meta` members, e.g. `progressToken`, are kept).
    fn with_meta(&self, mut params: JsonObject) -> JsonObject {
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        meta.insert(
            PROTOCOL_VERSION_KEY.into(),
            mcp_types::LATEST_PROTOCOL_VERSION.into(),
        );
        let caps = self
            .client_caps
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or(json!({}));
        meta.insert(CLIENT_CAPABILITIES_KEY.into(), caps);
        if let Some(level) = self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        {
            meta.insert(LOG_LEVEL_KEY.into(), level);
        }
        params.insert("_meta".into(), Value::Object(meta));
        params
    }

    /// Forwards a request to the core, fulfilling input rounds through the client.
    async fn forward(
        &self,
        grant: &Grant,
        id: &RequestId,
        method: &str,
        params: JsonObject,
        cancel: &CancellationToken,
        out: &mpsc::Sender<Bytes>,
    ) -> Result<Value, Failure> {
        let mut params = self.with_meta(params);
        for _ in 0..MAX_ADAPTER_ROUNDS {
            let mut result = self
                .dispatch_once(grant, id, method, params.clone(), cancel, out)
                .await?;
            if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
                strip_modern(&mut result);
                return Ok(result);
            }
            let requests = match result.get_mut("inputRequests").map(Value::take) {
                Some(Value::Object(r)) => r,
                _ => Map::new(),
            };
            let mut responses = Map::new();
            for (key, request) in requests {
                match self.ask_client(request, cancel, out).await {
                    Ok(answer) => {
                        responses.insert(key, answer);
                    }
                    Err(AskFailure::Failed(failure)) => return Err(failure),
                    Err(AskFailure::TimedOut { method: asked }) => {
                        return self.timed_out(method, &asked);
                    }
                }
            }
            match result.get_mut("requestState").map(Value::take) {
                Some(state @ Value::String(_)) => {
                    params.insert("requestState".into(), state);
                }
                _ => {
                    params.remove("requestState");
                }
            }
            params.insert("inputResponses".into(), Value::Object(responses));
        }
        Err(error_value(ErrorObject::internal_error(format!(
            "the request needed more than {MAX_ADAPTER_ROUNDS} rounds of input; giving up"
        ))))
    }

    /// The answer to a `method` request abandoned because the client did not answer `asked`
    /// in time. A `tools/call` gets a tool error result (the model sees it as the tool's
    /// outcome and can tell the user, or call again); other methods a JSON-RPC error.
    fn timed_out(&self, method: &str, asked: &str) -> Result<Value, Failure> {
        let limit = human(self.limits.input_timeout);
        let who = if asked == mcp_types::METHOD_ELICITATION_CREATE {
            format!("The user did not answer the form within {limit}")
        } else {
            format!(
                "The client did not answer `{}` within {limit}",
                LogSafe(asked)
            )
        };
        let text = format!(
            "{who}, so the request was cancelled before the server got an answer, and nothing \
             was done with one. Call it again to start over."
        );
        if method == mcp_types::METHOD_TOOLS_CALL {
            Ok(json!({"content": [{"type": "text", "text": text}], "isError": true}))
        } else {
            Err(json!({"code": INPUT_TIMEOUT_CODE.code(), "message": text}))
        }
    }

    /// One pass through the modern dispatch; `Ok(result)` or `Err(error object)`.
    async fn dispatch_once(
        &self,
        grant: &Grant,
        id: &RequestId,
        method: &str,
        params: JsonObject,
        cancel: &CancellationToken,
        out: &mpsc::Sender<Bytes>,
    ) -> Result<Value, Failure> {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let ctx = RequestScope::new(
            grant.clone(),
            NotificationSink::from_sender(out.clone(), cancel.clone()),
            cancel.clone(),
        );
        // Through the seam, as a transport would: the core applies the same size and depth
        // limits as to a modern message.
        let handled = self.service.handle(Message::from_value(request), ctx);
        let reply = match self.limits.request_timeout {
            Some(limit) => match tokio::time::timeout(limit, handled).await {
                Ok(reply) => reply,
                Err(_) => {
                    return Err(error_value(ErrorObject::internal_error(format!(
                        "Internal error: request timed out after {} ms",
                        limit.as_millis()
                    ))));
                }
            },
            None => handled.await,
        };
        let Some(reply) = reply else {
            return Err(error_value(ErrorObject::internal_error(
                "the server produced no response",
            )));
        };
        let mut response: Value = serde_json::from_slice(&reply.body).map_err(|e| {
            error_value(ErrorObject::internal_error(format!(
                "unreadable core response: {e}"
            )))
        })?;
        if let Some(error) = response.get_mut("error") {
            return Err(error.take());
        }
        match response.get_mut("result").map(Value::take) {
            Some(result @ Value::Object(_)) => Ok(result),
            _ => Err(error_value(ErrorObject::internal_error(
                "core response without a result",
            ))),
        }
    }

    /// Sends one modern input request (`{method, params}`) to the client as a live
    /// JSON-RPC request and waits for its answer, at most [`SessionLimits::input_timeout`].
    async fn ask_client(
        &self,
        mut request: Value,
        cancel: &CancellationToken,
        out: &mpsc::Sender<Bytes>,
    ) -> Result<Value, AskFailure> {
        let method = request
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut params = match request.get_mut("params").map(Value::take) {
            Some(Value::Object(p)) => p,
            _ => Map::new(),
        };
        if method == mcp_types::METHOD_ELICITATION_CREATE
            && params.get("mode").and_then(Value::as_str) == Some("url")
            && !params.contains_key("elicitationId")
        {
            // 2025-11-25 URL mode requires an id the client can report completion under.
            let id = crate::state::CorrelationId::random()
                .map_err(|e| error_value(ErrorObject::internal_error(e.to_string())))?;
            params.insert("elicitationId".into(), id.to_string().into());
        }
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let id = Value::String(format!("srv-{n}"));
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_string(), tx);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let gone = || {
            error_value(ErrorObject::internal_error(format!(
                "the client did not answer `{method}` (connection closed or request cancelled)"
            )))
        };
        if out.send(response_bytes(&message)).await.is_err() {
            self.waiting
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id.to_string());
            return Err(gone().into());
        }
        let mut rx = rx;
        let answer = tokio::select! {
            () = cancel.cancelled() => None,
            answer = tokio::time::timeout(self.limits.input_timeout, &mut rx) => match answer {
                Ok(answer) => answer.ok(),
                Err(_) if self.expire(&id, &method, out).await => {
                    return Err(AskFailure::TimedOut { method: method.clone() });
                }
                // Answered right at the deadline: the answer is (about to be) in `rx`, and
                // the client was told 202, so it counts.
                Err(_) => rx.await.ok(),
            },
        };
        match answer {
            Some(Ok(result)) => Ok(result),
            Some(Err(error)) => Err(AskFailure::Failed(error_value(
                ErrorObject::internal_error(format!(
                    "the client answered `{method}` with error {}: {}",
                    error.get("code").unwrap_or(&Value::Null),
                    error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("(no message)")
                )),
            ))),
            None => {
                self.waiting
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id.to_string());
                Err(gone().into())
            }
        }
    }

    /// Gives up on our request `id` (`method`) after [`SessionLimits::input_timeout`]:
    /// forgets it, remembers it as expired (so a late answer is told so), and cancels it on
    /// the client with `notifications/cancelled`, so its dialog can close. `false` when an
    /// answer was taken for delivery in the meantime (then nothing is cancelled).
    async fn expire(&self, id: &Value, method: &str, out: &mpsc::Sender<Bytes>) -> bool {
        let key = id.to_string();
        {
            // Under the `waiting` lock, so an answer racing the deadline either finds its
            // request (and counts) or finds it recorded as expired (and is told so).
            let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
            if waiting.remove(&key).is_none() {
                return false;
            }
            let mut expired = self.expired.lock().unwrap_or_else(PoisonError::into_inner);
            if expired.len() >= REMEMBERED_TIMEOUTS {
                expired.pop_front();
            }
            expired.push_back(Expired {
                id: key,
                method: method.to_owned(),
            });
        }
        let limit = human(self.limits.input_timeout);
        tracing::info!(
            request_id = %LogSafe(id),
            method = %LogSafe(method),
            principal = %LogSafe(&self.grant.principal),
            timeout = %limit,
            "legacy: no answer from the client in time; request cancelled"
        );
        let cancelled = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
            "requestId": id,
            "reason": format!("no answer within {limit}; the server stopped waiting"),
        }});
        // Bounded: a client that does not read its stream cannot hold the request here.
        let _ =
            tokio::time::timeout(CANCEL_SEND_TIMEOUT, out.send(response_bytes(&cancelled))).await;
        true
    }
}

/// A limit as people write it: whole seconds as `N s`, anything finer as `N ms`.
fn human(limit: Duration) -> String {
    if limit.subsec_millis() == 0 {
        format!("{} s", limit.as_secs())
    } else {
        format!("{} ms", limit.as_millis())
    }
}

/// How long `notifications/cancelled` may wait for room on the outgoing channel.
const CANCEL_SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// The client capabilities a 2025-11-25 client declared, in the modern shape (the two
/// revisions agree on `elicitation`, `sampling` and `roots`; anything else is dropped).
fn modern_capabilities(legacy: &JsonObject) -> Value {
    let mut caps = Map::new();
    for key in ["elicitation", "sampling", "roots"] {
        if let Some(Value::Object(v)) = legacy.get(key) {
            let mut v = v.clone();
            // `roots.listChanged` has no meaning per request.
            if key == "roots" {
                v.remove("listChanged");
            }
            caps.insert(key.into(), Value::Object(v));
        }
    }
    Value::Object(caps)
}

/// Removes members a 2025-11-25 client does not know.
fn strip_modern(result: &mut Value) {
    if let Value::Object(map) = result {
        map.remove("resultType");
        map.remove("ttlMs");
        map.remove("cacheScope");
        let empty = match map.get_mut("_meta") {
            Some(Value::Object(meta)) => {
                meta.remove(SERVER_INFO_KEY);
                meta.is_empty()
            }
            _ => false,
        };
        if empty {
            map.remove("_meta");
        }
    }
}

/// `resources/subscribe` / `resources/unsubscribe`: acknowledged with `{}` once `uri` is a
/// non-empty string. The 2026-07-28 core has no per-resource subscriptions and this adapter
/// has no standalone stream to carry `notifications/resources/updated`, so nothing is kept and
/// no update is ever sent (`initialize` does not advertise `resources.subscribe`); a client
/// that wants fresh contents reads the resource again.
fn acknowledge_subscription(params: &JsonObject) -> Result<Value, Value> {
    match params.get("uri") {
        Some(Value::String(uri)) if !uri.is_empty() => Ok(json!({})),
        _ => Err(error_value(ErrorObject::invalid_params(
            "`params.uri` must be the resource's URI (a non-empty string)",
        ))),
    }
}

/// The adapter's own answer as a [`Reply`], so its span records the outcome and error code.
fn own_reply(id: &RequestId, outcome: Result<Value, Failure>) -> Reply {
    match outcome {
        Ok(result) => Reply::result(response_bytes(
            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
        )),
        Err(error) => {
            let code = error
                .get("code")
                .and_then(Value::as_i64)
                .map_or(ErrorCode::InternalError, ErrorCode::from_code);
            let body = response_bytes(&json!({"jsonrpc": "2.0", "id": id, "error": error}));
            Reply::error(code, body)
        }
    }
}

fn error_value(error: ErrorObject) -> Value {
    serde_json::to_value(&error)
        .unwrap_or_else(|_| json!({"code": ErrorCode::InternalError.code(), "message": "error"}))
}

pub(super) fn response_bytes(message: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(message).unwrap_or_default())
}

/// A serialized error response (for the transport's own envelope errors).
pub(super) fn error_response(id: Option<&RequestId>, error: ErrorObject) -> Bytes {
    Bytes::from(
        serde_json::to_vec(&JsonRpcErrorResponse::new(id.cloned(), error)).unwrap_or_default(),
    )
}
