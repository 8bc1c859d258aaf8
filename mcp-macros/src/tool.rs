//! `#[tool]`: an annotated function → a `ToolHandler`.

use proc_macro2::TokenStream;

pub(crate) fn expand(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut out = syn::Error::new(
        proc_macro2::Span::call_site(),
        "#[tool] is not implemented yet",
    )
    .to_compile_error();
    out.extend(item);
    out
}
