//! Tools: `tools/list`, `tools/call` and the [`Tool`] descriptor.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::JsonObject;
use crate::content::ContentBlock;
use crate::meta::{Icon, RequestMeta, ResultMeta};
use crate::mrtr::InputResponses;
use crate::result::{CacheScope, ResultType};

/// `tools/list`.
pub const METHOD_TOOLS_LIST: &str = "tools/list";
/// `tools/call`.
pub const METHOD_TOOLS_CALL: &str = "tools/call";

/// A tool's `inputSchema`: any JSON Schema object whose root `type` is `"object"`.
///
/// The inner object is kept verbatim (key order included); construction and
/// deserialization refuse a root without `"type": "object"`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct InputSchema(JsonObject);

/// Why a JSON object is not a valid tool `inputSchema`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a tool inputSchema must be a JSON Schema object with \"type\": \"object\" at its root; found type {found}"
)]
pub struct InputSchemaError {
    /// The root `type` that was found (`"absent"` if none).
    pub found: String,
}

impl InputSchema {
    /// `{"type":"object"}` — a tool without parameters.
    pub fn empty_object() -> Self {
        let mut o = JsonObject::new();
        o.insert("type".into(), Value::String("object".into()));
        InputSchema(o)
    }

    /// Validates and wraps a schema object.
    pub fn new(schema: JsonObject) -> Result<Self, InputSchemaError> {
        match schema.get("type") {
            Some(Value::String(s)) if s == "object" => Ok(InputSchema(schema)),
            Some(other) => Err(InputSchemaError {
                found: other.to_string(),
            }),
            None => Err(InputSchemaError {
                found: "absent".into(),
            }),
        }
    }

    /// The schema object.
    pub fn as_object(&self) -> &JsonObject {
        &self.0
    }

    /// Unwraps the schema object.
    pub fn into_object(self) -> JsonObject {
        self.0
    }
}

impl TryFrom<JsonObject> for InputSchema {
    type Error = InputSchemaError;
    fn try_from(o: JsonObject) -> Result<Self, Self::Error> {
        InputSchema::new(o)
    }
}

impl<'de> Deserialize<'de> for InputSchema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        InputSchema::new(JsonObject::deserialize(d)?).map_err(D::Error::custom)
    }
}

/// Behaviour hints about a tool (untrusted unless the server is trusted).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolAnnotations {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Does not modify its environment (default false).
    #[serde(
        rename = "readOnlyHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub read_only_hint: Option<bool>,
    /// May perform destructive updates (default true).
    #[serde(
        rename = "destructiveHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub destructive_hint: Option<bool>,
    /// Repeated calls with the same arguments have no extra effect (default false).
    #[serde(
        rename = "idempotentHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub idempotent_hint: Option<bool>,
    /// Interacts with an open world of external entities (default true).
    #[serde(
        rename = "openWorldHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub open_world_hint: Option<bool>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A tool descriptor as listed by `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// Unique name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Schema of the arguments (root `type: object`).
    #[serde(rename = "inputSchema")]
    pub input_schema: InputSchema,
    /// Schema of `structuredContent` (any schema; root need not be an object).
    #[serde(
        rename = "outputSchema",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub output_schema: Option<JsonObject>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Tool {
    /// A tool with a name and input schema only.
    pub fn new(name: impl Into<String>, input_schema: InputSchema) -> Self {
        Tool {
            name: name.into(),
            title: None,
            description: None,
            icons: None,
            input_schema,
            output_schema: None,
            annotations: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// Params of list requests (`tools/list`, `prompts/list`, ...): `{_meta, cursor?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaginatedRequestParams {
    /// Request `_meta`.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// Opaque pagination cursor (`""` is valid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `tools/list` params.
pub type ListToolsRequestParams = PaginatedRequestParams;

/// `tools/list` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListToolsResult {
    /// `"complete"`.
    #[serde(rename = "resultType", default)]
    pub result_type: ResultType,
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// Cursor of the next page.
    #[serde(
        rename = "nextCursor",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub next_cursor: Option<String>,
    /// Freshness in milliseconds.
    #[serde(rename = "ttlMs")]
    pub ttl_ms: u64,
    /// Cache scope.
    #[serde(rename = "cacheScope")]
    pub cache_scope: CacheScope,
    /// Result `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ListToolsResult {
    /// A complete, single-page result.
    pub fn new(tools: Vec<Tool>, ttl_ms: u64, cache_scope: CacheScope) -> Self {
        ListToolsResult {
            result_type: ResultType::Complete,
            tools,
            next_cursor: None,
            ttl_ms,
            cache_scope,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// `tools/call` params (also the MRTR retry shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallToolRequestParams {
    /// Request `_meta`.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// Tool name.
    pub name: String,
    /// Tool arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// MRTR retry: responses keyed like the `inputRequests` they answer.
    #[serde(
        rename = "inputResponses",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub input_responses: Option<InputResponses>,
    /// MRTR retry: the `requestState` echoed byte for byte.
    #[serde(
        rename = "requestState",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub request_state: Option<String>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CallToolRequestParams {
    /// A first-round call.
    pub fn new(meta: RequestMeta, name: impl Into<String>, arguments: Option<JsonObject>) -> Self {
        CallToolRequestParams {
            meta,
            name: name.into(),
            arguments,
            input_responses: None,
            request_state: None,
            extra: JsonObject::new(),
        }
    }
}

/// A complete `tools/call` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallToolResult {
    /// `"complete"`.
    #[serde(rename = "resultType", default)]
    pub result_type: ResultType,
    /// Unstructured content.
    pub content: Vec<ContentBlock>,
    /// Structured result: any JSON value, `null` included (absent is `None`).
    #[serde(
        rename = "structuredContent",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_util::present"
    )]
    pub structured_content: Option<Value>,
    /// Tool-level error flag; absent is distinct from `false`.
    #[serde(rename = "isError", default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Result `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CallToolResult {
    /// A successful result with the given content (no `isError` member).
    pub fn success(content: Vec<ContentBlock>) -> Self {
        CallToolResult {
            result_type: ResultType::Complete,
            content,
            structured_content: None,
            is_error: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// A tool execution error (`isError: true`) explained by one text block.
    pub fn error(message: impl Into<String>) -> Self {
        CallToolResult {
            is_error: Some(true),
            ..Self::success(vec![ContentBlock::text(message)])
        }
    }

    /// Whether this is a tool error (absent counts as `false`).
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }

    /// The text of every text block, joined with newlines (non-text blocks are skipped): what
    /// a test usually compares.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}
