//! `#[derive(ElicitForm)]`: a flat struct → `requestedSchema` + server-side re-validation.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::secret::secret_error;
use crate::shape::{Shape, classify, generic_arg};
use crate::util::{self, Errors};

/// Field attributes: `#[form(...)]`.
#[derive(Default)]
struct FieldAttrs {
    title: Option<String>,
    description: Option<String>,
    rename: Option<syn::LitStr>,
    format: Option<(syn::LitStr, TokenStream)>,
    min_length: Option<(Span, u64)>,
    max_length: Option<(Span, u64)>,
    minimum: Option<syn::Expr>,
    maximum: Option<syn::Expr>,
    min_items: Option<(Span, u64)>,
    max_items: Option<(Span, u64)>,
    default: Option<syn::Expr>,
    choices: Option<Span>,
    /// `#[form(not_secret)]`: the name looks secret but is not (a documented override).
    not_secret: bool,
}

fn lit_u64(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<(Span, u64)> {
    let lit: syn::LitInt = meta.value()?.parse()?;
    Ok((lit.span(), lit.base10_parse()?))
}

fn parse_field_attrs(attrs: &[syn::Attribute], errors: &mut Errors) -> FieldAttrs {
    let mut out = FieldAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("form")) {
        let r = attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            match key.as_str() {
                "title" => out.title = Some(meta.value()?.parse::<syn::LitStr>()?.value()),
                "description" => {
                    out.description = Some(meta.value()?.parse::<syn::LitStr>()?.value())
                }
                "rename" => out.rename = Some(meta.value()?.parse()?),
                "format" => {
                    let s: syn::LitStr = meta.value()?.parse()?;
                    let variant = match s.value().as_str() {
                        "email" => quote!(Email),
                        "uri" => quote!(Uri),
                        "date" => quote!(Date),
                        "date-time" => quote!(DateTime),
                        _ => {
                            return Err(syn::Error::new_spanned(
                                &s,
                                "unknown format; form mode supports \"email\", \"uri\", \"date\" and \"date-time\"",
                            ));
                        }
                    };
                    out.format = Some((s, variant));
                }
                "min_length" => out.min_length = Some(lit_u64(&meta)?),
                "max_length" => out.max_length = Some(lit_u64(&meta)?),
                "min_items" => out.min_items = Some(lit_u64(&meta)?),
                "max_items" => out.max_items = Some(lit_u64(&meta)?),
                "minimum" => out.minimum = Some(meta.value()?.parse()?),
                "maximum" => out.maximum = Some(meta.value()?.parse()?),
                "default" => out.default = Some(meta.value()?.parse()?),
                "choices" => out.choices = Some(meta.path.span()),
                "not_secret" => out.not_secret = true,
                _ => {
                    return Err(meta.error(
                        "unknown `form` attribute; expected one of title, description, rename, format, \
                         min_length, max_length, minimum, maximum, min_items, max_items, default, choices, \
                         not_secret",
                    ));
                }
            }
            Ok(())
        });
        if let Err(e) = r {
            errors.push(e);
        }
    }
    out
}

type NamedFields = syn::punctuated::Punctuated<syn::Field, syn::Token![,]>;

/// The struct's named fields, or why `ElicitForm` does not apply.
fn named_fields(input: &syn::DeriveInput) -> syn::Result<&NamedFields> {
    let name = &input.ident;
    match &input.data {
        syn::Data::Struct(syn::DataStruct {
            fields: syn::Fields::Named(f),
            ..
        }) => Ok(&f.named),
        syn::Data::Struct(_) => Err(syn::Error::new_spanned(
            name,
            "ElicitForm needs a struct with named fields: each field becomes one labelled form input",
        )),
        syn::Data::Enum(_) => Err(syn::Error::new_spanned(
            name,
            "ElicitForm derives on a struct of named fields; an enum is one select field: \
             add `#[derive(ElicitChoice)]` to it and use it as a field of a form struct",
        )),
        syn::Data::Union(_) => Err(syn::Error::new_spanned(
            name,
            "ElicitForm derives on a struct of named fields, not a union",
        )),
    }
}

/// One field, parsed and validated: everything expansion needs.
struct FieldDecl<'a> {
    ident: &'a syn::Ident,
    /// The Rust name without `r#`.
    rust_name: String,
    wire: String,
    attrs: FieldAttrs,
    optional: bool,
    shape: Shape,
    description: Option<String>,
}

/// Parse + validate one field (errors collected; `None` when its type cannot be a field).
fn parse_field<'a>(
    field: &'a syn::Field,
    rename_all: Option<&syn::LitStr>,
    wire_names: &mut Vec<String>,
    errors: &mut Errors,
) -> Option<FieldDecl<'a>> {
    let ident = field.ident.as_ref()?;
    let attrs = parse_field_attrs(&field.attrs, errors);
    let rust_name = ident.to_string();
    let rust_name = rust_name
        .strip_prefix("r#")
        .unwrap_or(&rust_name)
        .to_owned();
    let wire = match (&attrs.rename, rename_all) {
        (Some(r), _) => r.value(),
        (None, Some(rule)) => util::rename(&rust_name, &rule.value()).unwrap_or_else(|| {
            errors.spanned(
                rule,
                format!("unknown rename_all rule; use {}", util::RENAME_RULES),
            );
            rust_name.clone()
        }),
        (None, None) => rust_name.clone(),
    };
    if !attrs.not_secret
        && let Some(msg) = [&rust_name, &wire]
            .into_iter()
            .find_map(|c| secret_error(c))
    {
        errors.spanned(ident, msg);
    }
    if wire_names.contains(&wire) {
        errors.spanned(
            ident,
            format!("two form fields have the wire name `{wire}`"),
        );
    }
    wire_names.push(wire.clone());
    let (optional, inner) = match generic_arg(&field.ty, "Option") {
        Some(t) => (true, t),
        None => (false, &field.ty),
    };
    let shape = classify(inner, attrs.choices.is_some())
        .map_err(|e| errors.push(e))
        .ok()?;
    check_attrs_fit(&shape, &attrs, errors);
    let description = attrs
        .description
        .clone()
        .or_else(|| util::doc_comment(&field.attrs));
    Some(FieldDecl {
        ident,
        rust_name,
        wire,
        attrs,
        optional,
        shape,
        description,
    })
}

/// Attributes that do not fit the field's shape are errors, not silently ignored.
fn check_attrs_fit(shape: &Shape, attrs: &FieldAttrs, errors: &mut Errors) {
    let text_like = matches!(shape, Shape::Text);
    let numeric = matches!(shape, Shape::Integer(_) | Shape::Float { .. });
    let multi = matches!(shape, Shape::EnumMulti(_) | Shape::RuntimeMulti);
    if !text_like {
        if let Some((s, _)) = &attrs.format {
            errors.spanned(s, "`format` applies only to free-text `String` fields");
        }
        for (n, v) in [
            ("min_length", attrs.min_length),
            ("max_length", attrs.max_length),
        ] {
            if let Some((sp, _)) = v {
                errors.push(syn::Error::new(
                    sp,
                    format!("`{n}` applies only to free-text `String` fields"),
                ));
            }
        }
    }
    if !numeric {
        for (n, v) in [("minimum", &attrs.minimum), ("maximum", &attrs.maximum)] {
            if let Some(e) = v {
                errors.spanned(e, format!("`{n}` applies only to number fields"));
            }
        }
    }
    if !multi {
        for (n, v) in [
            ("min_items", attrs.min_items),
            ("max_items", attrs.max_items),
        ] {
            if let Some((sp, _)) = v {
                errors.push(syn::Error::new(
                    sp,
                    format!("`{n}` applies only to multi-select (`Vec`) fields"),
                ));
            }
        }
    }
    if let (Some((sp, min)), Some((_, max))) = (attrs.min_length, attrs.max_length)
        && min > max
    {
        errors.push(syn::Error::new(sp, "min_length is greater than max_length"));
    }
    if let (Some((sp, min)), Some((_, max))) = (attrs.min_items, attrs.max_items)
        && min > max
    {
        errors.push(syn::Error::new(sp, "min_items is greater than max_items"));
    }
}

fn none() -> TokenStream {
    quote!(::core::option::Option::None)
}

fn opt_u64(v: Option<(Span, u64)>) -> TokenStream {
    match v {
        Some((_, n)) => quote!(::core::option::Option::Some(#n)),
        None => none(),
    }
}

/// The `default = ..` value as tokens of the field kind's `default`.
fn default_tokens(shape: &Shape, d: Option<&syn::Expr>) -> syn::Result<TokenStream> {
    let Some(d) = d else { return Ok(none()) };
    let some = |t: TokenStream| quote!(::core::option::Option::Some(#t));
    match shape {
        Shape::Text | Shape::Enum(_) | Shape::RuntimeSelect => match d {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Ok(some(quote!(::std::string::String::from(#s)))),
            _ => Err(syn::Error::new_spanned(
                d,
                "expected a string literal default",
            )),
        },
        Shape::Integer(_) => util::int_expr(d).map(|v| some(quote!(#v))),
        Shape::Float { .. } => util::float_expr(d).map(|v| some(quote!(#v))),
        Shape::Boolean => match d {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Bool(b),
                ..
            }) => Ok(some(quote!(#b))),
            _ => Err(syn::Error::new_spanned(d, "expected `true` or `false`")),
        },
        Shape::EnumMulti(_) | Shape::RuntimeMulti => Err(syn::Error::new_spanned(
            d,
            "multi-select fields take no `default`; make the field an `Option` or set min_items",
        )),
    }
}

/// The generated code's per-field tokens.
struct FieldCode {
    spec: TokenStream,
    init: TokenStream,
    content: TokenStream,
    /// `fn __mcp_choice_field_x() -> ChoiceField<E>` for enum fields.
    choice_fn: Option<TokenStream>,
}

/// Expand one field: its `FieldSpec`, its read from checked content, its write to content.
fn expand_field(f: &TokenStream, d: &FieldDecl<'_>, errors: &mut Errors) -> FieldCode {
    let ident = d.ident;
    let choice_fn_name = format_ident!("__mcp_choice_field_{}", d.rust_name);
    let choice_fn = match &d.shape {
        // Spanned at the field type and naming it once: a type that is not an
        // `ElicitChoice` is reported once, at the field.
        Shape::Enum(t) | Shape::EnumMulti(t) => Some(quote_spanned!(t.span()=>
            fn #choice_fn_name() -> #f::ChoiceField<#t> { #f::choice_field::<#t>() }
        )),
        _ => None,
    };
    let default = default_tokens(&d.shape, d.attrs.default.as_ref()).unwrap_or_else(|e| {
        errors.push(e);
        none()
    });
    let (kind, convert) = kind_and_convert(f, d, &default, &choice_fn_name, errors);
    let value = content_value(f, &d.shape, &choice_fn_name);
    let wire = &d.wire;
    let content = if d.optional {
        quote! {
            if let ::core::option::Option::Some(__v) = &self.#ident {
                __out.insert(::std::string::String::from(#wire), #value);
            }
        }
    } else {
        quote! {
            {
                let __v = &self.#ident;
                __out.insert(::std::string::String::from(#wire), #value);
            }
        }
    };
    let required = !d.optional && d.attrs.default.is_none();
    let title = util::opt_str(&d.attrs.title);
    let description = util::opt_str(&d.description);
    let spec = quote! {
        #f::FieldSpec { name: #wire, title: #title, description: #description, required: #required, kind: #kind }
    };
    let init = if d.optional {
        quote! {
            #ident: match __checked.optional() {
                ::core::option::Option::Some((__n, __v)) => ::core::option::Option::Some(#convert?),
                ::core::option::Option::None => ::core::option::Option::None,
            }
        }
    } else {
        quote! {
            #ident: { let (__n, __v) = __checked.required()?; #convert? }
        }
    };
    FieldCode {
        spec,
        init,
        content,
        choice_fn,
    }
}

/// The value a client submits for a field (the inverse of its `convert`).
fn content_value(f: &TokenStream, shape: &Shape, choice_fn: &syn::Ident) -> TokenStream {
    match shape {
        Shape::Text | Shape::RuntimeSelect => quote!(#f::content::text(__v)),
        Shape::Integer(_) => quote!(#f::content::integer(*__v)),
        Shape::Float { f32: true } => quote!(#f::content::float32(*__v)),
        Shape::Float { f32: false } => quote!(#f::content::float64(*__v)),
        Shape::Boolean => quote!(#f::content::boolean(*__v)),
        Shape::Enum(_) => quote!((#choice_fn().content)(__v)),
        Shape::EnumMulti(_) => quote!((#choice_fn().contents)(__v)),
        Shape::RuntimeMulti => quote!(#f::content::texts(__v.iter())),
    }
}

/// A field's `FieldKind` expression and the expression reading its checked value.
fn kind_and_convert(
    f: &TokenStream,
    d: &FieldDecl<'_>,
    default: &TokenStream,
    choice_fn: &syn::Ident,
    errors: &mut Errors,
) -> (TokenStream, TokenStream) {
    let (attrs, ident) = (&d.attrs, d.ident);
    match &d.shape {
        Shape::Text => {
            let fmt = match &attrs.format {
                Some((_, v)) => quote!(::core::option::Option::Some(#f::StringFormat::#v)),
                None => none(),
            };
            let (min, max) = (opt_u64(attrs.min_length), opt_u64(attrs.max_length));
            (
                quote!(#f::FieldKind::Text { min_length: #min, max_length: #max, format: #fmt, default: #default }),
                quote!(__v.into_string(__n)),
            )
        }
        Shape::Integer(t) => {
            let (min, max) = (
                int_bound(t, attrs.minimum.as_ref(), true, errors),
                int_bound(t, attrs.maximum.as_ref(), false, errors),
            );
            (
                quote!(#f::FieldKind::Integer { minimum: #min, maximum: #max, default: #default }),
                quote!(__v.into_int::<#t>(__n)),
            )
        }
        Shape::Float { f32 } => {
            let (min, max) = (
                float_bound(attrs.minimum.as_ref(), errors),
                float_bound(attrs.maximum.as_ref(), errors),
            );
            let convert = if *f32 {
                quote!(__v.into_f32(__n))
            } else {
                quote!(__v.into_f64(__n))
            };
            (
                quote!(#f::FieldKind::Number { minimum: #min, maximum: #max, default: #default }),
                convert,
            )
        }
        Shape::Boolean => (
            quote!(#f::FieldKind::Boolean { default: #default }),
            quote!(__v.into_bool(__n)),
        ),
        Shape::Enum(_) => (
            quote!((#choice_fn().select)(#default)),
            quote!((#choice_fn().parse)(__v, __n)),
        ),
        Shape::EnumMulti(_) => {
            let (min, max) = (opt_u64(attrs.min_items), opt_u64(attrs.max_items));
            (
                quote!((#choice_fn().multi)(#min, #max)),
                quote!((#choice_fn().parse_many)(__v, __n)),
            )
        }
        Shape::RuntimeSelect => (
            quote!(#f::FieldKind::Select { options: ::std::borrow::Cow::Borrowed(&__choices.#ident[..]), default: #default }),
            quote!(__v.into_string(__n)),
        ),
        Shape::RuntimeMulti => {
            let (min, max) = (opt_u64(attrs.min_items), opt_u64(attrs.max_items));
            (
                quote!(#f::FieldKind::MultiSelect { options: ::std::borrow::Cow::Borrowed(&__choices.#ident[..]), min_items: #min, max_items: #max }),
                quote!(__v.into_strings(__n)),
            )
        }
    }
}

/// An integer field's bound: the attribute clamped to the type's range, else the range.
fn int_bound(t: &syn::Type, e: Option<&syn::Expr>, lo: bool, errors: &mut Errors) -> TokenStream {
    let ty_bound = if lo {
        quote!(<#t>::MIN as i128)
    } else {
        quote!(<#t>::MAX as i128)
    };
    match e.map(util::int_expr) {
        Some(Ok(v)) if lo => quote!(::core::cmp::max(#v, #ty_bound)),
        Some(Ok(v)) => quote!(::core::cmp::min(#v, #ty_bound)),
        Some(Err(e)) => {
            errors.push(e);
            ty_bound
        }
        None => ty_bound,
    }
}

fn float_bound(e: Option<&syn::Expr>, errors: &mut Errors) -> TokenStream {
    match e.map(util::float_expr) {
        Some(Ok(v)) => quote!(::core::option::Option::Some(#v)),
        Some(Err(e)) => {
            errors.push(e);
            none()
        }
        None => none(),
    }
}

pub(crate) fn expand(input: &syn::DeriveInput) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let container = util::parse_container(input, &mut errors, "on a struct");
    let fields = named_fields(input)?;
    if !input.generics.params.is_empty() {
        errors.spanned(
            &input.generics,
            "ElicitForm cannot be derived for a generic struct: the form schema must be fixed; \
             use concrete field types",
        );
    }
    let krate = util::crate_path(container.krate.as_ref())?;
    let ms = util::support(&krate);
    let f = quote!(#ms::form);
    let mut wire_names = Vec::new();
    let (mut decls, mut code) = (Vec::new(), Vec::new());
    // Field by field, so that errors are reported in source order.
    for field in fields {
        let rename_all = container.rename_all.as_ref();
        if let Some(d) = parse_field(field, rename_all, &mut wire_names, &mut errors) {
            code.push(expand_field(&f, &d, &mut errors));
            decls.push(d);
        }
    }
    errors.finish()?;
    let choice_fields: Vec<(&syn::Ident, &str)> = decls
        .iter()
        .filter(|d| matches!(d.shape, Shape::RuntimeSelect | Shape::RuntimeMulti))
        .map(|d| (d.ident, d.wire.as_str()))
        .collect();
    let choices = choices_builder(input, &f, &choice_fields);
    Ok(form_impls(&input.ident, &f, &code, &choices))
}

/// The run-time choices of a form: its `Choices` type, the builder items, `choices()`'s body
/// and the `check_choices` override.
struct Choices {
    ty: TokenStream,
    items: TokenStream,
    ctor: TokenStream,
    check: TokenStream,
}

fn choices_builder(
    input: &syn::DeriveInput,
    f: &TokenStream,
    choice_fields: &[(&syn::Ident, &str)],
) -> Choices {
    if choice_fields.is_empty() {
        // Only forms with run-time choices can offer an empty select; the others keep the
        // trait's accept-everything default.
        return Choices {
            ty: quote!(()),
            items: quote!(),
            ctor: quote!({}),
            check: quote!(),
        };
    }
    let (name, vis) = (&input.ident, &input.vis);
    let cname = format_ident!("{}Choices", name);
    let idents: Vec<_> = choice_fields.iter().map(|(i, _)| i).collect();
    let struct_doc = format!(
        "Run-time choices offered by the [`{name}`] form (one builder method per `#[form(choices)]` field)."
    );
    let field_docs: Vec<String> = choice_fields
        .iter()
        .map(|(_, w)| format!("Options offered for `{w}`, in display order."))
        .collect();
    let method_docs: Vec<String> = choice_fields
        .iter()
        .map(|(_, w)| format!("Sets the options offered for `{w}` (values, or `(value, title)` pairs), in display order; answers outside them are rejected."))
        .collect();
    let ctor_doc = format!("An empty [`{cname}`] builder.");
    Choices {
        ty: quote!(#cname),
        items: quote! {
            #[doc = #struct_doc]
            #[derive(Debug, Clone, Default, PartialEq)]
            #vis struct #cname {
                #( #[doc = #field_docs] pub #idents: ::std::vec::Vec<#f::Choice>, )*
            }
            impl #cname {
                #(
                    #[doc = #method_docs]
                    #[must_use]
                    pub fn #idents<__I>(mut self, choices: __I) -> Self
                    where
                        __I: ::core::iter::IntoIterator,
                        __I::Item: ::core::convert::Into<#f::Choice>,
                    {
                        self.#idents = choices.into_iter().map(::core::convert::Into::into).collect();
                        self
                    }
                )*
            }
            impl #name {
                #[doc = #ctor_doc]
                #vis fn choices() -> #cname { ::core::default::Default::default() }
            }
        },
        ctor: quote!(::core::default::Default::default()),
        check: quote! {
            fn check_choices(choices: &Self::Choices) -> ::core::result::Result<(), #f::FormError> {
                #f::check_offered(&__mcp_form_fields(choices))
            }
        },
    }
}

/// `ElicitForm` and `FormContent` for the struct.
fn form_impls(
    name: &syn::Ident,
    f: &TokenStream,
    code: &[FieldCode],
    choices: &Choices,
) -> TokenStream {
    let specs = code.iter().map(|c| &c.spec);
    let inits = code.iter().map(|c| &c.init);
    let contents = code.iter().map(|c| &c.content);
    let choice_fns = code.iter().filter_map(|c| c.choice_fn.as_ref());
    let Choices {
        ty: choices_ty,
        items: choices_items,
        ctor: choices_fn,
        check: check_choices,
    } = choices;
    quote! {
        #choices_items
        const _: () = {
            #(#choice_fns)*

            #[allow(unused_variables)]
            fn __mcp_form_fields(__choices: &#choices_ty) -> ::std::vec::Vec<#f::FieldSpec<'_>> {
                ::std::vec![ #(#specs),* ]
            }
            impl #f::ElicitForm for #name {
                type Choices = #choices_ty;
                fn choices() -> Self::Choices { #choices_fn }
                #check_choices
                fn explain(error: &#f::FormError, choices: &Self::Choices) -> ::std::string::String {
                    #f::explain(&__mcp_form_fields(choices), error)
                }
                fn requested_schema(choices: &Self::Choices) -> #f::RequestedSchema {
                    #f::requested_schema(&__mcp_form_fields(choices))
                }
                fn write_binding(
                    choices: &Self::Choices,
                    out: &mut dyn ::std::io::Write,
                ) -> ::std::io::Result<()> {
                    #f::write_fields_binding(&__mcp_form_fields(choices), out)
                }
                fn from_content(
                    content: &#f::JsonObject,
                    choices: &Self::Choices,
                ) -> ::core::result::Result<Self, #f::FormError> {
                    let __fields = __mcp_form_fields(choices);
                    #[allow(unused_mut)]
                    let mut __checked = #f::check_all(&__fields, content)?;
                    ::core::result::Result::Ok(Self { #(#inits,)* })
                }
            }
            impl #f::FormContent for #name {
                fn to_content(&self) -> #f::JsonObject {
                    #[allow(unused_mut)]
                    let mut __out = #f::JsonObject::new();
                    #(#contents)*
                    __out
                }
            }
        };
    }
}
