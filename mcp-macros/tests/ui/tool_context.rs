// The request context is a parameter the tool declares: using `ctx` without it, or asking
// through a shared `&RequestContext`, is reported at the use with what to write.
use mcp_runtime::prelude::*;

#[derive(ElicitForm)]
struct Confirm {
    /// Really?
    yes: bool,
}

// `ctx` used but never declared.
#[tool(requires(form_elicitation))]
async fn undeclared(
    /// Which note
    title: String,
) -> ToolResult<String> {
    match ctx.elicit::<Confirm>("confirm", "Sure?", ()).await? {
        Elicitation::Accepted(c) if c.yes => Ok(format!("deleted {title}")),
        _ => Ok("kept".into()),
    }
}

// The context is declared under another name.
#[tool(requires(form_elicitation))]
async fn renamed(context: &mut RequestContext) -> ToolResult<String> {
    let _ = ctx.elicit::<Confirm>("confirm", "Sure?", ()).await?;
    Ok(format!("round {}", context.round()))
}

// In a prompt, inside a formatting macro.
#[prompt]
fn summary() -> String {
    format!("round {}", ctx.round())
}

// A shared context cannot ask.
#[tool(requires(form_elicitation))]
async fn shared(ctx: &RequestContext) -> ToolResult<String> {
    match ctx.elicit::<Confirm>("confirm", "Sure?", ()).await? {
        Elicitation::Accepted(c) if c.yes => Ok("deleted".into()),
        _ => Ok("kept".into()),
    }
}

// Nor mint a correlation id.
#[tool]
fn correlated(ctx: &RequestContext) -> Result<String, HandlerError> {
    Ok(ctx.correlation_id("pay")?.to_string())
}

// None of these is reported: a local `ctx`, a closure's, a pattern's, and a shared context
// that only reads.
#[tool]
fn local() -> String {
    let ctx = "local";
    ctx.to_owned()
}

#[tool]
fn closure() -> String {
    let f = |ctx: &str| ctx.len();
    f("abc").to_string()
}

#[tool]
fn pattern() -> String {
    if let Some(ctx) = Some(3) { ctx.to_string() } else { String::new() }
}

#[tool]
fn reads(ctx: &RequestContext) -> String {
    ctx.round().to_string()
}

#[tool]
fn shadowed(ctx: &RequestContext) -> String {
    let round = ctx.round();
    let ctx = &mut Vec::new();
    ctx.push(round);
    format!("{ctx:?}")
}

fn main() {}
