//! `tools![..]`, `prompts![..]` and `resources![..]`: a router from a list of paths, each the
//! struct `#[tool]` (`#[prompt]`, `#[resource]`) adds next to a function, or a type of the
//! user's own.
//!
//! A listed function without the attribute has no type of its name, and naming it as a type
//! would give rustc's "expected type, found function". So each entry (a path without generic
//! arguments) is looked up in a block where a glob import offers a stand-in of its name in
//! the type namespace: an explicit import of the listed path shadows it wherever the path
//! has a type, and only a path without one reaches the stand-in, whose use is an error naming
//! the function and the attribute it lacks.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;

/// What is listed, and the names that go with it.
struct Kind {
    /// The router type in `mcp_runtime::router`.
    router: &'static str,
    /// The `__macro_support_v1` function that adds one entry.
    with: &'static str,
    /// "tool", "prompt", "resource".
    noun: &'static str,
    /// The attribute a function needs, as the message writes it.
    attribute: &'static str,
    /// The handler trait a type of one's own implements.
    handler: &'static str,
}

const TOOL: Kind = Kind {
    router: "ToolRouter",
    with: "with_tool",
    noun: "tool",
    attribute: "#[tool]",
    handler: "ToolHandler",
};
const PROMPT: Kind = Kind {
    router: "PromptRouter",
    with: "with_prompt",
    noun: "prompt",
    attribute: "#[prompt]",
    handler: "PromptHandler",
};
const RESOURCE: Kind = Kind {
    router: "ResourceRouter",
    with: "with_resource",
    noun: "resource",
    attribute: "#[resource(uri = \"..\")]",
    handler: "ResourceHandler",
};

/// `($crate) tool a, b::c, …`: the runtime's path, what is listed, and the list.
struct Input {
    krate: TokenStream,
    kind: &'static Kind,
    paths: Punctuated<syn::Path, syn::Token![,]>,
}

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let krate;
        syn::parenthesized!(krate in input);
        let krate: TokenStream = krate.parse()?;
        let kind: syn::Ident = input.parse()?;
        let kind = match kind.to_string().as_str() {
            "tool" => &TOOL,
            "prompt" => &PROMPT,
            "resource" => &RESOURCE,
            _ => {
                return Err(syn::Error::new_spanned(
                    kind,
                    "expected tool, prompt or resource",
                ));
            }
        };
        let paths = Punctuated::parse_terminated(input)?;
        Ok(Input { krate, kind, paths })
    }
}

pub(crate) fn expand(input: TokenStream) -> TokenStream {
    match syn::parse2::<Input>(input) {
        Ok(input) => expand_input(&input),
        Err(e) => e.into_compile_error(),
    }
}

fn expand_input(input: &Input) -> TokenStream {
    let Input { krate, kind, paths } = input;
    let router = format_ident!("{}", kind.router);
    // One hygiene for the variable, whatever span each entry's call takes.
    let var = syn::Ident::new("__mcp_router", Span::call_site());
    let entries = paths.iter().map(|p| entry(krate, kind, p, &var));
    quote! {{
        let #var = #krate::router::#router::new();
        #( let #var = #entries; )*
        #var
    }}
}

/// The last segment of a path that a `use` can import (no generic arguments, no `Self`), if
/// it is one.
fn importable(path: &syn::Path) -> Option<&syn::Ident> {
    let plain = path
        .segments
        .iter()
        .all(|s| s.arguments.is_none() && s.ident != "Self");
    let last = &path.segments.last()?.ident;
    let keyword = ["self", "super", "crate"].iter().any(|k| last == k);
    (plain && !keyword).then_some(last)
}

/// One entry: the router `var` with the listed handler added.
fn entry(krate: &TokenStream, kind: &Kind, path: &syn::Path, var: &syn::Ident) -> TokenStream {
    let with = format_ident!("{}", kind.with);
    let Some(name) = importable(path) else {
        // A path with generic arguments names a type: nothing to stand in for.
        return quote_spanned!(path_span(path)=>
            #krate::__macro_support_v1::#with::<#path>(#var));
    };
    let message = format!(
        "`{name}` is not a {noun}: add `{attribute}` to the function `{name}`",
        noun = kind.noun,
        attribute = kind.attribute,
    );
    let label = format!(
        "`{noun}s![..]` lists `{attribute}` functions and types that implement `{handler}` and \
         `Default`",
        noun = kind.noun,
        attribute = kind.attribute,
        handler = kind.handler,
    );
    // Mixed-site hygiene, located at the user's tokens: a local variable of the same name
    // (`let notes = ..; tools![notes]`) is not what the import means, and `use` would refuse it.
    let import = respan_mixed(path);
    let register = quote_spanned!(name.span()=>
        #krate::__macro_support_v1::#with::<#name>(#var));
    quote! {{
        use #import as __mcp_listed;
        {
            #[allow(dead_code, non_camel_case_types, unreachable_pub)]
            mod __mcp_stand_in {
                // Named so as not to clash with the stand-in, whatever its name.
                #[diagnostic::on_unimplemented(message = #message, label = #label)]
                pub trait __McpListed {
                    type Is;
                }
                // An implementation nobody can reach, so that rustc does not suggest adding one.
                #[diagnostic::do_not_recommend]
                impl __McpListed for [(); 0] {
                    type Is = ();
                }
                pub type #name = <() as __McpListed>::Is;
            }
            #[allow(unused_imports)]
            use __mcp_stand_in::*;
            #[allow(unused_imports)]
            use __mcp_listed as #name;
            #register
        }
    }}
}

/// The span of a path's last segment (where a type that is no handler is reported).
fn path_span(path: &syn::Path) -> Span {
    path.segments
        .last()
        .map_or_else(Span::call_site, |s| s.ident.span())
}

/// `path` with each identifier's hygiene made mixed-site, its location kept.
fn respan_mixed(path: &syn::Path) -> syn::Path {
    let mut path = path.clone();
    for seg in &mut path.segments {
        let span = Span::mixed_site().located_at(seg.ident.span());
        seg.ident.set_span(span);
    }
    path
}
