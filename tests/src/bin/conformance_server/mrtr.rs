//! Multi round-trip fixtures (`input-required-result-*` scenarios, SEP-2322).
//!
//! Every first call answers with `resultType: "input_required"`, the `inputRequests` below and
//! a sealed `requestState`; the retry carries `inputResponses` plus the echoed state, which the
//! runtime verifies before the tool runs again.
//!
//! | Tool | Input requests (key: method) | Complete result |
//! |---|---|---|
//! | `test_input_required_result_elicitation` | `user_name`: form `{name: string}` required, "What is your name?" | `Hello, <name>!` |
//! | `test_input_required_result_sampling` | `capital_question`: sampling "What is the capital of France?", maxTokens 100 | the sampled text |
//! | `test_input_required_result_list_roots` | `client_roots`: `roots/list` | the root URIs |
//! | `test_input_required_result_request_state` | `confirm`: form `{ok: boolean}` required, "Please confirm" | text containing `state-ok` |
//! | `test_input_required_result_multiple_inputs` | `user_name` (form), `greeting` (sampling "Generate a greeting", maxTokens 50), `client_roots` (roots) in one round | summary of all three |
//! | `test_input_required_result_multi_round` | round 1 `step1`: form `{name}`; round 2 `step2`: form `{color}` with a new state | `<name> likes <color>` |
//! | `test_input_required_result_tampered_state` | `confirm`: form `{ok}` | a retry whose state was altered gets a JSON-RPC error (runtime) |
//! | `test_input_required_result_capabilities` | only what this request's `clientCapabilities` declare: `user_name` (form), `capital_question` (sampling), `client_roots` (roots) | summary |
//!
//! The elicitation tool also serves the scenarios that probe error handling: a wrong key or a
//! malformed response (`missing-input-response`, `validate-input`) is asked for again, and
//! `result-type` checks the explicit `resultType`.

use mcp_runtime::prelude::*;
use mcp_runtime::router::ToolRouter;

use super::forms::{ColorForm, ConfirmForm, NameForm};
use mcp_types::{
    CreateMessageRequestParams, CreateMessageResult, Root, SamplingMessage,
    SamplingMessageContentBlock,
};

/// The multi round-trip fixtures, in `tools/list` order.
pub fn tools() -> ToolRouter {
    tools![
        test_input_required_result_elicitation,
        test_input_required_result_sampling,
        test_input_required_result_list_roots,
        test_input_required_result_request_state,
        test_input_required_result_multiple_inputs,
        test_input_required_result_multi_round,
        test_input_required_result_tampered_state,
        test_input_required_result_capabilities,
    ]
}

/// The text blocks of a sampling answer, joined (`(no text)` when it had none).
pub fn sampled_text(result: &CreateMessageResult) -> String {
    let text: Vec<&str> = result
        .content
        .blocks()
        .iter()
        .filter_map(|b| match b {
            SamplingMessageContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    if text.is_empty() {
        "(no text)".to_owned()
    } else {
        text.join(" ")
    }
}

fn root_list(roots: &[Root]) -> String {
    if roots.is_empty() {
        return "no roots".to_owned();
    }
    roots
        .iter()
        .map(|r| r.uri.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn capital_question() -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text("What is the capital of France?")],
        100,
    )
}

fn greeting_request() -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text("Generate a greeting")], 50)
}

fn name_or_nobody(answer: Elicitation<NameForm>) -> String {
    match answer {
        Elicitation::Accepted(form) => form.name,
        Elicitation::Declined => "(declined)".to_owned(),
        Elicitation::Cancelled => "(cancelled)".to_owned(),
    }
}

/// Asks the user for their name (form elicitation), then greets them.
#[tool(read_only, requires(form_elicitation))]
async fn test_input_required_result_elicitation(
    ctx: &mut RequestContext,
) -> Result<String, HandlerError> {
    let answer = ctx
        .elicit::<NameForm>("user_name", "What is your name?", ())
        .await?;
    Ok(match answer {
        Elicitation::Accepted(form) => format!("Hello, {}!", form.name),
        Elicitation::Declined => "Hello! (you declined to give your name)".to_owned(),
        Elicitation::Cancelled => "Hello! (you cancelled)".to_owned(),
    })
}

/// Asks the client's model for the capital of France and returns its answer.
#[tool(read_only, requires(sampling))]
async fn test_input_required_result_sampling(
    ctx: &mut RequestContext,
) -> Result<String, HandlerError> {
    let answer = ctx.sample("capital_question", capital_question()).await?;
    Ok(format!("The model answered: {}", sampled_text(&answer)))
}

/// Asks the client for its roots and lists them.
#[tool(read_only, requires(roots))]
async fn test_input_required_result_list_roots(
    ctx: &mut RequestContext,
) -> Result<String, HandlerError> {
    let roots = ctx.list_roots("client_roots").await?;
    Ok(format!("Client roots: {}", root_list(&roots)))
}

/// Asks for a confirmation; the retry is only accepted with the echoed, verified requestState.
#[tool(read_only, requires(form_elicitation))]
async fn test_input_required_result_request_state(
    ctx: &mut RequestContext,
) -> Result<String, HandlerError> {
    let answer = ctx
        .elicit::<ConfirmForm>("confirm", "Please confirm", ())
        .await?;
    Ok(match answer {
        Elicitation::Accepted(form) => format!("state-ok: confirmed={}", form.ok),
        Elicitation::Declined => "state-ok: declined".to_owned(),
        Elicitation::Cancelled => "state-ok: cancelled".to_owned(),
    })
}

/// Asks for the user's name, a model-generated greeting and the client's roots in one round.
#[tool(read_only, requires(form_elicitation, sampling, roots))]
async fn test_input_required_result_multiple_inputs(
    ctx: &mut RequestContext,
) -> Result<String, HandlerError> {
    let name = ctx
        .try_elicit::<NameForm>("user_name", "What is your name?", ())
        .await?;
    let greeting = ctx.try_sample("greeting", greeting_request()).await?;
    let roots = ctx.try_list_roots("client_roots").await?;
    ctx.await_inputs()?;
    match (name, greeting, roots) {
        (Some(name), Some(greeting), Some(roots)) => Ok(format!(
            "{} {} (roots: {})",
            sampled_text(&greeting),
            name_or_nobody(name),
            root_list(&roots)
        )),
        // await_inputs() returned Ok, so every try_* above returned Some.
        _ => Err(HandlerError::tool(
            "an input was reported complete but is missing; call the tool again",
        )),
    }
}

/// Asks for the user's name, then (in a second round) their favourite colour.
#[tool(read_only, requires(form_elicitation))]
async fn test_input_required_result_multi_round(
    ctx: &mut RequestContext,
) -> Result<String, HandlerError> {
    let name = name_or_nobody(
        ctx.elicit::<NameForm>("step1", "Step 1: What is your name?", ())
            .await?,
    );
    let color = match ctx
        .elicit::<ColorForm>("step2", "Step 2: What is your favorite color?", ())
        .await?
    {
        Elicitation::Accepted(form) => form.color,
        Elicitation::Declined | Elicitation::Cancelled => "no colour in particular".to_owned(),
    };
    Ok(format!("{name} likes {color}."))
}

/// Asks for a confirmation; altering the returned requestState must make the retry fail.
#[tool(read_only, requires(form_elicitation))]
async fn test_input_required_result_tampered_state(
    ctx: &mut RequestContext,
) -> Result<String, HandlerError> {
    let answer = ctx
        .elicit::<ConfirmForm>("confirm", "Please confirm", ())
        .await?;
    Ok(match answer {
        Elicitation::Accepted(form) => format!("Confirmed: {}", form.ok),
        Elicitation::Declined | Elicitation::Cancelled => "Not confirmed.".to_owned(),
    })
}

/// Asks only for the inputs this request's client capabilities allow: the user's name (form
/// elicitation), the capital of France (sampling) and the client's roots (roots). Each is
/// `optional`: a client lacking it is not refused, the tool checks before it asks.
#[tool(read_only, optional(form_elicitation, sampling, roots))]
async fn test_input_required_result_capabilities(
    ctx: &mut RequestContext,
) -> Result<String, HandlerError> {
    let caps = ctx.client_capabilities().clone();
    let mut parts = Vec::new();
    if caps.supports_form()
        && let Some(answer) = ctx
            .try_elicit::<NameForm>("user_name", "What is your name?", ())
            .await?
    {
        parts.push(format!("name: {}", name_or_nobody(answer)));
    }
    if caps.supports_sampling()
        && let Some(answer) = ctx
            .try_sample("capital_question", capital_question())
            .await?
    {
        parts.push(format!("model: {}", sampled_text(&answer)));
    }
    if caps.supports_roots()
        && let Some(roots) = ctx.try_list_roots("client_roots").await?
    {
        parts.push(format!("roots: {}", root_list(&roots)));
    }
    ctx.await_inputs()?;
    if parts.is_empty() {
        return Ok("The client declared no capability this tool could use.".to_owned());
    }
    Ok(parts.join("; "))
}
