//! Authorization: which workspace roots each principal may use.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use super::uri::{UriError, WorkspaceUri};
use super::workspace::{FsError, Workspace};
use crate::Principal;

/// A configuration mistake found while building a [`ScopePolicy`].
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The root could not be resolved or opened (missing, unreadable, ...).
    #[error(
        "workspace root {path:?} cannot be used: {source}; create it or fix the server configuration"
    )]
    RootUnavailable {
        /// The root as configured.
        path: PathBuf,
        /// What the operating system reported.
        #[source]
        source: io::Error,
    },
    /// The root exists but is not a directory.
    #[error("workspace root {path:?} is not a directory; configure a directory of notes/files")]
    NotADirectory {
        /// The root as configured.
        path: PathBuf,
    },
    /// The root's path cannot be expressed as a workspace URI (non-UTF-8 or odd characters).
    #[error("workspace root {path:?} cannot be named by a file: URI: {source}")]
    Unrepresentable {
        /// The root as configured.
        path: PathBuf,
        /// Why no URI can name it.
        #[source]
        source: UriError,
    },
}

/// A request for a workspace was refused.
///
/// Denials never mention the roots that *are* allowed (neither this principal's nor anyone
/// else's), so probing URIs learns nothing about server configuration.
#[derive(Debug, thiserror::Error)]
pub enum ScopeError {
    /// The string is not an acceptable workspace URI.
    #[error("invalid workspace URI: {0}")]
    InvalidUri(#[from] UriError),
    /// The URI is well-formed but is not within any root allowed to this principal.
    #[error(
        "workspace {uri} is not allowed for this user; use a workspace root the server was configured to share with you"
    )]
    NotAuthorized {
        /// The normalised URI that was refused (the caller's own input, normalised).
        uri: String,
    },
    /// The URI is inside an allowed root but the directory it names cannot be opened safely.
    #[error("workspace {uri} cannot be opened: {source}")]
    Unavailable {
        /// The normalised URI that was requested.
        uri: String,
        /// Why opening failed.
        #[source]
        source: FsError,
    },
}

/// One allowed root: its canonical location, the spellings that name it, and a handle opened at
/// configuration time.
struct Root {
    /// The canonical (symlink-free) path, as a URI.
    canonical: WorkspaceUri,
    /// URIs a client may use for this root: the canonical one and, if different, the absolute
    /// path as configured (so `/home/u/notes` still works when `/home` is a symlink).
    aliases: Vec<WorkspaceUri>,
    /// Pinned at configuration: later renames or symlink swaps of the root path do not redirect
    /// requests elsewhere.
    dir: Arc<Dir>,
}

impl fmt::Debug for Root {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Root")
            .field("canonical", &self.canonical)
            .field("aliases", &self.aliases)
            .finish_non_exhaustive()
    }
}

/// The authorization layer of explicit scope: an allowlist of workspace roots per principal.
///
/// Built from server configuration; roots are canonicalised and opened when added, so a typo
/// fails at startup rather than on the first request.
///
/// [`authorize`](Self::authorize) accepts a URI that denotes an allowed root **or any directory
/// beneath it** (a sub-workspace). A sub-workspace is reached from the root's handle one real
/// directory at a time, refusing symlinks at every step, so it is always contained in the root.
/// Containment is decided on normalised path components, never on string prefixes.
#[derive(Debug, Default)]
pub struct ScopePolicy {
    grants: HashMap<Principal, Vec<Root>>,
}

impl ScopePolicy {
    /// An empty policy: every request is refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allows `principal` to use the directory `root` and everything beneath it.
    ///
    /// `root` must exist and be a directory; it is canonicalised and opened now.
    pub fn allow(
        mut self,
        principal: Principal,
        root: impl AsRef<Path>,
    ) -> Result<Self, PolicyError> {
        let configured = root.as_ref();
        let unavailable = |source| PolicyError::RootUnavailable {
            path: configured.to_path_buf(),
            source,
        };
        let canonical_path = std::fs::canonicalize(configured).map_err(unavailable)?;
        let metadata = std::fs::metadata(&canonical_path).map_err(unavailable)?;
        if !metadata.is_dir() {
            return Err(PolicyError::NotADirectory {
                path: configured.to_path_buf(),
            });
        }
        let unrepresentable = |source| PolicyError::Unrepresentable {
            path: configured.to_path_buf(),
            source,
        };
        let canonical = WorkspaceUri::from_path(&canonical_path).map_err(unrepresentable)?;
        let mut aliases = vec![canonical.clone()];
        // The configured spelling is only an alias when it is absolute and free of `..`, whose
        // lexical and physical meanings differ across symlinks.
        let plain = configured.is_absolute()
            && !configured
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir));
        if plain {
            let alias = WorkspaceUri::from_path(configured).map_err(unrepresentable)?;
            if alias != canonical {
                aliases.push(alias);
            }
        }
        let dir =
            Dir::open_ambient_dir(&canonical_path, ambient_authority()).map_err(unavailable)?;
        self.grants.entry(principal).or_default().push(Root {
            canonical,
            aliases,
            dir: Arc::new(dir),
        });
        Ok(self)
    }

    /// The canonical roots allowed to `principal` (for telling that principal what it may use;
    /// never show them to anyone else).
    pub fn roots_for(&self, principal: &Principal) -> Vec<WorkspaceUri> {
        self.grants
            .get(principal)
            .map(|roots| roots.iter().map(|r| r.canonical.clone()).collect())
            .unwrap_or_default()
    }

    /// Parses `uri` and authorizes it for `principal`, returning a contained workspace handle.
    pub fn authorize(&self, principal: &Principal, uri: &str) -> Result<Workspace, ScopeError> {
        let uri = WorkspaceUri::parse(uri)?;
        self.authorize_uri(principal, &uri)
    }

    /// Authorizes an already parsed URI for `principal`.
    ///
    /// When several roots contain the URI, the most specific (longest) one is used.
    pub fn authorize_uri(
        &self,
        principal: &Principal,
        uri: &WorkspaceUri,
    ) -> Result<Workspace, ScopeError> {
        let mut best: Option<(&Root, &[String])> = None;
        for root in self.grants.get(principal).into_iter().flatten() {
            for alias in &root.aliases {
                if let Some(rest) = uri.strip_base(alias) {
                    let longer = best.is_none_or(|(_, b)| rest.len() < b.len());
                    if longer {
                        best = Some((root, rest));
                    }
                }
            }
        }
        let Some((root, rest)) = best else {
            tracing::debug!(principal = %crate::log_safe::LogSafe(&principal), uri = %crate::log_safe::LogSafe(&uri), "workspace request denied: outside every allowed root");
            return Err(ScopeError::NotAuthorized {
                uri: uri.to_string(),
            });
        };
        let mut workspace_uri = root.canonical.clone();
        for component in rest {
            workspace_uri = workspace_uri.child(component);
        }
        Workspace::open_beneath(
            Arc::clone(&root.dir),
            root.canonical.clone(),
            workspace_uri,
            rest,
        )
        .map_err(|source| ScopeError::Unavailable {
            uri: uri.to_string(),
            source,
        })
    }
}
