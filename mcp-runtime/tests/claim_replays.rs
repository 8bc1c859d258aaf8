//! Idempotent retries, per store: the same principal retrying the same `requestState` with the
//! same answers gets the result the claim recorded (marked as a replay in `_meta`), and the
//! work runs once; any other reuse stays refused. PostgreSQL and Redis tests print `skipped:`
//! and pass without a server, unless `MCP_REQUIRE_POSTGRES` / `MCP_REQUIRE_REDIS` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use mcp_runtime::context::REPLAYED_META_KEY;
use mcp_runtime::prelude::*;

use mcp_runtime::replay::{Claim, MAX_RECORDED_OUTCOME, MemoryReplayStore, ReplayStore};
use mcp_runtime::state::Nonce;
use serde_json::{Value, json};

#[derive(Clone, Default)]
struct Effects(Arc<AtomicUsize>);

#[args]
struct Args {
    /// How many bytes of text to answer with (0: a short answer).
    size: usize,
}

#[derive(ElicitForm)]
struct Confirm {
    /// Yes, do it
    confirm: bool,
}

/// Counts an effect under the claim once confirmed.
#[tool(destructive, requires(form_elicitation))]
async fn act(
    ctx: &mut RequestContext,
    State(effects): State<Effects>,
    args: Args,
) -> Result<String, HandlerError> {
    let outcome = ctx
        .elicit_with_commit::<Confirm, _, _>("confirm", "Sure?", (), move |c| {
            if c.confirm {
                Ok(effects.0.fetch_add(1, Ordering::SeqCst) + 1)
            } else {
                Ok(0)
            }
        })
        .await?;
    match outcome {
        Elicitation::Accepted(_) if args.size > 0 => Ok("x".repeat(args.size)),
        Elicitation::Accepted(n) => Ok(format!("Done {n}.")),
        _ => Ok("Nothing done.".to_owned()),
    }
}

fn body(size: usize, extra: Value) -> Vec<u8> {
    let mut params = json!({
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}},
        "name": "act",
        "arguments": {"size": size}
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
    )
    .unwrap()
}

async fn send(server: &Server, who: &str, body: &[u8]) -> Value {
    serde_json::from_slice(
        &server
            .handle_bytes(body, &Principal::new(who))
            .await
            .unwrap(),
    )
    .unwrap()
}

fn answer(size: usize, confirm: bool, state: &str) -> Vec<u8> {
    body(
        size,
        json!({"requestState": state, "inputResponses": {"confirm":
            {"action": "accept", "content": {"confirm": confirm}}}}),
    )
}

fn text(r: &Value) -> String {
    r["error"]["message"]
        .as_str()
        .or_else(|| r["result"]["content"][0]["text"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The whole contract, against one store.
async fn identical_retries_replay(store: Arc<dyn ReplayStore>) {
    let effects = Effects::default();
    let server = Server::builder(Implementation::new("t", "1.0"))
        .tools(tools![act])
        .state(effects.clone())
        .replay_store(store.clone())
        .build()
        .unwrap();
    let first = send(&server, "me", &body(0, json!({}))).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let done = send(&server, "me", &answer(0, true, &state)).await;
    assert_eq!(text(&done), "Done 1.", "{done}");
    assert!(done["result"]["_meta"].get(REPLAYED_META_KEY).is_none());
    for _ in 0..2 {
        let again = send(&server, "me", &answer(0, true, &state)).await;
        assert_eq!(text(&again), "Done 1.", "{again}");
        assert_eq!(again["result"]["_meta"][REPLAYED_META_KEY], true, "{again}");
    }
    assert_eq!(effects.0.load(Ordering::SeqCst), 1);
    let other = send(&server, "me", &answer(0, false, &state)).await;
    assert!(text(&other).contains("already used"), "{other}");
    let stranger = send(&server, "mallory", &answer(0, true, &state)).await;
    assert_eq!(stranger["error"]["code"], -32602, "{stranger}");
    assert_eq!(effects.0.load(Ordering::SeqCst), 1);

    // A result too large to keep: the identical retry is told so, and nothing runs again.
    let big = MAX_RECORDED_OUTCOME + 1;
    let first = send(&server, "me", &body(big, json!({}))).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let done = send(&server, "me", &answer(big, true, &state)).await;
    assert_eq!(text(&done).len(), big);
    let again = send(&server, "me", &answer(big, true, &state)).await;
    assert_eq!(again["result"]["isError"], true, "{again}");
    assert!(text(&again).contains("too large to keep"), "{again}");
    assert_eq!(again["result"]["_meta"][REPLAYED_META_KEY], true);
    assert_eq!(effects.0.load(Ordering::SeqCst), 2);
}

/// A recorded outcome expires with its claim.
async fn outcomes_expire_with_the_claim(store: &dyn ReplayStore, seed: u8) {
    let live = Nonce::from_bytes([seed; 16]);
    let expired = Nonce::from_bytes([seed.wrapping_add(1); 16]);
    let later = SystemTime::now() + Duration::from_secs(300);
    let past = SystemTime::now() - Duration::from_secs(5);
    store.claim(Claim::new(live, later)).await.unwrap();
    store.claim(Claim::new(expired, past)).await.unwrap();
    store
        .outcomes()
        .unwrap()
        .record_outcome(live, later, b"kept")
        .await
        .unwrap();
    store
        .outcomes()
        .unwrap()
        .record_outcome(expired, past, b"gone")
        .await
        .unwrap();
    assert_eq!(recorded(store, live).await.as_deref(), Some(&b"kept"[..]));
    assert_eq!(recorded(store, expired).await, None);
    // No claim, no outcome.
    let never = Nonce::from_bytes([seed.wrapping_add(2); 16]);
    assert_eq!(recorded(store, never).await, None);
}

#[tokio::test]
async fn memory_store_replays_identical_retries() {
    let store = Arc::new(MemoryReplayStore::new(100));
    identical_retries_replay(store.clone()).await;
    outcomes_expire_with_the_claim(&*store, 1).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_store_replays_identical_retries() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        mcp_runtime::backend::sqlite::SqliteReplayStore::open(dir.path().join("r.db"))
            .await
            .unwrap(),
    );
    identical_retries_replay(store.clone()).await;
    outcomes_expire_with_the_claim(&*store, 1).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_store_replays_identical_retries() {
    let url = std::env::var("MCP_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let mut r = [0u8; 4];
    getrandom::fill(&mut r).unwrap();
    let table = format!("replays_{:08x}", u32::from_le_bytes(r));
    let store =
        match mcp_runtime::backend::postgres::PostgresReplayStore::connect_with_table(&url, &table)
            .await
        {
            Ok(store) => Arc::new(store),
            Err(e) => {
                assert!(
                    std::env::var_os("MCP_REQUIRE_POSTGRES").is_none(),
                    "MCP_REQUIRE_POSTGRES is set but PostgreSQL at {url} is unreachable: {e}"
                );
                println!("skipped: no PostgreSQL at {url}: {e}");
                return;
            }
        };
    identical_retries_replay(store.clone()).await;
    outcomes_expire_with_the_claim(&*store, 1).await;
    let client = store.pool().get().await.unwrap();
    client
        .batch_execute(&format!("DROP TABLE \"{table}\""))
        .await
        .unwrap();
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn redis_store_replays_identical_retries() {
    let url = std::env::var("MCP_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379/0".to_owned());
    let store = match mcp_runtime::backend::redis::RedisReplayStore::connect(&url).await {
        Ok(store) => store,
        Err(e) => {
            assert!(
                std::env::var_os("MCP_REQUIRE_REDIS").is_none(),
                "MCP_REQUIRE_REDIS is set but Redis at {url} is unreachable: {e}"
            );
            println!("skipped: no Redis at {url}: {e}");
            return;
        }
    };
    let mut r = [0u8; 4];
    getrandom::fill(&mut r).unwrap();
    let prefix = format!("mcp:test:replays:{:08x}", u32::from_le_bytes(r));
    let store = Arc::new(store.with_prefix(&prefix).unwrap());
    // Redis keeps every key at least a second (it must outlive the token), so expiry is
    // Redis's own `PXAT` and is not checked here.
    identical_retries_replay(store).await;
}

/// The one item a `remove` call can take away.
#[derive(Clone, Default)]
struct Item(Arc<std::sync::Mutex<bool>>);

/// How many times `remove` ran at all.
#[derive(Clone, Default)]
struct Runs(Arc<AtomicUsize>);

#[args]
struct NoArgs {}

/// Removes the item after the user confirms; says so truthfully when there is none.
#[tool(destructive, requires(form_elicitation))]
async fn remove(
    ctx: &mut RequestContext,
    State(item): State<Item>,
    State(runs): State<Runs>,
    _args: NoArgs,
) -> Result<String, HandlerError> {
    runs.0.fetch_add(1, Ordering::SeqCst);
    if !*item.0.lock().unwrap() {
        return Err(HandlerError::tool("There is no item; nothing was removed"));
    }
    let outcome = ctx
        .elicit_with_commit::<Confirm, _, _>("confirm", "Remove it?", (), move |c| {
            if c.confirm {
                *item.0.lock().unwrap() = false;
            }
            Ok(c.confirm)
        })
        .await?;
    match outcome {
        Elicitation::Accepted(true) => Ok("Removed.".to_owned()),
        _ => Ok("Nothing removed.".to_owned()),
    }
}

fn remove_body(extra: Value) -> Vec<u8> {
    let mut params = json!({
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}},
        "name": "remove",
        "arguments": {}
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
    )
    .unwrap()
}

fn remove_answer(confirm: bool, state: &str) -> Vec<u8> {
    remove_body(json!({"requestState": state, "inputResponses": {"confirm":
        {"action": "accept", "content": {"confirm": confirm}}}}))
}

/// An agent whose reply was lost resends the same retry after the work is done and the world
/// has changed: it gets the recorded outcome, before any tool code runs again, not what the
/// tool would say now ("there is no item") nor a request to start over.
#[tokio::test]
async fn a_retry_after_a_lost_reply_gets_the_recorded_outcome_whatever_the_world_says() {
    let (item, runs) = (Item(Arc::new(std::sync::Mutex::new(true))), Runs::default());
    let server = Server::builder(Implementation::new("t", "1.0"))
        .tools(tools![remove])
        .state(item.clone())
        .state(runs.clone())
        .replay_store(Arc::new(MemoryReplayStore::new(64)))
        .build()
        .unwrap();
    let first = send(&server, "me", &remove_body(json!({}))).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let done = send(&server, "me", &remove_answer(true, &state)).await;
    assert_eq!(text(&done), "Removed.", "{done}");
    assert!(!*item.0.lock().unwrap());
    assert_eq!(runs.0.load(Ordering::SeqCst), 2);

    let again = send(&server, "me", &remove_answer(true, &state)).await;
    assert_eq!(text(&again), "Removed.", "{again}");
    assert_eq!(again["result"]["_meta"][REPLAYED_META_KEY], true, "{again}");
    assert_eq!(
        runs.0.load(Ordering::SeqCst),
        2,
        "the tool did not run for the replayed retry"
    );
    // Other answers under the same state stay refused, and run nothing either.
    let other = send(&server, "me", &remove_answer(false, &state)).await;
    assert!(text(&other).contains("already used"), "{other}");
    assert_eq!(runs.0.load(Ordering::SeqCst), 2);
}

/// The outcome recorded with the claim of `nonce`, if any.
async fn recorded(
    store: &dyn mcp_runtime::replay::ReplayStore,
    nonce: mcp_runtime::state::Nonce,
) -> Option<Vec<u8>> {
    match store.outcomes().unwrap().claim_state(nonce).await.unwrap() {
        mcp_runtime::replay::ClaimState::Recorded(outcome) => Some(outcome),
        _ => None,
    }
}
