//! What a task's handler sees of its task: the cancellation token `tasks/cancel` trips, and
//! progress notifications that become the task's `statusMessage` (see [`crate::tasks`]).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mcp_types::{ProgressToken, RequestMeta, TaskStatus};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::Principal;
use crate::service::{CancellationToken, NotificationSink, RequestScope};
use crate::tasks::{TaskStore, now_ms};

/// Notifications a pass may queue before its `progress` calls wait for the store.
const QUEUE: usize = 32;

/// Writes attempted per progress message before it is dropped (each retry re-reads).
const WRITE_ATTEMPTS: usize = 4;

/// How long a cancelled task's handler may run on after its token fired (to release what it
/// holds) before its future is dropped.
pub(super) const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// The progress token a task pass sees when the call carried none: its progress goes to the
/// task's `statusMessage`, never onto the wire, so any token will do.
const TASK_PROGRESS_TOKEN: &str = "io.modelcontextprotocol/tasks";

/// One pass's plumbing: its request context (cancelled by `tasks/cancel`) and the receiving
/// end of its notifications, handed to [`forward`] once the task exists.
pub(super) struct Wiring {
    pub(super) token: CancellationToken,
    pub(super) rctx: RequestScope,
    pub(super) notes: mpsc::Receiver<Bytes>,
}

impl Wiring {
    pub(super) fn new(principal: Principal) -> Self {
        let token = CancellationToken::new();
        let (sink, notes) = NotificationSink::channel(QUEUE, token.clone());
        Self {
            rctx: RequestScope::new(principal, sink, token.clone()),
            token,
            notes,
        }
    }
}

/// Gives a task pass a progress token, so that `ctx.progress(..)` reports to the task.
pub(super) fn with_progress_token(meta: &mut RequestMeta) {
    if meta.progress_token.is_none() {
        meta.progress_token = Some(ProgressToken::String(TASK_PROGRESS_TOKEN.to_owned()));
    }
}

/// Writes the progress the pass of task `task_id` reports into the task's `statusMessage`,
/// until the pass ends (its sink is dropped). Bursts are coalesced: only the latest message
/// of what queued up meanwhile is written. Log notifications are dropped (no stream is left
/// to carry them).
///
/// Meanwhile it reads the task every `cancel_check`: a task found ended (cancelled through
/// another instance, or expired) or gone cancels `token`, so a fleet's `tasks/cancel` reaches
/// the handler within about `cancel_check`, whether or not it reports progress (a progress
/// write finding the task ended does the same at once).
pub(super) async fn forward(
    store: Arc<dyn TaskStore>,
    task_id: String,
    owner: String,
    mut notes: mpsc::Receiver<Bytes>,
    token: CancellationToken,
    cancel_check: Duration,
) {
    let mut check =
        tokio::time::interval_at(tokio::time::Instant::now() + cancel_check, cancel_check);
    // A store that stalls delays the next check; it never piles checks up.
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let first = tokio::select! {
            note = notes.recv() => match note {
                Some(note) => note,
                // The pass ended.
                None => return,
            },
            () = token.cancelled() => return,
            _ = check.tick() => {
                if task_ended(&*store, &task_id, &owner).await {
                    token.cancel();
                    return;
                }
                continue;
            }
        };
        let mut latest = progress_message(&first);
        while let Ok(more) = notes.try_recv() {
            if let Some(m) = progress_message(&more) {
                latest = Some(m);
            }
        }
        let Some(message) = latest else { continue };
        if !write_message(&*store, &task_id, &owner, message).await {
            token.cancel();
            return;
        }
    }
}

/// Whether the task has ended (a terminal status) or is gone. A store failure is logged and
/// read as "not ended": the next check asks again.
async fn task_ended(store: &dyn TaskStore, task_id: &str, owner: &str) -> bool {
    match store.get(task_id, owner).await {
        Ok(Some(record)) => record.status.is_terminal(),
        Ok(None) => true,
        Err(e) => {
            tracing::warn!(error = %e, "cannot check whether a running task was cancelled");
            false
        }
    }
}

/// `"message (progress/total)"` of a `notifications/progress`, or `None` for anything else.
fn progress_message(note: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(note).ok()?;
    if v.get("method")?.as_str()? != mcp_types::METHOD_NOTIFICATION_PROGRESS {
        return None;
    }
    let params = v.get("params")?;
    let progress = params.get("progress")?;
    let count = match params.get("total") {
        Some(total) if !total.is_null() => format!("{progress}/{total}"),
        _ => progress.to_string(),
    };
    Some(match params.get("message").and_then(Value::as_str) {
        Some(m) => format!("{m} ({count})"),
        None => count,
    })
}

/// Sets the task's `statusMessage` while it is working. `false` when the task ended (or is
/// gone); a store failure is logged and the message dropped (progress is best effort).
async fn write_message(store: &dyn TaskStore, task_id: &str, owner: &str, message: String) -> bool {
    for _ in 0..WRITE_ATTEMPTS {
        let record = match store.get(task_id, owner).await {
            Ok(Some(r)) => r,
            Ok(None) => return false,
            Err(e) => {
                tracing::warn!(error = %e, "cannot record a task's progress");
                return true;
            }
        };
        if record.status.is_terminal() {
            return false;
        }
        // Waiting for input: the pass that reported this has ended; nothing to say.
        if record.status != TaskStatus::Working {
            return true;
        }
        let mut next = record.next_revision();
        next.status_message = Some(message.clone());
        next.updated_ms = now_ms().max(next.updated_ms);
        match store.update(next).await {
            Ok(true) => return true,
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(error = %e, "cannot record a task's progress");
                return true;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::progress_message;

    #[test]
    fn progress_becomes_a_status_message() {
        let note = |params: &str| {
            format!(r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{params}}}"#)
        };
        assert_eq!(
            progress_message(
                note(r#"{"progressToken":"t","progress":2,"total":5,"message":"b.md"}"#).as_bytes()
            )
            .as_deref(),
            Some("b.md (2/5)")
        );
        assert_eq!(
            progress_message(note(r#"{"progressToken":"t","progress":3}"#).as_bytes()).as_deref(),
            Some("3")
        );
        let log = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#;
        assert_eq!(progress_message(log.as_bytes()), None);
        assert_eq!(progress_message(b"not json"), None);
    }
}
