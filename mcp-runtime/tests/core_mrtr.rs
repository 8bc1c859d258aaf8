//! The MRTR flow end to end through `Server::handle_bytes`, with a tool written by hand
//! against `ToolHandler`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod core_support;

use std::sync::Arc;
use std::time::Duration;

use core_support::*;
use mcp_runtime::prelude::*;
use mcp_runtime::replay::MemoryReplayStore;
use mcp_runtime::state::StateKeyring;
use serde_json::{Value, json};

fn server_with(notes: Notes, effects: Effects, keys: StateKeyring) -> Server {
    Server::builder(Implementation::new("test", "1.0"))
        .tools(tools![DeleteTool, PlainTool])
        .state(notes)
        .state(effects)
        .state_keys(keys)
        .build()
        .unwrap()
}

fn setup() -> (Server, Effects, Notes) {
    let effects = Effects::default();
    let notes = notes(&["groceries", "groceries-old", "todo"]);
    let server = server_with(
        notes.clone(),
        effects.clone(),
        StateKeyring::generate().unwrap(),
    );
    (server, effects, notes)
}

fn alice() -> Principal {
    Principal::new("alice")
}

/// First leg: returns (requestState, inputRequests).
async fn first_leg(server: &Server) -> (String, Value) {
    let r = parse(
        server
            .handle_bytes(
                &call(1, "delete", json!({"title": "groc"}), caps_form()),
                &alice(),
            )
            .await,
    );
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "test"
    );
    let req = &result["inputRequests"]["delete_choice"];
    assert_eq!(req["method"], "elicitation/create");
    assert_eq!(req["params"]["mode"], "form");
    assert_eq!(
        req["params"]["requestedSchema"]["properties"]["note_id"]["enum"],
        json!(["groceries", "groceries-old"])
    );
    (
        result["requestState"].as_str().unwrap().to_owned(),
        result["inputRequests"].clone(),
    )
}

fn accept(note: &str) -> Value {
    json!({"delete_choice": {"action": "accept", "content": {"note_id": note, "confirm": true}}})
}

async fn send_retry(server: &Server, state: &str, responses: Value) -> Value {
    parse(
        server
            .handle_bytes(
                &retry(
                    2,
                    "delete",
                    json!({"title": "groc"}),
                    caps_form(),
                    state,
                    responses,
                ),
                &alice(),
            )
            .await,
    )
}

#[tokio::test]
async fn accept_runs_once_and_second_use_is_refused() {
    let (server, effects, _) = setup();
    let (state, _) = first_leg(&server).await;
    let r = send_retry(&server, &state, accept("groceries")).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "Deleted groceries");
    assert_eq!(effects.count(), 1);
    // An identical retry (a lost response, say) gets the recorded result, marked as a replay.
    let again = send_retry(&server, &state, accept("groceries")).await;
    assert_eq!(again["result"]["content"][0]["text"], "Deleted groceries");
    assert_eq!(
        again["result"]["_meta"]["dev.mcp-runtime/replayed"], true,
        "{again}"
    );
    // Any other use of the state is refused.
    let other = send_retry(
        &server,
        &state,
        json!({"delete_choice": {"action": "decline"}}),
    )
    .await;
    assert_eq!(other["error"]["code"], -32602, "{other}");
    assert!(
        other["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already used")
    );
    assert_eq!(effects.count(), 1);
}

#[tokio::test]
async fn another_instance_finishes_the_flow_with_shared_keys_and_store() {
    let keys = StateKeyring::generate().unwrap();
    let store: Arc<dyn mcp_runtime::replay::ReplayStore> = Arc::new(MemoryReplayStore::new(100));
    let effects = Effects::default();
    let mk = || {
        Server::builder(Implementation::new("test", "1.0"))
            .tools(tools![DeleteTool])
            .state(notes(&["groceries"]))
            .state(effects.clone())
            .state_keys(keys.clone())
            .replay_store(store.clone())
            .build()
            .unwrap()
    };
    let (a, b) = (mk(), mk());
    let (state, _) = first_leg_single(&a).await;
    let r = send_retry(&b, &state, accept("groceries")).await;
    assert_eq!(
        r["result"]["content"][0]["text"], "Deleted groceries",
        "{r}"
    );
    // The identical retry on the other instance gets the recorded result from the store.
    let again = send_retry(&a, &state, accept("groceries")).await;
    assert_eq!(again["result"]["content"][0]["text"], "Deleted groceries");
    assert_eq!(
        again["result"]["_meta"]["dev.mcp-runtime/replayed"], true,
        "{again}"
    );
    assert_eq!(effects.count(), 1);
}

async fn first_leg_single(server: &Server) -> (String, Value) {
    let r = parse(
        server
            .handle_bytes(
                &call(1, "delete", json!({"title": "groc"}), caps_form()),
                &alice(),
            )
            .await,
    );
    (
        r["result"]["requestState"].as_str().unwrap().to_owned(),
        r["result"]["inputRequests"].clone(),
    )
}

#[tokio::test]
async fn decline_consumes_the_state() {
    let (server, effects, _) = setup();
    let (state, _) = first_leg(&server).await;
    let r = send_retry(
        &server,
        &state,
        json!({"delete_choice": {"action": "decline"}}),
    )
    .await;
    assert_eq!(r["result"]["content"][0]["text"], "Nothing deleted.", "{r}");
    let again = send_retry(&server, &state, accept("groceries")).await;
    assert_eq!(again["error"]["code"], -32602, "{again}");
    assert_eq!(effects.count(), 0);
}

#[tokio::test]
async fn cancel_leaves_the_state_retryable() {
    let (server, effects, _) = setup();
    let (state, _) = first_leg(&server).await;
    let r = send_retry(
        &server,
        &state,
        json!({"delete_choice": {"action": "cancel"}}),
    )
    .await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(
        r["result"]["content"][0]["text"],
        "Cancelled; nothing deleted."
    );
    let r = send_retry(&server, &state, accept("groceries-old")).await;
    assert_eq!(
        r["result"]["content"][0]["text"], "Deleted groceries-old",
        "{r}"
    );
    assert_eq!(effects.count(), 1);
}

#[tokio::test]
async fn malformed_content_is_asked_again_and_stays_retryable() {
    let (server, effects, _) = setup();
    let (state, requests) = first_leg(&server).await;
    // Invalid answers are asked again with the reason in front of the original message;
    // malformed responses are asked again unchanged. The form itself is the same either way.
    let original = requests["delete_choice"]["params"]["message"]
        .as_str()
        .unwrap();
    for (bad, reason) in [
        (
            json!({"delete_choice": {"action": "accept", "content": {"note_id": "todo", "confirm": true}}}),
            // This hand-written form reports every problem as "missing"; the default
            // `explain` names the field by its wire name.
            Some("Please fill in \u{201c}note_id\u{201d}; it is required."),
        ),
        (
            json!({"delete_choice": {"action": "accept", "content": {"note_id": "groceries"}}}),
            Some("Please fill in \u{201c}confirm\u{201d}; it is required."),
        ),
        (json!({"delete_choice": {"action": "maybe"}}), None),
        (json!({"delete_choice": "yes"}), None),
    ] {
        let r = send_retry(&server, &state, bad.clone()).await;
        assert_eq!(r["result"]["resultType"], "input_required", "{bad} -> {r}");
        let mut expected = requests.clone();
        if let Some(reason) = reason {
            expected["delete_choice"]["params"]["message"] =
                json!(format!("{reason}\n\n{original}"));
        }
        assert_eq!(r["result"]["inputRequests"], expected, "{bad}");
    }
    assert_eq!(effects.count(), 0);
    // Both the original state and a re-issued one carry the same nonce: only one can be used.
    let reissued = send_retry(&server, &state, json!({})).await["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = send_retry(&server, &reissued, accept("groceries")).await;
    assert_eq!(
        r["result"]["content"][0]["text"], "Deleted groceries",
        "{r}"
    );
    // The original state with the same answer is the same confirmation: a replay.
    let r = send_retry(&server, &state, accept("groceries")).await;
    assert_eq!(
        r["result"]["_meta"]["dev.mcp-runtime/replayed"], true,
        "{r}"
    );
    assert_eq!(effects.count(), 1);
}

#[tokio::test]
async fn missing_response_is_asked_again_and_unknown_keys_are_ignored() {
    let (server, effects, _) = setup();
    let (state, requests) = first_leg(&server).await;
    let r = send_retry(&server, &state, json!({"other": {"action": "accept"}})).await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    assert_eq!(r["result"]["inputRequests"], requests);
    let mut with_extra = accept("groceries");
    with_extra["unrelated"] = json!({"action": "accept", "content": {}});
    let r = send_retry(&server, &state, with_extra).await;
    assert_eq!(
        r["result"]["content"][0]["text"], "Deleted groceries",
        "{r}"
    );
    assert_eq!(effects.count(), 1);
}

#[tokio::test]
async fn responses_without_state_are_ignored() {
    let (server, effects, _) = setup();
    let mut req: Value =
        serde_json::from_slice(&call(1, "delete", json!({"title": "groc"}), caps_form())).unwrap();
    req["params"]["inputResponses"] = accept("groceries");
    let r = parse(
        server
            .handle_bytes(&serde_json::to_vec(&req).unwrap(), &alice())
            .await,
    );
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    assert_eq!(effects.count(), 0);
}

#[tokio::test]
async fn tampered_foreign_changed_states_are_refused_without_side_effect() {
    let (server, effects, notes) = setup();
    let (state, _) = first_leg(&server).await;

    // Tampered: flip one payload character.
    let mut parts: Vec<String> = state.split('.').map(str::to_owned).collect();
    let mut payload = parts[2].clone().into_bytes();
    payload[5] = if payload[5] == b'A' { b'B' } else { b'A' };
    parts[2] = String::from_utf8(payload).unwrap();
    let tampered = parts.join(".");
    let r = send_retry(&server, &tampered, accept("groceries")).await;
    assert_refused(&r);

    // Another principal.
    let r = parse(
        server
            .handle_bytes(
                &retry(
                    2,
                    "delete",
                    json!({"title": "groc"}),
                    caps_form(),
                    &state,
                    accept("groceries"),
                ),
                &Principal::new("mallory"),
            )
            .await,
    );
    assert_refused(&r);

    // Changed arguments.
    let r = parse(
        server
            .handle_bytes(
                &retry(
                    2,
                    "delete",
                    json!({"title": "gro"}),
                    caps_form(),
                    &state,
                    accept("groceries"),
                ),
                &alice(),
            )
            .await,
    );
    assert_refused(&r);

    // Another tool.
    let r = parse(
        server
            .handle_bytes(
                &retry(
                    2,
                    "plain",
                    json!({"title": "groc"}),
                    json!({}),
                    &state,
                    json!({}),
                ),
                &alice(),
            )
            .await,
    );
    assert_refused(&r);

    // Another server's keys.
    let other = server_with(
        notes.clone(),
        effects.clone(),
        StateKeyring::generate().unwrap(),
    );
    let r = send_retry(&other, &state, accept("groceries")).await;
    assert_refused(&r);

    // Changed candidate set.
    notes.0.lock().unwrap().push("groceries-new".into());
    let r = send_retry(&server, &state, accept("groceries")).await;
    assert_refused(&r);
    notes.0.lock().unwrap().pop();

    assert_eq!(effects.count(), 0);
    // None of these consumed the state.
    let r = send_retry(&server, &state, accept("groceries")).await;
    assert_eq!(
        r["result"]["content"][0]["text"], "Deleted groceries",
        "{r}"
    );
}

#[tokio::test]
async fn expired_state_is_refused() {
    let effects = Effects::default();
    let server = Server::builder(Implementation::new("test", "1.0"))
        .tools(tools![DeleteTool])
        .state(notes(&["groceries"]))
        .state(effects.clone())
        .state_ttl(Duration::from_secs(0))
        .build()
        .unwrap();
    let (state, _) = first_leg_single(&server).await;
    let r = send_retry(&server, &state, accept("groceries")).await;
    assert_refused(&r);
    assert!(r["error"]["message"].as_str().unwrap().contains("expired"));
    assert_eq!(effects.count(), 0);
}

fn assert_refused(r: &Value) {
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(message.contains("requestState"), "{message}");
    assert!(message.contains("without requestState"), "{message}");
}

#[tokio::test]
async fn concurrent_retries_succeed_exactly_once() {
    let (server, effects, _) = setup();
    let (state, _) = first_leg(&server).await;
    let mut tasks = Vec::new();
    for i in 0..32 {
        let server = server.clone();
        let body = retry(
            100 + i,
            "delete",
            json!({"title": "groc"}),
            caps_form(),
            &state,
            accept("groceries"),
        );
        tasks.push(tokio::spawn(async move {
            parse(server.handle_bytes(&body, &alice()).await)
        }));
    }
    let mut ok = 0;
    for t in tasks {
        let r = t.await.unwrap();
        if r["result"]["_meta"]["dev.mcp-runtime/replayed"] == true {
            // Late enough to find the winner's recorded result.
            assert_eq!(r["result"]["content"][0]["text"], "Deleted groceries");
        } else if r["result"]["content"][0]["text"] == "Deleted groceries" {
            ok += 1;
        } else {
            assert_eq!(r["error"]["code"], -32602, "{r}");
        }
    }
    assert_eq!(ok, 1);
    assert_eq!(effects.count(), 1);
}

#[tokio::test]
async fn missing_form_capability_is_32021_before_the_tool_runs() {
    let (server, effects, _) = setup();
    for caps in [
        json!({}),
        json!({"elicitation": {"url": {}}}),
        json!({"sampling": {}}),
    ] {
        let r = parse(
            server
                .handle_bytes(
                    &call(1, "delete", json!({"title": "groc"}), caps.clone()),
                    &alice(),
                )
                .await,
        );
        assert_eq!(r["error"]["code"], -32021, "{caps} -> {r}");
        assert_eq!(
            r["error"]["data"],
            json!({"requiredCapabilities": {"elicitation": {"form": {}}}})
        );
    }
    assert_eq!(effects.count(), 0);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Changing any one character of a sealed state gets it refused, with no side effect,
        /// and leaves the genuine state usable.
        #[test]
        fn any_altered_state_is_refused(pos in any::<proptest::sample::Index>(), ch in "[A-Za-z0-9_.-]") {
            let rt = rt();
            let (server, effects, _) = setup();
            let (state, _) = rt.block_on(first_leg(&server));
            let i = pos.index(state.len());
            let mut altered = state.clone().into_bytes();
            prop_assume!(altered[i] != ch.as_bytes()[0]);
            altered[i] = ch.as_bytes()[0];
            let altered = String::from_utf8(altered).unwrap();
            let r = rt.block_on(send_retry(&server, &altered, accept("groceries")));
            prop_assert_eq!(&r["error"]["code"], -32602, "{}", r);
            prop_assert_eq!(effects.count(), 0);
            let r = rt.block_on(send_retry(&server, &state, accept("groceries")));
            prop_assert_eq!(&r["result"]["content"][0]["text"], "Deleted groceries");
        }

        /// Arbitrary JSON under the asked key never panics and never acts unless it is a valid
        /// acceptance of an offered note.
        #[test]
        fn arbitrary_responses_act_only_when_valid(response in arb_json()) {
            let rt = rt();
            let (server, effects, _) = setup();
            let (state, _) = rt.block_on(first_leg(&server));
            let r = rt.block_on(send_retry(&server, &state, json!({"delete_choice": response})));
            let acted = r["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("Deleted"));
            prop_assert_eq!(effects.count(), usize::from(acted));
            prop_assert!(r.get("result").is_some() || r["error"]["code"] == -32602, "{}", r);
        }
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            prop_oneof![
                Just("accept".to_owned()),
                Just("decline".to_owned()),
                Just("cancel".to_owned()),
                Just("groceries".to_owned()),
                ".{0,8}"
            ]
            .prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec(
                    (
                        prop_oneof![
                            Just("action".to_owned()),
                            Just("content".to_owned()),
                            Just("note_id".to_owned()),
                            Just("confirm".to_owned()),
                            "[a-z]{1,4}"
                        ],
                        inner
                    ),
                    0..4
                )
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }
}

/// Two instances sharing a key file's keyring and one SQLite replay store: many concurrent
/// retries of one confirmation, spread over both, act exactly once.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_claims_across_instances_with_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn mcp_runtime::replay::ReplayStore> = Arc::new(
        mcp_runtime::backend::sqlite::SqliteReplayStore::open(dir.path().join("replay.db"))
            .await
            .unwrap(),
    );
    let keys = StateKeyring::generate().unwrap();
    let effects = Effects::default();
    let mk = || {
        Server::builder(Implementation::new("test", "1.0"))
            .tools(tools![DeleteTool])
            .state(notes(&["groceries"]))
            .state(effects.clone())
            .state_keys(keys.clone())
            .replay_store(store.clone())
            .build()
            .unwrap()
    };
    let servers = [mk(), mk()];
    let (state, _) = first_leg_single(&servers[0]).await;
    let mut tasks = Vec::new();
    for i in 0..16 {
        let server = servers[i % 2].clone();
        let body = retry(
            10 + i as i64,
            "delete",
            json!({"title": "groc"}),
            caps_form(),
            &state,
            accept("groceries"),
        );
        tasks.push(tokio::spawn(async move {
            parse(server.handle_bytes(&body, &alice()).await)
        }));
    }
    let mut ok = 0;
    for t in tasks {
        let r = t.await.unwrap();
        if r["result"]["_meta"]["dev.mcp-runtime/replayed"] == true {
            // Late enough to find the winner's recorded result.
        } else if r.get("result").is_some() {
            ok += 1;
        } else {
            assert!(
                r["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("already used"),
                "{r}"
            );
        }
    }
    assert_eq!(ok, 1);
    assert_eq!(effects.count(), 1);
}

/// One principal looping through confirmations (first leg, decline, again) fills only its
/// share of the memory replay store: it is told so, and every other principal still confirms.
#[tokio::test]
async fn a_decline_loop_does_not_lock_other_principals_out_of_the_memory_store() {
    let effects = Effects::default();
    let store = Arc::new(MemoryReplayStore::new(20));
    let server = Server::builder(Implementation::new("test", "1.0"))
        .tools(tools![DeleteTool])
        .state(notes(&["groceries", "groceries-old"]))
        .state(effects.clone())
        .state_keys(StateKeyring::generate().unwrap())
        .replay_store(store.clone())
        .build()
        .unwrap();
    let args = json!({"title": "groc"});
    let round = |who: Principal, responses: Value| {
        let server = &server;
        let args = args.clone();
        async move {
            let first = parse(
                server
                    .handle_bytes(&call(1, "delete", args.clone(), caps_form()), &who)
                    .await,
            );
            let state = first["result"]["requestState"].as_str().unwrap().to_owned();
            parse(
                server
                    .handle_bytes(
                        &retry(2, "delete", args, caps_form(), &state, responses),
                        &who,
                    )
                    .await,
            )
        }
    };
    let decline = json!({"delete_choice": {"action": "decline"}});
    let mallory = Principal::new("mallory");
    let mut refused = 0;
    for _ in 0..30 {
        let r = round(mallory.clone(), decline.clone()).await;
        if r["result"]["isError"] == true {
            let text = r["result"]["content"][0]["text"].as_str().unwrap();
            assert!(text.contains("your share"), "{r}");
            refused += 1;
        } else {
            assert!(r["result"]["content"].is_array(), "{r}");
        }
    }
    assert_eq!(refused, 30 - store.principal_share(), "mallory is bounded");
    let r = round(alice(), accept("groceries")).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_ne!(r["result"]["isError"], true, "{r}");
    assert_eq!(effects.count(), 1, "alice's confirmation was carried out");
}
