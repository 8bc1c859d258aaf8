//! The notes domain: a workspace is a directory of Markdown files, a note is one of them.
//!
//! Everything here goes through [`mcp_runtime::scope`]: the workspace URI a client sends is
//! authorized for the authenticated principal by a [`ScopePolicy`] built from server
//! configuration, and every file operation is resolved beneath the workspace's directory handle.
//! This module adds only what is specific to notes: which files count, how titles are read, and
//! which notes a title search matches.

use std::sync::Arc;

use mcp_runtime::Principal;
use mcp_runtime::form::Choice;
use mcp_runtime::scope::{FsError, RelPath, ScopeError, ScopePolicy, Workspace, WorkspaceUri};
use schemars::JsonSchema;
use serde::Serialize;

/// Largest note read to find its title; bigger files are still notes, titled by their stem.
pub const MAX_NOTE_BYTES: u64 = 1024 * 1024;

/// One note: its id (path relative to the workspace, `/`-separated) and its title.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Note {
    /// Path relative to the workspace, e.g. `2025/tps-2025.md`.
    pub id: String,
    /// Text of the note's first `# ` heading, or the file stem when it has none.
    pub title: String,
}

/// Why a notes operation failed. Messages are written for the model reading a tool result:
/// they say what went wrong and what to do, and never reveal server paths.
#[derive(Debug, thiserror::Error)]
pub enum NotesError {
    /// The workspace URI was refused (malformed, not allowed, or unavailable).
    #[error(transparent)]
    Scope(#[from] ScopeError),
    /// The note id is not a plain relative path.
    #[error("note id {id:?} is not valid: {reason}")]
    InvalidId {
        /// The id as given.
        id: String,
        /// Why it is not valid.
        reason: String,
    },
    /// The id does not name a Markdown note.
    #[error("{id:?} is not a note: only `.md` files are notes")]
    NotANote {
        /// The id as given.
        id: String,
    },
    /// A file operation failed or was refused by containment.
    #[error(transparent)]
    Fs(#[from] FsError),
    /// The URI lies in no workspace the caller may use (or is not a `file:` URI).
    #[error(
        "{uri:?} is not inside a workspace you may use; call notes_list with an authorized workspace URI"
    )]
    NotInWorkspace {
        /// The URI as given.
        uri: String,
    },
    /// No note title contains the text searched for.
    #[error("No note title contains {needle:?}; call notes_list to see the titles.")]
    NoMatch {
        /// The text searched for.
        needle: String,
    },
    /// The confirmed note's title no longer matches the search the user confirmed.
    #[error(
        "the note {id:?} no longer matches the title searched for; nothing was deleted. Search again"
    )]
    NoLongerMatches {
        /// The note id.
        id: String,
    },
    /// The notes database failed or is misconfigured.
    #[error("{0}")]
    Backend(String),
}

/// The notes service state: which workspaces each principal may open.
///
/// Cheap to clone (shared policy), so it can be the server's app state.
#[derive(Debug, Clone)]
pub struct Notes {
    policy: Arc<ScopePolicy>,
}

impl Notes {
    /// Wraps a scope policy built from server configuration.
    pub fn new(policy: ScopePolicy) -> Self {
        Self {
            policy: Arc::new(policy),
        }
    }

    /// The workspaces `principal` may use (for help text addressed to that principal only).
    pub fn roots_for(&self, principal: &Principal) -> Vec<WorkspaceUri> {
        self.policy.roots_for(principal)
    }

    /// Reads the note a `file:` URI names, returning its id and text.
    ///
    /// The URI must lie inside a workspace `principal` is authorized for (the innermost one
    /// wins); that workspace is authorized and opened exactly as the tools do, and the note is
    /// read beneath its directory handle, so the same containment rules apply.
    pub fn read_note_uri(
        &self,
        principal: &Principal,
        uri: &str,
    ) -> Result<(String, String), NotesError> {
        let roots = self.roots_for(principal);
        let (root, id) = locate_note(&roots, uri)?;
        let ws = self.open(principal, &root.to_string())?;
        if ws.uri() != root {
            return Err(NotesError::NotInWorkspace {
                uri: uri.to_owned(),
            });
        }
        let text = ws.read(&id)?;
        Ok((id, text))
    }

    /// Authorizes `workspace_uri` for `principal` and opens it.
    pub fn open(
        &self,
        principal: &Principal,
        workspace_uri: &str,
    ) -> Result<NotesWorkspace, NotesError> {
        let ws = self.policy.authorize(principal, workspace_uri)?;
        Ok(NotesWorkspace { ws })
    }
}

/// An authorized, opened workspace of notes.
#[derive(Debug, Clone)]
pub struct NotesWorkspace {
    ws: Workspace,
}

impl NotesWorkspace {
    /// The workspace's canonical URI.
    pub fn uri(&self) -> &WorkspaceUri {
        self.ws.uri()
    }

    /// Every note, sorted by id.
    ///
    /// Only regular `.md` files reached through real directories are notes. Symbolic links are
    /// never offered, wherever they point: a link leading outside the workspace must not be, and
    /// one leading inside could not be deleted (deletion follows no link), so offering it would
    /// ask the user to confirm something that cannot happen.
    pub fn list(&self) -> Result<Vec<Note>, NotesError> {
        let listing = self.ws.walk(|rel| rel.as_str().ends_with(".md"))?;
        let mut notes = Vec::with_capacity(listing.files.len());
        for rel in listing.files {
            // The walk never descends into a linked directory, so only the entry itself can be
            // a link here.
            let is_plain_file = self
                .ws
                .dir()
                .symlink_metadata(rel.as_path())
                .is_ok_and(|m| m.is_file());
            if !is_plain_file {
                continue;
            }
            let title = self.title_of(&rel);
            notes.push(Note {
                id: rel.as_str().to_owned(),
                title,
            });
        }
        Ok(notes)
    }

    /// The text of note `id` (at most [`MAX_NOTE_BYTES`]).
    ///
    /// Like deletion, reading follows no link (a note is a regular file reached through real
    /// directories) and never blocks: a FIFO or device in a note's place is refused at once.
    pub fn read(&self, id: &str) -> Result<String, NotesError> {
        let rel = note_path(id)?;
        Ok(self.ws.read_to_string_nofollow(&rel, MAX_NOTE_BYTES)?)
    }

    /// Notes whose title contains `needle`, case-insensitively, sorted by id.
    pub fn matching(&self, needle: &str) -> Result<Vec<Note>, NotesError> {
        Ok(self
            .list()?
            .into_iter()
            .filter(|n| title_matches(&n.title, needle))
            .collect())
    }

    /// The notes matching `needle` as form choices (id, titled with the note's title), for
    /// asking the user which one; [`NotesError::NoMatch`] when there are none.
    pub fn candidates(&self, needle: &str) -> Result<Vec<Choice>, NotesError> {
        let hits = self.matching(needle)?;
        if hits.is_empty() {
            return Err(NotesError::NoMatch {
                needle: needle.to_owned(),
            });
        }
        Ok(hits
            .into_iter()
            .map(|n| Choice::titled(n.id, n.title))
            .collect())
    }

    /// Deletes the note `id` and returns its id.
    ///
    /// Containment is re-checked immediately before the unlink by
    /// [`Workspace::remove_file`]: every parent is re-opened as a real directory and the entry
    /// must be a regular file, not a link.
    pub fn delete(&self, id: &str) -> Result<String, NotesError> {
        let rel = note_path(id)?;
        self.ws.remove_file(&rel)?;
        Ok(rel.as_str().to_owned())
    }

    /// The title of the note `id`, or `None` when no such file exists (any more).
    pub fn title_if_note(&self, id: &str) -> Result<Option<String>, NotesError> {
        let rel = note_path(id)?;
        match self.ws.dir().symlink_metadata(rel.as_path()) {
            Ok(_) => Ok(Some(self.title_of(&rel))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            // Anything else (a parent that is a link, say) is for the unlink's containment
            // check to refuse.
            Err(_) => Ok(Some(self.title_of(&rel))),
        }
    }

    /// The text of the note `id` (at most [`MAX_NOTE_BYTES`]); see [`read`](Self::read).
    pub fn read_note(&self, id: &str) -> Result<String, NotesError> {
        self.read(id)
    }

    /// Like [`delete`](Self::delete), but a note that is already gone counts as deleted.
    ///
    /// This is the convergent form a replay store's claim-plus-action
    /// ([`mcp_runtime::replay::ClaimWork::During`]) needs. The server itself deletes
    /// at most once instead (claim committed first, then [`delete`](Self::delete)), so that a
    /// note re-created after a crash is never deleted by the old confirmation.
    pub fn delete_convergent(&self, id: &str) -> Result<String, NotesError> {
        match self.delete(id) {
            Err(NotesError::Fs(FsError::NotFound { .. })) => Ok(id.to_owned()),
            other => other,
        }
    }

    /// The note's title: its first `# ` heading, else the file stem. Unreadable files fall back
    /// to the stem rather than hiding the note.
    fn title_of(&self, rel: &RelPath) -> String {
        self.ws
            .read_to_string_nofollow(rel, MAX_NOTE_BYTES)
            .ok()
            .and_then(|text| heading_title(&text))
            .unwrap_or_else(|| file_stem(rel).to_owned())
    }
}

/// Whether `title` contains `needle`, ignoring case (Unicode lowercase on both sides).
pub fn title_matches(title: &str, needle: &str) -> bool {
    title.to_lowercase().contains(&needle.to_lowercase())
}

/// Validates a note id: a plain relative path ending in `.md`.
pub fn note_path(id: &str) -> Result<RelPath, NotesError> {
    let rel = RelPath::new(id).map_err(|e| NotesError::InvalidId {
        id: id.to_owned(),
        reason: e.to_string(),
    })?;
    if !rel.as_str().ends_with(".md") {
        return Err(NotesError::NotANote { id: id.to_owned() });
    }
    Ok(rel)
}

/// The workspace among `roots` that holds the note a `file:` URI names (the innermost one,
/// compared component by component), and the note's id: its path below that workspace.
/// Anything else, the workspace itself included, is [`NotesError::NotInWorkspace`].
pub fn locate_note<'r>(
    roots: &'r [WorkspaceUri],
    uri: &str,
) -> Result<(&'r WorkspaceUri, String), NotesError> {
    let outside = || NotesError::NotInWorkspace {
        uri: uri.to_owned(),
    };
    let target = WorkspaceUri::parse(uri).map_err(|_| outside())?;
    let root = roots
        .iter()
        .filter(|r| target.is_within(r))
        .max_by_key(|r| r.components().len())
        .ok_or_else(outside)?;
    let id = target
        .strip_base(root)
        .filter(|rest| !rest.is_empty())
        .ok_or_else(outside)?
        .join("/");
    Ok((root, id))
}

/// The text of the first line that is a level-one ATX heading (`# Title`), trimmed.
pub fn heading_title(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix("# ")?;
        let title = rest.trim().trim_end_matches('#').trim();
        (!title.is_empty()).then(|| title.to_owned())
    })
}

/// The file name without its last extension.
fn file_stem(rel: &RelPath) -> &str {
    let name = rel.file_name();
    match name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem,
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::fs;

    fn setup() -> (tempfile::TempDir, Notes, Principal, String) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("notes");
        fs::create_dir_all(root.join("2025")).unwrap();
        fs::write(root.join("tps.md"), "# TPS report\nbody").unwrap();
        fs::write(
            root.join("2025/tps-2025.md"),
            "intro\n# TPS Report 2025 #\n",
        )
        .unwrap();
        fs::write(root.join("shopping.md"), "milk, eggs").unwrap();
        fs::write(root.join("readme.txt"), "# TPS not a note").unwrap();
        let alice = Principal::new("alice");
        let notes = Notes::new(ScopePolicy::new().allow(alice.clone(), &root).unwrap());
        let uri = WorkspaceUri::from_path(&fs::canonicalize(&root).unwrap())
            .unwrap()
            .to_string();
        (dir, notes, alice, uri)
    }

    #[test]
    fn lists_markdown_notes_with_titles() {
        let (_d, notes, alice, uri) = setup();
        let ws = notes.open(&alice, &uri).unwrap();
        let listed = ws.list().unwrap();
        let pairs: Vec<(&str, &str)> = listed
            .iter()
            .map(|n| (n.id.as_str(), n.title.as_str()))
            .collect();
        assert_eq!(
            pairs,
            vec![
                ("2025/tps-2025.md", "TPS Report 2025"),
                ("shopping.md", "shopping"),
                ("tps.md", "TPS report"),
            ]
        );
    }

    #[test]
    fn matching_is_case_insensitive_substring_of_title() {
        let (_d, notes, alice, uri) = setup();
        let ws = notes.open(&alice, &uri).unwrap();
        let ids: Vec<String> = ws
            .matching("tps rep")
            .unwrap()
            .into_iter()
            .map(|n| n.id)
            .collect();
        assert_eq!(ids, vec!["2025/tps-2025.md", "tps.md"]);
        assert!(ws.matching("nothing like it").unwrap().is_empty());
    }

    #[test]
    fn other_principal_and_prefix_confusion_refused() {
        let (_d, notes, alice, uri) = setup();
        let bob = Principal::new("bob");
        assert!(matches!(notes.open(&bob, &uri), Err(NotesError::Scope(_))));
        let evil = format!("{uri}-evil");
        assert!(matches!(
            notes.open(&alice, &evil),
            Err(NotesError::Scope(_))
        ));
        let traversal = format!("{uri}/%2e%2e/private");
        assert!(matches!(
            notes.open(&alice, &traversal),
            Err(NotesError::Scope(_))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_neither_listed_nor_deleted() {
        let (dir, notes, alice, uri) = setup();
        let root = dir.path().join("notes");
        let outside = dir.path().join("private");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("secret.md"), "# TPS secret").unwrap();
        std::os::unix::fs::symlink(outside.join("secret.md"), root.join("link.md")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("linkdir")).unwrap();
        let ws = notes.open(&alice, &uri).unwrap();
        let ids: Vec<String> = ws.list().unwrap().into_iter().map(|n| n.id).collect();
        assert!(!ids.iter().any(|i| i.starts_with("link")), "{ids:?}");
        assert!(ws.delete("link.md").is_err());
        assert!(ws.delete("linkdir/secret.md").is_err());
        assert!(outside.join("secret.md").exists());
        assert!(root.join("link.md").symlink_metadata().is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn containment_is_rechecked_at_the_unlink_after_a_swap() {
        let (dir, notes, alice, uri) = setup();
        let root = dir.path().join("notes");
        let outside = dir.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("tps-2025.md"), "# TPS Report 2025").unwrap();
        let ws = notes.open(&alice, &uri).unwrap();
        let offered = ws.matching("2025").unwrap();
        assert_eq!(offered[0].id, "2025/tps-2025.md");
        // After the candidates were computed, the folder becomes a link leading outside.
        fs::rename(root.join("2025"), dir.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("2025")).unwrap();
        assert!(ws.delete(&offered[0].id).is_err());
        assert!(
            ws.delete_convergent(&offered[0].id).is_err(),
            "a refusal is not 'already gone'"
        );
        assert!(outside.join("tps-2025.md").exists());
        // Likewise a note replaced by a link to a file outside.
        fs::rename(root.join("tps.md"), dir.path().join("tps-moved.md")).unwrap();
        std::os::unix::fs::symlink(outside.join("tps-2025.md"), root.join("tps.md")).unwrap();
        assert!(ws.delete("tps.md").is_err());
        assert!(outside.join("tps-2025.md").exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_in_a_notes_place_is_neither_read_nor_deleted() {
        let (dir, notes, alice, uri) = setup();
        let path = dir.path().join("notes/tps.md");
        fs::remove_file(&path).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success());
        let ws = notes.open(&alice, &uri).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = ws.clone();
        std::thread::spawn(move || {
            let read = reader.read("tps.md").map_err(|e| e.to_string());
            let title = reader.title_if_note("tps.md").map_err(|e| e.to_string());
            let _ = tx.send((read, title));
        });
        let (read, title) = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("reading a FIFO blocked");
        assert!(read.unwrap_err().contains("not a regular file"));
        assert_eq!(title.unwrap().as_deref(), Some("tps"), "titled by its stem");
        assert!(matches!(
            ws.delete("tps.md"),
            Err(NotesError::Fs(FsError::NotARegularFile { .. }))
        ));
        assert!(fs::symlink_metadata(&path).is_ok());
    }

    #[test]
    fn delete_removes_exactly_one_note_and_validates_ids() {
        let (dir, notes, alice, uri) = setup();
        let ws = notes.open(&alice, &uri).unwrap();
        ws.delete("tps.md").unwrap();
        assert!(!dir.path().join("notes/tps.md").exists());
        assert!(dir.path().join("notes/2025/tps-2025.md").exists());
        assert!(matches!(
            ws.delete("tps.md"),
            Err(NotesError::Fs(FsError::NotFound { .. }))
        ));
        ws.delete_convergent("tps.md").unwrap();
        assert!(matches!(
            ws.delete("../x.md"),
            Err(NotesError::InvalidId { .. })
        ));
        assert!(matches!(
            ws.delete("readme.txt"),
            Err(NotesError::NotANote { .. })
        ));
        assert!(dir.path().join("notes/readme.txt").exists());
    }

    proptest! {
        #[test]
        fn any_case_variant_of_a_title_slice_matches(title in "[A-Za-z0-9 ()]{1,30}", a in 0usize..30, b in 0usize..30, flips in proptest::collection::vec(any::<bool>(), 30)) {
            let (lo, hi) = (a.min(b).min(title.len()), a.max(b).min(title.len()));
            let needle: String = title[lo..hi]
                .chars()
                .zip(flips.iter().cycle())
                .map(|(c, f)| if *f { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() })
                .collect();
            prop_assert!(title_matches(&title, &needle));
        }

        #[test]
        fn split_grant_round_trips(principal in "[a-z][a-z0-9-]{0,10}", dir in "/[a-z0-9=/]{1,20}") {
            let (p, d) = crate::cli::split_grant(&format!("{principal}={dir}"), "me");
            prop_assert_eq!(p, principal);
            prop_assert_eq!(d, std::path::PathBuf::from(&dir));
            let (p, d) = crate::cli::split_grant(&dir, "me");
            prop_assert_eq!(p, "me");
            prop_assert_eq!(d, std::path::PathBuf::from(&dir));
        }

        #[test]
        fn heading_title_never_panics_and_is_trimmed(text in ".{0,200}") {
            if let Some(t) = heading_title(&text) {
                prop_assert!(!t.is_empty());
                prop_assert_eq!(t.trim(), t.as_str());
            }
        }

        #[test]
        fn heading_found_after_any_preamble(pre in "[a-z \n]{0,40}", title in "[A-Za-z0-9][A-Za-z0-9 ]{0,20}[A-Za-z0-9]") {
            let text = format!("{pre}\n# {title}\nrest");
            let expected = heading_title(&pre).unwrap_or(title.clone());
            prop_assert_eq!(heading_title(&text), Some(expected));
        }
    }
}
