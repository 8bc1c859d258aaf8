//! Containment: file operations resolved beneath a workspace directory handle.

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{Dir, MetadataExt, OpenOptions};

use super::rel_path::RelPath;
use super::uri::WorkspaceUri;
use crate::log_safe::LogSafe;

/// Bounds for [`Workspace::walk_with`]: start from [`WalkOptions::default`] and change them
/// with the `with_*` setters (which clamp as they set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WalkOptions {
    pub(crate) max_depth: usize,
    pub(crate) max_entries: usize,
}

impl Default for WalkOptions {
    /// 16 levels, 10 000 entries: far above a notes folder, far below a home directory.
    fn default() -> Self {
        Self {
            max_depth: 16,
            max_entries: 10_000,
        }
    }
}

impl WalkOptions {
    /// Deepest directory level descended into (1 = only the workspace's own entries).
    /// Default 16.
    pub fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// Sets [`WalkOptions::max_depth`] (default 16), raised to at least 1 (the workspace's own
    /// entries are always looked at).
    #[must_use]
    pub fn with_max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth.max(1);
        self
    }

    /// Most directory entries examined (files, directories and everything else) before the
    /// walk stops and reports itself truncated. Default 10 000.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// Sets [`WalkOptions::max_entries`] (default 10 000). Any value works: 0 examines
    /// nothing and reports the walk truncated.
    #[must_use]
    pub fn with_max_entries(mut self, entries: usize) -> Self {
        self.max_entries = entries;
        self
    }
}

/// The result of [`Workspace::walk`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Listing {
    /// Matching regular files, sorted by id.
    pub files: Vec<RelPath>,
    /// Whether a [`WalkOptions`] bound cut the walk short (then `files` is incomplete).
    pub truncated: bool,
}

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
    /// The file is larger than the caller's limit.
    #[error("{path} is larger than the {limit}-byte limit for reading it")]
    TooLarge {
        /// Workspace-relative path.
        path: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// The file is not valid UTF-8 text.
    #[error("{path} is not valid UTF-8 text")]
    NotUtf8 {
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

/// Options for opening a file to read: never block in `open(2)` (a FIFO opened for reading
/// waits for a writer, forever if none comes), never acquire a controlling terminal, and, unless
/// `follow_final_link`, refuse a final symbolic link (`O_NOFOLLOW`).
fn read_options(follow_final_link: bool) -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
        if !follow_final_link {
            flags |= libc::O_NOFOLLOW;
        }
        options.custom_flags(flags);
    }
    #[cfg(not(unix))]
    let _ = follow_final_link;
    options
}

/// Classifies a failed open for reading: a link met under `O_NOFOLLOW` (`ELOOP`) and a socket
/// (`ENXIO`) are refusals of what the entry is, not I/O failures.
fn open_error(shown: &str, e: io::Error) -> FsError {
    #[cfg(unix)]
    match e.raw_os_error() {
        Some(libc::ELOOP) => {
            return FsError::SymlinkRefused {
                path: shown.to_owned(),
            };
        }
        Some(libc::ENXIO) => {
            return FsError::NotARegularFile {
                path: shown.to_owned(),
            };
        }
        _ => {}
    }
    FsError::from_io("opening", shown, e)
}

/// Reads an opened file after checking, on the handle itself, that it is a regular file (and,
/// when `expected` is given, the very `(dev, ino)` that was inspected before opening) of at
/// most `max_bytes` bytes.
fn read_opened(
    file: cap_std::fs::File,
    shown: &str,
    max_bytes: u64,
    expected: Option<(u64, u64)>,
) -> Result<Vec<u8>, FsError> {
    let meta = file
        .metadata()
        .map_err(|e| FsError::from_io("inspecting", shown, e))?;
    if !meta.is_file() {
        return Err(FsError::NotARegularFile {
            path: shown.to_owned(),
        });
    }
    if expected.is_some_and(|id| id != (meta.dev(), meta.ino())) {
        return Err(FsError::ChangedConcurrently {
            path: shown.to_owned(),
        });
    }
    if meta.len() > max_bytes {
        return Err(FsError::TooLarge {
            path: shown.to_owned(),
            limit: max_bytes,
        });
    }
    let mut buf = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| FsError::from_io("reading", shown, e))?;
    if buf.len() as u64 > max_bytes {
        return Err(FsError::TooLarge {
            path: shown.to_owned(),
            limit: max_bytes,
        });
    }
    Ok(buf)
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

/// Containment: every operation is resolved beneath the workspace handle.
///
/// Symlink policy, per operation:
/// - [`walk`](Self::walk) never descends into a symlinked directory (no cycles, no duplicate
///   listings, nothing outside). A symlink to a file is listed only if it is relative and
///   resolves, link by link, to a regular file inside the workspace; links leading outside
///   (including absolute links, even to inside paths) are skipped.
/// - [`read`](Self::read) / [`read_to_string`](Self::read_to_string) follow the same rule: links
///   resolving inside are followed, anything leading out is refused ([`FsError::Denied`]).
///   [`read_nofollow`](Self::read_nofollow) follows no link at all.
/// - Every read opens without blocking and reads only regular files, so a FIFO or device in
///   the workspace (or swapped in mid-operation) is refused at once instead of stalling.
/// - [`remove_file`](Self::remove_file) and [`write_file`](Self::write_file) follow no symlink
///   at all: every parent directory is re-opened one real directory at a time, and the entry
///   itself must not be a link.
impl Workspace {
    /// Lists regular files recursively with [`WalkOptions::default`], keeping those `filter`
    /// accepts.
    pub fn walk(&self, filter: impl FnMut(&RelPath) -> bool) -> Result<Listing, FsError> {
        self.walk_with(WalkOptions::default(), filter)
    }

    /// Lists regular files recursively within `options`' bounds, keeping those `filter` accepts.
    ///
    /// Entries whose names are not valid [`RelPath`] components (non-UTF-8, backslash, control
    /// characters) are skipped, as are sockets, FIFOs and devices. Entries that vanish or are
    /// swapped mid-walk are skipped. Only a failure to read the workspace itself is an error.
    pub fn walk_with(
        &self,
        options: WalkOptions,
        mut filter: impl FnMut(&RelPath) -> bool,
    ) -> Result<Listing, FsError> {
        let mut listing = Listing::default();
        let mut examined = 0usize;
        let root = self
            .dir
            .try_clone()
            .map_err(|e| FsError::from_io("opening", ".", e))?;
        let mut pending: Vec<(Dir, Option<RelPath>, usize)> = vec![(root, None, 1)];
        'walk: while let Some((dir, prefix, depth)) = pending.pop() {
            let shown = prefix.as_ref().map_or(".", RelPath::as_str);
            let entries = match dir.entries() {
                Ok(entries) => entries,
                Err(e) if prefix.is_none() => return Err(FsError::from_io("listing", shown, e)),
                Err(e) => {
                    tracing::debug!(dir = %LogSafe(shown), error = %LogSafe(&e), "skipping unreadable directory");
                    continue;
                }
            };
            for entry in entries {
                examined += 1;
                if examined > options.max_entries {
                    listing.truncated = true;
                    break 'walk;
                }
                let Ok(entry) = entry else { continue };
                let Ok(name) = entry.file_name().into_string() else {
                    continue;
                };
                let rel = match &prefix {
                    Some(p) => p.join(&name),
                    None => RelPath::new(name.as_str()),
                };
                let Ok(rel) = rel else { continue };
                let Ok(file_type) = entry.file_type() else {
                    continue;
                };
                if file_type.is_dir() {
                    if depth >= options.max_depth {
                        listing.truncated = true;
                        continue;
                    }
                    match open_dir_nofollow(&dir, &name, rel.as_str()) {
                        Ok(sub) => pending.push((sub, Some(rel), depth + 1)),
                        Err(e) => {
                            tracing::debug!(dir = %LogSafe(&rel), error = %LogSafe(&e), "skipping directory");
                        }
                    }
                } else if file_type.is_file() {
                    if filter(&rel) {
                        listing.files.push(rel);
                    }
                } else if file_type.is_symlink() {
                    // Resolved from the workspace root, so a link may point anywhere inside the
                    // workspace but cap-std refuses any step outside it.
                    let inside_file = self.dir.metadata(rel.as_path()).is_ok_and(|m| m.is_file());
                    if inside_file && filter(&rel) {
                        listing.files.push(rel);
                    }
                }
            }
        }
        listing.files.sort();
        Ok(listing)
    }

    /// Reads a regular file of at most `max_bytes` bytes.
    ///
    /// The file is opened without blocking (`O_NONBLOCK`: a FIFO or device swapped in for the
    /// file cannot stall the calling thread waiting for a writer) and then checked through the
    /// opened handle (`fstat`): anything but a regular file is [`FsError::NotARegularFile`].
    /// Symbolic links resolving inside the workspace are followed; see
    /// [`read_nofollow`](Self::read_nofollow) for a read that follows none.
    pub fn read(&self, rel: &RelPath, max_bytes: u64) -> Result<Vec<u8>, FsError> {
        let shown = rel.as_str();
        let file = self
            .dir
            .open_with(rel.as_path(), &read_options(true))
            .map_err(|e| open_error(shown, e))?;
        read_opened(file, shown, max_bytes, None)
    }

    /// Reads a regular file of at most `max_bytes` bytes, following no symbolic link at all.
    ///
    /// Like [`remove_file`](Self::remove_file), every parent is re-opened one real directory at
    /// a time and the entry itself must not be a link ([`FsError::SymlinkRefused`]); like
    /// [`read`](Self::read), the open never blocks and only a regular file is read. The opened
    /// handle must be the entry that was checked ([`FsError::ChangedConcurrently`] otherwise).
    pub fn read_nofollow(&self, rel: &RelPath, max_bytes: u64) -> Result<Vec<u8>, FsError> {
        let (parent, name) = self.open_parent(rel)?;
        let parent = parent.as_ref().unwrap_or(&self.dir);
        let shown = rel.as_str();
        let before = parent
            .symlink_metadata(name)
            .map_err(|e| FsError::from_io("inspecting", shown, e))?;
        if before.is_symlink() {
            return Err(FsError::SymlinkRefused {
                path: shown.to_owned(),
            });
        }
        if !before.is_file() {
            return Err(FsError::NotARegularFile {
                path: shown.to_owned(),
            });
        }
        let file = parent
            .open_with(name, &read_options(false))
            .map_err(|e| open_error(shown, e))?;
        read_opened(file, shown, max_bytes, Some((before.dev(), before.ino())))
    }

    /// Reads a regular UTF-8 text file of at most `max_bytes` bytes, following no link (see
    /// [`read_nofollow`](Self::read_nofollow)).
    pub fn read_to_string_nofollow(
        &self,
        rel: &RelPath,
        max_bytes: u64,
    ) -> Result<String, FsError> {
        let bytes = self.read_nofollow(rel, max_bytes)?;
        String::from_utf8(bytes).map_err(|_| FsError::NotUtf8 {
            path: rel.as_str().to_owned(),
        })
    }

    /// Reads a regular UTF-8 text file of at most `max_bytes` bytes.
    pub fn read_to_string(&self, rel: &RelPath, max_bytes: u64) -> Result<String, FsError> {
        let bytes = self.read(rel, max_bytes)?;
        String::from_utf8(bytes).map_err(|_| FsError::NotUtf8 {
            path: rel.as_str().to_owned(),
        })
    }

    /// Deletes the regular file `rel`, re-checking containment immediately before the unlink.
    ///
    /// The parent is re-opened from the workspace handle one real directory at a time (a parent
    /// swapped for a symlink since it was listed is refused, wherever the link points), the entry
    /// must be a regular file and not a symlink, and the unlink goes through the parent's handle.
    /// If the entry is swapped after the check, the unlink still only removes a name inside that
    /// directory (a link itself, never its target).
    pub fn remove_file(&self, rel: &RelPath) -> Result<(), FsError> {
        let (parent, name) = self.open_parent(rel)?;
        let parent = parent.as_ref().unwrap_or(&self.dir);
        let shown = rel.as_str();
        let meta = parent
            .symlink_metadata(name)
            .map_err(|e| FsError::from_io("inspecting", shown, e))?;
        if meta.is_symlink() {
            return Err(FsError::SymlinkRefused {
                path: shown.to_owned(),
            });
        }
        if !meta.is_file() {
            return Err(FsError::NotARegularFile {
                path: shown.to_owned(),
            });
        }
        parent
            .remove_file(name)
            .map_err(|e| FsError::from_io("deleting", shown, e))
    }

    /// Creates or atomically replaces the regular file `rel` with `contents`.
    ///
    /// Like [`remove_file`](Self::remove_file), no symlink is followed: parents must be real
    /// directories (they are not created) and an existing entry must be a regular file. The data
    /// goes to a fresh temporary file in the same directory, which is then renamed over `rel`, so
    /// readers see the old or the new contents, never a mix.
    pub fn write_file(&self, rel: &RelPath, contents: &[u8]) -> Result<(), FsError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let (parent, name) = self.open_parent(rel)?;
        let parent = parent.as_ref().unwrap_or(&self.dir);
        let shown = rel.as_str();
        match parent.symlink_metadata(name) {
            Ok(meta) if meta.is_symlink() => {
                return Err(FsError::SymlinkRefused {
                    path: shown.to_owned(),
                });
            }
            Ok(meta) if !meta.is_file() => {
                return Err(FsError::NotARegularFile {
                    path: shown.to_owned(),
                });
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(FsError::from_io("inspecting", shown, e)),
        }
        let temp = format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let mut options = OpenOptions::new();
        // create_new: O_EXCL never follows or reuses an existing entry.
        options.write(true).create_new(true);
        let result = parent
            .open_with(&temp, &options)
            .and_then(|mut file| {
                file.write_all(contents)?;
                file.sync_all()
            })
            .and_then(|()| parent.rename(&temp, parent, name));
        if let Err(e) = result {
            let _ = parent.remove_file(&temp);
            return Err(FsError::from_io("writing", shown, e));
        }
        Ok(())
    }

    /// Opens the directory containing `rel` without following symlinks; `None` means the
    /// workspace directory itself.
    fn open_parent<'r>(&self, rel: &'r RelPath) -> Result<(Option<Dir>, &'r str), FsError> {
        let mut components: Vec<&str> = rel.components().collect();
        let name = components.pop().unwrap_or(rel.as_str());
        let mut current: Option<Dir> = None;
        let mut shown = String::new();
        for component in components {
            if !shown.is_empty() {
                shown.push('/');
            }
            shown.push_str(component);
            let next = open_dir_nofollow(current.as_ref().unwrap_or(&self.dir), component, &shown)?;
            current = Some(next);
        }
        Ok((current, name))
    }
}
