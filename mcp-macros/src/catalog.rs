//! `#[prompt]` and `#[resource]`: an annotated function → a `PromptHandler` /
//! `ResourceHandler` struct of the same name, the way `#[tool]` makes tools.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::params::{self, Param};
use crate::tool::valid_name;
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
    /// `optional(...)`: capabilities used only when the client declares them.
    optional: Vec<TokenStream>,
    /// `scopes = [...]`: OAuth scopes a get/read requires.
    scopes: Vec<syn::LitStr>,
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
            (_, "optional") => {
                crate::util::parse_requires(&meta, &mut out.optional)?;
            }
            (_, "scopes") => crate::util::parse_scopes(&meta, &mut out.scopes)?,
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
                        "name, title, description, requires(...), optional(...), scopes = [...], complete(...) \
                         or crate"
                    }
                    Kind::Resource => {
                        "uri, name, title, description, mime_type, ttl_ms, cache_scope, requires(...), \
                         optional(...), scopes = [...], complete(...) or crate"
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

/// A parsed `#[prompt]`/`#[resource]`: attributes, name, URI and parameters.
struct Decl<'a> {
    kind: Kind,
    attrs: Attrs,
    func: &'a syn::ItemFn,
    fn_name: String,
    name: String,
    uri: String,
    params: Vec<Param>,
}

pub(crate) fn expand(kind: Kind, attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut func: syn::ItemFn = match syn::parse2(item.clone()) {
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
    let (generated, repair) = generate(kind, attr, &func);
    params::strip_attrs(&mut func);
    match generated {
        Ok(t) => quote!(#func #t),
        Err(e) => {
            repair.apply(&mut func);
            let e = e.to_compile_error();
            quote!(#func #e)
        }
    }
}

/// The expansion, and how to emit the function when it failed (see `context_use::Repair`).
fn generate(
    kind: Kind,
    attr: TokenStream,
    func: &syn::ItemFn,
) -> (syn::Result<TokenStream>, crate::context_use::Repair) {
    let mut errors = Errors::default();
    let decl = parse(kind, attr, func, &mut errors);
    let repair = validate(&decl, &mut errors);
    let out = errors.finish().and_then(|()| expand_decl(&decl));
    (out, repair)
}

/// Parse: attributes, name, URI and parameters.
fn parse<'a>(
    kind: Kind,
    attr: TokenStream,
    func: &'a syn::ItemFn,
    errors: &mut Errors,
) -> Decl<'a> {
    let attrs = parse_attrs(kind, attr, errors);
    let fn_name = func.sig.ident.to_string();
    let fn_name = fn_name.strip_prefix("r#").unwrap_or(&fn_name).to_owned();
    let name = attrs
        .name
        .as_ref()
        .map_or_else(|| fn_name.clone(), syn::LitStr::value);
    let uri = attrs
        .uri
        .as_ref()
        .map(syn::LitStr::value)
        .unwrap_or_default();
    let params = params::parse(&func.sig, &format!("#[{}]", kind.attr()), errors);
    Decl {
        kind,
        attrs,
        func,
        fn_name,
        name,
        uri,
        params,
    }
}

/// Validate: signature, name, URI, which parameters this kind takes, and how the body uses
/// the context.
fn validate(decl: &Decl<'_>, errors: &mut Errors) -> crate::context_use::Repair {
    let (kind, what, sig) = (decl.kind, decl.kind.attr(), &decl.func.sig);
    if !sig.generics.params.is_empty() {
        errors.spanned(
            &sig.generics,
            format!("a #[{what}] function cannot be generic"),
        );
    }
    if let Some(c) = &sig.constness {
        errors.spanned(c, format!("a #[{what}] function cannot be `const`"));
    }
    if kind == Kind::Prompt && !valid_name(&decl.name) {
        match &decl.attrs.name {
            Some(n) => errors.spanned(
                n,
                "prompt names must be 1-128 characters of A-Z, a-z, 0-9, `_`, `-` or `.`",
            ),
            None => errors.spanned(
                &sig.ident,
                "this function name is not a valid prompt name; set `name = \"...\"`",
            ),
        }
    }
    match (kind, &decl.attrs.uri) {
        (Kind::Resource, Some(u)) => {
            let v = &decl.uri;
            let balanced = v.matches('{').count() == v.matches('}').count();
            if v.is_empty() || !v.contains(':') || !balanced {
                errors.spanned(
                    u,
                    "`uri` must be an absolute URI such as \"file:///notes/readme\" or a template \
                     such as \"notes://{id}\"",
                );
            }
        }
        (Kind::Resource, None) => errors.spanned(
            &sig.ident,
            "#[resource] needs `uri = \"...\"` (a fixed URI or a URI template with `{var}`)",
        ),
        (Kind::Prompt, _) => {}
    }
    validate_params(decl, errors);
    // As for `#[tool]`: an ask in an undeclared mode is refused at the call.
    if decl
        .params
        .iter()
        .any(|p| matches!(p, Param::Ctx { mutable: true, .. }))
    {
        let declared = crate::asks::declared_names(&decl.attrs.requires, &decl.attrs.optional);
        crate::asks::check(
            what,
            &decl.fn_name,
            quote::ToTokens::to_token_stream(&decl.func.block),
            &declared,
            errors,
        );
    }
    crate::context_use::check(
        what,
        &decl.fn_name,
        decl.func,
        &decl.params,
        crate::util::support_or_default(decl.attrs.krate.as_ref()),
        errors,
    )
}

fn validate_params(decl: &Decl<'_>, errors: &mut Errors) {
    // An undocumented parameter may be an extractor, so two arguments types are found by
    // `build()`; only what the signature alone shows is refused here.
    if decl.kind == Kind::Resource {
        for p in &decl.params {
            if let Param::Arg(a) = p {
                errors.spanned(
                    &a.ident,
                    "a resource's template variables come from one struct with a field per \
                     variable, not from documented parameters",
                );
            }
        }
    }
}

/// How the generated handler gets each parameter.
#[derive(Default)]
struct Plan {
    items: Vec<TokenStream>,
    /// Each extracted parameter's declaration.
    declares: Vec<TokenStream>,
    /// Every extraction (from `__call`).
    prelude: Vec<TokenStream>,
    call_args: Vec<TokenStream>,
}

impl Plan {
    fn extract(&mut self, ty: &dyn quote::ToTokens, span: Span, var: &syn::Ident) {
        let (items, declare, extraction) = params::extractor(&ty, span, var);
        self.items.push(items);
        self.declares.push(declare);
        self.prelude.push(extraction);
    }
}

/// Expand, part 1: parameters → extraction code, made as a tool's are: by `FromRequest`.
/// A prompt's documented parameters are gathered into one hidden struct whose field types
/// are checked to be strings; a resource's variables struct is one extracted parameter.
fn plan(decl: &Decl<'_>, ms: &TokenStream) -> Plan {
    let mut plan = Plan::default();
    let plain = params::plain(&decl.params);
    let args_var = format_ident!("__args");
    if !plain.is_empty() {
        let hidden = params::args_struct_name();
        plan.items
            .push(params::args_struct(ms, &hidden, &plain, None));
        plan.extract(&quote!(__ms::Args<#hidden>), Span::call_site(), &args_var);
        // Prompt arguments travel as strings: checked here, at compile time, per parameter.
        let checks = plain.iter().map(|a| {
            let ty = &a.ty;
            quote_spanned!(ty.span()=> __ms::prompt_argument::<#ty>();)
        });
        plan.items
            .push(quote!(#[allow(dead_code)] fn __prompt_argument_types() { #(#checks)* }));
    }
    let fixed_uri = decl.kind == Kind::Resource && !decl.uri.contains('{');
    for (i, p) in decl.params.iter().enumerate() {
        match p {
            Param::Ctx { mutable, elem, .. } => {
                plan.call_args.push(params::context_arg(*mutable, elem));
            }
            Param::Extract(ty) => {
                let var = format_ident!("__p{}", i);
                plan.extract(ty, ty.span(), &var);
                plan.call_args.push(quote!(#var));
                if fixed_uri {
                    plan.items.push(no_arguments(ty));
                }
            }
            Param::Arg(a) => {
                let ident = &a.ident;
                plan.call_args.push(quote!(#args_var.0.#ident));
            }
        }
    }
    plan
}

/// A compile-time refusal of an arguments type on a fixed-URI resource (which has no
/// variables to fill it), decided by the parameter's `FromRequest` impl, not its spelling.
fn no_arguments(ty: &syn::Type) -> TokenStream {
    quote_spanned!(ty.span()=>
        const _: () = ::core::assert!(
            !<#ty as __ms::FromRequest>::ARGUMENTS,
            "a resource with a fixed URI takes no arguments; use a URI template (`{{var}}`) and a \
             struct with one field per variable",
        );
    )
}

fn expand_decl(decl: &Decl<'_>) -> syn::Result<TokenStream> {
    let krate = util::crate_path(decl.attrs.krate.as_ref())?;
    let ms = util::support(&krate);
    let plan = plan(decl, &ms);
    let (kind, attrs, sig) = (decl.kind, &decl.attrs, &decl.func.sig);
    let (name, uri, fn_name, ident) = (&decl.name, &decl.uri, &decl.fn_name, &sig.ident);
    let title = util::opt_str(&attrs.title);
    let description = util::description(&attrs.description, &decl.func.attrs);
    let requires = &attrs.requires;
    let optional = &attrs.optional;
    let completions = attrs
        .completions
        .iter()
        .map(|(n, p)| quote_spanned!(p.span()=> (#n, #p as __ms::CompletionFn)));
    let Plan {
        items,
        declares,
        prelude,
        call_args,
    } = &plan;
    let schema = quote!(&[#(#declares),*]);
    let args_check = match kind {
        Kind::Prompt => {
            quote!(let mut __call = __ms::RequestParts::new(&*ctx, args, &__s.expected);)
        }
        // Template variables nobody takes are fine (a read may want only the URI), so no
        // `finish()` here, unlike tools and prompts.
        Kind::Resource => {
            quote!(let mut __call = __ms::RequestParts::for_resource(&*ctx, uri, args, &__s.expected);)
        }
    };
    let ret_span = match &sig.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => ident.span(),
    };
    let await_ = sig.asyncness.map(|_| quote!(.await));
    let vis = &decl.func.vis;
    let parts = Parts {
        ms: &ms,
        ident,
        vis,
        name,
        fn_name,
        title,
        description,
        requires,
        optional,
        scopes: &attrs.scopes,
        completions: completions.collect(),
        items,
        prelude,
        call_args,
        args_check,
        ret_span,
        await_,
        unlisted: crate::unlisted::unlisted(
            decl.func,
            match kind {
                Kind::Prompt => "prompts",
                Kind::Resource => "resources",
            },
        ),
    };
    Ok(match kind {
        Kind::Prompt => expand_prompt(&parts, &schema),
        Kind::Resource => expand_resource(&parts, attrs, uri, &schema),
    })
}

/// What the prompt and resource expansions share.
struct Parts<'a> {
    ms: &'a TokenStream,
    ident: &'a syn::Ident,
    vis: &'a syn::Visibility,
    name: &'a str,
    fn_name: &'a str,
    title: TokenStream,
    description: TokenStream,
    requires: &'a [TokenStream],
    optional: &'a [TokenStream],
    scopes: &'a [syn::LitStr],
    completions: Vec<TokenStream>,
    items: &'a [TokenStream],
    prelude: &'a [TokenStream],
    call_args: &'a [TokenStream],
    args_check: TokenStream,
    ret_span: Span,
    await_: Option<TokenStream>,
    /// What says, by name, that no router lists the handler.
    unlisted: crate::unlisted::Unlisted,
}

/// Expand: a prompt's handler struct and `PromptHandler` impl.
fn expand_prompt(p: &Parts<'_>, schema: &TokenStream) -> TokenStream {
    let Parts {
        ms,
        ident,
        vis,
        name,
        fn_name,
        title,
        description,
        requires,
        optional,
        scopes,
        completions,
        items,
        unlisted,
        ..
    } = p;
    let get = prompt_get(p);
    let (unlisted_items, unlisted_call) = (&unlisted.items, &unlisted.call);
    let doc = format!("The `{name}` prompt, generated by `#[prompt]` from [`{fn_name}()`].");
    quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types)]
        #[derive(Debug, Default, Clone, Copy)]
        #vis struct #ident {}

        const _: () = {
            use #ms as __ms;

            #(#items)*

            #unlisted_items

            fn __static() -> &'static __ms::PromptStatic {
                static CELL: ::std::sync::OnceLock<__ms::PromptStatic> = ::std::sync::OnceLock::new();
                CELL.get_or_init(|| {
                    __ms::PromptStatic::build(__ms::PromptSpec {
                        name: #name,
                        title: #title,
                        description: #description,
                        requires: &[#(__ms::Requirement::#requires),*],
                        optional: &[#(__ms::Requirement::#optional),*],
                        params: #schema,
                        completions: &[#(#completions),*],
                    })
                })
            }

            impl __ms::PromptHandler for #ident {
                fn descriptor(&self) -> &__ms::mcp_types::Prompt {
                    #unlisted_call
                    &__static().prompt
                }

                fn declaration_error(&self) -> ::core::option::Option<&str> {
                    __static().error.as_deref()
                }

                fn required_capabilities(&self) -> &__ms::mcp_types::ClientCapabilities {
                    &__static().capabilities
                }

                fn optional_capabilities(&self) -> ::core::option::Option<&__ms::mcp_types::ClientCapabilities> {
                    __static().optional.as_ref()
                }

                fn required_scopes(&self) -> &[&'static str] {
                    &[#(#scopes),*]
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

                #get
            }
        };
    }
}

/// `PromptHandler::get`: the parameters extracted from the request, then the function.
fn prompt_get(p: &Parts<'_>) -> TokenStream {
    let Parts {
        ident,
        prelude,
        call_args,
        args_check,
        ret_span,
        await_,
        ..
    } = p;
    let into = quote_spanned!(*ret_span=> __ms::into_prompt_result(__ret));
    quote! {
        #[allow(unused_variables)]
        fn get<'a>(
            &'a self,
            ctx: &'a mut __ms::RequestContext,
            args: __ms::mcp_types::JsonObject,
        ) -> __ms::BoxFuture<'a, ::core::result::Result<__ms::mcp_types::GetPromptResult, __ms::HandlerError>> {
            ::std::boxed::Box::pin(async move {
                let __s = __static();
                __s.check()?;
                #args_check
                #(#prelude)*
                __call.finish()?;
                let __ret = #ident(#(#call_args),*) #await_;
                #into
            })
        }
    }
}

/// Expand: a resource's handler struct and `ResourceHandler` impl.
fn expand_resource(p: &Parts<'_>, attrs: &Attrs, uri: &str, params: &TokenStream) -> TokenStream {
    let Parts {
        ms,
        ident,
        vis,
        fn_name,
        items,
        prelude,
        call_args,
        args_check,
        ret_span,
        await_,
        scopes,
        ..
    } = p;
    let ret_span = *ret_span;
    let into =
        quote_spanned!(ret_span=> __ms::into_contents(__ret, uri, __s.descriptor.mime_type()));
    let spec = resource_spec(p, attrs, uri, params);
    let (unlisted_items, unlisted_call) = (&p.unlisted.items, &p.unlisted.call);
    let doc = format!("The `{uri}` resource, generated by `#[resource]` from [`{fn_name}()`].");
    quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types)]
        #[derive(Debug, Default, Clone, Copy)]
        #vis struct #ident {}

        const _: () = {
            use #ms as __ms;

            #(#items)*

            #unlisted_items

            fn __static() -> &'static __ms::ResourceStatic {
                static CELL: ::std::sync::OnceLock<__ms::ResourceStatic> = ::std::sync::OnceLock::new();
                CELL.get_or_init(|| __ms::ResourceStatic::build(#spec))
            }

            impl __ms::ResourceHandler for #ident {
                fn descriptor(&self) -> &__ms::ResourceDescriptor {
                    #unlisted_call
                    &__static().descriptor
                }

                fn declaration_error(&self) -> ::core::option::Option<&str> {
                    __static().error.as_deref()
                }

                fn required_capabilities(&self) -> &__ms::mcp_types::ClientCapabilities {
                    &__static().capabilities
                }

                fn optional_capabilities(&self) -> ::core::option::Option<&__ms::mcp_types::ClientCapabilities> {
                    __static().optional.as_ref()
                }

                fn cache_hints(&self) -> (u64, __ms::mcp_types::CacheScope) {
                    __static().hints
                }

                fn required_scopes(&self) -> &[&'static str] {
                    &[#(#scopes),*]
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
                    ctx: &'a mut __ms::RequestContext,
                    uri: &'a str,
                    args: __ms::mcp_types::JsonObject,
                ) -> __ms::BoxFuture<'a, ::core::result::Result<::std::vec::Vec<__ms::mcp_types::ResourceContents>, __ms::HandlerError>> {
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

/// A resource's `ResourceSpec` expression.
fn resource_spec(p: &Parts<'_>, attrs: &Attrs, uri: &str, params: &TokenStream) -> TokenStream {
    let Parts {
        name,
        title,
        description,
        requires,
        optional,
        completions,
        ..
    } = p;
    let mime = util::opt_str(&attrs.mime_type);
    let ttl = attrs.ttl_ms.unwrap_or(0);
    let public = attrs.public.unwrap_or(false);
    quote! {
        __ms::ResourceSpec {
            uri: #uri,
            name: #name,
            title: #title,
            description: #description,
            mime_type: #mime,
            requires: &[#(__ms::Requirement::#requires),*],
            optional: &[#(__ms::Requirement::#optional),*],
            ttl_ms: #ttl,
            public: #public,
            params: #params,
            completions: &[#(#completions),*],
        }
    }
}
