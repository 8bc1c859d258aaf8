//! `server/discover`.

use serde::{Deserialize, Serialize};

use crate::JsonObject;
use crate::capabilities::ServerCapabilities;
use crate::meta::{RequestMeta, ResultMeta};
use crate::result::{CacheScope, ResultType};

/// `server/discover`.
pub const METHOD_SERVER_DISCOVER: &str = "server/discover";

/// `server/discover` params: only the standard `_meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiscoverRequestParams {
    /// Request `_meta`.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `server/discover` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiscoverResult {
    /// `"complete"` (discovery never returns `input_required`).
    #[serde(rename = "resultType", default)]
    pub result_type: ResultType,
    /// Protocol versions the server supports.
    #[serde(rename = "supportedVersions")]
    pub supported_versions: Vec<String>,
    /// Server capabilities.
    pub capabilities: ServerCapabilities,
    /// Freshness in milliseconds.
    #[serde(rename = "ttlMs")]
    pub ttl_ms: u64,
    /// Cache scope.
    #[serde(rename = "cacheScope")]
    pub cache_scope: CacheScope,
    /// Guidance for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Result `_meta` (carries `serverInfo`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl DiscoverResult {
    /// A complete discover result.
    pub fn new(
        supported_versions: Vec<String>,
        capabilities: ServerCapabilities,
        ttl_ms: u64,
        cache_scope: CacheScope,
    ) -> Self {
        DiscoverResult {
            result_type: ResultType::Complete,
            supported_versions,
            capabilities,
            ttl_ms,
            cache_scope,
            instructions: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}
