//! The HTTP adapter's table of live 2025-11-25 sessions: entries, idle expiry, the
//! per-principal and server-wide caps, and session ids.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;

use super::session::LegacySession;
use crate::Principal;
use crate::transport::pipeline::{InFlight, Ticket};

/// One live session and its HTTP bookkeeping.
pub(super) struct Entry {
    pub(super) session: Arc<LegacySession>,
    pub(super) last_used: Mutex<Instant>,
    /// Requests of this session still running (a busy session never expires).
    pub(super) busy: AtomicUsize,
    /// The running requests, by JSON-RPC id (the transports' one in-flight registry: a
    /// duplicate id is refused, `notifications/cancelled` finds the right request).
    pub(super) in_flight: Arc<InFlight>,
}

impl Entry {
    pub(super) fn touch(&self) {
        *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    pub(super) fn expired(&self, ttl: Duration) -> bool {
        self.busy.load(Ordering::SeqCst) == 0
            && self
                .last_used
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .elapsed()
                > ttl
    }

    /// Ends the session: waiting server-to-client requests fail, running requests are cancelled.
    pub(super) fn end(&self) {
        self.session.close();
        self.in_flight.cancel_all();
    }
}

/// The bounds of the session table (from `LegacyHttpConfig`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Caps {
    /// Sessions idle longer than this expire.
    pub(super) idle_ttl: Duration,
    /// Most sessions one principal holds.
    pub(super) per_principal: usize,
    /// Most sessions in all.
    pub(super) total: usize,
}

/// Makes room for one more session of `principal`: drops expired sessions, then, when the
/// principal already holds `caps.per_principal` sessions, ends its least recently used idle one
/// (a client that never sends `DELETE` only crowds itself out). `false` when the server-wide
/// bound is still reached (or all the principal's sessions are busy).
pub(super) fn make_room(
    sessions: &mut HashMap<String, Arc<Entry>>,
    principal: &Principal,
    caps: Caps,
) -> bool {
    sessions.retain(|_, entry| {
        let keep = !entry.expired(caps.idle_ttl);
        if !keep {
            entry.end();
        }
        keep
    });
    let mine: Vec<(&String, &Arc<Entry>)> = sessions
        .iter()
        .filter(|(_, e)| e.session.principal() == principal)
        .collect();
    if mine.len() >= caps.per_principal.max(1) {
        let oldest_idle = mine
            .iter()
            .filter(|(_, e)| e.busy.load(Ordering::SeqCst) == 0)
            .min_by_key(|(_, e)| *e.last_used.lock().unwrap_or_else(PoisonError::into_inner))
            .map(|(sid, _)| (*sid).clone());
        let Some(sid) = oldest_idle else {
            return false;
        };
        if let Some(entry) = sessions.remove(&sid) {
            entry.end();
        }
    }
    sessions.len() < caps.total
}

pub(super) fn mint_session_id() -> Result<String, getrandom::Error> {
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw)?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw))
}

/// Keeps the session marked busy while a request runs; unmarks it however the run ends.
/// Holds the request's in-flight slot too, freed (and its token cancelled) first.
pub(super) struct Busy {
    pub(super) entry: Arc<Entry>,
    pub(super) ticket: Option<Ticket>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        drop(self.ticket.take());
        self.entry.touch();
        self.entry.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn session_ids_are_long_random_and_header_safe() {
        let a = mint_session_id().unwrap();
        let b = mint_session_id().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 43); // 256 bits, base64url without padding
        assert!(HeaderValue::from_str(&a).is_ok());
    }
}
