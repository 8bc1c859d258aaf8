//! Resources: `resources/list`, `resources/templates/list`, `resources/read`,
//! and `notifications/resources/updated`.

use serde::{Deserialize, Serialize};

use crate::JsonObject;
use crate::content::{Annotations, ResourceContents};
use crate::meta::{Icon, NotificationMeta, RequestMeta, ResultMeta};
use crate::mrtr::InputResponses;
use crate::result::{CacheScope, ResultType};

/// `resources/list`.
pub const METHOD_RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list`.
pub const METHOD_RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read`.
pub const METHOD_RESOURCES_READ: &str = "resources/read";
/// `notifications/resources/updated`.
pub const METHOD_NOTIFICATION_RESOURCES_UPDATED: &str = "notifications/resources/updated";

/// A resource descriptor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resource {
    /// Resource URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A parameterised resource (RFC 6570 URI template).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceTemplate {
    /// The URI template.
    #[serde(rename = "uriTemplate")]
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type of matching resources.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `resources/list` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListResourcesResult {
    /// `"complete"`.
    #[serde(rename = "resultType", default)]
    pub result_type: ResultType,
    /// The resources on this page.
    pub resources: Vec<Resource>,
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

/// `resources/templates/list` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListResourceTemplatesResult {
    /// `"complete"`.
    #[serde(rename = "resultType", default)]
    pub result_type: ResultType,
    /// The templates on this page.
    #[serde(rename = "resourceTemplates")]
    pub resource_templates: Vec<ResourceTemplate>,
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

/// `resources/read` params (also the MRTR retry shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadResourceRequestParams {
    /// Request `_meta`.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// Resource URI.
    pub uri: String,
    /// MRTR retry responses.
    #[serde(
        rename = "inputResponses",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub input_responses: Option<InputResponses>,
    /// MRTR retry state, echoed verbatim.
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

/// A complete `resources/read` result (`ttlMs`/`cacheScope` are required).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadResourceResult {
    /// `"complete"`.
    #[serde(rename = "resultType", default)]
    pub result_type: ResultType,
    /// The contents.
    pub contents: Vec<ResourceContents>,
    /// Freshness in milliseconds.
    #[serde(rename = "ttlMs")]
    pub ttl_ms: u64,
    /// Cache scope (`private` for per-user reads).
    #[serde(rename = "cacheScope")]
    pub cache_scope: CacheScope,
    /// Result `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `notifications/resources/updated` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceUpdatedNotificationParams {
    /// The updated resource.
    pub uri: String,
    /// `_meta` (carries `subscriptionId`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}
