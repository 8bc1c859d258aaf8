//! Dispatch of one full raw message to its serialised response, no transport:
//! `server/discover`, `tools/list` (20 tools), the notes_delete first leg (input_required),
//! the accepted retry (replay claim in the in-memory store, in SQLite, and skipped), and a
//! trivial echo tool.
//!
//! Also checks the retry-leg budget: the retry should cost no more than ~3x the sum of its own
//! JSON parse, one HMAC verify and one HMAC sign; both sides are measured in the same run and
//! the ratio is printed (`retry budget:` line on stderr).
//!
//! Run: `cargo bench -p mcp-runtime --bench dispatch`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

// The benchmark tools, shared with the HTTP bench-server (bench/src/notes.rs).
#[path = "../../bench/src/notes.rs"]
mod notes;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use futures::future::BoxFuture;
use hmac::{Hmac, Mac};
use mcp_runtime::Principal;
use mcp_runtime::context::RequestContext;

use mcp_runtime::backend::sqlite::SqliteReplayStore;
use mcp_runtime::replay::{MemoryReplayStore, ReplayStore};
use mcp_runtime::router::ToolRouter;
use mcp_runtime::server::Server;
use mcp_runtime::state::{StateKey, StateKeyring};
use mcp_runtime::tool::{HandlerError, ToolHandler};
use mcp_types::{
    CallToolResult, ClientCapabilities, Implementation, InputSchema, JsonObject, Tool,
};
use notes::{NoReplay, Notes};
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::runtime::Runtime;

const KEY: &[u8] = b"bench-request-state-key-0123456789abcdef";
const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}"#;

fn discover_body() -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{{{META}}}}}"#)
        .into_bytes()
}
fn tools_list_body() -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#).into_bytes()
}
fn first_body() -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"notes_delete","arguments":{{"workspaceUri":"file:///workspaces/acme","title":"TPS report"}},{META}}}}}"#
    )
    .into_bytes()
}
fn retry_body(state: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"notes_delete","arguments":{{"workspaceUri":"file:///workspaces/acme","title":"TPS report"}},"inputResponses":{{"delete_choice":{{"action":"accept","content":{{"note_id":"note-14","confirm":true}}}}}},"requestState":"{state}",{META}}}}}"#
    )
    .into_bytes()
}
fn echo_body() -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello from the load generator"}},{META}}}}}"#
    )
    .into_bytes()
}

/// A do-nothing tool with a realistic descriptor, to pad tools/list to 20 entries.
struct Filler {
    descriptor: Tool,
    requires: ClientCapabilities,
}

impl Filler {
    fn new(i: usize) -> Self {
        let schema = json!({"type": "object", "properties": {
            "workspaceUri": {"type": "string", "description": "File URI of the workspace"},
            "query": {"type": "string", "description": "Text to search for"},
            "limit": {"type": "integer", "format": "uint32", "minimum": 0}},
            "required": ["workspaceUri", "query"]});
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        let mut descriptor = Tool::new(format!("tool_{i:02}"), InputSchema::new(schema).unwrap());
        descriptor.description = Some(format!("Filler tool number {i} for the tools/list bench"));
        Self {
            descriptor,
            requires: ClientCapabilities::none(),
        }
    }
}

impl ToolHandler for Filler {
    fn descriptor(&self) -> &Tool {
        &self.descriptor
    }
    fn required_capabilities(&self) -> &ClientCapabilities {
        &self.requires
    }
    fn call<'a>(
        &'a self,
        _ctx: &'a mut RequestContext,
        _args: JsonObject,
    ) -> BoxFuture<'a, Result<CallToolResult, HandlerError>> {
        Box::pin(async { Ok(CallToolResult::success(Vec::new())) })
    }
}

fn server(store: Arc<dyn ReplayStore>) -> Server {
    let mut router = ToolRouter::new()
        .with(notes::notes_delete::default())
        .with(notes::echo::default());
    for i in 0..18 {
        router = router.with(Filler::new(i));
    }
    Server::builder(Implementation::new("notes-bench", "0.1.0"))
        .tools(router)
        .state(Notes::demo())
        .state_keys(StateKeyring::new(StateKey::new("k1", KEY).unwrap(), Vec::new()).unwrap())
        .replay_store(store)
        .build()
        .unwrap()
}

fn call(rt: &Runtime, server: &Server, principal: &Principal, body: &[u8]) -> Vec<u8> {
    rt.block_on(server.handle_bytes(body, principal)).unwrap()
}

/// Runs the first leg and returns a ready retry body carrying its fresh requestState.
fn fresh_retry(rt: &Runtime, server: &Server, principal: &Principal) -> Vec<u8> {
    let out = call(rt, server, principal, &first_body());
    let v: Value = serde_json::from_slice(&out).unwrap();
    let state = v["result"]["requestState"].as_str().expect("requestState");
    retry_body(state)
}

fn expect_contains(out: &[u8], needle: &str) {
    let text = String::from_utf8_lossy(out);
    assert!(
        text.contains(needle) && !text.contains("\"error\""),
        "unexpected response: {text}"
    );
}

fn bench_dispatch(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let principal = Principal::new("anonymous");
    let no_replay = server(Arc::new(NoReplay));
    let memory = server(Arc::new(MemoryReplayStore::new(1 << 20)));
    let dir = tempfile::tempdir().unwrap();
    let sqlite_store = rt
        .block_on(SqliteReplayStore::open(dir.path().join("replay.db")))
        .unwrap();
    let sqlite = server(Arc::new(sqlite_store));

    // Correctness gates: each case answers what the benchmark claims to measure.
    let (discover, list, first, echo) = (
        discover_body(),
        tools_list_body(),
        first_body(),
        echo_body(),
    );
    expect_contains(&call(&rt, &no_replay, &principal, &discover), "serverInfo");
    let listed = call(&rt, &no_replay, &principal, &list);
    let listed_v: Value = serde_json::from_slice(&listed).unwrap();
    assert_eq!(listed_v["result"]["tools"].as_array().unwrap().len(), 20);
    expect_contains(&call(&rt, &no_replay, &principal, &first), "input_required");
    let retry = fresh_retry(&rt, &no_replay, &principal);
    let retried = call(&rt, &no_replay, &principal, &retry);
    expect_contains(&retried, "Deleted note-14");
    expect_contains(&call(&rt, &no_replay, &principal, &echo), "hello from");
    let mem_retry = fresh_retry(&rt, &memory, &principal);
    expect_contains(
        &call(&rt, &memory, &principal, &mem_retry),
        "Deleted note-14",
    );
    let replayed = call(&rt, &memory, &principal, &mem_retry);
    // An identical retry gets the recorded outcome (or a refusal), never a second run.
    let replayed = String::from_utf8_lossy(&replayed);
    assert!(
        replayed.contains("error")
            || replayed.contains("isError")
            || replayed.contains("Deleted note-14"),
        "the memory store must not run a replay twice: {replayed}"
    );
    eprintln!(
        "sizes: tools/list response {} B, first-leg response {} B, retry request {} B",
        listed.len(),
        call(&rt, &no_replay, &principal, &first).len(),
        retry.len()
    );

    let mut g = c.benchmark_group("dispatch");
    g.bench_function("server_discover", |b| {
        b.iter(|| call(&rt, &no_replay, &principal, black_box(&discover)))
    });
    g.bench_function("tools_list_20", |b| {
        b.iter(|| call(&rt, &no_replay, &principal, black_box(&list)))
    });
    g.bench_function("call_first_input_required", |b| {
        b.iter(|| call(&rt, &no_replay, &principal, black_box(&first)))
    });
    g.bench_function("call_retry_no_replay", |b| {
        b.iter(|| call(&rt, &no_replay, &principal, black_box(&retry)))
    });
    g.bench_function("call_retry_memory_store", |b| {
        b.iter_batched(
            || fresh_retry(&rt, &memory, &principal),
            |body| call(&rt, &memory, &principal, &body),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("call_retry_sqlite_store", |b| {
        b.iter_batched(
            || fresh_retry(&rt, &sqlite, &principal),
            |body| call(&rt, &sqlite, &principal, &body),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("call_echo", |b| {
        b.iter(|| call(&rt, &no_replay, &principal, black_box(&echo)))
    });

    // The budget's floor, on the same retry body and token.
    let v: Value = serde_json::from_slice(&retry).unwrap();
    let token = v["params"]["requestState"].as_str().unwrap().to_owned();
    let signed = token.as_bytes()[..token.rfind('.').unwrap()].to_vec();
    let mac = Hmac::<Sha256>::new_from_slice(KEY).unwrap();
    let tag = mac.clone().chain_update(&signed).finalize().into_bytes();
    let floor = || {
        let v: Value = serde_json::from_slice(black_box(&retry)).unwrap();
        mac.clone()
            .chain_update(black_box(&signed))
            .verify_slice(&tag)
            .unwrap();
        let t = mac.clone().chain_update(black_box(&signed)).finalize();
        black_box((v, t));
    };
    g.bench_function("retry_floor_parse_verify_sign", |b| b.iter(floor));
    g.finish();

    // Same-run ratio, interleaved so machine noise hits both sides alike.
    let (mut t_retry, mut t_floor) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..20 {
        let t = Instant::now();
        for _ in 0..500 {
            black_box(call(&rt, &no_replay, &principal, &retry));
        }
        t_retry += t.elapsed();
        let t = Instant::now();
        for _ in 0..500 {
            floor();
        }
        t_floor += t.elapsed();
    }
    let (retry_us, floor_us) = (
        t_retry.as_secs_f64() * 1e6 / 10_000.0,
        t_floor.as_secs_f64() * 1e6 / 10_000.0,
    );
    eprintln!(
        "retry budget: retry leg {retry_us:.2} us, parse+verify+sign {floor_us:.2} us, ratio {:.2}x (budget 3x)",
        retry_us / floor_us
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bench_dispatch
}
criterion_main!(benches);
