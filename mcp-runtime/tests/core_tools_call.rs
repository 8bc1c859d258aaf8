//! `tools/call` requests are read straight into their parts when they are plainly well formed
//! (the hot path); everything else takes the general path, which parses the whole tree. These
//! properties check that the two answer every message alike: the same result or the same
//! error, byte for byte (up to the random nonce inside a fresh `requestState`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod core_support;

use core_support::*;
use mcp_runtime::prelude::*;
use mcp_runtime::server::Limits;
use mcp_runtime::service::{
    CancellationToken, McpService, Message, NotificationSink, RequestScope,
};
use mcp_runtime::state::{StateKey, StateKeyring};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A fresh server (its own notes and replay store) signing with a fixed key, so a state
/// issued by one is accepted by all and each path can be given the same retry.
fn server() -> Server {
    let key = StateKey::new("k", b"core-tools-call-test-key-0123456789abcdef").unwrap();
    Server::builder(Implementation::new("test", "1.0"))
        .state_keys(StateKeyring::new(key, Vec::new()).unwrap())
        .tools(tools![PlainTool, DeleteTool])
        .state(Effects::default())
        .state(notes(&["a1", "a2", "b"]))
        .limits(
            Limits::default()
                .with_max_message_bytes(16 * 1024)
                .unwrap()
                .with_max_depth(6)
                .unwrap(),
        )
        .build()
        .unwrap()
}

fn ctx() -> RequestScope {
    RequestScope::new(
        Principal::new("alice"),
        NotificationSink::discard(),
        CancellationToken::new(),
    )
}

/// A response with any fresh `requestState` blanked out (it holds a random nonce).
fn comparable(body: &[u8]) -> Value {
    let mut v: Value = serde_json::from_slice(body).unwrap();
    if let Some(state) = v.pointer_mut("/result/requestState") {
        *state = json!("<state>");
    }
    v
}

/// Both paths' answers to `text`, each from a fresh server: (read into parts when possible,
/// always the tree).
async fn both(text: &str) -> (Option<Value>, Option<Value>) {
    let fast = server()
        .handle_bytes(text.as_bytes(), &Principal::new("alice"))
        .await
        .map(|b| comparable(&b));
    let slow = match serde_json::from_slice::<Value>(text.as_bytes()) {
        Ok(tree) => McpService::handle(&server(), Message::from_value(tree), ctx())
            .await
            .map(|r| comparable(&r.body)),
        // Unparsable: the general path is all there is; compare with itself through the seam.
        Err(_) => fast.clone(),
    };
    (fast, slow)
}

/// A valid state for `delete` with `{"title":"a"}`, from a live first leg.
async fn live_state() -> String {
    let first = server()
        .handle_bytes(
            &call(1, "delete", json!({"title": "a"}), caps_form()),
            &Principal::new("alice"),
        )
        .await
        .unwrap();
    let v: Value = serde_json::from_slice(&first).unwrap();
    v["result"]["requestState"].as_str().unwrap().to_owned()
}

/// Member texts a message may be built from; `None` leaves the member out. The first value
/// is the well-formed one and is picked most of the time, so that many messages are plain
/// enough for the fast reader while the others probe every way to differ from it.
fn member(
    key: &'static str,
    values: Vec<&'static str>,
) -> impl Strategy<Value = Option<(String, String)>> {
    let values: Vec<String> = values.into_iter().map(str::to_owned).collect();
    let first = values[0].clone();
    let value = prop_oneof![3 => Just(first), 2 => prop::sample::select(values)];
    prop::option::weighted(0.9, value.prop_map(move |v| (key.to_owned(), v)))
}

/// Writes an object from members, sometimes repeating one, escaping a key or adding an
/// unknown member, with random spacing.
fn object(
    members: Vec<Option<(String, String)>>,
    repeat: Option<prop::sample::Index>,
    escape: Option<prop::sample::Index>,
    unknown: bool,
    space: &str,
) -> String {
    let mut members: Vec<(String, String)> = members.into_iter().flatten().collect();
    if let (Some(i), false) = (repeat, members.is_empty()) {
        let m = members[i.index(members.len())].clone();
        members.push(m);
    }
    if let (Some(i), false) = (escape, members.is_empty()) {
        let i = i.index(members.len());
        let key = &members[i].0;
        // JSON-escape the first character of the key: the same key to any JSON reader.
        let mut chars = key.chars();
        let first = chars.next().unwrap();
        members[i].0 = format!("\\u{:04x}{}", first as u32, chars.as_str());
    }
    if unknown {
        members.push(("extension".to_owned(), "{\"x\":1}".to_owned()));
    }
    let body: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("{space}\"{k}\"{space}:{space}{v}"))
        .collect();
    format!("{{{}{space}}}", body.join(","))
}

const META_OK: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}"#;

fn message() -> impl Strategy<Value = String> {
    let params = (
        (
            member(
                "name",
                vec![r#""plain""#, r#""delete""#, r#""nope""#, "5", "null"],
            ),
            member(
                "arguments",
                vec![
                    r#"{"text":"hi"}"#,
                    r#"{"title":"a"}"#,
                    r#"{"title":"zzz"}"#,
                    r#"{"text":"\ud83d\ude00 \u00e9"}"#,
                    r#"{"text":"\ud800"}"#,
                    r#"{"text":[[[[[["deep"]]]]]]}"#,
                    r#"{"text":[[["ok"]]]}"#,
                    r#"{"text":[[[["edge"]]]]}"#,
                    "null",
                    "[]",
                    r#""x""#,
                ],
            ),
            member(
                "inputResponses",
                vec![
                    r#"{"delete_choice":{"action":"accept","content":{"note_id":"a1","confirm":true}}}"#,
                    r#"{"delete_choice":{"action":"accept","content":{"note_id":"b","confirm":true}}}"#,
                    r#"{"delete_choice":{"action":"decline"}}"#,
                    r#"{"delete_choice":{"action":"maybe"}}"#,
                    "null",
                    "3",
                ],
            ),
            member(
                "requestState",
                vec!["STATE", r#""v2.k.AAAA.BBBB""#, "5", "null"],
            ),
        ),
        (
            member(
                "_meta",
                vec![
                    META_OK,
                    r#"{"io.modelcontextprotocol/protocolVersion":"2025-01-01","io.modelcontextprotocol/clientCapabilities":{}}"#,
                    r#"{"io.modelcontextprotocol/clientCapabilities":{}}"#,
                    r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"x.example/extra":[1]}"#,
                    r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":7}"#,
                    r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}"#,
                    r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}"#,
                    r#"{"io.modelcontextprotocol/protocolVersion":7,"io.modelcontextprotocol/clientCapabilities":{}}"#,
                    r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":null}}"#,
                    r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"elicitation":{}}}"#,
                    r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"x":1,"y":[2],"x":{"z":3}}}"#,
                    r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"experimental":{"a":{"b":{}}}}}"#,
                    r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"experimental":{"a":{}}}}"#,
                    r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":null}"#,
                    r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":["c","1"]}"#,
                    r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"progressToken":1.5}"#,
                    r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#,
                    "[]",
                    "null",
                ],
            ),
            prop::option::weighted(0.1, any::<prop::sample::Index>()),
            prop::option::weighted(0.1, any::<prop::sample::Index>()),
            prop::bool::weighted(0.1),
        ),
    );
    let envelope = (
        member("jsonrpc", vec![r#""2.0""#, r#""1.0""#, "2"]),
        member(
            "id",
            vec![
                "7",
                r#""req-1""#,
                "-3",
                "1.5",
                "null",
                "18446744073709551615",
                "[1]",
            ],
        ),
        member("method", vec![r#""tools/call""#, r#""tools/list""#, "5"]),
        prop::bool::weighted(0.05),
        prop::sample::select(vec!["", " ", "\n\t"]),
        prop::bool::weighted(0.05),
    );
    (params, envelope).prop_map(
        |(((name, args, responses, state), (meta, repeat, escape, unknown)), env)| {
            let (jsonrpc, id, method, result_member, space, trailing_garbage) = env;
            let params = object(
                vec![name, args, responses, state, meta],
                repeat,
                escape,
                unknown,
                space,
            );
            let mut members = vec![jsonrpc, id, method, Some(("params".to_owned(), params))];
            if result_member {
                members.push(Some(("result".to_owned(), "null".to_owned())));
            }
            let mut text = object(members, None, None, false, space);
            if trailing_garbage {
                text.push_str(" x");
            }
            text
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn both_paths_answer_alike(template in message()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let state = live_state().await;
            let text = template.replace("STATE", &format!("\"{state}\""));
            let (fast, slow) = both(&text).await;
            prop_assert_eq!(&fast, &slow, "{}", text);

            // Through the transport seam too, and the tree a transport sees is the same.
            if let Ok(tree) = serde_json::from_slice::<Value>(text.as_bytes()) {
                let message = Message::parse(bytes::Bytes::from(text.clone())).unwrap();
                prop_assert_eq!(message.value(), &tree);
                prop_assert_eq!(message.id(), tree.get("id"));
                prop_assert_eq!(message.method(), tree.get("method").and_then(Value::as_str));
                let seam = server().handle(message, ctx()).await.map(|r| comparable(&r.body));
                let tree_seam = server()
                    .handle(Message::from_value(tree), ctx())
                    .await
                    .map(|r| comparable(&r.body));
                prop_assert_eq!(seam, tree_seam, "{}", text);
            }
            Ok(())
        })?;
    }
}

#[tokio::test]
async fn an_accepted_retry_is_answered_alike() {
    // The plainest retry (the generator reaches it only sometimes), both ways.
    let state = live_state().await;
    let text = String::from_utf8(retry(
        2,
        "delete",
        json!({"title": "a"}),
        caps_form(),
        &state,
        json!({"delete_choice": {"action": "accept", "content": {"note_id": "a1", "confirm": true}}}),
    ))
    .unwrap();
    let (fast, slow) = both(&text).await;
    assert_eq!(fast, slow);
    assert_eq!(fast.unwrap()["result"]["content"][0]["text"], "Deleted a1");
}
