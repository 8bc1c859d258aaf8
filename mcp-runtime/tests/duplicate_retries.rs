//! Copies of one confirmed retry, as agents send them: resent while the first is still at work
//! (a timeout on the client's side), or after the client gave up waiting on the first. The
//! action runs once; every copy gets its one recorded outcome (or, past the wait bound, a
//! retryable "in progress" answer with a retry time), never "restart the call"; and a client
//! that goes away after the claim does not abandon the confirmed action or its record.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use mcp_runtime::context::REPLAYED_META_KEY;
use mcp_runtime::prelude::*;

use mcp_runtime::replay::{
    Claim, ClaimOutcome, ClaimState, MemoryReplayStore, OutcomeStore, ReplayError, ReplayStore,
};
use mcp_runtime::server::Limits;
use mcp_runtime::state::Nonce;
use mcp_runtime::state::StateKeyring;
use serde_json::{Value, json};

#[derive(Clone, Default)]
struct Effects(Arc<AtomicUsize>);

#[args]
struct Args {
    /// How long the confirmed action takes, in milliseconds.
    pause_ms: u64,
}

#[derive(ElicitForm)]
struct Confirm {
    /// Yes, do it
    confirm: bool,
}

/// A slow action under the claim, once confirmed.
#[tool(destructive, requires(form_elicitation))]
async fn slow(
    ctx: &mut RequestContext,
    State(effects): State<Effects>,
    args: Args,
) -> Result<String, HandlerError> {
    let pause = Duration::from_millis(args.pause_ms);
    let outcome = ctx
        .elicit_with_commit::<Confirm, _, _>("confirm", "Sure?", (), move |c| {
            if !c.confirm {
                return Ok(0);
            }
            std::thread::sleep(pause);
            Ok(effects.0.fetch_add(1, Ordering::SeqCst) + 1)
        })
        .await?;
    match outcome {
        Elicitation::Accepted(n) if n > 0 => Ok(format!("Done {n}.")),
        _ => Ok("Nothing done.".to_owned()),
    }
}

fn server(store: Arc<dyn ReplayStore>, effects: &Effects, wait: Duration) -> Server {
    instance(store, effects, wait, StateKeyring::generate().unwrap())
}

/// One instance of a fleet: the fleet shares its store and its state keys.
fn instance(
    store: Arc<dyn ReplayStore>,
    effects: &Effects,
    wait: Duration,
    keys: StateKeyring,
) -> Server {
    Server::builder(Implementation::new("t", "1.0"))
        .state_keys(keys)
        .tools(tools![slow])
        .state(effects.clone())
        .replay_store(store)
        .limits(Limits::default().with_duplicate_wait(wait))
        .build()
        .unwrap()
}

fn body(pause_ms: u64, extra: Value) -> Vec<u8> {
    let mut params = json!({
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}},
        "name": "slow",
        "arguments": {"pause_ms": pause_ms}
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
    )
    .unwrap()
}

async fn send(server: &Server, body: &[u8]) -> Value {
    serde_json::from_slice(
        &server
            .handle_bytes(body, &Principal::new("me"))
            .await
            .unwrap(),
    )
    .unwrap()
}

/// The first leg's state, and the confirmed retry that answers it.
async fn confirmed_retry(server: &Server, pause_ms: u64) -> Vec<u8> {
    let first = send(server, &body(pause_ms, json!({}))).await;
    let state = first["result"]["requestState"].as_str().unwrap();
    body(
        pause_ms,
        json!({"requestState": state, "inputResponses": {"confirm":
            {"action": "accept", "content": {"confirm": true}}}}),
    )
}

fn text(r: &Value) -> String {
    r["error"]["message"]
        .as_str()
        .or_else(|| r["result"]["content"][0]["text"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// Sixteen copies of one retry at once, spread over `servers` (instances sharing one store):
/// one action, sixteen times its outcome.
async fn copies_in_flight_get_the_one_outcome(servers: &[Server], effects: &Effects) {
    let retry = confirmed_retry(&servers[0], 150).await;
    let copies = (0..16).map(|i| {
        let server = servers[i % servers.len()].clone();
        let retry = retry.clone();
        tokio::spawn(async move { send(&server, &retry).await })
    });
    let replies = futures::future::join_all(copies).await;
    assert_eq!(effects.0.load(Ordering::SeqCst), 1, "one action");
    let mut replayed = 0;
    for reply in replies {
        let reply = reply.unwrap();
        assert_eq!(text(&reply), "Done 1.", "{reply}");
        if reply["result"]["_meta"][REPLAYED_META_KEY] == true {
            replayed += 1;
        }
    }
    assert_eq!(
        replayed, 15,
        "every copy but the one that acted is a replay"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_of_a_retry_in_flight_wait_for_its_outcome_memory() {
    let effects = Effects::default();
    let store: Arc<dyn ReplayStore> = Arc::new(MemoryReplayStore::new(100));
    let one = server(store, &effects, Duration::from_secs(10));
    copies_in_flight_get_the_one_outcome(&[one], &effects).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_of_a_retry_in_flight_wait_for_its_outcome_across_instances_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let effects = Effects::default();
    let keys = StateKeyring::generate().unwrap();
    let mut servers = Vec::new();
    for _ in 0..2 {
        let store = mcp_runtime::backend::sqlite::SqliteReplayStore::open(dir.path().join("r.db"))
            .await
            .unwrap();
        servers.push(instance(
            Arc::new(store),
            &effects,
            Duration::from_secs(10),
            keys.clone(),
        ));
    }
    copies_in_flight_get_the_one_outcome(&servers, &effects).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_wait_a_copy_is_told_to_retry_later_never_to_restart() {
    let effects = Effects::default();
    let store: Arc<dyn ReplayStore> = Arc::new(MemoryReplayStore::new(100));
    let s = server(store, &effects, Duration::from_millis(100));
    let retry = confirmed_retry(&s, 800).await;
    let first = tokio::spawn({
        let (s, retry) = (s.clone(), retry.clone());
        async move { send(&s, &retry).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let copy = send(&s, &retry).await;
    assert_eq!(copy["error"]["data"]["retryAfter"], 2, "{copy}");
    let message = text(&copy);
    assert!(message.contains("still being carried out"), "{message}");
    assert!(!message.contains("Restart"), "{message}");
    assert_eq!(text(&first.await.unwrap()), "Done 1.");
    // Sent again as told, it gets the outcome.
    let again = send(&s, &retry).await;
    assert_eq!(text(&again), "Done 1.", "{again}");
    assert_eq!(again["result"]["_meta"][REPLAYED_META_KEY], true, "{again}");
    assert_eq!(effects.0.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_gone_after_the_claim_does_not_abandon_the_action_or_its_record() {
    let effects = Effects::default();
    let store: Arc<dyn ReplayStore> = Arc::new(MemoryReplayStore::new(100));
    let s = server(store, &effects, Duration::from_secs(10));
    let retry = confirmed_retry(&s, 300).await;
    // The client stops waiting (a disconnect, a proxy's 504) while the action runs.
    let gone = tokio::time::timeout(Duration::from_millis(100), send(&s, &retry)).await;
    assert!(gone.is_err(), "the request was still running when dropped");
    // The action finishes anyway, and its outcome is recorded for the client's retry.
    let again = send(&s, &retry).await;
    assert_eq!(text(&again), "Done 1.", "{again}");
    assert_eq!(again["result"]["_meta"][REPLAYED_META_KEY], true, "{again}");
    assert_eq!(effects.0.load(Ordering::SeqCst), 1);
}

/// The memory store, whose claim reads fail while `unreadable` is set (a store restarting),
/// and whose claims are refused, with nothing left claimed, while `phantom` is set (a claim
/// of another copy that landed late and was released in between).
#[derive(Debug)]
struct Flaky {
    inner: MemoryReplayStore,
    unreadable: std::sync::atomic::AtomicBool,
    phantom: std::sync::atomic::AtomicBool,
}

impl Default for Flaky {
    fn default() -> Self {
        Self {
            inner: MemoryReplayStore::new(100),
            unreadable: false.into(),
            phantom: false.into(),
        }
    }
}

impl Flaky {
    fn down(&self, down: bool) {
        self.unreadable.store(down, Ordering::SeqCst);
    }
}

impl ReplayStore for Flaky {
    fn claim<'a>(&'a self, claim: Claim<'a>) -> BoxFuture<'a, Result<ClaimOutcome, ReplayError>> {
        if self.phantom.load(Ordering::SeqCst) {
            return Box::pin(async { Ok(ClaimOutcome::AlreadyUsed) });
        }
        self.inner.claim(claim)
    }
    fn outcomes(&self) -> Option<&dyn OutcomeStore> {
        Some(self)
    }
    fn prune_expired(&self) -> BoxFuture<'_, Result<u64, ReplayError>> {
        self.inner.prune_expired()
    }
}

impl OutcomeStore for Flaky {
    fn record_outcome<'a>(
        &'a self,
        nonce: Nonce,
        expires_at: std::time::SystemTime,
        outcome: &'a [u8],
    ) -> BoxFuture<'a, Result<(), ReplayError>> {
        self.inner
            .outcomes()
            .unwrap()
            .record_outcome(nonce, expires_at, outcome)
    }
    fn claim_state(&self, nonce: Nonce) -> BoxFuture<'_, Result<ClaimState, ReplayError>> {
        if self.unreadable.load(Ordering::SeqCst) {
            return Box::pin(async {
                Err(ReplayError::backend(
                    "flaky",
                    "reading a claim",
                    "store restarting",
                ))
            });
        }
        self.inner.outcomes().unwrap().claim_state(nonce)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_that_cannot_read_the_claim_says_the_outcome_is_unknown_never_nothing() {
    let effects = Effects::default();
    let store = Arc::new(Flaky::default());
    let s = server(store.clone(), &effects, Duration::from_secs(10));
    let retry = confirmed_retry(&s, 0).await;
    assert_eq!(text(&send(&s, &retry).await), "Done 1.");
    // The store cannot say whether the confirmation was carried out: the copy neither runs
    // the tool nor says "already used, restart" or "nothing was done"; it says to resend.
    store.down(true);
    let copy = send(&s, &retry).await;
    assert_eq!(
        copy["error"]["data"]["reason"], "outcome_unreadable",
        "{copy}"
    );
    assert_eq!(copy["error"]["data"]["retryAfter"], 2, "{copy}");
    let message = text(&copy);
    assert!(message.contains("is unknown"), "{message}");
    assert!(
        !message.contains("Restart") && !message.contains("nothing"),
        "{message}"
    );
    assert_eq!(effects.0.load(Ordering::SeqCst), 1);
    // Resent once the store answers, it gets the one outcome.
    store.down(false);
    let again = send(&s, &retry).await;
    assert_eq!(text(&again), "Done 1.", "{again}");
    assert_eq!(again["result"]["_meta"][REPLAYED_META_KEY], true, "{again}");
    assert_eq!(effects.0.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_refused_by_a_claim_released_since_is_told_to_resend_never_to_restart() {
    let effects = Effects::default();
    let store = Arc::new(Flaky::default());
    let s = server(store.clone(), &effects, Duration::from_millis(200));
    let retry = confirmed_retry(&s, 0).await;
    // Its claim is refused, and then no claim is found: the one that refused it was released
    // unused. Nothing ran; the same request is to be sent again.
    store.phantom.store(true, Ordering::SeqCst);
    let refused = send(&s, &retry).await;
    assert_eq!(
        refused["error"]["data"]["reason"], "claim_released",
        "{refused}"
    );
    let message = text(&refused);
    assert!(
        message.contains("Send this same request again"),
        "{message}"
    );
    assert!(!message.contains("Restart"), "{message}");
    assert_eq!(effects.0.load(Ordering::SeqCst), 0);
    store.phantom.store(false, Ordering::SeqCst);
    let again = send(&s, &retry).await;
    assert_eq!(text(&again), "Done 1.", "{again}");
    assert_eq!(effects.0.load(Ordering::SeqCst), 1);
}
