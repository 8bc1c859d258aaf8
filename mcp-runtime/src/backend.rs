//! Store backends, by URL scheme: one backend per database, opening every store it backs.
//!
//! A server keeps three kinds of shared state: one-time claims ([`ReplayStore`]), tasks
//! ([`TaskStore`]) and URL-mode links ([`LinkStore`]); rate limits ride on the replay store
//! ([`ReplayStore::rate_limit_store`]). One store URL names the database for all of them
//! ([`replay::open_store`](crate::replay::open_store),
//! [`tasks::open_task_store`](crate::tasks::open_task_store),
//! [`url_elicitation::open_link_store`](crate::url_elicitation::open_link_store)): the
//! URL's scheme picks a [`Backend`] from a process-wide registry, and the backend opens the
//! store asked for.
//!
//! | Scheme | Backend | Replay | Tasks | Links | Feature |
//! |---|---|---|---|---|---|
//! | `memory`, `memory:N` | one process | yes | yes | yes | always |
//! | `sqlite:PATH` | one host | yes | yes | yes | `sqlite` |
//! | `postgres://`, `postgresql://` | a fleet | yes | yes | yes | `postgres` |
//! | `redis://` | a fleet | yes | yes | no | `redis` |
//!
//! A scheme whose feature is compiled out is still known: opening it says which feature to
//! enable.
//!
//! # A backend of your own
//!
//! Implement [`Backend`] (the stores it does not provide keep the default, an error saying
//! so) and [`register`] it once at start-up, before the first store URL is opened; from then
//! on every `open_*` function, and so every `--store` option built on them, accepts its
//! scheme. Registering a scheme that is taken is an error, never a silent replacement.
//!
//! ```
//! use std::sync::Arc;
//! use futures::future::BoxFuture;
//! use mcp_runtime::backend::{self, Backend};
//! use mcp_runtime::replay::{MemoryReplayStore, ReplayError, ReplayStore};
//!
//! /// Claims kept by some service of ours (here: in memory, for the example).
//! #[derive(Debug)]
//! struct Acme;
//!
//! impl Backend for Acme {
//!     fn name(&self) -> &'static str {
//!         "acme"
//!     }
//!     fn schemes(&self) -> &'static [&'static str] {
//!         &["acme"]
//!     }
//!     fn replay_store<'a>(
//!         &'a self,
//!         _spec: &'a str,
//!     ) -> BoxFuture<'a, Result<Arc<dyn ReplayStore>, ReplayError>> {
//!         Box::pin(async { Ok(Arc::new(MemoryReplayStore::new(1000)) as Arc<dyn ReplayStore>) })
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! backend::register(Arc::new(Acme)).unwrap();
//! let claims = mcp_runtime::replay::open_store("acme://claims").await.unwrap();
//! # let _ = claims;
//! // The task store was not provided: the error says so.
//! assert!(mcp_runtime::tasks::open_task_store("acme://claims").await.is_err());
//! # });
//! ```

mod builtin;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "sqlite")]
pub mod sqlite;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use futures::future::BoxFuture;

use crate::rate_limit::{RateLimitError, RateLimitStore};
use crate::replay::{ReplayError, ReplayStore};
use crate::tasks::{TaskStore, TaskStoreError};
use crate::url_elicitation::{LinkStore, LinkStoreError};

/// A database (or service) that backs some or all of a server's stores, opened from a store
/// URL whose scheme is one of [`schemes`](Self::schemes). See the [module docs](self).
pub trait Backend: Send + Sync + fmt::Debug {
    /// A short name for errors and logs (`postgres`, `acme`).
    fn name(&self) -> &'static str;

    /// The URL schemes it opens, lower case, without the `:` (`["postgres", "postgresql"]`).
    fn schemes(&self) -> &'static [&'static str];

    /// Opens the replay store `spec` names (the whole store URL, scheme included).
    fn replay_store<'a>(
        &'a self,
        spec: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn ReplayStore>, ReplayError>>;

    /// Opens the task store `spec` names. Default: this backend keeps no tasks (an error
    /// saying to pick another store for them).
    fn task_store<'a>(
        &'a self,
        spec: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn TaskStore>, TaskStoreError>> {
        let err = TaskStoreError::InvalidSpec {
            spec: crate::replay::redact(spec.trim()),
            hint: "this store backend keeps no tasks; give tasks another store URL (or a TaskStore of your own)",
        };
        Box::pin(async move { Err(err) })
    }

    /// Opens the rate-limit store `spec` names. Default: this backend keeps no counters (an
    /// error saying to pick another store for them).
    fn rate_limit_store<'a>(
        &'a self,
        spec: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn RateLimitStore>, RateLimitError>> {
        let err = RateLimitError::InvalidSpec {
            spec: crate::replay::redact(spec.trim()),
            hint: "this store backend keeps no rate-limit counters; give them another store URL (or a RateLimitStore of your own)",
        };
        Box::pin(async move { Err(err) })
    }

    /// Opens the URL-mode link store `spec` names. Default: this backend keeps no links (an
    /// error saying to pick another store for them).
    fn link_store<'a>(
        &'a self,
        spec: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn LinkStore>, LinkStoreError>> {
        let err = LinkStoreError::InvalidSpec {
            spec: crate::replay::redact(spec.trim()),
            hint: "this store backend keeps no URL-mode links; give links another store URL (or a LinkStore of your own)",
        };
        Box::pin(async move { Err(err) })
    }
}

/// Why [`register`] refused a backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// Another backend answers this scheme already; nothing was registered.
    #[error(
        "the store URL scheme `{scheme}` is taken by the `{taken_by}` backend; register yours under a scheme of its own"
    )]
    SchemeTaken {
        /// The scheme asked for.
        scheme: String,
        /// The backend that has it.
        taken_by: &'static str,
    },
    /// A scheme is not a URL scheme (a letter, then letters, digits, `+`, `-` or `.`, at most
    /// 32 characters, lower case); nothing was registered.
    #[error(
        "`{0}` is not a URL scheme: write a lower-case letter, then letters, digits, `+`, `-` or `.` (at most 32)"
    )]
    InvalidScheme(String),
    /// The backend names no scheme at all.
    #[error("the `{0}` backend names no URL scheme")]
    NoScheme(&'static str),
}

/// The process-wide registry: scheme → backend.
fn registry() -> &'static RwLock<BTreeMap<&'static str, Arc<dyn Backend>>> {
    static REGISTRY: OnceLock<RwLock<BTreeMap<&'static str, Arc<dyn Backend>>>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut map = BTreeMap::new();
        for backend in builtin::all() {
            for scheme in backend.schemes() {
                map.insert(*scheme, Arc::clone(&backend));
            }
        }
        RwLock::new(map)
    })
}

fn valid_scheme(scheme: &str) -> bool {
    let mut chars = scheme.chars();
    scheme.len() <= 32
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c))
}

/// Makes `backend` open store URLs of its [`schemes`](Backend::schemes), process-wide. All or
/// nothing: a scheme that is taken (by a built-in backend too) or malformed refuses the whole
/// backend.
///
/// # Errors
/// [`RegisterError`], saying which scheme and why.
pub fn register(backend: Arc<dyn Backend>) -> Result<(), RegisterError> {
    if backend.schemes().is_empty() {
        return Err(RegisterError::NoScheme(backend.name()));
    }
    let mut map = registry().write().unwrap_or_else(PoisonError::into_inner);
    for scheme in backend.schemes() {
        if !valid_scheme(scheme) {
            return Err(RegisterError::InvalidScheme((*scheme).to_owned()));
        }
        if let Some(taken) = map.get(scheme) {
            return Err(RegisterError::SchemeTaken {
                scheme: (*scheme).to_owned(),
                taken_by: taken.name(),
            });
        }
    }
    for scheme in backend.schemes() {
        map.insert(*scheme, Arc::clone(&backend));
    }
    Ok(())
}

/// The schemes store URLs may use in this process, sorted: the built-in ones (compiled in or
/// not) and every registered one.
pub fn schemes() -> Vec<&'static str> {
    registry()
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .keys()
        .copied()
        .collect()
}

/// The scheme of `spec`: the text before the first `:` (lower-cased), or the whole spec
/// when it has none (`memory`).
fn scheme_of(spec: &str) -> String {
    let spec = spec.trim();
    spec.split_once(':')
        .map_or(spec, |(scheme, _)| scheme)
        .to_ascii_lowercase()
}

/// The backend for `spec`'s scheme, or `None` when no backend answers it.
pub(crate) fn backend_for(spec: &str) -> Option<Arc<dyn Backend>> {
    let scheme = scheme_of(spec);
    registry()
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(scheme.as_str())
        .cloned()
}

/// The hint for a store URL no backend answers.
pub(crate) const UNKNOWN_SCHEME: &str = "expected `memory`, `memory:N`, `sqlite:PATH`, `postgres://USER@HOST:PORT/DB`, `redis://HOST:PORT/DB` or the scheme of a backend registered with `mcp_runtime::backend::register`";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_are_read_from_the_front_and_validated() {
        assert_eq!(scheme_of(" memory "), "memory");
        assert_eq!(scheme_of("memory:3"), "memory");
        assert_eq!(scheme_of("PostgreSQL://u@h/db"), "postgresql");
        assert_eq!(scheme_of("sqlite:x.db"), "sqlite");
        for good in ["acme", "a+b", "x-1.v2"] {
            assert!(valid_scheme(good), "{good}");
        }
        for bad in ["", "1x", "Acme", "a b", "a:b", &"a".repeat(33)] {
            assert!(!valid_scheme(bad), "{bad}");
        }
    }

    #[test]
    fn built_in_schemes_are_known_whatever_the_features() {
        let known = schemes();
        for scheme in ["memory", "sqlite", "postgres", "postgresql", "redis"] {
            assert!(known.contains(&scheme), "{scheme}: {known:?}");
        }
    }
}
