use mcp_runtime::prelude::*;

// An attribute only resources have.
#[prompt(uri = "x://y")]
fn wrong_attr() -> String {
    String::new()
}

// A resource needs a URI.
#[resource(mime_type = "text/plain")]
fn no_uri() -> String {
    String::new()
}

// A URI that is neither absolute nor a balanced template.
#[resource(uri = "notes/{id")]
fn bad_uri() -> String {
    String::new()
}

// References other than the context are refused.
#[prompt]
fn borrowed(name: &str) -> String {
    name.to_owned()
}

// Not a function.
#[prompt]
struct NotAFunction;

// A bad cache scope.
#[resource(uri = "x://a", cache_scope = "shared")]
fn bad_scope() -> String {
    String::new()
}

// Return types that are not prompt or resource results.
#[prompt]
fn returns_number() -> u32 {
    1
}

#[resource(uri = "x://n")]
fn resource_number() -> u32 {
    1
}

fn main() {}
