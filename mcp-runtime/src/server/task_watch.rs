//! What `subscriptions/listen` needs from the tasks machinery: a broadcast of the tasks this
//! instance writes (so a listen hears local changes at once), and the per-principal count of
//! open listens (so one client cannot hold unbounded streams open).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::BoxFuture;
use tokio::sync::broadcast;

use crate::tasks::{TaskRecord, TaskStore, TaskStoreError};

/// Task-change announcements buffered per listener before it lags (a lagging listen re-reads
/// all its tasks, so nothing is lost but the immediacy).
const CHANGES: usize = 256;

/// A [`TaskStore`] that announces every successful update it makes on `changes`.
///
/// Every write the runtime makes to a task goes through the server's store, so wrapping it
/// once catches them all (status, `statusMessage`, outcome, cancellation).
#[derive(Debug)]
pub(super) struct Announcing {
    inner: Arc<dyn TaskStore>,
    changes: broadcast::Sender<String>,
}

impl Announcing {
    /// Wraps `inner`; subscribe to its changes with [`Announcing::subscribe`].
    pub(super) fn new(inner: Arc<dyn TaskStore>) -> Self {
        let (changes, _) = broadcast::channel(CHANGES);
        Self { inner, changes }
    }

    /// Ids of the tasks this instance updates from now on.
    pub(super) fn subscribe(&self) -> broadcast::Receiver<String> {
        self.changes.subscribe()
    }
}

impl TaskStore for Announcing {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        // A listen can only name tasks that exist already: creation needs no announcement.
        self.inner.create(record)
    }

    fn get<'a>(
        &'a self,
        task_id: &'a str,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        self.inner.get(task_id, owner)
    }

    fn update(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, TaskStoreError>> {
        Box::pin(async move {
            let task_id = record.task_id.clone();
            let wrote = self.inner.update(record).await?;
            if wrote {
                // No receiver (nobody listens) is the common case, not an error.
                let _ = self.changes.send(task_id);
            }
            Ok(wrote)
        })
    }
}

/// Open listens per principal.
#[derive(Debug, Default, Clone)]
pub(super) struct ListenCounts(Arc<Mutex<HashMap<String, usize>>>);

impl ListenCounts {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, usize>> {
        // Every change is one increment or decrement: a poisoned map is still consistent.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for one more listen of `principal`, or `None` when it has `max` open already.
    pub(super) fn take(&self, principal: &str, max: usize) -> Option<ListenSlot> {
        let mut counts = self.lock();
        let open = counts.entry(principal.to_owned()).or_insert(0);
        if *open >= max {
            return None;
        }
        *open += 1;
        Some(ListenSlot {
            counts: self.clone(),
            principal: principal.to_owned(),
        })
    }

    #[cfg(test)]
    fn open(&self, principal: &str) -> usize {
        self.lock().get(principal).copied().unwrap_or(0)
    }
}

/// One open listen; dropping it (however the listen ends) frees the slot.
#[derive(Debug)]
pub(super) struct ListenSlot {
    counts: ListenCounts,
    principal: String,
}

impl Drop for ListenSlot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock();
        if let Some(open) = counts.get_mut(&self.principal) {
            *open = open.saturating_sub(1);
            if *open == 0 {
                counts.remove(&self.principal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ListenCounts;

    #[test]
    fn slots_are_capped_per_principal_and_freed_on_drop() {
        let counts = ListenCounts::default();
        let a1 = counts.take("alice", 2).unwrap();
        let _a2 = counts.take("alice", 2).unwrap();
        assert!(counts.take("alice", 2).is_none());
        // Another principal has its own allowance.
        let _b = counts.take("bob", 2).unwrap();
        drop(a1);
        assert_eq!(counts.open("alice"), 1);
        assert!(counts.take("alice", 2).is_some());
        assert_eq!(counts.open("alice"), 1, "the temporary slot was dropped");
    }
}
