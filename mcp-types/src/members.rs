//! Member lookup in the small JSON objects every MCP message is made of.
//!
//! `serde_json`'s map (an `IndexMap` with SipHash, under `preserve_order`) hashes the key on
//! every `get`. An envelope, a `tools/call` params object, an `ElicitResult` or its form
//! content has a handful of members, and comparing a few short strings costs less than one
//! SipHash. A server's hot path makes dozens of such lookups per request.
//!
//! ```
//! use mcp_types::members::{member, member_of};
//! use serde_json::json;
//!
//! let answer = json!({"action": "accept", "content": {"confirm": true}});
//! assert_eq!(member_of(&answer, "action"), Some(&json!("accept")));
//! let content = answer["content"].as_object().expect("an object");
//! assert_eq!(member(content, "confirm"), Some(&json!(true)));
//! assert_eq!(member(content, "missing"), None);
//! ```

use serde_json::Value;

use crate::JsonObject;

/// Up to this many members, a lookup scans instead of hashing.
const SCAN_UP_TO: usize = 8;

/// `obj[key]`: the same answer as [`JsonObject::get`], found by scanning a small object and by
/// hashing a large one.
pub fn member<'a>(obj: &'a JsonObject, key: &str) -> Option<&'a Value> {
    if obj.len() <= SCAN_UP_TO {
        obj.iter().find_map(|(k, v)| (k == key).then_some(v))
    } else {
        obj.get(key)
    }
}

/// `value[key]` when `value` is an object ([`member`]); `None` for any other value.
pub fn member_of<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
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
