//! Runtime half of `#[prompt]` and `#[resource]`: cached descriptors, argument parsing and
//! completion dispatch.

use mcp_types::{
    CacheScope, ClientCapabilities, CompletionContext, GetPromptResult, JsonObject, Prompt,
    PromptArgument, Resource, ResourceContents, ResourceTemplate,
};
use serde_json::Value;

pub use crate::prompt::{CompletionFn, IntoGetPromptResult, PromptHandler};
pub use crate::resource::{IntoResourceContents, ResourceDescriptor, ResourceHandler, ResourceUri};

use super::tool_support::{Requirement, capabilities, optional_capabilities, summary};
use crate::tool::HandlerError;

/// Return types of `#[prompt]` functions.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a prompt",
    label = "does not implement `IntoGetPromptResult`",
    note = "return `String`, `&'static str`, `PromptMessage`, `Vec<PromptMessage>`, \
            `Vec<ContentBlock>` or `GetPromptResult`, optionally inside `Result<_, HandlerError>`"
)]
pub trait PromptReturn: IntoGetPromptResult {}
impl<T: IntoGetPromptResult> PromptReturn for T {}

/// Return types of `#[resource]` functions.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a resource",
    label = "does not implement `IntoResourceContents`",
    note = "return `String`, `&'static str`, `Blob`, `Json<T>`, `ResourceContents` or \
            `Vec<ResourceContents>`, optionally inside `Result<_, HandlerError>`"
)]
pub trait ResourceReturn: IntoResourceContents {}
impl<T: IntoResourceContents> ResourceReturn for T {}

/// Types of documented `#[prompt]` parameters: prompt arguments travel as strings.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a prompt argument: prompt arguments are strings",
    label = "use `String` or `Option<String>`",
    note = "a client sends every prompt argument as a string: take `String` (required) or \
            `Option<String>` (optional) and parse it inside the function"
)]
pub trait PromptArgumentType {}
impl PromptArgumentType for String {}
impl PromptArgumentType for Option<String> {}

/// Compile-time check of one documented prompt parameter's type.
pub fn prompt_argument<T: PromptArgumentType>() {}

/// What `#[prompt]` knows at compile time.
#[derive(Debug, Clone, Copy)]
pub struct PromptSpec {
    /// Prompt name.
    pub name: &'static str,
    /// Display title.
    pub title: Option<&'static str>,
    /// Description (doc comment).
    pub description: Option<&'static str>,
    /// `requires(...)`.
    pub requires: &'static [Requirement],
    /// `optional(...)`.
    pub optional: &'static [Requirement],
    /// Each parameter's declaration; the arguments' schema (its properties become the
    /// prompt's arguments) comes from them.
    pub params: &'static [fn(&mut super::tool_support::ParamNeeds)],
    /// `complete(arg = provider, ...)`.
    pub completions: &'static [(&'static str, CompletionFn)],
}

/// The built, cached form of a [`PromptSpec`].
#[derive(Debug, Clone)]
pub struct PromptStatic {
    /// The descriptor.
    pub prompt: Prompt,
    /// Required client capabilities.
    pub capabilities: ClientCapabilities,
    /// Client capabilities used when the request declares them (`None` when none are).
    pub optional: Option<ClientCapabilities>,
    /// Summary of the arguments for error messages.
    pub expected: String,
    /// Why the descriptor could not be built as declared (reported on every get).
    pub error: Option<String>,
    completions: &'static [(&'static str, CompletionFn)],
}

/// Prompt arguments from an object schema: one per property, in declaration order, with
/// its description and whether it is required.
pub fn prompt_arguments(schema: &JsonObject) -> Vec<PromptArgument> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(Value::Object(props)) = schema.get("properties") else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, s)| PromptArgument {
            name: name.clone(),
            title: s.get("title").and_then(Value::as_str).map(str::to_owned),
            description: s
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            required: Some(required.contains(&name.as_str())),
            extra: JsonObject::new(),
        })
        .collect()
}

/// Checks that every property of a prompt's arguments schema is a string (prompt arguments
/// travel as strings).
fn string_properties(schema: &JsonObject) -> Result<(), String> {
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (name, s) in props {
            let is_string = match s.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(ts)) => ts
                    .iter()
                    .all(|t| t.as_str().is_some_and(|t| t == "string" || t == "null")),
                _ => false,
            };
            if !is_string {
                return Err(format!(
                    "prompt argument `{name}` must be a `String` or `Option<String>` (prompt arguments are strings)"
                ));
            }
        }
    }
    Ok(())
}

fn complete_with(
    completions: &[(&'static str, CompletionFn)],
    name: &str,
    value: &str,
    context: &CompletionContext,
) -> Option<Vec<String>> {
    completions
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| f(value, context))
}

impl PromptStatic {
    /// Builds the descriptor (deterministic).
    pub fn build(spec: PromptSpec) -> Self {
        let mut needs = super::tool_support::ParamNeeds::default();
        for declare in spec.params {
            declare(&mut needs);
        }
        let arguments = needs.schema.unwrap_or(super::tool_support::no_input_schema);
        let declared = needs
            .error
            .take()
            .or_else(|| needs.uri_outside_resource("prompt"));
        let (schema, mut error) = match arguments() {
            Ok(s) => (s, declared),
            Err(e) => (JsonObject::new(), Some(e)),
        };
        if error.is_none() {
            error = string_properties(&schema).err();
        }
        let arguments = prompt_arguments(&schema);
        if error.is_none()
            && let Some((missing, _)) = spec
                .completions
                .iter()
                .find(|(n, _)| !arguments.iter().any(|a| a.name == *n))
        {
            error = Some(format!("`complete({missing} = ...)` names no argument"));
        }
        let prompt = Prompt {
            name: spec.name.to_owned(),
            title: spec.title.map(str::to_owned),
            description: spec.description.map(str::to_owned),
            arguments: (!arguments.is_empty()).then_some(arguments),
            icons: None,
            meta: None,
            extra: JsonObject::new(),
        };
        Self {
            prompt,
            capabilities: capabilities(spec.requires),
            optional: optional_capabilities(spec.optional),
            expected: summary(&schema),
            error: error.map(|e| format!("prompt `{}` is misdeclared: {e}", spec.name)),
            completions: spec.completions,
        }
    }

    /// Fails when the descriptor could not be built as declared.
    pub fn check(&self) -> Result<(), HandlerError> {
        match &self.error {
            Some(e) => Err(HandlerError::tool(e.clone())),
            None => Ok(()),
        }
    }

    /// Whether any argument has a completion provider.
    pub fn has_completions(&self) -> bool {
        !self.completions.is_empty()
    }

    /// Runs the provider of `argument`, if any.
    pub fn complete(
        &self,
        argument: &str,
        value: &str,
        context: &CompletionContext,
    ) -> Option<Vec<String>> {
        complete_with(self.completions, argument, value, context)
    }
}

/// What `#[resource]` knows at compile time.
#[derive(Debug, Clone, Copy)]
pub struct ResourceSpec {
    /// URI or URI template.
    pub uri: &'static str,
    /// Name.
    pub name: &'static str,
    /// Display title.
    pub title: Option<&'static str>,
    /// Description (doc comment).
    pub description: Option<&'static str>,
    /// MIME type.
    pub mime_type: Option<&'static str>,
    /// `requires(...)`.
    pub requires: &'static [Requirement],
    /// `optional(...)`.
    pub optional: &'static [Requirement],
    /// `ttl_ms = ...` (default 0).
    pub ttl_ms: u64,
    /// `cache_scope = "public"` (default private).
    pub public: bool,
    /// Each parameter's declaration; the variables struct's schema (checked against the
    /// template's variables) comes from them.
    pub params: &'static [fn(&mut super::tool_support::ParamNeeds)],
    /// `complete(var = provider, ...)`.
    pub completions: &'static [(&'static str, CompletionFn)],
}

/// The built, cached form of a [`ResourceSpec`].
#[derive(Debug, Clone)]
pub struct ResourceStatic {
    /// The descriptor.
    pub descriptor: ResourceDescriptor,
    /// Required client capabilities.
    pub capabilities: ClientCapabilities,
    /// Client capabilities used when the request declares them (`None` when none are).
    pub optional: Option<ClientCapabilities>,
    /// `ttlMs` and `cacheScope` of reads.
    pub hints: (u64, CacheScope),
    /// Summary of the template's variables for error messages.
    pub expected: String,
    /// Why the descriptor could not be built as declared (reported on every read).
    pub error: Option<String>,
    completions: &'static [(&'static str, CompletionFn)],
}

impl ResourceStatic {
    /// Builds the descriptor (deterministic).
    pub fn build(spec: ResourceSpec) -> Self {
        let template = spec.uri.contains('{');
        let mut error = None;
        let variables: Vec<String> = if template {
            match crate::uri_template::UriTemplate::parse(spec.uri) {
                Ok(t) => t.variables().map(str::to_owned).collect(),
                Err(e) => {
                    error = Some(e.to_string());
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        let mut needs = super::tool_support::ParamNeeds::default();
        for declare in spec.params {
            declare(&mut needs);
        }
        if let Some(e) = needs.error.take() {
            error.get_or_insert(e);
        }
        let mut expected = String::from("the URI variables {}");
        if let Some(schema_fn) = needs.schema {
            match schema_fn() {
                Ok(schema) => {
                    if let Some(Value::Object(props)) = schema.get("properties")
                        && let Some(extra) = props.keys().find(|k| !variables.contains(k))
                    {
                        error.get_or_insert(format!(
                            "field `{extra}` of the variables type is not a variable of `{}`",
                            spec.uri
                        ));
                    }
                    expected = format!("the URI variables {}", summary(&schema));
                }
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
        if let Some((n, _)) = spec
            .completions
            .iter()
            .find(|(n, _)| !variables.iter().any(|v| v == n))
        {
            error.get_or_insert(format!("`complete({n} = ...)` names no template variable"));
        }
        let descriptor = if template {
            ResourceDescriptor::Template(ResourceTemplate {
                uri_template: spec.uri.to_owned(),
                name: spec.name.to_owned(),
                title: spec.title.map(str::to_owned),
                description: spec.description.map(str::to_owned),
                mime_type: spec.mime_type.map(str::to_owned),
                icons: None,
                annotations: None,
                meta: None,
                extra: JsonObject::new(),
            })
        } else {
            ResourceDescriptor::Static(Resource {
                uri: spec.uri.to_owned(),
                name: spec.name.to_owned(),
                title: spec.title.map(str::to_owned),
                description: spec.description.map(str::to_owned),
                mime_type: spec.mime_type.map(str::to_owned),
                size: None,
                icons: None,
                annotations: None,
                meta: None,
                extra: JsonObject::new(),
            })
        };
        let scope = if spec.public {
            CacheScope::Public
        } else {
            CacheScope::Private
        };
        Self {
            descriptor,
            capabilities: capabilities(spec.requires),
            optional: optional_capabilities(spec.optional),
            hints: (spec.ttl_ms, scope),
            expected,
            error: error.map(|e| format!("resource `{}` is misdeclared: {e}", spec.uri)),
            completions: spec.completions,
        }
    }

    /// Fails when the descriptor could not be built as declared.
    pub fn check(&self) -> Result<(), HandlerError> {
        match &self.error {
            Some(e) => Err(HandlerError::tool(e.clone())),
            None => Ok(()),
        }
    }

    /// Whether any variable has a completion provider.
    pub fn has_completions(&self) -> bool {
        !self.completions.is_empty()
    }

    /// Runs the provider of `variable`, if any.
    pub fn complete(
        &self,
        variable: &str,
        value: &str,
        context: &CompletionContext,
    ) -> Option<Vec<String>> {
        complete_with(self.completions, variable, value, context)
    }
}

/// Converts a prompt function's return value.
pub fn into_prompt_result<R: PromptReturn>(r: R) -> Result<GetPromptResult, HandlerError> {
    r.into_get_prompt_result()
}

/// Converts a resource function's return value.
pub fn into_contents<R: ResourceReturn>(
    r: R,
    uri: &str,
    mime_type: Option<&str>,
) -> Result<Vec<ResourceContents>, HandlerError> {
    r.into_resource_contents(uri, mime_type)
}
