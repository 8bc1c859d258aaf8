//! PostgreSQL task store, against `postgres://postgres@127.0.0.1:5432/test` (override with
//! `MCP_TEST_POSTGRES_URL`): two pools on one table behave as two hosts of a fleet. Without a
//! reachable server the test prints `skipped: ...` and passes (unless MCP_REQUIRE_POSTGRES).
#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcp_runtime::backend::postgres::PostgresTaskStore;
use mcp_runtime::tasks::{TaskLimits, TaskStore, TaskStoreError, now_ms};
use mcp_types::TaskStatus;
use tasks_support::limits;
use tasks_support::record;

mod tasks_support;

fn url() -> String {
    std::env::var("MCP_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

async fn store(table: &str) -> Option<PostgresTaskStore> {
    match PostgresTaskStore::connect_with_table(&url(), table).await {
        Ok(s) => Some(s),
        Err(e) => {
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

#[tokio::test]
async fn two_hosts_share_tasks_and_terminal_tasks_stay_final() {
    let mut r = [0u8; 4];
    getrandom::fill(&mut r).unwrap();
    let table = format!(
        "tasks_t_{}_{:08x}",
        std::process::id(),
        u32::from_le_bytes(r)
    );
    let Some(a) = store(&table).await else { return };
    let b = store(&table).await.unwrap();
    let later = now_ms() + 60_000;

    a.create(record("t1", "alice", TaskStatus::Working, later))
        .await
        .unwrap();
    assert_eq!(
        b.get("t1", "alice").await.unwrap().unwrap(),
        record("t1", "alice", TaskStatus::Working, later)
    );
    assert!(b.get("t1", "mallory").await.unwrap().is_none());
    assert!(matches!(
        b.create(record("t1", "alice", TaskStatus::Working, later))
            .await,
        Err(TaskStoreError::Exists(_))
    ));
    let write = |status| record("t1", "alice", status, later).next_revision();
    assert!(b.update(write(TaskStatus::Cancelled)).await.unwrap());
    assert!(!a.update(write(TaskStatus::Completed)).await.unwrap());
    let late = write(TaskStatus::Completed).next_revision();
    assert!(!a.update(late).await.unwrap());
    assert_eq!(
        a.get("t1", "alice").await.unwrap().unwrap().status,
        TaskStatus::Cancelled
    );

    a.create(record("old", "alice", TaskStatus::Working, 5))
        .await
        .unwrap();
    assert!(a.get("old", "alice").await.unwrap().is_none());
    drop_table(&table).await;
}

/// Instances of a fleet starting together all create the table at once: PostgreSQL's catalog
/// can collide on concurrent `CREATE TABLE IF NOT EXISTS`, so setup is serialised and every
/// instance must come up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_starting_together_all_come_up() {
    let mut r = [0u8; 4];
    getrandom::fill(&mut r).unwrap();
    for round in 0..3 {
        let table = format!(
            "tasks_c_{}_{:08x}_{round}",
            std::process::id(),
            u32::from_le_bytes(r)
        );
        // Probe first, so a machine without PostgreSQL skips instead of failing below.
        let Some(first) = store(&table).await else {
            return;
        };
        drop(first);
        drop_table(&table).await;
        let opens = (0..8).map(|_| {
            let table = table.clone();
            tokio::spawn(async move { PostgresTaskStore::connect_with_table(&url(), &table).await })
        });
        for open in futures::future::join_all(opens).await {
            let opened = open.unwrap();
            assert!(
                opened.is_ok(),
                "an instance failed to start: {:?}",
                opened.err()
            );
        }
        drop_table(&table).await;
    }
}

/// A fresh table for one test, with `limits`; `None` when PostgreSQL is unreachable.
async fn limited(tag: &str, limits: TaskLimits) -> Option<(PostgresTaskStore, String)> {
    let mut r = [0u8; 4];
    getrandom::fill(&mut r).unwrap();
    let table = format!(
        "tasks_{tag}_{}_{:08x}",
        std::process::id(),
        u32::from_le_bytes(r)
    );
    let store = store(&table).await?;
    Some((store.with_limits(limits), table))
}

#[tokio::test]
async fn bobs_completed_task_survives_alice_creating_more_than_the_total() {
    let Some((store, table)) = limited("evict", TaskLimits::new(10, 5)).await else {
        return;
    };
    limits::others_cannot_evict(&store, 25, 5, now_ms() + 60_000).await;
    drop_table(&table).await;
}

#[tokio::test]
async fn a_principal_at_its_share_is_refused_when_all_its_tasks_run() {
    let Some((store, table)) = limited("share", TaskLimits::new(100, 3)).await else {
        return;
    };
    limits::share_refuses_when_all_are_live(&store, 3, now_ms() + 60_000).await;
    drop_table(&table).await;
}

#[tokio::test]
async fn a_full_store_refuses_newcomers_and_evicts_only_the_creators_own() {
    let Some((store, table)) = limited("full", TaskLimits::new(4, 3)).await else {
        return;
    };
    limits::total_cap_refuses_and_evicts_only_the_creators_own(&store, now_ms() + 60_000).await;
    drop_table(&table).await;
}

#[tokio::test]
async fn expired_tasks_are_purged_and_do_not_count() {
    let Some((store, table)) = limited("exp", TaskLimits::new(100, 2)).await else {
        return;
    };
    limits::expired_tasks_do_not_count(&store, 2, now_ms() + 60_000).await;
    drop_table(&table).await;
}

/// Hosts creating at once cannot both take a principal's last place: the share holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_on_two_hosts_keep_the_share() {
    let Some((a, table)) = limited("race", TaskLimits::new(100, 4)).await else {
        return;
    };
    let b = store(&table)
        .await
        .unwrap()
        .with_limits(TaskLimits::new(100, 4));
    let later = now_ms() + 60_000;
    let creates = (0..12).map(|i| {
        let host = if i % 2 == 0 { a.clone() } else { b.clone() };
        tokio::spawn(async move {
            host.create(record(
                &format!("r-{i}"),
                "alice",
                TaskStatus::Working,
                later,
            ))
            .await
        })
    });
    let outcomes = futures::future::join_all(creates).await;
    let stored = outcomes.iter().filter(|o| matches!(o, Ok(Ok(())))).count();
    assert_eq!(stored, 4, "{outcomes:?}");
    drop_table(&table).await;
}
