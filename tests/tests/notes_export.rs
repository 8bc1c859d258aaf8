//! `notes_export` over stdio: a plain call without the tasks extension, a task with it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use mcp_tests::notes::NotesFixture;
use mcp_tests::{call_params, meta};
use serde_json::{Value, json};

fn with_tasks() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

fn check_bundle(text: &str) {
    assert!(text.starts_with("# Notes of file://"), "{text}");
    // Every note of the lesson workspace is in it, each under its id.
    assert!(text.matches("\n---\n").count() >= 3, "{text}");
    assert!(text.contains("<!-- tps-report-draft.md -->"), "{text}");
}

#[test]
fn notes_export_answers_plainly_or_as_a_task() {
    let fx = NotesFixture::new().unwrap();
    let mut s = fx.spawn("alice", &[]).unwrap();
    let args = json!({"workspaceUri": fx.uri});

    let plain = s
        .request(
            "tools/call",
            call_params("notes_export", args.clone(), json!({})),
        )
        .unwrap();
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    check_bundle(plain["result"]["content"][0]["text"].as_str().unwrap());

    let created = s
        .request(
            "tools/call",
            call_params("notes_export", args, with_tasks()),
        )
        .unwrap();
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let got = s
            .request(
                "tasks/get",
                json!({"_meta": meta(with_tasks()), "taskId": id}),
            )
            .unwrap();
        if got["result"]["status"] == "completed" {
            break got;
        }
        assert!(
            Instant::now() < deadline,
            "the export never completed: {got}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    check_bundle(
        done["result"]["result"]["content"][0]["text"]
            .as_str()
            .unwrap(),
    );
}
