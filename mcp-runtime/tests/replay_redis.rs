//! Redis replay store, against `redis://127.0.0.1:6379/0` (override with `MCP_TEST_REDIS_URL`).
//! Each test uses its own key prefix; without a reachable Redis each test prints
//! `skipped: ...` and passes, unless `MCP_REQUIRE_REDIS` is set (as in CI).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failure should abort the test

use mcp_runtime::backend::redis::RedisReplayStore;
use mcp_runtime::replay::{
    ActionError, Claim, ClaimOutcome, ClaimState, ReplayError, ReplayStore, open_store,
};
use mcp_runtime::state::Nonce;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

fn url() -> String {
    std::env::var("MCP_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".to_owned())
}

fn later() -> SystemTime {
    SystemTime::now() + Duration::from_secs(600)
}

fn nonce(seed: u8, i: u32) -> Nonce {
    let mut b = [seed; 16];
    b[..4].copy_from_slice(&i.to_le_bytes());
    Nonce::from_bytes(b)
}

/// A key prefix unique to this test and run.
fn prefix(test: &str) -> String {
    let mut r = [0u8; 4];
    getrandom::fill(&mut r).unwrap();
    format!(
        "mcp:test:{test}:{}:{:08x}",
        std::process::id(),
        u32::from_le_bytes(r)
    )
}

/// Connects a store with its own prefix, or prints why the test is skipped.
async fn store(test: &str) -> Option<RedisReplayStore> {
    match RedisReplayStore::connect(&url()).await {
        Ok(s) => Some(s.with_prefix(&prefix(test)).unwrap()),
        Err(e) => {
            assert!(
                std::env::var_os("MCP_REQUIRE_REDIS").is_none(),
                "MCP_REQUIRE_REDIS is set but Redis at {} is unreachable: {e}",
                url()
            );
            println!("skipped: no Redis at {}: {e}", url());
            None
        }
    }
}

#[tokio::test]
async fn a_nonce_is_claimed_once() {
    let Some(store) = store("once").await else {
        return;
    };
    let n = nonce(1, 0);
    assert_eq!(
        store.claim(Claim::new(n, later())).await.unwrap(),
        ClaimOutcome::Claimed
    );
    assert_eq!(
        store.claim(Claim::new(n, later())).await.unwrap(),
        ClaimOutcome::AlreadyUsed
    );
    assert_eq!(
        store.claim(Claim::new(nonce(1, 1), later())).await.unwrap(),
        ClaimOutcome::Claimed
    );
}

/// Two stores (two "instances") on one Redis: 32 concurrent claims of one nonce, one wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_claims_across_instances_win_once() {
    let Some(a) = store("race").await else {
        return;
    };
    let p = prefix("race");
    let a = Arc::new(a.with_prefix(&p).unwrap());
    let b = Arc::new(
        RedisReplayStore::connect(&url())
            .await
            .unwrap()
            .with_prefix(&p)
            .unwrap(),
    );
    let n = nonce(2, 0);
    let mut tasks = Vec::new();
    for i in 0..32 {
        let s = if i % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            s.claim(Claim::new(n, later())).await
        }));
    }
    let mut won = 0;
    for t in tasks {
        if t.await.unwrap().unwrap() == ClaimOutcome::Claimed {
            won += 1;
        }
    }
    assert_eq!(won, 1);
}

#[tokio::test]
async fn a_failed_action_leaves_the_nonce_claimable() {
    let Some(store) = store("fail").await else {
        return;
    };
    let n = nonce(3, 0);
    let err = store
        .claim(Claim::new(n, later()).during(Box::new(|| Err(ActionError::new("disk on fire")))))
        .await
        .unwrap_err();
    assert!(matches!(err, ReplayError::ActionFailed(_)), "{err}");
    let panicked = store
        .claim(Claim::new(n, later()).during(Box::new(|| panic!("boom"))))
        .await
        .unwrap_err();
    assert!(
        matches!(panicked, ReplayError::ActionPanicked),
        "{panicked}"
    );
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let outcome = store
        .claim(Claim::new(n, later()).during(Box::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })))
        .await
        .unwrap();
    assert_eq!(outcome, ClaimOutcome::Claimed);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    // Recorded: neither a plain claim nor another action gets it again.
    assert_eq!(
        store.claim(Claim::new(n, later())).await.unwrap(),
        ClaimOutcome::AlreadyUsed
    );
    let counter = ran.clone();
    let again = store
        .claim(Claim::new(n, later()).during(Box::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })))
        .await
        .unwrap();
    assert_eq!(again, ClaimOutcome::AlreadyUsed);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

/// The claim lasts until the token's expiry and no longer (Redis drops the key itself).
#[tokio::test]
async fn a_claim_expires_with_its_token() {
    let Some(store) = store("expiry").await else {
        return;
    };
    let n = nonce(4, 0);
    // The store keeps a claim at least a second; ask for less and wait past it.
    let soon = SystemTime::now() + Duration::from_millis(200);
    assert_eq!(
        store.claim(Claim::new(n, soon)).await.unwrap(),
        ClaimOutcome::Claimed
    );
    assert_eq!(
        store.claim(Claim::new(n, soon)).await.unwrap(),
        ClaimOutcome::AlreadyUsed
    );
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(
        store.claim(Claim::new(n, later())).await.unwrap(),
        ClaimOutcome::Claimed
    );
}

/// An unreachable Redis is a clear, typed error within the deadline, not a hang, and nothing
/// runs.
#[tokio::test]
async fn an_unreachable_redis_is_a_clear_error() {
    // Port 1 on loopback: nothing listens there.
    let err = open_store("redis://127.0.0.1:1/0").await.unwrap_err();
    assert_eq!(err.reason(), "redis", "{err}");
    let text = err.to_string();
    assert!(text.starts_with("redis replay store: connecting"), "{text}");
}

#[tokio::test]
async fn open_store_understands_redis_urls_and_hides_passwords() {
    let err = open_store("redis://user:hunter2@127.0.0.1:1/0")
        .await
        .unwrap_err();
    assert!(!err.to_string().contains("hunter2"), "{err}");
    let Some(_) = store("open").await else {
        return;
    };
    let s = open_store(&url()).await.unwrap();
    // A fresh random nonce: the default prefix is shared with other runs.
    let mut r = [0u8; 16];
    getrandom::fill(&mut r).unwrap();
    let n = Nonce::from_bytes(r);
    assert_eq!(
        s.claim(Claim::new(n, later())).await.unwrap(),
        ClaimOutcome::Claimed
    );
    assert_eq!(
        s.claim(Claim::new(n, later())).await.unwrap(),
        ClaimOutcome::AlreadyUsed
    );
}

/// A private `redis-server` on a free loopback port, without persistence; killed on drop.
struct PrivateRedis {
    child: std::process::Child,
    port: u16,
}

impl PrivateRedis {
    /// Starts one on `port` (0: any free port), or `None` when `redis-server` is not installed.
    fn start(port: u16) -> Option<Self> {
        let port = if port == 0 {
            std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        } else {
            port
        };
        let child = std::process::Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok()?;
        let server = Self { child, port };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "redis-server did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(server)
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Redis going away under a connected store: every operation fails fast with a Redis error
/// and no action runs; once Redis is back, the store reconnects by itself.
#[tokio::test]
async fn redis_restarted_mid_flight_is_a_clear_error_then_reconnects() {
    let Some(mut redis) = PrivateRedis::start(0) else {
        assert!(
            std::env::var_os("MCP_REQUIRE_REDIS").is_none(),
            "MCP_REQUIRE_REDIS is set but redis-server is not installed"
        );
        println!("skipped: redis-server is not installed");
        return;
    };
    let store = RedisReplayStore::connect(&redis.url()).await.unwrap();
    assert_eq!(
        store.claim(Claim::new(nonce(6, 0), later())).await.unwrap(),
        ClaimOutcome::Claimed
    );
    redis.stop();

    let started = std::time::Instant::now();
    let err = store
        .claim(Claim::new(nonce(6, 1), later()))
        .await
        .unwrap_err();
    assert_eq!(err.reason(), "redis", "{err}");
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let err = store
        .claim(Claim::new(nonce(6, 2), later()).during(Box::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })))
        .await
        .unwrap_err();
    assert_eq!(err.reason(), "redis", "{err}");
    assert_eq!(ran.load(Ordering::SeqCst), 0, "no action without a claim");
    assert!(
        started.elapsed()
            < 2 * mcp_runtime::backend::redis::COMMAND_TIMEOUT + Duration::from_secs(1),
        "failures come within the deadline"
    );

    let port = redis.port;
    drop(redis);
    let Some(_back) = PrivateRedis::start(port) else {
        panic!("redis-server could not be restarted on port {port}");
    };
    assert_eq!(
        store.claim(Claim::new(nonce(6, 1), later())).await.unwrap(),
        ClaimOutcome::Claimed
    );
}

/// A TCP forwarder to Redis that holds every reply `delay` before passing it on: a Redis that
/// stalls (a slow disk, a failover) without dropping the connection.
async fn stalling_proxy(delay: Duration) -> Option<String> {
    proxy(Stall::Delay(delay)).await
}

/// How a [`proxy`] holds Redis's replies.
#[derive(Clone)]
enum Stall {
    /// Every reply, this long.
    Delay(Duration),
    /// Every reply, while the flag is set (a Redis that stops answering, then resumes).
    While(Arc<std::sync::atomic::AtomicBool>),
}

/// A TCP proxy to the test Redis that passes commands on at once and holds the replies as
/// `stall` says: the commands land, their answers come late.
async fn proxy(stall: Stall) -> Option<String> {
    let upstream = url()
        .strip_prefix("redis://")
        .and_then(|rest| rest.split('/').next())
        .map(str::to_owned)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.ok()?;
    let addr = listener.local_addr().ok()?;
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else {
                return;
            };
            let (mut client_read, mut client_write) = client.into_split();
            let (mut server_read, mut server_write) = server.into_split();
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
            });
            let stall = stall.clone();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n) = server_read.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    match &stall {
                        Stall::Delay(delay) => tokio::time::sleep(*delay).await,
                        Stall::While(flag) => {
                            while flag.load(Ordering::SeqCst) {
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                        }
                    }
                    if client_write.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    Some(format!("redis://{addr}/0"))
}

/// Finding: while Redis stalled, the driver's own 0.5 s response timeout answered "nothing was
/// changed" though the claim landed when Redis resumed. A stall shorter than the store's own
/// deadline is now simply waited out, and the claim's answer is the truth.
#[tokio::test]
async fn a_stall_longer_than_the_driver_default_is_waited_out() {
    if store("stall-probe").await.is_none() {
        return;
    }
    let proxied = stalling_proxy(Duration::from_millis(1500)).await.unwrap();
    let store = RedisReplayStore::connect(&proxied)
        .await
        .unwrap()
        .with_prefix(&prefix("stall"))
        .unwrap();
    let n = nonce(0x5a, 1);
    let started = std::time::Instant::now();
    let first = store.claim(Claim::new(n, later())).await;
    assert!(
        matches!(first, Ok(ClaimOutcome::Claimed)),
        "{first:?} after {:?}",
        started.elapsed()
    );
    assert!(matches!(
        store.claim(Claim::new(n, later())).await,
        Ok(ClaimOutcome::AlreadyUsed)
    ));
}

/// Finding (issue 34): a claim whose `SET` got no answer within the store's deadline failed
/// ("nothing was changed, retry later") while the claim landed when Redis answered again; the
/// retry the server asked for then found the confirmation taken, with no outcome recorded,
/// until it expired. The store now deletes such a claim (its own token only) once Redis
/// answers, so the retry can claim it.
#[tokio::test]
async fn a_claim_that_lands_after_its_deadline_is_released_for_the_retry() {
    if store("landed-probe").await.is_none() {
        return;
    }
    let keys = prefix("landed");
    let direct = RedisReplayStore::connect(&url())
        .await
        .unwrap()
        .with_prefix(&keys)
        .unwrap();
    let stalled = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let proxied = proxy(Stall::While(Arc::clone(&stalled))).await.unwrap();
    let slow = RedisReplayStore::connect(&proxied)
        .await
        .unwrap()
        .with_prefix(&keys)
        .unwrap()
        .with_command_timeout(Duration::from_millis(200));
    for (i, with_work) in [(1u32, false), (2, true)] {
        let n = nonce(0x6c, i);
        // Connected (again) before Redis stops answering: the SET is sent.
        slow.ping().await.unwrap();
        stalled.store(true, Ordering::SeqCst);
        let failed = if with_work {
            let ran = Arc::new(AtomicUsize::new(0));
            let seen = Arc::clone(&ran);
            let out = slow
                .claim(Claim::new(n, later()).during(Box::new(move || {
                    seen.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                })))
                .await;
            assert_eq!(ran.load(Ordering::SeqCst), 0, "the work never ran");
            out
        } else {
            slow.claim(Claim::new(n, later())).await
        };
        assert!(
            matches!(failed, Err(ReplayError::Backend { .. })),
            "{failed:?}"
        );
        // The SET landed all the same: the nonce is taken, with no outcome.
        let landed = direct.outcomes().unwrap().claim_state(n).await;
        assert!(
            matches!(landed, Ok(ClaimState::Claimed)),
            "{landed:?} after {failed:?}"
        );
        // Redis answers again: the store finds its own claim and deletes it.
        stalled.store(false, Ordering::SeqCst);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            match direct.outcomes().unwrap().claim_state(n).await {
                Ok(ClaimState::Unclaimed) => break,
                other => assert!(
                    std::time::Instant::now() < deadline,
                    "still {other:?} after 10 s"
                ),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(matches!(
            direct.claim(Claim::new(n, later())).await,
            Ok(ClaimOutcome::Claimed)
        ));
    }
    // A claim that was answered is never released.
    let kept = nonce(0x6c, 9);
    assert!(matches!(
        slow.claim(Claim::new(kept, later())).await,
        Ok(ClaimOutcome::Claimed)
    ));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(matches!(
        direct.claim(Claim::new(kept, later())).await,
        Ok(ClaimOutcome::AlreadyUsed)
    ));
}
