//! [`MemoryTaskStore`]: tasks in this process's memory, bounded in count and time.

use std::collections::HashMap;
use std::sync::Mutex;

use futures::future::BoxFuture;

use super::store::{TaskLimits, TaskRecord, TaskStore, TaskStoreError, now_ms};

/// Tasks kept in memory: for a single process (tasks are lost on restart and invisible to
/// other instances; use a shared store for a fleet).
///
/// Bounds ([`TaskLimits`]): at most `capacity` tasks in all (default
/// [`DEFAULT_CAPACITY`](Self::DEFAULT_CAPACITY), 1,000) and at most
/// [`TaskLimits::DEFAULT_MAX_TASKS_PER_PRINCIPAL`] (32) per principal
/// ([`with_limits`](Self::with_limits) changes both). Expired tasks are purged on every
/// create. When the creating principal is at its share, or the store is full, that
/// principal's own finished tasks that would expire first are evicted to make room; when it
/// has none, the create fails with [`TaskStoreError::PrincipalFull`] or
/// [`TaskStoreError::Full`]. Another principal's task is never evicted, so no client can
/// make another's result disappear before its expiry. With results capped at
/// `ServerBuilder::max_task_result_bytes`, the memory held is at most about
/// `capacity × max_task_result_bytes` (one principal's part of it `32 ×` that). Each task's
/// lifetime is what the runtime gives it (`ServerBuilder::task_ttl`, capped).
#[derive(Debug)]
pub struct MemoryTaskStore {
    limits: TaskLimits,
    tasks: Mutex<HashMap<String, TaskRecord>>,
}

impl MemoryTaskStore {
    /// The capacity [`Default`] (and the `memory` spec) uses: 1,000 tasks, so that even
    /// full-size results (4 MiB each by default) stay within a few GB.
    pub const DEFAULT_CAPACITY: usize = 1_000;

    /// A store holding at most `capacity` tasks (at least 1), each principal at most
    /// [`TaskLimits::DEFAULT_MAX_TASKS_PER_PRINCIPAL`] of them (or `capacity`, if smaller).
    pub fn new(capacity: usize) -> Self {
        Self::with_limits(TaskLimits::new(
            capacity,
            TaskLimits::DEFAULT_MAX_TASKS_PER_PRINCIPAL,
        ))
    }

    /// A store with these limits (clamped as [`TaskLimits`] says).
    pub fn with_limits(limits: TaskLimits) -> Self {
        Self {
            limits: limits.clamped(),
            tasks: Mutex::new(HashMap::new()),
        }
    }

    /// The limits this store enforces.
    pub fn limits(&self) -> TaskLimits {
        self.limits
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
        let now = now_ms();
        tasks.retain(|_, t| !t.expired_at(now));
        let mut own_done: Vec<(u64, &String)> = Vec::new();
        let mut own = 0;
        for t in tasks.values().filter(|t| t.owner == record.owner) {
            own += 1;
            if t.status.is_terminal() {
                own_done.push((t.expires_ms, &t.task_id));
            }
        }
        let evict = self.limits.to_evict(own, tasks.len());
        if evict > 0 {
            // Only the creator's own finished tasks give way, those closest to expiry first;
            // all or nothing, so a refused create changes nothing.
            if own_done.len() < evict {
                return Err(self.limits.refusal(own));
            }
            own_done.sort_unstable();
            let gone: Vec<String> = own_done
                .iter()
                .take(evict)
                .map(|(_, id)| (*id).clone())
                .collect();
            for id in gone {
                tasks.remove(&id);
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

    use super::tasks_support::{limits, record};

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
    fn bobs_completed_task_survives_alice_creating_more_than_the_capacity() {
        // Before per-principal shares, a full store evicted the oldest finished task of
        // anyone: bob's, the first to finish.
        let store = MemoryTaskStore::new(10);
        // Bob's task takes one of the 10 places: alice keeps 9 of hers.
        futures::executor::block_on(limits::others_cannot_evict(&store, 25, 9, u64::MAX / 2));
        assert!(store.len() <= 10);
    }

    #[test]
    fn a_principal_at_its_share_is_refused_when_all_its_tasks_run() {
        let store = MemoryTaskStore::with_limits(TaskLimits::new(100, 3));
        futures::executor::block_on(limits::share_refuses_when_all_are_live(&store, 3, u64::MAX));
    }

    #[test]
    fn a_full_store_refuses_newcomers_and_evicts_only_the_creators_own() {
        let store = MemoryTaskStore::with_limits(TaskLimits::new(4, 3));
        futures::executor::block_on(limits::total_cap_refuses_and_evicts_only_the_creators_own(
            &store,
            u64::MAX,
        ));
        assert_eq!(store.len(), 4);
    }

    #[test]
    fn expired_tasks_are_purged_and_do_not_count() {
        let store = MemoryTaskStore::with_limits(TaskLimits::new(100, 2));
        futures::executor::block_on(limits::expired_tasks_do_not_count(&store, 2, u64::MAX));
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn default_limits_are_documented_ones() {
        let store = MemoryTaskStore::default();
        assert_eq!(store.limits().max_tasks, 1_000);
        assert_eq!(store.limits().max_tasks_per_principal, 32);
        // A share never exceeds the capacity.
        assert_eq!(MemoryTaskStore::new(2).limits().max_tasks_per_principal, 2);
    }

    #[test]
    fn limit_setters_clamp_as_documented() {
        let limits = TaskLimits::default()
            .with_max_tasks(0)
            .with_max_tasks_per_principal(0);
        assert_eq!(
            (limits.max_tasks(), limits.max_tasks_per_principal()),
            (1, 1)
        );
        let limits = TaskLimits::default()
            .with_max_tasks_per_principal(50)
            .with_max_tasks(20);
        assert_eq!(
            (limits.max_tasks(), limits.max_tasks_per_principal()),
            (20, 20)
        );
    }
}
