use mcp_runtime::tool;

#[tool(task = "sometimes")]
fn bad_support() -> String {
    String::new()
}

#[tool(task, task_start = "later")]
fn bad_start() -> String {
    String::new()
}

#[tool(task_start = "after_input")]
fn start_without_task() -> String {
    String::new()
}

fn main() {}
