//! The notes server's `note` resource template over stdio, as a client sees it: read a note
//! by its `file:` URI before deleting it, with the same authorization and containment as the
//! tools. Driven through the typed client (`mcp_runtime::client`).

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcp_runtime::client::{Client, ClientError};
use mcp_tests::notes::*;
use mcp_types::{CacheScope, ResourceContents};

async fn assert_not_found(client: &Client, uri: &str) {
    let err = client.read_resource(uri).await.unwrap_err();
    let ClientError::InvalidParams(error) = &err else {
        panic!("{uri}: expected -32602, got {err}");
    };
    assert_eq!(error.data().unwrap()["uri"], uri, "{err}");
}

#[tokio::test]
async fn the_template_is_advertised_and_reads_a_note() {
    let fx = NotesFixture::new().unwrap();
    let client = fx.client("alice", &[]).unwrap();
    let discover = client.discover().await.unwrap();
    assert!(discover.capabilities.resources.is_some(), "{discover:?}");
    let templates = client
        .list_resource_templates(None)
        .await
        .unwrap()
        .resource_templates;
    assert_eq!(templates.len(), 1, "{templates:?}");
    assert_eq!(templates[0].uri_template, "file://{+path}");
    assert_eq!(templates[0].mime_type.as_deref(), Some("text/markdown"));

    let uri = format!("{}/2025/tps-2025.md", fx.uri);
    let read = client.read_resource(&uri).await.unwrap();
    let ResourceContents::Text(text) = &read.contents[0] else {
        panic!("expected text contents: {read:?}");
    };
    assert_eq!(text.uri, uri);
    assert_eq!(text.text, "# TPS Report 2025\n\nQ3 numbers.\n");
    assert_eq!(text.mime_type.as_deref(), Some("text/markdown"));
    assert_eq!(read.cache_scope, CacheScope::Private);
}

#[tokio::test]
async fn reading_outside_the_workspace_or_a_missing_note_is_not_found() {
    let fx = NotesFixture::new().unwrap();
    let secret = fx.root().join("secret.md");
    std::fs::write(&secret, "# Secret\n").unwrap();
    let client = fx.client("alice", &[]).unwrap();
    let outside = mcp_tests::file_uri(&fx.root()).unwrap() + "/secret.md";
    let escape = format!("{}/../secret.md", fx.uri);
    let missing = format!("{}/nope.md", fx.uri);
    let not_md = format!("{}/2025", fx.uri);
    for uri in [
        outside,
        escape,
        missing,
        not_md,
        "file:///etc/passwd".to_owned(),
    ] {
        assert_not_found(&client, &uri).await;
    }
}

#[tokio::test]
async fn a_principal_without_the_workspace_cannot_read_it() {
    let fx = NotesFixture::new().unwrap();
    let other = fx.root().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let other_dir = other.to_string_lossy().into_owned();
    let client = fx
        .client_without_workspace("mallory", &["--workspace", other_dir.as_str()])
        .unwrap();
    let uri = format!("{}/tps-report.md", fx.uri);
    assert_not_found(&client, &uri).await;
}

/// A link leading outside, a link leading inside, a directory and a FIFO named like a note are
/// all "not found", with nothing in the message about why; none of them blocks the server.
#[tokio::test]
async fn links_fifos_and_other_non_notes_read_as_not_found_promptly() {
    use std::os::unix::fs::symlink;
    let fx = NotesFixture::new().unwrap();
    let secret = fx.root().join("secret.md");
    std::fs::write(&secret, "# Secret\n").unwrap();
    symlink(&secret, fx.notes.join("outside-link.md")).unwrap();
    symlink("tps-report.md", fx.notes.join("inside-link.md")).unwrap();
    std::fs::create_dir(fx.notes.join("folder.md")).unwrap();
    let fifo = fx.notes.join("pipe.md");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let client = fx.client("alice", &[]).unwrap();
    // Two FIFO reads in flight at once, then the rest: every answer arrives.
    let pipe = format!("{}/pipe.md", fx.uri);
    tokio::join!(
        assert_not_found(&client, &pipe),
        assert_not_found(&client, &pipe)
    );
    for name in ["outside-link.md", "inside-link.md", "folder.md"] {
        let uri = format!("{}/{name}", fx.uri);
        assert_not_found(&client, &uri).await;
        let err = client.read_resource(&uri).await.unwrap_err();
        let ClientError::InvalidParams(error) = &err else {
            panic!("{uri}: expected -32602, got {err}");
        };
        let message = error.message();
        for leak in ["outside", "link", "refused", "regular"] {
            assert!(
                !message.replace(&uri, "").contains(leak),
                "{name}: {message}"
            );
        }
    }
    let uri = format!("{}/tps-report.md", fx.uri);
    let read = client.read_resource(&uri).await.unwrap();
    assert!(
        matches!(&read.contents[0], ResourceContents::Text(_)),
        "{read:?}"
    );
}
