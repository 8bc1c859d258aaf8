//! What a link store keeps ([`LinkRecord`]) and the [`LinkStore`] trait.

use std::fmt;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::state::CorrelationId;

/// Where a link stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkStage {
    /// Minted, waiting for its page to be completed.
    Open,
    /// Its page was completed (once; the link opens nothing any more).
    Completed,
    /// Locked after too many failed attempts on its page; nothing was completed.
    Locked,
}

/// One link as stored: the two random halves of its token, what it is bound to (principal,
/// the flow's correlation id and the input key), its lifetime and where it stands.
///
/// A store treats the record as opaque data plus the fields it indexes (`id`, `principal`,
/// `correlation`, `expires_ms`, `revision`); every decision (constant-time comparison, the
/// principal check, failure counting) is made by [`UrlLinks`](super::UrlLinks).
///
/// `Debug` never prints `secret` or `csrf`.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkRecord {
    /// The lookup half of the token: 128 random bits, unpadded url-safe base64 (22 chars).
    pub id: String,
    /// The secret half of the token: 128 random bits, unpadded url-safe base64; compared in
    /// constant time.
    pub secret: String,
    /// A per-link anti-forgery token for the page's own form (128 random bits).
    pub csrf: String,
    /// The principal that started the flow ([`crate::Principal::as_str`]).
    pub principal: String,
    /// The flow's correlation id, minted by the runtime and carried in the signed state.
    pub correlation: CorrelationId,
    /// The input key the link was sent under.
    pub key: String,
    /// When it was minted, milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// When it stops being usable (and may be deleted), milliseconds since the Unix epoch.
    pub expires_ms: u64,
    /// Where it stands.
    pub stage: LinkStage,
    /// Failed attempts on its page so far.
    pub failures: u8,
    /// What the page attached to the completion, if anything.
    #[serde(default)]
    pub data: Option<Value>,
    /// When the page was completed, milliseconds since the Unix epoch.
    #[serde(default)]
    pub completed_ms: Option<u64>,
    /// Write counter: 0 when inserted; each [`LinkStore::update`] carries the stored revision
    /// plus one, so of two writers that read the same revision only one wins.
    pub revision: u64,
}

impl fmt::Debug for LinkRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinkRecord")
            .field("id", &self.id)
            .field("principal", &self.principal)
            .field("correlation", &self.correlation)
            .field("key", &self.key)
            .field("expires_ms", &self.expires_ms)
            .field("stage", &self.stage)
            .field("failures", &self.failures)
            .field("revision", &self.revision)
            .finish_non_exhaustive()
    }
}

impl LinkRecord {
    /// Whether the record is past its expiry at `now_ms`.
    pub fn expired_at(&self, now_ms: u64) -> bool {
        now_ms >= self.expires_ms
    }

    /// Whether it belongs to the flow (`principal`, `correlation`).
    pub fn is_flow(&self, principal: &str, correlation: &CorrelationId) -> bool {
        self.principal == principal && self.correlation == *correlation
    }

    /// The record as the next write: revision plus one.
    #[must_use]
    pub fn next_revision(mut self) -> Self {
        self.revision = self.revision.saturating_add(1);
        self
    }
}

/// How many links a store holds: all principals together, and one principal.
///
/// Every built-in store enforces both at [`LinkStore::insert`], after dropping expired links:
/// when the principal holds `max_links_per_principal` links, its own link closest to expiry
/// is deleted; when the store holds `max_links`, the link closest to expiry (anyone's) is
/// deleted. A deleted link's flow then answers "expired; call the tool again".
///
/// Built with [`LinkLimits::new`] or from [`LinkLimits::default`] with the `with_*` setters,
/// which clamp as they set (so the limits always hold together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LinkLimits {
    pub(crate) max_links: usize,
    pub(crate) max_links_per_principal: usize,
}

impl LinkLimits {
    /// `max_links` of the memory store unless set.
    pub const DEFAULT_MAX_LINKS_MEMORY: usize = 1_024;
    /// `max_links` of the SQLite and PostgreSQL stores unless set.
    pub const DEFAULT_MAX_LINKS: usize = 10_000;
    /// `max_links_per_principal` of every store unless set: a user rarely has more than a
    /// few out-of-band steps open at once.
    pub const DEFAULT_MAX_LINKS_PER_PRINCIPAL: usize = 8;

    /// Limits of `max_links` in all, `per_principal` for one principal (clamped as
    /// [`LinkLimits::with_max_links`] and [`LinkLimits::with_max_links_per_principal`] say).
    pub fn new(max_links: usize, per_principal: usize) -> Self {
        let max_links = max_links.max(1);
        Self {
            max_links,
            max_links_per_principal: per_principal.clamp(1, max_links),
        }
    }

    /// Most unexpired links in the store (at least 1). Default
    /// [`LinkLimits::DEFAULT_MAX_LINKS`] (memory store: [`LinkLimits::DEFAULT_MAX_LINKS_MEMORY`]).
    pub fn max_links(&self) -> usize {
        self.max_links
    }

    /// Sets [`LinkLimits::max_links`], raised to at least 1;
    /// [`LinkLimits::max_links_per_principal`] is lowered to it if above.
    #[must_use]
    pub fn with_max_links(self, max_links: usize) -> Self {
        Self::new(max_links, self.max_links_per_principal)
    }

    /// Most unexpired links of one principal (at least 1, at most [`LinkLimits::max_links`]).
    /// Default [`LinkLimits::DEFAULT_MAX_LINKS_PER_PRINCIPAL`].
    pub fn max_links_per_principal(&self) -> usize {
        self.max_links_per_principal
    }

    /// Sets [`LinkLimits::max_links_per_principal`] (default
    /// [`LinkLimits::DEFAULT_MAX_LINKS_PER_PRINCIPAL`]), clamped to 1 ..= [`LinkLimits::max_links`].
    #[must_use]
    pub fn with_max_links_per_principal(self, per_principal: usize) -> Self {
        Self::new(self.max_links, per_principal)
    }

    /// The same limits, clamped (a no-op since every constructor clamps; kept for the stores,
    /// which clamp whatever they are given).
    #[must_use]
    pub(crate) fn clamped(self) -> Self {
        Self::new(self.max_links, self.max_links_per_principal)
    }
}

impl Default for LinkLimits {
    /// The shared stores' defaults: 10,000 links, 8 per principal.
    fn default() -> Self {
        Self::new(
            Self::DEFAULT_MAX_LINKS,
            Self::DEFAULT_MAX_LINKS_PER_PRINCIPAL,
        )
    }
}

/// Why a link store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinkStoreError {
    /// The backend failed (connection, I/O, corrupt row); the message says which.
    #[error("link store backend failed: {0}")]
    Backend(String),
    /// [`open_link_store`](super::open_link_store) did not understand the spec (shown with
    /// any password masked).
    #[error("link store {spec:?} not understood: {hint}")]
    InvalidSpec {
        /// The spec, password masked.
        spec: String,
        /// What to write instead.
        hint: &'static str,
    },
    /// The spec names a backend this build leaves out: rebuild with the named feature.
    #[error("the {0} link store is not compiled in; enable mcp-runtime's `{0}` feature")]
    NotCompiledIn(&'static str),
}

/// Where one-time links live. Give every instance of a fleet the same store (and the same
/// state keys): the instance that serves the page completes the link, and whichever instance
/// gets the client's retry sees it.
///
/// A store is a plain keyed table with a compare-and-set update; [`UrlLinks`](super::UrlLinks)
/// makes every decision. Reads never return an expired record. An implementation must keep
/// at most one unexpired link per flow (`principal`, `correlation`) and enforce its
/// [`LinkLimits`] in [`insert`](Self::insert).
pub trait LinkStore: Send + Sync + 'static {
    /// A short name for logs and errors (`memory`, `sqlite`, `postgres`, ...).
    fn name(&self) -> &'static str {
        "custom"
    }

    /// Stores `link` unless its flow (`principal`, `correlation`) already has an unexpired
    /// link, which is returned instead (unchanged). Before inserting, deletes expired links
    /// and makes room under the store's [`LinkLimits`]. Returns the flow's link.
    fn insert(
        &self,
        link: LinkRecord,
        now_ms: u64,
    ) -> BoxFuture<'_, Result<LinkRecord, LinkStoreError>>;

    /// The unexpired link `id`.
    fn get<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<Option<LinkRecord>, LinkStoreError>>;

    /// The unexpired link of the flow (`principal`, `correlation`).
    fn find_flow<'a>(
        &'a self,
        principal: &'a str,
        correlation: &'a CorrelationId,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<Option<LinkRecord>, LinkStoreError>>;

    /// Replaces the stored link `link.id` with `link` if the stored one has revision
    /// `link.revision - 1` (nobody wrote since the caller read it). Returns whether it wrote;
    /// `false` means re-read and decide again (or the link is gone).
    fn update(&self, link: LinkRecord) -> BoxFuture<'_, Result<bool, LinkStoreError>>;

    /// Deletes the link `id` (nothing happens when there is none).
    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), LinkStoreError>>;

    /// How many unexpired links the store holds.
    fn count(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, LinkStoreError>>;
}
