//! Prompts, resources and completion end to end through `Server::handle_bytes`, with handlers
//! declared by `#[prompt]` and `#[resource]`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcp_runtime::prelude::*;
use mcp_runtime::prompt::PromptHandler;
use mcp_runtime::resource::ResourceUri;
use mcp_runtime::service::{
    CancellationToken, McpService, Message, NotificationSink, RequestScope,
};
use mcp_types::CompletionContext;
use mcp_types::LoggingLevel;
use serde_json::{Value, json};

#[args]
struct GreetArgs {
    /// Who to greet
    name: String,
    /// Greeting style
    style: Option<String>,
}

fn names(value: &str, _: &CompletionContext) -> Vec<String> {
    ["alice", "albert", "bob"]
        .iter()
        .filter(|n| n.starts_with(value))
        .map(|n| (*n).to_owned())
        .collect()
}

/// Greets someone.
#[prompt(complete(name = names))]
async fn greet(ctx: &mut RequestContext, args: GreetArgs) -> String {
    ctx.log(LoggingLevel::Info, "greeting").await;
    ctx.progress(1, Some(1), None).await;
    format!("{} {}", args.style.as_deref().unwrap_or("Hello"), args.name)
}

#[derive(ElicitForm)]
struct Topic {
    /// The topic
    topic: String,
}

/// Asks for a topic first.
#[prompt(requires(form_elicitation))]
async fn ask(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    Ok(
        match ctx.elicit::<Topic>("topic", "Which topic?", ()).await? {
            Elicitation::Accepted(t) => format!("Talk about {}", t.topic),
            Elicitation::Declined => "declined".to_owned(),
            Elicitation::Cancelled => "cancelled".to_owned(),
        },
    )
}

/// Another prompt that asks, to check states do not cross targets.
#[prompt(requires(form_elicitation))]
async fn ask_too(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    ask(ctx).await
}

/// A fixed note.
#[resource(
    uri = "mem://readme",
    mime_type = "text/markdown",
    ttl_ms = 1000,
    cache_scope = "public"
)]
fn readme() -> &'static str {
    "# Readme"
}

#[args]
struct ItemVars {
    id: String,
}

/// Items by id; only ids 1-3 exist.
#[resource(uri = "mem://items/{id}", name = "item", complete(id = item_ids))]
fn item(vars: ItemVars) -> Result<String, HandlerError> {
    match vars.id.as_str() {
        "1" | "2" | "3" => Ok(format!("item {}", vars.id)),
        other => Err(mcp_runtime::resource::not_found(&format!(
            "mem://items/{other}"
        ))),
    }
}

fn item_ids(value: &str, _: &CompletionContext) -> Vec<String> {
    (1..=3)
        .map(|i| i.to_string())
        .filter(|i| i.starts_with(value))
        .collect()
}

/// A secret that needs confirmation before it is read.
#[resource(uri = "mem://secret", requires(form_elicitation))]
async fn secret(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    match ctx
        .elicit::<Topic>("why", "Why do you need it?", ())
        .await?
    {
        Elicitation::Accepted(t) => Ok(format!("secret for {}", t.topic)),
        Elicitation::Declined | Elicitation::Cancelled => Err(HandlerError::tool("not shared")),
    }
}

fn server() -> Server {
    Server::builder(Implementation::new("t", "1"))
        .prompts(prompts![greet, ask, ask_too])
        .resources(resources![readme, item, secret])
        .build()
        .unwrap()
}

fn meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

fn form() -> Value {
    json!({"elicitation": {"form": {}}})
}

async fn send(s: &Server, method: &str, mut params: Value) -> Value {
    if params.get("_meta").is_none() {
        params["_meta"] = meta(json!({}));
    }
    let body =
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .unwrap();
    serde_json::from_slice(
        &s.handle_bytes(&body, &Principal::new("alice"))
            .await
            .unwrap(),
    )
    .unwrap()
}

#[tokio::test]
async fn capabilities_follow_what_is_registered() {
    let s = server();
    let d = send(&s, "server/discover", json!({})).await;
    let caps = &d["result"]["capabilities"];
    assert!(caps["prompts"].is_object());
    assert!(caps["resources"].is_object());
    assert!(caps["completions"].is_object());
    assert!(caps.get("tools").is_none(), "{caps}");
    assert_eq!(
        send(&s, "tools/list", json!({})).await["error"]["code"],
        -32601
    );
    assert_eq!(
        send(&s, "subscriptions/listen", json!({})).await["error"]["code"],
        -32601
    );

    let bare = Server::builder(Implementation::new("t", "1"))
        .prompts(prompts![ask])
        .build()
        .unwrap();
    let d = send(&bare, "server/discover", json!({})).await;
    let caps = &d["result"]["capabilities"];
    assert!(caps["prompts"].is_object());
    assert!(
        caps.get("resources").is_none() && caps.get("completions").is_none(),
        "{caps}"
    );
    for m in [
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "completion/complete",
    ] {
        assert_eq!(
            send(&bare, m, json!({"uri": "x"})).await["error"]["code"],
            -32601,
            "{m}"
        );
    }
}

#[tokio::test]
async fn prompt_descriptors_are_deterministic() {
    let s = server();
    let r = send(&s, "prompts/list", json!({})).await;
    assert_eq!(
        r["result"]["prompts"][0],
        json!({
            "name": "greet",
            "description": "Greets someone.",
            "arguments": [
                {"name": "name", "description": "Who to greet", "required": true},
                {"name": "style", "description": "Greeting style", "required": false}
            ]
        })
    );
    assert_eq!(r, send(&server(), "prompts/list", json!({})).await);
    let t = send(&s, "resources/templates/list", json!({})).await;
    assert_eq!(
        t["result"]["resourceTemplates"],
        json!([{"uriTemplate": "mem://items/{id}", "name": "item", "description": "Items by id; only ids 1-3 exist."}])
    );
    let l = send(&s, "resources/list", json!({})).await;
    let uris: Vec<&str> = l["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris, ["mem://readme", "mem://secret"]);
}

#[tokio::test]
async fn pages_walk_the_list_with_the_same_cache_hints() {
    let s = Server::builder(Implementation::new("t", "1"))
        .prompts(prompts![greet, ask, ask_too])
        .page_size(2)
        .build()
        .unwrap();
    let first = send(&s, "prompts/list", json!({})).await["result"].clone();
    assert_eq!(first["prompts"].as_array().unwrap().len(), 2);
    let cursor = first["nextCursor"].as_str().unwrap().to_owned();
    let second = send(&s, "prompts/list", json!({"cursor": cursor})).await["result"].clone();
    assert_eq!(second["prompts"][0]["name"], "ask_too");
    assert!(second.get("nextCursor").is_none());
    assert_eq!(first["cacheScope"], second["cacheScope"]);
    assert_eq!(first["ttlMs"], second["ttlMs"]);
    // Stable: the same cursor gives the same page.
    assert_eq!(
        second,
        send(&s, "prompts/list", json!({"cursor": cursor})).await["result"]
    );
    // A cursor of another list is refused.
    let bad = send(&s, "prompts/list", json!({"cursor": "bm9wZQ"})).await;
    assert_eq!(bad["error"]["code"], -32602);
}

#[tokio::test]
async fn prompts_get_substitutes_and_validates_arguments() {
    let s = server();
    let r = send(
        &s,
        "prompts/get",
        json!({"name": "greet", "arguments": {"name": "Ann"}}),
    )
    .await;
    assert_eq!(r["result"]["messages"][0]["content"]["text"], "Hello Ann");
    assert_eq!(r["result"]["resultType"], "complete");
    let missing = send(&s, "prompts/get", json!({"name": "greet", "arguments": {}})).await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    let unknown = send(&s, "prompts/get", json!({"name": "nope"})).await;
    assert_eq!(unknown["error"]["code"], -32602);
    let not_strings = send(
        &s,
        "prompts/get",
        json!({"name": "greet", "arguments": {"name": 1}}),
    )
    .await;
    assert_eq!(not_strings["error"]["code"], -32602);
}

#[tokio::test]
async fn prompts_get_logs_and_reports_progress_when_asked() {
    let s = server();
    let (sink, mut rx) = NotificationSink::channel(16, CancellationToken::new());
    let mut m = meta(json!({}));
    m["progressToken"] = json!(7);
    m["io.modelcontextprotocol/logLevel"] = json!("debug");
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/get",
        "params": {"_meta": m, "name": "greet", "arguments": {"name": "x"}}}))
    .unwrap();
    let ctx = RequestScope::new(Principal::new("a"), sink, CancellationToken::new());
    McpService::handle(
        &s,
        Message::parse(bytes::Bytes::copy_from_slice(&body)).unwrap(),
        ctx,
    )
    .await
    .unwrap();
    let mut methods = Vec::new();
    while let Ok(n) = rx.try_recv() {
        methods.push(serde_json::from_slice::<Value>(&n).unwrap()["method"].clone());
    }
    assert_eq!(
        methods,
        [
            json!("notifications/message"),
            json!("notifications/progress")
        ]
    );
}

#[tokio::test]
async fn resources_read_static_and_templates() {
    let s = server();
    let r = send(&s, "resources/read", json!({"uri": "mem://readme"})).await;
    assert_eq!(
        r["result"]["contents"],
        json!([{"uri": "mem://readme", "mimeType": "text/markdown", "text": "# Readme"}])
    );
    assert_eq!(r["result"]["ttlMs"], 1000);
    assert_eq!(r["result"]["cacheScope"], "public");
    let t = send(&s, "resources/read", json!({"uri": "mem://items/2"})).await;
    assert_eq!(t["result"]["contents"][0]["text"], "item 2");
    assert_eq!(t["result"]["cacheScope"], "private");
}

#[tokio::test]
async fn unknown_resources_answer_invalid_params_with_the_uri() {
    let s = server();
    for uri in ["mem://nothing", "mem://items/9", "mem://items/a/b", ""] {
        let r = send(&s, "resources/read", json!({"uri": uri})).await;
        assert_eq!(r["error"]["code"], -32602, "{uri}: {r}");
        assert_eq!(r["error"]["data"]["uri"], uri);
    }
}

#[tokio::test]
async fn completion_uses_the_providers() {
    let s = server();
    let r = send(
        &s,
        "completion/complete",
        json!({
            "ref": {"type": "ref/prompt", "name": "greet"},
            "argument": {"name": "name", "value": "al"}
        }),
    )
    .await;
    assert_eq!(
        r["result"]["completion"]["values"],
        json!(["alice", "albert"])
    );
    assert_eq!(r["result"]["completion"]["hasMore"], false);
    let none = send(
        &s,
        "completion/complete",
        json!({
            "ref": {"type": "ref/prompt", "name": "greet"},
            "argument": {"name": "style", "value": ""}
        }),
    )
    .await;
    assert_eq!(none["result"]["completion"]["values"], json!([]));
    let t = send(
        &s,
        "completion/complete",
        json!({
            "ref": {"type": "ref/resource", "uri": "mem://items/{id}"},
            "argument": {"name": "id", "value": "2"}
        }),
    )
    .await;
    assert_eq!(t["result"]["completion"]["values"], json!(["2"]));
    for bad in [
        json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "zzz", "value": ""}}),
        json!({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "a", "value": ""}}),
        json!({"ref": {"type": "ref/resource", "uri": "mem://x/{y}"}, "argument": {"name": "y", "value": ""}}),
        json!({"ref": {"type": "ref/other"}, "argument": {"name": "y", "value": ""}}),
    ] {
        assert_eq!(
            send(&s, "completion/complete", bad.clone()).await["error"]["code"],
            -32602,
            "{bad}"
        );
    }
}

async fn first_leg(s: &Server, method: &str, target: Value) -> (String, Value) {
    let mut p = target;
    p["_meta"] = meta(form());
    let r = send(s, method, p).await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    (
        r["result"]["requestState"].as_str().unwrap().to_owned(),
        r["result"]["inputRequests"].clone(),
    )
}

async fn retry(s: &Server, method: &str, target: Value, state: &str, responses: Value) -> Value {
    let mut p = target;
    p["_meta"] = meta(form());
    p["requestState"] = json!(state);
    p["inputResponses"] = responses;
    send(s, method, p).await
}

#[tokio::test]
async fn prompts_get_asks_through_the_typed_elicitation_api() {
    let s = server();
    let target = json!({"name": "ask"});
    let (state, requests) = first_leg(&s, "prompts/get", target.clone()).await;
    assert_eq!(requests["topic"]["method"], "elicitation/create");
    let accept = json!({"topic": {"action": "accept", "content": {"topic": "rust"}}});
    let r = retry(&s, "prompts/get", target.clone(), &state, accept.clone()).await;
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"],
        "Talk about rust"
    );
    // One use only.
    let again = retry(&s, "prompts/get", target.clone(), &state, accept).await;
    assert_eq!(again["error"]["code"], -32602, "{again}");

    let (state, _) = first_leg(&s, "prompts/get", target.clone()).await;
    let r = retry(
        &s,
        "prompts/get",
        target.clone(),
        &state,
        json!({"topic": {"action": "decline"}}),
    )
    .await;
    assert_eq!(r["result"]["messages"][0]["content"]["text"], "declined");
    let (state, _) = first_leg(&s, "prompts/get", target.clone()).await;
    let r = retry(
        &s,
        "prompts/get",
        target,
        &state,
        json!({"topic": {"action": "cancel"}}),
    )
    .await;
    assert_eq!(r["result"]["messages"][0]["content"]["text"], "cancelled");
}

#[tokio::test]
async fn prompts_get_without_the_capability_is_refused() {
    let s = server();
    let r = send(&s, "prompts/get", json!({"name": "ask"})).await;
    assert_eq!(r["error"]["code"], -32021, "{r}");
}

#[tokio::test]
async fn a_state_is_bound_to_method_and_target() {
    let s = server();
    let (state, _) = first_leg(&s, "prompts/get", json!({"name": "ask"})).await;
    let accept = json!({"topic": {"action": "accept", "content": {"topic": "x"}}});
    let other_prompt = retry(
        &s,
        "prompts/get",
        json!({"name": "ask_too"}),
        &state,
        accept.clone(),
    )
    .await;
    assert_eq!(other_prompt["error"]["code"], -32602, "{other_prompt}");
    let as_read = retry(
        &s,
        "resources/read",
        json!({"uri": "mem://secret"}),
        &state,
        json!({"why": accept["topic"]}),
    )
    .await;
    assert_eq!(as_read["error"]["code"], -32602, "{as_read}");
}

#[tokio::test]
async fn resources_read_asks_and_binds_the_uri() {
    let s = server();
    let target = json!({"uri": "mem://secret"});
    let (state, requests) = first_leg(&s, "resources/read", target.clone()).await;
    assert!(requests["why"].is_object());
    let r = retry(
        &s,
        "resources/read",
        target,
        &state,
        json!({"why": {"action": "accept", "content": {"topic": "audit"}}}),
    )
    .await;
    assert_eq!(
        r["result"]["contents"][0]["text"], "secret for audit",
        "{r}"
    );
    let (state, _) = first_leg(&s, "resources/read", json!({"uri": "mem://secret"})).await;
    let r = retry(
        &s,
        "resources/read",
        json!({"uri": "mem://secret"}),
        &state,
        json!({"why": {"action": "decline"}}),
    )
    .await;
    assert_eq!(r["error"]["code"], -32603, "{r}");
}

#[test]
fn bad_registrations_fail_the_build() {
    let dup = Server::builder(Implementation::new("t", "1"))
        .prompts(prompts![greet, greet])
        .build();
    assert!(
        matches!(dup, Err(mcp_runtime::server::BuildError::DuplicatePrompt(n)) if n == "greet")
    );
    let dup = Server::builder(Implementation::new("t", "1"))
        .resources(resources![readme, readme])
        .build();
    assert!(matches!(
        dup,
        Err(mcp_runtime::server::BuildError::Resource(_))
    ));
}

/// Reviews a note.
#[prompt]
async fn review(
    /// The note to review
    note: String,
    /// Tone of the review
    tone: Option<String>,
) -> String {
    format!(
        "Review {note} in a {} tone.",
        tone.as_deref().unwrap_or("friendly")
    )
}

#[args]
struct ReviewArgs {
    /// The note to review
    note: String,
    /// Tone of the review
    tone: Option<String>,
}

/// Reviews a note.
#[prompt(name = "review")]
async fn review_struct(args: ReviewArgs) -> String {
    format!("{}{:?}", args.note, args.tone)
}

#[tokio::test]
async fn a_prompt_takes_documented_string_parameters() {
    assert_eq!(
        serde_json::to_string(review {}.descriptor()).unwrap(),
        serde_json::to_string(review_struct {}.descriptor()).unwrap(),
        "the same arguments as the struct's, in order, with descriptions and required flags"
    );
    let s = Server::builder(Implementation::new("t", "0"))
        .prompts(prompts![review])
        .build()
        .unwrap();
    let r = send(
        &s,
        "prompts/get",
        json!({"name": "review", "arguments": {"note": "a.md"}}),
    )
    .await;
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"],
        "Review a.md in a friendly tone."
    );
    let missing = send(
        &s,
        "prompts/get",
        json!({"name": "review", "arguments": {}}),
    )
    .await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
}

#[derive(Clone)]
struct House(&'static str);
type HouseState = State<House>;

/// Greets the caller in the house style: extractors and aliases, as in tools.
#[prompt]
fn house_greeting(
    style: HouseState,
    caller: Principal,
    /// Who else to greet
    guest: Option<String>,
) -> String {
    format!(
        "{} {} {}",
        style.0.0,
        caller.as_str(),
        guest.unwrap_or_default()
    )
}

#[tokio::test]
async fn a_prompt_takes_extractors_by_trait() {
    let s = Server::builder(Implementation::new("t", "0"))
        .prompts(prompts![house_greeting])
        .state(House("Ahoy"))
        .build()
        .unwrap();
    let r = send(
        &s,
        "prompts/get",
        json!({"name": "house_greeting", "arguments": {"guest": "Bo"}}),
    )
    .await;
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"],
        "Ahoy alice Bo"
    );
    let extra = send(
        &s,
        "prompts/get",
        json!({"name": "house_greeting", "arguments": {"guest": "Bo", "x": "1"}}),
    )
    .await;
    assert_eq!(extra["error"]["code"], -32602, "{extra}");
}

/// The shelf a read comes from: application state, taken through an alias.
#[derive(Clone)]
struct Shelf(&'static str);

type ShelfState = State<Shelf>;
type Vars = ItemVars;

/// The caller's initial: a user's own extractor, for resources as for tools.
struct Initial(char);

impl mcp_runtime::extract::FromRequest for Initial {
    fn from_request(
        parts: &mut mcp_runtime::extract::RequestParts<'_>,
    ) -> Result<Self, HandlerError> {
        let uri = parts.resource_uri().unwrap_or("no uri");
        let c = parts.context().principal().as_str().chars().next();
        c.map(Initial)
            .ok_or_else(|| HandlerError::tool(format!("no initial for {uri}")))
    }
}

/// Shelved items: every parameter is made by its `FromRequest` impl, aliases included.
#[resource(uri = "mem://shelf/{id}")]
fn shelved(shelf: ShelfState, who: Initial, uri: ResourceUri, vars: Vars) -> String {
    format!("{} {} {} {}", shelf.0.0, who.0, uri.0, vars.id)
}

/// The URI only: the template's variable is not taken, which is fine for a read.
#[resource(uri = "mem://echo/{rest}")]
fn echo_uri(uri: ResourceUri) -> String {
    uri.0
}

#[tokio::test]
async fn resource_parameters_are_extractors_like_tool_parameters() {
    let s = Server::builder(Implementation::new("t", "1"))
        .state(Shelf("top"))
        .resources(resources![shelved, echo_uri])
        .build()
        .unwrap();
    let r = send(&s, "resources/read", json!({"uri": "mem://shelf/7"})).await;
    assert_eq!(
        r["result"]["contents"][0]["text"], "top a mem://shelf/7 7",
        "{r}"
    );
    let r = send(&s, "resources/read", json!({"uri": "mem://echo/x%20y"})).await;
    assert_eq!(
        r["result"]["contents"][0]["text"], "mem://echo/x%20y",
        "{r}"
    );
    let templates = send(&s, "resources/templates/list", json!({})).await;
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"],
        "mem://shelf/{id}"
    );
}

#[tokio::test]
async fn a_missing_state_fails_the_read_with_what_to_register() {
    let s = Server::builder(Implementation::new("t", "1"))
        .resources(resources![shelved])
        .build()
        .unwrap();
    let r = send(&s, "resources/read", json!({"uri": "mem://shelf/7"})).await;
    let text = r.to_string();
    assert!(
        text.contains("Shelf") && text.contains(".state(value)"),
        "{r}"
    );
}

/// A colour: a variable whose value is checked by parsing.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Colour {
    Red,
    Blue,
}

#[args]
struct ColourVars {
    colour: Colour,
}

/// Variables that must parse as a colour.
#[resource(uri = "mem://colours/{colour}")]
fn colour(vars: ColourVars) -> String {
    match vars.colour {
        Colour::Red => "warm",
        Colour::Blue => "cold",
    }
    .to_owned()
}

#[tokio::test]
async fn bad_template_variables_say_what_the_template_takes() {
    let s = Server::builder(Implementation::new("t", "1"))
        .resources(resources![colour])
        .build()
        .unwrap();
    let ok = send(&s, "resources/read", json!({"uri": "mem://colours/blue"})).await;
    assert_eq!(ok["result"]["contents"][0]["text"], "cold", "{ok}");
    let r = send(&s, "resources/read", json!({"uri": "mem://colours/green"})).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("unknown variant `green`")
            && message.contains("expected the URI variables {colour: "),
        "{message}"
    );
}

/// Two variables structs: which parameter is the arguments is only known from the trait.
#[resource(uri = "mem://twice/{id}")]
fn twice(a: ItemVars, b: Vars) -> String {
    format!("{}{}", a.id, b.id)
}

/// A tool has no URI to read.
#[tool]
fn wants_uri(uri: ResourceUri) -> String {
    uri.0
}

/// Nor does a prompt.
#[prompt]
fn prompt_wants_uri(uri: ResourceUri) -> String {
    uri.0
}

#[test]
fn misdeclared_parameters_fail_the_build_with_what_to_do() {
    let twice = Server::builder(Implementation::new("t", "1"))
        .resources(resources![twice])
        .build();
    let e = twice.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("two parameters are arguments types"), "{e}");
    let tool = Server::builder(Implementation::new("t", "1"))
        .tools(tools![wants_uri])
        .build();
    let e = tool.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        e.contains("`ResourceUri` is a parameter of `#[resource]` functions"),
        "{e}"
    );
    let prompt = Server::builder(Implementation::new("t", "1"))
        .prompts(prompts![prompt_wants_uri])
        .build();
    let e = prompt.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("a prompt is not a read of a URI"), "{e}");
}
