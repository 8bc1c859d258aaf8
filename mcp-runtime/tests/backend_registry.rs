//! A store backend of a third party, registered by URL scheme, opened from store URLs like
//! the built-in ones, and used by a server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use mcp_runtime::backend::{self, Backend, RegisterError};
use mcp_runtime::rate_limit::open_rate_limit_store;
use mcp_runtime::replay::{MemoryReplayStore, ReplayError, ReplayStore, open_store};
use mcp_runtime::tasks::{MemoryTaskStore, TaskStore, TaskStoreError, open_task_store};
use mcp_runtime::url_elicitation::open_link_store;

/// Opens in-memory stores, counting what it was asked to open.
#[derive(Debug, Default)]
struct Acme {
    opened: AtomicUsize,
}

impl Backend for Acme {
    fn name(&self) -> &'static str {
        "acme"
    }
    fn schemes(&self) -> &'static [&'static str] {
        &["acme", "acme+tls"]
    }
    fn replay_store<'a>(
        &'a self,
        spec: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn ReplayStore>, ReplayError>> {
        Box::pin(async move {
            assert!(
                spec.starts_with("acme"),
                "the whole spec is handed on: {spec}"
            );
            self.opened.fetch_add(1, Ordering::SeqCst);
            Ok(Arc::new(MemoryReplayStore::new(10)) as Arc<dyn ReplayStore>)
        })
    }
    fn task_store<'a>(
        &'a self,
        _spec: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn TaskStore>, TaskStoreError>> {
        Box::pin(async move {
            self.opened.fetch_add(1, Ordering::SeqCst);
            Ok(Arc::new(MemoryTaskStore::new(5)) as Arc<dyn TaskStore>)
        })
    }
}

/// One process-wide registry: the tests share one registration.
fn acme() -> &'static Arc<Acme> {
    static ACME: std::sync::OnceLock<Arc<Acme>> = std::sync::OnceLock::new();
    ACME.get_or_init(|| {
        let acme = Arc::new(Acme::default());
        backend::register(Arc::clone(&acme) as Arc<dyn Backend>).unwrap();
        acme
    })
}

#[tokio::test]
async fn a_registered_scheme_opens_its_backends_stores() {
    let acme = acme();
    let before = acme.opened.load(Ordering::SeqCst);
    let claims = open_store("acme://claims.example/db").await.unwrap();
    let tasks = open_task_store(" ACME+tls://claims.example/db ")
        .await
        .unwrap();
    assert_eq!(acme.opened.load(Ordering::SeqCst), before + 2);
    assert!(backend::schemes().contains(&"acme+tls"));
    // What it does not provide is an error saying so, not a fallback.
    let Err(links) = open_link_store("acme://claims.example/db").await else {
        panic!("acme keeps no links")
    };
    assert!(
        links.to_string().contains("keeps no URL-mode links"),
        "{links}"
    );
    let Err(counters) = open_rate_limit_store("acme://claims.example/db").await else {
        panic!("acme keeps no rate-limit counters")
    };
    assert!(
        counters
            .to_string()
            .contains("keeps no rate-limit counters"),
        "{counters}"
    );
    // And the stores work in a server.
    let server = mcp_runtime::server::Server::builder(mcp_types::Implementation::new("t", "1.0"))
        .replay_store(claims)
        .task_store(tasks)
        .build();
    assert!(server.is_ok());
}

#[tokio::test]
async fn a_taken_or_malformed_scheme_is_refused_loudly() {
    acme();
    #[derive(Debug)]
    struct Rogue(&'static [&'static str]);
    impl Backend for Rogue {
        fn name(&self) -> &'static str {
            "rogue"
        }
        fn schemes(&self) -> &'static [&'static str] {
            self.0
        }
        fn replay_store<'a>(
            &'a self,
            _spec: &'a str,
        ) -> BoxFuture<'a, Result<Arc<dyn ReplayStore>, ReplayError>> {
            unreachable!("never registered")
        }
    }
    for (schemes, taken_by) in [
        (&["rogue1", "postgres"][..], "postgres"),
        (&["acme"], "acme"),
    ] {
        match backend::register(Arc::new(Rogue(schemes))) {
            Err(RegisterError::SchemeTaken { taken_by: by, .. }) => assert_eq!(by, taken_by),
            other => panic!("{schemes:?}: {other:?}"),
        }
    }
    // All or nothing: the free scheme of a refused backend was not registered.
    assert!(!backend::schemes().contains(&"rogue1"));
    assert!(matches!(
        backend::register(Arc::new(Rogue(&["Bad Scheme"]))),
        Err(RegisterError::InvalidScheme(_))
    ));
    assert!(matches!(
        backend::register(Arc::new(Rogue(&[]))),
        Err(RegisterError::NoScheme("rogue"))
    ));
    // An unknown scheme says what to write, password hidden.
    let err = open_store("nosuch://user:hunter2@host/db")
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("backend::register"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
}

#[tokio::test]
async fn the_built_in_backends_open_every_store_they_back_from_one_url() {
    // Memory is always compiled in; each kind of store comes from the same URL.
    assert!(open_store("memory:8").await.is_ok());
    assert!(open_task_store("memory:8").await.is_ok());
    assert!(open_link_store("memory:8").await.is_ok());
    assert!(open_rate_limit_store("memory:8").await.is_ok());
    // An unknown scheme names the schemes that exist, for every kind of store.
    let err = open_rate_limit_store("nosuch://x")
        .await
        .err()
        .map(|e| e.to_string());
    assert!(
        err.as_deref().is_some_and(|e| e.contains("memory")),
        "{err:?}"
    );
}
