//! Authorization in the core: the OAuth scopes a tool, prompt or resource requires, checked
//! against the request's [`Grant`] before any handler runs, whichever transport the request
//! came through (HTTP, stdio, the 2025-11-25 adapter, `handle_bytes`, the in-process client).
//!
//! The rules, in order:
//! - A grant without scopes (local stdio, static bearer tokens, anonymous) may call anything.
//! - A scoped grant (an OAuth token) needs every scope its target requires; lacking one, the
//!   request is refused naming them all ([`Reply::forbidden`], HTTP 403 `insufficient_scope`).
//! - A target that declares no scopes is refused to a scoped grant unless it was declared
//!   public (deny by default). With
//!   [`ServerBuilder::scoped_authorization`](super::ServerBuilder::scoped_authorization) that
//!   mistake is caught by [`ServerBuilder::build`](super::ServerBuilder::build) instead,
//!   naming every undeclared target.

use std::collections::{HashMap, HashSet};

use mcp_types::RequestId;

use super::{BuildError, Server};
use crate::router::{PromptRouter, ResourceRouter, ToolRouter};
use crate::service::envelope;
use crate::service::{Grant, Reply};

/// Scope requirements by tool name, prompt name and resource URI or URI template, and the
/// targets declared public.
#[derive(Debug, Clone, Default)]
pub(super) struct RequiredScopes {
    pub(super) tools: HashMap<String, Vec<String>>,
    pub(super) prompts: HashMap<String, Vec<String>>,
    pub(super) resources: HashMap<String, Vec<String>>,
    pub(super) public_tools: HashSet<String>,
    pub(super) public_prompts: HashSet<String>,
    pub(super) public_resources: HashSet<String>,
    /// [`ServerBuilder::scoped_authorization`](super::ServerBuilder::scoped_authorization)
    /// was called.
    pub(super) scoped: bool,
}

/// What a target declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Requirement<'s> {
    /// Nothing is registered under that name (the dispatcher answers unknown tool, prompt
    /// or resource).
    Unknown,
    /// These scopes.
    Scopes(&'s [String]),
    /// Any grant.
    Public,
    /// No declaration: refused to scoped grants.
    Undeclared,
}

/// RFC 6749 §3.3 `scope-token`: printable ASCII except space, `"` and `\`.
fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}

pub(super) fn add(
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

impl RequiredScopes {
    /// [`McpService::check_grants`](crate::service::McpService::check_grants): OAuth grants
    /// carry scopes, so a server that accepts them must have been built to hold every target
    /// to scopes.
    pub(super) fn check_grants(&self, scheme: crate::service::AuthScheme) -> Result<(), String> {
        if scheme == crate::service::AuthScheme::OAuth && !self.scoped {
            return Err(
                "this endpoint accepts OAuth access tokens (scoped credentials), but the \
                 server was not built with `ServerBuilder::scoped_authorization()`: nothing \
                 checked that every tool, prompt and resource declares the scopes it needs. \
                 Call `.scoped_authorization()` on the builder and declare each target's \
                 scopes (`#[tool(scopes = [..])]`, `tool_scopes`) or make it public \
                 (`public_tool` and the like)"
                    .to_owned(),
            );
        }
        Ok(())
    }

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

    /// Checks that every requirement and public declaration names something registered,
    /// every scope is a valid `scope-token`, nothing is both public and scoped, and, with
    /// [`ServerBuilder::scoped_authorization`](super::ServerBuilder::scoped_authorization),
    /// that every target declares one or the other.
    /// Without it, declared scopes are reported once (a warning): only scoped credentials are
    /// held to them.
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
        let resource_registered = |uri: &str| {
            resources
                .statics()
                .chain(resources.templates())
                .any(|r| r.descriptor().uri() == uri)
        };
        for name in self.tools.keys().chain(&self.public_tools) {
            if tools.get(name).is_none() {
                return unknown("tool", name, "name");
            }
        }
        for name in self.prompts.keys().chain(&self.public_prompts) {
            if prompts.get(name).is_none() {
                return unknown("prompt", name, "name");
            }
        }
        for uri in self.resources.keys().chain(&self.public_resources) {
            if !resource_registered(uri) {
                return unknown("resource", uri, "URI or template");
            }
        }
        let both = |what: &str, name: &str| {
            Err(BuildError::Declaration(format!(
                "the {what} `{name}` is declared public and also requires scopes; drop one of the two"
            )))
        };
        for name in &self.public_tools {
            if self.tools.contains_key(name) {
                return both("tool", name);
            }
        }
        for name in &self.public_prompts {
            if self.prompts.contains_key(name) {
                return both("prompt", name);
            }
        }
        for uri in &self.public_resources {
            if self.resources.contains_key(uri) {
                return both("resource", uri);
            }
        }
        if self.scoped {
            self.check_all_declared(tools, prompts, resources)?;
        } else if !(self.tools.is_empty() && self.prompts.is_empty() && self.resources.is_empty()) {
            tracing::warn!(
                "OAuth scopes are declared, but the server was not built with \
                 `scoped_authorization()`: only requests whose credentials carry scopes (OAuth) \
                 are held to them, and nothing checked at start-up that every tool, prompt and \
                 resource declares its scopes; call `.scoped_authorization()` on the builder \
                 where scoped credentials are accepted"
            );
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

    /// Under scoped authorization: every tool, prompt and resource declares scopes or is
    /// public; the error names every one that does not.
    fn check_all_declared(
        &self,
        tools: &ToolRouter,
        prompts: &PromptRouter,
        resources: &ResourceRouter,
    ) -> Result<(), BuildError> {
        let mut undeclared = Vec::new();
        for tool in tools.iter() {
            let name = &tool.descriptor().name;
            if !self.tools.contains_key(name) && !self.public_tools.contains(name) {
                undeclared.push(format!(
                    "the tool `{name}` (add `#[tool(scopes = [..])]`, `.tool_scopes(\"{name}\", [..])` or `.public_tool(\"{name}\")`)"
                ));
            }
        }
        for prompt in prompts.iter() {
            let name = &prompt.descriptor().name;
            if !self.prompts.contains_key(name) && !self.public_prompts.contains(name) {
                undeclared.push(format!(
                    "the prompt `{name}` (add `.prompt_scopes(\"{name}\", [..])` or `.public_prompt(\"{name}\")`)"
                ));
            }
        }
        for resource in resources.statics().chain(resources.templates()) {
            let uri = resource.descriptor().uri();
            if !self.resources.contains_key(uri) && !self.public_resources.contains(uri) {
                undeclared.push(format!(
                    "the resource `{uri}` (add `.resource_scopes(\"{uri}\", [..])` or `.public_resource(\"{uri}\")`)"
                ));
            }
        }
        if undeclared.is_empty() {
            return Ok(());
        }
        Err(BuildError::Unscoped(undeclared))
    }

    /// What a request of `method` naming `name` (tool or prompt name, resource URI) must
    /// satisfy.
    pub(super) fn requirement<'s>(
        &'s self,
        tools: &ToolRouter,
        prompts: &PromptRouter,
        resources: &ResourceRouter,
        method: &str,
        name: &str,
    ) -> Requirement<'s> {
        let (scopes, public) = match method {
            mcp_types::METHOD_TOOLS_CALL => {
                if tools.get(name).is_none() {
                    return Requirement::Unknown;
                }
                (self.tools.get(name), self.public_tools.contains(name))
            }
            mcp_types::METHOD_PROMPTS_GET => {
                if prompts.get(name).is_none() {
                    return Requirement::Unknown;
                }
                (self.prompts.get(name), self.public_prompts.contains(name))
            }
            mcp_types::METHOD_RESOURCES_READ => {
                let Some(matched) = resources.resolve(name) else {
                    return Requirement::Unknown;
                };
                let uri = matched.handler.descriptor().uri();
                (self.resources.get(uri), self.public_resources.contains(uri))
            }
            _ => return Requirement::Unknown,
        };
        match (scopes, public) {
            (Some(scopes), _) => Requirement::Scopes(scopes),
            (None, true) => Requirement::Public,
            (None, false) => Requirement::Undeclared,
        }
    }
}

impl Server {
    /// The refusal of a request of `method` naming `name` that `grant` may not make, or
    /// `None` when it may (see the module's rules). Called before any handler runs.
    pub(super) fn authorize(
        &self,
        grant: &Grant,
        id: &RequestId,
        method: &str,
        name: &str,
    ) -> Option<Reply> {
        // Unscoped credentials pass every requirement: skip the look-ups on the hot path.
        grant.scopes.as_ref()?;
        let inner = &self.inner;
        let requirement = inner.scopes.requirement(
            &inner.router,
            &inner.prompts,
            &inner.resources,
            method,
            name,
        );
        let what = match method {
            mcp_types::METHOD_TOOLS_CALL => "tool",
            mcp_types::METHOD_PROMPTS_GET => "prompt",
            _ => "resource",
        };
        match requirement {
            Requirement::Unknown | Requirement::Public => None,
            Requirement::Scopes(required) => {
                let missing = grant.missing(required);
                if missing.is_empty() {
                    return None;
                }
                let scope = required.join(" ");
                let message = format!(
                    "Forbidden: the access token lacks the scope(s) {} that the {what} `{}` requires; obtain a token with scope \"{scope}\"",
                    missing.join(", "),
                    crate::log_safe::LogSafe(name),
                );
                let body = forbidden_body(id, &message);
                Some(Reply::forbidden(body, Some(&scope)))
            }
            Requirement::Undeclared => {
                tracing::error!(
                    what,
                    name = %crate::log_safe::LogSafe(name),
                    "refused scoped credentials: the {what} declares no scopes and is not public; \
                     declare its scopes, or build the server with `scoped_authorization()` to \
                     catch this at start-up"
                );
                let message = format!(
                    "Forbidden: the {what} `{}` declares no OAuth scopes and is not public, so it is refused to scoped credentials; the server's operator must declare its scopes",
                    crate::log_safe::LogSafe(name),
                );
                let body = forbidden_body(id, &message);
                Some(Reply::forbidden(body, None))
            }
        }
    }
}

/// The `-32600` body of a refusal: the message as it is ("Forbidden: ..."), as the HTTP edge
/// has always worded it, rather than under the generic "Invalid Request:" prefix.
fn forbidden_body(id: &RequestId, message: &str) -> bytes::Bytes {
    let id = serde_json::to_value(id).ok();
    envelope::error_body(id.as_ref(), mcp_types::ErrorCode::InvalidRequest, message)
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
