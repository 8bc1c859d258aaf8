//! Fixtures whose input schemas carry more than `#[tool]` usually derives.
//!
//! | Tool | Scenario | Must do |
//! |---|---|---|
//! | `json_schema_2020_12_tool` | `json-schema-2020-12` | list its JSON Schema 2020-12 `inputSchema` unchanged: `$schema`, `$defs` (with an `$anchor`), `additionalProperties`, `allOf`/`anyOf`, `if`/`then`/`else` |
//! | `test_param_header` | `http-custom-header-server-validation` | declare a string argument mirrored in the `Mcp-Param-Region` header (`x-mcp-header`); the transport checks the header against the body |
//!
//! The first is a hand-written [`ToolHandler`]: the escape hatch for a schema no Rust type
//! describes. The second stays a `#[tool]`: schemars' `extend` adds the annotation.

use mcp_runtime::prelude::*;
use mcp_runtime::router::ToolRouter;
use mcp_runtime::tool::{BoxFuture, ToolHandler};
use mcp_types::{CallToolResult, ClientCapabilities, ContentBlock, InputSchema, JsonObject, Tool};
use serde_json::json;

/// The schema-preservation fixtures, in `tools/list` order.
pub fn tools() -> ToolRouter {
    ToolRouter::new()
        .with(JsonSchema202012::new())
        .merge(tools![test_param_header])
}

/// `json_schema_2020_12_tool`: its schema is data, so it implements [`ToolHandler`] itself.
pub struct JsonSchema202012 {
    descriptor: Tool,
    requires: ClientCapabilities,
}

impl JsonSchema202012 {
    /// The tool with its fixed 2020-12 schema.
    pub fn new() -> Self {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        });
        // The literal is an object schema, so `new` accepts it; the fallback only keeps a
        // bug in this file from becoming a panic.
        let schema = match schema {
            serde_json::Value::Object(map) => InputSchema::new(map).ok(),
            _ => None,
        }
        .unwrap_or_else(InputSchema::empty_object);
        let mut descriptor = Tool::new("json_schema_2020_12_tool", schema);
        descriptor.description = Some("Tool with JSON Schema 2020-12 features".to_owned());
        Self {
            descriptor,
            requires: ClientCapabilities::none(),
        }
    }
}

impl Default for JsonSchema202012 {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolHandler for JsonSchema202012 {
    fn descriptor(&self) -> &Tool {
        &self.descriptor
    }

    fn required_capabilities(&self) -> &ClientCapabilities {
        &self.requires
    }

    fn call<'a>(
        &'a self,
        _ctx: &'a mut RequestContext,
        _args: JsonObject,
    ) -> BoxFuture<'a, Result<CallToolResult, HandlerError>> {
        Box::pin(async { Ok(CallToolResult::success(vec![ContentBlock::text("ok")])) })
    }
}

/// `test_param_header` arguments.
#[args]
#[derive(Debug)]
pub struct RegionArgs {
    /// Where to run; also sent as the `Mcp-Param-Region` header.
    #[schemars(extend("x-mcp-header" = "Region"))]
    pub region: String,
}

/// Echoes the region it was called for (which the transport has checked against the
/// `Mcp-Param-Region` header).
#[tool(read_only, idempotent)]
async fn test_param_header(args: RegionArgs) -> String {
    format!("region: {}", args.region)
}
