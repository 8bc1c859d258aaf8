//! `#[derive(ElicitForm)]`: a flat struct → `requestedSchema` + server-side re-validation.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::secret::secret_error;
use crate::shape;
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
    ty: &'a syn::Type,
    /// The Rust name without `r#`.
    rust_name: String,
    wire: String,
    attrs: FieldAttrs,
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
    if !attrs.not_secret {
        // Reported where the secret-looking name is written: the field, or its `rename`.
        match (secret_error(&rust_name), &attrs.rename) {
            (Some(msg), _) => errors.spanned(ident, msg),
            (None, Some(lit)) => {
                if let Some(msg) = secret_error(&wire) {
                    errors.spanned(lit, msg);
                }
            }
            (None, None) => {
                if let Some(msg) = secret_error(&wire) {
                    errors.spanned(ident, msg);
                }
            }
        }
    }
    if wire_names.contains(&wire) {
        errors.spanned(
            ident,
            format!("two form fields have the wire name `{wire}`"),
        );
    }
    wire_names.push(wire.clone());
    shape::reject_syntax(&field.ty)
        .map_err(|e| errors.push(e))
        .ok()?;
    check_attrs_fit(&attrs, errors);
    let description = attrs
        .description
        .clone()
        .or_else(|| util::doc_comment(&field.attrs));
    Some(FieldDecl {
        ident,
        ty: &field.ty,
        rust_name,
        wire,
        attrs,
        description,
    })
}

/// The attribute checks that need no type: text attributes on a run-time choices field, and
/// values that contradict each other (`check_consistency`). Whether an attribute fits the
/// field's type is checked by the compiler (see `field_options` and `type_checks`).
fn check_attrs_fit(attrs: &FieldAttrs, errors: &mut Errors) {
    if attrs.choices.is_some() {
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
        for (n, v) in [("minimum", &attrs.minimum), ("maximum", &attrs.maximum)] {
            if let Some(e) = v {
                errors.spanned(e, format!("`{n}` applies only to number fields"));
            }
        }
    }
    check_consistency(attrs, errors);
}

/// A number literal's value.
#[derive(Clone, Copy)]
enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    /// The value of `e` if it is a (negated) number literal; other shapes are reported by
    /// `literal`.
    fn of(e: &syn::Expr) -> Option<Num> {
        let inner = match e {
            syn::Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Neg(_),
                expr,
                ..
            }) => &**expr,
            _ => e,
        };
        match inner {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(_),
                ..
            }) => util::int_expr(e).ok().map(Num::Int),
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Float(_),
                ..
            }) => util::float_expr(e).ok().map(Num::Float),
            _ => None,
        }
    }

    /// An attribute's expression and value, if it is a number literal.
    fn attr(e: &Option<syn::Expr>) -> Option<(&syn::Expr, Num)> {
        e.as_ref().and_then(|e| Num::of(e).map(|n| (e, n)))
    }

    /// An attribute's expression and value as an `i128` literal, if it is an integer literal.
    fn int(e: &Option<syn::Expr>) -> Option<(&syn::Expr, proc_macro2::Literal)> {
        match Num::attr(e) {
            Some((e, Num::Int(v))) => Some((e, proc_macro2::Literal::i128_suffixed(v))),
            _ => None,
        }
    }

    /// `self < other`, exactly for two integers.
    #[allow(clippy::cast_precision_loss)]
    fn below(self, other: Num) -> bool {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => a < b,
            (Num::Int(a), Num::Float(b)) => (a as f64) < b,
            (Num::Float(a), Num::Int(b)) => a < b as f64,
            (Num::Float(a), Num::Float(b)) => a < b,
        }
    }
}

/// An attribute value as written (`-5`, `2.5`, `"abc"`), for messages.
fn written(e: &syn::Expr) -> String {
    quote!(#e).to_string().replacen("- ", "-", 1)
}

/// `n` characters / items, singular for one.
fn count(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Refuses attribute combinations no answer (or no default) can satisfy, with literals alone:
/// inverted bounds, and a default outside the field's own bounds. The bounds that need the
/// field's type (an integer type's range, an enum's values) are checked by `type_checks`.
fn check_consistency(a: &FieldAttrs, errors: &mut Errors) {
    let (min, max) = (Num::attr(&a.minimum), Num::attr(&a.maximum));
    if let (Some((emin, nmin)), Some((emax, nmax))) = (min, max)
        && nmax.below(nmin)
    {
        errors.spanned(
            emin,
            format!(
                "`minimum = {}` is greater than `maximum = {}`, so no answer can pass: swap \
                 them or fix one",
                written(emin),
                written(emax)
            ),
        );
    }
    if let Some((ed, nd)) = Num::attr(&a.default) {
        if let Some((emin, nmin)) = min
            && nd.below(nmin)
        {
            errors.spanned(
                ed,
                format!(
                    "`default = {}` is below `minimum = {}`: the default must pass the field's \
                     own checks; raise the default or lower `minimum`",
                    written(ed),
                    written(emin)
                ),
            );
        }
        if let Some((emax, nmax)) = max
            && nmax.below(nd)
        {
            errors.spanned(
                ed,
                format!(
                    "`default = {}` is above `maximum = {}`: the default must pass the field's \
                     own checks; lower the default or raise `maximum`",
                    written(ed),
                    written(emax)
                ),
            );
        }
    }
    for (lo, hi, what, unit) in [
        (a.min_length, a.max_length, "length", "text"),
        (a.min_items, a.max_items, "items", "selection"),
    ] {
        if let (Some((sp, min)), Some((_, max))) = (lo, hi)
            && min > max
        {
            errors.push(syn::Error::new(
                sp,
                format!(
                    "`min_{what} = {min}` is greater than `max_{what} = {max}`, so no {unit} can \
                     pass: swap them or fix one"
                ),
            ));
        }
    }
    if let Some(syn::Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Str(text),
        ..
    })) = &a.default
    {
        let len = text.value().chars().count() as u64;
        if let Some((_, min)) = a.min_length
            && len < min
        {
            errors.spanned(
                text,
                format!(
                    "the default {} is {} long, shorter than `min_length = {min}`: the default \
                     must pass the field's own checks; lengthen it or lower `min_length`",
                    quote!(#text),
                    count(len, "character")
                ),
            );
        }
        if let Some((_, max)) = a.max_length
            && len > max
        {
            errors.spanned(
                text,
                format!(
                    "the default {} is {} long, longer than `max_length = {max}`: the default \
                     must pass the field's own checks; shorten it or raise `max_length`",
                    quote!(#text),
                    count(len, "character")
                ),
            );
        }
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

/// Which marker a literal's kind requires of the field's value type.
enum LitFit {
    Str,
    Bool,
    Int,
    Fraction,
}

/// A `default`/`minimum`/`maximum` literal as a `Literal` expression, and what it requires.
fn literal(f: &TokenStream, e: &syn::Expr, numeric: bool) -> syn::Result<(TokenStream, LitFit)> {
    let expected = if numeric {
        "expected a number literal"
    } else {
        "expected a literal: a string, a number, `true` or `false`"
    };
    let (neg, inner) = match e {
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => (true, &**expr),
        _ => (false, e),
    };
    let syn::Expr::Lit(syn::ExprLit { lit, .. }) = inner else {
        return Err(syn::Error::new_spanned(e, expected));
    };
    match lit {
        syn::Lit::Int(_) => {
            let v = util::int_expr(e)?;
            Ok((quote!(#f::Literal::Int(#v)), LitFit::Int))
        }
        syn::Lit::Float(_) => {
            let v = util::float_expr(e)?;
            Ok((quote!(#f::Literal::Float(#v)), LitFit::Fraction))
        }
        syn::Lit::Str(s) if !numeric && !neg => Ok((quote!(#f::Literal::Str(#s)), LitFit::Str)),
        syn::Lit::Bool(b) if !numeric && !neg => Ok((quote!(#f::Literal::Bool(#b)), LitFit::Bool)),
        _ => Err(syn::Error::new_spanned(e, expected)),
    }
}

/// The field's `FieldOptions` expression and its compile-time fit checks (each spanned at its
/// attribute, so that a mismatch is reported there).
fn field_options(
    f: &TokenStream,
    d: &FieldDecl<'_>,
    errors: &mut Errors,
) -> (TokenStream, Vec<TokenStream>) {
    let a = &d.attrs;
    let ty = d.ty;
    let value = quote!(<#ty as #f::FormSlot>::Value);
    let mut fits = Vec::new();
    // The checked type goes through a local alias spanned at the attribute, so that a
    // mismatch is reported at the attribute rather than at the derive.
    let mut fit = |span: Span, check: TokenStream| {
        let alias = quote_spanned!(span=> __Field);
        fits.push(quote!({ type #alias = #value; #f::fits::#check::<#alias>(); }));
    };
    let text_attrs = [a.min_length.map(|(s, _)| s), a.max_length.map(|(s, _)| s)];
    let format_span = a.format.as_ref().map(|(s, _)| s.span());
    for span in text_attrs.into_iter().chain([format_span]).flatten() {
        fit(span, quote!(text));
    }
    for (sp, _) in [a.min_items, a.max_items].into_iter().flatten() {
        fit(sp, quote!(items));
    }
    let mut lit =
        |e: Option<&syn::Expr>, numeric: bool| match e.map(|e| (e, literal(f, e, numeric))) {
            None => none(),
            Some((_, Err(err))) => {
                errors.push(err);
                none()
            }
            Some((e, Ok((tokens, kind)))) => {
                let check = match kind {
                    LitFit::Str => quote!(str_default),
                    LitFit::Bool => quote!(bool_default),
                    LitFit::Int => quote!(number),
                    LitFit::Fraction => quote!(fraction),
                };
                fit(e.span(), check);
                quote!(::core::option::Option::Some(#tokens))
            }
        };
    let minimum = lit(a.minimum.as_ref(), true);
    let maximum = lit(a.maximum.as_ref(), true);
    let default = lit(a.default.as_ref(), false);
    fits.extend(type_checks(f, d));
    let format = match &a.format {
        Some((_, v)) => quote!(::core::option::Option::Some(#f::StringFormat::#v)),
        None => none(),
    };
    let (min_length, max_length) = (opt_u64(a.min_length), opt_u64(a.max_length));
    let (min_items, max_items) = (opt_u64(a.min_items), opt_u64(a.max_items));
    let options = quote! {
        #f::FieldOptions {
            min_length: #min_length, max_length: #max_length, format: #format,
            minimum: #minimum, maximum: #maximum,
            min_items: #min_items, max_items: #max_items, default: #default,
        }
    };
    (options, fits)
}

/// The checks of attribute values against what only the field's type knows: an integer
/// type's range and an enum's values. Each is a constant that fails to evaluate (at the
/// attribute, with a message saying what to change) when the value cannot fit; types that
/// know neither skip them, and a type that an attribute does not fit is reported by `fits`.
fn type_checks(f: &TokenStream, d: &FieldDecl<'_>) -> Vec<TokenStream> {
    let a = &d.attrs;
    let ty = d.ty;
    let value = quote!(<#ty as #f::FormSlot>::Value);
    // `facts` is the `FormValue` constant, `known` the pattern binding its `Some` value, and
    // `fails` the condition under which the attribute cannot fit.
    let check = |span: Span, facts: &str, known: TokenStream, fails: TokenStream, msg: String| {
        let facts = format_ident!("{facts}");
        quote_spanned! {span=>
            {
                type __Field = #value;
                const _: () = if let ::core::option::Option::Some(#known) =
                    <__Field as #f::FormValue>::#facts
                {
                    if #fails {
                        ::core::panic!("{}", #msg);
                    }
                };
            }
        }
    };
    let mut out = Vec::new();
    let range = "INTEGER_RANGE";
    if let Some((e, v)) = Num::int(&a.default) {
        out.push(check(
            e.span(),
            range,
            quote!(__range),
            quote!(#f::fits::outside(#v, __range)),
            format!(
                "`default = {}` is outside the range of the field's integer type, so the field \
                 could never take it: pick a default the type can hold, or a wider type",
                written(e)
            ),
        ));
    }
    if let Some((e, v)) = Num::int(&a.minimum) {
        out.push(check(
            e.span(),
            range,
            quote!((_, __hi)),
            quote!((#v) > __hi),
            format!(
                "`minimum = {}` is above the largest value of the field's integer type, so no \
                 answer can pass: lower it, or use a wider type",
                written(e)
            ),
        ));
    }
    if let Some((e, v)) = Num::int(&a.maximum) {
        out.push(check(
            e.span(),
            range,
            quote!((__lo, _)),
            quote!((#v) < __lo),
            format!(
                "`maximum = {}` is below the smallest value of the field's integer type, so no \
                 answer can pass: raise it, or use a wider (or signed) type",
                written(e)
            ),
        ));
    }
    let options = "FIXED_OPTIONS";
    if let Some(syn::Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Str(text),
        ..
    })) = &a.default
    {
        out.push(check(
            text.span(),
            options,
            quote!(__options),
            quote!(!#f::fits::offers(__options, #text)),
            format!(
                "`default = {}` is not a value of the field's enum: use the value of one of its \
                 variants (the variant's name after `rename_all`, or its `#[form(value = \"..\")]`)",
                quote!(#text)
            ),
        ));
    }
    if let Some((span, n)) = a.min_items {
        out.push(check(
            span,
            options,
            quote!(__options),
            quote!((__options.len() as u64) < #n),
            format!(
                "`min_items = {n}` is more than the number of the enum's variants, so no \
                 selection can pass: lower it"
            ),
        ));
    }
    out
}

/// The generated code's per-field tokens.
struct FieldCode {
    spec: TokenStream,
    init: TokenStream,
    content: TokenStream,
    /// `fn __mcp_field_x() -> Field<T>` (the field's one trait bound) and its fit checks.
    items: TokenStream,
}

/// Expand one field: its `FieldSpec`, its read from checked content, its write to content.
fn expand_field(f: &TokenStream, d: &FieldDecl<'_>, errors: &mut Errors) -> FieldCode {
    let (ident, ty, wire) = (d.ident, d.ty, &d.wire);
    let field_fn = format_ident!("__mcp_field_{}", d.rust_name);
    let fits_fn = format_ident!("__mcp_fits_{}", d.rust_name);
    let (options, fits) = field_options(f, d, errors);
    // Spanned at the field type and naming it once: a type form mode cannot carry is
    // reported once, at the field.
    let field_item = if d.attrs.choices.is_some() {
        quote_spanned!(ty.span()=>
            fn #field_fn() -> #f::ChoicesFieldFns<#ty> { #f::choices_field::<#ty>() })
    } else {
        quote_spanned!(ty.span()=> fn #field_fn() -> #f::Field<#ty> { #f::field::<#ty>() })
    };
    let kind = if d.attrs.choices.is_some() {
        quote!((#field_fn().kind)(&__choices.#ident[..], &#options))
    } else {
        quote!((#field_fn().kind)(&#options))
    };
    let no_default = d.attrs.default.is_none();
    let title = util::opt_str(&d.attrs.title);
    let description = util::opt_str(&d.description);
    FieldCode {
        spec: quote! {
            #f::FieldSpec {
                name: #wire, title: #title, description: #description,
                required: #field_fn().required && #no_default, kind: #kind,
            }
        },
        init: quote!(#ident: (#field_fn().take)(&mut __checked)?),
        content: quote! {
            if let ::core::option::Option::Some(__v) = (#field_fn().content)(&self.#ident) {
                __out.insert(::std::string::String::from(#wire), __v);
            }
        },
        items: quote! {
            #field_item
            #[allow(dead_code)]
            fn #fits_fn() { #(#fits)* }
        },
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
        .filter(|d| d.attrs.choices.is_some())
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
    let field_count = code.len();
    let inits = code.iter().map(|c| &c.init);
    let contents = code.iter().map(|c| &c.content);
    let field_items = code.iter().map(|c| &c.items);
    let Choices {
        ty: choices_ty,
        items: choices_items,
        ctor: choices_fn,
        check: check_choices,
    } = choices;
    quote! {
        #choices_items
        const _: () = {
            #(#field_items)*

            // An array, not a `Vec`: built on every leg that asks (three times on a retry), and
            // a slice of it is all the helpers take.
            #[allow(unused_variables)]
            fn __mcp_form_fields(__choices: &#choices_ty) -> [#f::FieldSpec<'_>; #field_count] {
                [ #(#specs),* ]
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
                fn write_requested_schema(
                    choices: &Self::Choices,
                    out: &mut ::std::vec::Vec<u8>,
                ) {
                    #f::write_fields_schema(&__mcp_form_fields(choices), out)
                }
                const SCHEMA_WRITER_IS_DERIVED: bool = true;
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
