//! `notes_connect_export` end to end over real HTTP: URL-mode elicitation, the connect page
//! served by the same HTTP server, principal binding (another principal is refused), one-time
//! links, and the third-party token never leaving the server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::Principal;
use mcp_runtime::replay::MemoryReplayStore;
use mcp_runtime::scope::ScopePolicy;
use mcp_runtime::state::StateKeyring;
use mcp_runtime::transport::{Authenticator, BearerTokens, HttpServer, McpService};
use notes_example::connect::{self, ExportConnect};
use notes_example::notes::Notes;
use notes_example::tools::build_server_with;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ALICE: &str = "alice-token-0123456789abcdefghijklmnopqrstuv";
const BOB: &str = "bob-token-0123456789abcdefghijklmnopqrstuvwx";
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
        .merge(connect::routes(connect.clone(), auth));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    connect.set_base_url(format!("http://{addr}"));
    tokio::spawn(async move { axum::serve(listener, router).await });
    (addr, connect)
}

/// One HTTP/1.1 exchange; returns (status, body).
async fn exchange(addr: SocketAddr, head: String, body: &[u8]) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    stream.write_all(&request).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut raw))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8(raw).unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

async fn mcp(addr: SocketAddr, token: &str, caps: Value, extra: Value) -> Value {
    let mut params = json!({
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": caps},
        "name": "notes_connect_export", "arguments": {}});
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n\
         Mcp-Name: notes_connect_export\r\nAuthorization: Bearer {token}\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    let (status, body) = exchange(addr, head, body.as_bytes()).await;
    assert!(status == 200 || status == 400, "{status} {body}");
    serde_json::from_str(&body).unwrap()
}

async fn page(addr: SocketAddr, path: &str, form: Option<String>) -> (u16, String) {
    match form {
        None => {
            let head = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
            exchange(addr, head, b"").await
        }
        Some(form) => {
            let head = format!(
                "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
                 Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n",
                form.len()
            );
            exchange(addr, head, form.as_bytes()).await
        }
    }
}

fn url_caps() -> Value {
    json!({"elicitation": {"url": {}}})
}

#[tokio::test]
async fn connect_flow_binds_the_browser_user_to_the_principal() {
    let (addr, connect) = start().await;
    let mut seen = Vec::new();

    // Needs URL mode: a form-only client is told exactly what is missing.
    let r = mcp(addr, ALICE, json!({"elicitation": {"form": {}}}), json!({})).await;
    assert_eq!(r["error"]["code"], -32021, "{r}");
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {"url": {}}})
    );

    let r = mcp(addr, ALICE, url_caps(), json!({})).await;
    seen.push(r.to_string());
    let ask = &r["result"]["inputRequests"][connect::CONNECT_KEY]["params"];
    assert_eq!(ask["mode"], "url", "{r}");
    let url = ask["url"].as_str().unwrap().to_owned();
    let prefix = format!("http://{addr}/connect/");
    assert!(url.starts_with(&prefix), "{url}");
    let path = url.trim_start_matches(&format!("http://{addr}")).to_owned();
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();

    // Accepting before finishing the page: asked again.
    let accept = |st: &str| {
        json!({"requestState": st,
               "inputResponses": {connect::CONNECT_KEY: {"action": "accept"}}})
    };
    let r = mcp(addr, ALICE, url_caps(), accept(&state)).await;
    seen.push(r.to_string());
    let again = &r["result"]["inputRequests"][connect::CONNECT_KEY]["params"];
    assert_eq!(again["url"], url.as_str(), "{r}");
    assert!(again["message"].as_str().unwrap().contains("not completed"));
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();

    // The page exists; bob (another principal) cannot complete alice's link.
    let (status, body) = page(addr, &path, None).await;
    assert_eq!(status, 200);
    assert!(body.contains("<form"));
    let form = |token: &str| format!("mcp_token={token}&export_token={SECRET}");
    let (status, _) = page(addr, &path, Some(form(BOB))).await;
    assert_eq!(status, 403);
    assert!(connect.token_of(&Principal::new("bob")).is_none());
    // No valid MCP token at all.
    let (status, _) = page(addr, &path, Some(form("not-a-token"))).await;
    assert_eq!(status, 401);
    assert!(!connect.is_complete(&Principal::new("alice"), ids(&state)));
    // Alice completes it; the link is then spent.
    let (status, _) = page(addr, &path, Some(form(ALICE))).await;
    assert_eq!(status, 200);
    let (status, _) = page(addr, &path, Some(form(ALICE))).await;
    assert_eq!(status, 404);
    let (status, _) = page(addr, "/connect/made-up", Some(form(ALICE))).await;
    assert_eq!(status, 404);

    let r = mcp(addr, ALICE, url_caps(), accept(&state)).await;
    seen.push(r.to_string());
    assert_eq!(
        r["result"]["content"][0]["text"], "The export is connected.",
        "{r}"
    );
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
    let r = mcp(addr, ALICE, url_caps(), json!({})).await;
    let url = r["result"]["inputRequests"][connect::CONNECT_KEY]["params"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let corr = ids(r["result"]["requestState"].as_str().unwrap());
    assert!(!url.contains(&corr.to_string()), "{url}");
}
