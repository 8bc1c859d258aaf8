//! Where notes live: files on disk (one machine, the default), a SQLite file (one machine,
//! several processes), or PostgreSQL (a fleet of stateless instances serving one collection).
//!
//! # One table keyed by workspace URI
//!
//! Both database backends keep every workspace in **one** table whose primary key is
//! `(workspace_uri, id)`, rather than a table per workspace: the schema is fixed and created
//! once at startup (no DDL at request time, so the server's database role needs no `CREATE`
//! privilege once the table exists), table names never derive from client-controlled URIs (no
//! identifier-quoting or injection surface), one primary-key index serves every workspace, and
//! adding a workspace is a grant, not a migration. Containment is then a key condition: every
//! statement names the workspace URI, so a note id can only reach a row of that workspace.
//!
//! # Delivery guarantees of a confirmed deletion
//!
//! - **Files (`fs`): at most once.** The confirmation's claim is committed first, then the note
//!   is unlinked ([`ClaimWork::After`]). A crash or failure between the two leaves
//!   the confirmation used and the note in place; the reply (if any) says the note was not
//!   deleted and to ask again. One confirmation never deletes twice, and never deletes a
//!   note re-created under the same id.
//! - **Databases (`sqlite`, `postgres`): exactly once**, as below.
//!
//! # Deletion in the claim's transaction
//!
//! The replay store lives in the same database (startup refuses anything else), so a deletion
//! is [`ClaimWork::InTx`] (built by `backend::sqlite::tx_work` / `backend::postgres::tx_work`): inside the very transaction that
//! claims the confirmation's nonce, the backend re-checks that the principal may use the
//! workspace, that the note still exists in that workspace (row locked) and that its title still
//! matches the search the user confirmed, deletes exactly that row, and only then does the
//! runtime commit. Any failure rolls back the claim and the deletion together.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use mcp_runtime::Principal;
use mcp_runtime::replay::ActionError;
use mcp_runtime::replay::ClaimWork;
use mcp_runtime::scope::{ScopeError, WorkspaceUri};

use crate::notes::{Note, Notes, NotesError, title_matches};

mod postgres;
mod sqlite;

pub use postgres::PostgresNotes;
pub use sqlite::SqliteNotes;

/// Default table of the database backends.
pub const DEFAULT_TABLE: &str = "notes";

/// One note as stored in a database backend (and as imported).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteRecord {
    /// The note id (relative path in the directory it was imported from).
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its Markdown text.
    pub body: String,
}

/// A place notes live. Every method authorizes `workspace_uri` for `principal` itself.
pub trait NotesBackend: Send + Sync + fmt::Debug + 'static {
    /// `fs`, `sqlite` or `postgres`.
    fn kind(&self) -> &'static str;

    /// The workspace's canonical URI and every note in it, sorted by id.
    fn list<'a>(
        &'a self,
        principal: &'a Principal,
        workspace_uri: &'a str,
    ) -> BoxFuture<'a, Result<(WorkspaceUri, Vec<Note>), NotesError>>;

    /// How to delete `id` once the user confirmed it among the notes matching `needle`: the
    /// returned mutation re-checks authorization, existence and the match, then deletes. It
    /// must be run under the confirmation's claim. Its value is the deleted id.
    fn delete_mutation(
        &self,
        principal: &Principal,
        workspace_uri: &str,
        needle: &str,
        id: String,
    ) -> ClaimWork<String>;

    /// Reads the note a `file:` URI names (the `note` resource), returning its id and text,
    /// under the same authorization as the other methods. A URI outside every workspace of
    /// `principal`, or naming no note, is [`NotesError::NotInWorkspace`] (a
    /// resource-not-found), so a caller learns nothing about notes it may not see.
    fn read_note_uri<'a>(
        &'a self,
        principal: &'a Principal,
        uri: &'a str,
    ) -> BoxFuture<'a, Result<(String, String), NotesError>>;

    /// Checks that the notes can be reached (`/readyz`): a trivial query of a database's
    /// table. Default: `Ok` (files are opened per request and checked then).
    fn ping(&self) -> BoxFuture<'_, Result<(), NotesError>> {
        Box::pin(async { Ok(()) })
    }

    /// Inserts or replaces `notes` in `workspace` (seeding a database from a directory).
    fn import<'a>(
        &'a self,
        workspace: &'a WorkspaceUri,
        notes: Vec<NoteRecord>,
    ) -> BoxFuture<'a, Result<u64, NotesError>>;
}

/// The notes backend registered as server state: cheap to clone.
#[derive(Debug, Clone)]
pub struct NotesStore(pub Arc<dyn NotesBackend>);

impl From<Notes> for NotesStore {
    fn from(notes: Notes) -> Self {
        Self(Arc::new(notes))
    }
}

impl std::ops::Deref for NotesStore {
    type Target = dyn NotesBackend;
    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

// ---- files on disk ------------------------------------------------------------------------

impl NotesBackend for Notes {
    fn kind(&self) -> &'static str {
        "fs"
    }

    // File-system work runs on Tokio's blocking pool, never on an async worker: a slow disk
    // (or a hostile entry) then stalls one blocking thread, not the server.
    fn read_note_uri<'a>(
        &'a self,
        principal: &'a Principal,
        uri: &'a str,
    ) -> BoxFuture<'a, Result<(String, String), NotesError>> {
        let (notes, principal, uri) = (self.clone(), principal.clone(), uri.to_owned());
        Box::pin(blocking(move || {
            Notes::read_note_uri(&notes, &principal, &uri)
        }))
    }

    fn list<'a>(
        &'a self,
        principal: &'a Principal,
        workspace_uri: &'a str,
    ) -> BoxFuture<'a, Result<(WorkspaceUri, Vec<Note>), NotesError>> {
        let (notes, principal, uri) = (self.clone(), principal.clone(), workspace_uri.to_owned());
        Box::pin(blocking(move || {
            let ws = notes.open(&principal, &uri)?;
            let listed = ws.list()?;
            Ok((ws.uri().clone(), listed))
        }))
    }

    /// At most once: the confirmation's claim is committed first, then the note is unlinked
    /// (on the blocking pool, re-checking authorization, the match and containment at the
    /// unlink). If the unlink fails or the process dies before it, the confirmation is used up
    /// and nothing was deleted; the user is told so and asked to start again. A confirmation
    /// never deletes twice, nor deletes a note re-created under the same id after a crash.
    fn delete_mutation(
        &self,
        principal: &Principal,
        workspace_uri: &str,
        needle: &str,
        id: String,
    ) -> ClaimWork<String> {
        crash_point(CrashPoint::BeforeClaim);
        let notes = self.clone();
        let (principal, uri, needle) = (
            principal.clone(),
            workspace_uri.to_owned(),
            needle.to_owned(),
        );
        ClaimWork::After(Box::new(move || {
            crash_point(CrashPoint::AfterClaim);
            let not_deleted =
                |e: NotesError| ActionError::new(format!("The note {id:?} was not deleted: {e}"));
            let ws = notes.open(&principal, &uri).map_err(not_deleted)?;
            match ws.title_if_note(&id).map_err(not_deleted)? {
                None => {
                    return Err(ActionError::new(format!(
                        "The note {id:?} was not deleted: it no longer exists"
                    )));
                }
                Some(title) if !title_matches(&title, &needle) => {
                    return Err(ActionError::new(format!(
                        "The note {id:?} was not deleted: its title no longer matches {needle:?}"
                    )));
                }
                Some(_) => {}
            }
            ws.delete(&id).map_err(not_deleted)?;
            crash_point(CrashPoint::AfterUnlink);
            Ok(id)
        }))
    }

    fn import<'a>(
        &'a self,
        _workspace: &'a WorkspaceUri,
        _notes: Vec<NoteRecord>,
    ) -> BoxFuture<'a, Result<u64, NotesError>> {
        Box::pin(async {
            Err(NotesError::Backend(
                "import writes to a database: pass --notes sqlite:PATH or --notes postgres://..."
                    .into(),
            ))
        })
    }
}

/// Where [`crash_point`] may abort the process: for tests of what a crash leaves behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CrashPoint {
    /// After the user confirmed, before the confirmation is claimed.
    BeforeClaim,
    /// After the claim committed, before the note is unlinked.
    AfterClaim,
    /// After the unlink, before the reply.
    AfterUnlink,
}

/// The environment variable naming a [`CrashPoint`] (`before-claim`, `after-claim`,
/// `after-unlink`) at which a file-backend deletion aborts the process, as `kill -9` would.
///
/// **For tests only** (they kill a server at each point of a deletion and restart it); inert
/// unless set. Never set it in production.
pub const TEST_CRASH_ENV: &str = "NOTES_EXAMPLE_TEST_CRASH_AT";

/// Aborts the process (no destructors, no flush: like `kill -9`) if [`TEST_CRASH_ENV`] names
/// `point`.
fn crash_point(point: CrashPoint) {
    static CONFIGURED: std::sync::OnceLock<Option<CrashPoint>> = std::sync::OnceLock::new();
    let configured =
        CONFIGURED.get_or_init(|| match std::env::var(TEST_CRASH_ENV).ok().as_deref() {
            Some("before-claim") => Some(CrashPoint::BeforeClaim),
            Some("after-claim") => Some(CrashPoint::AfterClaim),
            Some("after-unlink") => Some(CrashPoint::AfterUnlink),
            _ => None,
        });
    if *configured == Some(point) {
        eprintln!("notes-example: {TEST_CRASH_ENV} reached {point:?}; aborting");
        std::process::abort();
    }
}

// ---- grants of the database backends ------------------------------------------------------

/// Which workspace URIs each principal may use with a database backend. A grant is exact:
/// notes are keyed by their workspace URI, so there are no sub-workspaces.
#[derive(Debug, Default, Clone)]
pub struct UriGrants {
    grants: HashMap<Principal, Vec<WorkspaceUri>>,
}

impl UriGrants {
    /// No grants: every request is refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allows `principal` the workspace `uri`.
    pub fn allow(mut self, principal: Principal, uri: WorkspaceUri) -> Self {
        self.grants.entry(principal).or_default().push(uri);
        self
    }

    /// The workspace granted to `principal` that holds the note `uri` names, and the note's
    /// id (its path below the workspace), or [`NotesError::NotInWorkspace`].
    pub fn locate_note(
        &self,
        principal: &Principal,
        uri: &str,
    ) -> Result<(WorkspaceUri, String), NotesError> {
        let roots = self.grants.get(principal).map_or(&[][..], Vec::as_slice);
        let (workspace, id) = crate::notes::locate_note(roots, uri)?;
        Ok((workspace.clone(), id))
    }

    /// Parses `uri` and checks that `principal` was granted exactly that workspace.
    pub fn authorize(&self, principal: &Principal, uri: &str) -> Result<WorkspaceUri, NotesError> {
        let parsed = WorkspaceUri::parse(uri).map_err(ScopeError::from)?;
        let allowed = self
            .grants
            .get(principal)
            .is_some_and(|uris| uris.contains(&parsed));
        if allowed {
            Ok(parsed)
        } else {
            Err(NotesError::Scope(ScopeError::NotAuthorized {
                uri: parsed.to_string(),
            }))
        }
    }
}

/// A valid table name: 1 to 48 of `a-z 0-9 _`, not starting with a digit.
pub fn valid_table(table: &str) -> bool {
    let mut bytes = table.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'_'))
        && table.len() <= 48
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_'))
}

fn check_table(table: &str) -> Result<(), NotesError> {
    if valid_table(table) {
        Ok(())
    } else {
        Err(NotesError::Backend(format!(
            "notes table {table:?} is not valid: use 1 to 48 of a-z 0-9 _, not starting with a digit"
        )))
    }
}

/// `CREATE TABLE IF NOT EXISTS` for the notes table `table` (already checked), the same
/// columns in every store; `options` follows the column list (SQLite's `WITHOUT ROWID`).
fn create_notes_table(table: &str, options: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS \"{table}\" (
             workspace_uri TEXT NOT NULL,
             id            TEXT NOT NULL,
             title         TEXT NOT NULL,
             body          TEXT NOT NULL DEFAULT '',
             PRIMARY KEY (workspace_uri, id)
         ){options}"
    )
}

fn sorted(mut notes: Vec<Note>) -> Vec<Note> {
    notes.sort_by(|a, b| a.id.cmp(&b.id));
    notes
}

fn gone(id: &str) -> ActionError {
    ActionError::new(format!(
        "the note {id:?} no longer exists in this workspace; nothing was deleted"
    ))
}

/// What `--notes` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotesSpec {
    /// Markdown files in the `--workspace` directories.
    Fs,
    /// A SQLite file (also the replay store).
    Sqlite(std::path::PathBuf),
    /// A PostgreSQL URL (also the replay store).
    Postgres(String),
}

impl NotesSpec {
    /// Parses `fs`, `sqlite:PATH` or `postgres://...`.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let spec = spec.trim();
        if spec == "fs" {
            return Ok(Self::Fs);
        }
        if let Some(path) = spec.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err("--notes sqlite: needs a path, e.g. sqlite:/var/lib/notes.db".into());
            }
            return Ok(Self::Sqlite(path.into()));
        }
        if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
            return Ok(Self::Postgres(spec.to_owned()));
        }
        Err("--notes: write fs, sqlite:PATH or postgres://USER@HOST:PORT/DB".into())
    }

    /// The replay store spec of the same database (`None` for files).
    pub fn store_spec(&self) -> Option<String> {
        match self {
            Self::Fs => None,
            Self::Sqlite(path) => Some(format!("sqlite:{}", path.display())),
            Self::Postgres(url) => Some(url.clone()),
        }
    }

    /// Opens a database backend with `grants` (files are opened by the caller).
    pub async fn open_db(
        &self,
        table: &str,
        grants: UriGrants,
    ) -> Result<Option<NotesStore>, NotesError> {
        Ok(match self {
            Self::Fs => None,
            Self::Sqlite(path) => Some(NotesStore(Arc::new(
                SqliteNotes::open(path, table, grants).await?,
            ))),
            Self::Postgres(url) => Some(NotesStore(Arc::new(
                PostgresNotes::connect(url, table, grants).await?,
            ))),
        })
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, NotesError> + Send + 'static,
) -> Result<T, NotesError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| NotesError::Backend(format!("notes worker failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use mcp_runtime::backend::sqlite::SqliteReplayStore;
    use mcp_runtime::replay::Claim;
    use std::time::Duration;

    use super::*;

    #[test]
    fn specs_parse_and_name_their_store() {
        assert_eq!(NotesSpec::parse("fs"), Ok(NotesSpec::Fs));
        assert_eq!(
            NotesSpec::parse("sqlite:/x/n.db").unwrap().store_spec(),
            Some("sqlite:/x/n.db".to_owned())
        );
        let pg = "postgres://u@h:5432/db";
        assert_eq!(
            NotesSpec::parse(pg).unwrap().store_spec(),
            Some(pg.to_owned())
        );
        for bad in ["", "sqlite:", "mysql://x", "files"] {
            assert!(NotesSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn grants_are_exact_and_per_principal() {
        let uri = WorkspaceUri::parse("file:///srv/notes").unwrap();
        let grants = UriGrants::new().allow(Principal::new("alice"), uri);
        let alice = Principal::new("alice");
        assert!(grants.authorize(&alice, "file:///srv/notes").is_ok());
        assert!(grants.authorize(&alice, "file:///srv/notes/").is_ok());
        for other in [
            "file:///srv/notes/sub",
            "file:///srv/notes-evil",
            "file:///srv",
            "not a uri",
        ] {
            assert!(grants.authorize(&alice, other).is_err(), "{other}");
        }
        assert!(
            grants
                .authorize(&Principal::new("bob"), "file:///srv/notes")
                .is_err()
        );
    }

    fn grants_for(uri: &str) -> UriGrants {
        UriGrants::new().allow(Principal::new("alice"), WorkspaceUri::parse(uri).unwrap())
    }

    #[tokio::test]
    async fn sqlite_backend_lists_only_its_workspace_and_deletes_in_a_claim_tx() {
        use mcp_runtime::backend::sqlite::SqliteReplayStore;
        use mcp_runtime::replay::{ClaimOutcome, ReplayStore, TxWork};
        use mcp_runtime::state::Nonce;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.db");
        let store = SqliteReplayStore::open(&path).await.unwrap();
        let ws = "file:///srv/notes";
        let notes = SqliteNotes::open(&path, "notes", grants_for(ws))
            .await
            .unwrap();
        let uri = WorkspaceUri::parse(ws).unwrap();
        let other = WorkspaceUri::parse("file:///srv/other").unwrap();
        let rec = |id: &str, title: &str| NoteRecord {
            id: id.into(),
            title: title.into(),
            body: String::new(),
        };
        notes
            .import(&uri, vec![rec("b.md", "TPS b"), rec("a.md", "TPS a")])
            .await
            .unwrap();
        notes
            .import(&other, vec![rec("a.md", "TPS other")])
            .await
            .unwrap();
        let alice = Principal::new("alice");
        let (_, listed) = notes.list(&alice, ws).await.unwrap();
        let ids: Vec<_> = listed.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["a.md", "b.md"]);

        let later = std::time::SystemTime::now() + Duration::from_secs(60);
        let to_action = |m: ClaimWork<String>| -> TxWork {
            match m {
                ClaimWork::InTx(work) => work.map(|_| ()),
                other => panic!("{other:?}"),
            }
        };
        // Title no longer matching: rolled back, the nonce stays claimable.
        let n = Nonce::from_bytes([7; 16]);
        let m = notes.delete_mutation(&alice, ws, "nope", "a.md".into());
        assert!(
            store
                .claim(Claim::new(n, later).in_tx(to_action(m)))
                .await
                .is_err()
        );
        let m = notes.delete_mutation(&alice, ws, "tps", "a.md".into());
        assert_eq!(
            store
                .claim(Claim::new(n, later).in_tx(to_action(m)))
                .await
                .unwrap(),
            ClaimOutcome::Claimed
        );
        let (_, listed) = notes.list(&alice, ws).await.unwrap();
        assert_eq!(listed.len(), 1);
        // Replay: nothing runs. The other workspace's a.md is untouched.
        let m = notes.delete_mutation(&alice, ws, "tps", "b.md".into());
        assert_eq!(
            store
                .claim(Claim::new(n, later).in_tx(to_action(m)))
                .await
                .unwrap(),
            ClaimOutcome::AlreadyUsed
        );
        let (_, listed) = notes.list(&alice, ws).await.unwrap();
        assert_eq!(listed.len(), 1);
        let other_grants = grants_for("file:///srv/other");
        let other_notes = SqliteNotes::open(&path, "notes", other_grants)
            .await
            .unwrap();
        assert_eq!(
            other_notes
                .list(&alice, "file:///srv/other")
                .await
                .unwrap()
                .1
                .len(),
            1
        );
        // A deletion of a note already gone rolls back its claim.
        let n2 = Nonce::from_bytes([8; 16]);
        let m = notes.delete_mutation(&alice, ws, "tps", "a.md".into());
        assert!(
            store
                .claim(Claim::new(n2, later).in_tx(to_action(m)))
                .await
                .is_err()
        );
        assert_eq!(
            store.claim(Claim::new(n2, later)).await.unwrap(),
            ClaimOutcome::Claimed,
            "the failed deletion left the nonce claimable"
        );
    }

    /// Servers started together on a fresh SQLite file each open the replay store and the
    /// notes table on it; every one must come up.
    #[test]
    fn servers_opening_a_fresh_sqlite_file_together_all_start() {
        const SERVERS: usize = 4;
        for round in 0..15 {
            let dir = tempfile::tempdir().unwrap();
            let path = Arc::new(dir.path().join("shared.db"));
            let barrier = Arc::new(std::sync::Barrier::new(SERVERS));
            let servers: Vec<_> = (0..SERVERS)
                .map(|k| {
                    let (path, barrier) = (Arc::clone(&path), Arc::clone(&barrier));
                    std::thread::spawn(move || {
                        let rt = tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                            .unwrap();
                        barrier.wait();
                        rt.block_on(async {
                            // Half open the notes table first, half the replay store first.
                            let grants = grants_for("file:///srv/notes");
                            if k % 2 == 0 {
                                SqliteNotes::open(path.as_path(), "notes", grants).await?;
                                SqliteReplayStore::open(path.as_path())
                                    .await
                                    .map_err(|e| NotesError::Backend(e.to_string()))?;
                            } else {
                                SqliteReplayStore::open(path.as_path())
                                    .await
                                    .map_err(|e| NotesError::Backend(e.to_string()))?;
                                SqliteNotes::open(path.as_path(), "notes", grants).await?;
                            }
                            Ok::<(), NotesError>(())
                        })
                    })
                })
                .collect();
            for server in servers {
                let started = server.join().unwrap();
                assert!(started.is_ok(), "round {round}: {started:?}");
            }
        }
    }
}
