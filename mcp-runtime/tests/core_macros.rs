//! The MRTR flow with a tool written the way users write them: `#[tool]` and
//! `#[derive(ElicitForm)]` through `mcp_runtime::prelude`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_runtime::prelude::*;
use mcp_runtime::tool::ToolHandler;
use serde_json::{Value, json};

#[derive(Clone, Default)]
struct Deleted(Arc<AtomicUsize>);

#[args]
#[serde(rename_all = "camelCase")]
struct DeleteArgs {
    /// Text the note id must contain
    title: String,
}

#[derive(ElicitForm)]
struct DeleteChoice {
    /// Which note to delete
    #[form(title = "Note", choices)]
    note_id: String,
    /// Yes, delete it
    confirm: bool,
}

/// Delete one note, after the user picks which and confirms.
#[tool(destructive, requires(form_elicitation))]
async fn notes_delete(
    ctx: &mut RequestContext,
    State(deleted): State<Deleted>,
    args: DeleteArgs,
) -> Result<String, HandlerError> {
    let hits: Vec<(String, String)> = ["groceries", "groceries-old", "todo"]
        .iter()
        .filter(|n| n.contains(args.title.as_str()))
        .map(|n| ((*n).to_owned(), n.to_uppercase()))
        .collect();
    if hits.is_empty() {
        return Err(HandlerError::tool(format!(
            "No note matches {:?}",
            args.title
        )));
    }
    let choices = DeleteChoice::choices().note_id(hits);
    match ctx
        .elicit::<DeleteChoice>("delete_choice", "Which note should I delete?", choices)
        .await?
    {
        Elicitation::Accepted(c) if c.confirm => {
            deleted.0.fetch_add(1, Ordering::SeqCst);
            Ok(format!("Deleted {}", c.note_id))
        }
        Elicitation::Accepted(_) | Elicitation::Declined => Ok("Nothing deleted.".into()),
        Elicitation::Cancelled => Err(HandlerError::tool("Cancelled; nothing deleted.")),
    }
}

fn body(id: i64, caps: Value, extra: Value) -> Vec<u8> {
    call_body(id, "notes_delete", json!({"title": "groc"}), caps, extra)
}

/// A `tools/call` of `name` with `arguments`, the client capabilities `caps` and the extra
/// params members `extra` (`requestState`, `inputResponses`).
fn call_body(id: i64, name: &str, arguments: Value, caps: Value, extra: Value) -> Vec<u8> {
    let mut params = json!({
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": caps},
        "name": name,
        "arguments": arguments
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
    )
    .unwrap()
}

#[tokio::test]
async fn tool_macro_flow() {
    let deleted = Deleted::default();
    let server = Server::builder(Implementation::new("notes", "0.1.0"))
        .tools(tools![notes_delete])
        .state(deleted.clone())
        .build()
        .unwrap();
    let me = Principal::new("me");
    let send = async |b: Vec<u8>| -> Value {
        serde_json::from_slice(&server.handle_bytes(&b, &me).await.unwrap()).unwrap()
    };
    let r = send(body(1, json!({}), json!({}))).await;
    assert_eq!(r["error"]["code"], -32021, "{r}");
    let caps = json!({"elicitation": {"form": {}}});
    let r = send(body(1, caps.clone(), json!({}))).await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let schema = &r["result"]["inputRequests"]["delete_choice"]["params"]["requestedSchema"];
    assert!(
        schema["properties"]["note_id"]
            .to_string()
            .contains("groceries-old"),
        "{schema}"
    );
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();
    // A value outside the offered choices is asked again.
    let bad = json!({"requestState": state, "inputResponses": {"delete_choice":
        {"action": "accept", "content": {"note_id": "todo", "confirm": true}}}});
    let r = send(body(2, caps.clone(), bad)).await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let good = json!({"requestState": state, "inputResponses": {"delete_choice":
        {"action": "accept", "content": {"note_id": "groceries-old", "confirm": true}}}});
    let r = send(body(3, caps.clone(), good.clone())).await;
    assert_eq!(
        r["result"]["content"][0]["text"], "Deleted groceries-old",
        "{r}"
    );
    // The identical retry gets the recorded result, marked; another answer is refused.
    let r = send(body(4, caps.clone(), good)).await;
    assert_eq!(
        r["result"]["_meta"]["dev.mcp-runtime/replayed"], true,
        "{r}"
    );
    let other = json!({"requestState": state, "inputResponses": {"delete_choice":
        {"action": "decline"}}});
    let r = send(body(5, caps, other)).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(deleted.0.load(Ordering::SeqCst), 1);
}

/// An arguments type whose schema root is not an object (a bare string).
#[args]
struct NotAnObject(String);

/// Takes a newtype around a string as its arguments, which no client can send.
#[tool]
async fn bare_string(args: NotAnObject) -> ToolResult<String> {
    Ok(args.0)
}

#[test]
fn build_refuses_a_tool_whose_arguments_are_not_an_object() {
    let err = Server::builder(Implementation::new("t", "0"))
        .tools(tools![bare_string])
        .build()
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("tool `bare_string` is misdeclared: the arguments type"),
        "{msg}"
    );
    assert!(msg.contains("must be a struct with named fields"), "{msg}");
}

#[test]
fn build_refuses_a_tool_whose_state_was_never_registered() {
    let err = Server::builder(Implementation::new("t", "0"))
        .tools(tools![notes_delete])
        .build()
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("tool `notes_delete` takes `State<core_macros::Deleted>`"),
        "{msg}"
    );
    assert!(msg.contains("add `.state(value)`"), "{msg}");
    // Registered, the same server builds.
    Server::builder(Implementation::new("t", "0"))
        .tools(tools![notes_delete])
        .state(Deleted::default())
        .build()
        .unwrap();
}

#[args]
struct CountArgs {
    /// How many (prompt arguments are strings, so this cannot be sent)
    count: u32,
}

/// Counts, with an argument no client can send.
#[prompt]
async fn counted(args: CountArgs) -> String {
    args.count.to_string()
}

#[test]
fn build_refuses_a_prompt_whose_argument_is_not_a_string() {
    let err = Server::builder(Implementation::new("t", "0"))
        .prompts(prompts![counted])
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "prompt `counted` is misdeclared: prompt argument `count` must be a `String` or \
         `Option<String>` (prompt arguments are strings)"
    );
}

#[args]
struct EchoArgs {
    /// Text to echo back
    text: String,
}

/// Echoes its text: it takes no context, so it can never ask for input.
#[tool(read_only)]
async fn echo_text(args: EchoArgs) -> String {
    args.text
}

/// Reads the context without holding it mutably: it cannot ask for input either.
#[tool(read_only)]
async fn whoami_now(ctx: &RequestContext) -> String {
    ctx.principal().as_str().to_owned()
}

#[test]
fn only_a_tool_holding_the_context_mutably_may_request_input() {
    assert!(notes_delete::default().may_request_input());
    assert!(!echo_text::default().may_request_input());
    assert!(!whoami_now::default().may_request_input());
}

/// A tool that cannot ask skips the argument digest on a first call, but a `requestState`
/// sent to it is still opened in full: one issued for another tool is refused, not ignored.
#[tokio::test]
async fn a_tool_that_cannot_ask_still_refuses_a_state_it_did_not_issue() {
    let server = Server::builder(Implementation::new("notes", "0.1.0"))
        .tools(tools![notes_delete, echo_text])
        .state(Deleted::default())
        .build()
        .unwrap();
    let me = Principal::new("me");
    let caps = json!({"elicitation": {"form": {}}});
    let r: Value = serde_json::from_slice(
        &server
            .handle_bytes(&body(1, caps.clone(), json!({})), &me)
            .await
            .unwrap(),
    )
    .unwrap();
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();
    let echo = |id: i64, extra: Value| {
        call_body(id, "echo_text", json!({"text": "hi"}), caps.clone(), extra)
    };
    let send = async |b: Vec<u8>| -> Value {
        serde_json::from_slice(&server.handle_bytes(&b, &me).await.unwrap()).unwrap()
    };
    let r = send(echo(2, json!({}))).await;
    assert_eq!(r["result"]["content"][0]["text"], "hi", "{r}");
    let r = send(echo(3, json!({"requestState": state}))).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r.get("result").is_none(), "{r}");
    let r = send(echo(4, json!({"requestState": "not-a-state"}))).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
}
