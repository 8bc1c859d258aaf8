//! Unit tests of the link bookkeeping: one-time completion, principal binding, failure
//! locking, constant-time secret checks, expiry, renewal, the store's caps, public URLs.

use std::cell::Cell;

use super::*;

thread_local! {
    /// How many times [`ct_eq`] ran on this thread.
    pub(super) static CT_COMPARISONS: Cell<usize> = const { Cell::new(0) };
}

fn comparisons() -> usize {
    CT_COMPARISONS.with(Cell::get)
}

fn corr() -> CorrelationId {
    CorrelationId::random().unwrap()
}

fn alice() -> Principal {
    Principal::new("alice")
}

/// Links on `http://127.0.0.1:9/connect` in `store`.
fn links_in(store: Arc<MemoryLinkStore>) -> UrlLinks {
    UrlLinks::with_store("/connect/", store)
        .with_base_url("http://127.0.0.1:9")
        .unwrap()
}

fn links() -> UrlLinks {
    links_in(Arc::new(MemoryLinkStore::new()))
}

/// Mints the link of a fresh flow of `who`; returns the record, its token and its URL.
async fn mint(links: &UrlLinks, who: &Principal) -> (LinkRecord, String, String) {
    let link = links
        .link_for_pass(who, corr(), "connect", true)
        .await
        .unwrap();
    let url = links.url_of(&link).unwrap();
    let token = url.rsplit('/').next().unwrap().to_owned();
    (link, token, url)
}

fn tool_message(e: &HandlerError) -> String {
    format!("{e:?}")
}

#[tokio::test]
async fn a_link_is_256_random_bits_under_the_base_and_path() {
    let links = links();
    let (link, token, url) = mint(&links, &alice()).await;
    assert!(url.starts_with("http://127.0.0.1:9/connect/"), "{url}");
    assert_eq!(token.len(), 44);
    assert_eq!(
        split_token(&token),
        Some((link.id.clone(), link.secret.clone()))
    );
    // The correlation id (readable in the state) is never part of the URL.
    assert!(!url.contains(&link.correlation.to_string()), "{url}");
    let (other, _, _) = mint(&links, &alice()).await;
    assert_ne!(other.id, link.id);
    assert_ne!(other.secret, link.secret);
    assert_ne!(other.csrf, link.csrf);
    assert_eq!(links.route(), "/connect/{token}");
    assert_eq!(links.page_path(&token), format!("/connect/{token}"));
    // Debug output never shows the secret halves.
    let debug = format!("{link:?}");
    assert!(
        !debug.contains(&link.secret) && !debug.contains(&link.csrf),
        "{debug}"
    );
}

#[tokio::test]
async fn a_link_completes_once_and_only_for_its_principal() {
    let links = links();
    let (link, token, _) = mint(&links, &alice()).await;
    let open = links.open(&token).await.unwrap();
    assert_eq!(open.principal(), &alice());
    assert_eq!(open.key(), "connect");
    assert!(open.csrf_matches(&link.csrf));
    assert!(!open.csrf_matches(&format!("{}x", link.csrf)));

    // Another principal is refused, and the attempt counted; nothing is completed.
    let err = links
        .complete(&token, &Principal::new("bob"))
        .await
        .unwrap_err();
    assert!(matches!(err, LinkRefusal::OtherPrincipal), "{err}");
    assert_eq!(
        links.status(&alice(), link.correlation).await.unwrap(),
        LinkStatus::Open
    );

    let done = links
        .complete_with(&token, &alice(), serde_json::json!({"account": 7}))
        .await
        .unwrap();
    assert_eq!(done.data_as::<serde_json::Value>().unwrap()["account"], 7);
    assert_eq!(
        links.status(&alice(), link.correlation).await.unwrap(),
        LinkStatus::Completed
    );
    // Single use: the page and a second completion are refused.
    assert!(matches!(
        links.complete(&token, &alice()).await,
        Err(LinkRefusal::Unknown)
    ));
    assert!(matches!(
        links.open(&token).await,
        Err(LinkRefusal::Unknown)
    ));
    assert!(matches!(
        links.record_failure(&token).await,
        Err(LinkRefusal::Unknown)
    ));
}

#[tokio::test]
async fn failed_attempts_lock_the_link() {
    let links = links().with_max_failures(3);
    let (link, token, _) = mint(&links, &alice()).await;
    links.record_failure(&token).await.unwrap();
    let bob = Principal::new("bob");
    assert!(matches!(
        links.complete(&token, &bob).await,
        Err(LinkRefusal::OtherPrincipal)
    ));
    // The third failure locks it: even the right principal cannot complete it now.
    assert!(matches!(
        links.complete(&token, &bob).await,
        Err(LinkRefusal::OtherPrincipal)
    ));
    assert_eq!(
        links.status(&alice(), link.correlation).await.unwrap(),
        LinkStatus::Locked
    );
    assert!(matches!(
        links.complete(&token, &alice()).await,
        Err(LinkRefusal::Unknown)
    ));
}

#[tokio::test]
async fn secrets_are_compared_in_constant_time_and_a_wrong_one_counts() {
    let store = Arc::new(MemoryLinkStore::new());
    let links = links_in(Arc::clone(&store));
    let (link, token, _) = mint(&links, &alice()).await;

    let before = comparisons();
    links.open(&token).await.unwrap();
    assert!(
        comparisons() > before,
        "the secret check must go through ct_eq"
    );

    // The right id with a wrong secret: refused like an unknown link, compared in constant
    // time, and counted against the link.
    let mut wrong = token.clone();
    let flipped = if &wrong[30..31] == "A" { "B" } else { "A" };
    wrong.replace_range(30..31, flipped);
    let before = comparisons();
    assert!(matches!(
        links.open(&wrong).await,
        Err(LinkRefusal::Unknown)
    ));
    assert!(matches!(
        links.complete(&wrong, &alice()).await,
        Err(LinkRefusal::Unknown)
    ));
    assert!(comparisons() >= before + 2);
    let stored = store.get(&link.id, now_ms()).await.unwrap().unwrap();
    assert_eq!(stored.failures, 2);
    assert_eq!(stored.stage, LinkStage::Open);

    // Not tokens at all: refused before any lookup.
    let (longer, bangs) = (format!("{token}x"), "!".repeat(44));
    for bad in ["", "short", &token[..43], longer.as_str(), bangs.as_str()] {
        assert!(
            matches!(links.open(bad).await, Err(LinkRefusal::Unknown)),
            "{bad}"
        );
    }
    assert_eq!(
        store
            .get(&link.id, now_ms())
            .await
            .unwrap()
            .unwrap()
            .failures,
        2
    );
    // The right token still works.
    links.complete(&token, &alice()).await.unwrap();
}

#[tokio::test]
async fn links_expire_and_an_expired_flow_is_not_silently_replaced() {
    let store = Arc::new(MemoryLinkStore::new());
    let links = links_in(Arc::clone(&store)).with_ttl(Duration::from_secs(60));
    let (link, token, url) = mint(&links, &alice()).await;
    let ttl_ms = link.expires_ms - link.created_ms;
    assert_eq!(ttl_ms, 60_000);

    // Each pass renews the link for the ttl: same link, same URL.
    let renewed = links
        .link_for_pass(&alice(), link.correlation, "connect", false)
        .await
        .unwrap();
    assert_eq!(renewed.id, link.id);
    assert_eq!(links.url_of(&renewed).unwrap(), url);
    assert!(renewed.expires_ms >= link.expires_ms);

    // Past its expiry it is gone for the page, the status and the flow.
    let mut past = renewed.next_revision();
    past.expires_ms = now_ms().saturating_sub(1);
    assert!(store.update(past).await.unwrap());
    assert!(matches!(
        links.open(&token).await,
        Err(LinkRefusal::Unknown)
    ));
    assert!(matches!(
        links.complete(&token, &alice()).await,
        Err(LinkRefusal::Unknown)
    ));
    assert_eq!(
        links.status(&alice(), link.correlation).await.unwrap(),
        LinkStatus::Missing
    );
    let err = links
        .link_for_pass(&alice(), link.correlation, "connect", false)
        .await
        .unwrap_err();
    assert!(tool_message(&err).contains("expired"), "{err:?}");
    assert_eq!(links.count().await.unwrap(), 0);
    // The next insert purges it.
    mint(&links, &alice()).await;
    assert_eq!(store.len(), 1);
}

fn record(principal: &str, created_ms: u64, expires_ms: u64) -> LinkRecord {
    let (id, secret) = random_pair().unwrap();
    LinkRecord {
        id,
        secret,
        csrf: String::new(),
        principal: principal.to_owned(),
        correlation: corr(),
        key: "k".into(),
        created_ms,
        expires_ms,
        stage: LinkStage::Open,
        failures: 0,
        data: None,
        completed_ms: None,
        revision: 0,
    }
}

#[tokio::test]
async fn the_memory_store_is_capped_per_principal_and_in_all() {
    let store = MemoryLinkStore::with_limits(LinkLimits::new(4, 2));
    let now = 1_000;
    let a1 = store
        .insert(record("alice", now, now + 100), now)
        .await
        .unwrap();
    let a2 = store
        .insert(record("alice", now, now + 200), now)
        .await
        .unwrap();
    // A third for alice: her link closest to expiry goes.
    let a3 = store
        .insert(record("alice", now, now + 300), now)
        .await
        .unwrap();
    assert!(store.get(&a1.id, now).await.unwrap().is_none());
    assert!(store.get(&a2.id, now).await.unwrap().is_some());
    assert!(
        store
            .find_flow("alice", &a1.correlation, now)
            .await
            .unwrap()
            .is_none()
    );
    let b = store
        .insert(record("bob", now, now + 400), now)
        .await
        .unwrap();
    store
        .insert(record("carol", now, now + 500), now)
        .await
        .unwrap();
    assert_eq!(store.count(now).await.unwrap(), 4);
    // The store is full: the link closest to expiry (alice's a2) goes, whoever it is.
    store
        .insert(record("dave", now, now + 600), now)
        .await
        .unwrap();
    assert_eq!(store.count(now).await.unwrap(), 4);
    assert!(store.get(&a2.id, now).await.unwrap().is_none());
    assert!(store.get(&a3.id, now).await.unwrap().is_some());
    assert!(store.get(&b.id, now).await.unwrap().is_some());
    // Expired links are not read, and purged on the next insert.
    assert_eq!(store.count(now + 450).await.unwrap(), 2);
    store
        .insert(record("erin", now, now + 9_000), now + 450)
        .await
        .unwrap();
    assert_eq!(store.len(), 3);
}

#[tokio::test]
async fn one_link_per_flow_and_updates_are_compare_and_set() {
    let store = MemoryLinkStore::new();
    let first = record("alice", 1, 1_000);
    let mut second = record("alice", 1, 1_000);
    second.correlation = first.correlation;
    store.insert(first.clone(), 1).await.unwrap();
    // The flow has its link: the second insert returns it unchanged.
    assert_eq!(store.insert(second, 1).await.unwrap().id, first.id);
    assert_eq!(store.count(1).await.unwrap(), 1);
    let next = first.clone().next_revision();
    assert!(store.update(next.clone()).await.unwrap());
    // A writer that read revision 0 loses.
    assert!(!store.update(first.next_revision()).await.unwrap());
    assert!(!store.update(next.clone()).await.unwrap());
    assert!(store.update(next.next_revision()).await.unwrap());
}

#[tokio::test]
async fn no_link_without_a_usable_public_address() {
    let store = Arc::new(MemoryLinkStore::new());
    let links = UrlLinks::with_store("connect", Arc::clone(&store) as Arc<dyn LinkStore>)
        .with_setup_hint("restart it with --public-url https://HOST");
    let err = links
        .link_for_pass(&alice(), corr(), "connect", true)
        .await
        .unwrap_err();
    assert!(tool_message(&err).contains("--public-url"), "{err:?}");
    for base in ["http://0.0.0.0:8080", "http://[::]:8080/"] {
        links.set_base_url(base).unwrap();
        let err = links
            .link_for_pass(&alice(), corr(), "connect", true)
            .await
            .unwrap_err();
        let message = tool_message(&err);
        assert!(
            message.contains("all addresses") && message.contains("--public-url"),
            "{message}"
        );
    }
    assert!(store.is_empty());
    links
        .set_base_url("https://notes.example.com:443/base/")
        .unwrap();
    let (_, _, url) = mint(&links, &alice()).await;
    assert!(
        url.starts_with("https://notes.example.com/base/connect/"),
        "{url}"
    );
}

#[test]
fn public_urls_are_checked() {
    let url = PublicUrl::parse("HTTPS://Notes.example.com/").unwrap();
    assert_eq!(url.as_str(), "https://notes.example.com");
    assert_eq!(url.origin(), "https://notes.example.com");
    assert!(url.is_secure() && !url.is_unspecified());
    let url = PublicUrl::parse("http://h:8080/x/").unwrap();
    assert_eq!(url.as_str(), "http://h:8080/x");
    assert_eq!(url.path(), "/x");
    assert_eq!(url.origin(), "http://h:8080");
    assert!(
        PublicUrl::parse("http://0.0.0.0:1")
            .unwrap()
            .is_unspecified()
    );
    for bad in [
        "ftp://h",
        "notes.example.com",
        "https://u:p@h",
        "https://h/?q=1",
        "https://h/#f",
        "",
    ] {
        let err = PublicUrl::parse(bad).unwrap_err();
        assert!(err.to_string().contains("http(s)://HOST"), "{bad}: {err}");
    }
}

#[tokio::test]
async fn completion_data_is_capped() {
    let links = links();
    let (_, token, _) = mint(&links, &alice()).await;
    let big = serde_json::Value::String("x".repeat(MAX_COMPLETION_DATA));
    assert!(matches!(
        links.complete_with(&token, &alice(), big).await,
        Err(LinkRefusal::TooLarge { .. })
    ));
    // Nothing was spent.
    links.complete(&token, &alice()).await.unwrap();
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn the_sqlite_store_is_shared_capped_and_compare_and_set() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("links.db");
    let a = crate::backend::sqlite::SqliteLinkStore::open(&path)
        .await
        .unwrap()
        .with_limits(LinkLimits::new(3, 2));
    let b = crate::backend::sqlite::SqliteLinkStore::open(&path)
        .await
        .unwrap();
    // Minted through one process's links, completed through another's.
    let mint_side = links_in_dyn(Arc::new(a.clone()));
    let page_side = links_in_dyn(Arc::new(b));
    let (link, token, _) = mint(&mint_side, &alice()).await;
    page_side.complete(&token, &alice()).await.unwrap();
    assert_eq!(
        mint_side.status(&alice(), link.correlation).await.unwrap(),
        LinkStatus::Completed
    );
    assert!(matches!(
        page_side.complete(&token, &alice()).await,
        Err(LinkRefusal::Unknown)
    ));
    // Caps, as the memory store.
    let now = now_ms();
    let a2 = a
        .insert(record("alice", now, now + 100_000), now)
        .await
        .unwrap();
    // Alice's third: her link closest to expiry (the completed one, renewed for 600 s, expires
    // after a2) stays; a2 goes.
    a.insert(record("alice", now, now + 900_000), now)
        .await
        .unwrap();
    assert!(a.get(&a2.id, now).await.unwrap().is_none());
    a.insert(record("bob", now, now + 700_000), now)
        .await
        .unwrap();
    assert_eq!(a.count(now).await.unwrap(), 3);
    a.insert(record("carol", now, now + 800_000), now)
        .await
        .unwrap();
    assert_eq!(a.count(now).await.unwrap(), 3);
    assert!(a.get(&link.id, now).await.unwrap().is_none());
    // Expiry hides rows.
    assert_eq!(a.count(now + 10_000_000).await.unwrap(), 0);
}

#[cfg(feature = "sqlite")]
fn links_in_dyn(store: Arc<dyn LinkStore>) -> UrlLinks {
    UrlLinks::with_store("/connect", store)
        .with_base_url("http://127.0.0.1:9")
        .unwrap()
}
