//! What a task store keeps ([`TaskRecord`]) and the [`TaskStore`] trait.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use mcp_types::{
    ClientCapabilities, DetailedTask, ErrorObject, InputRequests, InputResponses, JsonObject, Task,
    TaskStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One task as stored: its public status plus what any instance needs to answer `tasks/get`
/// and to resume it after `tasks/update` (the call's arguments and capabilities, the sealed
/// state of the pending input round, and the answers collected so far).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The task id (128 random bits, hex).
    pub task_id: String,
    /// The principal that created it; only that principal can see or change it.
    pub owner: String,
    /// The tool it runs.
    pub tool: String,
    /// Current status.
    pub status: TaskStatus,
    /// Detail about the status, if any.
    #[serde(default)]
    pub status_message: Option<String>,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// Last status change, milliseconds since the Unix epoch.
    pub updated_ms: u64,
    /// The record is forgotten after this time (milliseconds since the Unix epoch).
    pub expires_ms: u64,
    /// The tool result (a `CallToolResult` as JSON), once completed.
    #[serde(default)]
    pub result: Option<Value>,
    /// The protocol error, once failed.
    #[serde(default)]
    pub error: Option<ErrorObject>,
    /// Input requests not answered yet, while input_required.
    #[serde(default)]
    pub input_requests: Option<InputRequests>,
    /// Answers collected for the pending round (delivered by `tasks/update`).
    #[serde(default)]
    pub collected: InputResponses,
    /// The sealed `requestState` of the pending round. Never sent to the client: the task's
    /// wire shapes carry no `requestState`; the runtime replays it itself on resume.
    #[serde(default)]
    pub resume_state: Option<String>,
    /// The call's arguments (for the resumed pass).
    #[serde(default)]
    pub arguments: JsonObject,
    /// The capabilities the creating request declared (for the resumed pass).
    #[serde(default)]
    pub capabilities: Option<ClientCapabilities>,
    /// Write counter: 0 when created, and each [`TaskStore::update`] must carry the stored
    /// revision plus one, so of two writers that read the same revision only one wins.
    #[serde(default)]
    pub revision: u64,
}

impl TaskRecord {
    /// The wire `Task` fields (`ttlMs` is the time from creation to expiry).
    pub fn task(&self, poll_interval: Option<Duration>) -> Task {
        Task {
            task_id: self.task_id.clone(),
            status: self.status,
            status_message: self.status_message.clone(),
            created_at: super::rfc3339(self.created_ms),
            last_updated_at: super::rfc3339(self.updated_ms),
            ttl_ms: Some(self.expires_ms.saturating_sub(self.created_ms).max(1)),
            poll_interval_ms: poll_interval
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)),
        }
    }

    /// The `tasks/get` result: the task with what its status inlines.
    pub fn detailed(&self, poll_interval: Option<Duration>) -> DetailedTask {
        DetailedTask {
            result_type: "complete".to_owned(),
            task: self.task(poll_interval),
            result: (self.status == TaskStatus::Completed)
                .then(|| self.result.clone())
                .flatten(),
            error: (self.status == TaskStatus::Failed)
                .then(|| self.error.clone())
                .flatten(),
            input_requests: (self.status == TaskStatus::InputRequired)
                .then(|| self.input_requests.clone())
                .flatten(),
        }
    }

    /// The record as the next write: revision plus one.
    #[must_use]
    pub fn next_revision(mut self) -> Self {
        self.revision = self.revision.saturating_add(1);
        self
    }

    /// Moves to `status` now.
    pub fn set_status(&mut self, status: TaskStatus) {
        self.status = status;
        self.updated_ms = now_ms().max(self.updated_ms);
    }

    /// Whether the record is past its expiry at `now_ms`.
    pub fn expired_at(&self, now_ms: u64) -> bool {
        now_ms >= self.expires_ms
    }
}

/// Milliseconds since the Unix epoch, now (0 if the clock is before 1970).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// How many tasks a store holds: all principals together, and one principal.
///
/// Every built-in store enforces both at [`TaskStore::create`], after dropping expired tasks:
/// when the creating principal holds `max_tasks_per_principal` tasks, or the store holds
/// `max_tasks`, the creating principal's **own** finished tasks (completed, failed,
/// cancelled) that would expire first are evicted to make room; another principal's task is
/// never touched. When that principal has no finished task to give up, the create is refused
/// ([`TaskStoreError::PrincipalFull`] or [`TaskStoreError::Full`]) and nothing is stored.
///
/// Built with [`TaskLimits::new`] or from [`TaskLimits::default`] with the `with_*` setters,
/// which clamp as they set (so the limits always hold together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskLimits {
    pub(crate) max_tasks: usize,
    pub(crate) max_tasks_per_principal: usize,
}

impl TaskLimits {
    /// `max_tasks` of the SQLite, PostgreSQL and Redis stores unless set (the memory store
    /// uses [`MemoryTaskStore::DEFAULT_CAPACITY`](super::MemoryTaskStore::DEFAULT_CAPACITY)).
    pub const DEFAULT_MAX_TASKS: usize = 10_000;
    /// `max_tasks_per_principal` of every store unless set: an agent can keep 32 tasks
    /// (running, or finished and not yet expired) before its oldest finished one gives way.
    pub const DEFAULT_MAX_TASKS_PER_PRINCIPAL: usize = 32;

    /// Limits of `max_tasks` in all, `per_principal` for one principal (each clamped as
    /// [`TaskLimits::with_max_tasks`] and [`TaskLimits::with_max_tasks_per_principal`] say).
    pub fn new(max_tasks: usize, per_principal: usize) -> Self {
        let max_tasks = max_tasks.max(1);
        Self {
            max_tasks,
            max_tasks_per_principal: per_principal.clamp(1, max_tasks),
        }
    }

    /// Most unexpired tasks in the store, all principals together (at least 1). Default
    /// [`TaskLimits::DEFAULT_MAX_TASKS`].
    pub fn max_tasks(&self) -> usize {
        self.max_tasks
    }

    /// Sets [`TaskLimits::max_tasks`] (default [`TaskLimits::DEFAULT_MAX_TASKS`]), raised to
    /// at least 1; [`TaskLimits::max_tasks_per_principal`] is lowered to it if above.
    #[must_use]
    pub fn with_max_tasks(self, max_tasks: usize) -> Self {
        Self::new(max_tasks, self.max_tasks_per_principal)
    }

    /// Most unexpired tasks one principal holds, running or finished (at least 1, at most
    /// [`TaskLimits::max_tasks`]). Default [`TaskLimits::DEFAULT_MAX_TASKS_PER_PRINCIPAL`].
    pub fn max_tasks_per_principal(&self) -> usize {
        self.max_tasks_per_principal
    }

    /// Sets [`TaskLimits::max_tasks_per_principal`] (default
    /// [`TaskLimits::DEFAULT_MAX_TASKS_PER_PRINCIPAL`]), clamped to 1 ..=
    /// [`TaskLimits::max_tasks`].
    #[must_use]
    pub fn with_max_tasks_per_principal(self, per_principal: usize) -> Self {
        Self::new(self.max_tasks, per_principal)
    }

    /// The same limits, clamped (a no-op since every constructor clamps; kept for the stores,
    /// which clamp whatever they are given).
    #[must_use]
    pub(crate) fn clamped(self) -> Self {
        Self::new(self.max_tasks, self.max_tasks_per_principal)
    }

    /// How many of the creating principal's finished tasks must go before one more task fits,
    /// given that it holds `own` and the store `total` (0: it fits as is).
    pub fn to_evict(&self, own: usize, total: usize) -> usize {
        let limits = self.clamped();
        let over_own = (own + 1).saturating_sub(limits.max_tasks_per_principal);
        let over_total = (total + 1).saturating_sub(limits.max_tasks);
        over_own.max(over_total)
    }

    /// The refusal when too few finished tasks of the principal could go: its share if it
    /// is at its share, else the store's total.
    pub fn refusal(&self, own: usize) -> TaskStoreError {
        let limits = self.clamped();
        if own >= limits.max_tasks_per_principal {
            TaskStoreError::PrincipalFull(limits.max_tasks_per_principal)
        } else {
            TaskStoreError::Full(limits.max_tasks)
        }
    }
}

impl Default for TaskLimits {
    fn default() -> Self {
        Self::new(
            Self::DEFAULT_MAX_TASKS,
            Self::DEFAULT_MAX_TASKS_PER_PRINCIPAL,
        )
    }
}

/// Why a task store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskStoreError {
    /// The store holds as many tasks as it may (the number is its `max_tasks`) and the
    /// creating principal has no finished task to give up; retry once tasks finish or
    /// expire, or raise the store's limit.
    #[error(
        "the task store is full ({0} tasks); retry in a while, when tasks have finished or expired, or ask the operator to raise the task store's limit"
    )]
    Full(usize),
    /// The creating principal holds its share of tasks (the number) and every one of them is
    /// still running or waiting for input; retry once one of them finishes. Other
    /// principals are not affected.
    #[error(
        "you have {0} tasks running or waiting for input, the most one client may have; retry when one of them finishes (or cancel one with tasks/cancel)"
    )]
    PrincipalFull(usize),
    /// A task with this id exists already (ids are random: a second create is a bug).
    #[error("task `{0}` exists already")]
    Exists(String),
    /// The backend failed (connection, I/O, corrupt row); the message says which.
    #[error("task store backend failed: {0}")]
    Backend(String),
    /// [`open_task_store`](super::open_task_store) did not understand the spec (shown with
    /// any password masked).
    #[error("task store {spec:?} not understood: {hint}")]
    InvalidSpec {
        /// The spec, password masked.
        spec: String,
        /// What to write instead.
        hint: &'static str,
    },
    /// The spec names a backend this build leaves out: rebuild with the named feature.
    #[error("the {0} task store is not compiled in; enable mcp-runtime's `{0}` feature")]
    NotCompiledIn(&'static str),
}

impl TaskStoreError {
    /// The JSON-RPC error a client sees for this failure, saying what happened: `-32600`
    /// for [`PrincipalFull`](Self::PrincipalFull) (the caller's own doing, as for too many
    /// listens), `-32603` otherwise. A full store's errors carry
    /// `data: {"reason", "limit", "retryable": true}` (`reason` is `task_share_exhausted`
    /// or `task_store_full`): nothing was stored, and the same call may succeed later.
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            Self::PrincipalFull(limit) => {
                ErrorObject::invalid_request(self.to_string()).with_data(serde_json::json!({
                    "reason": "task_share_exhausted",
                    "limit": limit,
                    "retryable": true,
                }))
            }
            Self::Full(limit) => {
                ErrorObject::internal_error(self.to_string()).with_data(serde_json::json!({
                    "reason": "task_store_full",
                    "limit": limit,
                    "retryable": true,
                }))
            }
            _ => ErrorObject::internal_error(self.to_string()),
        }
    }
}

/// Where tasks live. Share one store between instances so that any of them can answer
/// `tasks/get`, `tasks/update` and `tasks/cancel` for a task another created.
///
/// Every read is scoped to the owning principal: a task of another principal, or one past
/// its expiry, is reported as absent.
pub trait TaskStore: Send + Sync + fmt::Debug {
    /// Stores a new task. It must be readable by [`get`](Self::get) as soon as this returns
    /// (the runtime answers `CreateTaskResult` only afterwards).
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>>;

    /// The task `task_id` of `owner`, unless absent or expired.
    fn get<'a>(
        &'a self,
        task_id: &'a str,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>>;

    /// Replaces the stored task with `record` if the stored one is not terminal (completed,
    /// failed, cancelled never change again), belongs to the same owner, and has revision
    /// `record.revision - 1` (nobody wrote since the caller read it). Returns whether it
    /// wrote; `false` means re-read and decide again.
    fn update(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, TaskStoreError>>;
}
