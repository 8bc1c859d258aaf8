// Prompt arguments travel as strings: a documented prompt parameter of another type is a
// compile error, not a failure of every `prompts/get`.
use mcp_runtime::prelude::*;

/// Greets someone.
#[prompt]
fn greet(
    /// Who to greet
    name: String,
    /// How many times
    times: u32,
    /// An optional salutation
    salutation: Option<String>,
) -> String {
    format!("{salutation:?} {name} x{times}")
}

fn main() {}
