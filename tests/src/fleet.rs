//! A fleet under faults: three `notes-example serve --http` instances sharing one store behind
//! HAProxy (round robin, so the two legs of one flow land on different instances), concurrent
//! agents running whole `notes_delete` flows through the proxy, and faults injected meanwhile.
//! Shared by `tests/tests/fleet_haproxy.rs` and the `fleet-faults` binary (`bench/fleet.sh`).
//!
//! # The stores
//!
//! - [`StoreKind::Postgres`]: a database of its own (created on the server at
//!   `MCP_TEST_POSTGRES_URL`, dropped afterwards) holds the notes (`--notes postgres://...`)
//!   and, as notes-example requires, the claims and tasks too. "Restarting the database" is
//!   modelled as the clients see a restart, without disturbing other tests that share the
//!   server: new connections to that database are refused (`ALLOW_CONNECTIONS false`) and
//!   every notes server's connection to it is terminated (`pg_terminate_backend`), for one
//!   second, then connections are allowed again.
//! - [`StoreKind::Redis`]: a `redis-server` of its own on a free port (`appendonly yes`,
//!   `appendfsync always`) holds the claims and tasks (`--store redis://...`); the notes are
//!   Markdown files in one directory every instance serves. "Restarting Redis" is SIGTERM,
//!   one second down, then the same server again on the same port and data directory.
//!
//! # One flow
//!
//! An agent creates a note of its own (a unique title), asks `notes_delete` for it (leg 1:
//! the form must offer exactly that note), then confirms (leg 2). On any error or missing
//! reply (the proxy's 502/503/504, a refused or reset connection, the client's timeout) it
//! resends the very same request, for leg 2 the same `requestState` and the same answers, at
//! most [`FleetPlan::attempts`] sends per leg, backing off from 100 ms to 1 s, as an agent
//! would. It stops at a success (fresh or replayed).
//!
//! # Faults (one cycle per 16 s of load; instances rotate)
//!
//! At +2 s one instance is killed (SIGKILL) and restarted at +3 s; at +6 s the store goes
//! down for 1 s (see above); at +10 s another instance is stopped (SIGSTOP) and continued at
//! +13 s. HAProxy health-checks `GET /healthz` every 250 ms, so a dead or stopped instance
//! leaves the rotation after about half a second; requests already sent to it get the proxy's
//! 503 (connection refused) or 504 (`timeout server`, 2 s): the client disconnects while the
//! instance may still be working on it.
//!
//! # What is counted
//!
//! - **completed**: flows that got a success (`Deleted NOTE.`, fresh or replayed);
//! - **confirmations lost**: a confirmed flow whose note still exists at the end and that
//!   never got a success. On Redis the notes are files, deleted *at most once* by design
//!   (notes-example's `fs` backend: the claim commits, then the file is unlinked, so that a
//!   note re-created after a crash is never deleted by an old confirmation): a SIGKILL between
//!   the two leaves the confirmation used and the note in place. Such a flow (its confirmation
//!   was cut by the kill: the proxy's 502, or a failed connection, within a second of the
//!   SIGKILL, on the Redis run) is counted apart, as **lost to a kill in the at-most-once
//!   window**, reported and not held against the run; every other loss is;
//! - **double deletions**: two fresh (non-replayed) successes in one flow, or a note deleted
//!   that no flow confirmed;
//! - **untruthful replies**: a reply saying nothing was deleted or changed while its note was
//!   already gone (checked right after the reply: only this flow deletes its note), or a
//!   success for a note that still exists at the end;
//! - **non-retryable errors**: every error that is neither a missing reply, nor says to retry
//!   or that the outcome is unknown, nor says truthfully that nothing was deleted (an
//!   "already used, restart the call" refusal counts here: it sends the agent back to the
//!   user without saying what happened).

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_runtime::backend::postgres::tokio_postgres;
use mcp_runtime::client::{Client, ClientError, HttpTransport};
use serde_json::json;

use crate::haproxy::{Haproxy, ProxyConfig, free_port};
use crate::notes::{NotesFixture, Outcome, answer_delete, ask_delete, choose};
use crate::{Error, StdioServer, notes_binary, spawn_notes_http_with_env};

/// Which shared store the fleet runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// Notes, claims and tasks in one PostgreSQL database.
    Postgres,
    /// Claims and tasks in Redis; notes in a shared directory.
    Redis,
}

impl StoreKind {
    /// `postgres` or `redis`.
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::Postgres => "postgres",
            StoreKind::Redis => "redis",
        }
    }

    /// The kind a name (as [`StoreKind::name`] gives it) stands for.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "postgres" | "postgresql" | "pg" => Some(StoreKind::Postgres),
            "redis" => Some(StoreKind::Redis),
            _ => None,
        }
    }
}

/// How one fleet run goes.
#[derive(Debug, Clone)]
pub struct FleetPlan {
    /// The shared store.
    pub store: StoreKind,
    /// notes-example instances behind the proxy.
    pub instances: usize,
    /// Concurrent agents.
    pub agents: usize,
    /// How long agents start new flows.
    pub load: Duration,
    /// Inject the fault cycle (see the module docs).
    pub faults: bool,
    /// Most sends of one leg (the first and its resends).
    pub attempts: usize,
    /// The client's deadline for one request (above the proxy's, which answers 504 first).
    pub client_timeout: Duration,
    /// HAProxy's `timeout server`.
    pub proxy_timeout: Duration,
    /// After the load, how long flows in progress may still resend.
    pub drain: Duration,
}

impl FleetPlan {
    /// The test's plan: 3 instances, 16 agents, 18 s of load with one fault cycle.
    pub fn new(store: StoreKind) -> Self {
        Self {
            store,
            instances: 3,
            agents: 16,
            load: Duration::from_secs(18),
            faults: true,
            attempts: 8,
            client_timeout: Duration::from_secs(10),
            proxy_timeout: Duration::from_secs(2),
            drain: Duration::from_secs(20),
        }
    }
}

/// Why a run did not produce a report.
#[derive(Debug)]
pub enum FleetError {
    /// A piece is missing (no PostgreSQL, no redis-server): the caller skips, saying why.
    Missing(String),
    /// The run itself failed to set up or run.
    Failed(Error),
}

macro_rules! failed_from {
    ($($t:ty),*) => {$(
        impl From<$t> for FleetError {
            fn from(e: $t) -> Self {
                FleetError::Failed(e.into())
            }
        }
    )*};
}

failed_from!(
    Error,
    std::io::Error,
    String,
    &'static str,
    tokio_postgres::Error,
    ClientError,
    tokio::task::JoinError
);

impl std::fmt::Display for FleetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FleetError::Missing(why) => write!(f, "missing: {why}"),
            FleetError::Failed(e) => write!(f, "{e}"),
        }
    }
}

/// The lesson's notes, which no flow may touch.
const LESSON_NOTES: [&str; 4] = [
    "tps-report.md",
    "tps-report-draft.md",
    "2025/tps-2025.md",
    "shopping.md",
];

// ---- what a reply said --------------------------------------------------------------------

/// What one reply (or its absence) said, as an agent reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Said {
    /// A fresh success naming the note.
    Deleted,
    /// A replayed success naming the note (the work ran once, earlier).
    Replayed,
    /// Says nothing was deleted or changed; `retry` when it also says to retry.
    Nothing {
        /// It also says to retry.
        retry: bool,
    },
    /// Says the outcome is unknown.
    Unknown,
    /// An error that says to retry (or `data.retryable: true`).
    Retry,
    /// No reply.
    NoReply(NoReply),
    /// Anything else: an error that neither says to retry nor what happened, or a result that
    /// does not fit the leg.
    Other,
}

/// Why there was no reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NoReply {
    /// The proxy's 502: the server closed the connection mid-response (killed).
    Proxy502,
    /// The proxy's 503: no server (connection refused, none up).
    Proxy503,
    /// The proxy's 504: the server said nothing within `timeout server`.
    Proxy504,
    /// Another HTTP status without a JSON-RPC body.
    OtherStatus,
    /// The connection failed or was reset.
    Connection,
    /// The client's own deadline.
    Timeout,
}

fn says_retry(lower: &str) -> bool {
    [
        "retry later",
        "can be retried",
        "try again",
        "retry after",
        "retry in ",
        "retry it",
        "retry the same",
        "retry with the same",
        "retryafter",
    ]
    .iter()
    .any(|p| lower.contains(p))
}

fn says_nothing(lower: &str) -> bool {
    [
        "nothing was deleted",
        "nothing was changed",
        "nothing was done",
    ]
    .iter()
    .any(|p| lower.contains(p))
}

fn by_text(lower: &str) -> Said {
    if lower.contains("is unknown") || lower.contains("outcome unknown") {
        Said::Unknown
    } else if says_nothing(lower) {
        Said::Nothing {
            retry: says_retry(lower),
        }
    } else if says_retry(lower) {
        Said::Retry
    } else {
        Said::Other
    }
}

/// Reads one leg-2 reply for `note`.
pub fn classify(out: &Outcome, note: &str) -> Said {
    let lower = out.text().to_lowercase();
    match out {
        Outcome::Complete(_) if !out.is_tool_error() => {
            if lower.contains(&format!("deleted {}", note.to_lowercase())) {
                if out.is_replay() {
                    Said::Replayed
                } else {
                    Said::Deleted
                }
            } else {
                by_text(&lower)
            }
        }
        Outcome::Complete(_) => by_text(&lower),
        Outcome::Pending(_) => Said::Other,
        Outcome::Failed(ClientError::Timeout { .. }) => Said::NoReply(NoReply::Timeout),
        Outcome::Failed(ClientError::Transport(message)) => {
            Said::NoReply(if message.contains("HTTP 502") {
                NoReply::Proxy502
            } else if message.contains("HTTP 503") {
                NoReply::Proxy503
            } else if message.contains("HTTP 504") {
                NoReply::Proxy504
            } else if message.contains("HTTP ") {
                NoReply::OtherStatus
            } else {
                NoReply::Connection
            })
        }
        Outcome::Failed(e) => match e.error_object() {
            Some(error) => {
                let retryable = error
                    .data()
                    .is_some_and(|d| d["retryable"] == true || d.get("retryAfter").is_some());
                match by_text(&lower) {
                    Said::Other if retryable => Said::Retry,
                    said => said,
                }
            }
            None => Said::Other,
        },
    }
}

// ---- flows ----------------------------------------------------------------------------------

/// One reply a flow got.
#[derive(Debug, Clone)]
pub struct Reply {
    /// 1 (the form) or 2 (the confirmation).
    pub leg: u8,
    /// How it reads.
    pub said: Said,
    /// Its text (error message or result text), cut to 300 characters.
    pub text: String,
    /// When it came, since the load started.
    pub at: Duration,
    /// For a reply saying nothing was deleted: whether the note was gone right after it.
    pub gone_after: Option<bool>,
}

/// One agent's flow for one note.
#[derive(Debug, Clone)]
pub struct Flow {
    /// The note's id.
    pub note: String,
    /// Leg 2 was sent at least once.
    pub confirmed: bool,
    /// Every reply, in order.
    pub replies: Vec<Reply>,
    /// The flow stopped resending because of the attempt bound or the drain deadline.
    pub gave_up: bool,
}

impl Flow {
    fn completed_at(&self) -> Option<Duration> {
        self.replies
            .iter()
            .find(|r| matches!(r.said, Said::Deleted | Said::Replayed))
            .map(|r| r.at)
    }

    fn fresh_successes(&self) -> usize {
        self.replies
            .iter()
            .filter(|r| r.said == Said::Deleted)
            .count()
    }

    fn describe(&self) -> String {
        let mut out = format!("{}:", self.note);
        for r in &self.replies {
            let _ = write!(
                out,
                "\n      leg {} at {:.2}s {:?}{}: {}",
                r.leg,
                r.at.as_secs_f64(),
                r.said,
                match r.gone_after {
                    Some(true) => " (note already gone)",
                    Some(false) => " (note still there)",
                    None => "",
                },
                r.text
            );
        }
        if self.gave_up {
            out.push_str("\n      (gave up resending)");
        }
        out
    }
}

// ---- the notes the flows delete -------------------------------------------------------------

/// Where the flows' notes live, as the harness creates and checks them.
enum NotesData {
    /// Markdown files in the shared workspace directory.
    Files(PathBuf),
    /// Rows of the notes table in the fleet's database.
    Rows(PgRows),
}

/// The harness's own connection to the fleet's database (named `fleet-harness`, which the
/// outage leaves alone), reconnected when it drops.
struct PgRows {
    url: String,
    workspace_uri: String,
    client: tokio::sync::Mutex<Option<Arc<tokio_postgres::Client>>>,
}

impl PgRows {
    async fn client(&self) -> Result<Arc<tokio_postgres::Client>, Error> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref().filter(|c| !c.is_closed()) {
            return Ok(Arc::clone(client));
        }
        let (client, connection) =
            tokio_postgres::connect(&self.url, tokio_postgres::NoTls).await?;
        tokio::spawn(connection);
        let client = Arc::new(client);
        *slot = Some(Arc::clone(&client));
        Ok(client)
    }

    /// Runs `f` on the connection, reconnecting and trying again (bounded) on failure.
    async fn with<T, F, Fut>(&self, f: F) -> Result<T, Error>
    where
        F: Fn(Arc<tokio_postgres::Client>) -> Fut,
        Fut: std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    {
        let mut last = None;
        for _ in 0..20 {
            match self.client().await {
                Ok(client) => match f(client).await {
                    Ok(v) => return Ok(v),
                    Err(e) => last = Some(e.to_string()),
                },
                Err(e) => last = Some(e.to_string()),
            }
            *self.client.lock().await = None;
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        Err(format!(
            "the harness's database connection: {}",
            last.unwrap_or_default()
        )
        .into())
    }
}

impl NotesData {
    async fn create(&self, id: &str, title: &str) -> Result<(), Error> {
        match self {
            NotesData::Files(dir) => Ok(std::fs::write(dir.join(id), format!("# {title}\n"))?),
            NotesData::Rows(pg) => {
                let uri = pg.workspace_uri.clone();
                pg.with(|c| {
                    let (uri, id, title) = (uri.clone(), id.to_owned(), title.to_owned());
                    async move {
                        c.execute(
                            "INSERT INTO notes (workspace_uri, id, title, body) VALUES ($1, $2, $3, '')",
                            &[&uri, &id, &title],
                        )
                        .await
                        .map(|_| ())
                    }
                })
                .await
            }
        }
    }

    async fn exists(&self, id: &str) -> Result<bool, Error> {
        match self {
            NotesData::Files(dir) => Ok(dir.join(id).symlink_metadata().is_ok()),
            NotesData::Rows(pg) => {
                let uri = pg.workspace_uri.clone();
                pg.with(|c| {
                    let (uri, id) = (uri.clone(), id.to_owned());
                    async move {
                        c.query_opt(
                            "SELECT 1 FROM notes WHERE workspace_uri = $1 AND id = $2",
                            &[&uri, &id],
                        )
                        .await
                        .map(|row| row.is_some())
                    }
                })
                .await
            }
        }
    }

    async fn all(&self) -> Result<HashSet<String>, Error> {
        match self {
            NotesData::Files(dir) => {
                let mut ids = HashSet::new();
                for entry in std::fs::read_dir(dir)? {
                    ids.insert(entry?.file_name().to_string_lossy().into_owned());
                }
                if dir.join("2025/tps-2025.md").exists() {
                    ids.insert("2025/tps-2025.md".to_owned());
                }
                Ok(ids)
            }
            NotesData::Rows(pg) => {
                let uri = pg.workspace_uri.clone();
                pg.with(|c| {
                    let uri = uri.clone();
                    async move {
                        c.query("SELECT id FROM notes WHERE workspace_uri = $1", &[&uri])
                            .await
                            .map(|rows| rows.iter().map(|r| r.get::<_, String>(0)).collect())
                    }
                })
                .await
            }
        }
    }
}

// ---- the store, and its "restart" ----------------------------------------------------------

/// The admin URL of the PostgreSQL server (`MCP_TEST_POSTGRES_URL`, default the local `test`
/// database).
pub fn pg_admin_url() -> String {
    std::env::var("MCP_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// `url` with its database replaced by `db` (its query kept), plus extra query `params`.
fn with_database(url: &str, db: &str, params: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let root = match base[authority_start..].find('/') {
        Some(i) => &base[..authority_start + i],
        None => base,
    };
    let mut query: Vec<&str> = query.into_iter().collect();
    if !params.is_empty() {
        query.push(params);
    }
    if query.is_empty() {
        format!("{root}/{db}")
    } else {
        format!("{root}/{db}?{}", query.join("&"))
    }
}

async fn pg_exec(url: &str, sql: &str) -> Result<(), Error> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    let driver = tokio::spawn(connection);
    let out = client.batch_execute(sql).await;
    drop(client);
    let _ = driver.await;
    Ok(out?)
}

/// A database of the fleet's own on the test server; dropped by [`PgDatabase::drop_now`].
struct PgDatabase {
    admin: String,
    name: String,
    url: String,
}

impl PgDatabase {
    async fn create() -> Result<Self, FleetError> {
        let admin = pg_admin_url();
        if let Err(e) = pg_exec(&admin, "SELECT 1").await {
            return Err(FleetError::Missing(format!(
                "no PostgreSQL at {admin}: {e}"
            )));
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!("fleet_{}_{nanos}", std::process::id());
        pg_exec(&admin, &format!("CREATE DATABASE \"{name}\"")).await?;
        let url = with_database(&admin, &name, "");
        Ok(Self { admin, name, url })
    }

    /// The clients' view of a restart: no new connections, every notes server's connection
    /// terminated (the harness's own is left alone).
    async fn go_down(&self) -> Result<(), Error> {
        pg_exec(
            &self.admin,
            &format!(
                "ALTER DATABASE \"{0}\" ALLOW_CONNECTIONS false;
                 SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                  WHERE datname = '{0}' AND pid <> pg_backend_pid()
                    AND application_name <> 'fleet-harness'",
                self.name
            ),
        )
        .await
    }

    async fn come_up(&self) -> Result<(), Error> {
        pg_exec(
            &self.admin,
            &format!("ALTER DATABASE \"{}\" ALLOW_CONNECTIONS true", self.name),
        )
        .await
    }

    async fn drop_now(&self) -> Result<(), Error> {
        pg_exec(
            &self.admin,
            &format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name),
        )
        .await
    }
}

/// A `redis-server` of the fleet's own.
struct RedisServer {
    binary: PathBuf,
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl RedisServer {
    fn binary() -> Result<PathBuf, FleetError> {
        let binary = std::env::var_os("REDIS_SERVER")
            .map_or_else(|| PathBuf::from("redis-server"), PathBuf::from);
        match Command::new(&binary).arg("--version").output() {
            Ok(out) if out.status.success() => Ok(binary),
            Ok(_) | Err(_) => Err(FleetError::Missing(format!(
                "cannot run {} (apt-get install redis-server)",
                binary.display()
            ))),
        }
    }

    fn start(binary: PathBuf, dir: PathBuf) -> Result<Self, Error> {
        let mut server = Self {
            binary,
            port: free_port()?,
            dir,
            child: None,
        };
        server.run()?;
        Ok(server)
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    fn run(&mut self) -> Result<(), Error> {
        let port = self.port.to_string();
        let child = Command::new(&self.binary)
            .args(["--port", &port, "--bind", "127.0.0.1", "--dir"])
            .arg(&self.dir)
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--protected-mode",
                "no",
                "--daemonize",
                "no",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if redis_ping(self.port) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!("redis-server did not answer PING on port {}", self.port).into())
    }

    /// SIGTERM (Redis writes its data and exits), waited for.
    fn stop(&mut self) -> Result<(), Error> {
        if let Some(mut child) = self.child.take() {
            signal(child.id(), "TERM")?;
            child.wait()?;
        }
        Ok(())
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn redis_ping(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 16];
    stream.write_all(b"PING\r\n").is_ok()
        && stream
            .read(&mut buf)
            .is_ok_and(|n| buf[..n].starts_with(b"+PONG"))
}

/// `kill -SIG pid`.
fn signal(pid: u32, sig: &str) -> Result<(), Error> {
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("kill -{sig} {pid} failed").into())
    }
}

/// The shared store of one run, with its fault.
enum Store {
    Postgres(PgDatabase),
    Redis(RedisServer),
}

impl Store {
    async fn go_down(&mut self) -> Result<(), Error> {
        match self {
            Store::Postgres(db) => db.go_down().await,
            // Waits for the process (briefly): off the async workers.
            Store::Redis(redis) => tokio::task::block_in_place(|| redis.stop()),
        }
    }

    async fn come_up(&mut self) -> Result<(), Error> {
        match self {
            Store::Postgres(db) => db.come_up().await,
            Store::Redis(redis) => tokio::task::block_in_place(|| redis.run()),
        }
    }
}

// ---- the instances ------------------------------------------------------------------------

/// One notes-example instance (restartable on its port).
struct Instance {
    args: Vec<String>,
    addr: std::net::SocketAddr,
    server: Option<StdioServer>,
    /// stderr of earlier lives (before a SIGKILL).
    earlier_logs: String,
}

impl Instance {
    fn spawn(args: &[String], bind: &str) -> Result<(StdioServer, std::net::SocketAddr), Error> {
        let mut all: Vec<&str> = vec!["serve", "--http", bind];
        all.extend(args.iter().map(String::as_str));
        spawn_notes_http_with_env(&all, &[("RUST_LOG", "warn")])
    }

    fn start(args: Vec<String>) -> Result<Self, Error> {
        let (server, addr) = Self::spawn(&args, "127.0.0.1:0")?;
        Ok(Self {
            args,
            addr,
            server: Some(server),
            earlier_logs: String::new(),
        })
    }

    fn kill(&mut self) {
        if let Some(server) = self.server.take() {
            self.earlier_logs.push_str(&server.stderr());
            self.earlier_logs.push_str("--- SIGKILL ---\n");
            drop(server);
        }
    }

    fn restart(&mut self) -> Result<(), Error> {
        let (server, _) = Self::spawn(&self.args, &self.addr.to_string())?;
        self.server = Some(server);
        Ok(())
    }

    fn pid(&self) -> Option<u32> {
        self.server.as_ref().map(StdioServer::pid)
    }

    fn logs(&self) -> String {
        let now = self
            .server
            .as_ref()
            .map(StdioServer::stderr)
            .unwrap_or_default();
        format!("{}{now}", self.earlier_logs)
    }
}

type Instances = Arc<Mutex<Vec<Instance>>>;

fn lock(instances: &Instances) -> std::sync::MutexGuard<'_, Vec<Instance>> {
    instances
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

// ---- the run --------------------------------------------------------------------------------

/// What one run counted.
#[derive(Debug, Default)]
pub struct FleetReport {
    /// `postgres` or `redis`.
    pub store: &'static str,
    /// notes-example instances behind the proxy.
    pub instances: usize,
    /// Agents.
    pub agents: usize,
    /// The load phase, as it ran.
    pub load: Duration,
    /// The faults, as injected (`+T.TTs what`).
    pub faults: Vec<String>,
    /// Flows started (a note created for each).
    pub started: usize,
    /// Flows whose confirmation was sent.
    pub confirmed: usize,
    /// Flows that got a success.
    pub completed: usize,
    /// Of those, flows whose first success was a replay (the reply that did the work was lost).
    pub completed_by_replay: usize,
    /// Flows that stopped resending at the attempt bound or the drain deadline.
    pub gave_up: usize,
    /// Confirmations lost.
    pub lost: usize,
    /// Confirmations lost to a SIGKILL between claim and unlink (files: at most once, by
    /// design; see the module docs). Reported, not a failure.
    pub lost_to_kill: usize,
    /// Double deletions (two fresh successes in a flow, or a note deleted that no flow
    /// confirmed).
    pub double: usize,
    /// Untruthful replies.
    pub untruthful: usize,
    /// Non-retryable errors.
    pub non_retryable: usize,
    /// Replies saying to retry (including "nothing was changed, retry").
    pub retryable: usize,
    /// Replies saying the outcome is unknown.
    pub unknown: usize,
    /// Replies saying, truthfully, that nothing was deleted.
    pub truthful_nothing: usize,
    /// Missing replies, by why.
    pub no_reply: BTreeMap<String, usize>,
    /// The longest time without a completed flow during the load.
    pub longest_stall: Duration,
    /// Flows completed more than a second after the last fault ended.
    pub completed_after_faults: usize,
    /// The lesson's notes are all still there.
    pub lesson_intact: bool,
    /// Up to three flows per finding, described reply by reply.
    pub examples: BTreeMap<&'static str, Vec<String>>,
    /// The instances' warnings and errors (last lines), when something was found.
    pub logs: String,
    /// Setting up (store, instances, proxy) took this long.
    pub setup: Duration,
    /// The flows still running when the load ended took this long to finish.
    pub drain: Duration,
}

impl FleetReport {
    /// Completed flows per second of load.
    pub fn throughput(&self) -> f64 {
        self.completed as f64 / self.load.as_secs_f64().max(0.001)
    }

    /// Everything the run must not show, one line each (empty: all held).
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (what, n) in [
            ("confirmations lost", self.lost),
            ("double deletions", self.double),
            ("untruthful replies", self.untruthful),
            ("non-retryable errors", self.non_retryable),
        ] {
            if n > 0 {
                out.push(format!("{n} {what}"));
            }
        }
        if !self.lesson_intact {
            out.push("a lesson note was deleted".to_owned());
        }
        out
    }

    /// The counts, one block of text.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "fleet ({}): {} notes-example instances behind HAProxy, {} agents, {:.1} s of load\n",
            self.store,
            self.instances,
            self.agents,
            self.load.as_secs_f64()
        );
        for f in &self.faults {
            let _ = writeln!(s, "  fault {f}");
        }
        let _ = writeln!(
            s,
            "  flows: started {}, confirmed {}, completed {} ({:.1} flows/s), completed by a replay {}, gave up {}",
            self.started,
            self.confirmed,
            self.completed,
            self.throughput(),
            self.completed_by_replay,
            self.gave_up
        );
        let _ = writeln!(
            s,
            "  confirmations lost {}, double deletions {}, untruthful replies {}, non-retryable errors {}",
            self.lost, self.double, self.untruthful, self.non_retryable
        );
        if self.lost_to_kill > 0 {
            let _ = writeln!(
                s,
                "  (and {} confirmation(s) lost to the SIGKILL between claim and unlink: files are deleted at most once, by design)",
                self.lost_to_kill
            );
        }
        let no_reply: Vec<String> = self
            .no_reply
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(
            s,
            "  errors seen: no reply {} [{}], retryable {}, outcome unknown {}, truthful 'nothing deleted' {}",
            self.no_reply.values().sum::<usize>(),
            no_reply.join(", "),
            self.retryable,
            self.unknown,
            self.truthful_nothing
        );
        let _ = writeln!(
            s,
            "  longest time without a completed flow {:.2} s; completed >1 s after the last fault {}; lesson notes intact: {}",
            self.longest_stall.as_secs_f64(),
            self.completed_after_faults,
            self.lesson_intact
        );
        let _ = writeln!(
            s,
            "  set-up {:.1} s, drain after the load {:.1} s",
            self.setup.as_secs_f64(),
            self.drain.as_secs_f64()
        );
        for (what, flows) in &self.examples {
            let _ = writeln!(s, "  examples of {what}:");
            for f in flows {
                let _ = writeln!(s, "    {f}");
            }
        }
        s
    }
}

/// Runs the fleet scenario `plan` with HAProxy `haproxy`.
///
/// # Errors
/// [`FleetError::Missing`] when the store's server is absent (the caller skips, saying why),
/// [`FleetError::Failed`] when setting up or running failed.
pub fn run(plan: &FleetPlan, haproxy: &Path) -> Result<FleetReport, FleetError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(run_async(plan, haproxy))
}

async fn run_async(plan: &FleetPlan, haproxy: &Path) -> Result<FleetReport, FleetError> {
    let began = Instant::now();
    let fx = NotesFixture::new()?;
    let notes_dir = fx.notes.to_string_lossy().into_owned();
    let key = fx.key_file.to_string_lossy().into_owned();
    let mut common = vec![
        "--principal".to_owned(),
        "alice".to_owned(),
        "--workspace".to_owned(),
        notes_dir.clone(),
        "--state-key-file".to_owned(),
        key,
        // Below the proxy's `timeout server` (2 s), as the README advises: a copy waiting on
        // an orphaned claim (its instance killed before recording) hears "in progress ...
        // unknown" rather than the proxy's 504.
        "--duplicate-wait-secs".to_owned(),
        "1".to_owned(),
    ];
    let (mut store, data, workspace_uri) = match plan.store {
        StoreKind::Postgres => {
            let db = PgDatabase::create().await?;
            let result = pg_setup(&db, &fx, &mut common).await;
            match result {
                Ok((data, uri)) => (Store::Postgres(db), data, uri),
                Err(e) => {
                    let _ = db.drop_now().await;
                    return Err(e);
                }
            }
        }
        StoreKind::Redis => {
            let binary = RedisServer::binary()?;
            let dir = fx.root().join("redis");
            std::fs::create_dir_all(&dir)?;
            let redis =
                tokio::task::spawn_blocking(move || RedisServer::start(binary, dir)).await??;
            common.extend(["--store".to_owned(), redis.url()]);
            (
                Store::Redis(redis),
                NotesData::Files(fx.notes.clone()),
                fx.uri.clone(),
            )
        }
    };
    let outcome = run_fleet(
        plan,
        haproxy,
        &common,
        &mut store,
        data,
        &workspace_uri,
        began,
    )
    .await;
    if let Store::Postgres(db) = &store {
        let _ = db.come_up().await;
        let _ = db.drop_now().await;
    }
    drop(fx);
    outcome
}

/// Imports the lesson into the fleet's database and opens the harness's connection; adds the
/// `--notes` flag to `common`.
async fn pg_setup(
    db: &PgDatabase,
    fx: &NotesFixture,
    common: &mut Vec<String>,
) -> Result<(NotesData, String), FleetError> {
    let out = tokio::process::Command::new(notes_binary()?)
        .args(["import", "--notes", &db.url])
        .arg(&fx.notes)
        .output()
        .await?;
    if !out.status.success() {
        return Err(format!(
            "notes-example import failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let rows = PgRows {
        url: with_database(&db.admin, &db.name, "application_name=fleet-harness"),
        workspace_uri: String::new(),
        client: tokio::sync::Mutex::new(None),
    };
    // The workspace key exactly as the import (and so the servers) wrote it.
    let uri: String = rows
        .with(|c| async move {
            c.query_one("SELECT min(workspace_uri) FROM notes", &[])
                .await
                .map(|r| r.get(0))
        })
        .await?;
    common.extend(["--notes".to_owned(), db.url.clone()]);
    Ok((
        NotesData::Rows(PgRows {
            workspace_uri: uri.clone(),
            ..rows
        }),
        uri,
    ))
}

/// One step of the fault cycle.
#[derive(Debug, Clone, Copy)]
enum Step {
    Kill(usize),
    Restart(usize),
    StoreDown,
    StoreUp,
    Stop(usize),
    Cont(usize),
}

/// The fault steps for `load`, at their offsets from the start (see the module docs).
fn schedule(load: Duration, instances: usize) -> Vec<(Duration, Step)> {
    const PERIOD: f64 = 16.0;
    let mut steps = Vec::new();
    let mut cycle = 0usize;
    while (cycle as f64) * PERIOD + 14.0 <= load.as_secs_f64() {
        let base = cycle as f64 * PERIOD;
        let killed = cycle % instances;
        let stopped = (cycle + 1) % instances;
        for (offset, step) in [
            (2.0, Step::Kill(killed)),
            (3.0, Step::Restart(killed)),
            (6.0, Step::StoreDown),
            (7.0, Step::StoreUp),
            (10.0, Step::Stop(stopped)),
            (13.0, Step::Cont(stopped)),
        ] {
            steps.push((Duration::from_secs_f64(base + offset), step));
        }
        cycle += 1;
    }
    steps
}

/// Shared by the agents.
struct Harness {
    url: String,
    data: NotesData,
    workspace_uri: String,
    plan: FleetPlan,
    start: Instant,
    load_end: Instant,
    hard_end: Instant,
    flows: Mutex<Vec<Flow>>,
}

async fn run_fleet(
    plan: &FleetPlan,
    haproxy: &Path,
    common: &[String],
    store: &mut Store,
    data: NotesData,
    workspace_uri: &str,
    began: Instant,
) -> Result<FleetReport, FleetError> {
    let mut started = Vec::new();
    for _ in 0..plan.instances {
        let args = common.to_vec();
        let instance = tokio::task::spawn_blocking(move || Instance::start(args)).await??;
        started.push(instance);
    }
    let servers = started.iter().map(|i| i.addr).collect();
    let instances: Instances = Arc::new(Mutex::new(started));
    let proxy = Haproxy::start(
        haproxy,
        &ProxyConfig {
            servers,
            timeout_client: Duration::from_secs(30),
            timeout_server: plan.proxy_timeout,
            health_checks: true,
        },
    )?;
    // Every backend up in HAProxy's eyes (rise 2 × 250 ms) before the load starts.
    tokio::time::sleep(Duration::from_millis(800)).await;

    let start = Instant::now();
    let setup = start - began;
    let harness = Arc::new(Harness {
        url: proxy.mcp_url(),
        data,
        workspace_uri: workspace_uri.to_owned(),
        plan: plan.clone(),
        start,
        load_end: start + plan.load,
        hard_end: start + plan.load + plan.drain,
        flows: Mutex::new(Vec::new()),
    });
    let agents: Vec<_> = (0..plan.agents)
        .map(|a| tokio::spawn(agent(Arc::clone(&harness), a)))
        .collect();

    let mut faults = Vec::new();
    let mut kills = Vec::new();
    let mut last_fault_end = Duration::ZERO;
    let steps = if plan.faults {
        schedule(plan.load, plan.instances)
    } else {
        Vec::new()
    };
    let mut fault_error = None;
    for (at, step) in steps {
        tokio::time::sleep_until((start + at).into()).await;
        let done = inject(step, &instances, store).await;
        let when = start.elapsed();
        match done {
            Ok(what) => faults.push(format!("+{:.2}s {what}", when.as_secs_f64())),
            Err(e) => {
                fault_error = Some(format!("{step:?}: {e}"));
                break;
            }
        }
        if matches!(step, Step::Kill(_)) {
            kills.push(when);
        }
        if matches!(step, Step::Restart(_) | Step::StoreUp | Step::Cont(_)) {
            last_fault_end = when;
        }
    }
    if fault_error.is_some() {
        // Leave nothing down or stopped: the agents finish against a whole fleet.
        let _ = store.come_up().await;
        for i in lock(&instances).iter_mut() {
            if let Some(pid) = i.pid() {
                let _ = signal(pid, "CONT");
            }
        }
    }
    for a in agents {
        a.await??;
    }
    let drain = start.elapsed().saturating_sub(plan.load);
    let load = plan.load.min(start.elapsed());
    if let Some(e) = fault_error {
        return Err(format!("injecting a fault failed: {e}").into());
    }
    let harness = Arc::into_inner(harness).ok_or("agents still hold the harness")?;
    let flows = harness
        .flows
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let remaining = harness.data.all().await?;
    let mut report = evaluate(plan, &flows, &remaining, load, last_fault_end, &kills);
    report.faults = faults;
    report.setup = setup;
    report.drain = drain;
    if !report.failures().is_empty() {
        for (i, instance) in lock(&instances).iter().enumerate() {
            let logs = instance.logs();
            let tail: Vec<&str> = logs.lines().rev().take(15).collect();
            let _ = writeln!(
                report.logs,
                "instance n{i} ({}), last lines:",
                instance.addr
            );
            for line in tail.into_iter().rev() {
                let _ = writeln!(report.logs, "    {line}");
            }
        }
        let _ = writeln!(report.logs, "haproxy: {}", proxy.output());
    }
    drop(proxy);
    let all: Vec<Instance> = std::mem::take(&mut *lock(&instances));
    tokio::task::spawn_blocking(move || drop(all)).await?;
    Ok(report)
}

async fn inject(step: Step, instances: &Instances, store: &mut Store) -> Result<String, Error> {
    match step {
        Step::Kill(i) => {
            let instances = Arc::clone(instances);
            tokio::task::spawn_blocking(move || lock(&instances)[i].kill()).await?;
            Ok(format!("SIGKILL n{i}"))
        }
        Step::Restart(i) => {
            let instances = Arc::clone(instances);
            tokio::task::spawn_blocking(move || lock(&instances)[i].restart()).await??;
            Ok(format!("n{i} restarted (listening again)"))
        }
        Step::StoreDown => {
            store.go_down().await?;
            Ok(match store {
                Store::Postgres(_) => {
                    "PostgreSQL down: new connections refused, the servers' connections terminated"
                        .to_owned()
                }
                Store::Redis(_) => "Redis stopped (SIGTERM)".to_owned(),
            })
        }
        Step::StoreUp => {
            store.come_up().await?;
            Ok(match store {
                Store::Postgres(_) => "PostgreSQL accepts connections again".to_owned(),
                Store::Redis(_) => "Redis restarted (same port and data)".to_owned(),
            })
        }
        Step::Stop(i) | Step::Cont(i) => {
            let sig = if matches!(step, Step::Stop(_)) {
                "STOP"
            } else {
                "CONT"
            };
            let pid = lock(instances)[i].pid().ok_or("no such instance")?;
            signal(pid, sig)?;
            Ok(format!("SIG{sig} n{i}"))
        }
    }
}

/// One agent: flows until the load ends.
async fn agent(h: Arc<Harness>, a: usize) -> Result<(), Error> {
    let transport = HttpTransport::new(&h.url)?;
    let client = Client::builder(transport)
        .timeout(h.plan.client_timeout)
        .build();
    let mut n = 0usize;
    while Instant::now() < h.load_end {
        let flow = one_flow(&h, &client, a, n).await?;
        h.flows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(flow);
        n += 1;
    }
    Ok(())
}

fn backoff(a: usize, attempt: usize) -> Duration {
    let base = 100u64 << attempt.min(4);
    Duration::from_millis(base.min(1000) + (a as u64 * 13) % 50)
}

fn cut(text: &str) -> String {
    text.chars().take(300).collect()
}

async fn one_flow(h: &Harness, client: &Client, a: usize, n: usize) -> Result<Flow, Error> {
    let note = format!("fleet-{a:02}-{n:05}.md");
    let title = format!("Fleet note {a:02}-{n:05}");
    h.data.create(&note, &title).await?;
    let args = json!({"workspaceUri": h.workspace_uri, "title": title});
    let mut flow = Flow {
        note: note.clone(),
        confirmed: false,
        replies: Vec::new(),
        gave_up: false,
    };

    // Leg 1: the form, which must offer exactly this note.
    let mut state = None;
    for attempt in 0..h.plan.attempts {
        let out = ask_delete(client, &args).await;
        let at = h.start.elapsed();
        if let Outcome::Pending(_) = &out {
            let offered = out.offered_ids();
            if offered == [note.clone()] {
                state = Some(out.request_state()?);
                break;
            }
            flow.replies.push(Reply {
                leg: 1,
                said: Said::Other,
                text: format!("the form offered {offered:?}"),
                at,
                gone_after: None,
            });
            return Ok(flow);
        }
        let said = match classify(&out, &note) {
            s @ (Said::NoReply(_) | Said::Retry) => s,
            // Says nothing was changed, and leg 1 changes nothing: truthful (the note is
            // there, the agent made it), and an error.
            s @ Said::Nothing { .. } => s,
            // Leg 1 changes nothing and must ask: anything else is out of place.
            _ => Said::Other,
        };
        flow.replies.push(Reply {
            leg: 1,
            said,
            text: cut(&out.text()),
            at,
            gone_after: None,
        });
        if attempt + 1 == h.plan.attempts || Instant::now() >= h.hard_end {
            flow.gave_up = true;
            return Ok(flow);
        }
        tokio::time::sleep(backoff(a, attempt)).await;
    }
    let Some(state) = state else {
        return Ok(flow);
    };

    // Leg 2: the confirmation, resent unchanged until it gets an answer that settles it.
    flow.confirmed = true;
    for attempt in 0..h.plan.attempts {
        let out = answer_delete(client, &args, choose(&note, true), &state).await;
        let at = h.start.elapsed();
        let said = classify(&out, &note);
        let gone_after = match said {
            Said::Nothing { .. } => Some(!h.data.exists(&note).await?),
            _ => None,
        };
        flow.replies.push(Reply {
            leg: 2,
            said,
            text: cut(&out.text()),
            at,
            gone_after,
        });
        if matches!(said, Said::Deleted | Said::Replayed) {
            return Ok(flow);
        }
        if attempt + 1 == h.plan.attempts || Instant::now() >= h.hard_end {
            flow.gave_up = true;
            return Ok(flow);
        }
        tokio::time::sleep(backoff(a, attempt)).await;
    }
    Ok(flow)
}

fn example(report: &mut FleetReport, what: &'static str, flow: &Flow) {
    let list = report.examples.entry(what).or_default();
    if list.len() < 3 {
        list.push(flow.describe());
    }
}

fn evaluate(
    plan: &FleetPlan,
    flows: &[Flow],
    remaining: &HashSet<String>,
    load: Duration,
    last_fault_end: Duration,
    kills: &[Duration],
) -> FleetReport {
    let mut r = FleetReport {
        store: plan.store.name(),
        instances: plan.instances,
        agents: plan.agents,
        load,
        started: flows.len(),
        lesson_intact: LESSON_NOTES.iter().all(|n| remaining.contains(*n)),
        ..FleetReport::default()
    };
    let mut completions = Vec::new();
    for flow in flows {
        let exists = remaining.contains(&flow.note);
        let completed = flow.completed_at();
        if flow.confirmed {
            r.confirmed += 1;
        }
        if flow.gave_up {
            r.gave_up += 1;
        }
        if let Some(at) = completed {
            r.completed += 1;
            completions.push(at);
            if flow
                .replies
                .iter()
                .find(|x| matches!(x.said, Said::Deleted | Said::Replayed))
                .is_some_and(|x| x.said == Said::Replayed)
            {
                r.completed_by_replay += 1;
            }
            if at > last_fault_end + Duration::from_secs(1) && !last_fault_end.is_zero() {
                r.completed_after_faults += 1;
            }
        }
        if flow.confirmed && exists && completed.is_none() {
            // Cut by a SIGKILL: the connection died with the instance (`kills` holds the time
            // each kill returned, so the cut is at most a little before it).
            let cut_by_kill = flow.replies.iter().any(|reply| {
                reply.leg == 2
                    && matches!(
                        reply.said,
                        Said::NoReply(NoReply::Proxy502 | NoReply::Connection)
                    )
                    && kills.iter().any(|k| {
                        reply.at + Duration::from_millis(500) >= *k
                            && reply.at <= *k + Duration::from_secs(1)
                    })
            });
            if plan.store == StoreKind::Redis && cut_by_kill {
                r.lost_to_kill += 1;
                example(&mut r, "confirmations lost to a kill (at most once)", flow);
            } else {
                r.lost += 1;
                example(&mut r, "confirmations lost", flow);
            }
        }
        if flow.fresh_successes() > 1 || (!flow.confirmed && !exists) {
            r.double += 1;
            example(&mut r, "double deletions", flow);
        }
        let (mut untruthful, mut unknown, mut other) = (false, false, false);
        for reply in &flow.replies {
            match reply.said {
                Said::Deleted | Said::Replayed if exists => {
                    r.untruthful += 1;
                    untruthful = true;
                }
                Said::Nothing { retry } => {
                    if reply.gone_after == Some(true) {
                        r.untruthful += 1;
                        untruthful = true;
                    } else {
                        r.truthful_nothing += 1;
                        if retry {
                            r.retryable += 1;
                        }
                    }
                }
                Said::Unknown => {
                    r.unknown += 1;
                    unknown = true;
                }
                Said::Retry => r.retryable += 1,
                Said::NoReply(why) => {
                    *r.no_reply.entry(format!("{why:?}")).or_default() += 1;
                }
                Said::Other => {
                    r.non_retryable += 1;
                    other = true;
                }
                Said::Deleted | Said::Replayed => {}
            }
        }
        if untruthful {
            example(&mut r, "untruthful replies", flow);
        }
        if other {
            example(&mut r, "non-retryable errors", flow);
        }
        if unknown {
            example(&mut r, "outcome unknown (allowed)", flow);
        }
    }
    completions.sort();
    let mut previous = Duration::ZERO;
    for at in completions.iter().copied().filter(|at| *at <= load) {
        r.longest_stall = r.longest_stall.max(at.saturating_sub(previous));
        previous = at;
    }
    r.longest_stall = r.longest_stall.max(load.saturating_sub(previous));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_urls_keep_their_query() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/test", "f", ""),
            "postgres://postgres@127.0.0.1:5432/f"
        );
        assert_eq!(
            with_database(
                "postgres://u@h:1/test?sslmode=disable",
                "f",
                "application_name=x"
            ),
            "postgres://u@h:1/f?sslmode=disable&application_name=x"
        );
        assert_eq!(
            with_database("postgres://u@h:1", "f", "a=b"),
            "postgres://u@h:1/f?a=b"
        );
    }

    #[test]
    fn replies_read_as_an_agent_reads_them() {
        let lower = |s: &str| s.to_lowercase();
        assert_eq!(
            by_text(&lower(
                "replay store unavailable (x); nothing was changed, retry later"
            )),
            Said::Nothing { retry: true }
        );
        assert_eq!(
            by_text(&lower(
                "This confirmation was already used: its requestState was consumed by an earlier retry. Restart the call without requestState and inputResponses to ask again."
            )),
            Said::Other
        );
        assert_eq!(
            by_text(&lower(
                "The confirmed action stopped unexpectedly, so whether it took effect is unknown; check before asking again."
            )),
            Said::Unknown
        );
        assert_eq!(
            by_text(&lower(
                "No note title contains \"x\"; nothing was deleted. Call notes_list to see the titles."
            )),
            Said::Nothing { retry: false }
        );
    }

    #[test]
    fn the_fault_cycle_fits_the_load() {
        assert!(schedule(Duration::from_secs(13), 3).is_empty());
        assert_eq!(schedule(Duration::from_secs(18), 3).len(), 6);
        assert_eq!(schedule(Duration::from_secs(60), 3).len(), 18);
    }
}
