//! SQLite replay store: one winner per nonce across handles, threads and OS processes;
//! claims survive restarts; expired claims are pruned; failed actions roll back.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failure should abort the test

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use sqlite_support::{break_commits, later, nonce, open_temp, temp_db};

mod sqlite_support;
use mcp_runtime::backend::sqlite::SqliteReplayStore;
use mcp_runtime::replay::{ActionError, Claim, ClaimOutcome, DuringWork, ReplayError, ReplayStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_handles_one_file_race_one_winner() {
    let (_dir, path) = temp_db();
    let a = Arc::new(SqliteReplayStore::open(&path).await.unwrap());
    let b = Arc::new(SqliteReplayStore::open(&path).await.unwrap());
    let wins = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..100u32 {
        for store in [a.clone(), b.clone(), a.clone(), b.clone()] {
            let wins = wins.clone();
            tasks.push(tokio::spawn(async move {
                if store.claim(Claim::new(nonce(1, i), later())).await.unwrap()
                    == ClaimOutcome::Claimed
                {
                    wins.fetch_add(1, Ordering::SeqCst);
                }
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(wins.load(Ordering::SeqCst), 100);
}

#[test]
fn os_threads_with_own_handles_one_winner() {
    let (_dir, path) = temp_db();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(SqliteReplayStore::open(&path)).unwrap();
    let wins = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (path, wins) = (path.clone(), wins.clone());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    let store = SqliteReplayStore::open(&path).await.unwrap();
                    for i in 0..50 {
                        if store.claim(Claim::new(nonce(2, i), later())).await.unwrap()
                            == ClaimOutcome::Claimed
                        {
                            wins.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                });
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(wins.load(Ordering::SeqCst), 50);
}

#[tokio::test]
async fn claims_survive_restart() {
    let (_dir, path) = temp_db();
    {
        let store = SqliteReplayStore::open(&path).await.unwrap();
        assert_eq!(
            store.claim(Claim::new(nonce(3, 0), later())).await.unwrap(),
            ClaimOutcome::Claimed
        );
        assert_eq!(store.schema_version().await.unwrap(), 3);
    }
    let store = SqliteReplayStore::open(&path).await.unwrap();
    assert_eq!(
        store.claim(Claim::new(nonce(3, 0), later())).await.unwrap(),
        ClaimOutcome::AlreadyUsed
    );
    assert_eq!(
        store.claim(Claim::new(nonce(3, 1), later())).await.unwrap(),
        ClaimOutcome::Claimed
    );
    // Re-opening did not re-run migrations.
    assert_eq!(store.schema_version().await.unwrap(), 3);
}

#[tokio::test]
async fn expired_claims_are_pruned_live_ones_kept() {
    let (_dir, path) = temp_db();
    let past = SystemTime::now() - Duration::from_secs(5);
    let store = SqliteReplayStore::open(&path).await.unwrap();
    for i in 0..3 {
        store.claim(Claim::new(nonce(4, i), past)).await.unwrap();
    }
    store
        .claim(Claim::new(nonce(4, 99), later()))
        .await
        .unwrap();
    // Until pruned, an expired claim still counts as used.
    assert_eq!(
        store.claim(Claim::new(nonce(4, 0), past)).await.unwrap(),
        ClaimOutcome::AlreadyUsed
    );
    assert_eq!(store.prune_expired().await.unwrap(), 3);
    assert_eq!(store.prune_expired().await.unwrap(), 0);
    assert_eq!(
        store
            .claim(Claim::new(nonce(4, 99), later()))
            .await
            .unwrap(),
        ClaimOutcome::AlreadyUsed
    );

    // Opening prunes too.
    store.claim(Claim::new(nonce(4, 7), past)).await.unwrap();
    drop(store);
    let store = SqliteReplayStore::open(&path).await.unwrap();
    assert_eq!(store.prune_expired().await.unwrap(), 0);
}

#[tokio::test]
async fn claim_with_commits_or_rolls_back_together() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteReplayStore::open(dir.path().join("replay.db"))
        .await
        .unwrap();
    let victim = dir.path().join("note.md");
    std::fs::write(&victim, "x").unwrap();
    let n = nonce(5, 0);

    let err = store
        .claim(
            Claim::new(n, later()).during(Box::new(|| Err(ActionError::new("permission denied")))),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ReplayError::ActionFailed(_)), "{err}");
    let err = store
        .claim(Claim::new(n, later()).during(Box::new(|| panic!("boom"))))
        .await
        .unwrap_err();
    assert!(matches!(err, ReplayError::ActionPanicked), "{err}");

    // The nonce is still claimable; a convergent unlink runs once.
    let unlinks = Arc::new(AtomicUsize::new(0));
    let unlink = |path: std::path::PathBuf, count: Arc<AtomicUsize>| -> DuringWork {
        Box::new(move || match std::fs::remove_file(&path) {
            Ok(()) => {
                count.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(ActionError::new(e)),
        })
    };
    let outcome = store
        .claim(Claim::new(n, later()).during(unlink(victim.clone(), unlinks.clone())))
        .await;
    assert_eq!(outcome.unwrap(), ClaimOutcome::Claimed);
    assert!(!victim.exists());
    let outcome = store
        .claim(Claim::new(n, later()).during(unlink(victim.clone(), unlinks.clone())))
        .await;
    assert_eq!(outcome.unwrap(), ClaimOutcome::AlreadyUsed);
    assert_eq!(unlinks.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn second_claimer_waits_for_first_transaction_outcome() {
    // While one handle's action runs (holding the write transaction), a claim from another
    // handle blocks; when the action fails and rolls back, the waiting claim wins.
    let (_dir, path) = temp_db();
    let a = SqliteReplayStore::open(&path).await.unwrap();
    let b = SqliteReplayStore::open(&path).await.unwrap();
    let n = nonce(6, 0);
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
    let t0 = Instant::now();
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
}

#[tokio::test]
async fn newer_schema_is_refused() {
    let (_dir, path) = temp_db();
    drop(SqliteReplayStore::open(&path).await.unwrap());
    // Simulate a file written by a future build.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE schema_version SET version = 99", [])
        .unwrap();
    drop(conn);
    let err = SqliteReplayStore::open(&path).await.unwrap_err();
    let too_new = std::error::Error::source(&err)
        .and_then(|e| e.downcast_ref::<mcp_runtime::backend::sqlite::SchemaTooNew>());
    assert!(
        matches!(
            too_new,
            Some(mcp_runtime::backend::sqlite::SchemaTooNew {
                found: 99,
                supported: 3
            })
        ),
        "{err}"
    );
    assert!(
        matches!(
            err,
            ReplayError::Backend {
                store: "sqlite",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade"), "{err}");
}

/// Child mode for [`separate_processes_race_one_winner_each`]: claims nonces 0..N in the file
/// named by `REPLAY_CHILD_DB` once `REPLAY_CHILD_GO` exists, writing won indices to
/// `REPLAY_CHILD_OUT`. Without those variables (a normal test run) it does nothing.
#[test]
fn child_process_worker() {
    let (Ok(db), Ok(out), Ok(go)) = (
        std::env::var("REPLAY_CHILD_DB"),
        std::env::var("REPLAY_CHILD_OUT"),
        std::env::var("REPLAY_CHILD_GO"),
    ) else {
        return;
    };
    let count: u32 = std::env::var("REPLAY_CHILD_COUNT")
        .unwrap()
        .parse()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let won = rt.block_on(async {
        let store = SqliteReplayStore::open(&db).await.unwrap();
        std::fs::write(format!("{out}.ready"), "").unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !Path::new(&go).exists() {
            assert!(Instant::now() < deadline, "parent never said go");
            std::thread::sleep(Duration::from_millis(1));
        }
        // Each child walks the nonces in its own pseudo-random order, so the two processes
        // keep colliding throughout instead of one running ahead of the other.
        let seed: u64 = std::env::var("REPLAY_CHILD_SEED").unwrap().parse().unwrap();
        let mut order: Vec<u32> = (0..count).collect();
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        for j in (1..order.len()).rev() {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            order.swap(j, usize::try_from(state >> 33).unwrap() % (j + 1));
        }
        let mut won = Vec::new();
        for i in order {
            if store.claim(Claim::new(nonce(7, i), later())).await.unwrap() == ClaimOutcome::Claimed
            {
                won.push(i.to_string());
            }
        }
        won
    });
    std::fs::write(out, won.join("\n")).unwrap();
}

#[test]
fn separate_processes_race_one_winner_each() {
    const COUNT: u32 = 1000;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("replay.db");
    let go = dir.path().join("go");
    // Create the schema up front so both children race on claims, not on setup.
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(SqliteReplayStore::open(&db))
        .unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|k| {
            let out = dir.path().join(format!("out{k}"));
            let child = Command::new(&exe)
                .args(["--exact", "child_process_worker", "--test-threads=1"])
                .env("REPLAY_CHILD_DB", &db)
                .env("REPLAY_CHILD_OUT", &out)
                .env("REPLAY_CHILD_GO", &go)
                .env("REPLAY_CHILD_COUNT", COUNT.to_string())
                .env("REPLAY_CHILD_SEED", (k + 1).to_string())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            (child, out)
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    for k in 0..2 {
        let ready = dir.path().join(format!("out{k}.ready"));
        while !ready.exists() {
            assert!(Instant::now() < deadline, "child {k} never became ready");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    std::fs::write(&go, "").unwrap();
    let mut seen = vec![0u32; COUNT as usize];
    let mut per_child = Vec::new();
    for (mut child, out) in children {
        assert!(child.wait().unwrap().success(), "child failed");
        let text = std::fs::read_to_string(out).unwrap();
        let won: Vec<usize> = text.lines().map(|l| l.parse().unwrap()).collect();
        per_child.push(won.len());
        for i in won {
            seen[i] += 1;
        }
    }
    assert!(
        seen.iter().all(|&c| c == 1),
        "some nonce won by 0 or 2 processes: {seen:?}"
    );
    // Usually both win some; a lopsided split only means the scheduler ran one child first.
    eprintln!("wins per process: {per_child:?}");
}

/// Child mode for [`crash_between_action_and_commit_leaves_nonce_claimable`]: claims nonce
/// (8, 0) with an action that unlinks `REPLAY_CRASH_FILE` and then aborts the process before
/// the claim can commit.
#[test]
fn crash_child_worker() {
    let (Ok(db), Ok(file)) = (
        std::env::var("REPLAY_CRASH_DB"),
        std::env::var("REPLAY_CRASH_FILE"),
    ) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = SqliteReplayStore::open(&db).await.unwrap();
        let _ = store
            .claim(Claim::new(nonce(8, 0), later()).during(Box::new(move || {
                std::fs::remove_file(&file).unwrap();
                // Die after the effect, before COMMIT. `exit` runs no destructors, so the
                // transaction is neither committed nor rolled back: a crash, as far as
                // SQLite can tell (and, unlike `abort`, it leaves no core file behind).
                std::process::exit(86);
            })))
            .await;
    });
    unreachable!("the action exits the process");
}

#[tokio::test]
async fn crash_between_action_and_commit_leaves_nonce_claimable() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("replay.db");
    let file = dir.path().join("note.md");
    std::fs::write(&file, "x").unwrap();
    drop(SqliteReplayStore::open(&db).await.unwrap());
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child_worker", "--test-threads=1"])
        .env("REPLAY_CRASH_DB", &db)
        .env("REPLAY_CRASH_FILE", &file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(
        status.code(),
        Some(86),
        "child should have exited inside the action"
    );
    assert!(
        !file.exists(),
        "the action's effect happened before the crash"
    );

    // The nonce was never committed: a retry re-claims it, the convergent action finds the
    // file already gone (no second effect), and the claim commits.
    let store = SqliteReplayStore::open(&db).await.unwrap();
    let effects = Arc::new(AtomicUsize::new(0));
    let e = effects.clone();
    let path = file.clone();
    let action: DuringWork = Box::new(move || match std::fs::remove_file(&path) {
        Ok(()) => {
            e.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(ActionError::new(err)),
    });
    assert_eq!(
        store
            .claim(Claim::new(nonce(8, 0), later()).during(action))
            .await
            .unwrap(),
        ClaimOutcome::Claimed
    );
    assert_eq!(effects.load(Ordering::SeqCst), 0);
    assert_eq!(
        store.claim(Claim::new(nonce(8, 0), later())).await.unwrap(),
        ClaimOutcome::AlreadyUsed
    );
}

/// Several processes starting together on a fresh file (a fleet rolling out, a test spawning
/// servers) must all open it: switching to WAL needs an exclusive lock, and SQLite reports
/// that contention without waiting for the busy timeout. Threads with their own connections
/// take the same file locks as processes do.
#[test]
fn concurrent_first_opens_of_a_fresh_file_all_succeed() {
    const OPENERS: usize = 6;
    for round in 0..25 {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(dir.path().join("replay.db"));
        let barrier = Arc::new(std::sync::Barrier::new(OPENERS));
        let openers: Vec<_> = (0..OPENERS)
            .map(|_| {
                let (db, barrier) = (db.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    barrier.wait();
                    rt.block_on(SqliteReplayStore::open(db.as_path()))
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        for opener in openers {
            let opened = opener.join().unwrap();
            assert!(opened.is_ok(), "round {round}: {opened:?}");
        }
        let rt = tokio::runtime::Runtime::new().unwrap();
        let version = rt
            .block_on(async {
                SqliteReplayStore::open(db.as_path())
                    .await?
                    .schema_version()
                    .await
            })
            .unwrap();
        assert_eq!(version, 3, "each migration applied exactly once");
    }
}

/// A failed `COMMIT` is reported for what it is: after a standalone action it says the action
/// was carried out (its effect stands); without an action, or with an in-transaction action
/// (rolled back with the claim), it is a plain store error and nothing stays claimed.
#[tokio::test]
async fn a_failed_commit_says_whether_the_action_happened() {
    let (_dir, path, store) = open_temp().await;
    store
        .claim(Claim::new(nonce(9, 0), later()))
        .await
        .map(|_| ())
        .unwrap();
    break_commits(&path);

    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let action: DuringWork = Box::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let err = store
        .claim(Claim::new(nonce(9, 1), later()).during(action))
        .await
        .unwrap_err();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(err.reason(), "action_unrecorded", "{err}");
    assert!(err.to_string().contains("was carried out"), "{err}");

    let err = store
        .claim(Claim::new(nonce(9, 2), later()))
        .await
        .unwrap_err();
    assert_eq!(err.reason(), "sqlite", "{err}");

    let action = mcp_runtime::backend::sqlite::tx_work(|tx| {
        tx.execute_batch("CREATE TABLE written_in_tx (x INTEGER)")
            .map_err(ActionError::new)
    });
    let err = store
        .claim(Claim::new(nonce(9, 3), later()).in_tx(action))
        .await
        .unwrap_err();
    assert_eq!(err.reason(), "sqlite", "{err}");

    // Nothing of the failed commits stayed: every nonce is still claimable, the in-transaction
    // write is gone.
    let conn = mcp_runtime::backend::sqlite::rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("DROP TRIGGER breaker").unwrap();
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'written_in_tx'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(tables, 0);
    for i in 1..=3 {
        assert_eq!(
            store.claim(Claim::new(nonce(9, i), later())).await.unwrap(),
            ClaimOutcome::Claimed,
            "nonce {i}"
        );
    }
}
