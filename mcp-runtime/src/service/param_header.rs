//! [`ParamHeader`]: a tool's `x-mcp-header` rule, and [`ParamMirrors`]: the values a transport
//! received beside a call's body that must agree with it (HTTP's `Mcp-Param-*` headers).
//!
//! The seam carries the mirrors, not the rules: a transport records what it received
//! ([`RequestScope::with_param_mirrors`](super::RequestScope::with_param_mirrors)) and the core,
//! which knows every tool's rules, checks them before the tool runs, the same for every
//! transport.

/// One `x-mcp-header` rule: a `tools/call` whose `arguments` hold a non-null value at `path` must
/// carry an `Mcp-Param-{name}` header equal to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The `{Name}` in `Mcp-Param-{Name}` (compared case-insensitively, like all header names).
    pub name: String,
    /// Property names leading from `arguments` to the value (only `properties` keys, per spec).
    pub path: Vec<String>,
}

impl ParamHeader {
    /// A rule for `Mcp-Param-{name}` mirroring `arguments.<path[0]>.<path[1]>…`.
    pub fn new(name: impl Into<String>, path: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            name: name.into(),
            path: path.into_iter().map(Into::into).collect(),
        }
    }
}

/// The values a transport received *beside* a `tools/call`'s body that claim to mirror its
/// arguments: on Streamable HTTP, the `Mcp-Param-*` headers, so that intermediaries can
/// route on an argument without parsing the body.
///
/// The core checks them against the tool's `x-mcp-header` rules (each mirrored argument that
/// is present and not null needs exactly one mirror equal to it), so the rule holds however the
/// transport is written. A transport that carries no such values sets none
/// ([`RequestScope::with_param_mirrors`](super::RequestScope::with_param_mirrors) is never
/// called) and nothing is checked; one that sets them, even empty, has every rule enforced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParamMirrors {
    /// `(name, value)`: the `{Name}` of `Mcp-Param-{Name}` lowercased, and its value; `None`
    /// when the value was not visible ASCII.
    entries: Vec<(String, Option<String>)>,
}

impl ParamMirrors {
    /// No mirrored values (yet).
    pub const fn new() -> Self {
        Self {
            entries: Vec::new(),
        }
    }

    /// Records a mirror of the argument mirrored under `name` (the `{Name}` of
    /// `Mcp-Param-{Name}`, compared case-insensitively); `value` is `None` when the transport
    /// could not read it as visible ASCII. A name recorded twice is refused when checked.
    pub fn push(&mut self, name: &str, value: Option<&str>) {
        self.entries
            .push((name.to_ascii_lowercase(), value.map(str::to_owned)));
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The one value recorded under `name`.
    fn get(&self, name: &str, display: &str) -> Result<Option<&str>, MirrorMismatch> {
        let mut found = self
            .entries
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name));
        let Some((_, value)) = found.next() else {
            return Ok(None);
        };
        if found.next().is_some() {
            return Err(MirrorMismatch::Repeated(display.to_owned()));
        }
        value
            .as_deref()
            .map(Some)
            .ok_or_else(|| MirrorMismatch::InvalidCharacters(display.to_owned()))
    }

    /// Checks these mirrors against `rules` for a call with `arguments`: what
    /// [`Server`](crate::server::Server) does for every `tools/call` a transport recorded mirrors for
    /// (a hand-written [`McpService`](super::McpService) calls it the same way).
    ///
    /// An argument absent or null in the body needs no mirror (and one sent anyway is not
    /// compared); a mirror no rule names is ignored.
    ///
    /// # Errors
    /// The first rule the mirrors break; answer it with
    /// [`ErrorObject::header_mismatch`](mcp_types::ErrorObject::header_mismatch).
    pub fn check(
        &self,
        arguments: &serde_json::Map<String, serde_json::Value>,
        rules: &[ParamHeader],
    ) -> Result<(), MirrorMismatch> {
        for rule in rules {
            let mut path = rule.path.iter();
            let mut value = path.next().and_then(|first| arguments.get(first));
            for key in path {
                value = value.and_then(|v| v.get(key));
            }
            let Some(body) = value.filter(|v| !v.is_null()) else {
                continue;
            };
            let display = format!("Mcp-Param-{}", rule.name);
            let Some(raw) = self.get(&rule.name, &display)? else {
                return Err(MirrorMismatch::Mismatch {
                    header: display,
                    header_value: "(missing)".to_owned(),
                    body_value: body_text(body),
                });
            };
            let decoded = decode_sentinel(raw)
                .ok_or_else(|| MirrorMismatch::InvalidCharacters(display.clone()))?;
            if !param_matches(&decoded, body) {
                return Err(MirrorMismatch::Mismatch {
                    header: display,
                    header_value: decoded.into_owned(),
                    body_value: body_text(body),
                });
            }
        }
        Ok(())
    }
}

/// Why a call's mirrors disagree with its body ([`ParamMirrors::check`]); answered as
/// `ErrorObject::header_mismatch(mismatch)` (`-32020`, "Header mismatch: {mismatch}").
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MirrorMismatch {
    /// The mirror appears more than once.
    Repeated(String),
    /// Its value is not visible ASCII, or its base64 sentinel does not decode to UTF-8.
    InvalidCharacters(String),
    /// It differs from the body (or is missing: `header_value` is `(missing)`).
    Mismatch {
        /// `Mcp-Param-{Name}`.
        header: String,
        /// The mirror's value, decoded.
        header_value: String,
        /// The argument's value in the body.
        body_value: String,
    },
}

impl std::error::Error for MirrorMismatch {}

/// Cuts values echoed into error messages to a readable size.
pub(crate) fn clip(s: &str) -> &str {
    const MAX: usize = 128;
    if s.len() <= MAX {
        return s;
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl std::fmt::Display for MirrorMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Repeated(name) => {
                write!(f, "header {name} must appear only once")
            }
            Self::InvalidCharacters(name) => write!(
                f,
                "header {name} contains invalid characters (use the =?base64?...?= form for non-ASCII values)"
            ),
            Self::Mismatch {
                header,
                header_value,
                body_value,
            } => write!(
                f,
                "{header} header value '{}' does not match body value '{}'",
                clip(header_value),
                clip(body_value)
            ),
        }
    }
}

/// Decodes the `=?base64?<b64>?=` sentinel (markers lowercase and case-sensitive); other values
/// pass through unchanged. `None` when the sentinel is malformed: standard base64 with its
/// padding (RFC 4648 section 4) that decodes to UTF-8, nothing guessed at.
pub(crate) fn decode_sentinel(value: &str) -> Option<std::borrow::Cow<'_, str>> {
    use base64::Engine as _;
    let Some(inner) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Some(std::borrow::Cow::Borrowed(value));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(inner)
        .ok()?;
    String::from_utf8(bytes).ok().map(std::borrow::Cow::Owned)
}

fn body_text(body: &serde_json::Value) -> String {
    match body {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Compares a decoded mirror with the body value: strings exactly, numbers numerically (so
/// `42.0` equals `42`), booleans as `true`/`false`.
fn param_matches(mirror: &str, body: &serde_json::Value) -> bool {
    use serde_json::Value;
    match body {
        Value::String(s) => mirror == s,
        Value::Bool(b) => mirror == if *b { "true" } else { "false" },
        Value::Number(n) => match (mirror.trim().parse::<f64>(), n.as_f64()) {
            (Ok(m), Some(b)) => m.is_finite() && m == b,
            _ => false,
        },
        // x-mcp-header sits only on primitives; anything else cannot be mirrored.
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn rules() -> Vec<ParamHeader> {
        vec![
            ParamHeader::new("Region", ["region"]),
            ParamHeader::new("Count", ["opts", "count"]),
            ParamHeader::new("Dry", ["dry"]),
        ]
    }

    fn mirrors(pairs: &[(&str, &str)]) -> ParamMirrors {
        let mut m = ParamMirrors::new();
        for (name, value) in pairs {
            m.push(name, Some(value));
        }
        m
    }

    fn args(v: Value) -> serde_json::Map<String, Value> {
        match v {
            Value::Object(map) => map,
            _ => unreachable!("test arguments are objects"),
        }
    }

    #[test]
    fn mirrors_compare_by_type_and_name_case() {
        let body = args(json!({"region":"eu-west","opts":{"count":42},"dry":true}));
        let ok = mirrors(&[("region", "eu-west"), ("Count", "42.0"), ("DRY", "true")]);
        assert_eq!(ok.check(&body, &rules()), Ok(()));
        let b64 = mirrors(&[
            ("region", "=?base64?ZXUtd2VzdA==?="),
            ("count", "42"),
            ("dry", "true"),
        ]);
        assert_eq!(b64.check(&body, &rules()), Ok(()));
        let wrong_case = mirrors(&[("region", "EU-WEST"), ("count", "42"), ("dry", "true")]);
        assert!(wrong_case.check(&body, &rules()).is_err());
        let missing = mirrors(&[("region", "eu-west"), ("dry", "true")]);
        let err = missing.check(&body, &rules()).unwrap_err();
        assert!(err.to_string().contains("Mcp-Param-Count"), "{err}");
        assert!(err.to_string().contains("(missing)"), "{err}");
    }

    #[test]
    fn a_repeated_or_unreadable_mirror_is_refused() {
        let body = args(json!({"region":"eu"}));
        let rules = [ParamHeader::new("Region", ["region"])];
        let twice = mirrors(&[("region", "eu"), ("Region", "eu")]);
        assert_eq!(
            twice.check(&body, &rules),
            Err(MirrorMismatch::Repeated("Mcp-Param-Region".into()))
        );
        let mut unreadable = ParamMirrors::new();
        unreadable.push("region", None);
        assert_eq!(
            unreadable.check(&body, &rules),
            Err(MirrorMismatch::InvalidCharacters("Mcp-Param-Region".into()))
        );
        let bad_sentinel = mirrors(&[("region", "=?base64?ZXU?=")]);
        assert!(bad_sentinel.check(&body, &rules).is_err());
    }

    #[test]
    fn absent_or_null_arguments_need_no_mirror() {
        let none = ParamMirrors::new();
        assert_eq!(none.check(&args(json!({"region":null})), &rules()), Ok(()));
        assert_eq!(none.check(&args(json!({})), &rules()), Ok(()));
        // A mirror no rule names is ignored.
        let extra = mirrors(&[("other", "x")]);
        assert_eq!(extra.check(&args(json!({})), &rules()), Ok(()));
    }

    #[test]
    fn sentinel_decoding() {
        assert_eq!(decode_sentinel("plain").as_deref(), Some("plain"));
        assert_eq!(
            decode_sentinel("=?base64?w6lsw6h2ZQ==?=").as_deref(),
            Some("élève")
        );
        // Missing or extra padding, bad alphabet, not UTF-8: malformed.
        for bad in [
            "=?base64?w6lsw6h2ZQ?=",
            "=?base64?SGVsbG8?=",
            "=?base64?SGVsbG8==?=",
            "=?base64?!!!?=",
            "=?base64?/w==?=",
        ] {
            assert_eq!(decode_sentinel(bad), None, "{bad}");
        }
        // Markers are case-sensitive: an uppercase sentinel is compared literally.
        assert_eq!(
            decode_sentinel("=?BASE64?YQ==?=").as_deref(),
            Some("=?BASE64?YQ==?=")
        );
    }
}
