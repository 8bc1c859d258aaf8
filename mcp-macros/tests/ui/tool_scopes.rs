use mcp_runtime::{prompt, tool};

/// A scope list must be a list.
#[tool(scopes = "notes:write")]
fn not_a_list() -> String {
    String::new()
}

/// Scopes are string literals.
#[tool(scopes = [notes_write])]
fn not_a_string() -> String {
    String::new()
}

/// A scope has no spaces.
#[tool(scopes = ["notes:read", "notes write"])]
fn spaced() -> String {
    String::new()
}

/// Quotes are not allowed either.
#[prompt(scopes = ["say\"hi"])]
fn quoted() -> String {
    String::new()
}

fn main() {}
