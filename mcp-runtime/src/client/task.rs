//! Task-mode tools (the `io.modelcontextprotocol/tasks` extension) from the client's side:
//! [`Client::call_tool_as_task`] and the [`ToolTask`] it returns.

use std::time::Duration;

use mcp_types::{
    CallToolResult, CreateTaskResult, DetailedTask, InputRequests, InputResponses, JsonObject,
    MaybeInputRequired, TASKS_EXTENSION, Task, TaskStatus,
};
use serde::Serialize;
use serde_json::Value;
use tokio::time::Instant;

use super::{Client, ClientError, MrtrCall, decode};

/// The first pause between two `tasks/get` polls; each pause doubles, up to the server's
/// `pollIntervalMs` (or [`DEFAULT_POLL_CAP`] when it suggests none), at most [`MAX_POLL`].
pub const FIRST_POLL: Duration = Duration::from_millis(20);

/// The longest pause between two polls when the server suggests no `pollIntervalMs`.
pub const DEFAULT_POLL_CAP: Duration = Duration::from_secs(1);

/// The longest pause between two polls whatever the server suggests.
pub const MAX_POLL: Duration = Duration::from_secs(10);

/// A `tools/call` made with the tasks extension declared ([`Client::call_tool_as_task`]):
/// either a task the server runs in the background, or, when the tool does not run as a task
/// (or finished at once), its result already.
///
/// [`ToolTask::wait`] polls `tasks/get` with backoff until the task ends (answering its input
/// rounds with the client's [`InputHandlers`](super::InputHandlers)) or a deadline passes;
/// [`ToolTask::cancel`] asks the server to stop it. Step by step: [`ToolTask::refresh`] (one
/// `tasks/get`), [`ToolTask::input_requests`] and [`ToolTask::answer`] (`tasks/update`).
#[derive(Debug)]
pub struct ToolTask {
    /// A handle declaring the extension (the server refuses task methods otherwise).
    client: Client,
    tool: String,
    /// The task as last seen (`None` when the server answered with a plain result).
    task: Option<Task>,
    /// The last `tasks/get` answer.
    detail: Option<DetailedTask>,
    /// The final result, once known.
    result: Option<CallToolResult>,
}

/// What a task-augmented `tools/call` came back with.
enum Started {
    Task(CreateTaskResult),
    Complete(CallToolResult),
    Input(mcp_types::InputRequiredResult),
}

impl Client {
    /// A handle declaring the tasks extension in its client capabilities (what task-mode
    /// calls and `tasks/*` requests need).
    #[must_use]
    pub fn with_tasks(&self) -> Client {
        let mut capabilities = self.meta.client_capabilities.clone();
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .entry(TASKS_EXTENSION.to_owned())
            .or_default();
        self.with_capabilities(capabilities)
    }

    /// `tools/call` as a task: the request declares the tasks extension, so a tool that
    /// supports tasks answers at once with a task to poll. Returns a [`ToolTask`]; await it
    /// with [`ToolTask::wait`].
    ///
    /// A tool without task support answers plainly: the returned [`ToolTask`] already holds
    /// the result ([`ToolTask::id`] is `None`). A tool that gathers input before it becomes a
    /// task (`task_start = "after_input"`) gets its MRTR rounds answered here by the
    /// builder's handlers, as [`Client::call_tool`] does.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use mcp_runtime::client::Client;
    /// use mcp_runtime::prelude::*;
    ///
    /// /// Adds up slowly.
    /// #[tool(read_only, task)]
    /// async fn total(ctx: &mut RequestContext) -> ToolResult<String> {
    ///     ctx.progress(1, Some(2), Some("adding")).await;
    ///     Ok("42".into())
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder(Implementation::new("demo", "1.0")).tools(tools![total]).build()?;
    /// let client = Client::in_process(server, Principal::new("me"));
    /// let mut task = client.call_tool_as_task("total", ()).await?;
    /// assert!(task.id().is_some());
    /// assert_eq!(task.wait(Duration::from_secs(10)).await?.text(), "42");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<ToolTask, ClientError> {
        let client = self.with_tasks();
        let call = client.tool_call(name, arguments)?;
        let mut started = client.start_task(&call, None, None).await?;
        let mut rounds = 0;
        loop {
            match started {
                Started::Task(created) => {
                    return Ok(ToolTask {
                        client,
                        tool: name.to_owned(),
                        task: Some(created.task),
                        detail: None,
                        result: None,
                    });
                }
                Started::Complete(result) => {
                    return Ok(ToolTask {
                        client,
                        tool: name.to_owned(),
                        task: None,
                        detail: None,
                        result: Some(result),
                    });
                }
                Started::Input(asked) => {
                    rounds += 1;
                    if rounds > self.inner.max_rounds {
                        return Err(ClientError::TooManyRounds {
                            rounds: self.inner.max_rounds,
                        });
                    }
                    let responses = match asked.input_requests() {
                        Some(requests) => client.answer_all(requests).await?,
                        None => InputResponses::new(),
                    };
                    let state = asked.request_state().map(str::to_owned);
                    started = client.start_task(&call, Some(responses), state).await?;
                }
            }
        }
    }

    /// One task-augmented `tools/call` (a retry when `state` is set).
    async fn start_task(
        &self,
        call: &MrtrCall,
        responses: Option<InputResponses>,
        state: Option<String>,
    ) -> Result<Started, ClientError> {
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
            return decode(call.method, result).map(Started::Task);
        }
        Ok(
            match decode::<MaybeInputRequired<CallToolResult>>(call.method, result)? {
                MaybeInputRequired::Complete(r) => Started::Complete(r),
                MaybeInputRequired::InputRequired(r) => Started::Input(r),
            },
        )
    }

    /// Answers every request of a round with the builder's handlers.
    async fn answer_all(&self, requests: &InputRequests) -> Result<InputResponses, ClientError> {
        let mut responses = InputResponses::new();
        for (key, request) in requests.iter() {
            let answer = self.inner.handlers.answer(key, request).await?;
            responses.insert(key.clone(), answer).map_err(|e| {
                ClientError::Request(format!("cannot encode the answer to {key:?}: {e}"))
            })?;
        }
        Ok(responses)
    }
}

impl ToolTask {
    /// The task id, or `None` when the server answered with a plain result (the tool does not
    /// run as a task).
    pub fn id(&self) -> Option<&str> {
        self.task.as_ref().map(|t| t.task_id.as_str())
    }

    /// The tool called.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The task as last seen (from the `tools/call` answer or the latest `tasks/get`).
    pub fn task(&self) -> Option<&Task> {
        self.task.as_ref()
    }

    /// The status as last seen (`completed` for a plain result).
    pub fn status(&self) -> TaskStatus {
        match (&self.result, &self.task) {
            (Some(_), _) | (None, None) => TaskStatus::Completed,
            (None, Some(task)) => task.status,
        }
    }

    /// The task's `statusMessage` as last seen (progress inside a task lands here).
    pub fn status_message(&self) -> Option<&str> {
        self.task.as_ref().and_then(|t| t.status_message.as_deref())
    }

    /// The requests the task waits for, as last seen (while `input_required`).
    pub fn input_requests(&self) -> Option<&InputRequests> {
        self.detail
            .as_ref()
            .filter(|d| d.task.status == TaskStatus::InputRequired)
            .and_then(|d| d.input_requests.as_ref())
    }

    /// The result, once known (a plain answer, or a completed task seen by
    /// [`ToolTask::refresh`] or [`ToolTask::wait`]).
    pub fn result(&self) -> Option<&CallToolResult> {
        self.result.as_ref()
    }

    fn task_id(&self) -> Option<String> {
        self.id().map(str::to_owned)
    }

    fn id_params(task_id: &str) -> JsonObject {
        let mut params = JsonObject::new();
        params.insert("taskId".into(), Value::String(task_id.to_owned()));
        params
    }

    /// One `tasks/get`: updates what this handle has seen and returns the status (a plain
    /// result is `completed` without a request).
    ///
    /// # Errors
    /// The server's refusal (an unknown or expired task is `-32602`), a transport failure, or
    /// [`ClientError::Protocol`] for a completed task without a readable result.
    pub async fn refresh(&mut self) -> Result<TaskStatus, ClientError> {
        let Some(task_id) = self.task_id() else {
            return Ok(TaskStatus::Completed);
        };
        let detail: DetailedTask = self
            .client
            .request(mcp_types::METHOD_TASKS_GET, Self::id_params(&task_id))
            .await?;
        if detail.task.status == TaskStatus::Completed && self.result.is_none() {
            let result = detail.result.clone().ok_or_else(|| ClientError::Protocol {
                method: mcp_types::METHOD_TASKS_GET.into(),
                detail: format!("task `{task_id}` is completed but carries no result"),
            })?;
            self.result =
                Some(
                    serde_json::from_value(result).map_err(|e| ClientError::Protocol {
                        method: mcp_types::METHOD_TASKS_GET.into(),
                        detail: format!(
                            "task `{task_id}` has a result that is not a tool result ({e})"
                        ),
                    })?,
                );
        }
        let status = detail.task.status;
        self.task = Some(detail.task.clone());
        self.detail = Some(detail);
        Ok(status)
    }

    /// Sends `responses` to the task (`tasks/update`), keyed like its
    /// [`input_requests`](Self::input_requests); once every pending request is answered the
    /// server runs the tool again with the answers. Answers to a task that is not waiting,
    /// and unknown keys, are ignored by the server.
    ///
    /// # Errors
    /// [`ClientError::Round`] for a plain result (there is no task to answer), the server's
    /// refusal, or a transport failure.
    pub async fn answer(&mut self, responses: InputResponses) -> Result<(), ClientError> {
        let Some(task_id) = self.task_id() else {
            return Err(ClientError::Round(format!(
                "`{}` answered with a plain result, not a task: there is no input to send",
                self.tool
            )));
        };
        let mut params = Self::id_params(&task_id);
        let responses = serde_json::to_value(&responses)
            .map_err(|e| ClientError::Request(format!("cannot encode inputResponses: {e}")))?;
        params.insert("inputResponses".into(), responses);
        let _: Value = self
            .client
            .request(mcp_types::METHOD_TASKS_UPDATE, params)
            .await?;
        // What was waiting is answered; the next refresh says what the task does now.
        self.detail = None;
        Ok(())
    }

    /// Asks the server to stop the task (`tasks/cancel`), then reads its status: `cancelled`,
    /// or how it ended if it ended first. A plain result is `completed` without a request.
    ///
    /// # Errors
    /// The server's refusal, or a transport failure.
    pub async fn cancel(&mut self) -> Result<TaskStatus, ClientError> {
        let Some(task_id) = self.task_id() else {
            return Ok(TaskStatus::Completed);
        };
        let _: Value = self
            .client
            .request(mcp_types::METHOD_TASKS_CANCEL, Self::id_params(&task_id))
            .await?;
        self.refresh().await
    }

    /// Waits for the task's result, for at most `within`: polls `tasks/get` with backoff
    /// ([`FIRST_POLL`], doubling up to the server's `pollIntervalMs`), and answers each input
    /// round with the client's [`InputHandlers`](super::InputHandlers) (at most
    /// [`ClientBuilder::max_rounds`](super::ClientBuilder::max_rounds) rounds). The task keeps
    /// running when the deadline passes: wait again, or [`cancel`](Self::cancel) it.
    ///
    /// # Errors
    /// - [`ClientError::TaskDeadline`]: still running (or waiting) when `within` passed.
    /// - [`ClientError::TaskFailed`]: the task ended with a protocol error (`failed`).
    /// - [`ClientError::TaskCancelled`]: the task was cancelled.
    /// - [`ClientError::NoHandler`] / [`ClientError::TooManyRounds`]: an input round this
    ///   client cannot answer; answer it with [`ToolTask::answer`] and wait again.
    /// - The server's refusal of `tasks/get` (an expired task is `-32602`) or a transport
    ///   failure.
    pub async fn wait(&mut self, within: Duration) -> Result<CallToolResult, ClientError> {
        let deadline = Instant::now() + within;
        let mut pause = FIRST_POLL;
        let mut rounds = 0;
        loop {
            if let Some(result) = &self.result {
                return Ok(result.clone());
            }
            let Some(task_id) = self.task_id() else {
                return Err(ClientError::Protocol {
                    method: mcp_types::METHOD_TOOLS_CALL.into(),
                    detail: "neither a task nor a result".into(),
                });
            };
            let status = match tokio::time::timeout_at(deadline, self.refresh()).await {
                Ok(status) => status?,
                Err(_) => return Err(self.late(within)),
            };
            match status {
                TaskStatus::Completed => continue,
                TaskStatus::Failed => {
                    let error = self.detail.as_ref().and_then(|d| d.error.clone());
                    return Err(ClientError::TaskFailed {
                        task_id,
                        error: Box::new(error.unwrap_or_else(|| {
                            mcp_types::ErrorObject::internal_error(
                                "the task failed without saying why",
                            )
                        })),
                    });
                }
                TaskStatus::Cancelled => return Err(ClientError::TaskCancelled { task_id }),
                TaskStatus::InputRequired => {
                    rounds += 1;
                    let max = self.client.inner.max_rounds;
                    if rounds > max {
                        return Err(ClientError::TooManyRounds { rounds: max });
                    }
                    let requests = self.input_requests().cloned().unwrap_or_default();
                    let responses = self.client.answer_all(&requests).await?;
                    match tokio::time::timeout_at(deadline, self.answer(responses)).await {
                        Ok(answered) => answered?,
                        Err(_) => return Err(self.late(within)),
                    }
                    pause = FIRST_POLL;
                    continue;
                }
                TaskStatus::Working => {}
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(self.late(within));
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 2).min(self.poll_cap());
        }
    }

    /// The error of a wait that ran out of time.
    fn late(&self, within: Duration) -> ClientError {
        ClientError::TaskDeadline {
            task_id: self.id().unwrap_or_default().to_owned(),
            status: self.status(),
            after: within,
        }
    }

    /// The longest pause between polls: the server's suggestion, within bounds.
    fn poll_cap(&self) -> Duration {
        self.task
            .as_ref()
            .and_then(|t| t.poll_interval_ms)
            .map_or(DEFAULT_POLL_CAP, Duration::from_millis)
            .clamp(FIRST_POLL, MAX_POLL)
    }
}
