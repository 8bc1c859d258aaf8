//! Property tests for signed request state: nothing but an untouched token opens, nothing
//! panics, and the canonical digest means "same JSON value".

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failure should abort the test

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_runtime::state::{
    ArgDigest, Expectation, StateKeyring, StatePayload, canonical_digest, canonical_json,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const NOW: u64 = 1_800_000_000;

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn keys() -> StateKeyring {
    StateKeyring::from_key_file_contents(
        "cur:QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlq\nprev:MDEyMzQ1Njc4OWFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6",
    )
    .unwrap()
}

fn digest() -> ArgDigest {
    canonical_digest(&json!({"q": "x"}))
}

fn expectation() -> Expectation<'static> {
    Expectation {
        principal: "alice",
        method: "tools/call",
        target: "t",
        arg_digest: digest(),
    }
}

fn valid_token(ring: &StateKeyring) -> String {
    let mut p = StatePayload::new(
        "alice",
        "tools/call",
        "t",
        digest(),
        at(NOW),
        Duration::from_secs(600),
    )
    .unwrap();
    p.answers
        .insert("k".into(), json!([1, "two", {"three": 3.5}]));
    ring.seal(&p).unwrap()
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // Dyadic fractions: their decimal text parses back exactly even without serde_json's
        // `float_roundtrip` feature (see the canonical module docs).
        (any::<i16>(), 0u32..8).prop_map(|(m, k)| Value::from(f64::from(m) / f64::from(1u32 << k))),
        "[a-z\u{e9}\"\\\\ ]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(("[a-e]{0,3}", inner), 0..5)
                .prop_map(|kvs| Value::Object(kvs.into_iter().collect())),
        ]
    })
}

/// The same value with every object's members in reverse insertion order.
fn reorder(v: &Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(reorder).collect()),
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, item) in map.iter().rev() {
                out.insert(k.clone(), reorder(item));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_strings_never_open(s in "\\PC{0,200}") {
        let ring = keys();
        prop_assert!(ring.open(&s, &expectation(), at(NOW)).is_err());
    }

    #[test]
    fn random_dotted_strings_never_open(
        kid in prop_oneof![Just("cur".to_owned()), Just("prev".to_owned()), "[a-z]{1,4}"],
        payload in "[A-Za-z0-9_-]{0,80}",
        mac in "[A-Za-z0-9_-]{43}",
    ) {
        let ring = keys();
        let token = format!("v1.{kid}.{payload}.{mac}");
        prop_assert!(ring.open(&token, &expectation(), at(NOW)).is_err());
    }

    #[test]
    fn mutated_tokens_never_open(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..4),
    ) {
        let ring = keys();
        let token = valid_token(&ring);
        prop_assert!(ring.open(&token, &expectation(), at(NOW)).is_ok());
        let mut bytes = token.clone().into_bytes();
        for (index, byte, op) in edits {
            match op {
                0 if !bytes.is_empty() => {
                    let i = index.index(bytes.len());
                    bytes[i] = byte;
                }
                1 if !bytes.is_empty() => {
                    bytes.remove(index.index(bytes.len()));
                }
                _ => bytes.insert(index.index(bytes.len() + 1), byte),
            }
        }
        let mutated = String::from_utf8_lossy(&bytes).into_owned();
        prop_assume!(mutated != token);
        prop_assert!(ring.open(&mutated, &expectation(), at(NOW)).is_err());
    }

    #[test]
    fn digest_stable_under_reordering_and_whitespace(v in json_value()) {
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        let reparsed: Value = serde_json::from_str(&pretty).unwrap();
        prop_assert_eq!(canonical_digest(&v), canonical_digest(&reparsed));
        prop_assert_eq!(canonical_digest(&v), canonical_digest(&reorder(&v)));
        // The canonical form parses back to an equal value.
        let back: Value = serde_json::from_str(&canonical_json(&v)).unwrap();
        prop_assert_eq!(canonical_digest(&back), canonical_digest(&v));
    }

    #[test]
    fn digest_distinguishes_different_values(a in json_value(), b in json_value()) {
        // Canonical forms differ exactly when the values differ (numbers compared by value).
        let same = canonical_json(&a) == canonical_json(&b);
        prop_assert_eq!(same, canonical_digest(&a) == canonical_digest(&b));
        if a == b {
            prop_assert!(same);
        }
    }

    #[test]
    fn digest_changes_when_a_leaf_changes(v in json_value(), extra in "[a-z]{1,4}") {
        let wrapped = json!({"v": v.clone()});
        let changed = json!({"v": v, "extra": extra});
        prop_assert_ne!(canonical_digest(&wrapped), canonical_digest(&changed));
    }
}
