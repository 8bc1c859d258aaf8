//! Multi-key rounds, multi-round flows, sampling and roots gating, commit under the claim.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod core_support;

use std::sync::atomic::Ordering;

use core_support::*;
use futures::future::BoxFuture;
use mcp_runtime::context::{Elicitation, RequestContext};
use mcp_runtime::prelude::*;
use mcp_runtime::replay::ActionError;
use mcp_runtime::server::Limits;
use mcp_runtime::tool::{IntoCallToolResult, ToolHandler};
use mcp_types::CallToolResult;
use mcp_types::{
    ClientCapabilities, CreateMessageRequestParams, ElicitationCapability, InputSchema, JsonObject,
    SamplingCapability, SamplingMessage, Tool,
};
use serde_json::{Value, json};

/// `flow`: behaviour picked by `arguments.mode`. Registered once per way of asking, each
/// declaring the capability its modes ask with (see [`tool_for`]).
struct FlowTool(Tool, ClientCapabilities);

impl FlowTool {
    fn declaring(name: &str, capabilities: ClientCapabilities) -> Self {
        let Value::Object(o) = json!({"type": "object"}) else {
            unreachable!()
        };
        Self(Tool::new(name, InputSchema::new(o).unwrap()), capabilities)
    }
}

impl Default for FlowTool {
    /// `flow`, for the form modes.
    fn default() -> Self {
        Self::declaring(
            "flow",
            ClientCapabilities::none().with_elicitation(ElicitationCapability::form()),
        )
    }
}

/// The registered `flow` tool that declares what `mode` asks with.
fn tool_for(mode: &str) -> &'static str {
    match mode {
        "sample" => "flow_sample",
        "url" => "flow_url",
        "roots" => "flow_roots",
        _ => "flow",
    }
}

impl ToolHandler for FlowTool {
    fn descriptor(&self) -> &Tool {
        &self.0
    }
    fn required_capabilities(&self) -> &ClientCapabilities {
        &self.1
    }
    fn call<'a>(
        &'a self,
        ctx: &'a mut RequestContext,
        args: JsonObject,
    ) -> BoxFuture<'a, Result<CallToolResult, HandlerError>> {
        Box::pin(async move {
            let effects = ctx.state::<Effects>()?;
            let choices = DeleteChoices {
                ids: vec!["n1".into(), "n2".into()],
            };
            match args.get("mode").and_then(Value::as_str).unwrap_or("") {
                "batch" => {
                    let a = ctx.try_elicit::<Reason>("why", "Why?", ()).await?;
                    let b = ctx
                        .try_elicit::<DeleteChoice>("which", "Which?", choices)
                        .await?;
                    ctx.await_inputs()?;
                    let (Some(Elicitation::Accepted(a)), Some(Elicitation::Accepted(b))) = (a, b)
                    else {
                        return "not both accepted".into_call_tool_result();
                    };
                    effects.0.fetch_add(1, Ordering::SeqCst);
                    format!("{} because {}", b.note_id, a.text).into_call_tool_result()
                }
                "rounds" => {
                    let Elicitation::Accepted(a) = ctx.elicit::<Reason>("why", "Why?", ()).await?
                    else {
                        return "no reason".into_call_tool_result();
                    };
                    let Elicitation::Accepted(b) = ctx
                        .elicit::<DeleteChoice>("which", "Which?", choices)
                        .await?
                    else {
                        return "no choice".into_call_tool_result();
                    };
                    effects.0.fetch_add(1, Ordering::SeqCst);
                    Ok(
                        format!("{} because {} (round {})", b.note_id, a.text, ctx.round())
                            .into_call_tool_result()?,
                    )
                }
                "endless" => {
                    for i in 0.. {
                        let _ = ctx.elicit::<Reason>(&format!("k{i}"), "More?", ()).await?;
                    }
                    unreachable!()
                }
                "sample" => {
                    let mut params =
                        CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 10);
                    if args.get("tools").is_some() {
                        params.tools = Some(vec![]);
                    }
                    let r = ctx.sample("s", params).await?;
                    format!("model {}", r.model).into_call_tool_result()
                }
                "url" => match ctx
                    .elicit_url("pay", "Pay here", "https://pay.example/x")
                    .await?
                {
                    Elicitation::Accepted(()) => "paid".into_call_tool_result(),
                    _ => "not paid".into_call_tool_result(),
                },
                "roots" => {
                    let roots = ctx.list_roots("r").await?;
                    format!("{} roots", roots.len()).into_call_tool_result()
                }
                "commit" => {
                    let counter = effects.clone();
                    let fail = args.get("fail").is_some();
                    match ctx
                        .elicit_with_commit::<DeleteChoice, String, _>(
                            "which",
                            "Which?",
                            choices,
                            move |c| {
                                if fail {
                                    return Err(ActionError::new("disk full"));
                                }
                                counter.0.fetch_add(1, Ordering::SeqCst);
                                Ok(c.note_id)
                            },
                        )
                        .await?
                    {
                        Elicitation::Accepted(id) => {
                            format!("deleted {id}").into_call_tool_result()
                        }
                        _ => "nothing".into_call_tool_result(),
                    }
                }
                _ => Err(HandlerError::invalid_arguments("unknown mode")),
            }
        })
    }
}

fn server() -> (Server, Effects) {
    let effects = Effects::default();
    let s = Server::builder(Implementation::new("t", "1"))
        .tools(
            tools![FlowTool]
                .with(FlowTool::declaring(
                    "flow_sample",
                    ClientCapabilities::none().with_sampling(SamplingCapability::default()),
                ))
                .with(FlowTool::declaring(
                    "flow_url",
                    ClientCapabilities::none().with_elicitation(ElicitationCapability::url()),
                ))
                .with(FlowTool::declaring(
                    "flow_roots",
                    ClientCapabilities::none().with_roots(),
                )),
        )
        .state(effects.clone())
        .build()
        .unwrap();
    (s, effects)
}

async fn go(s: &Server, args: Value, caps: Value, state: Option<&str>, responses: Value) -> Value {
    let tool = tool_for(args["mode"].as_str().unwrap_or(""));
    let body = match state {
        None => call(1, tool, args, caps),
        Some(st) => retry(2, tool, args, caps, st, responses),
    };
    parse(s.handle_bytes(&body, &Principal::new("alice")).await)
}

fn state_of(r: &Value) -> String {
    r["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned()
}

fn keys(r: &Value) -> Vec<String> {
    r["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

fn why() -> Value {
    json!({"action": "accept", "content": {"text": "old"}})
}

fn which() -> Value {
    json!({"action": "accept", "content": {"note_id": "n2", "confirm": true}})
}

#[tokio::test]
async fn several_keys_in_one_round() {
    let (s, effects) = server();
    let args = json!({"mode": "batch"});
    let r = go(&s, args.clone(), caps_form(), None, json!({})).await;
    assert_eq!(keys(&r), ["why", "which"]);
    let st = state_of(&r);
    // Both answered at once: done in one retry.
    let r = go(
        &s,
        args.clone(),
        caps_form(),
        Some(&st),
        json!({"why": why(), "which": which()}),
    )
    .await;
    assert_eq!(r["result"]["content"][0]["text"], "n2 because old", "{r}");
    assert_eq!(effects.count(), 1);

    // Only one answered: that answer is consumed and carried in the next state; only the
    // other key is asked again.
    let r = go(&s, args.clone(), caps_form(), None, json!({})).await;
    let st = state_of(&r);
    let r = go(
        &s,
        args.clone(),
        caps_form(),
        Some(&st),
        json!({"why": why()}),
    )
    .await;
    assert_eq!(keys(&r), ["which"], "{r}");
    let st1 = state_of(&r);
    let r = go(
        &s,
        args.clone(),
        caps_form(),
        Some(&st),
        json!({"why": why(), "which": which()}),
    )
    .await;
    assert_eq!(
        r["error"]["code"], -32602,
        "the partially used state is spent: {r}"
    );
    let r = go(
        &s,
        args.clone(),
        caps_form(),
        Some(&st1),
        json!({"which": which()}),
    )
    .await;
    assert_eq!(r["result"]["content"][0]["text"], "n2 because old", "{r}");
    assert_eq!(effects.count(), 2);
}

#[tokio::test]
async fn multi_round_carries_earlier_answers_in_the_state() {
    let (s, effects) = server();
    let args = json!({"mode": "rounds"});
    let r = go(&s, args.clone(), caps_form(), None, json!({})).await;
    assert_eq!(keys(&r), ["why"]);
    let s0 = state_of(&r);
    let r = go(
        &s,
        args.clone(),
        caps_form(),
        Some(&s0),
        json!({"why": why()}),
    )
    .await;
    assert_eq!(keys(&r), ["which"], "{r}");
    let s1 = state_of(&r);
    // Round 0's state was consumed by the answer.
    let replay = go(
        &s,
        args.clone(),
        caps_form(),
        Some(&s0),
        json!({"why": why()}),
    )
    .await;
    assert_eq!(replay["error"]["code"], -32602, "{replay}");
    // Round 1 only sends the new answer; the earlier one travels in the state.
    let r = go(
        &s,
        args.clone(),
        caps_form(),
        Some(&s1),
        json!({"which": which()}),
    )
    .await;
    assert_eq!(
        r["result"]["content"][0]["text"], "n2 because old (round 2)",
        "{r}"
    );
    let replay = go(
        &s,
        args.clone(),
        caps_form(),
        Some(&s1),
        json!({"which": which()}),
    )
    .await;
    // The identical retry gets the recorded result again; nothing runs twice.
    assert_eq!(
        replay["result"]["content"][0]["text"], "n2 because old (round 2)",
        "{replay}"
    );
    assert_eq!(replay["result"]["_meta"]["dev.mcp-runtime/replayed"], true);
    assert_eq!(effects.count(), 1);
}

#[tokio::test]
async fn sampling_is_gated_and_round_trips() {
    let (s, _) = server();
    let args = json!({"mode": "sample"});
    let r = go(&s, args.clone(), json!({}), None, json!({})).await;
    assert_eq!(r["error"]["code"], -32021);
    assert_eq!(
        r["error"]["data"],
        json!({"requiredCapabilities": {"sampling": {}}})
    );
    let r = go(
        &s,
        json!({"mode": "sample", "tools": true}),
        json!({"sampling": {}}),
        None,
        json!({}),
    )
    .await;
    assert_eq!(
        r["error"]["data"],
        json!({"requiredCapabilities": {"sampling": {"tools": {}}}})
    );
    let r = go(&s, args.clone(), json!({"sampling": {}}), None, json!({})).await;
    assert_eq!(
        r["result"]["inputRequests"]["s"]["method"], "sampling/createMessage",
        "{r}"
    );
    let st = state_of(&r);
    let answer = json!({"s": {"role": "assistant", "content": {"type": "text", "text": "yo"}, "model": "m1"}});
    let r = go(
        &s,
        args.clone(),
        json!({"sampling": {}}),
        Some(&st),
        answer.clone(),
    )
    .await;
    assert_eq!(r["result"]["content"][0]["text"], "model m1", "{r}");
    let r = go(&s, args.clone(), json!({"sampling": {}}), Some(&st), answer).await;
    assert_eq!(r["result"]["content"][0]["text"], "model m1", "{r}");
    assert_eq!(r["result"]["_meta"]["dev.mcp-runtime/replayed"], true);
    // Another answer to the same state is refused.
    let other = json!({"s": {"role": "assistant", "content": {"type": "text", "text": "yo"}, "model": "m2"}});
    let r = go(&s, args, json!({"sampling": {}}), Some(&st), other).await;
    assert_eq!(r["error"]["code"], -32602);
}

#[tokio::test]
async fn roots_are_gated_and_round_trip() {
    let (s, _) = server();
    let args = json!({"mode": "roots"});
    let r = go(&s, args.clone(), caps_form(), None, json!({})).await;
    assert_eq!(
        r["error"]["data"],
        json!({"requiredCapabilities": {"roots": {}}})
    );
    let r = go(&s, args.clone(), json!({"roots": {}}), None, json!({})).await;
    assert_eq!(
        r["result"]["inputRequests"]["r"]["method"], "roots/list",
        "{r}"
    );
    // A form capability was not declared, so no elicitation may be embedded.
    assert!(r["result"]["inputRequests"].get("why").is_none());
    let st = state_of(&r);
    let r = go(
        &s,
        args,
        json!({"roots": {}}),
        Some(&st),
        json!({"r": {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}}),
    )
    .await;
    assert_eq!(r["result"]["content"][0]["text"], "2 roots", "{r}");
}

#[tokio::test]
async fn url_only_client_cannot_get_a_form() {
    let (s, _) = server();
    let r = go(
        &s,
        json!({"mode": "rounds"}),
        json!({"elicitation": {"url": {}}}),
        None,
        json!({}),
    )
    .await;
    assert_eq!(r["error"]["code"], -32021);
    assert_eq!(
        r["error"]["data"],
        json!({"requiredCapabilities": {"elicitation": {"form": {}}}})
    );
    // `elicitation: {}` means form mode.
    let r = go(
        &s,
        json!({"mode": "rounds"}),
        json!({"elicitation": {}}),
        None,
        json!({}),
    )
    .await;
    assert_eq!(r["result"]["resultType"], "input_required");
}

#[tokio::test]
async fn commit_runs_inside_the_claim_and_failure_keeps_it_retryable() {
    let (s, effects) = server();
    let r = go(&s, json!({"mode": "commit"}), caps_form(), None, json!({})).await;
    let st = state_of(&r);
    // Failing mutation: tool error, nothing consumed.
    let failing = go(
        &s,
        json!({"mode": "commit", "fail": 1}),
        caps_form(),
        None,
        json!({}),
    )
    .await;
    let fst = state_of(&failing);
    let r = go(
        &s,
        json!({"mode": "commit", "fail": 1}),
        caps_form(),
        Some(&fst),
        json!({"which": which()}),
    )
    .await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("disk full")
    );
    assert_eq!(effects.count(), 0);
    // The failed commit rolled the claim back: the same state can be tried again.
    let r = go(
        &s,
        json!({"mode": "commit", "fail": 1}),
        caps_form(),
        Some(&fst),
        json!({"which": which()}),
    )
    .await;
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("disk full"),
        "{r}"
    );
    // Succeeding mutation runs once.
    let r = go(
        &s,
        json!({"mode": "commit"}),
        caps_form(),
        Some(&st),
        json!({"which": which()}),
    )
    .await;
    assert_eq!(r["result"]["content"][0]["text"], "deleted n2", "{r}");
    let r = go(
        &s,
        json!({"mode": "commit"}),
        caps_form(),
        Some(&st),
        json!({"which": which()}),
    )
    .await;
    // The identical retry gets the recorded result again; nothing runs twice.
    assert_eq!(r["result"]["content"][0]["text"], "deleted n2", "{r}");
    assert_eq!(r["result"]["_meta"]["dev.mcp-runtime/replayed"], true);
    assert_eq!(effects.count(), 1);
}

#[tokio::test]
async fn url_elicitation_is_gated_and_round_trips() {
    let (s, _) = server();
    let args = json!({"mode": "url"});
    let r = go(&s, args.clone(), caps_form(), None, json!({})).await;
    assert_eq!(
        r["error"]["data"],
        json!({"requiredCapabilities": {"elicitation": {"url": {}}}})
    );
    let caps = json!({"elicitation": {"url": {}}});
    let r = go(&s, args.clone(), caps.clone(), None, json!({})).await;
    let req = &r["result"]["inputRequests"]["pay"];
    assert_eq!(req["params"]["mode"], "url", "{r}");
    assert_eq!(req["params"]["url"], "https://pay.example/x");
    let st = state_of(&r);
    let r = go(
        &s,
        args.clone(),
        caps.clone(),
        Some(&st),
        json!({"pay": {"action": "accept"}}),
    )
    .await;
    assert_eq!(r["result"]["content"][0]["text"], "paid", "{r}");
    let r = go(
        &s,
        args,
        caps,
        Some(&st),
        json!({"pay": {"action": "accept"}}),
    )
    .await;
    assert_eq!(r["result"]["content"][0]["text"], "paid", "{r}");
    assert_eq!(r["result"]["_meta"]["dev.mcp-runtime/replayed"], true);
}

#[tokio::test]
async fn rounds_are_bounded() {
    let effects = Effects::default();
    let s = Server::builder(Implementation::new("t", "1"))
        .tools(tools![FlowTool])
        .state(effects)
        .limits(Limits::default().with_max_rounds(3))
        .build()
        .unwrap();
    let args = json!({"mode": "endless"});
    let mut r = go(&s, args.clone(), caps_form(), None, json!({})).await;
    for round in 0..10 {
        if r.get("error").is_some() {
            assert_eq!(round, 4, "refused after the limit: {r}");
            assert_eq!(r["error"]["code"], -32602);
            assert!(r["error"]["message"].as_str().unwrap().contains("rounds"));
            return;
        }
        let st = state_of(&r);
        let key = keys(&r).pop().unwrap();
        r = go(
            &s,
            args.clone(),
            caps_form(),
            Some(&st),
            json!({key: why()}),
        )
        .await;
    }
    panic!("never refused");
}

#[tokio::test]
async fn detached_contexts_run_tools_directly() {
    let effects = Effects::default();
    let mut ctx = RequestContext::with_state(effects.clone());
    // Without capabilities an elicitation is -32021.
    let e = FlowTool::default()
        .call(
            &mut ctx,
            match json!({"mode": "rounds"}) {
                Value::Object(o) => o,
                _ => unreachable!(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.as_protocol().unwrap().code().code(), -32021);
    // With them, the first pass signals input required.
    let mut ctx = RequestContext::default()
        .and_state(effects)
        .with_capabilities(serde_json::from_value(caps_form()).unwrap());
    let e = FlowTool::default()
        .call(
            &mut ctx,
            match json!({"mode": "rounds"}) {
                Value::Object(o) => o,
                _ => unreachable!(),
            },
        )
        .await
        .unwrap_err();
    assert!(e.is_input_required());
    assert_eq!(ctx.principal().as_str(), "local");
}
