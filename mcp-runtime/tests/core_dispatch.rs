//! Dispatch rules: every error code and shape, notifications, caching, limits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod core_support;

use core_support::*;
use mcp_runtime::prelude::*;
use mcp_runtime::router::ToolRouter;
use mcp_runtime::server::Limits;
use mcp_runtime::service::{
    CancellationToken, McpService, Message, NotificationSink, ReplyKind, RequestScope,
};
use mcp_runtime::tool::{IntoCallToolResult, ToolHandler};
use mcp_types::CallToolResult;
use proptest::prelude::*;
use serde_json::{Value, json};

fn server() -> Server {
    Server::builder(Implementation::new("test", "1.0"))
        .tools(tools![PlainTool, DeleteTool])
        .state(Effects::default())
        .state(notes(&["a"]))
        .instructions("Use plain to echo.")
        .limits(
            Limits::default()
                .with_max_message_bytes(64 * 1024)
                .unwrap()
                .with_max_depth(32)
                .unwrap(),
        )
        .build()
        .unwrap()
}

async fn send(server: &Server, body: &[u8]) -> Value {
    parse(server.handle_bytes(body, &Principal::new("alice")).await)
}

async fn send_json(server: &Server, body: Value) -> Value {
    send(server, &serde_json::to_vec(&body).unwrap()).await
}

#[tokio::test]
async fn parse_error_is_32700_without_id() {
    let r = send(&server(), b"{\"jsonrpc\":\"2.0\",").await;
    assert_eq!(r["error"]["code"], -32700);
    assert_eq!(r["id"], Value::Null);
}

#[tokio::test]
async fn bad_shapes_are_32600() {
    let s = server();
    for body in [
        json!([]),
        json!(7),
        json!({"jsonrpc": "1.0", "id": 1, "method": "tools/list"}),
        json!({"id": 1, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": 5}),
        json!({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
    ] {
        let r = send_json(&s, body.clone()).await;
        assert_eq!(r["error"]["code"], -32600, "{body} -> {r}");
    }
    let r = send_json(&s, json!({"jsonrpc": "1.0", "id": 9, "method": "x"})).await;
    assert_eq!(r["id"], 9, "id echoed when readable");
}

#[tokio::test]
async fn meta_defects_are_32602_naming_the_member_and_http_400() {
    let s = server();
    let cases = [
        (json!({}), "_meta"),
        (json!({"_meta": 3}), "_meta"),
        (
            json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}),
            "protocolVersion",
        ),
        (
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": 20260728,
                              "io.modelcontextprotocol/clientCapabilities": {}}}),
            "protocolVersion",
        ),
        (
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
            "clientCapabilities",
        ),
        (
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                              "io.modelcontextprotocol/clientCapabilities": []}}),
            "clientCapabilities",
        ),
    ];
    for (params, field) in cases {
        let body = request(1, "tools/list", params.clone());
        let reply = McpService::handle(
            &s,
            Message::parse(bytes::Bytes::copy_from_slice(&body)).unwrap(),
            ctx(),
        )
        .await
        .expect("a reply");
        assert_eq!(reply.kind, ReplyKind::MalformedMeta, "{params}");
        assert_eq!(reply.http_status().as_u16(), 400);
        let r: Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(r["error"]["code"], -32602);
        assert!(
            r["error"]["message"].as_str().unwrap().contains(field),
            "{r}"
        );
    }
    // No params at all on a request.
    let r = send_json(
        &s,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .await;
    assert_eq!(r["error"]["code"], -32602);
}

fn ctx() -> RequestScope {
    RequestScope::new(
        Principal::new("alice"),
        NotificationSink::discard(),
        CancellationToken::new(),
    )
}

#[tokio::test]
async fn unsupported_version_is_32022_with_exact_data() {
    let s = server();
    for method in ["server/discover", "tools/list", "nope/nope"] {
        let body = request(
            1,
            method,
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-06-18",
                             "io.modelcontextprotocol/clientCapabilities": {}}}),
        );
        let r = send(&s, &body).await;
        assert_eq!(r["error"]["code"], -32022);
        assert_eq!(r["error"]["message"], "Unsupported protocol version");
        assert_eq!(
            r["error"]["data"],
            json!({"supported": ["2026-07-28"], "requested": "2025-06-18"})
        );
    }
}

#[tokio::test]
async fn unknown_method_is_32601_and_404() {
    let s = server();
    let body = request(1, "prompts/list", json!({"_meta": meta(json!({}))}));
    let reply = McpService::handle(
        &s,
        Message::parse(bytes::Bytes::copy_from_slice(&body)).unwrap(),
        ctx(),
    )
    .await
    .unwrap();
    assert_eq!(reply.http_status().as_u16(), 404);
    let r: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(r["error"]["code"], -32601);
}

#[tokio::test]
async fn invalid_call_params_and_unknown_tool_are_32602() {
    let s = server();
    for params in [
        json!({"_meta": meta(json!({}))}),
        json!({"_meta": meta(json!({})), "name": 3}),
        json!({"_meta": meta(json!({})), "name": "plain", "arguments": [1]}),
        json!({"_meta": meta(json!({})), "name": "plain", "requestState": 1}),
        json!({"_meta": meta(json!({})), "name": "plain", "inputResponses": "x"}),
        json!({"_meta": meta(json!({})), "name": "nope"}),
    ] {
        let r = send(&s, &request(4, "tools/call", params.clone())).await;
        assert_eq!(r["error"]["code"], -32602, "{params} -> {r}");
        assert_eq!(r["id"], 4);
    }
    let r = send(&s, &call(1, "nope", json!({}), json!({}))).await;
    // The tools there are, and the author's likely mistake.
    assert_eq!(
        r["error"]["message"],
        "Unknown tool: nope. This server's tools: plain, delete. If it is a `#[tool]` function \
         of this server, register it: list it in `tools![..]` given to `ServerBuilder::tools`"
    );
}

/// A hand-written tool named `t{i}`.
struct Numbered(mcp_types::Tool, mcp_types::ClientCapabilities);

impl Numbered {
    fn new(i: usize) -> Self {
        let Value::Object(o) = json!({"type": "object"}) else {
            unreachable!()
        };
        Self(
            mcp_types::Tool::new(format!("t{i}"), mcp_types::InputSchema::new(o).unwrap()),
            mcp_types::ClientCapabilities::none(),
        )
    }
}

impl ToolHandler for Numbered {
    fn descriptor(&self) -> &mcp_types::Tool {
        &self.0
    }
    fn required_capabilities(&self) -> &mcp_types::ClientCapabilities {
        &self.1
    }
    fn call<'a>(
        &'a self,
        _ctx: &'a mut RequestContext,
        _args: mcp_types::JsonObject,
    ) -> futures::future::BoxFuture<'a, Result<CallToolResult, HandlerError>> {
        Box::pin(async { "ran".into_call_tool_result() })
    }
}

/// A `#[tool]` function left out of `tools![..]`.
#[tool]
fn forgotten() -> String {
    "never offered".into()
}

#[tokio::test]
async fn an_unknown_tool_lists_at_most_twenty_names() {
    let many = (0..25).fold(mcp_runtime::router::ToolRouter::new(), |router, i| {
        router.with(Numbered::new(i))
    });
    let s = Server::builder(Implementation::new("test", "1.0"))
        .tools(many)
        .build()
        .unwrap();
    let r = send(&s, &call(1, "forgotten", json!({}), json!({}))).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Unknown tool: forgotten. This server's tools: t0, t1, ")
            && message.contains(", t19 and 5 more. ")
            && !message.contains("t20")
            && message.contains("register it: list it in `tools![..]`"),
        "{message}"
    );
    // Registered, it is offered.
    let s = Server::builder(Implementation::new("test", "1.0"))
        .tools(tools![forgotten])
        .build()
        .unwrap();
    let r = send(&s, &call(1, "forgotten", json!({}), json!({}))).await;
    assert_eq!(r["result"]["content"][0]["text"], "never offered", "{r}");
}

#[tokio::test]
async fn argument_failures_are_is_error_results() {
    let s = server();
    let r = send(&s, &call(1, "plain", json!({"text": 5}), json!({}))).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(r["result"]["resultType"], "complete");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("text")
    );
}

#[tokio::test]
async fn call_result_has_result_type_and_server_info() {
    let s = server();
    let r = send(&s, &call(7, "plain", json!({"text": "hi"}), json!({}))).await;
    assert_eq!(r["id"], 7);
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["content"][0]["text"], "hi");
    assert_eq!(
        r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "test"
    );
}

#[tokio::test]
async fn notifications_get_no_response() {
    let s = server();
    for body in [
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        json!({"jsonrpc": "2.0", "method": "notifications/whatever"}),
        json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "plain"}}),
    ] {
        let out = s
            .handle_bytes(&serde_json::to_vec(&body).unwrap(), &Principal::new("a"))
            .await;
        assert!(out.is_none(), "{body}");
    }
}

#[tokio::test]
async fn discover_shape() {
    let r = send(
        &server(),
        &request(1, "server/discover", json!({"_meta": meta(json!({}))})),
    )
    .await;
    let res = &r["result"];
    assert_eq!(res["resultType"], "complete");
    assert_eq!(res["supportedVersions"], json!(["2026-07-28"]));
    assert!(res["capabilities"]["tools"].is_object());
    assert!(res["capabilities"].get("roots").is_none());
    assert_eq!(res["ttlMs"], 300_000);
    assert_eq!(res["cacheScope"], "public");
    assert_eq!(res["instructions"], "Use plain to echo.");
    assert_eq!(
        res["_meta"]["io.modelcontextprotocol/serverInfo"]["version"],
        "1.0"
    );
}

#[tokio::test]
async fn tools_list_is_ordered_and_byte_identical() {
    let s = server();
    let body = request(3, "tools/list", json!({"_meta": meta(json!({}))}));
    let a = s.handle_bytes(&body, &Principal::new("a")).await.unwrap();
    let b = s.handle_bytes(&body, &Principal::new("b")).await.unwrap();
    assert_eq!(a, b);
    let r: Value = serde_json::from_slice(&a).unwrap();
    let names: Vec<&str> = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["plain", "delete"]);
    assert_eq!(r["result"]["resultType"], "complete");
    assert!(r["result"]["ttlMs"].is_u64());
    assert_eq!(r["result"]["cacheScope"], "public");
    assert_eq!(
        r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "test"
    );
    // A string id is echoed as a string.
    let mut v: Value = serde_json::from_slice(&body).unwrap();
    v["id"] = json!("x");
    let r = send_json(&s, v).await;
    assert_eq!(r["id"], "x");
    // Unknown cursor is invalid params.
    let r = send(
        &s,
        &request(
            3,
            "tools/list",
            json!({"_meta": meta(json!({})), "cursor": "zzz"}),
        ),
    )
    .await;
    assert_eq!(r["error"]["code"], -32602);
}

#[tokio::test]
async fn duplicate_tool_names_fail_the_build() {
    let err = Server::builder(Implementation::new("t", "1"))
        .tools(tools![PlainTool, PlainTool])
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("plain"));
}

#[tokio::test]
async fn size_and_depth_limits() {
    let s = server();
    let big = call(1, "plain", json!({"text": "x".repeat(70_000)}), json!({}));
    let r = send(&s, &big).await;
    assert_eq!(r["error"]["code"], -32600);
    assert!(r["error"]["message"].as_str().unwrap().contains("limit"));
    let deep = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{{\"x\":{}1{}}}}}",
        "[".repeat(40),
        "]".repeat(40)
    );
    let r = send(&s, deep.as_bytes()).await;
    assert_eq!(r["error"]["code"], -32600);
    assert!(r["error"]["message"].as_str().unwrap().contains("deeper"));
    // Hostile depth far past serde's own limit: an error, not a crash.
    let hostile = "[".repeat(60_000);
    let r = send(&s, hostile.as_bytes()).await;
    assert_eq!(r["error"]["code"], -32600);
}

#[tokio::test]
async fn progress_and_log_notifications_follow_meta() {
    let s = server();
    let (sink, mut rx) = NotificationSink::channel(16, CancellationToken::new());
    let mut m = meta(json!({}));
    m["progressToken"] = json!("p1");
    m["io.modelcontextprotocol/logLevel"] = json!("info");
    let body = request(
        1,
        "tools/call",
        json!({"_meta": m, "name": "plain", "arguments": {"text": "x"}}),
    );
    let ctx = RequestScope::new(Principal::new("a"), sink, CancellationToken::new());
    McpService::handle(
        &s,
        Message::parse(bytes::Bytes::copy_from_slice(&body)).unwrap(),
        ctx,
    )
    .await
    .unwrap();
    let mut got = Vec::new();
    while let Ok(n) = rx.try_recv() {
        got.push(serde_json::from_slice::<Value>(&n).unwrap());
    }
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0]["method"], "notifications/progress");
    assert_eq!(got[0]["params"]["progressToken"], "p1");
    assert_eq!(got[1]["method"], "notifications/message");
    assert_eq!(got[1]["params"]["level"], "info");

    // Without progressToken/logLevel nothing is sent.
    let (sink, mut rx) = NotificationSink::channel(16, CancellationToken::new());
    let ctx = RequestScope::new(Principal::new("a"), sink, CancellationToken::new());
    McpService::handle(
        &s,
        Message::parse(bytes::Bytes::from(call(
            1,
            "plain",
            json!({"text": "x"}),
            json!({}),
        )))
        .unwrap(),
        ctx,
    )
    .await
    .unwrap();
    assert!(rx.try_recv().is_err());
}

#[tokio::test]
async fn service_seam_answers_like_handle_bytes() {
    use mcp_runtime::service::{McpService, Message};
    let s = server();
    let body = call(1, "plain", json!({"text": "hi"}), json!({}));
    let msg = Message::parse(bytes::Bytes::from(body.clone())).unwrap();
    let reply = McpService::handle(&s, msg, ctx()).await.unwrap();
    assert_eq!(
        reply.body.to_vec(),
        s.handle_bytes(&body, &Principal::new("alice"))
            .await
            .unwrap()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Arbitrary bytes never panic and a request-shaped answer is always valid JSON-RPC.
    #[test]
    fn arbitrary_input_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let s = server();
        if let Some(out) = rt.block_on(s.handle_bytes(&bytes, &Principal::new("p"))) {
            let v: Value = serde_json::from_slice(&out).unwrap();
            prop_assert_eq!(&v["jsonrpc"], "2.0");
            prop_assert!(v.get("error").is_some() || v.get("result").is_some());
        }
    }

    /// Arbitrary method names with valid meta: known ones answer, unknown ones are -32601.
    #[test]
    fn unknown_methods_are_32601(method in "[a-z/]{1,20}") {
        prop_assume!(!["server/discover", "tools/list", "tools/call"].contains(&method.as_str()));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let s = server();
        let body = request(1, &method, json!({"_meta": meta(json!({}))}));
        let v: Value = serde_json::from_slice(&rt.block_on(s.handle_bytes(&body, &Principal::new("p"))).unwrap()).unwrap();
        prop_assert_eq!(&v["error"]["code"], -32601);
    }
}

/// A tool that panics while it runs: in its future (`boom`), or in `call` itself before it
/// makes one (`boom-now`; `#[tool]` extracts its parameters there).
struct PanicTool {
    tool: mcp_types::Tool,
    caps: mcp_types::ClientCapabilities,
    before_future: bool,
}

impl PanicTool {
    fn new(name: &str, before_future: bool) -> Self {
        Self {
            tool: mcp_types::Tool::new(name, mcp_types::InputSchema::empty_object()),
            caps: mcp_types::ClientCapabilities::none(),
            before_future,
        }
    }
}

impl ToolHandler for PanicTool {
    fn descriptor(&self) -> &mcp_types::Tool {
        &self.tool
    }
    fn required_capabilities(&self) -> &mcp_types::ClientCapabilities {
        &self.caps
    }
    fn call<'a>(
        &'a self,
        _ctx: &'a mut mcp_runtime::context::RequestContext,
        _args: mcp_types::JsonObject,
    ) -> futures::future::BoxFuture<'a, Result<CallToolResult, HandlerError>> {
        assert!(!self.before_future, "tool bug before its future");
        Box::pin(async { panic!("tool bug") })
    }
}

#[tokio::test]
async fn a_panicking_tool_is_32603_and_the_server_keeps_serving() {
    let s = Server::builder(Implementation::new("t", "1"))
        .tools(
            tools![PlainTool]
                .with(PanicTool::new("boom", false))
                .with(PanicTool::new("boom-now", true)),
        )
        .build()
        .unwrap();
    for (id, name) in [(1, "boom"), (2, "boom-now")] {
        let r = send(&s, &call(id, name, json!({}), json!({}))).await;
        assert_eq!(r["error"]["code"], -32603, "{name}: {r}");
    }
    let r = send(&s, &call(3, "plain", json!({"text": "ok"}), json!({}))).await;
    assert_eq!(r["result"]["content"][0]["text"], "ok");
}

struct HeaderTool(mcp_types::Tool, mcp_types::ClientCapabilities);

impl HeaderTool {
    fn with_schema(schema: Value) -> Self {
        let Value::Object(o) = schema else {
            unreachable!()
        };
        Self(
            mcp_types::Tool::new("h", mcp_types::InputSchema::new(o).unwrap()),
            mcp_types::ClientCapabilities::none(),
        )
    }
}

impl ToolHandler for HeaderTool {
    fn descriptor(&self) -> &mcp_types::Tool {
        &self.0
    }
    fn required_capabilities(&self) -> &mcp_types::ClientCapabilities {
        &self.1
    }
    fn call<'a>(
        &'a self,
        _ctx: &'a mut mcp_runtime::context::RequestContext,
        _args: mcp_types::JsonObject,
    ) -> futures::future::BoxFuture<'a, Result<CallToolResult, HandlerError>> {
        Box::pin(async { "ok".into_call_tool_result() })
    }
}

#[tokio::test]
async fn x_mcp_header_mirrors_are_held_to_the_rules_in_the_core_and_bad_rules_fail_the_build() {
    use mcp_runtime::service::ParamMirrors;
    let ok = HeaderTool::with_schema(json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "opts": {"type": "object", "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}}}
    }}));
    let s = Server::builder(Implementation::new("t", "1"))
        .tools(ToolRouter::new().with(ok))
        .build()
        .unwrap();
    let body = call(
        1,
        "h",
        json!({"region": "eu", "opts": {"dry": true}}),
        json!({}),
    );
    let answer = |mirrors: Option<&[(&str, &str)]>| {
        let mut scope = ctx();
        if let Some(pairs) = mirrors {
            let mut m = ParamMirrors::new();
            for (name, value) in pairs {
                m.push(name, Some(value));
            }
            scope = scope.with_param_mirrors(m);
        }
        let msg = Message::parse(bytes::Bytes::from(body.clone())).unwrap();
        let s = s.clone();
        async move {
            let reply = McpService::handle(&s, msg, scope).await.unwrap();
            (reply.kind, parse(Some(reply.body.to_vec())))
        }
    };
    // A transport that carries no mirrors (stdio, in process) has nothing to check.
    let (kind, r) = answer(None).await;
    assert_eq!(kind, ReplyKind::Result, "{r}");
    // One that carries them has every rule enforced before the tool runs.
    let (kind, r) = answer(Some(&[("region", "eu"), ("DRY-RUN", "true")])).await;
    assert_eq!(kind, ReplyKind::Result, "{r}");
    for (mirrors, names) in [
        (&[][..], "Mcp-Param-Region"),
        (
            &[("region", "EU"), ("dry-run", "true")][..],
            "Mcp-Param-Region",
        ),
        (&[("region", "eu")][..], "Mcp-Param-Dry-Run"),
        (
            &[("region", "eu"), ("dry-run", "false")][..],
            "Mcp-Param-Dry-Run",
        ),
    ] {
        let (kind, r) = answer(Some(mirrors)).await;
        assert_eq!(
            kind,
            ReplyKind::Error {
                code: mcp_types::ErrorCode::HeaderMismatch
            },
            "{mirrors:?}: {r}"
        );
        assert_eq!(r["error"]["code"], -32020, "{r}");
        assert_eq!(r["id"], 1, "{r}");
        let message = r["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("Header mismatch: "), "{message}");
        assert!(message.contains(names), "{mirrors:?}: {message}");
    }
    for bad in [
        json!({"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}),
        json!({"type": "object", "properties": {"n": {"type": "string", "x-mcp-header": "bad name"}}}),
        json!({"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}}}),
    ] {
        let err = Server::builder(Implementation::new("t", "1"))
            .tools(ToolRouter::new().with(HeaderTool::with_schema(bad.clone())))
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("x-mcp-header"), "{bad}: {err}");
    }
}
