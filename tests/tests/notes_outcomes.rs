//! Truthful outcomes of a confirmed deletion on the file backend: a server killed at each
//! point of a deletion and restarted on the same key file and SQLite store never deletes
//! twice from one confirmation (nor a note re-created under the same id), and a replay store
//! whose `COMMIT` fails never leaves the client told "nothing was changed" about a note that
//! is gone.

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::FileTypeExt;

use mcp_runtime::client::{Client, ClientError};
use mcp_tests::notes::*;
use mcp_tests::notes_client;
use serde_json::Value;

// The runtime's SQLite test fixtures (a commit that fails as a full disk would), shared.
#[path = "../../mcp-runtime/tests/sqlite_support/mod.rs"]
mod sqlite_support;

const NOTE: &str = "tps-report-draft.md";
const CONTENT: &str = "# TPS report (draft)\n";

/// `serve --stdio` on the fixture's workspace, key file and SQLite store, crashing at
/// `crash_at` (a `NOTES_EXAMPLE_TEST_CRASH_AT` value) if given.
fn spawn(fx: &NotesFixture, crash_at: Option<&str>) -> Client {
    let notes = fx.notes.to_str().unwrap();
    let key = fx.key_file.to_str().unwrap();
    let args = [
        "serve",
        "--stdio",
        "--no-sandbox",
        "--principal",
        "alice",
        "--store",
        fx.store.as_str(),
        "--state-key-file",
        key,
        // A claim whose claimant died is waited for this long before the retry is answered.
        "--duplicate-wait-secs",
        "1",
        "--workspace",
        notes,
    ];
    let env: Vec<(&str, &str)> = crash_at
        .map(|point| vec![(notes_example::backend::TEST_CRASH_ENV, point)])
        .unwrap_or_default();
    notes_client(&args, &env).unwrap()
}

/// The first leg for the draft note: its state.
async fn ask(s: &Client, args: &Value) -> String {
    let first = ask_delete(s, args).await;
    assert_eq!(first.offered_ids(), [NOTE], "{first:?}");
    first.request_state().unwrap()
}

fn recreate(fx: &NotesFixture) {
    std::fs::write(fx.notes.join(NOTE), CONTENT).unwrap();
}

/// Kill at each point of a deletion, restart, replay the very same confirmation: one
/// confirmation deletes at most one note, ever.
#[tokio::test]
async fn a_server_killed_at_any_point_of_a_deletion_never_deletes_twice() {
    for point in ["before-claim", "after-claim", "after-unlink"] {
        let fx = NotesFixture::new().unwrap();
        let args = fx.delete_args("tps report (draft)");
        let crashing = spawn(&fx, Some(point));
        let state = ask(&crashing, &args).await;
        let died = answer_delete(&crashing, &args, choose(NOTE, true), &state).await;
        assert!(
            matches!(died, Outcome::Failed(ClientError::Transport(_))),
            "{point}: the server answered: {died:?}"
        );
        drop(crashing);

        let deleted_by_crash = !fx.exists(NOTE);
        assert_eq!(deleted_by_crash, point == "after-unlink", "{point}");
        if deleted_by_crash {
            // The same id, re-created: the old confirmation must not reach it.
            recreate(&fx);
        }

        let restarted = spawn(&fx, None);
        let retry = answer_delete(&restarted, &args, choose(NOTE, true), &state).await;
        match point {
            // Nothing was claimed: the confirmation is still good and deletes once.
            "before-claim" => {
                assert!(retry.is_success(), "{point}: {retry:?}");
                assert!(!fx.exists(NOTE), "{point}");
                recreate(&fx);
            }
            // Claimed (committed) before the crash, and no outcome recorded: used up,
            // whatever the unlink did. The retry waits for the claimant's outcome, then says
            // truthfully that it is still missing, so what happened is unknown, and never
            // acts a second time.
            _ => {
                assert!(retry.is_refusal(), "{point}: {retry:?}");
                let said = retry.text();
                assert!(said.contains("still being carried out"), "{point}: {said}");
                assert!(said.contains("unknown"), "{point}: {said}");
                assert!(fx.exists(NOTE), "{point}: a second deletion");
            }
        }
        // And once more, for good measure: never a second deletion.
        let again = answer_delete(&restarted, &args, choose(NOTE, true), &state).await;
        assert!(
            again.is_refusal() || again.is_replay(),
            "{point}: {again:?}"
        );
        assert!(fx.exists(NOTE), "{point}: a second deletion");
        // A fresh confirmation still works after all this.
        let fresh = ask(&restarted, &args).await;
        let done = answer_delete(&restarted, &args, choose(NOTE, true), &fresh).await;
        assert!(done.is_success(), "{point}: {done:?}");
        assert!(!fx.exists(NOTE), "{point}");
    }
}

/// The SQLite file behind `fx.store`.
fn store_path(fx: &NotesFixture) -> std::path::PathBuf {
    fx.store.strip_prefix("sqlite:").unwrap().into()
}

/// A claim whose `COMMIT` fails: the reply says nothing was changed, and nothing was.
#[tokio::test]
async fn a_failed_claim_commit_is_reported_truthfully() {
    let fx = NotesFixture::new().unwrap();
    let args = fx.delete_args("tps report (draft)");
    let s = spawn(&fx, None);
    let state = ask(&s, &args).await;
    sqlite_support::break_commits(&store_path(&fx));
    let r = answer_delete(&s, &args, choose(NOTE, true), &state).await;
    assert!(r.is_refusal(), "{r:?}");
    let said = r.text();
    assert!(said.contains("nothing was changed"), "{r:?}");
    assert!(
        fx.exists(NOTE),
        "the reply said {said:?} but the note is gone"
    );
    // The store recovers: the confirmation was not used, so it still deletes, once.
    sqlite_support::repair_commits(&store_path(&fx));
    let r = answer_delete(&s, &args, choose(NOTE, true), &state).await;
    assert!(r.is_success(), "{r:?}");
    assert!(r.text().contains(NOTE), "{r:?}");
    assert!(!fx.exists(NOTE));
}

/// A note swapped for a FIFO after the form was shown: the confirmed deletion answers at
/// once that nothing was deleted, the FIFO is left alone, and the server keeps serving.
/// (A swap landing between the retry's listing and the unlink is refused by the unlink's own
/// check: `notes::tests::a_fifo_in_a_notes_place_is_neither_read_nor_deleted`.)
#[tokio::test]
async fn a_note_swapped_for_a_fifo_is_not_deleted_and_does_not_stall_the_server() {
    let fx = NotesFixture::new().unwrap();
    let args = fx.delete_args("tps report (draft)");
    let s = spawn(&fx, None);
    let state = ask(&s, &args).await;
    let path = fx.notes.join(NOTE);
    std::fs::remove_file(&path).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success());
    let r = answer_delete(&s, &args, choose(NOTE, true), &state).await;
    // The retry lists the notes again, and a FIFO is not a note: nothing to delete.
    assert!(r.is_tool_error(), "{r:?}");
    assert!(r.text().contains("nothing was deleted"), "{r:?}");
    assert!(
        std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    // Still serving: the listing answers (the FIFO is not a note).
    let list = list_notes(&s, &fx.uri).await;
    assert!(list.is_success(), "{list:?}");
    assert!(!format!("{list:?}").contains(NOTE), "{list:?}");
}
