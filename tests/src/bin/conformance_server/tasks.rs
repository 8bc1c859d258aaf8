//! Tasks extension fixtures (`tasks-*` scenarios, SEP-2663).
//!
//! | Tool | Task support | Does |
//! |---|---|---|
//! | `greet` | none | `Hello, <name>!` |
//! | `slow_compute` | optional | sleeps `seconds` (at most 300), then reports `label` |
//! | `failing_job` | required | after ~1 s, a tool execution error (`isError: true`) |
//! | `protocol_error_job` | optional | after ~0.2 s, a protocol error (the task fails) |
//! | `confirm_delete` | optional | asks `confirm` (form `{confirm: boolean}`), then reports |
//! | `multi_input` | optional | asks `first` and `second` (form `{name}`) in one round |
//! | `test_tool_with_task` | required, starts after input | asks `user_name` by MRTR, then works ~1 s as a task and greets |

use std::time::Duration;

use mcp_runtime::prelude::*;
use mcp_runtime::router::ToolRouter;
use mcp_runtime::tasks::TaskSupport;
use mcp_runtime::tool::TaskStart;
use mcp_types::ErrorObject;

use super::forms::NameForm;

/// The task fixtures, in `tools/list` order.
pub fn tools() -> ToolRouter {
    tools![
        greet,
        slow_compute,
        failing_job,
        protocol_error_job,
        confirm_delete,
        multi_input,
        test_tool_with_task,
    ]
    .task("slow_compute", TaskSupport::Optional)
    .task("failing_job", TaskSupport::Required)
    .task("protocol_error_job", TaskSupport::Optional)
    .task("confirm_delete", TaskSupport::Optional)
    .task("multi_input", TaskSupport::Optional)
    .task_with(
        "test_tool_with_task",
        TaskSupport::Required,
        TaskStart::AfterInput,
    )
}

/// `greet` arguments.
#[args]
#[derive(Debug)]
pub struct GreetArgs {
    /// Who to greet.
    pub name: String,
}

/// Greets `name` (never a task).
#[tool(read_only)]
async fn greet(args: GreetArgs) -> String {
    format!("Hello, {}!", args.name)
}

/// `slow_compute` arguments.
#[args]
#[derive(Debug)]
pub struct SlowArgs {
    /// How long to work, in seconds (at most 300).
    #[serde(default)]
    pub seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    pub label: Option<String>,
}

/// Works for `seconds`, then reports.
#[tool(read_only)]
async fn slow_compute(args: SlowArgs) -> String {
    let secs = if args.seconds.is_finite() {
        args.seconds.clamp(0.0, 300.0)
    } else {
        0.0
    };
    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    format!(
        "computed {} after {secs} s",
        args.label.as_deref().unwrap_or("(no label)")
    )
}

/// Fails as a tool after about a second.
#[tool(read_only)]
async fn failing_job() -> Result<String, HandlerError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(HandlerError::tool("the job failed, as it always does"))
}

/// Fails with a protocol error shortly after starting.
#[tool(read_only)]
async fn protocol_error_job() -> Result<String, HandlerError> {
    tokio::time::sleep(Duration::from_millis(200)).await;
    Err(HandlerError::protocol(ErrorObject::internal_error(
        "the job hit an internal error",
    )))
}

/// Confirmation of a deletion.
#[derive(ElicitForm)]
pub struct DeleteForm {
    /// Delete the file?
    pub confirm: bool,
}

/// `confirm_delete` arguments.
#[args]
#[derive(Debug)]
pub struct DeleteArgs {
    /// The file to delete.
    pub filename: String,
}

/// Asks for a confirmation, then reports what it would have done.
#[tool(requires(form_elicitation))]
async fn confirm_delete(
    ctx: &mut RequestContext,
    args: DeleteArgs,
) -> Result<String, HandlerError> {
    let answer = ctx
        .elicit::<DeleteForm>("confirm", format!("Delete {}?", args.filename), ())
        .await?;
    Ok(match answer {
        Elicitation::Accepted(DeleteForm { confirm: true }) => {
            format!("deleted {}", args.filename)
        }
        _ => format!("kept {}", args.filename),
    })
}

fn name_of(answer: Elicitation<NameForm>) -> String {
    match answer {
        Elicitation::Accepted(f) => f.name,
        Elicitation::Declined | Elicitation::Cancelled => "(none)".to_owned(),
    }
}

/// Asks two questions in one round; completes once both are answered.
#[tool(read_only, requires(form_elicitation))]
async fn multi_input(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    let first = ctx
        .try_elicit::<NameForm>("first", "First name?", ())
        .await?;
    let second = ctx
        .try_elicit::<NameForm>("second", "Second name?", ())
        .await?;
    ctx.await_inputs()?;
    match (first, second) {
        (Some(a), Some(b)) => Ok(format!("got {} and {}", name_of(a), name_of(b))),
        _ => Err(HandlerError::tool(
            "an input was reported complete but is missing; call the tool again",
        )),
    }
}

/// Asks the user's name (MRTR, before any task), then works about a second as a task.
#[tool(read_only, requires(form_elicitation))]
async fn test_tool_with_task(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    let name = name_of(
        ctx.elicit::<NameForm>("user_name", "What is your name?", ())
            .await?,
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(format!("Hello, {name}! Your task is done."))
}
