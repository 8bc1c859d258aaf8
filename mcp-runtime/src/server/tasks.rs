//! The tasks extension in the dispatcher: task-augmented `tools/call`, `tasks/get`,
//! `tasks/update`, `tasks/cancel` (see [`crate::tasks`] for the rules).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use mcp_types::{
    ClientCapabilities, CreateTaskResult, ErrorObject, InputResponses, JsonObject, RequestId,
    RequestMeta, TASKS_EXTENSION, TaskStatus,
};
use serde_json::Value;

use super::Server;
use super::reply::{error_reply, result_reply_with_meta};
use super::request::{CallParts, Needs, RetryParts, Target};
use crate::Principal;
use crate::context::{HandlerId, HandlerKind, RequestContext};
use crate::handler_error::{HandlerErrorKind, settle};
use crate::service::{CancellationToken, Reply};
use crate::state::ArgDigest;
use crate::tasks::{TaskRecord, TaskStore, new_task_id, now_ms};
use crate::tool::TaskStart;
use crate::tool::ToolHandler;

use super::task_progress::{self, CANCEL_GRACE, Wiring};
use super::task_watch::{Announcing, ListenCounts};

/// The server's task settings and the tasks running on this instance.
pub(super) struct Tasks {
    pub(super) store: Arc<dyn TaskStore>,
    pub(super) ttl: Duration,
    pub(super) poll_interval: Duration,
    /// The largest result kept, in bytes of JSON.
    max_result: usize,
    /// How often a running pass's task is read for a cancellation made elsewhere.
    cancel_check: Duration,
    /// Cancellation of the passes running here, by task id.
    running: Mutex<HashMap<String, CancellationToken>>,
    /// The same store as `store`, for subscribing to the changes this instance writes.
    pub(super) announcing: Arc<Announcing>,
    /// Open `subscriptions/listen` streams per principal.
    pub(super) listens: ListenCounts,
    /// How long one `subscriptions/listen` may stay open.
    pub(super) max_listen: Duration,
    /// Fired by [`Server::close_listens`](crate::server::Server::close_listens): every listen ends
    /// with its complete result.
    pub(super) closing: CancellationToken,
}

impl Tasks {
    pub(super) fn new(
        store: Arc<dyn TaskStore>,
        ttl: Duration,
        poll_interval: Duration,
        max_listen: Duration,
    ) -> Self {
        let announcing = Arc::new(Announcing::new(store));
        Self {
            store: Arc::clone(&announcing) as Arc<dyn TaskStore>,
            ttl,
            poll_interval,
            max_result: crate::server::ServerBuilder::DEFAULT_MAX_TASK_RESULT_BYTES,
            cancel_check: crate::server::ServerBuilder::DEFAULT_TASK_CANCEL_CHECK,
            running: Mutex::new(HashMap::new()),
            announcing,
            listens: ListenCounts::default(),
            max_listen,
            closing: CancellationToken::new(),
        }
    }

    pub(super) fn with_max_result(mut self, max: usize) -> Self {
        self.max_result = max;
        self
    }

    pub(super) fn with_cancel_check(mut self, every: Duration) -> Self {
        self.cancel_check = every;
        self
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        // Every change is one insert or remove: a poisoned map is still consistent.
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One run of a handler, owning what it borrows; yields the outcome and the context (whose
/// registered input requests become the next round).
type Pass = Pin<Box<dyn Future<Output = (PassOutcome, RequestContext)> + Send>>;
type PassOutcome = crate::tool::CallOutcome;

fn pass(tool: Arc<dyn ToolHandler>, mut ctx: RequestContext, args: JsonObject) -> Pass {
    Box::pin(async move {
        // A panicking tool fails its task instead of the process.
        let outcome = crate::tool::call_caught(&*tool, &mut ctx, args).await;
        (outcome, ctx)
    })
}

/// `Ok` when `value` encodes to at most `max` bytes of JSON, else `Err` with its size (or
/// at least `max + 1`, if it could not be measured). Counted without building the text.
fn json_size(value: &Value, max: usize) -> Result<(), usize> {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) if count.0 <= max => Ok(()),
        Ok(()) => Err(count.0),
        Err(_) => Err(count.0.max(max.saturating_add(1))),
    }
}

/// The error of a task whose result is over the server's cap (`-32603`, with the sizes).
fn result_too_large(tool: &str, size: usize, max: usize) -> ErrorObject {
    ErrorObject::internal_error(format!(
        "tool `{tool}` returned a result of {size} bytes, over this server's task result limit \
         of {max} bytes, so it was not kept; ask for less (a narrower query, fewer items), or \
         have the server's operator raise the limit (ServerBuilder::max_task_result_bytes)"
    ))
    .with_data(serde_json::json!({
        "reason": "task_result_too_large",
        "size": size,
        "limit": max,
    }))
}

/// Whether this request's capabilities declare the tasks extension.
pub(super) fn declared(caps: &ClientCapabilities) -> bool {
    caps.extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(TASKS_EXTENSION))
}

/// `-32021` naming the tasks extension as the missing capability.
pub(super) fn extension_required() -> ErrorObject {
    let mut needed = ClientCapabilities::none();
    needed.extensions = Some(
        [(TASKS_EXTENSION.to_owned(), JsonObject::new())]
            .into_iter()
            .collect(),
    );
    ErrorObject::missing_required_client_capability(&needed)
}

fn ack(server: &Server, id: &RequestId) -> Reply {
    result_reply_with_meta(
        id,
        &serde_json::json!({"resultType": "complete"}),
        &server.inner.result_meta_json,
    )
}

impl Server {
    /// `tools/call` of a task-supporting tool by a request that declared the extension.
    pub(super) async fn call_as_task(
        &self,
        id: &RequestId,
        tool: Arc<dyn ToolHandler>,
        call: CallParts,
        mut meta: Arc<RequestMeta>,
        principal: Principal,
    ) -> Reply {
        let CallParts {
            name,
            mut arguments,
            retry,
        } = call;
        let capabilities = meta.client_capabilities.clone();
        task_progress::with_progress_token(Arc::make_mut(&mut meta));
        let wiring = Wiring::new(principal.clone());
        let target = Target {
            method: mcp_types::METHOD_TOOLS_CALL,
            name: &name,
        };
        let opened = match self.open_request(
            target,
            Needs::asking(tool.required_capabilities(), tool.optional_capabilities()),
            &mut arguments,
            retry,
            meta,
            wiring.rctx.clone(),
        ) {
            Ok(opened) => opened,
            Err(e) => return error_reply(Some(id), e),
        };
        let arg_digest = opened.arg_digest;
        let mut run = pass(Arc::clone(&tool), opened.ctx, arguments.clone());
        if tool.task_start() == TaskStart::AfterInput {
            // The first pass runs inside the request: input it asks for is an ordinary MRTR
            // round, a pass that ends at once is a plain result.
            let first = std::future::poll_fn(|cx| Poll::Ready(run.as_mut().poll(cx))).await;
            if let Poll::Ready((outcome, mut ctx)) = first {
                return self
                    .settle_reply(id, outcome, &mut ctx, target, arg_digest)
                    .reply()
                    .await;
            }
        }
        let task_id = match new_task_id() {
            Ok(t) => t,
            Err(e) => {
                return error_reply(
                    Some(id),
                    ErrorObject::internal_error(format!("cannot mint a task id: {e}")),
                );
            }
        };
        let now = now_ms();
        let ttl = u64::try_from(self.inner.tasks.ttl.as_millis()).unwrap_or(u64::MAX);
        let record = TaskRecord {
            task_id,
            owner: principal.as_str().to_owned(),
            tool: name.clone(),
            status: TaskStatus::Working,
            status_message: None,
            created_ms: now,
            updated_ms: now,
            expires_ms: now.saturating_add(ttl),
            result: None,
            error: None,
            input_requests: None,
            collected: InputResponses::default(),
            resume_state: None,
            arguments,
            capabilities: Some(capabilities),
            revision: 0,
        };
        // Durable before announced: a tasks/get right after this reply must find it.
        if let Err(e) = self.inner.tasks.store.create(record.clone()).await {
            return error_reply(Some(id), e.to_error_object());
        }
        let created = CreateTaskResult::new(record.task(Some(self.inner.tasks.poll_interval)));
        self.spawn_pass(record, run, arg_digest, wiring);
        result_reply_with_meta(id, &created, &self.inner.result_meta_json)
    }

    /// Runs `run` in the background, writing its outcome into the task, and its progress
    /// into the task's `statusMessage`.
    fn spawn_pass(
        &self,
        record: TaskRecord,
        run: Pass,
        arg_digest: Option<ArgDigest>,
        wiring: Wiring,
    ) {
        let server = self.clone();
        let Wiring { token, notes, .. } = wiring;
        self.inner
            .tasks
            .running()
            .insert(record.task_id.clone(), token.clone());
        tokio::spawn(task_progress::forward(
            Arc::clone(&self.inner.tasks.store),
            record.task_id.clone(),
            record.owner.clone(),
            notes,
            token.clone(),
            self.inner.tasks.cancel_check,
        ));
        // The task's work is a trace of its own that links to the request that started (or
        // resumed) it: it outlives that request, so it is not its child.
        let work_span = tracing::info_span!(
            target: crate::observe::REQUEST_TARGET,
            parent: None,
            "mcp_task",
            task_id = %crate::log_safe::LogSafe(&record.task_id),
            tool = %crate::log_safe::LogSafe(&record.tool),
        );
        work_span.follows_from(tracing::Span::current());
        let work = async move {
            // Cooperative first: the handler sees its token fire (`ctx.cancelled()`) and may
            // stop on its own; after the grace its future is dropped.
            let cancelled = Box::pin(async {
                token.cancelled().await;
                tokio::time::sleep(CANCEL_GRACE).await;
            });
            match futures::future::select(run, cancelled).await {
                futures::future::Either::Left(((outcome, mut ctx), _)) => {
                    // Unregister before writing, so a resume that follows finds no stale token.
                    server.inner.tasks.running().remove(&record.task_id);
                    server
                        .finish_pass(record, outcome, &mut ctx, arg_digest)
                        .await;
                }
                // tasks/cancel wrote the status; dropping the pass is the cancellation.
                futures::future::Either::Right(_) => {
                    server.inner.tasks.running().remove(&record.task_id);
                }
            }
        };
        tokio::spawn(tracing::Instrument::instrument(work, work_span));
    }

    /// Writes a finished pass into its task: completed, failed, or input_required.
    async fn finish_pass(
        &self,
        mut record: TaskRecord,
        outcome: PassOutcome,
        ctx: &mut RequestContext,
        arg_digest: Option<ArgDigest>,
    ) {
        let outcome = match outcome {
            // A question the tool asked is sent even when the tool did not propagate the
            // signal; an identical retry gets the recorded outcome; a claimed one is recorded.
            Ok(r) => {
                let handler = HandlerId {
                    kind: HandlerKind::Tool,
                    name: &record.tool,
                };
                let r = settle(ctx.settle_pass(r, handler));
                Ok(ctx.finish_call(r).await)
            }
            Err(panic) => Err(panic),
        };
        let status = match outcome {
            Err(_) => {
                tracing::error!(tool = %crate::log_safe::LogSafe(&record.tool), "task tool panicked");
                record.error = Some(ErrorObject::internal_error(format!(
                    "tool `{}` failed unexpectedly; nothing more is known, do not retry blindly",
                    record.tool
                )));
                TaskStatus::Failed
            }
            Ok(Ok(result)) => match serde_json::to_value(&result) {
                Ok(v) => match json_size(&v, self.inner.tasks.max_result) {
                    Ok(()) => {
                        record.result = Some(v);
                        TaskStatus::Completed
                    }
                    Err(size) => {
                        record.error = Some(result_too_large(
                            &record.tool,
                            size,
                            self.inner.tasks.max_result,
                        ));
                        TaskStatus::Failed
                    }
                },
                Err(e) => {
                    record.error = Some(ErrorObject::internal_error(format!(
                        "result failed to serialise: {e}"
                    )));
                    TaskStatus::Failed
                }
            },
            Ok(Err(e)) => match e.into_kind() {
                HandlerErrorKind::InputRequired => {
                    let target_name = record.tool.clone();
                    match super::mrtr::input_required(
                        &self.inner,
                        ctx,
                        mcp_types::METHOD_TOOLS_CALL,
                        &target_name,
                        arg_digest,
                    )
                    .and_then(crate::mrtr::SealedInput::into_result)
                    {
                        Ok(asked) => {
                            record.input_requests = asked.input_requests().cloned();
                            record.resume_state = asked.request_state().map(str::to_owned);
                            record.collected = InputResponses::default();
                            TaskStatus::InputRequired
                        }
                        Err(e) => {
                            record.error = Some(e);
                            TaskStatus::Failed
                        }
                    }
                }
                HandlerErrorKind::Protocol(e) => {
                    record.error = Some(e);
                    TaskStatus::Failed
                }
                // `settle` turned these into results already.
                HandlerErrorKind::Tool(m) | HandlerErrorKind::InvalidArguments(m) => {
                    record.error = Some(ErrorObject::internal_error(m));
                    TaskStatus::Failed
                }
            },
        };
        record.set_status(status);
        self.write_outcome(record).await;
    }

    /// Writes a pass's outcome. A progress message may have been written meanwhile: the
    /// outcome goes onto the re-read record. A task that ended meanwhile (cancelled) stays.
    async fn write_outcome(&self, outcome: TaskRecord) {
        let store = &self.inner.tasks.store;
        let mut next = outcome.clone().next_revision();
        for _ in 0..Self::WRITE_ATTEMPTS {
            match store.update(next).await {
                Ok(true) => return,
                Ok(false) => {}
                Err(e) => {
                    tracing::error!(error = %e, "cannot record a task's outcome");
                    return;
                }
            }
            let current = match self.reread(&outcome).await {
                Ok(Some(r)) if !r.status.is_terminal() => r,
                Ok(_) => return,
                Err(e) => {
                    tracing::error!(error = %e, "cannot record a task's outcome");
                    return;
                }
            };
            next = TaskRecord {
                revision: current.revision,
                status_message: current.status_message,
                ..outcome.clone()
            }
            .next_revision();
        }
        tracing::error!("cannot record a task's outcome: the task kept changing");
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel`.
    pub(super) async fn task_method(
        &self,
        id: &RequestId,
        method: &str,
        params: JsonObject,
        meta: &RequestMeta,
        grant: &crate::service::Grant,
    ) -> Reply {
        let principal = &grant.principal;
        if !declared(&meta.client_capabilities) {
            return error_reply(Some(id), extension_required());
        }
        let task_id = match params.get("taskId") {
            Some(Value::String(t)) => t.clone(),
            _ => {
                return error_reply(
                    Some(id),
                    ErrorObject::invalid_params(format!(
                        "Invalid params: {method} needs \"taskId\", the string from CreateTaskResult"
                    )),
                );
            }
        };
        let record = match self
            .inner
            .tasks
            .store
            .get(&task_id, principal.as_str())
            .await
        {
            Ok(Some(r)) => r,
            Ok(None) => {
                return error_reply(
                    Some(id),
                    ErrorObject::invalid_params(format!(
                        "Invalid params: no task `{}` (unknown, expired, or not yours)",
                        crate::log_safe::LogSafe(&task_id)
                    )),
                );
            }
            Err(e) => return error_reply(Some(id), e.to_error_object()),
        };
        // A task is its tool's work: every operation on it needs what calling the tool needs
        // (a token that lost a scope since it created the task is refused too).
        if let Some(refusal) = self.authorize(grant, id, mcp_types::METHOD_TOOLS_CALL, &record.tool)
        {
            return refusal;
        }
        match method {
            mcp_types::METHOD_TASKS_GET => result_reply_with_meta(
                id,
                &record.detailed(Some(self.inner.tasks.poll_interval)),
                &self.inner.result_meta_json,
            ),
            mcp_types::METHOD_TASKS_CANCEL => self.cancel_task(id, record).await,
            _ => self.update_task(id, record, params).await,
        }
    }

    /// Writes attempted before a conflicting writer is reported (each retry re-reads).
    const WRITE_ATTEMPTS: usize = 4;

    async fn reread(&self, record: &TaskRecord) -> Result<Option<TaskRecord>, ErrorObject> {
        self.inner
            .tasks
            .store
            .get(&record.task_id, &record.owner)
            .await
            .map_err(|e| e.to_error_object())
    }

    fn busy(task_id: &str) -> ErrorObject {
        ErrorObject::internal_error(format!(
            "task `{}` kept changing while this request tried to update it; send it again",
            crate::log_safe::LogSafe(task_id)
        ))
    }

    async fn cancel_task(&self, id: &RequestId, mut record: TaskRecord) -> Reply {
        for _ in 0..Self::WRITE_ATTEMPTS {
            // Cancelling an ended (or meanwhile expired) task is a no-op with the same ack.
            if record.status.is_terminal() {
                return ack(self, id);
            }
            let mut next = record.clone().next_revision();
            next.set_status(TaskStatus::Cancelled);
            next.input_requests = None;
            next.resume_state = None;
            match self.inner.tasks.store.update(next).await {
                Ok(true) => {
                    if let Some(token) = self.inner.tasks.running().remove(&record.task_id) {
                        token.cancel();
                    }
                    return ack(self, id);
                }
                Ok(false) => match self.reread(&record).await {
                    Ok(Some(r)) => record = r,
                    Ok(None) => return ack(self, id),
                    Err(e) => return error_reply(Some(id), e),
                },
                Err(e) => return error_reply(Some(id), e.to_error_object()),
            }
        }
        error_reply(Some(id), Self::busy(&record.task_id))
    }

    async fn update_task(
        &self,
        id: &RequestId,
        mut record: TaskRecord,
        params: JsonObject,
    ) -> Reply {
        let Some(Value::Object(responses)) = params.get("inputResponses") else {
            return error_reply(
                Some(id),
                ErrorObject::invalid_params(
                    "Invalid params: tasks/update needs \"inputResponses\", an object keyed by the task's inputRequests keys",
                ),
            );
        };
        for _ in 0..Self::WRITE_ATTEMPTS {
            // Answers to a task that is not waiting, and unknown keys, are ignored (acked).
            let mut next = record.clone().next_revision();
            let Some(pending) = next
                .input_requests
                .as_mut()
                .filter(|_| record.status == TaskStatus::InputRequired)
            else {
                return ack(self, id);
            };
            let mut took = false;
            for (key, value) in responses {
                if pending.0.shift_remove(key).is_some() {
                    next.collected.0.insert(key.clone(), value.clone());
                    took = true;
                }
            }
            if !took {
                return ack(self, id);
            }
            let outcome = if pending.0.is_empty() {
                self.resume(next).await
            } else {
                next.updated_ms = now_ms().max(next.updated_ms);
                self.inner
                    .tasks
                    .store
                    .update(next)
                    .await
                    .map_err(|e| e.to_error_object())
            };
            match outcome {
                Ok(true) => return ack(self, id),
                Ok(false) => match self.reread(&record).await {
                    Ok(Some(r)) => record = r,
                    Ok(None) => return ack(self, id),
                    Err(e) => return error_reply(Some(id), e),
                },
                Err(e) => return error_reply(Some(id), e),
            }
        }
        error_reply(Some(id), Self::busy(&record.task_id))
    }

    /// Every pending input is answered: run the handler again with the answers, as an MRTR
    /// retry carrying the round's sealed state.
    /// `record` is the next revision; `Ok(false)` when another writer came first.
    async fn resume(&self, mut record: TaskRecord) -> Result<bool, ErrorObject> {
        let store = &self.inner.tasks.store;
        let Some(tool) = self.inner.router.get(&record.tool).cloned() else {
            record.error = Some(ErrorObject::internal_error(format!(
                "tool `{}` is no longer offered by this server",
                record.tool
            )));
            record.set_status(TaskStatus::Failed);
            return store.update(record).await.map_err(|e| e.to_error_object());
        };
        let mut meta = RequestMeta::new(
            mcp_types::LATEST_PROTOCOL_VERSION,
            record.capabilities.clone().unwrap_or_default(),
        );
        task_progress::with_progress_token(&mut meta);
        let meta = Arc::new(meta);
        let retry = RetryParts {
            input_responses: std::mem::take(&mut record.collected),
            request_state: record.resume_state.take(),
        };
        let mut args = record.arguments.clone();
        let wiring = Wiring::new(Principal::new(record.owner.clone()));
        let target = Target {
            method: mcp_types::METHOD_TOOLS_CALL,
            name: &record.tool,
        };
        let opened = self.open_request(
            target,
            Needs::asking(tool.required_capabilities(), tool.optional_capabilities()),
            &mut args,
            retry,
            meta,
            wiring.rctx.clone(),
        );
        record.input_requests = None;
        let opened = match opened {
            Ok(o) => o,
            Err(e) => {
                record.error = Some(e);
                record.set_status(TaskStatus::Failed);
                return store.update(record).await.map_err(|e| e.to_error_object());
            }
        };
        record.set_status(TaskStatus::Working);
        // Cancelled or resumed by another writer meanwhile: do not run it twice.
        if !store
            .update(record.clone())
            .await
            .map_err(|e| e.to_error_object())?
        {
            return Ok(false);
        }
        let arg_digest = opened.arg_digest;
        self.spawn_pass(record, pass(tool, opened.ctx, args), arg_digest, wiring);
        Ok(true)
    }
}
