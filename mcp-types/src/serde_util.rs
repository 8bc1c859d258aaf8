//! Serde helpers shared by several modules.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Deserializes a field that may legitimately hold JSON `null` (e.g.
/// `structuredContent`): a present `null` becomes `Some(Value::Null)`, and only an
/// absent member (via `#[serde(default)]`) becomes `None`.
pub(crate) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Reads the string member `key` of a JSON object, for hand-written tag dispatch.
pub(crate) fn str_member<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}
