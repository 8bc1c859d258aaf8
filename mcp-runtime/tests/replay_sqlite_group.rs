//! SQLite group commit: claims queued while the writer is busy share one transaction, and each
//! claimant still gets the answer a transaction of its own would give.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failure should abort the test

use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_runtime::backend::sqlite::SqliteReplayStore;
use mcp_runtime::backend::sqlite::{SqliteOptions, rusqlite, tx_work};
use mcp_runtime::replay::{ActionError, Claim, ClaimOutcome, ReplayError, ReplayStore};
use mcp_runtime::state::Nonce;
use sqlite_support::{break_commits, later, nonce, open_temp, temp_db};
use tokio::task::JoinHandle;

mod sqlite_support;

type Pending = JoinHandle<Result<ClaimOutcome, ReplayError>>;

/// Occupies the store's writer with a claim whose work waits for the returned sender, so the
/// claims made meanwhile queue up for the next transaction.
async fn hold_writer(store: &SqliteReplayStore, n: Nonce) -> (mpsc::Sender<()>, Pending) {
    let (started_tx, started_rx) = mpsc::channel::<()>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let store = store.clone();
    let held = tokio::spawn(async move {
        store
            .claim(Claim::new(n, later()).during(Box::new(move || {
                started_tx.send(()).unwrap();
                // Bounded: a broken test fails instead of hanging.
                release_rx.recv_timeout(Duration::from_secs(10)).unwrap();
                Ok(())
            })))
            .await
    });
    tokio::task::spawn_blocking(move || started_rx.recv_timeout(Duration::from_secs(10)))
        .await
        .unwrap()
        .unwrap();
    (release_tx, held)
}

/// Lets every spawned claim reach the store's queue.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(200)).await;
}

fn create_marks(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch("CREATE TABLE marks (name TEXT NOT NULL)")
        .unwrap();
}

#[tokio::test]
async fn queued_claims_share_one_transaction() {
    // Each work records how many marks another connection (as another process would) sees.
    let (_dir, path, store) = open_temp().await;
    create_marks(&path);
    let outside = Arc::new(Mutex::new(rusqlite::Connection::open(&path).unwrap()));
    let (release, held) = hold_writer(&store, nonce(2, 999)).await;
    let claims: Vec<_> = (0..20u32)
        .map(|i| {
            let (store, outside) = (store.clone(), outside.clone());
            tokio::spawn(async move {
                let seen = Arc::new(Mutex::new(None));
                let slot = seen.clone();
                let work = tx_work(move |tx| {
                    tx.execute("INSERT INTO marks (name) VALUES (?1)", [i.to_string()])
                        .map_err(ActionError::new)?;
                    let count: i64 = outside
                        .lock()
                        .unwrap()
                        .query_row("SELECT count(*) FROM marks", [], |row| row.get(0))
                        .map_err(ActionError::new)?;
                    *slot.lock().unwrap() = Some(count);
                    Ok(())
                });
                let outcome = store
                    .claim(Claim::new(nonce(2, i), later()).in_tx(work))
                    .await;
                (outcome, seen.lock().unwrap().take())
            })
        })
        .collect();
    settle().await;
    release.send(()).unwrap();
    held.await.unwrap().unwrap();
    for claim in claims {
        let (outcome, seen) = claim.await.unwrap();
        assert_eq!(outcome.unwrap(), ClaimOutcome::Claimed);
        // No other work's write was visible outside: all twenty committed at once.
        assert_eq!(seen, Some(0));
    }
}

/// The same claims without group commit: twenty transactions, each work sees the marks of
/// those before it.
#[tokio::test]
async fn one_transaction_per_claim_without_group_commit() {
    let (_dir, path) = temp_db();
    let options = SqliteOptions::default().group_commit(false);
    let store = SqliteReplayStore::open_with(&path, options).await.unwrap();
    create_marks(&path);
    let outside = Arc::new(Mutex::new(rusqlite::Connection::open(&path).unwrap()));
    let (release, held) = hold_writer(&store, nonce(3, 999)).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let claims: Vec<_> = (0..10u32)
        .map(|i| {
            let (store, outside, seen) = (store.clone(), outside.clone(), seen.clone());
            tokio::spawn(async move {
                let work = tx_work(move |tx| {
                    tx.execute("INSERT INTO marks (name) VALUES (?1)", [i.to_string()])
                        .map_err(ActionError::new)?;
                    let count: i64 = outside
                        .lock()
                        .unwrap()
                        .query_row("SELECT count(*) FROM marks", [], |row| row.get(0))
                        .map_err(ActionError::new)?;
                    seen.lock().unwrap().push(count);
                    Ok(())
                });
                store
                    .claim(Claim::new(nonce(3, i), later()).in_tx(work))
                    .await
            })
        })
        .collect();
    settle().await;
    release.send(()).unwrap();
    held.await.unwrap().unwrap();
    for claim in claims {
        assert_eq!(claim.await.unwrap().unwrap(), ClaimOutcome::Claimed);
    }
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_unstable();
    assert_eq!(seen, (0..10).collect::<Vec<i64>>());
}

/// One batch holding a duplicate nonce, failing and panicking work and successful writes:
/// each claimant gets its own answer, and only the successful work's writes stay.
#[tokio::test]
async fn mixed_batch_gives_each_claimant_its_own_outcome() {
    let (_dir, path, store) = open_temp().await;
    create_marks(&path);
    let (release, held) = hold_writer(&store, nonce(4, 999)).await;
    let insert = |name: &'static str, fail: bool| {
        tx_work(move |tx| {
            tx.execute("INSERT INTO marks (name) VALUES (?1)", [name])
                .map_err(ActionError::new)?;
            if fail {
                return Err(ActionError::new("refused after writing"));
            }
            Ok(())
        })
    };
    let spawn_tx = |n: Nonce, work| {
        let store = store.clone();
        tokio::spawn(async move { store.claim(Claim::new(n, later()).in_tx(work)).await })
    };
    let dup_a = spawn_tx(nonce(4, 0), insert("dup-a", false));
    let dup_b = spawn_tx(nonce(4, 0), insert("dup-b", false));
    let failing = spawn_tx(nonce(4, 1), insert("failed", true));
    let panicking = {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .claim(
                    Claim::new(nonce(4, 2), later()).during(Box::new(|| panic!("work panicked"))),
                )
                .await
        })
    };
    let plain = {
        let store = store.clone();
        tokio::spawn(async move { store.claim(Claim::new(nonce(4, 3), later())).await })
    };
    let kept = spawn_tx(nonce(4, 4), insert("kept", false));
    settle().await;
    release.send(()).unwrap();
    held.await.unwrap().unwrap();

    let (a, b) = (dup_a.await.unwrap(), dup_b.await.unwrap());
    let mut dup = [a.unwrap(), b.unwrap()];
    dup.sort_by_key(|o| *o == ClaimOutcome::AlreadyUsed);
    assert_eq!(dup, [ClaimOutcome::Claimed, ClaimOutcome::AlreadyUsed]);
    assert!(matches!(
        failing.await.unwrap(),
        Err(ReplayError::ActionFailed(_))
    ));
    assert!(matches!(
        panicking.await.unwrap(),
        Err(ReplayError::ActionPanicked)
    ));
    assert_eq!(plain.await.unwrap().unwrap(), ClaimOutcome::Claimed);
    assert_eq!(kept.await.unwrap().unwrap(), ClaimOutcome::Claimed);

    let conn = rusqlite::Connection::open(&path).unwrap();
    let mut stmt = conn
        .prepare("SELECT name FROM marks ORDER BY name")
        .unwrap();
    let names: Vec<String> = stmt
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // One of the duplicates, and the kept write; the failed work's write was rolled back.
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names[0] == "dup-a" || names[0] == "dup-b", "{names:?}");
    assert_eq!(names[1], "kept");
    // The failed and the panicked claims left their nonces claimable; the others are used.
    for (i, expected) in [
        (0, ClaimOutcome::AlreadyUsed),
        (1, ClaimOutcome::Claimed),
        (2, ClaimOutcome::Claimed),
        (3, ClaimOutcome::AlreadyUsed),
        (4, ClaimOutcome::AlreadyUsed),
    ] {
        assert_eq!(
            store.claim(Claim::new(nonce(4, i), later())).await.unwrap(),
            expected,
            "nonce {i}"
        );
    }
}

/// A batch whose `COMMIT` fails: no claimant is told `Claimed`, not even `AlreadyUsed` (the
/// claim it lost to was in the failed batch), standalone work is reported as carried out, and
/// afterwards every nonce is claimable and no in-transaction write stayed.
#[tokio::test]
async fn a_failed_batch_commit_fails_every_claim_in_it() {
    let (_dir, path, store) = open_temp().await;
    create_marks(&path);
    break_commits(&path);
    let (release, held) = hold_writer(&store, nonce(5, 999)).await;
    let spawn_plain = |n: Nonce| {
        let store = store.clone();
        tokio::spawn(async move { store.claim(Claim::new(n, later())).await })
    };
    let first = spawn_plain(nonce(5, 0));
    let duplicate = spawn_plain(nonce(5, 0));
    let in_tx = {
        let store = store.clone();
        tokio::spawn(async move {
            let work = tx_work(|tx| {
                tx.execute("INSERT INTO marks (name) VALUES ('lost')", [])
                    .map_err(ActionError::new)?;
                Ok(())
            });
            store
                .claim(Claim::new(nonce(5, 1), later()).in_tx(work))
                .await
        })
    };
    let during = {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .claim(Claim::new(nonce(5, 2), later()).during(Box::new(|| Ok(()))))
                .await
        })
    };
    settle().await;
    release.send(()).unwrap();
    // The holder's own batch fails too: its work ran, so it is "carried out, not recorded".
    assert_eq!(
        held.await.unwrap().unwrap_err().reason(),
        "action_unrecorded"
    );
    assert_eq!(first.await.unwrap().unwrap_err().reason(), "sqlite");
    assert_eq!(duplicate.await.unwrap().unwrap_err().reason(), "sqlite");
    assert_eq!(in_tx.await.unwrap().unwrap_err().reason(), "sqlite");
    assert_eq!(
        during.await.unwrap().unwrap_err().reason(),
        "action_unrecorded"
    );

    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("DROP TRIGGER breaker").unwrap();
    let marks: i64 = conn
        .query_row("SELECT count(*) FROM marks", [], |row| row.get(0))
        .unwrap();
    assert_eq!(marks, 0);
    for i in [0, 1, 2, 999] {
        assert_eq!(
            store.claim(Claim::new(nonce(5, i), later())).await.unwrap(),
            ClaimOutcome::Claimed,
            "nonce {i}"
        );
    }
}

/// Outcome records queue with the claims and are read back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claims_and_records_all_land() {
    let (_dir, _path, store) = open_temp().await;
    let tasks: Vec<_> = (0..200u32)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let n = nonce(6, i % 100);
                if store.claim(Claim::new(n, later())).await.unwrap() == ClaimOutcome::Claimed {
                    store
                        .outcomes()
                        .unwrap()
                        .record_outcome(n, later(), &i.to_le_bytes())
                        .await
                        .unwrap();
                    1
                } else {
                    0
                }
            })
        })
        .collect();
    let mut wins = 0;
    for t in tasks {
        wins += t.await.unwrap();
    }
    assert_eq!(wins, 100);
    for i in 0..100u32 {
        let recorded = recorded(&store, nonce(6, i)).await.unwrap();
        let winner = u32::from_le_bytes(recorded.try_into().unwrap());
        assert_eq!(winner % 100, i);
    }
}

/// The outcome recorded with the claim of `nonce`, if any.
async fn recorded(
    store: &dyn mcp_runtime::replay::ReplayStore,
    nonce: mcp_runtime::state::Nonce,
) -> Option<Vec<u8>> {
    match store.outcomes().unwrap().claim_state(nonce).await.unwrap() {
        mcp_runtime::replay::ClaimState::Recorded(outcome) => Some(outcome),
        _ => None,
    }
}
