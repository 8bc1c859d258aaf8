//! URL-mode links (`mcp_runtime::url_elicitation`) through the typed client, written only
//! against the public API: the capability check mints nothing, a later round gets the
//! completion back without asking, the page's data reaches the tool, and a fleet of two
//! instances sharing one link store (SQLite; PostgreSQL when reachable) completes a flow begun
//! on the other instance.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code fails loudly by design

use std::sync::Arc;

use mcp_runtime::client::{Client, ClientError, InProcess};
use mcp_runtime::prelude::*;
use mcp_runtime::replay::MemoryReplayStore;
use mcp_runtime::state::StateKeyring;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
use mcp_runtime::url_elicitation::LinkStore;
use mcp_runtime::url_elicitation::UrlLinks;
use mcp_types::{ClientCapabilities, ElicitationCapability};

#[derive(ElicitForm)]
struct Nickname {
    /// What to call the account
    nickname: String,
}

/// Connects an account on our page, then asks what to call it.
#[tool(requires(url_elicitation, form_elicitation))]
async fn connect(ctx: &mut RequestContext, State(links): State<UrlLinks>) -> ToolResult<String> {
    let Elicitation::Accepted(done) = ctx
        .elicit_url("connect", "Sign in on our page", &links)
        .await?
    else {
        return Ok("not connected".into());
    };
    let account = done.data_as::<String>().unwrap_or_default();
    match ctx.elicit::<Nickname>("nickname", "Call it?", ()).await? {
        Elicitation::Accepted(n) => Ok(format!("{account} as {}", n.nickname)),
        _ => Ok(format!("{account} unnamed")),
    }
}

fn server(links: UrlLinks, keys: StateKeyring, replay: Arc<MemoryReplayStore>) -> Server {
    Server::builder(Implementation::new("links", "0.0.0"))
        .tools(tools![connect])
        .state(links)
        .state_keys(keys)
        .replay_store(replay)
        .build()
        .unwrap()
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn links_in(store: Arc<dyn LinkStore>) -> UrlLinks {
    UrlLinks::with_store("/connect", store)
        .with_base_url("https://mcp.example.com")
        .unwrap()
}

fn token(url: &str) -> &str {
    url.rsplit('/').next().unwrap()
}

#[tokio::test]
async fn a_client_without_url_mode_is_refused_and_nothing_is_minted() {
    let links = UrlLinks::new("/connect")
        .with_base_url("https://mcp.example.com")
        .unwrap();
    let server = server(
        links.clone(),
        StateKeyring::generate().unwrap(),
        Arc::new(MemoryReplayStore::new(64)),
    );
    let form_only = ClientCapabilities::none().with_elicitation(ElicitationCapability::form());
    let client = Client::builder(InProcess::new(server, Principal::new("me")))
        .capabilities(form_only)
        .build();
    let err = client.call("connect", ()).await.unwrap_err();
    assert!(
        matches!(err, ClientError::MissingCapability { .. }),
        "{err}"
    );
    assert_eq!(links.count().await.unwrap(), 0);
}

#[tokio::test]
async fn the_completion_carries_the_pages_data_into_later_rounds() {
    let links = UrlLinks::new("/connect")
        .with_base_url("https://mcp.example.com")
        .unwrap();
    let server = server(
        links.clone(),
        StateKeyring::generate().unwrap(),
        Arc::new(MemoryReplayStore::new(64)),
    );
    let client = Client::in_process(server, Principal::new("me"));
    let mut round = client.call("connect", ()).await.unwrap().pending().unwrap();
    let url = round.url("connect").unwrap().url.clone();
    links
        .complete_with(token(&url), &Principal::new("me"), "acct-42".into())
        .await
        .unwrap();
    // Completed before the client even answered: the accept goes straight on to the form.
    round.accept_url("connect").unwrap();
    let mut round = round.retry().await.unwrap().pending().unwrap();
    assert_eq!(round.keys(), ["nickname"]);
    round
        .accept(
            "nickname",
            &Nickname {
                nickname: "work".into(),
            },
        )
        .unwrap();
    // The URL step is not asked again on the form's round: its completion is read back.
    let done = round.retry().await.unwrap().complete().unwrap();
    assert_eq!(done.text(), "acct-42 as work");
}

/// Two instances (same state keys, same replay store) sharing `store`: the flow starts on
/// one, the page completes on the other, the retry lands on the other too.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
async fn fleet_flow(a: Arc<dyn LinkStore>, b: Arc<dyn LinkStore>) {
    let keys = StateKeyring::generate().unwrap();
    let replay = Arc::new(MemoryReplayStore::new(64));
    let (links_a, links_b) = (links_in(a), links_in(b));
    let one = Client::in_process(
        server(links_a, keys.clone(), Arc::clone(&replay)),
        Principal::new("me"),
    );
    let two = Client::in_process(server(links_b.clone(), keys, replay), Principal::new("me"));

    let mut round = one.call("connect", ()).await.unwrap().pending().unwrap();
    let url = round.url("connect").unwrap().url.clone();
    round.accept_url("connect").unwrap();
    let state = round.request_state().unwrap().to_owned();
    // The early accept, on the second instance: asked again with the same link.
    let accept = mcp_types::InputResponses::new()
        .with("connect", mcp_types::ElicitResult::accept(None))
        .unwrap();
    let mut round = two
        .resume("connect", (), accept, Some(&state))
        .await
        .unwrap()
        .pending()
        .unwrap();
    assert_eq!(round.url("connect").unwrap().url, url);
    // The page, served by the second instance, completes it.
    let open = links_b.open(token(&url)).await.unwrap();
    assert_eq!(open.principal(), &Principal::new("me"));
    links_b
        .complete(token(&url), &Principal::new("me"))
        .await
        .unwrap();
    round.accept_url("connect").unwrap();
    let mut round = round.retry().await.unwrap().pending().unwrap();
    round.decline("nickname").unwrap();
    let done = round.retry().await.unwrap().complete().unwrap();
    assert_eq!(done.text(), " unnamed");
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_sharing_a_sqlite_link_store_finishes_a_flow_on_either_instance() {
    use mcp_runtime::backend::sqlite::SqliteLinkStore;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("links.db");
    let a = SqliteLinkStore::open(&path).await.unwrap();
    let b = SqliteLinkStore::open(&path).await.unwrap();
    fleet_flow(Arc::new(a), Arc::new(b)).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_sharing_a_postgres_link_store_finishes_a_flow_on_either_instance() {
    use mcp_runtime::backend::postgres::PostgresLinkStore;
    use mcp_runtime::backend::postgres::tokio_postgres;

    let url = std::env::var("MCP_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let mut r = [0u8; 4];
    getrandom::fill(&mut r).unwrap();
    let table = format!(
        "links_t_{}_{:08x}",
        std::process::id(),
        u32::from_le_bytes(r)
    );
    let a = match PostgresLinkStore::connect_with_table(&url, &table).await {
        Ok(store) => store,
        Err(e) => {
            // CI sets MCP_REQUIRE_POSTGRES so that a missing server fails instead of skipping.
            assert!(
                std::env::var_os("MCP_REQUIRE_POSTGRES").is_none(),
                "MCP_REQUIRE_POSTGRES is set but PostgreSQL at {url} is unreachable: {e}"
            );
            println!("skipped: no PostgreSQL at {url}: {e}");
            return;
        }
    };
    let b = PostgresLinkStore::connect_with_table(&url, &table)
        .await
        .unwrap();
    fleet_flow(Arc::new(a.clone()), Arc::new(b)).await;

    // The limits hold for the whole fleet, and expired rows are not read.
    let a = a.with_limits(mcp_runtime::url_elicitation::LinkLimits::new(3, 2));
    let now = mcp_runtime::tasks::now_ms();
    // `id` says who and when (seconds from now) it expires.
    let record = |who: &str, secs: u64| mcp_runtime::url_elicitation::LinkRecord {
        id: format!("{who}-{secs}"),
        secret: "s".into(),
        csrf: "c".into(),
        principal: who.into(),
        correlation: mcp_runtime::state::CorrelationId::random().unwrap(),
        key: "k".into(),
        created_ms: now,
        expires_ms: now + secs * 1000,
        stage: mcp_runtime::url_elicitation::LinkStage::Open,
        failures: 0,
        data: None,
        completed_ms: None,
        revision: 0,
    };
    for (who, expires) in [("x", 100), ("x", 200), ("x", 300), ("y", 400), ("z", 500)] {
        a.insert(record(who, expires), now).await.unwrap();
    }
    // The flow's link (600 s) is there too: x's first link gave way to x's third (x's
    // share), then the store's links closest to expiry (x's) to y's and z's (the total).
    assert_eq!(a.count(now).await.unwrap(), 3);
    for gone in ["x-100", "x-200", "x-300"] {
        assert!(a.get(gone, now).await.unwrap().is_none(), "{gone}");
    }
    assert!(a.get("y-400", now).await.unwrap().is_some());
    assert!(a.get("z-500", now).await.unwrap().is_some());
    assert_eq!(a.count(now + 450_000).await.unwrap(), 2);

    if let Ok((client, conn)) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await {
        let task = tokio::spawn(conn);
        let _ = client
            .batch_execute(&format!("DROP TABLE IF EXISTS \"{table}\""))
            .await;
        drop(client);
        let _ = task.await;
    }
}
