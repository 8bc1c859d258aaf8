//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) wire model.
//!
//! Version implemented: SEP-2663 as exercised by `@modelcontextprotocol/conformance`
//! 0.2.0-alpha.12 (the `tasks-*` server scenarios): server-directed task creation on
//! `tools/call`, a flat `CreateTaskResult` (`resultType: "task"`), `tasks/get` returning a
//! `DetailedTask` that inlines the result, error or pending input requests, `tasks/update`
//! delivering `inputResponses`, and `tasks/cancel`. The v1 methods `tasks/result` and
//! `tasks/list` do not exist in this version, nor do the v1 `ttl` / `pollInterval` names or a
//! `requestState` on any task shape.

use serde::{Deserialize, Serialize};

use crate::{ErrorObject, InputRequests, InputResponses, JsonObject};

/// The extension's identifier, the key under `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `tasks/get`: a task's status, with its result, error or input requests inlined.
pub const METHOD_TASKS_GET: &str = "tasks/get";
/// `tasks/update`: deliver `inputResponses` to a task waiting for input.
pub const METHOD_TASKS_UPDATE: &str = "tasks/update";
/// `tasks/cancel`: ask a task to stop.
pub const METHOD_TASKS_CANCEL: &str = "tasks/cancel";
/// The status notification a server may send on the listen stream.
pub const NOTIFICATION_TASKS: &str = "notifications/tasks";

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for the client's `tasks/update` (see `inputRequests`).
    InputRequired,
    /// Finished; `result` holds the tool result (which may itself be `isError: true`).
    Completed,
    /// Ended by a protocol-level error; `error` holds it.
    Failed,
    /// Stopped by `tasks/cancel`.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task can no longer change.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// The wire spelling (`"working"`, `"input_required"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "working" => Self::Working,
            "input_required" => Self::InputRequired,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }
}

/// Whether a tool runs as a task (`execution.taskSupport` in its descriptor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskSupport {
    /// Never a task (the default).
    #[default]
    Forbidden,
    /// A task when the request declares the extension, a plain call otherwise.
    Optional,
    /// Only as a task: a request without the extension gets `-32021`.
    Required,
}

/// The fields every task shape carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Server-minted, unguessable identifier.
    pub task_id: String,
    /// Current status.
    pub status: TaskStatus,
    /// Human-readable detail about the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// RFC 3339 time of the last status change.
    pub last_updated_at: String,
    /// How long after creation the task stays retrievable, in milliseconds (`null`: no
    /// limit).
    pub ttl_ms: Option<u64>,
    /// Suggested delay between `tasks/get` polls, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}

/// The answer to a `tools/call` that started a task: `resultType: "task"` and the task's
/// fields at the top level (no nested wrapper, no result yet).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateTaskResult {
    /// Always `"task"`.
    #[serde(rename = "resultType")]
    pub result_type: String,
    /// The task.
    #[serde(flatten)]
    pub task: Task,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl CreateTaskResult {
    /// The result announcing `task`.
    pub fn new(task: Task) -> Self {
        Self {
            result_type: "task".to_owned(),
            task,
            meta: None,
        }
    }
}

/// The `tasks/get` result: the task plus, by status, its `result` (completed), `error`
/// (failed) or pending `inputRequests` (input_required).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask {
    /// Always `"complete"`.
    pub result_type: String,
    /// The task.
    #[serde(flatten)]
    pub task: Task,
    /// The tool's result, once completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// The protocol error, once failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
    /// The requests still waiting for an answer, while input_required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
}

/// Params of `tasks/get` and `tasks/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task.
    pub task_id: String,
}

/// Params of `tasks/update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskParams {
    /// The task.
    pub task_id: String,
    /// Answers keyed like the task's `inputRequests`; unknown keys are ignored.
    pub input_responses: InputResponses,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task() -> Task {
        Task {
            task_id: "t1".into(),
            status: TaskStatus::Working,
            status_message: None,
            created_at: "2026-01-01T00:00:00Z".into(),
            last_updated_at: "2026-01-01T00:00:00Z".into(),
            ttl_ms: Some(60_000),
            poll_interval_ms: Some(500),
        }
    }

    #[test]
    fn create_task_result_is_flat_with_the_renamed_fields() {
        let v = serde_json::to_value(CreateTaskResult::new(task())).unwrap();
        assert_eq!(
            v,
            json!({"resultType": "task", "taskId": "t1", "status": "working",
                   "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z",
                   "ttlMs": 60000, "pollIntervalMs": 500})
        );
    }

    #[test]
    fn statuses_round_trip_their_wire_names() {
        for s in [
            TaskStatus::Working,
            TaskStatus::InputRequired,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
        ] {
            assert_eq!(TaskStatus::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
        }
        assert_eq!(TaskStatus::parse("done"), None);
        assert!(TaskStatus::Cancelled.is_terminal() && !TaskStatus::InputRequired.is_terminal());
    }
}
