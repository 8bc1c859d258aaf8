//! Runtime half of `tools![..]`, `prompts![..]` and `resources![..]`: the bounds on what they
//! list, whose diagnostics say what to add.

use crate::prompt::PromptHandler;
use crate::resource::ResourceHandler;
use crate::router::{PromptRouter, ResourceRouter, ToolRouter};
use crate::tool::ToolHandler;

/// What `tools![..]` lists: the struct `#[tool]` adds next to a function, or a type of your own.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool",
    label = "`tools![..]` lists `#[tool]` functions and types that implement `ToolHandler` and `Default`",
    note = "add `#[tool]` to the function, or implement `ToolHandler` and `Default` for `{Self}`; \
            `#[prompt]` and `#[resource]` functions go in `prompts![..]` and `resources![..]`"
)]
pub trait ListedTool: ToolHandler {
    /// The handler to register.
    fn make() -> Self;
}
// Not recommended, so that a type missing both traits is one error (this trait's message).
#[diagnostic::do_not_recommend]
impl<T: ToolHandler + Default> ListedTool for T {
    fn make() -> Self {
        T::default()
    }
}

/// What `prompts![..]` lists: the struct `#[prompt]` adds next to a function, or a type of
/// your own.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a prompt",
    label = "`prompts![..]` lists `#[prompt]` functions and types that implement `PromptHandler` and `Default`",
    note = "add `#[prompt]` to the function, or implement `PromptHandler` and `Default` for \
            `{Self}`; `#[tool]` and `#[resource]` functions go in `tools![..]` and `resources![..]`"
)]
pub trait ListedPrompt: PromptHandler {
    /// The handler to register.
    fn make() -> Self;
}
#[diagnostic::do_not_recommend]
impl<T: PromptHandler + Default> ListedPrompt for T {
    fn make() -> Self {
        T::default()
    }
}

/// What `resources![..]` lists: the struct `#[resource]` adds next to a function, or a type
/// of your own.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a resource",
    label = "`resources![..]` lists `#[resource]` functions and types that implement `ResourceHandler` and `Default`",
    note = "add `#[resource(uri = \"..\")]` to the function, or implement `ResourceHandler` and \
            `Default` for `{Self}`; `#[tool]` and `#[prompt]` functions go in `tools![..]` and \
            `prompts![..]`"
)]
pub trait ListedResource: ResourceHandler {
    /// The handler to register.
    fn make() -> Self;
}
#[diagnostic::do_not_recommend]
impl<T: ResourceHandler + Default> ListedResource for T {
    fn make() -> Self {
        T::default()
    }
}

/// `router` with the tool `tools![..]` lists as `T` (one bound, so that a type that is no
/// tool is one error).
pub fn with_tool<T: ListedTool>(router: ToolRouter) -> ToolRouter {
    router.with(T::make())
}

/// `router` with the prompt `prompts![..]` lists as `T`.
pub fn with_prompt<T: ListedPrompt>(router: PromptRouter) -> PromptRouter {
    router.with(T::make())
}

/// `router` with the resource `resources![..]` lists as `T`.
pub fn with_resource<T: ListedResource>(router: ResourceRouter) -> ResourceRouter {
    router.with(T::make())
}
