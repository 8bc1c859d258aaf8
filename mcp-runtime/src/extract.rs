//! Handler parameters made from the request, the way axum's `FromRequestParts` makes handler
//! parameters from an HTTP request: `State<T>`, [`Principal`], [`Cancellation`],
//! [`ResourceUri`], the arguments (an [`args`](crate::args) struct, or [`Args<T>`]), and any
//! type of your own that implements [`FromRequest`].
//!
//! `#[tool]`, `#[prompt]` and `#[resource]` decide what an undocumented owned parameter is by
//! this trait, not by how its type is spelled, so type aliases work. The set of extractors is
//! open: no blanket impl claims a type for its derives, so a type of your own may derive
//! `Deserialize` and `JsonSchema` (for a log line, a stored record) and still be an
//! extractor:
//!
//! ```
//! use mcp_runtime::extract::{FromRequest, RequestParts};
//! use mcp_runtime::prelude::*;
//!
//! /// The caller's tenant: the part of the principal before `/`.
//! struct Tenant(String);
//!
//! impl FromRequest for Tenant {
//!     fn from_request(parts: &mut RequestParts<'_>) -> Result<Self, HandlerError> {
//!         let p = parts.context().principal().as_str();
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

/// What a handler parameter extractor sees of the request: a tool call, a prompt get or a
/// resource read.
pub struct RequestParts<'a> {
    ctx: &'a RequestContext,
    args: Option<JsonObject>,
    expected: &'a str,
    uri: Option<&'a str>,
}

impl<'a> RequestParts<'a> {
    /// The request's view for extractors (what generated code builds for tools and prompts).
    #[doc(hidden)]
    pub fn new(ctx: &'a RequestContext, args: JsonObject, expected: &'a str) -> Self {
        RequestParts {
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
        RequestParts {
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
                "two parameters of this handler read the arguments; declare one arguments type",
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

/// What a handler's parameters need, gathered when its descriptor is built.
#[derive(Debug, Default)]
pub struct ParamNeeds {
    pub(crate) schema: Option<fn() -> Result<JsonObject, String>>,
    pub(crate) state: Vec<StateNeed>,
    pub(crate) error: Option<String>,
    pub(crate) resource_uri: bool,
}

impl ParamNeeds {
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

/// A `#[tool]`, `#[prompt]` or `#[resource]` parameter made from the request. Implement it
/// for your own types to take them as parameters; `State<T>`, [`Principal`],
/// [`Cancellation`], [`ResourceUri`], [`Args<T>`] and [`args`](crate::args) structs implement
/// it already.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a handler parameter",
    label = "neither an arguments type nor an extractor",
    note = "for the arguments, put `#[args]` (`mcp_runtime::args`) on `{Self}`; take \
            `mcp_runtime::extract::Args<{Self}>` if it derives `Deserialize` and `JsonSchema` \
            itself; or declare each argument as a documented parameter",
    note = "for a value made from the request, implement `mcp_runtime::extract::FromRequest` \
            for `{Self}`"
)]
pub trait FromRequest: Sized {
    /// Makes the value; an error fails the request with it.
    fn from_request(parts: &mut RequestParts<'_>) -> Result<Self, HandlerError>;

    /// Declares what the parameter needs (arguments schema, state), once per handler.
    #[doc(hidden)]
    fn declare(needs: &mut ParamNeeds) {
        let _ = needs;
    }

    /// Whether this parameter is the arguments (a resource with a fixed URI takes none,
    /// which `#[resource]` checks at compile time with it).
    #[doc(hidden)]
    const ARGUMENTS: bool = false;
}

// Bounded by `StateType` (not the bare bounds) so a non-`Clone` state gets its own message.
impl<T: crate::__macro_support_v1::StateType> FromRequest for State<T> {
    fn from_request(parts: &mut RequestParts<'_>) -> Result<Self, HandlerError> {
        parts.ctx.state::<T>().map(State)
    }

    fn declare(needs: &mut ParamNeeds) {
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

impl FromRequest for Cancellation {
    fn from_request(parts: &mut RequestParts<'_>) -> Result<Self, HandlerError> {
        Ok(Cancellation(parts.ctx.cancellation_token()))
    }
}

impl FromRequest for ResourceUri {
    fn from_request(parts: &mut RequestParts<'_>) -> Result<Self, HandlerError> {
        match parts.uri {
            Some(uri) => Ok(ResourceUri(uri.to_owned())),
            // `build()` refuses such a declaration; a server built without that check says so.
            None => Err(HandlerError::tool(
                "`ResourceUri` is a parameter of `#[resource]` functions only",
            )),
        }
    }

    fn declare(needs: &mut ParamNeeds) {
        needs.resource_uri();
    }
}

impl FromRequest for Principal {
    fn from_request(parts: &mut RequestParts<'_>) -> Result<Self, HandlerError> {
        Ok(parts.ctx.principal().clone())
    }
}

/// The arguments, as a parameter: any type that derives `Deserialize` and `JsonSchema`
/// (serde 1, schemars 1.x), its schema the handler's `inputSchema` (a prompt's arguments, a
/// resource template's variables). The explicit form of [`args`](crate::args), for a type
/// that derives them itself or comes from another crate:
///
/// ```
/// use mcp_runtime::extract::Args;
/// use mcp_runtime::prelude::*;
///
/// // A type shared with code that knows nothing of tools; its crate depends on `serde` and
/// // `schemars` 1.x itself, as any type deriving them does.
/// #[derive(Deserialize, JsonSchema)]
/// struct Search {
///     /// Text to look for
///     query: String,
/// }
///
/// /// Searches the notes.
/// #[tool(read_only)]
/// fn search(Args(search): Args<Search>) -> String {
///     search.query
/// }
/// # let _ = search;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Args<T>(pub T);

impl<T> Args<T> {
    /// The arguments.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for Args<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for Args<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T: crate::__macro_support_v1::ToolArgs> FromRequest for Args<T> {
    fn from_request(parts: &mut RequestParts<'_>) -> Result<Self, HandlerError> {
        let (args, expected) = parts.take_args()?;
        crate::__macro_support_v1::parse_args::<T>(args, expected).map(Args)
    }

    fn declare(needs: &mut ParamNeeds) {
        needs.arguments(crate::__macro_support_v1::input_schema::<T>);
    }

    const ARGUMENTS: bool = true;
}
