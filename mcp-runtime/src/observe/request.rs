//! The span (and metrics) of one dispatched request.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use futures::FutureExt as _;
use mcp_types::RequestId;
use tracing::Instrument as _;
use tracing::field::{Empty, display};

use super::{REQUEST_TARGET, micros};
use crate::Principal;
use crate::log_safe::LogSafe;
use crate::service::{Reply, ReplyKind};

/// Numbers requests within the process (only when a subscriber records spans).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

#[cfg(any(feature = "metrics", feature = "otel"))]
/// The method as a metrics label: one of the spec's methods, or `other` (a client picks the
/// method, and a label must not take unbounded values).
pub(crate) fn method_label(method: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        mcp_types::METHOD_TOOLS_CALL,
        mcp_types::METHOD_TOOLS_LIST,
        mcp_types::METHOD_SERVER_DISCOVER,
        mcp_types::METHOD_PROMPTS_LIST,
        mcp_types::METHOD_PROMPTS_GET,
        mcp_types::METHOD_RESOURCES_LIST,
        mcp_types::METHOD_RESOURCES_TEMPLATES_LIST,
        mcp_types::METHOD_RESOURCES_READ,
        mcp_types::METHOD_TASKS_GET,
        mcp_types::METHOD_TASKS_UPDATE,
        mcp_types::METHOD_TASKS_CANCEL,
        mcp_types::METHOD_COMPLETION_COMPLETE,
    ];
    KNOWN
        .iter()
        .find(|known| **known == method)
        .copied()
        .unwrap_or("other")
}

/// The request span with every field declared and none recorded; `$extra` adds fields.
macro_rules! request_span {
    ($($extra:tt)*) => {
        tracing::info_span!(
            target: REQUEST_TARGET,
            "mcp_request",
            request_id = Empty,
            jsonrpc_id = Empty,
            principal = Empty,
            method = Empty,
            target = Empty,
            outcome = Empty,
            error_code = Empty,
            refusal = Empty,
            mrtr_round = Empty,
            status = Empty,
            latency_us = Empty,
            $($extra)*
        )
    };
}

/// A new, empty request span.
#[cfg(not(feature = "otel"))]
fn new_span() -> tracing::Span {
    request_span!()
}

/// A new, empty request span, with the fields the OpenTelemetry bridge reads for the exported
/// span's name, kind and status (recorded only while an [`Otel`](super::otel::Otel) exports).
#[cfg(feature = "otel")]
fn new_span() -> tracing::Span {
    request_span!(
        otel.name = Empty,
        otel.kind = Empty,
        otel.status_code = Empty
    )
}

/// The span's `outcome` and `error_code` for a reply.
fn reply_outcome(reply: &Reply) -> (&'static str, Option<i64>) {
    match reply.kind {
        ReplyKind::Result if reply.input_required => ("input_required", None),
        ReplyKind::Result => ("complete", None),
        ReplyKind::Error { code } => ("error", Some(code.code())),
        ReplyKind::MalformedMeta => ("error", Some(mcp_types::ErrorCode::InvalidParams.code())),
        ReplyKind::Forbidden => (
            "forbidden",
            Some(mcp_types::ErrorCode::InvalidRequest.code()),
        ),
        ReplyKind::RateLimited { .. } => ("error", Some(mcp_types::ErrorCode::RateLimited.code())),
    }
}

/// The request span of a transport that knows more than the core about how a request ended
/// (Streamable HTTP: the status it answered with, a timeout, a client gone), so that one
/// request still makes one record. The transport opens it, hands it to the core through
/// [`RequestScope`](crate::service::RequestScope) (the core's [`RequestObserver`] adopts it:
/// it records the target, refusal and round into it but neither outcome nor closing event),
/// and closes it with [`TransportSpan::close`]. A service that ignores the hand-off (one of
/// your own) still gets its requests recorded once, by the transport.
#[cfg(feature = "http")]
pub(crate) struct TransportSpan {
    span: tracing::Span,
    started: Instant,
}

#[cfg(feature = "http")]
impl TransportSpan {
    /// Opens the span of a request that arrived at `started`.
    pub(crate) fn open(
        method: &str,
        id: &serde_json::Value,
        principal: &Principal,
        started: Instant,
    ) -> Self {
        let span = new_span();
        if !span.is_disabled() {
            span.record("request_id", NEXT_ID.fetch_add(1, Ordering::Relaxed));
            // Written as the core writes a `RequestId`, so a record reads alike on every transport.
            match RequestId::from_value(id) {
                Some(id) => span.record("jsonrpc_id", display(LogSafe(&id))),
                None => span.record("jsonrpc_id", display(LogSafe(id))),
            };
            span.record("principal", display(LogSafe(principal)));
            span.record("method", display(LogSafe(method)));
        }
        Self { span, started }
    }

    /// The span for the core to adopt; `None` when nobody records it (no allocation then).
    pub(crate) fn handoff(&self) -> Option<Box<tracing::Span>> {
        (!self.span.is_disabled()).then(|| Box::new(self.span.clone()))
    }

    /// Closes the record of a request answered with `reply` (`status`: the HTTP status it
    /// was sent with).
    pub(crate) fn answered(&self, status: u16, reply: &Reply) {
        let (outcome, code) = reply_outcome(reply);
        self.close(Some(status), outcome, code);
    }

    /// Closes the record: `outcome` (as the core's, or `timeout`), the error code, the HTTP
    /// status (none when the client left before one was sent) and the latency since arrival.
    pub(crate) fn close(&self, status: Option<u16>, outcome: &'static str, code: Option<i64>) {
        if self.span.is_disabled() {
            return;
        }
        #[cfg(feature = "otel")]
        super::otel::request_ended(&self.span, outcome, code);
        self.span.record("outcome", outcome);
        if let Some(code) = code {
            self.span.record("error_code", code);
        }
        if let Some(status) = status {
            self.span.record("status", status);
        }
        self.span.record("latency_us", micros(self.started));
        tracing::info!(target: REQUEST_TARGET, parent: &self.span, "mcp request finished");
    }
}

/// Watches one request from dispatch to reply: its span, and with the `metrics` feature the
/// in-flight gauge, request counters and latency histogram. Dropped before
/// [`RequestObserver::run`] finished (client gone, timeout), it records `cancelled`.
pub(crate) struct RequestObserver {
    span: tracing::Span,
    started: Option<Instant>,
    /// The method label, when metrics are recorded.
    #[cfg(feature = "metrics")]
    metered: Option<&'static str>,
    finished: bool,
    /// The span is a transport's ([`TransportSpan`]): it records the outcome and closes it.
    adopted: bool,
    /// The method label, for `mcp.server.operation.duration` (`otel` feature).
    #[cfg(feature = "otel")]
    method: Option<&'static str>,
}

impl RequestObserver {
    /// Opens the request's span, or adopts the transport's (`adopted`, see
    /// [`TransportSpan`]). `target` is asked for only when a subscriber records it.
    pub(crate) fn start<'t>(
        method: &str,
        id: &RequestId,
        principal: &Principal,
        target: impl FnOnce() -> Option<&'t str>,
        adopted: Option<Box<tracing::Span>>,
    ) -> Self {
        let (span, adopted) = match adopted {
            Some(span) => (*span, true),
            None => (new_span(), false),
        };
        let traced = !span.is_disabled();
        if traced {
            if !adopted {
                span.record("request_id", NEXT_ID.fetch_add(1, Ordering::Relaxed));
                span.record("jsonrpc_id", display(LogSafe(id)));
                span.record("principal", display(LogSafe(principal)));
                span.record("method", display(LogSafe(method)));
            }
            let target = target();
            if let Some(target) = target {
                span.record("target", display(LogSafe(target)));
            }
            span.record("mrtr_round", 0);
            #[cfg(feature = "otel")]
            super::otel::request_started(&span, method, id, target);
        }
        #[cfg(feature = "metrics")]
        let metered = super::metrics_on().then(|| method_label(method));
        #[cfg(feature = "metrics")]
        if metered.is_some() {
            metrics::gauge!("mcp_requests_in_flight").increment(1.0);
        }
        #[cfg(feature = "metrics")]
        let timed = traced || metered.is_some();
        #[cfg(not(feature = "metrics"))]
        let timed = traced;
        Self {
            span,
            started: timed.then(Instant::now),
            #[cfg(feature = "metrics")]
            metered,
            finished: false,
            adopted,
            #[cfg(feature = "otel")]
            method: super::otel::active().then(|| method_label(method)),
        }
    }

    /// Runs `work` in the request's span: the synchronous part of a request, before its
    /// future (which [`RequestObserver::run`] runs in the span) is made.
    pub(crate) fn in_span<R>(&self, work: impl FnOnce() -> R) -> R {
        self.span.in_scope(work)
    }

    /// Runs `work` inside the span and records its reply.
    ///
    /// A combinator, not an `async fn`: an `async fn` would keep `work` twice (once as its
    /// argument, once as the awaited future), and every request's future, allocated and copied
    /// once per request, would carry both. A disabled span costs a branch per poll.
    pub(crate) fn run<F>(mut self, work: F) -> impl Future<Output = Reply> + use<F>
    where
        F: Future<Output = Reply>,
    {
        let span = self.span.clone();
        work.instrument(span).map(move |reply| {
            let (outcome, code) = reply_outcome(&reply);
            self.finish(outcome, code);
            reply
        })
    }

    fn finish(&mut self, outcome: &'static str, code: Option<i64>) {
        self.finished = true;
        #[cfg(feature = "otel")]
        if !self.adopted {
            super::otel::request_ended(&self.span, outcome, code);
        }
        #[cfg(feature = "otel")]
        if let (Some(started), Some(method)) = (self.started, self.method) {
            super::otel::operation_duration(method, code, started.elapsed().as_secs_f64());
        }
        if !self.adopted && !self.span.is_disabled() {
            self.span.record("outcome", outcome);
            if let Some(code) = code {
                self.span.record("error_code", code);
            }
            if let Some(started) = self.started {
                self.span.record("latency_us", micros(started));
            }
            tracing::info!(target: REQUEST_TARGET, parent: &self.span, "mcp request finished");
        }
        #[cfg(feature = "metrics")]
        if let Some(method) = self.metered {
            metrics::gauge!("mcp_requests_in_flight").decrement(1.0);
            metrics::counter!("mcp_requests_total", "method" => method, "outcome" => outcome)
                .increment(1);
            if let Some(code) = code {
                metrics::counter!("mcp_request_errors_total", "method" => method, "code" => code.to_string())
                    .increment(1);
            }
            if let Some(started) = self.started {
                let seconds = started.elapsed().as_secs_f64();
                metrics::histogram!("mcp_request_duration_seconds", "method" => method)
                    .record(seconds);
                // The semantic conventions' `mcp.server.operation.duration`, as Prometheus names it.
                metrics::histogram!("mcp_server_operation_duration_seconds", "mcp_method_name" => method)
                    .record(seconds);
            }
        }
    }
}

impl Drop for RequestObserver {
    fn drop(&mut self) {
        if !self.finished {
            self.finish("cancelled", None);
        }
    }
}
