//! `WWW-Authenticate: Bearer …` challenges (RFC 6750 §3, RFC 9728 §5.1): the parameters the
//! client acts on.

/// The parameters of a `Bearer` challenge the client uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// `error` (`invalid_token`, `insufficient_scope`, …).
    pub error: Option<String>,
    /// `scope`: the scopes the request needs, space-separated.
    pub scope: Option<String>,
    /// `resource_metadata`: where the protected-resource metadata is (RFC 9728).
    pub resource_metadata: Option<String>,
}

impl Challenge {
    /// Reads the `Bearer` challenge out of one `WWW-Authenticate` value (other schemes, and
    /// anything unparsable, give an empty challenge: discovery then uses the well-known URLs).
    pub(crate) fn parse(header: &str) -> Self {
        let mut out = Challenge::default();
        let mut rest = header.trim_start();
        // Find the Bearer scheme (case-insensitive) at the start of a challenge.
        loop {
            if rest.len() >= 6 && rest[..6].eq_ignore_ascii_case("bearer") {
                let after = &rest[6..];
                if after.is_empty() || after.starts_with([' ', '\t', ',']) {
                    rest = after;
                    break;
                }
            }
            match rest.find(',') {
                Some(i) => rest = rest[i + 1..].trim_start(),
                None => return out,
            }
        }
        for (name, value) in Params(rest) {
            let slot = match name.to_ascii_lowercase().as_str() {
                "error" => &mut out.error,
                "scope" => &mut out.scope,
                "resource_metadata" => &mut out.resource_metadata,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(value);
            }
        }
        out
    }

    /// Whether the server refused the token for its scope (RFC 6750 `insufficient_scope`).
    pub(crate) fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// `name=value` / `name="quoted value"` pairs, comma-separated; stops at the next scheme.
struct Params<'a>(&'a str);

impl Iterator for Params<'_> {
    type Item = (String, String);

    fn next(&mut self) -> Option<Self::Item> {
        let s = self.0.trim_start_matches([' ', '\t', ',']);
        let eq = s.find('=')?;
        let name = s[..eq].trim();
        // A token with a space before `=` is the next challenge's scheme: stop.
        if name.is_empty() || name.contains([' ', '\t', ',', '"']) {
            return None;
        }
        let after = s[eq + 1..].trim_start();
        let (value, rest) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => value.push(c),
                }
            }
            (value, &quoted[end.min(quoted.len())..])
        } else {
            let end = after.find([',', ' ', '\t']).unwrap_or(after.len());
            (after[..end].to_owned(), &after[end..])
        };
        self.0 = rest;
        Some((name.to_owned(), value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_quoted_and_token_parameters() {
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="http://x/.well-known/oauth-protected-resource/mcp", error_description="no \"way\"""#,
        );
        assert!(c.is_insufficient_scope());
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://x/.well-known/oauth-protected-resource/mcp")
        );
        let c = Challenge::parse("Bearer error=invalid_token,scope=x");
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.scope.as_deref(), Some("x"));
    }

    #[test]
    fn finds_bearer_after_another_scheme_and_ignores_garbage() {
        let c = Challenge::parse(r#"Basic realm="x", Bearer scope="s""#);
        assert_eq!(c.scope.as_deref(), Some("s"));
        assert_eq!(Challenge::parse("Basic realm=x"), Challenge::default());
        assert_eq!(Challenge::parse("\"\"=,,=="), Challenge::default());
        assert_eq!(
            Challenge::parse(r#"Bearer scope="unterminated"#)
                .scope
                .as_deref(),
            Some("unterminated")
        );
    }
}
