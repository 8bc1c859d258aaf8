//! `scopes = [...]` on `#[tool]`, `#[prompt]` and `#[resource]` feeds the server's scope
//! requirements, merged with the builder's (`ServerBuilder::tool_scopes` and friends).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcp_runtime::prelude::*;
use mcp_runtime::service::McpService;

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// Deletes everything.
#[tool(scopes = ["notes:write", "notes:admin"])]
async fn purge(_args: NoArgs) -> ToolResult<String> {
    Ok("purged".into())
}

/// Reads something.
#[tool]
async fn peek(_args: NoArgs) -> ToolResult<String> {
    Ok("peeked".into())
}

/// A private prompt.
#[prompt(scopes = ["prompts:private"])]
async fn secret_prompt() -> ToolResult<String> {
    Ok("psst".into())
}

#[derive(Deserialize, JsonSchema)]
struct ItemVars {
    id: String,
}

/// One item.
#[resource(uri = "mem://items/{id}", name = "item", scopes = ["items:read"])]
fn item(vars: ItemVars) -> String {
    vars.id
}

fn server() -> Server {
    Server::builder(Implementation::new("scopes", "0"))
        .tools(tools![purge, peek])
        .prompts(prompts![secret_prompt])
        .resources(resources![item])
        // Merged with the attribute's, without duplicates.
        .tool_scopes("purge", ["notes:admin", "audit"])
        .build()
        .unwrap()
}

#[test]
fn attribute_scopes_are_required_and_merged_with_the_builders() {
    let server = server();
    assert_eq!(
        server.required_scopes("tools/call", "purge"),
        ["notes:admin", "audit", "notes:write"]
    );
    assert!(server.required_scopes("tools/call", "peek").is_empty());
    assert_eq!(
        server.required_scopes("prompts/get", "secret_prompt"),
        ["prompts:private"]
    );
    assert_eq!(
        server.required_scopes("resources/read", "mem://items/42"),
        ["items:read"]
    );
    assert!(
        server
            .required_scopes("resources/read", "mem://other")
            .is_empty()
    );
}
