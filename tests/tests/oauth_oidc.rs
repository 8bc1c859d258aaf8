//! `notes-example serve --http --oauth-issuer`: access tokens from a real authorization server
//! we did not write, `oidc-provider` from the npm registry (tests/fixtures/oidc-provider),
//! started on loopback with resource indicators, JWT access tokens, the client-credentials
//! grant, and the authorization code flow the typed client's OAuth layer runs. The tokens' issuer + subject is the principal the notes server authorizes workspaces
//! for and binds request state to; scopes gate the tools.
//!
//! Needs `node` and `npm`: without them the test prints why it is skipped, unless
//! `MCP_REQUIRE_NODE=1` (set by CI), which makes their absence a failure. The fixture is
//! installed with `npm ci` from its lock file into the target directory.
// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use mcp_tests::notes::*;
use mcp_tests::{call_params, form_caps, http_post, retry_params, spawn_notes_http};
use serde_json::{Value, json};

const FIXTURE_FILES: [&str; 3] = ["package.json", "package-lock.json", "provider.mjs"];

fn tool_available(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Copies the fixture into the target directory and runs `npm ci` there when its lock file
/// changed.
fn install() -> PathBuf {
    // The tests of this file run in parallel and share the one install: two `npm ci` at once
    // in one directory trip over each other's files.
    static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = INSTALL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/oidc-provider");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("oidc-provider-fixture");
    std::fs::create_dir_all(&dir).unwrap();
    let lock = std::fs::read(source.join("package-lock.json")).unwrap();
    let installed = dir.join("node_modules/.installed-lock.json");
    let fresh = std::fs::read(&installed).is_ok_and(|l| l == lock);
    for file in FIXTURE_FILES {
        std::fs::copy(source.join(file), dir.join(file)).unwrap();
    }
    if !fresh {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .status()
            .expect("npm ci could not start");
        assert!(status.success(), "npm ci failed in {}", dir.display());
        std::fs::write(&installed, &lock).unwrap();
    }
    dir
}

/// The running provider; killed (by its own pid) when dropped.
struct Provider {
    child: Child,
    issuer: String,
    addr: SocketAddr,
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_provider(dir: &Path) -> Provider {
    let mut child = Command::new("node")
        .arg("provider.mjs")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node could not start");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let _ = reader.read_line(&mut line);
        let _ = tx.send(line);
        // Keep draining: oidc-provider prints notices on stdout later (the authorization code
        // flow), and a closed pipe would crash it with EPIPE.
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("oidc-provider did not start within 30 s");
    let issuer = line
        .trim()
        .strip_prefix("issuer=")
        .unwrap_or_else(|| panic!("unexpected provider output {line:?}"))
        .to_owned();
    let addr = issuer.trim_start_matches("http://").parse().unwrap();
    Provider {
        child,
        issuer,
        addr,
    }
}

/// One HTTP/1.1 exchange over a fresh connection; returns (status, body).
fn exchange(addr: SocketAddr, request: &str) -> (u16, String) {
    let (status, _, body) = exchange_with_head(addr, request);
    (status, body)
}

/// One HTTP/1.1 exchange over a fresh connection; returns (status, head, body).
fn exchange_with_head(addr: SocketAddr, request: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head.to_owned(), body.to_owned())
}

fn form_encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A client-credentials access token for `resource` with `scope`.
fn token(provider: &Provider, client: &str, secret: &str, scope: &str, resource: &str) -> String {
    let body = [
        ("grant_type", "client_credentials"),
        ("client_id", client),
        ("client_secret", secret),
        ("scope", scope),
        ("resource", resource),
    ]
    .iter()
    .map(|(k, v)| format!("{k}={}", form_encode(v)))
    .collect::<Vec<_>>()
    .join("&");
    let request = format!(
        "POST /token HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Accept: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        provider.addr,
        body.len()
    );
    let (status, body) = exchange(provider.addr, &request);
    assert_eq!(status, 200, "token request failed: {body}");
    let value: Value = serde_json::from_str(&body).unwrap();
    value["access_token"].as_str().unwrap().to_owned()
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// oidc-provider and a notes server trusting it, the workspace granted to the subject
/// `notes-writer`; `None` (with the reason printed) when node and npm are missing.
fn provider_and_notes() -> Option<(Provider, NotesFixture, mcp_tests::StdioServer, SocketAddr)> {
    provider_and_notes_for("notes-writer")
}

/// [`provider_and_notes`] with the workspace granted to the subject `grantee`.
fn provider_and_notes_for(
    grantee: &str,
) -> Option<(Provider, NotesFixture, mcp_tests::StdioServer, SocketAddr)> {
    if !(tool_available("node") && tool_available("npm")) {
        assert!(
            std::env::var("MCP_REQUIRE_NODE").as_deref() != Ok("1"),
            "MCP_REQUIRE_NODE=1 but node/npm are not on PATH"
        );
        eprintln!("skipped: node and npm are needed to run oidc-provider for the OAuth test");
        return None;
    }
    let provider = start_provider(&install());
    let fx = NotesFixture::new().unwrap();
    let writer_ws = format!("{grantee}={}", fx.notes.display());
    let (server, addr) = spawn_notes_http(&[
        "serve",
        "--http",
        "127.0.0.1:0",
        "--oauth-issuer",
        &provider.issuer,
        "--workspace",
        &writer_ws,
        "--store",
        &fx.store,
        "--state-key-file",
        fx.key_file.to_str().unwrap(),
    ])
    .unwrap();
    Some((provider, fx, server, addr))
}

#[test]
fn oidc_provider_tokens_authorize_the_notes_flow() {
    let Some((provider, fx, _server, addr)) = provider_and_notes() else {
        return;
    };
    let resource = format!("http://{addr}/mcp");

    // Discovery: the metadata names the issuer; a tokenless request is pointed at it.
    let (status, body) = exchange(
        addr,
        &format!(
            "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(status, 200, "{body}");
    let metadata: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(metadata["resource"], json!(resource));
    assert_eq!(metadata["authorization_servers"], json!([provider.issuer]));
    let list = rpc(
        1,
        "tools/call",
        call_params("notes_list", json!({"workspaceUri": fx.uri}), json!({})),
    );
    let anonymous = http_post(addr, None, &list).unwrap();
    assert_eq!(anonymous.status, 401);
    let challenge = anonymous.header("www-authenticate").unwrap();
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"http://{addr}/.well-known/oauth-protected-resource/mcp\""
        )),
        "{challenge}"
    );

    // The writer (subject `notes-writer` of this issuer) lists and deletes in its workspace,
    // the confirmation's request state bound to it.
    let writer = token(
        &provider,
        "notes-writer",
        "writer-secret-0123456789abcdef",
        "notes:read notes:write",
        &resource,
    );
    let listed = http_post(addr, Some(&writer), &list).unwrap();
    assert_eq!(listed.status, 200, "{listed:?}");
    assert!(is_success(&listed.json().unwrap()), "{listed:?}");
    let args = fx.delete_args("tps report (draft)");
    let first = http_post(
        addr,
        Some(&writer),
        &rpc(
            2,
            "tools/call",
            call_params("notes_delete", args.clone(), form_caps()),
        ),
    )
    .unwrap()
    .json()
    .unwrap();
    assert_eq!(result_type(&first), Some("input_required"), "{first}");
    let state = request_state(&first).unwrap();
    let retry = rpc(
        3,
        "tools/call",
        retry_params(
            "notes_delete",
            args,
            form_caps(),
            json!({ DELETE_KEY: choose("tps-report-draft.md", true) }),
            &state,
        ),
    );

    // The reader: notes:read only, and no workspace of its own.
    let reader = token(
        &provider,
        "notes-reader",
        "reader-secret-0123456789abcdef",
        "notes:read",
        &resource,
    );
    let denied = http_post(addr, Some(&reader), &retry).unwrap();
    assert_eq!(denied.status, 403, "{denied:?}");
    let challenge = denied.header("www-authenticate").unwrap();
    assert!(
        challenge.contains(r#"error="insufficient_scope""#) && challenge.contains("notes:write"),
        "{challenge}"
    );
    assert!(fx.exists("tps-report-draft.md"));
    let foreign = http_post(addr, Some(&reader), &list).unwrap();
    assert_eq!(foreign.status, 200);
    assert!(
        is_tool_error(&foreign.json().unwrap()),
        "the reader has no grant on the writer's workspace: {foreign:?}"
    );

    // A token the same issuer minted for another resource is refused (RFC 8707 audience).
    let elsewhere = token(
        &provider,
        "notes-writer",
        "writer-secret-0123456789abcdef",
        "notes:read notes:write",
        "http://127.0.0.1:1/other",
    );
    let refused = http_post(addr, Some(&elsewhere), &list).unwrap();
    assert_eq!(refused.status, 401, "{refused:?}");
    assert!(
        refused
            .header("www-authenticate")
            .unwrap()
            .contains(r#"error="invalid_token""#)
    );

    let done = http_post(addr, Some(&writer), &retry)
        .unwrap()
        .json()
        .unwrap();
    assert!(is_success(&done), "{done}");
    assert!(!fx.exists("tps-report-draft.md"));
}

/// One HTTP/1.1 POST of `message` to `/mcp` with `headers`; returns (status, head, body).
fn raw_post(addr: SocketAddr, headers: &[(&str, &str)], message: &Value) -> (u16, String, String) {
    let body = message.to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    exchange_with_head(addr, &request)
}

/// Every notes tool, the export as a task, reading a note and the 2025-11-25 adapter refuse a
/// token that lacks their scope, before any tool code runs: the core authorizes the grant, not
/// the transport, and `notes_export` (once without any declaration) needs `notes:read`.
#[test]
fn a_token_without_the_scope_is_refused_for_every_notes_target() {
    let Some((provider, fx, _server, addr)) = provider_and_notes() else {
        return;
    };
    let resource = format!("http://{addr}/mcp");
    let secret = "writer-secret-0123456789abcdef";
    // The workspace's owner, but with a token that may only write.
    let write_only = token(&provider, "notes-writer", secret, "notes:write", &resource);
    let tasks_caps = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let ws = json!({"workspaceUri": fx.uri});
    let note_uri = format!("{}/tps-report-draft.md", fx.uri);
    let refused = [
        (
            "notes_list",
            call_params("notes_list", ws.clone(), json!({})),
        ),
        (
            "notes_export",
            call_params("notes_export", ws.clone(), json!({})),
        ),
        (
            "notes_export as a task",
            call_params("notes_export", ws.clone(), tasks_caps.clone()),
        ),
        (
            "notes_connect_export",
            call_params("notes_connect_export", ws.clone(), form_caps()),
        ),
        (
            "notes_delete",
            call_params(
                "notes_delete",
                fx.delete_args("tps report (draft)"),
                form_caps(),
            ),
        ),
    ];
    for (what, params) in refused {
        let r = http_post(addr, Some(&write_only), &rpc(1, "tools/call", params)).unwrap();
        assert_eq!(r.status, 403, "{what}: {r:?}");
        let challenge = r.header("www-authenticate").unwrap();
        assert!(
            challenge.contains(r#"error="insufficient_scope""#) && challenge.contains("notes:read"),
            "{what}: {challenge}"
        );
        let body = r.json().unwrap();
        assert_eq!(body["error"]["code"], -32600, "{what}: {body}");
        assert!(
            !body.to_string().contains("memo") && !body.to_string().contains("cover sheets"),
            "{what}: no note text leaks: {body}"
        );
    }
    let read = rpc(
        2,
        "resources/read",
        json!({"_meta": mcp_tests::meta(json!({})), "uri": note_uri}),
    );
    let r = http_post(addr, Some(&write_only), &read).unwrap();
    assert_eq!(r.status, 403, "resources/read: {r:?}");
    assert!(fx.exists("tps-report-draft.md"));

    // The same refusal through the 2025-11-25 adapter, session and all.
    let auth = format!("Bearer {write_only}");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "scripted-2025-11-25", "version": "0"}}});
    let (status, head, body) = raw_post(addr, &[("Authorization", &auth)], &init);
    assert_eq!(status, 200, "{body}");
    let session = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .expect("Mcp-Session-Id");
    let legacy_headers = [
        ("Authorization", auth.as_str()),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let (status, _, _) = raw_post(
        addr,
        &legacy_headers,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(status, 202);
    let export = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "notes_export", "arguments": {"workspaceUri": fx.uri}}});
    let (status, head, body) = raw_post(addr, &legacy_headers, &export);
    assert_eq!(status, 403, "legacy notes_export: {body}");
    assert!(
        head.to_ascii_lowercase().contains("insufficient_scope"),
        "{head}"
    );
    assert!(
        !body.contains("memo") && !body.contains("cover sheets"),
        "{body}"
    );

    // A token with notes:read exports (the control: the refusals above are the scope's).
    let reader = token(&provider, "notes-writer", secret, "notes:read", &resource);
    let r = http_post(
        addr,
        Some(&reader),
        &rpc(4, "tools/call", call_params("notes_export", ws, json!({}))),
    )
    .unwrap();
    assert_eq!(r.status, 200, "{r:?}");
    let body = r.json().unwrap();
    assert!(is_success(&body), "{body}");
}

/// The typed client as an OAuth client of the notes server: the 401 sends it through
/// discovery (the notes server's metadata, then oidc-provider's OpenID configuration) and the
/// authorization code flow with PKCE and the resource indicator, for `notes:read` only; the
/// delete's 403 `insufficient_scope` steps up to `notes:read notes:write`, and the deletion
/// completes with the stepped-up token.
#[tokio::test]
async fn the_typed_client_authorizes_and_steps_up_for_notes_delete() {
    use std::sync::Arc;

    use mcp_runtime::client::oauth::{
        ClientCredentials, MemoryTokenStore, OAuthClient, TokenStore,
    };
    use mcp_runtime::client::{Client, HttpTransport};

    let Some((provider, fx, _server, addr)) = provider_and_notes_for("notes-user") else {
        return;
    };
    let resource = format!("http://{addr}/mcp");
    let store = Arc::new(MemoryTokenStore::default());
    let oauth = OAuthClient::builder("http://127.0.0.1:9/callback")
        .pre_registered(
            Some(provider.issuer.clone()),
            ClientCredentials::new("notes-app", None),
        )
        .initial_scopes(["notes:read"])
        // oidc-provider lists offline_access; without a refresh grant for this client it
        // would only make the granted scope string harder to assert.
        .offline_access(false)
        .token_store(Arc::clone(&store))
        .build()
        .unwrap();
    let transport = HttpTransport::new(&resource).unwrap().oauth(oauth);
    let client = Client::builder(transport)
        .timeout(Duration::from_secs(30))
        .build();

    let listed = list_notes(&client, &fx.uri).await;
    assert!(listed.is_success(), "{listed:?}");
    let held = store.load(&resource).unwrap();
    assert_eq!(held.scope.as_deref(), Some("notes:read"));
    assert_eq!(held.issuer, provider.issuer);

    let args = fx.delete_args("tps report (draft)");
    let first = ask_delete(&client, &args).await;
    assert!(matches!(first, Outcome::Pending(_)), "{first:?}");
    let stepped_up = store.load(&resource).unwrap();
    assert_eq!(stepped_up.scope.as_deref(), Some("notes:read notes:write"));
    let state = first.request_state().unwrap();
    let done = answer_delete(&client, &args, choose("tps-report-draft.md", true), &state).await;
    assert!(done.is_success(), "{done:?}");
    assert!(!fx.exists("tps-report-draft.md"));
}
