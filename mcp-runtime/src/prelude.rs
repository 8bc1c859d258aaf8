//! Everything a tool author needs: `use mcp_runtime::prelude::*;`.

pub use crate::Principal;
pub use crate::context::{ClaimMutation, ElicitForm, Elicitation, FormError, ToolContext};
pub use crate::form::{Choice, ElicitChoice};
pub use crate::router::ToolRouter;
pub use crate::server::{Limits, Server, ServerBuilder};
pub use crate::tool::{IntoCallToolResult, Json, State, ToolError, ToolHandler, ToolResult};
pub use crate::tools;
pub use crate::{ElicitChoice, ElicitForm, tool};
pub use mcp_types::{CallToolResult, ContentBlock, Implementation, LoggingLevel};
pub use schemars::JsonSchema;
pub use serde::{Deserialize, Serialize};
