//! The names nearly every tool needs: `use mcp_runtime::prelude::*;`.
//!
//! - the macros: [`tool`](macro@tool), [`prompt`](macro@prompt),
//!   [`resource`](macro@resource), [`args`](macro@args) (an arguments struct), the
//!   `ElicitForm` / `ElicitChoice` derives (with their traits), and [`tools!`](crate::tools),
//!   [`prompts!`](crate::prompts), [`resources!`](crate::resources);
//! - what a handler takes and returns: [`RequestContext`], [`State`], [`Principal`],
//!   [`Elicitation`], [`HandlerError`], [`ToolResult`], [`Json`];
//! - a server to serve them: [`Server`], [`Implementation`];
//! - the serde and schemars derives for `Json<T>` output (`Serialize`, `JsonSchema`) and
//!   nested types (`Deserialize`): these expand to paths in the `serde` and `schemars` crates,
//!   so a crate using them depends on `serde` 1 (feature `derive`) and `schemars` 1.x itself;
//!   `#[args]` needs neither.
//!
//! Everything else has one path, in its module: extractors in [`crate::extract`], prompt and
//! resource helpers in [`mod@crate::prompt`] and [`mod@crate::resource`], forms in [`crate::form`],
//! server settings in [`crate::server`], the wire types in `mcp_types`.

pub use crate::Principal;
pub use crate::context::{Elicitation, RequestContext};
pub use crate::form::{ElicitChoice, ElicitForm};
pub use crate::server::Server;
pub use crate::tool::{HandlerError, Json, State, ToolResult};
// From the macro crate, not `crate::`: that would bring the `prompt`, `resource` and `tool`
// modules along under the same names.
pub use crate::{prompts, resources, tools};
pub use mcp_macros::{ElicitChoice, ElicitForm, args, prompt, resource, tool};
pub use mcp_types::Implementation;
pub use schemars::JsonSchema;
pub use serde::{Deserialize, Serialize};
