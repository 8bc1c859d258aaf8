use mcp_runtime::tool;

struct NoSchema {
    x: String,
}

/// Arguments without Deserialize/JsonSchema.
#[tool]
fn needs_schema(args: NoSchema) -> String {
    args.x
}

struct Opaque;

/// A return type that is not a tool result.
#[tool]
fn bad_return() -> Opaque {
    Opaque
}

fn main() {}
