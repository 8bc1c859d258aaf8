//! `x-mcp-header` rules read from tool input schemas, so the HTTP transport can check the
//! `Mcp-Param-*` headers of a `tools/call` against its body.

use std::collections::HashMap;

use serde_json::Value;

use crate::router::ToolRouter;
use crate::transport::ParamHeader;

/// Collects every tool's rules; fails on a rule the spec forbids (clients would drop the tool).
pub(super) fn collect(router: &ToolRouter) -> Result<HashMap<String, Vec<ParamHeader>>, String> {
    let mut all = HashMap::new();
    for tool in router.iter() {
        let descriptor = tool.descriptor();
        let mut rules = Vec::new();
        let mut path = Vec::new();
        walk(descriptor.input_schema.as_object(), &mut path, &mut rules)
            .map_err(|e| format!("tool `{}`: {e}", descriptor.name))?;
        let mut seen = std::collections::HashSet::new();
        for rule in &rules {
            if !seen.insert(rule.name.to_ascii_lowercase()) {
                return Err(format!(
                    "tool `{}`: x-mcp-header `{}` is used twice (names are case-insensitive)",
                    descriptor.name, rule.name
                ));
            }
        }
        if !rules.is_empty() {
            all.insert(descriptor.name.clone(), rules);
        }
    }
    Ok(all)
}

fn walk(
    schema: &serde_json::Map<String, Value>,
    path: &mut Vec<String>,
    out: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    let Some(Value::Object(props)) = schema.get("properties") else {
        return Ok(());
    };
    for (key, prop) in props {
        let Value::Object(prop) = prop else { continue };
        path.push(key.clone());
        if let Some(header) = prop.get("x-mcp-header") {
            let Value::String(name) = header else {
                return Err(format!(
                    "x-mcp-header on `{}` must be a string",
                    path.join(".")
                ));
            };
            if name.is_empty() || !name.bytes().all(is_tchar) {
                return Err(format!(
                    "x-mcp-header `{name}` on `{}` is not an HTTP token",
                    path.join(".")
                ));
            }
            match prop.get("type").and_then(Value::as_str) {
                Some("string" | "integer" | "boolean") => {}
                _ => {
                    return Err(format!(
                        "x-mcp-header `{name}` sits on `{}`, which is not a string, integer or boolean property",
                        path.join(".")
                    ));
                }
            }
            out.push(ParamHeader::new(name.clone(), path.iter().cloned()));
        }
        walk(prop, path, out)?;
        path.pop();
    }
    Ok(())
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}
