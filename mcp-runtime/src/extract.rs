//! Handler parameters made from the call, the way axum's `FromRequestParts` makes handler
//! parameters from a request: `State<T>`, [`Principal`], [`Cancellation`], [`ResourceUri`],
//! the arguments struct, and any type of your own that implements [`FromToolCall`].
//!
//! `#[tool]`, `#[prompt]` and `#[resource]` decide what an undocumented owned parameter is by
//! this trait, not by how its type is spelled, so type aliases work and the set of extractors
//! is open:
//!
//! ```
//! use mcp_runtime::extract::{FromToolCall, ToolCall};
//! use mcp_runtime::prelude::*;
//!
//! /// The caller's tenant: the part of the principal before `/`.
//! struct Tenant(String);
//!
//! impl FromToolCall for Tenant {
//!     fn from_tool_call(call: &mut ToolCall<'_>) -> Result<Self, HandlerError> {
//!         let p = call.context().principal().as_str();
//!         match p.split_once('/') {
//!             Some((tenant, _)) => Ok(Tenant(tenant.to_owned())),
//!             None => Err(HandlerError::tool("this tool needs a tenant-scoped principal")),
//!         }
//!     }
//! }
//!
//! type Caller = Principal;
//!
//! /// Says who is calling.
//! #[tool(read_only)]
//! fn whoami(tenant: Tenant, caller: Caller) -> String {
//!     format!("{} in {}", caller.as_str(), tenant.0)
//! }
//! # let _ = whoami;
//! ```

use mcp_types::JsonObject;

use crate::Principal;
use crate::context::RequestContext;
use crate::resource::ResourceUri;
use crate::service::CancellationToken;
use crate::tool::{HandlerError, State, StateNeed};

/// What a handler parameter extractor sees of the call: a tool call, a prompt get or a
/// resource read.
pub struct ToolCall<'a> {
    ctx: &'a RequestContext,
    args: Option<JsonObject>,
    expected: &'a str,
    uri: Option<&'a str>,
}

impl<'a> ToolCall<'a> {
    /// The call's view for extractors (what generated code builds for tools and prompts).
    #[doc(hidden)]
    pub fn new(ctx: &'a RequestContext, args: JsonObject, expected: &'a str) -> Self {
        ToolCall {
            ctx,
            args: Some(args),
            expected,
            uri: None,
        }
    }

    /// The read's view for extractors (what generated code builds for resources): `vars`
    /// are the template's variables, which the variables struct takes.
    #[doc(hidden)]
    pub fn for_resource(
        ctx: &'a RequestContext,
        uri: &'a str,
        vars: JsonObject,
        expected: &'a str,
    ) -> Self {
        ToolCall {
            ctx,
            args: Some(vars),
            expected,
            uri: Some(uri),
        }
    }

    /// The request's context: principal, application state, request metadata.
    pub fn context(&self) -> &'a RequestContext {
        self.ctx
    }

    /// The URI being read, as the client sent it, when this is a resource read; `None` for
    /// tool calls and prompts.
    pub fn resource_uri(&self) -> Option<&'a str> {
        self.uri
    }

    /// The call's arguments, once (the arguments extractor takes them).
    #[doc(hidden)]
    pub fn take_args(&mut self) -> Result<(JsonObject, &'a str), HandlerError> {
        match self.args.take() {
            Some(a) => Ok((a, self.expected)),
            None => Err(HandlerError::tool(
                "two parameters of this tool read the arguments; declare one arguments type",
            )),
        }
    }

    /// After every parameter: arguments nobody took are a mistake worth reporting.
    #[doc(hidden)]
    pub fn finish(self) -> Result<(), HandlerError> {
        match self.args.as_ref().and_then(|a| a.keys().next()) {
            None => Ok(()),
            Some(k) => Err(HandlerError::invalid_arguments(format!(
                "unknown field `{k}`; this tool takes no arguments"
            ))),
        }
    }
}

/// What a tool's parameters need, gathered when its descriptor is built.
#[derive(Debug, Default)]
pub struct ToolCallNeeds {
    pub(crate) schema: Option<fn() -> Result<JsonObject, String>>,
    pub(crate) state: Vec<StateNeed>,
    pub(crate) error: Option<String>,
    pub(crate) resource_uri: bool,
}

impl ToolCallNeeds {
    /// Declares the arguments' schema (the `inputSchema`); a second one is a mistake
    /// reported by `build()`.
    #[doc(hidden)]
    pub fn arguments(&mut self, schema: fn() -> Result<JsonObject, String>) {
        if self.schema.replace(schema).is_some() {
            self.error = Some(
                "two parameters are arguments types; put every argument into one struct, or \
                 declare each as a documented parameter"
                    .to_owned(),
            );
        }
    }

    /// Declares application state the tool reads (checked by `build()`).
    #[doc(hidden)]
    pub fn state(&mut self, need: StateNeed) {
        self.state.push(need);
    }

    /// Declares that the handler reads the resource URI: only resources have one, so a tool
    /// or prompt declaring it is misdeclared (refused by `build()`).
    #[doc(hidden)]
    pub fn resource_uri(&mut self) {
        self.resource_uri = true;
    }

    /// The declaration error of a tool or prompt (`what`) whose parameters need the
    /// resource URI.
    pub(crate) fn uri_outside_resource(&self, what: &str) -> Option<String> {
        self.resource_uri.then(|| {
            format!(
                "`ResourceUri` is a parameter of `#[resource]` functions; a {what} is not a read \
                 of a URI"
            )
        })
    }
}

/// A `#[tool]`, `#[prompt]` or `#[resource]` parameter made from the call. Implement it for
/// your own types to take them as parameters; `State<T>`, [`Principal`], [`Cancellation`],
/// [`ResourceUri`] and arguments structs (anything `Deserialize` + `JsonSchema`; a resource's
/// template variables) implement it already.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool parameter",
    label = "neither an arguments type nor an extractor",
    note = "for the tool's arguments, add `#[derive(Deserialize, JsonSchema)]` to `{Self}` \
            (serde 1 and schemars 1.x), or declare each argument as a documented parameter",
    note = "for a value made from the request, implement `mcp_runtime::extract::FromToolCall` \
            for `{Self}`",
    note = "if `JsonSchema` is derived but still missing, your crate uses another schemars major \
            version: use `mcp_runtime::prelude::JsonSchema` or schemars 1.x"
)]
pub trait FromToolCall: Sized {
    /// Makes the value; an error fails the call with it.
    fn from_tool_call(call: &mut ToolCall<'_>) -> Result<Self, HandlerError>;

    /// Declares what the parameter needs (arguments schema, state), once per tool.
    #[doc(hidden)]
    fn declare(needs: &mut ToolCallNeeds) {
        let _ = needs;
    }

    /// Whether this parameter is the arguments (a resource with a fixed URI takes none,
    /// which `#[resource]` checks at compile time with it).
    #[doc(hidden)]
    const ARGUMENTS: bool = false;
}

// Bounded by `StateType` (not the bare bounds) so a non-`Clone` state gets its own message.
impl<T: crate::__macro_support_v1::StateType> FromToolCall for State<T> {
    fn from_tool_call(call: &mut ToolCall<'_>) -> Result<Self, HandlerError> {
        call.ctx.state::<T>().map(State)
    }

    fn declare(needs: &mut ToolCallNeeds) {
        needs.state(StateNeed::of::<T>());
    }
}

/// The request's cancellation, as a parameter: a token that is cancelled when the request is
/// over (the client cancelled it, it timed out, or it was answered). Move it into work the tool
/// spawns so that work stops with the request; see [`RequestContext::cancellation_token`], which
/// this is.
///
/// ```
/// use mcp_runtime::extract::Cancellation;
/// use mcp_runtime::prelude::*;
///
/// /// Rebuilds the index in the background, stopping when the request is over.
/// #[tool(read_only)]
/// async fn reindex(cancel: Cancellation) -> String {
///     let worker = tokio::spawn(async move {
///         tokio::select! {
///             () = cancel.cancelled() => "stopped",
///             () = tokio::time::sleep(std::time::Duration::from_secs(3600)) => "done",
///         }
///     });
///     let _ = worker;
///     "started".to_owned()
/// }
/// # let _ = reindex;
/// ```
#[derive(Debug, Clone)]
pub struct Cancellation(pub CancellationToken);

impl std::ops::Deref for Cancellation {
    type Target = CancellationToken;

    fn deref(&self) -> &CancellationToken {
        &self.0
    }
}

impl FromToolCall for Cancellation {
    fn from_tool_call(call: &mut ToolCall<'_>) -> Result<Self, HandlerError> {
        Ok(Cancellation(call.ctx.cancellation_token()))
    }
}

impl FromToolCall for ResourceUri {
    fn from_tool_call(call: &mut ToolCall<'_>) -> Result<Self, HandlerError> {
        match call.uri {
            Some(uri) => Ok(ResourceUri(uri.to_owned())),
            // `build()` refuses such a declaration; a server built without that check says so.
            None => Err(HandlerError::tool(
                "`ResourceUri` is a parameter of `#[resource]` functions only",
            )),
        }
    }

    fn declare(needs: &mut ToolCallNeeds) {
        needs.resource_uri();
    }
}

impl FromToolCall for Principal {
    fn from_tool_call(call: &mut ToolCall<'_>) -> Result<Self, HandlerError> {
        Ok(call.ctx.principal().clone())
    }
}

// The arguments: any `Deserialize + JsonSchema` type. Not recommended in diagnostics, so a
// type with neither gets this trait's message once.
#[diagnostic::do_not_recommend]
impl<T: crate::__macro_support_v1::ToolArgs> FromToolCall for T {
    fn from_tool_call(call: &mut ToolCall<'_>) -> Result<Self, HandlerError> {
        let (args, expected) = call.take_args()?;
        crate::__macro_support_v1::parse_args::<T>(args, expected)
    }

    fn declare(needs: &mut ToolCallNeeds) {
        needs.arguments(crate::__macro_support_v1::input_schema::<T>);
    }

    const ARGUMENTS: bool = true;
}
