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
//!
//! ```no_run
//! use mcp_runtime::Principal;
//! use mcp_runtime::scope::{RelPath, ScopePolicy};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Server configuration, at startup.
//! let policy = ScopePolicy::new().allow(Principal::new("alice"), "/home/alice/notes")?;
//!
//! // Per request: the principal comes from the transport, the URI from tool arguments.
//! let alice = Principal::new("alice");
//! let ws = policy.authorize(&alice, "file:///home/alice/notes")?;
//! let notes = ws.walk(|id| id.as_str().ends_with(".md"))?;
//! let target = RelPath::new("Shopping list.md")?;
//! if notes.files.contains(&target) {
//!     // ... after the user confirmed:
//!     ws.remove_file(&target)?;
//! }
//! # Ok(())
//! # }
//! ```

mod policy;
mod rel_path;
mod uri;
mod workspace;

pub use policy::{PolicyError, ScopeError, ScopePolicy};
pub use rel_path::{MAX_REL_PATH_LEN, RelPath, RelPathError};
pub use uri::{MAX_URI_LEN, UriError, WorkspaceUri};
pub use workspace::{FsError, Listing, WalkOptions, Workspace};
