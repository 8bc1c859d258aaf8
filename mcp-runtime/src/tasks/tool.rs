//! Registering a tool as task-supporting: [`TaskTool`] wraps any [`ToolHandler`].

use std::sync::Arc;

use mcp_types::{ClientCapabilities, JsonObject, TaskSupport, Tool};
use serde_json::{Value, json};

use crate::context::RequestContext;
use crate::tool::{BoxFuture, HandlerError, StateNeed, TaskStart, ToolHandler};
use mcp_types::CallToolResult;

/// Sets `execution.taskSupport` in `descriptor`, keeping any other `execution` fields.
pub(crate) fn set_task_support(descriptor: &mut Tool, support: TaskSupport) {
    let mut execution = match descriptor.extra.remove("execution") {
        Some(Value::Object(e)) => e,
        _ => JsonObject::new(),
    };
    execution.insert("taskSupport".to_owned(), json!(support));
    descriptor
        .extra
        .insert("execution".to_owned(), Value::Object(execution));
}

/// A tool registered with task support (see
/// [`ToolRouter::task`](crate::router::ToolRouter::task)): the wrapped handler, whose
/// descriptor gains `execution.taskSupport`.
pub struct TaskTool {
    inner: Arc<dyn ToolHandler>,
    descriptor: Tool,
    support: TaskSupport,
    start: TaskStart,
}

impl std::fmt::Debug for TaskTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskTool")
            .field("name", &self.descriptor.name)
            .field("support", &self.support)
            .field("start", &self.start)
            .finish()
    }
}

impl TaskTool {
    /// Wraps `inner` with `support` and `start`.
    pub fn new(inner: Arc<dyn ToolHandler>, support: TaskSupport, start: TaskStart) -> Self {
        let mut descriptor = inner.descriptor().clone();
        set_task_support(&mut descriptor, support);
        Self {
            inner,
            descriptor,
            support,
            start,
        }
    }
}

impl ToolHandler for TaskTool {
    fn descriptor(&self) -> &Tool {
        &self.descriptor
    }

    fn required_capabilities(&self) -> &ClientCapabilities {
        self.inner.required_capabilities()
    }

    fn optional_capabilities(&self) -> Option<&ClientCapabilities> {
        self.inner.optional_capabilities()
    }

    fn declaration_error(&self) -> Option<&str> {
        self.inner.declaration_error()
    }

    fn state_needs(&self) -> &[StateNeed] {
        self.inner.state_needs()
    }

    fn required_scopes(&self) -> &[&'static str] {
        self.inner.required_scopes()
    }

    fn task_support(&self) -> TaskSupport {
        self.support
    }

    fn task_start(&self) -> TaskStart {
        self.start
    }

    fn may_request_input(&self) -> bool {
        self.inner.may_request_input()
    }

    fn call<'a>(
        &'a self,
        ctx: &'a mut RequestContext,
        args: JsonObject,
    ) -> BoxFuture<'a, Result<CallToolResult, HandlerError>> {
        self.inner.call(ctx, args)
    }
}
