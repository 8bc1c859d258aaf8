//! The typed client (`mcp_runtime::client`) driving the real notes-example binary over stdio:
//! the same step-by-step flow the in-process harness uses, across a process boundary.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code fails loudly by design

use std::time::Duration;

use mcp_runtime::client::{Client, ClientError, StdioTransport};
use mcp_tests::notes::{DELETE_KEY, NotesFixture};
use notes_example::tools::DeleteChoice;

fn spawn(fx: &NotesFixture) -> StdioTransport {
    let mut command = tokio::process::Command::new(mcp_tests::notes_binary().unwrap());
    command.args([
        "serve",
        "--stdio",
        "--principal",
        "alice",
        "--store",
        &fx.store,
        "--state-key-file",
        fx.key_file.to_str().unwrap(),
        "--workspace",
        fx.notes.to_str().unwrap(),
    ]);
    command.stderr(std::process::Stdio::null());
    StdioTransport::spawn(command).unwrap()
}

#[tokio::test]
async fn notes_delete_over_stdio_step_by_step() {
    let fx = NotesFixture::new().unwrap();
    let transport = std::sync::Arc::new(spawn(&fx));
    let client = Client::builder(transport.clone())
        .timeout(Duration::from_secs(20))
        .build();

    let discover = client.discover().await.unwrap();
    assert_eq!(discover.supported_versions, ["2026-07-28"]);

    let mut round = client
        .call("notes_delete", fx.delete_args("tps report"))
        .await
        .unwrap()
        .pending()
        .unwrap();
    let offered = round
        .form::<DeleteChoice>(DELETE_KEY)
        .unwrap()
        .choice_values("note_id");
    assert_eq!(offered.len(), 3);
    assert!(fx.exists(&offered[0]));
    round
        .accept(
            DELETE_KEY,
            &DeleteChoice {
                note_id: offered[0].clone(),
                confirm: true,
            },
        )
        .unwrap();
    let done = round.retry().await.unwrap().complete().unwrap();
    assert!(done.text().starts_with("Deleted"), "{}", done.text());
    assert!(!fx.exists(&offered[0]));
    assert!(fx.exists(&offered[1]) && fx.exists(&offered[2]));

    // Closing stdin ends the server; later calls fail with a clear transport error.
    let status = transport.close(Duration::from_secs(10)).await.unwrap();
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    let err = client.discover().await.unwrap_err();
    assert!(matches!(err, ClientError::Transport(_)), "{err}");
}

#[tokio::test]
async fn notes_export_as_a_task_over_stdio() {
    let fx = NotesFixture::new().unwrap();
    let transport = std::sync::Arc::new(spawn(&fx));
    let client = Client::builder(transport.clone())
        .timeout(Duration::from_secs(20))
        .build();
    let args = serde_json::json!({"workspaceUri": fx.uri});
    let mut task = client
        .call_tool_as_task("notes_export", args)
        .await
        .unwrap();
    assert!(
        task.id().is_some(),
        "notes_export runs as a task for a task-aware client"
    );
    let bundle = task.wait(Duration::from_secs(30)).await.unwrap().text();
    assert!(bundle.starts_with("# Notes of file://"), "{bundle}");
    assert!(bundle.contains("<!-- tps-report-draft.md -->"), "{bundle}");
    // The task is done: cancelling it changes nothing.
    assert_eq!(
        task.cancel().await.unwrap(),
        mcp_types::TaskStatus::Completed
    );
    let status = transport.close(Duration::from_secs(10)).await.unwrap();
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}
