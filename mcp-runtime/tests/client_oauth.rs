//! The client's OAuth layer (`mcp_runtime::client::oauth`) against a scripted MCP server and
//! authorization server on loopback: the whole flow (PKCE checked by the server, step-up,
//! refresh) and hostile authorization-server input, each refused with its typed error before a
//! code or token is sent anywhere.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code fails loudly by design

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use mcp_runtime::client::oauth::{AuthError, ClientCredentials, OAuthClient};
use mcp_runtime::client::{Client, ClientError, HttpTransport};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

/// One request as the scripted server saw it.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    query: HashMap<String, String>,
    headers: HashMap<String, String>,
    body: String,
}

impl Seen {
    fn form(&self) -> HashMap<String, String> {
        parse_query(&self.body)
    }
}

struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
}

fn json_reply(status: u16, body: Value) -> Reply {
    Reply {
        status,
        headers: vec![("content-type", "application/json".into())],
        body: body.to_string(),
    }
}

type Handler = dyn Fn(&Seen, &str) -> Reply + Send + Sync;

/// A loopback HTTP/1.1 server answering every request with `handler(request, base_url)`.
struct Scripted {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Scripted {
    async fn start(
        host: &str,
        handler: impl Fn(&Seen, &str) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{host}:{}", listener.local_addr().unwrap().port());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let (b, s) = (base.clone(), seen.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let (handler, base, seen) = (handler.clone(), b.clone(), s.clone());
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut stream).await else {
                        return;
                    };
                    seen.lock().unwrap().push(request.clone());
                    let reply = handler(&request, &base);
                    let mut out = format!(
                        "HTTP/1.1 {} X\r\ncontent-length: {}\r\nconnection: close\r\n",
                        reply.status,
                        reply.body.len()
                    );
                    for (name, value) in &reply.headers {
                        out.push_str(&format!("{name}: {value}\r\n"));
                    }
                    out.push_str("\r\n");
                    out.push_str(&reply.body);
                    let _ = stream.write_all(out.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Scripted { base, seen }
    }

    fn seen(&self, path: &str) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.path == path)
            .cloned()
            .collect()
    }
}

async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let _method = first.next()?;
    let target = first.next()?.to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..]).into_owned();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    Some(Seen {
        path: path.to_owned(),
        query: parse_query(query),
        headers,
        body,
    })
}

fn parse_query(q: &str) -> HashMap<String, String> {
    q.split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(&s.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

/// What the scripted authorization server does wrong (or right).
#[derive(Clone, Default)]
struct AsScript {
    /// `issuer` in the metadata; `None`: the real one.
    issuer: Option<String>,
    /// `iss` in the redirect back: `None` the real one, `Some(None)` omitted.
    iss: Option<Option<String>>,
    /// A replacement metadata body.
    metadata_body: Option<String>,
    /// The metadata URL redirects here instead of answering.
    metadata_redirect: Option<String>,
    /// The authorization endpoint redirects here instead of to the redirect URI.
    authorize_redirect: Option<String>,
    /// The token endpoint in the metadata.
    token_endpoint: Option<String>,
    /// Scopes each issued token carries: the requested ones.
    issue_refresh: bool,
}

async fn authorization_server(script: AsScript) -> Scripted {
    let challenges: Arc<Mutex<HashMap<String, String>>> = Arc::default();
    Scripted::start("127.0.0.1", move |req, base| {
        match req.path.as_str() {
            "/.well-known/oauth-authorization-server" => {
                if let Some(to) = &script.metadata_redirect {
                    return Reply { status: 302, headers: vec![("location", to.clone())], body: String::new() };
                }
                if let Some(body) = &script.metadata_body {
                    return Reply { status: 200, headers: vec![("content-type", "application/json".into())], body: body.clone() };
                }
                json_reply(200, json!({
                    "issuer": script.issuer.clone().unwrap_or_else(|| base.to_owned()),
                    "authorization_endpoint": format!("{base}/authorize"),
                    "token_endpoint": script.token_endpoint.clone().unwrap_or_else(|| format!("{base}/token")),
                    "registration_endpoint": format!("{base}/register"),
                    "response_types_supported": ["code"],
                    "code_challenge_methods_supported": ["S256"],
                    "authorization_response_iss_parameter_supported": true,
                    "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                }))
            }
            "/register" => json_reply(201, json!({"client_id": "dyn-client", "client_secret": "dyn-secret"})),
            "/authorize" => {
                if let Some(to) = &script.authorize_redirect {
                    return Reply { status: 302, headers: vec![("location", to.clone())], body: String::new() };
                }
                let code = format!("code-{}", req.query["scope"].replace(' ', "."));
                challenges.lock().unwrap().insert(code.clone(), req.query["code_challenge"].clone());
                let mut to = format!("{}?code={code}&state={}", req.query["redirect_uri"], req.query["state"]);
                match &script.iss {
                    None => to.push_str(&format!("&iss={base}")),
                    Some(Some(iss)) => to.push_str(&format!("&iss={iss}")),
                    Some(None) => {}
                }
                Reply { status: 302, headers: vec![("location", to)], body: String::new() }
            }
            "/token" => {
                let form = req.form();
                let scope = match form["grant_type"].as_str() {
                    "authorization_code" => {
                        let challenge = challenges.lock().unwrap().get(&form["code"]).cloned().unwrap_or_default();
                        let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                            .encode(Sha256::digest(form["code_verifier"].as_bytes()));
                        if computed != challenge {
                            return json_reply(400, json!({"error": "invalid_grant"}));
                        }
                        form["code"].trim_start_matches("code-").replace('.', " ")
                    }
                    "refresh_token" => form["refresh_token"].trim_start_matches("refresh-").replace('.', " "),
                    _ => return json_reply(400, json!({"error": "unsupported_grant_type"})),
                };
                let mut body = json!({"access_token": format!("token-{}", scope.replace(' ', ".")), "token_type": "Bearer", "expires_in": 3600, "scope": scope});
                if script.issue_refresh {
                    body["refresh_token"] = json!(format!("refresh-{}", scope.replace(' ', ".")));
                }
                json_reply(200, body)
            }
            _ => json_reply(404, json!({"error": "not_found"})),
        }
    })
    .await
}

/// The MCP endpoint: `tools/list` needs `read`, `tools/call` needs `write`; its metadata
/// names `resource` (default: its own URL) and the authorization server.
async fn mcp_server(issuer: String, resource: Option<String>) -> Scripted {
    Scripted::start("127.0.0.1", move |req, base| {
        if req.path == "/.well-known/oauth-protected-resource/mcp" {
            return json_reply(200, json!({
                "resource": resource.clone().unwrap_or_else(|| format!("{base}/mcp")),
                "authorization_servers": [issuer],
                "scopes_supported": ["read"],
            }));
        }
        let body: Value = serde_json::from_str(&req.body).unwrap_or_default();
        let needs = if body["method"] == "tools/call" { "write" } else { "read" };
        let prm = format!("{base}/.well-known/oauth-protected-resource/mcp");
        let granted: Vec<String> = req
            .headers
            .get("authorization")
            .and_then(|a| a.strip_prefix("Bearer token-"))
            .map(|s| s.split('.').map(str::to_owned).collect())
            .unwrap_or_default();
        if !req.headers.contains_key("authorization") {
            return Reply {
                status: 401,
                headers: vec![("www-authenticate", format!(r#"Bearer resource_metadata="{prm}""#))],
                body: String::new(),
            };
        }
        if !granted.iter().any(|g| g == needs) {
            return Reply {
                status: 403,
                headers: vec![("www-authenticate", format!(r#"Bearer error="insufficient_scope", scope="{needs}", resource_metadata="{prm}""#))],
                body: String::new(),
            };
        }
        let result = if body["method"] == "tools/call" {
            json!({"resultType": "complete", "content": [{"type": "text", "text": "ok"}]})
        } else {
            json!({"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "private"})
        };
        json_reply(200, json!({"jsonrpc": "2.0", "id": body["id"], "result": result}))
    })
    .await
}

fn client(mcp: &Scripted, oauth: OAuthClient) -> Client {
    let transport = HttpTransport::new(&format!("{}/mcp", mcp.base))
        .unwrap()
        .oauth(oauth);
    Client::builder(transport)
        .timeout(Duration::from_secs(10))
        .build()
}

fn oauth() -> OAuthClient {
    OAuthClient::builder("http://127.0.0.1:1/callback")
        .http_timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

fn auth_error(result: Result<impl std::fmt::Debug, ClientError>) -> AuthError {
    match result {
        Err(ClientError::Authorization(e)) => *e,
        other => panic!("expected an authorization error, got {other:?}"),
    }
}

#[tokio::test]
async fn authorizes_with_pkce_then_steps_up_for_the_union_of_scopes() {
    let auth = authorization_server(AsScript::default()).await;
    let mcp = mcp_server(auth.base.clone(), None).await;
    let client = client(&mcp, oauth());
    client.list_tools(None).await.unwrap();
    let result = client.call_tool("anything", json!({})).await.unwrap();
    assert!(!result.is_error.unwrap_or(false));
    let authorize = auth.seen("/authorize");
    assert_eq!(authorize.len(), 2, "one authorization, one step-up");
    assert_eq!(authorize[0].query["scope"], "read");
    assert_eq!(
        authorize[1].query["scope"], "read write",
        "step-up keeps the granted scope"
    );
    assert_eq!(authorize[0].query["code_challenge_method"], "S256");
    assert_eq!(authorize[0].query["resource"], format!("{}/mcp", mcp.base));
    let token = auth.seen("/token");
    assert_eq!(token[0].form()["resource"], format!("{}/mcp", mcp.base));
    // Registered dynamically; the server takes only client_secret_basic.
    assert!(token[0].headers["authorization"].starts_with("Basic "));
    assert_eq!(
        auth.seen("/register").len(),
        1,
        "registered once per issuer"
    );
}

#[tokio::test]
async fn a_step_up_that_never_satisfies_the_server_stops_at_the_limit() {
    let auth = authorization_server(AsScript::default()).await;
    // A server that refuses every token for a scope the user never gets.
    let refusing = Scripted::start("127.0.0.1", {
        let issuer = auth.base.clone();
        move |req, base| {
            let prm = format!("{base}/.well-known/oauth-protected-resource/mcp");
            if req.path.starts_with("/.well-known") {
                return json_reply(200, json!({"resource": format!("{base}/mcp"), "authorization_servers": [issuer]}));
            }
            let (status, header) = if req.headers.contains_key("authorization") {
                (403, format!(r#"Bearer error="insufficient_scope", scope="admin", resource_metadata="{prm}""#))
            } else {
                (401, format!(r#"Bearer scope="admin", resource_metadata="{prm}""#))
            };
            Reply { status, headers: vec![("www-authenticate", header)], body: String::new() }
        }
    })
    .await;
    let err = auth_error(client_for(&refusing).list_tools(None).await);
    assert!(
        matches!(err, AuthError::StepUpLimit { attempts: 2, .. }),
        "{err:?}"
    );
    assert_eq!(
        auth.seen("/authorize").len(),
        3,
        "one authorization and two step-ups"
    );
}

fn client_for(mcp: &Scripted) -> Client {
    client(mcp, oauth())
}

#[tokio::test]
async fn an_expired_token_is_refreshed_with_the_refresh_token() {
    let auth = authorization_server(AsScript {
        issue_refresh: true,
        ..AsScript::default()
    })
    .await;
    let mcp = mcp_server(auth.base.clone(), None).await;
    let store = Arc::new(mcp_runtime::client::oauth::MemoryTokenStore::default());
    let oauth = OAuthClient::builder("http://127.0.0.1:1/callback")
        .token_store(Arc::clone(&store))
        .build()
        .unwrap();
    let client = client(&mcp, oauth);
    client.list_tools(None).await.unwrap();
    let key = format!("{}/mcp", mcp.base);
    use mcp_runtime::client::oauth::TokenStore as _;
    let mut held = store.load(&key).unwrap();
    assert!(held.refresh_token.is_some());
    held.expires_at = Some(std::time::SystemTime::now());
    store.save(&key, held);
    client.list_tools(None).await.unwrap();
    let grants: Vec<String> = auth
        .seen("/token")
        .iter()
        .map(|t| t.form()["grant_type"].clone())
        .collect();
    assert_eq!(grants, ["authorization_code", "refresh_token"]);
    assert_eq!(auth.seen("/authorize").len(), 1, "no second authorization");
}

#[tokio::test]
async fn metadata_naming_another_issuer_is_refused_before_any_endpoint_is_used() {
    let auth = authorization_server(AsScript {
        issuer: Some("https://attacker.example".into()),
        ..AsScript::default()
    })
    .await;
    let mcp = mcp_server(auth.base.clone(), None).await;
    let err = auth_error(client_for(&mcp).list_tools(None).await);
    assert!(
        matches!(err, AuthError::IssuerMismatch { ref found, .. } if found == "https://attacker.example"),
        "{err:?}"
    );
    assert!(auth.seen("/register").is_empty() && auth.seen("/authorize").is_empty());
}

#[tokio::test]
async fn resource_metadata_for_another_resource_is_refused() {
    let auth = authorization_server(AsScript::default()).await;
    let mcp = mcp_server(auth.base.clone(), Some("https://evil.example/mcp".into())).await;
    let err = auth_error(client_for(&mcp).list_tools(None).await);
    assert!(matches!(err, AuthError::ResourceMismatch { .. }), "{err:?}");
    assert!(
        auth.seen("/.well-known/oauth-authorization-server")
            .is_empty()
    );
}

#[tokio::test]
async fn a_wrong_or_missing_iss_in_the_redirect_back_keeps_the_code_unredeemed() {
    for iss in [Some("https://evil.example".to_owned()), None] {
        let auth = authorization_server(AsScript {
            iss: Some(iss.clone()),
            ..AsScript::default()
        })
        .await;
        let mcp = mcp_server(auth.base.clone(), None).await;
        let err = auth_error(client_for(&mcp).list_tools(None).await);
        assert!(
            matches!(err, AuthError::ResponseIssuer { ref found, .. } if *found == iss),
            "{err:?}"
        );
        assert!(
            auth.seen("/token").is_empty(),
            "the code must not reach the token endpoint"
        );
    }
}

#[tokio::test]
async fn oversized_or_malformed_metadata_is_refused() {
    let huge = format!(r#"{{"issuer": "{}"}}"#, "x".repeat(300 * 1024));
    let auth = authorization_server(AsScript {
        metadata_body: Some(huge),
        ..AsScript::default()
    })
    .await;
    let mcp = mcp_server(auth.base.clone(), None).await;
    let err = auth_error(client_for(&mcp).list_tools(None).await);
    assert!(
        matches!(err, AuthError::TooLarge { limit: 262_144, .. }),
        "{err:?}"
    );

    for body in ["not json", r#"["an", "array"]"#, r#"{"issuer": 7}"#] {
        let auth = authorization_server(AsScript {
            metadata_body: Some(body.into()),
            ..AsScript::default()
        })
        .await;
        let mcp = mcp_server(auth.base.clone(), None).await;
        let err = auth_error(client_for(&mcp).list_tools(None).await);
        assert!(
            matches!(err, AuthError::Malformed { .. }),
            "{body}: {err:?}"
        );
    }
}

#[tokio::test]
async fn redirects_to_other_hosts_are_refused() {
    // Metadata redirected to another origin.
    let auth = authorization_server(AsScript {
        metadata_redirect: Some("http://localhost:9/.well-known/oauth-authorization-server".into()),
        ..AsScript::default()
    })
    .await;
    let mcp = mcp_server(auth.base.clone(), None).await;
    let err = auth_error(client_for(&mcp).list_tools(None).await);
    assert!(matches!(err, AuthError::Redirect { .. }), "{err:?}");

    // The authorization endpoint sending the headless agent somewhere else.
    let auth = authorization_server(AsScript {
        authorize_redirect: Some("http://localhost:9/phish".into()),
        ..AsScript::default()
    })
    .await;
    let mcp = mcp_server(auth.base.clone(), None).await;
    let err = auth_error(client_for(&mcp).list_tools(None).await);
    assert!(
        matches!(err, AuthError::Redirect { ref to, .. } if to.contains("localhost:9")),
        "{err:?}"
    );
    assert!(auth.seen("/token").is_empty());
}

#[tokio::test]
async fn a_plain_http_token_endpoint_off_loopback_is_refused() {
    let auth = authorization_server(AsScript {
        token_endpoint: Some("http://tokens.example/token".into()),
        ..AsScript::default()
    })
    .await;
    let mcp = mcp_server(auth.base.clone(), None).await;
    let err = auth_error(client_for(&mcp).list_tools(None).await);
    assert!(
        matches!(
            err,
            AuthError::InsecureUrl {
                what: "token_endpoint",
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn pre_registered_credentials_are_used_instead_of_registration() {
    let auth = authorization_server(AsScript::default()).await;
    let mcp = mcp_server(auth.base.clone(), None).await;
    let oauth = OAuthClient::builder("http://127.0.0.1:1/callback")
        .pre_registered(
            Some(auth.base.clone()),
            ClientCredentials::new("pre", Some("s3cret".into())),
        )
        .build()
        .unwrap();
    client(&mcp, oauth).list_tools(None).await.unwrap();
    assert!(auth.seen("/register").is_empty());
    let basic = base64::engine::general_purpose::STANDARD.encode("pre:s3cret");
    assert_eq!(
        auth.seen("/token")[0].headers["authorization"],
        format!("Basic {basic}")
    );
    assert_eq!(auth.seen("/authorize")[0].query["client_id"], "pre");
}
