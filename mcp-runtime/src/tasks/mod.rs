//! The tasks extension (`io.modelcontextprotocol/tasks`): long-running tools answered with a
//! task the client polls.
//!
//! Version implemented: SEP-2663 as checked by the `tasks-*` server scenarios of
//! `@modelcontextprotocol/conformance` 0.2.0-alpha.12 (see the task types of `mcp_types`, e.g.
//! `mcp_types::Task`), which is the draft `docs/specification/draft/tasks.mdx` of
//! `modelcontextprotocol/experimental-ext-tasks` at commit 07bf500 (`ttlMs`, `pollIntervalMs`,
//! `notifications/tasks`; later drafts rename these to `ttlSeconds`, `pollIntervalMilliseconds` and
//! `notifications/tasks/status`).
//!
//! - **Opting in.** A tool is never a task unless it says so: `#[tool(task)]` (or `task =
//!   "optional"`), `#[tool(task = "required")]`, optionally with `task_start = "after_input"` (a
//!   [`TaskStart`](crate::tool::TaskStart)). A hand-written or dynamic tool is registered with
//!   `tools![export].task("export", TaskSupport::Optional)` (or
//!   [`ToolRouter::task_with`](crate::router::ToolRouter::task_with)), which also overrides the
//!   attribute. Its handler stays an ordinary async fn. The descriptor gains
//!   `execution.taskSupport`, and `server/discover` advertises the extension.
//! - **Server-directed creation.** When the request declares the extension in its
//!   `clientCapabilities`, a task-supporting tool answers `tools/call` with a flat
//!   `CreateTaskResult` (`resultType: "task"`) once the task is stored, and keeps running in
//!   the background. Without the extension an `optional` tool runs as a plain call; a
//!   `required` one is refused with `-32021` naming the extension.
//! - **Status.** `tasks/get` returns the task with its result (`completed`, including tool
//!   errors as `isError: true`), its protocol error (`failed`: a panic or a protocol error)
//!   or its pending `inputRequests` (`input_required`). `tasks/result` and `tasks/list` do not
//!   exist in this version (`-32601`).
//! - **Input rounds.** A tool asking for input inside a task (`ctx.elicit(..)` etc.) parks the task
//!   in `input_required`; `tasks/update` delivers answers (a subset is fine: the task waits for the
//!   rest; unknown keys are ignored) and, once all are in, the runtime runs the handler again with
//!   them, exactly as an MRTR retry: the sealed state of the round is kept in the store and never
//!   sent to the client. With [`TaskStart::AfterInput`](crate::tool::TaskStart::AfterInput) the
//!   tool first gathers input through ordinary MRTR rounds and becomes a task on the first pass
//!   that does not finish at once.
//! - **Cancellation** (cooperative, as the extension says). `tasks/cancel` marks the task
//!   `cancelled` and, when its handler runs on this instance, fires the handler's
//!   cancellation token: `ctx.cancelled()`, `ctx.is_cancelled()` and the
//!   [`Cancellation`](crate::extract::Cancellation) parameter see it. The handler may return
//!   on its own within a grace of 2 seconds (to release what it holds); then its future is
//!   dropped, as a transport drops a cancelled plain call. Whatever it returns is not
//!   recorded: the task stays `cancelled`. The ack is `{resultType: "complete"}`, also for a
//!   task that already ended. Cancelled through *another* instance of a fleet, the handler
//!   learns it at its next `ctx.progress(..)` (which finds the task ended); one that never
//!   reports progress runs to its end there, and its outcome is discarded.
//! - **Progress and logs.** The extension routes nothing of a task's handler onto the wire
//!   after the `CreateTaskResult` (the `tools/call` stream has ended, and core progress only
//!   travels on its request's own stream). So `ctx.progress(done, total, message)` inside a
//!   task becomes the task's `statusMessage` (`"message (done/total)"`, which the extension
//!   lists as a use of it), visible to `tasks/get` on any instance; a burst is coalesced to
//!   its latest message. A task's handler always has a progress token for this, whether or
//!   not the call carried one. `ctx.log(..)` inside a task is dropped.
//! - **Storage.** Tasks live in a [`TaskStore`]: [`MemoryTaskStore`] by default (one process),
//!   [`backend::sqlite::SqliteTaskStore`](crate::backend::sqlite::SqliteTaskStore) (feature
//!   `sqlite`) to share them between processes on a host,
//!   [`backend::postgres::PostgresTaskStore`](crate::backend::postgres::PostgresTaskStore) (feature
//!   `postgres`) or [`backend::redis::RedisTaskStore`](crate::backend::redis::RedisTaskStore)
//!   (feature `redis`) for a fleet of hosts. Each task lives for the server's task TTL
//!   (`ServerBuilder::task_ttl`, default 1 hour, at most 7 days) after creation, reported as
//!   `ttlMs`, and is forgotten after it (never returned, and deleted by the store's next sweep).
//!   [`open_task_store`] reads the replay store's spec, so one setting puts both in the same
//!   backend.
//! - **Limits.** Every built-in store enforces [`TaskLimits`]: at most 32 unexpired tasks per
//!   principal ([`TaskLimits::DEFAULT_MAX_TASKS_PER_PRINCIPAL`]) and at most
//!   [`MemoryTaskStore::DEFAULT_CAPACITY`] (1,000) tasks in the memory store,
//!   [`TaskLimits::DEFAULT_MAX_TASKS`] (10,000) in the SQLite, PostgreSQL and Redis stores
//!   (each store's `with_limits` changes them). Expired tasks are purged on every create. At
//!   a limit, only the creating principal's own finished task closest to expiry gives way; when
//!   all its tasks are still running, `tools/call` is refused (`-32600`
//!   [`TaskStoreError::PrincipalFull`], or `-32603` [`TaskStoreError::Full`], both with
//!   `data.retryable: true`) and no task is created. No principal can evict or starve
//!   another's tasks. A task's result is capped at `ServerBuilder::max_task_result_bytes`
//!   (default 4 MiB of JSON): a larger one fails the task with `-32603` naming both sizes
//!   (`data.reason: "task_result_too_large"`), and nothing of it is stored.
//! - **Headers.** Over HTTP `tasks/get`, `tasks/update` and `tasks/cancel` carry
//!   `Mcp-Name: <taskId>`; a mismatch is refused with `-32020`.
//! - **Status notifications.** A client that declares the extension sends
//!   `subscriptions/listen` with `notifications.taskIds`; the server acknowledges the ids it
//!   honours (the caller's own live tasks; others are left out, never revealed), sends each
//!   task's current state, then a `notifications/tasks` (the task as `tasks/get` shows it,
//!   `_meta` carrying the subscription id) on every change, and closes the stream with a
//!   `complete` result once every listened task is terminal. Limits and timing are in the
//!   guide (section "Long-running tools: tasks") and on
//!   `ServerBuilder::max_listen_duration`.

mod memory;
mod open;
mod store;
mod tool;

pub use mcp_types::TaskSupport;
pub use memory::MemoryTaskStore;
pub use open::open_task_store;
pub use store::{TaskLimits, TaskRecord, TaskStore, TaskStoreError, now_ms};
pub use tool::TaskTool;
pub(crate) use tool::set_task_support;

/// A new task id: 128 random bits as 32 hex digits.
pub(crate) fn new_task_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// `ms` (since the Unix epoch) as an RFC 3339 UTC timestamp with milliseconds.
pub(crate) fn rfc3339(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        ms % 1000
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day) (Howard Hinnant's
/// algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        // 2026-07-28T12:34:56.789Z
        assert_eq!(rfc3339(1_785_242_096_789), "2026-07-28T12:34:56.789Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn task_ids_are_distinct_hex() {
        let a = new_task_id().unwrap();
        let b = new_task_id().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
