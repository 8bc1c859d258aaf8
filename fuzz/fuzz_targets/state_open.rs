//! Arbitrary tokens never open (the fuzzer cannot forge an HMAC) and never panic.
#![no_main]

use std::time::{Duration, SystemTime};

use libfuzzer_sys::fuzz_target;
use mcp_runtime::state::{Expectation, StateKey, StateKeyring, canonical_digest};

fuzz_target!(|data: &[u8]| {
    let Ok(token) = std::str::from_utf8(data) else {
        return;
    };
    let key = StateKey::new("k1", &[7u8; 32]).expect("valid key");
    let keyring = StateKeyring::new(key, Vec::new()).expect("valid keyring");
    let expect = Expectation {
        principal: "alice",
        method: "tools/call",
        target: "notes_delete",
        arg_digest: canonical_digest(&serde_json::json!({"title": "x"})),
    };
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    assert!(keyring.open(token, &expect, now).is_err());
});
