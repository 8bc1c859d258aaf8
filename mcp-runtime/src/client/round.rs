//! Step-by-step MRTR: a call gives a [`Step`], either the complete result or a pending
//! [`Round`] that a test (or an interactive client) reads and answers before it retries.

use std::marker::PhantomData;

use mcp_types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitContent, ElicitRequestFormParams,
    ElicitRequestParams, ElicitRequestUrlParams, ElicitResult, InputRequest, InputRequests,
    InputRequiredResult, InputResponse, InputResponses, JsonObject, ListRootsResult,
    PrimitiveSchemaDefinition, RequestedSchema, Root,
};
use serde::de::DeserializeOwned;

use super::{Client, ClientError, MrtrCall};
use crate::form::{Choice, ElicitForm, FormContent};

/// The outcome of one round of a `tools/call`, `prompts/get` or `resources/read`.
#[derive(Debug)]
#[must_use = "a pending round does nothing until it is answered and retried"]
pub enum Step<T> {
    /// The server finished: the complete result.
    Complete(T),
    /// The server needs input (or just a retry) before it can finish.
    Pending(Round<T>),
}

impl<T> Step<T> {
    /// The complete result, or [`ClientError::Round`] if the server asked for input.
    pub fn complete(self) -> Result<T, ClientError> {
        match self {
            Step::Complete(t) => Ok(t),
            Step::Pending(round) => Err(ClientError::Round(format!(
                "expected a complete result, but the server asked for input: {:?}",
                round.keys()
            ))),
        }
    }

    /// The pending round, or [`ClientError::Round`] if the server already finished.
    pub fn pending(self) -> Result<Round<T>, ClientError> {
        match self {
            Step::Pending(round) => Ok(round),
            Step::Complete(_) => Err(ClientError::Round(
                "expected the server to ask for input, but it returned a complete result".into(),
            )),
        }
    }

    /// Whether the server finished.
    pub fn is_complete(&self) -> bool {
        matches!(self, Step::Complete(_))
    }
}

/// A pending round: the server's `input_required` result plus the answers collected so far.
///
/// Read the requests with [`Round::form`], [`Round::url`], [`Round::sampling`] (or
/// [`Round::input_requests`]), answer each key with [`Round::accept`], [`Round::decline`],
/// [`Round::cancel`] or [`Round::answer`], then [`Round::retry`]: the retry is a new request with
/// the original params, the answers as `inputResponses` and the `requestState` byte for byte.
#[derive(Debug)]
pub struct Round<T> {
    pub(super) client: Client,
    pub(super) call: MrtrCall,
    pub(super) result: InputRequiredResult,
    pub(super) responses: InputResponses,
    pub(super) number: usize,
    pub(super) marker: PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> Round<T> {
    /// Sends the retry: a new request with the original params, every answer given so far as
    /// `inputResponses`, and the `requestState` exactly as received (none if none was issued).
    pub async fn retry(self) -> Result<Step<T>, ClientError> {
        let responses = (!self.responses.is_empty() || self.result.input_requests().is_some())
            .then_some(self.responses);
        let state = self.result.request_state().map(str::to_owned);
        self.client
            .mrtr_step(self.call, responses, state, self.number + 1)
            .await
    }
}

impl<T> Round<T> {
    /// Which round this is (1 for the answer to the first request).
    pub fn number(&self) -> usize {
        self.number
    }

    /// The server's `input_required` result as received.
    pub fn result(&self) -> &InputRequiredResult {
        &self.result
    }

    /// The input requests, if the server sent any (a state-only result asks for a plain retry).
    pub fn input_requests(&self) -> Option<&InputRequests> {
        self.result.input_requests()
    }

    /// The opaque `requestState`, if one was issued.
    pub fn request_state(&self) -> Option<&str> {
        self.result.request_state()
    }

    /// The keys of the input requests, in the server's order.
    pub fn keys(&self) -> Vec<&str> {
        self.input_requests()
            .map(|r| r.iter().map(|(k, _)| k.as_str()).collect())
            .unwrap_or_default()
    }

    /// The answers given so far.
    pub fn responses(&self) -> &InputResponses {
        &self.responses
    }

    /// The input request under `key`.
    pub fn request(&self, key: &str) -> Result<&InputRequest, ClientError> {
        self.input_requests()
            .and_then(|r| r.get(key))
            .ok_or_else(|| {
                ClientError::Round(format!(
                    "this round has no input request {key:?}; it has {:?}",
                    self.keys()
                ))
            })
    }

    fn form_params(&self, key: &str) -> Result<&ElicitRequestFormParams, ClientError> {
        match self.request(key)? {
            InputRequest::Elicit(e) => match &e.params {
                ElicitRequestParams::Form(p) => Ok(p),
                ElicitRequestParams::Url(_) => Err(wrong(key, "a URL elicitation", "a form")),
            },
            other => Err(wrong(key, other.method(), "a form")),
        }
    }

    /// The form under `key`, read as the author's form type `F`: fails unless the requested
    /// schema has exactly `F`'s fields (same names, same required set).
    pub fn form<F: ElicitForm>(&self, key: &str) -> Result<FormRequest<'_, F>, ClientError> {
        let params = self.form_params(key)?;
        let expected = F::requested_schema(&F::choices());
        let names = |s: &RequestedSchema| s.properties.keys().cloned().collect::<Vec<_>>();
        let required = |s: &RequestedSchema| {
            let mut r = s.required.clone().unwrap_or_default();
            r.sort();
            r
        };
        let (got, want) = (names(&params.requested_schema), names(&expected));
        if got != want || required(&params.requested_schema) != required(&expected) {
            return Err(ClientError::Round(format!(
                "the form under {key:?} has fields {got:?} (required {:?}), but {} has {want:?} (required {:?})",
                required(&params.requested_schema),
                std::any::type_name::<F>(),
                required(&expected),
            )));
        }
        Ok(FormRequest {
            params,
            marker: PhantomData,
        })
    }

    /// The form under `key`, untyped.
    pub fn form_raw(&self, key: &str) -> Result<&ElicitRequestFormParams, ClientError> {
        self.form_params(key)
    }

    /// The URL elicitation under `key`.
    pub fn url(&self, key: &str) -> Result<&ElicitRequestUrlParams, ClientError> {
        match self.request(key)? {
            InputRequest::Elicit(e) => match &e.params {
                ElicitRequestParams::Url(p) => Ok(p),
                ElicitRequestParams::Form(_) => Err(wrong(key, "a form", "a URL elicitation")),
            },
            other => Err(wrong(key, other.method(), "a URL elicitation")),
        }
    }

    /// The sampling request under `key`.
    pub fn sampling(&self, key: &str) -> Result<&CreateMessageRequestParams, ClientError> {
        match self.request(key)? {
            InputRequest::CreateMessage(m) => Ok(&m.params),
            other => Err(wrong(key, other.method(), "sampling/createMessage")),
        }
    }

    /// Answers `key` with any typed response; it must fit the request's method.
    pub fn answer(
        &mut self,
        key: &str,
        response: impl Into<InputResponse>,
    ) -> Result<&mut Self, ClientError> {
        let response = response.into();
        let fits = matches!(
            (self.request(key)?, &response),
            (InputRequest::Elicit(_), InputResponse::Elicit(_))
                | (
                    InputRequest::CreateMessage(_),
                    InputResponse::CreateMessage(_)
                )
                | (InputRequest::ListRoots(_), InputResponse::ListRoots(_))
        );
        if !fits {
            let method = self.request(key)?.method();
            return Err(ClientError::Round(format!(
                "the answer to {key:?} does not fit its {method} request"
            )));
        }
        self.responses.insert(key, response).map_err(|e| {
            ClientError::Request(format!("cannot encode the answer to {key:?}: {e}"))
        })?;
        Ok(self)
    }

    /// Accepts the form under `key` with `form`'s values (a `#[derive(ElicitForm)]` struct).
    pub fn accept<F: FormContent>(
        &mut self,
        key: &str,
        form: &F,
    ) -> Result<&mut Self, ClientError> {
        self.accept_content(key, form.to_content())
    }

    /// Accepts the form under `key` with untyped content (`{"field": value}`): strings,
    /// numbers, booleans and string arrays only.
    pub fn accept_content(
        &mut self,
        key: &str,
        content: JsonObject,
    ) -> Result<&mut Self, ClientError> {
        self.form_params(key)?;
        let content: ElicitContent = serde_json::from_value(serde_json::Value::Object(content))
            .map_err(|e| {
                ClientError::Round(format!(
                    "form content must hold strings, numbers, booleans or string arrays ({e})"
                ))
            })?;
        self.answer(key, ElicitResult::accept(Some(content)))
    }

    /// Consents to the URL elicitation under `key` (after the user opened it).
    pub fn accept_url(&mut self, key: &str) -> Result<&mut Self, ClientError> {
        self.url(key)?;
        self.answer(key, ElicitResult::accept(None))
    }

    /// Declines the elicitation under `key`.
    pub fn decline(&mut self, key: &str) -> Result<&mut Self, ClientError> {
        self.answer(key, ElicitResult::decline())
    }

    /// Cancels (dismisses) the elicitation under `key`.
    pub fn cancel(&mut self, key: &str) -> Result<&mut Self, ClientError> {
        self.answer(key, ElicitResult::cancel())
    }

    /// Answers the sampling request under `key`.
    pub fn sample(
        &mut self,
        key: &str,
        result: CreateMessageResult,
    ) -> Result<&mut Self, ClientError> {
        self.answer(key, result)
    }

    /// Answers the `roots/list` request under `key`.
    pub fn roots(&mut self, key: &str, roots: Vec<Root>) -> Result<&mut Self, ClientError> {
        self.answer(
            key,
            ListRootsResult {
                roots,
                meta: None,
                extra: JsonObject::new(),
            },
        )
    }
}

fn wrong(key: &str, found: &str, wanted: &str) -> ClientError {
    ClientError::Round(format!(
        "the input request {key:?} is {found}, not {wanted}"
    ))
}

/// A form-mode elicitation read as the author's form type `F` (see [`Round::form`]).
pub struct FormRequest<'a, F> {
    params: &'a ElicitRequestFormParams,
    marker: PhantomData<fn() -> F>,
}

impl<F> std::fmt::Debug for FormRequest<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FormRequest")
            .field("form", &std::any::type_name::<F>())
            .field("params", self.params)
            .finish()
    }
}

impl<F> FormRequest<'_, F> {
    /// The message shown to the user.
    pub fn message(&self) -> &str {
        &self.params.message
    }

    /// The requested schema as sent.
    pub fn schema(&self) -> &RequestedSchema {
        &self.params.requested_schema
    }

    /// The field names, in display order.
    pub fn fields(&self) -> Vec<&str> {
        self.schema()
            .properties
            .keys()
            .map(String::as_str)
            .collect()
    }

    /// The options offered for a select field (value and label), in display order; empty for
    /// a field that is not a select (or does not exist).
    pub fn choices(&self, field: &str) -> Vec<Choice> {
        let plain = |values: &[String]| values.iter().map(Choice::from).collect::<Vec<_>>();
        let titled = |options: &[mcp_types::EnumOption]| {
            options
                .iter()
                .map(|o| Choice::titled(o.value.clone(), o.title.clone()))
                .collect()
        };
        match self.schema().properties.get(field) {
            Some(PrimitiveSchemaDefinition::UntitledSingleSelect(s)) => plain(&s.values),
            Some(PrimitiveSchemaDefinition::TitledSingleSelect(s)) => titled(&s.one_of),
            Some(PrimitiveSchemaDefinition::UntitledMultiSelect(s)) => plain(&s.items.values),
            Some(PrimitiveSchemaDefinition::TitledMultiSelect(s)) => titled(&s.items.any_of),
            Some(PrimitiveSchemaDefinition::LegacyTitledEnum(s)) => plain(&s.values),
            _ => Vec::new(),
        }
    }

    /// Just the values offered for a select field, in display order.
    pub fn choice_values(&self, field: &str) -> Vec<String> {
        self.choices(field).into_iter().map(|c| c.value).collect()
    }
}
