//! Sandbox: ask the kernel to confine the whole process's file access (Landlock on Linux).
//!
//! This is the third layer of explicit scope, under [`crate::scope`]'s authorization and
//! containment: even a bug in the server (or in a library it uses) cannot then open files
//! outside the paths granted here. It is opt-in; a server calls [`restrict_to`] once at startup,
//! after reading its configuration and opening what it needs, and **before starting any thread
//! or async runtime**: Landlock confines the calling thread and the threads and processes it
//! creates afterwards, never threads that already exist, so [`restrict_to`] refuses to run in a
//! multi-threaded process rather than leave some threads unconfined.
//!
//! What is confined: filesystem access only (read, write, create, remove, rename/link across
//! directories, truncate, execute, device ioctls — Landlock ABI 5 rights). Network access and
//! descriptors already open (sockets, the stdio pipes, directory handles held by a
//! [`Workspace`](crate::scope::Workspace)) keep working. The only implicit grant is read-write
//! `/dev/null`, which spawning a child with null stdio needs. Everything else a server needs
//! after startup (a replay database, TLS certificates, its configuration directory) must be
//! listed by the caller.

use std::path::{Path, PathBuf};

/// How much of the requested confinement the kernel applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxStatus {
    /// Every requested restriction is enforced.
    FullyEnforced,
    /// The kernel supports an older Landlock ABI: some rights (e.g. truncate or device ioctls)
    /// are not restricted, the rest are.
    PartiallyEnforced,
    /// Nothing is enforced; the process runs unconfined.
    NotEnforced {
        /// Why, in words an operator can act on.
        reason: String,
    },
}

impl SandboxStatus {
    /// Whether any restriction is in force.
    pub fn is_enforced(&self) -> bool {
        !matches!(self, Self::NotEnforced { .. })
    }
}

/// The sandbox could not be set up as requested.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A path to grant could not be opened (missing or unreadable).
    #[error(
        "cannot grant sandbox access to {path:?}: {source}; create it or remove it from the list"
    )]
    Path {
        /// The path as given.
        path: PathBuf,
        /// What the operating system reported.
        #[source]
        source: std::io::Error,
    },
    /// More than one thread is running, so confining the calling thread would leave others free.
    #[error(
        "the process already runs {threads} threads; call sandbox::restrict_to before starting the async runtime or any thread"
    )]
    MultiThreaded {
        /// Threads counted in the process.
        threads: usize,
    },
    /// The kernel refused the ruleset.
    #[error("the kernel refused the Landlock ruleset: {0}")]
    Kernel(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Confines the current process (and its future children) to `paths_rw` (full access beneath
/// each) and `paths_ro` (read and execute beneath each).
///
/// Paths may be directories (access applies to everything beneath) or single files. Returns how
/// much the kernel enforces; `NotEnforced` is not an error, so the caller decides whether running
/// unconfined is acceptable (log it, or refuse to start).
///
/// Fails with [`SandboxError::MultiThreaded`] if the process already runs other threads.
pub fn restrict_to(
    paths_rw: &[PathBuf],
    paths_ro: &[PathBuf],
) -> Result<SandboxStatus, SandboxError> {
    imp::check_single_threaded()?;
    imp::restrict_to(paths_rw, paths_ro)
}

/// Like [`restrict_to`], without the single-thread check: confines the calling thread and the
/// threads and processes it creates afterwards, while threads that already exist stay
/// unconfined.
///
/// For a dedicated worker thread that runs or spawns less trusted work, or a process whose other
/// threads are known to touch no files (a test harness's idle main thread).
pub fn restrict_current_thread_to(
    paths_rw: &[PathBuf],
    paths_ro: &[PathBuf],
) -> Result<SandboxStatus, SandboxError> {
    imp::restrict_to(paths_rw, paths_ro)
}

/// Paths granted whatever the caller lists: read-write `/dev/null` (null stdio for children).
fn implicit_rw<'a>() -> impl Iterator<Item = &'a Path> {
    [Path::new("/dev/null")].into_iter().filter(|p| p.exists())
}

#[cfg(target_os = "linux")]
mod imp {
    use std::path::{Path, PathBuf};

    use landlock::{
        ABI, Access, AccessFs, BitFlags, LandlockStatus, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus,
    };

    use super::{SandboxError, SandboxStatus, implicit_rw};

    /// ABI 5 is the newest set of filesystem rights (later ABIs add signal/socket scoping,
    /// logging and thread sync, not file rights this module handles). Older kernels get the
    /// subset they know, reported as `PartiallyEnforced`.
    const FS_ABI: ABI = ABI::V5;

    pub(super) fn check_single_threaded() -> Result<(), SandboxError> {
        let threads = thread_count();
        if threads > 1 {
            return Err(SandboxError::MultiThreaded { threads });
        }
        Ok(())
    }

    pub(super) fn restrict_to(
        paths_rw: &[PathBuf],
        paths_ro: &[PathBuf],
    ) -> Result<SandboxStatus, SandboxError> {
        let kernel = |e: landlock::RulesetError| SandboxError::Kernel(Box::new(e));
        let all = AccessFs::from_all(FS_ABI);
        let read = AccessFs::from_read(FS_ABI);
        let mut ruleset = Ruleset::default()
            .handle_access(all)
            .map_err(kernel)?
            .create()
            .map_err(kernel)?;
        let rw = paths_rw.iter().map(PathBuf::as_path).chain(implicit_rw());
        for (path, access) in rw
            .map(|p| (p, all))
            .chain(paths_ro.iter().map(|p| (p.as_path(), read)))
        {
            ruleset = ruleset.add_rule(rule(path, access)?).map_err(kernel)?;
        }
        let status = ruleset.restrict_self().map_err(kernel)?;
        tracing::info!(ruleset = ?status.ruleset, landlock = ?status.landlock, "Landlock sandbox applied");
        Ok(match status.ruleset {
            RulesetStatus::FullyEnforced => SandboxStatus::FullyEnforced,
            RulesetStatus::PartiallyEnforced => SandboxStatus::PartiallyEnforced,
            RulesetStatus::NotEnforced => SandboxStatus::NotEnforced {
                reason: not_enforced_reason(status.landlock),
            },
        })
    }

    /// A rule for one path; a non-directory gets only the rights meaningful for files (the
    /// kernel rejects directory rights on a file).
    fn rule(path: &Path, access: BitFlags<AccessFs>) -> Result<PathBeneath<PathFd>, SandboxError> {
        let err = |source| SandboxError::Path {
            path: path.to_path_buf(),
            source,
        };
        let is_dir = std::fs::metadata(path).map_err(err)?.is_dir();
        let fd = PathFd::new(path).map_err(|e| err(std::io::Error::other(e)))?;
        let access = if is_dir {
            access
        } else {
            access & AccessFs::from_file(FS_ABI)
        };
        Ok(PathBeneath::new(fd, access))
    }

    fn not_enforced_reason(status: LandlockStatus) -> String {
        match status {
            LandlockStatus::NotEnabled => {
                "the kernel has Landlock but it is disabled; add `landlock` to the `lsm=` boot parameter".into()
            }
            LandlockStatus::NotImplemented => {
                "the kernel has no Landlock support (needs Linux 5.13+ built with CONFIG_SECURITY_LANDLOCK)".into()
            }
            LandlockStatus::Available { effective_abi, .. } => {
                format!("Landlock ABI {effective_abi:?} is available but enforced none of the requested rights")
            }
        }
    }

    /// Threads in this process, from `/proc/self/task`; 1 if that cannot be read (the check is
    /// a guard against misuse, not a security boundary).
    fn thread_count() -> usize {
        std::fs::read_dir("/proc/self/task").map_or(1, |entries| entries.count().max(1))
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::path::PathBuf;

    use super::{SandboxError, SandboxStatus};

    /// Without Landlock nothing is confined, so thread count does not matter.
    pub(super) fn check_single_threaded() -> Result<(), SandboxError> {
        Ok(())
    }

    pub(super) fn restrict_to(_: &[PathBuf], _: &[PathBuf]) -> Result<SandboxStatus, SandboxError> {
        let _ = super::implicit_rw();
        Ok(SandboxStatus::NotEnforced {
            reason: "process sandboxing is implemented with Landlock, which only Linux provides"
                .into(),
        })
    }
}
