//! The README's 30-second tour, compiled and run: the complete `notes_delete` tool written as an
//! author would, driven through a real `Server` on a real workspace. A test also checks that the
//! README shows exactly the code between the `tour:begin`/`tour:end` markers below, and the
//! harness test between `harness:begin`/`harness:end` (the same tool tested with the in-process
//! client in at most 8 statements).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code fails loudly by design

use mcp_runtime::client::Client;
use mcp_runtime::prelude::*;
use mcp_runtime::scope::ScopePolicy;
use mcp_runtime::tool::ToolHandler;
use mcp_tests::{accept, call_params, form_caps, lesson_workspace, retry_params};
use notes_example::notes::Notes;
use serde_json::{Value, json};

// tour:begin
#[derive(ElicitForm)]
struct DeleteChoice {
    /// Which note to delete
    #[form(choices)]
    note_id: String,
    /// Yes, delete it
    confirm: bool,
}

/// Delete one note whose title contains `title`, after the user picks it and confirms.
#[tool(destructive, requires(form_elicitation), rename_all = "camelCase")]
async fn notes_delete(
    ctx: &mut RequestContext,
    State(notes): State<Notes>,
    /// File URI of the workspace, e.g. file:///home/me/notes
    workspace_uri: String,
    /// Text the note title must contain (case-insensitive)
    title: String,
) -> ToolResult<String> {
    let ws = notes.open(ctx.principal(), &workspace_uri)?;
    let choices = DeleteChoice::choices().note_id(ws.candidates(&title)?);
    let answer = ctx.elicit::<DeleteChoice>("delete_choice", "Which note?", choices);
    match answer.await? {
        Elicitation::Accepted(c) if c.confirm => Ok(format!("Deleted {}.", ws.delete(&c.note_id)?)),
        Elicitation::Cancelled => Err(HandlerError::tool("Cancelled; nothing was deleted.")),
        _ => Ok("Nothing was deleted.".into()),
    }
}
// tour:end

/// The lesson's notes in a temporary workspace that principal "me" may use.
struct Workspace {
    _tmp: tempfile::TempDir,
    root: std::path::PathBuf,
    uri: String,
    notes: Notes,
}

fn workspace() -> Result<Workspace, mcp_tests::Error> {
    let tmp = tempfile::tempdir()?;
    let root = lesson_workspace(tmp.path())?;
    let notes = Notes::new(ScopePolicy::new().allow(Principal::new("me"), &root)?);
    let uri = mcp_tests::file_uri(&root)?;
    Ok(Workspace {
        _tmp: tmp,
        root,
        uri,
        notes,
    })
}

// harness:begin
#[tokio::test]
async fn notes_delete_asks_then_deletes() -> Result<(), mcp_tests::Error> {
    let ws = workspace()?; // the lesson's notes in a temporary directory
    let server = Server::builder(Implementation::new("tour", "0.1.0"))
        .tools(tools![notes_delete])
        .state(ws.notes.clone())
        .build()?;
    let mut round = Client::in_process(server, Principal::new("me"))
        .call(
            "notes_delete",
            json!({"workspaceUri": ws.uri, "title": "tps report"}),
        )
        .await?
        .pending()?;
    let offered = round
        .form::<DeleteChoice>("delete_choice")?
        .choice_values("note_id");
    assert_eq!(offered.len(), 3);
    round.accept(
        "delete_choice",
        &DeleteChoice {
            note_id: offered[1].clone(),
            confirm: true,
        },
    )?;
    assert_eq!(
        round.retry().await?.complete()?.text(),
        format!("Deleted {}.", offered[1])
    );
    assert!(!ws.root.join(&offered[1]).exists());
    Ok(())
}
// harness:end

fn between(begin: &str, end: &str) -> String {
    let src = include_str!("readme_tour.rs");
    let begin = src.find(begin).unwrap() + begin.len();
    let end = src.find(end).unwrap();
    src[begin..end].to_owned()
}

fn tour_source() -> String {
    between("// tour:begin\n", "// tour:end")
}

#[test]
fn readme_shows_the_harness_test_in_at_most_8_statements() {
    let readme = include_str!("../../README.md");
    let code = between("// harness:begin\n", "// harness:end");
    assert!(
        readme.contains(&code),
        "README.md must contain the harness test from tests/tests/readme_tour.rs verbatim"
    );
    // A statement ends with `;` (rustfmt may wrap it over several lines); `Ok(())` is not one.
    let statements = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or(l).trim_end())
        .filter(|l| l.ends_with(';'))
        .count();
    assert!(
        statements <= 8,
        "the harness test has {statements} statements"
    );
    for forbidden in [
        "requestState",
        "inputResponses",
        "serde_json::to",
        "handle_bytes",
    ] {
        assert!(
            !code.contains(forbidden),
            "the harness test mentions {forbidden}"
        );
    }
}

#[test]
fn readme_shows_this_exact_code_in_at_most_20_lines() {
    let readme = include_str!("../../README.md");
    let code = tour_source();
    assert!(
        readme.contains(&code),
        "README.md must contain the tour code from tests/tests/readme_tour.rs verbatim"
    );
    // Author code: not blank, not a comment or doc line, not a lone closing brace/paren.
    let lines = code
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//") && !matches!(*l, "}" | ")" | "};"))
        .count();
    assert!(lines <= 20, "the tour has {lines} lines of author code");
    for forbidden in ["requestState", "sign", "capabilit", "serde_json", "json!"] {
        assert!(!code.contains(forbidden), "the tour mentions {forbidden}");
    }
}

#[test]
fn the_tour_tool_takes_the_same_arguments_as_the_notes_example() {
    // Byte for byte the real tool's inputSchema (from its hand-written struct), so the tour
    // is honest about what the shorter declaration gives; only the struct's own doc comment
    // (a root `description`) has no counterpart in parameters.
    let schema = |t: &dyn ToolHandler| serde_json::to_value(&t.descriptor().input_schema).unwrap();
    let mut real = schema(&notes_example::tools::notes_delete {});
    assert_eq!(real["description"], "Arguments of `notes_delete`.");
    real.as_object_mut().unwrap().remove("description");
    assert_eq!(
        serde_json::to_string(&schema(&notes_delete {})).unwrap(),
        serde_json::to_string(&real).unwrap()
    );
}

async fn send(server: &Server, id: i64, params: Value) -> Value {
    let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let principal = Principal::new("me");
    let bytes = server
        .handle_bytes(&serde_json::to_vec(&request).unwrap(), &principal)
        .await
        .unwrap();
    serde_json::from_slice::<Value>(&bytes).unwrap()["result"].clone()
}

#[tokio::test]
async fn the_tour_tool_asks_then_deletes_exactly_the_chosen_note() {
    let tmp = tempfile::tempdir().unwrap();
    let root = lesson_workspace(tmp.path()).unwrap();
    let notes = Notes::new(
        ScopePolicy::new()
            .allow(Principal::new("me"), &root)
            .unwrap(),
    );
    let server = Server::builder(Implementation::new("tour", "0.0.0"))
        .tools(tools![notes_delete])
        .state(notes)
        .build()
        .unwrap();
    let uri = mcp_tests::file_uri(&root).unwrap();

    let none = json!({"workspaceUri": uri, "title": "minutes"});
    let miss = send(&server, 0, call_params("notes_delete", none, form_caps())).await;
    assert_eq!(miss["isError"], true, "{miss}");
    assert!(
        miss["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("No note title contains")
    );

    let args = json!({"workspaceUri": uri, "title": "tps report"});

    let first = send(
        &server,
        1,
        call_params("notes_delete", args.clone(), form_caps()),
    )
    .await;
    assert_eq!(first["resultType"], "input_required");
    let form = &first["inputRequests"]["delete_choice"]["params"]["requestedSchema"];
    let offered: Vec<&str> = form["properties"]["note_id"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["const"].as_str().unwrap())
        .collect();
    assert_eq!(offered.len(), 3, "{form}");
    let chosen = offered[1].to_owned();
    assert!(root.join(&chosen).exists());

    let state = first["requestState"].as_str().unwrap().to_owned();
    let responses = json!({"delete_choice": accept(json!({"note_id": chosen, "confirm": true}))});
    let done = send(
        &server,
        2,
        retry_params("notes_delete", args, form_caps(), responses, &state),
    )
    .await;
    assert_eq!(done["content"][0]["text"], format!("Deleted {chosen}."));
    assert!(!root.join(&chosen).exists());
    for other in offered.iter().filter(|o| **o != chosen) {
        assert!(root.join(other).exists(), "{other} must survive");
    }
}
