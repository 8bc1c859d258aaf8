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
