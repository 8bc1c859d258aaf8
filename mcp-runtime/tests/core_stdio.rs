//! The server behind the stdio transport: an MRTR flow over newline-delimited JSON-RPC.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod core_support;

use std::sync::Arc;

use core_support::*;
use mcp_runtime::prelude::*;
use mcp_runtime::service::McpService;
use mcp_runtime::transport::stdio::{self, StdioConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test]
async fn mrtr_flow_over_stdio() {
    let effects = Effects::default();
    let server = Server::builder(Implementation::new("stdio-test", "1"))
        .tools(tools![DeleteTool, PlainTool])
        .state(notes(&["groceries"]))
        .state(effects.clone())
        .build()
        .unwrap();
    let service: Arc<dyn McpService> = Arc::new(server);
    let (client_in, server_out) = tokio::io::duplex(64 * 1024);
    let (server_in, mut client_out) = tokio::io::duplex(64 * 1024);
    let serving = tokio::spawn(stdio::serve(
        service,
        Principal::new("local"),
        server_in,
        server_out,
        StdioConfig::default(),
    ));
    let mut lines = BufReader::new(client_in).lines();
    let mut roundtrip = async |body: Vec<u8>| -> Value {
        client_out.write_all(&body).await.unwrap();
        client_out.write_all(b"\n").await.unwrap();
        serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap()
    };
    let r = roundtrip(call(1, "delete", json!({"title": "groc"}), caps_form())).await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();
    let r = roundtrip(retry(
        2,
        "delete",
        json!({"title": "groc"}),
        caps_form(),
        &state,
        json!({"delete_choice": {"action": "accept", "content": {"note_id": "groceries", "confirm": true}}}),
    ))
    .await;
    assert_eq!(r["id"], 2);
    assert_eq!(
        r["result"]["content"][0]["text"], "Deleted groceries",
        "{r}"
    );
    assert_eq!(effects.count(), 1);
    drop(client_out);
    serving.await.unwrap().unwrap();
}
