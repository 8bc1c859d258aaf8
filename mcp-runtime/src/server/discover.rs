//! `server/discover` and `tools/list`: results that depend only on configuration, so they are
//! serialised once at build time.

use mcp_types::{
    CacheScope, DiscoverResult, ListToolsResult, ResultMeta, ServerCapabilities, ToolsCapability,
};

use super::SUPPORTED_VERSIONS;
use crate::router::ToolRouter;

pub(super) fn discover_json(
    instructions: Option<String>,
    ttl_ms: u64,
    scope: CacheScope,
    meta: &ResultMeta,
) -> Result<Vec<u8>, serde_json::Error> {
    let capabilities = ServerCapabilities {
        tools: Some(ToolsCapability::default()),
        // Tools may send `notifications/message` (only when a request sets a logLevel).
        logging: Some(Default::default()),
        ..Default::default()
    };
    let mut result = DiscoverResult::new(
        SUPPORTED_VERSIONS.iter().map(|v| (*v).to_owned()).collect(),
        capabilities,
        ttl_ms,
        scope,
    );
    result.instructions = instructions;
    result.meta = Some(meta.clone());
    serde_json::to_vec(&result)
}

pub(super) fn tools_list_json(
    router: &ToolRouter,
    ttl_ms: u64,
    scope: CacheScope,
    meta: &ResultMeta,
) -> Result<Vec<u8>, serde_json::Error> {
    let tools = router.iter().map(|t| t.descriptor().clone()).collect();
    let mut result = ListToolsResult::new(tools, ttl_ms, scope);
    result.meta = Some(meta.clone());
    serde_json::to_vec(&result)
}
