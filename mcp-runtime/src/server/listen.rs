//! `subscriptions/listen`, serving what this server can honour: task status
//! (`notifications/tasks` for the `taskIds` the tasks extension adds to the filter).
//!
//! The catalogs are static, so the list-changed flags and resource subscriptions are never
//! honoured: the acknowledgement lists only the task ids, and nothing else is ever sent.
//! A listen names at most [`MAX_LISTEN_TASKS`] tasks; only the caller's own live tasks are
//! honoured (others are left out of the acknowledgement, so a task id of another principal
//! cannot be probed). A principal has at most [`MAX_LISTENS_PER_PRINCIPAL`] listens open.
//!
//! Changes are seen two ways: at once when this instance writes the task (a local broadcast), and
//! by re-reading the listened tasks from the store every [`STORE_POLL`] for writes made by other
//! instances sharing the store. The stream ends with the complete result when every listened task
//! is terminal (or gone), at the server's maximum listen duration, or on
//! [`Server::close_listens`](crate::server::Server::close_listens); it ends silently when the
//! client cancels or disconnects.

use std::collections::HashMap;
use std::time::Duration;

use mcp_types::{
    ErrorObject, JsonObject, RequestId, RequestMeta, SUBSCRIPTION_ID_KEY,
    SubscriptionsListenResult, SubscriptionsListenResultMeta,
};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::Server;
use super::reply::{error_reply, result_reply};
use crate::service::{Reply, RequestScope};

/// Most task ids one `subscriptions/listen` may name (more is `-32602`).
pub const MAX_LISTEN_TASKS: usize = 64;

/// Most `subscriptions/listen` streams one principal may have open at once (more is
/// `-32600`, until one of them ends).
pub const MAX_LISTENS_PER_PRINCIPAL: usize = 8;

/// How often a listen re-reads its tasks from the store, to see changes other instances
/// made (changes made here are seen at once).
pub const STORE_POLL: Duration = Duration::from_secs(1);

/// The `taskIds` extension member of a listen filter.
const TASK_IDS: &str = "taskIds";

/// The listened tasks still running: id → revision last sent.
type Watched = HashMap<String, u64>;

impl Server {
    /// `subscriptions/listen`: acknowledges the honoured subset, then streams task status
    /// until the listen ends (see the module docs).
    pub(super) async fn listen(
        &self,
        id: &RequestId,
        params: &JsonObject,
        meta: &RequestMeta,
        rctx: RequestScope,
    ) -> Reply {
        let requested = match requested_task_ids(params) {
            Ok(ids) => ids,
            Err(e) => return error_reply(Some(id), e),
        };
        if requested.is_some() && !super::tasks::declared(&meta.client_capabilities) {
            return error_reply(Some(id), super::tasks::extension_required());
        }
        let tasks = &self.inner.tasks;
        let owner = rctx.grant.principal.as_str();
        let Some(_slot) = tasks.listens.take(owner, MAX_LISTENS_PER_PRINCIPAL) else {
            return error_reply(
                Some(id),
                ErrorObject::invalid_request(format!(
                    "this client has {MAX_LISTENS_PER_PRINCIPAL} subscriptions/listen streams open \
                     already; cancel one before opening another"
                )),
            );
        };
        // Subscribed before the first read: a change between the read and the loop is heard.
        let mut changes = tasks.announcing.subscribe();
        let mut records = Vec::new();
        for task_id in requested.unwrap_or_default() {
            if records
                .iter()
                .any(|r: &crate::tasks::TaskRecord| r.task_id == task_id)
            {
                continue;
            }
            match tasks.store.get(&task_id, owner).await {
                Ok(Some(record)) => records.push(record),
                // Unknown, expired or another principal's: not honoured, not revealed.
                Ok(None) => {}
                Err(e) => return error_reply(Some(id), e.to_error_object()),
            }
        }
        let honoured: Vec<&str> = records.iter().map(|r| r.task_id.as_str()).collect();
        let mut filter = JsonObject::new();
        if !honoured.is_empty() {
            filter.insert(TASK_IDS.to_owned(), json!(honoured));
        }
        let ack = json!({
            "jsonrpc": "2.0",
            "method": mcp_types::METHOD_NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
            "params": {"notifications": filter, "_meta": {SUBSCRIPTION_ID_KEY: id}},
        });
        if !rctx.notifications.send_json(&ack).await {
            return self.listen_complete(id);
        }
        // The current state first: the client may have missed changes before it listened.
        let mut watched = Watched::new();
        for record in &records {
            if !self.send_status(id, record, &rctx).await {
                return self.listen_complete(id);
            }
            if !record.status.is_terminal() {
                watched.insert(record.task_id.clone(), record.revision);
            }
        }
        drop(records);
        let deadline = tokio::time::sleep(tasks.max_listen);
        tokio::pin!(deadline);
        let mut poll =
            tokio::time::interval_at(tokio::time::Instant::now() + STORE_POLL, STORE_POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !watched.is_empty() {
            let stale: Vec<String> = tokio::select! {
                biased;
                () = rctx.cancel.cancelled() => break,
                () = tasks.closing.cancelled() => break,
                () = &mut deadline => break,
                changed = changes.recv() => match changed {
                    Ok(task_id) if watched.contains_key(&task_id) => vec![task_id],
                    Ok(_) => continue,
                    // Missed announcements: re-read everything.
                    Err(RecvError::Lagged(_)) => watched.keys().cloned().collect(),
                    // The sender lives as long as the server: cannot happen while we run.
                    Err(RecvError::Closed) => break,
                },
                _ = poll.tick() => watched.keys().cloned().collect(),
            };
            if !self.refresh(id, stale, &mut watched, &rctx).await {
                break;
            }
        }
        self.listen_complete(id)
    }

    /// Re-reads `stale` tasks, sending each one whose revision moved; drops the terminal and
    /// the vanished ones from `watched`. `false` when the stream is gone.
    async fn refresh(
        &self,
        id: &RequestId,
        stale: Vec<String>,
        watched: &mut Watched,
        rctx: &RequestScope,
    ) -> bool {
        let owner = rctx.grant.principal.as_str();
        for task_id in stale {
            let Some(&sent) = watched.get(&task_id) else {
                continue;
            };
            match self.inner.tasks.store.get(&task_id, owner).await {
                Ok(Some(record)) if record.revision != sent => {
                    if !self.send_status(id, &record, rctx).await {
                        return false;
                    }
                    if record.status.is_terminal() {
                        watched.remove(&task_id);
                    } else {
                        watched.insert(task_id, record.revision);
                    }
                }
                Ok(Some(_)) => {}
                // Expired meanwhile: nothing more will be said about it.
                Ok(None) => {
                    watched.remove(&task_id);
                }
                // Transient, presumably: the next poll tries again.
                Err(e) => tracing::warn!(error = %e, "subscriptions/listen: cannot re-read a task"),
            }
        }
        true
    }

    /// Sends `notifications/tasks` with the task as `tasks/get` would show it now.
    async fn send_status(
        &self,
        id: &RequestId,
        record: &crate::tasks::TaskRecord,
        rctx: &RequestScope,
    ) -> bool {
        let detailed = record.detailed(Some(self.inner.tasks.poll_interval));
        let Ok(Value::Object(mut params)) = serde_json::to_value(&detailed) else {
            return false;
        };
        // `resultType` belongs to results, not to notification params.
        params.remove("resultType");
        params.insert("_meta".to_owned(), json!({SUBSCRIPTION_ID_KEY: id}));
        let note = json!({
            "jsonrpc": "2.0",
            "method": mcp_types::NOTIFICATION_TASKS,
            "params": params,
        });
        rctx.notifications.send_json(&note).await
    }

    /// The result that closes a listen gracefully.
    fn listen_complete(&self, id: &RequestId) -> Reply {
        let result = SubscriptionsListenResult {
            result_type: mcp_types::ResultType::Complete,
            meta: SubscriptionsListenResultMeta {
                subscription_id: id.clone(),
                server_info: Some(self.inner.info.clone()),
                extra: JsonObject::new(),
            },
            extra: JsonObject::new(),
        };
        result_reply(id, &result)
    }
}

/// The `taskIds` of the listen filter: `None` when absent; `-32602` when `notifications` is
/// missing, or `taskIds` is not a list of at most [`MAX_LISTEN_TASKS`] strings.
fn requested_task_ids(params: &JsonObject) -> Result<Option<Vec<String>>, ErrorObject> {
    let Some(Value::Object(filter)) = params.get("notifications") else {
        return Err(ErrorObject::invalid_params(
            "subscriptions/listen needs a `notifications` object saying what to listen to",
        ));
    };
    let Some(ids) = filter.get(TASK_IDS) else {
        return Ok(None);
    };
    let Value::Array(ids) = ids else {
        return Err(ErrorObject::invalid_params(
            "`notifications.taskIds` must be an array of task ids",
        ));
    };
    if ids.len() > MAX_LISTEN_TASKS {
        return Err(ErrorObject::invalid_params(format!(
            "`notifications.taskIds` names {} tasks; at most {MAX_LISTEN_TASKS} per listen",
            ids.len()
        )));
    }
    ids.iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect::<Option<Vec<_>>>()
        .map(Some)
        .ok_or_else(|| ErrorObject::invalid_params("`notifications.taskIds` must hold strings"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{MAX_LISTEN_TASKS, requested_task_ids};

    fn params(v: serde_json::Value) -> mcp_types::JsonObject {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn task_ids_are_read_and_bounded() {
        assert_eq!(
            requested_task_ids(&params(json!({"notifications": {"taskIds": ["a", "b"]}}))).ok(),
            Some(Some(vec!["a".to_owned(), "b".to_owned()]))
        );
        assert_eq!(
            requested_task_ids(&params(
                json!({"notifications": {"toolsListChanged": true}})
            ))
            .ok(),
            Some(None)
        );
        assert!(requested_task_ids(&params(json!({}))).is_err());
        assert!(requested_task_ids(&params(json!({"notifications": {"taskIds": "a"}}))).is_err());
        assert!(requested_task_ids(&params(json!({"notifications": {"taskIds": [1]}}))).is_err());
        let many: Vec<String> = (0..=MAX_LISTEN_TASKS).map(|i| i.to_string()).collect();
        assert!(requested_task_ids(&params(json!({"notifications": {"taskIds": many}}))).is_err());
    }
}
