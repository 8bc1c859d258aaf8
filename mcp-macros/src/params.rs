//! Handler parameters, shared by `#[tool]`, `#[prompt]` and `#[resource]`: reading them from
//! the signature, and the hidden arguments struct that documented parameters become.
//!
//! A parameter with a doc comment is one argument of the call (a property of the schema); a
//! reference is the request context; any other owned parameter is made by its `FromRequest`
//! impl (`State<T>`, `Principal`, `ResourceUri`, the arguments struct, a user's extractor).
//! The hidden struct of documented parameters is taken as `Args<__Arguments>`.
//! No type is recognised by its spelling, so aliases and users' own types work.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::util::Errors;

/// One parameter of a handler function, as the macro reads it.
pub(crate) enum Param {
    /// `&mut RequestContext` (or `&RequestContext`, or a reference to an alias of it).
    Ctx {
        mutable: bool,
        /// The referenced type.
        elem: syn::Type,
        /// The whole reference type, as written (where a wrong context type is reported).
        ty: Box<syn::Type>,
        /// The parameter's name, when its pattern is a plain name.
        name: Option<syn::Ident>,
    },
    /// An owned parameter made by its `FromRequest` impl.
    Extract(syn::Type),
    /// A documented parameter: one argument.
    Arg(PlainArg),
}

/// A documented parameter: its name becomes the property, its doc comment the description.
pub(crate) struct PlainArg {
    pub(crate) ident: syn::Ident,
    pub(crate) ty: syn::Type,
    /// Doc, `serde` and `schemars` attributes, moved onto the hidden struct's field.
    pub(crate) attrs: Vec<syn::Attribute>,
}

/// Attributes a documented parameter may carry; the macro moves them off the function.
fn is_arg_attr(a: &syn::Attribute) -> bool {
    let p = a.path();
    p.is_ident("doc") || p.is_ident("serde") || p.is_ident("schemars")
}

pub(crate) fn last_ident(ty: &syn::Type) -> Option<&syn::Ident> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| &s.ident),
        _ => None,
    }
}

/// Types that read as one value rather than an arguments struct: an undocumented parameter
/// of one of these is almost surely a missing doc comment, so it is reported as such. This is
/// a hint for the common mistake, not a classification: an alias of one of them goes on to
/// `FromRequest`, and `build()` refuses its non-object schema.
const SINGLE_VALUES: &[&str] = &[
    "String", "str", "bool", "char", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16",
    "u32", "u64", "u128", "usize", "f32", "f64", "Option", "Vec",
];

/// Reads every parameter of `sig`; `what` is the attribute (`#[tool]`) for messages.
pub(crate) fn parse(sig: &syn::Signature, what: &str, errors: &mut Errors) -> Vec<Param> {
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => errors.spanned(
                r,
                format!(
                    "{what} goes on free functions, not methods; pass shared data with `State<T>`"
                ),
            ),
            syn::FnArg::Typed(pt) => match parse_one(pt) {
                Ok(p) => params.push(p),
                Err(e) => errors.push(e),
            },
        }
    }
    params
}

fn parse_one(pt: &syn::PatType) -> syn::Result<Param> {
    let ty = &*pt.ty;
    if pt.attrs.iter().any(|a| a.path().is_ident("doc")) {
        let syn::Pat::Ident(pi) = &*pt.pat else {
            return Err(syn::Error::new_spanned(
                &pt.pat,
                "a documented parameter is one argument and needs a plain name (`title: String`), \
                 not a pattern",
            ));
        };
        if matches!(ty, syn::Type::Reference(_)) {
            return Err(syn::Error::new_spanned(
                ty,
                "arguments are owned values parsed from JSON: use `String`, not `&str`",
            ));
        }
        return Ok(Param::Arg(PlainArg {
            ident: pi.ident.clone(),
            ty: ty.clone(),
            attrs: pt
                .attrs
                .iter()
                .filter(|a| is_arg_attr(a))
                .cloned()
                .collect(),
        }));
    }
    if let Some(a) = pt.attrs.iter().find(|a| is_arg_attr(a)) {
        return Err(syn::Error::new_spanned(
            a,
            "`serde`/`schemars` attributes apply to documented parameters: add a doc comment \
             (`/// what it is`) to make this parameter one argument",
        ));
    }
    if let syn::Type::Reference(r) = ty {
        // Any reference is the request context; the `ContextParam` bound on the referenced
        // type checks it (so an alias of `RequestContext` works, and `&str` gets a message).
        return Ok(Param::Ctx {
            mutable: r.mutability.is_some(),
            elem: (*r.elem).clone(),
            ty: Box::new(ty.clone()),
            name: match &*pt.pat {
                syn::Pat::Ident(pi) => Some(pi.ident.clone()),
                _ => None,
            },
        });
    }
    if let (syn::Pat::Ident(pi), Some(t)) = (&*pt.pat, last_ident(ty))
        && SINGLE_VALUES.contains(&t.to_string().as_str())
    {
        return Err(syn::Error::new_spanned(
            ty,
            format!(
                "`{}` reads as one argument: give it a doc comment (`/// what it is`, its \
                 description in the schema), or put the arguments into one `#[args]` struct",
                pi.ident
            ),
        ));
    }
    Ok(Param::Extract(ty.clone()))
}

/// A parameter made by its `FromRequest` impl: the items to add (the type is named once,
/// in `__param_x()`, so a type that is no parameter is one error, at the parameter), the
/// descriptor's declaration, and the extraction statement binding `var`.
pub(crate) fn extractor(
    ty: &impl quote::ToTokens,
    span: proc_macro2::Span,
    var: &syn::Ident,
) -> (TokenStream, TokenStream, TokenStream) {
    let f = format_ident!("__param_{}", var);
    let d = format_ident!("__declare_{}", var);
    let items = quote_spanned!(span=>
        fn #f() -> __ms::ParamType<#ty> { __ms::param_type::<#ty>() }
        fn #d(needs: &mut __ms::ParamNeeds) { (#f().declare)(needs) }
    );
    (
        items,
        quote!(#d as fn(&mut __ms::ParamNeeds)),
        quote!(let #var = (#f().extract)(&mut __call)?;),
    )
}

/// The expression passing the request context to a reference parameter.
pub(crate) fn context_arg(mutable: bool, elem: &syn::Type) -> TokenStream {
    if mutable {
        quote_spanned!(elem.span()=> __ms::context_mut::<#elem>(ctx))
    } else {
        quote_spanned!(elem.span()=> __ms::context_ref::<#elem>(&*ctx))
    }
}

/// The documented parameters, in order.
pub(crate) fn plain(params: &[Param]) -> Vec<&PlainArg> {
    params
        .iter()
        .filter_map(|p| match p {
            Param::Arg(a) => Some(a),
            _ => None,
        })
        .collect()
}

/// Removes the attributes the macro consumed from the parameters, so that the function can
/// be emitted as written (rustc accepts no doc comments on parameters).
pub(crate) fn strip_attrs(func: &mut syn::ItemFn) {
    for input in &mut func.sig.inputs {
        if let syn::FnArg::Typed(pt) = input {
            pt.attrs.retain(|a| !is_arg_attr(a));
        }
    }
}

/// The hidden struct documented parameters become: deriving `Deserialize` and `JsonSchema`
/// through the runtime's re-exports gives the same deterministic schema a hand-written
/// struct would. `rename_all` is serde's. Unknown arguments are refused (and the schema
/// says `additionalProperties: false`), as for a tool without arguments: a misspelt
/// optional argument is reported to the model instead of silently dropped.
pub(crate) fn args_struct(
    ms: &TokenStream,
    name: &syn::Ident,
    args: &[&PlainArg],
    rename_all: Option<&syn::LitStr>,
) -> TokenStream {
    let serde_path = format!("{ms}::serde");
    let schemars_path = format!("{ms}::schemars");
    let rename = rename_all.map(|r| quote!(#[serde(rename_all = #r)]));
    let fields = args.iter().map(|a| {
        let (ident, ty, attrs) = (&a.ident, &a.ty, &a.attrs);
        quote_spanned!(ty.span()=> #(#attrs)* #ident: #ty)
    });
    quote! {
        #[derive(#ms::serde::Deserialize, #ms::schemars::JsonSchema)]
        #[serde(crate = #serde_path, deny_unknown_fields)]
        #[schemars(crate = #schemars_path)]
        #rename
        struct #name { #(#fields,)* }
    }
}

/// The generated code's name for the hidden arguments struct.
pub(crate) fn args_struct_name() -> syn::Ident {
    format_ident!("__Arguments")
}
