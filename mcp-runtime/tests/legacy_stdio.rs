//! The 2025-11-25 adapter over stdio, driven by a scripted 2025-11-25 client: handshake,
//! server-initiated `elicitation/create` and `roots/list` correlated by id, and the same
//! outcomes (accept, decline, cancel, refusals) as the modern path for the same tool.
#![cfg(feature = "legacy-2025-11-25")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod core_support;

use std::time::Duration;

use core_support::*;
use futures::future::BoxFuture;
use mcp_runtime::context::RequestContext;
use mcp_runtime::legacy::session::SessionLimits;
use mcp_runtime::legacy::stdio::{serve_auto, serve_auto_with_limits};
use mcp_runtime::prelude::*;
use mcp_runtime::tool::{IntoCallToolResult, ToolHandler};
use mcp_runtime::transport::stdio::StdioConfig;
use mcp_types::{ClientCapabilities, InputSchema, JsonObject, Tool};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

/// Server-side allowlist: the only roots this server lets a tool act in, whatever the client says.
#[derive(Clone)]
struct Allowed(Vec<String>);

/// `roots`: asks the client for its roots and reports which the server's own policy allows.
struct RootsTool(Tool, ClientCapabilities);

impl Default for RootsTool {
    fn default() -> Self {
        let Value::Object(o) = json!({"type": "object"}) else {
            unreachable!()
        };
        Self(
            Tool::new("roots", InputSchema::new(o).unwrap()),
            ClientCapabilities::none().with_roots(),
        )
    }
}

impl ToolHandler for RootsTool {
    fn descriptor(&self) -> &Tool {
        &self.0
    }
    fn required_capabilities(&self) -> &ClientCapabilities {
        &self.1
    }
    fn call<'a>(
        &'a self,
        ctx: &'a mut RequestContext,
        _args: JsonObject,
    ) -> BoxFuture<'a, Result<mcp_types::CallToolResult, HandlerError>> {
        Box::pin(async move {
            let allowed = ctx.state::<Allowed>()?;
            let roots = ctx.list_roots("roots").await?;
            let verdicts: Vec<String> = roots
                .iter()
                .map(|r| {
                    let ok = allowed.0.iter().any(|a| a == &r.uri);
                    format!("{} {}", r.uri, if ok { "allowed" } else { "refused" })
                })
                .collect();
            verdicts.join("; ").into_call_tool_result()
        })
    }
}

/// `roots-prompt`: a prompt that asks the client for its roots (a non-tool request that needs
/// input).
struct RootsPrompt(mcp_types::Prompt, ClientCapabilities);

impl Default for RootsPrompt {
    fn default() -> Self {
        Self(
            serde_json::from_value(json!({"name": "roots-prompt"})).unwrap(),
            ClientCapabilities::none().with_roots(),
        )
    }
}

impl mcp_runtime::prompt::PromptHandler for RootsPrompt {
    fn descriptor(&self) -> &mcp_types::Prompt {
        &self.0
    }
    fn required_capabilities(&self) -> &ClientCapabilities {
        &self.1
    }
    fn get<'a>(
        &'a self,
        ctx: &'a mut RequestContext,
        _args: JsonObject,
    ) -> BoxFuture<'a, Result<mcp_types::GetPromptResult, HandlerError>> {
        Box::pin(async move {
            let roots = ctx.list_roots("roots").await?;
            Ok(mcp_runtime::prompt::prompt_result(vec![
                mcp_runtime::prompt::user(mcp_types::ContentBlock::text(format!(
                    "{} roots",
                    roots.len()
                ))),
            ]))
        })
    }
}

fn server(effects: &Effects) -> Server {
    Server::builder(Implementation::new("legacy-test", "1.2.3"))
        .tools(tools![DeleteTool, RootsTool])
        .state(effects.clone())
        .state(notes(&["n1", "n2", "other"]))
        .state(Allowed(vec!["file:///home/alice/notes".into()]))
        .build()
        .unwrap()
}

struct Client {
    write: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
}

impl Client {
    fn start(server: Server) -> Self {
        let (write, server_read) = tokio::io::duplex(1 << 16);
        let (server_write, read) = tokio::io::duplex(1 << 16);
        tokio::spawn(serve_auto(
            server,
            Principal::new("alice"),
            server_read,
            server_write,
            StdioConfig::default(),
        ));
        Self {
            write,
            lines: BufReader::new(read).lines(),
        }
    }

    async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        self.write.write_all(&line).await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(5), self.lines.next_line())
            .await
            .expect("a message within 5 s")
            .unwrap()
            .expect("the server kept the stream open");
        serde_json::from_str(&line).unwrap()
    }

    async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.recv().await
    }

    /// Like [`Client::start`], with explicit session limits.
    fn start_with_limits(server: Server, limits: SessionLimits) -> Self {
        let (write, server_read) = tokio::io::duplex(1 << 16);
        let (server_write, read) = tokio::io::duplex(1 << 16);
        tokio::spawn(serve_auto_with_limits(
            server,
            Principal::new("alice"),
            server_read,
            server_write,
            StdioConfig::default(),
            limits,
        ));
        Self {
            write,
            lines: BufReader::new(read).lines(),
        }
    }

    /// The 2025-11-25 handshake with the given client capabilities.
    async fn handshake(server: Server, caps: Value) -> (Self, Value) {
        let mut c = Self::start(server);
        let init = c
            .request(
                0,
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": caps,
                       "clientInfo": {"name": "scripted", "version": "0"}}),
            )
            .await;
        c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        (c, init)
    }
}

fn form_caps() -> Value {
    json!({"elicitation": {}})
}

async fn modern_outcome(answer: Value) -> (Value, usize) {
    let effects = Effects::default();
    let s = server(&effects);
    let args = json!({"title": "n"});
    let r = parse(
        s.handle_bytes(
            &call(1, "delete", args.clone(), caps_form()),
            &Principal::new("alice"),
        )
        .await,
    );
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();
    let r = parse(
        s.handle_bytes(
            &retry(
                2,
                "delete",
                args,
                caps_form(),
                &state,
                json!({ "delete_choice": answer }),
            ),
            &Principal::new("alice"),
        )
        .await,
    );
    let mut result = r["result"].clone();
    result.as_object_mut().unwrap().remove("resultType");
    result.as_object_mut().unwrap().remove("_meta");
    (result, effects.count())
}

/// One legacy `tools/call delete`, answering the live `elicitation/create` with `answer`.
async fn legacy_outcome(answer: Value) -> (Value, usize, Value) {
    let effects = Effects::default();
    let (mut c, _) = Client::handshake(server(&effects), form_caps()).await;
    c.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                  "params": {"name": "delete", "arguments": {"title": "n"}}}))
        .await;
    let ask = c.recv().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    c.send(json!({"jsonrpc": "2.0", "id": ask["id"].clone(), "result": answer}))
        .await;
    let done = c.recv().await;
    assert_eq!(done["id"], 7, "{done}");
    (done["result"].clone(), effects.count(), ask)
}

#[tokio::test]
async fn handshake_ping_and_tools_list() {
    let effects = Effects::default();
    let (mut c, init) = Client::handshake(server(&effects), form_caps()).await;
    let r = &init["result"];
    assert_eq!(r["protocolVersion"], "2025-11-25", "{init}");
    assert!(r["capabilities"]["tools"].is_object(), "{init}");
    assert_eq!(
        r["serverInfo"],
        json!({"name": "legacy-test", "version": "1.2.3"})
    );
    // An unknown requested version is answered with the one we speak.
    let mut other = Client::start(server(&effects));
    let init = other
        .request(
            1,
            "initialize",
            json!({"protocolVersion": "2024-01-01", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");

    assert_eq!(c.request(1, "ping", json!({})).await["result"], json!({}));
    let list = c.request(2, "tools/list", json!({})).await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["delete", "roots"]);
    for modern_only in ["resultType", "ttlMs", "cacheScope", "_meta"] {
        assert!(list["result"].get(modern_only).is_none(), "{list}");
    }
    // A second initialize is refused.
    let again = c
        .request(3, "initialize", json!({"protocolVersion": "2025-11-25"}))
        .await;
    assert_eq!(again["error"]["code"], -32600);
}

#[tokio::test]
async fn requests_before_initialize_are_refused() {
    let effects = Effects::default();
    let mut c = Client::start(server(&effects));
    let r = c
        .request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": "nope"}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r = c.request(1, "tools/list", json!({})).await;
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert_eq!(c.request(2, "ping", json!({})).await["result"], json!({}));
}

#[tokio::test]
async fn accept_decline_cancel_match_the_modern_path() {
    let cases = [
        (
            json!({"action": "accept", "content": {"note_id": "n2", "confirm": true}}),
            1,
        ),
        (
            json!({"action": "accept", "content": {"note_id": "n2", "confirm": false}}),
            0,
        ),
        (json!({"action": "decline"}), 0),
        (json!({"action": "cancel"}), 0),
    ];
    for (answer, deletions) in cases {
        let (legacy, legacy_effects, ask) = legacy_outcome(answer.clone()).await;
        let (modern, modern_effects) = modern_outcome(answer.clone()).await;
        assert_eq!(legacy, modern, "{answer}");
        assert_eq!(legacy_effects, deletions, "{answer}");
        assert_eq!(modern_effects, deletions, "{answer}");
        // The live request carries the modern input request's params.
        assert_eq!(ask["params"]["message"], "Which note should I delete?");
        assert_eq!(
            ask["params"]["requestedSchema"]["properties"]["note_id"]["enum"],
            json!(["n1", "n2"])
        );
    }
    let (accepted, _, _) =
        legacy_outcome(json!({"action": "accept", "content": {"note_id": "n2", "confirm": true}}))
            .await;
    assert_eq!(accepted["content"][0]["text"], "Deleted n2");
    let (cancelled, _, _) = legacy_outcome(json!({"action": "cancel"})).await;
    assert_eq!(cancelled["isError"], true);
}

#[tokio::test]
async fn refusals_match_the_modern_path() {
    // No elicitation capability declared at initialize: the tool's requirement refuses it.
    let effects = Effects::default();
    let (mut c, _) = Client::handshake(server(&effects), json!({})).await;
    let r = c
        .request(
            1,
            "tools/call",
            json!({"name": "delete", "arguments": {"title": "n"}}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32021, "{r}");
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {"form": {}}})
    );

    // A choice outside the offered set is not accepted: the form is asked again (a second
    // live request with a new id); the user then cancels. Nothing deleted.
    let (mut c, _) = Client::handshake(server(&effects), form_caps()).await;
    c.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "delete", "arguments": {"title": "n"}}}))
        .await;
    let first = c.recv().await;
    c.send(json!({"jsonrpc": "2.0", "id": first["id"].clone(),
                  "result": {"action": "accept", "content": {"note_id": "other", "confirm": true}}}))
        .await;
    let second = c.recv().await;
    assert_eq!(second["method"], "elicitation/create", "{second}");
    assert_ne!(second["id"], first["id"]);
    c.send(json!({"jsonrpc": "2.0", "id": second["id"].clone(), "result": {"action": "cancel"}}))
        .await;
    let done = c.recv().await;
    assert_eq!(done["id"], 2);
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert_eq!(effects.count(), 0);

    // A client error answer to elicitation/create fails the call; nothing deleted.
    c.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                  "params": {"name": "delete", "arguments": {"title": "n"}}}))
        .await;
    let ask = c.recv().await;
    c.send(json!({"jsonrpc": "2.0", "id": ask["id"].clone(),
                  "error": {"code": -32601, "message": "no UI"}}))
        .await;
    let done = c.recv().await;
    assert_eq!(done["error"]["code"], -32603, "{done}");
    assert_eq!(effects.count(), 0);

    // Unknown tools are refused as on the modern path.
    let r = c
        .request(4, "tools/call", json!({"name": "nope", "arguments": {}}))
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

#[tokio::test]
async fn legacy_roots_never_authorize() {
    let effects = Effects::default();
    let (mut c, _) =
        Client::handshake(server(&effects), json!({"roots": {"listChanged": true}})).await;
    c.send(json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}))
        .await;
    c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "roots", "arguments": {}}}))
        .await;
    let ask = c.recv().await;
    assert_eq!(ask["method"], "roots/list", "{ask}");
    c.send(
        json!({"jsonrpc": "2.0", "id": ask["id"].clone(), "result": {"roots": [
        {"uri": "file:///home/alice/notes"}, {"uri": "file:///etc"}]}}),
    )
    .await;
    let done = c.recv().await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "file:///home/alice/notes allowed; file:///etc refused",
        "{done}"
    );
}

#[tokio::test]
async fn a_modern_first_message_selects_the_modern_era() {
    let effects = Effects::default();
    let mut c = Client::start(server(&effects));
    let r = c
        .request(1, "server/discover", json!({"_meta": meta(json!({}))}))
        .await;
    assert!(
        r["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28")),
        "{r}"
    );
    // `initialize` later in a modern process is just an unknown method.
    let r = c
        .request(2, "initialize", json!({"_meta": meta(json!({}))}))
        .await;
    assert_eq!(r["error"]["code"], -32601, "{r}");
}

#[tokio::test]
async fn unanswered_questions_time_out_are_cancelled_and_late_answers_change_nothing() {
    let effects = Effects::default();
    let limits = SessionLimits::default()
        .with_input_timeout(Duration::from_millis(200))
        .unwrap();
    let mut c = Client::start_with_limits(server(&effects), limits);
    let init = c
        .request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25",
                   "capabilities": {"elicitation": {}, "roots": {}},
                   "clientInfo": {"name": "scripted", "version": "0"}}),
        )
        .await;
    assert!(init["result"].is_object(), "{init}");

    // A form nobody answers: cancelled, then the call fails with a tool error saying why.
    c.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                  "params": {"name": "delete", "arguments": {"title": "n"}}}))
        .await;
    let ask = c.recv().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let cancelled = c.recv().await;
    assert_eq!(
        cancelled["method"], "notifications/cancelled",
        "{cancelled}"
    );
    assert_eq!(cancelled["params"]["requestId"], ask["id"], "{cancelled}");
    let done = c.recv().await;
    assert_eq!(done["id"], 7, "{done}");
    assert_eq!(done["result"]["isError"], true, "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("did not answer the form within 200 ms"),
        "{text}"
    );

    // The late answer is discarded: nothing is deleted, and the session still works.
    c.send(json!({"jsonrpc": "2.0", "id": ask["id"].clone(),
                  "result": {"action": "accept", "content": {"note_id": "n1", "confirm": true}}}))
        .await;
    let pong = c.request(8, "ping", json!({})).await;
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": 8, "result": {}}));
    assert_eq!(effects.count(), 0);

    // Not only forms: an unanswered roots/list names what the client did not answer.
    c.send(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                  "params": {"name": "roots", "arguments": {}}}))
        .await;
    let ask = c.recv().await;
    assert_eq!(ask["method"], "roots/list", "{ask}");
    assert_eq!(c.recv().await["method"], "notifications/cancelled");
    let done = c.recv().await;
    assert_eq!(done["result"]["isError"], true, "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("did not answer `roots/list` within 200 ms"),
        "{text}"
    );
}

#[tokio::test]
async fn an_unanswered_question_fails_a_non_tool_request_with_a_timeout_error() {
    let server = Server::builder(Implementation::new("legacy-test", "1.2.3"))
        .prompts(mcp_runtime::prompts![RootsPrompt])
        .build()
        .unwrap();
    let limits = SessionLimits::default()
        .with_input_timeout(Duration::from_millis(100))
        .unwrap();
    let mut c = Client::start_with_limits(server, limits);
    let init = c
        .request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
                   "clientInfo": {"name": "scripted", "version": "0"}}),
        )
        .await;
    assert!(init["result"].is_object(), "{init}");
    c.send(json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/get",
                  "params": {"name": "roots-prompt"}}))
        .await;
    let ask = c.recv().await;
    assert_eq!(ask["method"], "roots/list", "{ask}");
    let cancelled = c.recv().await;
    assert_eq!(cancelled["params"]["requestId"], ask["id"], "{cancelled}");
    let done = c.recv().await;
    assert_eq!(done["id"], 3, "{done}");
    assert_eq!(done["error"]["code"], -32001, "{done}");
    let message = done["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("did not answer `roots/list` within 100 ms"),
        "{message}"
    );
}

#[tokio::test]
async fn a_duplicate_of_a_request_in_flight_is_refused() {
    // The adapter's stdio runs requests through the transports' one pipeline: an id still in
    // flight (here waiting on the user) is refused, not run a second time.
    let effects = Effects::default();
    let (mut c, _) = Client::handshake(server(&effects), form_caps()).await;
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                      "params": {"name": "delete", "arguments": {"title": "n"}}});
    c.send(call.clone()).await;
    let ask = c.recv().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    c.send(call).await;
    let refused = c.recv().await;
    assert_eq!(refused["id"], 4, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    // The first request is still the one in flight: the user cancels it.
    c.send(json!({"jsonrpc": "2.0", "id": ask["id"].clone(), "result": {"action": "cancel"}}))
        .await;
    let done = c.recv().await;
    assert_eq!(done["id"], 4);
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert_eq!(effects.count(), 0);
}
