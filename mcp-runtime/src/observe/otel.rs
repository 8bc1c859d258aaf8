//! OpenTelemetry export (feature `otel`): the request spans and the flow metrics, over OTLP
//! HTTP/protobuf.
//!
//! [`Otel::start`] builds the exporters from an [`OtelConfig`]; [`Otel::layer`] is the
//! `tracing` layer to add to the application's subscriber; [`Otel::shutdown`] flushes what
//! is queued. See [the module docs](super#opentelemetry-feature-otel) for what is exported.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanProcessor,
};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::TraceContext;
use crate::state::FlowTrace;

/// The version of the OpenTelemetry semantic conventions for MCP the spans and metrics follow
/// (`open-telemetry/semantic-conventions-genai`, docs/gen-ai/mcp.md; status Development).
pub const SEMCONV_VERSION: &str = "semantic-conventions-genai v0.1.0";

/// The instrumentation scope name of the runtime's tracer and meter.
const SCOPE: &str = "mcp-runtime";

/// Whether an [`Otel`] was started: until then the request path does no OpenTelemetry work
/// at all (a build with the feature whose application exports nothing pays a load per hook).
static ACTIVE: AtomicBool = AtomicBool::new(false);

#[inline]
pub(crate) fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Longest client-chosen text (tool name, resource URI) put into a span name or attribute.
const MAX_ATTR_LEN: usize = 128;

/// How OpenTelemetry export is set up. A setting left unset takes the standard `OTEL_*`
/// environment variable, else the SDK's default: the endpoint, headers and timeout
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
/// `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`, default
/// `http://localhost:4318`, 10 s), the resource (`OTEL_SERVICE_NAME`,
/// `OTEL_RESOURCE_ATTRIBUTES`), the span queue and batches (`OTEL_BSP_MAX_QUEUE_SIZE` 2,048,
/// `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` 512, `OTEL_BSP_SCHEDULE_DELAY` 5 s) and the metrics
/// interval (`OTEL_METRIC_EXPORT_INTERVAL`, 60 s).
#[derive(Debug, Clone, Default)]
pub struct OtelConfig {
    endpoint: Option<String>,
    service_name: Option<String>,
    resource: Vec<(String, String)>,
    max_queue_size: Option<usize>,
    max_export_batch_size: Option<usize>,
    scheduled_delay: Option<Duration>,
    export_timeout: Option<Duration>,
    metrics_interval: Option<Duration>,
    no_metrics: bool,
}

impl OtelConfig {
    /// Everything from the environment and the SDK's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// The collector's base URL, e.g. `http://127.0.0.1:4318`: spans go to `/v1/traces`,
    /// metrics to `/v1/metrics` under it (as with `OTEL_EXPORTER_OTLP_ENDPOINT`, which this
    /// replaces, signal-specific variables included).
    #[must_use]
    pub fn endpoint(mut self, base_url: impl Into<String>) -> Self {
        self.endpoint = Some(base_url.into());
        self
    }

    /// The `service.name` resource attribute (else `OTEL_SERVICE_NAME`, else the SDK's
    /// `unknown_service`).
    #[must_use]
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    /// One more resource attribute (beside those of `OTEL_RESOURCE_ATTRIBUTES`), e.g.
    /// `deployment.environment.name`.
    #[must_use]
    pub fn resource_attribute(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.resource.push((key.into(), value.into()));
        self
    }

    /// The most finished spans held while the collector is slow or away (at least 1).
    /// Past it, new spans are dropped: the server never waits for the collector and never
    /// holds more than this.
    #[must_use]
    pub fn max_queue_size(mut self, spans: usize) -> Self {
        self.max_queue_size = Some(spans.max(1));
        self
    }

    /// The most spans sent in one export (capped at the queue size).
    #[must_use]
    pub fn max_export_batch_size(mut self, spans: usize) -> Self {
        self.max_export_batch_size = Some(spans.max(1));
        self
    }

    /// How long spans wait for a batch to fill before they are sent anyway.
    #[must_use]
    pub fn scheduled_delay(mut self, delay: Duration) -> Self {
        self.scheduled_delay = Some(delay);
        self
    }

    /// The deadline of one export request to the collector.
    #[must_use]
    pub fn export_timeout(mut self, timeout: Duration) -> Self {
        self.export_timeout = Some(timeout);
        self
    }

    /// How often metrics are sent.
    #[must_use]
    pub fn metrics_interval(mut self, interval: Duration) -> Self {
        self.metrics_interval = Some(interval);
        self
    }

    /// Sends no metrics over OTLP (spans only).
    #[must_use]
    pub fn without_metrics(mut self) -> Self {
        self.no_metrics = true;
        self
    }
}

/// Why OpenTelemetry export could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// An exporter could not be built (a malformed endpoint URL or `OTEL_EXPORTER_OTLP_*`
    /// value); the message names it.
    #[error(
        "cannot set up OTLP export: {0}; check --otlp-endpoint and the OTEL_EXPORTER_OTLP_* variables"
    )]
    Build(String),
    /// Flushing on shutdown failed or timed out (what was queued may be lost).
    #[error("OTLP export did not flush on shutdown: {0}")]
    Shutdown(String),
}

/// OpenTelemetry export: a tracer provider whose spans go through a batch span processor,
/// and a meter provider with a periodic reader, both over OTLP HTTP/protobuf on threads of
/// their own (the server's runtime never waits for the collector).
///
/// Two steps, for processes that must start threads late (a Landlock sandbox refuses to
/// confine a process that already runs several): [`Otel::prepare`] builds the tracer (no
/// thread), so that its [`layer`](Otel::layer) can join the subscriber at once, and
/// [`Otel::start_export`] starts the exporters and their threads. [`Otel::start`] does both.
/// Spans that end before export starts are dropped. The first `Otel` whose export starts
/// also records the runtime's flow metrics.
#[derive(Debug)]
pub struct Otel {
    config: OtelConfig,
    resource: Resource,
    tracer: SdkTracerProvider,
    spans: Arc<OnceLock<BatchSpanProcessor>>,
    meter: OnceLock<SdkMeterProvider>,
}

/// The tracer provider's processor: the batch processor once [`Otel::start_export`] made it,
/// nothing before.
#[derive(Debug)]
struct Deferred(Arc<OnceLock<BatchSpanProcessor>>);

impl SpanProcessor for Deferred {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &Context) {
        if let Some(inner) = self.0.get() {
            inner.on_start(span, cx);
        }
    }

    fn on_end(&self, mut span: SpanData) {
        if let Some(inner) = self.0.get() {
            last_wins(&mut span.attributes);
            inner.on_end(span);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.get().map_or(Ok(()), BatchSpanProcessor::force_flush)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0
            .get()
            .map_or(Ok(()), |inner| inner.shutdown_with_timeout(timeout))
    }
}

/// Keeps the last value of each attribute key: an attribute set again as the request goes on
/// (its outcome after an answer, say) is appended by the SDK, not replaced, and a backend
/// would show either.
fn last_wins(attributes: &mut Vec<KeyValue>) {
    let mut i = 0;
    while i < attributes.len() {
        if attributes[i + 1..]
            .iter()
            .any(|kv| kv.key == attributes[i].key)
        {
            attributes.remove(i);
        } else {
            i += 1;
        }
    }
}

impl Otel {
    /// [`Otel::prepare`] then [`Otel::start_export`]: export starts now, threads included
    /// (it does not block, and may be called inside or outside an async runtime).
    ///
    /// # Errors
    /// [`OtelError::Build`] for a malformed endpoint or environment variable.
    pub fn start(config: OtelConfig) -> Result<Self, OtelError> {
        let otel = Self::prepare(config);
        otel.start_export()?;
        Ok(otel)
    }

    /// The tracer and its [`layer`](Otel::layer), without starting any thread or exporter
    /// (see [`Otel::start_export`]).
    pub fn prepare(config: OtelConfig) -> Self {
        let mut resource = Resource::builder();
        if let Some(name) = &config.service_name {
            resource = resource.with_service_name(name.clone());
        }
        let resource = resource
            .with_attributes(
                config
                    .resource
                    .iter()
                    .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
            )
            .build();
        let spans = Arc::new(OnceLock::new());
        let tracer = SdkTracerProvider::builder()
            .with_span_processor(Deferred(Arc::clone(&spans)))
            .with_resource(resource.clone())
            .build();
        Self {
            config,
            resource,
            tracer,
            spans,
            meter: OnceLock::new(),
        }
    }

    /// Builds the exporters and starts their threads; from now on spans and metrics are sent.
    /// Calling it again does nothing.
    ///
    /// # Errors
    /// [`OtelError::Build`] for a malformed endpoint or environment variable.
    pub fn start_export(&self) -> Result<(), OtelError> {
        if self.spans.get().is_some() {
            return Ok(());
        }
        let config = &self.config;
        let url = |path: &str| {
            config
                .endpoint
                .as_ref()
                .map(|base| format!("{}{path}", base.trim_end_matches('/')))
        };

        let mut spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary);
        if let Some(timeout) = config.export_timeout {
            spans = spans.with_timeout(timeout);
        }
        if let Some(url) = url("/v1/traces") {
            spans = spans.with_endpoint(url);
        }
        let spans = spans.build().map_err(|e| OtelError::Build(e.to_string()))?;
        // The SDK's builder starts from the OTEL_BSP_* variables; set values override them.
        // Its `build` keeps the batch no larger than the queue.
        let mut batch = BatchConfigBuilder::default();
        if let Some(size) = config.max_queue_size {
            batch = batch.with_max_queue_size(size);
        }
        if let Some(size) = config.max_export_batch_size {
            batch = batch.with_max_export_batch_size(size);
        }
        if let Some(delay) = config.scheduled_delay {
            batch = batch.with_scheduled_delay(delay);
        }
        let mut processor = BatchSpanProcessor::builder(spans)
            .with_batch_config(batch.build())
            .build();
        processor.set_resource(&self.resource);

        if !config.no_metrics && self.meter.get().is_none() {
            let mut metrics = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary);
            if let Some(timeout) = config.export_timeout {
                metrics = metrics.with_timeout(timeout);
            }
            if let Some(url) = url("/v1/metrics") {
                metrics = metrics.with_endpoint(url);
            }
            let metrics = metrics
                .build()
                .map_err(|e| OtelError::Build(e.to_string()))?;
            let mut reader = PeriodicReader::builder(metrics);
            if let Some(interval) = config.metrics_interval {
                reader = reader.with_interval(interval);
            }
            let meter = SdkMeterProvider::builder()
                .with_reader(reader.build())
                .with_resource(self.resource.clone())
                .build();
            let _ = INSTRUMENTS.set(Instruments::new(&meter));
            let _ = self.meter.set(meter);
        }
        // Set once; a concurrent second call's processor is dropped unused.
        let _ = self.spans.set(processor);
        ACTIVE.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// The `tracing` layer that turns the runtime's request spans (and any other span the
    /// application's subscriber passes it) into OpenTelemetry spans. Add it to the
    /// application's subscriber, e.g.
    /// `tracing_subscriber::registry().with(fmt_layer).with(otel.layer()).init()`.
    ///
    /// It does not make a span current in OpenTelemetry's context when `tracing` enters it
    /// (`with_context_activation(false)`): the runtime decides a request span's parent after
    /// it has read the request's trace context and `requestState`, which must happen before
    /// the OpenTelemetry span starts. A layer of your own with activation on still works; a
    /// retry then links to its flow instead of joining its trace.
    pub fn layer<S>(&self) -> impl tracing_subscriber::Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.tracer.tracer(SCOPE))
            .with_context_activation(false)
            .with_location(false)
            .with_threads(false)
            .with_level(false)
            .with_target(false)
            .with_tracked_inactivity(false)
    }

    /// Sends what is queued and stops the exporters, waiting at most `deadline` for each
    /// signal. Blocking: from async code, call it inside `tokio::task::spawn_blocking` (or
    /// after the runtime has stopped).
    ///
    /// # Errors
    /// [`OtelError::Shutdown`] when a flush failed or missed its deadline.
    pub fn shutdown(self, deadline: Duration) -> Result<(), OtelError> {
        let spans = self.tracer.shutdown_with_timeout(deadline);
        let metrics = match self.meter.get() {
            Some(meter) => meter.shutdown_with_timeout(deadline),
            None => Ok(()),
        };
        spans
            .and(metrics)
            .map_err(|e| OtelError::Shutdown(e.to_string()))
    }
}

/// The runtime's OpenTelemetry instruments (the first started [`Otel`]'s meter).
struct Instruments {
    duration: opentelemetry::metrics::Histogram<f64>,
    flows_started: opentelemetry::metrics::Counter<u64>,
    flows_abandoned: opentelemetry::metrics::Counter<u64>,
    flows_answered: opentelemetry::metrics::Counter<u64>,
    flow_rounds: opentelemetry::metrics::Histogram<u64>,
    refusals: opentelemetry::metrics::Counter<u64>,
}

static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();

impl Instruments {
    fn new(provider: &SdkMeterProvider) -> Self {
        use opentelemetry::metrics::MeterProvider as _;
        let meter = provider.meter(SCOPE);
        Self {
            duration: meter
                .f64_histogram("mcp.server.operation.duration")
                .with_unit("s")
                .with_description("MCP request duration as observed on the receiver")
                .with_boundaries(vec![
                    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                    10.0, 30.0, 60.0, 300.0,
                ])
                .build(),
            flows_started: meter
                .u64_counter("mcp_runtime.flows.started")
                .with_description(
                    "multi round-trip flows begun: first calls answered with an input request",
                )
                .build(),
            flows_abandoned: meter
                .u64_counter("mcp_runtime.flows.abandoned")
                .with_description(
                    "flows asked and never answered before their state expired, counted once fleet-wide",
                )
                .build(),
            flows_answered: meter
                .u64_counter("mcp_runtime.flows.answered")
                .with_description("input requests answered, by the user's action")
                .build(),
            flow_rounds: meter
                .u64_histogram("mcp_runtime.flow.rounds")
                .with_description(
                    "rounds of input a flow took, recorded when it ends with a result",
                )
                .with_boundaries(vec![1.0, 2.0, 3.0, 4.0, 5.0, 8.0, 16.0])
                .build(),
            refusals: meter
                .u64_counter("mcp_runtime.mrtr.refusals")
                .with_description("retries whose requestState was refused, by reason")
                .build(),
        }
    }
}

/// Records a request's duration in `mcp.server.operation.duration`.
pub(crate) fn operation_duration(method: &'static str, error_code: Option<i64>, seconds: f64) {
    if let Some(i) = INSTRUMENTS.get() {
        let mut attrs = vec![KeyValue::new("mcp.method.name", method)];
        if method == mcp_types::METHOD_TOOLS_CALL {
            attrs.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        if let Some(code) = error_code {
            attrs.push(KeyValue::new("error.type", code.to_string()));
        }
        i.duration.record(seconds, &attrs);
    }
}

/// Counts a flow begun.
pub(crate) fn flow_started() {
    if let Some(i) = INSTRUMENTS.get() {
        i.flows_started.add(1, &[]);
    }
}

/// Counts abandoned flows one sweep took (also 0: the series exists once counting is on).
pub(crate) fn flows_abandoned(count: u64) {
    if let Some(i) = INSTRUMENTS.get() {
        i.flows_abandoned.add(count, &[]);
    }
}

/// Counts an answer, by action (`accepted`, `declined`, `cancelled`).
pub(crate) fn flow_answered(action: &'static str) {
    if let Some(i) = INSTRUMENTS.get() {
        i.flows_answered.add(1, &[KeyValue::new("action", action)]);
    }
}

/// Records how many rounds a flow took, when it ended with a result.
pub(crate) fn flow_ended(rounds: u32) {
    if let Some(i) = INSTRUMENTS.get() {
        i.flow_rounds.record(u64::from(rounds), &[]);
    }
}

/// Counts a refused retry, by reason.
pub(crate) fn refusal(reason: &'static str) {
    if let Some(i) = INSTRUMENTS.get() {
        i.refusals.add(1, &[KeyValue::new("reason", reason)]);
    }
}

/// Client-chosen text cut to [`MAX_ATTR_LEN`] bytes (on a character boundary).
fn bounded(text: &str) -> String {
    let mut end = text.len().min(MAX_ATTR_LEN);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Names a new request span and sets its semantic-convention attributes: `mcp.method.name`,
/// `jsonrpc.request.id`, and for a tool call `gen_ai.tool.name` and `gen_ai.operation.name`
/// (`execute_tool`), for a prompt `gen_ai.prompt.name`, for a resource `mcp.resource.uri`.
pub(crate) fn request_started(
    span: &tracing::Span,
    method: &str,
    id: &dyn std::fmt::Display,
    target: Option<&str>,
) {
    if !active() || span.is_disabled() {
        return;
    }
    let method_label = super::method_label(method);
    let target = target.map(bounded);
    let name = match (&target, method) {
        (Some(t), mcp_types::METHOD_TOOLS_CALL | mcp_types::METHOD_PROMPTS_GET) => {
            format!("{method_label} {t}")
        }
        _ => method_label.to_owned(),
    };
    span.record("otel.name", name.as_str());
    span.record("otel.kind", "server");
    span.set_attribute("mcp.method.name", method_label);
    span.set_attribute("jsonrpc.request.id", bounded(&id.to_string()));
    match (method, target) {
        (mcp_types::METHOD_TOOLS_CALL, Some(t)) => {
            span.set_attribute("gen_ai.tool.name", t);
            span.set_attribute("gen_ai.operation.name", "execute_tool");
        }
        (mcp_types::METHOD_PROMPTS_GET, Some(t)) => span.set_attribute("gen_ai.prompt.name", t),
        (mcp_types::METHOD_RESOURCES_READ, Some(t)) => span.set_attribute("mcp.resource.uri", t),
        _ => {}
    }
}

/// Sets the span's status and error attributes for how the request ended.
pub(crate) fn request_ended(span: &tracing::Span, outcome: &'static str, code: Option<i64>) {
    if !active() || span.is_disabled() {
        return;
    }
    span.set_attribute("mcp_runtime.outcome", outcome);
    if let Some(code) = code {
        span.set_attribute("rpc.response.status_code", code.to_string());
        span.set_attribute("error.type", code.to_string());
        span.record("otel.status_code", "error");
    } else if outcome == "timeout" {
        span.set_attribute("error.type", "timeout");
        span.record("otel.status_code", "error");
    }
}

/// Sets one attribute of the current request span.
pub(crate) fn attribute(key: &'static str, value: impl Into<Value>) {
    if !active() {
        return;
    }
    let span = tracing::Span::current();
    if !span.is_disabled() {
        span.set_attribute(key, value);
    }
}

/// A remote span context from W3C ids.
fn remote(trace_id: [u8; 16], span_id: [u8; 8], flags: u8, state: Option<&str>) -> SpanContext {
    let state = state
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    SpanContext::new(
        TraceId::from_bytes(trace_id),
        SpanId::from_bytes(span_id),
        TraceFlags::new(flags),
        true,
        state,
    )
}

/// Gives the current request span its parent and links, from what the request carried:
///
/// - parent: the `_meta` trace context (SEP-414) if valid, else the transport's (HTTP
///   `traceparent` header) if valid, else the flow's first leg (from a verified
///   `requestState`), else none (a new trace);
/// - links: the flow's first leg, whenever the state carries one (so every retry points at
///   the flow's root even when the client's own trace is the parent), and the transport's
///   context when `_meta` won over it;
/// - baggage: `baggage` (already `_meta`'s, else the transport's), in the parent context, so
///   that the span's context carries it; never as attributes.
///
/// If the span has already started (a layer that activates contexts on entry), the would-be
/// parent becomes a link instead (and the baggage is not attached).
pub(crate) fn adopt(
    meta: Option<&TraceContext>,
    transport: Option<&TraceContext>,
    baggage: Option<&super::Baggage>,
    flow: Option<FlowTrace>,
) {
    if !active() {
        return;
    }
    let span = tracing::Span::current();
    if span.is_disabled()
        || (meta.is_none() && transport.is_none() && flow.is_none() && baggage.is_none())
    {
        return;
    }
    let from_client =
        |tc: &TraceContext| remote(tc.trace_id, tc.span_id, tc.flags, tc.tracestate.as_deref());
    let flow_cx = flow.map(|f| remote(f.trace_id, f.span_id, TraceFlags::SAMPLED.to_u8(), None));
    let parent = meta
        .map(from_client)
        .or_else(|| transport.map(from_client))
        .or_else(|| flow_cx.clone());
    let is_flow = parent.is_some() && flow_cx == parent;
    let parent_cx = parent_context(parent.clone(), baggage);
    if let Some(parent_cx) = parent_cx
        && span.set_parent(parent_cx).is_err()
        && !is_flow
        && let Some(parent) = parent
    {
        span.add_link_with_attributes(
            parent,
            vec![KeyValue::new("mcp_runtime.link", "client_parent")],
        );
    }
    if let (Some(_), Some(t)) = (meta, transport) {
        span.add_link_with_attributes(
            from_client(t),
            vec![KeyValue::new("mcp_runtime.link", "transport")],
        );
    }
    if let Some(flow_cx) = flow_cx {
        span.add_link_with_attributes(
            flow_cx,
            vec![KeyValue::new("mcp_runtime.link", "flow_root")],
        );
    }
}

/// The context a request span takes as its parent: the remote `parent` span, with `baggage`
/// (bounded already; the SDK keeps at most 64 entries); `None` when there is neither.
fn parent_context(
    parent: Option<SpanContext>,
    baggage: Option<&super::Baggage>,
) -> Option<Context> {
    use opentelemetry::baggage::BaggageExt as _;
    if parent.is_none() && baggage.is_none() {
        return None;
    }
    let mut cx = Context::new();
    if let Some(parent) = parent {
        cx = cx.with_remote_span_context(parent);
    }
    if let Some(baggage) = baggage {
        cx = cx.with_baggage(
            baggage
                .iter()
                .map(|(name, value)| KeyValue::new(name.to_owned(), value.to_owned())),
        );
    }
    Some(cx)
}

/// The current request span's ids, to seal into a new flow's state; `None` when it is not
/// exported (no layer, or not sampled).
pub(crate) fn current_flow() -> Option<FlowTrace> {
    if !active() {
        return None;
    }
    let span = tracing::Span::current();
    if span.is_disabled() {
        return None;
    }
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    if !sc.is_valid() || !sc.is_sampled() {
        return None;
    }
    FlowTrace::new(sc.trace_id().to_bytes(), sc.span_id().to_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baggage_joins_the_parent_context_not_the_attributes() {
        use opentelemetry::baggage::BaggageExt as _;
        let baggage = super::super::Baggage::parse("tenant=acme,region=eu%2Dwest");
        let parent = remote([1; 16], [2; 8], 1, None);
        let cx = parent_context(Some(parent.clone()), Some(&baggage)).unwrap();
        assert_eq!(cx.span().span_context(), &parent);
        assert_eq!(
            cx.baggage().get("tenant").map(|v| v.to_string()),
            Some("acme".to_owned())
        );
        assert_eq!(
            cx.baggage().get("region").map(|v| v.to_string()),
            Some("eu-west".to_owned())
        );
        // Baggage alone: a context with baggage and no span (the span starts a trace).
        let cx = parent_context(None, Some(&baggage)).unwrap();
        assert!(!cx.span().span_context().is_valid());
        assert_eq!(cx.baggage().len(), 2);
        assert!(parent_context(None, None).is_none());
    }

    #[test]
    fn the_last_value_of_a_key_wins() {
        let mut attrs = vec![
            KeyValue::new("a", 1),
            KeyValue::new("b", 2),
            KeyValue::new("a", 3),
            KeyValue::new("c", 4),
            KeyValue::new("a", 5),
        ];
        last_wins(&mut attrs);
        assert_eq!(
            attrs,
            vec![
                KeyValue::new("b", 2),
                KeyValue::new("c", 4),
                KeyValue::new("a", 5)
            ]
        );
    }
}
