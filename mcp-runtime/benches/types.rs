//! Parse and serialise of the largest messages a server handles per request (mcp-types):
//! a tools/list response with 20 tools, an input-required response carrying a form
//! elicitation, and the MRTR retry request (arguments + inputResponses + requestState).
//!
//! "parse" = bytes → `JsonRpcMessage` → typed params/result, the path a server takes;
//! "serialize" = typed value → `JsonRpcResponse` → bytes.
//!
//! Run: `cargo bench -p mcp-runtime --bench types`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcp_types::{
    CallToolRequestParams, InputRequiredResult, JsonRpcMessage, JsonRpcResponse, ListToolsResult,
    RequestId, parse_message,
};
use serde_json::{Value, json};

/// Twenty tool descriptors, each with a four-property schema, annotations and an output schema
/// on every fourth: the size of a real mid-sized server's catalogue (~9 KiB).
fn tools_list_response() -> Vec<u8> {
    let tools: Vec<Value> = (0..20)
        .map(|i| {
            let mut t = json!({
                "name": format!("tool_{i:02}"),
                "title": format!("Tool number {i}"),
                "description": format!("Does thing {i} to the notes in a workspace; asks before anything destructive."),
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "workspaceUri": {"type": "string", "description": "File URI of the workspace, e.g. file:///home/me/notes"},
                        "title": {"type": "string", "description": "Text the note title must contain (case-insensitive)"},
                        "limit": {"type": "integer", "format": "uint32", "minimum": 0, "description": "Most results to return"},
                        "tags": {"type": "array", "items": {"type": "string"}, "description": "Only notes with all these tags"}
                    },
                    "required": ["workspaceUri", "title"],
                    "additionalProperties": false
                },
                "annotations": {"readOnlyHint": i % 2 == 0, "destructiveHint": i % 2 == 1, "openWorldHint": false}
            });
            if i % 4 == 0 {
                t["outputSchema"] = json!({"type": "object", "properties": {
                    "count": {"type": "integer"}, "ids": {"type": "array", "items": {"type": "string"}}},
                    "required": ["count", "ids"]});
            }
            t
        })
        .collect();
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "complete", "tools": tools, "ttlMs": 60000, "cacheScope": "public"}}))
    .unwrap()
}

/// The notes_delete first leg's answer: one form elicitation with a titled single select of
/// three notes plus a confirm box, and a ~270-byte requestState.
fn input_required_response() -> Vec<u8> {
    let state = format!("v2.k1.{}.{}", "e".repeat(200), "m".repeat(43));
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 2, "result": {
        "resultType": "input_required",
        "inputRequests": {"delete_choice": {"method": "elicitation/create", "params": {
            "mode": "form",
            "message": "3 notes match \"TPS report\" in file:///workspaces/acme. Which one should be deleted?",
            "requestedSchema": {"type": "object", "properties": {
                "note_id": {"type": "string", "title": "Note", "description": "Which note to delete",
                            "oneOf": [{"const": "note-3", "title": "TPS report (note-3)"},
                                      {"const": "note-14", "title": "TPS report (note-14)"},
                                      {"const": "note-22", "title": "TPS report (draft) (note-22)"}]},
                "confirm": {"type": "boolean", "title": "Confirm", "description": "Yes, delete it"}},
                "required": ["note_id", "confirm"]}}}},
        "requestState": state}}))
    .unwrap()
}

/// The MRTR retry request as a client sends it.
fn retry_request() -> Vec<u8> {
    let state = format!("v2.k1.{}.{}", "e".repeat(200), "m".repeat(43));
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "notes_delete",
        "arguments": {"workspaceUri": "file:///workspaces/acme", "title": "TPS report"},
        "inputResponses": {"delete_choice": {"action": "accept", "content": {"note_id": "note-14", "confirm": true}}},
        "requestState": state,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
                  "io.modelcontextprotocol/clientInfo": {"name": "bench-client", "version": "1.0.0"}}}}))
    .unwrap()
}

fn result_of<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> T {
    match parse_message(bytes).unwrap() {
        JsonRpcMessage::Response(r) => serde_json::from_value(Value::Object(r.result)).unwrap(),
        other => panic!("expected a response, got {other:?}"),
    }
}

fn params_of(bytes: &[u8]) -> CallToolRequestParams {
    match parse_message(bytes).unwrap() {
        JsonRpcMessage::Request(r) => {
            serde_json::from_value(Value::Object(r.params.unwrap_or_default())).unwrap()
        }
        other => panic!("expected a request, got {other:?}"),
    }
}

fn bench_types(c: &mut Criterion) {
    let list = tools_list_response();
    let input = input_required_response();
    let retry = retry_request();
    eprintln!(
        "sizes: tools/list {} B, input_required {} B, retry request {} B",
        list.len(),
        input.len(),
        retry.len()
    );

    let mut g = c.benchmark_group("types_parse");
    g.throughput(Throughput::Bytes(list.len() as u64));
    g.bench_function("tools_list_result_20", |b| {
        b.iter(|| result_of::<ListToolsResult>(black_box(&list)))
    });
    g.throughput(Throughput::Bytes(input.len() as u64));
    g.bench_function("input_required_result", |b| {
        b.iter(|| result_of::<InputRequiredResult>(black_box(&input)))
    });
    g.throughput(Throughput::Bytes(retry.len() as u64));
    g.bench_function("call_tool_retry_request", |b| {
        b.iter(|| params_of(black_box(&retry)))
    });
    // Direct typed parse, skipping the generic Value stage: the lower bound for the above.
    g.bench_function("call_tool_retry_request_value_only", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&retry)).unwrap())
    });
    g.finish();

    let list_typed: ListToolsResult = result_of(&list);
    let input_typed: InputRequiredResult = result_of(&input);
    let retry_typed = params_of(&retry);
    let mut g = c.benchmark_group("types_serialize");
    g.bench_function("tools_list_result_20", |b| {
        b.iter(|| {
            let r = JsonRpcResponse::new(RequestId::Number(1), black_box(&list_typed)).unwrap();
            serde_json::to_vec(&r).unwrap()
        })
    });
    g.bench_function("tools_list_result_20_direct", |b| {
        b.iter(|| serde_json::to_vec(black_box(&list_typed)).unwrap())
    });
    g.bench_function("input_required_result", |b| {
        b.iter(|| {
            let r = JsonRpcResponse::new(RequestId::Number(2), black_box(&input_typed)).unwrap();
            serde_json::to_vec(&r).unwrap()
        })
    });
    g.bench_function("call_tool_retry_params", |b| {
        b.iter(|| serde_json::to_vec(black_box(&retry_typed)).unwrap())
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bench_types
}
criterion_main!(benches);
