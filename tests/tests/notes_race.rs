//! Two `serve --stdio` processes sharing one SQLite store and one key file act as one
//! stateless server: the same accepted retry, sent to both at the same moment, deletes at most
//! once and exactly one of them reports success.

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcp_runtime::client::Client;
use mcp_tests::notes::*;
use serde_json::json;

const ROUNDS: usize = 20;

#[tokio::test]
async fn same_confirmation_sent_to_two_processes_deletes_once() {
    let fx = NotesFixture::new().unwrap();
    let a = fx.client("alice", &[]).unwrap();
    let b = fx.client("alice", &[]).unwrap();
    race(&fx, a, b, ROUNDS).await;
}

/// The same race with PostgreSQL as the shared store (`MCP_TEST_POSTGRES_URL`, default the
/// local test database). Skipped when no server is reachable, unless `MCP_REQUIRE_POSTGRES`
/// is set (as in CI).
#[tokio::test]
async fn same_confirmation_races_once_through_postgres() {
    let url = std::env::var("MCP_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    race_through_store(&url, "PostgreSQL", "MCP_REQUIRE_POSTGRES", ROUNDS / 2).await;
}

/// The same race with Redis as the shared store (`MCP_TEST_REDIS_URL`, default the local
/// Redis, database 0), all 20 rounds. Skipped when no Redis is reachable, unless
/// `MCP_REQUIRE_REDIS` is set (as in CI).
#[tokio::test]
async fn same_confirmation_races_once_through_redis() {
    let url = std::env::var("MCP_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379/0".to_owned());
    race_through_store(&url, "Redis", "MCP_REQUIRE_REDIS", ROUNDS).await;
}

/// Two processes sharing the replay store at `url` race `rounds` confirmations. Skipped with a
/// printed reason when the first server cannot use the store, unless `require` is set.
async fn race_through_store(url: &str, store: &str, require: &str, rounds: usize) {
    let fx = NotesFixture::new().unwrap();
    let notes = fx.notes.to_str().unwrap();
    let args = ["--workspace", notes];
    // The probe runs on a raw process: its stderr says why a store could not be used.
    let mut probe_server = fx.spawn_with_store("alice", url, &args).unwrap();
    let probe = probe_server.request(
        "server/discover",
        json!({"_meta": mcp_tests::meta(json!({}))}),
    );
    if probe.is_err() {
        let stderr = probe_server.stderr();
        assert!(
            stderr.contains("replay store"),
            "unexpected failure: {stderr}"
        );
        assert!(
            std::env::var_os(require).is_none(),
            "{store} required but the server could not use it: {stderr}"
        );
        eprintln!("skipped: no {store} for the notes race ({stderr})");
        return;
    }
    drop(probe_server);
    let a = fx.client_with_store("alice", url, &args, &[]).unwrap();
    let b = fx.client_with_store("alice", url, &args, &[]).unwrap();
    race(&fx, a, b, rounds).await;
}

async fn race(fx: &NotesFixture, a: Client, b: Client, rounds: usize) {
    for round in 0..rounds {
        let id = format!("race-{round}.md");
        std::fs::write(fx.notes.join(&id), format!("# Race note {round}\n")).unwrap();
        let args = json!({"workspaceUri": fx.uri, "title": format!("Race note {round}")});
        // Alternate which process issues the state, so each verifies the other's.
        let issuer = if round % 2 == 0 { &a } else { &b };
        let r = ask_delete(issuer, &args).await;
        assert_eq!(r.offered_ids(), vec![id.clone()], "{r:?}");
        let state = r.request_state().unwrap();
        // Both requests are written before either response is read (`join!` polls both).
        let (ra, rb) = tokio::join!(
            answer_delete(&a, &args, choose(&id, true), &state),
            answer_delete(&b, &args, choose(&id, true), &state)
        );
        let successes = [&ra, &rb].iter().filter(|r| r.is_success()).count();
        assert_eq!(
            successes, 1,
            "round {round}: exactly one success\nA: {ra:?}\nB: {rb:?}"
        );
        assert!(
            [&ra, &rb].iter().any(|r| r.is_refusal() || r.is_replay()),
            "round {round}: the other is refused or a replay of the result\nA: {ra:?}\nB: {rb:?}"
        );
        assert!(!fx.exists(&id), "round {round}: the note is deleted");
    }
    // Nothing but the race notes was touched.
    for id in [
        "tps-report.md",
        "tps-report-draft.md",
        "2025/tps-2025.md",
        "shopping.md",
    ] {
        assert!(fx.exists(id), "{id} must survive");
    }
}
