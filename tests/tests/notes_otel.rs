//! `notes-example serve --http --otlp-endpoint URL`: the spans two instances export to an
//! OTLP receiver (real protobuf, decoded here) show one deletion flow as one trace; a
//! client's `traceparent` is honoured and a malformed one ignored; baggage never becomes an
//! attribute; a task's work links to the call that started it; a hung collector neither
//! slows requests nor makes the server keep more than its span queue.

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mcp_tests::meta;
use mcp_tests::notes::*;
use mcp_tests::otlp::{ReceivedSpan, Receiver};
use mcp_tests::{StdioServer, call_params, form_caps, http_post_with, retry_params};
use serde_json::{Value, json};

const EXPORT_WAIT: Duration = Duration::from_secs(20);
const DELETE_SPAN: &str = "tools/call notes_delete";

/// One notes server exporting to `endpoint`, known to its spans as `instance`.
fn start(
    fx: &NotesFixture,
    endpoint: &str,
    instance: &str,
    env: &[(&str, &str)],
) -> (StdioServer, SocketAddr) {
    let resource = format!("service.instance.id={instance}");
    let mut vars = vec![
        // Exported within a tenth of a second, so the test need not wait for the default 5 s.
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "300"),
        ("OTEL_RESOURCE_ATTRIBUTES", resource.as_str()),
        ("RUST_LOG", "info"),
    ];
    vars.extend_from_slice(env);
    fx.spawn_http_with_env("alice", &["--otlp-endpoint", endpoint], &vars)
        .unwrap()
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn post(addr: SocketAddr, message: &Value, headers: &[(&str, &str)]) -> Value {
    let response = http_post_with(addr, None, message, headers).unwrap();
    assert_eq!(response.status, 200, "{response:?}");
    response.json().unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The spans named `name` carrying `jsonrpc.request.id` = `id`.
fn by_request<'a>(spans: &'a [ReceivedSpan], name: &str, id: &str) -> Vec<&'a ReceivedSpan> {
    spans
        .iter()
        .filter(|s| s.span.name == name && s.attr("jsonrpc.request.id").as_deref() == Some(id))
        .collect()
}

fn one<'a>(spans: &'a [ReceivedSpan], name: &str, id: &str) -> &'a ReceivedSpan {
    let found = by_request(spans, name, id);
    assert_eq!(
        found.len(),
        1,
        "one `{name}` span for request {id}: {spans:#?}"
    );
    found[0]
}

/// The first leg on instance A, the confirmation on instance B: one trace, B's span a child
/// of A's and linked to it as the flow's root, with the semantic-convention attributes and
/// ours; nothing of the requestState in any attribute.
#[test]
fn a_deletion_flow_across_two_instances_is_one_trace() {
    let fx = NotesFixture::new().unwrap();
    let receiver = Receiver::start().unwrap();
    let (_a, addr_a) = start(&fx, &receiver.endpoint(), "a", &[]);
    let (_b, addr_b) = start(&fx, &receiver.endpoint(), "b", &[]);
    let args = fx.delete_args("tps");

    let first = post(
        addr_a,
        &rpc(
            1,
            "tools/call",
            call_params("notes_delete", args.clone(), form_caps()),
        ),
        &[],
    );
    assert_eq!(result_type(&first), Some("input_required"), "{first}");
    let state = request_state(&first).unwrap();
    let done = post(
        addr_b,
        &rpc(
            2,
            "tools/call",
            retry_params(
                "notes_delete",
                args,
                form_caps(),
                json!({ DELETE_KEY: choose("tps-report.md", true) }),
                &state,
            ),
        ),
        &[],
    );
    assert!(is_success(&done), "{done}");
    assert!(!fx.exists("tps-report.md"));

    let spans = receiver.wait_for(EXPORT_WAIT, |s| {
        by_request(s, DELETE_SPAN, "1").len() == 1 && by_request(s, DELETE_SPAN, "2").len() == 1
    });
    let leg1 = one(&spans, DELETE_SPAN, "1");
    let leg2 = one(&spans, DELETE_SPAN, "2");

    // Who exported which: the first leg on A, the confirmation on B.
    assert_eq!(
        leg1.resource_attr("service.instance.id").as_deref(),
        Some("a")
    );
    assert_eq!(
        leg2.resource_attr("service.instance.id").as_deref(),
        Some("b")
    );
    assert_eq!(
        leg1.resource_attr("service.name").as_deref(),
        Some("notes-example")
    );

    // One trace; the first leg is its root; the confirmation is its child and links to it.
    assert_eq!(leg1.span.trace_id.len(), 16);
    assert_eq!(
        leg2.span.trace_id, leg1.span.trace_id,
        "one trace across both legs"
    );
    assert!(
        leg1.span.parent_span_id.is_empty(),
        "the first leg is the root: {leg1:#?}"
    );
    assert_eq!(
        leg2.span.parent_span_id, leg1.span.span_id,
        "the confirmation's parent is the first leg"
    );
    let root_link = leg2
        .span
        .links
        .iter()
        .find(|l| l.span_id == leg1.span.span_id && l.trace_id == leg1.span.trace_id)
        .expect("the confirmation links to the flow's root");
    assert_eq!(
        mcp_tests::otlp::attr_text(&root_link.attributes, "mcp_runtime.link").as_deref(),
        Some("flow_root")
    );

    // Semantic conventions for MCP (server span).
    for leg in [leg1, leg2] {
        assert_eq!(leg.span.kind, 2, "SPAN_KIND_SERVER");
        assert_eq!(leg.attr("mcp.method.name").as_deref(), Some("tools/call"));
        assert_eq!(
            leg.attr("gen_ai.tool.name").as_deref(),
            Some("notes_delete")
        );
        assert_eq!(
            leg.attr("gen_ai.operation.name").as_deref(),
            Some("execute_tool")
        );
    }
    // Ours: the round, what was asked, how each leg ended, the store's latency.
    assert_eq!(
        leg1.attr("mcp_runtime.outcome").as_deref(),
        Some("input_required")
    );
    assert_eq!(
        leg1.attr("mcp_runtime.mrtr.input_kinds").as_deref(),
        Some("[form]")
    );
    assert_eq!(leg1.attr("mcp_runtime.mrtr.round"), None);
    assert_eq!(
        leg2.attr("mcp_runtime.outcome").as_deref(),
        Some("complete")
    );
    assert_eq!(leg2.attr("mcp_runtime.mrtr.round").as_deref(), Some("1"));
    assert_eq!(
        leg2.attr("mcp_runtime.mrtr.outcome").as_deref(),
        Some("accepted")
    );
    let claim_ms: f64 = leg2
        .attr("mcp_runtime.store.claim_with_ms")
        .or_else(|| leg2.attr("mcp_runtime.store.claim_ms"))
        .or_else(|| leg2.attr("mcp_runtime.store.claim_in_tx_ms"))
        .unwrap_or_else(|| panic!("a claim latency on the confirmation: {leg2:#?}"))
        .parse()
        .unwrap();
    assert!(claim_ms >= 0.0);

    // No requestState, nor its payload or MAC, in any exported value.
    let parts: Vec<&str> = state.split('.').filter(|p| p.len() >= 16).collect();
    assert_eq!(parts.len(), 2, "payload and MAC: {state}");
    for leg in [leg1, leg2] {
        for value in leg.all_values() {
            assert!(parts.iter().all(|p| !value.contains(p)), "{value}");
        }
    }

    // The flow metrics and the operation duration reach the collector too.
    let deadline = Instant::now() + EXPORT_WAIT;
    let wanted = [
        "mcp.server.operation.duration",
        "mcp_runtime.flows.started",
        "mcp_runtime.flows.answered",
        "mcp_runtime.flow.rounds",
    ];
    while Instant::now() < deadline {
        let names = receiver.metric_names();
        if wanted.iter().all(|w| names.iter().any(|n| n == w)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let names = receiver.metric_names();
    for w in wanted {
        assert!(
            names.iter().any(|n| n == w),
            "metric {w} exported: {names:?}"
        );
    }
}

/// A client's `traceparent` (in `_meta`, SEP-414; or in the HTTP header) becomes the parent;
/// the flow's later legs stay in that trace; a malformed one is ignored and the request
/// served as usual.
#[test]
fn client_trace_context_is_honoured_and_malformed_is_ignored() {
    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const PARENT: &str = "00f067aa0ba902b7";
    let fx = NotesFixture::new().unwrap();
    let receiver = Receiver::start().unwrap();
    let (_a, addr) = start(&fx, &receiver.endpoint(), "a", &[]);
    let args = fx.delete_args("tps");

    // _meta traceparent on the first leg; the retry carries none.
    let mut params = call_params("notes_delete", args.clone(), form_caps());
    params["_meta"]["traceparent"] = json!(format!("00-{TRACE}-{PARENT}-01"));
    params["_meta"]["tracestate"] = json!("vendor=abc");
    let first = post(addr, &rpc(11, "tools/call", params), &[]);
    let state = request_state(&first).unwrap();
    let retry = retry_params(
        "notes_delete",
        args.clone(),
        form_caps(),
        json!({ DELETE_KEY: json!({"action": "decline"}) }),
        &state,
    );
    let declined = post(addr, &rpc(12, "tools/call", retry), &[]);
    assert_eq!(result_type(&declined), Some("complete"), "{declined}");

    // The HTTP header on a list; a malformed _meta one (uppercase hex) on another; a
    // malformed header on a third.
    let header_parent = "1111111111111111";
    let header = format!("00-{TRACE}-{header_parent}-01");
    post(
        addr,
        &rpc(13, "tools/list", json!({"_meta": meta(form_caps())})),
        &[("traceparent", header.as_str())],
    );
    let mut bad_meta = meta(form_caps());
    bad_meta["traceparent"] = json!(format!("00-{}-{PARENT}-01", TRACE.to_uppercase()));
    let listed = post(
        addr,
        &rpc(14, "tools/list", json!({"_meta": bad_meta})),
        &[],
    );
    assert!(
        listed.get("result").is_some(),
        "a malformed traceparent is no error: {listed}"
    );
    let listed = post(
        addr,
        &rpc(15, "tools/list", json!({"_meta": meta(form_caps())})),
        &[("traceparent", "00-zz-yy-01")],
    );
    assert!(listed.get("result").is_some(), "{listed}");

    let spans = receiver.wait_for(EXPORT_WAIT, |s| {
        by_request(s, DELETE_SPAN, "11").len() == 1
            && by_request(s, DELETE_SPAN, "12").len() == 1
            && ["13", "14", "15"]
                .iter()
                .all(|id| by_request(s, "tools/list", id).len() == 1)
    });
    let leg1 = one(&spans, DELETE_SPAN, "11");
    let leg2 = one(&spans, DELETE_SPAN, "12");
    assert_eq!(hex(&leg1.span.trace_id), TRACE, "the client's trace");
    assert_eq!(
        hex(&leg1.span.parent_span_id),
        PARENT,
        "the client's span is the parent"
    );
    assert_eq!(leg1.span.trace_state, "vendor=abc");
    assert_eq!(
        hex(&leg2.span.trace_id),
        TRACE,
        "the retry stays in the client's trace"
    );
    assert_eq!(leg2.span.parent_span_id, leg1.span.span_id);
    assert_eq!(
        leg2.attr("mcp_runtime.mrtr.outcome").as_deref(),
        Some("declined")
    );

    let by_header = one(&spans, "tools/list", "13");
    assert_eq!(hex(&by_header.span.trace_id), TRACE);
    assert_eq!(hex(&by_header.span.parent_span_id), header_parent);
    for id in ["14", "15"] {
        let ignored = one(&spans, "tools/list", id);
        assert_ne!(
            hex(&ignored.span.trace_id),
            TRACE,
            "malformed context ignored ({id})"
        );
        assert!(ignored.span.parent_span_id.is_empty(), "a new root ({id})");
    }
}

/// A collector that hangs: requests are answered as fast as ever, and the spans the server
/// keeps meanwhile are bounded by its queue (the rest are dropped, never buffered); export
/// resumes when the collector does. A collector nobody listens for is the same, faster.
#[test]
fn a_hung_or_absent_collector_neither_slows_nor_grows_the_server() {
    const QUEUE: usize = 16;
    const BATCH: usize = 4;
    const REQUESTS: i64 = 300;
    let fx = NotesFixture::new().unwrap();
    let receiver = Receiver::start().unwrap();
    receiver.stall(true);
    let queue = QUEUE.to_string();
    let batch = BATCH.to_string();
    let (_server, addr) = start(
        &fx,
        &receiver.endpoint(),
        "hung",
        &[
            ("OTEL_BSP_MAX_QUEUE_SIZE", queue.as_str()),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", batch.as_str()),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "60000"),
        ],
    );
    let list = |id: i64| rpc(id, "tools/list", json!({"_meta": meta(form_caps())}));

    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    for id in 1..=REQUESTS {
        let t = Instant::now();
        post(addr, &list(id), &[]);
        slowest = slowest.max(t.elapsed());
    }
    assert!(
        slowest < Duration::from_secs(2),
        "a request waited on the collector: {slowest:?}"
    );
    assert!(
        receiver.requests() >= 1,
        "the exporter did try the collector"
    );
    assert!(receiver.spans().is_empty());
    let during = started.elapsed();

    // The collector recovers: what the server kept arrives, and no more than its queue (plus
    // the batch that was in flight).
    receiver.stall(false);
    std::thread::sleep(Duration::from_secs(2));
    let spans = receiver.wait_for(Duration::from_secs(5), |s| s.len() >= QUEUE);
    let kept = spans.iter().filter(|s| s.span.name == "tools/list").count();
    assert!(kept >= 1, "export resumed");
    assert!(
        kept <= QUEUE + BATCH,
        "{kept} of {REQUESTS} spans were kept while the collector hung (queue {QUEUE}, batch {BATCH}); took {during:?}"
    );

    // Nobody listening at all: requests are as fast.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (server, addr) = start(&fx, &dead, "absent", &[]);
    let t = Instant::now();
    for id in 1..=50 {
        post(addr, &list(id), &[]);
    }
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    drop(server);
}

/// A `notes_export` run as a task (the tasks extension declared): the task's work is a span of
/// its own (it outlives the call) in a trace of its own, and it links to the `tools/call` span
/// that started it.
#[test]
fn a_task_links_to_the_call_that_started_it() {
    let fx = NotesFixture::new().unwrap();
    let receiver = Receiver::start().unwrap();
    let (_server, addr) = start(&fx, &receiver.endpoint(), "tasks", &[]);
    let created = post(
        addr,
        &rpc(
            7,
            "tools/call",
            call_params(
                "notes_export",
                json!({"workspaceUri": fx.uri}),
                json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
            ),
        ),
        &[],
    );
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();

    let is_work = |s: &ReceivedSpan| s.attr("task_id").as_deref() == Some(task_id.as_str());
    let spans = receiver.wait_for(EXPORT_WAIT, |s| {
        by_request(s, "tools/call notes_export", "7").len() == 1 && s.iter().any(is_work)
    });
    let call = one(&spans, "tools/call notes_export", "7");
    let work: Vec<&ReceivedSpan> = spans.iter().filter(|s| is_work(s)).collect();
    assert_eq!(work.len(), 1, "one span for the task's work: {spans:#?}");
    let work = work[0];
    assert_eq!(work.span.name, "mcp_task", "{work:#?}");
    assert!(
        work.span
            .links
            .iter()
            .any(|l| l.trace_id == call.span.trace_id && l.span_id == call.span.span_id),
        "the task's work links to the call that started it: {work:#?} {call:#?}"
    );
    // Not the call's child: the work outlives the request, in a trace of its own.
    assert_ne!(work.span.parent_span_id, call.span.span_id);
}

/// W3C baggage from `_meta` (SEP-414) and from the HTTP `baggage` header, well-formed or not,
/// is never an error and never becomes a span attribute (it joins the span's context only).
#[test]
fn baggage_is_accepted_and_never_an_attribute() {
    let fx = NotesFixture::new().unwrap();
    let receiver = Receiver::start().unwrap();
    let (_server, addr) = start(&fx, &receiver.endpoint(), "baggage", &[]);
    let mut params = call_params("notes_list", json!({"workspaceUri": fx.uri}), json!({}));
    params["_meta"]["baggage"] = json!("tenant=metabaggage1,bad member,x=%zz");
    let listed = post(
        addr,
        &rpc(11, "tools/call", params),
        &[("baggage", "tenant=headerbaggage2;prop=1")],
    );
    assert!(is_success(&listed), "{listed}");
    let long = format!("k={}", "v".repeat(20_000));
    let mut params = call_params("notes_list", json!({"workspaceUri": fx.uri}), json!({}));
    params["_meta"]["baggage"] = json!(long);
    let listed = post(
        addr,
        &rpc(12, "tools/call", params),
        &[("baggage", "tenant=headerbaggage3")],
    );
    assert!(is_success(&listed), "{listed}");

    let spans = receiver.wait_for(EXPORT_WAIT, |s| {
        by_request(s, "tools/call notes_list", "11").len() == 1
            && by_request(s, "tools/call notes_list", "12").len() == 1
    });
    for id in ["11", "12"] {
        let span = one(&spans, "tools/call notes_list", id);
        for value in span.all_values() {
            assert!(
                !value.contains("baggage") && !value.contains("vvvv"),
                "baggage leaked into an attribute: {value}"
            );
        }
        assert!(
            span.span.attributes.iter().all(|a| a.key != "tenant"),
            "{span:#?}"
        );
    }
}
