//! The notes server's `note` resource template over stdio, as a client sees it: read a note
//! by its `file:` URI before deleting it, with the same authorization and containment as the
//! tools.

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcp_tests::meta;
use mcp_tests::notes::*;
use serde_json::{Value, json};

fn read(s: &mut mcp_tests::StdioServer, uri: &str) -> Value {
    s.request(
        "resources/read",
        json!({"_meta": meta(json!({})), "uri": uri}),
    )
    .unwrap()
}

fn assert_not_found(r: &Value, uri: &str) {
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(r["error"]["data"]["uri"], uri, "{r}");
}

#[test]
fn the_template_is_advertised_and_reads_a_note() {
    let fx = NotesFixture::new().unwrap();
    let mut s = fx.spawn("alice", &[]).unwrap();
    let d = s
        .request("server/discover", json!({"_meta": meta(json!({}))}))
        .unwrap();
    assert!(d["result"]["capabilities"]["resources"].is_object(), "{d}");
    let t = s
        .request(
            "resources/templates/list",
            json!({"_meta": meta(json!({}))}),
        )
        .unwrap();
    let templates = t["result"]["resourceTemplates"].as_array().unwrap();
    assert_eq!(templates.len(), 1, "{t}");
    assert_eq!(templates[0]["uriTemplate"], "file://{+path}");
    assert_eq!(templates[0]["mimeType"], "text/markdown");

    let uri = format!("{}/2025/tps-2025.md", fx.uri);
    let r = read(&mut s, &uri);
    let contents = &r["result"]["contents"][0];
    assert_eq!(contents["uri"], uri.as_str(), "{r}");
    assert_eq!(contents["text"], "# TPS Report 2025\n\nQ3 numbers.\n");
    assert_eq!(contents["mimeType"], "text/markdown");
    assert_eq!(r["result"]["cacheScope"], "private");
}

#[test]
fn reading_outside_the_workspace_or_a_missing_note_is_not_found() {
    let fx = NotesFixture::new().unwrap();
    let secret = fx.root().join("secret.md");
    std::fs::write(&secret, "# Secret\n").unwrap();
    let mut s = fx.spawn("alice", &[]).unwrap();
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
        assert_not_found(&read(&mut s, &uri), &uri);
    }
}

#[test]
fn a_principal_without_the_workspace_cannot_read_it() {
    let fx = NotesFixture::new().unwrap();
    let other = fx.root().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let other_dir = other.to_string_lossy().into_owned();
    let mut s = fx
        .spawn_without_workspace("mallory", &["--workspace", other_dir.as_str()])
        .unwrap();
    let uri = format!("{}/tps-report.md", fx.uri);
    assert_not_found(&read(&mut s, &uri), &uri);
}

/// A link leading outside, a link leading inside, a directory and a FIFO named like a note are
/// all "not found", with nothing in the message about why; none of them blocks the server.
#[test]
fn links_fifos_and_other_non_notes_read_as_not_found_promptly() {
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
    let mut s = fx.spawn("alice", &[]).unwrap();
    // Two FIFO reads in flight at once, then the rest: every answer arrives.
    let pipe = format!("{}/pipe.md", fx.uri);
    let params = json!({"_meta": meta(json!({})), "uri": pipe});
    let first = s.send_request("resources/read", params.clone()).unwrap();
    let second = s.send_request("resources/read", params).unwrap();
    for id in [first, second] {
        assert_not_found(&s.response(id).unwrap(), &pipe);
    }
    for name in ["outside-link.md", "inside-link.md", "folder.md"] {
        let uri = format!("{}/{name}", fx.uri);
        let r = read(&mut s, &uri);
        assert_not_found(&r, &uri);
        let message = r["error"]["message"].as_str().unwrap();
        for leak in ["outside", "link", "refused", "regular"] {
            assert!(
                !message.replace(&uri, "").contains(leak),
                "{name}: {message}"
            );
        }
    }
    let uri = format!("{}/tps-report.md", fx.uri);
    let r = read(&mut s, &uri);
    assert!(r["result"]["contents"][0]["text"].is_string(), "{r}");
}
