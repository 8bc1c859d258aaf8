//! [`AnswerRecord`]: how an answer accepted in one round travels to the later rounds, inside
//! the signed state.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::state::ArgDigest;

/// An answer accepted in an earlier round, as kept in [`crate::state::StatePayload::answers`]
/// under its input key.
///
/// On the wire it is the JSON object `{"s": binding, "r": response}`, plus `"x": true` once
/// its confirmation was carried out; the fields serialise in that order (the payload keeps the
/// object's text as written), so states sealed before this type existed open unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct AnswerRecord {
    /// Digest of what was shown under the key when it was answered.
    #[serde(rename = "s")]
    pub(crate) digest: ArgDigest,
    /// The client's response, as sent.
    #[serde(rename = "r", default)]
    pub(crate) response: Value,
    /// Whether the confirmation was carried out (it must not be carried out again).
    #[serde(rename = "x", default, skip_serializing_if = "is_false")]
    pub(crate) executed: bool,
}

impl AnswerRecord {
    /// The record as the payload stores it.
    pub(crate) fn to_value(&self) -> Value {
        // A struct of a string, a `Value` and a bool always serialises.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Reads a record from the payload; `None` when it is not one.
    pub(crate) fn from_value(value: &Value) -> Option<Self> {
        Self::deserialize(value).ok()
    }
}

/// serde's `skip_serializing_if` passes a reference.
fn is_false(b: &bool) -> bool {
    !*b
}

#[cfg(test)]
mod tests {
    use super::AnswerRecord;
    use crate::state::ArgDigest;
    use serde_json::{Map, Value, json};

    /// The record as it was built before it had a type: an insertion-ordered map.
    fn untyped(digest: ArgDigest, response: Value, executed: bool) -> Value {
        let mut record = Map::new();
        record.insert("s".to_owned(), Value::String(digest.to_string()));
        record.insert("r".to_owned(), response);
        if executed {
            record.insert("x".to_owned(), Value::Bool(true));
        }
        Value::Object(record)
    }

    #[test]
    fn the_typed_record_writes_the_bytes_the_untyped_one_did() {
        let digest = ArgDigest::from_bytes([7; 32]);
        for executed in [false, true] {
            let response = json!({"action": "accept", "content": {"b": 1, "a": [true, null]}});
            let typed = AnswerRecord {
                digest,
                response: response.clone(),
                executed,
            };
            let old = serde_json::to_vec(&untyped(digest, response, executed)).unwrap();
            assert_eq!(serde_json::to_vec(&typed.to_value()).unwrap(), old);
            let read: Value = serde_json::from_slice(&old).unwrap();
            assert_eq!(AnswerRecord::from_value(&read), Some(typed));
        }
    }

    #[test]
    fn a_record_without_a_digest_is_not_one() {
        assert_eq!(AnswerRecord::from_value(&json!({"r": 1})), None);
        assert_eq!(AnswerRecord::from_value(&json!({"s": 5, "r": 1})), None);
        assert_eq!(AnswerRecord::from_value(&json!([1])), None);
        // A missing response reads as `null`, as before.
        let digest = ArgDigest::from_bytes([1; 32]);
        let bare = AnswerRecord::from_value(&json!({"s": digest.to_string()})).unwrap();
        assert_eq!(bare.response, Value::Null);
        assert!(!bare.executed);
    }
}
