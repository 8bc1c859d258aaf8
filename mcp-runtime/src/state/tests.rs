use super::*;
use hmac::Mac as _;
use serde_json::json;

const NOW: u64 = 1_800_000_000;

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn ring(text: &str) -> StateKeyring {
    StateKeyring::from_key_file_contents(text).unwrap()
}

fn key_line(kid: &str, fill: u8) -> String {
    format!("{kid}:{}", B64.encode([fill; 32]))
}

fn args() -> Value {
    json!({"path": "notes/a.md", "force": true})
}

fn payload() -> StatePayload {
    let mut p = StatePayload::new(
        "alice",
        "tools/call",
        "delete_note",
        canonical_digest(&args()),
        at(NOW),
        Duration::from_secs(300),
    )
    .unwrap();
    p.bindings
        .insert("confirm".into(), canonical_digest(&json!({"schema": 1})));
    p.answers.insert("first".into(), json!({"ok": true}));
    p
}

fn expect(digest: ArgDigest) -> Expectation<'static> {
    Expectation {
        principal: "alice",
        method: "tools/call",
        target: "delete_note",
        arg_digest: digest,
    }
}

fn good() -> (StateKeyring, String, StatePayload) {
    let keys = ring(&key_line("k1", 7));
    let p = payload();
    let token = keys.seal(&p).unwrap();
    (keys, token, p)
}

#[test]
fn round_trip_preserves_everything() {
    let (keys, token, p) = good();
    assert!(token.starts_with("v2.k1."));
    let opened = keys
        .open(&token, &expect(canonical_digest(&args())), at(NOW + 10))
        .unwrap();
    assert_eq!(opened, p);
    assert_eq!(opened.answers.keys().collect::<Vec<_>>(), ["first"]);
}

#[test]
fn reformatted_arguments_still_match() {
    let (keys, token, _) = good();
    let same: Value = serde_json::from_str(r#"{ "force" : true, "path":"notes/a.md" }"#).unwrap();
    assert!(
        keys.open(&token, &expect(canonical_digest(&same)), at(NOW))
            .is_ok()
    );
}

#[test]
fn tampered_payload_byte_fails_signature() {
    let (keys, token, _) = good();
    let parts: Vec<&str> = token.split('.').collect();
    let mut payload = parts[2].as_bytes().to_vec();
    payload[5] = if payload[5] == b'A' { b'B' } else { b'A' };
    let forged = format!(
        "{}.{}.{}.{}",
        parts[0],
        parts[1],
        String::from_utf8(payload).unwrap(),
        parts[3]
    );
    let err = keys
        .open(&forged, &expect(canonical_digest(&args())), at(NOW))
        .unwrap_err();
    assert_eq!(err, StateError::BadSignature);
}

#[test]
fn re_signed_payload_with_other_key_fails() {
    // An attacker who edits the payload and signs with their own key under our kid.
    let (keys, _, mut p) = good();
    p.principal = "mallory".into();
    let forged = ring(&key_line("k1", 8)).seal(&p).unwrap();
    let err = keys
        .open(&forged, &expect(canonical_digest(&args())), at(NOW))
        .unwrap_err();
    assert_eq!(err, StateError::BadSignature);
}

#[test]
fn tampered_mac_byte_fails() {
    let (keys, token, _) = good();
    let mut bytes = token.into_bytes();
    let i = bytes.len() - 10;
    bytes[i] = if bytes[i] == b'x' { b'y' } else { b'x' };
    let err = keys
        .open(
            &String::from_utf8(bytes).unwrap(),
            &expect(canonical_digest(&args())),
            at(NOW),
        )
        .unwrap_err();
    assert_eq!(err, StateError::BadSignature);
}

#[test]
fn changed_kid_or_version_fails() {
    let (_, token, _) = good();
    let keys = ring(&format!("{}\n{}", key_line("k1", 7), key_line("k2", 9)));
    let e = expect(canonical_digest(&args()));
    // Pointing the token at another configured key: the MAC (which covers the kid) fails.
    let err = keys
        .open(&token.replacen(".k1.", ".k2.", 1), &e, at(NOW))
        .unwrap_err();
    assert_eq!(err, StateError::BadSignature);
    let err = keys
        .open(&token.replacen(".k1.", ".k9.", 1), &e, at(NOW))
        .unwrap_err();
    assert_eq!(
        err,
        StateError::UnknownKey {
            kid: Some("k9".into())
        }
    );
    let err = keys
        .open(&token.replacen(".k1.", ".k 1.", 1), &e, at(NOW))
        .unwrap_err();
    assert_eq!(err, StateError::UnknownKey { kid: None });
    let err = keys
        .open(&token.replacen("v2.", "v3.", 1), &e, at(NOW))
        .unwrap_err();
    assert_eq!(err, StateError::UnsupportedVersion);
    // The version is signed: relabelling a v2 token as v1 breaks the MAC.
    let err = keys
        .open(&token.replacen("v2.", "v1.", 1), &e, at(NOW))
        .unwrap_err();
    assert_eq!(err, StateError::BadSignature);
}

#[test]
fn expiry_and_future_issue() {
    let (keys, token, p) = good();
    let e = expect(canonical_digest(&args()));
    assert!(keys.open(&token, &e, at(p.expires_at - 1)).is_ok());
    let err = keys.open(&token, &e, at(p.expires_at)).unwrap_err();
    assert_eq!(
        err,
        StateError::Expired {
            expired_at: p.expires_at
        }
    );
    assert_eq!(err.reason(), "expired");
    let err = keys.open(&token, &e, at(NOW - 61)).unwrap_err();
    assert_eq!(err, StateError::IssuedInFuture);
    assert!(keys.open(&token, &e, at(NOW - 59)).is_ok());
}

#[test]
fn binding_mismatches_are_distinct() {
    let (keys, token, _) = good();
    let d = canonical_digest(&args());
    let cases = [
        (
            Expectation {
                principal: "bob",
                ..expect(d)
            },
            StateError::PrincipalMismatch,
        ),
        (
            Expectation {
                method: "prompts/get",
                ..expect(d)
            },
            StateError::MethodMismatch,
        ),
        (
            Expectation {
                target: "read_note",
                ..expect(d)
            },
            StateError::TargetMismatch,
        ),
        (
            expect(canonical_digest(
                &json!({"path": "notes/b.md", "force": true}),
            )),
            StateError::ArgumentsChanged,
        ),
    ];
    for (e, want) in cases {
        assert_eq!(keys.open(&token, &e, at(NOW)).unwrap_err(), want);
    }
}

#[test]
fn key_rotation() {
    let old = ring(&key_line("old", 1));
    let token = old.seal(&payload()).unwrap();
    let e = expect(canonical_digest(&args()));
    let rotated = ring(&format!("{}\n{}", key_line("new", 2), key_line("old", 1)));
    assert!(rotated.open(&token, &e, at(NOW)).is_ok());
    // New tokens are signed with the new key.
    assert!(rotated.seal(&payload()).unwrap().starts_with("v2.new."));
    let retired = ring(&key_line("new", 2));
    assert_eq!(
        retired.open(&token, &e, at(NOW)).unwrap_err(),
        StateError::UnknownKey {
            kid: Some("old".into())
        }
    );
    // Programmatic construction behaves the same.
    let built = StateKeyring::new(
        StateKey::new("new", &[2; 32]).unwrap(),
        vec![StateKey::new("old", &[1; 32]).unwrap()],
    )
    .unwrap();
    assert!(built.open(&token, &e, at(NOW)).is_ok());
    assert!(
        StateKeyring::new(
            StateKey::new("a", &[2; 32]).unwrap(),
            vec![StateKey::new("a", &[1; 32]).unwrap()]
        )
        .is_err()
    );
}

#[test]
fn overlong_tokens_rejected_before_decoding() {
    let (keys, _, _) = good();
    let huge = "v1.k1.".to_owned() + &"A".repeat(MAX_TOKEN_LEN);
    let err = keys
        .open(&huge, &expect(canonical_digest(&args())), at(NOW))
        .unwrap_err();
    assert_eq!(err.reason(), "too_long");
    let mut big = payload();
    big.answers
        .insert("blob".into(), json!("x".repeat(MAX_TOKEN_LEN)));
    assert!(matches!(keys.seal(&big), Err(SealError::TooLarge { .. })));
}

#[test]
fn malformed_shapes() {
    let (keys, token, _) = good();
    let e = expect(canonical_digest(&args()));
    for bad in [
        "",
        "v1",
        "v1.k1.abc",
        &format!("{token}.x"),
        "v1.k1.abc.short",
        "v1.k1..=",
    ] {
        let err = keys.open(bad, &e, at(NOW)).unwrap_err();
        assert!(matches!(err, StateError::Malformed(_)), "{bad:?}: {err:?}");
    }
    // A 43-char MAC with non-canonical trailing bits is rejected as malformed, not accepted.
    let parts: Vec<&str> = token.split('.').collect();
    let mut mac = parts[3].to_owned();
    mac.pop();
    mac.push('_');
    let odd = format!("{}.{}.{}.{mac}", parts[0], parts[1], parts[2]);
    assert!(keys.open(&odd, &e, at(NOW)).is_err());
}

#[test]
fn errors_never_echo_the_token() {
    let (keys, token, _) = good();
    let parts: Vec<&str> = token.split('.').collect();
    let e = expect(canonical_digest(&args()));
    let variants = [
        format!("{}.{}.{}.{}", parts[0], parts[1], parts[3], parts[2]),
        format!("v9.{}.{}.{}", parts[1], parts[2], parts[3]),
        format!("{}.{}.{}.{}", parts[0], parts[1], parts[2], parts[2]),
    ];
    for bad in variants {
        let err = keys.open(&bad, &e, at(NOW)).unwrap_err();
        let shown = format!("{err:?} {err}");
        assert!(!shown.contains(&parts[2][..16]), "{shown}");
        assert!(!shown.contains(&parts[3][..16]), "{shown}");
    }
}

#[test]
fn reasons_are_distinct() {
    let all = [
        StateError::TooLong { len: 1, max: 0 },
        StateError::Malformed("x"),
        StateError::UnsupportedVersion,
        StateError::UnknownKey { kid: None },
        StateError::BadSignature,
        StateError::InvalidPayload,
        StateError::Expired { expired_at: 0 },
        StateError::IssuedInFuture,
        StateError::PrincipalMismatch,
        StateError::MethodMismatch,
        StateError::TargetMismatch,
        StateError::ArgumentsChanged,
    ];
    let reasons: std::collections::HashSet<_> = all.iter().map(StateError::reason).collect();
    assert_eq!(reasons.len(), all.len());
}

#[test]
fn next_round_keeps_answers_and_renews_nonce() {
    let p = payload();
    let next = p
        .next_round(at(NOW + 100), Duration::from_secs(60))
        .unwrap();
    assert_eq!(next.round, 1);
    assert_eq!(next.answers, p.answers);
    assert!(next.bindings.is_empty());
    assert_ne!(next.nonce, p.nonce);
    assert_eq!(next.expires_at, NOW + 160);
    assert_eq!(next.expires_at_time(), at(NOW + 160));
}

/// A token of format `version` over `body`, correctly signed by `signing`'s current key.
fn sign_as(signing: &StateKeyring, version: &str, body: &[u8]) -> String {
    let unsigned = format!("{version}.{}.{}", signing.current().kid(), B64.encode(body));
    let mut mac = signing.current().mac();
    mac.update(unsigned.as_bytes());
    format!("{unsigned}.{}", B64.encode(mac.finalize().into_bytes()))
}

#[test]
fn version_1_json_tokens_still_open() {
    let keys = ring(&key_line("k1", 7));
    let p = payload();
    let v1 = sign_as(&keys, "v1", &serde_json::to_vec(&p).unwrap());
    let opened = keys
        .open(&v1, &expect(canonical_digest(&args())), at(NOW + 1))
        .unwrap();
    assert_eq!(opened, p);
    // A JSON payload under the v2 label is not a binary payload.
    let mislabelled = sign_as(&keys, "v2", &serde_json::to_vec(&p).unwrap());
    let err = keys
        .open(
            &mislabelled,
            &expect(canonical_digest(&args())),
            at(NOW + 1),
        )
        .unwrap_err();
    assert_eq!(err, StateError::InvalidPayload);
}

#[test]
fn version_2_tokens_are_shorter_than_version_1() {
    let keys = ring(&key_line("k1", 7));
    let p = payload();
    let v2 = keys.seal(&p).unwrap();
    let v1 = sign_as(&keys, "v1", &serde_json::to_vec(&p).unwrap());
    assert!(
        v2.len() * 4 < v1.len() * 3,
        "v2 {} vs v1 {}",
        v2.len(),
        v1.len()
    );
}

#[test]
fn correlations_and_answers_survive_sealing() {
    let keys = ring(&key_line("k1", 7));
    let mut p = payload();
    p.correlations
        .insert("pay".into(), CorrelationId::random().unwrap());
    p.correlations
        .insert("auth".into(), CorrelationId::random().unwrap());
    p.answers.insert("second".into(), json!([1, null, "x"]));
    p.round = 7;
    let token = keys.seal(&p).unwrap();
    let opened = keys
        .open(&token, &expect(canonical_digest(&args())), at(NOW))
        .unwrap();
    assert_eq!(opened, p);
    assert_eq!(
        opened.answers.keys().collect::<Vec<_>>(),
        ["first", "second"]
    );
}

use proptest::strategy::Strategy as _;

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

    /// Every byte string correctly signed as a v2 payload (random, or a valid encoding with a
    /// few bytes changed) is either refused as unreadable or reads back into a payload that
    /// encodes to exactly those bytes: one encoding each, and no input makes the decoder panic.
    #[test]
    fn signed_v2_bytes_decode_canonically_or_not_at_all(
        body in proptest::prop_oneof![
            proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            proptest::collection::vec(
                (proptest::prelude::any::<proptest::sample::Index>(), proptest::prelude::any::<u8>()),
                1..4,
            )
            .prop_map(|edits| {
                let mut bytes = Vec::new();
                let mut p = payload();
                p.answers.clear();
                p.correlations.insert("c".into(), CorrelationId(Nonce::from_bytes([9; 16])));
                payload::encode(&p, &mut bytes);
                for (i, b) in edits {
                    let i = i.index(bytes.len());
                    bytes[i] = b;
                }
                bytes
            }),
        ],
    ) {
        match payload::decode(&body) {
            Ok(p) => {
                let mut again = Vec::new();
                payload::encode(&p, &mut again);
                if p.answers.is_empty() {
                    proptest::prop_assert_eq!(again, body);
                } else {
                    // Answers are JSON text; serde_json decides their spelling.
                    proptest::prop_assert_eq!(payload::decode(&again), Ok(p));
                }
            }
            Err(payload::Unreadable) => {
                let keys = ring(&key_line("k1", 7));
                let token = sign_as(&keys, "v2", &body);
                let err = keys.open(&token, &expect(canonical_digest(&args())), at(NOW));
                proptest::prop_assert_eq!(err, Err(StateError::InvalidPayload));
            }
        }
    }

    /// The token splitter finds exactly what `split('.')` finds, and refuses any other count
    /// of parts, whatever the text (dots anywhere, empty parts, multi-byte characters).
    #[test]
    fn tokens_split_like_split_on_dots(text in "[a.é]{0,12}|\\PC{0,40}") {
        let reference: Vec<&str> = text.split('.').collect();
        match split_token(&text) {
            Ok(parts) => proptest::prop_assert_eq!(parts.to_vec(), reference),
            Err(e) => {
                proptest::prop_assert_ne!(reference.len(), 4);
                proptest::prop_assert_eq!(
                    e,
                    StateError::Malformed("expected four dot-separated parts")
                );
            }
        }
    }

    /// Digest equality is byte equality: equal arrays compare equal, and a change to any one
    /// byte, in any of the four words, is seen.
    #[test]
    fn digests_compare_equal_exactly_when_every_byte_does(
        a in proptest::prelude::any::<[u8; 32]>(),
        at in 0usize..32,
        flip in 1u8..=255,
    ) {
        proptest::prop_assert!(canonical::digests_equal(&a, &a));
        let mut b = a;
        b[at] ^= flip;
        proptest::prop_assert!(!canonical::digests_equal(&a, &b));
        proptest::prop_assert!(!canonical::digests_equal(&b, &a));
        proptest::prop_assert_ne!(ArgDigest::from_bytes(a), ArgDigest::from_bytes(b));
    }

    /// Payloads survive the binary encoding whatever their strings, rounds, times and maps.
    #[test]
    fn payloads_round_trip_through_the_binary_encoding(
        principal in "\\PC{0,12}",
        method in "[a-z/]{0,12}",
        target in "\\PC{0,12}",
        round in proptest::prelude::any::<u32>(),
        issued_at in proptest::prelude::any::<u64>(),
        expires_at in proptest::prelude::any::<u64>(),
        bindings in proptest::collection::btree_map("\\PC{0,6}", proptest::prelude::any::<[u8; 32]>(), 0..4),
        answers in proptest::collection::vec(("[a-z]{0,4}", proptest::prelude::any::<i64>()), 0..4),
        correlations in proptest::collection::btree_map("[a-z_]{0,6}", proptest::prelude::any::<[u8; 16]>(), 0..3),
        nonce in proptest::prelude::any::<[u8; 16]>(),
        flow in proptest::option::of(proptest::prelude::any::<([u8; 16], [u8; 8])>()),
    ) {
        let p = StatePayload {
            principal,
            method,
            target,
            arg_digest: canonical_digest(&args()),
            bindings: bindings.into_iter().map(|(k, d)| (k, ArgDigest::from_bytes(d))).collect(),
            round,
            answers: answers.into_iter().map(|(k, v)| (k, json!({"n": v, "s": [v.to_string()]}))).collect(),
            issued_at,
            expires_at,
            nonce: Nonce::from_bytes(nonce),
            correlations: correlations
                .into_iter()
                .map(|(k, id)| (k, CorrelationId(Nonce::from_bytes(id))))
                .collect(),
            flow_trace: flow.and_then(|(t, s)| FlowTrace::new(t, s)),
        };
        let mut bytes = Vec::new();
        payload::encode(&p, &mut bytes);
        proptest::prop_assert_eq!(payload::decode(&bytes), Ok(p));
    }
}

#[test]
fn mac_is_checked_before_the_payload_is_parsed() {
    let keys = ring(&key_line("k1", 7));
    let e = expect(canonical_digest(&args()));
    let sign = |signing: &StateKeyring, body: &[u8]| sign_as(signing, "v1", body);
    // Garbage correctly signed: authenticated, then refused as an unreadable payload.
    let err = keys
        .open(&sign(&keys, b"{not json"), &e, at(NOW))
        .unwrap_err();
    assert_eq!(err, StateError::InvalidPayload);
    // The same garbage signed by anyone else never reaches the parser.
    let err = keys
        .open(&sign(&ring(&key_line("k1", 8)), b"{not json"), &e, at(NOW))
        .unwrap_err();
    assert_eq!(err, StateError::BadSignature);
    // Unknown fields in an authenticated payload are refused, not ignored.
    let mut v = serde_json::to_value(payload()).unwrap();
    v.as_object_mut()
        .unwrap()
        .insert("admin".into(), json!(true));
    let err = keys
        .open(&sign(&keys, v.to_string().as_bytes()), &e, at(NOW))
        .unwrap_err();
    assert_eq!(err, StateError::InvalidPayload);
}

#[test]
fn nonces_are_distinct_across_pool_refills_and_threads() {
    use std::collections::HashSet;
    let per_block = super::RANDOM_BLOCK / 16;
    let draw = move || {
        (0..per_block * 3 + 5)
            .map(|_| Nonce::random().unwrap())
            .collect::<Vec<_>>()
    };
    let other = std::thread::spawn(draw).join().unwrap();
    let mine = draw();
    let all: HashSet<Nonce> = mine.iter().chain(&other).copied().collect();
    assert_eq!(
        all.len(),
        mine.len() + other.len(),
        "a nonce was handed out twice"
    );
    assert!(
        !all.contains(&Nonce::from_bytes([0; 16])),
        "a wiped slot was handed out"
    );
}

#[test]
fn unverified_reading_decodes_both_versions_and_verifies_nothing() {
    let (keys, token, p) = good();
    assert_eq!(read_unverified(&token), Ok(p.clone()));
    let v1 = sign_as(&keys, "v1", &serde_json::to_vec(&p).unwrap());
    assert_eq!(read_unverified(&v1), Ok(p));
    // A forged MAC does not matter to it (that is what `open` is for)...
    let parts: Vec<&str> = token.split('.').collect();
    let forged = format!("{}.{}.{}.{}", parts[0], parts[1], parts[2], "A".repeat(43));
    assert!(read_unverified(&forged).is_ok());
    assert_eq!(
        keys.open(&forged, &expect(canonical_digest(&args())), at(NOW)),
        Err(StateError::BadSignature)
    );
    // ...but the shape and the payload still have to be right.
    assert_eq!(
        read_unverified("v2.k1.AAAA"),
        Err(StateError::Malformed("expected four dot-separated parts"))
    );
    assert_eq!(
        read_unverified("v9.k1.AAAA.AAAA"),
        Err(StateError::UnsupportedVersion)
    );
    assert_eq!(
        read_unverified("v2.k1.AAAA.AAAA"),
        Err(StateError::InvalidPayload)
    );
}

#[test]
fn large_payloads_open_too() {
    // Past the stack buffer `open` decodes typical payloads into.
    let keys = ring(&key_line("k1", 7));
    let mut p = payload();
    for i in 0..20 {
        p.answers
            .insert(format!("answer-{i}"), json!({"text": "x".repeat(100)}));
    }
    let token = keys.seal(&p).unwrap();
    assert!(token.len() > 2048, "{}", token.len());
    let opened = keys
        .open(&token, &expect(canonical_digest(&args())), at(NOW))
        .unwrap();
    assert_eq!(opened, p);
}

#[test]
fn a_flow_trace_survives_sealing_and_its_absence_is_the_old_encoding() {
    let keys = ring(&key_line("k1", 7));
    let mut p = payload();
    let plain = keys.seal(&p).unwrap();
    p.flow_trace = FlowTrace::new([7; 16], [9; 8]);
    let traced = keys.seal(&p).unwrap();
    // 25 bytes more (tag, trace id, span id), about 34 base64 characters.
    assert!(
        traced.len() - plain.len() <= 34,
        "{} vs {}",
        traced.len(),
        plain.len()
    );
    assert_eq!(read_unverified(&traced).unwrap().flow_trace, p.flow_trace);
    assert_eq!(read_unverified(&plain).unwrap().flow_trace, None);
    // The JSON form carries it as TRACEID-SPANID.
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(
        json["ft"],
        format!("{}-{}", "07".repeat(16), "09".repeat(8))
    );
    let back: StatePayload = serde_json::from_value(json).unwrap();
    assert_eq!(back.flow_trace, p.flow_trace);
}

#[test]
fn a_zero_or_unknown_flow_trace_is_refused() {
    let p = payload();
    let mut bytes = Vec::new();
    payload::encode(&p, &mut bytes);
    let base = bytes.len();
    bytes.push(0x01);
    bytes.extend_from_slice(&[0; 24]);
    assert!(payload::decode(&bytes).is_err(), "zero ids");
    bytes.truncate(base);
    bytes.push(0x02);
    assert!(payload::decode(&bytes).is_err(), "unknown tag");
    bytes.truncate(base);
    bytes.push(0x01);
    bytes.extend_from_slice(&[1; 10]);
    assert!(payload::decode(&bytes).is_err(), "truncated");
}
