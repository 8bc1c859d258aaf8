//! `notes-example serve --http`: principals come from bearer tokens in the auth file, and each
//! principal reaches only the workspaces granted to it with `--workspace PRINCIPAL=DIR`.
//! Behaviour is checked through the typed client over Streamable HTTP; one test speaks raw
//! HTTP on purpose, for the status codes.

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;

use mcp_runtime::client::{Client, HttpTransport};
use mcp_tests::notes::*;
use mcp_tests::{
    RESPONSE_TIMEOUT, StdioServer, call_params, form_caps, http_post, meta, retry_params,
    spawn_notes_http,
};
use serde_json::{Value, json};

const ALICE: &str = "alice-token-0123456789abcdefghijklmnopqrstuv";
const BOB: &str = "bob-token-0123456789abcdefghijklmnopqrstuvwx";

fn start(fx: &NotesFixture) -> (StdioServer, SocketAddr) {
    start_with(fx, &[])
}

fn start_with(fx: &NotesFixture, extra: &[&str]) -> (StdioServer, SocketAddr) {
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
    let args: Vec<&str> = args.iter().chain(extra).copied().collect();
    spawn_notes_http(&args).unwrap()
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A client of the server at `addr` presenting `token`.
fn client(addr: SocketAddr, token: &str) -> Client {
    let transport = HttpTransport::new(&format!("http://{addr}/mcp"))
        .unwrap()
        .bearer(token);
    Client::builder(transport).timeout(RESPONSE_TIMEOUT).build()
}

/// Raw HTTP on purpose: the status codes (401 without a valid token; 200 for a result, for
/// the replayed result of an identical retry and for a refused other answer, whose JSON-RPC
/// body says why) are only visible on the wire.
#[test]
fn http_status_codes_on_the_wire() {
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

    let args = fx.delete_args("tps report (draft)");
    let first = post(
        addr,
        &rpc(
            2,
            "tools/call",
            call_params("notes_delete", args.clone(), form_caps()),
        ),
    );
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
    assert!(is_success(&post(addr, &retry)));
    // Restored, so the identical retry finds the same candidates: only the claim decides.
    std::fs::write(
        fx.notes.join("tps-report-draft.md"),
        "# TPS report (draft)\n",
    )
    .unwrap();
    let replay = post(addr, &retry);
    assert!(is_replay(&replay), "{replay}");
    let mut other = retry.clone();
    other["params"]["inputResponses"][DELETE_KEY] = json!({"action": "decline"});
    let refused = post(addr, &other);
    assert!(is_refusal(&refused), "{refused}");
}

/// `--rate-limit` and `--tool-rate-limit` on the wire: the call past alice's limit of
/// `notes_list` is a 429 whose `Retry-After` is the body's `retryAfter`; bob, and alice's
/// other tools, are not affected.
#[test]
fn rate_limits_answer_429_with_retry_after() {
    let fx = NotesFixture::new().unwrap();
    let (_server, addr) = start_with(
        &fx,
        &[
            "--rate-limit",
            "100/day",
            "--tool-rate-limit",
            "notes_list=2/day",
        ],
    );
    let uri = fx.uri.clone();
    let list = |id| {
        rpc(
            id,
            "tools/call",
            call_params("notes_list", json!({"workspaceUri": uri}), json!({})),
        )
    };
    for id in 1..=2 {
        let ok = http_post(addr, Some(ALICE), &list(id)).unwrap();
        assert_eq!(ok.status, 200, "{ok:?}");
    }
    let refused = http_post(addr, Some(ALICE), &list(3)).unwrap();
    assert_eq!(refused.status, 429, "{refused:?}");
    let body = refused.json().unwrap();
    assert_eq!(body["error"]["code"], -32023, "{body}");
    let secs = body["error"]["data"]["retryAfter"].as_u64().unwrap();
    assert_eq!(
        refused.header("retry-after"),
        Some(secs.to_string().as_str())
    );
    assert_eq!(refused.header("ratelimit-limit"), Some("2"));
    // Bob has his own count: his call reaches the tool (which keeps alice's workspace from
    // him) rather than the limit.
    let bobs = http_post(addr, Some(BOB), &list(4)).unwrap();
    assert_eq!(bobs.status, 200, "{bobs:?}");
    // Alice's other tools go by the default limit.
    let delete = rpc(
        5,
        "tools/call",
        call_params(
            "notes_delete",
            fx.delete_args("tps report (draft)"),
            form_caps(),
        ),
    );
    let asked = http_post(addr, Some(ALICE), &delete).unwrap();
    assert_eq!(asked.status, 200, "{asked:?}");
}

#[tokio::test]
async fn bearer_tokens_pick_the_principal_and_its_workspaces() {
    let fx = NotesFixture::new().unwrap();
    let (_server, addr) = start(&fx);
    let (alice, bob) = (client(addr, ALICE), client(addr, BOB));
    let discover = alice.discover().await.unwrap();
    assert!(
        discover
            .supported_versions
            .iter()
            .any(|v| v == "2026-07-28")
    );

    // Alice: form, then accepted deletion.
    let args = fx.delete_args("tps report (draft)");
    let first = ask_delete(&alice, &args).await;
    assert!(matches!(first, Outcome::Pending(_)), "{first:?}");
    assert_eq!(first.offered_ids(), ["tps-report-draft.md"]);
    let state = first.request_state().unwrap();

    // Bob presenting Alice's state: refused, nothing deleted.
    let stolen = answer_delete(&bob, &args, choose("tps-report-draft.md", true), &state).await;
    assert!(stolen.is_refusal(), "{stolen:?}");
    assert!(fx.exists("tps-report-draft.md"));

    let done = answer_delete(&alice, &args, choose("tps-report-draft.md", true), &state).await;
    assert!(done.is_success(), "{done:?}");
    assert!(!fx.exists("tps-report-draft.md"));

    // Bob cannot reach Alice's workspace, and Alice cannot reach Bob's.
    let bobs_try = list_notes(&bob, &fx.uri).await;
    assert!(bobs_try.is_tool_error(), "{bobs_try:?}");
    let bob_uri = mcp_tests::file_uri(&fx.root().join("private")).unwrap();
    let alices_try = list_notes(&alice, &bob_uri).await;
    assert!(alices_try.is_tool_error(), "{alices_try:?}");
    let bobs_own = list_notes(&bob, &bob_uri).await;
    assert!(bobs_own.is_success(), "{bobs_own:?}");
    assert_eq!(bobs_own.structured().unwrap()["notes"][0]["id"], "bob.md");
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
#[tokio::test]
async fn full_confirmation_flow_over_streamable_http() {
    let fx = NotesFixture::new().unwrap();
    let (_server, addr) = start(&fx);
    let c = client(addr, ALICE);
    let args = fx.delete_args("tps");

    // Form: every match offered, nothing deleted yet.
    let first = ask_delete(&c, &args).await;
    let Outcome::Pending(round) = &first else {
        panic!("expected the form: {first:?}");
    };
    assert_eq!(
        first.offered_ids(),
        ["2025/tps-2025.md", "tps-report-draft.md", "tps-report.md"]
    );
    assert_eq!(
        round.request(DELETE_KEY).unwrap().method(),
        "elicitation/create"
    );
    let state = first.request_state().unwrap();
    assert!(lesson_intact(&fx));

    // Cancel: not a success, nothing deleted, state still usable.
    let cancelled = answer_delete(&c, &args, json!({"action": "cancel"}), &state).await;
    assert!(!cancelled.is_success(), "{cancelled:?}");
    assert!(lesson_intact(&fx));

    // Accept after the cancel: exactly the chosen note goes.
    let done = answer_delete(&c, &args, choose("tps-report.md", true), &state).await;
    assert!(done.is_success(), "{done:?}");
    assert!(done.text().contains("tps-report.md"), "{done:?}");
    assert!(!fx.exists("tps-report.md"));
    assert!(fx.exists("tps-report-draft.md") && fx.exists("2025/tps-2025.md"));

    // Identical retry of the accepted confirmation, with the note restored: the recorded
    // result again, marked as a replay; nothing deleted.
    std::fs::write(fx.notes.join("tps-report.md"), "# TPS report\n").unwrap();
    let replay = answer_delete(&c, &args, choose("tps-report.md", true), &state).await;
    assert!(replay.is_replay(), "{replay:?}");
    assert!(replay.text().contains("tps-report.md"), "{replay:?}");
    assert!(fx.exists("tps-report.md"));
    let other_choice = answer_delete(&c, &args, choose("shopping.md", true), &state).await;
    // A choice outside the offered candidates is never carried out.
    assert!(!other_choice.is_success(), "{other_choice:?}");
    assert!(lesson_intact(&fx));

    // Decline: a complete, non-error result; the state is then used up.
    let state = ask_delete(&c, &args).await.request_state().unwrap();
    let declined = answer_delete(&c, &args, json!({"action": "decline"}), &state).await;
    assert!(declined.is_success(), "{declined:?}");
    assert!(declined.text().contains("declined"), "{declined:?}");
    let after_decline = answer_delete(&c, &args, choose("tps-report.md", true), &state).await;
    assert!(after_decline.is_refusal(), "{after_decline:?}");
    assert!(lesson_intact(&fx));

    // Accept without confirm: complete, nothing deleted.
    let state = ask_delete(&c, &args).await.request_state().unwrap();
    let unconfirmed = answer_delete(&c, &args, choose("tps-report.md", false), &state).await;
    assert!(unconfirmed.is_complete(), "{unconfirmed:?}");
    assert!(!unconfirmed.is_refusal(), "{unconfirmed:?}");
    assert!(lesson_intact(&fx));
}
