// A handler no router lists is never offered (a client calling it gets "Unknown tool"). rustc's
// dead-code lint says which, by name: denied here so that the warnings show as errors.
#![deny(dead_code)]
use mcp_runtime::prelude::*;

/// Listed.
#[tool]
fn listed() -> String {
    "listed".into()
}

/// Never listed.
#[tool]
fn forgotten() -> String {
    "never offered".into()
}

/// Never listed, async, with a context.
#[tool]
async fn forgotten_async(ctx: &mut RequestContext) -> String {
    ctx.round().to_string()
}

/// Never listed either.
#[prompt]
fn forgotten_prompt() -> String {
    "hi".into()
}

/// Nor this.
#[resource(uri = "mem://readme")]
fn forgotten_readme() -> String {
    "read me".into()
}

/// Not listed on purpose: its own `allow` stands, and nothing is reported.
#[tool]
#[allow(dead_code)]
fn spare() -> String {
    "spare".into()
}

/// Registered by hand: not reported either.
#[tool]
fn by_hand() -> String {
    "by hand".into()
}

fn main() {
    let _ = tools![listed].with(by_hand::default());
}
