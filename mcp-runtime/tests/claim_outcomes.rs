//! What a confirmed mutation's reply says when the replay store's `COMMIT` fails or the
//! mutation itself fails: always what happened, never "nothing was changed" after a change.
//!
//! `COMMIT` is made to fail deterministically (as a full disk would) by a trigger that inserts
//! a row violating a deferred foreign key whenever a claim is inserted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_runtime::backend::sqlite::SqliteReplayStore;
use mcp_runtime::prelude::*;
use mcp_runtime::replay::ActionError;
use mcp_runtime::replay::ClaimWork;
use serde_json::{Value, json};
use sqlite_support::{break_commits, repair_commits};

mod sqlite_support;

/// How many times the mutation took effect, and whether it should fail.
#[derive(Clone, Default)]
struct World {
    effects: Arc<AtomicUsize>,
    fail: Arc<AtomicUsize>,
}

#[args]
struct Args {
    /// `commit` (elicit_with_commit) or `after` (ClaimWork::After)
    how: String,
}

#[derive(ElicitForm)]
struct Confirm {
    /// Yes, do it
    confirm: bool,
}

/// Changes the world once the user confirms.
#[tool(destructive, requires(form_elicitation))]
async fn change(
    ctx: &mut RequestContext,
    State(world): State<World>,
    args: Args,
) -> Result<String, HandlerError> {
    let w = world.clone();
    let act = move || {
        if w.fail.load(Ordering::SeqCst) > 0 {
            return Err(ActionError::new("the disk refused"));
        }
        w.effects.fetch_add(1, Ordering::SeqCst);
        Ok("changed".to_owned())
    };
    let outcome = if args.how == "commit" {
        ctx.elicit_with_commit::<Confirm, _, _>("confirm", "Sure?", (), move |c| {
            if c.confirm {
                act()
            } else {
                Ok("nothing".to_owned())
            }
        })
        .await?
    } else {
        ctx.elicit_with_mutation::<Confirm, _, _>("confirm", "Sure?", (), move |c| {
            if c.confirm {
                ClaimWork::After(Box::new(act))
            } else {
                ClaimWork::Nothing("nothing".to_owned())
            }
        })
        .await?
    };
    match outcome {
        Elicitation::Accepted(done) => Ok(format!("Done: {done}.")),
        _ => Ok("Nothing done.".to_owned()),
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    db: std::path::PathBuf,
    server: Server,
    world: World,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("replay.db");
    let store = Arc::new(SqliteReplayStore::open(&db).await.unwrap());
    let world = World::default();
    let server = Server::builder(Implementation::new("t", "1.0"))
        .tools(tools![change])
        .state(world.clone())
        .replay_store(store)
        .build()
        .unwrap();
    Fixture {
        _dir: dir,
        db,
        server,
        world,
    }
}

fn body(how: &str, extra: Value) -> Vec<u8> {
    let mut params = json!({
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}},
        "name": "change",
        "arguments": {"how": how}
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
    )
    .unwrap()
}

async fn send(server: &Server, body: Vec<u8>) -> Value {
    let me = Principal::new("me");
    serde_json::from_slice(&server.handle_bytes(&body, &me).await.unwrap()).unwrap()
}

/// The first leg's state, and the accepting retry to send with it.
async fn ask(fx: &Fixture, how: &str) -> Vec<u8> {
    let r = send(&fx.server, body(how, json!({}))).await;
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();
    body(
        how,
        json!({"requestState": state, "inputResponses": {"confirm":
            {"action": "accept", "content": {"confirm": true}}}}),
    )
}

fn reply_text(r: &Value) -> String {
    r["error"]["message"]
        .as_str()
        .or_else(|| r["result"]["content"][0]["text"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// `elicit_with_commit`: the action ran, then `COMMIT` failed. The reply says it was done.
#[tokio::test]
async fn a_commit_failing_after_the_action_reports_the_action_as_done() {
    let fx = fixture().await;
    let retry = ask(&fx, "commit").await;
    break_commits(&fx.db);
    let r = send(&fx.server, retry).await;
    assert_eq!(fx.world.effects.load(Ordering::SeqCst), 1);
    assert_eq!(reply_text(&r), "Done: changed.", "{r}");
    assert_ne!(r["result"]["isError"], true, "{r}");
}

/// `ClaimWork::After`: the claim's `COMMIT` fails, so the action never runs and the reply says
/// nothing was changed; once the store recovers the same confirmation works, once.
#[tokio::test]
async fn after_claim_a_failed_commit_changes_nothing_and_says_so() {
    let fx = fixture().await;
    let retry = ask(&fx, "after").await;
    break_commits(&fx.db);
    let r = send(&fx.server, retry.clone()).await;
    assert_eq!(fx.world.effects.load(Ordering::SeqCst), 0);
    assert!(reply_text(&r).contains("nothing was changed"), "{r}");
    repair_commits(&fx.db);
    let r = send(&fx.server, retry.clone()).await;
    assert_eq!(reply_text(&r), "Done: changed.", "{r}");
    // The identical retry gets the recorded result again; nothing runs twice.
    let r = send(&fx.server, retry).await;
    assert_eq!(reply_text(&r), "Done: changed.", "{r}");
    assert_eq!(
        r["result"]["_meta"]["dev.mcp-runtime/replayed"], true,
        "{r}"
    );
    assert_eq!(fx.world.effects.load(Ordering::SeqCst), 1);
}

/// `ClaimWork::After`: the action fails after the claim committed. The reply says so and that the
/// confirmation is used up; the same confirmation never acts later.
#[tokio::test]
async fn after_claim_a_failed_action_uses_the_confirmation_and_says_so() {
    let fx = fixture().await;
    let retry = ask(&fx, "after").await;
    fx.world.fail.store(1, Ordering::SeqCst);
    let r = send(&fx.server, retry.clone()).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = reply_text(&r);
    assert!(text.contains("the disk refused"), "{r}");
    assert!(text.contains("used up"), "{r}");
    fx.world.fail.store(0, Ordering::SeqCst);
    // The identical retry is told the same again (a replay); it does not act.
    let r = send(&fx.server, retry).await;
    assert!(reply_text(&r).contains("used up"), "{r}");
    assert_eq!(
        r["result"]["_meta"]["dev.mcp-runtime/replayed"], true,
        "{r}"
    );
    assert_eq!(fx.world.effects.load(Ordering::SeqCst), 0);
}
