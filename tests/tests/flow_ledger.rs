//! The flow ledger behind `mcp_flows_abandoned_total`: two store handles on the same SQLite
//! file, PostgreSQL table or Redis prefix (two instances of a fleet), sweeping at once, take
//! each expired entry exactly once, and never an answered or unexpired one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcp_runtime::backend::postgres::PostgresReplayStore;
use mcp_runtime::backend::redis::RedisReplayStore;
use mcp_runtime::backend::sqlite::SqliteReplayStore;
use mcp_runtime::replay::{FlowLedger, ReplayStore};
use mcp_runtime::state::Nonce;

const EXPIRED: usize = 300;
const ANSWERED: usize = 40;
const LIVE: usize = 25;

/// The ledger of `store`.
fn ledger(store: &Arc<dyn ReplayStore>) -> &dyn FlowLedger {
    store
        .flow_ledger()
        .expect("every built-in store has a ledger")
}

/// Fills the ledger through `a` and `b` alternately (answered flows in both orders: record
/// then answer, and the answer first, as when the background record is late; a flow answered
/// and then asked again with the same nonce), has four sweepers (two per handle, small
/// batches) race until no expired entry is left, and checks the counts.
async fn sweep_race(a: Arc<dyn ReplayStore>, b: Arc<dyn ReplayStore>) {
    let past = SystemTime::now() - Duration::from_secs(5);
    let future = SystemTime::now() + Duration::from_secs(3600);
    for i in 0..EXPIRED {
        let store = if i % 2 == 0 { &a } else { &b };
        ledger(store)
            .flow_asked(Nonce::random().unwrap(), past, false)
            .await
            .unwrap();
    }
    for i in 0..ANSWERED {
        let nonce = Nonce::random().unwrap();
        let (asker, answerer) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        if i % 4 < 2 {
            ledger(asker).flow_asked(nonce, past, false).await.unwrap();
            ledger(answerer).flow_answered(nonce, past).await.unwrap();
        } else {
            // The answer lands first: the late first record must not revive the flow.
            ledger(answerer).flow_answered(nonce, past).await.unwrap();
            ledger(asker).flow_asked(nonce, past, false).await.unwrap();
        }
    }
    // Answered, then asked again with the same nonce (a re-ask) and left: abandoned, once.
    let reasked = Nonce::random().unwrap();
    ledger(&a).flow_asked(reasked, past, false).await.unwrap();
    ledger(&b).flow_answered(reasked, past).await.unwrap();
    ledger(&b).flow_asked(reasked, past, true).await.unwrap();
    let live: Vec<Nonce> = (0..LIVE).map(|_| Nonce::random().unwrap()).collect();
    for nonce in &live {
        ledger(&a).flow_asked(*nonce, future, false).await.unwrap();
    }
    // Asking again for the same nonce keeps one entry.
    ledger(&b).flow_asked(live[0], future, true).await.unwrap();

    let mut sweepers = Vec::new();
    for store in [a.clone(), b.clone(), a.clone(), b.clone()] {
        sweepers.push(tokio::spawn(async move {
            let mut abandoned = 0u64;
            loop {
                let taken = ledger(&store)
                    .take_abandoned(SystemTime::now(), 7)
                    .await
                    .unwrap();
                if taken.removed == 0 {
                    return abandoned;
                }
                assert!(taken.abandoned <= taken.removed);
                abandoned += taken.abandoned;
            }
        }));
    }
    let sweep = async {
        let mut total = 0;
        for sweeper in sweepers {
            total += sweeper.await.unwrap();
        }
        total
    };
    let total = tokio::time::timeout(Duration::from_secs(60), sweep)
        .await
        .expect("the sweep finishes");
    assert_eq!(
        total,
        EXPIRED as u64 + 1,
        "each expired unanswered entry counted exactly once, no answered one"
    );
    // Nothing expired is left, and the live entries are still there (taken only once they
    // expire: here, by sweeping "an hour later").
    let taken = ledger(&a)
        .take_abandoned(SystemTime::now(), 1000)
        .await
        .unwrap();
    assert_eq!(taken.abandoned, 0);
    let later = ledger(&a)
        .take_abandoned(future + Duration::from_secs(1), 1000)
        .await
        .unwrap();
    assert_eq!(later.abandoned, LIVE as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_file_shared_by_two_handles_counts_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("replay.db");
    let a = SqliteReplayStore::open(&path).await.unwrap();
    let b = SqliteReplayStore::open(&path).await.unwrap();
    sweep_race(Arc::new(a), Arc::new(b)).await;
}

#[tokio::test]
async fn memory_store_counts_once() {
    let store: Arc<dyn ReplayStore> = Arc::new(mcp_runtime::replay::MemoryReplayStore::new(10_000));
    sweep_race(store.clone(), store).await;
}

/// Skipped when no PostgreSQL server is reachable, unless `MCP_REQUIRE_POSTGRES` is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_table_shared_by_two_handles_counts_once() {
    let url = std::env::var("MCP_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let table = format!(
        "flow_ledger_{}_{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let a = match PostgresReplayStore::connect_with_table(&url, &table).await {
        Ok(a) => a,
        Err(e) => {
            assert!(
                std::env::var_os("MCP_REQUIRE_POSTGRES").is_none(),
                "PostgreSQL required: {e}"
            );
            eprintln!("skipped: no PostgreSQL ({e})");
            return;
        }
    };
    let b = PostgresReplayStore::connect_with_table(&url, &table)
        .await
        .unwrap();
    sweep_race(Arc::new(a.clone()), Arc::new(b)).await;
    let client = a.pool().get().await.unwrap();
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS \"{table}\"; DROP TABLE IF EXISTS \"{table}_flows\";
             DROP TABLE IF EXISTS \"{table}_rate_limits\";"
        ))
        .await
        .unwrap();
}

/// Skipped when no Redis is reachable, unless `MCP_REQUIRE_REDIS` is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_prefix_shared_by_two_handles_counts_once() {
    let url = std::env::var("MCP_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379/0".to_owned());
    let prefix = format!(
        "test:flow_ledger:{}:{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let a = match RedisReplayStore::connect(&url).await {
        Ok(a) => a.with_prefix(&prefix).unwrap(),
        Err(e) => {
            assert!(
                std::env::var_os("MCP_REQUIRE_REDIS").is_none(),
                "Redis required: {e}"
            );
            eprintln!("skipped: no Redis ({e})");
            return;
        }
    };
    let b = RedisReplayStore::connect(&url)
        .await
        .unwrap()
        .with_prefix(&prefix)
        .unwrap();
    sweep_race(Arc::new(a), Arc::new(b)).await;
}

/// A store of one's own without a ledger: the server refuses to build rather than count
/// nothing silently.
#[test]
fn a_store_without_a_ledger_refuses_counting_loudly() {
    use mcp_runtime::prelude::*;
    use no_ledger::NoLedger;
    let built = Server::builder(Implementation::new("s", "1.0"))
        .replay_store(Arc::new(NoLedger))
        .count_abandoned_flows(Duration::from_secs(1))
        .build();
    let err = built.expect_err("no ledger, no counting");
    assert!(
        matches!(err, mcp_runtime::server::BuildError::NoFlowLedger(_)),
        "{err}"
    );
    assert!(err.to_string().contains("flow ledger"), "{err}");
    // Without counting, the same store builds.
    Server::builder(Implementation::new("s", "1.0"))
        .replay_store(Arc::new(NoLedger))
        .build()
        .unwrap();
}

mod no_ledger {
    use mcp_runtime::replay::{Claim, ClaimOutcome, ReplayError, ReplayStore};

    /// Claims everything, keeps nothing, has no ledger.
    #[derive(Debug)]
    pub struct NoLedger;

    impl ReplayStore for NoLedger {
        fn claim<'a>(
            &'a self,
            _claim: Claim<'a>,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<ClaimOutcome, ReplayError>> + Send + 'a>,
        > {
            Box::pin(async { Ok(ClaimOutcome::Claimed) })
        }

        fn prune_expired(
            &self,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<u64, ReplayError>> + Send + '_>,
        > {
            Box::pin(async { Ok(0) })
        }
    }
}
