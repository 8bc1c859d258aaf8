//! The shared rate-limit stores (SQLite, PostgreSQL, Redis): exact counts under concurrency
//! from two connections, windows that roll over, and **two server instances sharing one
//! store enforcing one limit** (each server built on its own replay store over the same
//! backend, counting in the rate-limit store that replay store offers).
//!
//! PostgreSQL (`postgres://postgres@127.0.0.1:5432/test`, or `MCP_TEST_POSTGRES_URL`) and
//! Redis (`redis://127.0.0.1:6379/0`, or `MCP_TEST_REDIS_URL`) tests print `skipped: ...` and
//! pass when the server is unreachable, unless `MCP_REQUIRE_POSTGRES` / `MCP_REQUIRE_REDIS`
//! is set (as in CI). Each test uses its own tables or key prefix and removes them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failure should abort the test
#![cfg_attr(
    not(any(feature = "sqlite", feature = "postgres", feature = "redis")),
    allow(dead_code, unused_imports)
)]

use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::prelude::*;
use mcp_runtime::rate_limit::{MAX_WINDOW, RateKey, RateLimit, RateLimitStore};
use mcp_runtime::replay::ReplayStore;
use serde_json::{Value, json};

/// Echoes.
#[tool(read_only)]
async fn echo() -> String {
    "echo".to_owned()
}

/// Something unique to this test and run, for names, tables and prefixes.
fn unique(test: &str) -> String {
    let mut r = [0u8; 4];
    getrandom::fill(&mut r).unwrap();
    format!(
        "{test}_{}_{:08x}",
        std::process::id(),
        u32::from_le_bytes(r)
    )
}

const DAY: Duration = MAX_WINDOW;

/// 50 concurrent hits on each of two stores (two connections to one backend), one key:
/// every count from 1 to 100 is handed out exactly once.
async fn counts_are_exact_across_connections(
    a: Arc<dyn RateLimitStore>,
    b: Arc<dyn RateLimitStore>,
) {
    let key = RateKey::new(&unique("p"), "tool", DAY);
    let mut tasks = Vec::new();
    for i in 0..100 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(
            async move { store.hit(&key, DAY).await.unwrap() },
        ));
    }
    let mut counts = Vec::new();
    for t in tasks {
        let hit = t.await.unwrap();
        assert!(
            hit.resets_in <= DAY && hit.resets_in > Duration::ZERO,
            "{hit:?}"
        );
        counts.push(hit.count);
    }
    counts.sort_unstable();
    assert_eq!(counts, (1..=100).collect::<Vec<u64>>());
    // Another key counts on its own.
    let other = RateKey::new(&unique("q"), "tool", DAY);
    assert_eq!(a.hit(&other, DAY).await.unwrap().count, 1);
    assert_eq!(b.hit(&other, DAY).await.unwrap().count, 2);
}

/// A one-second window: the count starts again once the window has ended.
async fn windows_roll_over(store: &dyn RateLimitStore) {
    let w = Duration::from_secs(1);
    let key = RateKey::new(&unique("roll"), "tool", w);
    let first = store.hit(&key, w).await.unwrap();
    assert!(first.resets_in <= w, "{first:?}");
    let second = store.hit(&key, w).await.unwrap();
    if second.count == first.count + 1 {
        tokio::time::sleep(second.resets_in + Duration::from_millis(50)).await;
    }
    let next = store.hit(&key, w).await.unwrap();
    assert_eq!(next.count, 1, "{first:?} {second:?} {next:?}");
    assert!(store.ping().await.is_ok());
}

fn call(id: i64) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}},
        "name": "echo", "arguments": {}}}),
    )
    .unwrap()
}

fn server_on(replay: Arc<dyn ReplayStore>) -> Server {
    Server::builder(Implementation::new("fleet", "1.0"))
        .tools(tools![echo])
        .replay_store(replay)
        .rate_limit(RateLimit::new(5, DAY))
        .build()
        .unwrap()
}

/// Two servers, each on its own replay store over one backend, each counting in the
/// rate-limit store its replay store offers: 12 calls of one principal split across them
/// (concurrently) get exactly 5 results and 7 refusals; another principal starts afresh.
async fn two_servers_enforce_one_limit(a: Arc<dyn ReplayStore>, b: Arc<dyn ReplayStore>) {
    let (a, b) = (server_on(a), server_on(b));
    let who = Principal::new(unique("alice"));
    let mut calls = Vec::new();
    for i in 0..12 {
        let server = if i % 2 == 0 { a.clone() } else { b.clone() };
        let who = who.clone();
        calls.push(tokio::spawn(async move {
            let reply = server.handle_bytes(&call(i), &who).await.unwrap();
            serde_json::from_slice::<Value>(&reply).unwrap()
        }));
    }
    let (mut ok, mut refused) = (0, 0);
    for c in calls {
        let r = c.await.unwrap();
        if r["result"]["content"][0]["text"] == "echo" {
            ok += 1;
        } else {
            assert_eq!(r["error"]["code"], -32023, "{r}");
            assert_eq!(r["error"]["data"]["limit"], 5, "{r}");
            refused += 1;
        }
    }
    assert_eq!((ok, refused), (5, 7));
    // Each server refuses alice now, and serves bob.
    for server in [&a, &b] {
        let r = server.handle_bytes(&call(20), &who).await.unwrap();
        assert!(String::from_utf8_lossy(&r).contains("-32023"));
        let bob = Principal::new(unique("bob"));
        let r = server.handle_bytes(&call(21), &bob).await.unwrap();
        assert!(String::from_utf8_lossy(&r).contains("\"echo\""));
    }
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;
    use mcp_runtime::backend::sqlite::SqliteRateLimitStore;
    use mcp_runtime::backend::sqlite::SqliteReplayStore;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn counts_are_exact_across_processes_sharing_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("limits.db");
        let a = SqliteRateLimitStore::open(&path).await.unwrap();
        let b = SqliteRateLimitStore::open(&path).await.unwrap();
        counts_are_exact_across_connections(Arc::new(a), Arc::new(b)).await;
    }

    #[tokio::test]
    async fn windows_roll_over_in_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteRateLimitStore::open(dir.path().join("limits.db"))
            .await
            .unwrap();
        windows_roll_over(&store).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn two_servers_on_one_sqlite_file_enforce_one_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let a = SqliteReplayStore::open(&path).await.unwrap();
        let b = SqliteReplayStore::open(&path).await.unwrap();
        two_servers_enforce_one_limit(Arc::new(a), Arc::new(b)).await;
    }

    #[tokio::test]
    async fn an_unusable_file_is_an_error_naming_the_store() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should be.
        let err = SqliteRateLimitStore::open(dir.path()).await.unwrap_err();
        assert!(
            err.to_string().starts_with("sqlite rate-limit store"),
            "{err}"
        );
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use mcp_runtime::backend::postgres::PostgresRateLimitStore;
    use mcp_runtime::backend::postgres::PostgresReplayStore;

    fn url() -> String {
        std::env::var("MCP_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
    }

    /// A store on its own table, or why the test is skipped.
    async fn store(table: &str) -> Option<PostgresRateLimitStore> {
        match PostgresRateLimitStore::connect_with_table(&url(), table).await {
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

    async fn drop_tables(tables: &[&str]) {
        if let Ok((client, conn)) = tokio_postgres::connect(&url(), tokio_postgres::NoTls).await {
            let task = tokio::spawn(conn);
            for table in tables {
                let _ = client
                    .batch_execute(&format!("DROP TABLE IF EXISTS \"{table}\""))
                    .await;
            }
            drop(client);
            let _ = task.await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn counts_are_exact_across_pools() {
        let t = format!("rl_t_{}", unique("exact"));
        let Some(a) = store(&t).await else { return };
        let b = store(&t).await.unwrap();
        counts_are_exact_across_connections(Arc::new(a), Arc::new(b)).await;
        drop_tables(&[&t]).await;
    }

    #[tokio::test]
    async fn windows_roll_over_in_postgres() {
        let t = format!("rl_t_{}", unique("roll"));
        let Some(s) = store(&t).await else { return };
        windows_roll_over(&s).await;
        drop_tables(&[&t]).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn two_servers_on_one_database_enforce_one_limit() {
        let t = format!("rp_t_{}", unique("fleet"));
        let a = match PostgresReplayStore::connect_with_table(&url(), &t).await {
            Ok(a) => a,
            Err(e) => {
                assert!(
                    std::env::var_os("MCP_REQUIRE_POSTGRES").is_none(),
                    "MCP_REQUIRE_POSTGRES is set but PostgreSQL at {} is unreachable: {e}",
                    url()
                );
                println!("skipped: no PostgreSQL at {}: {e}", url());
                return;
            }
        };
        // Two pools, as two hosts would have.
        let b = PostgresReplayStore::connect_with_table(&url(), &t)
            .await
            .unwrap();
        two_servers_enforce_one_limit(Arc::new(a), Arc::new(b)).await;
        drop_tables(&[&t, &format!("{t}_rate_limits")]).await;
    }

    #[tokio::test]
    async fn an_unreachable_server_is_an_error_without_the_password() {
        let err = PostgresRateLimitStore::connect("postgres://u:hunter2@127.0.0.1:1/db")
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("postgres rate-limit store"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }
}

#[cfg(feature = "redis")]
mod redis {
    use super::*;
    use mcp_runtime::backend::redis::RedisRateLimitStore;
    use mcp_runtime::backend::redis::RedisReplayStore;

    fn url() -> String {
        std::env::var("MCP_TEST_REDIS_URL")
            .unwrap_or_else(|_| "redis://127.0.0.1:6379/0".to_owned())
    }

    fn skip(e: &dyn std::fmt::Display) {
        assert!(
            std::env::var_os("MCP_REQUIRE_REDIS").is_none(),
            "MCP_REQUIRE_REDIS is set but Redis at {} is unreachable: {e}",
            url()
        );
        println!("skipped: no Redis at {}: {e}", url());
    }

    /// A store under its own prefix, or why the test is skipped.
    async fn store(prefix: &str) -> Option<RedisRateLimitStore> {
        match RedisRateLimitStore::connect(&url()).await {
            Ok(s) => Some(s.with_prefix(prefix).unwrap()),
            Err(e) => {
                skip(&e);
                None
            }
        }
    }

    /// Deletes every key under `prefix`.
    async fn clean(prefix: &str) {
        let Ok(client) = ::redis::Client::open(url()) else {
            return;
        };
        let Ok(mut conn) = client.get_multiplexed_async_connection().await else {
            return;
        };
        let keys: Vec<String> = ::redis::cmd("KEYS")
            .arg(format!("{prefix}*"))
            .query_async(&mut conn)
            .await
            .unwrap_or_default();
        if !keys.is_empty() {
            let _: Result<i64, _> = ::redis::cmd("DEL").arg(keys).query_async(&mut conn).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn counts_are_exact_across_connections_in_redis() {
        let prefix = format!("mcp:test:{}", unique("exact"));
        let Some(a) = store(&prefix).await else {
            return;
        };
        let b = store(&prefix).await.unwrap();
        counts_are_exact_across_connections(Arc::new(a), Arc::new(b)).await;
        clean(&prefix).await;
    }

    #[tokio::test]
    async fn windows_roll_over_in_redis() {
        let prefix = format!("mcp:test:{}", unique("roll"));
        let Some(s) = store(&prefix).await else {
            return;
        };
        windows_roll_over(&s).await;
        clean(&prefix).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn two_servers_on_one_redis_enforce_one_limit() {
        let prefix = format!("mcp:test:{}", unique("fleet"));
        let connect = || async {
            RedisReplayStore::connect(&url())
                .await
                .map(|s| s.with_prefix(&prefix).unwrap())
        };
        let a = match connect().await {
            Ok(a) => a,
            Err(e) => return skip(&e),
        };
        let b = connect().await.unwrap();
        two_servers_enforce_one_limit(Arc::new(a), Arc::new(b)).await;
        // The counters lived under the replay prefix, and expire with their window.
        let client = ::redis::Client::open(url()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let keys: Vec<String> = ::redis::cmd("KEYS")
            .arg(format!("{prefix}:ratelimit:*"))
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(!keys.is_empty());
        let ttl: i64 = ::redis::cmd("PTTL")
            .arg(&keys[0])
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(
            ttl > 0 && ttl <= i64::try_from(DAY.as_millis()).unwrap(),
            "{ttl}"
        );
        clean(&prefix).await;
    }

    #[tokio::test]
    async fn an_unreachable_redis_is_an_error_without_the_password() {
        let err = RedisRateLimitStore::connect("redis://:hunter2@127.0.0.1:1/0")
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("redis rate-limit store"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }
}
