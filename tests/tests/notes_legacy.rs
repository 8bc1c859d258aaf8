//! The real notes binary spoken to by a scripted 2025-11-25 client over stdio: the first
//! message `initialize` selects the adapter, and `notes_delete`'s form arrives as a live
//! `elicitation/create` request; accept deletes, decline and cancel do not.

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use mcp_tests::StdioServer;
use mcp_tests::notes::*;
use serde_json::{Value, json};

fn legacy(fx: &NotesFixture) -> StdioServer {
    let mut s = fx.spawn("alice", &[]).expect("spawn notes-example");
    let init = s
        .request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                   "clientInfo": {"name": "scripted-2025-11-25", "version": "0"}}),
        )
        .unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "notes-example");
    s.notify("notifications/initialized", json!({})).unwrap();
    s
}

/// Calls `notes_delete`, answers the live elicitation with `answer`, returns the final response.
fn delete(s: &mut StdioServer, fx: &NotesFixture, answer: Value) -> (Value, Value) {
    let id = s
        .send_request(
            "tools/call",
            json!({"name": "notes_delete", "arguments": fx.delete_args("shopping")}),
        )
        .unwrap();
    let ask = s
        .next_message(Duration::from_secs(10))
        .unwrap()
        .expect("a live elicitation/create");
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let reply = json!({"jsonrpc": "2.0", "id": ask["id"].clone(), "result": answer});
    s.send_line(&reply.to_string()).unwrap();
    (s.response(id).unwrap(), ask)
}

#[test]
fn legacy_client_gets_the_same_outcomes_from_the_real_binary() {
    let fx = NotesFixture::new().unwrap();
    let mut s = legacy(&fx);
    let (r, _) = delete(&mut s, &fx, json!({"action": "decline"}));
    assert!(text(&r).contains("declined"), "{r}");
    assert!(r["result"].get("resultType").is_none());
    assert!(fx.exists("shopping.md"));
    let (r, _) = delete(&mut s, &fx, json!({"action": "cancel"}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(fx.exists("shopping.md"));
    let (r, ask) = delete(&mut s, &fx, choose("shopping.md", true));
    let offered = &ask["params"]["requestedSchema"]["properties"]["note_id"];
    assert!(offered.to_string().contains("shopping.md"), "{ask}");
    assert!(text(&r).contains("Deleted"), "{r}");
    assert!(!fx.exists("shopping.md"));
    s.shutdown().unwrap();
}

#[test]
fn a_stdio_request_method_cannot_forge_log_lines() {
    let fx = NotesFixture::new().unwrap();
    let mut s = fx.spawn("alice", &[]).expect("spawn notes-example");
    let forged = "x\n2026-01-01T00:00:00.000000Z  INFO forged: admin granted\r\x1b[31m";
    let r = s.request(forged, json!({})).unwrap();
    assert!(r["error"].is_object(), "{r}");
    // The request is logged after its response is written: wait (bounded) for its whole
    // record (its line ended: stderr arrives in chunks, and a forged line cut off before it
    // arrives would pass unseen). The record is the request span's "mcp request finished"
    // with the method escaped in it.
    let stderr = s.stderr_when(Duration::from_secs(10), |e| {
        mcp_tests::ended_lines(e)
            .any(|l| l.contains("mcp request finished") && l.contains("admin granted"))
    });
    assert!(
        !stderr.lines().any(|l| l.starts_with("2026-01-01T00:00:00")),
        "a forged log line appeared:\n{stderr}"
    );
    assert!(!stderr.contains('\r'), "raw CR in the log:\n{stderr:?}");
    assert!(!stderr.contains('\x1b'), "raw ESC in the log:\n{stderr:?}");
    assert!(
        stderr.contains(r"x\n2026-01-01T00:00:00.000000Z  INFO forged: admin granted\r\u{1b}[31m"),
        "the method is logged, escaped:\n{stderr}"
    );
    s.shutdown().unwrap();
}
