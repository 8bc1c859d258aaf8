//! `/healthz` and `/readyz` on the HTTP transport: the server's own checks (replay store,
//! state keys) and the application's, with a 503 naming what failed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod transport_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;
use mcp_runtime::prelude::*;
use mcp_runtime::replay::{Claim, ClaimOutcome, MemoryReplayStore, ReplayError, ReplayStore};
use mcp_runtime::service::McpService;
use mcp_runtime::transport::{AllowAnonymous, HttpConfig, HttpServer};
use serde_json::Value;
use transport_support::exchange;

/// A memory store whose backend can be "down": `ping` fails while `down` is set.
#[derive(Debug)]
struct FlakyStore {
    inner: MemoryReplayStore,
    down: Arc<AtomicBool>,
}

impl ReplayStore for FlakyStore {
    fn claim<'a>(&'a self, claim: Claim<'a>) -> BoxFuture<'a, Result<ClaimOutcome, ReplayError>> {
        self.inner.claim(claim)
    }

    fn prune_expired(&self) -> BoxFuture<'_, Result<u64, ReplayError>> {
        self.inner.prune_expired()
    }

    fn ping(&self) -> BoxFuture<'_, Result<(), ReplayError>> {
        let down = self.down.load(Ordering::SeqCst);
        Box::pin(async move {
            if down {
                Err(ReplayError::backend(
                    "flaky",
                    "pinging",
                    "connection refused (secret-host:5432)",
                ))
            } else {
                Ok(())
            }
        })
    }
}

async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, Value) {
    let response = exchange(addr, "GET", path, &[], b"").await;
    let body = serde_json::from_slice(&response.body).unwrap();
    (response.status, body)
}

#[tokio::test]
async fn readiness_names_the_failed_checks() {
    let store_down = Arc::new(AtomicBool::new(false));
    let app_down = Arc::new(AtomicBool::new(false));
    let server = Server::builder(Implementation::new("health", "0"))
        .replay_store(Arc::new(FlakyStore {
            inner: MemoryReplayStore::new(16),
            down: Arc::clone(&store_down),
        }))
        .build()
        .unwrap();
    let app = Arc::clone(&app_down);
    let bound = HttpServer::new(
        Arc::new(server) as Arc<dyn McpService>,
        Arc::new(AllowAnonymous(Principal::new("dev"))),
    )
    .with_config(HttpConfig::default().with_bind("127.0.0.1:0".parse().unwrap()))
    .with_readiness_check("database", move || {
        let down = app.load(Ordering::SeqCst);
        Box::pin(async move {
            if down {
                Err("no route to database".to_owned())
            } else {
                Ok(())
            }
        })
    })
    .bind()
    .await
    .unwrap();
    let addr = bound.local_addr().unwrap();
    tokio::spawn(bound.serve_with_shutdown(std::future::pending()));

    let (status, body) = get(addr, "/healthz").await;
    assert_eq!((status, &body["status"]), (200, &Value::from("ok")));
    let (status, body) = get(addr, "/readyz").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "ready");
    for check in ["replay_store", "state_keys", "database"] {
        assert_eq!(body["checks"][check], "ok", "{body}");
    }

    store_down.store(true, Ordering::SeqCst);
    let (status, body) = get(addr, "/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "not ready");
    assert_eq!(body["failed"], serde_json::json!(["replay_store"]));
    assert_eq!(body["checks"]["database"], "ok");
    // Why it failed is for the log, not for whoever probes.
    assert!(!body.to_string().contains("secret-host"), "{body}");

    app_down.store(true, Ordering::SeqCst);
    let (status, body) = get(addr, "/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(
        body["failed"],
        serde_json::json!(["replay_store", "database"])
    );

    // Liveness does not depend on readiness.
    let (status, _) = get(addr, "/healthz").await;
    assert_eq!(status, 200);
}
