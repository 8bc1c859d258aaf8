//! `server/discover` and the list results: they depend only on configuration, so they are
//! serialised once at build time.

use mcp_types::{
    CacheScope, DiscoverResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PromptsCapability, ResourceTemplate, ResourcesCapability,
    ResultMeta, ResultType, ServerCapabilities, ToolsCapability,
};

use super::SUPPORTED_VERSIONS;
use super::listing::Pages;
use crate::resource::ResourceDescriptor;
use crate::router::{PromptRouter, ResourceRouter, ToolRouter};

/// What the server registered, which decides what it advertises.
pub(super) struct Offered {
    pub(super) tools: bool,
    pub(super) prompts: bool,
    pub(super) resources: bool,
    pub(super) completions: bool,
    /// Some tool supports tasks: the tasks extension is advertised and its methods served.
    pub(super) tasks: bool,
}

impl Offered {
    pub(super) fn of(
        tools: &ToolRouter,
        prompts: &PromptRouter,
        resources: &ResourceRouter,
    ) -> Self {
        Self {
            tools: !tools.is_empty(),
            prompts: !prompts.is_empty(),
            resources: !resources.is_empty(),
            completions: prompts.iter().any(|p| p.has_completions())
                || resources.templates().any(|r| r.has_completions()),
            tasks: tools
                .iter()
                .any(|t| t.task_support() != mcp_types::TaskSupport::Forbidden),
        }
    }
}

pub(super) fn discover_json(
    instructions: Option<String>,
    offered: &Offered,
    ttl_ms: u64,
    scope: CacheScope,
    meta: &ResultMeta,
) -> Result<Vec<u8>, serde_json::Error> {
    let capabilities = ServerCapabilities {
        tools: offered.tools.then(ToolsCapability::default),
        prompts: offered.prompts.then(PromptsCapability::default),
        resources: offered.resources.then(ResourcesCapability::default),
        completions: offered.completions.then(Default::default),
        // Handlers may send `notifications/message` (only when a request sets a logLevel).
        logging: Some(Default::default()),
        extensions: offered.tasks.then(|| {
            [(mcp_types::TASKS_EXTENSION.to_owned(), Default::default())]
                .into_iter()
                .collect()
        }),
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

/// Caching hints and page size shared by every list.
#[derive(Clone, Copy)]
pub(super) struct ListHints<'m> {
    pub(super) ttl_ms: u64,
    pub(super) scope: CacheScope,
    pub(super) page_size: usize,
    pub(super) meta: &'m ResultMeta,
}

pub(super) fn tools_pages(
    router: &ToolRouter,
    h: ListHints<'_>,
) -> Result<Pages, serde_json::Error> {
    let tools: Vec<_> = router.iter().map(|t| t.descriptor().clone()).collect();
    Pages::build("tools", &tools, h.page_size, |page, next| {
        let mut result = ListToolsResult::new(page, h.ttl_ms, h.scope);
        result.next_cursor = next;
        result.meta = Some(h.meta.clone());
        result
    })
}

pub(super) fn prompts_pages(
    router: &PromptRouter,
    h: ListHints<'_>,
) -> Result<Pages, serde_json::Error> {
    let prompts: Vec<_> = router.iter().map(|p| p.descriptor().clone()).collect();
    Pages::build("prompts", &prompts, h.page_size, |page, next| {
        ListPromptsResult {
            result_type: ResultType::Complete,
            prompts: page,
            next_cursor: next,
            ttl_ms: h.ttl_ms,
            cache_scope: h.scope,
            meta: Some(h.meta.clone()),
            extra: Default::default(),
        }
    })
}

pub(super) fn resources_pages(
    router: &ResourceRouter,
    h: ListHints<'_>,
) -> Result<Pages, serde_json::Error> {
    let resources: Vec<_> = router
        .statics()
        .filter_map(|r| match r.descriptor() {
            ResourceDescriptor::Static(r) => Some(r.clone()),
            ResourceDescriptor::Template(_) => None,
        })
        .collect();
    Pages::build("resources", &resources, h.page_size, |page, next| {
        ListResourcesResult {
            result_type: ResultType::Complete,
            resources: page,
            next_cursor: next,
            ttl_ms: h.ttl_ms,
            cache_scope: h.scope,
            meta: Some(h.meta.clone()),
            extra: Default::default(),
        }
    })
}

pub(super) fn templates_pages(
    router: &ResourceRouter,
    h: ListHints<'_>,
) -> Result<Pages, serde_json::Error> {
    let templates: Vec<ResourceTemplate> = router
        .templates()
        .filter_map(|r| match r.descriptor() {
            ResourceDescriptor::Template(t) => Some(t.clone()),
            ResourceDescriptor::Static(_) => None,
        })
        .collect();
    Pages::build("templates", &templates, h.page_size, |page, next| {
        ListResourceTemplatesResult {
            result_type: ResultType::Complete,
            resource_templates: page,
            next_cursor: next,
            ttl_ms: h.ttl_ms,
            cache_scope: h.scope,
            meta: Some(h.meta.clone()),
            extra: Default::default(),
        }
    })
}
