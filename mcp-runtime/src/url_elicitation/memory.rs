//! [`MemoryLinkStore`]: links in this process's memory, bounded in count and time.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use futures::future::BoxFuture;

use super::store::{LinkLimits, LinkRecord, LinkStore, LinkStoreError};
use crate::state::CorrelationId;

/// Links kept in memory: for a single process (links are lost on restart and invisible to other
/// instances; a fleet shares a [`SqliteLinkStore`](crate::backend::sqlite::SqliteLinkStore) or
/// [`PostgresLinkStore`](crate::backend::postgres::PostgresLinkStore), or a [`LinkStore`] of its
/// own).
///
/// Bounds ([`LinkLimits`]): at most 1,024 links in all and 8 per principal by default
/// ([`with_limits`](Self::with_limits) changes both). Expired links are purged on every
/// insert; past a limit the link closest to expiry goes first (the principal's own for the
/// per-principal limit).
#[derive(Debug)]
pub struct MemoryLinkStore {
    limits: LinkLimits,
    inner: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    links: HashMap<String, LinkRecord>,
    /// The link id of each flow (principal, correlation).
    by_flow: HashMap<(String, CorrelationId), String>,
}

impl Table {
    fn remove(&mut self, id: &str) {
        if let Some(link) = self.links.remove(id) {
            self.by_flow.remove(&(link.principal, link.correlation));
        }
    }

    fn purge(&mut self, now_ms: u64) {
        let expired: Vec<String> = self
            .links
            .values()
            .filter(|l| l.expired_at(now_ms))
            .map(|l| l.id.clone())
            .collect();
        for id in expired {
            self.remove(&id);
        }
    }

    /// The link closest to expiry among those `pick` selects (oldest mint, then id, on ties).
    fn first_to_expire(&self, pick: impl Fn(&LinkRecord) -> bool) -> Option<String> {
        self.links
            .values()
            .filter(|l| pick(l))
            .min_by(|a, b| {
                (a.expires_ms, a.created_ms, &a.id).cmp(&(b.expires_ms, b.created_ms, &b.id))
            })
            .map(|l| l.id.clone())
    }
}

impl Default for MemoryLinkStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryLinkStore {
    /// A store with the memory defaults: 1,024 links, 8 per principal.
    pub fn new() -> Self {
        Self::with_limits(LinkLimits::new(
            LinkLimits::DEFAULT_MAX_LINKS_MEMORY,
            LinkLimits::DEFAULT_MAX_LINKS_PER_PRINCIPAL,
        ))
    }

    /// A store with these limits (clamped as [`LinkLimits`] says).
    pub fn with_limits(limits: LinkLimits) -> Self {
        Self {
            limits: limits.clamped(),
            inner: Mutex::new(Table::default()),
        }
    }

    /// The limits this store enforces.
    pub fn limits(&self) -> LinkLimits {
        self.limits
    }

    /// How many links are held (expired ones included until the next purge).
    pub fn len(&self) -> usize {
        self.lock().links.len()
    }

    /// Whether no link is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // Every change keeps both maps consistent before it can panic.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn insert_now(&self, link: LinkRecord, now_ms: u64) -> LinkRecord {
        let mut table = self.lock();
        table.purge(now_ms);
        let flow = (link.principal.clone(), link.correlation);
        if let Some(existing) = table.by_flow.get(&flow).and_then(|id| table.links.get(id)) {
            return existing.clone();
        }
        // Make room: the principal's own link closest to expiry first, then anyone's.
        while table
            .links
            .values()
            .filter(|l| l.principal == link.principal)
            .count()
            >= self.limits.max_links_per_principal
        {
            match table.first_to_expire(|l| l.principal == link.principal) {
                Some(id) => table.remove(&id),
                None => break,
            }
        }
        while table.links.len() >= self.limits.max_links {
            match table.first_to_expire(|_| true) {
                Some(id) => table.remove(&id),
                None => break,
            }
        }
        table.by_flow.insert(flow, link.id.clone());
        table.links.insert(link.id.clone(), link.clone());
        link
    }
}

impl LinkStore for MemoryLinkStore {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn insert(
        &self,
        link: LinkRecord,
        now_ms: u64,
    ) -> BoxFuture<'_, Result<LinkRecord, LinkStoreError>> {
        let stored = self.insert_now(link, now_ms);
        Box::pin(async move { Ok(stored) })
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<Option<LinkRecord>, LinkStoreError>> {
        let found = self
            .lock()
            .links
            .get(id)
            .filter(|l| !l.expired_at(now_ms))
            .cloned();
        Box::pin(async move { Ok(found) })
    }

    fn find_flow<'a>(
        &'a self,
        principal: &'a str,
        correlation: &'a CorrelationId,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<Option<LinkRecord>, LinkStoreError>> {
        let found = {
            let table = self.lock();
            table
                .by_flow
                .get(&(principal.to_owned(), *correlation))
                .and_then(|id| table.links.get(id))
                .filter(|l| !l.expired_at(now_ms))
                .cloned()
        };
        Box::pin(async move { Ok(found) })
    }

    fn update(&self, link: LinkRecord) -> BoxFuture<'_, Result<bool, LinkStoreError>> {
        let wrote = {
            let mut table = self.lock();
            match table.links.get_mut(&link.id) {
                Some(stored)
                    if stored.revision.saturating_add(1) == link.revision
                        && stored.is_flow(&link.principal, &link.correlation) =>
                {
                    *stored = link;
                    true
                }
                _ => false,
            }
        };
        Box::pin(async move { Ok(wrote) })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), LinkStoreError>> {
        self.lock().remove(id);
        Box::pin(async { Ok(()) })
    }

    fn count(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, LinkStoreError>> {
        let n = self
            .lock()
            .links
            .values()
            .filter(|l| !l.expired_at(now_ms))
            .count();
        Box::pin(async move { Ok(n) })
    }
}
