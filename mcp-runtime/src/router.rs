//! [`ToolRouter`]: the ordered set of tools a server offers, and the [`tools!`](crate::tools)
//! macro that builds one in a line.

use std::collections::HashMap;
use std::sync::Arc;

use crate::tool::ToolHandler;

/// The tools a server offers, in registration order (which is the `tools/list` order).
#[derive(Clone, Default)]
pub struct ToolRouter {
    tools: Vec<Arc<dyn ToolHandler>>,
    index: HashMap<String, usize>,
    duplicates: Vec<String>,
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

    /// Adds every tool of `other` after this router's tools.
    #[must_use]
    pub fn merge(mut self, other: ToolRouter) -> Self {
        self.duplicates.extend(other.duplicates);
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
}

/// Builds a [`ToolRouter`] from `#[tool]` functions: `tools![notes_list, notes_delete]`.
#[macro_export]
macro_rules! tools {
    ($($tool:path),* $(,)?) => {
        $crate::router::ToolRouter::new()
            $(.with(<$tool as ::core::default::Default>::default()))*
    };
}
