//! The fixture tools of `conformance-server`, grouped by what they exercise.

pub mod catalog;
pub mod classic;
pub mod content;
pub mod forms;
pub mod mrtr;
pub mod schemas;
pub mod streaming;
pub mod tasks;

use std::sync::Arc;

use axum::Router;
use mcp_runtime::Principal;
use mcp_runtime::legacy::http::{LegacyHttp, LegacyHttpConfig};
use mcp_runtime::prelude::*;
use mcp_runtime::transport::{AllowAnonymous, Authenticator, HttpConfig, HttpServer};

/// The server with every fixture the 2026-07-28 and 2025-11-25 server scenarios call.
pub fn build_server() -> Result<Server, mcp_runtime::server::BuildError> {
    Server::builder(Implementation::new(
        "mcp-rs-conformance",
        env!("CARGO_PKG_VERSION"),
    ))
    .tools(
        content::tools()
            .merge(streaming::tools())
            .merge(mrtr::tools())
            .merge(schemas::tools())
            .merge(classic::tools())
            .merge(tasks::tools()),
    )
    .prompts(catalog::prompts())
    .resources(catalog::resources())
    .build()
}

/// Both eras on one router: the 2025-11-25 adapter (sessions, live server-to-client requests)
/// in front of the sessionless modern router, as `notes-example serve --http` wires them.
/// Every request runs as the anonymous principal `conformance`.
///
/// # Errors
/// An unusable `config.path`, said in words.
pub fn router(server: Server, config: &HttpConfig) -> Result<Router, String> {
    let auth: Arc<dyn Authenticator> = Arc::new(AllowAnonymous(Principal::new("conformance")));
    let legacy = LegacyHttp::new(
        server.clone(),
        Arc::clone(&auth),
        LegacyHttpConfig::from_http(config),
    );
    let modern = HttpServer::new(Arc::new(server), auth)
        .with_config(config.clone())
        .router()
        .map_err(|e| format!("cannot build the router: {e}"))?;
    Ok(legacy.wrap(modern))
}
