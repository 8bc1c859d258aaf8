//! How deep the arrays and objects of a JSON message nest.
//!
//! A server must bound nesting before a hostile message can make it recurse: these checks are
//! linear scans or bounded walks, never a deep recursion. The limit itself is the server's
//! (`mcp_runtime::server::Limits::max_depth`); [`crate::ToolsCall::exceeds_depth`] applies it to a
//! `tools/call` request read into its parts.

/// Checks the array/object nesting of the JSON text `bytes` against `max`: `Err(depth)` as
/// soon as it goes deeper.
///
/// Brackets inside strings (including escaped quotes) are skipped. Malformed JSON is not
/// diagnosed here; the parser does that afterwards.
pub fn check_depth(bytes: &[u8], max: usize) -> Result<(), usize> {
    scan_depth(bytes, max).map(|_| ())
}

/// How deep the arrays and objects of the JSON text `bytes` nest: what
/// [`value_depth_exceeds`] compares with its limit, for text that is already known to parse.
pub fn nesting(bytes: &[u8]) -> usize {
    scan_depth(bytes, usize::MAX).unwrap_or(usize::MAX)
}

/// The deepest nesting of `bytes`, or `Err(depth)` as soon as it exceeds `max`.
fn scan_depth(bytes: &[u8], max: usize) -> Result<usize, usize> {
    let mut deepest = 0usize;
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Err(depth);
                }
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(deepest)
}

/// Whether the nesting depth of an already parsed value exceeds `max`.
pub fn value_depth_exceeds(value: &serde_json::Value, max: usize) -> bool {
    // Recursion never goes deeper than `max + 1` frames (it stops there), so for sane limits
    // walk the tree without allocating; huge limits take the iterative walk below.
    if max <= RECURSIVE_WALK_MAX {
        return exceeds_recursive(value, max);
    }
    value_depth_exceeds_iterative(value, max)
}

/// Largest limit walked recursively (a few KiB of stack at most).
const RECURSIVE_WALK_MAX: usize = 256;

/// `true` when the containers nest more than `budget` levels deep from `value`.
fn exceeds_recursive(value: &serde_json::Value, budget: usize) -> bool {
    use serde_json::Value;
    match value {
        Value::Array(items) => {
            budget == 0 || items.iter().any(|v| exceeds_recursive(v, budget - 1))
        }
        Value::Object(map) => budget == 0 || map.values().any(|v| exceeds_recursive(v, budget - 1)),
        _ => false,
    }
}

fn value_depth_exceeds_iterative(value: &serde_json::Value, max: usize) -> bool {
    use serde_json::Value;
    // Iterative, so even a value built in memory (not parsed) cannot overflow the stack here.
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((v, d)) = stack.pop() {
        let d = match v {
            Value::Array(_) | Value::Object(_) => d + 1,
            _ => continue,
        };
        if d > max {
            return true;
        }
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, d))),
            Value::Object(map) => stack.extend(map.values().map(|i| (i, d))),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn depth_counts_nesting_and_skips_strings() {
        assert_eq!(check_depth(br#"{"a":[1,{"b":2}]}"#, 3), Ok(()));
        assert_eq!(check_depth(br#"{"a":[1,{"b":2}]}"#, 2), Err(3));
        assert_eq!(check_depth(br#"{"a":"[[[[[[\"[[["}"#, 1), Ok(()));
        assert_eq!(check_depth(&[b'['; 100_000], 64), Err(65));
        assert_eq!(nesting(br#"{"a":[1,{"b":"[[[{"}],"c":{}}"#), 3);
        assert_eq!(nesting(b"7"), 0);
    }

    proptest! {
        #[test]
        fn scan_agrees_with_parsed_depth(depth in 0usize..80, max in 1usize..70) {
            let text = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            let scanned = check_depth(text.as_bytes(), max).is_ok();
            prop_assert_eq!(scanned, depth <= max);
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                prop_assert_eq!(!value_depth_exceeds(&v, max), depth <= max);
                prop_assert_eq!(!value_depth_exceeds_iterative(&v, max), depth <= max);
                // Objects count like arrays, and siblings do not add up.
                let nested = format!("{}1{}", "{\"k\":[0,".repeat(depth), "]}".repeat(depth));
                if let Ok(o) = serde_json::from_str::<serde_json::Value>(&nested) {
                    prop_assert_eq!(nesting(nested.as_bytes()), 2 * depth);
                    prop_assert_eq!(!value_depth_exceeds(&o, max), 2 * depth <= max);
                    prop_assert_eq!(!value_depth_exceeds_iterative(&o, max), 2 * depth <= max);
                }
            }
        }
    }
}
