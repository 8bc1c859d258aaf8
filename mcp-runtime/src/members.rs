//! Member lookup in the small JSON objects every MCP message is made of.
//!
//! `serde_json`'s map (an `IndexMap` with SipHash, for `preserve_order`) hashes the key on every
//! `get`. A JSON-RPC envelope, a `tools/call` params object or a `_meta` has a handful of
//! members, and comparing a few short strings is cheaper than one SipHash; the hot path does
//! dozens of such lookups per request. Only the HTTP transport's header checks read the raw
//! message this way now (envelopes are classified by `mcp_types::classify_envelope`), so the
//! module is built with the `http` feature.

use mcp_types::JsonObject;
use serde_json::Value;

/// Up to this many members, a lookup scans instead of hashing.
const SCAN_UP_TO: usize = 8;

/// `obj[key]`, by scanning small objects and hashing large ones.
pub(crate) fn member<'a>(obj: &'a JsonObject, key: &str) -> Option<&'a Value> {
    if obj.len() <= SCAN_UP_TO {
        obj.iter().find_map(|(k, v)| (k == key).then_some(v))
    } else {
        obj.get(key)
    }
}

/// `value[key]` when `value` is an object.
pub(crate) fn member_of<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    value.as_object().and_then(|obj| member(obj, key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scanning_and_hashing_agree() {
        for n in [0usize, 1, 7, 8, 9, 40] {
            let obj: JsonObject = (0..n).map(|i| (format!("k{i}"), json!(i))).collect();
            for i in 0..n + 2 {
                let key = format!("k{i}");
                assert_eq!(member(&obj, &key), obj.get(&key), "n={n} key={key}");
            }
            let value = Value::Object(obj.clone());
            assert_eq!(member_of(&value, "k0"), obj.get("k0"));
        }
        assert_eq!(member_of(&json!([1]), "k0"), None);
    }
}
