//! Procedural macros for declaring MCP tools and elicitation forms.
//!
//! - `#[tool]` turns an annotated (async) function into a `ToolHandler` with a cached,
//!   deterministic descriptor and argument validation.
//! - `#[derive(ElicitForm)]` turns a flat struct into a form-mode elicitation form whose
//!   constraints are re-checked server-side.
//! - `#[derive(ElicitChoice)]` turns a unit-only enum into a single/multi select field type.
//!
//! Generated code reaches the runtime only through `mcp_runtime::__macro_support_v1`
//! (override the crate path with `crate = "..."`). Errors carry precise spans, are all reported
//! at once, and say what to do; the macros never panic.

mod catalog;
mod choice;
mod form;
mod tool;
mod util;

use proc_macro::TokenStream;

/// Declares an MCP tool from a free `fn` or `async fn`.
///
/// The function stays callable as written; a `struct` of the same name (type namespace)
/// implementing `ToolHandler` is added next to it, ready for `tools![name]`.
///
/// Attributes: `name = "..."` (default: the function name), `title = "..."`,
/// `description = "..."` (default: the doc comment), `read_only`, `destructive`, `idempotent`,
/// `open_world` (each also `= bool`), `requires(form_elicitation, url_elicitation, sampling,
/// roots)`, `crate = "path"` (default `::mcp_runtime`).
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(attr.into(), item.into()).into()
}

/// Declares an MCP prompt from a free `fn` or `async fn`.
///
/// Like `#[tool]`: the function stays callable, and a `struct` of the same name implementing
/// `PromptHandler` is added, ready for `prompts![name]`. Parameters: `&mut ToolContext`,
/// `State<T>`, and at most one arguments struct whose `String`/`Option<String>` fields become
/// the prompt's arguments (doc comments → descriptions, `Option` → not required).
///
/// Attributes: `name`, `title`, `description` (default: the doc comment), `requires(...)`,
/// `complete(argument = provider_fn, ...)` with `fn(&str, &CompletionContext) -> Vec<String>`,
/// `crate = "path"`.
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    catalog::expand(catalog::Kind::Prompt, attr.into(), item.into()).into()
}

/// Declares an MCP resource (fixed URI) or resource template (URI with `{var}`s) from a free
/// `fn` or `async fn`; adds a `struct` of the same name implementing `ResourceHandler`, ready
/// for `resources![name]`.
///
/// Parameters: `&mut ToolContext`, `State<T>`, `ResourceUri` (the URI read), and (templates only) one struct with a field per
/// template variable. Attributes: `uri = "..."` (required), `name` (default: the function
/// name), `title`, `description` (default: the doc comment), `mime_type`, `ttl_ms = N` and
/// `cache_scope = "public" | "private"` (read caching hints; default 0 and private),
/// `requires(...)`, `complete(variable = provider_fn, ...)`, `crate = "path"`.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    catalog::expand(catalog::Kind::Resource, attr.into(), item.into()).into()
}

/// Derives `ElicitForm` for a struct of flat named fields (see `mcp_runtime::form`).
#[proc_macro_derive(ElicitForm, attributes(form))]
pub fn derive_elicit_form(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    form::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Derives `ElicitChoice` for a unit-only enum: each variant is one option
/// (`#[form(value = "...")]` renames it, `#[form(title = "...")]` labels it).
#[proc_macro_derive(ElicitChoice, attributes(form))]
pub fn derive_elicit_choice(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    choice::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
