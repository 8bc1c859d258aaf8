//! Fixtures that stream notifications or gate on client capabilities.
//!
//! | Tool | Scenario | Must do |
//! |---|---|---|
//! | `test_tool_with_progress` | `tools-call-with-progress` | with `_meta.progressToken`: progress 0, 50, 100 (of 100), ~50 ms apart, on the POST's SSE stream, echoing the token |
//! | `test_logging_tool` | `server-stateless` (`sep-2575-server-no-log-without-loglevel`) | log at info; the runtime must send nothing when `_meta` has no `logLevel` |
//! | `test_tool_with_logging` | `tools-call-with-logging` (pre-2026 revisions only) | three info logs ~50 ms apart |
//! | `test_missing_capability` | `server-stateless` (`sep-2575-server-rejects-undeclared-capability`, `-missing-capability-http-400`) | needs `sampling`: called without it, the runtime answers `-32021`, HTTP 400, `data.requiredCapabilities = {"sampling": {}}` |
//! | `test_streaming_elicitation` | `server-stateless` (`sep-2575-http-server-no-independent-requests-on-stream`) | needs form elicitation; its stream may carry notifications and the `InputRequiredResult`, never a server-to-client request |

use std::time::Duration;

use mcp_runtime::prelude::*;
use mcp_runtime::router::ToolRouter;
use mcp_types::LoggingLevel;
use mcp_types::{CreateMessageRequestParams, SamplingMessage};

use super::forms::NameForm;
use super::mrtr::sampled_text;

/// Pause between streamed notifications, so the client sees them arrive over time.
const STEP: Duration = Duration::from_millis(50);

/// The notification/capability fixtures, in `tools/list` order.
pub fn tools() -> ToolRouter {
    tools![
        test_tool_with_progress,
        test_logging_tool,
        test_tool_with_logging,
        test_missing_capability,
        test_streaming_elicitation,
    ]
}

/// Reports progress 0/100, 50/100 and 100/100 about 50 ms apart (when the request carries a
/// progress token), then confirms completion.
#[tool(read_only, idempotent)]
async fn test_tool_with_progress(ctx: &mut RequestContext) -> String {
    ctx.progress(0, Some(100), Some("started")).await;
    tokio::time::sleep(STEP).await;
    ctx.progress(50, Some(100), Some("half way")).await;
    tokio::time::sleep(STEP).await;
    ctx.progress(100, Some(100), Some("done")).await;
    "Progress tool completed (0, 50, 100 of 100).".to_owned()
}

/// Logs one info message (delivered only when the request set a log level), then returns.
#[tool(read_only, idempotent)]
async fn test_logging_tool(ctx: &mut RequestContext) -> String {
    ctx.log(LoggingLevel::Info, "test_logging_tool ran").await;
    "Logging tool completed.".to_owned()
}

/// Logs "Tool execution started", "Tool processing data" and "Tool execution completed" at
/// info level, about 50 ms apart (delivered only when the request set a log level).
#[tool(read_only, idempotent)]
async fn test_tool_with_logging(ctx: &mut RequestContext) -> String {
    ctx.log(LoggingLevel::Info, "Tool execution started").await;
    tokio::time::sleep(STEP).await;
    ctx.log(LoggingLevel::Info, "Tool processing data").await;
    tokio::time::sleep(STEP).await;
    ctx.log(LoggingLevel::Info, "Tool execution completed")
        .await;
    "Logging tool completed (3 messages).".to_owned()
}

/// Asks the client's model for a one-word greeting; needs the client's sampling capability.
#[tool(read_only, requires(sampling))]
async fn test_missing_capability(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    let params = CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text(
            "Reply with one word of greeting.",
        )],
        20,
    );
    let answer = ctx.sample("greeting", params).await?;
    Ok(format!("The model said: {}", sampled_text(&answer)))
}

/// Asks the user for their name through form elicitation, then greets them.
#[tool(read_only, requires(form_elicitation))]
async fn test_streaming_elicitation(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    ctx.log(LoggingLevel::Debug, "asking for the user's name")
        .await;
    match ctx
        .elicit::<NameForm>("user_name", "What is your name?", ())
        .await?
    {
        Elicitation::Accepted(form) => Ok(format!("Hello, {}!", form.name)),
        Elicitation::Declined | Elicitation::Cancelled => Ok("Hello, stranger!".to_owned()),
    }
}
