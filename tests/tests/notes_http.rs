//! `notes-example serve --http`: principals come from bearer tokens in the auth file, and each
//! principal reaches only the workspaces granted to it with `--workspace PRINCIPAL=DIR`.

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mcp_tests::notes::*;
use mcp_tests::{StdioServer, call_params, form_caps, http_post, meta, notes_binary, retry_params};
use serde_json::{Value, json};

const ALICE: &str = "alice-token-0123456789abcdefghijklmnopqrstuv";
const BOB: &str = "bob-token-0123456789abcdefghijklmnopqrstuvwx";

fn start(fx: &NotesFixture) -> (StdioServer, SocketAddr) {
    let root = fx.root();
    let private = root.join("private");
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(private.join("bob.md"), "# Bob's TPS report\n").unwrap();
    let auth = root.join("auth");
    std::fs::write(
        &auth,
        format!("# principal token\nalice {ALICE}\nbob {BOB}\n"),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let alice_ws = format!("alice={}", fx.notes.display());
    let bob_ws = format!("bob={}", private.display());
    let args = [
        "serve",
        "--http",
        "127.0.0.1:0",
        "--auth-file",
        auth.to_str().unwrap(),
        "--workspace",
        alice_ws.as_str(),
        "--workspace",
        bob_ws.as_str(),
        "--store",
        fx.store.as_str(),
        "--state-key-file",
        fx.key_file.to_str().unwrap(),
    ];
    let server = StdioServer::spawn(&notes_binary().unwrap(), &args).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let stderr = server.stderr();
        if let Some(rest) = stderr.split("http://").nth(1) {
            let addr = rest.split('/').next().unwrap();
            return (server, addr.parse().unwrap());
        }
        assert!(Instant::now() < deadline, "server did not start: {stderr}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[test]
fn bearer_tokens_pick_the_principal_and_its_workspaces() {
    let fx = NotesFixture::new().unwrap();
    let (_server, addr) = start(&fx);
    let discover = rpc(1, "server/discover", json!({"_meta": meta(json!({}))}));

    let anonymous = http_post(addr, None, &discover).unwrap();
    assert_eq!(anonymous.status, 401, "{anonymous:?}");
    let wrong = http_post(
        addr,
        Some("not-a-real-token-not-a-real-token-xx"),
        &discover,
    )
    .unwrap();
    assert_eq!(wrong.status, 401);

    let ok = http_post(addr, Some(ALICE), &discover).unwrap();
    assert_eq!(ok.status, 200, "{ok:?}");
    assert_eq!(ok.json().unwrap()["result"]["resultType"], "complete");

    // Alice: form, then accepted deletion.
    let args = fx.delete_args("tps report (draft)");
    let first = http_post(
        addr,
        Some(ALICE),
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
    assert_eq!(offered_ids(&first), ["tps-report-draft.md"]);
    let state = request_state(&first).unwrap();
    let retry = rpc(
        3,
        "tools/call",
        retry_params(
            "notes_delete",
            args.clone(),
            form_caps(),
            json!({ DELETE_KEY: choose("tps-report-draft.md", true) }),
            &state,
        ),
    );

    // Bob presenting Alice's state: refused, nothing deleted.
    let stolen = http_post(addr, Some(BOB), &retry).unwrap().json().unwrap();
    assert!(is_refusal(&stolen), "{stolen}");
    assert!(fx.exists("tps-report-draft.md"));

    let done = http_post(addr, Some(ALICE), &retry)
        .unwrap()
        .json()
        .unwrap();
    assert!(is_success(&done), "{done}");
    assert!(!fx.exists("tps-report-draft.md"));

    // Bob cannot reach Alice's workspace, and Alice cannot reach Bob's.
    let bobs_try = http_post(
        addr,
        Some(BOB),
        &rpc(
            4,
            "tools/call",
            call_params("notes_list", json!({"workspaceUri": fx.uri}), json!({})),
        ),
    )
    .unwrap()
    .json()
    .unwrap();
    assert!(is_tool_error(&bobs_try), "{bobs_try}");
    let bob_uri = mcp_tests::file_uri(&fx.root().join("private")).unwrap();
    let alices_try = http_post(
        addr,
        Some(ALICE),
        &rpc(
            5,
            "tools/call",
            call_params("notes_list", json!({"workspaceUri": bob_uri}), json!({})),
        ),
    )
    .unwrap()
    .json()
    .unwrap();
    assert!(is_tool_error(&alices_try), "{alices_try}");
    let bobs_own = http_post(
        addr,
        Some(BOB),
        &rpc(
            6,
            "tools/call",
            call_params("notes_list", json!({"workspaceUri": bob_uri}), json!({})),
        ),
    )
    .unwrap()
    .json()
    .unwrap();
    assert!(is_success(&bobs_own), "{bobs_own}");
    assert_eq!(
        bobs_own["result"]["structuredContent"]["notes"][0]["id"],
        "bob.md"
    );
}
