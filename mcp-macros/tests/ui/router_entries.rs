// `tools![..]`, `prompts![..]` and `resources![..]` list functions carrying the attribute (or
// types implementing the handler trait and `Default`); anything else is reported at its name
// with what to add.
use mcp_runtime::prelude::*;

/// Says hello.
#[tool]
fn hello() -> String {
    "hello".into()
}

fn helper() -> String {
    String::new()
}

mod more {
    pub fn nested() -> String {
        String::new()
    }
}

/// Greets.
#[prompt]
fn greet() -> String {
    "hi".into()
}

fn plain_prompt() -> String {
    String::new()
}

fn plain_resource() -> String {
    String::new()
}

#[derive(Default)]
struct Config {}

fn main() {
    let _ = tools![hello, helper, more::nested, Config, greet];
    let _ = prompts![greet, plain_prompt];
    let _ = resources![plain_resource];
    // A name that does not exist at all.
    let _ = tools![helpr];
}
