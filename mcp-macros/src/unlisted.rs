//! A handler that no router lists: rustc's dead-code lint says so, by name.
//!
//! `#[tool]` (`#[prompt]`, `#[resource]`) adds a struct whose handler impl is the only caller
//! of the function. When nothing registers the struct (`tools![..]`, or any other use of its
//! name), rustc finds the impl dead, and so the function: it used to warn "function `x` is
//! never used", which does not say what is missing. The expansion adds a function of its own,
//! called from the impl only, named for what to do: `x_is_not_listed_in_tools`; and it keeps
//! the user's function itself live (it stays callable, and a second warning would only repeat
//! the first), so the one warning is "function `x_is_not_listed_in_tools` is never used".
//!
//! This is exactly rustc's own analysis, so it warns neither more nor less than before: a
//! `pub` handler of a library is never reported (another crate may register it), and one
//! registered anywhere in the build is never reported. A function that carries its own
//! `dead_code` attribute (`allow`, `expect`, `cfg_attr(..)`) is left as it was, and the added
//! function is allowed to be dead.

use proc_macro2::{TokenStream, TokenTree};
use quote::{ToTokens, quote, quote_spanned};

/// What the expansion adds for `func`, a handler listed with `list!` (`tools`, `prompts`,
/// `resources`).
pub(crate) struct Unlisted {
    /// Goes in the expansion's `const _` block: the added function, and the use keeping
    /// `func` live.
    pub(crate) items: TokenStream,
    /// Goes in a method of the handler impl: the call to the added function.
    pub(crate) call: TokenStream,
}

pub(crate) fn unlisted(func: &syn::ItemFn, list: &str) -> Unlisted {
    let ident = &func.sig.ident;
    let name = ident.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name);
    // The user's span: lints are not reported inside the expansion's own spans.
    let hint = syn::Ident::new(&format!("{name}_is_not_listed_in_{list}"), ident.span());
    let own = func
        .attrs
        .iter()
        .any(|a| mentions_dead_code(a.meta.to_token_stream()));
    let span = ident.span();
    let items = if own {
        quote_spanned! {span=>
            #[allow(non_snake_case, dead_code)]
            fn #hint() {}
        }
    } else {
        quote_spanned! {span=>
            #[allow(non_snake_case)]
            fn #hint() {}
            const _: () = {
                let _ = #ident;
            };
        }
    };
    Unlisted {
        items,
        call: quote!(#hint();),
    }
}

/// Whether an attribute names the `dead_code` lint (or the `unused` group holding it).
fn mentions_dead_code(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == "dead_code" || i == "unused",
        TokenTree::Group(g) => mentions_dead_code(g.stream()),
        _ => false,
    })
}
