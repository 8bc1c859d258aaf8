//! Elicitation (`elicitation/create`, embedded in MRTR `inputRequests`).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Number, Value};

use crate::JsonObject;
use crate::form_schema::RequestedSchema;
use crate::members::member;

/// `elicitation/create`.
pub const METHOD_ELICITATION_CREATE: &str = "elicitation/create";

const_str!(
    /// `"method": "elicitation/create"`.
    ElicitationCreateMethod = "elicitation/create"
);
const_str!(
    /// `"mode": "form"`.
    FormMode = "form"
);
const_str!(
    /// `"mode": "url"`.
    UrlMode = "url"
);

/// An embedded elicitation request: `{method: "elicitation/create", params}`
/// (no `jsonrpc`, no `id`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitRequest {
    /// Always `"elicitation/create"`.
    pub method: ElicitationCreateMethod,
    /// Form or URL params.
    pub params: ElicitRequestParams,
}

impl ElicitRequest {
    /// A form-mode elicitation (with `mode: "form"` written explicitly).
    pub fn form(message: impl Into<String>, requested_schema: RequestedSchema) -> Self {
        ElicitRequest {
            method: ElicitationCreateMethod,
            params: ElicitRequestParams::Form(ElicitRequestFormParams::new(
                message,
                requested_schema,
            )),
        }
    }

    /// A URL-mode elicitation.
    pub fn url(message: impl Into<String>, url: impl Into<String>) -> Self {
        ElicitRequest {
            method: ElicitationCreateMethod,
            params: ElicitRequestParams::Url(ElicitRequestUrlParams::new(message, url)),
        }
    }
}

/// Elicitation params: `mode` absent or `"form"` → form, `"url"` → URL.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ElicitRequestParams {
    /// Form mode.
    Form(ElicitRequestFormParams),
    /// URL mode.
    Url(ElicitRequestUrlParams),
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let r = match v.get("mode") {
            None => serde_json::from_value(v).map(ElicitRequestParams::Form),
            Some(Value::String(m)) if m == "form" => {
                serde_json::from_value(v).map(ElicitRequestParams::Form)
            }
            Some(Value::String(m)) if m == "url" => {
                serde_json::from_value(v).map(ElicitRequestParams::Url)
            }
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "unknown elicitation mode {other}; expected \"form\" or \"url\""
                )));
            }
        };
        r.map_err(D::Error::custom)
    }
}

/// Form-mode params: `{mode?: "form", message, requestedSchema}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitRequestFormParams {
    /// `"form"`, or absent (absent also means form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<FormMode>,
    /// What to show the user.
    pub message: String,
    /// The form.
    #[serde(rename = "requestedSchema")]
    pub requested_schema: RequestedSchema,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitRequestFormParams {
    /// Form params with `mode: "form"` written explicitly.
    pub fn new(message: impl Into<String>, requested_schema: RequestedSchema) -> Self {
        ElicitRequestFormParams {
            mode: Some(FormMode),
            message: message.into(),
            requested_schema,
            extra: JsonObject::new(),
        }
    }
}

/// URL-mode params: `{mode: "url", message, url}` (no `elicitationId` in 2026-07-28).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitRequestUrlParams {
    /// Always `"url"`.
    pub mode: UrlMode,
    /// What to show the user.
    pub message: String,
    /// The URL to open (after explicit consent).
    pub url: String,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Spec-name alias (`ElicitRequestURLParams`).
pub type ElicitRequestURLParams = ElicitRequestUrlParams;

impl ElicitRequestUrlParams {
    /// URL params.
    pub fn new(message: impl Into<String>, url: impl Into<String>) -> Self {
        ElicitRequestUrlParams {
            mode: UrlMode,
            message: message.into(),
            url: url.into(),
            extra: JsonObject::new(),
        }
    }
}

/// The user's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted (form) or consented to open the URL (URL mode).
    Accept,
    /// Explicitly refused.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// One submitted form value: string, number (any JSON number, per `schema.ts`),
/// boolean, or string array (multi select).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ElicitContentValue {
    /// A string.
    String(String),
    /// A number, kept in its JSON form.
    Number(Number),
    /// A boolean.
    Boolean(bool),
    /// Selected values of a multi select.
    StringArray(Vec<String>),
}

/// Submitted form content, in field order.
pub type ElicitContent = indexmap::IndexMap<String, ElicitContentValue>;

/// The response to an elicitation (inside `inputResponses`; no `resultType`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// Form values (only for `accept` in form mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ElicitContent>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitResult {
    /// `accept` with form content (`None` for URL-mode consent).
    pub fn accept(content: Option<ElicitContent>) -> Self {
        ElicitResult {
            action: ElicitAction::Accept,
            content,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// `decline`.
    pub fn decline() -> Self {
        ElicitResult {
            action: ElicitAction::Decline,
            content: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// `cancel`.
    pub fn cancel() -> Self {
        ElicitResult {
            action: ElicitAction::Cancel,
            content: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// The `action` of an `ElicitResult` held as a JSON value, or `None` when the value does
    /// not have this type's shape. Accepts exactly the values `ElicitResult`'s `Deserialize`
    /// accepts, without building one (no allocation): for servers that only need the action
    /// and read the content in place.
    ///
    /// ```
    /// use mcp_types::{ElicitAction, ElicitResult};
    /// let answer = serde_json::json!({"action": "accept", "content": {"confirm": true}});
    /// assert_eq!(ElicitResult::action_of(&answer), Some(ElicitAction::Accept));
    /// let nested = serde_json::json!({"action": "accept", "content": {"x": {"y": 1}}});
    /// assert_eq!(ElicitResult::action_of(&nested), None);
    /// ```
    pub fn action_of(value: &Value) -> Option<ElicitAction> {
        let obj = value.as_object()?;
        let action = match member(obj, "action")?.as_str()? {
            "accept" => ElicitAction::Accept,
            "decline" => ElicitAction::Decline,
            "cancel" => ElicitAction::Cancel,
            _ => return None,
        };
        let content_ok = match member(obj, "content") {
            None | Some(Value::Null) => true,
            Some(Value::Object(content)) => content.values().all(|v| match v {
                Value::String(_) | Value::Number(_) | Value::Bool(_) => true,
                Value::Array(items) => items.iter().all(Value::is_string),
                Value::Null | Value::Object(_) => false,
            }),
            Some(_) => false,
        };
        let meta_ok = matches!(
            member(obj, "_meta"),
            None | Some(Value::Null | Value::Object(_))
        );
        (content_ok && meta_ok).then_some(action)
    }
}
