//! `x-mcp-header`: which `tools/call` arguments travel again as `Mcp-Param-{Name}` HTTP
//! headers, as a tool's `inputSchema` declares them.
//!
//! A property of the arguments object (at any depth of nested `properties`) may carry
//! `"x-mcp-header": "Name"`. A Streamable HTTP client mirrors that argument's value into the
//! header `Mcp-Param-Name`; the server checks the header against the body. Only `properties`
//! are walked: a declaration under `items`, a composition keyword or a `$ref` is not reachable
//! and is not mirrored. Both sides read the rules with [`param_header_rules`], so a client and
//! a server built on this crate agree on them.

use std::collections::HashSet;

use serde_json::Value;

use crate::JsonObject;

/// One mirrored argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeaderRule {
    /// The header name without the `Mcp-Param-` prefix, as declared.
    pub name: String,
    /// The property names leading from the arguments object to the value.
    pub path: Vec<String>,
}

/// Why a schema's `x-mcp-header` declarations cannot be used. A server refuses to start with
/// such a tool; a client leaves the tool out, since its calls could not be sent correctly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamHeaderRuleError {
    /// The declaration is not a JSON string.
    #[error("x-mcp-header on `{path}` must be a string")]
    NotAString {
        /// The property's dotted path.
        path: String,
    },
    /// The name is empty or not an HTTP token (RFC 9110 `tchar`s).
    #[error("x-mcp-header `{name}` on `{path}` is not an HTTP token")]
    NotAToken {
        /// The declared name.
        name: String,
        /// The property's dotted path.
        path: String,
    },
    /// The property is not a string, integer or boolean.
    #[error(
        "x-mcp-header `{name}` sits on `{path}`, which is not a string, integer or boolean property"
    )]
    WrongType {
        /// The declared name.
        name: String,
        /// The property's dotted path.
        path: String,
    },
    /// Two properties declare the same name (names are case-insensitive).
    #[error("x-mcp-header `{name}` is used twice (names are case-insensitive)")]
    Duplicate {
        /// The repeated name, as declared the second time.
        name: String,
    },
}

/// The `x-mcp-header` rules of a tool's `inputSchema`, in declaration order.
///
/// # Errors
/// [`ParamHeaderRuleError`] for the first declaration the spec forbids.
pub fn param_header_rules(
    input_schema: &JsonObject,
) -> Result<Vec<ParamHeaderRule>, ParamHeaderRuleError> {
    let mut out = Vec::new();
    walk(input_schema, &mut Vec::new(), &mut out)?;
    let mut seen = HashSet::new();
    for rule in &out {
        if !seen.insert(rule.name.to_ascii_lowercase()) {
            return Err(ParamHeaderRuleError::Duplicate {
                name: rule.name.clone(),
            });
        }
    }
    Ok(out)
}

fn walk(
    schema: &JsonObject,
    path: &mut Vec<String>,
    out: &mut Vec<ParamHeaderRule>,
) -> Result<(), ParamHeaderRuleError> {
    let Some(Value::Object(props)) = schema.get("properties") else {
        return Ok(());
    };
    for (key, prop) in props {
        let Value::Object(prop) = prop else { continue };
        path.push(key.clone());
        if let Some(header) = prop.get("x-mcp-header") {
            let Value::String(name) = header else {
                return Err(ParamHeaderRuleError::NotAString {
                    path: path.join("."),
                });
            };
            if name.is_empty() || !name.bytes().all(is_tchar) {
                return Err(ParamHeaderRuleError::NotAToken {
                    name: name.clone(),
                    path: path.join("."),
                });
            }
            if !matches!(
                prop.get("type").and_then(Value::as_str),
                Some("string" | "integer" | "boolean")
            ) {
                return Err(ParamHeaderRuleError::WrongType {
                    name: name.clone(),
                    path: path.join("."),
                });
            }
            out.push(ParamHeaderRule {
                name: name.clone(),
                path: path.clone(),
            });
        }
        walk(prop, path, out)?;
        path.pop();
    }
    Ok(())
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn rules(schema: Value) -> Result<Vec<ParamHeaderRule>, ParamHeaderRuleError> {
        param_header_rules(schema.as_object().unwrap())
    }

    #[test]
    fn nested_properties_are_found_in_order() {
        let found = rules(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {
                "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}
            }},
            "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Hidden"}}
        }}))
        .unwrap();
        assert_eq!(
            found,
            vec![
                ParamHeaderRule {
                    name: "Region".into(),
                    path: vec!["region".into()]
                },
                ParamHeaderRule {
                    name: "Dry-Run".into(),
                    path: vec!["opts".into(), "dry".into()]
                },
            ]
        );
    }

    #[test]
    fn forbidden_declarations_are_refused() {
        let one = |prop: Value| rules(json!({"properties": {"a": prop}})).unwrap_err();
        assert!(matches!(
            one(json!({"type": "string", "x-mcp-header": 3})),
            ParamHeaderRuleError::NotAString { .. }
        ));
        for bad in ["", "has space", "a:b", "é"] {
            assert!(matches!(
                one(json!({"type": "string", "x-mcp-header": bad})),
                ParamHeaderRuleError::NotAToken { .. }
            ));
        }
        for ty in [json!("number"), json!("object"), json!(null)] {
            assert!(matches!(
                one(json!({"type": ty, "x-mcp-header": "A"})),
                ParamHeaderRuleError::WrongType { .. }
            ));
        }
        let twice = rules(json!({"properties": {
            "a": {"type": "string", "x-mcp-header": "Name"},
            "b": {"type": "integer", "x-mcp-header": "NAME"}
        }}));
        assert!(matches!(twice, Err(ParamHeaderRuleError::Duplicate { .. })));
    }
}
