//! Everything a tool author needs: `use mcp_runtime::prelude::*;`.

pub use crate::Principal;
// The names before the rename, for one release; using them warns.
#[allow(deprecated)]
pub use crate::context::ToolContext;
pub use crate::context::{ClaimWork, ElicitForm, Elicitation, FormError, RequestContext};
pub use crate::extract::{Cancellation, FromToolCall};
pub use crate::form::{Choice, ElicitChoice};
pub use crate::prompt::{IntoGetPromptResult, PromptHandler, assistant, user};
pub use crate::resource::{Blob, IntoResourceContents, ResourceHandler, ResourceUri};
pub use crate::router::{PromptRouter, ResourceRouter, ToolRouter};
pub use crate::server::{Limits, Server, ServerBuilder};
#[allow(deprecated)]
pub use crate::tool::ToolError;
pub use crate::tool::{
    HandlerError, IntoCallToolResult, Json, State, StateNeed, ToolHandler, ToolResult,
};
pub use crate::url_elicitation::{LinkCompletion, UrlLinks};
pub use crate::{ElicitChoice, ElicitForm, prompt, resource, tool};
pub use crate::{prompts, resources, tools};
pub use mcp_types::{
    CallToolResult, CompletionContext, ContentBlock, GetPromptResult, Implementation, LoggingLevel,
    PromptMessage,
};
pub use schemars::JsonSchema;
pub use serde::{Deserialize, Serialize};
