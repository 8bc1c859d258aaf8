//! `#[tool]`: an annotated function → a `ToolHandler` struct of the same name.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::params::{self, Param};
use crate::shape::generic_arg;
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
    /// `optional(...)`: capabilities the tool uses only when the client declares them.
    optional: Vec<TokenStream>,
    /// `scopes = [...]`: OAuth scopes `tools/call` of this tool requires.
    scopes: Vec<syn::LitStr>,
    krate: Option<syn::LitStr>,
    /// serde's `rename_all` for documented parameters.
    rename_all: Option<syn::LitStr>,
    /// `task` / `task = "optional" | "required"`: the `TaskSupport` variant.
    task: Option<syn::Ident>,
    /// `task_start = "on_call" | "after_input"`: the `TaskStart` variant (with its literal,
    /// for the error when `task` is missing).
    task_start: Option<(syn::Ident, syn::LitStr)>,
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
            "rename_all" => out.rename_all = Some(meta.value()?.parse()?),
            "requires" => {
                crate::util::parse_requires(&meta, &mut out.requires)?;
            }
            "optional" => {
                crate::util::parse_requires(&meta, &mut out.optional)?;
            }
            "task" => out.task = Some(task_support(&meta)?),
            "task_start" => out.task_start = Some(task_start(&meta)?),
            "scopes" => crate::util::parse_scopes(&meta, &mut out.scopes)?,
            _ => {
                return Err(meta.error(
                    "unknown `tool` attribute; expected name, title, description, read_only, destructive, \
                     idempotent, open_world, requires(...), optional(...), scopes = [...], task, task_start, \
                     rename_all or crate",
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

/// `task` (optional) or `task = "optional" | "required"`: the `TaskSupport` variant.
fn task_support(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<syn::Ident> {
    if !meta.input.peek(syn::Token![=]) {
        return Ok(syn::Ident::new("Optional", meta.path.span()));
    }
    let lit: syn::LitStr = meta.value()?.parse()?;
    let variant = match lit.value().as_str() {
        "optional" => "Optional",
        "required" => "Required",
        _ => {
            return Err(syn::Error::new(
                lit.span(),
                "`task` is \"optional\" (a task when the client declares the tasks extension) \
                 or \"required\" (only as a task); a bare `task` means \"optional\"",
            ));
        }
    };
    Ok(syn::Ident::new(variant, lit.span()))
}

/// `task_start = "on_call" | "after_input"`: the `TaskStart` variant.
fn task_start(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<(syn::Ident, syn::LitStr)> {
    let lit: syn::LitStr = meta.value()?.parse()?;
    let variant = match lit.value().as_str() {
        "on_call" => "OnCall",
        "after_input" => "AfterInput",
        _ => {
            return Err(syn::Error::new(
                lit.span(),
                "`task_start` is \"on_call\" (a task at once, the default) or \"after_input\" \
                 (input rounds first, then a task)",
            ));
        }
    };
    Ok((syn::Ident::new(variant, lit.span()), lit))
}

pub(crate) fn valid_name(n: &str) -> bool {
    (1..=128).contains(&n.len())
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
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

/// A parsed `#[tool]`: attributes, the tool's name and the function's parameters.
struct ToolDecl<'a> {
    attrs: ToolAttrs,
    func: &'a syn::ItemFn,
    name: String,
    params: Vec<Param>,
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut func: syn::ItemFn = match syn::parse2(item.clone()) {
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
    let (generated, repair) = generate(attr, &func);
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
    attr: TokenStream,
    func: &syn::ItemFn,
) -> (syn::Result<TokenStream>, crate::context_use::Repair) {
    let mut errors = Errors::default();
    let decl = parse(attr, func, &mut errors);
    let repair = validate(&decl, &mut errors);
    let out = errors.finish().and_then(|()| expand_decl(&decl));
    (out, repair)
}

/// Parse: attributes, name and parameters (errors collected, not returned early).
fn parse<'a>(attr: TokenStream, func: &'a syn::ItemFn, errors: &mut Errors) -> ToolDecl<'a> {
    let attrs = parse_attrs(attr, errors);
    let ident = &func.sig.ident;
    let fn_name = ident.to_string();
    let name = match &attrs.name {
        Some(n) => n.value(),
        None => fn_name.strip_prefix("r#").unwrap_or(&fn_name).to_owned(),
    };
    let params = params::parse(&func.sig, "#[tool]", errors);
    ToolDecl {
        attrs,
        func,
        name,
        params,
    }
}

/// Validate: what the signature and attributes may not be, and how the body uses the context.
fn validate(decl: &ToolDecl<'_>, errors: &mut Errors) -> crate::context_use::Repair {
    let sig = &decl.func.sig;
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
    if !valid_name(&decl.name) {
        match &decl.attrs.name {
            Some(n) => errors.spanned(
                n,
                "tool names must be 1-128 characters of A-Z, a-z, 0-9, `_`, `-` or `.`",
            ),
            None => errors.spanned(
                &sig.ident,
                "this function name is not a valid tool name; set `name = \"...\"`",
            ),
        }
    }
    let mut ctx_seen = false;
    for p in &decl.params {
        if let Param::Ctx { .. } = p {
            if ctx_seen {
                errors.spanned(&sig.ident, "only one `RequestContext` parameter is allowed");
            }
            ctx_seen = true;
        }
    }
    if let (Some((_, lit)), None) = (&decl.attrs.task_start, &decl.attrs.task) {
        errors.spanned(
            lit,
            "`task_start` applies to task tools: add `task` (or `task = \"required\"`)",
        );
    }
    // Only a `&mut` context can ask; a body that asks in a mode it does not declare is refused
    // here, at the call, rather than after its side effects at run time.
    if decl
        .params
        .iter()
        .any(|p| matches!(p, Param::Ctx { mutable: true, .. }))
    {
        let declared = crate::asks::declared_names(&decl.attrs.requires, &decl.attrs.optional);
        let handler = sig.ident.to_string();
        crate::asks::check(
            "tool",
            handler.strip_prefix("r#").unwrap_or(&handler),
            decl.func.block.to_token_stream(),
            &declared,
            errors,
        );
    }
    // Not `params::validate_args`: an undocumented parameter may be an extractor, so two
    // arguments types (or a struct next to documented parameters) are found by `build()`.
    if let Some(r) = &decl.attrs.rename_all
        && params::plain(&decl.params).is_empty()
    {
        errors.spanned(
            r,
            "`rename_all` renames documented parameters; on an arguments struct use \
             `#[serde(rename_all = \"...\")]`",
        );
    }
    let handler = sig.ident.to_string();
    crate::context_use::check(
        "tool",
        handler.strip_prefix("r#").unwrap_or(&handler),
        decl.func,
        &decl.params,
        util::support_or_default(decl.attrs.krate.as_ref()),
        errors,
    )
}

/// How the generated `call` gets each parameter, and what the descriptor needs to know.
#[derive(Default)]
struct Plan {
    items: Vec<TokenStream>,
    /// `__declare_N` per extracted parameter.
    declares: Vec<TokenStream>,
    extractions: Vec<TokenStream>,
    call_args: Vec<TokenStream>,
    /// The variable each extraction binds, in order.
    vars: Vec<syn::Ident>,
}

impl Plan {
    fn extract(&mut self, ty: &impl ToTokens, span: Span, var: &syn::Ident) {
        let (items, declare, extraction) = params::extractor(ty, span, var);
        self.items.push(items);
        self.declares.push(declare);
        self.extractions.push(extraction);
        self.vars.push(var.clone());
    }
}

/// Expand, part 1: parameters → extraction code. Which parameter is what is decided by
/// `FromRequest` (`State<T>`, `Principal`, an arguments struct, a user's extractor), not
/// by the type's spelling; documented parameters are gathered into one hidden struct.
fn plan(decl: &ToolDecl<'_>, ms: &TokenStream) -> Plan {
    let mut plan = Plan::default();
    let plain = params::plain(&decl.params);
    let hidden = params::args_struct_name();
    let args_var = format_ident!("__args");
    for (i, p) in decl.params.iter().enumerate() {
        match p {
            Param::Ctx { mutable, elem, .. } => {
                plan.call_args.push(params::context_arg(*mutable, elem));
            }
            Param::Extract(ty) => {
                let var = format_ident!("__p{}", i);
                plan.extract(ty, ty.span(), &var);
                plan.call_args.push(quote!(#var));
            }
            Param::Arg(a) => {
                if std::ptr::eq(*plain.first().unwrap_or(&a), a) {
                    plan.items.push(params::args_struct(
                        ms,
                        &hidden,
                        &plain,
                        decl.attrs.rename_all.as_ref(),
                    ));
                    plan.extract(&quote!(__ms::Args<#hidden>), Span::call_site(), &args_var);
                }
                let ident = &a.ident;
                plan.call_args.push(quote!(#args_var.0.#ident));
            }
        }
    }
    plan
}

/// Expand, part 2: the `outputSchema` of a `Json<T>` (optionally inside `Result`) return.
fn output_schema(sig: &syn::Signature) -> TokenStream {
    if let syn::ReturnType::Type(_, ty) = &sig.output {
        let inner = result_ok_type(ty).unwrap_or(ty);
        if let Some(t) = generic_arg(inner, "Json") {
            return quote_spanned!(t.span()=>
                ::core::option::Option::Some(__ms::output_schema::<#t> as fn() -> _));
        }
    }
    quote!(::core::option::Option::None)
}

/// Expand, part 3: the descriptor expression (`ToolSpec`).
fn spec(decl: &ToolDecl<'_>, plan: &Plan) -> TokenStream {
    let attrs = &decl.attrs;
    let name = &decl.name;
    let title = util::opt_str(&attrs.title);
    let description = util::description(&attrs.description, &decl.func.attrs);
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
    let optional = &attrs.optional;
    let output_schema = output_schema(&decl.func.sig);
    let declares = &plan.declares;
    let task_support = match &attrs.task {
        Some(v) => quote!(__ms::TaskSupport::#v),
        None => quote!(__ms::TaskSupport::Forbidden),
    };
    let task_start = match &attrs.task_start {
        Some((v, _)) => quote!(__ms::TaskStart::#v),
        None => quote!(__ms::TaskStart::OnCall),
    };
    quote! {
        __ms::ToolSpec {
            name: #name,
            title: #title,
            description: #description,
            read_only: #ro,
            destructive: #de,
            idempotent: #id,
            open_world: #ow,
            requires: &[#(__ms::Requirement::#requires),*],
            optional: &[#(__ms::Requirement::#optional),*],
            params: &[#(#declares),*],
            output_schema: #output_schema,
            task_support: #task_support,
            task_start: #task_start,
        }
    }
}

/// Expand: the handler struct and its `ToolHandler` impl.
fn expand_decl(decl: &ToolDecl<'_>) -> syn::Result<TokenStream> {
    let krate = util::crate_path(decl.attrs.krate.as_ref())?;
    let ms = util::support(&krate);
    let plan = plan(decl, &ms);
    let spec = spec(decl, &plan);
    let ident = &decl.func.sig.ident;
    let crate::unlisted::Unlisted {
        items: unlisted_items,
        call: unlisted_call,
    } = crate::unlisted::unlisted(decl.func, "tools");
    let vis = &decl.func.vis;
    let doc = format!(
        "The `{}` tool, generated by `#[tool]` from [`{ident}()`].",
        decl.name
    );
    let items = &plan.items;
    let descriptor_methods = descriptor_methods(decl, &unlisted_call);
    let call = call_method(decl, &plan);

    Ok(quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types)]
        #[derive(Debug, Default, Clone, Copy)]
        #vis struct #ident {}

        const _: () = {
            use #ms as __ms;

            #(#items)*

            #unlisted_items

            fn __tool_static() -> &'static __ms::ToolStatic {
                static CELL: ::std::sync::OnceLock<__ms::ToolStatic> = ::std::sync::OnceLock::new();
                CELL.get_or_init(|| __ms::ToolStatic::build(#spec))
            }

            impl __ms::ToolHandler for #ident {
                #descriptor_methods

                #call
            }
        };
    })
}

/// Expand, part 4: the `ToolHandler` methods that read the cached descriptor and the
/// declaration (everything but `call`).
fn descriptor_methods(decl: &ToolDecl<'_>, unlisted_call: &TokenStream) -> TokenStream {
    let scopes = &decl.attrs.scopes;
    // Only `&mut RequestContext` can register an input request; see `may_request_input`.
    let may_ask = decl
        .params
        .iter()
        .any(|p| matches!(p, Param::Ctx { mutable: true, .. }));
    quote! {
        fn descriptor(&self) -> &__ms::mcp_types::Tool {
            #unlisted_call
            &__tool_static().tool
        }

        fn required_capabilities(&self) -> &__ms::mcp_types::ClientCapabilities {
            &__tool_static().capabilities
        }

        fn optional_capabilities(&self) -> ::core::option::Option<&__ms::mcp_types::ClientCapabilities> {
            __tool_static().optional.as_ref()
        }

        fn declaration_error(&self) -> ::core::option::Option<&str> {
            __tool_static().error.as_deref()
        }

        fn state_needs(&self) -> &[__ms::StateNeed] {
            &__tool_static().state
        }

        fn task_support(&self) -> __ms::TaskSupport {
            __tool_static().task_support
        }

        fn task_start(&self) -> __ms::TaskStart {
            __tool_static().task_start
        }

        fn required_scopes(&self) -> &[&'static str] {
            &[#(#scopes),*]
        }

        fn may_request_input(&self) -> bool {
            #may_ask
        }
    }
}

/// Expand, part 5: `ToolHandler::call`: the parameters extracted from the request, then the
/// function's future.
fn call_method(decl: &ToolDecl<'_>, plan: &Plan) -> TokenStream {
    let Plan {
        extractions, vars, ..
    } = plan;
    let body = call_future(&decl.func.sig, &plan.call_args);
    quote! {
        fn call<'a>(
            &'a self,
            ctx: &'a mut __ms::RequestContext,
            args: __ms::mcp_types::JsonObject,
        ) -> __ms::BoxFuture<'a, ::core::result::Result<__ms::mcp_types::CallToolResult, __ms::HandlerError>> {
            let __s = __tool_static();
            let __extracted = (|| {
                __s.check()?;
                let mut __call = __ms::RequestParts::new(&*ctx, args, &__s.expected);
                #(#extractions)*
                __call.finish()?;
                ::core::result::Result::Ok::<_, __ms::HandlerError>((#(#vars,)*))
            })();
            let (#(#vars,)*) = match __extracted {
                ::core::result::Result::Ok(__vars) => __vars,
                ::core::result::Result::Err(__e) => {
                    return ::std::boxed::Box::pin(::core::future::ready(
                        ::core::result::Result::Err(__e),
                    ));
                }
            };
            #body
        }
    }
}

/// The boxed future of one call, from the extracted parameters.
fn call_future(sig: &syn::Signature, call_args: &[TokenStream]) -> TokenStream {
    let ident = &sig.ident;
    let ret_span = match &sig.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => ident.span(),
    };
    let into_result = quote_spanned!(ret_span=> __ms::into_result(__ret));
    // The parameters are extracted before the future is made, and an async function's own
    // future is made then too and mapped, not awaited in an `async` block (which would hold
    // it twice): the boxed future holds that future alone, not also the arguments tree, the
    // extraction state and a second copy of every parameter. It is allocated once per call,
    // and past 1 KiB the system allocator leaves its fast path. (The runtime catches a panic
    // in this synchronous part as it does in the future.)
    if sig.asyncness.is_some() {
        quote! {
            ::std::boxed::Box::pin(__ms::map_future(#ident(#(#call_args),*), |__ret| #into_result))
        }
    } else {
        quote! {
            ::std::boxed::Box::pin(async move {
                let __ret = #ident(#(#call_args),*);
                #into_result
            })
        }
    }
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
