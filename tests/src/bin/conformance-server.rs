//! `conformance-server`: the fixture server the official MCP conformance suite talks to.
//!
//! ```text
//! conformance-server --http 127.0.0.1:PORT     # PORT 0: the kernel picks a free port
//! ```
//!
//! Both revisions on one port: 2025-11-25 clients (an `initialize`, an `Mcp-Session-Id` or a
//! 2025-era `MCP-Protocol-Version`) go through the runtime's legacy adapter, everything else to
//! the modern router; the same fixture handlers answer both.
//!
//! Once bound it prints `listening on http://ADDR/mcp` on stdout (what `.ci/conformance.sh`
//! waits for), then serves Streamable HTTP until SIGTERM/Ctrl-C. Every request runs as the
//! anonymous principal `conformance`: this binary is a test fixture, never a deployment.
//!
//! The fixtures are ordinary `#[tool]` functions written exactly the way a user of the framework
//! writes tools; what each must do is documented on the module that holds it:
//! [`content`] (static results), [`streaming`] (progress and log notifications, capability
//! gates), [`mrtr`] (multi round-trip input requests) and [`classic`] (the 2025-11-25
//! scenarios' sampling and elicitation tools).

mod conformance_server;

use std::net::SocketAddr;
use std::process::ExitCode;

use mcp_runtime::transport::shutdown_signal;
use mcp_runtime::transport::{HttpConfig, serve_router};

use conformance_server::build_server;

const USAGE: &str = "usage: conformance-server --http HOST:PORT   (e.g. --http 127.0.0.1:0)";

/// Parsed command line.
struct Cli {
    http: SocketAddr,
}

impl Cli {
    /// Parses `--http HOST:PORT` (also `--http=HOST:PORT`); anything else is an error that
    /// says what was expected.
    fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut http = None;
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let value = match arg.as_str() {
                "--http" => args
                    .next()
                    .ok_or_else(|| "--http needs a HOST:PORT value".to_owned())?,
                "-h" | "--help" => return Err(USAGE.to_owned()),
                other => match other.strip_prefix("--http=") {
                    Some(v) => v.to_owned(),
                    None => return Err(format!("unexpected argument `{other}`")),
                },
            };
            let addr = value.parse::<SocketAddr>().map_err(|e| {
                format!("--http `{value}` is not a socket address like 127.0.0.1:3000 ({e})")
            })?;
            http = Some(addr);
        }
        let http = http.ok_or_else(|| "missing --http HOST:PORT".to_owned())?;
        Ok(Self { http })
    }
}

async fn run(cli: Cli) -> Result<(), String> {
    let server = build_server().map_err(|e| format!("cannot build the server: {e}"))?;
    let config = HttpConfig::default().with_bind(cli.http);
    let router = conformance_server::router(server, &config)?;
    let listener = tokio::net::TcpListener::bind(cli.http)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", cli.http))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot read the bound address: {e}"))?;
    println!("listening on http://{addr}/mcp");
    serve_router(listener, router, &config, shutdown_signal())
        .await
        .map_err(|e| format!("server failed: {e}"))
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = match Cli::parse(std::env::args().skip(1)) {
        Ok(cli) => cli,
        Err(msg) => {
            eprintln!("{msg}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("conformance-server: {msg}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, String> {
        Cli::parse(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn cli_accepts_both_spellings_and_rejects_garbage() {
        assert_eq!(
            parse(&["--http", "127.0.0.1:0"]).map(|c| c.http.port()),
            Ok(0)
        );
        assert_eq!(
            parse(&["--http=127.0.0.1:3000"]).map(|c| c.http.port()),
            Ok(3000)
        );
        assert!(parse(&[]).is_err_and(|e| e.contains("missing --http")));
        assert!(parse(&["--http"]).is_err_and(|e| e.contains("needs a HOST:PORT")));
        assert!(parse(&["--http", "localhost"]).is_err_and(|e| e.contains("not a socket address")));
        assert!(parse(&["--stdio"]).is_err_and(|e| e.contains("unexpected argument")));
    }

    #[test]
    fn server_builds_with_unique_tool_names() {
        let server = build_server();
        assert!(server.is_ok(), "{:?}", server.err());
    }
}
