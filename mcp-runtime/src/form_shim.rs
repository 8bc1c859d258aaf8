//! Temporary stand-in for `crate::form` (owned by the macros engineer) so the runtime compiles
//! against the contract before `form.rs` lands. Delete once `form::ElicitForm` is on main.

use mcp_types::{JsonObject, RequestedSchema};

/// A form the runtime can ask the user to fill in (implemented by `#[derive(ElicitForm)]`).
pub trait ElicitForm: Sized + Send + 'static {
    /// Values known only at run time (e.g. the ids of matching notes).
    type Choices: Send + Sync + 'static;
    /// An empty choices builder.
    fn choices() -> Self::Choices;
    /// The `requestedSchema` shown to the user for these choices.
    fn requested_schema(choices: &Self::Choices) -> RequestedSchema;
    /// Parses accepted content, re-checking every constraint server-side.
    fn from_content(content: &JsonObject, choices: &Self::Choices) -> Result<Self, FormError>;
}

/// Accepted form content that does not satisfy the form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {message}")]
pub struct FormError {
    /// The offending field.
    pub field: String,
    /// What was wrong.
    pub message: String,
}
