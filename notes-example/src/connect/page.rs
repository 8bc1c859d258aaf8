//! The connect page: `GET`/`POST /connect/{id}`, served next to the MCP endpoint.
//!
//! Renders the form for an open link and takes its submission, vetting origin, link, CSRF
//! cookie and the user's bearer token before the body is read (see the threat model in
//! [`super`]).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State as AxumState};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use mcp_runtime::transport::{Authenticator, OriginAllowlist};

use super::{CSRF_COOKIE, ConnectRefusal, ExportConnect, MAX_FORM_BYTES};

#[derive(Clone)]
struct PageState {
    connect: ExportConnect,
    auth: Arc<dyn Authenticator>,
    origins: OriginAllowlist,
}

/// The page's routes (`GET`/`POST /connect/{id}`), to merge into the MCP HTTP router.
/// `origins` is the MCP endpoint's [`OriginAllowlist`]; the page's own origin (from the base
/// URL) is always allowed too.
pub fn routes(
    connect: ExportConnect,
    auth: Arc<dyn Authenticator>,
    origins: OriginAllowlist,
) -> Router {
    Router::new()
        .route(&connect.links().route(), get(page).post(submit))
        .with_state(PageState {
            connect,
            auth,
            origins,
        })
}

const UNKNOWN_LINK: &str = "This link is unknown, used or expired.";

fn html_page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><meta charset=\"utf-8\"><title>{title}</title>\n<h1>{title}</h1>\n{body}"
    )
}

fn form_html(csrf: &str) -> String {
    // The CSRF token is url-safe base64: nothing in it needs HTML escaping.
    html_page(
        "Connect the notes export",
        &format!(
            r#"<form method="post">
<input type="hidden" name="csrf" value="{csrf}">
<p><label>Your MCP access token <input name="mcp_token" type="password" autocomplete="off" required></label></p>
<p><label>Export service token <input name="export_token" type="password" autocomplete="off" required></label></p>
<p><button type="submit">Connect</button></p></form>"#
        ),
    )
}

/// An outcome page: `<p id="outcome">` holds the (static, HTML-safe) message.
fn outcome(status: StatusCode, message: &str) -> Response {
    let title = if status.is_success() {
        "Connected"
    } else {
        "Not connected"
    };
    let body = html_page(title, &format!("<p id=\"outcome\">{message}</p>"));
    let mut response = secure_headers((status, Html(body)).into_response(), false);
    if status.is_client_error() {
        // The body may be unread or half-read: do not keep the connection for another request.
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Headers every page gets: no caching, no framing, no script, no cross-origin referrer.
fn secure_headers(mut response: Response, form_page: bool) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Under `no-referrer` browsers send `Origin: null` on the form's own POST, which the
    // Origin check must refuse; `same-origin` still sends nothing to any other origin.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static(if form_page {
            "same-origin"
        } else {
            "no-referrer"
        }),
    );
    response
}

async fn page(AxumState(s): AxumState<PageState>, Path(id): Path<String>) -> Response {
    let links = s.connect.links();
    let open = match links.open(&id).await {
        Ok(open) => open,
        Err(refusal) => return refusal_response(&ConnectRefusal::from(refusal)),
    };
    let secure = links.base_url().is_some_and(|b| b.is_secure());
    // Scoped to this link's path: several open links do not clobber each other.
    let cookie = format!(
        "{CSRF_COOKIE}={}; Path={}; Max-Age={}; HttpOnly; SameSite=Strict{}",
        open.csrf(),
        links.page_path(&id),
        open.expires_in().as_secs().max(1),
        if secure { "; Secure" } else { "" }
    );
    let mut response = secure_headers(Html(form_html(open.csrf())).into_response(), true);
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// The value of cookie `name`, from every `Cookie` header.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn origin_allowed(s: &PageState, headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        // Not a browser (browsers always send Origin on POST); the CSRF checks still apply.
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    // Exactly the base URL's own origin.
    let own =
        s.connect.links().base_url().is_some_and(|b| {
            OriginAllowlist::parse([b.origin()]).is_ok_and(|own| own.allows(origin))
        });
    own || s.origins.allows(origin)
}

fn refusal_response(refusal: &ConnectRefusal) -> Response {
    let (status, text) = match refusal {
        ConnectRefusal::UnknownLink => (StatusCode::NOT_FOUND, UNKNOWN_LINK),
        ConnectRefusal::BadCsrf => (
            StatusCode::FORBIDDEN,
            "This form did not come from this page, or it is stale. Open the link again and resubmit.",
        ),
        ConnectRefusal::NotAuthenticated => (
            StatusCode::UNAUTHORIZED,
            "The MCP access token is not valid.",
        ),
        ConnectRefusal::OtherPrincipal => (
            StatusCode::FORBIDDEN,
            "This link belongs to another user; nothing was stored.",
        ),
        ConnectRefusal::EmptyToken => (StatusCode::BAD_REQUEST, "Enter the export service token."),
        ConnectRefusal::Unavailable => (
            StatusCode::SERVICE_UNAVAILABLE,
            "The server could not check this link just now; try again in a moment.",
        ),
    };
    outcome(status, text)
}

async fn submit(
    AxumState(s): AxumState<PageState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    // Everything decidable from the URL and headers is decided before any body is read.
    if !origin_allowed(&s, &headers) {
        tracing::info!(
            status = 403,
            "connect page submission from a foreign Origin"
        );
        return outcome(
            StatusCode::FORBIDDEN,
            "Forbidden: this form may only be submitted from its own page (Origin not allowed).",
        );
    }
    if let Err(refusal) = s.connect.precheck(&id, cookie(&headers, CSRF_COOKIE)).await {
        tracing::info!(?refusal, "connect page submission refused before its body");
        return refusal_response(&refusal);
    }
    let form_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| {
            m.trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        });
    if !form_type {
        return outcome(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Submit the form on the page (application/x-www-form-urlencoded).",
        );
    }
    let too_large = || outcome(StatusCode::PAYLOAD_TOO_LARGE, "The form is too large.");
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_FORM_BYTES as u64) {
        return too_large();
    }
    let deadline = s.connect.body_deadline();
    let read = tokio::time::timeout(deadline, Limited::new(body, MAX_FORM_BYTES).collect()).await;
    let body = match read {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if e.is::<LengthLimitError>() => return too_large(),
        Ok(Err(_)) => return outcome(StatusCode::BAD_REQUEST, "The form could not be read."),
        Err(_) => {
            return outcome(
                StatusCode::REQUEST_TIMEOUT,
                "The form took too long to arrive.",
            );
        }
    };
    let fields = parse_form(&body);
    let get = |k: &str| fields.get(k).map(String::as_str).unwrap_or_default();
    let result = s
        .connect
        .submit(
            &id,
            get("csrf"),
            s.auth.as_ref(),
            get("mcp_token"),
            get("export_token"),
        )
        .await;
    match result {
        Ok(()) => {
            tracing::info!(status = 200, "connect page submission completed");
            outcome(
                StatusCode::OK,
                "Connected. Return to your MCP client and confirm.",
            )
        }
        Err(refusal) => {
            tracing::info!(?refusal, "connect page submission refused");
            refusal_response(&refusal)
        }
    }
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
