//! Fixtures of the 2025-11-25 server scenarios (`conformance server --spec-version
//! 2025-11-25`), written once as ordinary input-requesting tools: a 2025-11-25 client reaches
//! them through the runtime's legacy adapter, which turns each input request into a live
//! `sampling/createMessage` or `elicitation/create` request; a 2026-07-28 client gets the
//! usual `input_required` round.
//!
//! | Tool | Scenario | Must do |
//! |---|---|---|
//! | `test_sampling` | `tools-call-sampling` | sample `{prompt}` (maxTokens 100), answer `LLM response: <text>` |
//! | `test_elicitation` | `tools-call-elicitation` | elicit `{username, email}` (both required strings) with `{message}`, answer with the action and content |
//! | `test_elicitation_sep1034_defaults` | `elicitation-sep1034-defaults` | elicit a form whose string, integer, number, enum and boolean fields carry defaults |
//! | `test_elicitation_sep1330_enums` | `elicitation-sep1330-enums` | elicit a form with the five enum shapes (untitled/titled single, legacy `enumNames`, untitled/titled multi) |
//!
//! The two SEP forms are data (their schemas show schema features, not a Rust type), so they
//! implement [`ElicitForm`] by hand with [`EchoForm`]: the accepted content is only echoed
//! back in the result text, never acted on; fields the form did not ask for are dropped.

use mcp_runtime::form::FormError;
use mcp_runtime::prelude::*;
use mcp_runtime::router::ToolRouter;
use mcp_types::{CreateMessageRequestParams, JsonObject, RequestedSchema, SamplingMessage};
use serde_json::{Value, json};

use super::mrtr::sampled_text;

/// The 2025-11-25 fixtures, in `tools/list` order.
pub fn tools() -> ToolRouter {
    tools![
        test_sampling,
        test_elicitation,
        test_elicitation_sep1034_defaults,
        test_elicitation_sep1330_enums,
    ]
}

/// `test_sampling` arguments.
#[args]
#[derive(Debug)]
pub struct PromptArgs {
    /// The prompt sent to the client's model.
    pub prompt: String,
}

/// Sends `prompt` to the client's model and returns its answer.
#[tool(read_only, requires(sampling))]
async fn test_sampling(ctx: &mut RequestContext, args: PromptArgs) -> Result<String, HandlerError> {
    let params =
        CreateMessageRequestParams::new(vec![SamplingMessage::user_text(args.prompt)], 100);
    let answer = ctx.sample("llm_answer", params).await?;
    Ok(format!("LLM response: {}", sampled_text(&answer)))
}

/// `test_elicitation` arguments.
#[args]
#[derive(Debug)]
pub struct MessageArgs {
    /// The message shown to the user with the form.
    pub message: String,
}

/// The user's name and email address.
#[derive(ElicitForm)]
pub struct ContactForm {
    /// User's response
    pub username: String,
    /// User's email address
    pub email: String,
}

/// Asks the user for a username and email address, then reports what they answered.
#[tool(read_only, requires(form_elicitation))]
async fn test_elicitation(
    ctx: &mut RequestContext,
    args: MessageArgs,
) -> Result<String, HandlerError> {
    let answer = ctx
        .elicit::<ContactForm>("contact", args.message, ())
        .await?;
    Ok(match answer {
        Elicitation::Accepted(form) => format!(
            "User response: action=accept, content={}",
            json!({"username": form.username, "email": form.email})
        ),
        Elicitation::Declined => "User response: action=decline".to_owned(),
        Elicitation::Cancelled => "User response: action=cancel".to_owned(),
    })
}

/// A form whose schema is fixed data, answered by echoing what the user accepted.
pub trait EchoSchema: Send + 'static {
    /// The `requestedSchema` sent to the client.
    fn schema() -> Value;
}

/// The accepted content of an [`EchoSchema`] form, keys limited to the schema's fields.
pub struct EchoForm<S> {
    /// The accepted content.
    pub content: JsonObject,
    _schema: std::marker::PhantomData<S>,
}

impl<S: EchoSchema> ElicitForm for EchoForm<S> {
    type Choices = ();

    fn choices() -> Self::Choices {}

    fn requested_schema((): &()) -> RequestedSchema {
        // The schemas below are constants of this file; a test checks each one parses.
        serde_json::from_value(S::schema()).unwrap_or_else(|e| panic!("fixture schema: {e}"))
    }

    fn from_content(content: &JsonObject, (): &()) -> Result<Self, FormError> {
        // Keep only the fields the form asked for: anything else the client sent is dropped.
        let schema = S::schema();
        let content = match schema["properties"].as_object() {
            Some(asked) => content
                .iter()
                .filter(|(k, _)| asked.contains_key(k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            None => JsonObject::new(),
        };
        Ok(EchoForm {
            content,
            _schema: std::marker::PhantomData,
        })
    }
}

/// SEP-1034: a default on every primitive field type.
pub struct Sep1034Defaults;

impl EchoSchema for Sep1034Defaults {
    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Your name", "default": "John Doe"},
                "age": {"type": "integer", "description": "Your age", "default": 30},
                "score": {"type": "number", "description": "Your score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "Account status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active"
                },
                "verified": {"type": "boolean", "description": "Verified?", "default": true}
            }
        })
    }
}

/// SEP-1330: the five enum shapes.
pub struct Sep1330Enums;

impl EchoSchema for Sep1330Enums {
    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}
                ]},
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"]
                },
                "untitledMulti": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
                },
                "titledMulti": {"type": "array", "items": {"anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"}
                ]}}
            }
        })
    }
}

fn echo<S: EchoSchema>(answer: Elicitation<EchoForm<S>>) -> String {
    match answer {
        Elicitation::Accepted(form) => format!(
            "Elicitation completed: action=accept, content={}",
            Value::Object(form.content)
        ),
        Elicitation::Declined => "Elicitation completed: action=decline, content={}".to_owned(),
        Elicitation::Cancelled => "Elicitation completed: action=cancel, content={}".to_owned(),
    }
}

/// Asks for a form whose fields all carry defaults (SEP-1034) and echoes the answer.
#[tool(read_only, requires(form_elicitation))]
async fn test_elicitation_sep1034_defaults(
    ctx: &mut RequestContext,
) -> Result<String, HandlerError> {
    let answer = ctx
        .elicit::<EchoForm<Sep1034Defaults>>("defaults", "Please review your details", ())
        .await?;
    Ok(echo(answer))
}

/// Asks for a form with every enum shape (SEP-1330) and echoes the answer.
#[tool(read_only, requires(form_elicitation))]
async fn test_elicitation_sep1330_enums(ctx: &mut RequestContext) -> Result<String, HandlerError> {
    let answer = ctx
        .elicit::<EchoForm<Sep1330Enums>>("enums", "Please pick your options", ())
        .await?;
    Ok(echo(answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_schemas_parse_as_requested_schemas() {
        for schema in [Sep1034Defaults::schema(), Sep1330Enums::schema()] {
            let parsed: Result<RequestedSchema, _> = serde_json::from_value(schema.clone());
            let parsed = parsed.unwrap();
            // Nothing lost on the way through the typed model.
            assert_eq!(serde_json::to_value(parsed).unwrap(), schema);
        }
    }
}
