//! A question's message given as a closure (`AskMessage`) is built only on a pass that sends
//! the question: the first call and every re-ask, never the retry that reads the answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod core_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use core_support::{call, caps_form, parse, retry};
use mcp_runtime::prelude::*;
use serde_json::{Value, json};

#[derive(ElicitForm)]
struct Pick {
    /// Which list
    #[form(choices)]
    list: String,
    /// Yes, clear it
    confirm: bool,
}

/// How many times the message was built.
#[derive(Clone, Default)]
struct Built(Arc<AtomicUsize>);

impl Built {
    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

#[tool(destructive, requires(form_elicitation))]
async fn clear_list(
    ctx: &mut RequestContext,
    State(built): State<Built>,
) -> Result<String, HandlerError> {
    let lists = ["groceries", "todo"];
    let message = || {
        built.0.fetch_add(1, Ordering::SeqCst);
        format!("{} lists can be cleared. Which one?", lists.len())
    };
    let choices = Pick::choices().list(lists.iter().map(|l| (*l, *l)));
    match ctx.elicit::<Pick>("pick", message, choices).await? {
        Elicitation::Accepted(p) if p.confirm => Ok(format!("cleared {}", p.list)),
        Elicitation::Accepted(p) => Ok(format!("kept {}", p.list)),
        Elicitation::Declined | Elicitation::Cancelled => Ok("nothing cleared".into()),
    }
}

fn server() -> (Server, Built) {
    let built = Built::default();
    let server = Server::builder(Implementation::new("ask-message", "1"))
        .tools(tools![clear_list])
        .state(built.clone())
        .build()
        .unwrap();
    (server, built)
}

/// Sends `bytes` as alice and returns the parsed reply.
async fn send(server: &Server, bytes: Vec<u8>) -> Value {
    parse(server.handle_bytes(&bytes, &Principal::new("alice")).await)
}

async fn first_call(server: &Server) -> Value {
    send(server, call(1, "clear_list", json!({}), caps_form())).await
}

/// The retry answering the form with `content`.
async fn answer(server: &Server, state: &str, content: Value) -> Value {
    let responses = json!({"pick": {"action": "accept", "content": content}});
    let bytes = retry(2, "clear_list", json!({}), caps_form(), state, responses);
    send(server, bytes).await
}

/// The message the input-required result `r` asks with, and its state.
fn asked(r: &Value) -> (String, String) {
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    let message = result["inputRequests"]["pick"]["params"]["message"]
        .as_str()
        .expect("a message")
        .to_owned();
    let state = result["requestState"].as_str().expect("a state").to_owned();
    (message, state)
}

#[tokio::test]
async fn the_message_is_built_when_asking_and_not_when_reading_the_answer() {
    let (server, built) = server();

    let first = first_call(&server).await;
    let (message, state) = asked(&first);
    assert_eq!(message, "2 lists can be cleared. Which one?");
    assert_eq!(built.count(), 1, "the first call sends the question");

    let done = answer(&server, &state, json!({"list": "todo", "confirm": true})).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "cleared todo");
    assert_eq!(
        built.count(),
        1,
        "the retry that reads the answer does not build the message"
    );
}

#[tokio::test]
async fn a_re_ask_builds_the_message_again_after_the_reason() {
    let (server, built) = server();
    let (_, state) = asked(&first_call(&server).await);

    // Not one of the offered lists: asked again, the reason in front of the message.
    let again = answer(&server, &state, json!({"list": "photos", "confirm": true})).await;
    let (message, state) = asked(&again);
    assert!(
        message.ends_with("\n\n2 lists can be cleared. Which one?") && message.len() > 40,
        "{message}"
    );
    assert_eq!(built.count(), 2, "a re-ask sends the question again");

    let done = answer(
        &server,
        &state,
        json!({"list": "groceries", "confirm": false}),
    )
    .await;
    assert_eq!(
        done["result"]["content"][0]["text"], "kept groceries",
        "{done}"
    );
    assert_eq!(built.count(), 2);
}
