//! `notes_connect_export` through the typed client, in process: the runtime's URL-mode helper
//! (`UrlLinks`) mints the link, an early `accept` is asked again, the page's completion (here
//! `UrlLinks::complete`, what the connect page calls once it has authenticated the user) lets
//! the retry proceed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::Principal;
use mcp_runtime::client::{Client, ClientError};
use mcp_runtime::replay::MemoryReplayStore;
use mcp_runtime::scope::ScopePolicy;
use mcp_runtime::state::StateKeyring;
use mcp_runtime::url_elicitation::LinkRefusal;
use notes_example::connect::{CONNECT_KEY, ExportConnect};
use notes_example::notes::Notes;
use notes_example::tools::build_server_with;

/// The notes server in process, its connect links on `https://notes.example.com`.
fn client_of(who: &str) -> (Client, ExportConnect) {
    let connect = ExportConnect::default();
    connect.set_base_url("https://notes.example.com").unwrap();
    let server = build_server_with(
        Notes::new(ScopePolicy::new()),
        StateKeyring::generate().unwrap(),
        Arc::new(MemoryReplayStore::new(1024)),
        Duration::from_secs(600),
        connect.clone(),
    )
    .unwrap();
    (Client::in_process(server, Principal::new(who)), connect)
}

/// The link's token: the last path segment of its URL.
fn token(url: &str) -> &str {
    url.rsplit('/').next().unwrap()
}

#[tokio::test]
async fn accept_before_the_page_is_asked_again_then_the_completed_link_lets_it_proceed() {
    let (client, connect) = client_of("alice");
    let alice = Principal::new("alice");

    // First call: a URL-mode input request with a one-time link on the public base URL.
    let mut round = client
        .call("notes_connect_export", ())
        .await
        .unwrap()
        .pending()
        .unwrap();
    let url = round.url(CONNECT_KEY).unwrap().url.clone();
    assert!(
        url.starts_with("https://notes.example.com/connect/"),
        "{url}"
    );

    // The client accepts before the page was completed: asked again, same link, saying why.
    round.accept_url(CONNECT_KEY).unwrap();
    let mut round = round.retry().await.unwrap().pending().unwrap();
    let again = round.url(CONNECT_KEY).unwrap();
    assert_eq!(again.url, url);
    assert!(again.message.contains("not completed"), "{}", again.message);

    // The page completes the link for the principal it authenticated; another is refused.
    let bob = Principal::new("bob");
    assert!(matches!(
        connect.links().complete(token(&url), &bob).await,
        Err(LinkRefusal::OtherPrincipal)
    ));
    connect.links().complete(token(&url), &alice).await.unwrap();
    assert!(matches!(
        connect.links().complete(token(&url), &alice).await,
        Err(LinkRefusal::Unknown)
    ));

    // The retry proceeds.
    round.accept_url(CONNECT_KEY).unwrap();
    let state = round.request_state().unwrap().to_owned();
    let done = round.retry().await.unwrap().complete().unwrap();
    assert_eq!(done.text(), "The export is connected.");
    assert!(done.is_error != Some(true));

    // That acceptance was one-time: the same state with another answer is refused.
    let decline = mcp_types::InputResponses::new()
        .with(CONNECT_KEY, mcp_types::ElicitResult::decline())
        .unwrap();
    let err = client
        .resume("notes_connect_export", (), decline, Some(&state))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::InvalidParams(_)), "{err}");
}

#[tokio::test]
async fn a_decline_ends_the_flow_and_spends_the_link() {
    let (client, connect) = client_of("alice");
    let mut round = client
        .call("notes_connect_export", ())
        .await
        .unwrap()
        .pending()
        .unwrap();
    let url = round.url(CONNECT_KEY).unwrap().url.clone();
    round.decline(CONNECT_KEY).unwrap();
    let done = round.retry().await.unwrap().complete().unwrap();
    assert_eq!(done.text(), "You declined; the export was not connected.");
    // The page can no longer be completed.
    assert!(matches!(
        connect
            .links()
            .complete(token(&url), &Principal::new("alice"))
            .await,
        Err(LinkRefusal::Unknown)
    ));
}

#[tokio::test]
async fn each_call_gets_its_own_link_and_its_own_completion() {
    let (client, connect) = client_of("alice");
    let first = client.call("notes_connect_export", ()).await.unwrap();
    let second = client.call("notes_connect_export", ()).await.unwrap();
    let mut first = first.pending().unwrap();
    let mut second = second.pending().unwrap();
    let url1 = first.url(CONNECT_KEY).unwrap().url.clone();
    let url2 = second.url(CONNECT_KEY).unwrap().url.clone();
    assert_ne!(url1, url2);
    // Completing the second flow's link does not complete the first.
    connect
        .links()
        .complete(token(&url2), &Principal::new("alice"))
        .await
        .unwrap();
    first.accept_url(CONNECT_KEY).unwrap();
    assert!(first.retry().await.unwrap().pending().is_ok());
    second.accept_url(CONNECT_KEY).unwrap();
    let done = second.retry().await.unwrap().complete().unwrap();
    assert_eq!(done.text(), "The export is connected.");
}
