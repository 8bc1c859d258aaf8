//! One-time links for URL-mode elicitation: mint, complete out of band, correlate, re-ask.
//!
//! A URL-mode step sends the user to a page of the server's own (to type a secret, pay,
//! connect an account). [`UrlLinks`] does the bookkeeping every such tool needs, so the tool
//! is its logic plus one call:
//!
//! ```
//! use mcp_runtime::prelude::*;
//! use mcp_runtime::url_elicitation::UrlLinks;
//!
//! /// Connects the user's calendar; the password is typed on our own page.
//! #[tool(requires(url_elicitation))]
//! async fn connect(ctx: &mut RequestContext, State(links): State<UrlLinks>) -> ToolResult<String> {
//!     match ctx.elicit_url("connect", "Sign in to your calendar", &links).await? {
//!         Elicitation::Accepted(_done) => Ok("connected".into()),
//!         Elicitation::Declined | Elicitation::Cancelled => Ok("not connected".into()),
//!     }
//! }
//!
//! let links = UrlLinks::new("/connect").with_base_url("https://mcp.example.com")?;
//! let server = Server::builder(Implementation::new("demo", "1.0"))
//!     .tools(tools![connect])
//!     .state(links.clone())
//!     .build()?;
//! # let _ = server;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! What happens, pass by pass ([`RequestContext::elicit_url`] with `&UrlLinks`):
//!
//! 1. **Mint.** The first pass mints a link `{base}{path}/{token}` (the configured public base
//!    URL, e.g. what `HttpConfig::public_url` says, and the route path
//!    given to [`UrlLinks::new`]) and sends it as a URL-mode input request. The token is 256
//!    random bits: a 128-bit lookup id and a 128-bit secret compared in constant time. Its
//!    record is bound to the principal, to the flow's runtime-minted
//!    [`CorrelationId`] (carried in the signed `requestState`, never in the URL) and to the
//!    input key, and expires after [`UrlLinks::ttl`] (renewed on every pass of the flow, so
//!    set it to the server's state lifetime).
//! 2. **Complete.** The page the link opens authenticates the user (a link is not a
//!    credential) and calls [`UrlLinks::complete`] with the token and the principal it
//!    authenticated: a link completes once, only for its own principal (another principal's
//!    attempt is refused and counted; after [`UrlLinks::max_failures`] failed attempts the
//!    link is locked), and never after it expired. [`UrlLinks::open`] lets the page check the
//!    link before it shows anything, and gives it a per-link anti-forgery token for its form.
//! 3. **Retry.** The client's `accept` only means the user agreed to open the link. On the
//!    retry the runtime looks the flow's link up by (principal, correlation id from the
//!    verified state): completed, the call returns `Accepted(LinkCompletion)`; not yet, the
//!    same link is asked for again with a message saying the step is not finished
//!    ([`UrlLinks::with_not_finished_message`]). `decline` and `cancel` end as usual and
//!    revoke the link. An expired, evicted or locked link ends the call with a tool error
//!    saying to call the tool again.
//!
//! Nothing the client sends is trusted: the principal is the authenticated one, the
//! correlation id comes from the verified state, and the completion is read from the store.
//!
//! # Stores and fleets
//!
//! Links live in a [`LinkStore`]: [`MemoryLinkStore`] by default (one process; at most 1,024 links,
//! 8 per principal), [`backend::sqlite::SqliteLinkStore`](crate::backend::sqlite::SqliteLinkStore)
//! (feature `sqlite`) for the processes of one host,
//! [`backend::postgres::PostgresLinkStore`](crate::backend::postgres::PostgresLinkStore) (feature
//! `postgres`) for a fleet of hosts, or a store of your own (the trait is a keyed table with a
//! compare-and-set update: every decision is made here). [`open_link_store`] takes the replay
//! store's spec, so one setting puts them all in one backend. In a fleet, give every instance the
//! same link store and the same state keys: the instance that serves the page completes the link,
//! and whichever instance gets the retry sees it.

mod memory;
mod open;
mod store;

use std::net::IpAddr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use futures::future::BoxFuture;
use mcp_types::ErrorObject;
use serde_json::Value;
use subtle::ConstantTimeEq;

pub use memory::MemoryLinkStore;
pub use open::open_link_store;
pub use store::{LinkLimits, LinkRecord, LinkStage, LinkStore, LinkStoreError};

use crate::Principal;
use crate::context::{Elicitation, RequestContext};
use crate::handler_error::HandlerError;
use crate::state::{B64, CorrelationId};
use crate::tasks::now_ms;

/// How long a link lives after each pass of its flow unless set: the server's default state
/// lifetime, so a link never dies before the `requestState` that carries it.
pub const DEFAULT_LINK_TTL: Duration = Duration::from_secs(600);

/// Failed attempts on a link's page before it is locked, unless set.
pub const DEFAULT_MAX_FAILURES: u8 = 5;

/// The largest completion data ([`UrlLinks::complete_with`]) kept, in bytes of JSON.
pub const MAX_COMPLETION_DATA: usize = 16 * 1024;

/// The message put in front of the original one when the client accepted a link whose page
/// was not completed yet, unless set.
pub const DEFAULT_NOT_FINISHED: &str =
    "This step is not completed yet: open the link, finish the page, then confirm here.";

/// Writes attempted before a link that keeps changing is reported.
const WRITE_ATTEMPTS: usize = 4;

/// A checked public base URL: `http(s)://HOST[:PORT][/PATH]` without user info, query or
/// fragment, lowercased scheme and host, default port and trailing slash removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl {
    text: String,
    origin: String,
    path: String,
    secure: bool,
    unspecified: bool,
}

/// A public base URL that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "public URL {url:?} {why}; write http(s)://HOST[:PORT][/PATH], e.g. https://mcp.example.com"
)]
pub struct PublicUrlError {
    url: String,
    why: &'static str,
}

impl PublicUrl {
    /// Checks `url` (see [`PublicUrl`]).
    ///
    /// # Errors
    /// [`PublicUrlError`] saying what is wrong and what to write.
    pub fn parse(url: &str) -> Result<Self, PublicUrlError> {
        let bad = |why| PublicUrlError {
            url: url.to_owned(),
            why,
        };
        let trimmed = url.trim().trim_end_matches('/');
        if trimmed.contains(['#', '?']) {
            return Err(bad("must not have a query or fragment"));
        }
        let uri: http::Uri = trimmed.parse().map_err(|_| bad("is not a URL"))?;
        let secure = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("https") => true,
            Some(s) if s.eq_ignore_ascii_case("http") => false,
            _ => return Err(bad("must start with http:// or https://")),
        };
        let authority = uri.authority().ok_or_else(|| bad("has no host"))?;
        if authority.as_str().contains('@') {
            return Err(bad("must not carry user info"));
        }
        let host = authority.host().to_ascii_lowercase();
        if host.is_empty() {
            return Err(bad("has no host"));
        }
        let unspecified = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_unspecified());
        // Browsers leave the default port out of `Origin`.
        let port = match (authority.port_u16(), secure) {
            (Some(443), true) | (Some(80), false) | (None, _) => String::new(),
            (Some(p), _) => format!(":{p}"),
        };
        let scheme = if secure { "https" } else { "http" };
        let origin = format!("{scheme}://{host}{port}");
        let path = uri.path().trim_end_matches('/').to_owned();
        Ok(Self {
            text: format!("{origin}{path}"),
            origin,
            path,
            secure,
            unspecified,
        })
    }

    /// The URL, without a trailing slash.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Its origin (`scheme://host[:port]`, the default port left out), as browsers send it in
    /// `Origin`.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Its path without a trailing slash (`""` at the root).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether it is `https` (cookies for it should be `Secure`).
    pub fn is_secure(&self) -> bool {
        self.secure
    }

    /// Whether its host is an unspecified address (`0.0.0.0`, `[::]`): no browser can open
    /// it, so no link is minted from it.
    pub fn is_unspecified(&self) -> bool {
        self.unspecified
    }
}

impl std::fmt::Display for PublicUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// What the page attached when it completed a link: what the tool gets back as
/// `Elicitation::Accepted(..)` from [`RequestContext::elicit_url`] with [`UrlLinks`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LinkCompletion {
    /// The data given to [`UrlLinks::complete_with`] (`None` for [`UrlLinks::complete`]).
    pub data: Option<Value>,
    /// When the page was completed.
    pub completed_at: SystemTime,
}

impl LinkCompletion {
    /// The data read as `T`, if there is data and it has `T`'s shape.
    pub fn data_as<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        self.data.as_ref().and_then(|d| T::deserialize(d).ok())
    }

    fn of(link: &LinkRecord) -> Option<Self> {
        (link.stage == LinkStage::Completed).then(|| Self {
            data: link.data.clone(),
            completed_at: UNIX_EPOCH
                + Duration::from_millis(link.completed_ms.unwrap_or(link.created_ms)),
        })
    }
}

/// A live, not yet completed link, as its page sees it ([`UrlLinks::open`]).
#[derive(Clone)]
pub struct OpenLink {
    principal: Principal,
    key: String,
    csrf: String,
    expires_ms: u64,
}

impl std::fmt::Debug for OpenLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenLink")
            .field("principal", &self.principal)
            .field("key", &self.key)
            .field("expires_ms", &self.expires_ms)
            .finish_non_exhaustive()
    }
}

impl OpenLink {
    /// The principal that started the flow: the page must authenticate the same one.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// The input key the link was sent under.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The link's anti-forgery token (url-safe base64, nothing to escape): put it in the
    /// page's form and in an `HttpOnly; SameSite=Strict` cookie, and check what comes back
    /// with [`OpenLink::csrf_matches`].
    pub fn csrf(&self) -> &str {
        &self.csrf
    }

    /// Whether `candidate` is this link's anti-forgery token (compared in constant time).
    pub fn csrf_matches(&self, candidate: &str) -> bool {
        ct_eq(candidate, &self.csrf)
    }

    /// How long the link stays usable (at least 1 second is reported while it is live).
    pub fn expires_in(&self) -> Duration {
        Duration::from_millis(self.expires_ms.saturating_sub(now_ms())).max(Duration::from_secs(1))
    }
}

/// Where a flow's link stands ([`UrlLinks::status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkStatus {
    /// No live link (never minted, expired, revoked, or evicted by a limit).
    Missing,
    /// Minted, its page not completed yet.
    Open,
    /// Its page was completed.
    Completed,
    /// Locked after too many failed attempts on its page; nothing was completed.
    Locked,
}

/// Why a page's use of a link was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinkRefusal {
    /// No such link: malformed, unknown, already completed, locked or expired. Say only
    /// that (never which), e.g. 404 "This link is unknown, used or expired."
    #[error("this link is unknown, used or expired")]
    Unknown,
    /// The link belongs to another principal than the one the page authenticated. The
    /// attempt was counted and nothing was completed.
    #[error("this link belongs to another user; nothing was completed")]
    OtherPrincipal,
    /// The completion data is larger than [`MAX_COMPLETION_DATA`]; keep it small (an id, a
    /// status), and keep secrets in your own storage, never in the completion.
    #[error(
        "the completion data is {size} bytes, over the {limit}-byte limit; attach an id, not the content"
    )]
    TooLarge {
        /// Its size in bytes of JSON.
        size: usize,
        /// [`MAX_COMPLETION_DATA`].
        limit: usize,
    },
    /// The link store failed; nothing was decided (the page may ask the user to retry).
    #[error(transparent)]
    Store(#[from] LinkStoreError),
}

/// One-time URL-mode links: where they point, how long they live, and the store that holds
/// them (see [the module docs](self)). Register it with `ServerBuilder::state` and pass it to
/// [`RequestContext::elicit_url`]; the page it links to calls [`UrlLinks::complete`].
///
/// Cheap to clone; clones share the settings and the store.
#[derive(Clone)]
pub struct UrlLinks {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn LinkStore>,
    path: String,
    settings: RwLock<Settings>,
}

#[derive(Clone)]
struct Settings {
    base: Option<PublicUrl>,
    ttl: Duration,
    max_failures: u8,
    not_finished: String,
    setup_hint: String,
}

impl std::fmt::Debug for UrlLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let settings = self.settings();
        f.debug_struct("UrlLinks")
            .field("store", &self.inner.store.name())
            .field("path", &self.inner.path)
            .field("base", &settings.base.as_ref().map(PublicUrl::as_str))
            .field("ttl", &settings.ttl)
            .finish_non_exhaustive()
    }
}

impl UrlLinks {
    /// Links under the route path `path` (e.g. `/connect`: links read
    /// `{base}/connect/{token}`), in a [`MemoryLinkStore`], with no public base URL yet (set
    /// one with [`with_base_url`](Self::with_base_url) or, once the server knows its address,
    /// [`set_base_url`](Self::set_base_url); until then the tool answers that the page has no
    /// address). `path` is trimmed of slashes at both ends and gets one leading slash.
    pub fn new(path: &str) -> Self {
        Self::with_store(path, Arc::new(MemoryLinkStore::new()))
    }

    /// Like [`UrlLinks::new`], with links in `store` (share one store across a fleet).
    pub fn with_store(path: &str, store: Arc<dyn LinkStore>) -> Self {
        let trimmed = path.trim().trim_matches('/');
        let path = if trimmed.is_empty() {
            String::new()
        } else {
            format!("/{trimmed}")
        };
        Self {
            inner: Arc::new(Inner {
                store,
                path,
                settings: RwLock::new(Settings {
                    base: None,
                    ttl: DEFAULT_LINK_TTL,
                    max_failures: DEFAULT_MAX_FAILURES,
                    not_finished: DEFAULT_NOT_FINISHED.to_owned(),
                    setup_hint: "the server's operator must configure the public base URL browsers reach it at (UrlLinks::set_base_url)".to_owned(),
                }),
            }),
        }
    }

    fn settings(&self) -> Settings {
        self.inner
            .settings
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn change(&self, f: impl FnOnce(&mut Settings)) {
        f(&mut self
            .inner
            .settings
            .write()
            .unwrap_or_else(|e| e.into_inner()));
    }

    /// The same links with the public base URL `url` (see [`set_base_url`](Self::set_base_url)).
    ///
    /// # Errors
    /// [`PublicUrlError`] when `url` is not `http(s)://HOST[:PORT][/PATH]`.
    pub fn with_base_url(self, url: &str) -> Result<Self, PublicUrlError> {
        self.set_base_url(url)?;
        Ok(self)
    }

    /// Sets the public base URL links start with: the address browsers reach the page at
    /// (`https://mcp.example.com`, or the bound `http://127.0.0.1:8080`), never a private
    /// or unspecified bind address. A base on an unspecified address (`0.0.0.0`, `[::]`) is
    /// kept but mints no link: the tool then says the operator must set a public URL. Links
    /// already sent keep working only if their URL stays the same, so set it before serving.
    ///
    /// # Errors
    /// [`PublicUrlError`] when `url` is not `http(s)://HOST[:PORT][/PATH]`.
    pub fn set_base_url(&self, url: &str) -> Result<(), PublicUrlError> {
        let base = PublicUrl::parse(url)?;
        self.change(|s| s.base = Some(base));
        Ok(())
    }

    /// The public base URL, if one is set.
    pub fn base_url(&self) -> Option<PublicUrl> {
        self.settings().base
    }

    /// The same links living `ttl` after each pass of their flow (see [`set_ttl`](Self::set_ttl)).
    #[must_use]
    pub fn with_ttl(self, ttl: Duration) -> Self {
        self.set_ttl(ttl);
        self
    }

    /// Sets how long a link lives after each pass of its flow (default
    /// [`DEFAULT_LINK_TTL`], at least 1 second): give it the server's state lifetime
    /// (`ServerBuilder::state_ttl`), so a link never dies before the `requestState` that
    /// carries it.
    pub fn set_ttl(&self, ttl: Duration) {
        self.change(|s| s.ttl = ttl.max(Duration::from_secs(1)));
    }

    /// How long a link lives after each pass of its flow.
    pub fn ttl(&self) -> Duration {
        self.settings().ttl
    }

    /// The same links locked after `failures` failed attempts on their page (default
    /// [`DEFAULT_MAX_FAILURES`], at least 1).
    #[must_use]
    pub fn with_max_failures(self, failures: u8) -> Self {
        self.change(|s| s.max_failures = failures.max(1));
        self
    }

    /// Failed attempts a link tolerates before it is locked.
    pub fn max_failures(&self) -> u8 {
        self.settings().max_failures
    }

    /// The same links with `notice` put in front of the tool's message when the client
    /// accepts a link whose page is not completed yet (default [`DEFAULT_NOT_FINISHED`]).
    #[must_use]
    pub fn with_not_finished_message(self, notice: impl Into<String>) -> Self {
        let notice = notice.into();
        self.change(|s| s.not_finished = notice);
        self
    }

    /// The same links with `hint` in the tool error a call gets when no link can be minted
    /// for want of a public address: what the operator must do (e.g. "restart it with
    /// --public-url https://HOST").
    #[must_use]
    pub fn with_setup_hint(self, hint: impl Into<String>) -> Self {
        let hint = hint.into();
        self.change(|s| s.setup_hint = hint);
        self
    }

    /// The route path links live under (`/connect`), without a trailing slash.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// The route pattern of the page in axum's syntax: `{path}/{token}` (e.g.
    /// `/connect/{token}`; the `token` path parameter is what [`UrlLinks::open`] and
    /// [`UrlLinks::complete`] take).
    pub fn route(&self) -> String {
        format!("{}/{{token}}", self.inner.path)
    }

    /// The path of the page of `token` below the base URL's own path: what a cookie scoped
    /// to one link names (`{base path}{path}/{token}`).
    pub fn page_path(&self, token: &str) -> String {
        let base = self.settings().base;
        format!(
            "{}{}/{token}",
            base.as_ref().map_or("", PublicUrl::path),
            self.inner.path
        )
    }

    /// The store's name (`memory`, `sqlite`, ...).
    pub fn store_name(&self) -> &'static str {
        self.inner.store.name()
    }

    /// How many unexpired links the store holds.
    ///
    /// # Errors
    /// The store's failure.
    pub async fn count(&self) -> Result<usize, LinkStoreError> {
        self.inner.store.count(now_ms()).await
    }

    /// Where the link of the flow (`principal`, `correlation`) stands.
    ///
    /// # Errors
    /// The store's failure.
    pub async fn status(
        &self,
        principal: &Principal,
        correlation: CorrelationId,
    ) -> Result<LinkStatus, LinkStoreError> {
        let found = self
            .inner
            .store
            .find_flow(principal.as_str(), &correlation, now_ms())
            .await?;
        Ok(match found.map(|l| l.stage) {
            None => LinkStatus::Missing,
            Some(LinkStage::Open) => LinkStatus::Open,
            Some(LinkStage::Completed) => LinkStatus::Completed,
            Some(LinkStage::Locked) => LinkStatus::Locked,
        })
    }

    /// The live, not yet completed link `token` (the last path segment of its URL), for the
    /// page to show its form: who must complete it, and its anti-forgery token.
    ///
    /// # Errors
    /// [`LinkRefusal::Unknown`] for a malformed, unknown, used, locked or expired token (a
    /// token with the right id but a wrong secret also counts as a failed attempt);
    /// [`LinkRefusal::Store`].
    pub async fn open(&self, token: &str) -> Result<OpenLink, LinkRefusal> {
        let link = self.live(token).await?;
        Ok(OpenLink {
            principal: Principal::new(link.principal.clone()),
            key: link.key,
            csrf: link.csrf,
            expires_ms: link.expires_ms,
        })
    }

    /// Completes the link `token` for `principal`, the user the page authenticated (a link
    /// is not a credential: authenticate whoever opened it). Once only, before it expires,
    /// and only for the principal that started the flow; the waiting call then proceeds on
    /// its next retry.
    ///
    /// # Errors
    /// [`LinkRefusal::Unknown`] (malformed, unknown, used, locked or expired),
    /// [`LinkRefusal::OtherPrincipal`] (counted as a failed attempt), [`LinkRefusal::Store`].
    pub async fn complete(
        &self,
        token: &str,
        principal: &Principal,
    ) -> Result<LinkCompletion, LinkRefusal> {
        self.finish(token, principal, None).await
    }

    /// Like [`UrlLinks::complete`], attaching `data` for the tool to read
    /// ([`LinkCompletion::data`]): an account id, a status; at most [`MAX_COMPLETION_DATA`]
    /// bytes of JSON. The client never sees it, but keep secrets in your own storage.
    ///
    /// # Errors
    /// As [`UrlLinks::complete`], and [`LinkRefusal::TooLarge`].
    pub async fn complete_with(
        &self,
        token: &str,
        principal: &Principal,
        data: Value,
    ) -> Result<LinkCompletion, LinkRefusal> {
        let size = serde_json::to_vec(&data).map_or(usize::MAX, |v| v.len());
        if size > MAX_COMPLETION_DATA {
            return Err(LinkRefusal::TooLarge {
                size,
                limit: MAX_COMPLETION_DATA,
            });
        }
        self.finish(token, principal, Some(data)).await
    }

    /// Counts a failed attempt on the page of `token` (e.g. the user's credentials did not
    /// verify); at [`UrlLinks::max_failures`] the link is locked and its flow ends with a
    /// tool error.
    ///
    /// # Errors
    /// [`LinkRefusal::Unknown`] when there is no live link `token`; [`LinkRefusal::Store`].
    pub async fn record_failure(&self, token: &str) -> Result<(), LinkRefusal> {
        let link = self.live(token).await?;
        self.count_failure(link).await
    }

    /// The live, open link of `token`, its secret checked in constant time.
    async fn live(&self, token: &str) -> Result<LinkRecord, LinkRefusal> {
        let (id, secret) = split_token(token).ok_or(LinkRefusal::Unknown)?;
        let link = self
            .inner
            .store
            .get(&id, now_ms())
            .await?
            .ok_or(LinkRefusal::Unknown)?;
        if !ct_eq(&secret, &link.secret) {
            // The id is right but not the secret: someone holds half a link. Count it.
            if link.stage == LinkStage::Open {
                self.count_failure(link).await?;
            }
            return Err(LinkRefusal::Unknown);
        }
        if link.stage != LinkStage::Open {
            return Err(LinkRefusal::Unknown);
        }
        Ok(link)
    }

    async fn count_failure(&self, mut link: LinkRecord) -> Result<(), LinkRefusal> {
        let max = self.max_failures();
        for _ in 0..WRITE_ATTEMPTS {
            let mut next = link.clone().next_revision();
            next.failures = next.failures.saturating_add(1);
            if next.failures >= max {
                next.stage = LinkStage::Locked;
            }
            if self.inner.store.update(next).await? {
                return Ok(());
            }
            match self.inner.store.get(&link.id, now_ms()).await? {
                Some(current) if current.stage == LinkStage::Open => link = current,
                _ => return Err(LinkRefusal::Unknown),
            }
        }
        Err(LinkRefusal::Store(LinkStoreError::Backend(
            "the link kept changing while a failed attempt was counted; try again".into(),
        )))
    }

    async fn finish(
        &self,
        token: &str,
        principal: &Principal,
        data: Option<Value>,
    ) -> Result<LinkCompletion, LinkRefusal> {
        let mut link = self.live(token).await?;
        for _ in 0..WRITE_ATTEMPTS {
            if link.principal != principal.as_str() {
                self.count_failure(link).await?;
                return Err(LinkRefusal::OtherPrincipal);
            }
            let mut next = link.clone().next_revision();
            next.stage = LinkStage::Completed;
            next.data = data.clone();
            next.completed_ms = Some(now_ms());
            if self.inner.store.update(next.clone()).await? {
                return LinkCompletion::of(&next).ok_or(LinkRefusal::Unknown);
            }
            link = self.live(token).await?;
        }
        Err(LinkRefusal::Store(LinkStoreError::Backend(
            "the link kept changing while it was completed; try again".into(),
        )))
    }

    /// The flow's link for this pass, renewed for [`UrlLinks::ttl`]: the one the store holds,
    /// or (when `may_mint`, the key not asked before in this flow) a new one.
    pub(crate) async fn link_for_pass(
        &self,
        principal: &Principal,
        correlation: CorrelationId,
        key: &str,
        may_mint: bool,
    ) -> Result<LinkRecord, HandlerError> {
        let settings = self.settings();
        let now = now_ms();
        let expires =
            now.saturating_add(u64::try_from(settings.ttl.as_millis()).unwrap_or(u64::MAX));
        let store = &self.inner.store;
        let mut found = store
            .find_flow(principal.as_str(), &correlation, now)
            .await
            .map_err(store_failed)?;
        if found.is_none() {
            if !may_mint {
                return Err(HandlerError::tool(
                    "The link for this step expired, was declined or was replaced by newer ones; nothing was completed. Call the tool again (without requestState) for a new link.",
                ));
            }
            self.base(&settings)?;
            let (id, secret) = random_pair()?;
            let (csrf, _) = random_pair()?;
            let link = LinkRecord {
                id,
                secret,
                csrf,
                principal: principal.as_str().to_owned(),
                correlation,
                key: key.to_owned(),
                created_ms: now,
                expires_ms: expires,
                stage: LinkStage::Open,
                failures: 0,
                data: None,
                completed_ms: None,
                revision: 0,
            };
            return store.insert(link, now).await.map_err(store_failed);
        }
        // Renew it, so it lives as long as the state of this pass.
        for _ in 0..WRITE_ATTEMPTS {
            let Some(link) = found else { break };
            if link.expires_ms >= expires {
                return Ok(link);
            }
            let mut next = link.clone().next_revision();
            next.expires_ms = expires;
            if store.update(next.clone()).await.map_err(store_failed)? {
                return Ok(next);
            }
            found = store
                .find_flow(principal.as_str(), &correlation, now)
                .await
                .map_err(store_failed)?;
        }
        Err(HandlerError::tool(
            "The link for this step changed while this call used it, or expired; call the tool again (without requestState) for a new link.",
        ))
    }

    /// The usable base URL, or the tool error saying why there is none.
    fn base(&self, settings: &Settings) -> Result<String, HandlerError> {
        match &settings.base {
            None => Err(HandlerError::tool(format!(
                "the page for this step has no address: no public base URL is set ({})",
                settings.setup_hint
            ))),
            Some(base) if base.unspecified => Err(HandlerError::tool(format!(
                "the page for this step has no public address: this server listens on {} (all addresses), which no browser can open ({})",
                base.text, settings.setup_hint
            ))),
            Some(base) => Ok(base.text.clone()),
        }
    }

    /// The URL of `link`.
    pub(crate) fn url_of(&self, link: &LinkRecord) -> Result<String, HandlerError> {
        let base = self.base(&self.settings())?;
        Ok(format!(
            "{base}{}/{}{}",
            self.inner.path, link.id, link.secret
        ))
    }

    /// The message of a re-ask after an early `accept`.
    pub(crate) fn not_finished(&self, message: &str) -> String {
        format!("{}\n\n{message}", self.settings().not_finished)
    }

    /// Deletes `link` (declined or cancelled); a failure is logged, the answer stands.
    pub(crate) async fn revoke(&self, link: &LinkRecord) {
        if let Err(e) = self.inner.store.remove(&link.id).await {
            tracing::warn!(error = %e, store = self.inner.store.name(), "revoking a URL-mode link failed");
        }
    }
}

/// What [`RequestContext::elicit_url`] sends the user to: a URL (`String`, `&str`, ...), or
/// [`UrlLinks`] (by reference or by value) to mint a one-time link and wait for its page.
///
/// Sealed: implemented for every `Into<String>` (the answer is `Elicitation<()>`, consent
/// only) and for [`UrlLinks`] (the answer is `Elicitation<LinkCompletion>`, the page was
/// completed).
pub trait UrlTarget: sealed::Sealed + Send {
    /// What `Accepted` carries.
    type Done: Send;

    /// Asks under `key` (crate-internal: the runtime's side of [`RequestContext::elicit_url`]).
    #[doc(hidden)]
    fn ask<'c>(
        self,
        ctx: &'c mut RequestContext,
        key: &'c str,
        message: String,
    ) -> BoxFuture<'c, Result<Elicitation<Self::Done>, HandlerError>>
    where
        Self: 'c;
}

mod sealed {
    pub trait Sealed {}
    impl<T: Into<String>> Sealed for T {}
    impl Sealed for super::UrlLinks {}
    impl Sealed for &super::UrlLinks {}
}

impl<T: Into<String> + Send> UrlTarget for T {
    type Done = ();

    fn ask<'c>(
        self,
        ctx: &'c mut RequestContext,
        key: &'c str,
        message: String,
    ) -> BoxFuture<'c, Result<Elicitation<()>, HandlerError>>
    where
        Self: 'c,
    {
        let url = self.into();
        Box::pin(ctx.elicit_plain_url(key, message, url))
    }
}

impl UrlTarget for UrlLinks {
    type Done = LinkCompletion;

    fn ask<'c>(
        self,
        ctx: &'c mut RequestContext,
        key: &'c str,
        message: String,
    ) -> BoxFuture<'c, Result<Elicitation<LinkCompletion>, HandlerError>>
    where
        Self: 'c,
    {
        Box::pin(ctx.elicit_link(self, key, message))
    }
}

impl UrlTarget for &UrlLinks {
    type Done = LinkCompletion;

    fn ask<'c>(
        self,
        ctx: &'c mut RequestContext,
        key: &'c str,
        message: String,
    ) -> BoxFuture<'c, Result<Elicitation<LinkCompletion>, HandlerError>>
    where
        Self: 'c,
    {
        Box::pin(ctx.elicit_link(self.clone(), key, message))
    }
}

/// The tool-facing completion of a link record (`None` while it is open).
pub(crate) fn completion_of(link: &LinkRecord) -> Option<LinkCompletion> {
    LinkCompletion::of(link)
}

fn store_failed(e: LinkStoreError) -> HandlerError {
    HandlerError::protocol(ErrorObject::internal_error(format!(
        "the URL-mode link store failed ({e}); nothing was decided, send the same request again"
    )))
}

/// Two fresh 128-bit random values as unpadded url-safe base64 (22 chars each), straight
/// from the OS source (they are secrets, not just unique).
fn random_pair() -> Result<(String, String), HandlerError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| {
        HandlerError::protocol(ErrorObject::internal_error(format!(
            "cannot mint a link: the OS random source failed ({e})"
        )))
    })?;
    Ok((B64.encode(&bytes[..16]), B64.encode(&bytes[16..])))
}

/// A token's id and secret halves (22 chars each), or `None` when it is not a token.
fn split_token(token: &str) -> Option<(String, String)> {
    let token = token.trim();
    if token.len() != 44
        || !token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return None;
    }
    let (id, secret) = token.split_at(22);
    // Strict: each half decodes to exactly 16 bytes (no stray bits).
    let ok = |half: &str| B64.decode(half).is_ok_and(|b| b.len() == 16);
    (ok(id) && ok(secret)).then(|| (id.to_owned(), secret.to_owned()))
}

/// Constant-time equality of two strings (their lengths are not secret).
fn ct_eq(a: &str, b: &str) -> bool {
    #[cfg(test)]
    tests::CT_COMPARISONS.with(|n| n.set(n.get() + 1));
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

#[cfg(test)]
mod tests;
