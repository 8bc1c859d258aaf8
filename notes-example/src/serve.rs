//! `notes-example serve`: configuration checked up front, then the sandbox, then the server.
//!
//! Order matters: everything read from the filesystem at startup (workspaces, key file, auth
//! file, the store's directory) is opened *before* Landlock confines the process, and Landlock
//! is applied *before* the async runtime starts its threads, so every thread is confined.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcp_runtime::Principal;
use mcp_runtime::legacy::http::{LegacyHttp, LegacyHttpConfig};
use mcp_runtime::replay::open_store;
use mcp_runtime::sandbox::{self, SandboxStatus};
use mcp_runtime::scope::ScopePolicy;
use mcp_runtime::service::McpService;
use mcp_runtime::state::StateKeyring;
use mcp_runtime::transport::oauth::{OAuthConfig, ResourceServer, principal_for};
use mcp_runtime::transport::{
    AllowAnonymous, Authenticator, BearerTokens, HttpConfig, HttpServer, serve_router,
};

use crate::backend::{NotesSpec, NotesStore, UriGrants};
use crate::cli::{EXIT_USAGE, ImportArgs, ServeArgs, local_user};
use crate::connect::{self, ExportConnect};
use crate::notes::Notes;
use crate::tools::build_server_limited;
use mcp_runtime::observe::PrometheusMetrics;

/// Where requests come from.
#[derive(Debug)]
pub enum Transport {
    /// Newline-delimited JSON-RPC on stdin/stdout, as `principal`.
    Stdio,
    /// Streamable HTTP at `/mcp`.
    Http {
        /// The address to bind, limits and allowed hosts.
        config: Box<HttpConfig>,
        /// Bearer tokens, or `None` to run every request as the default principal (loopback
        /// only) or, with `oauth`, as the subject of an OAuth token.
        tokens: Option<BearerTokens>,
        /// OAuth: the issuer and the resource URI (`None`: the public URL + `/mcp`).
        oauth: Option<OAuthSettings>,
    },
}

/// `--oauth-issuer` and `--resource`.
#[derive(Debug, Clone)]
pub struct OAuthSettings {
    /// The authorization server's issuer URL.
    pub issuer: String,
    /// The canonical resource URI, or `None` for the public URL + `/mcp`.
    pub resource: Option<String>,
}

/// A checked configuration, ready to run.
#[derive(Debug)]
pub struct Prepared {
    /// Where requests come from.
    pub transport: Transport,
    /// The default principal (stdio's identity; owner of bare `--workspace`s).
    pub principal: Principal,
    /// Where notes live and which workspaces each principal may use.
    pub notes: NotesConfig,
    /// State-signing keys.
    pub keys: StateKeyring,
    /// Replay store spec for [`open_store`].
    pub store: String,
    /// How long confirmations stay valid.
    pub state_ttl: std::time::Duration,
    /// Rate limits of `tools/call` (`--rate-limit`, `--tool-rate-limit`), counted in the
    /// replay store's backend.
    pub call_limits: crate::tools::CallLimits,
    /// How long a 2025-11-25 session waits for the client to answer one question.
    pub legacy_input_timeout: std::time::Duration,
    /// Paths granted read-write by the sandbox, or `None` with `--no-sandbox`.
    pub sandbox_rw: Option<Vec<PathBuf>>,
    /// Paths granted read-only by the sandbox.
    pub sandbox_ro: Vec<PathBuf>,
    /// HTTP: the checked `--public-url` connect links start with (else the bound address).
    pub public_url: Option<String>,
    /// HTTP: where to serve Prometheus metrics (`--metrics-listen`), if anywhere.
    pub metrics_listen: Option<std::net::SocketAddr>,
}

/// The notes backend to open once the async runtime runs.
#[derive(Debug)]
pub enum NotesConfig {
    /// Markdown files in the granted directories.
    Fs(Notes),
    /// A database (SQLite or PostgreSQL) holding notes and the replay store.
    Db {
        /// Which database.
        spec: NotesSpec,
        /// The notes table.
        table: String,
        /// The workspace URIs each principal may use.
        grants: UriGrants,
    },
}

impl NotesConfig {
    /// Opens the backend.
    pub async fn open(self) -> Result<NotesStore, crate::notes::NotesError> {
        match self {
            Self::Fs(notes) => Ok(notes.into()),
            Self::Db {
                spec,
                table,
                grants,
            } => spec.open_db(&table, grants).await?.ok_or_else(|| {
                crate::notes::NotesError::Backend("files are not a database".into())
            }),
        }
    }
}

/// A configuration problem: one line, exit code 2.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The embedded default store: `sqlite:<data dir>/notes-example/replay.sqlite3`.
pub fn default_store() -> Result<String, ConfigError> {
    let base = dirs::data_dir().ok_or_else(|| {
        ConfigError(
            "no user data directory is known (set HOME or XDG_DATA_HOME, or pass --store)".into(),
        )
    })?;
    let path = base.join("notes-example").join("replay.sqlite3");
    Ok(format!("sqlite:{}", path.display()))
}

/// Checks every flag and opens everything the server needs from the filesystem.
pub fn prepare(args: &ServeArgs) -> Result<Prepared, ConfigError> {
    args.validate().map_err(ConfigError)?;
    let principal_name = args.principal.clone().unwrap_or_else(local_user);
    if principal_name.is_empty() || principal_name.contains(char::is_whitespace) {
        return Err(ConfigError(format!(
            "--principal {principal_name:?} must be non-empty and contain no whitespace"
        )));
    }
    let principal = Principal::new(principal_name.as_str());
    // With OAuth, a grant's PRINCIPAL is a subject of the issuer.
    let grantee = |who: &str| match &args.oauth_issuer {
        Some(issuer) => principal_for(issuer, who),
        None => Principal::new(who),
    };

    let spec = NotesSpec::parse(&args.notes).map_err(ConfigError)?;
    let mut policy = ScopePolicy::new();
    let mut grants = UriGrants::new();
    let mut rw = Vec::new();
    for (who, dir) in args.workspace_grants(&principal_name) {
        if spec != NotesSpec::Fs {
            // Database notes: the directory only names the workspace URI.
            let absolute = std::path::absolute(&dir).map_err(|e| {
                ConfigError(format!("workspace {} is not usable: {e}", dir.display()))
            })?;
            let uri = mcp_runtime::scope::WorkspaceUri::from_path(&absolute)
                .map_err(|e| ConfigError(format!("workspace {}: {e}", dir.display())))?;
            grants = grants.allow(grantee(&who), uri);
            continue;
        }
        std::fs::read_dir(&dir)
            .map_err(|e| ConfigError(format!("workspace {} cannot be read: {e}", dir.display())))?;
        policy = policy
            .allow(grantee(&who), &dir)
            .map_err(|e| ConfigError(e.to_string()))?;
        if let Ok(canonical) = std::fs::canonicalize(&dir) {
            rw.push(canonical);
        }
    }

    let keys = match &args.state_key_file {
        Some(path) => StateKeyring::from_key_file(path).map_err(|e| ConfigError(e.to_string()))?,
        None => StateKeyring::generate().map_err(|e| ConfigError(e.to_string()))?,
    };

    let store = match (&args.store, spec.store_spec()) {
        (Some(store), Some(db)) if store.trim() != db => {
            return Err(ConfigError(format!(
                "--store must be the --notes database ({}) so a deletion commits with its confirmation's claim; drop --store",
                args.notes.split('@').next_back().unwrap_or("the database")
            )));
        }
        (Some(store), _) => store.trim().to_owned(),
        (None, Some(db)) => db,
        (None, None) => default_store()?,
    };
    let volatile = store == "memory" || store.starts_with("memory:");
    if volatile && args.state_key_file.is_some() && !args.allow_volatile_store {
        // Keys that outlive the process with claims that do not: after a restart every
        // confirmation used before it verifies again and is not marked used.
        return Err(ConfigError(
            "--store memory forgets used confirmations on restart, but --state-key-file keeps them valid, so they could be replayed: use --store sqlite:PATH or postgres://..., or pass --allow-volatile-store to accept that".into(),
        ));
    }
    let mut ro = Vec::new();
    if let Some(path) = store.strip_prefix("sqlite:") {
        let path = Path::new(path.strip_prefix("//").unwrap_or(path));
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir).map_err(|e| {
            ConfigError(format!(
                "store directory {} cannot be created: {e}",
                dir.display()
            ))
        })?;
        let dir = std::fs::canonicalize(&dir).map_err(|e| {
            ConfigError(format!(
                "store directory {} cannot be used: {e}",
                dir.display()
            ))
        })?;
        rw.push(dir);
    } else if store.starts_with("postgres://")
        || store.starts_with("postgresql://")
        || store.starts_with("redis://")
    {
        // Name resolution reads the resolver configuration.
        ro.push(PathBuf::from("/etc"));
    } else if store != "memory" && !store.starts_with("memory:") {
        return Err(ConfigError(format!(
            "--store {store:?} not understood; write sqlite:PATH, memory, postgres://... or redis://HOST:PORT/DB"
        )));
    }

    let transport = match args.http {
        None => Transport::Stdio,
        Some(addr) => {
            let tokens = match &args.auth_file {
                Some(path) => {
                    Some(BearerTokens::load(path).map_err(|e| ConfigError(e.to_string()))?)
                }
                None if addr.ip().is_loopback() || args.oauth_issuer.is_some() => None,
                None => {
                    return Err(ConfigError(format!(
                        "--http {addr} is not a loopback address; pass --auth-file or --oauth-issuer so requests are authenticated"
                    )));
                }
            };
            let config = args.http_config(addr).map_err(ConfigError)?;
            let oauth = args.oauth_issuer.as_ref().map(|issuer| OAuthSettings {
                issuer: issuer.trim().to_owned(),
                resource: args.resource.as_ref().map(|r| r.trim().to_owned()),
            });
            Transport::Http {
                config: Box::new(config),
                tokens,
                oauth,
            }
        }
    };
    let public_url = match (&args.public_url, args.http) {
        (Some(url), _) => Some(
            connect::check_public_url(url)
                .map_err(|e| ConfigError(format!("--public-url: {e}")))?,
        ),
        (None, Some(addr)) if addr.ip().is_unspecified() => {
            return Err(ConfigError(format!(
                "--http {addr} listens on all addresses, so connect links cannot name this server; pass --public-url with the URL browsers reach it at (e.g. https://notes.example.com)"
            )));
        }
        (None, _) => None,
    };
    // The edge serves the public URL's host too (a proxy may keep it) when no --allowed-host
    // is given.
    let mut transport = transport;
    if let (Transport::Http { config, .. }, Some(url)) = (&mut transport, &public_url) {
        let with_url = (**config)
            .clone()
            .with_public_url(url.clone())
            .map_err(|e| ConfigError(format!("--public-url: {e}")))?;
        **config = with_url;
    }

    Ok(Prepared {
        transport,
        principal,
        notes: match spec {
            NotesSpec::Fs => NotesConfig::Fs(Notes::new(policy)),
            spec => NotesConfig::Db {
                spec,
                table: args.notes_table.clone(),
                grants,
            },
        },
        keys,
        store,
        state_ttl: args.state_ttl(),
        call_limits: args.call_limits(),
        legacy_input_timeout: args.legacy_input_timeout(),
        sandbox_rw: (!args.no_sandbox).then_some(rw),
        sandbox_ro: ro,
        public_url,
        metrics_listen: args.metrics_listen,
    })
}

/// Runs a prepared server until its input ends (stdio) or it is signalled (HTTP). Returns the
/// process exit code.
pub fn run(prepared: Prepared) -> i32 {
    run_with(prepared, || Ok(()))
}

/// [`run`], calling `after_sandbox` once the sandbox is in place and before any thread starts
/// (threads started earlier would escape the sandbox, and the sandbox refuses to start then):
/// the place to start exporters that run threads of their own. Its error ends the run with
/// exit code 2.
pub fn run_with(prepared: Prepared, after_sandbox: impl FnOnce() -> Result<(), String>) -> i32 {
    if let Some(rw) = &prepared.sandbox_rw {
        match sandbox::restrict_to(rw, &prepared.sandbox_ro) {
            Ok(SandboxStatus::FullyEnforced) => {
                tracing::info!(paths = ?rw, "Landlock sandbox fully enforced: only the workspaces and the store directory are reachable");
            }
            Ok(SandboxStatus::PartiallyEnforced) => {
                tracing::info!(paths = ?rw, "Landlock sandbox partially enforced (older kernel ABI)");
            }
            Ok(SandboxStatus::NotEnforced { reason }) => {
                tracing::warn!(%reason, "Landlock sandbox not enforced; running unconfined");
            }
            Err(e) => {
                eprintln!("notes-example: sandbox: {e}");
                return 1;
            }
        }
    } else {
        tracing::warn!("sandbox disabled by --no-sandbox");
    }
    if let Err(e) = after_sandbox() {
        eprintln!("notes-example: {e}");
        return crate::cli::EXIT_USAGE;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("notes-example: cannot start the async runtime: {e}");
            return 1;
        }
    };
    runtime.block_on(serve(prepared))
}

async fn serve(prepared: Prepared) -> i32 {
    let store = match open_store(&prepared.store).await {
        Ok(store) => store,
        Err(e) => {
            eprintln!("notes-example: replay store: {e}");
            return EXIT_USAGE;
        }
    };
    // Tasks live in the same backend as the replay claims, so any instance sharing the store
    // answers tasks/get for a task another created.
    let tasks = match mcp_runtime::tasks::open_task_store(&prepared.store).await {
        Ok(tasks) => tasks,
        Err(e) => {
            eprintln!("notes-example: task store: {e}");
            return EXIT_USAGE;
        }
    };
    let notes = match prepared.notes.open().await {
        Ok(notes) => notes,
        Err(e) => {
            eprintln!("notes-example: notes backend: {e}");
            return EXIT_USAGE;
        }
    };
    let connect = ExportConnect::default();
    let notes_probe = notes.clone();
    // Rate limits are counted in the replay store's backend (its own rate-limit store), so
    // every instance sharing --store enforces one limit.
    let server = match build_server_limited(
        notes,
        prepared.keys,
        crate::tools::Stores {
            replay: store,
            tasks: Some(tasks),
        },
        prepared.state_ttl,
        connect.clone(),
        &prepared.call_limits,
    ) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("notes-example: {e}");
            return 1;
        }
    };
    let service: Arc<dyn McpService> = Arc::new(server.clone());
    match prepared.transport {
        Transport::Stdio => {
            tracing::info!(principal = %prepared.principal, "serving MCP on stdio");
            // The first message picks the era: `initialize` → 2025-11-25 adapter.
            let limits = match mcp_runtime::legacy::session::SessionLimits::default()
                .with_input_timeout(prepared.legacy_input_timeout)
            {
                Ok(limits) => limits,
                Err(e) => {
                    eprintln!("notes-example: --legacy-input-timeout-secs: {e}");
                    return EXIT_USAGE;
                }
            };
            let served = mcp_runtime::legacy::stdio::serve_auto_with_limits(
                server,
                prepared.principal,
                tokio::io::stdin(),
                tokio::io::stdout(),
                mcp_runtime::transport::stdio::StdioConfig::default(),
                limits,
            );
            match served.await {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("notes-example: stdio: {e}");
                    1
                }
            }
        }
        Transport::Http {
            config,
            tokens,
            oauth,
        } => {
            let config = *config;
            let addr = config.bind();
            let listener = match mcp_runtime::transport::listen(&config).await {
                Ok(listener) => listener,
                Err(e) => {
                    eprintln!("notes-example: cannot listen on {addr}: {e}");
                    return EXIT_USAGE;
                }
            };
            let local = match listener.local_addr() {
                Ok(local) => local,
                Err(e) => {
                    eprintln!("notes-example: listening, address unknown: {e}");
                    return 1;
                }
            };
            let base = prepared
                .public_url
                .clone()
                .unwrap_or_else(|| format!("http://{local}"));
            let resource_server = match oauth {
                Some(oauth) => match start_oauth(oauth, &base).await {
                    Ok(rs) => Some(rs),
                    Err(e) => {
                        eprintln!("notes-example: {e}");
                        return EXIT_USAGE;
                    }
                },
                None => None,
            };
            let auth: Arc<dyn Authenticator> = match (tokens, &resource_server) {
                (_, Some(rs)) => Arc::new(rs.clone()),
                (Some(tokens), None) => Arc::new(tokens),
                (None, None) => {
                    tracing::warn!(principal = %prepared.principal, "no --auth-file: every HTTP request runs as the default principal (loopback only)");
                    Arc::new(AllowAnonymous(prepared.principal))
                }
            };
            let origins = config.allowed_origins().clone();
            // One server, both eras: the 2025-11-25 adapter (sessions, per request) sits in
            // front of the sessionless modern router and uses the same authenticator.
            let legacy_config = match LegacyHttpConfig::from_http(&config)
                .with_input_timeout(prepared.legacy_input_timeout)
            {
                Ok(legacy_config) => legacy_config,
                Err(e) => {
                    eprintln!("notes-example: --legacy-input-timeout-secs: {e}");
                    return EXIT_USAGE;
                }
            };
            let legacy = LegacyHttp::new(server, Arc::clone(&auth), legacy_config);
            let mut http = HttpServer::new(service, Arc::clone(&auth))
                .with_config(config.clone())
                .with_readiness_check("notes_store", move || {
                    let notes = notes_probe.clone();
                    Box::pin(async move { notes.ping().await.map_err(|e| e.to_string()) })
                });
            if let Some(rs) = &resource_server {
                http = http.with_oauth(rs);
            }
            let router = match http.router() {
                Ok(router) => {
                    legacy.wrap(router.merge(connect::routes(connect.clone(), auth, origins)))
                }
                Err(e) => {
                    eprintln!("notes-example: {e}");
                    return EXIT_USAGE;
                }
            };
            if let Err(e) = connect.set_base_url(&base) {
                tracing::warn!(error = %e, "connect links disabled");
            }
            if let Some(addr) = prepared.metrics_listen
                && let Err(e) = serve_metrics(addr).await
            {
                eprintln!("notes-example: --metrics-listen {addr}: {e}");
                return EXIT_USAGE;
            }
            // Printed whatever the log filter: with `--http 127.0.0.1:0` this line is how a
            // supervisor or test learns the port the kernel picked.
            eprintln!("notes-example: listening on http://{local}/mcp");
            // The hardened edge: header/idle/body deadlines, connection cap, body budget, Host.
            let served = serve_router(
                listener,
                router,
                &config,
                mcp_runtime::transport::shutdown_signal(),
            )
            .await;
            match served {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("notes-example: http: {e}");
                    1
                }
            }
        }
    }
}

/// Installs the Prometheus recorder and serves it on `addr` in the background, until the
/// shutdown signal.
async fn serve_metrics(addr: std::net::SocketAddr) -> Result<(), String> {
    let metrics = PrometheusMetrics::install().map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    // Printed whatever the log filter, like the MCP address (a test learns the port here).
    eprintln!("notes-example: metrics on http://{local}/metrics");
    tokio::spawn(async move {
        let shutdown = mcp_runtime::transport::shutdown_signal();
        if let Err(e) = metrics.serve(listener, shutdown).await {
            tracing::error!(error = %e, "metrics listener failed");
        }
    });
    Ok(())
}

/// Checks the OAuth settings and fetches the issuer's keys, so a wrong issuer fails at start.
async fn start_oauth(oauth: OAuthSettings, base: &str) -> Result<ResourceServer, String> {
    let resource = oauth
        .resource
        .unwrap_or_else(|| format!("{}/mcp", base.trim_end_matches('/')));
    let config = OAuthConfig::new(oauth.issuer, resource)
        .with_scopes([crate::tools::SCOPE_READ, crate::tools::SCOPE_WRITE]);
    let rs = ResourceServer::new(config).map_err(|e| format!("OAuth: {e}"))?;
    rs.discover()
        .await
        .map_err(|e| format!("OAuth: {e}; check --oauth-issuer"))?;
    tracing::info!(issuer = %rs.config().issuer(), resource = %rs.config().resource(), metadata = %rs.metadata_url(), "accepting OAuth access tokens");
    Ok(rs)
}

/// `notes-example import`: loads the Markdown notes of a directory into a database backend
/// (inserting or replacing by id). Returns the process exit code.
pub fn import(args: &ImportArgs) -> i32 {
    match import_inner(args) {
        Ok(count) => {
            println!("imported {count} notes");
            0
        }
        Err(e) => {
            eprintln!("notes-example: import: {e}");
            EXIT_USAGE
        }
    }
}

fn import_inner(args: &ImportArgs) -> Result<u64, ConfigError> {
    let spec = NotesSpec::parse(&args.notes).map_err(ConfigError)?;
    if spec == NotesSpec::Fs {
        return Err(ConfigError(
            "--notes must be a database (sqlite:PATH or postgres://...)".into(),
        ));
    }
    let me = Principal::new("import");
    let policy = ScopePolicy::new()
        .allow(me.clone(), &args.dir)
        .map_err(|e| ConfigError(e.to_string()))?;
    let root = policy
        .roots_for(&me)
        .into_iter()
        .next()
        .ok_or_else(|| ConfigError("the directory could not be opened".into()))?;
    let ws = Notes::new(policy)
        .open(&me, &root.to_string())
        .map_err(|e| ConfigError(e.to_string()))?;
    let mut records = Vec::new();
    for note in ws.list().map_err(|e| ConfigError(e.to_string()))? {
        let body = ws
            .read_note(&note.id)
            .map_err(|e| ConfigError(format!("{}: {e}", note.id)))?;
        records.push(crate::backend::NoteRecord {
            id: note.id,
            title: note.title,
            body,
        });
    }
    let target = match &args.workspace_uri {
        Some(uri) => mcp_runtime::scope::WorkspaceUri::parse(uri)
            .map_err(|e| ConfigError(format!("--workspace-uri: {e}")))?,
        None => root,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ConfigError(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        // Also creates the replay table, so a fresh database is ready to serve.
        mcp_runtime::replay::open_store(&spec.store_spec().unwrap_or_default())
            .await
            .map_err(|e| ConfigError(e.to_string()))?;
        let backend = spec
            .open_db(&args.notes_table, UriGrants::new())
            .await
            .map_err(|e| ConfigError(e.to_string()))?
            .ok_or_else(|| ConfigError("not a database".into()))?;
        backend
            .import(&target, records)
            .await
            .map_err(|e| ConfigError(e.to_string()))
    })
}
