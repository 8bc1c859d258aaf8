//! OAuth 2.1 authorization for [`super::HttpTransport`] (feature `client-oauth`): the client
//! side of MCP authorization.
//!
//! [`OAuthClient`] is handed to [`super::HttpTransport::oauth`]. When the server answers 401 it
//! discovers the protected-resource metadata (RFC 9728: the challenge's `resource_metadata`,
//! else the well-known URLs) and checks that its `resource` is this server, then fetches the
//! authorization server's metadata (RFC 8414 / OpenID Connect Discovery) and checks its
//! `issuer`, identifies the client (pre-registered credentials, a client ID metadata document,
//! or dynamic registration, RFC 7591), and runs the authorization code flow with PKCE S256 and
//! the resource indicator (RFC 8707) through a [`UserAgent`]: the authorization response's
//! `state` and `iss` (RFC 9207) are checked before the code is redeemed. Tokens go to a
//! [`TokenStore`]; an expired one is refreshed when a refresh token is held. A 403
//! `insufficient_scope` triggers a step-up authorization for the union of the scopes asked so
//! far and the challenged ones, at most [`OAuthClientBuilder::max_step_ups`] times per request.
//!
//! Scope selection: the challenge's `scope`, else the resource's `scopes_supported`, else no
//! `scope` parameter; `offline_access` is added when the authorization server lists it (and
//! [`OAuthClientBuilder::offline_access`] is on).
//!
//! Every request to an authorization server has a deadline
//! ([`OAuthClientBuilder::http_timeout`]), every response a size bound, the user-agent step its
//! own deadline; metadata redirects are followed only within their origin. Tokens, codes,
//! verifiers and secrets are never logged and are redacted from `Debug`.
//!
//! Note that the whole authorization, user-agent step included, runs inside the call that met
//! the 401, so that call's deadline ([`super::ClientBuilder::timeout`]) must leave room for it
//! when a person completes the step in a browser.

mod challenge;
mod discovery;
mod error;
mod flow;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use reqwest::Url;

pub(crate) use challenge::Challenge;
pub use error::AuthError;

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenAuthMethod {
    /// HTTP Basic with the client ID and secret (`client_secret_basic`).
    ClientSecretBasic,
    /// The client ID and secret in the form body (`client_secret_post`).
    ClientSecretPost,
    /// A public client: the client ID in the body, no secret (`none`).
    None,
}

impl TokenAuthMethod {
    /// The registered name (`client_secret_basic`, `client_secret_post`, `none`).
    pub fn as_str(self) -> &'static str {
        match self {
            TokenAuthMethod::ClientSecretBasic => "client_secret_basic",
            TokenAuthMethod::ClientSecretPost => "client_secret_post",
            TokenAuthMethod::None => "none",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        match name {
            "client_secret_basic" => Some(TokenAuthMethod::ClientSecretBasic),
            "client_secret_post" => Some(TokenAuthMethod::ClientSecretPost),
            "none" => Some(TokenAuthMethod::None),
            _ => None,
        }
    }
}

/// A client's identity at one authorization server.
#[derive(Clone)]
pub struct ClientCredentials {
    /// The client ID (a URL for a client ID metadata document).
    pub client_id: String,
    /// The client secret, for a confidential client.
    pub client_secret: Option<String>,
    /// The token endpoint authentication method; `None`: chosen from the server's metadata.
    pub auth_method: Option<TokenAuthMethod>,
}

impl ClientCredentials {
    /// A client ID and, for a confidential client, its secret.
    pub fn new(client_id: impl Into<String>, client_secret: Option<String>) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret,
            auth_method: None,
        }
    }
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("auth_method", &self.auth_method)
            .finish()
    }
}

/// Tokens for one MCP server, as a [`TokenStore`] keeps them.
#[derive(Clone)]
pub struct StoredTokens {
    /// The access token.
    pub access_token: String,
    /// The refresh token, when one was issued.
    pub refresh_token: Option<String>,
    /// When the access token expires, when the server said.
    pub expires_at: Option<SystemTime>,
    /// The scopes granted (or requested, when the response did not say), space-separated.
    pub scope: Option<String>,
    /// The issuer that minted them: tokens from another issuer are never sent after the
    /// resource moves to a new authorization server.
    pub issuer: String,
    /// The client ID they were issued to (a refresh uses the same client).
    pub client_id: String,
}

impl std::fmt::Debug for StoredTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredTokens")
            .field("access_token", &"<redacted>")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .finish()
    }
}

/// Where tokens live between requests (and, for a persistent store, between runs), keyed by
/// the MCP server's URL. Implementations must keep them secret; [`MemoryTokenStore`] is the
/// default.
pub trait TokenStore: Send + Sync + 'static {
    /// The tokens held for `server`.
    fn load(&self, server: &str) -> Option<StoredTokens>;
    /// Replaces the tokens held for `server`.
    fn save(&self, server: &str, tokens: StoredTokens);
    /// Forgets the tokens held for `server`.
    fn remove(&self, server: &str);
}

/// A shared store (e.g. to read the tokens a client obtained).
impl<T: TokenStore + ?Sized> TokenStore for Arc<T> {
    fn load(&self, server: &str) -> Option<StoredTokens> {
        (**self).load(server)
    }

    fn save(&self, server: &str, tokens: StoredTokens) {
        (**self).save(server, tokens);
    }

    fn remove(&self, server: &str) {
        (**self).remove(server);
    }
}

/// A [`TokenStore`] in process memory: tokens last as long as the client.
#[derive(Debug, Default)]
pub struct MemoryTokenStore {
    tokens: Mutex<HashMap<String, StoredTokens>>,
}

impl TokenStore for MemoryTokenStore {
    fn load(&self, server: &str) -> Option<StoredTokens> {
        self.tokens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(server)
            .cloned()
    }

    fn save(&self, server: &str, tokens: StoredTokens) {
        self.tokens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(server.to_owned(), tokens);
    }

    fn remove(&self, server: &str) {
        self.tokens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(server);
    }
}

/// The user-agent step of the authorization code flow: take the user to
/// `authorization_url` and return the URL the authorization server redirected back to (the
/// redirect URI with `code`, `state` and perhaps `iss`).
///
/// A desktop application opens a browser and listens on its loopback redirect URI; tests and
/// the conformance suite use [`HeadlessRedirects`]. The client bounds the step with
/// [`OAuthClientBuilder::user_agent_timeout`].
pub trait UserAgent: Send + Sync + 'static {
    /// Runs the step; `redirect_uri` is the registered redirect URI the answer comes back to.
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
        redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, AuthError>>;
}

/// A [`UserAgent`] for servers that authorize without a person (test servers, pre-consented
/// clients): GETs the authorization URL and follows its redirects (keeping the cookies they
/// set), within the authorization endpoint's origin, until one points at the redirect URI. A
/// page that needs a user (a login form) fails the step.
#[derive(Debug, Clone)]
pub struct HeadlessRedirects {
    http: reqwest::Client,
    max_hops: usize,
}

impl HeadlessRedirects {
    /// Follows at most 8 redirects, each request bounded by `timeout`.
    pub fn new(timeout: Duration) -> Result<Self, AuthError> {
        Ok(Self {
            http: http_client(timeout)?,
            max_hops: 8,
        })
    }
}

impl UserAgent for HeadlessRedirects {
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
        redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move {
            let start = discovery::checked_url("authorization_endpoint", authorization_url)?;
            let back = Url::parse(redirect_uri)
                .map_err(|e| AuthError::Config(format!("redirect URI {redirect_uri:?}: {e}")))?;
            let mut current = start.clone();
            // Cookies the server sets along the way (an interaction session), sent back within
            // its origin as a browser would; nothing is kept after the step.
            let mut cookies: Vec<(String, String)> = Vec::new();
            for _ in 0..self.max_hops {
                let mut request = self.http.get(current.clone());
                if !cookies.is_empty() {
                    let header = cookies
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join("; ");
                    request = request.header(reqwest::header::COOKIE, header);
                }
                let response = request
                    .send()
                    .await
                    .map_err(|e| discovery::network(&current, &e))?;
                for set in response.headers().get_all(reqwest::header::SET_COOKIE) {
                    let Some((name, value)) = set
                        .to_str()
                        .ok()
                        .and_then(|v| v.split(';').next())
                        .and_then(|pair| pair.split_once('='))
                    else {
                        continue;
                    };
                    let name = name.trim().to_owned();
                    cookies.retain(|(k, _)| *k != name);
                    if cookies.len() < 32 {
                        cookies.push((name, value.trim().to_owned()));
                    }
                }
                if !response.status().is_redirection() {
                    return Err(AuthError::UserAgent(format!(
                        "the authorization endpoint answered HTTP {} instead of redirecting; it needs a user (use a browser UserAgent)",
                        response.status()
                    )));
                }
                let to = discovery::location(&current, &response)?;
                if to.origin() == back.origin() && to.path() == back.path() {
                    return Ok(to.to_string());
                }
                if to.origin() != start.origin() {
                    let mut from = current.clone();
                    from.set_query(None);
                    let mut shown = to.clone();
                    shown.set_query(None);
                    return Err(AuthError::Redirect {
                        from: from.to_string(),
                        to: shown.to_string(),
                    });
                }
                current = to;
            }
            Err(AuthError::UserAgent(format!(
                "more than {} redirects before reaching the redirect URI",
                self.max_hops
            )))
        })
    }
}

/// The OAuth 2.1 client for one or more MCP servers: cheap to clone (shared state), handed to
/// [`super::HttpTransport::oauth`]. See the [module docs](self).
#[derive(Clone)]
pub struct OAuthClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("redirect_uri", &self.inner.redirect_uri)
            .finish_non_exhaustive()
    }
}

struct Inner {
    fetcher: discovery::Fetcher,
    redirect_uri: String,
    client_name: String,
    pre_registered: Vec<(Option<String>, ClientCredentials)>,
    metadata_document: Option<String>,
    dynamic_registration: bool,
    offline_access: bool,
    initial_scopes: Option<BTreeSet<String>>,
    max_step_ups: u32,
    user_agent: Arc<dyn UserAgent>,
    user_agent_timeout: Duration,
    store: Arc<dyn TokenStore>,
    /// One authorization at a time: requests that meet a 401 together share its result.
    flow: tokio::sync::Mutex<()>,
    state: Mutex<FlowState>,
}

/// What the client learned, per issuer and per server.
#[derive(Default)]
struct FlowState {
    /// Client identities obtained by registration, by issuer (never used at another issuer).
    registered: HashMap<String, ClientCredentials>,
    /// Scopes asked for so far, by server (a step-up asks for their union with the challenge's).
    scopes: HashMap<String, BTreeSet<String>>,
    /// The last metadata seen, by server, for refreshing without rediscovery.
    metadata: HashMap<String, (discovery::ServerMetadata, String)>,
}

impl OAuthClient {
    /// A builder; `redirect_uri` is where the authorization server sends the user back (for a
    /// native application, a loopback `http://127.0.0.1:PORT/callback`).
    pub fn builder(redirect_uri: impl Into<String>) -> OAuthClientBuilder {
        OAuthClientBuilder {
            redirect_uri: redirect_uri.into(),
            client_name: "mcp-runtime client".into(),
            pre_registered: Vec::new(),
            metadata_document: None,
            dynamic_registration: true,
            offline_access: true,
            initial_scopes: None,
            max_step_ups: 2,
            user_agent: None,
            user_agent_timeout: Duration::from_secs(300),
            http_timeout: Duration::from_secs(10),
            max_response_bytes: 256 * 1024,
            store: None,
        }
    }

    /// The access token to send to `server` now: the stored one, refreshed first when it has
    /// expired and a refresh token is held; `None` before the first authorization.
    pub(crate) async fn access_token(&self, server: &str) -> Option<String> {
        let tokens = self.inner.store.load(server)?;
        let expired = tokens
            .expires_at
            .is_some_and(|at| at <= SystemTime::now() + Duration::from_secs(30));
        if !expired {
            return Some(tokens.access_token);
        }
        let _flow = self.inner.flow.lock().await;
        if let Some(fresh) = self.inner.store.load(server)
            && fresh.access_token != tokens.access_token
        {
            return Some(fresh.access_token);
        }
        match self.refresh(server, &tokens).await {
            Some(fresh) => Some(fresh.access_token),
            None => {
                self.inner.store.remove(server);
                None
            }
        }
    }

    /// Reacts to a 401 (`forbidden` false) or a 403 `insufficient_scope` challenge from
    /// `server` to a request sent with `sent` (the token, if any): afterwards the store holds a
    /// token worth retrying with, or an error says why there is none.
    pub(crate) async fn handle_challenge(
        &self,
        server: &str,
        challenge: &Challenge,
        forbidden: bool,
        sent: Option<&str>,
    ) -> Result<(), AuthError> {
        let _flow = self.inner.flow.lock().await;
        let held = self.inner.store.load(server);
        // Another request already replaced the token this one was refused with.
        if !forbidden
            && let Some(held) = &held
            && sent != Some(held.access_token.as_str())
        {
            return Ok(());
        }
        let server_url = Url::parse(server)
            .map_err(|e| AuthError::Config(format!("server URL {server:?}: {e}")))?;
        let resource = self
            .inner
            .fetcher
            .resource_metadata(&server_url, challenge.resource_metadata.as_deref())
            .await?;
        let issuer = resource.authorization_servers[0].clone();
        let metadata = self.inner.fetcher.server_metadata(&issuer).await?;
        self.lock_state().metadata.insert(
            server.to_owned(),
            (metadata.clone(), resource.resource.clone()),
        );
        let same_issuer = held.as_ref().is_some_and(|t| t.issuer == issuer);
        if held.is_some() && !same_issuer {
            // The resource moved to another authorization server: its tokens and the scopes
            // asked of the old one mean nothing there.
            tracing::debug!(server, "authorization server changed; re-authorizing");
            self.inner.store.remove(server);
            self.lock_state().scopes.remove(server);
        }
        if !forbidden
            && same_issuer
            && let Some(held) = &held
            && held.refresh_token.is_some()
            && self.refresh(server, held).await.is_some()
        {
            return Ok(());
        }
        let scope = self.select_scope(server, challenge, &resource, &metadata, forbidden);
        let tokens = self
            .authorize(&metadata, &resource.resource, scope.as_deref())
            .await?;
        self.inner.store.save(server, tokens);
        Ok(())
    }

    /// The most step-up authorizations per request.
    pub(crate) fn max_step_ups(&self) -> u32 {
        self.inner.max_step_ups
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, FlowState> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The `scope` parameter: the challenge's scopes, else the resource's `scopes_supported`,
    /// else none; on re-authorization united with those asked before; `offline_access` added
    /// when the authorization server offers it.
    fn select_scope(
        &self,
        server: &str,
        challenge: &Challenge,
        resource: &discovery::ResourceMetadata,
        metadata: &discovery::ServerMetadata,
        forbidden: bool,
    ) -> Option<String> {
        let mut state = self.lock_state();
        let asked = state.scopes.entry(server.to_owned()).or_default();
        let mut scopes: BTreeSet<String> = match (
            &self.inner.initial_scopes,
            &challenge.scope,
            &resource.scopes_supported,
        ) {
            (Some(initial), _, _) if !forbidden && asked.is_empty() => initial.clone(),
            (_, Some(scope), _) => scope.split_whitespace().map(str::to_owned).collect(),
            (_, None, Some(supported)) => supported.iter().cloned().collect(),
            (_, None, None) => BTreeSet::new(),
        };
        if forbidden || !asked.is_empty() {
            scopes.extend(asked.iter().cloned());
        }
        if self.inner.offline_access
            && metadata
                .scopes_supported
                .as_ref()
                .is_some_and(|s| s.iter().any(|s| s == "offline_access"))
        {
            scopes.insert("offline_access".into());
        }
        asked.extend(scopes.iter().cloned());
        drop(state);
        (!scopes.is_empty()).then(|| scopes.into_iter().collect::<Vec<_>>().join(" "))
    }
}

/// Builds an [`OAuthClient`].
pub struct OAuthClientBuilder {
    redirect_uri: String,
    client_name: String,
    pre_registered: Vec<(Option<String>, ClientCredentials)>,
    metadata_document: Option<String>,
    dynamic_registration: bool,
    offline_access: bool,
    initial_scopes: Option<BTreeSet<String>>,
    max_step_ups: u32,
    user_agent: Option<Arc<dyn UserAgent>>,
    user_agent_timeout: Duration,
    http_timeout: Duration,
    max_response_bytes: usize,
    store: Option<Arc<dyn TokenStore>>,
}

impl std::fmt::Debug for OAuthClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClientBuilder")
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

impl OAuthClientBuilder {
    /// The `client_name` sent in dynamic registration.
    #[must_use]
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// Credentials registered beforehand, used at any authorization server (`issuer: None`)
    /// or only at `issuer`. They take precedence over metadata documents and registration.
    #[must_use]
    pub fn pre_registered(
        mut self,
        issuer: Option<String>,
        credentials: ClientCredentials,
    ) -> Self {
        self.pre_registered.push((issuer, credentials));
        self
    }

    /// The HTTPS URL of this client's ID metadata document, used as its client ID where the
    /// authorization server advertises `client_id_metadata_document_supported`.
    #[must_use]
    pub fn client_metadata_document(mut self, url: impl Into<String>) -> Self {
        self.metadata_document = Some(url.into());
        self
    }

    /// Whether to register dynamically (RFC 7591) when nothing else identifies the client
    /// (default on).
    #[must_use]
    pub fn dynamic_registration(mut self, on: bool) -> Self {
        self.dynamic_registration = on;
        self
    }

    /// Whether to ask for `offline_access` (a refresh token) where the authorization server
    /// lists it in `scopes_supported` (default on).
    #[must_use]
    pub fn offline_access(mut self, on: bool) -> Self {
        self.offline_access = on;
        self
    }

    /// The scopes to ask for on the first authorization, instead of the challenge's or the
    /// resource's `scopes_supported` (least privilege: a later 403 `insufficient_scope` steps
    /// up to more).
    #[must_use]
    pub fn initial_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.initial_scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// The most step-up authorizations for one request answered 403 `insufficient_scope`
    /// (default 2, so at most 3 authorizations per request).
    #[must_use]
    pub fn max_step_ups(mut self, n: u32) -> Self {
        self.max_step_ups = n;
        self
    }

    /// The user-agent step (default: [`HeadlessRedirects`]).
    #[must_use]
    pub fn user_agent(mut self, agent: impl UserAgent) -> Self {
        self.user_agent = Some(Arc::new(agent));
        self
    }

    /// The deadline of the user-agent step (default 5 minutes).
    #[must_use]
    pub fn user_agent_timeout(mut self, timeout: Duration) -> Self {
        self.user_agent_timeout = timeout;
        self
    }

    /// The deadline of each request to an authorization server or metadata URL (default 10 s).
    #[must_use]
    pub fn http_timeout(mut self, timeout: Duration) -> Self {
        self.http_timeout = timeout;
        self
    }

    /// The largest metadata document, registration or token response accepted (default
    /// 256 KiB).
    #[must_use]
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// The token store (default: a [`MemoryTokenStore`]).
    #[must_use]
    pub fn token_store(mut self, store: impl TokenStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// The client; fails on a redirect URI that is not an absolute URL, or when the HTTP
    /// client cannot be set up.
    pub fn build(self) -> Result<OAuthClient, AuthError> {
        Url::parse(&self.redirect_uri)
            .map_err(|e| AuthError::Config(format!("redirect URI {:?}: {e}", self.redirect_uri)))?;
        let user_agent: Arc<dyn UserAgent> = match self.user_agent {
            Some(agent) => agent,
            None => Arc::new(HeadlessRedirects::new(self.http_timeout)?),
        };
        Ok(OAuthClient {
            inner: Arc::new(Inner {
                fetcher: discovery::Fetcher {
                    http: http_client(self.http_timeout)?,
                    max_bytes: self.max_response_bytes,
                },
                redirect_uri: self.redirect_uri,
                client_name: self.client_name,
                pre_registered: self.pre_registered,
                metadata_document: self.metadata_document,
                dynamic_registration: self.dynamic_registration,
                offline_access: self.offline_access,
                initial_scopes: self.initial_scopes,
                max_step_ups: self.max_step_ups,
                user_agent,
                user_agent_timeout: self.user_agent_timeout,
                store: self
                    .store
                    .unwrap_or_else(|| Arc::new(MemoryTokenStore::default())),
                flow: tokio::sync::Mutex::new(()),
                state: Mutex::new(FlowState::default()),
            }),
        })
    }
}

/// An HTTP client that follows no redirect by itself (each is checked), bounds every request
/// and keeps no idle connection (authorization is rare; a pooled connection the server has
/// since closed would fail the next request).
fn http_client(timeout: Duration) -> Result<reqwest::Client, AuthError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .timeout(timeout)
        .connect_timeout(timeout)
        .build()
        .map_err(|e| AuthError::Config(format!("cannot set up the HTTP client: {e}")))
}
