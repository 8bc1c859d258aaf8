//! Database notes backends (`--notes sqlite:PATH`, `--notes postgres://...`): two processes
//! race the same confirmation and exactly one deletes; notes and used confirmations survive a
//! restart. PostgreSQL tests use `MCP_TEST_POSTGRES_URL` (default the local `test` database), a
//! table unique to the run (dropped afterwards), and print `skipped: ...` when no server is
//! reachable unless `MCP_REQUIRE_POSTGRES` is set (as in CI), when they fail instead.

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::backend::postgres::tokio_postgres;
use mcp_runtime::client::{Client, ClientError, StdioTransport};
use mcp_tests::notes::*;
use mcp_tests::{RESPONSE_TIMEOUT, notes_binary, notes_transport};
use serde_json::{Value, json};

fn pg_url() -> String {
    std::env::var("MCP_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `sql` on the test database; `Err` when the server is unreachable. Runs on its own
/// thread and runtime, so async tests can call it too.
fn pg_exec(sql: &str) -> Result<(), String> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| pg_exec_blocking(sql))
            .join()
            .unwrap_or_else(|_| Err("the PostgreSQL thread panicked".into()))
    })
}

fn pg_exec_blocking(sql: &str) -> Result<(), String> {
    runtime().block_on(async {
        let (client, conn) = tokio_postgres::connect(&pg_url(), tokio_postgres::NoTls)
            .await
            .map_err(|e| format!("{e}: {:?}", std::error::Error::source(&e)))?;
        let task = tokio::spawn(conn);
        let out = client.batch_execute(sql).await.map_err(|e| e.to_string());
        drop(client);
        let _ = task.await;
        out
    })
}

/// A unique notes table that is dropped when the guard goes, or `None` (test skipped).
struct PgTable(String);

impl PgTable {
    fn new(test: &str) -> Option<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let name = format!("notes_{test}_{}_{nanos}", std::process::id());
        match pg_exec("SELECT 1") {
            Ok(()) => Some(Self(name)),
            Err(e) => {
                assert!(
                    std::env::var_os("MCP_REQUIRE_POSTGRES").is_none(),
                    "MCP_REQUIRE_POSTGRES is set but PostgreSQL at {} is unreachable: {e}",
                    pg_url()
                );
                println!("skipped: no PostgreSQL at {}: {e}", pg_url());
                None
            }
        }
    }
}

impl Drop for PgTable {
    fn drop(&mut self) {
        let _ = pg_exec(&format!("DROP TABLE IF EXISTS \"{}\"", self.0));
    }
}

fn import(fx: &NotesFixture, notes: &str, table: &str) {
    let out = std::process::Command::new(notes_binary().unwrap())
        .args([
            "import",
            "--notes",
            notes,
            "--notes-table",
            table,
            fx.notes.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "import failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `serve --stdio` on the database backend behind the typed client; the transport is
/// returned too, to close the process.
fn serve(fx: &NotesFixture, notes: &str, table: &str) -> (Client, Arc<StdioTransport>) {
    let key = fx.key_file.to_str().unwrap();
    let ws = format!("alice={}", fx.notes.display());
    let args = [
        "serve",
        "--stdio",
        "--principal",
        "alice",
        "--notes",
        notes,
        "--notes-table",
        table,
        "--state-key-file",
        key,
        "--workspace",
        ws.as_str(),
    ];
    let transport = Arc::new(notes_transport(&args, &[]).unwrap());
    let client = Client::builder(transport.clone())
        .timeout(RESPONSE_TIMEOUT)
        .build();
    (client, transport)
}

async fn listed(s: &Client, fx: &NotesFixture) -> Vec<String> {
    let r = list_notes(s, &fx.uri).await;
    assert!(r.is_success(), "{r:?}");
    r.structured().unwrap()["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Answers the deletion form choosing `id` (confirmed), echoing `state`.
async fn retry(s: &Client, args: &Value, id: &str, state: &str) -> Outcome {
    answer_delete(s, args, choose(id, true), state).await
}

/// Two processes on one database; per round a fresh note is imported and the same accepted
/// confirmation is sent to both at once: exactly one success, one refusal, one row gone.
async fn race(fx: &NotesFixture, notes: &str, table: &str, rounds: usize) {
    import(fx, notes, table);
    let (a, _) = serve(fx, notes, table);
    let (b, _) = serve(fx, notes, table);
    for round in 0..rounds {
        let id = format!("race-{round}.md");
        std::fs::write(fx.notes.join(&id), format!("# Race note {round}\n")).unwrap();
        import(fx, notes, table);
        let args = json!({"workspaceUri": fx.uri, "title": format!("Race note {round}")});
        let issuer = if round % 2 == 0 { &a } else { &b };
        let first = ask_delete(issuer, &args).await;
        assert_eq!(first.offered_ids(), vec![id.clone()], "{first:?}");
        let state = first.request_state().unwrap();
        // Both requests are in flight at once: `join!` writes both before either answer.
        let (ra, rb) = tokio::join!(retry(&a, &args, &id, &state), retry(&b, &args, &id, &state));
        let successes = [&ra, &rb].iter().filter(|r| r.is_success()).count();
        assert_eq!(successes, 1, "round {round}\nA: {ra:?}\nB: {rb:?}");
        assert!(
            [&ra, &rb].iter().any(|r| r.is_refusal() || r.is_replay()),
            "round {round}\nA: {ra:?}\nB: {rb:?}"
        );
        let now = listed(&a, fx).await;
        assert!(!now.contains(&id), "round {round}: {now:?}");
        assert!(
            fx.exists(&id),
            "a database backend never touches the directory"
        );
    }
    let left = listed(&b, fx).await;
    for id in [
        "2025/tps-2025.md",
        "shopping.md",
        "tps-report-draft.md",
        "tps-report.md",
    ] {
        assert!(left.contains(&id.to_owned()), "{id} must survive: {left:?}");
    }
}

/// Deletes one note, restarts, and checks the database kept both the deletion and the used
/// confirmation (a replay on the new process is refused and deletes nothing).
async fn restart(fx: &NotesFixture, notes: &str, table: &str) {
    import(fx, notes, table);
    let (s, process) = serve(fx, notes, table);
    let args = fx.delete_args("tps report (draft)");
    let first = ask_delete(&s, &args).await;
    let state = first.request_state().unwrap();
    let done = retry(&s, &args, "tps-report-draft.md", &state).await;
    assert!(done.is_success(), "{done:?}");
    let exited = process.close(Duration::from_secs(10)).await.unwrap();
    assert!(
        exited.is_some(),
        "the server did not exit after stdin closed"
    );

    let (s, _) = serve(fx, notes, table);
    let left = listed(&s, fx).await;
    assert_eq!(
        left,
        ["2025/tps-2025.md", "shopping.md", "tps-report.md"],
        "the deletion survived the restart"
    );
    // Even with the row re-imported, the used confirmation stays used: the identical retry
    // gets the recorded result (kept in the database across the restart), another answer is
    // refused, and nothing is deleted again.
    import(fx, notes, table);
    let replay = retry(&s, &args, "tps-report-draft.md", &state).await;
    assert!(replay.is_replay(), "{replay:?}");
    assert!(
        replay.text().contains("Deleted tps-report-draft.md"),
        "{replay:?}"
    );
    let other = answer_delete(&s, &args, json!({"action": "decline"}), &state).await;
    assert!(other.is_refusal(), "{other:?}");
    assert!(other.text().contains("already used"), "{other:?}");
    assert_eq!(listed(&s, fx).await.len(), 4);

    // A note removed by another writer after the form: nothing is deleted, the confirmation
    // is not used up, and it finishes once the note is back. (The in-transaction re-check of
    // a row vanishing between listing and claim is unit-tested in notes-example's backend.)
    let args = fx.delete_args("shopping");
    let first = ask_delete(&s, &args).await;
    let state = first.request_state().unwrap();
    std::fs::remove_file(fx.notes.join("shopping.md")).unwrap();
    drop_row(notes, table, &fx.uri, "shopping.md");
    let gone = retry(&s, &args, "shopping.md", &state).await;
    assert!(!gone.is_success(), "{gone:?}");
    assert!(gone.text().contains("nothing was deleted"), "{gone:?}");
    assert_eq!(listed(&s, fx).await.len(), 3);
    std::fs::write(fx.notes.join("shopping.md"), "# Shopping list\n").unwrap();
    import(fx, notes, table);
    let done = retry(&s, &args, "shopping.md", &state).await;
    assert!(
        done.is_success(),
        "rolled-back claim is still usable: {done:?}"
    );
    assert_eq!(listed(&s, fx).await.len(), 3);
}

/// Removes one row directly in the database (simulating another writer).
fn drop_row(notes: &str, table: &str, uri: &str, id: &str) {
    let sql = format!(
        "DELETE FROM \"{table}\" WHERE workspace_uri = '{}' AND id = '{}'",
        uri.replace('\'', "''"),
        id.replace('\'', "''")
    );
    if notes.starts_with("postgres") {
        pg_exec(&sql).unwrap();
    } else {
        let path = notes.strip_prefix("sqlite:").unwrap();
        let conn = mcp_runtime::backend::sqlite::rusqlite::Connection::open(path).unwrap();
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .unwrap();
        conn.execute_batch(&sql).unwrap();
    }
}

/// The `note` resource over a database backend: an imported note reads back byte for byte by
/// its `file:` URI; URIs outside the granted workspace (traversal, a sibling sharing its name
/// as a prefix, elsewhere), the workspace itself and missing notes are all not found.
async fn resources(fx: &NotesFixture, notes: &str, table: &str) {
    import(fx, notes, table);
    let (s, _) = serve(fx, notes, table);
    let uri = format!("{}/2025/tps-2025.md", fx.uri);
    let r = s.read_resource(&uri).await.unwrap();
    let r = serde_json::to_value(&r).unwrap();
    let contents = &r["contents"][0];
    assert_eq!(contents["uri"], uri.as_str(), "{r}");
    assert_eq!(
        contents["text"], "# TPS Report 2025\n\nQ3 numbers.\n",
        "{r}"
    );
    let sibling = mcp_tests::file_uri(&fx.root()).unwrap() + "/notes-evil/tps.md";
    for bad in [
        format!("{}/../notes-evil/tps.md", fx.uri),
        sibling,
        format!("{}/nope.md", fx.uri),
        fx.uri.clone(),
        "file:///etc/passwd".to_owned(),
    ] {
        let err = s.read_resource(&bad).await.unwrap_err();
        let ClientError::InvalidParams(error) = &err else {
            panic!("{bad}: expected -32602, got {err}");
        };
        assert_eq!(error.data().unwrap()["uri"], bad.as_str(), "{err}");
    }
}

fn sqlite_spec(fx: &NotesFixture) -> String {
    format!("sqlite:{}", fx.root().join("notes.sqlite3").display())
}

#[tokio::test]
async fn sqlite_notes_race_deletes_once_per_round() {
    let fx = NotesFixture::new().unwrap();
    race(&fx, &sqlite_spec(&fx), "notes", 4).await;
}

#[tokio::test]
async fn sqlite_notes_and_claims_survive_restart() {
    let fx = NotesFixture::new().unwrap();
    restart(&fx, &sqlite_spec(&fx), "notes").await;
}

#[tokio::test]
async fn sqlite_notes_are_readable_as_resources() {
    let fx = NotesFixture::new().unwrap();
    resources(&fx, &sqlite_spec(&fx), "notes").await;
}

#[tokio::test]
async fn postgres_notes_are_readable_as_resources() {
    let Some(table) = PgTable::new("resources") else {
        return;
    };
    let fx = NotesFixture::new().unwrap();
    resources(&fx, &pg_url(), &table.0).await;
}

#[tokio::test]
async fn postgres_notes_race_deletes_once_per_round() {
    let Some(table) = PgTable::new("race") else {
        return;
    };
    let fx = NotesFixture::new().unwrap();
    race(&fx, &pg_url(), &table.0, 4).await;
}

#[tokio::test]
async fn postgres_notes_and_claims_survive_restart() {
    let Some(table) = PgTable::new("restart") else {
        return;
    };
    let fx = NotesFixture::new().unwrap();
    restart(&fx, &pg_url(), &table.0).await;
}

#[test]
fn store_must_be_the_notes_database() {
    let fx = NotesFixture::new().unwrap();
    let out = std::process::Command::new(notes_binary().unwrap())
        .args([
            "serve",
            "--stdio",
            "--notes",
            &sqlite_spec(&fx),
            "--store",
            "memory",
            "--workspace",
            fx.notes.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--store must be the --notes database"),
        "{stderr}"
    );
}
