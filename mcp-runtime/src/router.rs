//! Routers: the ordered sets of tools ([`ToolRouter`]), prompts ([`PromptRouter`]) and
//! resources ([`ResourceRouter`]) a server offers, and the [`tools!`](crate::tools),
//! [`prompts!`](crate::prompts) and [`resources!`](crate::resources) macros that build one in a
//! line.

use std::collections::HashMap;
use std::sync::Arc;

use crate::prompt::PromptHandler;
use crate::resource::{ResourceDescriptor, ResourceHandler};
use crate::tool::ToolHandler;
use crate::uri_template::UriTemplate;

/// The tools a server offers, in registration order (which is the `tools/list` order).
#[derive(Clone, Default)]
pub struct ToolRouter {
    tools: Vec<Arc<dyn ToolHandler>>,
    index: HashMap<String, usize>,
    duplicates: Vec<String>,
    /// Names given to [`ToolRouter::task`] that no registered tool has.
    unknown_tasks: Vec<String>,
}

impl std::fmt::Debug for ToolRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| &t.descriptor().name))
            .finish()
    }
}

impl ToolRouter {
    /// An empty router.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builder: adds `tool`.
    ///
    /// A second tool with the same name is remembered as a conflict and makes
    /// `ServerBuilder::build` fail, naming the tool.
    #[must_use]
    pub fn with(mut self, tool: impl ToolHandler) -> Self {
        self.add(Arc::new(tool));
        self
    }

    /// Adds a shared tool (see [`ToolRouter::with`]).
    pub fn add(&mut self, tool: Arc<dyn ToolHandler>) {
        let name = tool.descriptor().name.clone();
        if self.index.contains_key(&name) {
            self.duplicates.push(name);
            return;
        }
        self.index.insert(name, self.tools.len());
        self.tools.push(tool);
    }

    /// Registers the tool named `name` as task-supporting (the tasks extension), becoming a
    /// task as soon as it is called ([`TaskStart::OnCall`](crate::tool::TaskStart)). A name
    /// no tool has makes `ServerBuilder::build` fail, naming it. A `#[tool]` function says the
    /// same with `#[tool(task)]`; this call is for hand-written tools, and overrides the
    /// attribute.
    #[must_use]
    pub fn task(self, name: &str, support: mcp_types::TaskSupport) -> Self {
        self.task_with(name, support, crate::tool::TaskStart::OnCall)
    }

    /// [`ToolRouter::task`] with a choice of when the task starts.
    #[must_use]
    pub fn task_with(
        mut self,
        name: &str,
        support: mcp_types::TaskSupport,
        start: crate::tool::TaskStart,
    ) -> Self {
        match self.index.get(name).copied() {
            Some(i) => {
                let inner = Arc::clone(&self.tools[i]);
                self.tools[i] = Arc::new(crate::tasks::TaskTool::new(inner, support, start));
            }
            None => self.unknown_tasks.push(name.to_owned()),
        }
        self
    }

    /// Names given to [`ToolRouter::task`] that no registered tool has.
    pub fn unknown_tasks(&self) -> &[String] {
        &self.unknown_tasks
    }

    /// Adds every tool of `other` after this router's tools.
    #[must_use]
    pub fn merge(mut self, other: ToolRouter) -> Self {
        self.duplicates.extend(other.duplicates);
        self.unknown_tasks.extend(other.unknown_tasks);
        for tool in other.tools {
            self.add(tool);
        }
        self
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn ToolHandler>> {
        self.index.get(name).and_then(|&i| self.tools.get(i))
    }

    /// The tools in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn ToolHandler>> {
        self.tools.iter()
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Names registered more than once (the later registrations were dropped).
    pub fn duplicates(&self) -> &[String] {
        &self.duplicates
    }

    /// The `-32602` for a `tools/call` naming `name`, which no registered tool has: `Unknown
    /// tool: {name}`, then the tools there are (the first [`UNKNOWN_TOOL_NAMES_SHOWN`], in
    /// registration order; `tools/list` shows them to anyone anyway), so that a model can
    /// correct a misspelt name, and the author's likely mistake: a `#[tool]` function left out
    /// of `tools![..]`, which nothing else reports (a `pub` one in a library is legitimately
    /// never registered there).
    pub(crate) fn unknown_tool(&self, name: &str) -> mcp_types::ErrorObject {
        use std::fmt::Write as _;
        let mut message = format!("Unknown tool: {name}. ");
        let mut names = self.tools.iter().map(|t| t.descriptor().name.as_str());
        match names.next() {
            None => message.push_str("This server has no tools"),
            Some(first) => {
                message.push_str("This server's tools: ");
                message.push_str(first);
                for n in names.by_ref().take(UNKNOWN_TOOL_NAMES_SHOWN - 1) {
                    message.push_str(", ");
                    message.push_str(n);
                }
                let more = names.count();
                if more > 0 {
                    let _ = write!(message, " and {more} more");
                }
            }
        }
        message.push_str(
            ". If it is a `#[tool]` function of this server, register it: list it in \
             `tools![..]` given to `ServerBuilder::tools`",
        );
        mcp_types::ErrorObject::invalid_params(message)
    }
}

/// How many tool names [`ToolRouter::unknown_tool`]'s message lists at most.
pub(crate) const UNKNOWN_TOOL_NAMES_SHOWN: usize = 20;

/// Builds a [`ToolRouter`] from `#[tool]` functions: `tools![notes_list, notes_delete]`.
///
/// Each entry is a path to a `#[tool]` function (the struct the attribute adds next to it is
/// what is registered) or to a type implementing [`ToolHandler`] and `Default`. A function
/// without `#[tool]` is a compile error that says to add it; a `#[tool]` function that no
/// router lists gets rustc's dead-code warning "function `x_is_not_listed_in_tools` is never
/// used" (not for a `pub` one in a library), and a call of it the `-32602` "Unknown tool: x",
/// which lists the tools the server has.
#[macro_export]
macro_rules! tools {
    ($($tool:tt)*) => {
        $crate::__macro_support_v1::router!(($crate) tool $($tool)*)
    };
}

/// The prompts a server offers, in registration order (the `prompts/list` order).
#[derive(Clone, Default)]
pub struct PromptRouter {
    prompts: Vec<Arc<dyn PromptHandler>>,
    index: HashMap<String, usize>,
    duplicates: Vec<String>,
}

impl std::fmt::Debug for PromptRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.prompts.iter().map(|p| &p.descriptor().name))
            .finish()
    }
}

impl PromptRouter {
    /// An empty router.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builder: adds `prompt` (a duplicate name makes `ServerBuilder::build` fail).
    #[must_use]
    pub fn with(mut self, prompt: impl PromptHandler) -> Self {
        self.add(Arc::new(prompt));
        self
    }

    /// Adds a shared prompt (see [`PromptRouter::with`]).
    pub fn add(&mut self, prompt: Arc<dyn PromptHandler>) {
        let name = prompt.descriptor().name.clone();
        if self.index.contains_key(&name) {
            self.duplicates.push(name);
            return;
        }
        self.index.insert(name, self.prompts.len());
        self.prompts.push(prompt);
    }

    /// The prompt named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn PromptHandler>> {
        self.index.get(name).and_then(|&i| self.prompts.get(i))
    }

    /// The prompts in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn PromptHandler>> {
        self.prompts.iter()
    }

    /// How many prompts are registered.
    pub fn len(&self) -> usize {
        self.prompts.len()
    }

    /// Whether no prompt is registered.
    pub fn is_empty(&self) -> bool {
        self.prompts.is_empty()
    }

    /// Names registered more than once (the later registrations were dropped).
    pub fn duplicates(&self) -> &[String] {
        &self.duplicates
    }
}

/// The resources and resource templates a server offers, in registration order.
///
/// A read goes to the static resource with exactly that URI, else to the first template (in
/// registration order) that matches it.
#[derive(Clone, Default)]
pub struct ResourceRouter {
    statics: Vec<Arc<dyn ResourceHandler>>,
    static_index: HashMap<String, usize>,
    templates: Vec<(UriTemplate, Arc<dyn ResourceHandler>)>,
    problems: Vec<String>,
}

impl std::fmt::Debug for ResourceRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.statics.iter().map(|r| r.descriptor().uri().to_owned()))
            .entries(self.templates.iter().map(|(t, _)| t.as_str().to_owned()))
            .finish()
    }
}

/// A resource handler chosen for a URI, with the template variables it matched.
pub struct ResourceMatch<'r> {
    /// The handler.
    pub handler: &'r Arc<dyn ResourceHandler>,
    /// Decoded template variables (empty for a static resource).
    pub vars: Vec<(String, String)>,
}

impl ResourceRouter {
    /// An empty router.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builder: adds `resource`. A duplicate URI or an invalid template is remembered and
    /// makes `ServerBuilder::build` fail with the reason.
    #[must_use]
    pub fn with(mut self, resource: impl ResourceHandler) -> Self {
        self.add(Arc::new(resource));
        self
    }

    /// Adds a shared resource (see [`ResourceRouter::with`]).
    pub fn add(&mut self, resource: Arc<dyn ResourceHandler>) {
        match resource.descriptor() {
            ResourceDescriptor::Static(r) => {
                if self.static_index.contains_key(&r.uri) {
                    self.problems
                        .push(format!("two resources have the URI `{}`", r.uri));
                    return;
                }
                self.static_index.insert(r.uri.clone(), self.statics.len());
                self.statics.push(resource);
            }
            ResourceDescriptor::Template(t) => match UriTemplate::parse(&t.uri_template) {
                Ok(parsed) => {
                    if self
                        .templates
                        .iter()
                        .any(|(p, _)| p.as_str() == parsed.as_str())
                    {
                        self.problems
                            .push(format!("two resource templates are `{}`", t.uri_template));
                        return;
                    }
                    self.templates.push((parsed, resource));
                }
                Err(e) => self.problems.push(e.to_string()),
            },
        }
    }

    /// The handler serving `uri`, if any.
    pub fn resolve(&self, uri: &str) -> Option<ResourceMatch<'_>> {
        if let Some(handler) = self
            .static_index
            .get(uri)
            .and_then(|&i| self.statics.get(i))
        {
            return Some(ResourceMatch {
                handler,
                vars: Vec::new(),
            });
        }
        self.templates
            .iter()
            .find_map(|(t, handler)| t.matches(uri).map(|vars| ResourceMatch { handler, vars }))
    }

    /// The template handler whose URI template is exactly `template` (completion references
    /// name templates this way).
    pub fn template(&self, template: &str) -> Option<&Arc<dyn ResourceHandler>> {
        self.templates
            .iter()
            .find(|(t, _)| t.as_str() == template)
            .map(|(_, h)| h)
    }

    /// Static resources in registration order.
    pub fn statics(&self) -> impl Iterator<Item = &Arc<dyn ResourceHandler>> {
        self.statics.iter()
    }

    /// Template resources in registration order.
    pub fn templates(&self) -> impl Iterator<Item = &Arc<dyn ResourceHandler>> {
        self.templates.iter().map(|(_, h)| h)
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.statics.is_empty() && self.templates.is_empty()
    }

    /// Registration problems (duplicates, invalid templates).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}

/// Builds a [`PromptRouter`] from `#[prompt]` functions: `prompts![greet, summarize]`.
///
/// Each entry is a path to a `#[prompt]` function or to a type implementing
/// [`PromptHandler`] and `Default`; a function without `#[prompt]` is a compile error that
/// says to add it.
#[macro_export]
macro_rules! prompts {
    ($($prompt:tt)*) => {
        $crate::__macro_support_v1::router!(($crate) prompt $($prompt)*)
    };
}

/// Builds a [`ResourceRouter`] from `#[resource]` functions: `resources![readme, note]`.
///
/// Each entry is a path to a `#[resource]` function or to a type implementing
/// [`ResourceHandler`] and `Default`; a function without `#[resource]` is a compile error
/// that says to add it.
#[macro_export]
macro_rules! resources {
    ($($resource:tt)*) => {
        $crate::__macro_support_v1::router!(($crate) resource $($resource)*)
    };
}
