//! Shared helpers of the macro tests: byte-exact snapshots and JSON Schema validators.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Value, json};

/// Compares `value` (pretty JSON + newline) with `tests/snapshots/<name>` byte for byte.
/// `UPDATE_SNAPSHOTS=1` rewrites the file instead.
pub fn assert_snapshot(name: &str, value: &impl Serialize) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("snapshots")
        .join(name);
    let mut text = serde_json::to_string_pretty(value).expect("serializable");
    text.push('\n');
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &text).expect("write snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with UPDATE_SNAPSHOTS=1 to create it",
            path.display()
        )
    });
    assert!(
        expected == text,
        "snapshot {name} differs (UPDATE_SNAPSHOTS=1 to accept):\n--- expected\n{expected}\n--- actual\n{text}"
    );
}

/// A validator for `$MCP_SPEC_DIR/schema.json#/$defs/<def>`, or `None` when MCP_SPEC_DIR is unset.
pub fn spec_validator(def: &str) -> Option<jsonschema::Validator> {
    let dir = std::env::var_os("MCP_SPEC_DIR")?;
    let path = PathBuf::from(dir).join("schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let spec: Value = serde_json::from_str(&text).expect("schema.json is JSON");
    let mut root = json!({ "$ref": format!("#/$defs/{def}"), "$defs": spec["$defs"].clone() });
    if let Some(s) = spec.get("$schema") {
        root["$schema"] = s.clone();
    }
    Some(jsonschema::validator_for(&root).expect("spec schema compiles"))
}

/// A draft 2020-12 validator for a generated schema, with format assertions on.
pub fn content_validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(schema)
        .expect("generated schema compiles")
}
