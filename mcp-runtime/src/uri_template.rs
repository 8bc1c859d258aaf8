//! RFC 6570 level 1 URI templates (`test://items/{id}/data`): expansion and the reverse,
//! matching a concrete URI against a template to recover its variables.
//!
//! Level 1 (simple string expansion) percent-encodes every character outside the unreserved
//! set, so an expanded value never contains `/`, `?` or `#`. Matching relies on that: a variable
//! matches one or more characters up to the literal that follows it, and never a `/`. Two
//! variables next to each other (`{a}{b}`) would make matching ambiguous and are refused when
//! the template is parsed.
//!
//! One level-2 form is supported too, reserved expansion `{+path}`: its value keeps reserved
//! characters such as `/` (for file paths), and it matches across `/` when a URI is matched.

use std::fmt;

use percent_encoding::percent_decode_str;
#[cfg(test)]
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Everything but RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`) is encoded.
#[cfg(test)]
const ENCODE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Reserved expansion keeps RFC 3986 reserved characters (and `%`, so existing escapes stay).
#[cfg(test)]
const ENCODE_RESERVED: &AsciiSet = &ENCODE
    .remove(b':')
    .remove(b'/')
    .remove(b'?')
    .remove(b'#')
    .remove(b'[')
    .remove(b']')
    .remove(b'@')
    .remove(b'!')
    .remove(b'$')
    .remove(b'&')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*')
    .remove(b'+')
    .remove(b',')
    .remove(b';')
    .remove(b'=');

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// A variable; `reserved` for `{+name}`.
    Var(String, bool),
}

/// A parsed level-1 URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

/// Why a URI template was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template {template:?}: {reason}")]
pub struct UriTemplateError {
    template: String,
    reason: String,
}

impl UriTemplate {
    /// Parses `template`. Variable names are `[A-Za-z0-9_]+`; operators (`{+x}`, `{?x}`, ...)
    /// and modifiers of higher levels are refused, as are adjacent variables and duplicates.
    pub fn parse(template: &str) -> Result<Self, UriTemplateError> {
        let err = |reason: &str| UriTemplateError {
            template: template.to_owned(),
            reason: reason.to_owned(),
        };
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            if let Some(open) = rest.find('{') {
                if open > 0 {
                    push_literal(&mut parts, &rest[..open], &err)?;
                }
                let after = &rest[open + 1..];
                let close = after
                    .find('}')
                    .ok_or_else(|| err("a `{` is never closed"))?;
                let expr = &after[..close];
                let (name, reserved) = match expr.strip_prefix('+') {
                    Some(n) => (n, true),
                    None => (expr, false),
                };
                if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    return Err(err(
                        "variable names are letters, digits and `_` (only `{name}` and `{+name}` expressions are supported)",
                    ));
                }
                if matches!(parts.last(), Some(Part::Var(..))) {
                    return Err(err(
                        "two variables are adjacent; put a literal between them so a URI can be matched unambiguously",
                    ));
                }
                if parts
                    .iter()
                    .any(|p| matches!(p, Part::Var(v, _) if v == name))
                {
                    return Err(err("a variable appears twice"));
                }
                parts.push(Part::Var(name.to_owned(), reserved));
                rest = &after[close + 1..];
            } else {
                push_literal(&mut parts, rest, &err)?;
                rest = "";
            }
        }
        if parts.is_empty() {
            return Err(err("the template is empty"));
        }
        Ok(Self {
            source: template.to_owned(),
            parts,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The variable names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(v, _) => Some(v.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// Expands the template, percent-encoding each value; `lookup` returns a variable's value
    /// (an undefined variable expands to nothing, as RFC 6570 says). Only the tests expand
    /// (they check that matching inverts expansion); the runtime only matches.
    #[cfg(test)]
    pub fn expand<'v>(&self, lookup: impl Fn(&str) -> Option<&'v str>) -> String {
        let mut out = String::with_capacity(self.source.len());
        for part in &self.parts {
            match part {
                Part::Literal(l) => out.push_str(l),
                Part::Var(v, reserved) => {
                    if let Some(value) = lookup(v) {
                        let set = if *reserved { ENCODE_RESERVED } else { ENCODE };
                        out.extend(utf8_percent_encode(value, set));
                    }
                }
            }
        }
        out
    }

    /// Matches `uri` against the template: the decoded variables in template order, or `None`
    /// when it does not fit. A variable matches at least one character and never a `/`;
    /// a value whose percent-decoding is not UTF-8 does not match. When a literal could end a
    /// variable at several places, splits are tried shortest first and the first that fits the
    /// whole URI wins (memoised, so hostile URIs stay cheap).
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let mut failed = std::collections::HashSet::new();
        let mut spans = Vec::new();
        if !self.match_from(uri, 0, 0, &mut failed, &mut spans) {
            return None;
        }
        let mut vars = Vec::with_capacity(spans.len());
        for (name, start, end) in spans {
            let value = percent_decode_str(uri.get(start..end)?)
                .decode_utf8()
                .ok()?;
            vars.push((name.to_owned(), value.into_owned()));
        }
        Some(vars)
    }

    fn match_from<'s>(
        &'s self,
        uri: &str,
        part: usize,
        pos: usize,
        failed: &mut std::collections::HashSet<(usize, usize)>,
        spans: &mut Vec<(&'s str, usize, usize)>,
    ) -> bool {
        let Some(current) = self.parts.get(part) else {
            return pos == uri.len();
        };
        if failed.contains(&(part, pos)) {
            return false;
        }
        let rest = uri.get(pos..).unwrap_or("");
        let ok = match current {
            Part::Literal(l) => {
                rest.starts_with(l.as_str())
                    && self.match_from(uri, part + 1, pos + l.len(), failed, spans)
            }
            Part::Var(name, reserved) => {
                // A simple value never spans a `/` (level 1 encodes it); a reserved one may.
                let limit = if *reserved {
                    rest.len()
                } else {
                    rest.find('/').unwrap_or(rest.len())
                };
                let mut found = false;
                let ends = rest
                    .char_indices()
                    .map(|(i, _)| i)
                    .skip(1)
                    .chain(std::iter::once(rest.len()));
                for end in ends {
                    if end == 0 || end > limit {
                        break;
                    }
                    spans.push((name.as_str(), pos, pos + end));
                    if self.match_from(uri, part + 1, pos + end, failed, spans) {
                        found = true;
                        break;
                    }
                    spans.pop();
                }
                found
            }
        };
        if !ok {
            failed.insert((part, pos));
        }
        ok
    }
}

fn push_literal(
    parts: &mut Vec<Part>,
    literal: &str,
    err: &impl Fn(&str) -> UriTemplateError,
) -> Result<(), UriTemplateError> {
    if literal.contains('}') {
        return Err(err("a `}` has no matching `{`"));
    }
    parts.push(Part::Literal(literal.to_owned()));
    Ok(())
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn matches_and_expands() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(t.variables().collect::<Vec<_>>(), ["id"]);
        assert_eq!(
            t.matches("test://template/123/data"),
            Some(vec![("id".into(), "123".into())])
        );
        assert_eq!(t.matches("test://template//data"), None);
        assert_eq!(t.matches("test://template/1/2/data"), None);
        assert_eq!(t.matches("test://template/123/data/more"), None);
        assert_eq!(t.matches("test://other/123/data"), None);
        assert_eq!(
            t.expand(|_| Some("a b/c")),
            "test://template/a%20b%2Fc/data"
        );
    }

    #[test]
    fn trailing_variable() {
        let t = UriTemplate::parse("file:///notes/{id}").unwrap();
        assert_eq!(
            t.matches("file:///notes/x%2Fy"),
            Some(vec![("id".into(), "x/y".into())])
        );
    }

    #[test]
    fn reserved_expansion_spans_slashes() {
        let t = UriTemplate::parse("file://{+path}").unwrap();
        assert_eq!(
            t.expand(|_| Some("/home/a b/n.md")),
            "file:///home/a%20b/n.md"
        );
        assert_eq!(
            t.matches("file:///home/a%20b/n.md"),
            Some(vec![("path".into(), "/home/a b/n.md".into())])
        );
    }

    #[test]
    fn refuses_bad_templates() {
        for bad in [
            "", "a{", "a}", "{a}{b}", "{#a}", "{+}", "{a,b}", "{}", "{a}/{a}",
        ] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    fn template() -> impl Strategy<Value = (String, Vec<String>)> {
        // literal (var literal)* where each literal after a variable starts with `/`: a
        // level-1 value never contains `/`, so the split is unambiguous. (With an unreserved
        // first character, e.g. `{a}.{b}` and a = "x.y", several splits fit and the matcher
        // takes the shortest first value; that is inherent to the template, not a bug.)
        (
            "[a-z]{1,5}://[a-z/]{0,6}",
            proptest::collection::vec("/[-a-z/._]{0,3}", 1..4),
        )
            .prop_map(|(head, lits)| {
                let mut t = head;
                let mut names = Vec::new();
                for (i, l) in lits.iter().enumerate() {
                    let n = format!("v{i}");
                    t.push('{');
                    t.push_str(&n);
                    t.push('}');
                    t.push_str(l);
                    names.push(n);
                }
                (t, names)
            })
    }

    proptest! {
        #[test]
        fn expansion_then_matching_round_trips(
            (t, names) in template(),
            values in proptest::collection::vec("\\PC{1,8}", 4),
        ) {
            let tpl = UriTemplate::parse(&t).unwrap();
            let lookup = |n: &str| names.iter().position(|x| x == n).map(|i| values[i].as_str());
            let uri = tpl.expand(lookup);
            let got = tpl.matches(&uri).expect("an expansion matches its template");
            for (i, (name, value)) in got.iter().enumerate() {
                prop_assert_eq!(name, &names[i]);
                prop_assert_eq!(value, &values[i]);
            }
        }

        #[test]
        fn hostile_input_never_panics(t in "\\PC{0,24}", uri in "\\PC{0,48}") {
            if let Ok(tpl) = UriTemplate::parse(&t) {
                let _ = tpl.matches(&uri);
                let _ = tpl.expand(|_| Some(uri.as_str()));
            }
        }
    }
}
