//! `x-mcp-header` rules read from tool input schemas, so the HTTP transport can check the
//! `Mcp-Param-*` headers of a `tools/call` against its body.

use std::collections::HashMap;

use mcp_types::param_header_rules;

use crate::router::ToolRouter;
use crate::service::ParamHeader;

/// Collects every tool's rules; fails on a rule the spec forbids (clients would drop the tool).
pub(super) fn collect(router: &ToolRouter) -> Result<HashMap<String, Vec<ParamHeader>>, String> {
    let mut all = HashMap::new();
    for tool in router.iter() {
        let descriptor = tool.descriptor();
        let rules = param_header_rules(descriptor.input_schema.as_object())
            .map_err(|e| format!("tool `{}`: {e}", descriptor.name))?;
        if !rules.is_empty() {
            let rules = rules
                .into_iter()
                .map(|rule| ParamHeader::new(rule.name, rule.path))
                .collect();
            all.insert(descriptor.name.clone(), rules);
        }
    }
    Ok(all)
}
