//! `#[tool]`: descriptor snapshots (deterministic schemas), capabilities, argument validation
//! messages and calls through the generated `ToolHandler`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly by design

use std::sync::Arc;

use mcp_runtime::__macro_support_v1::{HandlerError, Json, RequestContext, State, ToolHandler};
use mcp_runtime::client::{Client, InProcess};
use mcp_runtime::extract::{Args, Cancellation, FromRequest, RequestParts};
use mcp_runtime::server::Server;
use mcp_runtime::{Principal, args, tool, tools};
use mcp_types::{
    CallToolResult, ClientCapabilities, ElicitationCapability, Implementation, SamplingCapability,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

mod support;

#[args]
#[serde(rename_all = "camelCase")]
struct DeleteArgs {
    /// File URI of the workspace, e.g. file:///home/me/notes
    workspace_uri: String,
    /// Text the note title must contain (case-insensitive)
    title: String,
}

/// Delete one note, after the user picks which and confirms.
#[tool(destructive, requires(form_elicitation))]
async fn notes_delete(_ctx: &mut RequestContext, args: DeleteArgs) -> Result<String, HandlerError> {
    Ok(format!(
        "would delete {:?} in {}",
        args.title, args.workspace_uri
    ))
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Order {
    Newest,
    Oldest,
}

#[args]
#[serde(rename_all = "camelCase")]
struct ListArgs {
    /// Workspace URI
    workspace_uri: String,
    /// At most this many notes
    limit: Option<u32>,
    /// Sort order
    #[serde(default)]
    order: Option<Order>,
    /// Tags to filter by
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Serialize, JsonSchema)]
struct NoteSummary {
    id: String,
    title: String,
}

#[derive(Serialize, JsonSchema)]
struct ListOutput {
    notes: Vec<NoteSummary>,
    /// Present when more notes match
    next: Option<String>,
}

/// List notes in a workspace.
///
/// Newest first unless `order` says otherwise.
#[tool(
    name = "notes.list",
    title = "List notes",
    read_only,
    idempotent,
    open_world = false
)]
fn notes_list(args: ListArgs) -> Result<Json<ListOutput>, HandlerError> {
    let n = args.limit.unwrap_or(1) as usize;
    let _ = (args.order, args.tags);
    Ok(Json(ListOutput {
        notes: (0..n)
            .map(|i| NoteSummary {
                id: format!("n-{i}"),
                title: format!("{} {i}", args.workspace_uri),
            })
            .collect(),
        next: None,
    }))
}

#[derive(Clone)]
struct Greeting(String);

/// Says hello.
#[tool(requires(sampling, roots, url_elicitation))]
fn hello(ctx: &RequestContext, State(greeting): State<Arc<Greeting>>) -> String {
    let _ = ctx;
    greeting.0.clone()
}

#[args]
#[allow(dead_code)]
struct Tree {
    label: String,
    children: Vec<Tree>,
}

/// Uses the client's model and roots when the client has them.
#[tool(read_only, optional(sampling, roots))]
fn if_supported(ctx: &mut RequestContext) -> String {
    format!("{:?}", ctx.client_capabilities().supports_sampling())
}

/// Recursive arguments keep `$defs`.
#[tool]
async fn tree(args: Tree) {
    let _ = args.label;
}

fn descriptors() -> Value {
    json!([
        notes_delete {}.descriptor(),
        notes_list {}.descriptor(),
        hello {}.descriptor(),
        tree {}.descriptor(),
    ])
}

#[test]
fn descriptors_snapshot() {
    support::assert_snapshot("tool_descriptors.json", &descriptors());
}

#[test]
fn descriptors_are_byte_identical_and_cached() {
    let a = serde_json::to_vec(&descriptors()).unwrap();
    let b = serde_json::to_vec(&descriptors()).unwrap();
    assert_eq!(a, b);
    assert!(std::ptr::eq(
        notes_list {}.descriptor(),
        notes_list::default().descriptor()
    ));
}

#[test]
fn schema_shape_rules() {
    let d = serde_json::to_value(notes_list {}.descriptor()).unwrap();
    let input = &d["inputSchema"];
    assert_eq!(input["type"], "object");
    assert!(input.get("$schema").is_none() && input.get("title").is_none());
    assert!(
        input.get("$defs").is_none(),
        "simple types are inlined: {input}"
    );
    assert_eq!(input["required"], json!(["workspaceUri"]));
    let keys: Vec<&String> = input["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["workspaceUri", "limit", "order", "tags"]);
    assert_eq!(
        input["properties"]["limit"]["type"], "integer",
        "Option is not nullable"
    );
    assert!(!input.to_string().contains("null"), "{input}");
    assert_eq!(
        d["description"],
        "List notes in a workspace.\n\nNewest first unless `order` says otherwise."
    );
    assert_eq!(
        d["annotations"],
        json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false})
    );
    assert_eq!(d["outputSchema"]["type"], "object");
    let no_args = serde_json::to_value(hello {}.descriptor()).unwrap();
    assert_eq!(
        no_args["inputSchema"],
        json!({"type": "object", "additionalProperties": false})
    );
    let rec = serde_json::to_value(tree {}.descriptor()).unwrap();
    assert!(
        rec["inputSchema"].get("$defs").is_some()
            || rec["inputSchema"].to_string().contains("$ref")
    );
}

#[test]
fn required_capabilities_follow_requires() {
    assert_eq!(
        serde_json::to_value(notes_delete {}.required_capabilities()).unwrap(),
        json!({"elicitation": {"form": {}}})
    );
    assert_eq!(
        serde_json::to_value(hello {}.required_capabilities()).unwrap(),
        json!({"roots": {}, "sampling": {}, "elicitation": {"url": {}}})
    );
    assert!(notes_list {}.required_capabilities().is_empty());
}

#[test]
fn optional_capabilities_follow_optional() {
    assert!(if_supported {}.required_capabilities().is_empty());
    assert_eq!(
        serde_json::to_value(if_supported {}.optional_capabilities()).unwrap(),
        json!({"roots": {}, "sampling": {}})
    );
    assert_eq!(notes_delete {}.optional_capabilities(), None);
}

/// A server holding the test tools, as an application would build it.
fn server() -> Server {
    Server::builder(Implementation::new("macros-test", "0.0.0"))
        .tools(tools![notes_delete, notes_list, hello])
        .state(Arc::new(Greeting("hi".into())))
        .build()
        .unwrap()
}

/// Calls `name` through the real dispatch path with the in-process client.
async fn call(server: &Server, name: &str, arguments: Value) -> CallToolResult {
    let caps = ClientCapabilities::none()
        .with_elicitation(ElicitationCapability::form_and_url())
        .with_sampling(SamplingCapability::default())
        .with_roots();
    Client::builder(InProcess::new(server.clone(), Principal::new("tester")))
        .capabilities(caps)
        .build()
        .call_tool(name, arguments)
        .await
        .expect("a complete tools/call result")
}

fn error_text(result: &CallToolResult) -> String {
    assert!(result.is_error(), "{result:?}");
    result.text()
}

#[tokio::test]
async fn invalid_arguments_say_what_to_fix() {
    let server = server();
    let r = call(
        &server,
        "notes_delete",
        json!({"workspaceUri": "file:///w"}),
    )
    .await;
    assert_eq!(
        error_text(&r),
        "Invalid arguments: missing field `title`; expected {workspaceUri: string, title: string}"
    );
    let r = call(
        &server,
        "notes.list",
        json!({"workspaceUri": "file:///w", "limit": "ten"}),
    )
    .await;
    let e = error_text(&r);
    assert!(e.contains("expected u32"), "{e}");
    assert!(e.contains("limit?: integer"), "{e}");
    let e = error_text(&call(&server, "hello", json!({"x": 1})).await);
    assert!(e.contains("takes no arguments"), "{e}");
}

#[tokio::test]
async fn calls_run_the_function() {
    let server = server();
    let r = call(&server, "hello", json!({})).await;
    assert_eq!(r.text(), "hi");
    let r = call(
        &server,
        "notes_delete",
        json!({"workspaceUri": "file:///w", "title": "x"}),
    )
    .await;
    assert_eq!(r.text(), "would delete \"x\" in file:///w");
    let r = call(
        &server,
        "notes.list",
        json!({"workspaceUri": "w", "limit": 2}),
    )
    .await;
    assert_eq!(r.structured_content.unwrap()["notes"][1]["id"], "n-1");
    // The function stays callable as written.
    assert!(
        notes_list(ListArgs {
            workspace_uri: "w".into(),
            limit: Some(0),
            order: None,
            tags: vec![]
        })
        .is_ok()
    );
}

/// `notes.list`, with its arguments declared as documented parameters instead of a struct.
#[tool(
    name = "notes.list",
    title = "List notes",
    read_only,
    idempotent,
    open_world = false,
    rename_all = "camelCase"
)]
fn notes_list_plain(
    /// Workspace URI
    workspace_uri: String,
    /// At most this many notes
    limit: Option<u32>,
    /// Sort order
    #[serde(default)]
    order: Option<Order>,
    /// Tags to filter by
    #[serde(default)]
    tags: Vec<String>,
) -> Result<Json<ListOutput>, HandlerError> {
    notes_list(ListArgs {
        workspace_uri,
        limit,
        order,
        tags,
    })
}

/// Delete one note, after the user picks which and confirms.
#[tool(
    name = "notes_delete",
    destructive,
    requires(form_elicitation),
    rename_all = "camelCase"
)]
async fn notes_delete_plain(
    _ctx: &mut RequestContext,
    /// File URI of the workspace, e.g. file:///home/me/notes
    workspace_uri: String,
    /// Text the note title must contain (case-insensitive)
    title: String,
) -> Result<String, HandlerError> {
    Ok(format!("would delete {title:?} in {workspace_uri}"))
}

/// Documented parameters, without a rename: the property is the parameter's name.
#[tool]
fn add(
    /// The first number
    a: i64,
    /// The second number (0 when absent)
    b: Option<i64>,
) -> String {
    (a + b.unwrap_or(0)).to_string()
}

#[test]
fn documented_parameters_give_the_same_schema_as_a_struct() {
    // The same attributes and arguments as the struct versions, plus what documented
    // parameters always say: unknown arguments are refused. (Byte for byte against a
    // `deny_unknown_fields` struct: tests/tests/readme_tour.rs, against notes-example.)
    let strict = |t: &dyn ToolHandler| {
        let mut d = serde_json::to_value(t.descriptor()).unwrap();
        d["inputSchema"]["additionalProperties"] = json!(false);
        d
    };
    let bytes = |d: &Value| d.clone();
    let mut plain = serde_json::to_value(notes_list_plain {}.descriptor()).unwrap();
    plain["description"] =
        json!("List notes in a workspace.\n\nNewest first unless `order` says otherwise.");
    assert_eq!(bytes(&plain), bytes(&strict(&notes_list {})));
    let plain = serde_json::to_value(notes_delete_plain {}.descriptor()).unwrap();
    assert_eq!(bytes(&plain), bytes(&strict(&notes_delete {})));
    let d = serde_json::to_value(add {}.descriptor()).unwrap();
    assert_eq!(
        d["inputSchema"],
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "format": "int64", "description": "The first number"},
                "b": {"type": "integer", "format": "int64", "description": "The second number (0 when absent)"}
            },
            "additionalProperties": false,
            "required": ["a"]
        })
    );
}

#[tokio::test]
async fn documented_parameters_are_parsed_and_checked() {
    let server = Server::builder(Implementation::new("macros-test", "0.0.0"))
        .tools(tools![notes_delete_plain, add])
        .build()
        .unwrap();
    let r = call(
        &server,
        "notes_delete",
        json!({"workspaceUri": "file:///w", "title": "x"}),
    )
    .await;
    assert_eq!(r.text(), "would delete \"x\" in file:///w");
    let e = error_text(&call(&server, "notes_delete", json!({"title": "x"})).await);
    assert_eq!(
        e,
        "Invalid arguments: missing field `workspaceUri`; expected {workspaceUri: string, title: string}"
    );
    assert_eq!(call(&server, "add", json!({"a": 2})).await.text(), "2");
    let e = error_text(&call(&server, "add", json!({"a": 2, "c": 3})).await);
    assert!(e.starts_with("Invalid arguments: unknown field `c`"), "{e}");
    assert_eq!(
        call(&server, "add", json!({"a": 2, "b": 3})).await.text(),
        "5"
    );
    // The function stays callable as written, doc comments and all.
    assert_eq!(add(1, Some(1)), "2");
}

/// An extractor of the test's own: the principal's tenant (the part before `/`).
struct Tenant(String);

impl FromRequest for Tenant {
    fn from_request(parts: &mut RequestParts<'_>) -> Result<Self, HandlerError> {
        match parts.context().principal().as_str().split_once('/') {
            Some((tenant, _)) => Ok(Tenant(tenant.to_owned())),
            None => Err(HandlerError::tool(
                "this tool needs a tenant-scoped principal",
            )),
        }
    }
}

type Ctx = RequestContext;
type Greet = State<Arc<Greeting>>;
type Caller = Principal;

/// Aliases and a user's extractor: parameters are told apart by trait, not by spelling.
#[tool]
fn who(
    ctx: &mut Ctx,
    tenant: Tenant,
    greeting: Greet,
    caller: Caller,
    /// How loud
    loud: Option<bool>,
) -> String {
    let _ = ctx;
    let text = format!("{} {} of {}", greeting.0.0, caller.as_str(), tenant.0);
    if loud == Some(true) {
        text.to_uppercase()
    } else {
        text
    }
}

/// Two arguments types: refused by `build()` (an undocumented parameter could be an
/// extractor, so the macro cannot tell).
#[tool]
fn two_structs(args: DeleteArgs, more: ListArgs) -> String {
    let _ = (args.title, more.limit);
    String::new()
}

#[tokio::test]
async fn user_extractors_and_aliases_are_parameters() {
    let server = Server::builder(Implementation::new("macros-test", "0.0.0"))
        .tools(tools![who])
        .state(Arc::new(Greeting("hi".into())))
        .build()
        .unwrap();
    let d = serde_json::to_value(who {}.descriptor()).unwrap();
    assert_eq!(
        d["inputSchema"]["properties"],
        json!({"loud": {"type": "boolean", "description": "How loud"}})
    );
    assert_eq!(
        who {}.state_needs().len(),
        1,
        "State through an alias is declared"
    );
    let call_as = |p: &'static str, args: Value| {
        let server = server.clone();
        async move {
            Client::builder(InProcess::new(server, Principal::new(p)))
                .build()
                .call_tool("who", args)
                .await
                .unwrap()
        }
    };
    assert_eq!(
        call_as("acme/ann", json!({"loud": true})).await.text(),
        "HI ACME/ANN OF ACME"
    );
    let e = error_text(&call_as("ann", json!({})).await);
    assert_eq!(e, "this tool needs a tenant-scoped principal");
    // Without its state registered, `build()` refuses the tool, alias or not.
    let err = Server::builder(Implementation::new("t", "0"))
        .tools(tools![who])
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("add `.state(value)`"), "{err}");
}

/// An extractor of the test's own that also derives `Deserialize` and `JsonSchema` (say it is
/// stored as JSON elsewhere). No blanket impl claims a type for those derives, so its own
/// `FromRequest` impl is no conflict, and it is made from the request, not the arguments.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Account {
    principal: String,
}

impl FromRequest for Account {
    fn from_request(parts: &mut RequestParts<'_>) -> Result<Self, HandlerError> {
        Ok(Account {
            principal: parts.context().principal().as_str().to_owned(),
        })
    }
}

// Arguments that derive serde and schemars themselves: taken as `Args<T>`.
/// A note's text.
#[derive(Deserialize, JsonSchema)]
struct NoteText {
    /// The note's text
    text: String,
}

// The same arguments through `#[args]`.
/// A note's text.
#[args]
struct NoteTextArgs {
    /// The note's text
    text: String,
}

/// Notes a text for the calling account.
#[tool]
fn account_note(account: Account, Args(note): Args<NoteText>) -> String {
    format!("{}: {}", account.principal, note.text)
}

/// Notes a text (the arguments marked `#[args]`).
#[tool]
fn plain_note(note: NoteTextArgs) -> String {
    note.text
}

#[tokio::test]
async fn an_extractor_may_derive_deserialize_and_json_schema() {
    let server = Server::builder(Implementation::new("macros-test", "0.0.0"))
        .tools(tools![account_note, plain_note])
        .build()
        .unwrap();
    fn schema(t: &dyn ToolHandler) -> String {
        serde_json::to_string(&t.descriptor().input_schema).unwrap()
    }
    // The extractor is not in the schema; `Args<T>` and `#[args]` give the same bytes.
    assert_eq!(schema(&account_note {}), schema(&plain_note {}));
    assert_eq!(
        schema(&plain_note {}),
        r#"{"type":"object","properties":{"text":{"type":"string","description":"The note's text"}},"required":["text"],"description":"A note's text."}"#
    );
    let reply = Client::builder(InProcess::new(server.clone(), Principal::new("ann")))
        .build()
        .call_tool("account_note", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(reply.text(), "ann: hi");
    let e = error_text(&call(&server, "account_note", json!({})).await);
    assert_eq!(
        e,
        "Invalid arguments: missing field `text`; expected {text: string}"
    );
    // Both stay what they are outside a tool: plain serde types.
    let account: Account = serde_json::from_value(json!({"principal": "bob"})).unwrap();
    assert_eq!(account.principal, "bob");
    assert_eq!(
        serde_json::to_value(&account).unwrap(),
        json!({"principal": "bob"})
    );
}

/// Where the spawned worker of `spawns_work` reports that it saw the cancellation.
#[derive(Clone, Default)]
struct Stopped(Arc<tokio::sync::Notify>);

/// Starts background work that must stop when the request is over.
#[tool]
async fn spawns_work(cancel: Cancellation, stopped: State<Stopped>) -> String {
    tokio::spawn(async move {
        cancel.cancelled().await;
        stopped.0.0.notify_one();
    });
    "started".to_owned()
}

#[tokio::test]
async fn the_cancellation_extractor_is_the_requests_token() {
    let stopped = Stopped::default();
    let server = Server::builder(Implementation::new("macros-test", "0.0.0"))
        .tools(tools![spawns_work])
        .state(stopped.clone())
        .build()
        .unwrap();
    let result = Client::builder(InProcess::new(server, Principal::new("ann")))
        .build()
        .call_tool("spawns_work", json!({}))
        .await
        .unwrap();
    assert_eq!(result.text(), "started");
    // The request was answered, so its token is cancelled and the spawned work sees it; a
    // token not tied to the request would never fire and this would time out.
    tokio::time::timeout(std::time::Duration::from_secs(10), stopped.0.notified())
        .await
        .expect("the spawned work saw the request end");
}

#[test]
fn build_refuses_two_arguments_types() {
    let err = Server::builder(Implementation::new("t", "0"))
        .tools(tools![two_structs])
        .build()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("tool `two_structs` is misdeclared: two parameters are arguments types"),
        "{err}"
    );
}

/// Which note, asked the way the reference server asks it.
#[derive(Debug, mcp_runtime::prelude::ElicitForm)]
struct PickNote {
    /// Which note to delete
    #[form(title = "Note", choices)]
    note_id: String,
    /// Yes, delete it
    confirm: bool,
}

/// Asks which note, then reports the choice.
#[tool(destructive, requires(form_elicitation))]
async fn pick_note(ctx: &mut RequestContext, args: DeleteArgs) -> Result<String, HandlerError> {
    let choices = PickNote::choices().note_id([
        ("note-1".to_owned(), format!("{} (note-1)", args.title)),
        ("note-2".to_owned(), format!("{} (note-2)", args.title)),
    ]);
    match ctx
        .elicit::<PickNote>(
            "pick",
            format!("Which note in {}?", args.workspace_uri),
            choices,
        )
        .await?
    {
        mcp_runtime::prelude::Elicitation::Accepted(pick) => Ok(pick.note_id),
        _ => Ok("nothing picked".to_owned()),
    }
}

/// The future `#[tool]` boxes is allocated on every call: it holds the function's own future
/// and nothing beside it (not the arguments tree, not a second copy of the parameters), and
/// an asking tool's stays under 1 KiB, where the system allocator keeps its fast path.
#[tokio::test]
async fn an_asking_tool_boxes_only_its_own_future() {
    let mut ctx = RequestContext::detached(Principal::new("p")).with_capabilities(
        ClientCapabilities::none().with_elicitation(ElicitationCapability::form()),
    );
    let args = json!({"workspaceUri": "file:///w", "title": "TPS"});
    let serde_json::Value::Object(args) = args else {
        unreachable!()
    };
    let tool = pick_note {};
    let future = tool.call(&mut ctx, args);
    let size = std::mem::size_of_val(&*future);
    assert!(size <= 1024, "an asking tool's future is {size} bytes");
    // And it still asks: a first call ends in the input-required signal.
    let outcome = future.await;
    assert!(outcome.is_err(), "a first call asks, it does not answer");
}

mod listed {
    use mcp_runtime::tool;

    /// Listed through a module path.
    #[tool]
    pub fn nested() -> String {
        "nested".to_owned()
    }

    pub mod deeper {
        /// Listed with `self::` and `super::` paths.
        #[mcp_runtime::tool]
        pub fn deepest() -> String {
            "deepest".to_owned()
        }

        /// A router listing tools by relative and absolute paths.
        pub fn router() -> mcp_runtime::router::ToolRouter {
            mcp_runtime::tools![self::deepest, super::nested, crate::listed::deeper::deepest]
        }
    }
}

/// A hand-written tool generic over a marker, listed with generic arguments.
struct Fixed<T>(
    mcp_types::Tool,
    ClientCapabilities,
    std::marker::PhantomData<T>,
);

impl<T> Default for Fixed<T> {
    fn default() -> Self {
        let Value::Object(object) = json!({"type": "object"}) else {
            unreachable!()
        };
        let schema = mcp_types::InputSchema::new(object).unwrap();
        Self(
            mcp_types::Tool::new("fixed", schema),
            ClientCapabilities::none(),
            std::marker::PhantomData,
        )
    }
}

impl<T: Send + Sync + 'static> ToolHandler for Fixed<T> {
    fn descriptor(&self) -> &mcp_types::Tool {
        &self.0
    }
    fn required_capabilities(&self) -> &ClientCapabilities {
        &self.1
    }
    fn call<'a>(
        &'a self,
        _ctx: &'a mut RequestContext,
        _args: mcp_types::JsonObject,
    ) -> mcp_runtime::__macro_support_v1::BoxFuture<'a, Result<CallToolResult, HandlerError>> {
        Box::pin(async { Ok(CallToolResult::success(Vec::new())) })
    }
}

fn tool_names(router: &mcp_runtime::router::ToolRouter) -> Vec<String> {
    router.iter().map(|t| t.descriptor().name.clone()).collect()
}

/// `tools![..]` takes any path to a `#[tool]` function: a plain name, a module path, `self::`,
/// `super::` and `crate::` paths, and a function-local import; a local variable of the same
/// name is not what the entry means. A type of one's own may take generic arguments.
#[test]
fn tools_lists_tools_by_any_path() {
    use listed::nested as renamed;
    let hello = String::from("a local of a tool's name");
    let router = tools![hello, renamed, listed::deeper::deepest,];
    assert!(!hello.is_empty());
    assert_eq!(tool_names(&router), ["hello", "nested", "deepest"]);
    let router = listed::deeper::router();
    assert_eq!(tool_names(&router), ["deepest", "nested"]);
    assert_eq!(router.duplicates(), ["deepest"]);
    assert!(tools![].is_empty());
    let router = tools![Fixed<u8>, Fixed::<()>];
    assert_eq!(tool_names(&router), ["fixed"]);
    assert_eq!(router.duplicates(), ["fixed"]);
}
