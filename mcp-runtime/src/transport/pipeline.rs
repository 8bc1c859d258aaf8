//! The request pipeline of a message-stream transport: what every transport that carries many
//! requests over one connection must do the same way, in one place.
//!
//! Newline-delimited stdio ([`super::stdio`], which serves any byte stream: a pipe, a Unix
//! socket, a TCP connection), the 2025-11-25 adapter's stdio and its HTTP sessions all drive
//! requests through it:
//!
//! - [`InFlight`]: the requests running on one connection (or session), by id. A second
//!   request with the id of one still running is refused (`-32600`), never run twice or
//!   allowed to shadow the first; `notifications/cancelled` finds the right one (`1` and `"1"`
//!   are different ids); a request's slot is freed, and its token cancelled, however it ends.
//! - [`Pipeline`]: runs each request as its own task (a slow request never blocks a fast
//!   one), answers it on the connection's one outgoing queue unless it was cancelled (the
//!   protocol forbids anything more for a cancelled request), answers `-32603` when the
//!   service produced nothing, logs one outcome per request, and on shutdown lets in-flight
//!   requests finish within a grace period before cancelling the rest.
//!
//! Policy (versions, capabilities, scopes, size and depth limits) is not here: the core
//! enforces it for every transport. The pipeline owns only what depends on the connection.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use mcp_types::ErrorCode;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::log_safe::LogSafe;
use crate::service::envelope;

/// The requests in flight on one connection, by id.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    map: Mutex<Slots>,
}

#[derive(Debug, Default)]
struct Slots {
    by_id: HashMap<String, (u64, CancellationToken)>,
    /// Tells a slot from a later one under the same id (freed and reused).
    next: u64,
}

/// The key of a request id: its JSON text, so `1` and `"1"` stay distinct.
fn key(id: &Value) -> String {
    id.to_string()
}

impl InFlight {
    /// Registers the request `id`; `None` when a request with that id is still in flight.
    pub(crate) fn begin(self: &Arc<Self>, id: &Value) -> Option<Ticket> {
        let key = key(id);
        let mut slots = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        if slots.by_id.contains_key(&key) {
            return None;
        }
        let generation = slots.next;
        slots.next = slots.next.wrapping_add(1);
        let cancel = CancellationToken::new();
        slots
            .by_id
            .insert(key.clone(), (generation, cancel.clone()));
        Some(Ticket {
            registry: Arc::clone(self),
            key,
            generation,
            cancel,
        })
    }

    /// Cancels the request `id` (a client's `notifications/cancelled`); whether one was in
    /// flight. Its slot stays taken until the request's task has stopped.
    pub(crate) fn cancel(&self, id: &Value) -> bool {
        let slots = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        match slots.by_id.get(&key(id)) {
            Some((_, token)) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancels the request named by a `notifications/cancelled` message's
    /// `params.requestId`, if it is in flight.
    pub(crate) fn cancel_notified(&self, notification: &Value) -> bool {
        let Some(id) = notification
            .get("params")
            .and_then(|p| p.get("requestId"))
            .filter(|id| envelope::is_valid_id(id))
        else {
            return false;
        };
        let cancelled = self.cancel(id);
        if cancelled {
            tracing::debug!(request_id = %LogSafe(id), "request cancelled by the client");
        }
        cancelled
    }

    /// Cancels every request in flight (the connection is going away).
    pub(crate) fn cancel_all(&self) {
        let slots = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        for (_, token) in slots.by_id.values() {
            token.cancel();
        }
    }

    /// How many requests are in flight.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .by_id
            .len()
    }
}

/// One request's slot in [`InFlight`]: freed, and its token cancelled (the signal "this
/// request is over" for work the handler spawned), when dropped.
#[derive(Debug)]
pub(crate) struct Ticket {
    registry: Arc<InFlight>,
    key: String,
    generation: u64,
    cancel: CancellationToken,
}

impl Ticket {
    /// The request's cancellation token.
    pub(crate) fn token(&self) -> &CancellationToken {
        &self.cancel
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut slots = self
            .registry
            .map
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if slots
            .by_id
            .get(&self.key)
            .is_some_and(|(generation, _)| *generation == self.generation)
        {
            slots.by_id.remove(&self.key);
        }
        drop(slots);
        self.cancel.cancel();
    }
}

/// What a request's work produced: the serialized response, and whether it is a result (for
/// the outcome log).
pub(crate) struct Answer {
    pub(crate) body: Bytes,
    pub(crate) ok: bool,
}

/// The `-32600` for a request whose id is already in flight.
pub(crate) fn duplicate_id_body(id: &Value) -> Bytes {
    envelope::error_body(
        Some(id),
        ErrorCode::InvalidRequest,
        "Invalid Request: this id is already in use by a request in flight",
    )
}

/// Runs one connection's requests: see the module documentation.
pub(crate) struct Pipeline {
    in_flight: Arc<InFlight>,
    tasks: JoinSet<()>,
    out: mpsc::Sender<Bytes>,
    /// The transport, in log records (`stdio`, `legacy stdio`).
    transport: &'static str,
}

impl Pipeline {
    /// A pipeline answering on `out` (the connection's outgoing queue).
    pub(crate) fn new(out: mpsc::Sender<Bytes>, transport: &'static str) -> Self {
        Self {
            in_flight: Arc::default(),
            tasks: JoinSet::new(),
            out,
            transport,
        }
    }

    /// The requests in flight.
    pub(crate) fn in_flight(&self) -> &Arc<InFlight> {
        &self.in_flight
    }

    /// A sender on the connection's outgoing queue (for a request's notifications).
    pub(crate) fn sender(&self) -> mpsc::Sender<Bytes> {
        self.out.clone()
    }

    /// Sends one message the transport produced itself (a refusal of an unreadable line).
    /// `false` when the connection's output is gone.
    pub(crate) async fn send(&self, body: Bytes) -> bool {
        self.out.send(body).await.is_ok()
    }

    /// Runs the request `id` (`method`, for the log) as its own task: `work` gets the
    /// request's cancellation token and produces its answer. A duplicate of a request in
    /// flight is refused instead, and nothing of `work` runs.
    pub(crate) async fn request<W, F>(&mut self, id: Value, method: &str, work: W)
    where
        W: FnOnce(CancellationToken) -> F,
        F: Future<Output = Option<Answer>> + Send + 'static,
    {
        self.reap();
        let Some(ticket) = self.in_flight.begin(&id) else {
            let _ = self.out.send(duplicate_id_body(&id)).await;
            return;
        };
        let cancel = ticket.token().clone();
        let work = work(cancel.clone());
        let out = self.out.clone();
        let transport = self.transport;
        let method = method.to_owned();
        self.tasks.spawn(async move {
            let started = Instant::now();
            let answer = tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                answer = work => Some(answer),
            };
            // Read before the ticket goes: dropping it cancels the token.
            let cancelled = cancel.is_cancelled();
            drop(ticket);
            let outcome = match answer {
                // Cancelled: nothing more may be sent for this request.
                None => "cancelled",
                Some(_) if cancelled => "cancelled",
                Some(Some(answer)) => {
                    let _ = out.send(answer.body).await;
                    if answer.ok { "ok" } else { "error" }
                }
                Some(None) => {
                    let body = envelope::error_body(
                        Some(&id),
                        ErrorCode::InternalError,
                        "Internal error: the server produced no response",
                    );
                    let _ = out.send(body).await;
                    "error"
                }
            };
            // DEBUG: the core's request span already makes the request's one INFO record.
            tracing::debug!(
                transport,
                request_id = %LogSafe(&id),
                method = %LogSafe(&method),
                outcome,
                latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
                "request finished"
            );
        });
    }

    /// Runs `work` (a notification the service handles) in the background, with the
    /// requests, so shutdown waits for it too.
    pub(crate) fn background(&mut self, work: impl Future<Output = ()> + Send + 'static) {
        self.reap();
        self.tasks.spawn(work);
    }

    /// Forgets the tasks that already ended, so the set does not grow with the connection.
    fn reap(&mut self) {
        while self.tasks.try_join_next().is_some() {}
    }

    /// The connection stopped taking messages: lets in-flight requests finish within
    /// `grace`, then cancels and stops whatever is left.
    pub(crate) async fn drain(&mut self, grace: Duration) {
        let drained = tokio::time::timeout(grace, async {
            while self.tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                transport = self.transport,
                "cancelling requests still running after the shutdown grace"
            );
            self.abort().await;
        }
    }

    /// Cancels and stops every request now (the output is gone: nobody can hear them).
    pub(crate) async fn abort(&mut self) {
        self.in_flight.cancel_all();
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_duplicate_is_refused_until_the_first_ends() {
        let in_flight = Arc::new(InFlight::default());
        let first = in_flight.begin(&json!(1)).unwrap();
        assert!(in_flight.begin(&json!(1)).is_none(), "duplicate in flight");
        // Same number as a string: a different id.
        let other = in_flight.begin(&json!("1")).unwrap();
        assert_eq!(in_flight.len(), 2);
        let token = first.token().clone();
        drop(first);
        assert!(
            token.is_cancelled(),
            "a finished request's token is cancelled"
        );
        assert!(in_flight.begin(&json!(1)).is_some(), "the id is free again");
        drop(other);
    }

    #[test]
    fn a_cancelled_slot_is_held_until_its_task_ends() {
        let in_flight = Arc::new(InFlight::default());
        let ticket = in_flight.begin(&json!("a")).unwrap();
        assert!(in_flight.cancel_notified(&json!({"params": {"requestId": "a"}})));
        assert!(ticket.token().is_cancelled());
        assert!(
            in_flight.begin(&json!("a")).is_none(),
            "a cancelled request still running keeps its id"
        );
        assert!(!in_flight.cancel_notified(&json!({"params": {"requestId": null}})));
        assert!(!in_flight.cancel(&json!("b")));
        drop(ticket);
        assert_eq!(in_flight.len(), 0);
    }
}
