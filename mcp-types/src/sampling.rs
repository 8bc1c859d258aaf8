//! Sampling (`sampling/createMessage`, deprecated but functional; embedded in
//! MRTR `inputRequests`).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Number, Value};

use crate::JsonObject;
use crate::content::{AudioContent, ContentBlock, ImageContent, Role, TextContent};
use crate::serde_util::str_member;
use crate::tools::Tool;

/// `sampling/createMessage`.
pub const METHOD_SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";

const_str!(
    /// `"method": "sampling/createMessage"`.
    CreateMessageMethod = "sampling/createMessage"
);
const_str!(
    /// `"type": "tool_use"`.
    ToolUseType = "tool_use"
);
const_str!(
    /// `"type": "tool_result"`.
    ToolResultType = "tool_result"
);

/// A model's request to call a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUseContent {
    /// Always `"tool_use"`.
    #[serde(rename = "type")]
    pub kind: ToolUseType,
    /// Tool-use id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Tool arguments.
    pub input: JsonObject,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The result of a tool use, fed back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultContent {
    /// Always `"tool_result"`.
    #[serde(rename = "type")]
    pub kind: ToolResultType,
    /// The `id` of the tool use this answers.
    #[serde(rename = "toolUseId")]
    pub tool_use_id: String,
    /// Unstructured result.
    pub content: Vec<ContentBlock>,
    /// Structured result (any JSON value; a present `null` is kept).
    #[serde(
        rename = "structuredContent",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_util::present"
    )]
    pub structured_content: Option<Value>,
    /// Error flag.
    #[serde(rename = "isError", default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One content block of a sampling message, discriminated by `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SamplingMessageContentBlock {
    /// `text`
    Text(TextContent),
    /// `image`
    Image(ImageContent),
    /// `audio`
    Audio(AudioContent),
    /// `tool_use`
    ToolUse(ToolUseContent),
    /// `tool_result`
    ToolResult(ToolResultContent),
}

impl<'de> Deserialize<'de> for SamplingMessageContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use SamplingMessageContentBlock as B;
        let v = Value::deserialize(d)?;
        let r = match str_member(&v, "type") {
            Some("text") => serde_json::from_value(v).map(B::Text),
            Some("image") => serde_json::from_value(v).map(B::Image),
            Some("audio") => serde_json::from_value(v).map(B::Audio),
            Some("tool_use") => serde_json::from_value(v).map(B::ToolUse),
            Some("tool_result") => serde_json::from_value(v).map(B::ToolResult),
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "unknown sampling content type {other:?}; expected text, image, audio, tool_use or tool_result"
                )));
            }
            None => {
                return Err(D::Error::custom(
                    "sampling content block needs a string \"type\"",
                ));
            }
        };
        r.map_err(D::Error::custom)
    }
}

/// Sampling content: one block or an array of blocks (both are valid on the wire).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SamplingContent {
    /// A single block.
    Single(SamplingMessageContentBlock),
    /// Several blocks.
    Multiple(Vec<SamplingMessageContentBlock>),
}

impl SamplingContent {
    /// A single text block.
    pub fn text(text: impl Into<String>) -> Self {
        SamplingContent::Single(SamplingMessageContentBlock::Text(TextContent::new(text)))
    }

    /// The blocks, whichever form was used.
    pub fn blocks(&self) -> &[SamplingMessageContentBlock] {
        match self {
            SamplingContent::Single(b) => std::slice::from_ref(b),
            SamplingContent::Multiple(v) => v,
        }
    }
}

/// A message in a sampling conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Speaker.
    pub role: Role,
    /// Content.
    pub content: SamplingContent,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SamplingMessage {
    /// A user text message.
    pub fn user_text(text: impl Into<String>) -> Self {
        SamplingMessage {
            role: Role::User,
            content: SamplingContent::text(text),
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// A model name hint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelHint {
    /// (Part of) a model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Model selection preferences (priorities in `[0, 1]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelPreferences {
    /// Name hints, in preference order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// Weight on cost.
    #[serde(
        rename = "costPriority",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cost_priority: Option<Number>,
    /// Weight on speed.
    #[serde(
        rename = "speedPriority",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub speed_priority: Option<Number>,
    /// Weight on capability.
    #[serde(
        rename = "intelligencePriority",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub intelligence_priority: Option<Number>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `includeContext` (values other than `none` are deprecated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum IncludeContext {
    /// `none`
    #[serde(rename = "none")]
    None,
    /// `thisServer`
    #[serde(rename = "thisServer")]
    ThisServer,
    /// `allServers`
    #[serde(rename = "allServers")]
    AllServers,
}

/// `toolChoice.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    /// The model decides.
    Auto,
    /// The model must call a tool.
    Required,
    /// The model must not call a tool.
    None,
}

/// How the model may use the offered tools.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolChoice {
    /// The mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `sampling/createMessage` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateMessageRequestParams {
    /// The conversation.
    pub messages: Vec<SamplingMessage>,
    /// Model preferences.
    #[serde(
        rename = "modelPreferences",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub model_preferences: Option<ModelPreferences>,
    /// System prompt.
    #[serde(
        rename = "systemPrompt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub system_prompt: Option<String>,
    /// Context inclusion (needs `sampling.context` unless `none`).
    #[serde(
        rename = "includeContext",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub include_context: Option<IncludeContext>,
    /// Temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Number>,
    /// Token budget.
    #[serde(rename = "maxTokens")]
    pub max_tokens: u64,
    /// Stop sequences.
    #[serde(
        rename = "stopSequences",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// Tools the model may call (needs `sampling.tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// Tool choice (needs `sampling.tools`).
    #[serde(
        rename = "toolChoice",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub tool_choice: Option<ToolChoice>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CreateMessageRequestParams {
    /// Params with messages and a token budget only.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u64) -> Self {
        CreateMessageRequestParams {
            messages,
            model_preferences: None,
            system_prompt: None,
            include_context: None,
            temperature: None,
            max_tokens,
            stop_sequences: None,
            metadata: None,
            tools: None,
            tool_choice: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// An embedded sampling request: `{method: "sampling/createMessage", params}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateMessageRequest {
    /// Always `"sampling/createMessage"`.
    pub method: CreateMessageMethod,
    /// Params.
    pub params: CreateMessageRequestParams,
}

impl CreateMessageRequest {
    /// Wraps params.
    pub fn new(params: CreateMessageRequestParams) -> Self {
        CreateMessageRequest {
            method: CreateMessageMethod,
            params,
        }
    }
}

/// The client's sampling answer (inside `inputResponses`; no `resultType`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateMessageResult {
    /// Speaker (normally `assistant`).
    pub role: Role,
    /// Generated content.
    pub content: SamplingContent,
    /// The model that produced it.
    pub model: String,
    /// Why generation stopped (`endTurn`, `stopSequence`, `maxTokens`, `toolUse`, ...).
    #[serde(
        rename = "stopReason",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub stop_reason: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}
