//! URL-mode elicitation: capability gating for every capability form, the runtime-minted
//! correlation id kept in the signed state, "accept" as mere consent (ask again until the
//! handler's own record says the out-of-band step is done), and URL hygiene.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod core_support;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use core_support::*;
use futures::future::BoxFuture;
use mcp_runtime::context::{Elicitation, RequestContext};
use mcp_runtime::prelude::*;
use mcp_runtime::state::CorrelationId;
use mcp_runtime::tool::{IntoCallToolResult, ToolHandler};
use mcp_types::{ClientCapabilities, ElicitationCapability, InputSchema, JsonObject, Tool};
use serde_json::{Value, json};

/// The handler's own record of finished out-of-band steps, and every correlation id seen.
#[derive(Clone, Default)]
struct Record {
    done: Arc<Mutex<HashSet<CorrelationId>>>,
    seen: Arc<Mutex<Vec<CorrelationId>>>,
}

/// `connect`: sends the user to a page; completes once `Record.done` holds its correlation id.
struct Connect(Tool, ClientCapabilities);

impl Default for Connect {
    fn default() -> Self {
        let Value::Object(o) = json!({"type": "object"}) else {
            unreachable!()
        };
        Self(
            Tool::new("connect", InputSchema::new(o).unwrap()),
            // It asks in URL mode: declared, so a client without it is refused up front.
            ClientCapabilities::none().with_elicitation(ElicitationCapability::url()),
        )
    }
}

impl ToolHandler for Connect {
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
    ) -> BoxFuture<'a, Result<mcp_types::CallToolResult, HandlerError>> {
        Box::pin(async move {
            let record = ctx.state::<Record>()?;
            let corr = ctx.correlation_id("connect")?;
            record.seen.lock().unwrap().push(corr);
            if record.done.lock().unwrap().contains(&corr) {
                return "connected".into_call_tool_result();
            }
            let url = if args.get("leak").is_some() {
                format!("http://127.0.0.1/connect?c={corr}")
            } else {
                "http://127.0.0.1/connect/opaque-link".to_owned()
            };
            match ctx.elicit_url("connect", "Open the page", &url).await? {
                Elicitation::Accepted(()) if record.done.lock().unwrap().contains(&corr) => {
                    "connected".into_call_tool_result()
                }
                Elicitation::Accepted(()) => {
                    Err(ctx.elicit_url_again("connect", "Not finished yet; open the page", &url)?)
                }
                Elicitation::Declined => "declined".into_call_tool_result(),
                Elicitation::Cancelled => "cancelled".into_call_tool_result(),
            }
        })
    }
}

fn server() -> (Server, Record) {
    let record = Record::default();
    let s = Server::builder(Implementation::new("t", "1"))
        .tools(tools![Connect])
        .state(record.clone())
        .build()
        .unwrap();
    (s, record)
}

async fn go(s: &Server, args: Value, caps: Value, state: Option<&str>, responses: Value) -> Value {
    let body = match state {
        None => call(1, "connect", args, caps),
        Some(st) => retry(2, "connect", args, caps, st, responses),
    };
    parse(s.handle_bytes(&body, &Principal::new("alice")).await)
}

fn url_caps() -> Value {
    json!({"elicitation": {"url": {}}})
}

fn accept() -> Value {
    json!({"connect": {"action": "accept"}})
}

fn state_of(r: &Value) -> String {
    r["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned()
}

#[tokio::test]
async fn url_mode_is_offered_only_when_this_request_declares_it() {
    let (s, _) = server();
    // Every form that lacks `url` (including the `{}` that means form only) is refused with
    // exactly the missing capability.
    for caps in [
        json!({}),
        json!({"elicitation": {}}),
        json!({"elicitation": {"form": {}}}),
        json!({"sampling": {}, "roots": {}}),
    ] {
        let r = go(&s, json!({}), caps.clone(), None, json!({})).await;
        assert_eq!(r["error"]["code"], -32021, "{caps}: {r}");
        assert_eq!(
            r["error"]["data"],
            json!({"requiredCapabilities": {"elicitation": {"url": {}}}}),
            "{caps}"
        );
    }
    for caps in [url_caps(), json!({"elicitation": {"form": {}, "url": {}}})] {
        let r = go(&s, json!({}), caps.clone(), None, json!({})).await;
        let req = &r["result"]["inputRequests"]["connect"];
        assert_eq!(req["method"], "elicitation/create", "{caps}: {r}");
        assert_eq!(req["params"]["mode"], "url");
        assert_eq!(req["params"]["url"], "http://127.0.0.1/connect/opaque-link");
    }
}

#[tokio::test]
async fn accept_is_only_consent_and_the_handler_asks_again_until_its_record_says_done() {
    let (s, record) = server();
    let r = go(&s, json!({}), url_caps(), None, json!({})).await;
    let st0 = state_of(&r);
    // The user accepted but did not finish the page: asked again, with a new state.
    let r = go(&s, json!({}), url_caps(), Some(&st0), accept()).await;
    assert_eq!(
        r["result"]["inputRequests"]["connect"]["params"]["message"],
        "Not finished yet; open the page",
        "{r}"
    );
    let st1 = state_of(&r);
    assert_ne!(st0, st1);
    // The same correlation id on every pass of the flow.
    let seen = record.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0], seen[1]);
    // Replaying the first acceptance is refused (one-time state).
    let r = go(&s, json!({}), url_caps(), Some(&st0), accept()).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    // The out-of-band step finishes (as the page would record it); the next accept completes.
    record.done.lock().unwrap().insert(seen[0]);
    let r = go(&s, json!({}), url_caps(), Some(&st1), accept()).await;
    assert_eq!(r["result"]["content"][0]["text"], "connected", "{r}");
    assert!(record.seen.lock().unwrap().iter().all(|c| *c == seen[0]));
}

#[tokio::test]
async fn each_flow_gets_its_own_correlation_id_and_the_state_carries_it() {
    let (s, record) = server();
    let a = state_of(&go(&s, json!({}), url_caps(), None, json!({})).await);
    let b = state_of(&go(&s, json!({}), url_caps(), None, json!({})).await);
    let seen = record.seen.lock().unwrap().clone();
    assert_ne!(seen[0], seen[1]);
    // The id travels in the signed (readable, not secret) state payload.
    for (token, id) in [(&a, seen[0]), (&b, seen[1])] {
        let payload = mcp_runtime::state::read_unverified(token).unwrap();
        assert_eq!(payload.correlations.get("connect"), Some(&id));
    }
}

#[tokio::test]
async fn decline_and_cancel_reach_the_handler() {
    let (s, _) = server();
    for (action, text) in [("decline", "declined"), ("cancel", "cancelled")] {
        let st = state_of(&go(&s, json!({}), url_caps(), None, json!({})).await);
        let r = go(
            &s,
            json!({}),
            url_caps(),
            Some(&st),
            json!({"connect": {"action": action}}),
        )
        .await;
        assert_eq!(r["result"]["content"][0]["text"], text, "{r}");
    }
}

#[tokio::test]
async fn a_url_carrying_the_correlation_id_is_refused() {
    let (s, _) = server();
    let r = go(&s, json!({"leak": true}), url_caps(), None, json!({})).await;
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("correlation id")
    );
}
