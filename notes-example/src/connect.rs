//! `notes_connect_export`: a real out-of-band step through URL-mode elicitation.
//!
//! The tool sends the user to a small page served by the same HTTP server, where they enter
//! a third-party export token. The token is stored server-side, per principal; it never
//! appears in `inputResponses`, results, logs or URLs.
//!
//! # Threat model and design
//!
//! - **The link is not a credential.** The URL carries only an opaque random link id. Its
//!   server-side record binds it to the principal that started the flow and to the
//!   runtime-minted correlation id kept in the signed `requestState`. The correlation id is
//!   never in the URL (the runtime refuses URLs that contain it).
//! - **The browser user must prove they are the same principal.** Knowing the link is not
//!   enough: the page's form asks for the user's MCP bearer token, checks it with the server's
//!   own [`Authenticator`], and refuses (403, link left unused) when it names another
//!   principal. This defeats a phishing swap where an attacker sends a victim their own link so
//!   the victim's secret lands in the attacker's account, and a leaked link used by someone
//!   else. (With `AllowAnonymous` on loopback there is only one principal anyway, which is why
//!   the cross-site defences below matter most there.) After [`MAX_FAILED_ATTEMPTS`] wrong
//!   tokens the link is locked.
//! - **Only the page itself can submit the form.** A `POST` whose `Origin` is neither the
//!   page's own origin nor allowed by the server's [`OriginAllowlist`] gets 403. The form
//!   carries a per-link random CSRF token, also set as an `HttpOnly; SameSite=Strict` cookie
//!   scoped to the link's path: both must match the link's record (constant-time compare), so a
//!   cross-site form post (which gets neither) is refused even from an allowed origin.
//! - **Nothing is read before the request is vetted.** Origin, link id and CSRF cookie are
//!   all in the headers and URL: an unknown, expired or used link, a foreign origin or a
//!   missing cookie is answered before a byte of the body is read. The form body is then
//!   capped at [`MAX_FORM_BYTES`] (checked against `Content-Length` first) and must arrive
//!   within [`DEFAULT_BODY_DEADLINE`].
//! - **One-time, short-lived, bounded.** A link completes once and expires with the
//!   `requestState` that carries it (each pass of the flow renews it by the state TTL). Expired
//!   links are purged whenever a link is minted, and at most [`MAX_LINKS_PER_PRINCIPAL`] per
//!   principal and [`MAX_LINKS`] in all are kept: past either cap the link closest to expiry
//!   goes first. Completion is recorded under (principal, correlation id) so only *that* flow
//!   completes.
//! - **The link names a reachable address.** It is built from the public base URL
//!   (`serve --public-url`), else from the bound address; a server listening on an
//!   unspecified address (`0.0.0.0`, `::`) without a public URL refuses to mint links.
//! - **"accept" is consent only.** On the retry the tool checks the completion record; if the
//!   page was not finished it asks again ([`RequestContext::elicit_url_again`]).
//! - The pages are not cacheable, not frameable, run no script, and leak no referrer
//!   cross-origin.
//! - Secrets are held in [`ExportToken`], whose `Debug` is redacted.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue, Uri, header};
use mcp_runtime::prelude::*;
use mcp_runtime::state::CorrelationId;
use mcp_runtime::transport::{Authenticator, OriginAllowlist};
use subtle::ConstantTimeEq;

mod page;

pub use page::routes;

/// The elicitation key of the connect step.
pub const CONNECT_KEY: &str = "connect_export";

/// How long a link stays usable after the last pass of its flow when no state lifetime was
/// set with [`ExportConnect::set_link_ttl`] (the server's default state lifetime).
pub const DEFAULT_LINK_TTL: Duration = Duration::from_secs(300);

/// Live links kept for one principal; minting one more drops that principal's link closest
/// to expiry.
pub const MAX_LINKS_PER_PRINCIPAL: usize = 8;

/// Live links kept in all; minting one more drops the link closest to expiry.
pub const MAX_LINKS: usize = 1024;

/// Largest accepted form body (two tokens and a CSRF token need far less).
pub const MAX_FORM_BYTES: usize = 8 * 1024;

/// How long the form body may take to arrive, by default.
pub const DEFAULT_BODY_DEADLINE: Duration = Duration::from_secs(10);

/// Wrong MCP tokens a link tolerates before it is locked.
pub const MAX_FAILED_ATTEMPTS: u8 = 5;

/// The CSRF cookie's name (scoped to the link's own path).
pub const CSRF_COOKIE: &str = "notes_connect_csrf";

/// A third-party token; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct ExportToken(String);

impl ExportToken {
    /// The secret value, for the code that talks to the third party.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ExportToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExportToken(<redacted>)")
    }
}

type Flow = (String, CorrelationId);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Open,
    Completed,
    Locked,
}

struct Link {
    flow: Flow,
    csrf: String,
    expires: Instant,
    /// Mint order, to break ties between equal expiries.
    seq: u64,
    stage: Stage,
    failures: u8,
}

impl Link {
    fn usable(&self, now: Instant) -> bool {
        self.stage == Stage::Open && now < self.expires
    }
}

/// A checked public base URL.
#[derive(Debug, Clone)]
struct BaseUrl {
    /// Without a trailing slash.
    text: String,
    /// The path part, without a trailing slash (`""` at the root).
    path: String,
    /// Matches exactly the base URL's own origin.
    own_origin: OriginAllowlist,
    secure: bool,
    unspecified: bool,
}

/// Checks a public base URL (`http(s)://HOST[:PORT][/PATH]`, no user info, query or fragment)
/// and returns it without a trailing slash.
///
/// # Errors
/// A one-line message naming what is wrong.
pub fn check_public_url(url: &str) -> Result<String, String> {
    parse_base(url).map(|b| b.text)
}

fn parse_base(url: &str) -> Result<BaseUrl, String> {
    let bad = |why: &str| {
        format!(
            "public URL {url:?} {why}; write http(s)://HOST[:PORT][/PATH], e.g. https://notes.example.com"
        )
    };
    let trimmed = url.trim().trim_end_matches('/');
    if trimmed.contains(['#', '?']) {
        return Err(bad("must not have a query or fragment"));
    }
    let uri: Uri = trimmed.parse().map_err(|_| bad("is not a URL"))?;
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
    let own_origin = OriginAllowlist::parse([origin.as_str()]).map_err(|e| bad(&e.to_string()))?;
    let path = uri.path().trim_end_matches('/').to_owned();
    Ok(BaseUrl {
        text: format!("{scheme}://{host}{port}{path}"),
        path,
        own_origin,
        secure,
        unspecified,
    })
}

struct Inner {
    base: Option<BaseUrl>,
    ttl: Duration,
    body_deadline: Duration,
    links: HashMap<String, Link>,
    by_flow: HashMap<Flow, String>,
    tokens: HashMap<String, ExportToken>,
    minted: u64,
}

impl Default for Inner {
    fn default() -> Self {
        Self {
            base: None,
            ttl: DEFAULT_LINK_TTL,
            body_deadline: DEFAULT_BODY_DEADLINE,
            links: HashMap::new(),
            by_flow: HashMap::new(),
            tokens: HashMap::new(),
            minted: 0,
        }
    }
}

impl Inner {
    fn remove(&mut self, id: &str) {
        if let Some(link) = self.links.remove(id) {
            self.by_flow.remove(&link.flow);
        }
    }

    fn purge(&mut self, now: Instant) {
        let expired: Vec<String> = self
            .links
            .iter()
            .filter(|(_, l)| now >= l.expires)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            self.remove(&id);
        }
    }

    /// The link closest to expiry among those `pick` selects (oldest mint on ties).
    fn first_to_expire(&self, pick: impl Fn(&Link) -> bool) -> Option<String> {
        self.links
            .iter()
            .filter(|(_, l)| pick(l))
            .min_by_key(|(_, l)| (l.expires, l.seq))
            .map(|(id, _)| id.clone())
    }
}

/// Server-side state of the connect flow (links, completions, stored tokens).
#[derive(Clone, Default)]
pub struct ExportConnect(Arc<Mutex<Inner>>);

impl std::fmt::Debug for ExportConnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExportConnect")
    }
}

/// Why the page refused a submission.
#[derive(Debug, PartialEq, Eq)]
pub enum ConnectRefusal {
    /// No such link, already used, locked or expired.
    UnknownLink,
    /// The CSRF cookie or form field is missing or does not match the link.
    BadCsrf,
    /// The MCP token is missing or invalid.
    NotAuthenticated,
    /// The MCP token names a different principal than the one who started the flow.
    OtherPrincipal,
    /// The export token field is empty.
    EmptyToken,
}

/// Where a flow's link stands, as the tool sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkStatus {
    /// No live link (never minted, expired, or dropped by a cap).
    Missing,
    /// Minted, not completed yet.
    Open,
    /// The page was completed for this flow.
    Completed,
    /// Locked after too many wrong MCP tokens; nothing was stored.
    Locked,
}

fn random_token() -> Result<String, HandlerError> {
    CorrelationId::random()
        .map(|id| id.to_string())
        .map_err(|e| HandlerError::tool(format!("cannot create a link: {e}")))
}

fn ct_eq(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

impl ExportConnect {
    /// Sets the base URL links start with (e.g. `https://notes.example.com` or the bound
    /// `http://127.0.0.1:8080`). A base on an unspecified address (`0.0.0.0`, `[::]`) is kept
    /// but mints no link: the tool then tells the operator to set a public URL.
    ///
    /// # Errors
    /// A one-line message when `base_url` is not `http(s)://HOST[:PORT][/PATH]`.
    pub fn set_base_url(&self, base_url: &str) -> Result<(), String> {
        let base = parse_base(base_url)?;
        self.lock().base = Some(base);
        Ok(())
    }

    /// Sets how long a link lives after each pass of its flow: the server's state lifetime,
    /// so a link never dies before the `requestState` that carries it.
    pub fn set_link_ttl(&self, ttl: Duration) {
        self.lock().ttl = ttl;
    }

    /// Sets how long the form body may take to arrive (default [`DEFAULT_BODY_DEADLINE`]).
    pub fn set_body_deadline(&self, deadline: Duration) {
        self.lock().body_deadline = deadline;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many links are held (expired ones not purged yet included).
    pub fn link_count(&self) -> usize {
        self.lock().links.len()
    }

    /// Where the flow (principal, correlation) stands.
    pub fn status(&self, principal: &Principal, correlation: CorrelationId) -> LinkStatus {
        self.status_at(principal, correlation, Instant::now())
    }

    fn status_at(
        &self,
        principal: &Principal,
        correlation: CorrelationId,
        now: Instant,
    ) -> LinkStatus {
        let inner = self.lock();
        let flow = (principal.as_str().to_owned(), correlation);
        let Some(link) = inner.by_flow.get(&flow).and_then(|id| inner.links.get(id)) else {
            return LinkStatus::Missing;
        };
        match link.stage {
            _ if now >= link.expires => LinkStatus::Missing,
            Stage::Open => LinkStatus::Open,
            Stage::Completed => LinkStatus::Completed,
            Stage::Locked => LinkStatus::Locked,
        }
    }

    /// Whether the flow (principal, correlation) finished on the page.
    pub fn is_complete(&self, principal: &Principal, correlation: CorrelationId) -> bool {
        self.status(principal, correlation) == LinkStatus::Completed
    }

    /// The export token stored for `principal`, if any.
    pub fn token_of(&self, principal: &Principal) -> Option<ExportToken> {
        self.lock().tokens.get(principal.as_str()).cloned()
    }

    /// The page URL for this flow: the same on every pass (so the signed binding holds). Each
    /// call renews the link for the state lifetime; minting a new one first purges expired
    /// links and enforces the caps.
    ///
    /// # Errors
    /// A tool error when the server has no usable public address (none set, or an unspecified
    /// one such as `0.0.0.0`), or the OS random source fails.
    pub fn link_for(
        &self,
        principal: &Principal,
        correlation: CorrelationId,
    ) -> Result<String, HandlerError> {
        self.link_for_at(principal, correlation, Instant::now())
    }

    fn link_for_at(
        &self,
        principal: &Principal,
        correlation: CorrelationId,
        now: Instant,
    ) -> Result<String, HandlerError> {
        let mut inner = self.lock();
        let base = match &inner.base {
            None => {
                return Err(HandlerError::tool(
                    "the connect page has no address: this server is not serving HTTP (the operator must run it with --http and, when it listens on all addresses, --public-url)",
                ));
            }
            Some(base) if base.unspecified => {
                return Err(HandlerError::tool(format!(
                    "the connect page has no public address: this server listens on {} (all addresses), which no browser can open; the operator must restart it with --public-url https://HOST[:PORT]",
                    base.text
                )));
            }
            Some(base) => base.text.clone(),
        };
        inner.purge(now);
        let expires = now + inner.ttl;
        let flow = (principal.as_str().to_owned(), correlation);
        if let Some(id) = inner.by_flow.get(&flow).cloned()
            && let Some(link) = inner.links.get_mut(&id)
        {
            link.expires = link.expires.max(expires);
            return Ok(format!("{base}/connect/{id}"));
        }
        // Make room: the principal's own link closest to expiry first, then anyone's.
        while inner.links.values().filter(|l| l.flow.0 == flow.0).count() >= MAX_LINKS_PER_PRINCIPAL
        {
            match inner.first_to_expire(|l| l.flow.0 == flow.0) {
                Some(id) => inner.remove(&id),
                None => break,
            }
        }
        while inner.links.len() >= MAX_LINKS {
            match inner.first_to_expire(|_| true) {
                Some(id) => inner.remove(&id),
                None => break,
            }
        }
        // An opaque id unrelated to the correlation id.
        let id = random_token()?;
        let csrf = random_token()?;
        inner.minted += 1;
        let seq = inner.minted;
        inner.links.insert(
            id.clone(),
            Link {
                flow: flow.clone(),
                csrf,
                expires,
                seq,
                stage: Stage::Open,
                failures: 0,
            },
        );
        inner.by_flow.insert(flow, id.clone());
        Ok(format!("{base}/connect/{id}"))
    }

    /// The checks that need no body: the link `id` is usable and `cookie_csrf` is its CSRF
    /// token.
    fn precheck(&self, id: &str, cookie_csrf: Option<&str>) -> Result<(), ConnectRefusal> {
        let inner = self.lock();
        let link = inner
            .links
            .get(id)
            .filter(|l| l.usable(Instant::now()))
            .ok_or(ConnectRefusal::UnknownLink)?;
        match cookie_csrf {
            Some(c) if ct_eq(c, &link.csrf) => Ok(()),
            _ => Err(ConnectRefusal::BadCsrf),
        }
    }

    /// Completes the link `id` for the principal `auth` authenticates from `mcp_token`;
    /// `csrf` is the form's CSRF field.
    pub fn submit(
        &self,
        id: &str,
        csrf: &str,
        auth: &dyn Authenticator,
        mcp_token: &str,
        export_token: &str,
    ) -> Result<(), ConnectRefusal> {
        let mut headers = HeaderMap::new();
        let bearer = HeaderValue::from_str(&format!("Bearer {}", mcp_token.trim()));
        let mut inner = self.lock();
        let Some(link) = inner.links.get_mut(id) else {
            return Err(ConnectRefusal::UnknownLink);
        };
        if !link.usable(Instant::now()) {
            return Err(ConnectRefusal::UnknownLink);
        }
        if !ct_eq(csrf, &link.csrf) {
            return Err(ConnectRefusal::BadCsrf);
        }
        let who = match bearer {
            Ok(bearer) => {
                headers.insert(header::AUTHORIZATION, bearer);
                auth.authenticate(&headers).ok()
            }
            Err(_) => None,
        };
        let refusal = match who {
            None => Some(ConnectRefusal::NotAuthenticated),
            Some(who) if who.as_str() != link.flow.0 => Some(ConnectRefusal::OtherPrincipal),
            Some(_) => None,
        };
        if let Some(refusal) = refusal {
            link.failures = link.failures.saturating_add(1);
            if link.failures >= MAX_FAILED_ATTEMPTS {
                link.stage = Stage::Locked;
            }
            return Err(refusal);
        }
        if export_token.trim().is_empty() {
            return Err(ConnectRefusal::EmptyToken);
        }
        link.stage = Stage::Completed;
        let principal = link.flow.0.clone();
        inner
            .tokens
            .insert(principal, ExportToken(export_token.trim().to_owned()));
        Ok(())
    }
}

/// Arguments of `notes_connect_export` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectArgs {}

const CONNECTED: &str = "The export is connected.";

/// Connect the notes export to a third-party service: the user enters the service's token on
/// a local web page (never in the chat). Needs URL-mode elicitation.
#[tool(requires(url_elicitation))]
pub async fn notes_connect_export(
    ctx: &mut RequestContext,
    State(connect): State<ExportConnect>,
    _args: ConnectArgs,
) -> Result<String, HandlerError> {
    let correlation = ctx.correlation_id(CONNECT_KEY)?;
    let principal = ctx.principal().clone();
    // Responses are present only on a retry whose requestState verified.
    let retry = !ctx.raw_input_responses().is_empty();
    match connect.status(&principal, correlation) {
        LinkStatus::Completed => return Ok(CONNECTED.to_owned()),
        LinkStatus::Locked => {
            return Err(HandlerError::tool(
                "The connect page was locked after too many wrong MCP access tokens; nothing was stored. Call notes_connect_export again (without requestState) for a new link.",
            ));
        }
        LinkStatus::Missing if retry => {
            return Err(HandlerError::tool(
                "The connect link expired or was replaced by newer ones; nothing was stored. Call notes_connect_export again (without requestState) for a new link.",
            ));
        }
        LinkStatus::Missing | LinkStatus::Open => {}
    }
    let url = connect.link_for(&principal, correlation)?;
    let message = "Open this page to connect the export service; you will need your MCP access token and the service's token.";
    match ctx.elicit_url(CONNECT_KEY, message, &url).await? {
        Elicitation::Accepted(()) if connect.is_complete(&principal, correlation) => {
            Ok(CONNECTED.to_owned())
        }
        Elicitation::Accepted(()) => Err(ctx.elicit_url_again(
            CONNECT_KEY,
            "The page was not completed yet. Open it, submit the form, then confirm here.",
            &url,
        )?),
        Elicitation::Declined => Ok("You declined; the export was not connected.".to_owned()),
        Elicitation::Cancelled => Err(HandlerError::tool(
            "Cancelled; the export was not connected. Call the tool again to retry.",
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn corr() -> CorrelationId {
        CorrelationId::random().unwrap()
    }

    fn connect(ttl: Duration) -> ExportConnect {
        let c = ExportConnect::default();
        c.set_base_url("http://127.0.0.1:9").unwrap();
        c.set_link_ttl(ttl);
        c
    }

    #[test]
    fn links_expire_with_the_state_and_are_purged() {
        let c = connect(Duration::from_secs(60));
        let alice = Principal::new("alice");
        let t0 = Instant::now();
        let (a, b) = (corr(), corr());
        let url = c.link_for_at(&alice, a, t0).unwrap();
        assert_eq!(c.status_at(&alice, a, t0), LinkStatus::Open);
        // Each pass renews the link for the state lifetime: same URL, later expiry.
        let t1 = t0 + Duration::from_secs(50);
        assert_eq!(c.link_for_at(&alice, a, t1).unwrap(), url);
        assert_eq!(
            c.status_at(&alice, a, t0 + Duration::from_secs(100)),
            LinkStatus::Open
        );
        let gone = t1 + Duration::from_secs(60);
        assert_eq!(c.status_at(&alice, a, gone), LinkStatus::Missing);
        // Minting another link purges the expired record, completion index included.
        c.link_for_at(&alice, b, gone).unwrap();
        assert_eq!(c.link_count(), 1);
        assert_eq!(c.lock().by_flow.len(), 1);
    }

    #[test]
    fn links_are_capped_per_principal_and_in_all() {
        let c = connect(Duration::from_secs(600));
        let t0 = Instant::now();
        let alice = Principal::new("alice");
        let bob = Principal::new("bob");
        let bobs = corr();
        c.link_for_at(&bob, bobs, t0).unwrap();
        let first = corr();
        c.link_for_at(&alice, first, t0).unwrap();
        for i in 0..MAX_LINKS_PER_PRINCIPAL as u64 {
            c.link_for_at(&alice, corr(), t0 + Duration::from_millis(i + 1))
                .unwrap();
        }
        // Alice's oldest went; bob's link is untouched.
        assert_eq!(c.link_count(), MAX_LINKS_PER_PRINCIPAL + 1);
        assert_eq!(c.status_at(&alice, first, t0), LinkStatus::Missing);
        assert_eq!(c.status_at(&bob, bobs, t0), LinkStatus::Open);

        // Many principals: the total stays at the cap, the oldest (bob's) goes first.
        for i in 0..MAX_LINKS as u64 {
            let p = Principal::new(format!("p{i}").as_str());
            c.link_for_at(&p, corr(), t0 + Duration::from_millis(100 + i))
                .unwrap();
        }
        assert_eq!(c.link_count(), MAX_LINKS);
        assert_eq!(c.lock().by_flow.len(), MAX_LINKS);
        assert_eq!(c.status_at(&bob, bobs, t0), LinkStatus::Missing);
    }

    #[test]
    fn no_link_from_an_unspecified_or_missing_address() {
        let c = ExportConnect::default();
        let alice = Principal::new("alice");
        let e = c.link_for(&alice, corr()).unwrap_err();
        assert!(format!("{e:?}").contains("--http"), "{e:?}");
        for base in ["http://0.0.0.0:8080", "http://[::]:8080/"] {
            c.set_base_url(base).unwrap();
            let e = c.link_for(&alice, corr()).unwrap_err();
            assert!(format!("{e:?}").contains("--public-url"), "{e:?}");
        }
        assert_eq!(c.link_count(), 0);
        c.set_base_url("https://notes.example.com:443/base/")
            .unwrap();
        let url = c.link_for(&alice, corr()).unwrap();
        assert!(
            url.starts_with("https://notes.example.com/base/connect/"),
            "{url}"
        );
    }

    #[test]
    fn public_urls_are_checked() {
        assert_eq!(
            check_public_url("HTTPS://Notes.example.com/").unwrap(),
            "https://notes.example.com"
        );
        assert_eq!(
            check_public_url("http://h:8080/x").unwrap(),
            "http://h:8080/x"
        );
        for bad in [
            "ftp://h",
            "notes.example.com",
            "https://u:p@h",
            "https://h/?q=1",
            "https://h/#f",
            "",
        ] {
            assert!(check_public_url(bad).is_err(), "{bad}");
        }
        let base = parse_base("https://h.example").unwrap();
        assert!(base.own_origin.allows("https://h.example"));
        assert!(!base.own_origin.allows("https://evil.example"));
        assert!(!base.own_origin.allows("http://h.example"));
    }
}
