//! `#[tool]`: an annotated function → a `ToolHandler` struct of the same name.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::form::generic_arg;
use crate::util::{self, Errors};

#[derive(Default)]
struct ToolAttrs {
    name: Option<syn::LitStr>,
    title: Option<String>,
    description: Option<String>,
    read_only: Option<bool>,
    destructive: Option<bool>,
    idempotent: Option<bool>,
    open_world: Option<bool>,
    requires: Vec<TokenStream>,
    krate: Option<syn::LitStr>,
}

pub(crate) fn flag(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<bool> {
    if meta.input.peek(syn::Token![=]) {
        Ok(meta.value()?.parse::<syn::LitBool>()?.value)
    } else {
        Ok(true)
    }
}

fn parse_attrs(attr: TokenStream, errors: &mut Errors) -> ToolAttrs {
    let mut out = ToolAttrs::default();
    let parser = syn::meta::parser(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match key.as_str() {
            "name" => out.name = Some(meta.value()?.parse()?),
            "title" => out.title = Some(meta.value()?.parse::<syn::LitStr>()?.value()),
            "description" => out.description = Some(meta.value()?.parse::<syn::LitStr>()?.value()),
            "read_only" => out.read_only = Some(flag(&meta)?),
            "destructive" => out.destructive = Some(flag(&meta)?),
            "idempotent" => out.idempotent = Some(flag(&meta)?),
            "open_world" => out.open_world = Some(flag(&meta)?),
            "crate" => out.krate = Some(meta.value()?.parse()?),
            "requires" => {
                crate::util::parse_requires(&meta, &mut out.requires)?;
            }
            _ => {
                return Err(meta.error(
                    "unknown `tool` attribute; expected name, title, description, read_only, destructive, \
                     idempotent, open_world, requires(...) or crate",
                ));
            }
        }
        Ok(())
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, attr) {
        errors.push(e);
    }
    out
}

pub(crate) fn valid_name(n: &str) -> bool {
    (1..=128).contains(&n.len())
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

pub(crate) fn last_ident(ty: &syn::Type) -> Option<&syn::Ident> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| &s.ident),
        _ => None,
    }
}

/// `T` of `Result<T, E>` (last path segment `Result`, first type argument).
fn result_ok_type(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    if seg.ident != "Result" {
        return None;
    }
    match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    }
}

enum Param {
    Ctx { mutable: bool },
    State(syn::Type),
    Args(syn::Type),
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let mut out = syn::Error::new(
                Span::call_site(),
                "#[tool] goes on a free `fn` or `async fn` (not a method, closure or other item)",
            )
            .to_compile_error();
            out.extend(item);
            return out;
        }
    };
    match generate(attr, &func) {
        Ok(t) => quote!(#func #t),
        Err(e) => {
            let e = e.to_compile_error();
            quote!(#func #e)
        }
    }
}

fn generate(attr: TokenStream, func: &syn::ItemFn) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let attrs = parse_attrs(attr, &mut errors);
    let sig = &func.sig;
    let ident = &sig.ident;
    if !sig.generics.params.is_empty() {
        errors.spanned(
            &sig.generics,
            "a #[tool] function cannot be generic: its schema must be fixed",
        );
    }
    if let Some(c) = &sig.constness {
        errors.spanned(c, "a #[tool] function cannot be `const`");
    }
    if let Some(v) = &sig.variadic {
        errors.spanned(v, "a #[tool] function cannot be variadic");
    }
    let fn_name = ident.to_string();
    let name = match &attrs.name {
        Some(n) => {
            if !valid_name(&n.value()) {
                errors.spanned(
                    n,
                    "tool names must be 1-128 characters of A-Z, a-z, 0-9, `_`, `-` or `.`",
                );
            }
            n.value()
        }
        None => {
            let n = fn_name.strip_prefix("r#").unwrap_or(&fn_name).to_owned();
            if !valid_name(&n) {
                errors.spanned(
                    ident,
                    "this function name is not a valid tool name; set `name = \"...\"`",
                );
            }
            n
        }
    };

    let mut params = Vec::new();
    let mut args_seen = false;
    let mut ctx_seen = false;
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => errors.spanned(
                r,
                "#[tool] goes on free functions, not methods; pass shared data with `State<T>`",
            ),
            syn::FnArg::Typed(pt) => {
                let ty = &*pt.ty;
                if let syn::Type::Reference(r) = ty
                    && last_ident(&r.elem).is_some_and(|i| i == "ToolContext")
                {
                    if ctx_seen {
                        errors.spanned(ty, "only one `ToolContext` parameter is allowed");
                    }
                    ctx_seen = true;
                    params.push(Param::Ctx {
                        mutable: r.mutability.is_some(),
                    });
                } else if let Some(inner) = generic_arg(ty, "State") {
                    params.push(Param::State(inner.clone()));
                } else if matches!(ty, syn::Type::Reference(_)) {
                    errors.spanned(
                        ty,
                        "tool parameters are `&mut ToolContext`, `State<T>` or one owned arguments struct; \
                         references other than the context are not allowed",
                    );
                } else {
                    if args_seen {
                        errors.spanned(
                            ty,
                            "a tool takes at most one arguments type: put every argument into one \
                             `#[derive(Deserialize, JsonSchema)]` struct",
                        );
                    }
                    args_seen = true;
                    params.push(Param::Args(ty.clone()));
                }
            }
        }
    }
    errors.finish()?;

    let krate = util::crate_path(attrs.krate.as_ref())?;
    let ms = util::support(&krate);
    let title = util::opt_str(&attrs.title);
    let description = util::description(&attrs.description, &func.attrs);
    let hint = |h: Option<bool>| match h {
        Some(b) => quote!(::core::option::Option::Some(#b)),
        None => quote!(::core::option::Option::None),
    };
    let (ro, de, id, ow) = (
        hint(attrs.read_only),
        hint(attrs.destructive),
        hint(attrs.idempotent),
        hint(attrs.open_world),
    );
    let requires = &attrs.requires;

    let mut prelude = Vec::new();
    let mut call_args = Vec::new();
    let mut input_schema = quote!(__ms::no_input_schema);
    let mut args_check = quote!(__ms::no_args(&args)?;);
    let mut state_needs = Vec::new();
    for (i, p) in params.iter().enumerate() {
        match p {
            Param::Ctx { mutable: true } => call_args.push(quote!(ctx)),
            Param::Ctx { mutable: false } => call_args.push(quote!(&*ctx)),
            Param::State(t) => {
                let v = format_ident!("__state{}", i);
                prelude
                    .push(quote_spanned!(t.span()=> let #v = __ms::extract_state::<#t>(&*ctx)?;));
                state_needs.push(
                    quote_spanned!(t.span()=> __ms::StateNeed::of::<#t> as fn() -> __ms::StateNeed),
                );
                call_args.push(quote!(#v));
            }
            Param::Args(t) => {
                input_schema = quote_spanned!(t.span()=> __ms::input_schema::<#t>);
                args_check = quote_spanned!(t.span()=>
                    let __args = __ms::parse_args::<#t>(args, &__s.expected)?;
                );
                call_args.push(quote!(__args));
            }
        }
    }

    // `Json<T>` (optionally inside `Result`) → outputSchema from T.
    let output_schema = match &sig.output {
        syn::ReturnType::Type(_, ty) => {
            let inner = result_ok_type(ty).unwrap_or(ty);
            match generic_arg(inner, "Json") {
                Some(t) => {
                    quote_spanned!(t.span()=> ::core::option::Option::Some(__ms::output_schema::<#t> as fn() -> _))
                }
                None => quote!(::core::option::Option::None),
            }
        }
        syn::ReturnType::Default => quote!(::core::option::Option::None),
    };
    let ret_span = match &sig.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => ident.span(),
    };
    let await_ = sig.asyncness.map(|_| quote!(.await));
    let into_result = quote_spanned!(ret_span=> __ms::into_result(__ret));
    let vis = &func.vis;
    let doc = format!("The `{name}` tool, generated by `#[tool]` from [`{fn_name}()`].");

    Ok(quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types)]
        #[derive(Debug, Default, Clone, Copy)]
        #vis struct #ident {}

        const _: () = {
            use #ms as __ms;

            fn __tool_static() -> &'static __ms::ToolStatic {
                static CELL: ::std::sync::OnceLock<__ms::ToolStatic> = ::std::sync::OnceLock::new();
                CELL.get_or_init(|| {
                    __ms::ToolStatic::build(__ms::ToolSpec {
                        name: #name,
                        title: #title,
                        description: #description,
                        read_only: #ro,
                        destructive: #de,
                        idempotent: #id,
                        open_world: #ow,
                        requires: &[#(__ms::Requirement::#requires),*],
                        input_schema: #input_schema,
                        output_schema: #output_schema,
                        state: &[#(#state_needs),*],
                    })
                })
            }

            impl __ms::ToolHandler for #ident {
                fn descriptor(&self) -> &__ms::mcp_types::Tool {
                    &__tool_static().tool
                }

                fn required_capabilities(&self) -> &__ms::mcp_types::ClientCapabilities {
                    &__tool_static().capabilities
                }

                fn declaration_error(&self) -> ::core::option::Option<&str> {
                    __tool_static().error.as_deref()
                }

                fn state_needs(&self) -> &[__ms::StateNeed] {
                    &__tool_static().state
                }

                #[allow(unused_variables)]
                fn call<'a>(
                    &'a self,
                    ctx: &'a mut __ms::ToolContext,
                    args: __ms::mcp_types::JsonObject,
                ) -> __ms::BoxFuture<'a, ::core::result::Result<__ms::mcp_types::CallToolResult, __ms::ToolError>> {
                    ::std::boxed::Box::pin(async move {
                        let __s = __tool_static();
                        __s.check()?;
                        #args_check
                        #(#prelude)*
                        let __ret = #ident(#(#call_args),*) #await_;
                        #into_result
                    })
                }
            }
        };
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn tool_names() {
        assert!(super::valid_name("notes.delete-v2_x"));
        assert!(!super::valid_name(""));
        assert!(!super::valid_name("a b"));
        assert!(!super::valid_name(&"a".repeat(129)));
    }
}
