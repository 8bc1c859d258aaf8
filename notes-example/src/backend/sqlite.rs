//! [`SqliteNotes`]: notes in a SQLite file that also holds the replay store.

use std::path::Path;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use mcp_runtime::Principal;
use mcp_runtime::backend::sqlite::SqliteReplayStore;
use mcp_runtime::backend::sqlite::rusqlite::{self, OptionalExtension};
use mcp_runtime::replay::ActionError;
use mcp_runtime::replay::ClaimWork;
use mcp_runtime::scope::WorkspaceUri;

use super::{
    NoteRecord, NotesBackend, UriGrants, blocking, check_table, create_notes_table, gone, sorted,
};
use crate::notes::{Note, NotesError, title_matches};

/// Notes in a SQLite file, which also holds the replay store (`--store` is the same file).
#[derive(Debug, Clone)]
pub struct SqliteNotes {
    conn: Arc<Mutex<rusqlite::Connection>>,
    table: String,
    grants: Arc<UriGrants>,
}

impl SqliteNotes {
    /// Opens (creating if needed) the notes table `table` in the SQLite file `path`.
    pub async fn open(
        path: impl AsRef<Path>,
        table: &str,
        grants: UriGrants,
    ) -> Result<Self, NotesError> {
        check_table(table)?;
        let path = path.as_ref().to_owned();
        let table = table.to_owned();
        let create = create_notes_table(&table, " WITHOUT ROWID");
        let conn = blocking(move || {
            // Configured like the replay store, which shares this file: servers starting
            // together on a fresh file must all get through the switch to WAL.
            let conn = SqliteReplayStore::connect(&path)
                .map_err(|e| NotesError::Backend(format!("SQLite notes: {e}")))?;
            conn.execute_batch(&create).map_err(sqlite_err)?;
            Ok(conn)
        })
        .await?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            table,
            grants: Arc::new(grants),
        })
    }
}

fn sqlite_err(e: rusqlite::Error) -> NotesError {
    NotesError::Backend(format!("SQLite notes: {e}"))
}

impl NotesBackend for SqliteNotes {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn read_note_uri<'a>(
        &'a self,
        principal: &'a Principal,
        uri: &'a str,
    ) -> BoxFuture<'a, Result<(String, String), NotesError>> {
        Box::pin(async move {
            let (workspace, id) = self.grants.locate_note(principal, uri)?;
            let conn = Arc::clone(&self.conn);
            let sql = format!(
                "SELECT body FROM \"{}\" WHERE workspace_uri = ?1 AND id = ?2",
                self.table
            );
            let key = workspace.to_string();
            let lookup_id = id.clone();
            let body = blocking(move || {
                let conn = conn
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let mut stmt = conn.prepare_cached(&sql).map_err(sqlite_err)?;
                let mut rows = stmt.query([&key, &lookup_id]).map_err(sqlite_err)?;
                match rows.next().map_err(sqlite_err)? {
                    Some(row) => Ok(Some(row.get::<_, String>(0).map_err(sqlite_err)?)),
                    None => Ok(None),
                }
            })
            .await?;
            body.map(|text| (id, text))
                .ok_or_else(|| NotesError::NotInWorkspace {
                    uri: uri.to_owned(),
                })
        })
    }

    fn list<'a>(
        &'a self,
        principal: &'a Principal,
        workspace_uri: &'a str,
    ) -> BoxFuture<'a, Result<(WorkspaceUri, Vec<Note>), NotesError>> {
        Box::pin(async move {
            let uri = self.grants.authorize(principal, workspace_uri)?;
            let conn = Arc::clone(&self.conn);
            let sql = format!(
                "SELECT id, title FROM \"{}\" WHERE workspace_uri = ?1",
                self.table
            );
            let key = uri.to_string();
            let notes = blocking(move || {
                let conn = conn
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let mut stmt = conn.prepare_cached(&sql).map_err(sqlite_err)?;
                let rows = stmt
                    .query_map([&key], |row| {
                        Ok(Note {
                            id: row.get(0)?,
                            title: row.get(1)?,
                        })
                    })
                    .map_err(sqlite_err)?;
                rows.collect::<Result<Vec<_>, _>>().map_err(sqlite_err)
            })
            .await?;
            Ok((uri, sorted(notes)))
        })
    }

    fn delete_mutation(
        &self,
        principal: &Principal,
        workspace_uri: &str,
        needle: &str,
        id: String,
    ) -> ClaimWork<String> {
        let grants = Arc::clone(&self.grants);
        let (principal, uri, needle) = (
            principal.clone(),
            workspace_uri.to_owned(),
            needle.to_owned(),
        );
        let select = format!(
            "SELECT title FROM \"{}\" WHERE workspace_uri = ?1 AND id = ?2",
            self.table
        );
        let delete = format!(
            "DELETE FROM \"{}\" WHERE workspace_uri = ?1 AND id = ?2",
            self.table
        );
        ClaimWork::InTx(mcp_runtime::backend::sqlite::tx_work(move |tx| {
            // The transaction is BEGIN IMMEDIATE: no other writer runs until it ends.
            let uri = grants
                .authorize(&principal, &uri)
                .map_err(ActionError::new)?
                .to_string();
            let title: Option<String> = tx
                .query_row(&select, [&uri, &id], |row| row.get(0))
                .optional()
                .map_err(|e| ActionError::new(sqlite_err(e)))?;
            let title = title.ok_or_else(|| gone(&id))?;
            if !title_matches(&title, &needle) {
                return Err(ActionError::new(NotesError::NoLongerMatches { id }));
            }
            let deleted = tx
                .execute(&delete, [&uri, &id])
                .map_err(|e| ActionError::new(sqlite_err(e)))?;
            if deleted != 1 {
                return Err(gone(&id));
            }
            Ok(id)
        }))
    }

    fn ping(&self) -> BoxFuture<'_, Result<(), NotesError>> {
        let conn = Arc::clone(&self.conn);
        let sql = format!("SELECT count(*) FROM \"{}\" WHERE 0", self.table);
        Box::pin(blocking(move || {
            let conn = conn
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            conn.query_row(&sql, [], |_| Ok(())).map_err(sqlite_err)
        }))
    }

    fn import<'a>(
        &'a self,
        workspace: &'a WorkspaceUri,
        notes: Vec<NoteRecord>,
    ) -> BoxFuture<'a, Result<u64, NotesError>> {
        let conn = Arc::clone(&self.conn);
        let sql = format!(
            "INSERT INTO \"{}\" (workspace_uri, id, title, body) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (workspace_uri, id) DO UPDATE SET title = excluded.title, body = excluded.body",
            self.table
        );
        let key = workspace.to_string();
        Box::pin(blocking(move || {
            let mut conn = conn
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let tx = conn.transaction().map_err(sqlite_err)?;
            let mut count = 0u64;
            for note in &notes {
                count += tx
                    .execute(&sql, [&key, &note.id, &note.title, &note.body])
                    .map_err(sqlite_err)? as u64;
            }
            tx.commit().map_err(sqlite_err)?;
            Ok(count)
        }))
    }
}
