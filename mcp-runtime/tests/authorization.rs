//! Authorization in the core: scope requirements (declared with `#[tool(scopes = ..)]` and
//! friends or on the builder) are checked against the request's `Grant` before any handler
//! runs, whichever way the request enters: `handle_bytes`, the service seam, the in-process
//! client, stdio. Unscoped grants (local users, static tokens) pass; a scoped grant is held
//! to every declaration and refused anything undeclared unless it is public.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod core_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use core_support::{call, meta, parse, request};
use mcp_runtime::prelude::*;
use mcp_runtime::server::BuildError;
use mcp_runtime::service::{
    AuthScheme, CancellationToken, Grant, McpService, Message, NotificationSink, ReplyKind,
    RequestScope,
};
use serde_json::{Value, json};

/// How many times any handler of this file ran (each test builds its own server and counter).
#[derive(Clone, Default)]
struct Runs(Arc<AtomicUsize>);

impl Runs {
    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

#[args]
struct NoArgs {}

/// Deletes everything.
#[tool(scopes = ["notes:write", "notes:admin"])]
async fn purge(State(runs): State<Runs>, _args: NoArgs) -> ToolResult<String> {
    runs.0.fetch_add(1, Ordering::SeqCst);
    Ok("purged".into())
}

/// Reads something; declares no scopes.
#[tool]
async fn peek(State(runs): State<Runs>, _args: NoArgs) -> ToolResult<String> {
    runs.0.fetch_add(1, Ordering::SeqCst);
    Ok("peeked".into())
}

/// A long export, run as a task for task-aware clients.
#[tool(task, scopes = ["notes:read"])]
async fn export(State(runs): State<Runs>, _args: NoArgs) -> ToolResult<String> {
    runs.0.fetch_add(1, Ordering::SeqCst);
    Ok("exported".into())
}

/// A private prompt.
#[prompt(scopes = ["prompts:private"])]
async fn secret_prompt(State(runs): State<Runs>) -> ToolResult<String> {
    runs.0.fetch_add(1, Ordering::SeqCst);
    Ok("psst".into())
}

#[args]
struct ItemVars {
    id: String,
}

/// One item.
#[resource(uri = "mem://items/{id}", name = "item", scopes = ["items:read"])]
fn item(vars: ItemVars) -> String {
    vars.id
}

fn builder(runs: &Runs) -> mcp_runtime::server::ServerBuilder {
    Server::builder(Implementation::new("scopes", "0"))
        .tools(tools![purge, peek, export])
        .prompts(prompts![secret_prompt])
        .resources(resources![item])
        // Merged with the attribute's, without duplicates.
        .tool_scopes("purge", ["notes:admin", "audit"])
        .state(runs.clone())
}

fn server(runs: &Runs) -> Server {
    builder(runs).build().unwrap()
}

fn alice(scopes: &[&str]) -> Grant {
    Grant::scoped(
        Principal::new("alice"),
        scopes.iter().copied(),
        AuthScheme::OAuth,
    )
}

async fn send(server: &Server, bytes: Vec<u8>, grant: Grant) -> Value {
    parse(server.handle_bytes(&bytes, grant).await)
}

fn forbidden(r: &Value) -> &str {
    assert_eq!(r["error"]["code"], -32600, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("Forbidden: "), "{message}");
    message
}

#[tokio::test]
async fn a_scoped_grant_lacking_a_scope_is_refused_before_the_tool_runs() {
    let runs = Runs::default();
    let s = server(&runs);
    let r = send(
        &s,
        call(1, "purge", json!({}), json!({})),
        alice(&["notes:write", "notes:admin"]),
    )
    .await;
    // The attribute's scopes and the builder's are both required.
    let message = forbidden(&r);
    assert!(message.contains("audit"), "{message}");
    assert!(!message.contains("notes:write,"), "{message}");
    assert_eq!(runs.count(), 0, "no tool code ran");

    let r = send(
        &s,
        call(2, "purge", json!({}), json!({})),
        alice(&["notes:write", "notes:admin", "audit"]),
    )
    .await;
    assert_eq!(r["result"]["content"][0]["text"], "purged", "{r}");
    assert_eq!(runs.count(), 1);
}

#[tokio::test]
async fn unscoped_grants_pass_every_requirement() {
    let runs = Runs::default();
    let s = server(&runs);
    // A plain principal is a local grant without scopes (stdio's user, the application).
    let r = parse(
        s.handle_bytes(
            &call(1, "purge", json!({}), json!({})),
            &Principal::new("me"),
        )
        .await,
    );
    assert_eq!(r["result"]["content"][0]["text"], "purged", "{r}");
    let token = Grant::unscoped(Principal::new("ci"), AuthScheme::BearerToken);
    let r = send(&s, call(2, "peek", json!({}), json!({})), token).await;
    assert_eq!(r["result"]["content"][0]["text"], "peeked", "{r}");
}

#[tokio::test]
async fn an_undeclared_tool_is_refused_to_scoped_grants_unless_public() {
    let runs = Runs::default();
    let s = server(&runs);
    let every = alice(&["notes:write", "notes:admin", "audit", "notes:read"]);
    let r = send(&s, call(1, "peek", json!({}), json!({})), every.clone()).await;
    let message = forbidden(&r);
    assert!(
        message.contains("`peek` declares no OAuth scopes"),
        "{message}"
    );
    assert_eq!(runs.count(), 0);

    let public = builder(&runs).public_tool("peek").build().unwrap();
    let r = send(&public, call(2, "peek", json!({}), json!({})), alice(&[])).await;
    assert_eq!(r["result"]["content"][0]["text"], "peeked", "{r}");
}

#[tokio::test]
async fn prompts_and_resources_are_authorized_too() {
    let runs = Runs::default();
    let s = server(&runs);
    let get = request(
        1,
        "prompts/get",
        json!({"_meta": meta(json!({})), "name": "secret_prompt"}),
    );
    let r = send(&s, get.clone(), alice(&["items:read"])).await;
    assert!(forbidden(&r).contains("prompts:private"), "{r}");
    assert_eq!(runs.count(), 0);
    let r = send(&s, get, alice(&["prompts:private"])).await;
    assert!(r.get("result").is_some(), "{r}");

    let read = request(
        2,
        "resources/read",
        json!({"_meta": meta(json!({})), "uri": "mem://items/42"}),
    );
    let r = send(&s, read.clone(), alice(&["prompts:private"])).await;
    assert!(forbidden(&r).contains("items:read"), "{r}");
    let r = send(&s, read, alice(&["items:read"])).await;
    assert_eq!(r["result"]["contents"][0]["text"], "42", "{r}");
}

fn with_tasks() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

#[tokio::test]
async fn tasks_are_authorized_at_creation_and_on_every_task_operation() {
    let runs = Runs::default();
    let s = server(&runs);
    let r = send(
        &s,
        call(1, "export", json!({}), with_tasks()),
        alice(&["notes:write"]),
    )
    .await;
    assert!(forbidden(&r).contains("notes:read"), "{r}");
    assert_eq!(runs.count(), 0, "no task was started");

    let reader = alice(&["notes:read"]);
    let r = send(
        &s,
        call(2, "export", json!({}), with_tasks()),
        reader.clone(),
    )
    .await;
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    let task_id = r["result"]["taskId"].as_str().unwrap().to_owned();
    // The same principal with a token that lost the scope cannot read or cancel the task.
    for method in ["tasks/get", "tasks/cancel"] {
        let op = request(
            3,
            method,
            json!({"_meta": meta(with_tasks()), "taskId": task_id}),
        );
        let r = send(&s, op.clone(), alice(&["notes:write"])).await;
        assert!(forbidden(&r).contains("notes:read"), "{method}: {r}");
        if method == "tasks/get" {
            let r = send(&s, op, reader.clone()).await;
            assert_eq!(r["result"]["taskId"], json!(task_id), "{r}");
        }
    }
}

/// `bytes` handled through the service seam, as a transport would, under a token that holds
/// only `notes:write`.
async fn through_the_seam(server: &Server, bytes: Vec<u8>) -> mcp_runtime::service::Reply {
    let message = Message::parse(bytes.into()).unwrap();
    let scope = RequestScope::new(
        alice(&["notes:write"]),
        NotificationSink::discard(),
        CancellationToken::new(),
    );
    McpService::handle(server, message, scope).await.unwrap()
}

#[tokio::test]
async fn the_seam_answers_a_refusal_as_forbidden_with_the_step_up_scopes() {
    let runs = Runs::default();
    let s = server(&runs);
    let reply = through_the_seam(&s, call(1, "purge", json!({}), json!({}))).await;
    assert_eq!(reply.kind, ReplyKind::Forbidden);
    assert_eq!(reply.http_status(), 403);
    assert_eq!(
        reply.step_up_scope(),
        Some("notes:admin audit notes:write"),
        "every scope the request needs, for the step-up"
    );
    // The verdict a transport may ask for beforehand is the same.
    let params = json!({"name": "purge"});
    let verdict = McpService::authorize(
        &s,
        &alice(&["notes:write"]),
        &mcp_types::RequestId::from(1),
        "tools/call",
        params.as_object().unwrap(),
    )
    .unwrap();
    assert_eq!(verdict.kind, ReplyKind::Forbidden);
    // An undeclared target offers no step-up: no scope would help.
    let reply = through_the_seam(&s, call(2, "peek", json!({}), json!({}))).await;
    assert_eq!(reply.kind, ReplyKind::Forbidden);
    assert_eq!(reply.step_up_scope(), None);
}

#[cfg(feature = "client")]
#[tokio::test]
async fn the_in_process_client_is_authorized_like_any_transport() {
    let runs = Runs::default();
    let client = mcp_runtime::client::Client::in_process(server(&runs), alice(&["notes:admin"]));
    let err = client.call("purge", json!({})).await.unwrap_err();
    assert!(err.to_string().contains("Forbidden"), "{err}");
    assert_eq!(runs.count(), 0);
    let local = mcp_runtime::client::Client::in_process(server(&runs), Principal::new("me"));
    let _ = local.call("purge", json!({})).await.unwrap();
    assert_eq!(runs.count(), 1);
}

#[tokio::test]
async fn stdio_holds_a_scoped_grant_to_the_same_rules() {
    let runs = Runs::default();
    let service: Arc<dyn McpService> = Arc::new(server(&runs));
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let served = tokio::spawn(mcp_runtime::transport::stdio::serve(
        service,
        alice(&["notes:write"]),
        server_read,
        server_write,
        mcp_runtime::transport::stdio::StdioConfig::default(),
    ));
    let (client_read, mut client_write) = tokio::io::split(client_end);
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut line = call(1, "purge", json!({}), json!({}));
    line.push(b'\n');
    client_write.write_all(&line).await.unwrap();
    let mut lines = tokio::io::BufReader::new(client_read).lines();
    let reply = tokio::time::timeout(std::time::Duration::from_secs(10), lines.next_line())
        .await
        .expect("a reply within 10 s")
        .unwrap()
        .unwrap();
    let r: Value = serde_json::from_str(&reply).unwrap();
    assert!(forbidden(&r).contains("notes:admin"), "{r}");
    assert_eq!(runs.count(), 0);
    // Both halves of the client's end: the duplex closes only when all of it is gone.
    drop(client_write);
    drop(lines);
    tokio::time::timeout(std::time::Duration::from_secs(10), served)
        .await
        .expect("stdio ends with its input")
        .unwrap()
        .unwrap();
}

#[test]
fn scoped_authorization_refuses_to_build_with_an_undeclared_target() {
    let runs = Runs::default();
    let err = builder(&runs).scoped_authorization().build().unwrap_err();
    assert!(matches!(err, BuildError::Unscoped(_)), "{err}");
    let text = err.to_string();
    assert!(text.contains("the tool `peek`"), "{text}");
    assert!(text.contains(".public_tool(\"peek\")"), "{text}");
    assert!(!text.contains("`purge`"), "{text}");
    // Declared public (or given scopes), it builds.
    builder(&runs)
        .scoped_authorization()
        .public_tool("peek")
        .build()
        .unwrap();
    builder(&runs)
        .scoped_authorization()
        .tool_scopes("peek", ["notes:read"])
        .build()
        .unwrap();
}

#[test]
fn public_and_scoped_at_once_is_a_build_error() {
    let runs = Runs::default();
    let err = builder(&runs).public_tool("purge").build().unwrap_err();
    assert!(
        err.to_string()
            .contains("declared public and also requires scopes"),
        "{err}"
    );
    let err = builder(&runs).public_tool("nope").build().unwrap_err();
    assert!(err.to_string().contains("`nope`"), "{err}");
}

/// Accepts every request as an OAuth grant (a stand-in for the real resource server, whose
/// token checks are not what this file tests).
#[cfg(feature = "http")]
struct OAuthLike;

#[cfg(feature = "http")]
impl mcp_runtime::transport::Authenticator for OAuthLike {
    fn authenticate(
        &self,
        _headers: &http::HeaderMap,
    ) -> Result<Principal, mcp_runtime::transport::AuthRejection> {
        Ok(Principal::new("alice"))
    }

    fn scheme(&self) -> AuthScheme {
        AuthScheme::OAuth
    }
}

#[cfg(feature = "http")]
#[tokio::test]
async fn an_oauth_endpoint_on_a_server_built_without_scoped_authorization_does_not_start() {
    use mcp_runtime::transport::{HttpConfig, HttpServer, SetupError};
    let runs = Runs::default();
    // Built without `scoped_authorization()`: an OAuth endpoint is refused up front, with a
    // message that says what to do.
    let unscoped = HttpServer::new(Arc::new(server(&runs)), Arc::new(OAuthLike));
    let err = unscoped.router().expect_err("refused");
    assert!(matches!(err, SetupError::Grants(_)), "{err}");
    assert!(err.to_string().contains("scoped_authorization()"), "{err}");
    let err = unscoped.bind().await.err().expect("bind refused too");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
    // Other schemes on the same server, and OAuth on a scoped server, start.
    let anonymous = mcp_runtime::transport::AllowAnonymous(Principal::new("me"));
    let local = HttpServer::new(Arc::new(server(&runs)), Arc::new(anonymous));
    assert!(local.router().is_ok());
    let scoped = builder(&runs)
        .scoped_authorization()
        .public_tool("peek")
        .build()
        .unwrap();
    let oauth =
        HttpServer::new(Arc::new(scoped), Arc::new(OAuthLike)).with_config(HttpConfig::default());
    assert!(oauth.router().is_ok());
}
