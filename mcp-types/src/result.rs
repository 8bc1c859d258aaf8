//! Members shared by all results: `resultType` and the caching hints.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::JsonObject;
use crate::meta::ResultMeta;

/// The `resultType` discriminator every 2026-07-28 result carries.
///
/// A missing `resultType` (older server) reads as [`ResultType::Complete`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum ResultType {
    /// `"complete"`: a final result.
    #[default]
    Complete,
    /// `"input_required"`: an `InputRequiredResult`.
    InputRequired,
    /// Any other value (extension-defined, e.g. `"task"`), preserved verbatim.
    Other(String),
}

impl ResultType {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Other(s) => s,
        }
    }
}

impl From<&str> for ResultType {
    fn from(s: &str) -> Self {
        match s {
            "complete" => ResultType::Complete,
            "input_required" => ResultType::InputRequired,
            other => ResultType::Other(other.to_owned()),
        }
    }
}

impl Serialize for ResultType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(ResultType::from(s.as_str()))
    }
}

/// `cacheScope` of a cacheable result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// No user-specific data: anyone may be served this.
    Public,
    /// Reusable only within the same authorization context.
    Private,
}

/// A generic result with no specific members (`EmptyResult` / `Result`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyResult {
    /// `resultType` (always sent).
    #[serde(rename = "resultType", default)]
    pub result_type: ResultType,
    /// Result `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}
