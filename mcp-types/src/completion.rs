//! Argument completion: `completion/complete`.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::JsonObject;
use crate::meta::{RequestMeta, ResultMeta};
use crate::result::ResultType;
use crate::serde_util::str_member;

/// `completion/complete`.
pub const METHOD_COMPLETION_COMPLETE: &str = "completion/complete";

const_str!(
    /// `"type": "ref/prompt"`.
    PromptReferenceType = "ref/prompt"
);
const_str!(
    /// `"type": "ref/resource"`.
    ResourceTemplateReferenceType = "ref/resource"
);

/// Reference to a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptReference {
    /// Always `"ref/prompt"`.
    #[serde(rename = "type")]
    pub kind: PromptReferenceType,
    /// Prompt name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Reference to a resource template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceTemplateReference {
    /// Always `"ref/resource"`.
    #[serde(rename = "type")]
    pub kind: ResourceTemplateReferenceType,
    /// The URI template.
    pub uri: String,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// What is being completed, discriminated by `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum CompletionReference {
    /// `ref/prompt`
    Prompt(PromptReference),
    /// `ref/resource`
    ResourceTemplate(ResourceTemplateReference),
}

impl<'de> Deserialize<'de> for CompletionReference {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let r = match str_member(&v, "type") {
            Some("ref/prompt") => serde_json::from_value(v).map(CompletionReference::Prompt),
            Some("ref/resource") => {
                serde_json::from_value(v).map(CompletionReference::ResourceTemplate)
            }
            _ => {
                return Err(D::Error::custom(
                    "completion ref needs \"type\": \"ref/prompt\" or \"ref/resource\"",
                ));
            }
        };
        r.map_err(D::Error::custom)
    }
}

/// The argument being completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionArgument {
    /// Argument name.
    pub name: String,
    /// Partial value typed so far.
    pub value: String,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Already-resolved arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompletionContext {
    /// Argument name → value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<indexmap::IndexMap<String, String>>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `completion/complete` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteRequestParams {
    /// Request `_meta`.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// What is being completed.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument.
    pub argument: CompletionArgument,
    /// Context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompletionContext>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The suggestions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// Up to 100 values.
    pub values: Vec<String>,
    /// Total number of matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether more exist beyond `values`.
    #[serde(rename = "hasMore", default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `completion/complete` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteResult {
    /// `"complete"`.
    #[serde(rename = "resultType", default)]
    pub result_type: ResultType,
    /// The suggestions.
    pub completion: Completion,
    /// Result `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}
