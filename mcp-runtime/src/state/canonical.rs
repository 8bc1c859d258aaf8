//! Canonical JSON and the argument digest bound into request state.

use std::fmt;

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Number, Value};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use super::B64;

/// Prefix hashed before the canonical bytes (domain separation; bump with the canonical rule).
const DIGEST_DOMAIN: &[u8] = b"mcp-runtime/canonical-json/v1\0";

/// SHA-256 digest of a JSON value's canonical form (see the docs of [`ArgDigest`]).
///
/// Serialised as unpadded url-safe base64 (43 characters). Equality is constant-time.
///
/// # Details
///
/// Canonical JSON and the argument digest bound into request state.
///
/// # The canonical form
///
/// Two JSON values that mean the same thing must produce the same digest, however a client
/// happened to format them on the retry. [`canonical_json`] writes a value as follows:
///
/// - **No whitespace** anywhere outside strings.
/// - **Objects**: members sorted by key, comparing keys as UTF-8 byte strings (the same order
///   as comparing Unicode code points). serde_json objects cannot hold duplicate keys.
/// - **Strings** (keys and values): serde_json's escaping, i.e. `"` and `\` and control
///   characters escaped, everything else written as raw UTF-8. No Unicode normalisation is
///   applied: `"é"` precomposed and decomposed are different strings.
/// - **Numbers** are compared by mathematical value, not by spelling:
///   - an integer value that fits in `i64` or `u64` is written as plain decimal digits, whether
///     it arrived as `1`, `1.0`, `1e0` or `-0.0` (written `0`);
///   - any other value (a fraction, or an integral float outside the 64-bit integer range) is
///     written in the shortest form that round-trips the `f64` (serde_json's `ryu` output).
///
///   Hence `1`, `1.0` and `10e-1` are one value; `0.1` and `0.10` are one value; `1` and `1.5`
///   differ.
/// - `true`, `false`, `null` as themselves; arrays keep their order.
///
/// Digests are computed over parsed values, so "same value" is as good as the JSON parser's
/// number conversion: the same wire text always gives the same digest, and so do spellings
/// that parse to the same `f64`. Without serde_json's `float_roundtrip` feature a fraction
/// with more than ~15 significant digits may parse one ulp off between spellings (e.g.
/// `0.1000000000000000055511` vs `0.1`), and would then be treated as a different value.
///
/// The digest is SHA-256 over a domain-separation prefix followed by the canonical bytes, so a
/// digest of arguments can never be confused with another SHA-256 of the same bytes.
#[derive(Clone, Copy, Eq)]
pub struct ArgDigest([u8; 32]);

impl ArgDigest {
    /// Wraps raw digest bytes (e.g. read back from storage).
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The raw digest bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl PartialEq for ArgDigest {
    fn eq(&self, other: &Self) -> bool {
        digests_equal(&self.0, &other.0)
    }
}

/// Constant-time equality of two 32-byte digests or MACs.
///
/// Folds the XOR of four 64-bit words and compares the result once: no early exit, and one
/// optimisation barrier where `subtle`'s slice comparison has one per byte, which showed in
/// profiles of the retry leg (several digests and a MAC are compared per request).
pub(crate) fn digests_equal(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let mut diff = 0u64;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let word = |c: &[u8]| {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            u64::from_ne_bytes(w)
        };
        diff |= word(x) ^ word(y);
    }
    diff.ct_eq(&0).into()
}

impl std::hash::Hash for ArgDigest {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl fmt::Debug for ArgDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ArgDigest({self})")
    }
}

impl fmt::Display for ArgDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&B64.encode(self.0))
    }
}

impl Serialize for ArgDigest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&B64.encode(self.0))
    }
}

impl<'de> Deserialize<'de> for ArgDigest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        let bytes = B64
            .decode(text.as_bytes())
            .map_err(|_| serde::de::Error::custom("digest is not unpadded url-safe base64"))?;
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|_| serde::de::Error::custom("digest is not 32 bytes"))?;
        Ok(Self(bytes))
    }
}

/// Digest of `value`'s canonical JSON form.
///
/// Stable under key reordering, whitespace and number spelling (`1` = `1.0`); any change of
/// value changes it.
pub fn canonical_digest(value: &Value) -> ArgDigest {
    crate::scratch::with_buffer(|out| {
        write_value(value, out);
        let mut hasher = Sha256::new();
        hasher.update(DIGEST_DOMAIN);
        hasher.update(&out);
        ArgDigest(hasher.finalize().into())
    })
}

/// `value` written in the canonical form described in the docs of [`ArgDigest`].
///
/// Exposed so operators and tests can see exactly what is hashed.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_value(value, &mut out);
    // Every byte written is UTF-8 (ASCII punctuation, serde_json's string escaping, digits).
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

// Writes into bytes so strings and numbers are written in place, without a temporary
// allocation each (the canonical form of a form schema has dozens of strings).
fn write_value(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            // Sorted on the stack when small (nearly every `arguments` object), else on the heap.
            if map.len() <= INLINE_MEMBERS {
                let mut members = [("", &NULL); INLINE_MEMBERS];
                for (slot, (key, item)) in members.iter_mut().zip(map) {
                    *slot = (key.as_str(), item);
                }
                write_members(&mut members[..map.len()], out);
            } else {
                let mut members: Vec<(&str, &Value)> =
                    map.iter().map(|(k, v)| (k.as_str(), v)).collect();
                write_members(&mut members, out);
            }
        }
    }
}

/// Objects with at most this many members are sorted in a stack array.
const INLINE_MEMBERS: usize = 16;

/// Filler for the unused slots of that array.
static NULL: Value = Value::Null;

/// An object's members in key order: `str` ordering is byte-wise on UTF-8, i.e. code point
/// order.
fn write_members(members: &mut [(&str, &Value)], out: &mut Vec<u8>) {
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push(b'{');
    for (i, (key, item)) in members.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_string(key, out);
        out.push(b':');
        write_value(item, out);
    }
    out.push(b'}');
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    // Serialising a `str` into a Vec cannot fail; fall back to an escaped Debug form just in
    // case so the function stays total without a panic path.
    let mark = out.len();
    if serde_json::to_writer(&mut *out, s).is_err() {
        out.truncate(mark);
        out.extend_from_slice(format!("{s:?}").as_bytes());
    }
}

/// 2^63 and 2^64 as `f64` (both exactly representable).
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

fn write_number(n: &Number, out: &mut Vec<u8>) {
    if let Some(u) = n.as_u64() {
        push_display(out, u);
        return;
    }
    if let Some(i) = n.as_i64() {
        push_display(out, i);
        return;
    }
    let Some(f) = n.as_f64() else {
        // Not reachable without serde_json's arbitrary_precision; keep the original spelling.
        push_display(out, n);
        return;
    };
    if f.is_finite() && f.fract() == 0.0 {
        if (0.0..TWO_POW_64).contains(&f) {
            // Integral and in range: the cast is exact. `-0.0` lands here and prints `0`.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let u = f as u64;
            push_display(out, u);
            return;
        }
        if (-TWO_POW_63..0.0).contains(&f) {
            #[allow(clippy::cast_possible_truncation)]
            let i = f as i64;
            push_display(out, i);
            return;
        }
    }
    // serde_json prints finite f64 with ryu's shortest round-trip form.
    match Number::from_f64(f) {
        Some(n) => push_display(out, n),
        None => out.extend_from_slice(b"null"),
    }
}

/// Appends `value`'s `Display` form without a temporary `String`.
fn push_display(out: &mut Vec<u8>, value: impl std::fmt::Display) {
    use std::io::Write as _;
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{value}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn sorts_keys_and_drops_whitespace() {
        let v = parse(r#" { "b" : [1, 2, {"z":null, "a":true}], "a" : "x" } "#);
        assert_eq!(
            canonical_json(&v),
            r#"{"a":"x","b":[1,2,{"a":true,"z":null}]}"#
        );
    }

    #[test]
    fn numbers_compare_by_value() {
        assert_eq!(canonical_json(&parse("1.0")), "1");
        assert_eq!(canonical_json(&parse("1e0")), "1");
        assert_eq!(canonical_json(&parse("-0.0")), "0");
        assert_eq!(canonical_json(&parse("-2.0")), "-2");
        assert_eq!(
            canonical_json(&parse("0.10")),
            canonical_json(&parse("0.1"))
        );
        assert_eq!(
            canonical_json(&parse("18446744073709551615")),
            "18446744073709551615"
        );
        assert_eq!(
            canonical_json(&parse("-9223372036854775808")),
            "-9223372036854775808"
        );
        assert_eq!(
            canonical_digest(&json!({"n": 1})),
            canonical_digest(&parse(r#"{"n":1.0}"#))
        );
        assert_ne!(canonical_digest(&json!(1)), canonical_digest(&json!(1.5)));
        assert_ne!(canonical_digest(&json!(1)), canonical_digest(&json!("1")));
    }

    #[test]
    fn objects_sort_alike_on_either_side_of_the_inline_size() {
        // Small objects are sorted in a stack array, larger ones in a Vec: same order.
        for n in [
            0,
            1,
            INLINE_MEMBERS - 1,
            INLINE_MEMBERS,
            INLINE_MEMBERS + 1,
            40,
        ] {
            let reversed: serde_json::Map<String, Value> = (0..n)
                .rev()
                .map(|i| (format!("k{i:02}"), json!(i)))
                .collect();
            let members: Vec<String> = (0..n).map(|i| format!("\"k{i:02}\":{i}")).collect();
            let expected = format!("{{{}}}", members.join(","));
            assert_eq!(
                canonical_json(&Value::Object(reversed)),
                expected,
                "{n} members"
            );
        }
    }

    #[test]
    fn key_order_sorts_by_code_point() {
        let v = json!({"é": 1, "z": 2, "Z": 3, "": 4});
        assert_eq!(canonical_json(&v), r#"{"":4,"Z":3,"z":2,"é":1}"#);
    }

    #[test]
    fn strings_are_escaped_unambiguously() {
        let v = json!({"a\"b": "c\\d\n"});
        assert_eq!(canonical_json(&v), r#"{"a\"b":"c\\d\n"}"#);
        // The canonical form is itself valid JSON meaning the same value.
        assert_eq!(parse(&canonical_json(&v)), v);
    }

    #[test]
    fn digest_serde_round_trip() {
        let d = canonical_digest(&json!({"x": [1, 2]}));
        let text = serde_json::to_string(&d).unwrap();
        assert_eq!(text.len(), 45);
        let back: ArgDigest = serde_json::from_str(&text).unwrap();
        assert_eq!(back, d);
        assert!(serde_json::from_str::<ArgDigest>("\"abc\"").is_err());
    }
}
