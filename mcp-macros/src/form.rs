//! `#[derive(ElicitForm)]`: a flat struct → `requestedSchema` + server-side re-validation.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

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

/// What a field's Rust type maps to.
enum Shape {
    Text,
    Integer(syn::Type),
    Float {
        f32: bool,
    },
    Boolean,
    /// Single select of an `ElicitChoice` enum.
    Enum(syn::Type),
    /// Single select of run-time choices (`String` + `#[form(choices)]`).
    RuntimeSelect,
    /// Multi select of an `ElicitChoice` enum.
    EnumMulti(syn::Type),
    /// Multi select of run-time choices (`Vec<String>` + `#[form(choices)]`).
    RuntimeMulti,
}

fn last_segment(ty: &syn::Type) -> Option<&syn::PathSegment> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        _ => None,
    }
}

/// `Wrapper<T>` → `T` when the last path segment is `wrapper`.
pub(crate) fn generic_arg<'a>(ty: &'a syn::Type, wrapper: &str) -> Option<&'a syn::Type> {
    let seg = last_segment(ty)?;
    if seg.ident != wrapper {
        return None;
    }
    match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => match a.args.first() {
            Some(syn::GenericArgument::Type(t)) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

const INTEGERS: &[&str] = &[
    "i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize",
];
const COLLECTIONS: &[&str] = &[
    "HashMap",
    "BTreeMap",
    "IndexMap",
    "Map",
    "JsonObject",
    "Value",
    "HashSet",
    "BTreeSet",
    "IndexSet",
    "VecDeque",
    "Box",
    "Rc",
    "Arc",
    "Cow",
    "Cell",
    "RefCell",
];

fn scalar_name(ty: &syn::Type) -> Option<String> {
    let seg = last_segment(ty)?;
    matches!(seg.arguments, syn::PathArguments::None).then(|| seg.ident.to_string())
}

/// Maps a (non-`Option`) field type to a form shape, or explains why form mode cannot carry it.
fn classify(ty: &syn::Type, choices: bool) -> Result<Shape, syn::Error> {
    let err = |msg: &str| Err(syn::Error::new_spanned(ty, msg));
    match ty {
        syn::Type::Reference(_) => {
            return err(
                "form fields must be owned values: references cannot be parsed from client content; use `String`",
            );
        }
        syn::Type::Tuple(_) => {
            return err(
                "tuples cannot be form fields: form mode carries only flat primitive fields; split it into named fields",
            );
        }
        syn::Type::Array(_) | syn::Type::Slice(_) => {
            return err(
                "arrays cannot be form fields; a multi select is `Vec<E>` of a `#[derive(ElicitChoice)]` enum",
            );
        }
        syn::Type::Path(_) => {}
        _ => {
            return err(
                "unsupported form field type; use String, a number, bool or an ElicitChoice enum",
            );
        }
    }
    let Some(seg) = last_segment(ty) else {
        return err("unsupported form field type");
    };
    let name = seg.ident.to_string();
    if let Some(inner) = generic_arg(ty, "Vec") {
        if generic_arg(inner, "Option").is_some() || generic_arg(inner, "Vec").is_some() {
            return err(
                "nested lists cannot be form fields: a multi select is a flat `Vec` of an ElicitChoice enum",
            );
        }
        return match scalar_name(inner).as_deref() {
            Some("String") if choices => Ok(Shape::RuntimeMulti),
            Some("String") => err(
                "`Vec<String>` is a multi select only with run-time choices: add `#[form(choices)]`, \
                 or use `Vec<E>` of a `#[derive(ElicitChoice)]` enum",
            ),
            Some(n) if INTEGERS.contains(&n) || n == "f32" || n == "f64" || n == "bool" => err(
                "form mode has no lists of numbers or booleans: a `Vec` field must be a multi select \
                 of a `#[derive(ElicitChoice)]` enum (or `Vec<String>` with `#[form(choices)]`)",
            ),
            Some(n) if COLLECTIONS.contains(&n) => {
                err("a `Vec` form field must be a multi select of a `#[derive(ElicitChoice)]` enum")
            }
            Some(_) if !choices => Ok(Shape::EnumMulti(inner.clone())),
            _ => {
                err("a `Vec` form field must be a multi select of a `#[derive(ElicitChoice)]` enum")
            }
        };
    }
    if choices {
        return if name == "String" && matches!(seg.arguments, syn::PathArguments::None) {
            Ok(Shape::RuntimeSelect)
        } else {
            err(
                "`#[form(choices)]` needs a `String` (single select) or `Vec<String>` (multi select) field",
            )
        };
    }
    if generic_arg(ty, "Option").is_some() {
        return err("`Option<Option<_>>` cannot be a form field; use a single `Option`");
    }
    if COLLECTIONS.contains(&name.as_str()) {
        return err(
            "maps, sets, boxes and JSON values cannot be form fields: form mode carries only flat \
             primitive fields (string, number, boolean, enum, multi select)",
        );
    }
    if !matches!(seg.arguments, syn::PathArguments::None) {
        return err(
            "generic types cannot be form fields: form mode carries only flat primitive fields \
             (string, number, boolean, enum, multi select)",
        );
    }
    Ok(match name.as_str() {
        "String" => Shape::Text,
        "str" => return err("use `String` for text fields"),
        "bool" => Shape::Boolean,
        "f32" => Shape::Float { f32: true },
        "f64" => Shape::Float { f32: false },
        "i128" | "u128" => {
            return err("128-bit integers do not fit a JSON number; use i64 or u64");
        }
        n if INTEGERS.contains(&n) => Shape::Integer(ty.clone()),
        // Anything else must be a unit-only enum; the `ElicitChoice` bound (with its
        // diagnostic) rejects nested structs at the field's type.
        _ => Shape::Enum(ty.clone()),
    })
}

/// What a secret-looking field name was taken for, and the word(s) that matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SecretMatch {
    /// The listed term that matched (`"password"`, `"card number"`, …).
    pub(crate) term: &'static str,
    /// What the term denotes, for the error message ("a password", "card data", …).
    pub(crate) kind: &'static str,
}

/// Words that mark a field as secret wherever they appear as a whole word (plural too).
/// Documented on `#[derive(ElicitForm)]`; keep the two lists in step.
const SECRET_WORDS: &[(&str, &str)] = &[
    ("password", "a password"),
    ("passwd", "a password"),
    ("passphrase", "a password"),
    ("secret", "a secret"),
    ("credential", "a credential"),
    ("apikey", "an API key"),
    ("pin", "a PIN"),
    ("otp", "a one-time code"),
    ("totp", "a one-time code"),
    ("cvv", "card data"),
    ("cvv2", "card data"),
    ("cvc", "card data"),
    ("iban", "a bank account number"),
    ("ssn", "a national identity number"),
];

/// Closed compounds ending in one of these (`newpassword`, `dbpasswd`) are secret too; the
/// ending matters because the head of an English compound comes last (`passwordless` is not).
const SECRET_ENDINGS: &[&str] = &["password", "passwd", "passphrase"];

/// Two-word secrets: the first word, then the second (plural too).
const SECRET_PAIRS: &[(&str, &str, &str, &str)] = &[
    ("api", "key", "api key", "an API key"),
    ("private", "key", "private key", "a private key"),
    ("secret", "key", "secret key", "a secret key"),
    ("access", "key", "access key", "an access key"),
    ("signing", "key", "signing key", "a signing key"),
    ("encryption", "key", "encryption key", "an encryption key"),
    ("ssh", "key", "ssh key", "a private key"),
    ("card", "number", "card number", "card data"),
    ("card", "num", "card number", "card data"),
    ("card", "no", "card number", "card data"),
    ("security", "code", "security code", "card data"),
    (
        "social",
        "security",
        "social security number",
        "a national identity number",
    ),
];

/// Words that make a following `token(s)` a count rather than a credential (`max_tokens`).
const TOKEN_QUANTIFIERS: &[&str] = &[
    "max",
    "min",
    "maximum",
    "minimum",
    "num",
    "number",
    "total",
    "count",
    "limit",
    "remaining",
    "used",
    "input",
    "output",
    "prompt",
    "completion",
];

/// Returns what a field name looks like if it names a secret, else `None`.
///
/// The name is split into words (`snake_case`, `kebab-case` and `camelCase`) and matched word
/// by word, so `secretary`, `tokenizer` and `passwordless` pass while `otp_code`, `cardNumber`
/// and `access_token` do not. `token(s)` counts only as the last word (the head noun: an
/// `access_token`, not a `token_count`) and not after a quantity word (`max_tokens`).
pub(crate) fn secret_word(name: &str) -> Option<SecretMatch> {
    let words = util::words(name);
    let singular = |w: &str| -> String { w.strip_suffix('s').unwrap_or(w).to_owned() };
    for w in &words {
        for (term, kind) in SECRET_WORDS {
            if w == term || singular(w) == *term {
                return Some(SecretMatch { term, kind });
            }
        }
        for term in SECRET_ENDINGS {
            if w.ends_with(term) || singular(w).ends_with(term) {
                return Some(SecretMatch {
                    term,
                    kind: "a password",
                });
            }
        }
    }
    for pair in words.windows(2) {
        for (a, b, term, kind) in SECRET_PAIRS {
            if pair[0] == *a && (pair[1] == *b || singular(&pair[1]) == *b) {
                return Some(SecretMatch { term, kind });
            }
        }
    }
    if let Some(last) = words.last()
        && (last == "token" || last == "tokens")
    {
        let quantified =
            words.len() >= 2 && TOKEN_QUANTIFIERS.contains(&words[words.len() - 2].as_str());
        if !quantified {
            return Some(SecretMatch {
                term: "token",
                kind: "an access token",
            });
        }
    }
    None
}

pub(crate) fn expand(input: &syn::DeriveInput) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let name = &input.ident;
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
                    "unknown `form` container attribute; expected `crate = \"...\"` or `rename_all = \"...\"`",
                ));
            }
            Ok(())
        });
        if let Err(e) = r {
            errors.push(e);
        }
    }
    let fields = match &input.data {
        syn::Data::Struct(syn::DataStruct {
            fields: syn::Fields::Named(f),
            ..
        }) => &f.named,
        syn::Data::Struct(_) => {
            return Err(syn::Error::new_spanned(
                name,
                "ElicitForm needs a struct with named fields: each field becomes one labelled form input",
            ));
        }
        syn::Data::Enum(_) => {
            return Err(syn::Error::new_spanned(
                name,
                "ElicitForm derives on a struct of named fields; an enum is one select field: \
                 add `#[derive(ElicitChoice)]` to it and use it as a field of a form struct",
            ));
        }
        syn::Data::Union(_) => {
            return Err(syn::Error::new_spanned(
                name,
                "ElicitForm derives on a struct of named fields, not a union",
            ));
        }
    };
    if !input.generics.params.is_empty() {
        errors.spanned(
            &input.generics,
            "ElicitForm cannot be derived for a generic struct: the form schema must be fixed; \
             use concrete field types",
        );
    }
    let krate = util::crate_path(krate_lit.as_ref())?;
    let ms = util::support(&krate);
    let f = quote!(#ms::form);

    let mut specs = Vec::new();
    let mut inits = Vec::new();
    let mut contents = Vec::new();
    let mut choice_fields: Vec<(syn::Ident, String)> = Vec::new();
    let mut wire_names: Vec<String> = Vec::new();
    let mut choice_fns: Vec<TokenStream> = Vec::new();

    for field in fields {
        let Some(ident) = field.ident.as_ref() else {
            continue;
        };
        let attrs = parse_field_attrs(&field.attrs, &mut errors);
        let rust_name = ident.to_string();
        let rust_name = rust_name
            .strip_prefix("r#")
            .unwrap_or(&rust_name)
            .to_owned();
        let wire = match (&attrs.rename, &rename_all) {
            (Some(r), _) => r.value(),
            (None, Some(rule)) => match util::rename(&rust_name, &rule.value()) {
                Some(n) => n,
                None => {
                    errors.spanned(
                        rule,
                        format!("unknown rename_all rule; use {}", util::RENAME_RULES),
                    );
                    rust_name.clone()
                }
            },
            (None, None) => rust_name.clone(),
        };
        for candidate in [&rust_name, &wire] {
            if attrs.not_secret {
                break;
            }
            if let Some(m) = secret_word(candidate) {
                errors.spanned(
                    ident,
                    format!(
                        "form mode must not carry secrets: `{candidate}` looks like {kind} (it \
                         contains `{term}`), and form answers pass through the client and its \
                         logs; collect it in URL mode with `ctx.elicit_url(..)` instead, on a \
                         page of your own. If the field is not secret, mark it `#[form(not_secret)]`",
                        kind = m.kind,
                        term = m.term,
                    ),
                );
                break;
            }
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
        let shape = match classify(inner, attrs.choices.is_some()) {
            Ok(s) => s,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };

        let choice_fn = format_ident!("__mcp_choice_field_{}", rust_name);
        if let Shape::Enum(t) | Shape::EnumMulti(t) = &shape {
            // Spanned at the field type: a type that is not an `ElicitChoice` is reported
            // once, at the field.
            choice_fns.push(quote_spanned!(t.span()=>
                fn #choice_fn() -> #f::ChoiceField<#t> { #f::choice_field::<#t>() }
            ));
        }

        // Attributes that do not fit the shape are errors, not silently ignored.
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

        let opt = |v: Option<(Span, u64)>| match v {
            Some((_, n)) => quote!(::core::option::Option::Some(#n)),
            None => quote!(::core::option::Option::None),
        };
        let mut default_tokens = quote!(::core::option::Option::None);
        let has_default = attrs.default.is_some();
        if let Some(d) = &attrs.default {
            let parsed: syn::Result<TokenStream> = match &shape {
                Shape::Text | Shape::Enum(_) | Shape::RuntimeSelect => match d {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) => Ok(quote!(::core::option::Option::Some(::std::string::String::from(#s)))),
                    _ => Err(syn::Error::new_spanned(
                        d,
                        "expected a string literal default",
                    )),
                },
                Shape::Integer(_) => {
                    util::int_expr(d).map(|v| quote!(::core::option::Option::Some(#v)))
                }
                Shape::Float { .. } => {
                    util::float_expr(d).map(|v| quote!(::core::option::Option::Some(#v)))
                }
                Shape::Boolean => match d {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Bool(b),
                        ..
                    }) => Ok(quote!(::core::option::Option::Some(#b))),
                    _ => Err(syn::Error::new_spanned(d, "expected `true` or `false`")),
                },
                Shape::EnumMulti(_) | Shape::RuntimeMulti => Err(syn::Error::new_spanned(
                    d,
                    "multi-select fields take no `default`; make the field an `Option` or set min_items",
                )),
            };
            match parsed {
                Ok(t) => default_tokens = t,
                Err(e) => errors.push(e),
            }
        }

        // The value a client submits for this field (the inverse of `convert` below).
        let content_value = match &shape {
            Shape::Text | Shape::RuntimeSelect => quote!(#f::content::text(__v)),
            Shape::Integer(_) => quote!(#f::content::integer(*__v)),
            Shape::Float { f32: true } => quote!(#f::content::float32(*__v)),
            Shape::Float { f32: false } => quote!(#f::content::float64(*__v)),
            Shape::Boolean => quote!(#f::content::boolean(*__v)),
            // Through the field's one `choice_field` (below), which names the type once.
            Shape::Enum(_) => quote!((#choice_fn().content)(__v)),
            Shape::EnumMulti(_) => quote!((#choice_fn().contents)(__v)),
            Shape::RuntimeMulti => quote!(#f::content::texts(__v.iter())),
        };
        contents.push(if optional {
            quote! {
                if let ::core::option::Option::Some(__v) = &self.#ident {
                    __out.insert(::std::string::String::from(#wire), #content_value);
                }
            }
        } else {
            quote! {
                {
                    let __v = &self.#ident;
                    __out.insert(::std::string::String::from(#wire), #content_value);
                }
            }
        });

        let (kind, convert) = match &shape {
            Shape::Text => {
                let fmt = match &attrs.format {
                    Some((_, v)) => quote!(::core::option::Option::Some(#f::StringFormat::#v)),
                    None => quote!(::core::option::Option::None),
                };
                let (min, max) = (opt(attrs.min_length), opt(attrs.max_length));
                (
                    quote!(#f::FieldKind::Text { min_length: #min, max_length: #max, format: #fmt, default: #default_tokens }),
                    quote!(__v.into_string(__n)),
                )
            }
            Shape::Integer(t) => {
                let mut bound = |e: &Option<syn::Expr>, lo: bool| -> TokenStream {
                    let ty_bound = if lo {
                        quote!(<#t>::MIN as i128)
                    } else {
                        quote!(<#t>::MAX as i128)
                    };
                    match e.as_ref().map(util::int_expr) {
                        Some(Ok(v)) if lo => quote!(::core::cmp::max(#v, #ty_bound)),
                        Some(Ok(v)) => quote!(::core::cmp::min(#v, #ty_bound)),
                        Some(Err(e)) => {
                            errors.push(e);
                            ty_bound
                        }
                        None => ty_bound,
                    }
                };
                let (min, max) = (bound(&attrs.minimum, true), bound(&attrs.maximum, false));
                (
                    quote!(#f::FieldKind::Integer { minimum: #min, maximum: #max, default: #default_tokens }),
                    quote!(__v.into_int::<#t>(__n)),
                )
            }
            Shape::Float { f32 } => {
                let mut bound = |e: &Option<syn::Expr>| match e.as_ref().map(util::float_expr) {
                    Some(Ok(v)) => quote!(::core::option::Option::Some(#v)),
                    Some(Err(e)) => {
                        errors.push(e);
                        quote!(::core::option::Option::None)
                    }
                    None => quote!(::core::option::Option::None),
                };
                let (min, max) = (bound(&attrs.minimum), bound(&attrs.maximum));
                (
                    quote!(#f::FieldKind::Number { minimum: #min, maximum: #max, default: #default_tokens }),
                    if *f32 {
                        quote!(__v.into_f32(__n))
                    } else {
                        quote!(__v.into_f64(__n))
                    },
                )
            }
            Shape::Boolean => (
                quote!(#f::FieldKind::Boolean { default: #default_tokens }),
                quote!(__v.into_bool(__n)),
            ),
            Shape::Enum(_) => (
                quote!((#choice_fn().select)(#default_tokens)),
                quote!((#choice_fn().parse)(__v, __n)),
            ),
            Shape::EnumMulti(_) => {
                let (min, max) = (opt(attrs.min_items), opt(attrs.max_items));
                (
                    quote!((#choice_fn().multi)(#min, #max)),
                    quote!((#choice_fn().parse_many)(__v, __n)),
                )
            }
            Shape::RuntimeSelect => {
                choice_fields.push((ident.clone(), wire.clone()));
                (
                    quote!(#f::FieldKind::Select { options: ::std::borrow::Cow::Borrowed(&__choices.#ident[..]), default: #default_tokens }),
                    quote!(__v.into_string(__n)),
                )
            }
            Shape::RuntimeMulti => {
                choice_fields.push((ident.clone(), wire.clone()));
                let (min, max) = (opt(attrs.min_items), opt(attrs.max_items));
                (
                    quote!(#f::FieldKind::MultiSelect { options: ::std::borrow::Cow::Borrowed(&__choices.#ident[..]), min_items: #min, max_items: #max }),
                    quote!(__v.into_strings(__n)),
                )
            }
        };
        let required = !optional && !has_default;
        let title = util::opt_str(&attrs.title);
        let description = util::opt_str(
            &attrs
                .description
                .clone()
                .or_else(|| util::doc_comment(&field.attrs)),
        );
        specs.push(quote! {
            #f::FieldSpec { name: #wire, title: #title, description: #description, required: #required, kind: #kind }
        });
        inits.push(if optional {
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
        });
    }
    errors.finish()?;

    let vis = &input.vis;
    let (choices_ty, choices_items, choices_fn) = if choice_fields.is_empty() {
        (quote!(()), quote!(), quote!({}))
    } else {
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
        (
            quote!(#cname),
            quote! {
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
            quote!(::core::default::Default::default()),
        )
    };

    // Only forms with run-time choices can offer an empty select; the others keep the
    // trait's accept-everything default.
    let check_choices = if choice_fields.is_empty() {
        quote!()
    } else {
        quote! {
            fn check_choices(choices: &Self::Choices) -> ::core::result::Result<(), #f::FormError> {
                #f::check_offered(&__mcp_form_fields(choices))
            }
        }
    };
    Ok(quote! {
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
    })
}

#[cfg(test)]
mod tests {
    use super::secret_word;

    #[test]
    fn secret_names_are_refused() {
        for n in [
            "password",
            "user_password",
            "newPassword",
            "mypassword",
            "Passwd",
            "passphrase",
            "client_secret",
            "secrets",
            "access_token",
            "refreshToken",
            "token",
            "github_tokens",
            "api_key",
            "apiKey",
            "APIKEY",
            "private_key",
            "ssh_keys",
            "credentials",
            "db_credential",
            "pin",
            "pin_code",
            "otp",
            "otp_code",
            "totp",
            "cvv",
            "cvc",
            "iban",
            "ssn",
            "card_number",
            "cardNumber",
            "card_no",
            "security_code",
        ] {
            assert!(secret_word(n).is_some(), "{n} should be refused");
        }
    }

    #[test]
    fn ordinary_names_pass() {
        for n in [
            "max_tokens",
            "maxTokens",
            "num_tokens",
            "token_count",
            "tokenizer_name",
            "passwordless",
            "passwordless_login",
            "secretary",
            "title",
            "keyboard",
            "key",
            "sort_key",
            "apiary",
            "note_id",
            "spin",
            "pinned",
            "option",
            "card_title",
            "phone_number",
        ] {
            assert_eq!(secret_word(n), None, "{n} should pass");
        }
    }

    #[test]
    fn the_match_names_what_was_found() {
        let m = secret_word("card_number").unwrap();
        assert_eq!((m.term, m.kind), ("card number", "card data"));
        let m = secret_word("otp_code").unwrap();
        assert_eq!(m.term, "otp");
    }
}
