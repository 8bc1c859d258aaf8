//! `#[derive(ElicitChoice)]`: a unit-only enum → the options of a select field.

use proc_macro2::TokenStream;
use quote::quote;

use crate::util::{self, Errors};

/// One option: the variant, its wire value and its title.
struct Variant<'a> {
    ident: &'a syn::Ident,
    value: String,
    title: Option<String>,
}

/// Parse + validate one variant (`None` when it is not a unit variant).
fn parse_variant<'a>(
    v: &'a syn::Variant,
    rename_all: Option<&syn::LitStr>,
    errors: &mut Errors,
) -> Option<Variant<'a>> {
    if !matches!(v.fields, syn::Fields::Unit) {
        errors.spanned(
            v,
            "ElicitChoice variants must be unit variants: a form select returns only the chosen value",
        );
        return None;
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
        match rename_all {
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
    Some(Variant {
        ident,
        value,
        title,
    })
}

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
    let container = util::parse_container(input, &mut errors, "on an enum");
    if data.variants.is_empty() {
        errors.spanned(
            name,
            "an ElicitChoice enum needs at least one variant to offer",
        );
    }
    let mut variants: Vec<Variant<'_>> = Vec::new();
    for v in &data.variants {
        let Some(v) = parse_variant(v, container.rename_all.as_ref(), &mut errors) else {
            continue;
        };
        if variants.iter().any(|seen| seen.value == v.value) {
            errors.spanned(
                v.ident,
                format!("two variants have the value `{}`", v.value),
            );
        }
        variants.push(v);
    }
    errors.finish()?;
    let krate = util::crate_path(container.krate.as_ref())?;
    Ok(expand_impl(name, &util::support(&krate), &variants))
}

/// Expand: the `ElicitChoice` impl.
fn expand_impl(name: &syn::Ident, ms: &TokenStream, variants: &[Variant<'_>]) -> TokenStream {
    let options = variants.iter().map(|v| {
        let (value, title) = (&v.value, util::opt_str(&v.title));
        quote!(__f::StaticChoice { value: #value, title: #title })
    });
    let from_arms = variants.iter().map(
        |Variant { ident, value, .. }| quote!(#value => ::core::option::Option::Some(Self::#ident)),
    );
    let value_arms = variants
        .iter()
        .map(|Variant { ident, value, .. }| quote!(Self::#ident => #value));
    quote! {
        const _: () = {
            use #ms::form as __f;
            const OPTIONS: &[__f::StaticChoice] = &[ #(#options),* ];
            impl __f::ElicitChoice for #name {
                const STATIC_OPTIONS: ::core::option::Option<&'static [__f::StaticChoice]> =
                    ::core::option::Option::Some(OPTIONS);
                fn options() -> &'static [__f::StaticChoice] {
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
    }
}
