//! `notes_connect_export`: a real out-of-band step through URL-mode elicitation.
//!
//! The tool sends the user to a small page served by the same HTTP server, where they enter
//! a third-party export token. The token is stored server-side, per principal; it never
//! appears in `inputResponses`, results, logs or URLs.
//!
//! The link bookkeeping is the runtime's [`UrlLinks`] (`mcp_runtime::url_elicitation`): the
//! tool is one `ctx.elicit_url(CONNECT_KEY, message, connect.links())` call, and this module
//! adds what is particular to this page (re-authenticating the browser user, CSRF and
//! Origin rules, body limits, where the token is kept).
//!
//! # Threat model and design
//!
//! - **The link is not a credential.** The URL carries only the link's random token (a
//!   128-bit id and a 128-bit secret, compared in constant time). Its server-side record
//!   binds it to the principal that started the flow and to the runtime-minted correlation id
//!   kept in the signed `requestState`. The correlation id is never in the URL.
//! - **The browser user must prove they are the same principal.** Knowing the link is not
//!   enough: the page's form asks for the user's MCP bearer token, checks it with the server's
//!   own [`Authenticator`], and refuses (403, link left unused) when it names another
//!   principal. This defeats a phishing swap where an attacker sends a victim their own link so
//!   the victim's secret lands in the attacker's account, and a leaked link used by someone
//!   else. (With `AllowAnonymous` on loopback there is only one principal anyway, which is why
//!   the cross-site defences below matter most there.) After [`MAX_FAILED_ATTEMPTS`] wrong
//!   tokens the link is locked.
//! - **Only the page itself can submit the form.** A `POST` whose `Origin` is neither the
//!   page's own origin nor allowed by the server's
//!   [`OriginAllowlist`](mcp_runtime::transport::OriginAllowlist) gets 403. The form
//!   carries the link's random anti-forgery token, also set as an `HttpOnly; SameSite=Strict`
//!   cookie scoped to the link's path: both must match the link's record (constant-time
//!   compare), so a cross-site form post (which gets neither) is refused even from an allowed
//!   origin.
//! - **Nothing is read before the request is vetted.** Origin, link token and CSRF cookie are
//!   all in the headers and URL: an unknown, expired or used link, a foreign origin or a
//!   missing cookie is answered before a byte of the body is read. The form body is then
//!   capped at [`MAX_FORM_BYTES`] (checked against `Content-Length` first) and must arrive
//!   within [`DEFAULT_BODY_DEADLINE`].
//! - **One-time, short-lived, bounded.** A link completes once and expires with the
//!   `requestState` that carries it (each pass of the flow renews it by the state TTL). At
//!   most [`MAX_LINKS_PER_PRINCIPAL`] per principal and [`MAX_LINKS`] in all are kept: past
//!   either cap the link closest to expiry goes first. Completion is recorded on the link of
//!   (principal, correlation id), so only *that* flow completes.
//! - **The link names a reachable address.** It is built from the public base URL
//!   (`serve --public-url`), else from the bound address; a server listening on an
//!   unspecified address (`0.0.0.0`, `::`) without a public URL refuses to mint links.
//! - **"accept" is consent only.** On the retry the runtime reads the link's record; if the
//!   page was not finished it asks again with the same link.
//! - The pages are not cacheable, not frameable, run no script, and leak no referrer
//!   cross-origin.
//! - Secrets are held in [`ExportToken`], whose `Debug` is redacted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, header};
use mcp_runtime::prelude::*;
use mcp_runtime::state::CorrelationId;
use mcp_runtime::transport::Authenticator;
use mcp_runtime::url_elicitation::UrlLinks;
use mcp_runtime::url_elicitation::{
    LinkLimits, LinkRefusal, LinkStatus, MemoryLinkStore, OpenLink, PublicUrl,
};

mod page;

pub use page::routes;

/// The elicitation key of the connect step.
pub const CONNECT_KEY: &str = "connect_export";

/// The route path links live under (`/connect/{token}`).
pub const CONNECT_PATH: &str = "/connect";

/// How long a link stays usable after the last pass of its flow when no state lifetime was
/// set with [`ExportConnect::set_link_ttl`] (the server's default state lifetime).
pub const DEFAULT_LINK_TTL: Duration = Duration::from_secs(300);

/// Live links kept for one principal; minting one more drops that principal's link closest
/// to expiry.
pub const MAX_LINKS_PER_PRINCIPAL: usize = LinkLimits::DEFAULT_MAX_LINKS_PER_PRINCIPAL;

/// Live links kept in all; minting one more drops the link closest to expiry.
pub const MAX_LINKS: usize = LinkLimits::DEFAULT_MAX_LINKS_MEMORY;

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

/// Checks a public base URL (`http(s)://HOST[:PORT][/PATH]`, no user info, query or fragment)
/// and returns it without a trailing slash.
///
/// # Errors
/// A one-line message naming what is wrong.
pub fn check_public_url(url: &str) -> Result<String, String> {
    PublicUrl::parse(url)
        .map(|u| u.as_str().to_owned())
        .map_err(|e| e.to_string())
}

struct Inner {
    links: UrlLinks,
    /// The links' store, for counting without a round trip.
    store: Arc<MemoryLinkStore>,
    body_deadline: Mutex<Duration>,
    tokens: Mutex<HashMap<String, ExportToken>>,
}

/// Server-side state of the connect flow: the one-time links (the runtime's [`UrlLinks`])
/// and the tokens stored by the page.
#[derive(Clone)]
pub struct ExportConnect(Arc<Inner>);

impl Default for ExportConnect {
    fn default() -> Self {
        let store = Arc::new(MemoryLinkStore::with_limits(LinkLimits::new(
            MAX_LINKS,
            MAX_LINKS_PER_PRINCIPAL,
        )));
        let links = UrlLinks::with_store(CONNECT_PATH, Arc::clone(&store) as _)
            .with_ttl(DEFAULT_LINK_TTL)
            .with_max_failures(MAX_FAILED_ATTEMPTS)
            .with_not_finished_message(
                "The page was not completed yet. Open it, submit the form, then confirm here.",
            )
            .with_setup_hint(
                "the operator must serve it over HTTP (--http) and, when it listens on all addresses, restart it with --public-url https://HOST[:PORT]",
            );
        Self(Arc::new(Inner {
            links,
            store,
            body_deadline: Mutex::new(DEFAULT_BODY_DEADLINE),
            tokens: Mutex::new(HashMap::new()),
        }))
    }
}

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
    /// The link store failed; nothing was decided.
    Unavailable,
}

impl From<LinkRefusal> for ConnectRefusal {
    fn from(refusal: LinkRefusal) -> Self {
        match refusal {
            LinkRefusal::OtherPrincipal => ConnectRefusal::OtherPrincipal,
            LinkRefusal::Store(e) => {
                tracing::error!(error = %e, "connect page: the link store failed");
                ConnectRefusal::Unavailable
            }
            _ => ConnectRefusal::UnknownLink,
        }
    }
}

impl ExportConnect {
    /// The one-time links of the connect step (pass them to `ctx.elicit_url`).
    pub fn links(&self) -> &UrlLinks {
        &self.0.links
    }

    /// Sets the base URL links start with (e.g. `https://notes.example.com` or the bound
    /// `http://127.0.0.1:8080`). A base on an unspecified address (`0.0.0.0`, `[::]`) is kept
    /// but mints no link: the tool then tells the operator to set a public URL.
    ///
    /// # Errors
    /// A one-line message when `base_url` is not `http(s)://HOST[:PORT][/PATH]`.
    pub fn set_base_url(&self, base_url: &str) -> Result<(), String> {
        self.0
            .links
            .set_base_url(base_url)
            .map_err(|e| e.to_string())
    }

    /// Sets how long a link lives after each pass of its flow: the server's state lifetime,
    /// so a link never dies before the `requestState` that carries it.
    pub fn set_link_ttl(&self, ttl: Duration) {
        self.0.links.set_ttl(ttl);
    }

    /// Sets how long the form body may take to arrive (default [`DEFAULT_BODY_DEADLINE`]).
    pub fn set_body_deadline(&self, deadline: Duration) {
        *self
            .0
            .body_deadline
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = deadline;
    }

    fn body_deadline(&self) -> Duration {
        *self
            .0
            .body_deadline
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// How many links are held (expired ones not purged yet included).
    pub fn link_count(&self) -> usize {
        self.0.store.len()
    }

    /// Where the flow (principal, correlation) stands (a failing store reads as missing).
    pub async fn status(&self, principal: &Principal, correlation: CorrelationId) -> LinkStatus {
        self.0
            .links
            .status(principal, correlation)
            .await
            .unwrap_or(LinkStatus::Missing)
    }

    /// Whether the flow (principal, correlation) finished on the page.
    pub async fn is_complete(&self, principal: &Principal, correlation: CorrelationId) -> bool {
        self.status(principal, correlation).await == LinkStatus::Completed
    }

    /// The export token stored for `principal`, if any.
    pub fn token_of(&self, principal: &Principal) -> Option<ExportToken> {
        self.0
            .tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(principal.as_str())
            .cloned()
    }

    /// The checks that need no body: the link `id` is live and `cookie_csrf` is its CSRF
    /// token.
    async fn precheck(
        &self,
        id: &str,
        cookie_csrf: Option<&str>,
    ) -> Result<OpenLink, ConnectRefusal> {
        let open = self.0.links.open(id).await?;
        match cookie_csrf {
            Some(c) if open.csrf_matches(c) => Ok(open),
            _ => Err(ConnectRefusal::BadCsrf),
        }
    }

    /// Completes the link `id` for the principal `auth` authenticates from `mcp_token`;
    /// `csrf` is the form's CSRF field.
    pub async fn submit(
        &self,
        id: &str,
        csrf: &str,
        auth: &dyn Authenticator,
        mcp_token: &str,
        export_token: &str,
    ) -> Result<(), ConnectRefusal> {
        let links = &self.0.links;
        let open = links.open(id).await?;
        if !open.csrf_matches(csrf) {
            return Err(ConnectRefusal::BadCsrf);
        }
        let mut headers = HeaderMap::new();
        let who = match HeaderValue::from_str(&format!("Bearer {}", mcp_token.trim())) {
            Ok(bearer) => {
                headers.insert(header::AUTHORIZATION, bearer);
                auth.authenticate(&headers).ok()
            }
            Err(_) => None,
        };
        let Some(who) = who else {
            // Counted: after MAX_FAILED_ATTEMPTS the link is locked.
            links.record_failure(id).await?;
            return Err(ConnectRefusal::NotAuthenticated);
        };
        if who != *open.principal() {
            // Counted too, before the form's content matters.
            links.record_failure(id).await?;
            return Err(ConnectRefusal::OtherPrincipal);
        }
        if export_token.trim().is_empty() {
            return Err(ConnectRefusal::EmptyToken);
        }
        links.complete(id, &who).await?;
        self.0
            .tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                who.as_str().to_owned(),
                ExportToken(export_token.trim().to_owned()),
            );
        Ok(())
    }
}

/// Arguments of `notes_connect_export` (none).
#[args]
#[derive(Debug)]
#[serde(deny_unknown_fields)]
pub struct ConnectArgs {}

/// Connect the notes export to a third-party service: the user enters the service's token on
/// a local web page (never in the chat). Needs URL-mode elicitation.
#[tool(requires(url_elicitation))]
pub async fn notes_connect_export(
    ctx: &mut RequestContext,
    State(connect): State<ExportConnect>,
    _args: ConnectArgs,
) -> Result<String, HandlerError> {
    let message = "Open this page to connect the export service; you will need your MCP access token and the service's token.";
    match ctx
        .elicit_url(CONNECT_KEY, message, connect.links())
        .await?
    {
        Elicitation::Accepted(_) => Ok("The export is connected.".to_owned()),
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
    }

    #[test]
    fn the_links_have_the_connect_settings() {
        let c = ExportConnect::default();
        assert_eq!(c.links().route(), "/connect/{token}");
        assert_eq!(c.links().max_failures(), MAX_FAILED_ATTEMPTS);
        assert_eq!(c.links().ttl(), DEFAULT_LINK_TTL);
        c.set_link_ttl(Duration::from_secs(60));
        assert_eq!(c.links().ttl(), Duration::from_secs(60));
        assert!(c.set_base_url("ftp://x").is_err());
        assert_eq!(c.link_count(), 0);
    }
}
