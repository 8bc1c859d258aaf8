//! [`PostgresNotes`]: notes in PostgreSQL, next to the replay store, for a fleet of instances.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use mcp_runtime::Principal;
use mcp_runtime::backend::postgres::deadpool_postgres::{
    Manager, ManagerConfig, Pool, RecyclingMethod, Runtime,
};
use mcp_runtime::backend::postgres::tokio_postgres;
use mcp_runtime::replay::ActionError;
use mcp_runtime::replay::ClaimWork;
use mcp_runtime::scope::WorkspaceUri;

use super::{NoteRecord, NotesBackend, UriGrants, check_table, create_notes_table, gone, sorted};
use crate::notes::{Note, NotesError, title_matches};

/// Notes in PostgreSQL, in the database that also holds the replay store.
#[derive(Clone)]
pub struct PostgresNotes {
    pool: Pool,
    table: String,
    grants: Arc<UriGrants>,
}

impl fmt::Debug for PostgresNotes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The pool's config holds the password.
        f.debug_struct("PostgresNotes")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

fn pg_err(context: &str) -> impl FnOnce(tokio_postgres::Error) -> NotesError + '_ {
    move |e| {
        let text = mcp_runtime::backend::postgres::describe(&e);
        NotesError::Backend(format!("PostgreSQL notes: {context}: {text}"))
    }
}

impl PostgresNotes {
    /// Connects to `url` and creates the notes table `table` if missing.
    pub async fn connect(url: &str, table: &str, grants: UriGrants) -> Result<Self, NotesError> {
        check_table(table)?;
        let config: tokio_postgres::Config = url.parse().map_err(pg_err("parsing the URL"))?;
        let manager = Manager::from_config(
            config,
            tokio_postgres::NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(16)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(10)))
            .create_timeout(Some(Duration::from_secs(10)))
            .build()
            .map_err(|e| NotesError::Backend(format!("PostgreSQL notes: pool: {e}")))?;
        let notes = Self {
            pool,
            table: table.to_owned(),
            grants: Arc::new(grants),
        };
        let mut client = notes.client().await?;
        // Serialised across instances starting together (see `setup_schema`).
        mcp_runtime::backend::postgres::setup_schema(
            &mut client,
            &format!("notes-example:{table}"),
            &create_notes_table(table, ""),
            mcp_runtime::backend::postgres::SCHEMA_SETUP_DEADLINE,
        )
        .await
        .map_err(|e| NotesError::Backend(format!("PostgreSQL notes: setting up: {e}")))?;
        Ok(notes)
    }

    async fn client(
        &self,
    ) -> Result<mcp_runtime::backend::postgres::deadpool_postgres::Client, NotesError> {
        self.pool
            .get()
            .await
            .map_err(|e| NotesError::Backend(format!("PostgreSQL notes: no connection: {e}")))
    }
}

impl NotesBackend for PostgresNotes {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn read_note_uri<'a>(
        &'a self,
        principal: &'a Principal,
        uri: &'a str,
    ) -> BoxFuture<'a, Result<(String, String), NotesError>> {
        Box::pin(async move {
            let (workspace, id) = self.grants.locate_note(principal, uri)?;
            let client = self.client().await?;
            let row = client
                .query_opt(
                    &format!(
                        "SELECT body FROM \"{}\" WHERE workspace_uri = $1 AND id = $2",
                        self.table
                    ),
                    &[&workspace.to_string(), &id],
                )
                .await
                .map_err(pg_err("reading a note"))?;
            match row {
                Some(row) => {
                    let text: String = row.try_get(0).map_err(pg_err("reading a note body"))?;
                    Ok((id, text))
                }
                None => Err(NotesError::NotInWorkspace {
                    uri: uri.to_owned(),
                }),
            }
        })
    }

    fn list<'a>(
        &'a self,
        principal: &'a Principal,
        workspace_uri: &'a str,
    ) -> BoxFuture<'a, Result<(WorkspaceUri, Vec<Note>), NotesError>> {
        Box::pin(async move {
            let uri = self.grants.authorize(principal, workspace_uri)?;
            let client = self.client().await?;
            let rows = client
                .query(
                    &format!(
                        "SELECT id, title FROM \"{}\" WHERE workspace_uri = $1",
                        self.table
                    ),
                    &[&uri.to_string()],
                )
                .await
                .map_err(pg_err("listing notes"))?;
            let mut notes = Vec::with_capacity(rows.len());
            for row in rows {
                notes.push(Note {
                    id: row.try_get(0).map_err(pg_err("reading a note id"))?,
                    title: row.try_get(1).map_err(pg_err("reading a note title"))?,
                });
            }
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
            "SELECT title FROM \"{}\" WHERE workspace_uri = $1 AND id = $2 FOR UPDATE",
            self.table
        );
        let delete = format!(
            "DELETE FROM \"{}\" WHERE workspace_uri = $1 AND id = $2",
            self.table
        );
        ClaimWork::InTx(mcp_runtime::backend::postgres::tx_work(move |tx| {
            Box::pin(async move {
                let uri = grants
                    .authorize(&principal, &uri)
                    .map_err(ActionError::new)?
                    .to_string();
                // FOR UPDATE: a concurrent deletion of the same row waits for this transaction.
                let row = tx
                    .query_opt(&select, &[&uri, &id])
                    .await
                    .map_err(|e| ActionError::new(pg_err("re-reading the note")(e)))?;
                let row = row.ok_or_else(|| gone(&id))?;
                let title: String = row
                    .try_get(0)
                    .map_err(|e| ActionError::new(pg_err("reading the title")(e)))?;
                if !title_matches(&title, &needle) {
                    return Err(ActionError::new(NotesError::NoLongerMatches { id }));
                }
                let deleted = tx
                    .execute(&delete, &[&uri, &id])
                    .await
                    .map_err(|e| ActionError::new(pg_err("deleting the note")(e)))?;
                if deleted != 1 {
                    return Err(gone(&id));
                }
                Ok(id)
            })
        }))
    }

    fn ping(&self) -> BoxFuture<'_, Result<(), NotesError>> {
        Box::pin(async move {
            let client = self.client().await?;
            client
                .simple_query(&format!("SELECT 1 FROM \"{}\" LIMIT 0", self.table))
                .await
                .map_err(pg_err("pinging the database"))?;
            Ok(())
        })
    }

    fn import<'a>(
        &'a self,
        workspace: &'a WorkspaceUri,
        notes: Vec<NoteRecord>,
    ) -> BoxFuture<'a, Result<u64, NotesError>> {
        Box::pin(async move {
            let sql = format!(
                "INSERT INTO \"{}\" (workspace_uri, id, title, body) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (workspace_uri, id) DO UPDATE SET title = EXCLUDED.title, body = EXCLUDED.body",
                self.table
            );
            let key = workspace.to_string();
            let mut client = self.client().await?;
            let tx = client
                .transaction()
                .await
                .map_err(pg_err("starting the import"))?;
            let mut count = 0;
            for note in &notes {
                count += tx
                    .execute(&sql, &[&key, &note.id, &note.title, &note.body])
                    .await
                    .map_err(pg_err("importing a note"))?;
            }
            tx.commit().await.map_err(pg_err("committing the import"))?;
            Ok(count)
        })
    }
}
