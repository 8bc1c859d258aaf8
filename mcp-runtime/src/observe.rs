//! What an operator can watch: one `tracing` span per request and, with the `metrics` feature,
//! counters, gauges and histograms through the [`metrics`](https://docs.rs/metrics) facade
//! (exported for Prometheus by [`PrometheusMetrics`]).
//!
//! # The request span
//!
//! Every JSON-RPC request the server dispatches, on every transport (stdio, Streamable HTTP,
//! the 2025-11-25 adapter), runs inside one span named `mcp_request` (target
//! [`REQUEST_TARGET`], level INFO), closed by one `mcp request finished` event, the request's
//! only INFO record (over Streamable HTTP the transport opens and closes the span, so the
//! status it answered with is in the same record), carrying:
//!
//! | field | value |
//! |---|---|
//! | `request_id` | a number unique within the process, to correlate a request's log lines |
//! | `jsonrpc_id` | the request's JSON-RPC `id` (client-chosen, escaped) |
//! | `principal` | who made it (escaped) |
//! | `method` | the JSON-RPC method (escaped) |
//! | `target` | the tool or prompt name, or the resource URI (client-chosen, escaped) |
//! | `outcome` | `complete`, `input_required`, `error` or `cancelled` (over HTTP also `timeout`: the request deadline passed) |
//! | `error_code` | the JSON-RPC error code, when `outcome` is `error` |
//! | `refusal` | why a retry's `requestState` was refused: a [`StateError::reason`](crate::state::StateError::reason) such as `arguments_changed` or `expired`, `already_used` (a one-time state used twice), `replayed` (an identical retry answered with the recorded outcome) or `max_rounds` |
//! | `mrtr_round` | which pass of a multi round-trip call this is: 0 for the first call, 1 for the first retry, ... |
//! | `status` | HTTP only: the status the response was sent with (absent when the client left first) |
//! | `latency_us` | microseconds: in the server core; over HTTP from the request's arrival to its reply |
//!
//! Client-controlled values are made log-safe (control characters escaped, length
//! bounded). Fields are recorded only when a subscriber is interested in the span: with no
//! subscriber, or a filter that excludes [`REQUEST_TARGET`] at INFO, nothing is formatted and
//! no clock is read (unless the `metrics` feature is on).
//!
//! # Metrics (feature `metrics`)
//!
//! Recorded through the `metrics` facade, so any recorder works; [`PrometheusMetrics`] installs the
//! Prometheus one. Names and labels (labels take a bounded set of values: a method outside
//! the spec's set is `other`; tool names are not labels):
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `mcp_requests_total` | counter | `method`, `outcome` (as the span's) |
//! | `mcp_request_errors_total` | counter | `method`, `code` (JSON-RPC error code) |
//! | `mcp_request_duration_seconds` | histogram | `method` |
//! | `mcp_requests_in_flight` | gauge | |
//! | `mcp_mrtr_rounds_total` | counter | `method`: input-required rounds issued |
//! | `mcp_mrtr_retries_total` | counter | `method`: retries whose `requestState` was accepted |
//! | `mcp_mrtr_claims_total` | counter | `result`: `claimed`, `already_used`, `rolled_back` (the work under the claim failed), `error` |
//! | `mcp_mrtr_refusals_total` | counter | `reason`: as the span's `refusal` |
//! | `mcp_replay_store_duration_seconds` | histogram | `op`: `claim`, `claim_with`, `claim_in_tx`, `recorded_outcome`, `record_outcome`, `ping` |
//! | `mcp_replay_store_errors_total` | counter | `op`, `reason` ([`ReplayError::reason`](crate::replay::ReplayError::reason)) |
//! | `mcp_rate_limit_checks_total` | counter | `result`: `allowed`, `limited` (refused with `-32023`), `store_error` (see [`rate_limit`](crate::rate_limit)) |
//! | `mcp_http_connections_open` | gauge | |
//! | `mcp_http_connections_total` | counter | |

#[cfg(feature = "metrics")]
mod prometheus;
mod request;

use std::time::Instant;

#[cfg(feature = "metrics")]
pub use prometheus::{InstallError, PrometheusMetrics};
pub(crate) use request::RequestObserver;
#[cfg(feature = "http")]
pub(crate) use request::TransportSpan;
#[cfg(feature = "metrics")]
use request::method_label;

/// The `tracing` target of the request span and its closing event.
pub const REQUEST_TARGET: &str = "mcp_runtime::request";

/// Whether metrics are recorded: off until a recorder is installed, so that a build with the
/// feature but no recorder builds no metric keys per request.
#[cfg(feature = "metrics")]
static METRICS_ON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Starts recording the runtime's metrics through the installed `metrics` recorder.
/// [`PrometheusMetrics::install`] calls it; call it yourself after installing
/// another recorder (until then nothing is recorded, at no cost per request).
#[cfg(feature = "metrics")]
pub fn enable_metrics() {
    METRICS_ON.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether [`enable_metrics`] was called.
#[cfg(feature = "metrics")]
#[inline]
pub(crate) fn metrics_on() -> bool {
    METRICS_ON.load(std::sync::atomic::Ordering::Relaxed)
}

/// Records why a retry was refused, on the current request span and in
/// `mcp_mrtr_refusals_total`.
pub(crate) fn refused(reason: &'static str) {
    let span = tracing::Span::current();
    if !span.is_disabled() {
        span.record("refusal", reason);
    }
    #[cfg(feature = "metrics")]
    if metrics_on() {
        metrics::counter!("mcp_mrtr_refusals_total", "reason" => reason).increment(1);
    }
}

/// Records that a retry's state was accepted: which pass this is (`round` of the state it
/// carried + 1).
pub(crate) fn retry_accepted(method: &'static str, state_round: u32) {
    let span = tracing::Span::current();
    if !span.is_disabled() {
        span.record("mrtr_round", state_round.saturating_add(1));
    }
    #[cfg(feature = "metrics")]
    if metrics_on() {
        metrics::counter!("mcp_mrtr_retries_total", "method" => method_label(method)).increment(1);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = method;
}

/// Records an input-required round issued for `method`.
pub(crate) fn round_issued(method: &'static str) {
    #[cfg(feature = "metrics")]
    if metrics_on() {
        metrics::counter!("mcp_mrtr_rounds_total", "method" => method_label(method)).increment(1);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = method;
}

/// Records the outcome of a claim: `claimed`, `already_used`, `rolled_back` or `error`.
pub(crate) fn claim(result: &'static str) {
    #[cfg(feature = "metrics")]
    if metrics_on() {
        metrics::counter!("mcp_mrtr_claims_total", "result" => result).increment(1);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = result;
}

/// Records one rate-limit check of a first `tools/call`: `allowed`, `limited` or
/// `store_error` (the store failed or missed its deadline).
pub(crate) fn rate_limit(result: &'static str) {
    #[cfg(feature = "metrics")]
    if metrics_on() {
        metrics::counter!("mcp_rate_limit_checks_total", "result" => result).increment(1);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = result;
}

/// Times one replay-store operation; a no-op without the `metrics` feature.
pub(crate) struct StoreTimer {
    #[cfg(feature = "metrics")]
    op: &'static str,
    #[cfg(feature = "metrics")]
    started: Option<Instant>,
}

impl StoreTimer {
    /// Starts timing `op`.
    pub(crate) fn start(op: &'static str) -> Self {
        #[cfg(not(feature = "metrics"))]
        let _ = op;
        Self {
            #[cfg(feature = "metrics")]
            op,
            #[cfg(feature = "metrics")]
            started: metrics_on().then(Instant::now),
        }
    }

    /// Records the operation's latency, and its error (by [`ReplayError::reason`]) if it
    /// failed.
    ///
    /// [`ReplayError::reason`]: crate::replay::ReplayError::reason
    pub(crate) fn done<T>(self, result: &Result<T, crate::replay::ReplayError>) {
        #[cfg(feature = "metrics")]
        if let Some(started) = self.started {
            metrics::histogram!("mcp_replay_store_duration_seconds", "op" => self.op)
                .record(started.elapsed().as_secs_f64());
            if let Err(e) = result {
                metrics::counter!("mcp_replay_store_errors_total", "op" => self.op, "reason" => e.reason())
                    .increment(1);
            }
        }
        #[cfg(not(feature = "metrics"))]
        let _ = result;
    }
}

/// Counts an open HTTP connection for as long as it lives.
#[cfg(feature = "http")]
pub(crate) struct OpenConnection {
    #[cfg(feature = "metrics")]
    metered: bool,
}

#[cfg(feature = "http")]
impl OpenConnection {
    /// A connection was accepted.
    pub(crate) fn new() -> Self {
        #[cfg(feature = "metrics")]
        let metered = metrics_on();
        #[cfg(feature = "metrics")]
        if metered {
            metrics::gauge!("mcp_http_connections_open").increment(1.0);
            metrics::counter!("mcp_http_connections_total").increment(1);
        }
        Self {
            #[cfg(feature = "metrics")]
            metered,
        }
    }
}

#[cfg(feature = "http")]
impl Drop for OpenConnection {
    fn drop(&mut self) {
        #[cfg(feature = "metrics")]
        if self.metered {
            metrics::gauge!("mcp_http_connections_open").decrement(1.0);
        }
    }
}

/// Microseconds since `started`, saturating.
fn micros(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}
