//! The command line: `notes-example` (the demo) and `notes-example serve ...`.
//!
//! Parsing is separated from running so configuration mistakes (a missing workspace, an
//! unreadable key file) are found before anything is served, and reported as one line with exit
//! code 2.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use mcp_runtime::rate_limit::RateLimit;
use mcp_runtime::server::InvalidLimit;
use mcp_runtime::transport::{HostAllowlist, HttpConfig};

/// Exit code for bad flags and unusable configuration.
pub const EXIT_USAGE: i32 = 2;

/// The reference MCP notes server: deleting a note always takes an explicit, signed, single-use
/// confirmation from the user.
#[derive(Debug, Parser)]
#[command(
    name = "notes-example",
    version,
    about,
    long_about = None,
    after_help = "With no command, runs the demo: a temporary workspace, every checkpoint of \
                  the protocol driven in-process, and a readable transcript. Exit 0 only if \
                  every checkpoint behaved."
)]
pub struct Cli {
    /// What to do (default: the demo).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the demo (the same as giving no command).
    Demo,
    /// Serve MCP over stdio or Streamable HTTP.
    Serve(Box<ServeArgs>),
    /// Load the Markdown notes of DIR into a database backend (seed data for a fleet).
    Import(ImportArgs),
    /// Print a fresh state-key line (`KID:BASE64KEY`) for a --state-key-file.
    Keygen {
        /// The key id to put in front of the key.
        #[arg(long, default_value = "k1")]
        kid: String,
    },
}

/// Options of `notes-example serve`.
#[derive(Debug, Args)]
#[command(after_help = SERVE_HELP)]
pub struct ServeArgs {
    /// Serve newline-delimited JSON-RPC on stdin/stdout (logs go to stderr).
    #[arg(long, conflicts_with = "http", required_unless_present = "http")]
    pub stdio: bool,
    /// Serve Streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8080).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// A workspace directory of Markdown notes, `DIR` (for the default principal) or
    /// `PRINCIPAL=DIR`. Repeatable.
    #[arg(long = "workspace", value_name = "[PRINCIPAL=]DIR", required = true)]
    pub workspaces: Vec<String>,
    /// The principal bare `--workspace DIR`s are granted to, and (stdio) the identity every
    /// request runs as. Default: the local user name.
    #[arg(long)]
    pub principal: Option<String>,
    /// Where notes live: `fs` (the Markdown files of the --workspace directories),
    /// `sqlite:PATH` or `postgres://USER@HOST:PORT/DB`. A database also holds the replay
    /// store, so each deletion commits in the same transaction as its confirmation's claim.
    #[arg(
        long,
        value_name = "fs|sqlite:PATH|postgres://...",
        default_value = "fs"
    )]
    pub notes: String,
    /// Table of a database --notes backend.
    #[arg(long, value_name = "NAME", default_value = crate::backend::DEFAULT_TABLE)]
    pub notes_table: String,
    /// Replay store: `sqlite:PATH`, `memory`, or `postgres://...`. Default: the --notes
    /// database, else a SQLite file in the user's data directory.
    #[arg(long, value_name = "SPEC")]
    pub store: Option<String>,
    /// File of state-signing keys (`KID:BASE64KEY` lines, first signs). Default: a random key
    /// per process (then no other process can finish a flow this one began).
    #[arg(long, value_name = "PATH")]
    pub state_key_file: Option<PathBuf>,
    /// Accept `--store memory` together with `--state-key-file`: used confirmations are then
    /// forgotten on restart and replayable until they expire (refused without this flag).
    #[arg(long)]
    pub allow_volatile_store: bool,
    /// How long a confirmation request stays valid, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub state_ttl: u64,
    /// Do not confine the process with Landlock.
    #[arg(long)]
    pub no_sandbox: bool,
    /// Rate limit of every tool, per principal: CALLS/WINDOW, e.g. `60/min`, `10/30s`,
    /// `1000/h`. Only a call's first round counts; past the limit a call gets JSON-RPC
    /// `-32023` with `retryAfter` (HTTP 429 with `Retry-After`). Counted in the --store
    /// backend, so every instance sharing it enforces one limit. Default: no limit.
    #[arg(long, value_name = "CALLS/WINDOW", value_parser = parse_rate_limit)]
    pub rate_limit: Option<RateLimit>,
    /// One tool's own rate limit, per principal: `TOOL=CALLS/WINDOW` (e.g.
    /// `notes_delete=10/min`), or `TOOL=off` to exempt it from --rate-limit. Repeatable.
    #[arg(
        long = "tool-rate-limit",
        value_name = "TOOL=CALLS/WINDOW",
        value_parser = parse_tool_rate_limit
    )]
    pub tool_rate_limits: Vec<ToolRateLimit>,
    /// How long a resent confirmation waits for the outcome of a copy still being carried
    /// out (on this or another instance) before it is told to send it again in a moment.
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=300))]
    pub duplicate_wait_secs: u64,
    /// HTTP only: bearer-token file, one `PRINCIPAL TOKEN` per line. Must not be accessible
    /// by group or others (`chmod 600 PATH`).
    #[arg(long, value_name = "PATH", conflicts_with = "oauth_issuer")]
    pub auth_file: Option<PathBuf>,
    /// HTTP only: accept OAuth access tokens (JWTs) from this authorization server (its issuer
    /// URL, https or loopback http); `--workspace SUBJECT=DIR` then grants DIR to the tokens'
    /// subject SUBJECT of this issuer.
    #[arg(long, value_name = "URL")]
    pub oauth_issuer: Option<String>,
    /// With --oauth-issuer: this server's canonical resource URI, which tokens must name as
    /// their audience. Default: --public-url (else http://ADDR of --http) followed by /mcp.
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    pub resource: Option<String>,
    /// HTTP only: the base URL browsers reach this server at (e.g. https://notes.example.com
    /// behind a TLS proxy), used in connect links. Required when --http listens on all
    /// addresses (0.0.0.0 or [::]). Default: http://ADDR of --http.
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// 2025-11-25 clients: how long to wait for the user to answer a form (or the client to
    /// answer roots/list, sampling) before cancelling the question and failing the call with
    /// "did not answer in time"; nothing is changed.
    #[arg(long, value_name = "SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub legacy_input_timeout_secs: u64,
    /// HTTP only: a `Host` the server answers to, `NAME` (any port) or `NAME:PORT`; others get
    /// 421. Repeatable. Default: loopback names on a loopback address, any host otherwise.
    #[arg(long = "allowed-host", value_name = "HOST[:PORT]")]
    pub allowed_hosts: Vec<String>,
    /// HTTP only: most connections open at once; at the cap the longest-stalled one is closed
    /// to make room. Default 1024.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_connections: Option<u64>,
    /// HTTP only: new connections the kernel queues until the server accepts them; beyond it
    /// their handshakes are dropped and retried a second later. The system caps it
    /// (net.core.somaxconn on Linux). Default 1024.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=65_535))]
    pub listen_backlog: Option<u32>,
    /// HTTP only: seconds a client has to send a request's headers. Default 10.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_timeout_secs: Option<u64>,
    /// HTTP only: seconds an idle keep-alive connection is kept. Default 60.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub idle_timeout_secs: Option<u64>,
    /// HTTP only: seconds a client has to send a request's body. Default 30.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub body_timeout_secs: Option<u64>,
    /// HTTP only: largest request head (request line and headers) in bytes. Default 65536.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1024..=16_777_216))]
    pub max_header_bytes: Option<u64>,
    /// HTTP only: most request-body bytes buffered at once, all connections together; beyond
    /// it requests get 503. Default 67108864 (64 MiB).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(4096..=17_179_869_184))]
    pub max_buffered_body_bytes: Option<u64>,
    /// HTTP only: an SSE response with nothing to send for this many seconds (a
    /// `subscriptions/listen` stream, a slow tool after its first notification, a 2025-11-25
    /// client's pending question) gets a `: keep-alive` comment, so proxies and load balancers
    /// that cut idle streams keep it open. Decimals allowed (0.1 to 3600). Default 15, well under
    /// common proxy idle timeouts (30 to 60 s).
    #[arg(long, value_name = "SECONDS", value_parser = parse_keep_alive)]
    pub sse_keep_alive: Option<Duration>,
    /// HTTP only: serve Prometheus metrics at http://ADDR/metrics, a listener of its own
    /// (e.g. 127.0.0.1:9464; keep it off the public network). Off by default.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
    /// Export traces and metrics over OTLP HTTP/protobuf to the collector at URL (its base,
    /// e.g. http://127.0.0.1:4318; spans go to URL/v1/traces). Without it, export is on
    /// when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; the
    /// other OTEL_* variables (service name, resource attributes, headers, queue and batch
    /// sizes, delays) apply either way, and OTEL_SDK_DISABLED=true turns export off.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// With --metrics-listen or OTLP export: how often, in seconds, this instance sweeps the
    /// --store for abandoned confirmations (asked, never answered before --state-ttl ran out)
    /// and counts them in mcp_flows_abandoned_total, each once across every instance sharing
    /// the store.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub abandoned_sweep_secs: u64,
    /// Log format on stderr: `text` (human-readable) or `json` (one JSON object per line,
    /// with the request span's fields, for log shippers).
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub log_format: LogFormat,
}

/// One `--tool-rate-limit`: a tool and its limit (`None`: exempt from `--rate-limit`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRateLimit {
    /// The tool's name.
    pub tool: String,
    /// Its limit, or `None` for `off`.
    pub limit: Option<RateLimit>,
}

/// Reads `--rate-limit`.
fn parse_rate_limit(text: &str) -> Result<RateLimit, String> {
    text.parse()
        .map_err(|e: mcp_runtime::rate_limit::ParseRateLimitError| e.to_string())
}

/// Reads `--tool-rate-limit TOOL=CALLS/WINDOW` (or `TOOL=off`).
fn parse_tool_rate_limit(text: &str) -> Result<ToolRateLimit, String> {
    let Some((tool, limit)) = text.split_once('=') else {
        return Err(format!(
            "`{text}` names no tool; write TOOL=CALLS/WINDOW, e.g. `notes_delete=10/min` (or TOOL=off)"
        ));
    };
    let tool = tool.trim();
    if tool.is_empty() {
        return Err(format!(
            "`{text}` names no tool; write TOOL=CALLS/WINDOW, e.g. `notes_delete=10/min`"
        ));
    }
    let limit = match limit.trim() {
        "off" | "none" => None,
        limit => Some(parse_rate_limit(limit)?),
    };
    Ok(ToolRateLimit {
        tool: tool.to_owned(),
        limit,
    })
}

/// How `serve` writes its logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Options of `notes-example import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The database: `sqlite:PATH` or `postgres://USER@HOST:PORT/DB`.
    #[arg(long, value_name = "sqlite:PATH|postgres://...")]
    pub notes: String,
    /// Table of the database backend.
    #[arg(long, value_name = "NAME", default_value = crate::backend::DEFAULT_TABLE)]
    pub notes_table: String,
    /// The workspace URI the notes are filed under (what clients send as workspaceUri and
    /// `serve --workspace` grants). Default: the file: URI of DIR.
    #[arg(long, value_name = "URI")]
    pub workspace_uri: Option<String>,
    /// The directory of Markdown notes to load.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

const SERVE_HELP: &str = "\
Workspaces: every --workspace DIR is granted to the default principal (--principal, else the \
local user); --workspace alice=DIR grants DIR to the principal `alice` only. A client names a \
workspace by its file: URI; anything else, including sub-paths of other principals' \
workspaces, is refused.

Auth file (--http): UTF-8, one `PRINCIPAL TOKEN` per line, `#` comments. Tokens are at least 32 \
characters of [A-Za-z0-9-._~+/] (e.g. `openssl rand -base64 32`); clients send \
`Authorization: Bearer TOKEN` and run as PRINCIPAL. The file must be mode 0600 (a file group or \
others can read is refused). Without --auth-file, HTTP serves only on loopback and every \
request runs as the default principal.

OAuth (--http with --oauth-issuer URL): clients send access tokens (JWTs) the authorization \
server issued for --resource (default: the public URL + /mcp); they are checked against the \
issuer's published keys, audience, expiry and scopes (notes:read lists, reads and exports; \
deleting needs notes:read and notes:write). A request runs as the token's issuer + subject: --workspace SUBJECT=DIR grants DIR to \
the subject SUBJECT. Clients discover the issuer at /.well-known/oauth-protected-resource.

HTTP limits: headers within --header-timeout-secs (10), bodies within --body-timeout-secs (30), \
idle keep-alive connections closed after --idle-timeout-secs (60), at most --max-connections \
(1024) connections (the longest-stalled one is closed to make room, new ones queued up to \
--listen-backlog (1024) until accepted) and \
--max-buffered-body-bytes (64 MiB) of request bodies buffered at once. A quiet SSE response gets a \
keep-alive comment every --sse-keep-alive seconds (15): keep it below the idle timeout of any \
proxy in front. Requests naming a Host \
other than --allowed-host (default: loopback names on a loopback address) get 421.

Operations (--http): GET /healthz answers 200 while the process serves; GET /readyz answers 200 \
when the replay store, the notes store and the state keys are usable, else 503 with a JSON body \
naming what failed (details in the log). Neither needs a token. --metrics-listen ADDR serves \
Prometheus metrics (requests by method and outcome, latency, in-flight requests, confirmation \
rounds, claims and refusals by reason, replay-store latency and errors, open connections) at \
http://ADDR/metrics. Every request is logged with one span (request id, principal, method, \
tool, outcome, refusal reason, round, latency); --log-format json writes JSON lines.

Several processes given the same --store and --state-key-file act as one stateless server: any \
of them can finish a confirmation another one started, and each confirmation is used once.

Database notes (--notes sqlite:PATH or postgres://...): --workspace DIR names the workspace URI \
file://DIR (the directory need not exist); load notes with `notes-example import`. The replay \
store is the same database.

Rate limits: --rate-limit CALLS/WINDOW limits every tool per principal, --tool-rate-limit \
TOOL=CALLS/WINDOW one tool (TOOL=off exempts it); windows are s, min, h or day, with a count \
if needed (10/30s). Only the first round of a call counts (answering a confirmation or \
retrying after a lost reply is free). Past the limit a call gets JSON-RPC -32023 with \
error.data.retryAfter in whole seconds (HTTP 429 with Retry-After). Counters live in the \
--store backend: every instance given the same --store enforces one limit. Default: none.

State keys: the first line of --state-key-file signs, every line verifies. To rotate across a \
fleet with no failed flow: deploy [old, new] everywhere (all verify the new key), then [new, old] \
(all sign with it), then [new] once --state-ttl has passed.";

impl ServeArgs {
    /// How long a 2025-11-25 session waits for the client's answer to one question.
    pub fn legacy_input_timeout(&self) -> Duration {
        Duration::from_secs(self.legacy_input_timeout_secs)
    }

    /// The state lifetime as a duration.
    pub fn state_ttl(&self) -> Duration {
        Duration::from_secs(self.state_ttl)
    }

    /// The limits `--rate-limit`, `--tool-rate-limit` and `--duplicate-wait-secs` set.
    pub fn call_limits(&self) -> crate::tools::CallLimits {
        crate::tools::CallLimits {
            default: self.rate_limit,
            tools: self
                .tool_rate_limits
                .iter()
                .map(|t| (t.tool.clone(), t.limit))
                .collect(),
            duplicate_wait: Some(Duration::from_secs(self.duplicate_wait_secs)),
            // A store write per confirmation asked: only when someone watches the count.
            abandoned_sweep: (self.metrics_listen.is_some()
                || crate::telemetry::requested(self.otlp_endpoint.as_deref()))
            .then(|| Duration::from_secs(self.abandoned_sweep_secs)),
        }
    }

    /// Checks combinations clap cannot express; the message is one line.
    pub fn validate(&self) -> Result<(), String> {
        let mut seen = std::collections::HashSet::new();
        for t in &self.tool_rate_limits {
            if !crate::tools::TOOL_NAMES.contains(&t.tool.as_str()) {
                return Err(format!(
                    "--tool-rate-limit: this server has no tool named `{}`; its tools are {}",
                    t.tool.escape_debug(),
                    crate::tools::TOOL_NAMES.join(", ")
                ));
            }
            if !seen.insert(t.tool.as_str()) {
                return Err(format!(
                    "--tool-rate-limit names `{}` twice; give each tool one limit",
                    t.tool
                ));
            }
        }
        if self.auth_file.is_some() && self.http.is_none() {
            return Err("--auth-file only applies to --http (stdio runs as --principal)".into());
        }
        if self.oauth_issuer.is_some() && self.http.is_none() {
            return Err("--oauth-issuer only applies to --http (stdio runs as --principal)".into());
        }
        if self.public_url.is_some() && self.http.is_none() {
            return Err("--public-url only applies to --http (stdio serves no web page)".into());
        }
        if self.http.is_none() {
            let http_only = [
                (!self.allowed_hosts.is_empty(), "--allowed-host"),
                (self.max_connections.is_some(), "--max-connections"),
                (self.listen_backlog.is_some(), "--listen-backlog"),
                (self.header_timeout_secs.is_some(), "--header-timeout-secs"),
                (self.idle_timeout_secs.is_some(), "--idle-timeout-secs"),
                (self.body_timeout_secs.is_some(), "--body-timeout-secs"),
                (self.max_header_bytes.is_some(), "--max-header-bytes"),
                (
                    self.max_buffered_body_bytes.is_some(),
                    "--max-buffered-body-bytes",
                ),
                (self.metrics_listen.is_some(), "--metrics-listen"),
                (self.sse_keep_alive.is_some(), "--sse-keep-alive"),
            ];
            if let Some((_, flag)) = http_only.iter().find(|(given, _)| *given) {
                return Err(format!("{flag} only applies to --http"));
            }
        }
        Ok(())
    }

    /// The HTTP limits and allowed hosts these flags set, over [`HttpConfig`]'s defaults.
    ///
    /// # Errors
    /// A one-line message naming the flag, for a malformed `--allowed-host` or a zero limit.
    pub fn http_config(&self, bind: SocketAddr) -> Result<HttpConfig, String> {
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        let allowed_hosts = if self.allowed_hosts.is_empty() {
            None
        } else {
            Some(
                HostAllowlist::parse(&self.allowed_hosts)
                    .map_err(|e| format!("--allowed-host: {e}"))?,
            )
        };
        let mut config = HttpConfig::default()
            .with_bind(bind)
            .with_allowed_hosts(allowed_hosts);
        // Each setter refuses what cannot work; the message names the flag that set it.
        let flag = |flag: &'static str| move |e: InvalidLimit| format!("{flag}: {e}");
        if let Some(n) = self.max_connections {
            config = config
                .with_max_connections(size(n))
                .map_err(flag("--max-connections"))?;
        }
        if let Some(n) = self.listen_backlog {
            config = config
                .with_listen_backlog(n)
                .map_err(flag("--listen-backlog"))?;
        }
        if let Some(secs) = self.header_timeout_secs {
            config = config
                .with_header_read_timeout(Duration::from_secs(secs))
                .map_err(flag("--header-timeout-secs"))?;
        }
        if let Some(secs) = self.idle_timeout_secs {
            config = config
                .with_idle_timeout(Duration::from_secs(secs))
                .map_err(flag("--idle-timeout-secs"))?;
        }
        if let Some(secs) = self.body_timeout_secs {
            config = config
                .with_body_timeout(Duration::from_secs(secs))
                .map_err(flag("--body-timeout-secs"))?;
        }
        if let Some(n) = self.max_header_bytes {
            config = config
                .with_max_header_bytes(size(n))
                .map_err(flag("--max-header-bytes"))?;
        }
        if let Some(n) = self.max_buffered_body_bytes {
            config = config
                .with_max_buffered_body_bytes(size(n))
                .map_err(flag("--max-buffered-body-bytes"))?;
        }
        if let Some(interval) = self.sse_keep_alive {
            config = config
                .with_sse_keep_alive(interval)
                .map_err(flag("--sse-keep-alive"))?;
        }
        Ok(config)
    }

    /// Splits every `--workspace` into (principal, dir), bare dirs going to `default`.
    pub fn workspace_grants(&self, default: &str) -> Vec<(String, PathBuf)> {
        self.workspaces
            .iter()
            .map(|w| split_grant(w, default))
            .collect()
    }
}

/// `--sse-keep-alive`: seconds, decimals allowed, from 0.1 to 3600.
fn parse_keep_alive(value: &str) -> Result<Duration, String> {
    let secs: f64 = value
        .trim()
        .parse()
        .map_err(|_| format!("{value:?} is not a number of seconds (e.g. 15 or 0.5)"))?;
    if !(0.1..=3600.0).contains(&secs) {
        return Err(format!("{value} is out of range: give 0.1 to 3600 seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `PRINCIPAL=DIR` when the part before the first `=` holds no `/` and is not empty; otherwise
/// the whole string is a directory for `default`. (Write `./a=b` for a directory named `a=b`.)
pub fn split_grant(spec: &str, default: &str) -> (String, PathBuf) {
    match spec.split_once('=') {
        Some((principal, dir))
            if !principal.is_empty() && !principal.contains('/') && !dir.is_empty() =>
        {
            (principal.to_owned(), PathBuf::from(dir))
        }
        _ => (default.to_owned(), PathBuf::from(spec)),
    }
}

/// The local user's name: `$USER`, `$LOGNAME`, else `whoami`, else `local`.
pub fn local_user() -> String {
    for var in ["USER", "LOGNAME"] {
        if let Ok(name) = std::env::var(var) {
            let name = name.trim();
            if !name.is_empty() && !name.contains(char::is_whitespace) {
                return name.to_owned();
            }
        }
    }
    std::process::Command::new("whoami")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty() && !s.contains(char::is_whitespace))
        .unwrap_or_else(|| "local".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn grants_split_on_principal_prefix_only() {
        assert_eq!(split_grant("/n", "me"), ("me".into(), PathBuf::from("/n")));
        assert_eq!(
            split_grant("alice=/n", "me"),
            ("alice".into(), PathBuf::from("/n"))
        );
        assert_eq!(
            split_grant("./a=b", "me"),
            ("me".into(), PathBuf::from("./a=b"))
        );
        assert_eq!(
            split_grant("=/n", "me"),
            ("me".into(), PathBuf::from("=/n"))
        );
    }

    fn serve(extra: &[&str]) -> Result<ServeArgs, String> {
        let mut argv = vec!["n", "serve", "--stdio", "--workspace", "/x"];
        argv.extend_from_slice(extra);
        let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
        let Some(Command::Serve(args)) = cli.command else {
            panic!("not serve")
        };
        args.validate()?;
        Ok(*args)
    }

    #[test]
    fn rate_limit_flags_read_and_say_what_to_write() {
        let args = serve(&[
            "--rate-limit",
            "60/min",
            "--tool-rate-limit",
            "notes_delete=10/min",
            "--tool-rate-limit",
            "notes_list=off",
        ])
        .unwrap();
        let limits = args.call_limits();
        assert_eq!(limits.default, Some(RateLimit::per_minute(60)));
        assert_eq!(
            limits.tools,
            vec![
                ("notes_delete".to_owned(), Some(RateLimit::per_minute(10))),
                ("notes_list".to_owned(), None),
            ]
        );
        let defaults = serve(&[]).unwrap().call_limits();
        assert_eq!((defaults.default, defaults.tools.len()), (None, 0));
        assert_eq!(defaults.duplicate_wait, Some(Duration::from_secs(10)));
        let quick = serve(&["--duplicate-wait-secs", "1"])
            .unwrap()
            .call_limits();
        assert_eq!(quick.duplicate_wait, Some(Duration::from_secs(1)));
        for (flags, needle) in [
            (&["--rate-limit", "60"][..], "e.g. `60/min`"),
            (&["--rate-limit", "0/min"], "CALLS must be"),
            (&["--rate-limit", "5/fortnight"], "unknown window unit"),
            (&["--tool-rate-limit", "10/min"], "names no tool"),
            (
                &["--tool-rate-limit", "notes_delete=ten/min"],
                "e.g. `60/min`",
            ),
            (
                &["--tool-rate-limit", "notes_zap=1/s"],
                "no tool named `notes_zap`",
            ),
            (
                &[
                    "--tool-rate-limit",
                    "notes_delete=1/s",
                    "--tool-rate-limit",
                    "notes_delete=2/s",
                ],
                "twice",
            ),
        ] {
            let err = serve(flags).unwrap_err();
            assert!(err.contains(needle), "{flags:?}: {err}");
        }
    }

    #[test]
    fn serve_requires_a_transport_and_a_workspace() {
        assert!(Cli::try_parse_from(["n", "serve", "--workspace", "/x"]).is_err());
        assert!(Cli::try_parse_from(["n", "serve", "--stdio"]).is_err());
        assert!(
            Cli::try_parse_from([
                "n",
                "serve",
                "--stdio",
                "--http",
                "127.0.0.1:1",
                "--workspace",
                "/x"
            ])
            .is_err()
        );
        let stdio_auth = Cli::try_parse_from([
            "n",
            "serve",
            "--stdio",
            "--workspace",
            "/x",
            "--auth-file",
            "/a",
        ])
        .unwrap();
        let Some(Command::Serve(stdio_auth)) = stdio_auth.command else {
            panic!("not serve")
        };
        assert!(stdio_auth.validate().is_err());
        assert!(
            Cli::try_parse_from([
                "n",
                "serve",
                "--stdio",
                "--workspace",
                "/x",
                "--state-ttl",
                "0"
            ])
            .is_err()
        );
        let ok = Cli::try_parse_from([
            "n",
            "serve",
            "--stdio",
            "--workspace",
            "/x",
            "--workspace",
            "bob=/y",
        ])
        .unwrap();
        let Some(Command::Serve(args)) = ok.command else {
            panic!("not serve")
        };
        assert_eq!(args.workspace_grants("me").len(), 2);
    }

    #[test]
    fn sse_keep_alive_takes_decimal_seconds_over_http_only() {
        let parse = |value: &str, transport: &[&str]| {
            let mut argv = vec!["n", "serve", "--workspace", "/x", "--sse-keep-alive", value];
            argv.extend_from_slice(transport);
            Cli::try_parse_from(argv).map(|cli| match cli.command {
                Some(Command::Serve(args)) => args,
                _ => panic!("not serve"),
            })
        };
        let http = ["--http", "127.0.0.1:1"];
        let args = parse("0.5", &http).unwrap();
        assert!(args.validate().is_ok());
        let config = args.http_config("127.0.0.1:1".parse().unwrap()).unwrap();
        assert_eq!(config.sse_keep_alive(), Duration::from_millis(500));
        assert_eq!(
            parse("20", &http).unwrap().sse_keep_alive,
            Some(Duration::from_secs(20))
        );
        for bad in ["0", "0.01", "3601", "soon", "NaN", "-1"] {
            assert!(parse(bad, &http).is_err(), "{bad}");
        }
        assert!(parse("5", &["--stdio"]).unwrap().validate().is_err());
        // Without the flag: HttpConfig's default (15 s).
        let default =
            Cli::try_parse_from(["n", "serve", "--workspace", "/x", "--http", "127.0.0.1:1"])
                .map(|cli| match cli.command {
                    Some(Command::Serve(args)) => args,
                    _ => panic!("not serve"),
                })
                .unwrap();
        let config = default.http_config("127.0.0.1:1".parse().unwrap()).unwrap();
        assert_eq!(config.sse_keep_alive(), Duration::from_secs(15));
    }
}
