//! Tools: the [`ToolHandler`] trait `#[tool]` implements, [`HandlerError`], and the conversions
//! from what a tool function returns into a `CallToolResult`.

/// The boxed future a hand-written [`ToolHandler::call`] returns (re-exported so that
/// implementing the trait needs no direct `futures` dependency).
pub use futures::future::BoxFuture;
use mcp_types::{CallToolResult, ClientCapabilities, ContentBlock, ErrorObject, JsonObject, Tool};
use serde::Serialize;

use crate::context::RequestContext;
pub use crate::handler_error::{HandlerError, ToolResult};

/// A tool the server can list and call.
///
/// Implemented by the struct `#[tool]` generates; implement it by hand for dynamic tools.
pub trait ToolHandler: Send + Sync + 'static {
    /// The descriptor served by `tools/list` (built once, cached, deterministic).
    fn descriptor(&self) -> &Tool;

    /// Client capabilities this tool may need. The runtime answers `-32021` (with exactly the
    /// missing subset as `data.requiredCapabilities`) before running the tool when the request
    /// lacks any of them.
    ///
    /// They also declare how the tool may ask for input: an elicitation, sampling or roots
    /// request in a mode declared neither here nor in
    /// [`ToolHandler::optional_capabilities`] fails the call with `-32603`, a server bug,
    /// whatever the client declared (return `{"elicitation":{"form":{}}}` for a tool that
    /// calls [`RequestContext::elicit`]).
    fn required_capabilities(&self) -> &ClientCapabilities;

    /// Client capabilities this tool uses only when the request declares them
    /// (`#[tool(optional(..))]`): a client without them is not refused, so the tool checks
    /// [`RequestContext::client_capabilities`] before it asks in such a mode (else the ask
    /// fails with `-32021`). `None` (the default) declares none.
    fn optional_capabilities(&self) -> Option<&ClientCapabilities> {
        None
    }

    /// Why this tool cannot be served as declared (for example, an arguments type whose
    /// schema root is not an object), or `None`. `Server::builder(..).build()` refuses a tool
    /// that reports one, so the mistake surfaces at start-up rather than on every call.
    fn declaration_error(&self) -> Option<&str> {
        None
    }

    /// The application state types the tool extracts (`State<T>` parameters).
    /// `Server::builder(..).build()` refuses the server when one was never registered with
    /// `.state(..)`. `#[tool]` fills it in; a hand-written tool that reads
    /// [`RequestContext::state`] should list its types here too.
    fn state_needs(&self) -> &[StateNeed] {
        &[]
    }

    /// OAuth scopes `tools/call` of this tool requires (`#[tool(scopes = [...])]`), merged
    /// with [`ServerBuilder::tool_scopes`](crate::server::ServerBuilder::tool_scopes) at build
    /// time. Over HTTP with OAuth a token lacking one gets 403 `insufficient_scope`.
    fn required_scopes(&self) -> &[&'static str] {
        &[]
    }

    /// Whether the tool runs as a task (the tasks extension). `Forbidden` unless declared with
    /// `#[tool(task)]` or registered with [`ToolRouter::task`](crate::router::ToolRouter::task).
    fn task_support(&self) -> mcp_types::TaskSupport {
        mcp_types::TaskSupport::Forbidden
    }

    /// When a task-supporting tool becomes a task (see [`TaskStart`]).
    fn task_start(&self) -> TaskStart {
        TaskStart::OnCall
    }

    /// Whether a call may end in an input request (elicitation, sampling, roots): only a
    /// tool that holds the context mutably can ask (`&mut RequestContext`). When `false`, a
    /// first call skips hashing its arguments, a digest only a signed `requestState` needs;
    /// a retry that carries a state is still checked in full. `#[tool]` answers from the
    /// function's parameters; the default, `true`, is right for any hand-written tool.
    fn may_request_input(&self) -> bool {
        true
    }

    /// Runs the tool. `args` is `params.arguments` (an empty object when absent).
    ///
    /// Work may start here, before the future is made (`#[tool]` extracts the parameters
    /// here, so the boxed future holds only the function's own): the runtime catches a panic
    /// in this call as it does in the future.
    fn call<'a>(
        &'a self,
        ctx: &'a mut RequestContext,
        args: JsonObject,
    ) -> BoxFuture<'a, Result<CallToolResult, HandlerError>>;
}

/// When a task-supporting tool becomes a task (for a request that declared the extension).
///
/// Declared with the tool (`#[tool(task_start = ..)]`, [`ToolHandler::task_start`]), so it
/// lives beside the tool API; the tasks extension ([`crate::tasks`]) re-exports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TaskStart {
    /// At once: the task is created before the handler runs, and every input the handler
    /// asks for is a round of the task (`input_required` + `tasks/update`). The default.
    #[default]
    OnCall,
    /// After input: the handler's first pass runs inside the request. If it asks for input,
    /// the client gets an ordinary `InputRequiredResult` (MRTR, no task yet); if it finishes
    /// at once, the plain result; only a pass that is still running becomes a task.
    AfterInput,
}

/// What one run of a tool ended with: its result, or the panic it raised.
pub(crate) type CallOutcome = std::thread::Result<Result<CallToolResult, HandlerError>>;

/// Runs `tool` with every panic caught, in [`ToolHandler::call`] itself and while its future
/// runs, so that a panicking tool fails its call and not the connection or the task.
pub(crate) fn call_caught<'a>(
    tool: &'a dyn ToolHandler,
    ctx: &'a mut RequestContext,
    args: JsonObject,
) -> impl std::future::Future<Output = CallOutcome> + Send + 'a {
    use futures::FutureExt as _;
    use std::panic::AssertUnwindSafe;
    match std::panic::catch_unwind(AssertUnwindSafe(move || tool.call(ctx, args))) {
        Ok(future) => futures::future::Either::Left(AssertUnwindSafe(future).catch_unwind()),
        Err(panic) => futures::future::Either::Right(std::future::ready(Err(panic))),
    }
}

/// Converts what a tool function returns into a `CallToolResult`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a tool",
    label = "does not implement `IntoCallToolResult`",
    note = "return `String`, `&'static str`, `()`, `CallToolResult`, `ContentBlock`, \
            `Vec<ContentBlock>` or `Json<T>` (T: Serialize + JsonSchema), optionally in \
            `Result<_, HandlerError>`",
    note = "to return `{Self}` as structured content, wrap it: `Json(value)`, with \
            `#[derive(Serialize, JsonSchema)]` on `{Self}`"
)]
pub trait IntoCallToolResult {
    /// Performs the conversion.
    fn into_call_tool_result(self) -> Result<CallToolResult, HandlerError>;
}

impl IntoCallToolResult for CallToolResult {
    fn into_call_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(self)
    }
}

impl IntoCallToolResult for String {
    fn into_call_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::success(vec![ContentBlock::text(self)]))
    }
}

impl IntoCallToolResult for &'static str {
    fn into_call_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::success(vec![ContentBlock::text(self)]))
    }
}

impl IntoCallToolResult for ContentBlock {
    fn into_call_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::success(vec![self]))
    }
}

impl IntoCallToolResult for Vec<ContentBlock> {
    fn into_call_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::success(self))
    }
}

impl IntoCallToolResult for () {
    fn into_call_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::success(Vec::new()))
    }
}

impl<T: IntoCallToolResult> IntoCallToolResult for Result<T, HandlerError> {
    fn into_call_tool_result(self) -> Result<CallToolResult, HandlerError> {
        self.and_then(IntoCallToolResult::into_call_tool_result)
    }
}

/// Structured tool output: serialised into `structuredContent` plus a text block with the same
/// JSON (for clients that only read `content`). `#[tool]` derives `outputSchema` from `T`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoCallToolResult for Json<T> {
    fn into_call_tool_result(self) -> Result<CallToolResult, HandlerError> {
        let value = serde_json::to_value(&self.0).map_err(|e| {
            HandlerError::protocol(ErrorObject::internal_error(format!(
                "tool output failed to serialise: {e}"
            )))
        })?;
        let text = serde_json::to_string(&value).unwrap_or_default();
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(value);
        Ok(result)
    }
}

/// One application state type a tool needs (see [`ToolHandler::state_needs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateNeed {
    /// `TypeId::of::<T>()`.
    pub type_id: std::any::TypeId,
    /// `std::any::type_name::<T>()`, for the error message.
    pub type_name: &'static str,
}

impl StateNeed {
    /// The need for state of type `T`.
    pub fn of<T: 'static>() -> Self {
        StateNeed {
            type_id: std::any::TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
        }
    }
}

/// Application state extractor: `State(notes): State<Notes>` in a `#[tool]` function's
/// parameters clones the `Notes` registered with `Server::builder(..).state(notes)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct State<T>(pub T);

impl<T: Clone + Send + Sync + 'static> State<T> {
    /// Extracts the state from a context (what `#[tool]` generates).
    pub fn from_context(ctx: &RequestContext) -> Result<Self, HandlerError> {
        ctx.state::<T>().map(State)
    }
}
