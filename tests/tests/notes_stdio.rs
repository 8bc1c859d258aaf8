//! The notes server over stdio, as an MCP client sees it: every rule of explicit scope and
//! stateless elicitation, on real files. Most tests speak through the typed client
//! (`mcp_runtime::client`); the few that check the wire itself (byte-identical descriptors,
//! what a notification writes, stderr and the exit code) speak raw JSON-RPC on purpose.

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use mcp_runtime::client::{Client, ClientError};
use mcp_tests::notes::*;
use mcp_tests::{StdioServer, meta, notes_transport};
use mcp_types::{ClientCapabilities, ElicitationCapability, Implementation};
use notes_example::tools::DeleteChoice;
use serde_json::{Value, json};

const ALL_TPS: [&str; 3] = ["2025/tps-2025.md", "tps-report-draft.md", "tps-report.md"];

fn server(fx: &NotesFixture) -> StdioServer {
    fx.spawn("alice", &[]).expect("spawn notes-example")
}

fn client(fx: &NotesFixture) -> Client {
    fx.client("alice", &[]).expect("spawn notes-example")
}

fn lesson_intact(fx: &NotesFixture) -> bool {
    ALL_TPS.iter().all(|id| fx.exists(id)) && fx.exists("shopping.md")
}

/// First leg for "tps": returns the state after checking the form.
async fn ask_tps(c: &Client, fx: &NotesFixture) -> String {
    let r = ask_delete(c, &fx.delete_args("tps")).await;
    assert!(matches!(r, Outcome::Pending(_)), "{r:?}");
    r.request_state().unwrap()
}

/// Raw wire on purpose: the descriptors must be byte-identical across processes, which only
/// the bytes show.
#[test]
fn discovery_and_tools_list_are_deterministic_across_processes() {
    let fx = NotesFixture::new().unwrap();
    let mut a = server(&fx);
    let d = a
        .request("server/discover", json!({"_meta": meta(json!({}))}))
        .unwrap();
    assert_eq!(d["result"]["resultType"], "complete", "{d}");
    assert!(
        d["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
    assert!(d["result"]["capabilities"]["tools"].is_object(), "{d}");

    let list = json!({"_meta": meta(json!({}))});
    let one = a.request("tools/list", list.clone()).unwrap();
    let mut b = fx.spawn("bob", &["--no-sandbox"]).unwrap();
    let two = b.request("tools/list", list).unwrap();
    let delete = |v: &Value| {
        v["result"]["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == "notes_delete").cloned())
            .unwrap()
    };
    let (d1, d2) = (delete(&one), delete(&two));
    assert_eq!(
        d1.to_string(),
        d2.to_string(),
        "byte-identical descriptor across runs"
    );
    assert_eq!(d1["inputSchema"]["type"], "object");
    assert_eq!(
        d1["inputSchema"]["required"],
        json!(["workspaceUri", "title"])
    );
    assert!(d1["inputSchema"]["properties"]["workspaceUri"]["type"] == "string");
    assert!(d1["inputSchema"]["properties"]["title"]["type"] == "string");
    let list_tool = one["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "notes_list")
        .cloned()
        .unwrap();
    assert!(list_tool["outputSchema"].is_object(), "{list_tool}");
}

#[tokio::test]
async fn notes_list_returns_structured_ids_and_titles() {
    let fx = NotesFixture::new().unwrap();
    let c = client(&fx);
    let r = list_notes(&c, &fx.uri).await;
    assert!(r.is_success(), "{r:?}");
    let notes = r.structured().unwrap()["notes"].as_array().unwrap().clone();
    let pairs: Vec<(String, String)> = notes
        .iter()
        .map(|n| {
            (
                n["id"].as_str().unwrap().to_owned(),
                n["title"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        pairs,
        vec![
            ("2025/tps-2025.md".into(), "TPS Report 2025".into()),
            ("shopping.md".into(), "Shopping list".into()),
            ("tps-report-draft.md".into(), "TPS report (draft)".into()),
            ("tps-report.md".into(), "TPS report".into()),
        ]
    );
}

#[tokio::test]
async fn form_offers_exactly_the_matches_even_for_one() {
    let fx = NotesFixture::new().unwrap();
    let c = client(&fx);
    let r = ask_delete(&c, &fx.delete_args("TpS")).await;
    let Outcome::Pending(round) = &r else {
        panic!("expected the form: {r:?}");
    };
    assert_eq!(
        round.request(DELETE_KEY).unwrap().method(),
        "elicitation/create"
    );
    // Reading it as `DeleteChoice` checks the field names and the required set.
    let form = round.form::<DeleteChoice>(DELETE_KEY).unwrap();
    let schema = serde_json::to_value(form.schema()).unwrap();
    let mut required: Vec<String> = serde_json::from_value(schema["required"].clone()).unwrap();
    required.sort();
    assert_eq!(required, ["confirm", "note_id"]);
    assert_eq!(schema["properties"]["confirm"]["type"], "boolean");
    assert_eq!(form.choice_values("note_id"), ALL_TPS);
    let titles: Vec<Option<String>> = form
        .choices("note_id")
        .into_iter()
        .map(|c| c.title)
        .collect();
    assert_eq!(
        titles,
        [
            Some("TPS Report 2025".to_owned()),
            Some("TPS report (draft)".to_owned()),
            Some("TPS report".to_owned())
        ]
    );

    // One match still asks.
    let r = ask_delete(&c, &fx.delete_args("shopping")).await;
    assert!(matches!(r, Outcome::Pending(_)), "{r:?}");
    assert_eq!(r.offered_ids(), ["shopping.md"]);
    assert!(lesson_intact(&fx));
}

#[tokio::test]
async fn no_match_is_a_complete_error_result() {
    let fx = NotesFixture::new().unwrap();
    let c = client(&fx);
    let r = ask_delete(&c, &fx.delete_args("quarterly")).await;
    assert!(r.is_tool_error(), "{r:?}");
    assert!(r.text().contains("No note"), "{r:?}");
}

#[tokio::test]
async fn accept_deletes_exactly_the_chosen_note_once() {
    let fx = NotesFixture::new().unwrap();
    let c = client(&fx);
    let args = fx.delete_args("tps");
    let state = ask_tps(&c, &fx).await;
    let r = answer_delete(&c, &args, choose("tps-report-draft.md", true), &state).await;
    assert!(r.is_success(), "{r:?}");
    assert!(r.text().contains("tps-report-draft.md"), "{r:?}");
    assert!(!fx.exists("tps-report-draft.md"));
    assert!(
        fx.exists("tps-report.md") && fx.exists("2025/tps-2025.md") && fx.exists("shopping.md")
    );

    // Restore the note so the candidates are exactly as issued: only the one-time claim can
    // stop the replay, on this process or another sharing the store.
    std::fs::write(
        fx.notes.join("tps-report-draft.md"),
        "# TPS report (draft)\n",
    )
    .unwrap();
    // The identical retry gets the recorded result again (marked); nothing is deleted.
    let again = answer_delete(&c, &args, choose("tps-report-draft.md", true), &state).await;
    assert!(again.is_replay(), "{again:?}");
    assert!(again.text().contains("tps-report-draft.md"), "{again:?}");
    assert!(fx.exists("tps-report-draft.md"));
    let other = fx.client("alice", &["--no-sandbox"]).unwrap();
    let again = answer_delete(&other, &args, choose("tps-report.md", true), &state).await;
    assert!(again.is_refusal(), "{again:?}");
    // The identical retry from another principal is refused too, never replayed.
    let bob = fx.client("bob", &["--no-sandbox"]).unwrap();
    let again = answer_delete(&bob, &args, choose("tps-report-draft.md", true), &state).await;
    assert!(again.is_refusal() && !again.is_replay(), "{again:?}");
    assert!(fx.exists("tps-report-draft.md") && fx.exists("tps-report.md"));
}

#[tokio::test]
async fn accept_without_confirm_deletes_nothing() {
    let fx = NotesFixture::new().unwrap();
    let c = client(&fx);
    let args = fx.delete_args("tps");
    let state = ask_tps(&c, &fx).await;
    let r = answer_delete(&c, &args, choose("tps-report.md", false), &state).await;
    assert!(!r.is_refusal() && r.is_complete(), "{r:?}");
    assert!(lesson_intact(&fx));
}

#[tokio::test]
async fn decline_is_a_non_error_refusal_and_burns_the_state() {
    let fx = NotesFixture::new().unwrap();
    let c = client(&fx);
    let args = fx.delete_args("tps");
    let state = ask_tps(&c, &fx).await;
    let r = answer_delete(&c, &args, json!({"action": "decline"}), &state).await;
    assert!(
        r.is_success(),
        "decline is complete and not an error: {r:?}"
    );
    assert!(lesson_intact(&fx));
    let r = answer_delete(&c, &args, choose("tps-report.md", true), &state).await;
    assert!(
        r.is_refusal(),
        "a declined state is never usable again: {r:?}"
    );
    assert!(lesson_intact(&fx));
}

#[tokio::test]
async fn cancel_and_malformed_content_keep_the_state_retryable() {
    let fx = NotesFixture::new().unwrap();
    let c = client(&fx);
    let args = fx.delete_args("tps");
    let state = ask_tps(&c, &fx).await;

    let r = answer_delete(&c, &args, json!({"action": "cancel"}), &state).await;
    assert!(!r.is_success(), "cancel is not a success: {r:?}");
    assert!(lesson_intact(&fx));

    // Raw answers on purpose: the typed constructors would refuse to build most of these.
    for bad in [
        json!({"action": "accept", "content": {"note_id": "tps-report.md"}}),
        json!({"action": "accept", "content": {"note_id": "tps-report.md", "confirm": "yes"}}),
        json!({"action": "accept", "content": {"note_id": 7, "confirm": true}}),
        json!({"action": "accept"}),
        json!({"action": "explode"}),
        json!("not an object"),
    ] {
        let r = answer_delete(&c, &args, bad.clone(), &state).await;
        assert!(!r.is_success(), "{bad} must not succeed: {r:?}");
        assert!(lesson_intact(&fx), "{bad} deleted something");
    }

    let r = answer_delete(&c, &args, choose("tps-report.md", true), &state).await;
    assert!(
        r.is_success(),
        "state still usable after cancel/malformed: {r:?}"
    );
    assert!(!fx.exists("tps-report.md"));
}

#[tokio::test]
async fn note_id_outside_the_candidates_is_refused() {
    let fx = NotesFixture::new().unwrap();
    let c = client(&fx);
    let args = fx.delete_args("tps");
    let state = ask_tps(&c, &fx).await;
    for outside in [
        "shopping.md",
        "../private/x.md",
        "tps-report.md/../shopping.md",
        "",
    ] {
        let r = answer_delete(&c, &args, choose(outside, true), &state).await;
        assert!(!r.is_success(), "{outside:?}: {r:?}");
        assert!(lesson_intact(&fx), "{outside:?} deleted something");
    }
}

#[tokio::test]
async fn changed_title_tampered_or_foreign_state_is_refused() {
    let fx = NotesFixture::new().unwrap();
    let c = client(&fx);
    let state = ask_tps(&c, &fx).await;

    // A changed title (the shopping list is not among the candidates the state was issued for).
    let r = answer_delete(
        &c,
        &fx.delete_args("shopping"),
        choose("shopping.md", true),
        &state,
    )
    .await;
    assert!(r.is_refusal(), "{r:?}");
    // A changed workspace spelling of a different directory is refused as well.
    let other = json!({"workspaceUri": format!("{}/2025", fx.uri), "title": "tps"});
    let r = answer_delete(&c, &other, choose("tps-2025.md", true), &state).await;
    assert!(r.is_refusal(), "{r:?}");

    // Tampered: flip one character in the payload and in the signature.
    for position in [state.len() / 2, state.len() - 2] {
        let mut bytes = state.clone().into_bytes();
        bytes[position] = if bytes[position] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(bytes).unwrap();
        let r = answer_delete(
            &c,
            &fx.delete_args("tps"),
            choose("tps-report.md", true),
            &tampered,
        )
        .await;
        assert!(r.is_refusal(), "{r:?}");
    }
    assert!(lesson_intact(&fx));

    // Another principal, same key and store, and even the same workspace granted: refused.
    let bob = fx.client("bob", &["--no-sandbox"]).unwrap();
    let r = answer_delete(
        &bob,
        &fx.delete_args("tps"),
        choose("tps-report.md", true),
        &state,
    )
    .await;
    assert!(r.is_refusal(), "{r:?}");
    assert!(lesson_intact(&fx));

    // The rightful owner can still use it afterwards: none of the refusals consumed it.
    let r = answer_delete(
        &c,
        &fx.delete_args("tps"),
        choose("tps-report.md", true),
        &state,
    )
    .await;
    assert!(r.is_success(), "{r:?}");
}

#[tokio::test]
async fn expired_state_is_refused() {
    let fx = NotesFixture::new().unwrap();
    let c = fx.client("alice", &["--state-ttl", "1"]).unwrap();
    let state = ask_tps(&c, &fx).await;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let r = answer_delete(
        &c,
        &fx.delete_args("tps"),
        choose("tps-report.md", true),
        &state,
    )
    .await;
    assert!(r.is_refusal(), "{r:?}");
    assert!(lesson_intact(&fx));
}

#[tokio::test]
async fn workspace_authorization_refuses_prefix_confusion_traversal_and_strangers() {
    let fx = NotesFixture::new().unwrap();
    let root = fx.root();
    std::fs::create_dir_all(root.join("notes-evil")).unwrap();
    std::fs::write(root.join("notes-evil/tps.md"), "# TPS evil\n").unwrap();
    std::fs::create_dir_all(root.join("private")).unwrap();
    std::fs::write(root.join("private/tps.md"), "# TPS private\n").unwrap();
    let c = client(&fx);
    for uri in [
        format!("{}-evil", fx.uri),
        format!("{}/%2e%2e/private", fx.uri),
        format!("{}/%2E%2E/private", fx.uri),
        format!("{}/..%2fprivate", fx.uri),
        format!("{}/../private", fx.uri),
        "file:///".to_owned(),
        "file://evil.example/notes".to_owned(),
        "https://example.com/notes".to_owned(),
    ] {
        let r = ask_delete(&c, &json!({"workspaceUri": uri, "title": "tps"})).await;
        assert!(r.is_tool_error(), "{uri} must be refused: {r:?}");
        let shown = r.text();
        assert!(
            !shown.contains(&fx.uri) || uri.starts_with(&fx.uri),
            "no leak of allowed roots: {shown}"
        );
    }
    assert!(root.join("notes-evil/tps.md").exists() && root.join("private/tps.md").exists());

    // The principal comes from configuration, never from clientInfo.
    let private = root.join("private");
    let bob = fx
        .client_without_workspace(
            "bob",
            &["--no-sandbox", "--workspace", private.to_str().unwrap()],
        )
        .unwrap();
    let mut posing = bob.meta().clone();
    posing.client_info = Some(Implementation::new("alice", "1"));
    let r = ask_delete(&bob.with_meta(posing), &fx.delete_args("tps")).await;
    assert!(
        r.is_tool_error(),
        "bob may not use alice's workspace: {r:?}"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_leading_outside_are_neither_offered_nor_deleted() {
    use std::os::unix::fs::symlink;
    let fx = NotesFixture::new().unwrap();
    let root = fx.root();
    let private = root.join("private");
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(private.join("salary.md"), "# TPS salaries\n").unwrap();
    symlink(private.join("salary.md"), fx.notes.join("salary-link.md")).unwrap();
    symlink(&private, fx.notes.join("linked-dir")).unwrap();
    symlink("../private/salary.md", fx.notes.join("relative-link.md")).unwrap();

    let c = client(&fx);
    let r = ask_delete(&c, &fx.delete_args("tps")).await;
    assert_eq!(r.offered_ids(), ALL_TPS, "links are not offered: {r:?}");
    let listed = list_notes(&c, &fx.uri).await;
    let ids = listed.structured().unwrap()["notes"].to_string();
    assert!(!ids.contains("link"), "{ids}");

    // Forged choices naming the links: refused, the targets and the links survive.
    let state = r.request_state().unwrap();
    for forged in ["salary-link.md", "linked-dir/salary.md", "relative-link.md"] {
        let r = answer_delete(&c, &fx.delete_args("tps"), choose(forged, true), &state).await;
        assert!(!r.is_success(), "{forged}: {r:?}");
    }
    assert!(private.join("salary.md").exists());
    assert!(
        fx.exists("salary-link.md") && fx.exists("linked-dir") && fx.exists("relative-link.md")
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_note_swapped_for_a_link_before_the_unlink_is_not_deleted() {
    use std::os::unix::fs::symlink;
    let fx = NotesFixture::new().unwrap();
    let root = fx.root();
    let private = root.join("private");
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(private.join("tps-2025.md"), "# TPS Report 2025\n").unwrap();
    let c = client(&fx);
    let state = ask_tps(&c, &fx).await;
    // Between the form and the answer, the folder holding a candidate becomes a link outside.
    std::fs::rename(fx.notes.join("2025"), root.join("moved-2025")).unwrap();
    symlink(&private, fx.notes.join("2025")).unwrap();
    let r = answer_delete(
        &c,
        &fx.delete_args("tps"),
        choose("2025/tps-2025.md", true),
        &state,
    )
    .await;
    assert!(!r.is_success(), "{r:?}");
    assert!(
        private.join("tps-2025.md").exists(),
        "the file outside survives"
    );
    assert!(root.join("moved-2025/tps-2025.md").exists());
}

#[tokio::test]
async fn capability_and_version_errors() {
    let fx = NotesFixture::new().unwrap();
    let c = client(&fx);
    // No elicitation capability: -32021 naming what is missing, before the tool runs.
    let none = c.with_capabilities(ClientCapabilities::none());
    let r = ask_delete(&none, &fx.delete_args("tps")).await;
    assert_eq!(r.error_code(), Some(-32021), "{r:?}");
    let Outcome::Failed(ClientError::MissingCapability {
        required: Some(required),
        ..
    }) = &r
    else {
        panic!("expected -32021 with requiredCapabilities: {r:?}");
    };
    assert!(required.elicitation.is_some(), "{r:?}");
    // URL-only elicitation does not allow a form either.
    let url_only = c.with_capabilities(
        ClientCapabilities::none().with_elicitation(ElicitationCapability::url()),
    );
    let r = ask_delete(&url_only, &fx.delete_args("tps")).await;
    assert_eq!(r.error_code(), Some(-32021), "{r:?}");

    // An unsupported version: -32022 with what was asked and what is spoken (no retry).
    let notes = fx.notes.to_str().unwrap();
    let key = fx.key_file.to_str().unwrap();
    let args = [
        "serve",
        "--stdio",
        "--principal",
        "alice",
        "--store",
        fx.store.as_str(),
        "--state-key-file",
        key,
        "--workspace",
        notes,
    ];
    let old = Client::builder(notes_transport(&args, &[]).unwrap())
        .protocol_version("1900-01-01")
        .retry_supported_version(false)
        .timeout(mcp_tests::RESPONSE_TIMEOUT)
        .build();
    let err = old.discover().await.unwrap_err();
    let ClientError::UnsupportedVersion {
        data: Some(data), ..
    } = &err
    else {
        panic!("expected -32022 with data: {err}");
    };
    assert_eq!(data.requested, "1900-01-01");
    assert!(data.supported.iter().any(|v| v == "2026-07-28"), "{err}");
    assert!(lesson_intact(&fx));
}

/// Raw wire on purpose: what a notification writes back (nothing) is only visible on the
/// wire.
#[test]
fn notifications_get_no_response_line() {
    let fx = NotesFixture::new().unwrap();
    let mut s = server(&fx);
    // A notification gets nothing back; the next request's response is the next line.
    s.notify("notifications/cancelled", json!({"requestId": 42}))
        .unwrap();
    s.notify("notifications/whatever", json!({})).unwrap();
    let id = s
        .send_request("server/discover", json!({"_meta": meta(json!({}))}))
        .unwrap();
    let next = s.next_message(Duration::from_secs(20)).unwrap().unwrap();
    assert_eq!(next["id"], id, "notifications produced output: {next}");
    assert!(lesson_intact(&fx));
}

/// Raw process on purpose: the test reads the server's stderr and exit code, which the client
/// hides.
#[test]
fn logs_go_to_stderr_and_sandbox_is_reported() {
    let fx = NotesFixture::new().unwrap();
    let mut s = server(&fx);
    let r = s
        .request("server/discover", json!({"_meta": meta(json!({}))}))
        .unwrap();
    assert!(r.get("result").is_some());
    let stderr = s.stderr();
    assert!(stderr.to_lowercase().contains("sandbox"), "{stderr}");
    assert_eq!(s.shutdown().unwrap(), Some(0), "exits 0 on EOF");
}

#[tokio::test]
async fn default_store_lives_in_the_data_dir_and_default_keys_are_per_process() {
    let fx = NotesFixture::new().unwrap();
    let data = fx.root().join("xdg-data");
    std::fs::create_dir_all(&data).unwrap();
    let notes = fx.notes.to_str().unwrap();
    let data_str = data.to_str().unwrap();
    let args = [
        "serve",
        "--stdio",
        "--workspace",
        notes,
        "--principal",
        "alice",
    ];
    let env = [("XDG_DATA_HOME", data_str)];
    let a = mcp_tests::notes_client(&args, &env).unwrap();
    let b = mcp_tests::notes_client(&args, &env).unwrap();
    let state = ask_tps(&a, &fx).await;
    // B shares A's default store but not its random key: A's state means nothing to B.
    let r = answer_delete(
        &b,
        &fx.delete_args("tps"),
        choose("tps-report.md", true),
        &state,
    )
    .await;
    assert!(r.is_refusal(), "{r:?}");
    assert!(lesson_intact(&fx));
    let r = answer_delete(
        &a,
        &fx.delete_args("tps"),
        choose("tps-report.md", true),
        &state,
    )
    .await;
    assert!(r.is_success(), "{r:?}");
    assert!(
        data.join("notes-example/replay.sqlite3").exists(),
        "default SQLite store created"
    );
}

#[tokio::test]
async fn missing_arguments_and_state_moved_to_another_tool_are_refused() {
    let fx = NotesFixture::new().unwrap();
    let c = client(&fx);
    // Both arguments are required: a tool error the model can act on, nothing asked.
    for args in [
        json!({"workspaceUri": fx.uri}),
        json!({"title": "tps"}),
        json!({}),
    ] {
        let r = ask_delete(&c, &args).await;
        assert!(r.is_tool_error(), "{args}: {r:?}");
    }
    // A state issued for notes_delete means nothing to notes_list.
    let state = ask_tps(&c, &fx).await;
    let r: Outcome = c
        .resume(
            "notes_list",
            json!({"workspaceUri": fx.uri}),
            delete_responses(choose("tps-report.md", true)),
            Some(&state),
        )
        .await
        .into();
    assert!(r.is_refusal(), "{r:?}");
    assert!(lesson_intact(&fx));
}
