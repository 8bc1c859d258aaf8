//! Resources: the [`ResourceHandler`] trait `#[resource]` implements, resource descriptors
//! (a fixed URI or a URI template) and the conversions from what a resource function returns
//! into resource contents.
//!
//! Reads run with the same [`RequestContext`] as tools and prompts, so a resource can ask the
//! user (the sealed state binds `resources/read` and the URI read).

use base64::Engine as _;
use futures::future::BoxFuture;
use mcp_types::{
    BlobResourceContents, CacheScope, ClientCapabilities, CompletionContext, ErrorObject,
    JsonObject, Resource, ResourceContents, ResourceTemplate, TextResourceContents,
};
use serde::Serialize;
use serde_json::json;

use crate::context::RequestContext;
use crate::tool::{HandlerError, Json};

/// What a resource handler serves: one fixed URI, or every URI matching a template.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceDescriptor {
    /// Listed by `resources/list`; read by exactly this URI.
    Static(Resource),
    /// Listed by `resources/templates/list`; read by any URI the template matches.
    Template(ResourceTemplate),
}

impl ResourceDescriptor {
    /// The URI (static) or URI template.
    pub fn uri(&self) -> &str {
        match self {
            Self::Static(r) => &r.uri,
            Self::Template(t) => &t.uri_template,
        }
    }

    /// The MIME type declared for the contents, if any.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            Self::Static(r) => r.mime_type.as_deref(),
            Self::Template(t) => t.mime_type.as_deref(),
        }
    }
}

/// A resource (or family of resources) the server can list and read.
pub trait ResourceHandler: Send + Sync + 'static {
    /// The descriptor (built once, deterministic).
    fn descriptor(&self) -> &ResourceDescriptor;

    /// Client capabilities a read may need (answered with `-32021` when missing). They also
    /// declare how a read may ask for input: an ask in a mode declared neither here nor in
    /// [`ResourceHandler::optional_capabilities`] fails with `-32603`, a server bug (see
    /// [`ToolHandler::required_capabilities`](crate::tool::ToolHandler::required_capabilities)).
    fn required_capabilities(&self) -> &ClientCapabilities;

    /// Client capabilities a read uses only when the request declares them
    /// (`#[resource(optional(..))]`); see
    /// [`ToolHandler::optional_capabilities`](crate::tool::ToolHandler::optional_capabilities).
    fn optional_capabilities(&self) -> Option<&ClientCapabilities> {
        None
    }

    /// Why this resource cannot be served as declared (e.g. a template variable struct that does not fit the URI), or `None`.
    /// `Server::builder(..).build()` refuses it, so the mistake surfaces at start-up rather
    /// than on every read.
    fn declaration_error(&self) -> Option<&str> {
        None
    }

    /// OAuth scopes `resources/read` of this resource (every URI of a template) requires
    /// (`#[resource(scopes = [...])]`), merged with
    /// [`ServerBuilder::resource_scopes`](crate::server::ServerBuilder::resource_scopes).
    fn required_scopes(&self) -> &[&'static str] {
        &[]
    }

    /// `ttlMs` and `cacheScope` of a read result. Default: not cacheable (`0`) and `private`,
    /// the safe choice when contents may depend on who asks.
    fn cache_hints(&self) -> (u64, CacheScope) {
        (0, CacheScope::Private)
    }

    /// Reads `uri`. `vars` holds the template's variables, decoded (empty for a static
    /// resource). Return [`not_found`] when the URI fits the template but names nothing.
    fn read<'a>(
        &'a self,
        ctx: &'a mut RequestContext,
        uri: &'a str,
        vars: JsonObject,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, HandlerError>>;

    /// Whether [`ResourceHandler::complete`] can suggest values for any template variable.
    fn has_completions(&self) -> bool {
        false
    }

    /// Suggestions for template variable `variable` given the partial `value`; `None` when
    /// this variable has no completion provider.
    fn complete(
        &self,
        variable: &str,
        value: &str,
        context: &CompletionContext,
    ) -> Option<Vec<String>> {
        let _ = (variable, value, context);
        None
    }
}

/// The error for a URI that names no resource: `-32602` with the URI in `data.uri`, as the
/// spec defines it (never the retired `-32002`).
pub fn not_found(uri: &str) -> HandlerError {
    HandlerError::protocol(not_found_error(uri))
}

pub(crate) fn not_found_error(uri: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!(
        "Resource not found: {uri}; list resources and templates to see what can be read"
    ))
    .with_data(json!({ "uri": uri }))
}

/// The URI being read, as the client sent it: a `#[resource]` function parameter of this type
/// receives it (useful for templates whose variables lose the URI's exact spelling).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceUri(pub String);

/// Binary resource contents (sent base64-encoded as `blob`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Blob(pub Vec<u8>);

/// Converts what a resource function returns into the contents of `uri`.
pub trait IntoResourceContents {
    /// Performs the conversion; `mime_type` is the descriptor's declared type.
    fn into_resource_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError>;
}

/// Text contents of `uri`.
pub fn text(uri: &str, mime_type: Option<&str>, text: impl Into<String>) -> ResourceContents {
    ResourceContents::Text(TextResourceContents {
        uri: uri.to_owned(),
        mime_type: mime_type.map(str::to_owned),
        text: text.into(),
        meta: None,
        extra: JsonObject::new(),
    })
}

/// Binary contents of `uri`, base64-encoded.
pub fn blob(uri: &str, mime_type: Option<&str>, bytes: &[u8]) -> ResourceContents {
    ResourceContents::Blob(BlobResourceContents {
        uri: uri.to_owned(),
        mime_type: mime_type.map(str::to_owned),
        blob: base64::engine::general_purpose::STANDARD.encode(bytes),
        meta: None,
        extra: JsonObject::new(),
    })
}

/// Text, typed `text/plain` unless the descriptor says otherwise.
impl IntoResourceContents for String {
    fn into_resource_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(vec![text(
            uri,
            Some(mime_type.unwrap_or("text/plain")),
            self,
        )])
    }
}

/// Text, typed `text/plain` unless the descriptor says otherwise.
impl IntoResourceContents for &'static str {
    fn into_resource_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        self.to_owned().into_resource_contents(uri, mime_type)
    }
}

/// Bytes, typed `application/octet-stream` unless the descriptor says otherwise.
impl IntoResourceContents for Blob {
    fn into_resource_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(vec![blob(
            uri,
            Some(mime_type.unwrap_or("application/octet-stream")),
            &self.0,
        )])
    }
}

/// JSON text, typed `application/json` unless the descriptor says otherwise.
impl<T: Serialize> IntoResourceContents for Json<T> {
    fn into_resource_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        let body = serde_json::to_string(&self.0).map_err(|e| {
            HandlerError::protocol(ErrorObject::internal_error(format!(
                "resource contents failed to serialise: {e}"
            )))
        })?;
        Ok(vec![text(
            uri,
            Some(mime_type.unwrap_or("application/json")),
            body,
        )])
    }
}

impl IntoResourceContents for ResourceContents {
    fn into_resource_contents(
        self,
        _uri: &str,
        _mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(vec![self])
    }
}

impl IntoResourceContents for Vec<ResourceContents> {
    fn into_resource_contents(
        self,
        _uri: &str,
        _mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(self)
    }
}

impl<T: IntoResourceContents> IntoResourceContents for Result<T, HandlerError> {
    fn into_resource_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        self.and_then(|v| v.into_resource_contents(uri, mime_type))
    }
}
