//! `notes-example serve --http`: principals come from bearer tokens in the auth file, and each
//! principal reaches only the workspaces granted to it with `--workspace PRINCIPAL=DIR`.

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;

use mcp_tests::notes::*;
use mcp_tests::{
    StdioServer, call_params, form_caps, http_post, meta, retry_params, spawn_notes_http,
};
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
    spawn_notes_http(&args).unwrap()
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

fn delete_call(id: i64, args: &Value) -> Value {
    rpc(
        id,
        "tools/call",
        call_params("notes_delete", args.clone(), form_caps()),
    )
}

fn delete_retry(id: i64, args: &Value, response: Value, state: &str) -> Value {
    rpc(
        id,
        "tools/call",
        retry_params(
            "notes_delete",
            args.clone(),
            form_caps(),
            json!({ DELETE_KEY: response }),
            state,
        ),
    )
}

fn post(addr: SocketAddr, message: &Value) -> Value {
    let response = http_post(addr, Some(ALICE), message).unwrap();
    assert_eq!(response.status, 200, "{response:?}");
    response.json().unwrap()
}

fn lesson_intact(fx: &NotesFixture) -> bool {
    [
        "tps-report.md",
        "tps-report-draft.md",
        "2025/tps-2025.md",
        "shopping.md",
    ]
    .iter()
    .all(|id| fx.exists(id))
}

/// The whole confirmation flow over Streamable HTTP, one POST per leg: the form offers
/// exactly the matches; cancel keeps the state retryable; decline completes without an error
/// and uses the state up; accept deletes exactly the chosen note; a replayed accept is refused.
#[test]
fn full_confirmation_flow_over_streamable_http() {
    let fx = NotesFixture::new().unwrap();
    let (_server, addr) = start(&fx);
    let args = fx.delete_args("tps");

    // Form: every match offered, nothing deleted yet.
    let first = post(addr, &delete_call(10, &args));
    assert_eq!(result_type(&first), Some("input_required"), "{first}");
    assert_eq!(
        offered_ids(&first),
        ["2025/tps-2025.md", "tps-report-draft.md", "tps-report.md"]
    );
    assert_eq!(
        first["result"]["inputRequests"][DELETE_KEY]["method"],
        "elicitation/create"
    );
    let state = request_state(&first).unwrap();
    assert!(lesson_intact(&fx));

    // Cancel: not a success, nothing deleted, state still usable.
    let cancelled = post(
        addr,
        &delete_retry(11, &args, json!({"action": "cancel"}), &state),
    );
    assert!(!is_success(&cancelled), "{cancelled}");
    assert!(lesson_intact(&fx));

    // Accept after the cancel: exactly the chosen note goes.
    let done = post(
        addr,
        &delete_retry(12, &args, choose("tps-report.md", true), &state),
    );
    assert!(is_success(&done), "{done}");
    assert!(text(&done).contains("tps-report.md"), "{done}");
    assert!(!fx.exists("tps-report.md"));
    assert!(fx.exists("tps-report-draft.md") && fx.exists("2025/tps-2025.md"));

    // Identical retry of the accepted confirmation, with the note restored: the recorded
    // result again, marked as a replay; nothing deleted.
    std::fs::write(fx.notes.join("tps-report.md"), "# TPS report\n").unwrap();
    let replay = post(
        addr,
        &delete_retry(13, &args, choose("tps-report.md", true), &state),
    );
    assert!(is_replay(&replay), "{replay}");
    assert!(text(&replay).contains("tps-report.md"), "{replay}");
    assert!(fx.exists("tps-report.md"));
    let other_choice = post(
        addr,
        &delete_retry(14, &args, choose("shopping.md", true), &state),
    );
    // A choice outside the offered candidates is never carried out.
    assert!(!is_success(&other_choice), "{other_choice}");
    assert!(lesson_intact(&fx));

    // Decline: a complete, non-error result; the state is then used up.
    let first = post(addr, &delete_call(15, &args));
    let state = request_state(&first).unwrap();
    let declined = post(
        addr,
        &delete_retry(16, &args, json!({"action": "decline"}), &state),
    );
    assert!(is_success(&declined), "{declined}");
    assert!(text(&declined).contains("declined"), "{declined}");
    let after_decline = post(
        addr,
        &delete_retry(17, &args, choose("tps-report.md", true), &state),
    );
    assert!(is_refusal(&after_decline), "{after_decline}");
    assert!(lesson_intact(&fx));

    // Accept without confirm: complete, nothing deleted.
    let first = post(addr, &delete_call(18, &args));
    let state = request_state(&first).unwrap();
    let unconfirmed = post(
        addr,
        &delete_retry(19, &args, choose("tps-report.md", false), &state),
    );
    assert_eq!(result_type(&unconfirmed), Some("complete"), "{unconfirmed}");
    assert!(!is_refusal(&unconfirmed), "{unconfirmed}");
    assert!(lesson_intact(&fx));
}
