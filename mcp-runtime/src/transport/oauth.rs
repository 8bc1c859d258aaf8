//! An OAuth 2.1 resource server for the Streamable HTTP edge (feature `oauth`).
//!
//! The MCP server accepts access tokens that the organisation's authorization server issued for
//! it, as the MCP authorization spec describes. [`ResourceServer`] is an [`Authenticator`]:
//!
//! - **Protected Resource Metadata** (RFC 9728): [`ResourceServer::metadata_router`] serves the
//!   document at `/.well-known/oauth-protected-resource` and, for a resource URI with a path
//!   (`https://mcp.example.com/mcp`), at the path-suffixed form
//!   `/.well-known/oauth-protected-resource/mcp`. It names the authorization server, the scopes
//!   and the canonical resource URI. Every 401 and 403 challenge carries
//!   `resource_metadata="…"` pointing at it, so a client can discover where to get a token.
//! - **JWT access tokens** (RFC 9068) verified against the issuer's JWKS, found through the
//!   issuer's metadata (`/.well-known/oauth-authorization-server`, else
//!   `/.well-known/openid-configuration`). Keys are cached (at most
//!   [`OAuthConfig::max_keys`]), refetched when a token names an unknown `kid` (at most once per
//!   [`OAuthConfig::refresh_interval`]) or when older than [`OAuthConfig::max_key_age`]; every
//!   fetch is bounded in time and size. A key removed from the JWKS stops verifying as soon as
//!   the set is refetched.
//! - Checks: `alg` on [`OAuthConfig::algorithms`] (asymmetric only: never `none`, never an
//!   HMAC, and the key's type and its own `alg` must fit, so a public key cannot be used as an
//!   HMAC secret); `iss` equal to the issuer; `aud` containing the canonical resource URI
//!   (RFC 8707: a token minted for another resource is refused); `exp` required and `nbf`
//!   honoured, both with [`OAuthConfig::leeway`]; `sub` required.
//! - **Opaque tokens** (anything that is not `header.payload.signature`), with
//!   [`OAuthConfig::with_introspection`]: RFC 7662 introspection at the issuer's
//!   `introspection_endpoint` (the only place a token is ever sent), then the same rules:
//!   `active`, `aud` naming this resource, `iss` (when given) the issuer, `exp` required, `nbf`,
//!   `sub`. Without it, opaque tokens are refused. Each such request asks the issuer once; no
//!   answer is cached.
//! - The principal is the issuer plus the subject ([`principal_for`]): what request state binds
//!   and what authorization decisions (workspaces) are keyed by. The granted scopes (`scope`
//!   claim, space-separated) are checked against what a tool, prompt or resource requires
//!   ([`ServerBuilder::tool_scopes`](crate::server::ServerBuilder::tool_scopes)): 403
//!   `insufficient_scope` naming the needed scopes.
//!
//! Tokens are never logged, never put in an error, and never forwarded anywhere: the verifier
//! only reads them.
//!
//! ```no_run
//! # async fn run(service: std::sync::Arc<dyn mcp_runtime::service::McpService>) -> std::io::Result<()> {
//! use mcp_runtime::transport::HttpServer;
//! use mcp_runtime::transport::oauth::{OAuthConfig, ResourceServer};
//!
//! let config = OAuthConfig::new("https://login.example.com", "https://mcp.example.com/mcp")
//!     .with_scopes(["notes:read", "notes:write"]);
//! let oauth = ResourceServer::new(config).map_err(std::io::Error::other)?;
//! // Fail at start-up, not on the first request, if the issuer cannot be reached.
//! oauth.discover().await.map_err(std::io::Error::other)?;
//! HttpServer::new(service, std::sync::Arc::new(oauth.clone()))
//!     .with_oauth(&oauth)
//!     .bind()
//!     .await?
//!     .serve()
//!     .await
//! # }
//! ```

mod fetch;
mod introspect;
mod keys;
mod metadata;
mod token;

use std::sync::Arc;
use std::time::Duration;

use http::HeaderMap;
pub use jsonwebtoken::Algorithm;

use super::auth::{AuthFuture, AuthRejection, Authenticator, bearer};
use super::http::HttpServer;
use crate::Principal;
use crate::service::Grant;

const LOG_TARGET: &str = "mcp_runtime::transport::oauth";

/// What the resource server trusts and how it fetches keys.
///
/// Built with [`OAuthConfig::new`] and changed with the `with_*` setters, which refuse what
/// cannot work (an HMAC algorithm, a zero limit) as they set it; each setting is read back
/// with the getter of the same name. The issuer and resource URIs are checked by
/// [`ResourceServer::new`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OAuthConfig {
    pub(crate) issuer: String,
    pub(crate) resource: String,
    pub(crate) scopes_supported: Vec<String>,
    pub(crate) resource_name: Option<String>,
    pub(crate) algorithms: Vec<Algorithm>,
    pub(crate) leeway: Duration,
    pub(crate) fetch_timeout: Duration,
    pub(crate) max_document_bytes: usize,
    pub(crate) max_keys: usize,
    pub(crate) refresh_interval: Duration,
    pub(crate) max_key_age: Duration,
    pub(crate) introspection: Option<IntrospectionClient>,
}

/// The client credentials the resource server presents to the issuer's introspection endpoint
/// (HTTP Basic), set with [`OAuthConfig::with_introspection`]. The secret never appears in
/// `Debug` output or logs.
#[derive(Clone)]
#[non_exhaustive]
pub struct IntrospectionClient {
    /// The client id.
    pub client_id: String,
    /// The client secret.
    pub client_secret: String,
}

impl std::fmt::Debug for IntrospectionClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionClient")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl OAuthConfig {
    /// A configuration for tokens from `issuer` for the resource `resource`, with defaults.
    pub fn new(issuer: impl Into<String>, resource: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            resource: resource.into(),
            scopes_supported: Vec::new(),
            resource_name: None,
            algorithms: vec![
                Algorithm::RS256,
                Algorithm::RS384,
                Algorithm::RS512,
                Algorithm::PS256,
                Algorithm::PS384,
                Algorithm::PS512,
                Algorithm::ES256,
                Algorithm::ES384,
                Algorithm::EdDSA,
            ],
            leeway: Duration::from_secs(30),
            fetch_timeout: Duration::from_secs(5),
            max_document_bytes: 64 * 1024,
            max_keys: 16,
            refresh_interval: Duration::from_secs(30),
            max_key_age: Duration::from_secs(3600),
            introspection: None,
        }
    }

    /// The authorization server's issuer identifier (`https://…`, no query or fragment),
    /// exactly as its tokens' `iss` and its metadata's `issuer` say.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// This server's canonical resource URI (RFC 8707 / RFC 9728 `resource`), e.g.
    /// `https://mcp.example.com/mcp`: tokens must carry it in `aud`.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Scopes listed as `scopes_supported` in the metadata. Default: none listed.
    pub fn scopes_supported(&self) -> &[String] {
        &self.scopes_supported
    }

    /// Lists `scopes` as `scopes_supported` in the metadata (default: none listed).
    #[must_use]
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// A human-readable name for the metadata's `resource_name`. Default: none.
    pub fn resource_name(&self) -> Option<&str> {
        self.resource_name.as_deref()
    }

    /// Sets [`OAuthConfig::resource_name`] (default: none).
    #[must_use]
    pub fn with_resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// Signature algorithms accepted. Default: RS256, RS384, RS512, PS256, PS384, PS512,
    /// ES256, ES384, EdDSA.
    pub fn algorithms(&self) -> &[Algorithm] {
        &self.algorithms
    }

    /// Sets [`OAuthConfig::algorithms`] (default: every asymmetric algorithm listed there).
    ///
    /// # Errors
    /// [`OAuthError::Algorithms`] for an empty list or one with an HMAC (`HS*`) algorithm,
    /// which would let anyone holding the issuer's public key mint tokens.
    pub fn with_algorithms(
        mut self,
        algorithms: impl IntoIterator<Item = Algorithm>,
    ) -> Result<Self, OAuthError> {
        let algorithms: Vec<Algorithm> = algorithms.into_iter().collect();
        if !asymmetric_only(&algorithms) {
            return Err(OAuthError::Algorithms);
        }
        self.algorithms = algorithms;
        Ok(self)
    }

    /// Clock skew tolerated on `exp` and `nbf`. Default 30 s.
    pub fn leeway(&self) -> Duration {
        self.leeway
    }

    /// Sets [`OAuthConfig::leeway`] (default 30 s; zero tolerates no skew).
    #[must_use]
    pub fn with_leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// Deadline of one metadata or JWKS fetch (connect plus body). Default 5 s.
    pub fn fetch_timeout(&self) -> Duration {
        self.fetch_timeout
    }

    /// Sets [`OAuthConfig::fetch_timeout`] (default 5 s).
    ///
    /// # Errors
    /// [`OAuthError::Zero`] for zero.
    pub fn with_fetch_timeout(mut self, timeout: Duration) -> Result<Self, OAuthError> {
        self.fetch_timeout = oauth_nonzero("fetch_timeout", timeout)?;
        Ok(self)
    }

    /// Largest metadata or JWKS document accepted, in bytes. Default 64 KiB.
    pub fn max_document_bytes(&self) -> usize {
        self.max_document_bytes
    }

    /// Sets [`OAuthConfig::max_document_bytes`] (default 64 KiB).
    ///
    /// # Errors
    /// [`OAuthError::Zero`] for 0.
    pub fn with_max_document_bytes(mut self, bytes: usize) -> Result<Self, OAuthError> {
        self.max_document_bytes = oauth_nonzero("max_document_bytes", bytes)?;
        Ok(self)
    }

    /// Most keys kept from a JWKS (the rest are ignored). Default 16.
    pub fn max_keys(&self) -> usize {
        self.max_keys
    }

    /// Sets [`OAuthConfig::max_keys`] (default 16).
    ///
    /// # Errors
    /// [`OAuthError::Zero`] for 0.
    pub fn with_max_keys(mut self, keys: usize) -> Result<Self, OAuthError> {
        self.max_keys = oauth_nonzero("max_keys", keys)?;
        Ok(self)
    }

    /// Least time between two JWKS fetches triggered by unknown `kid`s. Default 30 s.
    pub fn refresh_interval(&self) -> Duration {
        self.refresh_interval
    }

    /// Sets [`OAuthConfig::refresh_interval`] (default 30 s). Any value works: tests use zero
    /// to rotate keys at will.
    #[must_use]
    pub fn with_refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh_interval = interval;
        self
    }

    /// Keys older than this are refetched before use. Default 1 h.
    pub fn max_key_age(&self) -> Duration {
        self.max_key_age
    }

    /// Sets [`OAuthConfig::max_key_age`] (default 1 h).
    ///
    /// # Errors
    /// [`OAuthError::Zero`] for zero.
    pub fn with_max_key_age(mut self, age: Duration) -> Result<Self, OAuthError> {
        self.max_key_age = oauth_nonzero("max_key_age", age)?;
        Ok(self)
    }

    /// RFC 7662 introspection of opaque (non-JWT) access tokens at the issuer's
    /// `introspection_endpoint`, authenticating as this client. Default `None`: opaque tokens
    /// are refused.
    pub fn introspection(&self) -> Option<&IntrospectionClient> {
        self.introspection.as_ref()
    }

    /// Introspects opaque access tokens at the issuer (RFC 7662), authenticating as this
    /// client (see [`OAuthConfig::introspection`]; default: opaque tokens are refused).
    #[must_use]
    pub fn with_introspection(
        mut self,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        self.introspection = Some(IntrospectionClient {
            client_id: client_id.into(),
            client_secret: client_secret.into(),
        });
        self
    }
}

/// Whether `algorithms` is a non-empty list without HMAC algorithms.
fn asymmetric_only(algorithms: &[Algorithm]) -> bool {
    !algorithms.is_empty()
        && !algorithms
            .iter()
            .any(|a| matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512))
}

/// `value`, or [`OAuthError::Zero`] naming `name` when it is zero.
fn oauth_nonzero<T: Default + PartialEq>(name: &'static str, value: T) -> Result<T, OAuthError> {
    if value == T::default() {
        Err(OAuthError::Zero(name))
    } else {
        Ok(value)
    }
}

/// Why an [`OAuthConfig`] cannot be used, or the issuer's metadata or keys cannot be fetched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// A URL setting is unusable.
    #[error("{what} {url:?} is not usable: {reason}")]
    Url {
        /// Which setting.
        what: &'static str,
        /// Its value.
        url: String,
        /// What is wrong and what to write instead.
        reason: &'static str,
    },
    /// An algorithm on the allow-list is symmetric, or the list is empty.
    #[error(
        "OAuth algorithms must be a non-empty list of asymmetric algorithms (RS*, PS*, ES*, EdDSA); HS* would let anyone holding the issuer's public key mint tokens"
    )]
    Algorithms,
    /// A limit is zero.
    #[error("OAuth limit {0} must be greater than zero")]
    Zero(&'static str),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client for the issuer: {0}")]
    Client(String),
    /// Fetching a document failed.
    #[error("cannot fetch {url}: {reason}")]
    Fetch {
        /// The document.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The issuer's metadata is not usable.
    #[error("the authorization server metadata of {issuer} is not usable: {reason}")]
    Metadata {
        /// The issuer.
        issuer: String,
        /// What is wrong.
        reason: String,
    },
}

/// The principal of the subject `sub` of the issuer `iss`: `"{iss}#{sub}"`. An issuer
/// identifier has no fragment, so the first `#` splits the two unambiguously, and subjects of
/// different issuers never collide.
pub fn principal_for(issuer: &str, subject: &str) -> Principal {
    Principal::new(format!("{issuer}#{subject}"))
}

/// An OAuth 2.1 resource server: verifies access tokens and serves the protected-resource
/// metadata (see the module docs). Cheap to clone; clones share the key cache.
#[derive(Clone)]
pub struct ResourceServer {
    inner: Arc<Inner>,
}

struct Inner {
    config: OAuthConfig,
    /// `resource_metadata="…"`, appended to every challenge.
    challenge: String,
    metadata: metadata::Metadata,
    keys: keys::KeyCache,
}

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServer")
            .field("issuer", &self.inner.config.issuer)
            .field("resource", &self.inner.config.resource)
            .finish_non_exhaustive()
    }
}

impl ResourceServer {
    /// Checks `config` and prepares the verifier. No network I/O: keys are fetched on first
    /// use, or up front with [`ResourceServer::discover`].
    ///
    /// # Errors
    /// [`OAuthError`] naming the unusable setting.
    pub fn new(config: OAuthConfig) -> Result<Self, OAuthError> {
        fetch::check_url("--oauth-issuer (issuer)", &config.issuer, true)?;
        fetch::check_url("--resource (resource URI)", &config.resource, true)?;
        // The setters refuse these already; checked again because the crate's own code (and
        // its tests) may build a config field by field.
        if !asymmetric_only(&config.algorithms) {
            return Err(OAuthError::Algorithms);
        }
        let zero = [
            (config.fetch_timeout.is_zero(), "fetch_timeout"),
            (config.max_document_bytes == 0, "max_document_bytes"),
            (config.max_keys == 0, "max_keys"),
            (config.max_key_age.is_zero(), "max_key_age"),
        ];
        if let Some((_, name)) = zero.iter().find(|(z, _)| *z) {
            return Err(OAuthError::Zero(name));
        }
        let metadata = metadata::Metadata::new(&config)?;
        let challenge = format!("resource_metadata=\"{}\"", metadata.url());
        let keys = keys::KeyCache::new(&config)?;
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                challenge,
                metadata,
                keys,
            }),
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &OAuthConfig {
        &self.inner.config
    }

    /// The URL of this resource's metadata document (what challenges point at).
    pub fn metadata_url(&self) -> &str {
        self.inner.metadata.url()
    }

    /// The router serving the protected-resource metadata (GET, public, CORS-readable) at the
    /// plain and the path-suffixed well-known paths. [`HttpServer::with_oauth`] adds it.
    pub fn metadata_router(&self) -> axum::Router {
        self.inner.metadata.router()
    }

    /// Fetches the issuer's metadata and keys now, so a wrong issuer fails at start-up.
    ///
    /// # Errors
    /// [`OAuthError`] saying what could not be fetched or used.
    pub async fn discover(&self) -> Result<(), OAuthError> {
        self.inner.keys.refresh(None).await.map(|_| ())
    }

    /// Verifies a bearer access token (the `Authorization` value without `Bearer `), fetching
    /// keys if needed.
    ///
    /// # Errors
    /// [`AuthRejection::InvalidToken`] for any token that does not verify.
    pub async fn verify(&self, token: &str) -> Result<Grant, AuthRejection> {
        token::verify(&self.inner.config, &self.inner.keys, token, true).await
    }
}

impl Authenticator for ResourceServer {
    /// Verifies with the keys already cached (no I/O): for callers that cannot wait.
    fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, AuthRejection> {
        let token = bearer(headers)?;
        let verified = token::verify(&self.inner.config, &self.inner.keys, token, false);
        // Without fetching, verification never awaits; poll it once.
        match futures::FutureExt::now_or_never(verified) {
            Some(result) => result.map(|grant| grant.principal),
            None => Err(AuthRejection::InvalidToken),
        }
    }

    fn authenticate_grant<'a>(&'a self, headers: &'a HeaderMap) -> AuthFuture<'a> {
        Box::pin(async move {
            let token = bearer(headers)?;
            self.verify(token).await
        })
    }

    fn challenge_params(&self) -> Option<&str> {
        Some(&self.inner.challenge)
    }

    fn scheme(&self) -> crate::service::AuthScheme {
        crate::service::AuthScheme::OAuth
    }
}

impl HttpServer {
    /// Authenticates with `oauth` and serves its protected-resource metadata beside the MCP
    /// endpoint (feature `oauth`).
    #[must_use]
    pub fn with_oauth(mut self, oauth: &ResourceServer) -> Self {
        self.auth = Arc::new(oauth.clone());
        self.routes = Some(match self.routes.take() {
            Some(routes) => routes.merge(oauth.metadata_router()),
            None => oauth.metadata_router(),
        });
        self
    }
}
