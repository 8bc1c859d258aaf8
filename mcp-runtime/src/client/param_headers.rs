//! `x-mcp-header`: which tool arguments an HTTP client mirrors into `Mcp-Param-{Name}` headers,
//! and how a value is written.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcp_types::{
    JsonObject, ParamHeaderRule as HeaderRule, ParamHeaderRuleError, Tool, param_header_rules,
};
use serde_json::Value;

/// The header rules of `tool`, or why the tool breaks the `x-mcp-header` rules (such a tool
/// is dropped from the client's tool list: its calls could not be sent correctly).
pub(crate) fn rules(tool: &Tool) -> Result<Vec<HeaderRule>, ParamHeaderRuleError> {
    param_header_rules(tool.input_schema.as_object())
}

/// The `(name, value)` headers for `arguments` under `rules`; absent and `null` values send no
/// header.
pub(crate) fn headers(
    rules: &[HeaderRule],
    arguments: Option<&JsonObject>,
) -> Vec<(String, String)> {
    let Some(arguments) = arguments else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for rule in rules {
        let mut value = None;
        let mut node = arguments;
        for (i, key) in rule.path.iter().enumerate() {
            match node.get(key) {
                Some(Value::Object(o)) if i + 1 < rule.path.len() => node = o,
                Some(v) if i + 1 == rule.path.len() => value = Some(v),
                _ => break,
            }
        }
        let text = match value {
            Some(Value::String(s)) => encode(s),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            _ => continue,
        };
        out.push((rule.name.clone(), text));
    }
    out
}

/// A header value: as is when it is visible ASCII (spaces inside allowed) with no leading or
/// trailing whitespace, otherwise the `=?base64?…?=` sentinel of its UTF-8 bytes.
pub(crate) fn encode(value: &str) -> String {
    // A plain value that looks like a sentinel is wrapped too, so it is not decoded.
    let looks_wrapped = value.starts_with("=?base64?") && value.ends_with("?=");
    let plain = value.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !looks_wrapped;
    if plain {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", STANDARD.encode(value.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn values_that_cannot_travel_as_is_are_base64_wrapped() {
        assert_eq!(encode("us-west1"), "us-west1");
        assert_eq!(encode("Hello World"), "Hello World");
        assert_eq!(encode("élève"), "=?base64?w6lsw6h2ZQ==?=");
        assert_eq!(encode(" padded"), "=?base64?IHBhZGRlZA==?=");
        assert_eq!(encode("a\nb"), "=?base64?YQpi?=");
    }
}
