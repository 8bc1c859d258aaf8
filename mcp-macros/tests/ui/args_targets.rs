// `#[args]` goes on the type that holds the arguments, and takes only `crate = "..."`.
use mcp_runtime::prelude::*;

#[args]
fn not_a_type() {}

#[args(rename_all = "camelCase")]
struct UnknownOption {
    title: String,
}

fn main() {}
