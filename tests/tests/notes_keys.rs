//! Key rotation across a fleet: `--state-key-file` holds the current key first and previous
//! keys after it, so a confirmation started on a process still signing with the old key is
//! finished by a process that already signs with the new one. A process that dropped the old
//! key refuses such a confirmation cleanly (an error the client can read, nothing deleted, the
//! process keeps serving, and the confirmation is not used up).

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use mcp_runtime::client::Client;
use mcp_tests::notes::*;
use mcp_tests::notes_client;

/// A second valid key (32 bytes of base64) with another key id than [`TEST_KEY_LINE`].
const NEW_KEY_LINE: &str = "k2:dGhlIHNlY29uZCB0ZXN0IGtleTogMzIgYnl0ZXMhISE=";

fn spawn_with_keys(fx: &NotesFixture, key_file: &Path) -> Client {
    let notes = fx.notes.to_str().unwrap();
    let args = [
        "serve",
        "--stdio",
        "--principal",
        "alice",
        "--store",
        fx.store.as_str(),
        "--state-key-file",
        key_file.to_str().unwrap(),
        "--workspace",
        notes,
    ];
    notes_client(&args, &[]).unwrap()
}

fn key_file(fx: &NotesFixture, name: &str, lines: &[&str]) -> std::path::PathBuf {
    let path = fx.root().join(name);
    std::fs::write(&path, format!("{}\n", lines.join("\n"))).unwrap();
    path
}

#[tokio::test]
async fn rotation_mid_flow_finishes_with_old_key_kept_and_refuses_cleanly_without_it() {
    let fx = NotesFixture::new().unwrap();
    let old_only = key_file(&fx, "old.key", &[TEST_KEY_LINE]);
    let rotated = key_file(&fx, "rotated.key", &[NEW_KEY_LINE, TEST_KEY_LINE]);
    let new_only = key_file(&fx, "new.key", &[NEW_KEY_LINE]);
    let old = spawn_with_keys(&fx, &old_only);
    let mid = spawn_with_keys(&fx, &rotated);
    let new = spawn_with_keys(&fx, &new_only);

    let args = fx.delete_args("tps report (draft)");
    let first = ask_delete(&old, &args).await;
    assert_eq!(first.offered_ids(), ["tps-report-draft.md"], "{first:?}");
    let state = first.request_state().unwrap();
    assert!(state.contains(".test."), "signed with the old key: {state}");

    // A process that no longer has the old key: refused, nothing deleted, still serving.
    let refused = answer_delete(&new, &args, choose("tps-report-draft.md", true), &state).await;
    assert!(refused.is_refusal(), "{refused:?}");
    assert!(
        refused.text().to_lowercase().contains("key"),
        "the refusal names the unknown key: {refused:?}"
    );
    assert!(fx.exists("tps-report-draft.md"));
    let list = list_notes(&new, &fx.uri).await;
    assert!(
        list.is_success(),
        "the refusing process keeps serving: {list:?}"
    );

    // The rotated process (new key first, old key kept) finishes the flow: the refusal above
    // did not use the confirmation up.
    let done = answer_delete(&mid, &args, choose("tps-report-draft.md", true), &state).await;
    assert!(done.is_success(), "{done:?}");
    assert!(!fx.exists("tps-report-draft.md"));
    assert!(fx.exists("tps-report.md") && fx.exists("shopping.md"));

    // The rotated process signs with the new key; the new-only process verifies it, the
    // old-only process (not yet rotated) cannot.
    let args = fx.delete_args("shopping");
    let first = ask_delete(&mid, &args).await;
    let state = first.request_state().unwrap();
    assert!(state.contains(".k2."), "signed with the new key: {state}");
    let stale = answer_delete(&old, &args, choose("shopping.md", true), &state).await;
    assert!(stale.is_refusal(), "{stale:?}");
    assert!(fx.exists("shopping.md"));
    let done = answer_delete(&new, &args, choose("shopping.md", true), &state).await;
    assert!(done.is_success(), "{done:?}");
    assert!(!fx.exists("shopping.md"));
}
