//! The flow ledger behind `mcp_flows_abandoned_total`: two store handles on the same SQLite
//! file, PostgreSQL table or Redis prefix (two instances of a fleet), sweeping at once, take
//! each expired entry exactly once, and never an answered or unexpired one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcp_runtime::backend::postgres::PostgresReplayStore;
use mcp_runtime::backend::redis::RedisReplayStore;
use mcp_runtime::backend::sqlite::SqliteReplayStore;
use mcp_runtime::replay::ReplayStore;
use mcp_runtime::state::Nonce;

const EXPIRED: usize = 300;
const ANSWERED: usize = 40;
const LIVE: usize = 25;

/// Fills the ledger through `a` and `b` alternately, has four sweepers (two per handle, small
/// batches) race until the ledger has no expired entry left, and checks the counts.
async fn sweep_race(a: Arc<dyn ReplayStore>, b: Arc<dyn ReplayStore>) {
    let past = SystemTime::now() - Duration::from_secs(5);
    let future = SystemTime::now() + Duration::from_secs(3600);
    for i in 0..EXPIRED {
        let store = if i % 2 == 0 { &a } else { &b };
        let ledger = store
            .flow_ledger()
            .expect("every built-in store has a ledger");
        ledger
            .flow_asked(Nonce::random().unwrap(), past)
            .await
            .unwrap();
    }
    for i in 0..ANSWERED {
        let nonce = Nonce::random().unwrap();
        let (asker, answerer) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        asker
            .flow_ledger()
            .unwrap()
            .flow_asked(nonce, past)
            .await
            .unwrap();
        answerer
            .flow_ledger()
            .unwrap()
            .flow_answered(nonce)
            .await
            .unwrap();
    }
    let live: Vec<Nonce> = (0..LIVE).map(|_| Nonce::random().unwrap()).collect();
    for nonce in &live {
        a.flow_ledger()
            .unwrap()
            .flow_asked(*nonce, future)
            .await
            .unwrap();
    }
    // Asking again for the same nonce keeps one entry.
    b.flow_ledger()
        .unwrap()
        .flow_asked(live[0], future)
        .await
        .unwrap();

    let mut sweepers = Vec::new();
    for store in [a.clone(), b.clone(), a.clone(), b.clone()] {
        sweepers.push(tokio::spawn(async move {
            let mut taken = 0u64;
            loop {
                let now = SystemTime::now();
                let got = store
                    .flow_ledger()
                    .unwrap()
                    .take_abandoned(now, 7)
                    .await
                    .unwrap();
                if got == 0 {
                    return taken;
                }
                taken += got;
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
        total, EXPIRED as u64,
        "each expired entry counted exactly once"
    );
    // Nothing expired is left, and the live entries are still there (taken only once they
    // expire: here, by sweeping "an hour later").
    let ledger = a.flow_ledger().unwrap();
    assert_eq!(
        ledger
            .take_abandoned(SystemTime::now(), 1000)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        ledger
            .take_abandoned(future + Duration::from_secs(1), 1000)
            .await
            .unwrap(),
        LIVE as u64
    );
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
            "DROP TABLE IF EXISTS \"{table}\"; DROP TABLE IF EXISTS \"{table}_flows\";"
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
