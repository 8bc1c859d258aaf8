//! Multi round-trip requests (MRTR): `InputRequiredResult`, `InputRequests`,
//! `InputResponses`.
//!
//! Embedded input requests carry a `method` discriminator; their responses do
//! not carry any. [`InputResponses`] therefore decodes each entry by key into the
//! type the server asked for: [`InputResponses::get_as`] or
//! [`InputResponses::decode_for`].

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::JsonObject;
use crate::elicitation::{ElicitRequest, ElicitResult};
use crate::members::member;
use crate::meta::ResultMeta;
use crate::result::ResultType;
use crate::roots::{ListRootsRequest, ListRootsResult};
use crate::sampling::{CreateMessageRequest, CreateMessageResult};
use crate::serde_util::str_member;

/// One embedded input request, discriminated by `method`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum InputRequest {
    /// `elicitation/create`
    Elicit(ElicitRequest),
    /// `sampling/createMessage`
    CreateMessage(CreateMessageRequest),
    /// `roots/list`
    ListRoots(ListRootsRequest),
}

impl InputRequest {
    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            InputRequest::Elicit(_) => crate::elicitation::METHOD_ELICITATION_CREATE,
            InputRequest::CreateMessage(_) => crate::sampling::METHOD_SAMPLING_CREATE_MESSAGE,
            InputRequest::ListRoots(_) => crate::roots::METHOD_ROOTS_LIST,
        }
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let r = match str_member(&v, "method") {
            Some("elicitation/create") => serde_json::from_value(v).map(InputRequest::Elicit),
            Some("sampling/createMessage") => {
                serde_json::from_value(v).map(InputRequest::CreateMessage)
            }
            Some("roots/list") => serde_json::from_value(v).map(InputRequest::ListRoots),
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "unknown input request method {other:?}; expected elicitation/create, sampling/createMessage or roots/list"
                )));
            }
            None => return Err(D::Error::custom("input request needs a string \"method\"")),
        };
        r.map_err(D::Error::custom)
    }
}

impl From<ElicitRequest> for InputRequest {
    fn from(r: ElicitRequest) -> Self {
        InputRequest::Elicit(r)
    }
}
impl From<CreateMessageRequest> for InputRequest {
    fn from(r: CreateMessageRequest) -> Self {
        InputRequest::CreateMessage(r)
    }
}
impl From<ListRootsRequest> for InputRequest {
    fn from(r: ListRootsRequest) -> Self {
        InputRequest::ListRoots(r)
    }
}

/// Server-chosen key → embedded input request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct InputRequests(pub indexmap::IndexMap<String, InputRequest>);

impl InputRequests {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builder: adds a request under `key` (replacing any previous one).
    pub fn with(mut self, key: impl Into<String>, request: impl Into<InputRequest>) -> Self {
        self.0.insert(key.into(), request.into());
        self
    }

    /// Adds a request under `key`.
    pub fn insert(&mut self, key: impl Into<String>, request: impl Into<InputRequest>) {
        self.0.insert(key.into(), request.into());
    }

    /// The request under `key`.
    pub fn get(&self, key: &str) -> Option<&InputRequest> {
        self.0.get(key)
    }

    /// Number of requests.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Iterates in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &InputRequest)> {
        self.0.iter()
    }
}

/// A decoded input response.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum InputResponse {
    /// Answer to `elicitation/create`.
    Elicit(ElicitResult),
    /// Answer to `sampling/createMessage`.
    CreateMessage(CreateMessageResult),
    /// Answer to `roots/list`.
    ListRoots(ListRootsResult),
}

impl From<ElicitResult> for InputResponse {
    fn from(r: ElicitResult) -> Self {
        InputResponse::Elicit(r)
    }
}
impl From<CreateMessageResult> for InputResponse {
    fn from(r: CreateMessageResult) -> Self {
        InputResponse::CreateMessage(r)
    }
}
impl From<ListRootsResult> for InputResponse {
    fn from(r: ListRootsResult) -> Self {
        InputResponse::ListRoots(r)
    }
}

/// Why an input response could not be decoded.
#[derive(Debug, thiserror::Error)]
#[error("inputResponses[{key:?}] is not a valid {expected}: {source}")]
pub struct InputResponseError {
    /// The key.
    pub key: String,
    /// The type that was expected (`ElicitResult`, ...).
    pub expected: &'static str,
    /// The decoding error.
    #[source]
    pub source: serde_json::Error,
}

/// Key → raw response. Entries stay raw JSON until decoded with the type the
/// server asked for, because the wire carries no discriminator. Extra keys are
/// kept (and should be ignored by servers).
///
/// The map is a [`JsonObject`], the very map a parsed `inputResponses` member is, so a server
/// takes the member over as it is: nothing is copied or hashed again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct InputResponses(pub JsonObject);

impl InputResponses {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builder: adds a typed response under `key`.
    pub fn with(
        mut self,
        key: impl Into<String>,
        response: impl Into<InputResponse>,
    ) -> Result<Self, serde_json::Error> {
        self.insert(key, response)?;
        Ok(self)
    }

    /// Adds a typed response under `key`.
    pub fn insert(
        &mut self,
        key: impl Into<String>,
        response: impl Into<InputResponse>,
    ) -> Result<(), serde_json::Error> {
        let v = serde_json::to_value(response.into())?;
        self.0.insert(key.into(), v);
        Ok(())
    }

    /// The raw JSON under `key`.
    pub fn get_raw(&self, key: &str) -> Option<&Value> {
        member(&self.0, key)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get_raw(key).is_some()
    }

    /// Decodes the entry under `key` as `T` (`Ok(None)` when absent).
    pub fn get_as<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, InputResponseError> {
        match self.get_raw(key) {
            None => Ok(None),
            Some(v) => serde_json::from_value(v.clone())
                .map(Some)
                .map_err(|source| InputResponseError {
                    key: key.to_owned(),
                    expected: short_type_name::<T>(),
                    source,
                }),
        }
    }

    /// Decodes the entry under `key` as the response type of `request` (the
    /// request that was sent under that key).
    pub fn decode_for(
        &self,
        key: &str,
        request: &InputRequest,
    ) -> Result<Option<InputResponse>, InputResponseError> {
        Ok(match request {
            InputRequest::Elicit(_) => self.get_as::<ElicitResult>(key)?.map(InputResponse::Elicit),
            InputRequest::CreateMessage(_) => self
                .get_as::<CreateMessageResult>(key)?
                .map(InputResponse::CreateMessage),
            InputRequest::ListRoots(_) => self
                .get_as::<ListRootsResult>(key)?
                .map(InputResponse::ListRoots),
        })
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn short_type_name<T>() -> &'static str {
    let full = std::any::type_name::<T>();
    full.rsplit("::").next().unwrap_or(full)
}

/// Why an `InputRequiredResult` is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputRequiredError {
    /// Neither `inputRequests` nor `requestState` is present.
    #[error(
        "an InputRequiredResult needs at least one of inputRequests (non-empty) or requestState"
    )]
    Empty,
    /// `resultType` is not `"input_required"`.
    #[error("an InputRequiredResult must have resultType \"input_required\", got {0:?}")]
    WrongResultType(String),
}

/// `{resultType: "input_required", inputRequests?, requestState?, _meta?}` with at
/// least one of `inputRequests`/`requestState` (enforced on construction and
/// deserialization).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawInputRequiredResult")]
pub struct InputRequiredResult {
    #[serde(rename = "resultType")]
    result_type: ResultType,
    #[serde(
        rename = "inputRequests",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    input_requests: Option<InputRequests>,
    #[serde(
        rename = "requestState",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    request_state: Option<String>,
    /// Result `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

#[derive(Deserialize)]
struct RawInputRequiredResult {
    #[serde(rename = "resultType")]
    result_type: ResultType,
    #[serde(rename = "inputRequests", default)]
    input_requests: Option<InputRequests>,
    #[serde(rename = "requestState", default)]
    request_state: Option<String>,
    #[serde(rename = "_meta", default)]
    meta: Option<ResultMeta>,
    #[serde(flatten)]
    extra: JsonObject,
}

impl TryFrom<RawInputRequiredResult> for InputRequiredResult {
    type Error = InputRequiredError;
    fn try_from(r: RawInputRequiredResult) -> Result<Self, Self::Error> {
        if r.result_type != ResultType::InputRequired {
            return Err(InputRequiredError::WrongResultType(
                r.result_type.as_str().to_owned(),
            ));
        }
        let mut out = InputRequiredResult::new(r.input_requests, r.request_state)?;
        out.meta = r.meta;
        out.extra = r.extra;
        Ok(out)
    }
}

impl InputRequiredResult {
    /// Builds a result; fails unless `input_requests` is non-empty or
    /// `request_state` is present.
    pub fn new(
        input_requests: Option<InputRequests>,
        request_state: Option<String>,
    ) -> Result<Self, InputRequiredError> {
        let has_requests = input_requests.as_ref().is_some_and(|r| !r.is_empty());
        if !has_requests && request_state.is_none() {
            return Err(InputRequiredError::Empty);
        }
        Ok(InputRequiredResult {
            result_type: ResultType::InputRequired,
            input_requests,
            request_state,
            meta: None,
            extra: JsonObject::new(),
        })
    }

    /// Only a `requestState` (the "retry me" case).
    pub fn retry_with_state(request_state: impl Into<String>) -> Self {
        InputRequiredResult {
            result_type: ResultType::InputRequired,
            input_requests: None,
            request_state: Some(request_state.into()),
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// The input requests.
    pub fn input_requests(&self) -> Option<&InputRequests> {
        self.input_requests.as_ref()
    }

    /// The opaque request state.
    pub fn request_state(&self) -> Option<&str> {
        self.request_state.as_deref()
    }
}

/// A result that is either complete (`T`) or `input_required`, decided by the
/// `resultType` value (never by shape). Used for `tools/call`, `prompts/get` and
/// `resources/read`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MaybeInputRequired<T> {
    /// `resultType: "complete"` (or absent, from an older server).
    Complete(T),
    /// `resultType: "input_required"`.
    InputRequired(InputRequiredResult),
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for MaybeInputRequired<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        match v.get("resultType") {
            Some(Value::String(s)) if s == "input_required" => serde_json::from_value(v)
                .map(MaybeInputRequired::InputRequired)
                .map_err(D::Error::custom),
            None => serde_json::from_value(v)
                .map(MaybeInputRequired::Complete)
                .map_err(D::Error::custom),
            Some(Value::String(s)) if s == "complete" => serde_json::from_value(v)
                .map(MaybeInputRequired::Complete)
                .map_err(D::Error::custom),
            Some(other) => Err(D::Error::custom(format!(
                "unexpected resultType {other}; expected \"complete\" or \"input_required\""
            ))),
        }
    }
}
