//! Runtime half of `#[tool]`: deterministic schemas, the cached descriptor, argument parsing
//! and the bound-checking helper traits whose diagnostics tell users what to fix.

use std::fmt::Write as _;

use mcp_types::{
    CallToolResult, ClientCapabilities, ElicitationCapability, InputSchema, JsonObject,
    SamplingCapability, Tool, ToolAnnotations,
};
use serde_json::Value;

pub use crate::context::RequestContext;
pub use crate::extract::{Args, FromRequest, ParamNeeds, RequestParts};
pub use crate::tool::TaskStart;
pub use crate::tool::{HandlerError, IntoCallToolResult, Json, State, StateNeed, ToolHandler};
pub use mcp_types::TaskSupport;

/// Arguments types of `#[tool]` and `#[prompt]` functions (and `#[resource]` variables).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an arguments type",
    label = "needs `Deserialize` and `JsonSchema`",
    note = "put `#[mcp_runtime::args]` on `{Self}` (it needs no other crate), or add \
            `#[derive(Deserialize, JsonSchema)]` with `serde` 1 and `schemars` 1.x in your \
            Cargo.toml",
    note = "if `JsonSchema` is derived but still missing, your crate uses another schemars major \
            version: use `mcp_runtime::prelude::JsonSchema` or schemars 1.x"
)]
pub trait ToolArgs: serde::de::DeserializeOwned + schemars::JsonSchema {}
// Not recommended, so that a type missing both derives is one error (this trait's message),
// not one per missing supertrait.
#[diagnostic::do_not_recommend]
impl<T: serde::de::DeserializeOwned + schemars::JsonSchema> ToolArgs for T {}

/// Return types of `#[tool]` functions.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a tool",
    label = "does not implement `IntoCallToolResult`",
    note = "return `String`, `&'static str`, `()`, `CallToolResult`, `ContentBlock`, \
            `Vec<ContentBlock>` or `Json<T>` (T: Serialize + JsonSchema), optionally in \
            `Result<_, HandlerError>`"
)]
pub trait ToolReturn: IntoCallToolResult {}
impl<T: IntoCallToolResult> ToolReturn for T {}

/// Types extracted with `State<T>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be application state",
    label = "`State<T>` needs `T: Clone + Send + Sync + 'static`",
    note = "wrap shared state in an `Arc` (e.g. `State<Arc<Notes>>`) or derive `Clone`"
)]
pub trait StateType: Clone + Send + Sync + 'static {}
impl<T: Clone + Send + Sync + 'static> StateType for T {}

/// Structured output types of `Json<T>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be structured tool output",
    label = "needs `Serialize` and `JsonSchema`",
    note = "add `#[derive(Serialize, JsonSchema)]` to `{Self}`, with `serde` 1 (feature `derive`) \
            and `schemars` 1.x in your Cargo.toml"
)]
pub trait ToolOutput: serde::Serialize + schemars::JsonSchema {}
impl<T: serde::Serialize + schemars::JsonSchema> ToolOutput for T {}

/// A client capability a tool may need (`requires(...)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// `{"elicitation":{"form":{}}}`
    FormElicitation,
    /// `{"elicitation":{"url":{}}}`
    UrlElicitation,
    /// `{"sampling":{}}`
    Sampling,
    /// `{"roots":{}}`
    Roots,
}

/// What `#[tool]` knows at compile time.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// Tool name (validated by the macro).
    pub name: &'static str,
    /// Display title.
    pub title: Option<&'static str>,
    /// Description (doc comment).
    pub description: Option<&'static str>,
    /// `readOnlyHint`.
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    pub destructive: Option<bool>,
    /// `idempotentHint`.
    pub idempotent: Option<bool>,
    /// `openWorldHint`.
    pub open_world: Option<bool>,
    /// `requires(...)`.
    pub requires: &'static [Requirement],
    /// `optional(...)`.
    pub optional: &'static [Requirement],
    /// Each parameter's declaration: the arguments' schema (the `inputSchema`; none means
    /// no arguments) and the application state it reads.
    pub params: &'static [fn(&mut ParamNeeds)],
    /// Produces `outputSchema` (for `Json<T>` returns).
    pub output_schema: Option<fn() -> JsonObject>,
    /// `task` / `task = "..."`: whether the tool runs as a task (`Forbidden` without it).
    pub task_support: TaskSupport,
    /// `task_start = "..."`: when a task-supporting tool becomes a task.
    pub task_start: TaskStart,
}

/// A parameter's extractor and declaration, from a single `FromRequest` bound, so that
/// generated code names the type once and a type that is no parameter is one error.
pub struct ParamType<T> {
    /// Declares what the parameter needs.
    pub declare: fn(&mut ParamNeeds),
    /// Makes the parameter from the call.
    pub extract: fn(&mut RequestParts<'_>) -> Result<T, HandlerError>,
}

/// The [`ParamType`] of `T`.
pub fn param_type<T: FromRequest>() -> ParamType<T> {
    ParamType {
        declare: T::declare,
        extract: T::from_request,
    }
}

/// The built, cached form of a [`ToolSpec`].
#[derive(Debug, Clone)]
pub struct ToolStatic {
    /// The descriptor.
    pub tool: Tool,
    /// Required client capabilities.
    pub capabilities: ClientCapabilities,
    /// Client capabilities used when the request declares them (`None` when none are).
    pub optional: Option<ClientCapabilities>,
    /// `{field: type, optional?: type}` summary used in invalid-argument messages.
    pub expected: String,
    /// Why the descriptor could not be built as declared (refused by `build()`, and
    /// reported on every call of a server built without that check).
    pub error: Option<String>,
    /// The `State<T>` types the function extracts.
    pub state: Vec<StateNeed>,
    /// Whether the tool runs as a task.
    pub task_support: TaskSupport,
    /// When a task-supporting tool becomes a task.
    pub task_start: TaskStart,
}

impl ToolStatic {
    /// Builds the descriptor (deterministic: same input, same bytes).
    pub fn build(spec: ToolSpec) -> Self {
        let mut needs = ParamNeeds::default();
        for declare in spec.params {
            declare(&mut needs);
        }
        let (schema, error) = match needs.schema.unwrap_or(no_input_schema)() {
            Ok(s) => match InputSchema::new(s) {
                Ok(s) => (s, None),
                Err(e) => (InputSchema::empty_object(), Some(e.to_string())),
            },
            Err(e) => (InputSchema::empty_object(), Some(e)),
        };
        let declared = needs
            .error
            .take()
            .or_else(|| needs.uri_outside_resource("tool"));
        let expected = summary(schema.as_object());
        let mut tool = Tool::new(spec.name, schema);
        tool.title = spec.title.map(str::to_owned);
        tool.description = spec.description.map(str::to_owned);
        tool.output_schema = spec.output_schema.map(|f| f());
        let hints = [
            spec.read_only,
            spec.destructive,
            spec.idempotent,
            spec.open_world,
        ];
        if hints.iter().any(Option::is_some) {
            tool.annotations = Some(ToolAnnotations {
                read_only_hint: spec.read_only,
                destructive_hint: spec.destructive,
                idempotent_hint: spec.idempotent,
                open_world_hint: spec.open_world,
                ..Default::default()
            });
        }
        if spec.task_support != TaskSupport::Forbidden {
            crate::tasks::set_task_support(&mut tool, spec.task_support);
        }
        ToolStatic {
            tool,
            task_support: spec.task_support,
            task_start: spec.task_start,
            capabilities: capabilities(spec.requires),
            optional: optional_capabilities(spec.optional),
            expected,
            error: declared
                .or(error)
                .map(|e| format!("tool `{}` is misdeclared: {e}", spec.name)),
            state: needs.state,
        }
    }

    /// Fails when the descriptor could not be built as declared.
    pub fn check(&self) -> Result<(), HandlerError> {
        match &self.error {
            Some(e) => Err(HandlerError::tool(e.clone())),
            None => Ok(()),
        }
    }
}

/// The client capabilities for an `optional(...)` list, `None` when it is empty.
pub fn optional_capabilities(optional: &[Requirement]) -> Option<ClientCapabilities> {
    (!optional.is_empty()).then(|| capabilities(optional))
}

/// The client capabilities for a `requires(...)` list.
pub fn capabilities(requires: &[Requirement]) -> ClientCapabilities {
    let mut caps = ClientCapabilities::none();
    for r in requires {
        match r {
            Requirement::FormElicitation | Requirement::UrlElicitation => {
                let e = caps
                    .elicitation
                    .get_or_insert_with(ElicitationCapability::default);
                if *r == Requirement::FormElicitation {
                    e.form = Some(JsonObject::new());
                } else {
                    e.url = Some(JsonObject::new());
                }
            }
            Requirement::Sampling => caps.sampling = Some(SamplingCapability::default()),
            Requirement::Roots => caps = caps.with_roots(),
        }
    }
    caps
}

fn settings() -> schemars::generate::SchemaSettings {
    schemars::generate::SchemaSettings::draft2020_12().with(|s| {
        s.meta_schema = None;
        s.inline_subschemas = true;
    })
}

/// Removes the `null` alternative schemars adds for `Option<T>`, so an optional field is just
/// "not required" (`type: [T, "null"]` → `type: T`; `anyOf: [S, {type: null}]` → `S`).
fn strip_null(v: &mut Value) {
    match v {
        Value::Object(o) => {
            if let Some(Value::Array(types)) = o.get("type") {
                let rest: Vec<Value> = types
                    .iter()
                    .filter(|t| t.as_str() != Some("null"))
                    .cloned()
                    .collect();
                if rest.len() < types.len() {
                    let new = match <[Value; 1]>::try_from(rest) {
                        Ok([one]) => one,
                        Err(many) => Value::Array(many),
                    };
                    o.insert("type".into(), new);
                }
            }
            if let Some(Value::Array(values)) = o.get_mut("enum") {
                values.retain(|x| !x.is_null());
            }
            for key in ["anyOf", "oneOf"] {
                let Some(Value::Array(alts)) = o.get(key) else {
                    continue;
                };
                let is_null = |s: &Value| s.get("type").and_then(Value::as_str) == Some("null");
                if alts.len() == 2 && alts.iter().any(is_null) {
                    let other = alts.iter().find(|s| !is_null(s)).cloned();
                    if let Some(Value::Object(other)) = other {
                        o.remove(key);
                        for (k, val) in other {
                            o.entry(k).or_insert(val);
                        }
                    }
                } else if let Some(Value::Array(alts)) = o.get_mut(key) {
                    alts.retain(|s| !is_null(s));
                }
            }
            for (_, child) in o.iter_mut() {
                strip_null(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_null),
        _ => {}
    }
}

fn generate<T: schemars::JsonSchema>() -> JsonObject {
    let schema = settings().into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    strip_null(&mut value);
    let mut object = match value {
        Value::Object(o) => o,
        // `true`/`false` schemas: describe them as an object-free "anything".
        other => {
            let mut o = JsonObject::new();
            if other == Value::Bool(false) {
                o.insert("not".into(), Value::Object(JsonObject::new()));
            }
            o
        }
    };
    object.remove("$schema");
    object.remove("title");
    object
}

/// The deterministic `inputSchema` of an arguments type; an error if its root is not an object.
pub fn input_schema<T: schemars::JsonSchema>() -> Result<JsonObject, String> {
    let object = generate::<T>();
    match object.get("type") {
        Some(Value::String(t)) if t == "object" => Ok(object),
        other => Err(format!(
            "the arguments type `{}` must be a struct with named fields (its JSON Schema root is {}, \
             not an object)",
            std::any::type_name::<T>(),
            other.map_or_else(|| "untyped".to_owned(), Value::to_string)
        )),
    }
}

/// `{"type":"object","additionalProperties":false}` for tools without arguments.
pub fn no_input_schema() -> Result<JsonObject, String> {
    let mut o = JsonObject::new();
    o.insert("type".into(), Value::String("object".into()));
    o.insert("additionalProperties".into(), Value::Bool(false));
    Ok(o)
}

/// The deterministic `outputSchema` of a `Json<T>` output type.
pub fn output_schema<T: ToolOutput>() -> JsonObject {
    generate::<T>()
}

fn type_name(schema: &Value) -> String {
    match schema.get("type") {
        Some(Value::String(t)) => match (t.as_str(), schema.get("enum")) {
            ("string", Some(Value::Array(values))) => values
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(" | "),
            _ => t.clone(),
        },
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" | "),
        _ => "value".to_owned(),
    }
}

/// `{workspaceUri: string, title?: string}` from an object schema.
pub fn summary(schema: &JsonObject) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = String::from("{");
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (i, (name, s)) in props.iter().enumerate() {
            let opt = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            let sep = if i == 0 { "" } else { ", " };
            let _ = write!(out, "{sep}{name}{opt}: {}", type_name(s));
        }
    }
    out.push('}');
    out
}

/// Deserialises `args` into the arguments type; failures say what was wrong and what the
/// tool expects, so a model can correct its call.
pub fn parse_args<T: ToolArgs>(args: JsonObject, expected: &str) -> Result<T, HandlerError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| HandlerError::invalid_arguments(format!("{e}; expected {expected}")))
}

/// Argument check of a tool without parameters: any argument is a mistake worth reporting.
pub fn no_args(args: &JsonObject) -> Result<(), HandlerError> {
    match args.keys().next() {
        None => Ok(()),
        Some(k) => Err(HandlerError::invalid_arguments(format!(
            "unknown field `{k}`; this tool takes no arguments"
        ))),
    }
}

/// The referenced type of a handler's reference parameter: only the request context.
#[diagnostic::on_unimplemented(
    message = "`&{Self}` is not the request context",
    label = "a reference parameter is `&mut RequestContext` or `&RequestContext`",
    note = "arguments are owned values parsed from JSON: take `String`, not `&str`, and give \
            the parameter a doc comment (`/// what it is`)"
)]
pub trait ContextParam {
    /// The context, as this type.
    fn from_mut(ctx: &mut RequestContext) -> &mut Self;
    /// The context, as this type.
    fn from_ref(ctx: &RequestContext) -> &Self;
}

impl ContextParam for RequestContext {
    fn from_mut(ctx: &mut RequestContext) -> &mut Self {
        ctx
    }
    fn from_ref(ctx: &RequestContext) -> &Self {
        ctx
    }
}

/// Passes the context to a `&mut` parameter.
pub fn context_mut<T: ContextParam + ?Sized>(ctx: &mut RequestContext) -> &mut T {
    T::from_mut(ctx)
}

/// Passes the context to a `&` parameter.
pub fn context_ref<T: ContextParam + ?Sized>(ctx: &RequestContext) -> &T {
    T::from_ref(ctx)
}

/// `future`, its output mapped by `f`, in place: what `#[tool]` boxes for an async function.
pub fn map_future<F: Future, T>(
    future: F,
    f: impl FnOnce(F::Output) -> T,
) -> impl Future<Output = T> {
    futures::FutureExt::map(future, f)
}

/// Converts a tool function's return value.
pub fn into_result<R: ToolReturn>(r: R) -> Result<CallToolResult, HandlerError> {
    r.into_call_tool_result()
}
