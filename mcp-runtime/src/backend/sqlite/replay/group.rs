//! Group commit: concurrent writes to one [`super::SqliteReplayStore`] share one transaction.
//!
//! With `synchronous = FULL` every `COMMIT` waits for the disk (an `fsync` of the WAL), which
//! costs far more than the claim itself. Writers therefore queue their operation ([`Op`]) and
//! one *drainer* (at most one per store, on Tokio's blocking pool) takes everything queued, up
//! to [`MAX_BATCH`], and runs it in one `BEGIN IMMEDIATE` transaction with one `COMMIT`.
//!
//! Each operation runs inside its own `SAVEPOINT`, in queue order, so the batch behaves as the
//! same operations run one transaction each, back to back:
//! - a claim whose nonce is taken (by an earlier batch or earlier in this one) is
//!   `AlreadyUsed` and its work does not run;
//! - work that fails or panics is rolled back to its savepoint, taking its own nonce (and, for
//!   in-transaction work, its own writes) with it and nothing else: the nonce stays claimable,
//!   exactly as when the transaction was its own;
//! - in-transaction work sees the committed data plus the writes of the operations before it
//!   in the batch, which is what it would see had they committed first.
//!
//! Every outcome is sent only once the `COMMIT` succeeded. If the `COMMIT` (or the transaction
//! itself) fails, no write of the batch survives, and every claimant is told so: `Claimed`
//! becomes the store error (or [`ReplayError::ActionUnrecorded`] when standalone work already
//! acted), and `AlreadyUsed` becomes the store error too, because the claim it lost to may have
//! been in the same failed batch. Work failures stay what they are (nothing of theirs was
//! written either way). So each claimant's answer is as truthful as with a transaction of its
//! own, and a nonce is claimed exactly once.
//!
//! With group commit off, batches hold one operation: one transaction per claim.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::SystemTime;

use rusqlite::{Connection, TransactionBehavior, params};
use tokio::sync::oneshot;

use super::{Inner, NAME, SqliteReplayStore, Under, sqlite};
use crate::replay::{ClaimOutcome, ReplayError};
use crate::state::Nonce;

/// Most operations in one transaction: bounds how long a batch holds the write lock and how
/// much one failed `COMMIT` takes down.
pub(super) const MAX_BATCH: usize = 256;

/// A write waiting for the next batch.
pub(super) enum Op {
    /// Claim `nonce` and run `under` while it is held.
    Claim {
        nonce: Nonce,
        expires_at: SystemTime,
        under: Under,
        reply: oneshot::Sender<Result<ClaimOutcome, ReplayError>>,
    },
    /// Record the outcome of a claimed nonce.
    Record {
        nonce: Nonce,
        outcome: Vec<u8>,
        reply: oneshot::Sender<Result<(), ReplayError>>,
    },
}

/// The operations waiting, and whether a drainer is on its way to take them.
///
/// Its length is bounded by the callers waiting on it: each holds at most one queued
/// operation and awaits its answer, and an HTTP server caps its requests in flight.
#[derive(Default)]
pub(super) struct Queue {
    ops: VecDeque<Op>,
    draining: bool,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("queued", &self.ops.len())
            .field("draining", &self.draining)
            .finish()
    }
}

/// How one operation of a batch ended, before the batch's `COMMIT`.
enum Settled {
    Claimed {
        reply: oneshot::Sender<Result<ClaimOutcome, ReplayError>>,
        acted_outside: bool,
    },
    AlreadyUsed(oneshot::Sender<Result<ClaimOutcome, ReplayError>>),
    /// Nothing of it was written; the error stands whatever the batch does.
    ClaimFailed(
        oneshot::Sender<Result<ClaimOutcome, ReplayError>>,
        ReplayError,
    ),
    Recorded(oneshot::Sender<Result<(), ReplayError>>),
    RecordFailed(oneshot::Sender<Result<(), ReplayError>>, ReplayError),
}

impl SqliteReplayStore {
    /// Queues `op` and makes sure a drainer will take it.
    pub(super) fn submit(&self, op: Op) {
        let spawn = {
            let mut queue = self.inner.queue();
            queue.ops.push_back(op);
            !std::mem::replace(&mut queue.draining, true)
        };
        if spawn {
            let inner = Arc::clone(&self.inner);
            // Dropping the handle detaches the drainer; it answers every queued operation.
            drop(tokio::task::spawn_blocking(move || drain(&inner)));
        }
    }
}

/// Runs batches until the queue is empty. Only one drainer runs at a time (`draining`), and
/// it clears the flag under the queue's lock when it finds the queue empty, so an operation
/// queued meanwhile is always seen by this drainer or starts the next one. The connection is
/// locked per batch, so reads (recorded outcomes) get their turn under sustained load.
fn drain(inner: &Inner) {
    let guard = DrainGuard(inner);
    loop {
        let batch: Vec<Op> = {
            let mut queue = inner.queue();
            if queue.ops.is_empty() {
                queue.draining = false;
                break;
            }
            let n = queue.ops.len().min(inner.max_batch);
            queue.ops.drain(..n).collect()
        };
        run_batch(&mut inner.lock(), batch);
    }
    std::mem::forget(guard);
    inner.maybe_prune(&inner.lock());
}

/// Should a drainer unwind (a bug: work panics are caught), answers everything still queued
/// with an error and lets the next operation start a new drainer, so no caller waits forever.
struct DrainGuard<'a>(&'a Inner);

impl Drop for DrainGuard<'_> {
    fn drop(&mut self) {
        let mut queue = self.0.queue();
        queue.draining = false;
        for op in queue.ops.drain(..) {
            let err = || ReplayError::Worker("the SQLite replay store's writer failed".into());
            match op {
                Op::Claim { reply, .. } => drop(reply.send(Err(err()))),
                Op::Record { reply, .. } => drop(reply.send(Err(err()))),
            }
        }
    }
}

/// Runs `batch` in one transaction and answers every operation in it.
fn run_batch(conn: &mut Connection, batch: Vec<Op>) {
    let tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => {
            let e = Arc::new(e);
            for op in batch {
                fail_unrun(op, &e, "starting the claim transaction");
            }
            return;
        }
    };
    let mut settled = Vec::with_capacity(batch.len());
    let mut ops = batch.into_iter();
    while let Some(op) = ops.next() {
        let (done, state) = run_op(&tx, op);
        settled.push(done);
        if let Err(e) = state {
            // The transaction is gone (SQLite rolled it back, or a savepoint could not be
            // undone): nothing of the batch will commit.
            let e = Arc::new(e);
            drop(tx);
            fail_settled(settled, &e, "running the claim transaction");
            for op in ops {
                fail_unrun(op, &e, "running the claim transaction");
            }
            return;
        }
    }
    match tx.commit() {
        Ok(()) => {
            for done in settled {
                match done {
                    Settled::Claimed { reply, .. } => drop(reply.send(Ok(ClaimOutcome::Claimed))),
                    Settled::AlreadyUsed(reply) => drop(reply.send(Ok(ClaimOutcome::AlreadyUsed))),
                    Settled::ClaimFailed(reply, e) => drop(reply.send(Err(e))),
                    Settled::Recorded(reply) => drop(reply.send(Ok(()))),
                    Settled::RecordFailed(reply, e) => drop(reply.send(Err(e))),
                }
            }
        }
        // A failed COMMIT rolls the whole transaction back.
        Err(e) => fail_settled(settled, &Arc::new(e), "committing the claim"),
    }
}

/// Runs one operation inside its own savepoint: its answer so far, and `Err` when the
/// transaction can no longer be trusted.
fn run_op(tx: &rusqlite::Transaction<'_>, op: Op) -> (Settled, Result<(), rusqlite::Error>) {
    if let Err(e) = tx.execute_batch("SAVEPOINT claim") {
        // Nothing of this operation ran: fail it with the batch.
        return (unrun(op), Err(e));
    }
    let (settled, keep) = match op {
        Op::Claim {
            nonce,
            expires_at,
            under,
            reply,
        } => claim_op(tx, nonce, expires_at, under, reply),
        Op::Record {
            nonce,
            outcome,
            reply,
        } => match tx.execute(
            "UPDATE replay_nonces SET outcome = ?2 WHERE nonce = ?1",
            params![&nonce.as_bytes()[..], outcome],
        ) {
            Ok(_) => (Settled::Recorded(reply), true),
            Err(e) => (
                Settled::RecordFailed(reply, sqlite("recording the outcome")(e)),
                false,
            ),
        },
    };
    // Work may have ended the transaction (an I/O error makes SQLite roll it back).
    let end = if tx.is_autocommit() {
        Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
            Some("the claim transaction ended early".into()),
        ))
    } else if keep {
        tx.execute_batch("RELEASE claim")
    } else {
        tx.execute_batch("ROLLBACK TO claim; RELEASE claim")
    };
    (settled, end)
}

/// Claims `nonce` and runs `under`; the flag says whether the savepoint is to be kept.
fn claim_op(
    tx: &rusqlite::Transaction<'_>,
    nonce: Nonce,
    expires_at: SystemTime,
    under: Under,
    reply: oneshot::Sender<Result<ClaimOutcome, ReplayError>>,
) -> (Settled, bool) {
    match SqliteReplayStore::claim_in(tx, nonce, expires_at) {
        Ok(ClaimOutcome::AlreadyUsed) => return (Settled::AlreadyUsed(reply), true),
        Ok(ClaimOutcome::Claimed) => {}
        Err(e) => return (Settled::ClaimFailed(reply, e), false),
    }
    let acted_outside = matches!(under, Under::During(_));
    let outcome = match under {
        Under::Nothing => Ok(Ok(())),
        Under::During(work) => std::panic::catch_unwind(AssertUnwindSafe(work)),
        Under::InTx(work) => std::panic::catch_unwind(AssertUnwindSafe(|| (work.0)(tx))),
    };
    match outcome {
        Ok(Ok(())) => (
            Settled::Claimed {
                reply,
                acted_outside,
            },
            true,
        ),
        Ok(Err(e)) => (
            Settled::ClaimFailed(reply, ReplayError::ActionFailed(e)),
            false,
        ),
        Err(_) => (
            Settled::ClaimFailed(reply, ReplayError::ActionPanicked),
            false,
        ),
    }
}

/// An operation that never ran, as settled: failing it says only that nothing happened.
fn unrun(op: Op) -> Settled {
    match op {
        Op::Claim { reply, .. } => Settled::ClaimFailed(
            reply,
            ReplayError::Worker("the claim was not attempted".into()),
        ),
        Op::Record { reply, .. } => Settled::RecordFailed(
            reply,
            ReplayError::Worker("the outcome was not recorded".into()),
        ),
    }
}

/// Answers an operation that did not run: the store failed, nothing of it was written.
fn fail_unrun(op: Op, cause: &Arc<rusqlite::Error>, context: &'static str) {
    let err = || ReplayError::backend(NAME, context, Arc::clone(cause));
    match op {
        Op::Claim { reply, .. } => drop(reply.send(Err(err()))),
        Op::Record { reply, .. } => drop(reply.send(Err(err()))),
    }
}

/// Answers the operations of a batch that did not commit: none of its writes survive.
fn fail_settled(settled: Vec<Settled>, cause: &Arc<rusqlite::Error>, context: &'static str) {
    let err = || ReplayError::backend(NAME, context, Arc::clone(cause));
    for done in settled {
        match done {
            Settled::Claimed {
                reply,
                acted_outside,
            } => {
                // Standalone work already acted outside the database: say so.
                let e = if acted_outside {
                    ReplayError::ActionUnrecorded {
                        cause: Box::new(err()),
                    }
                } else {
                    err()
                };
                drop(reply.send(Err(e)));
            }
            // The claim it lost to may have been in this batch and is gone too.
            Settled::AlreadyUsed(reply) => drop(reply.send(Err(err()))),
            Settled::ClaimFailed(reply, e) => drop(reply.send(Err(e))),
            Settled::Recorded(reply) => drop(reply.send(Err(err()))),
            Settled::RecordFailed(reply, e) => drop(reply.send(Err(e))),
        }
    }
}
