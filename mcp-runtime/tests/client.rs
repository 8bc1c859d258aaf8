//! The typed client (`mcp_runtime::client`) against our own server: in-process (automatic and
//! step-by-step MRTR, typed errors, bounds) and over Streamable HTTP with a bearer token.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code fails loudly by design

use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::client::{Client, ClientError, HttpTransport, InProcess, InputHandlers};
use mcp_runtime::prelude::*;
use mcp_runtime::service::McpService;
use mcp_runtime::transport::{BearerTokens, HttpConfig, HttpServer};
use mcp_types::{
    ClientCapabilities, ElicitContentValue, ElicitRequestFormParams, ElicitResult,
    ElicitationCapability, ErrorCode,
};

#[derive(ElicitForm)]
struct Pick {
    /// Which one
    #[form(choices)]
    item: String,
    /// How many
    #[form(minimum = 1, maximum = 9)]
    count: u8,
}

#[derive(ElicitForm)]
struct Confirm {
    /// Sure?
    sure: bool,
}

#[args]
struct OrderArgs {
    /// What may be picked
    items: Vec<String>,
}

/// Picks an item and confirms it: two form rounds.
#[tool(requires(form_elicitation))]
async fn order(ctx: &mut RequestContext, args: OrderArgs) -> ToolResult<String> {
    let choices = Pick::choices().item(args.items);
    let Elicitation::Accepted(pick) = ctx.elicit::<Pick>("pick", "Pick one", choices).await? else {
        return Ok("no pick".into());
    };
    match ctx.elicit::<Confirm>("confirm", "Sure?", ()).await? {
        Elicitation::Accepted(c) if c.sure => Ok(format!("{} x {}", pick.count, pick.item)),
        Elicitation::Declined => Ok("declined".into()),
        _ => Ok("not confirmed".into()),
    }
}

/// Says hello without asking anything.
#[tool]
async fn hello() -> ToolResult<String> {
    Ok("hello".into())
}

fn server() -> Server {
    Server::builder(Implementation::new("client-test", "0.0.0"))
        .tools(tools![order, hello])
        .build()
        .unwrap()
}

/// Answers `pick` with the last offered item and count 2, and `confirm` with yes.
fn handlers() -> InputHandlers {
    InputHandlers::default().on_form(|p: ElicitRequestFormParams| async move {
        let mut content = mcp_types::ElicitContent::new();
        if p.requested_schema.properties.contains_key("item") {
            let offered = serde_json::to_value(&p.requested_schema.properties["item"]).unwrap();
            let last = offered["enum"].as_array().unwrap().last().unwrap().clone();
            content.insert(
                "item".into(),
                ElicitContentValue::String(last.as_str().unwrap().into()),
            );
            content.insert("count".into(), ElicitContentValue::Number(2.into()));
        } else {
            content.insert("sure".into(), ElicitContentValue::Boolean(true));
        }
        ElicitResult::accept(Some(content))
    })
}

fn items() -> serde_json::Value {
    serde_json::json!({"items": ["apple", "pear"]})
}

#[tokio::test]
async fn automatic_mode_answers_every_round_and_declares_its_handlers() {
    let client = Client::builder(InProcess::new(server(), Principal::new("me")))
        .capabilities(ClientCapabilities::none())
        .handlers(handlers())
        .build();
    assert!(client.meta().client_capabilities.supports_form());
    let done = client.call_tool("order", items()).await.unwrap();
    assert_eq!(done.text(), "2 x pear");
}

#[tokio::test]
async fn step_by_step_reads_typed_forms_and_sends_each_answer() {
    let client = Client::in_process(server(), Principal::new("me"));
    let mut round = client
        .call("order", items())
        .await
        .unwrap()
        .pending()
        .unwrap();
    assert_eq!(round.number(), 1);
    let form = round.form::<Pick>("pick").unwrap();
    assert_eq!(form.message(), "Pick one");
    assert_eq!(form.choice_values("item"), ["apple", "pear"]);
    round
        .accept(
            "pick",
            &Pick {
                item: "apple".into(),
                count: 3,
            },
        )
        .unwrap();
    let mut round = round.retry().await.unwrap().pending().unwrap();
    assert_eq!(round.number(), 2);
    // The second form is not a `Pick`: reading it as one names both field sets.
    let wrong = round.form::<Pick>("confirm").unwrap_err().to_string();
    assert!(wrong.contains("[\"sure\"]"), "{wrong}");
    round.decline("confirm").unwrap();
    let done = round.retry().await.unwrap().complete().unwrap();
    assert_eq!(done.text(), "declined");
}

#[tokio::test]
async fn a_value_outside_the_offered_choices_is_asked_again() {
    let client = Client::in_process(server(), Principal::new("me"));
    let mut round = client
        .call("order", items())
        .await
        .unwrap()
        .pending()
        .unwrap();
    round
        .accept(
            "pick",
            &Pick {
                item: "plum".into(),
                count: 1,
            },
        )
        .unwrap();
    let again = round.retry().await.unwrap().pending().unwrap();
    assert_eq!(again.number(), 2);
    assert_eq!(again.keys(), ["pick"]);
    assert!(
        again.responses().is_empty(),
        "a new round starts with no answers"
    );
    // The new round says what was wrong, by the field's label, before the original message.
    let form = again.form::<Pick>("pick").unwrap();
    assert_eq!(
        form.message(),
        "\u{2018}plum\u{2019} is not one of the options offered for \u{201c}Which one\u{201d}; \
         please pick one of them.\n\nPick one"
    );
    assert_eq!(form.choice_values("item"), ["apple", "pear"]);
}

#[tokio::test]
async fn an_out_of_range_answer_is_asked_again_with_the_reason() {
    let client = Client::in_process(server(), Principal::new("me"));
    let mut round = client
        .call("order", items())
        .await
        .unwrap()
        .pending()
        .unwrap();
    round
        .accept(
            "pick",
            &Pick {
                item: "pear".into(),
                count: 12,
            },
        )
        .unwrap();
    let mut again = round.retry().await.unwrap().pending().unwrap();
    let message = again.form::<Pick>("pick").unwrap().message().to_owned();
    assert_eq!(
        message,
        "\u{201c}How many\u{201d} must be at most 9, not \u{2018}12\u{2019}.\n\nPick one"
    );
    // A valid answer to the re-asked form carries the flow on.
    again
        .accept(
            "pick",
            &Pick {
                item: "pear".into(),
                count: 2,
            },
        )
        .unwrap();
    let next = again.retry().await.unwrap().pending().unwrap();
    assert_eq!(next.keys(), ["confirm"]);
    assert_eq!(next.form::<Confirm>("confirm").unwrap().message(), "Sure?");
}

#[tokio::test]
async fn empty_run_time_choices_are_a_tool_error_not_an_empty_enum() {
    let client = Client::in_process(server(), Principal::new("me"));
    let done = client
        .call("order", serde_json::json!({"items": []}))
        .await
        .unwrap()
        .complete()
        .unwrap();
    assert!(done.is_error(), "{}", done.text());
    assert_eq!(
        done.text(),
        "cannot ask for the form under `pick`: form field `item`: was given no choices to offer; \
         check for an empty list before asking, and answer without a form when there is nothing \
         to choose"
    );
}

#[tokio::test]
async fn automatic_mode_is_bounded_and_needs_handlers() {
    let bounded = Client::builder(InProcess::new(server(), Principal::new("me")))
        .handlers(handlers())
        .max_rounds(1)
        .build();
    let err = bounded.call_tool("order", items()).await.unwrap_err();
    assert!(
        matches!(err, ClientError::TooManyRounds { rounds: 1 }),
        "{err}"
    );

    let bare = Client::in_process(server(), Principal::new("me"));
    let err = bare.call_tool("order", items()).await.unwrap_err();
    assert!(
        matches!(&err, ClientError::NoHandler { key, .. } if key == "pick"),
        "{err}"
    );
}

#[tokio::test]
async fn protocol_errors_are_typed_with_their_data() {
    let client = Client::in_process(server(), Principal::new("me"));

    let err = client.call_tool("nope", ()).await.unwrap_err();
    assert!(matches!(err, ClientError::InvalidParams(_)), "{err}");
    assert_eq!(err.code(), Some(ErrorCode::InvalidParams));

    let err = client.list_prompts(None).await.unwrap_err();
    assert!(matches!(err, ClientError::MethodNotFound(_)), "{err}");

    let err = client
        .with_capabilities(ClientCapabilities::none())
        .call("order", items())
        .await
        .unwrap_err();
    let ClientError::MissingCapability { required, .. } = err else {
        panic!("expected -32021, got {err}");
    };
    assert!(required.unwrap().supports_form());

    let old = Client::builder(InProcess::new(server(), Principal::new("me")))
        .protocol_version("1999-01-01")
        .retry_supported_version(false)
        .build();
    let err = old.call_tool("hello", ()).await.unwrap_err();
    let ClientError::UnsupportedVersion { data, .. } = err else {
        panic!("expected -32022, got {err}");
    };
    let data = data.unwrap();
    assert_eq!(data.supported, ["2026-07-28"]);
    assert_eq!(data.requested, "1999-01-01");

    // By default the client retries once with a version the server listed.
    let retrying = Client::builder(InProcess::new(server(), Principal::new("me")))
        .protocol_version("1999-01-01")
        .build();
    assert_eq!(
        retrying.call_tool("hello", ()).await.unwrap().text(),
        "hello"
    );
}

#[tokio::test]
async fn listing_and_discovery_are_typed() {
    let client = Client::in_process(server(), Principal::new("me"));
    let discover = client.discover().await.unwrap();
    assert_eq!(discover.supported_versions, ["2026-07-28"]);
    let names: Vec<_> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["order", "hello"]);
}

#[tokio::test]
async fn http_transport_carries_the_bearer_token_and_mrtr_rounds() {
    let tokens = BearerTokens::parse("alice s3cret-token-0123456789abcdefghijklmnop\n").unwrap();
    let service: Arc<dyn McpService> = Arc::new(server());
    let config = HttpConfig::default().with_bind("127.0.0.1:0".parse().unwrap());
    let bound = HttpServer::new(service, Arc::new(tokens))
        .with_config(config)
        .bind()
        .await
        .unwrap();
    let url = format!("http://{}/mcp", bound.local_addr().unwrap());
    let stop = tokio_util::sync::CancellationToken::new();
    let stopped = stop.clone();
    let serving = tokio::spawn(bound.serve_with_shutdown(async move { stopped.cancelled().await }));

    let client = Client::builder(
        HttpTransport::new(&url)
            .unwrap()
            .bearer("s3cret-token-0123456789abcdefghijklmnop"),
    )
    .handlers(handlers())
    .timeout(Duration::from_secs(10))
    .build();
    assert_eq!(
        client.call_tool("order", items()).await.unwrap().text(),
        "2 x pear"
    );

    let anonymous = Client::builder(HttpTransport::new(&url).unwrap())
        .timeout(Duration::from_secs(10))
        .build();
    let err = anonymous.list_tools(None).await.unwrap_err();
    assert!(matches!(err, ClientError::Transport(_)), "{err}");
    assert!(!format!("{client:?}").contains("s3cret"));

    stop.cancel();
    serving.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_silent_server_hits_the_deadline() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    // Accepts and never answers.
    let hold = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    let client = Client::builder(HttpTransport::new(&url).unwrap())
        .timeout(Duration::from_millis(200))
        .build();
    let err = client.discover().await.unwrap_err();
    assert!(matches!(err, ClientError::Timeout { .. }), "{err}");
    hold.abort();
}

#[test]
fn form_content_is_the_inverse_of_from_content() {
    use mcp_runtime::form::{ElicitForm as _, FormContent as _};
    let pick = Pick {
        item: "pear".into(),
        count: 7,
    };
    let content = pick.to_content();
    assert_eq!(content["item"], "pear");
    assert_eq!(content["count"], 7);
    let back = Pick::from_content(&content, &Pick::choices().item(["pear"])).unwrap();
    assert_eq!((back.item.as_str(), back.count), ("pear", 7));
    let _ = ElicitationCapability::form();
}

#[derive(ElicitChoice, Debug, PartialEq)]
enum Colour {
    Red,
    Blue,
}

#[derive(ElicitForm)]
struct Palette {
    /// Main colour
    main: Colour,
    /// Accents
    accents: Vec<Colour>,
    /// Note
    note: Option<String>,
    /// Weight
    weight: f32,
}

#[test]
fn form_content_covers_choices_multi_selects_options_and_floats() {
    use mcp_runtime::form::{ElicitForm as _, FormContent as _};
    let palette = Palette {
        main: Colour::Blue,
        accents: vec![Colour::Red, Colour::Blue],
        note: None,
        weight: 0.1,
    };
    let content = palette.to_content();
    assert_eq!(
        serde_json::Value::Object(content.clone()),
        serde_json::json!({"main": "Blue", "accents": ["Red", "Blue"], "weight": 0.1})
    );
    let back = Palette::from_content(&content, &()).unwrap();
    assert_eq!(
        (back.main, back.accents.len(), back.note),
        (Colour::Blue, 2, None)
    );
}
