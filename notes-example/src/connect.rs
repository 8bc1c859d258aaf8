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
//!   else. (With `AllowAnonymous` on loopback there is only one principal anyway.)
//! - **One-time and short-lived.** A link completes once and expires after [`LINK_TTL`];
//!   completion is recorded under (principal, correlation id) so only *that* flow completes.
//! - **"accept" is consent only.** On the retry the tool checks the completion record; if the
//!   page was not finished it asks again ([`ToolContext::elicit_url_again`]).
//! - **No pre-authentication.** The URL grants nothing; the page form is a plain POST with no
//!   cookies or ambient credentials, so cross-site posts gain nothing without the bearer token.
//! - Secrets are held in [`ExportToken`], whose `Debug` is redacted.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State as AxumState};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use mcp_runtime::prelude::*;
use mcp_runtime::state::CorrelationId;
use mcp_runtime::transport::Authenticator;

/// The elicitation key of the connect step.
pub const CONNECT_KEY: &str = "connect_export";

/// How long a connect link stays usable.
pub const LINK_TTL: Duration = Duration::from_secs(600);

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

struct Link {
    principal: String,
    correlation: CorrelationId,
    created: Instant,
    used: bool,
}

#[derive(Default)]
struct Inner {
    base_url: String,
    links: HashMap<String, Link>,
    by_flow: HashMap<(String, CorrelationId), String>,
    completed: HashSet<(String, CorrelationId)>,
    tokens: HashMap<String, ExportToken>,
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
    /// No such link, already used, or expired.
    UnknownLink,
    /// The MCP token is missing or invalid.
    NotAuthenticated,
    /// The MCP token names a different principal than the one who started the flow.
    OtherPrincipal,
    /// The export token field is empty.
    EmptyToken,
}

impl ExportConnect {
    /// Connect state whose links start with `base_url` (e.g. `http://127.0.0.1:8080`).
    pub fn new(base_url: impl Into<String>) -> Self {
        let me = Self::default();
        me.set_base_url(base_url);
        me
    }

    /// Sets the public base URL once the listener's address is known.
    pub fn set_base_url(&self, base_url: impl Into<String>) {
        self.lock().base_url = base_url.into().trim_end_matches('/').to_owned();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the flow (principal, correlation) finished on the page.
    pub fn is_complete(&self, principal: &Principal, correlation: CorrelationId) -> bool {
        self.lock()
            .completed
            .contains(&(principal.as_str().to_owned(), correlation))
    }

    /// The export token stored for `principal`, if any.
    pub fn token_of(&self, principal: &Principal) -> Option<ExportToken> {
        self.lock().tokens.get(principal.as_str()).cloned()
    }

    /// The page URL for this flow: the same on every pass (so the signed binding holds).
    pub fn link_for(
        &self,
        principal: &Principal,
        correlation: CorrelationId,
    ) -> Result<String, ToolError> {
        let mut inner = self.lock();
        let flow = (principal.as_str().to_owned(), correlation);
        let id = match inner.by_flow.get(&flow) {
            Some(id) => id.clone(),
            None => {
                // An opaque id unrelated to the correlation id.
                let id = CorrelationId::random()
                    .map_err(|e| ToolError::tool(format!("cannot create a link: {e}")))?
                    .to_string();
                inner.links.insert(
                    id.clone(),
                    Link {
                        principal: flow.0.clone(),
                        correlation,
                        created: Instant::now(),
                        used: false,
                    },
                );
                inner.by_flow.insert(flow, id.clone());
                id
            }
        };
        Ok(format!("{}/connect/{id}", inner.base_url))
    }

    /// Completes the link `id` for the principal `auth` authenticates from `mcp_token`.
    pub fn submit(
        &self,
        id: &str,
        auth: &dyn Authenticator,
        mcp_token: &str,
        export_token: &str,
    ) -> Result<(), ConnectRefusal> {
        let mut headers = HeaderMap::new();
        let bearer = HeaderValue::from_str(&format!("Bearer {}", mcp_token.trim()))
            .map_err(|_| ConnectRefusal::NotAuthenticated)?;
        headers.insert(header::AUTHORIZATION, bearer);
        let mut inner = self.lock();
        let Some(link) = inner.links.get(id) else {
            return Err(ConnectRefusal::UnknownLink);
        };
        if link.used || link.created.elapsed() > LINK_TTL {
            return Err(ConnectRefusal::UnknownLink);
        }
        let who = auth
            .authenticate(&headers)
            .map_err(|_| ConnectRefusal::NotAuthenticated)?;
        if who.as_str() != link.principal {
            return Err(ConnectRefusal::OtherPrincipal);
        }
        if export_token.trim().is_empty() {
            return Err(ConnectRefusal::EmptyToken);
        }
        let flow = (link.principal.clone(), link.correlation);
        if let Some(link) = inner.links.get_mut(id) {
            link.used = true;
        }
        inner
            .tokens
            .insert(flow.0.clone(), ExportToken(export_token.trim().to_owned()));
        inner.completed.insert(flow);
        Ok(())
    }
}

/// Arguments of `notes_connect_export` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectArgs {}

/// Connect the notes export to a third-party service: the user enters the service's token on
/// a local web page (never in the chat). Needs URL-mode elicitation.
#[tool(requires(url_elicitation))]
pub async fn notes_connect_export(
    ctx: &mut ToolContext,
    State(connect): State<ExportConnect>,
    _args: ConnectArgs,
) -> Result<String, ToolError> {
    let correlation = ctx.correlation_id(CONNECT_KEY)?;
    let principal = ctx.principal().clone();
    if connect.is_complete(&principal, correlation) {
        return Ok("The export is connected.".to_owned());
    }
    let url = connect.link_for(&principal, correlation)?;
    let message = "Open this page to connect the export service; you will need your MCP access token and the service's token.";
    match ctx.elicit_url(CONNECT_KEY, message, &url).await? {
        Elicitation::Accepted(()) if connect.is_complete(&principal, correlation) => {
            Ok("The export is connected.".to_owned())
        }
        Elicitation::Accepted(()) => Err(ctx.elicit_url_again(
            CONNECT_KEY,
            "The page was not completed yet. Open it, submit the form, then confirm here.",
            &url,
        )?),
        Elicitation::Declined => Ok("You declined; the export was not connected.".to_owned()),
        Elicitation::Cancelled => Err(ToolError::tool(
            "Cancelled; the export was not connected. Call the tool again to retry.",
        )),
    }
}

#[derive(Clone)]
struct PageState {
    connect: ExportConnect,
    auth: Arc<dyn Authenticator>,
}

/// The page's routes (`GET`/`POST /connect/{id}`), to merge into the MCP HTTP router.
pub fn routes(connect: ExportConnect, auth: Arc<dyn Authenticator>) -> Router {
    Router::new()
        .route("/connect/{id}", get(page).post(submit))
        .with_state(PageState { connect, auth })
}

const FORM: &str = r#"<!doctype html><meta charset="utf-8"><title>Connect export</title>
<h1>Connect the notes export</h1>
<form method="post">
<p><label>Your MCP access token <input name="mcp_token" type="password" autocomplete="off" required></label></p>
<p><label>Export service token <input name="export_token" type="password" autocomplete="off" required></label></p>
<p><button>Connect</button></p></form>"#;

fn no_store(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::HeaderName::from_static("x-frame-options"),
        HeaderValue::from_static("DENY"),
    );
    response
}

async fn page(AxumState(s): AxumState<PageState>, Path(id): Path<String>) -> Response {
    let known = s
        .connect
        .lock()
        .links
        .get(&id)
        .is_some_and(|l| !l.used && l.created.elapsed() <= LINK_TTL);
    if known {
        no_store(Html(FORM).into_response())
    } else {
        no_store(
            (
                StatusCode::NOT_FOUND,
                "This link is unknown, used or expired.",
            )
                .into_response(),
        )
    }
}

async fn submit(
    AxumState(s): AxumState<PageState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let fields = parse_form(&body);
    let get = |k: &str| fields.get(k).map(String::as_str).unwrap_or_default();
    let outcome = s
        .connect
        .submit(&id, s.auth.as_ref(), get("mcp_token"), get("export_token"));
    let (status, text) = match outcome {
        Ok(()) => (
            StatusCode::OK,
            "Connected. Return to your MCP client and confirm.",
        ),
        Err(ConnectRefusal::UnknownLink) => (
            StatusCode::NOT_FOUND,
            "This link is unknown, used or expired.",
        ),
        Err(ConnectRefusal::NotAuthenticated) => (
            StatusCode::UNAUTHORIZED,
            "The MCP access token is not valid.",
        ),
        Err(ConnectRefusal::OtherPrincipal) => (
            StatusCode::FORBIDDEN,
            "This link belongs to another user; nothing was stored.",
        ),
        Err(ConnectRefusal::EmptyToken) => {
            (StatusCode::BAD_REQUEST, "Enter the export service token.")
        }
    };
    tracing::info!(status = status.as_u16(), "connect page submission");
    no_store((status, text).into_response())
}

/// Parses `application/x-www-form-urlencoded`.
fn parse_form(body: &[u8]) -> HashMap<String, String> {
    let text = String::from_utf8_lossy(body);
    text.split('&')
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(&s.replace('+', " "))
                    .decode_utf8_lossy()
                    .into_owned()
            };
            Some((decode(k), decode(v)))
        })
        .collect()
}
