//! A third-party replay store written only against the public API: claims in a map, with
//! application data in the same "database" and transactional work of its own
//! (`map_tx`), carried through the tool API as `ClaimWork::InTx` like the SQL stores' work.
//! Also: recorded outcomes for identical retries, and what a store without transactions says.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use mcp_runtime::context::REPLAYED_META_KEY;
use mcp_runtime::prelude::*;
use mcp_runtime::replay::ClaimWork;
use mcp_runtime::replay::{
    ActionError, Claim, ClaimOutcome, ClaimState, ClaimWith, MemoryReplayStore, OutcomeStore,
    ReplayError, ReplayStore, TxWork,
};
use mcp_runtime::state::Nonce;
use serde_json::{Value, json};

/// Claims and application data behind one lock: a transaction is "hold the lock, work on a
/// copy of the data, then insert the claim and swap the data in".
#[derive(Debug, Default)]
struct MapStore {
    db: Mutex<Db>,
}

#[derive(Debug, Default)]
struct Db {
    claims: HashMap<Nonce, (SystemTime, Option<Vec<u8>>)>,
    data: HashMap<String, String>,
}

/// This store's transactional work: a change to the application data.
type MapWork = Box<dyn FnOnce(&mut HashMap<String, String>) -> Result<(), ActionError> + Send>;
struct MapTx(MapWork);

/// The store's typed constructor of transactional work.
fn map_tx<R: Send + 'static>(
    work: impl FnOnce(&mut HashMap<String, String>) -> Result<R, ActionError> + Send + 'static,
) -> TxWork<R> {
    TxWork::new("map", |output| {
        MapTx(Box::new(move |data| {
            output.put(work(data)?);
            Ok(())
        }))
    })
}

impl MapStore {
    fn data(&self, key: &str) -> Option<String> {
        self.db.lock().unwrap().data.get(key).cloned()
    }
}

impl ReplayStore for MapStore {
    fn name(&self) -> &'static str {
        "map"
    }

    fn claim<'a>(&'a self, claim: Claim<'a>) -> BoxFuture<'a, Result<ClaimOutcome, ReplayError>> {
        let (nonce, expires_at) = (claim.nonce, claim.expires_at);
        // Work this store can run on a copy of its data, committed with the claim.
        let work: Option<MapWork> = match claim.work {
            ClaimWith::Nothing => None,
            ClaimWith::During(work) => Some(Box::new(move |_| work())),
            ClaimWith::InTx(work) => match work.downcast::<MapTx>() {
                Ok(work) => Some(work.0),
                Err(other) => {
                    let err = other.mismatch(self.name());
                    return Box::pin(async move { Err(err) });
                }
            },
            _ => {
                let err = ReplayError::backend("map", "claiming", "unknown kind of claim work");
                return Box::pin(async move { Err(err) });
            }
        };
        let mut db = self.db.lock().unwrap();
        let outcome = if db.claims.contains_key(&nonce) {
            Ok(ClaimOutcome::AlreadyUsed)
        } else {
            let mut copy = db.data.clone();
            match work.map_or(Ok(()), |work| work(&mut copy)) {
                Ok(()) => {
                    db.claims.insert(nonce, (expires_at, None));
                    db.data = copy;
                    Ok(ClaimOutcome::Claimed)
                }
                Err(e) => Err(ReplayError::ActionFailed(e)),
            }
        };
        Box::pin(async move { outcome })
    }

    fn outcomes(&self) -> Option<&dyn OutcomeStore> {
        Some(self)
    }

    fn prune_expired(&self) -> BoxFuture<'_, Result<u64, ReplayError>> {
        let now = SystemTime::now();
        let mut db = self.db.lock().unwrap();
        let before = db.claims.len();
        db.claims.retain(|_, c| c.0 > now);
        let pruned = (before - db.claims.len()) as u64;
        Box::pin(async move { Ok(pruned) })
    }
}

impl OutcomeStore for MapStore {
    fn record_outcome<'a>(
        &'a self,
        nonce: Nonce,
        _expires_at: SystemTime,
        outcome: &'a [u8],
    ) -> BoxFuture<'a, Result<(), ReplayError>> {
        if let Some(claim) = self.db.lock().unwrap().claims.get_mut(&nonce) {
            claim.1 = Some(outcome.to_vec());
        }
        Box::pin(async { Ok(()) })
    }

    fn claim_state(&self, nonce: Nonce) -> BoxFuture<'_, Result<ClaimState, ReplayError>> {
        let state = match self.db.lock().unwrap().claims.get(&nonce) {
            None => ClaimState::Unclaimed,
            Some((_, None)) => ClaimState::Claimed,
            Some((_, Some(outcome))) => ClaimState::Recorded(outcome.clone()),
        };
        Box::pin(async move { Ok(state) })
    }
}

/// A store with no transactions and no name of its own: only the required methods.
#[derive(Debug)]
struct Minimal(MemoryReplayStore);

impl Default for Minimal {
    fn default() -> Self {
        Self(MemoryReplayStore::new(10))
    }
}

impl ReplayStore for Minimal {
    fn claim<'a>(&'a self, claim: Claim<'a>) -> BoxFuture<'a, Result<ClaimOutcome, ReplayError>> {
        if let ClaimWith::InTx(work) = claim.work {
            // No transactions here: say so, under this store's own name.
            let err = work.mismatch(self.name());
            return Box::pin(async move { Err(err) });
        }
        self.0.claim(claim)
    }
    fn prune_expired(&self) -> BoxFuture<'_, Result<u64, ReplayError>> {
        self.0.prune_expired()
    }
}

fn later() -> SystemTime {
    SystemTime::now() + Duration::from_secs(300)
}

#[args]
struct Args {
    /// The key to forget.
    key: String,
}

#[derive(ElicitForm)]
struct Confirm {
    /// Yes, forget it
    confirm: bool,
}

/// Forgets a key of the map store's data, in the claim's transaction, once confirmed.
#[tool(destructive, requires(form_elicitation))]
async fn forget(ctx: &mut RequestContext, args: Args) -> Result<String, HandlerError> {
    let key = args.key;
    let outcome = ctx
        .elicit_with_mutation::<Confirm, _, _>("confirm", "Sure?", (), move |c| {
            if !c.confirm {
                return ClaimWork::Nothing(None);
            }
            ClaimWork::InTx(map_tx(move |data| {
                data.remove(&key)
                    .map(|_| Some(key.clone()))
                    .ok_or_else(|| ActionError::new(format!("{key} is not there")))
            }))
        })
        .await?;
    Ok(match outcome {
        Elicitation::Accepted(Some(key)) => format!("Forgot {key}."),
        _ => "Nothing forgotten.".to_owned(),
    })
}

fn server(store: Arc<dyn ReplayStore>) -> Server {
    Server::builder(Implementation::new("t", "1.0"))
        .tools(tools![forget])
        .replay_store(store)
        .build()
        .unwrap()
}

fn body(extra: Value) -> Vec<u8> {
    let mut params = json!({
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}},
        "name": "forget",
        "arguments": {"key": "k"}
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
    let principal = Principal::new(who);
    serde_json::from_slice(&server.handle_bytes(body, &principal).await.unwrap()).unwrap()
}

fn answer(confirm: bool, state: &str) -> Vec<u8> {
    body(json!({"requestState": state, "inputResponses": {"confirm":
        {"action": "accept", "content": {"confirm": confirm}}}}))
}

fn text(r: &Value) -> String {
    r["error"]["message"]
        .as_str()
        .or_else(|| r["result"]["content"][0]["text"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The tool's work runs in the third-party store's transaction; an identical retry gets the
/// recorded result (marked as a replay), any other reuse is refused.
#[tokio::test]
async fn a_third_party_store_runs_work_in_its_transaction_and_replays_identical_retries() {
    let store = Arc::new(MapStore::default());
    store.db.lock().unwrap().data.insert("k".into(), "v".into());
    let server = server(store.clone());
    let first = send(&server, "me", &body(json!({}))).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();

    let done = send(&server, "me", &answer(true, &state)).await;
    assert_eq!(text(&done), "Forgot k.", "{done}");
    assert!(
        done["result"]["_meta"].get(REPLAYED_META_KEY).is_none(),
        "{done}"
    );
    assert_eq!(store.data("k"), None);

    // Put it back: a second execution would forget it again.
    store
        .db
        .lock()
        .unwrap()
        .data
        .insert("k".into(), "v2".into());
    let again = send(&server, "me", &answer(true, &state)).await;
    assert_eq!(text(&again), "Forgot k.", "{again}");
    assert_eq!(again["result"]["_meta"][REPLAYED_META_KEY], true, "{again}");
    assert_eq!(store.data("k").as_deref(), Some("v2"), "the work ran once");

    // Other answers, or another principal: refused as before.
    let other = send(&server, "me", &answer(false, &state)).await;
    assert!(text(&other).contains("already used"), "{other}");
    let stranger = send(&server, "mallory", &answer(true, &state)).await;
    assert_eq!(stranger["error"]["code"], -32602, "{stranger}");
    assert_eq!(store.data("k").as_deref(), Some("v2"));
}

/// Failed transactional work rolls the claim back with it: the answer stays usable.
#[tokio::test]
async fn failed_work_in_a_third_party_transaction_leaves_the_claim_open() {
    let store = Arc::new(MapStore::default());
    let server = server(store.clone());
    let first = send(&server, "me", &body(json!({}))).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let failed = send(&server, "me", &answer(true, &state)).await;
    assert!(text(&failed).contains("k is not there"), "{failed}");
    assert!(text(&failed).contains("can be retried"), "{failed}");
    store.db.lock().unwrap().data.insert("k".into(), "v".into());
    let done = send(&server, "me", &answer(true, &state)).await;
    assert_eq!(text(&done), "Forgot k.", "{done}");
}

/// Work built for one store is refused by every other, naming both; nothing is claimed.
#[tokio::test]
async fn work_for_another_store_is_refused_by_name() {
    let n = Nonce::from_bytes([5; 16]);
    let memory = MemoryReplayStore::new(10);
    let work: TxWork = map_tx(|_| Ok(()));
    let err = memory
        .claim(Claim::new(n, later()).in_tx(work))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ReplayError::TxMismatch {
                store: "memory",
                work: "map"
            }
        ),
        "{err}"
    );
    // A store that offers no transactions is named as itself, not as "memory".
    let minimal = Minimal::default();
    let err = minimal
        .claim(Claim::new(n, later()).in_tx(map_tx(|_| Ok(()))))
        .await
        .unwrap_err();
    let ReplayError::TxMismatch { store, work } = err else {
        panic!("{err}");
    };
    assert!(store.ends_with("Minimal"), "{store}");
    assert_eq!(work, "map");
    assert_eq!(
        memory.claim(Claim::new(n, later())).await.unwrap(),
        ClaimOutcome::Claimed
    );

    #[cfg(feature = "sqlite")]
    {
        let store = MapStore::default();
        let sqlite_work = mcp_runtime::backend::sqlite::tx_work(|_tx| Ok(()));
        let err = store
            .claim(Claim::new(n, later()).in_tx(sqlite_work))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the replay store (map) cannot run work in a sqlite transaction; keep the replay store in the same database as the data the work changes"
        );
        assert_eq!(
            store.claim(Claim::new(n, later())).await.unwrap(),
            ClaimOutcome::Claimed
        );
    }
}

/// Backend errors carry the store's name and their source.
#[test]
fn backend_errors_carry_the_store_name_and_source() {
    let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
    let err = ReplayError::backend("map", "claiming", io);
    assert_eq!(err.reason(), "map");
    assert_eq!(err.to_string(), "map replay store: claiming: refused");
    let source = std::error::Error::source(&err).unwrap();
    assert!(source.downcast_ref::<std::io::Error>().is_some());
}
