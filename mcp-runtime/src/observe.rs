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
//! | `mcp_server_operation_duration_seconds` | histogram | `mcp_method_name` (the semantic conventions' `mcp.server.operation.duration`) |
//! | `mcp_flows_started_total` | counter | (none): multi round-trip flows begun (a first call answered with an input request) |
//! | `mcp_flows_answered_total` | counter | `action`: `accepted`, `declined`, `cancelled` (elicitation answers read) |
//! | `mcp_flow_rounds` | histogram | (none): rounds of input a flow took, when a retry that answered one ends with a result |
//!
//! | `mcp_flows_abandoned_total` | counter | (none): flows asked and never answered before their `requestState` expired, counted once across the fleet; only with [`ServerBuilder::count_abandoned_flows`](crate::server::ServerBuilder::count_abandoned_flows) |
//!
//! A state lives in the client's hands until a retry brings it back, so abandonment is only
//! seen through a shared record of issued states: with
//! [`ServerBuilder::count_abandoned_flows`](crate::server::ServerBuilder::count_abandoned_flows)
//! each input-required reply records its state's nonce and expiry in the replay store's
//! [`FlowLedger`](crate::replay::FlowLedger), a retry removes it, and a periodic sweep on
//! every instance atomically takes expired entries, so each abandoned flow is counted by
//! exactly one instance (a flow whose latest state expired: one re-asked or carried into a
//! further round counts once). Without it, `mcp_flows_abandoned_total` is never emitted.
//!
//! # OpenTelemetry (feature `otel`)
//!
//! [`otel::Otel::start`] exports over OTLP HTTP/protobuf; add [`otel::Otel::layer`] to the
//! application's `tracing` subscriber and call [`otel::Otel::shutdown`] on the way out.
//! Spans and metrics follow the OpenTelemetry semantic conventions for MCP
//! ([`otel::SEMCONV_VERSION`]). Each request span becomes a `SERVER` span named
//! `{mcp.method.name} {target}` (`tools/call notes_delete`; the method alone when there is no
//! tool or prompt name), with `mcp.method.name`, `jsonrpc.request.id`, `gen_ai.tool.name` and
//! `gen_ai.operation.name` = `execute_tool` (tool calls), `gen_ai.prompt.name`,
//! `mcp.resource.uri`, `error.type` and `rpc.response.status_code` (errors, status `ERROR`),
//! the `tracing` fields above, and ours:
//!
//! | attribute | value |
//! |---|---|
//! | `mcp_runtime.outcome` | as the span's `outcome` |
//! | `mcp_runtime.mrtr.round` | the pass of a retry whose state was accepted (1, 2, ...) |
//! | `mcp_runtime.mrtr.input_kinds` | what an input-required reply asked: `form`, `url`, `sampling`, `roots` |
//! | `mcp_runtime.mrtr.asked_round` | the round of the state that reply carries |
//! | `mcp_runtime.mrtr.outcome` | `accepted`, `declined`, `cancelled` (the answer read), `replayed`, `refused` (then `mcp_runtime.mrtr.refusal` says why, as `refusal` above); the last one of the request |
//! | `mcp_runtime.store.{claim,claim_with,claim_in_tx,recorded_outcome,record_outcome}_ms` | the replay store's latency per operation |
//! | `mcp_runtime.store.error` | a failed store operation's reason |
//!
//! Client-chosen text (tool names, URIs, request ids) is cut to 128 bytes; every other value
//! comes from a fixed set. No token, secret or `requestState` is ever an attribute.
//!
//! **Trace context in.** On every transport the core reads W3C `traceparent`/`tracestate`
//! from `params._meta` (SEP-414: unprefixed keys) and, from
//! transports that carry them, HTTP headers
//! ([`RequestScope::with_trace_context`](crate::service::RequestScope::with_trace_context));
//! malformed values are ignored ([`TraceContext::parse`]), never an error. The parent is
//! `_meta`'s, else the header's; when both came, the header's is a link.
//!
//! **Baggage in.** W3C `baggage` is read the same way (`_meta`'s, else the HTTP `baggage`
//! header's, [`RequestScope::with_baggage`](crate::service::RequestScope::with_baggage)) by a
//! bounded parser ([`Baggage::parse`]: at most [`MAX_BAGGAGE_LEN`] bytes and
//! [`MAX_BAGGAGE_MEMBERS`] members, malformed members skipped, never an error) and joins the
//! OpenTelemetry context of the request span as baggage (where
//! `opentelemetry::Context::current().baggage()` finds it; the SDK keeps at most 64 entries).
//! It never becomes span attributes: client-chosen names would make an unbounded attribute
//! set. With baggage and no parent to take, the request span starts a trace of its own.
//!
//! **One trace per flow.** An input-required reply seals its span's trace and span ids
//! into the `requestState` ([`FlowTrace`], 25 bytes). A retry's span,
//! on any instance, links to that root (link attribute `mcp_runtime.link` = `flow_root`), and
//! when the client sent no trace context it is the root's child, in the root's trace. So a
//! deletion flow (ask, confirm, even on another instance) is one trace.
//!
//! **Metrics** through OTLP too: `mcp.server.operation.duration` (seconds; `mcp.method.name`,
//! `gen_ai.operation.name`, `error.type`), `mcp_runtime.flows.started`,
//! `mcp_runtime.flows.answered` (`action`), `mcp_runtime.flows.abandoned` (with
//! [`ServerBuilder::count_abandoned_flows`](crate::server::ServerBuilder::count_abandoned_flows)),
//! `mcp_runtime.flow.rounds`,
//! `mcp_runtime.mrtr.refusals` (`reason`).
//!
//! **Bounded.** Spans go through the SDK's batch processor: a queue of `OTEL_BSP_MAX_QUEUE_SIZE`
//! (default 2,048) finished spans, exported on its own thread; when the collector is slow or
//! away, spans past the queue are dropped, and a request never waits for export.

mod baggage;
#[cfg(feature = "otel")]
pub mod otel;
#[cfg(feature = "metrics")]
mod prometheus;
mod request;
mod trace_context;

use std::time::Instant;

pub use baggage::{Baggage, MAX_BAGGAGE_LEN, MAX_BAGGAGE_MEMBERS};
#[cfg(feature = "metrics")]
pub use prometheus::{InstallError, PrometheusMetrics};
pub(crate) use request::RequestObserver;
#[cfg(feature = "http")]
pub(crate) use request::TransportSpan;
#[cfg(any(feature = "metrics", feature = "otel"))]
use request::method_label;
pub use trace_context::{MAX_TRACESTATE_LEN, MAX_TRACESTATE_MEMBERS, TraceContext};

use crate::state::FlowTrace;

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
    #[cfg(feature = "otel")]
    {
        otel::attribute(
            "mcp_runtime.mrtr.outcome",
            if reason == "replayed" {
                "replayed"
            } else {
                "refused"
            },
        );
        otel::attribute("mcp_runtime.mrtr.refusal", reason);
        otel::refusal(reason);
    }
}

/// Gives the current request span its parent, links and baggage from the request's trace
/// context (`_meta`'s SEP-414 keys, else the transport's, e.g. HTTP headers) and from the flow
/// its verified `requestState` belongs to. Only the `otel` feature acts on it.
#[inline]
pub(crate) fn trace_in(
    meta: &mcp_types::JsonObject,
    transport: Option<&TraceContext>,
    transport_baggage: Option<&Baggage>,
    flow: Option<FlowTrace>,
) {
    #[cfg(feature = "otel")]
    if otel::active() {
        // `_meta`'s baggage, else the transport's (as for the parent): never merged, so one
        // list's bounds hold.
        let baggage = Baggage::from_meta(meta);
        otel::adopt(
            TraceContext::from_meta(meta).as_ref(),
            transport,
            baggage.as_ref().or(transport_baggage),
            flow,
        );
    }
    #[cfg(not(feature = "otel"))]
    let _ = (meta, transport, transport_baggage, flow);
}

/// The ids to seal into a new flow's state: the current request span's, when it is exported
/// (`otel` feature); `None` otherwise.
#[inline]
pub(crate) fn flow_to_seal() -> Option<FlowTrace> {
    #[cfg(feature = "otel")]
    return otel::current_flow();
    #[cfg(not(feature = "otel"))]
    None
}

/// Records a new multi round-trip flow: a first call answered with an input request.
pub(crate) fn flow_started() {
    #[cfg(feature = "metrics")]
    if metrics_on() {
        metrics::counter!("mcp_flows_started_total").increment(1);
    }
    #[cfg(feature = "otel")]
    otel::flow_started();
}

/// Records `count` abandoned flows taken by one sweep of the flow ledger (also 0, so that the
/// series exists once counting is on).
pub(crate) fn flows_abandoned(count: u64) {
    #[cfg(feature = "metrics")]
    if metrics_on() {
        metrics::counter!("mcp_flows_abandoned_total").increment(count);
    }
    #[cfg(feature = "otel")]
    otel::flows_abandoned(count);
    #[cfg(not(any(feature = "metrics", feature = "otel")))]
    let _ = count;
}

/// Records what this pass asked for: the kinds of its input requests (`form`, `url`,
/// `sampling`, `roots`; a bounded set) and the round it asks in.
#[cfg(feature = "otel")]
pub(crate) fn inputs_asked(kinds: &[&'static str], round: u32) {
    let kinds: Vec<opentelemetry::StringValue> = kinds.iter().map(|k| (*k).into()).collect();
    otel::attribute(
        "mcp_runtime.mrtr.input_kinds",
        opentelemetry::Value::Array(kinds.into()),
    );
    otel::attribute("mcp_runtime.mrtr.asked_round", i64::from(round));
}

/// Records the user's answer to an input request: `accepted`, `declined` or `cancelled`.
pub(crate) fn answered(action: &'static str) {
    #[cfg(feature = "metrics")]
    if metrics_on() {
        metrics::counter!("mcp_flows_answered_total", "action" => action).increment(1);
    }
    #[cfg(feature = "otel")]
    {
        otel::attribute("mcp_runtime.mrtr.outcome", action);
        otel::flow_answered(action);
    }
    #[cfg(not(any(feature = "metrics", feature = "otel")))]
    let _ = action;
}

/// Records a flow that ended with a result after `rounds` rounds of input.
pub(crate) fn flow_ended(rounds: u32) {
    #[cfg(feature = "metrics")]
    if metrics_on() {
        metrics::histogram!("mcp_flow_rounds").record(f64::from(rounds));
    }
    #[cfg(feature = "otel")]
    otel::flow_ended(rounds);
    #[cfg(not(any(feature = "metrics", feature = "otel")))]
    let _ = rounds;
}

/// Records that a retry's state was accepted: which pass this is (`round` of the state it
/// carried + 1).
pub(crate) fn retry_accepted(method: &'static str, state_round: u32) {
    let span = tracing::Span::current();
    if !span.is_disabled() {
        span.record("mrtr_round", state_round.saturating_add(1));
    }
    #[cfg(feature = "otel")]
    {
        otel::attribute(
            "mcp_runtime.mrtr.round",
            i64::from(state_round.saturating_add(1)),
        );
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
    #[cfg(any(feature = "metrics", feature = "otel"))]
    op: &'static str,
    #[cfg(any(feature = "metrics", feature = "otel"))]
    started: Option<Instant>,
}

impl StoreTimer {
    /// Starts timing `op`.
    pub(crate) fn start(op: &'static str) -> Self {
        #[cfg(not(any(feature = "metrics", feature = "otel")))]
        let _ = op;
        #[cfg(feature = "metrics")]
        let timed = metrics_on();
        #[cfg(all(feature = "otel", not(feature = "metrics")))]
        let timed = false;
        // With `otel`, timed whenever the request span is recorded (its store latency).
        #[cfg(feature = "otel")]
        let timed = timed || (otel::active() && !tracing::Span::current().is_disabled());
        Self {
            #[cfg(any(feature = "metrics", feature = "otel"))]
            op,
            #[cfg(any(feature = "metrics", feature = "otel"))]
            started: timed.then(Instant::now),
        }
    }

    /// Records the operation's latency, and its error (by [`ReplayError::reason`]) if it
    /// failed.
    ///
    /// [`ReplayError::reason`]: crate::replay::ReplayError::reason
    pub(crate) fn done<T>(self, result: &Result<T, crate::replay::ReplayError>) {
        #[cfg(feature = "metrics")]
        if let Some(started) = self.started
            && metrics_on()
        {
            metrics::histogram!("mcp_replay_store_duration_seconds", "op" => self.op)
                .record(started.elapsed().as_secs_f64());
            if let Err(e) = result {
                metrics::counter!("mcp_replay_store_errors_total", "op" => self.op, "reason" => e.reason())
                    .increment(1);
            }
        }
        #[cfg(feature = "otel")]
        if let Some(started) = self.started {
            // One attribute per operation (a bounded set): its latency in milliseconds.
            let key = match self.op {
                "claim" => "mcp_runtime.store.claim_ms",
                "claim_with" => "mcp_runtime.store.claim_with_ms",
                "claim_in_tx" => "mcp_runtime.store.claim_in_tx_ms",
                "recorded_outcome" => "mcp_runtime.store.recorded_outcome_ms",
                "record_outcome" => "mcp_runtime.store.record_outcome_ms",
                _ => "mcp_runtime.store.other_ms",
            };
            otel::attribute(key, started.elapsed().as_secs_f64() * 1000.0);
            if let Err(e) = result {
                otel::attribute("mcp_runtime.store.error", e.reason());
            }
        }
        #[cfg(not(any(feature = "metrics", feature = "otel")))]
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
