//! The OAuth resource server over real sockets, against a stand-in authorization server on
//! loopback whose keys the test holds, so every kind of bad token can be minted: wrong
//! audience or issuer, expired, not yet valid, `alg: none`, HS256 keyed with the public key,
//! an unknown `kid`, a key revoked by rotation, a missing scope. (tests/tests/oauth_oidc.rs
//! runs the positive flow against a real OpenID provider.)
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns: panics are failures

mod transport_support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::get;
use base64::Engine as _;
use jsonwebtoken::jwk::{Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode, get_current_timestamp};
use mcp_runtime::prelude::*;
use mcp_runtime::service::McpService;
use mcp_runtime::transport::oauth::{OAuthConfig, ResourceServer, principal_for};
use mcp_runtime::transport::{HttpConfig, HttpServer};
use serde_json::{Value, json};
use transport_support::{HttpResponse, VERSION, exchange, request};

const KEY1: &[u8] = include_bytes!("fixtures/oauth/key1.pem");
const KEY2: &[u8] = include_bytes!("fixtures/oauth/key2.pem");

#[args]
struct NoArgs {}

/// Says who is calling.
#[tool]
async fn whoami(ctx: &mut RequestContext, _args: NoArgs) -> ToolResult<String> {
    Ok(ctx.principal().to_string())
}

/// Writes something; needs `notes:write`.
#[tool]
async fn write_note(_args: NoArgs) -> ToolResult<String> {
    Ok("written".into())
}

/// Deletes something; declares its scopes on the attribute.
#[tool(scopes = ["notes:write", "notes:admin"])]
async fn purge_notes(_args: NoArgs) -> ToolResult<String> {
    Ok("purged".into())
}

/// A stand-in authorization server: RFC 8414 metadata and a JWKS the test can rotate.
struct Issuer {
    url: String,
    jwks: Arc<Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
}

fn jwk(pem: &[u8], kid: &str) -> Jwk {
    let key = EncodingKey::from_rsa_pem(pem).unwrap();
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::RS256).unwrap();
    jwk.common.key_id = Some(kid.into());
    jwk.common.key_algorithm = Some(KeyAlgorithm::RS256);
    jwk
}

fn jwks(keys: &[(&[u8], &str)]) -> Value {
    serde_json::to_value(JwkSet {
        keys: keys.iter().map(|(pem, kid)| jwk(pem, kid)).collect(),
    })
    .unwrap()
}

async fn issuer() -> Issuer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let jwks_doc = Arc::new(Mutex::new(jwks(&[(KEY1, "k1")])));
    let fetches = Arc::new(AtomicUsize::new(0));
    let metadata = json!({
        "issuer": url, "jwks_uri": format!("{url}/jwks"),
        "introspection_endpoint": format!("{url}/introspect"),
    });
    let introspected = url.clone();
    let (doc, count) = (Arc::clone(&jwks_doc), Arc::clone(&fetches));
    let app = axum::Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(move || async move { axum::Json(metadata) }),
        )
        .route(
            "/jwks",
            get(move || {
                count.fetch_add(1, Ordering::SeqCst);
                let body = doc.lock().unwrap().clone();
                async move { axum::Json(body) }
            }),
        )
        .route(
            "/introspect",
            axum::routing::post(move |headers: http::HeaderMap, form: String| {
                let issuer = introspected.clone();
                async move { axum::Json(introspection(&issuer, &headers, &form)) }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Issuer {
        url,
        jwks: jwks_doc,
        fetches,
    }
}

async fn resource_server(issuer: &Issuer, resource: &str) -> ResourceServer {
    let config = OAuthConfig::new(issuer.url.clone(), resource)
        .with_scopes(["notes:read", "notes:write"])
        .with_refresh_interval(Duration::ZERO);
    let config = config.with_introspection("rs", "rs-secret");
    let oauth = ResourceServer::new(config).unwrap();
    oauth.discover().await.unwrap();
    oauth
}

fn server() -> Server {
    Server::builder(Implementation::new("oauth-test", "0"))
        .tools(tools![whoami, write_note, purge_notes])
        .tool_scopes("write_note", ["notes:write"])
        // Every tool declares its scopes or is public: an OAuth server builds only then.
        .scoped_authorization()
        .public_tool("whoami")
        .build()
        .unwrap()
}

/// The stand-in's RFC 7662 answers: `opaque-<case>` tokens, for the client `rs`/`rs-secret`.
fn introspection(issuer: &str, headers: &http::HeaderMap, form: &str) -> Value {
    let basic = base64::engine::general_purpose::STANDARD.encode("rs:rs-secret");
    let authorized = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Basic {basic}"));
    let token = form
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .unwrap_or("")
        .replace("%40", "@")
        .replace("%3A", ":")
        .replace("%2F", "/");
    let now = get_current_timestamp();
    let resource = token.split_once('@').map_or("", |(_, r)| r);
    match token.split('@').next() {
        _ if !authorized => json!({"active": false}),
        Some("opaque-good") => json!({"active": true, "iss": issuer, "sub": "carol",
            "aud": resource, "exp": now + 300, "scope": "notes:read"}),
        Some("opaque-expired") => json!({"active": true, "sub": "carol", "aud": resource,
            "exp": now - 600}),
        Some("opaque-elsewhere") => json!({"active": true, "sub": "carol",
            "aud": "http://127.0.0.1:1/other", "exp": now + 300}),
        _ => json!({"active": false}),
    }
}

struct Mcp {
    addr: SocketAddr,
    resource: String,
}

async fn mcp(issuer: &Issuer) -> Mcp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let oauth = resource_server(issuer, &resource).await;
    let service: Arc<dyn McpService> = Arc::new(server());
    let router = HttpServer::new(service, Arc::new(oauth.clone()))
        .with_oauth(&oauth)
        .router()
        .unwrap();
    let config = HttpConfig::default();
    tokio::spawn(async move {
        mcp_runtime::transport::serve_router(listener, router, &config, std::future::pending())
            .await
    });
    Mcp { addr, resource }
}

fn claims(issuer: &Issuer, mcp: &Mcp) -> Value {
    let now = get_current_timestamp();
    json!({
        "iss": issuer.url, "sub": "alice", "aud": mcp.resource,
        "iat": now, "nbf": now, "exp": now + 300, "scope": "notes:read",
    })
}

fn mint(pem: &[u8], kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.into());
    header.typ = Some("at+jwt".into());
    encode(&header, claims, &EncodingKey::from_rsa_pem(pem).unwrap()).unwrap()
}

async fn call(mcp: &Mcp, token: Option<&str>, tool: &str) -> HttpResponse {
    let body = request(
        json!(1),
        "tools/call",
        json!({"name": tool, "arguments": {}}),
    );
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", VERSION),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ];
    if let Some(auth) = &auth {
        headers.push(("Authorization", auth));
    }
    exchange(
        mcp.addr,
        "POST",
        "/mcp",
        &headers,
        &serde_json::to_vec(&body).unwrap(),
    )
    .await
}

fn text(response: &HttpResponse) -> String {
    let v = response.json();
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text result: {v}"))
        .to_owned()
}

/// 401 with `error="invalid_token"` and the metadata URL.
fn assert_invalid(response: &HttpResponse, mcp: &Mcp, case: &str) {
    assert_eq!(response.status, 401, "{case}");
    let challenge = response.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.contains(r#"error="invalid_token""#),
        "{case}: {challenge}"
    );
    let metadata = format!(
        "resource_metadata=\"http://{}/.well-known/oauth-protected-resource/mcp\"",
        mcp.addr
    );
    assert!(challenge.contains(&metadata), "{case}: {challenge}");
}

#[tokio::test]
async fn metadata_and_challenges_point_clients_at_the_issuer() {
    let issuer = issuer().await;
    let mcp = mcp(&issuer).await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let response = exchange(mcp.addr, "GET", path, &[], b"").await;
        assert_eq!(response.status, 200, "{path}");
        let doc = response.json();
        assert_eq!(doc["resource"], json!(mcp.resource));
        assert_eq!(doc["authorization_servers"], json!([issuer.url]));
        assert_eq!(
            doc["scopes_supported"],
            json!(["notes:read", "notes:write"])
        );
    }
    // No credentials: 401 naming the metadata, without an error code.
    let response = call(&mcp, None, "whoami").await;
    assert_eq!(response.status, 401);
    let challenge = response.header("www-authenticate").unwrap();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(challenge.contains("resource_metadata="), "{challenge}");
    assert!(!challenge.contains("error="), "{challenge}");
}

#[tokio::test]
async fn a_valid_token_runs_as_issuer_plus_subject() {
    let issuer = issuer().await;
    let mcp = mcp(&issuer).await;
    let token = mint(KEY1, "k1", &claims(&issuer, &mcp));
    let response = call(&mcp, Some(&token), "whoami").await;
    assert_eq!(response.status, 200, "{:?}", response.json());
    assert_eq!(
        text(&response),
        principal_for(&issuer.url, "alice").to_string()
    );
    // An audience list containing this resource is fine too.
    let mut list = claims(&issuer, &mcp);
    list["aud"] = json!(["https://other.example", mcp.resource]);
    let response = call(&mcp, Some(&mint(KEY1, "k1", &list)), "whoami").await;
    assert_eq!(response.status, 200);
}

#[tokio::test]
async fn bad_tokens_are_refused_with_invalid_token() {
    let issuer = issuer().await;
    let mcp = mcp(&issuer).await;
    let good = claims(&issuer, &mcp);
    let now = get_current_timestamp();
    let with = |key: &str, value: Value| {
        let mut c = good.clone();
        c[key] = value;
        c
    };
    let cases = [
        (
            "wrong audience",
            mint(KEY1, "k1", &with("aud", json!("http://127.0.0.1:1/other"))),
        ),
        (
            "wrong issuer",
            mint(KEY1, "k1", &with("iss", json!("http://127.0.0.1:1"))),
        ),
        ("expired", mint(KEY1, "k1", &with("exp", json!(now - 600)))),
        (
            "not yet valid",
            mint(KEY1, "k1", &with("nbf", json!(now + 600))),
        ),
        ("no exp", {
            let mut c = good.clone();
            c.as_object_mut().unwrap().remove("exp");
            mint(KEY1, "k1", &c)
        }),
        ("no sub", {
            let mut c = good.clone();
            c.as_object_mut().unwrap().remove("sub");
            mint(KEY1, "k1", &c)
        }),
        ("signed by another key under k1", mint(KEY2, "k1", &good)),
        ("unknown kid", mint(KEY2, "k9", &good)),
        ("alg none", {
            let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
            let head = b64.encode(br#"{"alg":"none","typ":"JWT","kid":"k1"}"#);
            let body = b64.encode(serde_json::to_vec(&good).unwrap());
            format!("{head}.{body}.")
        }),
        ("HS256 keyed with the public key", {
            // The classic confusion: the verifier's RSA public key used as an HMAC secret.
            let public = serde_json::to_vec(&jwk(KEY1, "k1")).unwrap();
            let mut header = Header::new(Algorithm::HS256);
            header.kid = Some("k1".into());
            encode(&header, &good, &EncodingKey::from_secret(&public).unwrap()).unwrap()
        }),
        ("garbage", "not.a.jwt".to_owned()),
    ];
    for (case, token) in &cases {
        let response = call(&mcp, Some(token), "whoami").await;
        assert_invalid(&response, &mcp, case);
    }
    // The good token still works after all of that.
    let response = call(&mcp, Some(&mint(KEY1, "k1", &good)), "whoami").await;
    assert_eq!(response.status, 200);
}

#[tokio::test]
async fn a_key_removed_by_rotation_stops_verifying() {
    let issuer = issuer().await;
    let mcp = mcp(&issuer).await;
    let claims = claims(&issuer, &mcp);
    let old = mint(KEY1, "k1", &claims);
    assert_eq!(call(&mcp, Some(&old), "whoami").await.status, 200);
    let fetched = issuer.fetches.load(Ordering::SeqCst);
    // The issuer rotates: k1 is revoked, k2 signs from now on.
    *issuer.jwks.lock().unwrap() = jwks(&[(KEY2, "k2")]);
    let new = mint(KEY2, "k2", &claims);
    // The unknown kid makes the server refetch the keys once.
    assert_eq!(call(&mcp, Some(&new), "whoami").await.status, 200);
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), fetched + 1);
    assert_invalid(&call(&mcp, Some(&old), "whoami").await, &mcp, "revoked k1");
}

#[tokio::test]
async fn a_missing_scope_is_403_insufficient_scope() {
    let issuer = issuer().await;
    let mcp = mcp(&issuer).await;
    let mut claims = claims(&issuer, &mcp);
    let response = call(&mcp, Some(&mint(KEY1, "k1", &claims)), "write_note").await;
    assert_eq!(response.status, 403);
    let challenge = response.header("www-authenticate").unwrap();
    assert!(
        challenge.contains(r#"error="insufficient_scope""#),
        "{challenge}"
    );
    assert!(challenge.contains(r#"scope="notes:write""#), "{challenge}");
    assert!(challenge.contains("resource_metadata="), "{challenge}");
    assert_eq!(response.json()["id"], json!(1));
    // With the scope, the same call runs.
    claims["scope"] = json!("notes:read notes:write");
    let response = call(&mcp, Some(&mint(KEY1, "k1", &claims)), "write_note").await;
    assert_eq!(response.status, 200);
    assert_eq!(text(&response), "written");
}

#[tokio::test]
async fn scopes_declared_on_the_tool_attribute_are_enforced() {
    let issuer = issuer().await;
    let mcp = mcp(&issuer).await;
    let mut claims = claims(&issuer, &mcp);
    claims["scope"] = json!("notes:read notes:write");
    let response = call(&mcp, Some(&mint(KEY1, "k1", &claims)), "purge_notes").await;
    assert_eq!(response.status, 403);
    let challenge = response.header("www-authenticate").unwrap();
    assert!(
        challenge.contains(r#"error="insufficient_scope""#),
        "{challenge}"
    );
    assert!(
        challenge.contains(r#"scope="notes:write notes:admin""#),
        "{challenge}"
    );
    claims["scope"] = json!("notes:admin notes:write");
    let response = call(&mcp, Some(&mint(KEY1, "k1", &claims)), "purge_notes").await;
    assert_eq!(response.status, 200);
    assert_eq!(text(&response), "purged");
}

#[test]
fn scope_requirements_must_name_something_registered() {
    let err = Server::builder(Implementation::new("t", "0"))
        .tools(tools![whoami])
        .tool_scopes("nope", ["a"])
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("`nope`"), "{err}");
    let err = Server::builder(Implementation::new("t", "0"))
        .tools(tools![whoami])
        .tool_scopes("whoami", ["two words"])
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("invalid OAuth scope"), "{err}");
}

#[test]
fn configuration_mistakes_are_refused_up_front() {
    let bad = [
        OAuthConfig::new("http://login.example.com", "https://mcp.example.com/mcp"),
        OAuthConfig::new("https://login.example.com", "mcp"),
        OAuthConfig::new("https://login.example.com#x", "https://mcp.example.com/mcp"),
    ];
    for config in bad {
        assert!(ResourceServer::new(config.clone()).is_err(), "{config:?}");
    }
    let base = OAuthConfig::new("https://login.example.com", "https://m.example/mcp");
    assert!(
        base.clone()
            .with_algorithms([Algorithm::RS256, Algorithm::HS256])
            .is_err()
    );
    assert!(base.clone().with_algorithms(Vec::new()).is_err());
    assert!(base.clone().with_max_keys(0).is_err());
    assert!(base.with_fetch_timeout(Duration::ZERO).is_err());
}

#[cfg(feature = "legacy-2025-11-25")]
#[tokio::test]
async fn the_2025_11_25_adapter_applies_the_same_scopes() {
    use mcp_runtime::legacy::http::{LegacyHttp, LegacyHttpConfig};
    let issuer = issuer().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mcp = Mcp {
        addr,
        resource: format!("http://{addr}/mcp"),
    };
    let oauth = resource_server(&issuer, &mcp.resource).await;
    let server = server();
    let modern = HttpServer::new(Arc::new(server.clone()), Arc::new(oauth.clone()))
        .with_oauth(&oauth)
        .router()
        .unwrap();
    let app = LegacyHttp::new(server, Arc::new(oauth), LegacyHttpConfig::default()).wrap(modern);
    tokio::spawn(async move { axum::serve(listener, app).await });

    let auth = format!("Bearer {}", mint(KEY1, "k1", &claims(&issuer, &mcp)));
    let base = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "old", "version": "0"}}});
    let r = exchange(addr, "POST", "/mcp", &base, init.to_string().as_bytes()).await;
    assert_eq!(r.status, 200);
    let session = r.header("mcp-session-id").unwrap().to_owned();
    let mut headers = base.to_vec();
    headers.push(("Mcp-Session-Id", &session));
    headers.push(("MCP-Protocol-Version", "2025-11-25"));
    let call = |tool: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": {}}})
        .to_string()
    };
    let r = exchange(
        addr,
        "POST",
        "/mcp",
        &headers,
        call("write_note").as_bytes(),
    )
    .await;
    assert_eq!(r.status, 403);
    let challenge = r.header("www-authenticate").unwrap();
    assert!(
        challenge.contains(r#"error="insufficient_scope""#) && challenge.contains("notes:write"),
        "{challenge}"
    );
    let r = exchange(addr, "POST", "/mcp", &headers, call("whoami").as_bytes()).await;
    assert_eq!(r.status, 200);
    // Without a token the adapter's 401 names the metadata too.
    let r = exchange(
        addr,
        "POST",
        "/mcp",
        &headers[1..],
        call("whoami").as_bytes(),
    )
    .await;
    assert_eq!(r.status, 401);
    assert!(
        r.header("www-authenticate")
            .unwrap()
            .contains("resource_metadata=")
    );
}

#[tokio::test]
async fn opaque_tokens_are_introspected_at_the_issuer() {
    let issuer = issuer().await;
    let mcp = mcp(&issuer).await;
    // The stand-in reads the audience to answer from the token itself (`case@resource`).
    let opaque = |case: &str| format!("opaque-{case}@{}", mcp.resource);
    let response = call(&mcp, Some(&opaque("good")), "whoami").await;
    assert_eq!(response.status, 200, "{:?}", response.json());
    assert_eq!(
        text(&response),
        principal_for(&issuer.url, "carol").to_string()
    );
    let response = call(&mcp, Some(&opaque("good")), "write_note").await;
    assert_eq!(response.status, 403);
    for case in ["expired", "elsewhere", "revoked"] {
        let response = call(&mcp, Some(&opaque(case)), "whoami").await;
        assert_invalid(&response, &mcp, case);
    }
}
