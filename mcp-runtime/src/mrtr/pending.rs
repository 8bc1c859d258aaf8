//! The input requests a pass registers, kept as they will be sent, and the sealed answer that
//! carries them.
//!
//! Most passes that ask show one derived form. Its `requestedSchema` is written as JSON once,
//! from the form's field declarations ([`ElicitForm::write_requested_schema`]), and sent as
//! written: a typed [`RequestedSchema`] of owned strings would be built only to be serialized
//! and freed on every first leg. A typed request is made from it only where one is kept (a
//! task's stored input requests, [`SealedInput::into_result`]).
//!
//! [`ElicitForm::write_requested_schema`]: crate::form::ElicitForm::write_requested_schema

use mcp_types::{
    ElicitRequest, ErrorObject, InputRequest, InputRequests, InputRequiredResult, RequestedSchema,
};

/// One input request of a pass.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PendingRequest {
    /// A request built as its wire type (URL mode, sampling, roots). Boxed: a wire request is
    /// several hundred bytes, and a list of forms should not carry that room per entry.
    Typed(Box<InputRequest>),
    /// A form-mode elicitation whose `requestedSchema` is already JSON: exactly the bytes
    /// serde_json writes for the schema (the contract of
    /// [`ElicitForm::write_requested_schema`](crate::form::ElicitForm::write_requested_schema)).
    Form {
        /// What to show the user.
        message: String,
        /// The `requestedSchema`, serialized.
        schema: Vec<u8>,
    },
}

impl PendingRequest {
    /// What kind of input it asks for: `form`, `url`, `sampling` or `roots` (for metrics).
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub(crate) fn kind(&self) -> &'static str {
        use mcp_types::ElicitRequestParams;
        match self {
            PendingRequest::Form { .. } => "form",
            PendingRequest::Typed(request) => match &**request {
                InputRequest::Elicit(e) => match e.params {
                    ElicitRequestParams::Form(_) => "form",
                    ElicitRequestParams::Url(_) => "url",
                },
                InputRequest::CreateMessage(_) => "sampling",
                InputRequest::ListRoots(_) => "roots",
            },
        }
    }

    /// The wire request (a form's schema parsed back from its JSON).
    ///
    /// # Errors
    /// When a form's schema bytes are not a `requestedSchema`: a hand-written
    /// `write_requested_schema` that broke its contract.
    pub(crate) fn into_typed(self) -> Result<InputRequest, serde_json::Error> {
        match self {
            PendingRequest::Typed(request) => Ok(*request),
            PendingRequest::Form { message, schema } => {
                let schema: RequestedSchema = serde_json::from_slice(&schema)?;
                Ok(ElicitRequest::form(message, schema).into())
            }
        }
    }
}

/// A pass's input requests in the order they were registered; registering under a key again
/// replaces the request in place, as a map would.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct PendingRequests(Vec<(String, PendingRequest)>);

impl PendingRequests {
    /// Whether nothing was registered.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The keys, in order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(key, _)| key)
    }

    /// The requests with their keys, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &PendingRequest)> {
        self.0.iter().map(|(key, request)| (key.as_str(), request))
    }

    /// Registers `request` under `key`.
    pub(crate) fn insert(&mut self, key: &str, request: PendingRequest) {
        if let Some((_, slot)) = self.0.iter_mut().find(|(k, _)| k == key) {
            *slot = request;
            return;
        }
        self.0.push((key.to_owned(), request));
    }

    /// The wire map.
    ///
    /// # Errors
    /// As [`PendingRequest::into_typed`].
    pub(crate) fn into_typed(self) -> Result<InputRequests, serde_json::Error> {
        let mut typed = InputRequests::default();
        typed.0.reserve(self.0.len());
        for (key, request) in self.0 {
            typed.0.insert(key, request.into_typed()?);
        }
        Ok(typed)
    }
}

impl From<InputRequests> for PendingRequests {
    fn from(requests: InputRequests) -> Self {
        PendingRequests(
            requests
                .0
                .into_iter()
                .map(|(key, request)| (key, PendingRequest::Typed(Box::new(request))))
                .collect(),
        )
    }
}

/// The answer of a pass that needs input: its requests and the state sealed for the retry.
/// The server writes it as an `InputRequiredResult` without building one
/// (`server/reply.rs`); [`SealedInput::into_result`] builds one where it is kept.
#[derive(Debug)]
pub(crate) struct SealedInput {
    /// The requests, in order.
    pub(crate) requests: PendingRequests,
    /// The sealed `requestState`.
    pub(crate) request_state: String,
}

impl SealedInput {
    /// The typed `InputRequiredResult` (without `_meta`: a reply appends the server's).
    ///
    /// # Errors
    /// `-32603` when a form's schema bytes are not a `requestedSchema` (see
    /// [`PendingRequest::into_typed`]).
    pub(crate) fn into_result(self) -> Result<InputRequiredResult, ErrorObject> {
        let requests = self.requests.into_typed().map_err(|e| {
            ErrorObject::internal_error(format!(
                "a form's requestedSchema is not valid (write_requested_schema broke its contract): {e}"
            ))
        })?;
        InputRequiredResult::new(Some(requests), Some(self.request_state))
            .map_err(|e| ErrorObject::internal_error(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use mcp_types::{BooleanSchema, StringSchema};

    use super::*;

    fn schema() -> RequestedSchema {
        RequestedSchema::new()
            .field("id", StringSchema::new(), true)
            .field("confirm", BooleanSchema::new(), false)
    }

    #[test]
    fn a_form_is_typed_as_the_request_its_schema_describes() {
        let form = PendingRequest::Form {
            message: "Which one?".into(),
            schema: serde_json::to_vec(&schema()).unwrap(),
        };
        assert_eq!(
            form.into_typed().unwrap(),
            InputRequest::from(ElicitRequest::form("Which one?", schema()))
        );
        let broken = PendingRequest::Form {
            message: "m".into(),
            schema: b"{\"type\":\"object\"".to_vec(),
        };
        assert!(broken.into_typed().is_err());
        let sealed = SealedInput {
            requests: {
                let mut r = PendingRequests::default();
                r.insert(
                    "k",
                    PendingRequest::Form {
                        message: "m".into(),
                        schema: b"[]".to_vec(),
                    },
                );
                r
            },
            request_state: "s".into(),
        };
        let e = sealed.into_result().unwrap_err();
        assert_eq!(e.code(), mcp_types::ErrorCode::InternalError);
        assert!(
            e.message().contains("write_requested_schema"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn room_for_four_requests_stays_under_a_kilobyte() {
        // A list's first push reserves room for four entries: kept under 1 KiB, that
        // allocation stays in glibc's per-thread cache (one of 1 KiB or more per first leg
        // consolidated its fast bins every time).
        assert!(4 * std::mem::size_of::<(String, PendingRequest)>() < 1024);
    }

    #[test]
    fn registering_a_key_again_replaces_it_in_place() {
        let mut pending = PendingRequests::default();
        let ask =
            |m: &str| PendingRequest::Typed(Box::new(ElicitRequest::form(m, schema()).into()));
        pending.insert("a", ask("1"));
        pending.insert("b", ask("2"));
        pending.insert("a", ask("3"));
        assert_eq!(pending.keys().collect::<Vec<_>>(), ["a", "b"]);
        let typed = pending.clone().into_typed().unwrap();
        let expected = InputRequests::default()
            .with("a", ElicitRequest::form("3", schema()))
            .with("b", ElicitRequest::form("2", schema()));
        assert_eq!(typed, expected);
        assert_eq!(PendingRequests::from(expected), pending);
    }
}
