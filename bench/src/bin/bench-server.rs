//! Streamable HTTP benchmark server (stateless, JSON responses): the notes benchmark on this
//! framework, for `bench/http.sh`.
//!
//! Usage: `bench-server [ADDR]` (default `127.0.0.1:8788`; loopback only).
//!
//! Benchmark mode: the one-time replay claim is skipped ([`mcp_bench::notes::NoReplay`]) so
//! the accepted retry can repeat; every other per-request check runs.
//!
//! `MCP_BENCH_TOOL=lean` serves [`mcp_bench::lean::notes_delete_lean`] as `notes_delete`
//! instead: the same replies and checks with the tool's own string work made cheap (an
//! instrument for bench/README's analysis, never used by `bench/http.sh`).

use std::net::SocketAddr;
use std::sync::Arc;

use mcp_bench::lean::notes_delete_lean;
use mcp_bench::notes::{NoReplay, Notes, echo, notes_delete};
use mcp_runtime::Principal;
use mcp_runtime::prelude::*;
use mcp_runtime::state::{StateKey, StateKeyring};
use mcp_runtime::transport::AllowAnonymous;
use mcp_runtime::transport::{HttpConfig, HttpServer};
use mcp_types::Implementation;

/// Per-request work is dominated by many small, short-lived allocations (parsed JSON trees,
/// response buffers); mimalloc's thread-local free lists serve them faster than glibc malloc.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Fixed key so states survive a restart during a benchmark. A real server loads a key file.
const BENCH_KEY: &[u8] = b"mcp-bench-request-state-key-0123456789abcdef";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8788".to_owned())
        .parse()?;
    if !addr.ip().is_loopback() {
        return Err(
            format!("refusing to bind {addr}: the benchmark server is loopback only").into(),
        );
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(serve(addr))
}

async fn serve(addr: SocketAddr) -> Result<(), Box<dyn std::error::Error>> {
    let keyring = StateKeyring::new(StateKey::new("bench", BENCH_KEY)?, Vec::new())?;
    let lean = match std::env::var_os("MCP_BENCH_TOOL") {
        None => false,
        Some(v) if v == "default" => false,
        Some(v) if v == "lean" => true,
        Some(v) => {
            return Err(format!("MCP_BENCH_TOOL must be `lean` or `default`, not {v:?}").into());
        }
    };
    let tools = if lean {
        tools![notes_delete_lean, echo]
    } else {
        tools![notes_delete, echo]
    };
    let server = Server::builder(Implementation::new("notes-bench", "0.1.0"))
        .tools(tools)
        .state(Notes::demo())
        .state_keys(keyring)
        .replay_store(Arc::new(NoReplay))
        .build()?;
    // bench/http.sh runs up to 1024 keep-alive connections; the default cap (1024) would
    // leave no room for its correctness probes.
    let config = HttpConfig::default()
        .with_bind(addr)
        .with_max_connections(4096)?;
    let bound = HttpServer::new(
        Arc::new(server),
        Arc::new(AllowAnonymous(Principal::new("anonymous"))),
    )
    .with_config(config)
    .bind()
    .await?;
    let allocator = if cfg!(feature = "mimalloc") {
        "mimalloc"
    } else {
        "system"
    };
    eprintln!(
        "bench-server listening on http://{}/mcp (pid {}, allocator: {allocator}{}); benchmark mode: replay claim skipped",
        bound.local_addr()?,
        std::process::id(),
        if lean { ", tool: lean instrument" } else { "" }
    );
    bound.serve().await?;
    Ok(())
}
