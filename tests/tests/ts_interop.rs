//! Interop with an implementation we did not write: a small server built on the official
//! TypeScript SDK (`@modelcontextprotocol/server` 2.4.0, `tests/fixtures/ts-server`) driven end to
//! end over stdio by `mcp_runtime::client`, step by step and in automatic mode.
//!
//! Needs `node` and `npm`: without them the test prints why it is skipped, unless
//! `MCP_REQUIRE_NODE=1` (set by CI), which makes their absence a failure. The fixture is installed
//! with `npm ci` from its lock file into the target directory (never into the source tree).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code fails loudly by design

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_runtime::client::{Client, InputHandlers, StdioTransport};
use mcp_runtime::prelude::*;
use mcp_types::{ElicitContentValue, ElicitResult};

#[derive(ElicitForm)]
struct Confirmation {
    /// Really delete it?
    confirm: bool,
}

const FIXTURE_FILES: [&str; 3] = ["package.json", "package-lock.json", "server.mjs"];

fn tool_available(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Copies the fixture into the target directory and runs `npm ci` there when its lock file
/// changed (bounded at five minutes).
async fn install() -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/ts-server");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ts-server-fixture");
    std::fs::create_dir_all(&dir).unwrap();
    let lock = std::fs::read(source.join("package-lock.json")).unwrap();
    let installed = dir.join("node_modules/.installed-lock.json");
    let fresh = std::fs::read(&installed).is_ok_and(|l| l == lock);
    for file in FIXTURE_FILES {
        std::fs::copy(source.join(file), dir.join(file)).unwrap();
    }
    if !fresh {
        let mut npm = tokio::process::Command::new("npm");
        npm.args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .kill_on_drop(true);
        let status = tokio::time::timeout(Duration::from_secs(300), npm.status())
            .await
            .expect("npm ci did not finish within 5 minutes")
            .expect("npm ci could not start");
        assert!(status.success(), "npm ci failed in {}", dir.display());
        std::fs::write(&installed, &lock).unwrap();
    }
    dir
}

#[tokio::test]
async fn the_typescript_sdk_server_is_driven_end_to_end() {
    if !(tool_available("node") && tool_available("npm")) {
        assert!(
            std::env::var("MCP_REQUIRE_NODE").as_deref() != Ok("1"),
            "MCP_REQUIRE_NODE=1 but node/npm are not on PATH"
        );
        eprintln!("skipped: node and npm are needed for the TypeScript SDK interop test");
        return;
    }
    let dir = install().await;
    let mut node = tokio::process::Command::new("node");
    node.arg("server.mjs").current_dir(&dir);
    let transport = std::sync::Arc::new(StdioTransport::spawn(node).unwrap());
    let client = Client::builder(transport.clone())
        .timeout(Duration::from_secs(20))
        .build();

    let discover = client.discover().await.unwrap();
    assert!(
        discover
            .supported_versions
            .iter()
            .any(|v| v == "2026-07-28")
    );
    let server_info = discover.meta.and_then(|m| m.server_info).unwrap();
    assert_eq!(server_info.name, "ts-fixture");
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["delete_item"]
    );

    // Step by step: the SDK's form reads back into our own ElicitForm type.
    let mut round = client
        .call("delete_item", serde_json::json!({"item": "draft.md"}))
        .await
        .unwrap()
        .pending()
        .unwrap();
    assert_eq!(round.request_state(), Some("delete:draft.md"));
    let form = round.form::<Confirmation>("confirm").unwrap();
    assert_eq!(form.message(), "Delete draft.md?");
    round
        .accept("confirm", &Confirmation { confirm: true })
        .unwrap();
    let done = round.retry().await.unwrap().complete().unwrap();
    assert_eq!(done.text(), "Deleted draft.md.");

    // Automatic mode: a handler answers "no".
    let careful = Client::builder(transport.clone())
        .handlers(InputHandlers::default().on_form(|_| async {
            let mut content = mcp_types::ElicitContent::new();
            content.insert("confirm".into(), ElicitContentValue::Boolean(false));
            ElicitResult::accept(Some(content))
        }))
        .timeout(Duration::from_secs(20))
        .build();
    let kept = careful
        .call_tool("delete_item", serde_json::json!({"item": "notes.md"}))
        .await
        .unwrap();
    assert_eq!(kept.text(), "Kept notes.md.");

    let status = transport.close(Duration::from_secs(10)).await.unwrap();
    assert!(
        status.is_some(),
        "the server did not exit after stdin closed"
    );
}
