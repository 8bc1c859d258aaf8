//! One message in, at most one response out.

use std::borrow::Borrow;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use mcp_types::depth::{check_depth, value_depth_exceeds};
use mcp_types::{
    ErrorCode, ErrorObject, JsonObject, JsonRpcErrorResponse, MetaError, MetaField, RequestId,
    RequestMeta, ToolsCall, ToolsCallParams, classify_envelope,
};
use serde_json::Value;
use tracing::Instrument as _;

use super::reply::{
    cached_reply, call_result_reply_with_meta, error_body, error_reply, result_reply,
    serialize_error,
};
use super::request::{CallParts, Needs, RetryParts, Target};
use super::{SUPPORTED_VERSIONS, Server};
use crate::Principal;
use crate::handler_error::{HandlerErrorKind, settle};
use crate::observe::RequestObserver;
use crate::service::Body;
use crate::service::{McpService, Message, Reply, RequestScope};

impl Server {
    /// Handles one raw message with a full transport context (the in-process client's path;
    /// transports parse once and go through [`McpService::handle`]).
    pub(crate) async fn handle_raw(&self, bytes: &[u8], ctx: RequestScope) -> Option<Reply> {
        let limits = self.inner.limits;
        if bytes.len() > limits.max_message_bytes {
            return self.check_raw(bytes);
        }
        // UTF-8 checked once for both parsers below (see `Message::parse`).
        let text = std::str::from_utf8(bytes);
        if let Ok(text) = text
            && let Some(call) = ToolsCall::read_str(text)
        {
            return match self.start_call(Box::new(call), ctx) {
                Ok(job) => self.run_call(job).await,
                Err(reply) => Some(reply),
            };
        }
        // Parse first (serde_json bounds its own recursion at 128 levels), then check the depth
        // limit on the tree: far cheaper than a byte-by-byte prescan of every message. Only a
        // message that fails to parse is scanned, so one nested past the parser's own limit
        // still gets the "too deep" answer rather than a parse error.
        let parsed = match text {
            Ok(text) => serde_json::from_str::<Value>(text),
            Err(_) => serde_json::from_slice::<Value>(bytes),
        };
        match parsed {
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

    /// Answers one parsed message that is not a read `tools/call`.
    ///
    /// Not an `async fn`, and `'static`, like
    /// [`Server::run_call`](crate::server::Server::run_call): the envelope is taken apart here, so
    /// the future holds the request's parts once, and [`McpService::handle_owned`] boxes it as it
    /// is.
    fn dispatch(
        &self,
        value: Value,
        mut rctx: RequestScope,
    ) -> impl Future<Output = Option<Reply>> + Send + 'static {
        use futures::future::Either;
        let (id, method, params) = match envelope(value) {
            Ok(parts) => parts,
            Err(reply) => return Either::Left(std::future::ready(Some(reply))),
        };
        let Some(id) = id else {
            // Notifications (`notifications/cancelled` included) are accepted and never
            // answered; cancellation itself is the transport's job.
            return Either::Left(std::future::ready(None));
        };
        let params = params.unwrap_or_default();
        let adopted = rctx.take_span();
        let observer = RequestObserver::start(
            &method,
            &id,
            &rctx.grant.principal,
            || {
                ["name", "uri"]
                    .iter()
                    .find_map(|k| params.get(*k).and_then(Value::as_str))
            },
            adopted,
        );
        // The methods answered from what the server holds (lists, discover, completion)
        // answer here, so the common tree-path request owns no request state at all; the
        // rest (which hold the request's grant, context and parts across awaits) are boxed.
        if let Some(reply) = observer.in_span(|| {
            self.answer_at_once(&id, &method, &params, rctx.trace_context(), rctx.baggage())
        }) {
            return Either::Right(Either::Left(
                observer.run(std::future::ready(reply)).map(Some),
            ));
        }
        Either::Right(Either::Right(
            observer
                .run(Box::pin(Self::dispatch_request(
                    self.clone(),
                    id,
                    method,
                    params,
                    rctx,
                )))
                .map(Some),
        ))
    }

    /// The reply to a request that needs nothing but what the server holds (`_meta` checked
    /// first, as for every method), or `None` for a method that must run.
    fn answer_at_once(
        &self,
        id: &RequestId,
        method: &str,
        params: &JsonObject,
        transport_trace: Option<&crate::observe::TraceContext>,
        transport_baggage: Option<&crate::observe::Baggage>,
    ) -> Option<Reply> {
        let offered = &self.inner.offered;
        let pages = match method {
            mcp_types::METHOD_SERVER_DISCOVER => None,
            mcp_types::METHOD_TOOLS_LIST if offered.tools => Some(&self.inner.tools_list),
            mcp_types::METHOD_PROMPTS_LIST if offered.prompts => Some(&self.inner.prompts_list),
            mcp_types::METHOD_RESOURCES_LIST if offered.resources => {
                Some(&self.inner.resources_list)
            }
            mcp_types::METHOD_RESOURCES_TEMPLATES_LIST if offered.resources => {
                Some(&self.inner.templates_list)
            }
            mcp_types::METHOD_COMPLETION_COMPLETE if offered.completions => None,
            _ => return None,
        };
        match checked_meta(id, RequestMeta::from_params(params)) {
            Err(reply) => return Some(reply),
            Ok(meta) => {
                crate::observe::trace_in(&meta.extra, transport_trace, transport_baggage, None)
            }
        }
        Some(match (method, pages) {
            (_, Some(pages)) => paged_reply(id, pages, params),
            (mcp_types::METHOD_SERVER_DISCOVER, None) => {
                cached_reply(id, &self.inner.discover_json)
            }
            _ => self.complete(id, params.clone()),
        })
    }

    /// Answers one request (not a notification) taken out of its envelope that
    /// [`Server::answer_at_once`](crate::server::Server::answer_at_once) did not.
    #[allow(clippy::manual_async_fn)] // an `async fn` would store its arguments twice
    fn dispatch_request(
        server: Server,
        id: RequestId,
        method: String,
        params: JsonObject,
        rctx: RequestScope,
    ) -> impl Future<Output = Reply> + Send + 'static {
        async move {
            let (this, id, method) = (&server, &id, method.as_str());
            // Read onto the stack: most methods only check it. It is shared (`Arc`) where it is
            // handed on (a request context keeps it), which a list request never pays for.
            let meta = match checked_meta(id, RequestMeta::from_params(&params)) {
                Ok(meta) => meta,
                Err(reply) => return reply,
            };
            match method {
                mcp_types::METHOD_TOOLS_CALL if this.inner.offered.tools => {
                    // Taken apart before the await: a `match` would keep the whole `Result` there.
                    let params = match ToolsCallParams::from_object(params) {
                        Ok(params) => params,
                        Err(e) => return error_reply(Some(id), e),
                    };
                    this.call_tool(id, params, Arc::new(meta), rctx).await
                }
                // The rarer methods' futures are boxed (see `call_tool`): each would otherwise
                // add its whole state to the future of every request, tools/call included.
                mcp_types::METHOD_PROMPTS_GET if this.inner.offered.prompts => {
                    Box::pin(this.get_prompt(id, params, Arc::new(meta), rctx)).await
                }
                mcp_types::METHOD_RESOURCES_READ if this.inner.offered.resources => {
                    Box::pin(this.read_resource(id, params, Arc::new(meta), rctx)).await
                }
                mcp_types::METHOD_TASKS_GET
                | mcp_types::METHOD_TASKS_UPDATE
                | mcp_types::METHOD_TASKS_CANCEL
                    if this.inner.offered.tasks =>
                {
                    crate::observe::trace_in(
                        &meta.extra,
                        rctx.trace_context(),
                        rctx.baggage(),
                        None,
                    );
                    // `meta` moves into the box: borrowed here, it would stay in this future's
                    // layout (about 1 KiB) for every request.
                    Box::pin(async move {
                        this.task_method(id, method, params, &meta, &rctx.grant)
                            .await
                    })
                    .await
                }
                mcp_types::METHOD_SUBSCRIPTIONS_LISTEN if this.inner.offered.tasks => {
                    crate::observe::trace_in(
                        &meta.extra,
                        rctx.trace_context(),
                        rctx.baggage(),
                        None,
                    );
                    Box::pin(async move { this.listen(id, &params, &meta, rctx).await }).await
                }
                // Methods of capabilities this server does not advertise are not found; so is
                // `subscriptions/listen` without the tasks extension (task status is all it
                // serves: no listChanged/subscribe is advertised).
                other => error_reply(Some(id), ErrorObject::method_not_found(other)),
            }
        }
    }

    /// The synchronous start of a `tools/call` read into its parts ([`ToolsCall::read`]): the depth
    /// check (the reply when it fails) and the observer's start.
    /// [`Server::run_call`](crate::server::Server::run_call) does the rest.
    fn start_call(&self, call: Box<ToolsCall>, mut rctx: RequestScope) -> Result<CallJob, Reply> {
        let max_depth = self.inner.limits.max_depth;
        if call.exceeds_depth(max_depth) {
            return Err(too_deep(max_depth));
        }
        let ToolsCall {
            request_id: id,
            params,
            ..
        } = *call;
        let adopted = rctx.take_span();
        let observer = RequestObserver::start(
            mcp_types::METHOD_TOOLS_CALL,
            &id,
            &rctx.grant.principal,
            || Some(params.name.as_str()),
            adopted,
        );
        Ok(CallJob {
            id,
            params,
            rctx,
            observer,
        })
    }

    /// Dispatches a started `tools/call`: the rest of the checks
    /// [`Server::dispatch`](crate::server::Server::dispatch) makes on the tree of the same message,
    /// in the same order (`_meta`, tools offered), then the one tool run
    /// ([`Server::finish_call`](crate::server::Server::finish_call)).
    ///
    /// Not an `async fn`, and `'static`: the checks and the call's preparation run here, in
    /// the request's span, so the future holds only what lives across the tool's run, and it
    /// owns a handle to the server, so [`McpService::handle_owned`] boxes it as it is rather
    /// than a wrapper holding the call and it side by side. That box is allocated once per
    /// request; kept under 1 KiB it stays on the system allocator's fast path.
    fn run_call(&self, job: CallJob) -> impl Future<Output = Option<Reply>> + Send + 'static {
        let CallJob {
            id,
            mut params,
            rctx,
            observer,
        } = job;
        let step = observer.in_span(|| {
            let meta = match checked_meta(&id, params.take_shared_meta()) {
                Ok(meta) => meta,
                Err(reply) => return CallStep::Done(reply),
            };
            if !self.inner.offered.tools {
                return CallStep::Done(error_reply(
                    Some(&id),
                    ErrorObject::method_not_found(mcp_types::METHOD_TOOLS_CALL),
                ));
            }
            self.prepare_call(&id, params, meta, rctx)
        });
        observer
            .run(Self::finish_call(self.clone(), id, step))
            .map(Some)
    }

    /// What to do with a message a transport parsed, decided before any future is made: the
    /// size and depth limits, and the start of a read `tools/call`.
    fn route(&self, message: Message, ctx: RequestScope) -> Routed {
        // The transport parsed the message already (serde_json caps nesting at 128 while
        // parsing): check the size, then the depth limit on the parsed tree, which is far
        // cheaper than rescanning every byte of the raw message.
        let limits = self.inner.limits;
        if message.raw().len() > limits.max_message_bytes {
            return Routed::Ready(self.check_raw(message.raw()));
        }
        match message.into_body() {
            Body::Call(call) => match self.start_call(call, ctx) {
                Ok(job) => Routed::Call(job),
                Err(reply) => Routed::Ready(Some(reply)),
            },
            Body::Tree(value) => {
                if value_depth_exceeds(&value, limits.max_depth) {
                    return Routed::Ready(Some(too_deep(limits.max_depth)));
                }
                Routed::Tree(value, ctx)
            }
        }
    }

    /// Runs one `tools/call`, however its params were read.
    ///
    /// Not an `async fn`: the checks run before the future is made, so the future keeps only
    /// what lives across an await (the boxed context, the tool, its name). An `async fn`
    /// would store its arguments (the `_meta` alone is about 1 KiB) and every local for the
    /// whole call, and every request's future, allocated and copied once per request, would
    /// be that much larger.
    fn call_tool<'a>(
        &'a self,
        id: &'a RequestId,
        params: ToolsCallParams,
        meta: Arc<RequestMeta>,
        rctx: RequestScope,
    ) -> impl Future<Output = Reply> + Send + 'a {
        let step = self.prepare_call(id, params, meta, rctx);
        Self::finish_call(self, id, step)
    }

    /// The asynchronous part of a `tools/call` prepared by
    /// [`Server::prepare_call`](crate::server::Server::prepare_call): the tool's run (or the task's
    /// start) and the reply.
    ///
    /// Server and id are borrowed ([`Server::call_tool`](crate::server::Server::call_tool)) or
    /// owned ([`Server::run_call`](crate::server::Server::run_call), whose future must be
    /// `'static`); owned, they live in this future and nowhere else.
    #[allow(clippy::manual_async_fn)] // an `async fn` would store its arguments twice
    fn finish_call<'a>(
        server: impl Borrow<Server> + Send + 'a,
        id: impl Borrow<RequestId> + Send + 'a,
        mut step: CallStep,
    ) -> impl Future<Output = Reply> + Send + 'a {
        async move {
            let (server, id) = (server.borrow(), id.borrow());
            // A first call of a rate-limited tool is counted first (boxed: only such calls
            // wait on the rate-limit store, and what waits is the box alone).
            if let CallStep::Admit(admit) = step {
                step = Box::pin(server.admit_step(id, *admit)).await;
            }
            if matches!(&step, CallStep::Run(run) if run.ctx.may_have_recorded())
                && let CallStep::Run(run) = std::mem::replace(
                    &mut step,
                    CallStep::Done(Reply::result(bytes::Bytes::new())),
                )
            {
                // A retry carrying a verified state may claim it: from here on it runs to the
                // end on its own task, whatever happens to this request. A client that
                // disconnects (or times out) stops waiting; the confirmed action, and the
                // recording of its outcome for the client's next retry, are not abandoned
                // half-way.
                let (owned_server, owned_id) = (server.clone(), id.clone());
                let finishing = tokio::spawn(
                    async move { Self::finish_retry(&owned_server, &owned_id, run).await }
                        .in_current_span(),
                );
                return match finishing.await {
                    Ok(reply) => reply,
                    Err(e) => {
                        tracing::error!(error = %e, "a retry's run stopped unexpectedly");
                        error_reply(
                            Some(id),
                            ErrorObject::internal_error(
                                "the retry stopped unexpectedly; whether its action took effect is unknown, so send this same request again to get its recorded outcome",
                            ),
                        )
                    }
                };
            }
            // Matched in place: moving the run out of `step` would store it twice.
            match step {
                CallStep::Done(reply) => reply,
                // Counted above: `admit_step` never returns another admission.
                CallStep::Admit(_) => error_reply(
                    Some(id),
                    ErrorObject::internal_error("rate-limit admission did not complete"),
                ),
                // Boxed: the task path's state is several times the size of a plain call's.
                CallStep::Task(task) => {
                    let TaskCall {
                        tool,
                        call,
                        meta,
                        principal,
                    } = *task;
                    Box::pin(server.call_as_task(id, tool, call, meta, principal)).await
                }
                CallStep::Run(ref mut run) => {
                    let arguments = std::mem::take(&mut run.arguments);
                    // A panicking tool must not take the connection down with it: answer -32603.
                    let called =
                        crate::tool::call_caught(&*run.tool, &mut run.ctx, arguments).await;
                    // Made after the run, so it is not held across it (the future's size).
                    let target = Target {
                        method: mcp_types::METHOD_TOOLS_CALL,
                        name: &run.name,
                    };
                    server
                        .settle_reply(id, called, &mut run.ctx, target, run.arg_digest)
                        .reply()
                        .await
                }
            }
        }
    }

    /// The run of a retry carrying a verified state, on its own task
    /// ([`Server::finish_call`](crate::server::Server::finish_call)): recorded results first, then
    /// the tool, its claim and the recording of its outcome.
    async fn finish_retry(server: &Server, id: &RequestId, mut run: Run) -> Reply {
        // Recorded results first: an identical retry of a state whose outcome was recorded
        // gets that outcome before any tool code runs again; a copy still at work elsewhere
        // is waited for.
        let called = match run.ctx.recorded_first().await {
            Ok(false) => {
                let arguments = std::mem::take(&mut run.arguments);
                // A panicking tool must not take the connection down with it: answer -32603.
                crate::tool::call_caught(&*run.tool, &mut run.ctx, arguments).await
            }
            // The replayed outcome answers; the tool's is never asked for.
            Ok(true) => Ok(Ok(mcp_types::CallToolResult::success(Vec::new()))),
            Err(refused) => Ok(Err(refused)),
        };
        let target = Target {
            method: mcp_types::METHOD_TOOLS_CALL,
            name: &run.name,
        };
        server
            .settle_reply(id, called, &mut run.ctx, target, run.arg_digest)
            .reply()
            .await
    }

    /// The synchronous part of [`Server::call_tool`](crate::server::Server::call_tool): the params'
    /// checks, the tool, the task decision, and the opened request context.
    fn prepare_call(
        &self,
        id: &RequestId,
        mut params: ToolsCallParams,
        meta: Arc<RequestMeta>,
        rctx: RequestScope,
    ) -> CallStep {
        let checked = params.take_arguments().and_then(|arguments| {
            let retry = RetryParts::from_members(
                params.input_responses.take(),
                params.request_state.take(),
            )?;
            Ok((arguments, retry))
        });
        let (mut arguments, retry) = match checked {
            Ok(parts) => parts,
            Err(e) => return CallStep::Done(error_reply(Some(id), e)),
        };
        let name = params.name;
        let Some(tool) = self.inner.router.get(&name) else {
            return CallStep::Done(error_reply(Some(id), self.inner.router.unknown_tool(&name)));
        };
        // What the transport received beside the body (HTTP's `Mcp-Param-*` headers) must
        // mirror the arguments the tool declares `x-mcp-header` on: routing decisions made
        // on them must not be about a different call.
        if let Some(mirrors) = rctx.param_mirrors()
            && let Some(rules) = self.inner.param_headers.get(&name)
            && let Err(mismatch) = mirrors.check(&arguments, rules)
        {
            return CallStep::Done(error_reply(
                Some(id),
                ErrorObject::header_mismatch(mismatch),
            ));
        }
        // Authorization before anything of the tool runs, task or not.
        if let Some(refusal) = self.authorize(&rctx.grant, id, mcp_types::METHOD_TOOLS_CALL, &name)
        {
            return CallStep::Done(refusal);
        }
        // Only the first call of a flow counts against a rate limit: a retry carries the
        // state a counted first call was issued (checked before the tool runs, like a first
        // call's count).
        let rate_check = match &self.inner.rate {
            Some(limiter) if retry.request_state.is_none() => {
                limiter.check_for(&rctx.grant.principal, &name)
            }
            _ => None,
        };
        let support = tool.task_support();
        if support != mcp_types::TaskSupport::Forbidden {
            if super::tasks::declared(&meta.client_capabilities) {
                return admitted(
                    rate_check,
                    CallStep::Task(Box::new(TaskCall {
                        tool: std::sync::Arc::clone(tool),
                        call: CallParts {
                            name,
                            arguments,
                            retry,
                        },
                        meta,
                        principal: rctx.grant.principal,
                    })),
                );
            }
            if support == mcp_types::TaskSupport::Required {
                return CallStep::Done(error_reply(Some(id), super::tasks::extension_required()));
            }
        }
        let target = Target {
            method: mcp_types::METHOD_TOOLS_CALL,
            name: &name,
        };
        match self.open_request(
            target,
            Needs {
                capabilities: tool.required_capabilities(),
                optional: tool.optional_capabilities(),
                may_ask: tool.may_request_input(),
            },
            &mut arguments,
            retry,
            meta,
            rctx,
        ) {
            Ok(opened) => admitted(
                rate_check,
                CallStep::Run(Run {
                    tool: std::sync::Arc::clone(tool),
                    ctx: Box::new(opened.ctx),
                    arg_digest: opened.arg_digest,
                    name,
                    arguments,
                }),
            ),
            Err(e) => CallStep::Done(error_reply(Some(id), e)),
        }
    }

    /// The reply to one finished pass of a tool: its result, the input-required round, or
    /// the error.
    ///
    /// Not an `async fn`: only a retry whose outcome must be recorded or looked up has to
    /// wait (its future is boxed, [`Settled::Finish`]). An `async fn` would keep the pass's
    /// outcome (about 0.5 KiB, twice) in the future of every call.
    pub(super) fn settle_reply<'a>(
        &'a self,
        id: &'a RequestId,
        called: std::thread::Result<Result<mcp_types::CallToolResult, crate::tool::HandlerError>>,
        ctx: &'a mut crate::context::RequestContext,
        target: Target<'a>,
        arg_digest: Option<crate::state::ArgDigest>,
    ) -> Settled<'a> {
        let Ok(outcome) = called else {
            tracing::error!(tool = %crate::log_safe::LogSafe(target.name), "tool panicked");
            return Settled::Ready(error_reply(
                Some(id),
                ErrorObject::internal_error(format!(
                    "tool `{}` failed unexpectedly; nothing more is known, do not retry blindly",
                    target.name
                )),
            ));
        };
        // A question the tool asked is sent even when the tool did not propagate the signal.
        let outcome = settle(ctx.settle_pass(outcome, target.handler()));
        // An identical retry gets the recorded outcome; a claimed one is recorded.
        if ctx.finish_is_plain() {
            return Settled::Ready(self.outcome_reply(id, outcome, ctx, target, arg_digest));
        }
        Settled::Finish(Box::pin(async move {
            let outcome = ctx.finish_call(outcome).await;
            self.outcome_reply(id, outcome, ctx, target, arg_digest)
        }))
    }

    /// The reply for a pass's settled outcome.
    fn outcome_reply(
        &self,
        id: &RequestId,
        outcome: Result<mcp_types::CallToolResult, crate::tool::HandlerError>,
        ctx: &mut crate::context::RequestContext,
        target: Target<'_>,
        arg_digest: Option<crate::state::ArgDigest>,
    ) -> Reply {
        if outcome.is_ok()
            && let Some(rounds) = ctx.flow_rounds()
        {
            crate::observe::flow_ended(rounds);
        }
        match outcome {
            Ok(result) if result.meta.is_none() && result.extra.is_empty() => {
                call_result_reply_with_meta(id, &result, &self.inner.result_meta_json)
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
                HandlerErrorKind::InputRequired => {
                    self.input_required_reply(id, ctx, target, arg_digest)
                }
                HandlerErrorKind::Protocol(e) => error_reply(Some(id), e),
                // `settle` turned these into results already.
                HandlerErrorKind::Tool(m) | HandlerErrorKind::InvalidArguments(m) => {
                    error_reply(Some(id), ErrorObject::internal_error(m))
                }
            },
        }
    }
}

/// What [`Server::settle_reply`](crate::server::Server::settle_reply) decided: the reply, or the
/// boxed wait for the replay store before it.
pub(super) enum Settled<'a> {
    /// The reply, made without waiting.
    Ready(Reply),
    /// The outcome is recorded (or looked up) first.
    Finish(futures::future::BoxFuture<'a, Reply>),
}

impl Settled<'_> {
    /// The reply, once any wait is over.
    pub(super) async fn reply(self) -> Reply {
        match self {
            Settled::Ready(reply) => reply,
            Settled::Finish(wait) => wait.await,
        }
    }
}

/// What [`Server::prepare_call`](crate::server::Server::prepare_call) decided.
enum CallStep {
    /// Answered already (a refusal).
    Done(Reply),
    /// A first call of a rate-limited tool: counted, then the step it wraps (boxed: only
    /// servers with rate limits make it).
    Admit(Box<Admit>),
    /// A task-supporting tool called by a task-aware client (rare; boxed).
    Task(Box<TaskCall>),
    /// A plain call, ready to run.
    Run(Run),
}

/// A step to take once its call is counted against the tool's rate limit.
struct Admit {
    check: super::rate::RateCheck,
    then: CallStep,
}

/// `step`, counted against a rate limit first when `check` says so.
fn admitted(check: Option<super::rate::RateCheck>, step: CallStep) -> CallStep {
    match check {
        Some(check) => CallStep::Admit(Box::new(Admit { check, then: step })),
        None => step,
    }
}

impl CallStep {
    /// The tool this step calls.
    fn tool_name(&self) -> &str {
        match self {
            CallStep::Run(run) => &run.name,
            CallStep::Task(task) => &task.call.name,
            CallStep::Admit(admit) => admit.then.tool_name(),
            CallStep::Done(_) => "",
        }
    }
}

impl Server {
    /// Counts an admission's call: its step when let through, else the refusal.
    async fn admit_step(&self, id: &RequestId, admit: Admit) -> CallStep {
        match self.admit(id, &admit.check, admit.then.tool_name()).await {
            None => admit.then,
            Some(refusal) => CallStep::Done(refusal),
        }
    }
}

struct TaskCall {
    tool: std::sync::Arc<dyn crate::tool::ToolHandler>,
    call: CallParts,
    meta: Arc<RequestMeta>,
    principal: Principal,
}

/// A plain call ready to run; the context is boxed so the call's future stays small.
struct Run {
    tool: std::sync::Arc<dyn crate::tool::ToolHandler>,
    name: String,
    ctx: Box<crate::context::RequestContext>,
    arguments: JsonObject,
    arg_digest: Option<crate::state::ArgDigest>,
}

type Envelope = (Option<RequestId>, String, Option<JsonObject>);

/// Splits a message into id, method and params, or the exact `-32600` reply, by the rules
/// of [`classify_envelope`] (the transports' too): the message is judged once, in place, and
/// only then taken apart, without cloning.
fn envelope(value: Value) -> Result<Envelope, Reply> {
    let error = match classify_envelope(&value) {
        Ok(mcp_types::Envelope::Request { .. } | mcp_types::Envelope::Notification { .. }) => None,
        Ok(mcp_types::Envelope::Response { id }) => Some(JsonRpcErrorResponse::new(
            id.and_then(RequestId::from_value),
            ErrorObject::invalid_request("clients must not send JSON-RPC responses to the server"),
        )),
        Err(e) => Some(e.to_response()),
    };
    if let Some(response) = error {
        return Err(serialize_error(&response));
    }
    let Value::Object(obj) = value else {
        return Err(error_reply(
            None,
            ErrorObject::invalid_request("a JSON-RPC message must be a JSON object"),
        ));
    };
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
    Ok((id, method, params))
}

/// The request's `_meta`, or the reply refusing it: malformed, or a protocol version this
/// server does not speak.
fn checked_meta<M: std::borrow::Borrow<RequestMeta>>(
    id: &RequestId,
    meta: Result<M, MetaError>,
) -> Result<M, Reply> {
    let meta = meta.map_err(|e| meta_reply(id, &e))?;
    let version = meta.borrow().protocol_version.as_str();
    if !SUPPORTED_VERSIONS.contains(&version) {
        return Err(error_reply(
            Some(id),
            ErrorObject::unsupported_protocol_version(SUPPORTED_VERSIONS, version),
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

impl McpService for Server {
    // Both check the limits and start a read call before the future is made, so that a
    // request's one boxed future is the dispatch itself, not a wrapper holding the message.
    fn handle<'a>(&'a self, message: Message, ctx: RequestScope) -> BoxFuture<'a, Option<Reply>> {
        match self.route(message, ctx) {
            Routed::Ready(reply) => Box::pin(std::future::ready(reply)),
            Routed::Call(job) => Box::pin(self.run_call(job)),
            Routed::Tree(value, ctx) => Box::pin(self.dispatch(value, ctx)),
        }
    }

    fn handle_owned(
        self: Arc<Self>,
        message: Message,
        ctx: RequestScope,
    ) -> BoxFuture<'static, Option<Reply>> {
        match self.route(message, ctx) {
            Routed::Ready(reply) => Box::pin(std::future::ready(reply)),
            Routed::Call(job) => Box::pin(self.run_call(job)),
            Routed::Tree(value, ctx) => Box::pin(self.dispatch(value, ctx)),
        }
    }

    fn check_grants(&self, scheme: crate::service::AuthScheme) -> Result<(), String> {
        self.inner.scopes.check_grants(scheme)
    }

    fn authorize(
        &self,
        grant: &crate::service::Grant,
        id: &RequestId,
        method: &str,
        params: &JsonObject,
    ) -> Option<Reply> {
        let field = if method == mcp_types::METHOD_RESOURCES_READ {
            "uri"
        } else {
            "name"
        };
        let name = params.get(field).and_then(Value::as_str)?;
        Server::authorize(self, grant, id, method, name)
    }

    fn readiness(&self) -> BoxFuture<'_, Vec<crate::service::ReadinessCheck>> {
        Box::pin(async move {
            let store = self.inner.store.ping().await.map_err(|e| e.to_string());
            let mut checks = vec![
                crate::service::ReadinessCheck::new("replay_store", store),
                // Keys are loaded when the server is built; a running server has them.
                crate::service::ReadinessCheck::new("state_keys", Ok(())),
            ];
            if let Some(rate) = &self.inner.rate {
                let pinged = rate.store.ping().await.map_err(|e| e.to_string());
                checks.push(crate::service::ReadinessCheck::new(
                    "rate_limit_store",
                    pinged,
                ));
            }
            checks
        })
    }

    fn shutting_down(&self) {
        self.close_listens();
    }

    fn admission_wait(&self, method: &str, params: &JsonObject) -> Option<std::time::Duration> {
        if method != mcp_types::METHOD_TOOLS_CALL || params.contains_key("requestState") {
            return None;
        }
        let rate = self.inner.rate.as_ref()?;
        let name = params.get("name").and_then(Value::as_str)?;
        rate.limits(name).then(|| rate.deadline())
    }
}

/// What [`Server::route`](crate::server::Server::route) decided for a message.
// Returned and taken apart at once; boxing the call would add the allocation this avoids.
#[allow(clippy::large_enum_variant)]
enum Routed {
    /// Answered already (a limit was exceeded), or accepted without an answer.
    Ready(Option<Reply>),
    /// A `tools/call` read into its parts, started.
    Call(CallJob),
    /// Any other message, as a tree.
    Tree(Value, RequestScope),
}

/// A started `tools/call` ([`Server::start_call`](crate::server::Server::start_call)), for
/// [`Server::run_call`](crate::server::Server::run_call).
struct CallJob {
    id: RequestId,
    params: ToolsCallParams,
    rctx: RequestScope,
    observer: RequestObserver,
}

fn paged_reply(id: &RequestId, pages: &super::listing::Pages, params: &JsonObject) -> Reply {
    match pages.page(params.get("cursor")) {
        Ok(page) => cached_reply(id, page),
        Err(e) => error_reply(Some(id), e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::{CancellationToken, NotificationSink};

    /// Every request's future is allocated and copied once per request (the transport boxes
    /// it), so its size is paid on every call: rarely taken paths (tasks, prompts,
    /// resources) are boxed where they are awaited, and the futures keep only what lives
    /// across an await (17 KiB once, 1.8 KiB before this bound). Past 1 KiB, glibc's malloc
    /// leaves its per-thread cache for the slow path, and sorts its free lists first.
    #[test]
    fn a_request_future_stays_under_one_kib() {
        let server = Server::builder(mcp_types::Implementation::new("size", "1"))
            .build()
            .expect("server");
        let size_of = |raw: &'static [u8], owned: bool| {
            let message = Message::parse(bytes::Bytes::from_static(raw)).expect("parses");
            let ctx = RequestScope::new(
                Principal::new("p"),
                NotificationSink::discard(),
                CancellationToken::new(),
            );
            let future = if owned {
                McpService::handle_owned(Arc::new(server.clone()), message, ctx)
            } else {
                McpService::handle(&server, message, ctx)
            };
            std::mem::size_of_val(&*future)
        };
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#;
        let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
        for (what, raw) in [("tools/call", &call[..]), ("tools/list", &list[..])] {
            for owned in [false, true] {
                let size = size_of(raw, owned);
                assert!(
                    size <= 1024,
                    "a {what} request's future is {size} bytes (owned: {owned})"
                );
            }
        }
    }
}
