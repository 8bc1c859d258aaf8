use mcp_runtime::prelude::*;
use mcp_runtime::resource::ResourceUri;

#[args]
struct Vars {
    id: String,
}

// A fixed-URI resource has no variables, so an arguments type is refused at compile time;
// whether `Vars` is one is decided by its `FromRequest` impl, not by its spelling.
#[resource(uri = "x://fixed")]
fn fixed_with_args(vars: Vars) -> String {
    vars.id
}

type Alias = Vars;

// The same through an alias.
#[resource(uri = "x://fixed-alias")]
fn fixed_with_alias(vars: Alias) -> String {
    vars.id
}

// An extractor is fine on a fixed-URI resource.
#[resource(uri = "x://fixed-uri")]
fn fixed_with_uri(uri: ResourceUri) -> String {
    uri.0
}

fn main() {}
