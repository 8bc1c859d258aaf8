//! `notes_connect_export` end to end over real HTTP: URL-mode elicitation, the connect page
//! served by the same HTTP server, principal binding (another principal is refused), one-time
//! links, the third-party token never leaving the server, the page's Origin/CSRF rules, its
//! pre-body refusals and body limits, and where links point (`--public-url`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_runtime::Principal;
use mcp_runtime::client::ClientError;
use mcp_runtime::replay::MemoryReplayStore;
use mcp_runtime::scope::ScopePolicy;
use mcp_runtime::service::McpService;
use mcp_runtime::state::StateKeyring;
use mcp_runtime::transport::{Authenticator, BearerTokens, HttpServer, OriginAllowlist};
use mcp_types::{ClientCapabilities, ElicitationCapability, ErrorCode};
use notes_example::connect::{self, ExportConnect};
use notes_example::notes::Notes;
use notes_example::tools::build_server_with;
use serde_json::json;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SECRET: &str = "EXPORT-SECRET-7f3a9c";

async fn start() -> (SocketAddr, ExportConnect) {
    let connect = ExportConnect::default();
    let server = build_server_with(
        Notes::new(ScopePolicy::new()),
        StateKeyring::generate().unwrap(),
        Arc::new(MemoryReplayStore::new(1024)),
        Duration::from_secs(600),
        connect.clone(),
    )
    .unwrap();
    let auth: Arc<dyn Authenticator> = Arc::new(
        BearerTokens::from_pairs([
            (Principal::new("alice"), ALICE),
            (Principal::new("bob"), BOB),
        ])
        .unwrap(),
    );
    let service: Arc<dyn McpService> = Arc::new(server);
    let router = HttpServer::new(service, Arc::clone(&auth))
        .router()
        .unwrap()
        .merge(connect::routes(
            connect.clone(),
            auth,
            OriginAllowlist::loopback(),
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    connect.set_base_url(&format!("http://{addr}")).unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    (addr, connect)
}

/// What a browser holds after opening the page: the form's CSRF field and the cookie.
struct Opened {
    path: String,
    csrf: String,
    cookie: String,
}

async fn open_page(addr: SocketAddr, url: &str) -> Opened {
    let path = url.trim_start_matches(&format!("http://{addr}")).to_owned();
    let reply = get(addr, &path).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let csrf = reply
        .body
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_owned();
    let cookie = reply
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    Opened { path, csrf, cookie }
}

async fn get(addr: SocketAddr, path: &str) -> Reply {
    let head = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    exchange(addr, head, b"").await
}

/// POSTs `form` to `path` with extra header lines (each ending in `\r\n`).
async fn post(addr: SocketAddr, path: &str, extra: &str, form: &str) -> Reply {
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{extra}\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n",
        form.len()
    );
    exchange(addr, head, form.as_bytes()).await
}

fn form(csrf: &str, token: &str) -> String {
    format!("csrf={csrf}&mcp_token={token}&export_token={SECRET}")
}

/// POSTs the way the page's own form does: cookie plus CSRF field.
async fn submit_as(addr: SocketAddr, page: &Opened, token: &str) -> Reply {
    let cookie = format!("Cookie: {}\r\n", page.cookie);
    post(addr, &page.path, &cookie, &form(&page.csrf, token)).await
}

#[tokio::test]
async fn connect_flow_binds_the_browser_user_to_the_principal() {
    let (addr, connect) = start().await;
    let mut seen = Vec::new();

    // Needs URL mode: a form-only client is told exactly what is missing.
    let form_only = ClientCapabilities::none().with_elicitation(ElicitationCapability::form());
    let err = call_connect(addr, ALICE, form_only, None)
        .await
        .unwrap_err();
    assert_eq!(err.code().map(ErrorCode::code), Some(-32021), "{err}");
    let ClientError::MissingCapability {
        required: Some(required),
        ..
    } = &err
    else {
        panic!("expected requiredCapabilities: {err}");
    };
    assert_eq!(
        serde_json::to_value(required).unwrap(),
        json!({"elicitation": {"url": {}}})
    );

    // The link is a URL-mode elicitation (the typed reading checks the mode).
    let r = call_connect(addr, ALICE, url_caps(), None).await;
    seen.push(format!("{r:?}"));
    let (url, _, state) = link_of(r);
    let prefix = format!("http://{addr}/connect/");
    assert!(url.starts_with(&prefix), "{url}");

    // Accepting before finishing the page: asked again.
    let r = call_connect(addr, ALICE, url_caps(), Some(&state)).await;
    seen.push(format!("{r:?}"));
    let (again, message, state) = link_of(r);
    assert_eq!(again, url);
    assert!(message.contains("not completed"), "{message}");

    // The page exists; bob (another principal) cannot complete alice's link.
    let page = open_page(addr, &url).await;
    let reply = submit_as(addr, &page, BOB).await;
    assert_eq!(reply.status, 403, "{reply:?}");
    assert!(reply.body.contains("another user"), "{reply:?}");
    assert!(connect.token_of(&Principal::new("bob")).is_none());
    // No valid MCP token at all.
    assert_eq!(submit_as(addr, &page, "not-a-token").await.status, 401);
    assert!(
        !connect
            .is_complete(&Principal::new("alice"), ids(&state))
            .await
    );
    // Alice completes it; the link is then spent.
    assert_eq!(submit_as(addr, &page, ALICE).await.status, 200);
    assert_eq!(submit_as(addr, &page, ALICE).await.status, 404);
    assert_eq!(get(addr, &page.path).await.status, 404);
    let made_up = post(addr, "/connect/made-up", "", &form(&page.csrf, ALICE)).await;
    assert_eq!(made_up.status, 404);

    let r = call_connect(addr, ALICE, url_caps(), Some(&state)).await;
    seen.push(format!("{r:?}"));
    let (text, is_error) = completed(r);
    assert_eq!(text, "The export is connected.");
    assert!(!is_error);
    assert_eq!(
        connect.token_of(&Principal::new("alice")).unwrap().expose(),
        SECRET
    );
    // The secret never appears in anything the MCP client saw, nor in Debug output.
    for body in &seen {
        assert!(!body.contains(SECRET), "{body}");
    }
    assert!(!format!("{:?}", connect.token_of(&Principal::new("alice"))).contains(SECRET));
}

/// The correlation id sealed in the state (readable by anyone; signed, not encrypted).
fn ids(state: &str) -> mcp_runtime::state::CorrelationId {
    let payload = mcp_runtime::state::read_unverified(state).unwrap();
    payload.correlations[connect::CONNECT_KEY]
}

#[tokio::test]
async fn the_url_never_carries_the_correlation_id() {
    let (addr, _) = start().await;
    let (url, state) = fresh_link(addr, ALICE).await;
    let corr = ids(&state);
    assert!(!url.contains(&corr.to_string()), "{url}");
}

/// Sends only the head of a POST that announces `length` body bytes (and `partial` of them),
/// then waits for the answer while still owing the rest. Returns the reply and how long it
/// took.
async fn post_head_only(
    addr: SocketAddr,
    path: &str,
    extra: &str,
    length: usize,
    partial: &[u8],
) -> (Reply, Duration) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {length}\r\n\r\n"
    );
    let started = Instant::now();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(partial).await.unwrap();
    let mut raw = Vec::new();
    // The answer must come while the client still holds the body back.
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(3), stream.read(&mut buf))
            .await
            .expect("the server answers without waiting for the body")
            .unwrap();
        raw.extend_from_slice(&buf[..n]);
        if n == 0 || raw.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    (parse_reply(&raw), started.elapsed())
}

#[tokio::test]
async fn requests_are_refused_from_headers_before_their_body_is_read() {
    let (addr, _) = start().await;
    // An unknown link id: refused at once although a megabyte is announced and none sent.
    let (reply, took) = post_head_only(addr, "/connect/made-up", "", 1 << 20, b"").await;
    assert_eq!(reply.status, 404, "{reply:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert_eq!(reply.header("connection"), Some("close"));

    let (url, _) = fresh_link(addr, ALICE).await;
    let page = open_page(addr, &url).await;
    let cookie = format!("Cookie: {}\r\n", page.cookie);
    // A live link but a foreign Origin, or no CSRF cookie: refused before the body.
    let foreign = format!("{cookie}Origin: https://evil.example\r\n");
    let (reply, _) = post_head_only(addr, &page.path, &foreign, 1 << 20, b"").await;
    assert_eq!(reply.status, 403, "{reply:?}");
    let (reply, _) = post_head_only(addr, &page.path, "", 1 << 20, b"").await;
    assert_eq!(reply.status, 403, "{reply:?}");
    // Everything right but a body over the form's limit: 413 from Content-Length alone.
    let (reply, _) = post_head_only(addr, &page.path, &cookie, 1 << 20, b"").await;
    assert_eq!(reply.status, 413, "{reply:?}");

    // None of it spent the link.
    assert_eq!(submit_as(addr, &page, ALICE).await.status, 200);
}

#[tokio::test]
async fn a_form_body_must_arrive_in_time_and_stay_small() {
    let (addr, connect) = start().await;
    connect.set_body_deadline(Duration::from_millis(300));
    let (url, _) = fresh_link(addr, ALICE).await;
    let page = open_page(addr, &url).await;
    let cookie = format!("Cookie: {}\r\n", page.cookie);

    // 100 bytes announced, 10 sent, the rest never: cut off at the deadline.
    let (reply, took) = post_head_only(addr, &page.path, &cookie, 100, b"csrf=abcde").await;
    assert_eq!(reply.status, 408, "{reply:?}");
    assert!(took >= Duration::from_millis(300), "{took:?}");

    // A chunked body (no Content-Length) over the limit: 413 once the limit is crossed.
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {addr}\r\n{cookie}Connection: close\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n",
        page.path
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // One byte over the limit, and nothing after it: the server reads every byte sent, so its
    // close cannot turn into a reset that would swallow the answer.
    let over = connect::MAX_FORM_BYTES + 1;
    let chunk = format!("{over:x}\r\n{}", "a".repeat(over));
    stream.write_all(chunk.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(3), stream.read_to_end(&mut raw))
        .await
        .expect("answered")
        .unwrap();
    assert_eq!(parse_reply(&raw).status, 413);

    // The link still works for the real form.
    assert_eq!(submit_as(addr, &page, ALICE).await.status, 200);
}

#[tokio::test]
async fn the_form_needs_its_csrf_token_its_cookie_and_an_allowed_origin() {
    let (addr, connect) = start().await;
    let (url, state) = fresh_link(addr, ALICE).await;
    let page = open_page(addr, &url).await;
    let cookie = format!("Cookie: {}\r\n", page.cookie);
    let alice = Principal::new("alice");

    // Cookie but no (or a wrong) CSRF field: what a cross-site form post from an allowed
    // origin would look like if the cookie were sent.
    let no_field = format!("mcp_token={ALICE}&export_token={SECRET}");
    assert_eq!(post(addr, &page.path, &cookie, &no_field).await.status, 403);
    let wrong = form(&format!("{}x", page.csrf), ALICE);
    assert_eq!(post(addr, &page.path, &cookie, &wrong).await.status, 403);
    // The field but no cookie (SameSite=Strict keeps it off cross-site posts).
    let reply = post(addr, &page.path, "", &form(&page.csrf, ALICE)).await;
    assert_eq!(reply.status, 403);
    assert!(
        reply.body.contains("did not come from this page"),
        "{reply:?}"
    );
    // A foreign or opaque Origin, even with both tokens.
    for origin in [
        "https://evil.example",
        "null",
        "http://127.0.0.1.evil.example",
    ] {
        let extra = format!("{cookie}Origin: {origin}\r\n");
        let reply = post(addr, &page.path, &extra, &form(&page.csrf, ALICE)).await;
        assert_eq!(reply.status, 403, "{origin}: {reply:?}");
        assert!(reply.body.contains("Origin not allowed"), "{reply:?}");
    }
    assert!(!connect.is_complete(&alice, ids(&state)).await);

    // The page's own origin, with both tokens: accepted.
    let own = format!("{cookie}Origin: http://{addr}\r\n");
    let reply = post(addr, &page.path, &own, &form(&page.csrf, ALICE)).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(connect.is_complete(&alice, ids(&state)).await);
}

#[tokio::test]
async fn too_many_wrong_tokens_lock_the_link() {
    let (addr, _) = start().await;
    let (url, state) = fresh_link(addr, ALICE).await;
    let page = open_page(addr, &url).await;
    for _ in 0..connect::MAX_FAILED_ATTEMPTS {
        let status = submit_as(addr, &page, "wrong-token").await.status;
        assert_eq!(status, 401);
    }
    assert_eq!(submit_as(addr, &page, ALICE).await.status, 404);
    let (text, is_error) = completed(call_connect(addr, ALICE, url_caps(), Some(&state)).await);
    assert!(is_error, "{text}");
    assert!(text.contains("locked"), "{text}");
}

#[tokio::test]
async fn the_page_sends_security_headers_and_a_strict_cookie() {
    let (addr, _) = start().await;
    let (url, _) = fresh_link(addr, ALICE).await;
    let path = url.trim_start_matches(&format!("http://{addr}")).to_owned();
    let form_page = get(addr, &path).await;
    let refusal = get(addr, "/connect/made-up").await;
    for reply in [&form_page, &refusal] {
        let csp = reply.header("content-security-policy").unwrap();
        assert!(csp.contains("default-src 'none'"), "{csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert!(csp.contains("form-action 'self'"), "{csp}");
        assert_eq!(reply.header("x-frame-options"), Some("DENY"));
        assert_eq!(reply.header("cache-control"), Some("no-store"));
        assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    }
    // The form page keeps its referrer to itself (under `no-referrer` its own POST would
    // carry `Origin: null`); every other page sends none.
    assert_eq!(form_page.header("referrer-policy"), Some("same-origin"));
    assert_eq!(refusal.header("referrer-policy"), Some("no-referrer"));
    let cookie = form_page.header("set-cookie").unwrap();
    assert!(
        cookie.starts_with(&format!("{}=", connect::CSRF_COOKIE)),
        "{cookie}"
    );
    for attr in ["HttpOnly", "SameSite=Strict", &format!("Path={path}")] {
        assert!(cookie.contains(attr), "{cookie}");
    }
    assert!(!cookie.contains("Secure"), "plain-http page: {cookie}");
}

#[tokio::test]
async fn no_link_is_minted_from_an_unspecified_address() {
    let (addr, connect) = start().await;
    // What a server bound to 0.0.0.0 without --public-url would use.
    connect
        .set_base_url(&format!("http://0.0.0.0:{}", addr.port()))
        .unwrap();
    let (text, is_error) = completed(call_connect(addr, ALICE, url_caps(), None).await);
    assert!(is_error, "{text}");
    assert!(text.contains("--public-url"), "{text}");
    assert_eq!(connect.link_count(), 0);
}

#[test]
fn serve_refuses_an_unspecified_bind_without_a_public_url() {
    let fx = Fixture::new();
    for bind in ["0.0.0.0:0", "[::]:0"] {
        let (code, stderr) = run_to_exit(&fx.serve_args(bind));
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("--public-url"), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    for bad in [
        "ftp://notes.example.com",
        "https://u@notes.example.com",
        "notes",
    ] {
        let mut args = fx.serve_args("127.0.0.1:0");
        args.extend(["--public-url".into(), bad.into()]);
        let (code, stderr) = run_to_exit(&args);
        assert_eq!(code, Some(2), "{bad}: {stderr}");
        assert!(stderr.contains("--public-url"), "{stderr}");
    }
}

#[tokio::test]
async fn links_start_with_the_public_url() {
    let fx = Fixture::new();
    let mut args = fx.serve_args("127.0.0.1:0");
    args.extend([
        "--public-url".into(),
        "https://Notes.example.com/base/".into(),
    ]);
    let served = Served::start(&args);
    let (url, _) = fresh_link(served.addr, ALICE).await;
    assert!(
        url.starts_with("https://notes.example.com/base/connect/"),
        "{url}"
    );
}
