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

/// Polls `tasks/get` on `s` until the task completes (bounded: a hang fails the test).
fn poll_completed(s: &mut mcp_tests::StdioServer, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = s
            .request(
                "tasks/get",
                json!({"_meta": meta(with_tasks()), "taskId": id}),
            )
            .unwrap();
        if got["result"]["status"] == "completed" {
            return got;
        }
        assert!(
            got.get("error").is_none() && Instant::now() < deadline,
            "the export never completed: {got}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_task_created_by_one_instance_is_polled_through_another_sharing_the_store() {
    let fx = NotesFixture::new().unwrap();
    let mut first = fx.spawn("alice", &[]).unwrap();
    let created = first
        .request(
            "tools/call",
            call_params(
                "notes_export",
                json!({"workspaceUri": fx.uri}),
                with_tasks(),
            ),
        )
        .unwrap();
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();

    // A second process on the same SQLite file answers for the task the first one runs.
    let mut second = fx.spawn("alice", &[]).unwrap();
    let done = poll_completed(&mut second, &id);
    check_bundle(
        done["result"]["result"]["content"][0]["text"]
            .as_str()
            .unwrap(),
    );
    // ttlMs is the server's task lifetime (the default hour), counted from creation.
    assert_eq!(done["result"]["ttlMs"], 3_600_000, "{done}");

    // Another principal sharing the store does not see it.
    let mut bob = fx.spawn("bob", &[]).unwrap();
    let hidden = bob
        .request(
            "tasks/get",
            json!({"_meta": meta(with_tasks()), "taskId": id}),
        )
        .unwrap();
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");
}
