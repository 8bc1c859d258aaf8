//! What an operator of `notes-example serve --http` sees: Prometheus metrics on
//! `--metrics-listen` that move with a confirmation flow, `/healthz` and `/readyz`, and one
//! JSON log record per request (`--log-format json`) with its outcome.

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mcp_runtime::client::{Client, HttpTransport};
use mcp_tests::notes::*;
use mcp_tests::{RESPONSE_TIMEOUT, StdioServer, http_get};
use serde_json::Value;

fn start(fx: &NotesFixture) -> (StdioServer, SocketAddr, SocketAddr) {
    let extra = ["--metrics-listen", "127.0.0.1:0", "--log-format", "json"];
    let (server, addr) = fx.spawn_http_with_env("alice", &extra, &[]).unwrap();
    let metrics = metrics_address(&server);
    (server, addr, metrics)
}

/// The `--metrics-listen` address the server printed (before the MCP address).
fn metrics_address(server: &StdioServer) -> SocketAddr {
    server
        .stderr()
        .split("metrics on http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|a| a.parse().ok())
        .expect("the metrics address is printed before the MCP address")
}

fn client(addr: SocketAddr) -> Client {
    let transport = HttpTransport::new(&format!("http://{addr}/mcp")).unwrap();
    Client::builder(transport).timeout(RESPONSE_TIMEOUT).build()
}

/// The value of the series `name` whose labels include every `labels` pair (summed over the
/// others), from a Prometheus text exposition.
fn sample(exposition: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    exposition
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(series, _)| {
            let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
            metric == name
                && labels
                    .iter()
                    .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")))
        })
        .map(|(_, value)| value.parse::<f64>().unwrap())
        .sum()
}

#[tokio::test]
async fn metrics_and_logs_follow_a_confirmation_flow() {
    let fx = NotesFixture::new().unwrap();
    let (server, addr, metrics_addr) = start(&fx);
    let before = http_get(metrics_addr, "/metrics").unwrap();
    assert_eq!(before.status, 200, "{before:?}");
    assert_eq!(
        sample(
            &before.body,
            "mcp_requests_total",
            &[("method", "tools/call")]
        ),
        0.0
    );

    let c = client(addr);
    let args = fx.delete_args("tps report (draft)");
    let first = ask_delete(&c, &args).await;
    let state = first.request_state().unwrap();
    // Other arguments with this state: refused (arguments_changed).
    let changed = answer_delete(
        &c,
        &fx.delete_args("shopping"),
        choose("tps-report-draft.md", true),
        &state,
    )
    .await;
    assert!(changed.is_refusal(), "{changed:?}");
    let done = answer_delete(&c, &args, choose("tps-report-draft.md", true), &state).await;
    assert!(done.is_success(), "{done:?}");
    // Restored, so the identical retry finds the same candidates: it is answered with the
    // recorded outcome (the claim refuses it, `replayed`).
    std::fs::write(
        fx.notes.join("tps-report-draft.md"),
        "# TPS report (draft)\n",
    )
    .unwrap();
    let again = answer_delete(&c, &args, choose("tps-report-draft.md", true), &state).await;
    assert!(again.is_replay(), "{again:?}");
    assert!(
        fx.exists("tps-report-draft.md"),
        "the replay deleted nothing"
    );

    let text = http_get(metrics_addr, "/metrics").unwrap().body;
    let calls = |outcome| {
        sample(
            &text,
            "mcp_requests_total",
            &[("method", "tools/call"), ("outcome", outcome)],
        )
    };
    assert_eq!(calls("input_required"), 1.0, "{text}");
    assert_eq!(calls("complete"), 2.0, "{text}");
    assert_eq!(calls("error"), 1.0, "{text}");
    assert_eq!(
        sample(
            &text,
            "mcp_request_errors_total",
            &[("method", "tools/call"), ("code", "-32602")]
        ),
        1.0,
        "{text}"
    );
    assert_eq!(
        sample(&text, "mcp_mrtr_rounds_total", &[("method", "tools/call")]),
        1.0,
        "{text}"
    );
    // The accepted retry and the replayed one; the changed arguments never opened the state.
    assert_eq!(
        sample(&text, "mcp_mrtr_retries_total", &[("method", "tools/call")]),
        2.0,
        "{text}"
    );
    assert_eq!(
        sample(&text, "mcp_mrtr_claims_total", &[("result", "claimed")]),
        1.0,
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "mcp_mrtr_claims_total",
            &[("result", "already_used")]
        ),
        1.0,
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "mcp_mrtr_refusals_total",
            &[("reason", "arguments_changed")]
        ),
        1.0,
        "{text}"
    );
    assert_eq!(
        sample(&text, "mcp_mrtr_refusals_total", &[("reason", "replayed")]),
        1.0,
        "{text}"
    );
    assert!(
        sample(&text, "mcp_replay_store_duration_seconds_count", &[]) >= 2.0,
        "{text}"
    );
    assert!(
        sample(
            &text,
            "mcp_request_duration_seconds_count",
            &[("method", "tools/call")]
        ) >= 4.0,
        "{text}"
    );
    // The flow funnel: one flow begun, one accepted answer, which ended it after one round
    // (the replay answered from the record and read no answer; the refused retry never
    // opened the state).
    assert_eq!(sample(&text, "mcp_flows_started_total", &[]), 1.0, "{text}");
    assert_eq!(
        sample(&text, "mcp_flows_answered_total", &[("action", "accepted")]),
        1.0,
        "{text}"
    );
    assert_eq!(sample(&text, "mcp_flow_rounds_count", &[]), 1.0, "{text}");
    assert_eq!(sample(&text, "mcp_flow_rounds_sum", &[]), 1.0, "{text}");
    assert!(
        sample(
            &text,
            "mcp_server_operation_duration_seconds_count",
            &[("mcp_method_name", "tools/call")]
        ) >= 4.0,
        "{text}"
    );
    assert_eq!(sample(&text, "mcp_requests_in_flight", &[]), 0.0, "{text}");
    assert!(
        sample(&text, "mcp_http_connections_total", &[]) >= 1.0,
        "{text}"
    );

    // One JSON record per request, with the span's fields.
    let deadline = Instant::now() + Duration::from_secs(5);
    let records = loop {
        let records: Vec<Value> = server
            .stderr()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["fields"]["message"] == "mcp request finished")
            .filter(|v| v["span"]["method"] == "tools/call")
            .collect();
        if records.len() >= 4 || Instant::now() >= deadline {
            break records;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let outcomes: Vec<&str> = records
        .iter()
        .map(|r| r["span"]["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        ["input_required", "error", "complete", "complete"],
        "{records:#?}"
    );
    assert_eq!(records[1]["span"]["refusal"], "arguments_changed");
    assert_eq!(records[2]["span"]["mrtr_round"], 1);
    assert_eq!(records[3]["span"]["refusal"], "replayed");
    assert!(records.iter().all(|r| r["span"]["principal"] == "alice"));
    assert!(
        records
            .iter()
            .all(|r| r["span"]["target"] == "notes_delete")
    );
}

#[tokio::test]
async fn health_and_readiness_probes() {
    let fx = NotesFixture::new().unwrap();
    let (_server, addr, _) = start(&fx);
    let health = http_get(addr, "/healthz").unwrap();
    assert_eq!(health.status, 200, "{health:?}");
    assert_eq!(health.json().unwrap()["status"], "ok");
    let ready = http_get(addr, "/readyz").unwrap();
    assert_eq!(ready.status, 200, "{ready:?}");
    let body = ready.json().unwrap();
    assert_eq!(body["status"], "ready", "{body}");
    for check in ["replay_store", "state_keys", "notes_store"] {
        assert_eq!(body["checks"][check], "ok", "{body}");
    }
}

/// A confirmation asked and never answered is counted once in `mcp_flows_abandoned_total`
/// after its state expires (a 2 s `--state-ttl`, swept every second); one answered in time is
/// not.
#[tokio::test]
async fn an_unanswered_confirmation_is_counted_abandoned_once() {
    let fx = NotesFixture::new().unwrap();
    let extra = [
        "--metrics-listen",
        "127.0.0.1:0",
        "--state-ttl",
        "2",
        "--abandoned-sweep-secs",
        "1",
    ];
    let (server, addr) = fx.spawn_http_with_env("alice", &extra, &[]).unwrap();
    let metrics_addr = metrics_address(&server);
    let c = client(addr);

    // Left unanswered.
    let abandoned = ask_delete(&c, &fx.delete_args("shopping")).await;
    abandoned.request_state().unwrap();
    // Answered at once.
    let args = fx.delete_args("tps report (draft)");
    let first = ask_delete(&c, &args).await;
    let state = first.request_state().unwrap();
    let done = answer_delete(&c, &args, choose("tps-report-draft.md", true), &state).await;
    assert!(done.is_success(), "{done:?}");

    let abandoned_total = || {
        let text = http_get(metrics_addr, "/metrics").unwrap().body;
        (sample(&text, "mcp_flows_abandoned_total", &[]), text)
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (count, text) = abandoned_total();
        if count >= 1.0 {
            break;
        }
        assert!(Instant::now() < deadline, "never counted: {text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Two more sweeps: still one (taken once; the answered flow is never counted).
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (count, text) = abandoned_total();
    assert_eq!(count, 1.0, "{text}");
    assert_eq!(sample(&text, "mcp_flows_started_total", &[]), 2.0, "{text}");
    drop(server);
}
