//! PostgreSQL replay store, against `postgres://postgres@127.0.0.1:5432/test` (override with
//! `MCP_TEST_POSTGRES_URL`). Each test uses its own table and drops it afterwards; without a
//! reachable server each test prints `skipped: ...` and passes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failure should abort the test

use mcp_runtime::backend::postgres::PostgresReplayStore;
use mcp_runtime::replay::{ActionError, Claim, ClaimOutcome, ReplayError, ReplayStore, open_store};
use mcp_runtime::state::Nonce;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

fn url() -> String {
    std::env::var("MCP_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

fn later() -> SystemTime {
    SystemTime::now() + Duration::from_secs(600)
}

fn nonce(seed: u8, i: u32) -> Nonce {
    let mut b = [seed; 16];
    b[..4].copy_from_slice(&i.to_le_bytes());
    Nonce::from_bytes(b)
}

/// A table name unique to this test and run.
fn table(test: &str) -> String {
    let mut r = [0u8; 4];
    getrandom::fill(&mut r).unwrap();
    format!(
        "replay_t_{test}_{}_{:08x}",
        std::process::id(),
        u32::from_le_bytes(r)
    )
}

/// Connects a store on `table`, or prints why the test is skipped.
async fn store(table: &str) -> Option<PostgresReplayStore> {
    match PostgresReplayStore::connect_with_table(&url(), table).await {
        Ok(s) => Some(s),
        Err(e) => {
            // CI sets MCP_REQUIRE_POSTGRES so that a missing server fails instead of skipping.
            assert!(
                std::env::var_os("MCP_REQUIRE_POSTGRES").is_none(),
                "MCP_REQUIRE_POSTGRES is set but PostgreSQL at {} is unreachable: {e}",
                url()
            );
            println!("skipped: no PostgreSQL at {}: {e}", url());
            None
        }
    }
}

async fn drop_table(table: &str) {
    if let Ok((client, conn)) = tokio_postgres::connect(&url(), tokio_postgres::NoTls).await {
        let task = tokio::spawn(conn);
        let _ = client
            .batch_execute(&format!("DROP TABLE IF EXISTS \"{table}\""))
            .await;
        drop(client);
        let _ = task.await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_pools_race_one_winner_each() {
    let t = table("race");
    let Some(a) = store(&t).await else { return };
    let b = store(&t).await.unwrap();
    let (a, b) = (Arc::new(a), Arc::new(b));
    let wins = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..100u32 {
        for s in [a.clone(), b.clone(), a.clone(), b.clone()] {
            let wins = wins.clone();
            tasks.push(tokio::spawn(async move {
                if s.claim(Claim::new(nonce(1, i), later())).await.unwrap() == ClaimOutcome::Claimed
                {
                    wins.fetch_add(1, Ordering::SeqCst);
                }
            }));
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(wins.load(Ordering::SeqCst), 100);
    drop_table(&t).await;
}

#[tokio::test]
async fn claims_survive_restart() {
    let t = table("restart");
    let Some(s) = store(&t).await else { return };
    assert_eq!(
        s.claim(Claim::new(nonce(2, 0), later())).await.unwrap(),
        ClaimOutcome::Claimed
    );
    drop(s);
    let s = store(&t).await.unwrap();
    assert_eq!(
        s.claim(Claim::new(nonce(2, 0), later())).await.unwrap(),
        ClaimOutcome::AlreadyUsed
    );
    assert_eq!(
        s.claim(Claim::new(nonce(2, 1), later())).await.unwrap(),
        ClaimOutcome::Claimed
    );
    drop_table(&t).await;
}

#[tokio::test]
async fn expired_claims_are_pruned() {
    let t = table("prune");
    let Some(s) = store(&t).await else { return };
    let past = SystemTime::now() - Duration::from_secs(5);
    for i in 0..3 {
        s.claim(Claim::new(nonce(3, i), past)).await.unwrap();
    }
    s.claim(Claim::new(nonce(3, 99), later())).await.unwrap();
    assert_eq!(
        s.claim(Claim::new(nonce(3, 0), past)).await.unwrap(),
        ClaimOutcome::AlreadyUsed
    );
    assert_eq!(s.prune_expired().await.unwrap(), 3);
    assert_eq!(s.prune_expired().await.unwrap(), 0);
    assert_eq!(
        s.claim(Claim::new(nonce(3, 99), later())).await.unwrap(),
        ClaimOutcome::AlreadyUsed
    );
    drop_table(&t).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_with_rolls_back_and_waiting_claimer_wins() {
    let t = table("action");
    let Some(a) = store(&t).await else { return };
    let b = store(&t).await.unwrap();
    let n = nonce(4, 0);
    let err = a
        .claim(Claim::new(n, later()).during(Box::new(|| Err(ActionError::new("refused")))))
        .await
        .unwrap_err();
    assert!(matches!(err, ReplayError::ActionFailed(_)), "{err}");
    let err = a
        .claim(Claim::new(n, later()).during(Box::new(|| panic!("boom"))))
        .await
        .unwrap_err();
    assert!(matches!(err, ReplayError::ActionPanicked), "{err}");

    // While a's action runs, b's claim waits on the row lock; a fails, so b wins.
    let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
    let first = tokio::spawn(async move {
        a.claim(Claim::new(n, later()).during(Box::new(move || {
            started_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            Err(ActionError::new("late failure"))
        })))
        .await
    });
    tokio::task::spawn_blocking(move || started_rx.recv().unwrap())
        .await
        .unwrap();
    let t0 = std::time::Instant::now();
    assert_eq!(
        b.claim(Claim::new(n, later())).await.unwrap(),
        ClaimOutcome::Claimed
    );
    assert!(
        t0.elapsed() >= Duration::from_millis(100),
        "second claim did not wait"
    );
    assert!(matches!(
        first.await.unwrap(),
        Err(ReplayError::ActionFailed(_))
    ));

    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let outcome = b
        .claim(Claim::new(n, later()).during(Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })))
        .await
        .unwrap();
    assert_eq!(outcome, ClaimOutcome::AlreadyUsed);
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    drop_table(&t).await;
}

#[tokio::test]
async fn open_store_postgres_spec_and_bad_table() {
    let Some(_) = store(&table("probe")).await.map(|_| ()) else {
        return;
    };
    drop_table(&table("probe")).await;
    // The default table through open_store; nonces are random so reruns do not collide.
    let s = open_store(&url()).await.unwrap();
    let n = Nonce::random().unwrap();
    assert_eq!(
        s.claim(Claim::new(n, later())).await.unwrap(),
        ClaimOutcome::Claimed
    );
    assert_eq!(
        s.claim(Claim::new(n, later())).await.unwrap(),
        ClaimOutcome::AlreadyUsed
    );
    let err = PostgresReplayStore::connect_with_table(&url(), "Bad-Name")
        .await
        .unwrap_err();
    assert_eq!(err.reason(), "invalid_spec");
}

#[tokio::test]
async fn unreachable_server_is_a_clear_error() {
    let err = PostgresReplayStore::connect("postgres://u:hunter2@127.0.0.1:1/x")
        .await
        .unwrap_err();
    let message = err.to_string();
    println!("{message}");
    assert!(message.starts_with("postgres replay store: "), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
    assert!(!format!("{err:?}").contains("hunter2"));
}

/// Schema setup waits for the setup lock only up to its deadline: an instance stuck holding
/// it (here, an open transaction that took it) makes the others fail with what to check
/// instead of hanging; once the lock is free, setup goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_setup_gives_up_on_a_held_lock_at_its_deadline() {
    use mcp_runtime::backend::postgres::deadpool_postgres::{
        Manager, ManagerConfig, Pool, RecyclingMethod, Runtime,
    };
    use mcp_runtime::backend::postgres::{SchemaSetupError, setup_schema};

    let t = table("setup_lock");
    let Some(probe) = store(&t).await else { return };
    drop(probe);
    drop_table(&t).await;
    let lock = format!("mcp-test:{t}");

    let (mut holder, conn) = tokio_postgres::connect(&url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    let conn = tokio::spawn(conn);
    let held = holder.transaction().await.unwrap();
    held.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&lock])
        .await
        .unwrap();

    let manager = Manager::from_config(
        url().parse().unwrap(),
        tokio_postgres::NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = Pool::builder(manager)
        .max_size(2)
        .runtime(Runtime::Tokio1)
        .build()
        .unwrap();
    let mut client = pool.get().await.unwrap();
    // The outer bound turns a hang (no deadline) into a failure instead of a stuck test.
    let r = tokio::time::timeout(
        Duration::from_secs(10),
        setup_schema(&mut client, &lock, "SELECT 1", Duration::from_millis(300)),
    )
    .await
    .expect("setup_schema must give up at its own deadline");
    assert!(matches!(r, Err(SchemaSetupError::TimedOut(_))), "{r:?}");
    let text = r.unwrap_err().to_string();
    assert!(
        text.contains("setup lock") && text.contains("retry"),
        "{text}"
    );

    held.rollback().await.unwrap();
    let mut client = pool.get().await.unwrap();
    setup_schema(&mut client, &lock, "SELECT 1", Duration::from_secs(5))
        .await
        .unwrap();
    drop(holder);
    let _ = conn.await;
}
