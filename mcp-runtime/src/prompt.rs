//! Prompts: the [`PromptHandler`] trait `#[prompt]` implements and the conversions from what a
//! prompt function returns into a `GetPromptResult`.
//!
//! A prompt runs with the same [`RequestContext`] as a tool (the request context): it can read
//! application state, log, report progress, and ask the user through the typed elicitation API;
//! `prompts/get` then answers with an `InputRequiredResult` whose sealed state is bound to
//! `prompts/get`, the prompt's name and its arguments.

use futures::future::BoxFuture;
use mcp_types::{
    ClientCapabilities, CompletionContext, ContentBlock, GetPromptResult, JsonObject, Prompt,
    PromptMessage, ResultType, Role,
};

use crate::context::RequestContext;
use crate::tool::HandlerError;

/// A prompt the server can list, get and complete arguments of.
///
/// Implemented by the struct `#[prompt]` generates; implement it by hand for dynamic prompts.
pub trait PromptHandler: Send + Sync + 'static {
    /// The descriptor served by `prompts/list` (built once, deterministic).
    fn descriptor(&self) -> &Prompt;

    /// Client capabilities this prompt may need (answered with `-32021` when missing). They
    /// also declare how it may ask for input: an ask in a mode declared neither here nor in
    /// [`PromptHandler::optional_capabilities`] fails with `-32603`, a server bug (see
    /// [`ToolHandler::required_capabilities`](crate::tool::ToolHandler::required_capabilities)).
    fn required_capabilities(&self) -> &ClientCapabilities;

    /// Client capabilities this prompt uses only when the request declares them
    /// (`#[prompt(optional(..))]`); see
    /// [`ToolHandler::optional_capabilities`](crate::tool::ToolHandler::optional_capabilities).
    fn optional_capabilities(&self) -> Option<&ClientCapabilities> {
        None
    }

    /// Why this prompt cannot be served as declared (e.g. an argument that is not a string), or `None`.
    /// `Server::builder(..).build()` refuses it, so the mistake surfaces at start-up rather
    /// than on every `prompts/get`.
    fn declaration_error(&self) -> Option<&str> {
        None
    }

    /// OAuth scopes `prompts/get` of this prompt requires (`#[prompt(scopes = [...])]`),
    /// merged with [`ServerBuilder::prompt_scopes`](crate::server::ServerBuilder::prompt_scopes).
    fn required_scopes(&self) -> &[&'static str] {
        &[]
    }

    /// Renders the prompt. `args` is `params.arguments` (string values; empty when absent).
    ///
    /// Errors: [`HandlerError::invalid_arguments`] → `-32602`; [`HandlerError::tool`] → `-32603`
    /// with the message; protocol errors as given; the input-required signal → an
    /// `InputRequiredResult`.
    fn get<'a>(
        &'a self,
        ctx: &'a mut RequestContext,
        args: JsonObject,
    ) -> BoxFuture<'a, Result<GetPromptResult, HandlerError>>;

    /// Whether [`PromptHandler::complete`] can suggest values for any argument (the server
    /// advertises `completions` only when some prompt or resource template can).
    fn has_completions(&self) -> bool {
        false
    }

    /// Suggestions for argument `argument` given the partial `value`; `None` when this
    /// argument has no completion provider (answered with an empty list).
    fn complete(
        &self,
        argument: &str,
        value: &str,
        context: &CompletionContext,
    ) -> Option<Vec<String>> {
        let _ = (argument, value, context);
        None
    }
}

/// A completion provider: suggestions for a partial `value`, with the other arguments the
/// client already filled in (`context.arguments`).
pub type CompletionFn = fn(value: &str, context: &CompletionContext) -> Vec<String>;

/// Converts what a prompt function returns into a `GetPromptResult`.
pub trait IntoGetPromptResult {
    /// Performs the conversion.
    fn into_get_prompt_result(self) -> Result<GetPromptResult, HandlerError>;
}

/// A prompt result with these messages.
pub fn prompt_result(messages: Vec<PromptMessage>) -> GetPromptResult {
    GetPromptResult {
        result_type: ResultType::Complete,
        description: None,
        messages,
        meta: None,
        extra: JsonObject::new(),
    }
}

/// A message from `role` with one content block.
pub fn message(role: Role, content: impl Into<ContentBlock>) -> PromptMessage {
    PromptMessage {
        role,
        content: content.into(),
        extra: JsonObject::new(),
    }
}

/// A user message with one content block.
pub fn user(content: impl Into<ContentBlock>) -> PromptMessage {
    message(Role::User, content)
}

/// An assistant message with one content block.
pub fn assistant(content: impl Into<ContentBlock>) -> PromptMessage {
    message(Role::Assistant, content)
}

impl IntoGetPromptResult for GetPromptResult {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(self)
    }
}

impl IntoGetPromptResult for Vec<PromptMessage> {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(prompt_result(self))
    }
}

impl IntoGetPromptResult for PromptMessage {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(prompt_result(vec![self]))
    }
}

/// One user message with this text.
impl IntoGetPromptResult for String {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(prompt_result(vec![user(ContentBlock::text(self))]))
    }
}

/// One user message with this text.
impl IntoGetPromptResult for &'static str {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(prompt_result(vec![user(ContentBlock::text(self))]))
    }
}

/// One user message per block.
impl IntoGetPromptResult for Vec<ContentBlock> {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(prompt_result(self.into_iter().map(user).collect()))
    }
}

impl<T: IntoGetPromptResult> IntoGetPromptResult for Result<T, HandlerError> {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        self.and_then(IntoGetPromptResult::into_get_prompt_result)
    }
}
