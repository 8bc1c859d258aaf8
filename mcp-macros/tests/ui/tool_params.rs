// Tool arguments as documented parameters: each mistake is one error that says what to do.
use mcp_runtime::prelude::*;

#[args]
struct Args {
    title: String,
}

// An undocumented single value: a missing doc comment.
#[tool]
fn undocumented(count: u32) -> String {
    count.to_string()
}

// A documented parameter needs a plain name and an owned type.
#[tool]
fn patterns(
    /// A pair
    (a, b): (u32, u32),
    /// Borrowed text
    text: &str,
) -> String {
    format!("{a}{b}{text}")
}

// An undocumented reference is taken for the context, and is not one.
#[tool]
fn borrowed(name: &str) -> String {
    name.to_owned()
}

// `rename_all` renames documented parameters only.
#[tool(rename_all = "camelCase")]
fn rename_struct(args: Args) -> String {
    args.title
}

#[derive(Serialize, JsonSchema)]
struct Summary {
    count: u32,
}

// Structured output must be wrapped in `Json(..)`.
#[tool]
fn unwrapped(
    /// How many
    count: u32,
) -> ToolResult<Summary> {
    Ok(Summary { count })
}

fn main() {}
