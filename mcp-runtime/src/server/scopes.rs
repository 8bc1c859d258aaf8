//! OAuth scopes a tool, prompt or resource requires, declared on the builder and checked by
//! transports that authenticate with scoped credentials (HTTP with OAuth answers a token
//! lacking one with 403 `insufficient_scope`). Transports without scopes (stdio, static
//! bearer tokens) are not restricted by them.

use std::collections::HashMap;

use super::{BuildError, ServerBuilder};
use crate::router::{PromptRouter, ResourceRouter, ToolRouter};

/// Scope requirements by tool name, prompt name and resource URI or URI template.
#[derive(Debug, Clone, Default)]
pub(super) struct RequiredScopes {
    tools: HashMap<String, Vec<String>>,
    prompts: HashMap<String, Vec<String>>,
    resources: HashMap<String, Vec<String>>,
}

/// RFC 6749 §3.3 `scope-token`: printable ASCII except space, `"` and `\`.
fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}

fn add(
    map: &mut HashMap<String, Vec<String>>,
    name: &str,
    scopes: impl IntoIterator<Item = impl Into<String>>,
) {
    let entry = map.entry(name.to_owned()).or_default();
    for scope in scopes {
        let scope = scope.into();
        if !entry.contains(&scope) {
            entry.push(scope);
        }
    }
}

impl ServerBuilder {
    /// Requires OAuth `scopes` for `tools/call` of the tool `name` (added to earlier calls).
    /// Over HTTP with OAuth, a token lacking one gets 403 `insufficient_scope` naming them all.
    /// [`ServerBuilder::build`] fails if no such tool is registered or a scope is malformed.
    #[must_use]
    pub fn tool_scopes(
        mut self,
        name: &str,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        add(&mut self.scopes.tools, name, scopes);
        self
    }

    /// Requires OAuth `scopes` for `prompts/get` of the prompt `name` (see
    /// [`ServerBuilder::tool_scopes`]).
    #[must_use]
    pub fn prompt_scopes(
        mut self,
        name: &str,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        add(&mut self.scopes.prompts, name, scopes);
        self
    }

    /// Requires OAuth `scopes` for `resources/read` of the resource registered with this URI,
    /// or of every URI the resource template `uri_or_template` serves (see
    /// [`ServerBuilder::tool_scopes`]).
    #[must_use]
    pub fn resource_scopes(
        mut self,
        uri_or_template: &str,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        add(&mut self.scopes.resources, uri_or_template, scopes);
        self
    }
}

impl RequiredScopes {
    /// Adds the scopes handlers declare themselves (`#[tool(scopes = [...])]` and the like) to
    /// those given to the builder.
    pub(super) fn declared_by(
        &mut self,
        tools: &ToolRouter,
        prompts: &PromptRouter,
        resources: &ResourceRouter,
    ) {
        for tool in tools.iter() {
            let scopes = tool.required_scopes();
            if !scopes.is_empty() {
                add(
                    &mut self.tools,
                    &tool.descriptor().name,
                    scopes.iter().copied(),
                );
            }
        }
        for prompt in prompts.iter() {
            let scopes = prompt.required_scopes();
            if !scopes.is_empty() {
                add(
                    &mut self.prompts,
                    &prompt.descriptor().name,
                    scopes.iter().copied(),
                );
            }
        }
        for resource in resources.statics().chain(resources.templates()) {
            let scopes = resource.required_scopes();
            if !scopes.is_empty() {
                add(
                    &mut self.resources,
                    resource.descriptor().uri(),
                    scopes.iter().copied(),
                );
            }
        }
    }

    /// Checks that every requirement names something registered and every scope is a valid
    /// `scope-token`.
    pub(super) fn check(
        &self,
        tools: &ToolRouter,
        prompts: &PromptRouter,
        resources: &ResourceRouter,
    ) -> Result<(), BuildError> {
        let unknown = |what: &str, name: &str, how: &str| {
            Err(BuildError::Declaration(format!(
                "scopes are required for the {what} `{name}`, but no {what} of that {how} is registered; register it or fix the name"
            )))
        };
        for name in self.tools.keys() {
            if tools.get(name).is_none() {
                return unknown("tool", name, "name");
            }
        }
        for name in self.prompts.keys() {
            if prompts.get(name).is_none() {
                return unknown("prompt", name, "name");
            }
        }
        for uri in self.resources.keys() {
            let registered = resources
                .statics()
                .chain(resources.templates())
                .any(|r| r.descriptor().uri() == uri);
            if !registered {
                return unknown("resource", uri, "URI or template");
            }
        }
        let all = self
            .tools
            .values()
            .chain(self.prompts.values())
            .chain(self.resources.values())
            .flatten();
        for scope in all {
            if !is_scope_token(scope) {
                return Err(BuildError::Declaration(format!(
                    "invalid OAuth scope {scope:?}: a scope is printable ASCII without spaces, quotes or backslashes"
                )));
            }
        }
        Ok(())
    }

    /// The scopes a request of `method` naming `name` requires.
    pub(super) fn required<'s>(
        &'s self,
        resources: &ResourceRouter,
        method: &str,
        name: &str,
    ) -> &'s [String] {
        let found = match method {
            mcp_types::METHOD_TOOLS_CALL => self.tools.get(name),
            mcp_types::METHOD_PROMPTS_GET => self.prompts.get(name),
            mcp_types::METHOD_RESOURCES_READ if !self.resources.is_empty() => resources
                .resolve(name)
                .and_then(|m| self.resources.get(m.handler.descriptor().uri())),
            _ => None,
        };
        found.map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::is_scope_token;

    #[test]
    fn scope_tokens() {
        for ok in ["notes:write", "a", "read!#[]~"] {
            assert!(is_scope_token(ok), "{ok}");
        }
        for bad in ["", "two words", "quo\"te", "back\\slash", "tab\t", "é"] {
            assert!(!is_scope_token(bad), "{bad}");
        }
    }
}
