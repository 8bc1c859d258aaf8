//! Fixtures that return fixed content (scenarios `tools-call-*`, `tools-list`).
//!
//! | Tool | Must return |
//! |---|---|
//! | `test_simple_text` | one text block (called without `arguments`) |
//! | `test_image_content` | an image block with base64 `data` and `mimeType` |
//! | `test_audio_content` | an audio block with `mimeType` exactly `audio/wav` |
//! | `test_embedded_resource` | a `resource` block whose resource has `uri`, `mimeType`, `text` |
//! | `test_multiple_content_types` | text + image + resource blocks in one result |
//! | `test_error_handling` | a complete result with `isError: true` and a text message |
//!
//! `tools-list` additionally needs every tool to have a description (the doc comment) and a
//! name matching `^[A-Za-z0-9_./-]{1,64}$`.

use mcp_runtime::prelude::*;
use mcp_runtime::router::ToolRouter;
use mcp_types::ContentBlock;
use mcp_types::{
    AudioContent, EmbeddedResource, ImageContent, JsonObject, ResourceContents,
    TextResourceContents,
};

/// A 1x1 red PNG (8-bit RGB), base64: the smallest image every client can decode.
pub const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

/// One millisecond of silence as an 8 kHz, 8-bit mono PCM WAV (44-byte header + 8 samples),
/// base64.
pub const SILENT_WAV: &str =
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

/// The error text of `test_error_handling`.
pub const ERROR_MESSAGE: &str = "This tool intentionally returns an error for testing";

/// The static-content fixtures, in `tools/list` order.
pub fn tools() -> ToolRouter {
    tools![
        test_simple_text,
        test_image_content,
        test_audio_content,
        test_embedded_resource,
        test_multiple_content_types,
        test_error_handling,
    ]
}

fn text_resource(uri: &str, mime_type: &str, text: &str) -> ContentBlock {
    ContentBlock::Resource(EmbeddedResource::new(ResourceContents::Text(
        TextResourceContents {
            uri: uri.to_owned(),
            mime_type: Some(mime_type.to_owned()),
            text: text.to_owned(),
            meta: None,
            extra: JsonObject::new(),
        },
    )))
}

/// Returns a fixed sentence of plain text.
#[tool(read_only, idempotent)]
async fn test_simple_text() -> String {
    "This is a simple text response for testing.".to_owned()
}

/// Returns a 1x1 red PNG image.
#[tool(read_only, idempotent)]
async fn test_image_content() -> Vec<ContentBlock> {
    vec![ContentBlock::Image(ImageContent::new(
        RED_PIXEL_PNG,
        "image/png",
    ))]
}

/// Returns a very short silent WAV clip.
#[tool(read_only, idempotent)]
async fn test_audio_content() -> Vec<ContentBlock> {
    vec![ContentBlock::Audio(AudioContent::new(
        SILENT_WAV,
        "audio/wav",
    ))]
}

/// Returns a text resource embedded in the result.
#[tool(read_only, idempotent)]
async fn test_embedded_resource() -> Vec<ContentBlock> {
    vec![text_resource(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )]
}

/// Returns text, an image and an embedded JSON resource in one result.
#[tool(read_only, idempotent)]
async fn test_multiple_content_types() -> Vec<ContentBlock> {
    vec![
        ContentBlock::text("Multiple content types test:"),
        ContentBlock::Image(ImageContent::new(RED_PIXEL_PNG, "image/png")),
        text_resource(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        ),
    ]
}

/// Always fails with a tool error (isError: true), to test error reporting.
#[tool(read_only, idempotent)]
async fn test_error_handling() -> Result<String, HandlerError> {
    Err(HandlerError::tool(ERROR_MESSAGE))
}
