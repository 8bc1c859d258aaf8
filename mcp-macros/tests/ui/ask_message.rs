use mcp_runtime::prelude::*;

#[derive(ElicitForm)]
struct Confirm {
    /// Really?
    yes: bool,
}

/// A number is not a message.
#[tool(destructive, requires(form_elicitation))]
async fn wipe(ctx: &mut RequestContext) -> ToolResult<String> {
    match ctx.elicit::<Confirm>("confirm", 42, ()).await? {
        Elicitation::Accepted(c) if c.yes => Ok("wiped".into()),
        _ => Ok("kept".into()),
    }
}

/// A closure must build a `String`, not borrow a `&str`.
#[tool(destructive, requires(form_elicitation))]
async fn clear(ctx: &mut RequestContext) -> ToolResult<String> {
    match ctx.elicit::<Confirm>("confirm", || "Sure?", ()).await? {
        Elicitation::Accepted(c) if c.yes => Ok("cleared".into()),
        _ => Ok("kept".into()),
    }
}

fn main() {}
