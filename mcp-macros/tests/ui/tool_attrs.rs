use mcp_runtime::tool;

#[tool(name = "has space", destructive, requires(telepathy))]
fn bad_name() -> String {
    String::new()
}

#[tool]
fn two_args(a: String, b: String) -> String {
    a + &b
}

fn main() {}
