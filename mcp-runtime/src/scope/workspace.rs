//! Containment: file operations resolved beneath a workspace directory handle.

use std::io;
use std::sync::Arc;

use cap_std::fs::{Dir, MetadataExt};

use super::uri::WorkspaceUri;

/// A file operation inside a workspace failed or was refused.
///
/// Paths in messages are workspace-relative (`.` is the workspace itself), so errors never leak
/// where the workspace lives on the server.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// Nothing exists at that path.
    #[error("{path} does not exist in the workspace")]
    NotFound {
        /// Workspace-relative path.
        path: String,
    },
    /// The path resolves outside the workspace, or the operating system denied access.
    #[error(
        "access to {path} was refused: it leads outside the workspace or the server lacks permission"
    )]
    Denied {
        /// Workspace-relative path.
        path: String,
    },
    /// A symlink was found where this operation follows none.
    #[error("{path} is a symbolic link; this operation does not follow links")]
    SymlinkRefused {
        /// Workspace-relative path.
        path: String,
    },
    /// A directory was expected.
    #[error("{path} is not a directory")]
    NotADirectory {
        /// Workspace-relative path.
        path: String,
    },
    /// A regular file was expected.
    #[error("{path} is not a regular file")]
    NotARegularFile {
        /// Workspace-relative path.
        path: String,
    },
    /// The entry was replaced while it was being checked; nothing was done.
    #[error("{path} changed while it was being opened; retry the operation")]
    ChangedConcurrently {
        /// Workspace-relative path.
        path: String,
    },
    /// Any other I/O failure.
    #[error("{op} {path} failed: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// Workspace-relative path.
        path: String,
        /// What the operating system reported.
        #[source]
        source: io::Error,
    },
}

impl FsError {
    /// Classifies an I/O error from a beneath-the-root operation.
    pub(crate) fn from_io(op: &'static str, path: &str, source: io::Error) -> Self {
        let path = path.to_owned();
        match source.kind() {
            io::ErrorKind::NotFound => Self::NotFound { path },
            // cap-std reports an escape attempt (a `..` or symlink leading out) as
            // PermissionDenied; the OS uses the same kind for EACCES.
            io::ErrorKind::PermissionDenied => Self::Denied { path },
            io::ErrorKind::NotADirectory => Self::NotADirectory { path },
            _ => Self::Io { op, path, source },
        }
    }
}

/// Opens the directory `name` (one plain component) inside `parent` without following a symlink.
///
/// cap-std has no no-follow directory open, so: `lstat` the entry (must be a real directory, not a
/// link), open it beneath `parent`, then check the opened handle is the same inode. A swap between
/// the two steps is detected and refused rather than followed.
pub(crate) fn open_dir_nofollow(parent: &Dir, name: &str, shown: &str) -> Result<Dir, FsError> {
    let before = parent
        .symlink_metadata(name)
        .map_err(|e| FsError::from_io("inspecting", shown, e))?;
    if before.is_symlink() {
        return Err(FsError::SymlinkRefused {
            path: shown.to_owned(),
        });
    }
    if !before.is_dir() {
        return Err(FsError::NotADirectory {
            path: shown.to_owned(),
        });
    }
    let dir = parent
        .open_dir(name)
        .map_err(|e| FsError::from_io("opening", shown, e))?;
    let after = dir
        .dir_metadata()
        .map_err(|e| FsError::from_io("inspecting", shown, e))?;
    if (after.dev(), after.ino()) != (before.dev(), before.ino()) {
        return Err(FsError::ChangedConcurrently {
            path: shown.to_owned(),
        });
    }
    Ok(dir)
}

/// An authorized workspace: a directory handle all file operations are resolved beneath.
///
/// Obtained from [`ScopePolicy::authorize`](super::ScopePolicy::authorize). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Workspace {
    dir: Arc<Dir>,
    root: WorkspaceUri,
    uri: WorkspaceUri,
}

impl Workspace {
    /// Opens the workspace `rest` components below an allowed root's handle, refusing symlinks
    /// at every step.
    pub(crate) fn open_beneath(
        root_dir: Arc<Dir>,
        root: WorkspaceUri,
        uri: WorkspaceUri,
        rest: &[String],
    ) -> Result<Self, FsError> {
        let mut dir = root_dir;
        let mut shown = String::new();
        for name in rest {
            if !shown.is_empty() {
                shown.push('/');
            }
            shown.push_str(name);
            dir = Arc::new(open_dir_nofollow(&dir, name, &shown)?);
        }
        Ok(Self { dir, root, uri })
    }

    /// The workspace's canonical URI (the allowed root's canonical path plus any sub-workspace
    /// components).
    pub fn uri(&self) -> &WorkspaceUri {
        &self.uri
    }

    /// The allowed root this workspace lies in (equal to [`uri`](Self::uri) unless this is a
    /// sub-workspace).
    pub fn root(&self) -> &WorkspaceUri {
        &self.root
    }

    /// The directory handle everything is resolved beneath, for operations this type does not
    /// offer. cap-std keeps paths opened through it inside the workspace.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }
}
