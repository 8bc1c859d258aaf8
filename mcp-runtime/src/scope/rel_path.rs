//! Validated workspace-relative file ids.

use std::fmt;
use std::path::Path;

/// Longest relative id accepted, in bytes (Linux `PATH_MAX`).
pub const MAX_REL_PATH_LEN: usize = 4096;

/// Why a string is not an acceptable workspace-relative path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RelPathError {
    /// The id is empty.
    #[error("relative path is empty; name a file inside the workspace, e.g. \"notes/todo.md\"")]
    Empty,
    /// The id starts with `/`.
    #[error("relative path {0:?} is absolute; give it relative to the workspace root")]
    Absolute(String),
    /// The id has an empty component (`a//b`, a trailing `/`).
    #[error("relative path {0:?} has an empty component ('//' or a trailing '/')")]
    EmptyComponent(String),
    /// The id has a `.` or `..` component.
    #[error("relative path {0:?} contains a '.' or '..' component; only plain names are allowed")]
    DotComponent(String),
    /// The id contains a backslash, NUL or ASCII control character.
    #[error("relative path {0:?} contains a backslash, NUL or control character")]
    ForbiddenCharacter(String),
    /// The id is longer than [`MAX_REL_PATH_LEN`].
    #[error("relative path is {len} bytes long; at most {max} bytes are accepted")]
    TooLong {
        /// Length of the rejected input in bytes.
        len: usize,
        /// The limit, [`MAX_REL_PATH_LEN`].
        max: usize,
    },
}

/// A file id relative to a workspace root: `/`-separated plain names.
///
/// Never absolute, never empty, no empty / `.` / `..` components, no NUL, no backslash, no
/// control characters. Joined onto a workspace directory handle it can only name something
/// beneath that directory (symlinks are handled by [`Workspace`](super::Workspace)).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RelPath(String);

impl RelPath {
    /// Validates a relative id.
    pub fn new(id: impl Into<String>) -> Result<Self, RelPathError> {
        let id = id.into();
        if id.is_empty() {
            return Err(RelPathError::Empty);
        }
        if id.len() > MAX_REL_PATH_LEN {
            return Err(RelPathError::TooLong {
                len: id.len(),
                max: MAX_REL_PATH_LEN,
            });
        }
        if id.bytes().any(|b| b == b'\\' || b < 0x20 || b == 0x7f) {
            return Err(RelPathError::ForbiddenCharacter(id));
        }
        if id.starts_with('/') {
            return Err(RelPathError::Absolute(id));
        }
        for component in id.split('/') {
            match component {
                "" => return Err(RelPathError::EmptyComponent(id)),
                "." | ".." => return Err(RelPathError::DotComponent(id)),
                _ => {}
            }
        }
        Ok(Self(id))
    }

    /// The id as written, `/`-separated.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id as a relative [`Path`], for use with a directory handle.
    pub fn as_path(&self) -> &Path {
        Path::new(&self.0)
    }

    /// The components, first to last.
    pub fn components(&self) -> impl DoubleEndedIterator<Item = &str> {
        self.0.split('/')
    }

    /// The last component (the file name).
    pub fn file_name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// Appends one plain name, validating it.
    pub fn join(&self, name: &str) -> Result<Self, RelPathError> {
        Self::new(format!("{}/{name}", self.0))
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RelPath({:?})", self.0)
    }
}

impl AsRef<Path> for RelPath {
    fn as_ref(&self) -> &Path {
        self.as_path()
    }
}

impl TryFrom<&str> for RelPath {
    type Error = RelPathError;
    fn try_from(value: &str) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl TryFrom<String> for RelPath {
    type Error = RelPathError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl std::str::FromStr for RelPath {
    type Err = RelPathError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_plain_ids() {
        let p = RelPath::new("a/b c/note.md").unwrap();
        assert_eq!(p.components().collect::<Vec<_>>(), ["a", "b c", "note.md"]);
        assert_eq!(p.file_name(), "note.md");
        assert_eq!(RelPath::new("...").unwrap().as_str(), "...");
        assert_eq!(
            RelPath::new("a").unwrap().join("b.md").unwrap().as_str(),
            "a/b.md"
        );
    }

    #[test]
    fn rejects_hostile_ids() {
        assert_eq!(RelPath::new(""), Err(RelPathError::Empty));
        assert!(matches!(
            RelPath::new("/etc/passwd"),
            Err(RelPathError::Absolute(_))
        ));
        assert!(matches!(
            RelPath::new("a//b"),
            Err(RelPathError::EmptyComponent(_))
        ));
        assert!(matches!(
            RelPath::new("a/"),
            Err(RelPathError::EmptyComponent(_))
        ));
        assert!(matches!(
            RelPath::new("../x"),
            Err(RelPathError::DotComponent(_))
        ));
        assert!(matches!(
            RelPath::new("a/../../x"),
            Err(RelPathError::DotComponent(_))
        ));
        assert!(matches!(
            RelPath::new("./x"),
            Err(RelPathError::DotComponent(_))
        ));
        assert!(matches!(
            RelPath::new("a\\..\\x"),
            Err(RelPathError::ForbiddenCharacter(_))
        ));
        assert!(matches!(
            RelPath::new("a\0b"),
            Err(RelPathError::ForbiddenCharacter(_))
        ));
        assert!(matches!(
            RelPath::new("a".repeat(5000)),
            Err(RelPathError::TooLong { .. })
        ));
        assert!(RelPath::new("a").unwrap().join("..").is_err());
        assert!(RelPath::new("a").unwrap().join("x/../..").is_err());
    }

    proptest! {
        /// Whatever is accepted, read as a path, has only normal components and stays relative.
        #[test]
        fn accepted_ids_are_plain(s in "[a-z./\\\\\u{0}é]{0,24}") {
            if let Ok(p) = RelPath::new(s) {
                prop_assert!(p.as_path().is_relative());
                for c in p.as_path().components() {
                    prop_assert!(matches!(c, std::path::Component::Normal(_)), "{:?}", c);
                }
            }
        }
    }
}
