//! TEMPORARY: the contract's `ToolHandler`/`ToolContext`/`ToolError`/`IntoCallToolResult`/
//! `Json`/`State`, reduced to what `#[tool]` generates against. Deleted when core's
//! `tool`/`context` modules land on main (then `tool_support` re-exports those).

use futures::future::BoxFuture;
use mcp_types::{CallToolResult, ClientCapabilities, ContentBlock, JsonObject, Tool};

/// Stand-in for `mcp_runtime::tool::ToolHandler`.
pub trait ToolHandler: Send + Sync + 'static {
    /// The descriptor.
    fn descriptor(&self) -> &Tool;
    /// Required client capabilities.
    fn required_capabilities(&self) -> &ClientCapabilities;
    /// Runs the tool.
    fn call<'a>(
        &'a self,
        ctx: &'a mut ToolContext,
        args: JsonObject,
    ) -> BoxFuture<'a, Result<CallToolResult, ToolError>>;
}

/// Stand-in for `mcp_runtime::tool::ToolError`.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolError {
    /// Tool failure.
    Tool(String),
    /// Bad arguments.
    InvalidArguments(String),
}

impl ToolError {
    /// Tool failure.
    pub fn tool(m: impl Into<String>) -> Self {
        ToolError::Tool(m.into())
    }
    /// Bad arguments.
    pub fn invalid_arguments(m: impl Into<String>) -> Self {
        ToolError::InvalidArguments(m.into())
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolError::Tool(m) => f.write_str(m),
            ToolError::InvalidArguments(m) => write!(f, "invalid arguments: {m}"),
        }
    }
}

/// Stand-in for `mcp_runtime::tool::IntoCallToolResult`.
pub trait IntoCallToolResult {
    /// Converts.
    fn into_call_tool_result(self) -> Result<CallToolResult, ToolError>;
}

impl IntoCallToolResult for String {
    fn into_call_tool_result(self) -> Result<CallToolResult, ToolError> {
        Ok(CallToolResult::success(vec![ContentBlock::text(self)]))
    }
}

impl IntoCallToolResult for () {
    fn into_call_tool_result(self) -> Result<CallToolResult, ToolError> {
        Ok(CallToolResult::success(Vec::new()))
    }
}

impl<T: IntoCallToolResult> IntoCallToolResult for Result<T, ToolError> {
    fn into_call_tool_result(self) -> Result<CallToolResult, ToolError> {
        self.and_then(IntoCallToolResult::into_call_tool_result)
    }
}

/// Stand-in for `mcp_runtime::tool::Json`.
#[derive(Debug)]
pub struct Json<T>(pub T);

impl<T: serde::Serialize> IntoCallToolResult for Json<T> {
    fn into_call_tool_result(self) -> Result<CallToolResult, ToolError> {
        let v = serde_json::to_value(&self.0).map_err(|e| ToolError::tool(e.to_string()))?;
        let mut r = CallToolResult::success(vec![ContentBlock::text(v.to_string())]);
        r.structured_content = Some(v);
        Ok(r)
    }
}

/// Stand-in for `mcp_runtime::tool::State`.
#[derive(Debug)]
pub struct State<T>(pub T);

/// Stand-in for `mcp_runtime::context::ToolContext`: holds one optional state value.
#[derive(Default)]
pub struct ToolContext {
    state: Option<std::sync::Arc<dyn std::any::Any + Send + Sync>>,
}

impl ToolContext {
    /// A context holding `state` (test helper of the stand-in).
    pub fn with_state<T: Send + Sync + 'static>(state: T) -> Self {
        ToolContext {
            state: Some(std::sync::Arc::new(state)),
        }
    }

    /// The state of type `T`.
    pub fn state<T: Clone + Send + Sync + 'static>(&self) -> Result<T, ToolError> {
        self.state
            .as_ref()
            .and_then(|s| s.downcast_ref::<T>())
            .cloned()
            .ok_or_else(|| ToolError::tool("no state of that type"))
    }
}
