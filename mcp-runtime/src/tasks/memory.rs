//! [`MemoryTaskStore`]: tasks in this process's memory, bounded in count and time.

use std::collections::HashMap;
use std::sync::Mutex;

use futures::future::BoxFuture;

use super::store::{TaskRecord, TaskStore, TaskStoreError, now_ms};

/// Tasks kept in memory: for a single process (tasks are lost on restart and invisible to
/// other instances; use a shared store for a fleet).
///
/// Bounds: at most `capacity` tasks are held. Expired tasks are purged on every create; when
/// the store is still full, the terminal task that finished longest ago is evicted early
/// (it can no longer change, and its client had the time up to now to read it); when every
/// held task is still live, creating a task fails with [`TaskStoreError::Full`]. Each task's
/// lifetime is what the runtime gives it (`ServerBuilder::task_ttl`, capped).
#[derive(Debug)]
pub struct MemoryTaskStore {
    capacity: usize,
    tasks: Mutex<HashMap<String, TaskRecord>>,
}

impl MemoryTaskStore {
    /// The capacity [`Default`] uses.
    pub const DEFAULT_CAPACITY: usize = 10_000;

    /// A store holding at most `capacity` tasks (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            tasks: Mutex::new(HashMap::new()),
        }
    }

    /// How many tasks are held (expired ones included until the next purge).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no task is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, TaskRecord>> {
        // A panic while holding the lock leaves a consistent map (every change is a single
        // insert or remove), so a poisoned lock is still usable.
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn insert(&self, record: TaskRecord) -> Result<(), TaskStoreError> {
        let mut tasks = self.lock();
        if tasks.contains_key(&record.task_id) {
            return Err(TaskStoreError::Exists(record.task_id));
        }
        if tasks.len() >= self.capacity {
            let now = now_ms();
            tasks.retain(|_, t| !t.expired_at(now));
        }
        if tasks.len() >= self.capacity {
            let oldest_done = tasks
                .values()
                .filter(|t| t.status.is_terminal())
                .min_by_key(|t| t.updated_ms)
                .map(|t| t.task_id.clone());
            match oldest_done {
                Some(id) => {
                    tasks.remove(&id);
                }
                None => return Err(TaskStoreError::Full(self.capacity)),
            }
        }
        tasks.insert(record.task_id.clone(), record);
        Ok(())
    }
}

impl Default for MemoryTaskStore {
    fn default() -> Self {
        Self::new(Self::DEFAULT_CAPACITY)
    }
}

impl TaskStore for MemoryTaskStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        let outcome = self.insert(record);
        Box::pin(async move { outcome })
    }

    fn get<'a>(
        &'a self,
        task_id: &'a str,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        let now = now_ms();
        let found = self
            .lock()
            .get(task_id)
            .filter(|t| t.owner == owner && !t.expired_at(now))
            .cloned();
        Box::pin(async move { Ok(found) })
    }

    fn update(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, TaskStoreError>> {
        let mut tasks = self.lock();
        let wrote = match tasks.get_mut(&record.task_id) {
            Some(stored)
                if !stored.status.is_terminal()
                    && stored.owner == record.owner
                    && stored.revision.checked_add(1) == Some(record.revision) =>
            {
                *stored = record;
                true
            }
            _ => false,
        };
        drop(tasks);
        Box::pin(async move { Ok(wrote) })
    }
}

// The fixture the store tests under `tests/` use, so both build the same records.
#[cfg(test)]
#[path = "../../tests/tasks_support/mod.rs"]
mod tasks_support;

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_types::TaskStatus;

    use super::tasks_support::record;

    fn block<T>(f: BoxFuture<'_, T>) -> T {
        futures::executor::block_on(f)
    }

    #[test]
    fn reads_are_scoped_to_the_owner_and_to_the_lifetime() {
        let store = MemoryTaskStore::new(8);
        block(store.create(record("a", "alice", TaskStatus::Working, u64::MAX))).unwrap();
        block(store.create(record("old", "alice", TaskStatus::Working, 2))).unwrap();
        assert!(block(store.get("a", "alice")).unwrap().is_some());
        assert!(block(store.get("a", "mallory")).unwrap().is_none());
        assert!(block(store.get("old", "alice")).unwrap().is_none());
        assert!(matches!(
            block(store.create(record("a", "alice", TaskStatus::Working, u64::MAX))),
            Err(TaskStoreError::Exists(_))
        ));
    }

    #[test]
    fn a_terminal_task_never_changes_again() {
        let store = MemoryTaskStore::new(8);
        block(store.create(record("a", "alice", TaskStatus::Working, u64::MAX))).unwrap();
        let write = |status| record("a", "alice", status, u64::MAX).next_revision();
        // Two writers read revision 0: the first wins, the second must re-read.
        assert!(block(store.update(write(TaskStatus::Working))).unwrap());
        assert!(!block(store.update(write(TaskStatus::Working))).unwrap());
        assert!(block(store.update(write(TaskStatus::Cancelled).next_revision())).unwrap());
        let late = write(TaskStatus::Completed).next_revision().next_revision();
        assert!(!block(store.update(late)).unwrap());
        let got = block(store.get("a", "alice")).unwrap().unwrap();
        assert_eq!(got.status, TaskStatus::Cancelled);
        // Another principal cannot overwrite it either.
        block(store.create(record("b", "alice", TaskStatus::Working, u64::MAX))).unwrap();
        let theft = record("b", "mallory", TaskStatus::Failed, u64::MAX).next_revision();
        assert!(!block(store.update(theft)).unwrap());
    }

    #[test]
    fn full_store_evicts_finished_tasks_first_and_refuses_when_all_are_live() {
        let store = MemoryTaskStore::new(2);
        block(store.create(record("done", "a", TaskStatus::Completed, u64::MAX))).unwrap();
        block(store.create(record("live", "a", TaskStatus::Working, u64::MAX))).unwrap();
        block(store.create(record("new", "a", TaskStatus::Working, u64::MAX))).unwrap();
        assert!(block(store.get("done", "a")).unwrap().is_none());
        assert!(matches!(
            block(store.create(record("more", "a", TaskStatus::Working, u64::MAX))),
            Err(TaskStoreError::Full(2))
        ));
        assert_eq!(store.len(), 2);
    }
}
