//! HTTP authentication: who is sending this request?
//!
//! Every POST is authenticated before its body is even read. An [`Authenticator`] turns request
//! headers into a [`Principal`] or rejects the request with 401 and a `WWW-Authenticate: Bearer`
//! challenge. Two are built in:
//!
//! - [`BearerTokens`]: static bearer tokens, each mapped to a principal, typically loaded from an
//!   auth file (format below). Tokens are compared in constant time.
//! - [`AllowAnonymous`]: every request runs as one fixed principal. For local development and
//!   conformance runs only; never expose such a server beyond loopback.
//!
//! # Auth file format
//!
//! UTF-8 text, one token per line, `principal token` separated by whitespace:
//!
//! ```text
//! # comments and blank lines are ignored
//! alice  kq3C0vYb1Q8pZ9d2mXW7rT5uLs4hJ6gE
//! ci-bot 8f14e45fceea167a5a36dedd4bea2543a7e0d1c2
//! ```
//!
//! - `principal`: no whitespace; the same principal may have several tokens (rotation).
//! - `token`: at least [`MIN_TOKEN_LEN`] characters from the RFC 6750 `b64token` alphabet
//!   (`A-Z a-z 0-9 - . _ ~ + /`, then optional trailing `=`), not one repeated character, and
//!   unique across the file. Generate one with e.g. `openssl rand -base64 32`.
//!
//! Loading fails with an [`AuthFileError`] naming the line and the rule it broke; the token
//! itself never appears in an error or a log.

use std::fmt;
use std::path::Path;

use http::HeaderMap;
use http::header::AUTHORIZATION;
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

use crate::Principal;
use crate::service::{AuthScheme, Grant};

/// The shortest bearer token [`BearerTokens`] accepts.
pub const MIN_TOKEN_LEN: usize = 32;

/// Why a request was not authenticated. `Missing` and `InvalidToken` become 401 with a
/// `WWW-Authenticate: Bearer` challenge (the variant picks the challenge's `error` parameter);
/// `Malformed` becomes 400.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthRejection {
    /// No usable `Authorization: Bearer` credentials were sent.
    Missing,
    /// Credentials were sent but are not valid.
    InvalidToken,
    /// The credentials are ambiguous: more than one `Authorization` header. Refused rather than
    /// guessing which one a proxy or the client meant.
    Malformed,
}

/// A boxed future, as [`Authenticator::authenticate_grant`] returns.
pub type AuthFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Grant, AuthRejection>> + Send + 'a>>;

/// Decides which principal an HTTP request runs as.
///
/// [`Authenticator::authenticate`] is synchronous: the built-in static schemes need no I/O.
/// Schemes that may have to fetch something (an OAuth issuer's keys) override
/// [`Authenticator::authenticate_grant`] too, which the Streamable HTTP transport calls. Object
/// safe: the HTTP transport holds an `Arc<dyn Authenticator>`.
pub trait Authenticator: Send + Sync + 'static {
    /// Authenticates a request from its headers, without I/O.
    ///
    /// # Errors
    /// [`AuthRejection`] when the request must be refused with 401.
    fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, AuthRejection>;

    /// Authenticates a request and reports the scopes its credentials grant; may do I/O.
    /// Default: [`Authenticator::authenticate`], with no scopes.
    ///
    /// # Errors
    /// [`AuthRejection`] when the request must be refused with 401.
    fn authenticate_grant<'a>(&'a self, headers: &'a HeaderMap) -> AuthFuture<'a> {
        Box::pin(std::future::ready(
            self.authenticate(headers)
                .map(|principal| Grant::unscoped(principal, self.scheme())),
        ))
    }

    /// How this scheme authenticates, recorded in every [`Grant`] it hands out. Default:
    /// [`AuthScheme::Custom`].
    fn scheme(&self) -> AuthScheme {
        AuthScheme::Custom
    }

    /// Extra auth-params every `WWW-Authenticate: Bearer` challenge of this scheme carries,
    /// already formatted (e.g. RFC 9728 `resource_metadata="https://…"`). Default: none.
    fn challenge_params(&self) -> Option<&str> {
        None
    }
}

/// The `WWW-Authenticate` value for a refused request: `Bearer realm="mcp"`, then `error` and
/// `error_description` (when `error` is given), `scope` (for `insufficient_scope`) and the
/// scheme's own params. Every part is server-chosen text, never the client's.
pub fn challenge(
    auth: &dyn Authenticator,
    error: Option<(&str, &str)>,
    scope: Option<&str>,
) -> http::HeaderValue {
    let mut value = String::from("Bearer realm=\"mcp\"");
    if let Some((code, description)) = error {
        value.push_str(&format!(
            ", error=\"{code}\", error_description=\"{description}\""
        ));
    }
    if let Some(scope) = scope {
        value.push_str(&format!(", scope=\"{scope}\""));
    }
    if let Some(params) = auth.challenge_params() {
        value.push_str(", ");
        value.push_str(params);
    }
    http::HeaderValue::from_str(&value)
        .unwrap_or_else(|_| http::HeaderValue::from_static("Bearer realm=\"mcp\""))
}

/// Every request runs as the given principal, whatever it sends. Local/dev/conformance only.
#[derive(Debug, Clone)]
pub struct AllowAnonymous(pub Principal);

impl Authenticator for AllowAnonymous {
    fn authenticate(&self, _headers: &HeaderMap) -> Result<Principal, AuthRejection> {
        Ok(self.0.clone())
    }

    fn scheme(&self) -> AuthScheme {
        AuthScheme::Anonymous
    }
}

/// Static bearer tokens mapped to principals, typically loaded from an auth file.
///
/// # Auth file format
///
/// UTF-8 text, one token per line, `principal token` separated by whitespace:
///
/// ```text
/// # comments and blank lines are ignored
/// alice  kq3C0vYb1Q8pZ9d2mXW7rT5uLs4hJ6gE
/// ci-bot 8f14e45fceea167a5a36dedd4bea2543a7e0d1c2
/// ```
///
/// - `principal`: no whitespace; the same principal may have several tokens (rotation).
/// - `token`: at least [`MIN_TOKEN_LEN`] characters from the RFC 6750 `b64token` alphabet
///   (`A-Z a-z 0-9 - . _ ~ + /`, then optional trailing `=`), not one repeated character, and
///   unique across the file. Generate one with e.g. `openssl rand -base64 32`.
///
/// Loading fails with an [`AuthFileError`] naming the line and the rule it broke; the token
/// itself never appears in an error or a log.
///
/// # Storage
///
/// Only SHA-256 digests of the tokens are kept in memory. A presented token is hashed once and
/// compared against every entry in constant time, so neither timing nor length leaks which
/// token (or how much of one) matched.
#[derive(Clone)]
pub struct BearerTokens {
    entries: Vec<([u8; 32], Principal)>,
}

impl fmt::Debug for BearerTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerTokens")
            .field("tokens", &self.entries.len())
            .finish_non_exhaustive()
    }
}

/// Why an auth file (or a token list) was rejected.
#[derive(Debug, thiserror::Error)]
pub enum AuthFileError {
    /// The file could not be read.
    #[error("cannot read auth file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line is not `principal token`.
    #[error("auth file line {line}: expected `principal token` separated by whitespace")]
    Malformed {
        /// 1-based line number.
        line: usize,
    },
    /// A token is too short, uses characters outside the bearer token alphabet, or is one
    /// repeated character.
    #[error(
        "auth file line {line}: weak or malformed token for principal `{principal}`: {reason}; \
         generate one with e.g. `openssl rand -base64 32`"
    )]
    WeakToken {
        /// 1-based line number.
        line: usize,
        /// The principal the token belongs to.
        principal: String,
        /// Which rule the token broke.
        reason: &'static str,
    },
    /// The same token appears twice; tokens must identify exactly one principal.
    #[error(
        "auth file line {line}: duplicate token (first seen on line {first}); every token must be unique"
    )]
    DuplicateToken {
        /// 1-based line number of the repeat.
        line: usize,
        /// 1-based line number of the first occurrence.
        first: usize,
    },
    /// The file may be read (or written) by group or others; tokens must stay private.
    #[error(
        "auth file {path} is accessible by group or others (mode {mode:o}); restrict it with `chmod 600 {path}`"
    )]
    Permissions {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// No tokens at all: such a server would refuse every request.
    #[error("auth file contains no tokens; add lines of the form `principal token`")]
    Empty,
}

fn digest(token: &[u8]) -> [u8; 32] {
    Sha256::digest(token).into()
}

fn is_b64token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty()
        && body.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
        })
}

fn check_token(token: &str) -> Result<(), &'static str> {
    if token.len() < MIN_TOKEN_LEN {
        return Err("shorter than 32 characters");
    }
    if !is_b64token(token) {
        return Err("only A-Z a-z 0-9 - . _ ~ + / and trailing = are allowed");
    }
    let first = token.as_bytes()[0];
    if token.bytes().all(|b| b == first) {
        return Err("one repeated character");
    }
    Ok(())
}

impl BearerTokens {
    /// Builds the table from `(principal, token)` pairs, applying the auth-file rules.
    ///
    /// # Errors
    /// [`AuthFileError`] (line numbers count pairs from 1) for a weak or duplicate token, or an
    /// empty list.
    pub fn from_pairs<T: AsRef<str>>(
        pairs: impl IntoIterator<Item = (Principal, T)>,
    ) -> Result<Self, AuthFileError> {
        let mut entries: Vec<([u8; 32], Principal)> = Vec::new();
        let mut lines = Vec::new();
        for (i, (principal, token)) in pairs.into_iter().enumerate() {
            let line = i + 1;
            Self::push(&mut entries, &mut lines, line, principal, token.as_ref())?;
        }
        if entries.is_empty() {
            return Err(AuthFileError::Empty);
        }
        Ok(Self { entries })
    }

    fn push(
        entries: &mut Vec<([u8; 32], Principal)>,
        lines: &mut Vec<usize>,
        line: usize,
        principal: Principal,
        token: &str,
    ) -> Result<(), AuthFileError> {
        check_token(token).map_err(|reason| AuthFileError::WeakToken {
            line,
            principal: principal.as_str().to_owned(),
            reason,
        })?;
        let hash = digest(token.as_bytes());
        if let Some(pos) = entries.iter().position(|(h, _)| *h == hash) {
            return Err(AuthFileError::DuplicateToken {
                line,
                first: lines.get(pos).copied().unwrap_or(0),
            });
        }
        entries.push((hash, principal));
        lines.push(line);
        Ok(())
    }

    /// Parses auth-file text (see the module docs for the format).
    ///
    /// # Errors
    /// [`AuthFileError`] naming the offending line.
    pub fn parse(text: &str) -> Result<Self, AuthFileError> {
        let mut entries = Vec::new();
        let mut lines = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let mut fields = trimmed.split_whitespace();
            let (Some(principal), Some(token), None) =
                (fields.next(), fields.next(), fields.next())
            else {
                return Err(AuthFileError::Malformed { line });
            };
            Self::push(
                &mut entries,
                &mut lines,
                line,
                Principal::new(principal),
                token,
            )?;
        }
        if entries.is_empty() {
            return Err(AuthFileError::Empty);
        }
        Ok(Self { entries })
    }

    /// Loads an auth file (see the module docs for the format).
    ///
    /// On Unix the file must be private to its owner: like ssh with a private key, a file that
    /// group or others may access is refused, before it is read.
    ///
    /// # Errors
    /// [`AuthFileError::Io`] when the file cannot be read, [`AuthFileError::Permissions`] when
    /// its mode lets group or others in, otherwise as [`BearerTokens::parse`].
    pub fn load(path: impl AsRef<Path>) -> Result<Self, AuthFileError> {
        use std::io::Read as _;
        let path = path.as_ref();
        let io = |source| AuthFileError::Io {
            path: path.display().to_string(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(io)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // The mode of the file actually opened, not of whatever the path names later.
            let mode = file.metadata().map_err(io)?.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(AuthFileError::Permissions {
                    path: path.display().to_string(),
                    mode,
                });
            }
        }
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(io)?;
        Self::parse(&text)
    }

    /// How many tokens are configured.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no tokens are configured (never true for a successfully built table).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The principal owning `token`, if any; constant time in the token and the table.
    pub fn lookup(&self, token: &str) -> Option<Principal> {
        let presented = digest(token.as_bytes());
        let mut found: Option<&Principal> = None;
        for (hash, principal) in &self.entries {
            let hit: Choice = hash.ct_eq(&presented);
            // Visit every entry regardless of hits; tokens are unique, so at most one matches.
            if bool::from(hit) {
                found = Some(principal);
            }
        }
        found.cloned()
    }
}

/// Extracts the credentials of the one `Authorization: Bearer <token>` header (scheme is
/// case-insensitive per RFC 9110). Two `Authorization` headers are `Malformed`, whatever they
/// hold.
pub fn bearer(headers: &HeaderMap) -> Result<&str, AuthRejection> {
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return Err(if headers.contains_key(AUTHORIZATION) {
            AuthRejection::Malformed
        } else {
            AuthRejection::Missing
        });
    };
    let value = value.to_str().map_err(|_| AuthRejection::Missing)?;
    let (scheme, token) = value.split_once(' ').ok_or(AuthRejection::Missing)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthRejection::Missing);
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(AuthRejection::Missing);
    }
    Ok(token)
}

impl Authenticator for BearerTokens {
    fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, AuthRejection> {
        let token = bearer(headers)?;
        self.lookup(token).ok_or(AuthRejection::InvalidToken)
    }

    fn scheme(&self) -> AuthScheme {
        AuthScheme::BearerToken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    const ALICE: &str = "kq3C0vYb1Q8pZ9d2mXW7rT5uLs4hJ6gE";
    const BOB: &str = "8f14e45fceea167a5a36dedd4bea2543a7e0d1c2";

    fn headers(auth: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, HeaderValue::from_str(auth).unwrap());
        h
    }

    #[test]
    fn parses_file_and_authenticates() {
        let text = format!("# team\n\nalice {ALICE}\n  bob\t{BOB}  \nalice {BOB}x\n");
        let tokens = BearerTokens::parse(&text).unwrap();
        assert_eq!(tokens.len(), 3);
        let p = tokens
            .authenticate(&headers(&format!("Bearer {ALICE}")))
            .unwrap();
        assert_eq!(p.as_str(), "alice");
        let p = tokens
            .authenticate(&headers(&format!("bearer {BOB}")))
            .unwrap();
        assert_eq!(p.as_str(), "bob");
        assert_eq!(
            tokens.authenticate(&headers(&format!("Bearer {ALICE}0"))),
            Err(AuthRejection::InvalidToken)
        );
        assert_eq!(
            tokens.authenticate(&headers(&format!("Basic {ALICE}"))),
            Err(AuthRejection::Missing)
        );
        assert_eq!(
            tokens.authenticate(&HeaderMap::new()),
            Err(AuthRejection::Missing)
        );
    }

    #[test]
    fn rejects_weak_duplicate_malformed_and_empty() {
        let err = BearerTokens::parse("alice short").unwrap_err();
        assert!(
            matches!(err, AuthFileError::WeakToken { line: 1, .. }),
            "{err}"
        );
        let err = BearerTokens::parse(&format!("a {}", "a".repeat(40))).unwrap_err();
        assert!(matches!(err, AuthFileError::WeakToken { .. }));
        let err = BearerTokens::parse(&format!("a {}!", &ALICE)).unwrap_err();
        assert!(matches!(err, AuthFileError::WeakToken { .. }));
        let err = BearerTokens::parse(&format!("a {ALICE}\n#\nb {ALICE}")).unwrap_err();
        assert!(matches!(
            err,
            AuthFileError::DuplicateToken { line: 3, first: 1 }
        ));
        assert!(!err.to_string().contains(ALICE));
        let err = BearerTokens::parse(&format!("a {ALICE} extra")).unwrap_err();
        assert!(matches!(err, AuthFileError::Malformed { line: 1 }));
        assert!(matches!(
            BearerTokens::parse("# nothing\n"),
            Err(AuthFileError::Empty)
        ));
    }

    #[test]
    fn two_authorization_headers_are_malformed() {
        let tokens = BearerTokens::parse(&format!("alice {ALICE}\nbob {BOB}")).unwrap();
        let mut h = headers(&format!("Bearer {ALICE}"));
        h.append(
            AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {BOB}")).unwrap(),
        );
        assert_eq!(tokens.authenticate(&h), Err(AuthRejection::Malformed));
        // Even two copies of one valid token: a request must not carry two credentials.
        let mut h = headers(&format!("Bearer {ALICE}"));
        h.append(
            AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {ALICE}")).unwrap(),
        );
        assert_eq!(tokens.authenticate(&h), Err(AuthRejection::Malformed));
    }

    #[cfg(unix)]
    #[test]
    fn auth_file_readable_by_others_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(&path, format!("ci {BOB}\n")).unwrap();
        for mode in [0o644, 0o640, 0o604, 0o660, 0o602] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = BearerTokens::load(&path).unwrap_err();
            assert!(
                matches!(err, AuthFileError::Permissions { .. }),
                "{mode:o}: {err}"
            );
            let text = err.to_string();
            assert!(
                text.contains(&format!("chmod 600 {}", path.display())),
                "{text}"
            );
            assert!(!text.contains(BOB));
        }
        for mode in [0o600, 0o400] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            assert!(BearerTokens::load(&path).is_ok(), "{mode:o}");
        }
    }

    #[test]
    fn loads_from_file_and_reports_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(&path, format!("ci {BOB}\n")).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let tokens = BearerTokens::load(&path).unwrap();
        assert_eq!(tokens.lookup(BOB).unwrap().as_str(), "ci");
        let err = BearerTokens::load(dir.path().join("absent")).unwrap_err();
        assert!(matches!(err, AuthFileError::Io { .. }));
    }

    #[test]
    fn anonymous_ignores_credentials() {
        let anon = AllowAnonymous(Principal::new("dev"));
        assert_eq!(
            anon.authenticate(&headers("Bearer nope")).unwrap().as_str(),
            "dev"
        );
    }
}
