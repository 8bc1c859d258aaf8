//! `#[derive(ElicitChoice)]`: a unit-only enum → the options of a select field.

use proc_macro2::TokenStream;
use quote::quote;

use crate::util::{self, Errors};

pub(crate) fn expand(input: &syn::DeriveInput) -> syn::Result<TokenStream> {
    let name = &input.ident;
    let syn::Data::Enum(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            name,
            "ElicitChoice derives on a unit-only enum (each variant is one option); \
             for a whole form use `#[derive(ElicitForm)]` on a struct",
        ));
    };
    let mut errors = Errors::default();
    if !input.generics.params.is_empty() {
        errors.spanned(
            &input.generics,
            "ElicitChoice cannot be derived for a generic enum",
        );
    }
    let mut krate_lit = None;
    let mut rename_all: Option<syn::LitStr> = None;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("form")) {
        let r = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                krate_lit = Some(meta.value()?.parse::<syn::LitStr>()?);
            } else if meta.path.is_ident("rename_all") {
                rename_all = Some(meta.value()?.parse()?);
            } else {
                return Err(meta.error(
                    "unknown `form` attribute on an enum; expected `crate = \"...\"` or `rename_all = \"...\"`",
                ));
            }
            Ok(())
        });
        if let Err(e) = r {
            errors.push(e);
        }
    }
    if data.variants.is_empty() {
        errors.spanned(
            name,
            "an ElicitChoice enum needs at least one variant to offer",
        );
    }
    let mut options = Vec::new();
    let mut from_arms = Vec::new();
    let mut value_arms = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for v in &data.variants {
        if !matches!(v.fields, syn::Fields::Unit) {
            errors.spanned(
                v,
                "ElicitChoice variants must be unit variants: a form select returns only the chosen value",
            );
            continue;
        }
        let mut value = None;
        let mut title = None;
        for attr in v.attrs.iter().filter(|a| a.path().is_ident("form")) {
            let r = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("value") || meta.path.is_ident("rename") {
                    value = Some(meta.value()?.parse::<syn::LitStr>()?.value());
                } else if meta.path.is_ident("title") {
                    title = Some(meta.value()?.parse::<syn::LitStr>()?.value());
                } else {
                    return Err(meta.error(
                        "unknown `form` attribute on a variant; expected `value = \"...\"` or `title = \"...\"`",
                    ));
                }
                Ok(())
            });
            if let Err(e) = r {
                errors.push(e);
            }
        }
        let ident = &v.ident;
        let value = value.unwrap_or_else(|| {
            let raw = ident.to_string();
            match &rename_all {
                Some(rule) => util::rename(&raw, &rule.value()).unwrap_or_else(|| {
                    errors.spanned(
                        rule,
                        format!("unknown rename_all rule; use {}", util::RENAME_RULES),
                    );
                    raw.clone()
                }),
                None => raw,
            }
        });
        if seen.contains(&value) {
            errors.spanned(ident, format!("two variants have the value `{value}`"));
        }
        seen.push(value.clone());
        let title = util::opt_str(&title);
        options.push(quote!(__f::StaticChoice { value: #value, title: #title }));
        from_arms.push(quote!(#value => ::core::option::Option::Some(Self::#ident)));
        value_arms.push(quote!(Self::#ident => #value));
    }
    errors.finish()?;
    let krate = util::crate_path(krate_lit.as_ref())?;
    let ms = util::support(&krate);
    Ok(quote! {
        const _: () = {
            use #ms::form as __f;
            impl __f::ElicitChoice for #name {
                fn options() -> &'static [__f::StaticChoice] {
                    const OPTIONS: &[__f::StaticChoice] = &[ #(#options),* ];
                    OPTIONS
                }
                fn from_value(value: &str) -> ::core::option::Option<Self> {
                    match value {
                        #(#from_arms,)*
                        _ => ::core::option::Option::None,
                    }
                }
                fn value(&self) -> &'static str {
                    match self { #(#value_arms,)* }
                }
            }
        };
    })
}
