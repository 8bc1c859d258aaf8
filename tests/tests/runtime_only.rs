//! The tools of `tests/runtime-only`, a crate whose only dependency is `mcp-runtime` (its
//! `#[args]` struct, nested enum and form reach serde and schemars through the runtime), called
//! through a real server: their schemas are those of hand-derived arguments, and they run.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code fails loudly by design

use mcp_runtime::client::Client;
use mcp_runtime::prelude::*;
use runtime_only::{DeleteChoice, Notes};
use serde_json::json;

fn notes() -> Notes {
    Notes::with(&["TPS report", "Groceries", "tps report (draft)"])
}

#[test]
fn the_manifest_names_only_mcp_runtime() {
    let manifest = include_str!("../runtime-only/Cargo.toml");
    let deps = manifest
        .split("[dependencies]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .unwrap();
    let names: Vec<&str> = deps
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| l.split(['.', '=', ' ']).next().unwrap())
        .collect();
    assert_eq!(names, ["mcp-runtime"]);
}

#[tokio::test]
async fn arguments_through_the_runtime_have_the_usual_schema() {
    let server = runtime_only::server(notes()).unwrap();
    let schema = serde_json::to_value(
        &server
            .tools()
            .get("notes_list")
            .unwrap()
            .descriptor()
            .input_schema,
    )
    .unwrap();
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "titleContains": {
                    "type": "string",
                    "description": "Text the titles must contain (case-insensitive)"
                },
                "order": {
                    "description": "Sort order (default ascending)",
                    "oneOf": [
                        {"type": "string", "const": "ascending", "description": "A to Z."},
                        {"type": "string", "const": "descending", "description": "Z to A."}
                    ]
                }
            },
            "description": "The arguments of `notes_list`."
        })
    );
    let client = Client::in_process(server, Principal::new("me"));
    let listed = client
        .call(
            "notes_list",
            json!({"titleContains": "tps", "order": "descending"}),
        )
        .await
        .unwrap()
        .complete()
        .unwrap();
    assert_eq!(listed.text(), "tps report (draft)\nTPS report");
}

#[tokio::test]
async fn the_form_tool_asks_then_deletes() -> Result<(), mcp_tests::Error> {
    let notes = notes();
    let server = runtime_only::server(notes.clone())?;
    let client = Client::in_process(server, Principal::new("me"));
    let mut round = client
        .call("notes_delete", json!({"title": "tps"}))
        .await?
        .pending()?;
    let offered = round
        .form::<DeleteChoice>("delete_choice")?
        .choice_values("note_id");
    assert_eq!(offered, ["TPS report", "tps report (draft)"]);
    round.accept(
        "delete_choice",
        &DeleteChoice {
            note_id: offered[1].clone(),
            confirm: true,
        },
    )?;
    assert_eq!(
        round.retry().await?.complete()?.text(),
        "Deleted tps report (draft)."
    );
    let left = client.call("notes_list", json!({})).await?.complete()?;
    assert_eq!(left.text(), "Groceries\nTPS report");
    Ok(())
}
