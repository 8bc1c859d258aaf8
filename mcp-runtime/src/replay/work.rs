//! Work under a claim: what a confirmed answer changes, and how it is tied to the claim.
//!
//! One vocabulary for every store: [`ClaimWork`] says *when* the work runs relative to the
//! claim (not at all, during it, after it, or inside the store's own transaction);
//! [`DuringWork`] is the standalone closure a store runs while holding a claim; [`TxWork`] is
//! transactional work a backend builds with its own typed constructor
//! (`backend::sqlite::tx_work`, `backend::postgres::tx_work`, or a third party's) and the core
//! carries without knowing its type.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex};

/// Why work under a claim failed; the claim was rolled back.
pub struct ActionError(Box<dyn std::error::Error + Send + Sync + 'static>);

impl ActionError {
    /// Wraps any error.
    pub fn new(error: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        Self(error.into())
    }

    /// The wrapped error.
    pub fn into_inner(self) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self.0
    }
}

impl fmt::Debug for ActionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ActionError").field(&self.0).finish()
    }
}

impl fmt::Display for ActionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for ActionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

/// Standalone work a store runs while it holds a claim ([`ClaimWith::During`](crate::replay::ClaimWith::During)).
///
/// Synchronous and run on a blocking thread (it may do file I/O); keep it short, since a SQL
/// store holds a write transaction meanwhile.
pub type DuringWork = Box<dyn FnOnce() -> Result<(), ActionError> + Send + 'static>;

/// What a confirmed answer changes, and how that change is tied to its one-time claim
/// (for [`crate::context::RequestContext::elicit_with_mutation`]).
///
/// Build it *without* changing anything: the change goes in the closure (or transaction) it
/// carries, which the runtime runs under the claim.
pub enum ClaimWork<R> {
    /// No change (e.g. the user did not tick "confirm"); the answer is still claimed once.
    Nothing(R),
    /// Standalone work run while the claim is held ([`ClaimWith::During`](crate::replay::ClaimWith::During)); make
    /// it convergent. *At least once, converging to once*: a crash between the work and the
    /// claim's `COMMIT` leaves the confirmation usable.
    During(Box<dyn FnOnce() -> Result<R, ActionError> + Send + 'static>),
    /// Work run only *after* the claim is durably committed, on Tokio's blocking pool: *at
    /// most once*. If it fails (or the process dies before it finishes), the confirmation is
    /// used up and the failure is reported with that said, so the user asks again; a
    /// confirmation never acts twice, nor on something re-created after a crash. The right
    /// choice for a destructive effect outside the replay store's database.
    After(Box<dyn FnOnce() -> Result<R, ActionError> + Send + 'static>),
    /// Work inside the replay store's own transaction ([`ClaimWith::InTx`](crate::replay::ClaimWith::InTx)):
    /// claim, work and `COMMIT` are one transaction, and any failure rolls back both.
    /// *Exactly once*. The store must be the backend that built the [`TxWork`].
    InTx(TxWork<R>),
}

impl<R: Send + 'static> ClaimWork<R> {
    /// The same work, its value passed through `f`.
    pub fn map<S: Send + 'static>(self, f: impl FnOnce(R) -> S + Send + 'static) -> ClaimWork<S> {
        match self {
            Self::Nothing(value) => ClaimWork::Nothing(f(value)),
            Self::During(work) => ClaimWork::During(Box::new(move || work().map(f))),
            Self::After(work) => ClaimWork::After(Box::new(move || work().map(f))),
            Self::InTx(work) => ClaimWork::InTx(work.map(f)),
        }
    }
}

impl<R> fmt::Debug for ClaimWork<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Nothing(_) => f.write_str("ClaimWork::Nothing"),
            Self::During(_) => f.write_str("ClaimWork::During"),
            Self::After(_) => f.write_str("ClaimWork::After"),
            Self::InTx(work) => write!(f, "ClaimWork::InTx({})", work.store()),
        }
    }
}

/// Where transactional work leaves its value: handed to the closure a backend builds in
/// [`TxWork::new`], and read by the runtime once the store committed.
pub struct TxOutput<R>(Arc<Mutex<Option<R>>>);

impl<R> TxOutput<R> {
    /// Records the work's value (call it when the work succeeded, inside the transaction).
    pub fn put(&self, value: R) {
        // A poisoned slot means a panic elsewhere mid-write of an `Option`: still consistent.
        let mut guard = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *guard = Some(value);
    }
}

/// Transactional work for one kind of store, built by that store's own constructor and carried
/// by the core without knowing its type.
///
/// A backend wraps its typed closure (say, one taking its driver's transaction) in a private
/// type `W` and calls [`TxWork::new`]; its [`ClaimWith::InTx`](crate::replay::ClaimWith::InTx) gets the work
/// back with [`TxWork::downcast`]. Work built for another store does not downcast: that store
/// answers [`super::ReplayError::TxMismatch`] naming both, and nothing is claimed.
pub struct TxWork<R = ()> {
    store: &'static str,
    work: Box<dyn Any + Send>,
    output: Box<dyn FnOnce() -> Option<R> + Send>,
}

impl<R: Send + 'static> TxWork<R> {
    /// Work for the store named `store` (the name its [`super::ReplayStore::name`] returns).
    /// `build` gets the [`TxOutput`] its work must [`put`](TxOutput::put) its value in, and
    /// returns the work as the store's own type `W`.
    pub fn new<W: Any + Send>(store: &'static str, build: impl FnOnce(TxOutput<R>) -> W) -> Self {
        let slot = Arc::new(Mutex::new(None));
        let work = build(TxOutput(Arc::clone(&slot)));
        Self {
            store,
            work: Box::new(work),
            output: Box::new(move || {
                slot.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take()
            }),
        }
    }

    /// The same work, its value passed through `f`.
    pub fn map<S: Send + 'static>(self, f: impl FnOnce(R) -> S + Send + 'static) -> TxWork<S> {
        let output = self.output;
        TxWork {
            store: self.store,
            work: self.work,
            output: Box::new(move || output().map(f)),
        }
    }

    /// Splits the work (for the store) from the reader of its value (for after the commit).
    pub(crate) fn detach(self) -> (TxWork, Box<dyn FnOnce() -> Option<R> + Send>) {
        (
            TxWork {
                store: self.store,
                work: self.work,
                output: Box::new(|| Some(())),
            },
            self.output,
        )
    }
}

impl<R> TxWork<R> {
    /// The name of the store this work was built for.
    pub fn store(&self) -> &'static str {
        self.store
    }

    /// The work as the store's own type `W`, or `self` back when it was built for another
    /// store (or as another type).
    pub fn downcast<W: Any>(self) -> Result<W, Self> {
        match self.work.downcast::<W>() {
            Ok(work) => Ok(*work),
            Err(work) => Err(Self {
                store: self.store,
                work,
                output: self.output,
            }),
        }
    }

    /// The error a store named `store` answers for work it cannot run.
    pub fn mismatch(&self, store: &'static str) -> super::ReplayError {
        super::ReplayError::TxMismatch {
            store,
            work: self.store,
        }
    }
}

impl<R> fmt::Debug for TxWork<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TxWork({})", self.store)
    }
}
