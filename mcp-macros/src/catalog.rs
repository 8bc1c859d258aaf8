//! `#[prompt]` and `#[resource]`: an annotated function → a `PromptHandler` /
//! `ResourceHandler` struct of the same name, the way `#[tool]` makes tools.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::form::generic_arg;
use crate::tool::{last_ident, valid_name};
use crate::util::{self, Errors};

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Prompt,
    Resource,
}

impl Kind {
    fn attr(self) -> &'static str {
        match self {
            Kind::Prompt => "prompt",
            Kind::Resource => "resource",
        }
    }
}

#[derive(Default)]
struct Attrs {
    name: Option<syn::LitStr>,
    title: Option<String>,
    description: Option<String>,
    uri: Option<syn::LitStr>,
    mime_type: Option<String>,
    ttl_ms: Option<u64>,
    public: Option<bool>,
    requires: Vec<TokenStream>,
    completions: Vec<(String, syn::Path)>,
    krate: Option<syn::LitStr>,
}

fn parse_attrs(kind: Kind, attr: TokenStream, errors: &mut Errors) -> Attrs {
    let mut out = Attrs::default();
    let parser = syn::meta::parser(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match (kind, key.as_str()) {
            (_, "name") => out.name = Some(meta.value()?.parse()?),
            (_, "title") => out.title = Some(meta.value()?.parse::<syn::LitStr>()?.value()),
            (_, "description") => {
                out.description = Some(meta.value()?.parse::<syn::LitStr>()?.value());
            }
            (_, "crate") => out.krate = Some(meta.value()?.parse()?),
            (Kind::Resource, "uri") => out.uri = Some(meta.value()?.parse()?),
            (Kind::Resource, "mime_type") => {
                out.mime_type = Some(meta.value()?.parse::<syn::LitStr>()?.value());
            }
            (Kind::Resource, "ttl_ms") => {
                out.ttl_ms = Some(meta.value()?.parse::<syn::LitInt>()?.base10_parse()?);
            }
            (Kind::Resource, "cache_scope") => {
                let s: syn::LitStr = meta.value()?.parse()?;
                out.public = Some(match s.value().as_str() {
                    "public" => true,
                    "private" => false,
                    _ => {
                        return Err(syn::Error::new_spanned(
                            s,
                            "cache_scope is \"public\" or \"private\"",
                        ));
                    }
                });
            }
            (_, "requires") => {
                crate::util::parse_requires(&meta, &mut out.requires)?;
            }
            (_, "complete") => {
                meta.parse_nested_meta(|c| {
                    let Some(arg) = c.path.get_ident().map(ToString::to_string) else {
                        return Err(c.error("expected `argument = completion_fn`"));
                    };
                    let path: syn::Path = c.value()?.parse()?;
                    out.completions.push((arg, path));
                    Ok(())
                })?;
            }
            _ => {
                let expected = match kind {
                    Kind::Prompt => {
                        "name, title, description, requires(...), complete(...) or crate"
                    }
                    Kind::Resource => {
                        "uri, name, title, description, mime_type, ttl_ms, cache_scope, requires(...), \
                         complete(...) or crate"
                    }
                };
                return Err(meta.error(format!(
                    "unknown `{}` attribute; expected {expected}",
                    kind.attr()
                )));
            }
        }
        Ok(())
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, attr) {
        errors.push(e);
    }
    out
}

enum Param {
    Ctx { mutable: bool },
    Uri,
    State(syn::Type),
    Args(syn::Type),
}

pub(crate) fn expand(kind: Kind, attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let mut out = syn::Error::new(
                Span::call_site(),
                format!(
                    "#[{}] goes on a free `fn` or `async fn` (not a method, closure or other item)",
                    kind.attr()
                ),
            )
            .to_compile_error();
            out.extend(item);
            return out;
        }
    };
    match generate(kind, attr, &func) {
        Ok(t) => quote!(#func #t),
        Err(e) => {
            let e = e.to_compile_error();
            quote!(#func #e)
        }
    }
}

fn generate(kind: Kind, attr: TokenStream, func: &syn::ItemFn) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let attrs = parse_attrs(kind, attr, &mut errors);
    let what = kind.attr();
    let sig = &func.sig;
    let ident = &sig.ident;
    if !sig.generics.params.is_empty() {
        errors.spanned(
            &sig.generics,
            format!("a #[{what}] function cannot be generic"),
        );
    }
    if let Some(c) = &sig.constness {
        errors.spanned(c, format!("a #[{what}] function cannot be `const`"));
    }
    let fn_name = ident.to_string();
    let fn_name = fn_name.strip_prefix("r#").unwrap_or(&fn_name).to_owned();
    let name = match &attrs.name {
        Some(n) => {
            if kind == Kind::Prompt && !valid_name(&n.value()) {
                errors.spanned(
                    n,
                    "prompt names must be 1-128 characters of A-Z, a-z, 0-9, `_`, `-` or `.`",
                );
            }
            n.value()
        }
        None => {
            if kind == Kind::Prompt && !valid_name(&fn_name) {
                errors.spanned(
                    ident,
                    "this function name is not a valid prompt name; set `name = \"...\"`",
                );
            }
            fn_name.clone()
        }
    };
    let uri = match (kind, &attrs.uri) {
        (Kind::Resource, Some(u)) => {
            let v = u.value();
            let balanced = v.matches('{').count() == v.matches('}').count();
            if v.is_empty() || !v.contains(':') || !balanced {
                errors.spanned(
                    u,
                    "`uri` must be an absolute URI such as \"file:///notes/readme\" or a template \
                     such as \"notes://{id}\"",
                );
            }
            v
        }
        (Kind::Resource, None) => {
            errors.spanned(
                ident,
                "#[resource] needs `uri = \"...\"` (a fixed URI or a URI template with `{var}`)",
            );
            String::new()
        }
        (Kind::Prompt, _) => String::new(),
    };

    let mut params = Vec::new();
    let mut args_seen = false;
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => errors.spanned(
                r,
                format!("#[{what}] goes on free functions, not methods; pass shared data with `State<T>`"),
            ),
            syn::FnArg::Typed(pt) => {
                let ty = &*pt.ty;
                if let syn::Type::Reference(r) = ty
                    && last_ident(&r.elem).is_some_and(|i| i == "ToolContext")
                {
                    params.push(Param::Ctx {
                        mutable: r.mutability.is_some(),
                    });
                } else if let Some(inner) = generic_arg(ty, "State") {
                    params.push(Param::State(inner.clone()));
                } else if kind == Kind::Resource
                    && last_ident(ty).is_some_and(|i| i == "ResourceUri")
                {
                    params.push(Param::Uri);
                } else if matches!(ty, syn::Type::Reference(_)) {
                    errors.spanned(
                        ty,
                        format!(
                            "#[{what}] parameters are `&mut ToolContext`, `State<T>` or one owned \
                             arguments struct; references other than the context are not allowed"
                        ),
                    );
                } else {
                    if args_seen {
                        errors.spanned(
                            ty,
                            "at most one arguments type: put every argument into one \
                             `#[derive(Deserialize, JsonSchema)]` struct",
                        );
                    }
                    if kind == Kind::Resource && !uri.contains('{') {
                        errors.spanned(
                            ty,
                            "a resource with a fixed URI takes no arguments; use a URI template \
                             (`{var}`) and a struct with one field per variable",
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
    let requires = &attrs.requires;
    let completions = attrs
        .completions
        .iter()
        .map(|(n, p)| quote_spanned!(p.span()=> (#n, #p as __ms::CompletionFn)));

    let mut prelude = Vec::new();
    let mut call_args = Vec::new();
    let mut schema = quote!(__ms::no_input_schema);
    let mut vars_schema = quote!(::core::option::Option::None);
    let mut args_check = match kind {
        Kind::Prompt => quote!(__ms::no_args(&args)?;),
        Kind::Resource => quote!(),
    };
    for (i, p) in params.iter().enumerate() {
        match p {
            Param::Ctx { mutable: true } => call_args.push(quote!(ctx)),
            Param::Ctx { mutable: false } => call_args.push(quote!(&*ctx)),
            Param::Uri => call_args.push(quote!(__ms::ResourceUri(uri.to_owned()))),
            Param::State(t) => {
                let v = format_ident!("__state{}", i);
                prelude
                    .push(quote_spanned!(t.span()=> let #v = __ms::extract_state::<#t>(&*ctx)?;));
                call_args.push(quote!(#v));
            }
            Param::Args(t) => {
                match kind {
                    Kind::Prompt => {
                        schema = quote_spanned!(t.span()=> __ms::input_schema::<#t>);
                        args_check = quote_spanned!(t.span()=>
                            let __args = __ms::parse_args::<#t>(args, &__s.expected)?;
                        );
                    }
                    Kind::Resource => {
                        vars_schema = quote_spanned!(t.span()=>
                            ::core::option::Option::Some(__ms::input_schema::<#t> as fn() -> _));
                        args_check = quote_spanned!(t.span()=>
                            let __args = __ms::parse_vars::<#t>(args)?;
                        );
                    }
                }
                call_args.push(quote!(__args));
            }
        }
    }
    let ret_span = match &sig.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => ident.span(),
    };
    let await_ = sig.asyncness.map(|_| quote!(.await));
    let vis = &func.vis;

    let body = match kind {
        Kind::Prompt => {
            let into = quote_spanned!(ret_span=> __ms::into_prompt_result(__ret));
            let doc =
                format!("The `{name}` prompt, generated by `#[prompt]` from [`{fn_name}()`].");
            quote! {
                #[doc = #doc]
                #[allow(non_camel_case_types)]
                #[derive(Debug, Default, Clone, Copy)]
                #vis struct #ident {}

                const _: () = {
                    use #ms as __ms;

                    fn __static() -> &'static __ms::PromptStatic {
                        static CELL: ::std::sync::OnceLock<__ms::PromptStatic> = ::std::sync::OnceLock::new();
                        CELL.get_or_init(|| {
                            __ms::PromptStatic::build(__ms::PromptSpec {
                                name: #name,
                                title: #title,
                                description: #description,
                                requires: &[#(__ms::Requirement::#requires),*],
                                arguments: #schema,
                                completions: &[#(#completions),*],
                            })
                        })
                    }

                    impl __ms::PromptHandler for #ident {
                        fn descriptor(&self) -> &__ms::mcp_types::Prompt {
                            &__static().prompt
                        }

                        fn declaration_error(&self) -> ::core::option::Option<&str> {
                            __static().error.as_deref()
                        }

                        fn required_capabilities(&self) -> &__ms::mcp_types::ClientCapabilities {
                            &__static().capabilities
                        }

                        fn has_completions(&self) -> bool {
                            __static().has_completions()
                        }

                        fn complete(
                            &self,
                            argument: &str,
                            value: &str,
                            context: &__ms::mcp_types::CompletionContext,
                        ) -> ::core::option::Option<::std::vec::Vec<::std::string::String>> {
                            __static().complete(argument, value, context)
                        }

                        #[allow(unused_variables)]
                        fn get<'a>(
                            &'a self,
                            ctx: &'a mut __ms::ToolContext,
                            args: __ms::mcp_types::JsonObject,
                        ) -> __ms::BoxFuture<'a, ::core::result::Result<__ms::mcp_types::GetPromptResult, __ms::ToolError>> {
                            ::std::boxed::Box::pin(async move {
                                let __s = __static();
                                __s.check()?;
                                #args_check
                                #(#prelude)*
                                let __ret = #ident(#(#call_args),*) #await_;
                                #into
                            })
                        }
                    }
                };
            }
        }
        Kind::Resource => {
            let into = quote_spanned!(ret_span=> __ms::into_contents(__ret, uri, __s.descriptor.mime_type()));
            let mime = util::opt_str(&attrs.mime_type);
            let ttl = attrs.ttl_ms.unwrap_or(0);
            let public = attrs.public.unwrap_or(false);
            let doc =
                format!("The `{uri}` resource, generated by `#[resource]` from [`{fn_name}()`].");
            quote! {
                #[doc = #doc]
                #[allow(non_camel_case_types)]
                #[derive(Debug, Default, Clone, Copy)]
                #vis struct #ident {}

                const _: () = {
                    use #ms as __ms;

                    fn __static() -> &'static __ms::ResourceStatic {
                        static CELL: ::std::sync::OnceLock<__ms::ResourceStatic> = ::std::sync::OnceLock::new();
                        CELL.get_or_init(|| {
                            __ms::ResourceStatic::build(__ms::ResourceSpec {
                                uri: #uri,
                                name: #name,
                                title: #title,
                                description: #description,
                                mime_type: #mime,
                                requires: &[#(__ms::Requirement::#requires),*],
                                ttl_ms: #ttl,
                                public: #public,
                                variables: #vars_schema,
                                completions: &[#(#completions),*],
                            })
                        })
                    }

                    impl __ms::ResourceHandler for #ident {
                        fn descriptor(&self) -> &__ms::ResourceDescriptor {
                            &__static().descriptor
                        }

                        fn declaration_error(&self) -> ::core::option::Option<&str> {
                            __static().error.as_deref()
                        }

                        fn required_capabilities(&self) -> &__ms::mcp_types::ClientCapabilities {
                            &__static().capabilities
                        }

                        fn cache_hints(&self) -> (u64, __ms::mcp_types::CacheScope) {
                            __static().hints
                        }

                        fn has_completions(&self) -> bool {
                            __static().has_completions()
                        }

                        fn complete(
                            &self,
                            variable: &str,
                            value: &str,
                            context: &__ms::mcp_types::CompletionContext,
                        ) -> ::core::option::Option<::std::vec::Vec<::std::string::String>> {
                            __static().complete(variable, value, context)
                        }

                        #[allow(unused_variables)]
                        fn read<'a>(
                            &'a self,
                            ctx: &'a mut __ms::ToolContext,
                            uri: &'a str,
                            args: __ms::mcp_types::JsonObject,
                        ) -> __ms::BoxFuture<'a, ::core::result::Result<::std::vec::Vec<__ms::mcp_types::ResourceContents>, __ms::ToolError>> {
                            ::std::boxed::Box::pin(async move {
                                let __s = __static();
                                __s.check()?;
                                #args_check
                                #(#prelude)*
                                let __ret = #ident(#(#call_args),*) #await_;
                                #into
                            })
                        }
                    }
                };
            }
        }
    };
    Ok(body)
}
