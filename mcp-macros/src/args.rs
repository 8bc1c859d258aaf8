//! `#[args]`: an arguments type whose serde and schemars derives reach those crates through
//! the runtime, so an author's crate needs no dependency but `mcp-runtime`, and which is an
//! extractor by its own impl (no blanket impl, so the set of extractors stays open).

use proc_macro2::{Span, TokenStream};
use quote::quote;

use crate::util;

/// Parses `crate = "path"`, the only option.
fn parse_attrs(attr: TokenStream) -> syn::Result<Option<syn::LitStr>> {
    let mut krate = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("crate") {
            krate = Some(meta.value()?.parse()?);
            Ok(())
        } else {
            Err(meta.error("unknown `args` attribute; expected `crate = \"...\"`"))
        }
    });
    syn::parse::Parser::parse2(parser, attr)?;
    Ok(krate)
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let input: syn::DeriveInput = match syn::parse2(item.clone()) {
        Ok(i) => i,
        Err(_) => return refuse(Span::call_site(), item),
    };
    if let syn::Data::Union(u) = &input.data {
        return refuse(u.union_token.span, item);
    }
    match parse_attrs(attr).and_then(|krate| util::crate_path(krate.as_ref())) {
        Ok(krate) => expand_type(&input, &util::support(&krate)),
        Err(e) => {
            let e = e.to_compile_error();
            quote!(#item #e)
        }
    }
}

fn refuse(span: Span, item: TokenStream) -> TokenStream {
    let e = syn::Error::new(
        span,
        "#[args] goes on a struct (or an enum) that holds a handler's arguments",
    )
    .to_compile_error();
    quote!(#item #e)
}

/// The serde and schemars derives, pointed at the runtime's re-exports of both crates.
pub(crate) fn derives(ms: &TokenStream) -> TokenStream {
    let serde_path = format!("{ms}::serde");
    let schemars_path = format!("{ms}::schemars");
    quote! {
        #[derive(#ms::serde::Deserialize, #ms::schemars::JsonSchema)]
        #[serde(crate = #serde_path)]
        #[schemars(crate = #schemars_path)]
    }
}

/// The type with the derives, and its `FromRequest` impl: the arguments, as `Args<Self>`
/// takes them.
fn expand_type(input: &syn::DeriveInput, ms: &TokenStream) -> TokenStream {
    let derives = derives(ms);
    let ident = &input.ident;
    // A generic type is arguments for the parameters that make it `Deserialize + JsonSchema`;
    // a concrete one needs no bound (and a bound on it would be a trivial one).
    let mut generics = input.generics.clone();
    if !generics.params.is_empty() {
        generics
            .make_where_clause()
            .predicates
            .push(syn::parse_quote!(Self: __ms::ToolArgs));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    quote! {
        #derives
        #input

        const _: () = {
            use #ms as __ms;

            impl #impl_generics __ms::FromRequest for #ident #ty_generics #where_clause {
                fn from_request(
                    parts: &mut __ms::RequestParts<'_>,
                ) -> ::core::result::Result<Self, __ms::HandlerError> {
                    <__ms::Args<Self> as __ms::FromRequest>::from_request(parts)
                        .map(__ms::Args::into_inner)
                }

                fn declare(needs: &mut __ms::ParamNeeds) {
                    <__ms::Args<Self> as __ms::FromRequest>::declare(needs)
                }

                const ARGUMENTS: bool = true;
            }
        };
    }
}
