//! Explicit scope: which directories a request may touch, and how it touches them.
//!
//! Three layers, each useful alone and stronger together:
//!
//! 1. **Authorization** — [`ScopePolicy`] maps each [`Principal`](crate::Principal) to the
//!    workspace roots server configuration allows it. A client names a workspace with a
//!    `file:` URI; [`WorkspaceUri`] parses it strictly (one percent-decoding, no encoded
//!    separators, no NUL, dot segments resolved lexically) and the policy compares normalised
//!    path components against the allowed roots — never string prefixes.
//! 2. **Containment** — an authorized [`Workspace`] holds a `cap_std` directory handle and
//!    resolves every [`RelPath`] beneath it, so no `..` or symlink reaches outside, whatever the
//!    URI check concluded.
//! 3. **Sandbox** — [`crate::sandbox`] asks the kernel (Landlock) to enforce the same boundary
//!    on the whole process.

mod policy;
mod rel_path;
mod uri;
mod workspace;

pub use policy::{PolicyError, ScopeError, ScopePolicy};
pub use rel_path::{MAX_REL_PATH_LEN, RelPath, RelPathError};
pub use uri::{MAX_URI_LEN, UriError, WorkspaceUri};
pub use workspace::{FsError, Listing, WalkOptions, Workspace};
