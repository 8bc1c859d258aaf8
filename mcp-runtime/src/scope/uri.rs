//! `file:` URIs naming a workspace, parsed strictly and normalised to absolute path components.

use std::fmt;
use std::path::{Path, PathBuf};

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode, utf8_percent_encode};

/// The longest URI [`WorkspaceUri::parse`] looks at, so hostile input costs bounded work.
pub const MAX_URI_LEN: usize = 8 * 1024;

/// Characters left unescaped when a path component is written back into a URI: RFC 3986
/// unreserved characters plus the sub-delimiters and `:`/`@` that a path segment may carry.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
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
    .remove(b'=')
    .remove(b':')
    .remove(b'@');

/// Why a string is not an acceptable workspace `file:` URI.
///
/// Messages name the problem and the accepted form, so a client (or a model) can correct the
/// request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UriError {
    /// The URI is longer than [`MAX_URI_LEN`].
    #[error("workspace URI is {len} bytes long; at most {max} bytes are accepted")]
    TooLong {
        /// Length of the rejected input in bytes.
        len: usize,
        /// The limit, [`MAX_URI_LEN`].
        max: usize,
    },
    /// The scheme is missing or is not `file`.
    #[error("workspace URI must use the file scheme, as in file:///absolute/path")]
    NotFileScheme,
    /// `file:` was not followed by `//` (relative or authority-less forms such as `file:notes`
    /// or `file:/notes`).
    #[error(
        "workspace URI must be of the form file:///absolute/path (the '//' after 'file:' is missing)"
    )]
    MissingAuthority,
    /// The authority names a host other than `localhost`.
    #[error(
        "workspace URI names host {host:?}; only local paths are accepted (file:///path or file://localhost/path)"
    )]
    RemoteHost {
        /// The authority as written (undecoded).
        host: String,
    },
    /// Nothing follows the authority: there is no path.
    #[error("workspace URI has no path; write file:///absolute/path")]
    EmptyPath,
    /// The URI carries a `?query` or `#fragment`, which has no meaning for a directory.
    #[error("workspace URI must not contain a query ('?') or fragment ('#')")]
    QueryOrFragment,
    /// A `%` is not followed by two hexadecimal digits.
    #[error(
        "workspace URI has a malformed percent escape at byte {offset}; '%' must be followed by two hex digits"
    )]
    BadPercentEscape {
        /// Byte offset of the `%` in the input.
        offset: usize,
    },
    /// A path segment decodes to a string containing `/` or `\` (`%2F`, `%5C`), which would
    /// smuggle a separator past segment-wise checks.
    #[error(
        "workspace URI segment {segment:?} encodes a path separator (%2F or %5C); this is refused"
    )]
    EncodedSeparator {
        /// The offending segment as written (undecoded).
        segment: String,
    },
    /// The URI contains a NUL byte, raw or as `%00`.
    #[error("workspace URI contains a NUL byte (raw or %00)")]
    Nul,
    /// The URI contains a raw backslash or an ASCII control character.
    #[error(
        "workspace URI contains a backslash or control character; percent-encode file names instead"
    )]
    ForbiddenCharacter,
    /// A path segment does not decode to valid UTF-8.
    #[error("workspace URI segment {segment:?} does not decode to valid UTF-8")]
    InvalidUtf8 {
        /// The offending segment as written (undecoded).
        segment: String,
    },
}

/// A parsed, normalised `file:` URI naming a local directory.
///
/// Parsing accepts `file:///abs/path` and `file://localhost/abs/path` (scheme and host compared
/// case-insensitively) and nothing else. Each path segment is percent-decoded exactly once
/// (`%252e` stays the literal name `%2e`); segments that decode to `.` or `..` — including
/// `%2e%2e` — are dot segments and are resolved lexically, without consulting the filesystem
/// (`..` at `/` stays at `/`). Empty segments (`//`, a trailing `/`) are dropped.
///
/// The result is therefore an absolute path made only of normal components. A URI whose `..`
/// climbs out of some directory simply denotes a path outside it: containment is decided later by
/// comparing components (see [`ScopePolicy`](super::ScopePolicy)).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct WorkspaceUri {
    /// Decoded, normal components: never empty strings, `.`, `..`, or containing `/`, `\`, NUL.
    components: Vec<String>,
    path: PathBuf,
}

impl WorkspaceUri {
    /// Parses and normalises a workspace URI.
    pub fn parse(input: &str) -> Result<Self, UriError> {
        if input.len() > MAX_URI_LEN {
            return Err(UriError::TooLong {
                len: input.len(),
                max: MAX_URI_LEN,
            });
        }
        if input.bytes().any(|b| b == 0) {
            return Err(UriError::Nul);
        }
        if input.contains(['?', '#']) {
            return Err(UriError::QueryOrFragment);
        }
        if input.bytes().any(|b| b == b'\\' || b < 0x20 || b == 0x7f) {
            return Err(UriError::ForbiddenCharacter);
        }
        let rest = match input.split_once(':') {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("file") => rest,
            _ => return Err(UriError::NotFileScheme),
        };
        let Some(after_slashes) = rest.strip_prefix("//") else {
            return Err(UriError::MissingAuthority);
        };
        let (authority, path) = match after_slashes.find('/') {
            Some(i) => after_slashes.split_at(i),
            None => (after_slashes, ""),
        };
        if !authority.is_empty() && !authority.eq_ignore_ascii_case("localhost") {
            return Err(UriError::RemoteHost {
                host: authority.to_owned(),
            });
        }
        if path.is_empty() {
            return Err(UriError::EmptyPath);
        }
        check_percent_escapes(input)?;

        let mut components: Vec<String> = Vec::new();
        for raw in path.split('/') {
            let bytes: Vec<u8> = percent_decode(raw.as_bytes()).collect();
            if bytes.contains(&0) {
                return Err(UriError::Nul);
            }
            if bytes.iter().any(|&b| b == b'/' || b == b'\\') {
                return Err(UriError::EncodedSeparator {
                    segment: raw.to_owned(),
                });
            }
            if bytes.iter().any(|&b| b < 0x20 || b == 0x7f) {
                return Err(UriError::ForbiddenCharacter);
            }
            let decoded = String::from_utf8(bytes).map_err(|_| UriError::InvalidUtf8 {
                segment: raw.to_owned(),
            })?;
            match decoded.as_str() {
                "" | "." => {}
                ".." => {
                    components.pop();
                }
                _ => components.push(decoded),
            }
        }
        Ok(Self::from_components(components))
    }

    /// Builds a URI for an absolute local path, normalising it lexically like [`parse`](Self::parse).
    ///
    /// Fails if the path is relative or a component is not UTF-8 or holds a `\`, NUL or control
    /// character (such a directory cannot be named by a URI this type accepts).
    pub fn from_path(path: &Path) -> Result<Self, UriError> {
        use std::path::Component;
        if !path.is_absolute() {
            return Err(UriError::MissingAuthority);
        }
        let mut components: Vec<String> = Vec::new();
        for component in path.components() {
            match component {
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
                Component::ParentDir => {
                    components.pop();
                }
                Component::Normal(name) => {
                    let Some(name) = name.to_str() else {
                        return Err(UriError::InvalidUtf8 {
                            segment: name.to_string_lossy().into_owned(),
                        });
                    };
                    if name.bytes().any(|b| b == b'\\' || b < 0x20 || b == 0x7f) {
                        return Err(UriError::ForbiddenCharacter);
                    }
                    components.push(name.to_owned());
                }
            }
        }
        Ok(Self::from_components(components))
    }

    fn from_components(components: Vec<String>) -> Self {
        let mut path = PathBuf::from("/");
        path.extend(&components);
        Self { components, path }
    }

    /// This URI with one more component; `name` must be a plain, already validated name.
    pub(crate) fn child(&self, name: &str) -> Self {
        let mut components = self.components.clone();
        components.push(name.to_owned());
        Self::from_components(components)
    }

    /// The normalised absolute path the URI denotes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The decoded path components, root first (empty for `file:///`).
    pub fn components(&self) -> &[String] {
        &self.components
    }

    /// Whether this URI denotes `base` or a path beneath it, compared component by component
    /// (so `/x/notes-evil` is not inside `/x/notes`).
    pub fn is_within(&self, base: &WorkspaceUri) -> bool {
        self.components.starts_with(&base.components)
    }

    /// The components below `base`, or `None` if this URI is not within it.
    pub fn strip_base(&self, base: &WorkspaceUri) -> Option<&[String]> {
        self.components.strip_prefix(base.components.as_slice())
    }
}

/// Every `%` must start a two-hex-digit escape; `percent_decode` would otherwise pass it through
/// silently, letting `%2` or `%zz` mean different things to different parsers.
fn check_percent_escapes(input: &str) -> Result<(), UriError> {
    let bytes = input.as_bytes();
    for (offset, &b) in bytes.iter().enumerate() {
        if b == b'%' {
            let ok = bytes
                .get(offset + 1..offset + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
            if !ok {
                return Err(UriError::BadPercentEscape { offset });
            }
        }
    }
    Ok(())
}

/// Writes the canonical form `file:///a/b`, percent-encoding every component; parsing it again
/// yields an equal value.
impl fmt::Display for WorkspaceUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("file://")?;
        if self.components.is_empty() {
            return f.write_str("/");
        }
        for component in &self.components {
            write!(f, "/{}", utf8_percent_encode(component, SEGMENT))?;
        }
        Ok(())
    }
}

impl fmt::Debug for WorkspaceUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("WorkspaceUri")
            .field(&format_args!("{self}"))
            .finish()
    }
}

impl std::str::FromStr for WorkspaceUri {
    type Err = UriError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Display then parse is the identity for any nameable directory.
        #[test]
        fn display_parse_round_trip(names in prop::collection::vec("[^/\\\\\\x00-\\x1f\\x7f]{1,12}", 0..6)) {
            let names: Vec<String> = names.into_iter().filter(|n| n != "." && n != "..").collect();
            let uri = WorkspaceUri::from_components(names);
            prop_assert_eq!(WorkspaceUri::parse(&uri.to_string()), Ok(uri));
        }

        /// Arbitrary hostile input never panics, and anything accepted is a plain absolute path.
        #[test]
        fn parse_output_is_always_plain(
            parts in prop::collection::vec(prop::sample::select(vec![
                "/", "//", ".", "..", "%2e", "%2E%2e", "%2F", "%5c", "%00", "%", "%4", "%41", "a",
                "é", "%C3%A9", "%FF", "?", "#", "\\", "localhost", "file:", ":", "@", " ",
            ]), 0..12),
            prefix in prop::sample::select(vec!["file://", "file:///", "FILE://localhost", "file:", ""]),
        ) {
            let input = format!("{prefix}{}", parts.concat());
            if let Ok(uri) = WorkspaceUri::parse(&input) {
                prop_assert!(uri.path().is_absolute());
                for c in uri.path().components().skip(1) {
                    prop_assert!(matches!(c, std::path::Component::Normal(_)), "{:?} from {}", c, input);
                }
                for c in uri.components() {
                    prop_assert!(!c.is_empty() && c != "." && c != ".." && !c.contains(['/', '\\', '\0']));
                }
                prop_assert_eq!(WorkspaceUri::parse(&uri.to_string()), Ok(uri));
            }
        }
    }

    fn path(uri: &str) -> Result<PathBuf, UriError> {
        WorkspaceUri::parse(uri).map(|u| u.path().to_path_buf())
    }

    #[test]
    fn accepts_local_forms() {
        assert_eq!(path("file:///x/notes"), Ok(PathBuf::from("/x/notes")));
        assert_eq!(
            path("file://localhost/x/notes"),
            Ok(PathBuf::from("/x/notes"))
        );
        assert_eq!(
            path("FILE://LocalHost/x/notes/"),
            Ok(PathBuf::from("/x/notes"))
        );
        assert_eq!(path("file:///"), Ok(PathBuf::from("/")));
        assert_eq!(path("file:///x//notes"), Ok(PathBuf::from("/x/notes")));
    }

    #[test]
    fn rejects_other_hosts_schemes_and_relative_forms() {
        assert!(matches!(
            path("file://evil.example/x"),
            Err(UriError::RemoteHost { .. })
        ));
        assert!(matches!(
            path("file://localhost:80/x"),
            Err(UriError::RemoteHost { .. })
        ));
        assert!(matches!(
            path("file://user@localhost/x"),
            Err(UriError::RemoteHost { .. })
        ));
        assert_eq!(path("https://localhost/x"), Err(UriError::NotFileScheme));
        assert_eq!(path("/x/notes"), Err(UriError::NotFileScheme));
        assert_eq!(path("notes"), Err(UriError::NotFileScheme));
        assert_eq!(path("file:notes"), Err(UriError::MissingAuthority));
        assert_eq!(path("file:/x/notes"), Err(UriError::MissingAuthority));
        assert_eq!(path("file://"), Err(UriError::EmptyPath));
        assert_eq!(path("file://localhost"), Err(UriError::EmptyPath));
        assert_eq!(path("file:///x?y=1"), Err(UriError::QueryOrFragment));
        assert_eq!(path("file:///x#top"), Err(UriError::QueryOrFragment));
    }

    #[test]
    fn decodes_exactly_once() {
        assert_eq!(path("file:///x/a%20b"), Ok(PathBuf::from("/x/a b")));
        assert_eq!(path("file:///x/%252e%252e"), Ok(PathBuf::from("/x/%2e%2e")));
        assert_eq!(path("file:///x/caf%C3%A9"), Ok(PathBuf::from("/x/café")));
        assert_eq!(path("file:///x/café"), Ok(PathBuf::from("/x/café")));
    }

    #[test]
    fn resolves_dot_segments_including_encoded_ones() {
        assert_eq!(
            path("file:///x/notes/../private"),
            Ok(PathBuf::from("/x/private"))
        );
        assert_eq!(
            path("file:///x/notes/%2e%2e/private"),
            Ok(PathBuf::from("/x/private"))
        );
        assert_eq!(
            path("file:///x/notes/%2E%2e/private"),
            Ok(PathBuf::from("/x/private"))
        );
        assert_eq!(path("file:///x/./notes/%2e"), Ok(PathBuf::from("/x/notes")));
        assert_eq!(path("file:///../../etc"), Ok(PathBuf::from("/etc")));
        // Not dot segments: names that merely contain dots.
        assert_eq!(path("file:///x/.../a..b"), Ok(PathBuf::from("/x/.../a..b")));
    }

    #[test]
    fn rejects_encoded_separators_nul_and_bad_escapes() {
        assert!(matches!(
            path("file:///x/a%2Fb"),
            Err(UriError::EncodedSeparator { .. })
        ));
        assert!(matches!(
            path("file:///x/a%2fb"),
            Err(UriError::EncodedSeparator { .. })
        ));
        assert!(matches!(
            path("file:///x/%2e%2e%2Fetc"),
            Err(UriError::EncodedSeparator { .. })
        ));
        assert!(matches!(
            path("file:///x/a%5Cb"),
            Err(UriError::EncodedSeparator { .. })
        ));
        assert_eq!(path("file:///x/a\\b"), Err(UriError::ForbiddenCharacter));
        assert_eq!(path("file:///x/a%00b"), Err(UriError::Nul));
        assert_eq!(path("file:///x/a\0b"), Err(UriError::Nul));
        assert_eq!(path("file:///x/a%0Ab"), Err(UriError::ForbiddenCharacter));
        assert_eq!(
            path("file:///x/a%2"),
            Err(UriError::BadPercentEscape { offset: 11 })
        );
        assert_eq!(
            path("file:///x/a%zz"),
            Err(UriError::BadPercentEscape { offset: 11 })
        );
        assert!(matches!(
            path("file:///x/%C3%28"),
            Err(UriError::InvalidUtf8 { .. })
        ));
        assert!(matches!(
            path("file:///x/%FF"),
            Err(UriError::InvalidUtf8 { .. })
        ));
    }

    #[test]
    fn rejects_overlong_input() {
        let long = format!("file:///{}", "a".repeat(MAX_URI_LEN));
        assert!(matches!(path(&long), Err(UriError::TooLong { .. })));
    }

    #[test]
    fn display_round_trips_and_encodes() {
        let uri = WorkspaceUri::parse("file://localhost/x/a%20b/caf%c3%a9/%25").unwrap();
        let shown = uri.to_string();
        assert_eq!(shown, "file:///x/a%20b/caf%C3%A9/%25");
        assert_eq!(WorkspaceUri::parse(&shown), Ok(uri));
        assert_eq!(
            WorkspaceUri::parse("file:///").unwrap().to_string(),
            "file:///"
        );
    }

    #[test]
    fn containment_is_by_component() {
        let root = WorkspaceUri::parse("file:///x/notes").unwrap();
        let evil = WorkspaceUri::parse("file:///x/notes-evil").unwrap();
        let inner = WorkspaceUri::parse("file:///x/notes/sub").unwrap();
        assert!(!evil.is_within(&root));
        assert!(inner.is_within(&root));
        assert!(root.is_within(&root));
        assert_eq!(inner.strip_base(&root), Some(&["sub".to_owned()][..]));
    }

    #[test]
    fn from_path_normalises() {
        let uri = WorkspaceUri::from_path(Path::new("/x/./notes/../a b")).unwrap();
        assert_eq!(uri.path(), Path::new("/x/a b"));
        assert_eq!(uri.to_string(), "file:///x/a%20b");
        assert!(WorkspaceUri::from_path(Path::new("rel")).is_err());
    }
}
