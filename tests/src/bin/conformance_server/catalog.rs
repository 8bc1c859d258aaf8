//! Prompt, resource and completion fixtures (scenarios `prompts-*`, `resources-*`,
//! `completion-complete`, `input-required-result-non-tool-request`, `caching`,
//! `sep-2164-resource-not-found`).
//!
//! | Fixture | Must return |
//! |---|---|
//! | prompt `test_simple_prompt` | one user text message, no arguments |
//! | prompt `test_prompt_with_arguments` | the values of `arg1` and `arg2` in the text |
//! | prompt `test_prompt_with_embedded_resource` | a `resource` block for `resourceUri`, then text |
//! | prompt `test_prompt_with_image` | an image block (base64 PNG) then text |
//! | prompt `test_input_required_result_prompt` | first an elicitation (key `user_context`, a required string `context`), then messages using it |
//! | `test://static-text` | text contents with `mimeType` |
//! | `test://static-binary` | a base64 PNG `blob` with `mimeType` |
//! | `test://template/{id}/data` | JSON text containing the `id` |
//! | completion of `arg1` | values starting with the typed prefix |

use mcp_runtime::prelude::*;
use mcp_runtime::router::PromptRouter;
use mcp_runtime::router::ResourceRouter;
use mcp_types::CompletionContext;
use mcp_types::ContentBlock;
use mcp_types::{
    BlobResourceContents, EmbeddedResource, ImageContent, JsonObject, ResourceContents,
    TextResourceContents,
};

use super::content::RED_PIXEL_PNG;

/// The fixture prompts, in `prompts/list` order.
pub fn prompts() -> PromptRouter {
    prompts![
        test_simple_prompt,
        test_prompt_with_arguments,
        test_prompt_with_embedded_resource,
        test_prompt_with_image,
        test_input_required_result_prompt,
    ]
}

/// The fixture resources and templates.
pub fn resources() -> ResourceRouter {
    resources![static_text, static_binary, template_data]
}

/// A prompt without arguments.
#[prompt]
fn test_simple_prompt() -> &'static str {
    "This is a simple prompt for testing."
}

/// Arguments of `test_prompt_with_arguments`.
#[args]
struct TwoArgs {
    /// First test argument
    arg1: String,
    /// Second test argument
    arg2: String,
}

/// Suggestions for `arg1`: fixed words that start with what was typed.
fn complete_arg1(value: &str, _context: &CompletionContext) -> Vec<String> {
    ["test", "testing", "tested", "other"]
        .iter()
        .filter(|w| w.starts_with(value))
        .map(|w| (*w).to_owned())
        .collect()
}

/// A prompt that repeats its two arguments.
#[prompt(complete(arg1 = complete_arg1))]
fn test_prompt_with_arguments(args: TwoArgs) -> String {
    format!(
        "Prompt with arguments: arg1='{}', arg2='{}'",
        args.arg1, args.arg2
    )
}

/// Arguments of `test_prompt_with_embedded_resource`.
#[args]
#[serde(rename_all = "camelCase")]
struct EmbedArgs {
    /// URI of the resource to embed
    resource_uri: String,
}

/// A prompt that embeds the resource named by `resourceUri`.
#[prompt]
fn test_prompt_with_embedded_resource(args: EmbedArgs) -> Vec<ContentBlock> {
    let resource = ResourceContents::Text(TextResourceContents {
        uri: args.resource_uri,
        mime_type: Some("text/plain".into()),
        text: "Embedded resource content for testing.".into(),
        meta: None,
        extra: JsonObject::new(),
    });
    vec![
        EmbeddedResource::new(resource).into(),
        ContentBlock::text("Please process the embedded resource above."),
    ]
}

/// A prompt with an image.
#[prompt]
fn test_prompt_with_image() -> Vec<ContentBlock> {
    vec![
        ImageContent::new(RED_PIXEL_PNG, "image/png").into(),
        ContentBlock::text("Please analyze the image above."),
    ]
}

/// The context the user gives `test_input_required_result_prompt`.
#[derive(ElicitForm)]
struct UserContext {
    /// The context to use
    context: String,
}

/// A prompt that first asks the user what context to use.
#[prompt(requires(form_elicitation))]
async fn test_input_required_result_prompt(
    ctx: &mut RequestContext,
) -> Result<String, HandlerError> {
    match ctx
        .elicit::<UserContext>("user_context", "What context should the prompt use?", ())
        .await?
    {
        Elicitation::Accepted(c) => Ok(format!("Use this context: {}", c.context)),
        Elicitation::Declined | Elicitation::Cancelled => {
            Ok("Proceed without extra context.".to_owned())
        }
    }
}

/// A fixed text resource.
#[resource(
    uri = "test://static-text",
    mime_type = "text/plain",
    ttl_ms = 60000,
    cache_scope = "public"
)]
fn static_text() -> &'static str {
    "This is the content of the static text resource."
}

/// A fixed binary resource (a 1x1 PNG).
#[resource(
    uri = "test://static-binary",
    mime_type = "image/png",
    ttl_ms = 60000,
    cache_scope = "public"
)]
fn static_binary() -> ResourceContents {
    ResourceContents::Blob(BlobResourceContents {
        uri: "test://static-binary".into(),
        mime_type: Some("image/png".into()),
        blob: RED_PIXEL_PNG.into(),
        meta: None,
        extra: JsonObject::new(),
    })
}

/// Variables of `test://template/{id}/data`.
#[args]
struct TemplateVars {
    id: String,
}

/// Suggestions for `{id}`.
fn complete_id(value: &str, _context: &CompletionContext) -> Vec<String> {
    ["1", "123", "42"]
        .iter()
        .filter(|w| w.starts_with(value))
        .map(|w| (*w).to_owned())
        .collect()
}

/// JSON data for any id.
#[resource(uri = "test://template/{id}/data", name = "template_data", mime_type = "application/json", complete(id = complete_id))]
fn template_data(vars: TemplateVars) -> Json<serde_json::Value> {
    Json(
        serde_json::json!({ "id": vars.id, "templateTest": true, "data": format!("Data for ID: {}", vars.id) }),
    )
}
