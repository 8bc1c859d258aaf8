//! Roots (`roots/list`, deprecated but functional; embedded in MRTR `inputRequests`).

use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// `roots/list`.
pub const METHOD_ROOTS_LIST: &str = "roots/list";

const_str!(
    /// `"method": "roots/list"`.
    ListRootsMethod = "roots/list"
);

/// `roots/list` params: `{_meta?}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListRootsRequestParams {
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// An embedded roots request: `{method: "roots/list", params?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListRootsRequest {
    /// Always `"roots/list"`.
    pub method: ListRootsMethod,
    /// Params (absent is distinct from `{}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<ListRootsRequestParams>,
    /// Unknown members (some examples carry a stray `id`), preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ListRootsRequest {
    /// `{"method":"roots/list"}`.
    pub fn new() -> Self {
        ListRootsRequest {
            method: ListRootsMethod,
            params: None,
            extra: JsonObject::new(),
        }
    }
}

impl Default for ListRootsRequest {
    fn default() -> Self {
        Self::new()
    }
}

/// A root: `{uri (file://), name?, _meta?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Root {
    /// A root with a URI only.
    pub fn new(uri: impl Into<String>) -> Self {
        Root {
            uri: uri.into(),
            name: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The client's roots answer (inside `inputResponses`; no `resultType`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}
