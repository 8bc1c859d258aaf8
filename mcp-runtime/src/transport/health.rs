//! Health endpoints of the HTTP transport, beside the MCP endpoint and outside its
//! authentication (probes carry no token; they still pass the edge's `Host` check):
//!
//! - `GET /healthz`: the process is alive and serving HTTP; always `200 {"status":"ok"}`.
//! - `GET /readyz`: every readiness check passes: the service's own
//!   ([`McpService::readiness`]: a [`Server`](crate::server::Server) checks its replay store and state
//!   keys) and the application's ([`HttpServer::with_readiness_check`]), each bounded by
//!   [`READINESS_TIMEOUT`]. `200 {"status":"ready","checks":{"replay_store":"ok",...}}` or
//!   `503 {"status":"not ready","failed":["replay_store"],"checks":{...}}`. Why a check failed
//!   is logged (target `mcp_runtime::transport::http`), never shown to the prober.
//!
//! [`HttpServer::with_readiness_check`]: super::HttpServer::with_readiness_check

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::future::BoxFuture;
use http::StatusCode;
use serde_json::{Map, Value, json};

use super::response::LOG_TARGET;
use crate::service::{McpService, ReadinessCheck};

/// How long one readiness check may take before it counts as failed.
pub const READINESS_TIMEOUT: Duration = Duration::from_secs(2);

/// The path of the liveness probe, served beside the MCP endpoint and outside its
/// authentication (it still passes the edge's `Host` check): `GET /healthz` answers
/// `200 {"status":"ok"}` while the process serves HTTP.
pub const HEALTHZ_PATH: &str = "/healthz";
/// The path of the readiness probe, served like [`HEALTHZ_PATH`]: `GET /readyz` runs every
/// readiness check, the service's own ([`McpService::readiness`]: a
/// [`Server`](crate::server::Server) checks its replay store and state keys) and the application's
/// ([`HttpServer::with_readiness_check`](super::HttpServer::with_readiness_check)), each
/// bounded by [`READINESS_TIMEOUT`], and answers
/// `200 {"status":"ready","checks":{"replay_store":"ok",...}}` or
/// `503 {"status":"not ready","failed":["replay_store"],"checks":{...}}`. Why a check failed
/// is logged, never shown to the prober.
pub const READYZ_PATH: &str = "/readyz";

/// An application's readiness check: its name and what it runs.
pub(super) type AppCheck = (
    String,
    Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>,
);

/// `/healthz` and `/readyz` for `service` plus the application's `checks`.
pub(super) fn router(service: Arc<dyn McpService>, checks: Arc<[AppCheck]>) -> Router {
    Router::new()
        .route(
            HEALTHZ_PATH,
            get(|| async { json_response(StatusCode::OK, &json!({"status": "ok"})) }),
        )
        .route(
            READYZ_PATH,
            get(move || {
                let (service, checks) = (Arc::clone(&service), Arc::clone(&checks));
                async move { readyz(service.as_ref(), &checks).await }
            }),
        )
}

async fn readyz(service: &dyn McpService, checks: &[AppCheck]) -> Response {
    let own = match tokio::time::timeout(READINESS_TIMEOUT, service.readiness()).await {
        Ok(results) => results,
        Err(_) => vec![ReadinessCheck::new(
            "service",
            Err(format!("no answer within {READINESS_TIMEOUT:?}")),
        )],
    };
    let app = futures::future::join_all(checks.iter().map(|(name, check)| async move {
        let result = match tokio::time::timeout(READINESS_TIMEOUT, check()).await {
            Ok(result) => result,
            Err(_) => Err(format!("no answer within {READINESS_TIMEOUT:?}")),
        };
        ReadinessCheck::new(name.clone(), result)
    }))
    .await;
    let mut summary = Map::new();
    let mut failed = Vec::new();
    for check in own.into_iter().chain(app) {
        let state = match &check.error {
            None => "ok",
            Some(error) => {
                tracing::warn!(target: LOG_TARGET, check = %check.name, error = %error, "readiness check failed");
                failed.push(Value::String(check.name.clone()));
                "failed"
            }
        };
        summary.insert(check.name, Value::from(state));
    }
    if failed.is_empty() {
        json_response(
            StatusCode::OK,
            &json!({"status": "ready", "checks": summary}),
        )
    } else {
        json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"status": "not ready", "failed": failed, "checks": summary}),
        )
    }
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}
