//! The notes server over stdio, as an MCP client sees it: every rule of explicit scope and
//! stateless elicitation, on real files.

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use mcp_tests::notes::*;
use mcp_tests::{StdioServer, call_params, form_caps, meta};
use serde_json::{Value, json};

const ALL_TPS: [&str; 3] = ["2025/tps-2025.md", "tps-report-draft.md", "tps-report.md"];

fn server(fx: &NotesFixture) -> StdioServer {
    fx.spawn("alice", &[]).expect("spawn notes-example")
}

fn lesson_intact(fx: &NotesFixture) -> bool {
    ALL_TPS.iter().all(|id| fx.exists(id)) && fx.exists("shopping.md")
}

/// First leg for "tps": returns the state after checking the form.
fn ask_tps(s: &mut StdioServer, fx: &NotesFixture) -> String {
    let r = first_leg(s, &fx.delete_args("tps")).unwrap();
    assert_eq!(result_type(&r), Some("input_required"), "{r}");
    request_state(&r).unwrap()
}

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

#[test]
fn notes_list_returns_structured_ids_and_titles() {
    let fx = NotesFixture::new().unwrap();
    let mut s = server(&fx);
    let r = s
        .request(
            "tools/call",
            call_params("notes_list", json!({"workspaceUri": fx.uri}), json!({})),
        )
        .unwrap();
    assert!(is_success(&r), "{r}");
    let notes = r["result"]["structuredContent"]["notes"]
        .as_array()
        .unwrap()
        .clone();
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

#[test]
fn form_offers_exactly_the_matches_even_for_one() {
    let fx = NotesFixture::new().unwrap();
    let mut s = server(&fx);
    let r = first_leg(&mut s, &fx.delete_args("TpS")).unwrap();
    assert_eq!(result_type(&r), Some("input_required"), "{r}");
    let req = &r["result"]["inputRequests"][DELETE_KEY];
    assert_eq!(req["method"], "elicitation/create", "{r}");
    let schema = &req["params"]["requestedSchema"];
    let mut required: Vec<String> = serde_json::from_value(schema["required"].clone()).unwrap();
    required.sort();
    assert_eq!(required, ["confirm", "note_id"]);
    assert_eq!(schema["properties"]["confirm"]["type"], "boolean");
    assert_eq!(offered_ids(&r), ALL_TPS);
    let titles: Vec<&str> = schema["properties"]["note_id"]["oneOf"]
        .as_array()
        .map(|o| o.iter().filter_map(|x| x["title"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        titles,
        ["TPS Report 2025", "TPS report (draft)", "TPS report"]
    );

    // One match still asks.
    let r = first_leg(&mut s, &fx.delete_args("shopping")).unwrap();
    assert_eq!(result_type(&r), Some("input_required"), "{r}");
    assert_eq!(offered_ids(&r), ["shopping.md"]);
    assert!(lesson_intact(&fx));
}

#[test]
fn no_match_is_a_complete_error_result() {
    let fx = NotesFixture::new().unwrap();
    let mut s = server(&fx);
    let r = first_leg(&mut s, &fx.delete_args("quarterly")).unwrap();
    assert!(is_tool_error(&r), "{r}");
    assert!(text(&r).contains("No note"), "{r}");
}

#[test]
fn accept_deletes_exactly_the_chosen_note_once() {
    let fx = NotesFixture::new().unwrap();
    let mut s = server(&fx);
    let args = fx.delete_args("tps");
    let state = ask_tps(&mut s, &fx);
    let r = answer(&mut s, &args, choose("tps-report-draft.md", true), &state).unwrap();
    assert!(is_success(&r), "{r}");
    assert!(text(&r).contains("tps-report-draft.md"), "{r}");
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
    let again = answer(&mut s, &args, choose("tps-report-draft.md", true), &state).unwrap();
    assert!(is_replay(&again), "{again}");
    assert!(text(&again).contains("tps-report-draft.md"), "{again}");
    assert!(fx.exists("tps-report-draft.md"));
    let mut other = fx.spawn("alice", &["--no-sandbox"]).unwrap();
    let again = answer(&mut other, &args, choose("tps-report.md", true), &state).unwrap();
    assert!(is_refusal(&again), "{again}");
    // The identical retry from another principal is refused too, never replayed.
    let mut bob = fx.spawn("bob", &["--no-sandbox"]).unwrap();
    let again = answer(&mut bob, &args, choose("tps-report-draft.md", true), &state).unwrap();
    assert!(is_refusal(&again) && !is_replay(&again), "{again}");
    assert!(fx.exists("tps-report-draft.md") && fx.exists("tps-report.md"));
}

#[test]
fn accept_without_confirm_deletes_nothing() {
    let fx = NotesFixture::new().unwrap();
    let mut s = server(&fx);
    let args = fx.delete_args("tps");
    let state = ask_tps(&mut s, &fx);
    let r = answer(&mut s, &args, choose("tps-report.md", false), &state).unwrap();
    assert!(
        !is_refusal(&r) && result_type(&r) == Some("complete"),
        "{r}"
    );
    assert!(lesson_intact(&fx));
}

#[test]
fn decline_is_a_non_error_refusal_and_burns_the_state() {
    let fx = NotesFixture::new().unwrap();
    let mut s = server(&fx);
    let args = fx.delete_args("tps");
    let state = ask_tps(&mut s, &fx);
    let r = answer(&mut s, &args, json!({"action": "decline"}), &state).unwrap();
    assert!(is_success(&r), "decline is complete and not an error: {r}");
    assert!(lesson_intact(&fx));
    let r = answer(&mut s, &args, choose("tps-report.md", true), &state).unwrap();
    assert!(
        is_refusal(&r),
        "a declined state is never usable again: {r}"
    );
    assert!(lesson_intact(&fx));
}

#[test]
fn cancel_and_malformed_content_keep_the_state_retryable() {
    let fx = NotesFixture::new().unwrap();
    let mut s = server(&fx);
    let args = fx.delete_args("tps");
    let state = ask_tps(&mut s, &fx);

    let r = answer(&mut s, &args, json!({"action": "cancel"}), &state).unwrap();
    assert!(!is_success(&r), "cancel is not a success: {r}");
    assert!(lesson_intact(&fx));

    for bad in [
        json!({"action": "accept", "content": {"note_id": "tps-report.md"}}),
        json!({"action": "accept", "content": {"note_id": "tps-report.md", "confirm": "yes"}}),
        json!({"action": "accept", "content": {"note_id": 7, "confirm": true}}),
        json!({"action": "accept"}),
        json!({"action": "explode"}),
        json!("not an object"),
    ] {
        let r = answer(&mut s, &args, bad.clone(), &state).unwrap();
        assert!(!is_success(&r), "{bad} must not succeed: {r}");
        assert!(lesson_intact(&fx), "{bad} deleted something");
    }

    let r = answer(&mut s, &args, choose("tps-report.md", true), &state).unwrap();
    assert!(
        is_success(&r),
        "state still usable after cancel/malformed: {r}"
    );
    assert!(!fx.exists("tps-report.md"));
}

#[test]
fn note_id_outside_the_candidates_is_refused() {
    let fx = NotesFixture::new().unwrap();
    let mut s = server(&fx);
    let args = fx.delete_args("tps");
    let state = ask_tps(&mut s, &fx);
    for outside in [
        "shopping.md",
        "../private/x.md",
        "tps-report.md/../shopping.md",
        "",
    ] {
        let r = answer(&mut s, &args, choose(outside, true), &state).unwrap();
        assert!(!is_success(&r), "{outside:?}: {r}");
        assert!(lesson_intact(&fx), "{outside:?} deleted something");
    }
}

#[test]
fn changed_title_tampered_or_foreign_state_is_refused() {
    let fx = NotesFixture::new().unwrap();
    let mut s = server(&fx);
    let state = ask_tps(&mut s, &fx);

    // A changed title (the shopping list is not among the candidates the state was issued for).
    let r = answer(
        &mut s,
        &fx.delete_args("shopping"),
        choose("shopping.md", true),
        &state,
    )
    .unwrap();
    assert!(is_refusal(&r), "{r}");
    // A changed workspace spelling of a different directory is refused as well.
    let other = json!({"workspaceUri": format!("{}/2025", fx.uri), "title": "tps"});
    let r = answer(&mut s, &other, choose("tps-2025.md", true), &state).unwrap();
    assert!(is_refusal(&r), "{r}");

    // Tampered: flip one character in the payload and in the signature.
    for position in [state.len() / 2, state.len() - 2] {
        let mut bytes = state.clone().into_bytes();
        bytes[position] = if bytes[position] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(bytes).unwrap();
        let r = answer(
            &mut s,
            &fx.delete_args("tps"),
            choose("tps-report.md", true),
            &tampered,
        )
        .unwrap();
        assert!(is_refusal(&r), "{r}");
    }
    assert!(lesson_intact(&fx));

    // Another principal, same key and store, and even the same workspace granted: refused.
    let mut bob = fx.spawn("bob", &["--no-sandbox"]).unwrap();
    let r = answer(
        &mut bob,
        &fx.delete_args("tps"),
        choose("tps-report.md", true),
        &state,
    )
    .unwrap();
    assert!(is_refusal(&r), "{r}");
    assert!(lesson_intact(&fx));

    // The rightful owner can still use it afterwards: none of the refusals consumed it.
    let r = answer(
        &mut s,
        &fx.delete_args("tps"),
        choose("tps-report.md", true),
        &state,
    )
    .unwrap();
    assert!(is_success(&r), "{r}");
}

#[test]
fn expired_state_is_refused() {
    let fx = NotesFixture::new().unwrap();
    let mut s = fx.spawn("alice", &["--state-ttl", "1"]).unwrap();
    let state = ask_tps(&mut s, &fx);
    std::thread::sleep(Duration::from_millis(2100));
    let r = answer(
        &mut s,
        &fx.delete_args("tps"),
        choose("tps-report.md", true),
        &state,
    )
    .unwrap();
    assert!(is_refusal(&r), "{r}");
    assert!(lesson_intact(&fx));
}

#[test]
fn workspace_authorization_refuses_prefix_confusion_traversal_and_strangers() {
    let fx = NotesFixture::new().unwrap();
    let root = fx.root();
    std::fs::create_dir_all(root.join("notes-evil")).unwrap();
    std::fs::write(root.join("notes-evil/tps.md"), "# TPS evil\n").unwrap();
    std::fs::create_dir_all(root.join("private")).unwrap();
    std::fs::write(root.join("private/tps.md"), "# TPS private\n").unwrap();
    let mut s = server(&fx);
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
        let r = first_leg(&mut s, &json!({"workspaceUri": uri, "title": "tps"})).unwrap();
        assert!(is_tool_error(&r), "{uri} must be refused: {r}");
        let shown = text(&r);
        assert!(
            !shown.contains(&fx.uri) || uri.starts_with(&fx.uri),
            "no leak of allowed roots: {shown}"
        );
    }
    assert!(root.join("notes-evil/tps.md").exists() && root.join("private/tps.md").exists());

    // The principal comes from configuration, never from clientInfo.
    let private = root.join("private");
    let mut bob = fx
        .spawn_without_workspace(
            "bob",
            &["--no-sandbox", "--workspace", private.to_str().unwrap()],
        )
        .unwrap();
    let mut params = call_params("notes_delete", fx.delete_args("tps"), form_caps());
    params["_meta"]["io.modelcontextprotocol/clientInfo"] =
        json!({"name": "alice", "version": "1"});
    let r = bob.request("tools/call", params).unwrap();
    assert!(is_tool_error(&r), "bob may not use alice's workspace: {r}");
}

#[cfg(unix)]
#[test]
fn symlinks_leading_outside_are_neither_offered_nor_deleted() {
    use std::os::unix::fs::symlink;
    let fx = NotesFixture::new().unwrap();
    let root = fx.root();
    let private = root.join("private");
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(private.join("salary.md"), "# TPS salaries\n").unwrap();
    symlink(private.join("salary.md"), fx.notes.join("salary-link.md")).unwrap();
    symlink(&private, fx.notes.join("linked-dir")).unwrap();
    symlink("../private/salary.md", fx.notes.join("relative-link.md")).unwrap();

    let mut s = server(&fx);
    let r = first_leg(&mut s, &fx.delete_args("tps")).unwrap();
    assert_eq!(offered_ids(&r), ALL_TPS, "links are not offered: {r}");
    let listed = s
        .request(
            "tools/call",
            call_params("notes_list", json!({"workspaceUri": fx.uri}), json!({})),
        )
        .unwrap();
    let ids = listed["result"]["structuredContent"]["notes"].to_string();
    assert!(!ids.contains("link"), "{ids}");

    // Forged choices naming the links: refused, the targets and the links survive.
    let state = request_state(&r).unwrap();
    for forged in ["salary-link.md", "linked-dir/salary.md", "relative-link.md"] {
        let r = answer(&mut s, &fx.delete_args("tps"), choose(forged, true), &state).unwrap();
        assert!(!is_success(&r), "{forged}: {r}");
    }
    assert!(private.join("salary.md").exists());
    assert!(
        fx.exists("salary-link.md") && fx.exists("linked-dir") && fx.exists("relative-link.md")
    );
}

#[cfg(unix)]
#[test]
fn a_note_swapped_for_a_link_before_the_unlink_is_not_deleted() {
    use std::os::unix::fs::symlink;
    let fx = NotesFixture::new().unwrap();
    let root = fx.root();
    let private = root.join("private");
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(private.join("tps-2025.md"), "# TPS Report 2025\n").unwrap();
    let mut s = server(&fx);
    let state = ask_tps(&mut s, &fx);
    // Between the form and the answer, the folder holding a candidate becomes a link outside.
    std::fs::rename(fx.notes.join("2025"), root.join("moved-2025")).unwrap();
    symlink(&private, fx.notes.join("2025")).unwrap();
    let r = answer(
        &mut s,
        &fx.delete_args("tps"),
        choose("2025/tps-2025.md", true),
        &state,
    )
    .unwrap();
    assert!(!is_success(&r), "{r}");
    assert!(
        private.join("tps-2025.md").exists(),
        "the file outside survives"
    );
    assert!(root.join("moved-2025/tps-2025.md").exists());
}

#[test]
fn capability_version_and_notification_errors() {
    let fx = NotesFixture::new().unwrap();
    let mut s = server(&fx);
    // No elicitation capability: -32021 naming what is missing, before the tool runs.
    let r = s
        .request(
            "tools/call",
            call_params("notes_delete", fx.delete_args("tps"), json!({})),
        )
        .unwrap();
    assert_eq!(error_code(&r), Some(-32021), "{r}");
    assert!(
        r["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{r}"
    );
    // URL-only elicitation does not allow a form either.
    let r = s
        .request(
            "tools/call",
            call_params(
                "notes_delete",
                fx.delete_args("tps"),
                json!({"elicitation": {"url": {}}}),
            ),
        )
        .unwrap();
    assert_eq!(error_code(&r), Some(-32021), "{r}");

    let mut old = meta(json!({}));
    old["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let r = s.request("server/discover", json!({"_meta": old})).unwrap();
    assert_eq!(error_code(&r), Some(-32022), "{r}");
    assert_eq!(r["error"]["data"]["requested"], "1900-01-01");
    assert!(
        r["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );

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

#[test]
fn default_store_lives_in_the_data_dir_and_default_keys_are_per_process() {
    let fx = NotesFixture::new().unwrap();
    let data = fx.root().join("xdg-data");
    std::fs::create_dir_all(&data).unwrap();
    let bin = mcp_tests::notes_binary().unwrap();
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
    let mut a = StdioServer::spawn_with_env(&bin, &args, &env).unwrap();
    let mut b = StdioServer::spawn_with_env(&bin, &args, &env).unwrap();
    let state = ask_tps(&mut a, &fx);
    // B shares A's default store but not its random key: A's state means nothing to B.
    let r = answer(
        &mut b,
        &fx.delete_args("tps"),
        choose("tps-report.md", true),
        &state,
    )
    .unwrap();
    assert!(is_refusal(&r), "{r}");
    assert!(lesson_intact(&fx));
    let r = answer(
        &mut a,
        &fx.delete_args("tps"),
        choose("tps-report.md", true),
        &state,
    )
    .unwrap();
    assert!(is_success(&r), "{r}");
    assert!(
        data.join("notes-example/replay.sqlite3").exists(),
        "default SQLite store created"
    );
}

#[test]
fn missing_arguments_and_state_moved_to_another_tool_are_refused() {
    let fx = NotesFixture::new().unwrap();
    let mut s = server(&fx);
    // Both arguments are required: a tool error the model can act on, nothing asked.
    for args in [
        json!({"workspaceUri": fx.uri}),
        json!({"title": "tps"}),
        json!({}),
    ] {
        let r = first_leg(&mut s, &args).unwrap();
        assert!(is_tool_error(&r), "{args}: {r}");
    }
    // A state issued for notes_delete means nothing to notes_list.
    let state = ask_tps(&mut s, &fx);
    let r = s
        .request(
            "tools/call",
            mcp_tests::retry_params(
                "notes_list",
                json!({"workspaceUri": fx.uri}),
                form_caps(),
                json!({ DELETE_KEY: choose("tps-report.md", true) }),
                &state,
            ),
        )
        .unwrap();
    assert!(is_refusal(&r), "{r}");
    assert!(lesson_intact(&fx));
}
