//! Which `Origin` and `Host` values may reach the server: the DNS-rebinding defences both HTTP
//! eras and [`super::serve_router`] share.

/// Which `Origin` values may talk to the server (defence against DNS rebinding).
///
/// Requests without `Origin` (non-browser clients) are always allowed; a present `Origin` that
/// matches no pattern gets 403.
#[derive(Debug, Clone)]
pub struct OriginAllowlist {
    patterns: Option<Vec<OriginPattern>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct OriginPattern {
    scheme: String,
    host: String,
    /// `None` = any port (`:*`).
    port: Option<u16>,
    /// Whether the pattern matches an origin without an explicit port.
    allows_default_port: bool,
}

/// A malformed origin pattern.
#[derive(Debug, thiserror::Error)]
#[error(
    "invalid origin pattern `{0}`: expected scheme://host[:port|:*], e.g. https://app.example.com or http://localhost:*"
)]
pub struct OriginPatternError(String);

/// Splits `scheme://host[:port]` into lowercase scheme, lowercase host and the port text.
fn split_origin(origin: &str) -> Option<(String, String, Option<&str>)> {
    let (scheme, rest) = origin.split_once("://")?;
    if scheme.is_empty() || rest.is_empty() || rest.contains('/') {
        return None;
    }
    let (host, port) = if let Some(after) = rest.strip_prefix('[') {
        let (inside, tail) = after.split_once(']')?;
        let port = match tail {
            "" => None,
            t => Some(t.strip_prefix(':')?),
        };
        (format!("[{inside}]"), port)
    } else {
        match rest.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (rest.to_owned(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return None;
    }
    Some((scheme.to_ascii_lowercase(), host.to_ascii_lowercase(), port))
}

impl OriginPattern {
    fn parse(pattern: &str) -> Result<Self, OriginPatternError> {
        let err = || OriginPatternError(pattern.to_owned());
        let (scheme, host, port) = split_origin(pattern).ok_or_else(err)?;
        let (port, allows_default_port) = match port {
            None => (Some(0), true),
            Some("*") => (None, true),
            Some(p) => (Some(p.parse::<u16>().map_err(|_| err())?), false),
        };
        Ok(Self {
            scheme,
            host,
            port,
            allows_default_port,
        })
    }

    fn matches(&self, scheme: &str, host: &str, port: Option<u16>) -> bool {
        if self.scheme != scheme || self.host != host {
            return false;
        }
        match (self.port, port) {
            (_, None) => self.allows_default_port,
            (None, Some(_)) => true,
            (Some(want), Some(got)) => want == got,
        }
    }
}

impl Default for OriginAllowlist {
    fn default() -> Self {
        Self::loopback()
    }
}

impl OriginAllowlist {
    /// Loopback origins on any port, over http or https: `localhost`, `127.0.0.1`, `[::1]`.
    pub fn loopback() -> Self {
        let mut patterns = Vec::new();
        for scheme in ["http", "https"] {
            for host in ["localhost", "127.0.0.1", "[::1]"] {
                patterns.push(OriginPattern {
                    scheme: scheme.to_owned(),
                    host: host.to_owned(),
                    port: None,
                    allows_default_port: true,
                });
            }
        }
        Self {
            patterns: Some(patterns),
        }
    }

    /// Exactly the given patterns: `scheme://host` (default port only), `scheme://host:port`,
    /// or `scheme://host:*` (any port). Hosts compare case-insensitively.
    ///
    /// # Errors
    /// [`OriginPatternError`] naming the first malformed pattern.
    pub fn parse<S: AsRef<str>>(
        patterns: impl IntoIterator<Item = S>,
    ) -> Result<Self, OriginPatternError> {
        let patterns = patterns
            .into_iter()
            .map(|p| OriginPattern::parse(p.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            patterns: Some(patterns),
        })
    }

    /// Any origin. Only for servers behind a proxy that validates `Origin` itself.
    pub fn any() -> Self {
        Self { patterns: None }
    }

    /// Whether a request carrying this `Origin` value may proceed.
    pub fn allows(&self, origin: &str) -> bool {
        let Some(patterns) = &self.patterns else {
            return true;
        };
        let Some((scheme, host, port)) = split_origin(origin) else {
            // Includes the opaque origin `null`.
            return false;
        };
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(p) => Some(p),
                Err(_) => return false,
            },
        };
        patterns.iter().any(|p| p.matches(&scheme, &host, port))
    }
}

/// Which `Host` values the server answers to (defence against DNS rebinding, next to
/// [`OriginAllowlist`]).
///
/// A request whose `Host` (or absolute-form target) names no allowed host gets 421 before any
/// route runs. Patterns are `name` (any port) or `name:port`; names compare case-insensitively;
/// IPv6 addresses are written in brackets (`[::1]`).
#[derive(Debug, Clone)]
pub struct HostAllowlist {
    /// `None`: any host.
    patterns: Option<Vec<HostPattern>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct HostPattern {
    name: String,
    /// `None`: any port.
    port: Option<u16>,
}

/// A malformed host pattern.
#[derive(Debug, thiserror::Error)]
#[error(
    "invalid host pattern `{0}`: expected a host name or address with an optional port, e.g. mcp.example.com, mcp.example.com:8443 or [::1]"
)]
pub struct HostPatternError(String);

/// Splits `name[:port]` into the name (as written) and the port text; `None` when malformed.
/// Borrowing only: this runs on every request.
fn split_host(value: &str) -> Option<(&str, Option<&str>)> {
    let (name, port) = if value.starts_with('[') {
        let end = value.find(']')?;
        let (name, tail) = value.split_at(end + 1);
        let inside = &name[1..end];
        if inside.is_empty()
            || !inside
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return None;
        }
        let port = match tail {
            "" => None,
            t => Some(t.strip_prefix(':')?),
        };
        (name, port)
    } else {
        let (name, port) = match value.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (value, None),
        };
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
        if !valid {
            return None;
        }
        (name, port)
    };
    Some((name, port))
}

impl HostAllowlist {
    /// Loopback names on any port: `localhost`, `127.0.0.1`, `[::1]`.
    pub fn loopback() -> Self {
        Self {
            patterns: Some(
                ["localhost", "127.0.0.1", "[::1]"]
                    .into_iter()
                    .map(|name| HostPattern {
                        name: name.to_owned(),
                        port: None,
                    })
                    .collect(),
            ),
        }
    }

    /// Any host. For servers bound beyond loopback whose names are not known, or behind a proxy
    /// that checks `Host` itself.
    pub fn any() -> Self {
        Self { patterns: None }
    }

    /// Exactly the given patterns: `name` (any port) or `name:port`.
    ///
    /// # Errors
    /// [`HostPatternError`] naming the first malformed pattern.
    pub fn parse<S: AsRef<str>>(
        patterns: impl IntoIterator<Item = S>,
    ) -> Result<Self, HostPatternError> {
        let patterns = patterns
            .into_iter()
            .map(|p| {
                let p = p.as_ref().trim();
                let err = || HostPatternError(p.to_owned());
                let (name, port) = split_host(p).ok_or_else(err)?;
                let port = match port {
                    None | Some("*") => None,
                    Some(port) => Some(port.parse::<u16>().map_err(|_| err())?),
                };
                Ok(HostPattern {
                    name: name.to_ascii_lowercase(),
                    port,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            patterns: Some(patterns),
        })
    }

    /// This list plus `name` on any port; [`HostAllowlist::any`] stays as it is.
    #[must_use]
    pub fn with_name(mut self, name: &str) -> Self {
        if let Some(patterns) = &mut self.patterns {
            patterns.push(HostPattern {
                name: name.to_ascii_lowercase(),
                port: None,
            });
        }
        self
    }

    /// Whether every host is allowed.
    pub fn is_any(&self) -> bool {
        self.patterns.is_none()
    }

    /// Whether a request naming this `Host` value may proceed.
    pub fn allows(&self, host: &str) -> bool {
        let Some(patterns) = &self.patterns else {
            return true;
        };
        let Some((name, port)) = split_host(host) else {
            return false;
        };
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(p) => Some(p),
                Err(_) => return false,
            },
        };
        patterns
            .iter()
            .any(|p| p.name.eq_ignore_ascii_case(name) && (p.port.is_none() || p.port == port))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn origins() {
        let local = OriginAllowlist::loopback();
        assert!(local.allows("http://localhost:3000"));
        assert!(local.allows("http://127.0.0.1"));
        assert!(local.allows("https://[::1]:8443"));
        assert!(local.allows("HTTP://LOCALHOST:1"));
        assert!(!local.allows("http://localhost.evil.com"));
        assert!(!local.allows("http://evil.com"));
        assert!(!local.allows("null"));
        assert!(!local.allows("http://localhost:99999"));
        let custom =
            OriginAllowlist::parse(["https://app.example.com", "http://dev.local:8080"]).unwrap();
        assert!(custom.allows("https://app.example.com"));
        assert!(!custom.allows("https://app.example.com:444"));
        assert!(custom.allows("http://dev.local:8080"));
        assert!(!custom.allows("http://dev.local:8081"));
        assert!(OriginAllowlist::parse(["app.example.com"]).is_err());
        assert!(OriginAllowlist::any().allows("http://anything"));
    }

    #[test]
    fn hosts() {
        let local = HostAllowlist::loopback();
        for ok in [
            "localhost",
            "LOCALHOST:8080",
            "127.0.0.1:1",
            "[::1]",
            "[::1]:9",
        ] {
            assert!(local.allows(ok), "{ok}");
        }
        for bad in [
            "evil.com",
            "localhost.evil.com",
            "127.0.0.2",
            "localhost:99999",
            "localhost:x",
            "user@localhost",
            "",
            "[::1",
            "localhost:80:80",
        ] {
            assert!(!local.allows(bad), "{bad}");
        }
        let custom = HostAllowlist::parse(["mcp.example.com", "api.example.com:8443"]).unwrap();
        assert!(custom.allows("mcp.example.com"));
        assert!(custom.allows("MCP.example.com:443"));
        assert!(custom.allows("api.example.com:8443"));
        assert!(!custom.allows("api.example.com"));
        assert!(!custom.allows("localhost"));
        assert!(HostAllowlist::parse(["http://x"]).is_err());
        assert!(HostAllowlist::parse(["x:99999"]).is_err());
        assert!(HostAllowlist::any().allows("anything"));
    }

    proptest! {
        #[test]
        fn origin_check_never_panics_and_rejects_non_loopback(
            scheme in "[a-z]{1,6}",
            host in "[a-z0-9.-]{1,20}",
            port in proptest::option::of(any::<u16>()),
        ) {
            let origin = match port {
                Some(p) => format!("{scheme}://{host}:{p}"),
                None => format!("{scheme}://{host}"),
            };
            let allowed = OriginAllowlist::loopback().allows(&origin);
            let loopback_host = host == "localhost" || host == "127.0.0.1";
            let web_scheme = scheme == "http" || scheme == "https";
            prop_assert_eq!(allowed, loopback_host && web_scheme);
        }
    }

    proptest! {
        #[test]
        fn arbitrary_values_never_panic(v in any::<String>()) {
            let _ = OriginAllowlist::loopback().allows(&v);
            let _ = HostAllowlist::loopback().allows(&v);
        }
    }
}
