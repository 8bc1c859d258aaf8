use mcp_runtime::prelude::*;
// The wire types, as the macros reach them (this crate has no `mcp-types` of its own).
use mcp_runtime::__macro_support_v1::mcp_types::{CreateMessageRequestParams, SamplingMessage};

#[derive(ElicitForm)]
struct Confirm {
    /// Really?
    yes: bool,
}

/// Asks through a form without declaring it: refused at the call.
#[tool(destructive)]
async fn notes_delete(ctx: &mut RequestContext) -> ToolResult<String> {
    match ctx.elicit::<Confirm>("confirm", "Sure?", ()).await? {
        Elicitation::Accepted(c) if c.yes => Ok("deleted".into()),
        _ => Ok("kept".into()),
    }
}

/// The `try_` form, inside a closure's async block, is seen too; declaring another mode
/// does not help.
#[tool(requires(sampling))]
async fn batch(ctx: &mut RequestContext) -> ToolResult<String> {
    let asked = async { ctx.try_elicit::<Confirm>("confirm", "Sure?", ()).await }.await?;
    ctx.await_inputs()?;
    Ok(format!("{}", asked.is_some()))
}

/// URL mode.
#[tool]
async fn connect(ctx: &mut RequestContext) -> ToolResult<String> {
    let _ = ctx.elicit_url("connect", "Open the page", "https://example.com/c/1").await?;
    Ok("connected".into())
}

/// Sampling, reported once however often it is called.
#[tool(requires(form_elicitation))]
async fn suggest(ctx: &mut RequestContext) -> ToolResult<String> {
    let ask = || CreateMessageRequestParams::new(vec![SamplingMessage::user_text("title?")], 30);
    let a = ctx.sample("a", ask()).await?;
    let b = ctx.try_sample("b", ask()).await?;
    Ok(format!("{} {}", a.model, b.is_some()))
}

/// Roots, from a prompt.
#[prompt]
async fn workspace(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    Ok(format!("{} roots", ctx.list_roots("roots").await?.len()))
}

/// A form from a resource.
#[resource(uri = "mem://secret")]
async fn secret(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    let _ = ctx.elicit::<Confirm>("why", "Show it?", ()).await?;
    Ok("s3cr3t".into())
}

/// Declared: fine. So is `optional(..)`, and so are a free function and a path call that
/// share a name with an asking method, and a method that only starts like one.
#[tool(requires(form_elicitation), optional(roots))]
async fn fine(ctx: &mut RequestContext) -> ToolResult<String> {
    let _ = ctx.elicit::<Confirm>("confirm", "Sure?", ()).await?;
    if ctx.client_capabilities().supports_roots() {
        let _ = ctx.try_list_roots("roots").await?;
    }
    let n = (0..sample(3)).len();
    let m = Sampler.sampled();
    Ok(format!("{n} {m} {}", Sampler::sample(&Sampler)))
}

/// Without a `&mut` context nothing can be asked, so nothing is checked.
#[tool]
fn no_context() -> String {
    Sampler.sample().to_string()
}

fn sample(n: usize) -> usize {
    n
}

struct Sampler;

impl Sampler {
    fn sample(&self) -> u8 {
        4
    }
    fn sampled(&self) -> u8 {
        2
    }
}

fn main() {}
