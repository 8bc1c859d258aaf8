//! requestState seal/open and the canonical argument digest, plus the raw primitives they are
//! built from (one HMAC-SHA256 sign, one verify) so the overhead above them is visible.
//!
//! Run: `cargo bench -p mcp-runtime --bench state`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, SystemTime};

use criterion::{Criterion, criterion_group, criterion_main};
use hmac::{Hmac, Mac};
use mcp_runtime::state::{
    Expectation, StateKey, StateKeyring, StatePayload, canonical_digest, canonical_json,
};
use serde_json::{Value, json};
use sha2::Sha256;

const KEY: &[u8] = b"bench-request-state-key-0123456789abcdef";

/// The arguments of the notes_delete benchmark call.
fn delete_args() -> Value {
    json!({"workspaceUri": "file:///workspaces/acme", "title": "TPS report"})
}

/// A wider argument object (~1 KiB, nested, numbers that need canonicalising).
fn wide_args() -> Value {
    json!({
        "workspaceUri": "file:///workspaces/acme",
        "query": {"title": "TPS report", "tags": ["q2", "q3", "finance", "cover-sheet"],
                  "modifiedAfter": "2026-01-01T00:00:00Z", "limit": 50.0, "score": 0.75},
        "options": {"caseSensitive": false, "includeArchived": true, "sort": "modified",
                    "fields": ["id", "title", "body", "tags", "modified", "created", "owner"]},
        "notes": (0..8).map(|i| json!({"id": format!("note-{i}"), "weight": i as f64 * 1.5,
                                       "title": format!("Note number {i} with a longer title")}))
                      .collect::<Vec<_>>()
    })
}

/// A round-0 payload like the runtime writes for a form elicitation (~300 bytes as v1 JSON,
/// ~150 bytes in the v2 binary encoding).
fn payload(now: SystemTime) -> StatePayload {
    let mut p = StatePayload::new(
        "anonymous",
        "tools/call",
        "notes_delete",
        canonical_digest(&delete_args()),
        now,
        Duration::from_secs(600),
    )
    .unwrap();
    let mut bindings = BTreeMap::new();
    bindings.insert(
        "delete_choice".to_owned(),
        canonical_digest(&json!(["note-3", "note-14", "note-22"])),
    );
    p.bindings = bindings;
    p
}

fn keyring() -> StateKeyring {
    StateKeyring::new(StateKey::new("k1", KEY).unwrap(), Vec::new()).unwrap()
}

fn bench_state(c: &mut Criterion) {
    let ring = keyring();
    let now = SystemTime::now();
    let payload = payload(now);
    let json_len = serde_json::to_vec(&payload).unwrap().len();
    let token = ring.seal(&payload).unwrap();
    eprintln!(
        "state payload: {json_len} bytes as v1 JSON; v2 token {} bytes",
        token.len()
    );
    let digest = canonical_digest(&delete_args());
    let expect = Expectation {
        principal: "anonymous",
        method: "tools/call",
        target: "notes_delete",
        arg_digest: digest,
    };

    let mut g = c.benchmark_group("state");
    g.bench_function("seal", |b| {
        b.iter(|| ring.seal(black_box(&payload)).unwrap())
    });
    g.bench_function("open", |b| {
        b.iter(|| ring.open(black_box(&token), &expect, now).unwrap())
    });

    // The primitives: what seal/open cannot go below.
    let signed = &token.as_bytes()[..token.rfind('.').unwrap()];
    let mac = Hmac::<Sha256>::new_from_slice(KEY).unwrap();
    let tag = mac.clone().chain_update(signed).finalize().into_bytes();
    g.bench_function("hmac_sign_token_bytes", |b| {
        b.iter(|| {
            mac.clone()
                .chain_update(black_box(signed))
                .finalize()
                .into_bytes()
        })
    });
    g.bench_function("hmac_verify_token_bytes", |b| {
        b.iter(|| {
            mac.clone()
                .chain_update(black_box(signed))
                .verify_slice(&tag)
                .unwrap()
        })
    });
    let payload_json = serde_json::to_vec(&payload).unwrap();
    g.bench_function("payload_json_parse", |b| {
        b.iter(|| serde_json::from_slice::<StatePayload>(black_box(&payload_json)).unwrap())
    });
    g.finish();

    let mut g = c.benchmark_group("canonical");
    let small = delete_args();
    let wide = wide_args();
    eprintln!(
        "canonical args: small {} bytes, wide {} bytes",
        canonical_json(&small).len(),
        canonical_json(&wide).len()
    );
    g.bench_function("digest_notes_delete_args", |b| {
        b.iter(|| canonical_digest(black_box(&small)))
    });
    g.bench_function("digest_wide_args_1k", |b| {
        b.iter(|| canonical_digest(black_box(&wide)))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bench_state
}
criterion_main!(benches);
