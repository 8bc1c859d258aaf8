//! How a handler's body uses the request context, checked against how the signature declares
//! it: `ctx` used with no context parameter (rustc would only say "cannot find value `ctx`"),
//! and a shared `&RequestContext` that the body asks through (rustc's E0596, whose suggestion
//! an `async fn` garbles into `ctx: &mut RequestContext: &RequestContext`).
//!
//! The body is read with a `syn` visitor. A mistake is reported only when the reading is sure:
//! the name must be bound by no pattern anywhere in the signature or the body (a `let`, a
//! closure's parameter, a `match` arm...) nor named by a nested item, and the body must hold no
//! macro that could bind it (a statement-position macro other than the standard formatting,
//! assertion and logging ones, or any other macro that mentions the name). Only a receiver
//! (`ctx.method(..)`) or a field base (`ctx.field`) counts as a use. When in doubt nothing is
//! reported, and rustc's own error stands.
//!
//! When a mistake is reported, the function is emitted repaired around it ([`Repair`]), so
//! that the macro's message is the only error and any other error in the body is still found.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};

use crate::params::Param;
use crate::util::Errors;

/// The conventional name of the request-context parameter.
const CTX: &str = "ctx";

/// Macros whose arguments are expressions (or a format string and expressions) and that never
/// bind a name the rest of the body sees. Matched by the last segment of their path.
const EXPRESSION_MACROS: &[&str] = &[
    "format",
    "format_args",
    "print",
    "println",
    "eprint",
    "eprintln",
    "write",
    "writeln",
    "panic",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "todo",
    "unimplemented",
    "unreachable",
    "dbg",
    "vec",
    "trace",
    "debug",
    "info",
    "warn",
    "error",
];

/// The context's methods that take `&mut self`, with why they need it.
fn needs_mut(method: &str) -> Option<&'static str> {
    if method == "correlation_id" {
        return Some(
            "`correlation_id` records the id it mints in the context, to seal it into the next \
             `requestState`",
        );
    }
    crate::asks::is_asking_method(method).then_some(
        "asking records the question in the context, which sends it with this round and binds \
         the answer to what was shown",
    )
}

/// How to emit the function when [`check`] reported a mistake, so that rustc adds no second
/// error for it.
#[derive(Default)]
pub(crate) struct Repair {
    /// Declares `ctx` (this ident) as a detached context at the top of the body.
    declare_ctx: Option<syn::Ident>,
    /// The generated code's path to the runtime's macro support.
    support: TokenStream,
    /// `&RequestContext` parameters (by name) to emit as `&mut RequestContext`.
    make_mut: Vec<syn::Ident>,
}

impl Repair {
    /// Applies the repair to the function as it is emitted (only when the expansion failed).
    pub(crate) fn apply(&self, func: &mut syn::ItemFn) {
        for input in &mut func.sig.inputs {
            if let syn::FnArg::Typed(pt) = input
                && let (syn::Pat::Ident(pi), syn::Type::Reference(r)) = (&*pt.pat, &mut *pt.ty)
                && r.mutability.is_none()
                && self.make_mut.contains(&pi.ident)
            {
                r.mutability = Some(syn::Token![mut](r.and_token.span));
            }
        }
        if let Some(ctx) = &self.declare_ctx {
            let ms = &self.support;
            let stmt: syn::Stmt = syn::parse_quote_spanned!(ctx.span()=>
                let #ctx: &mut #ms::RequestContext =
                    &mut <#ms::RequestContext as ::core::default::Default>::default();
            );
            func.block.stmts.insert(0, stmt);
        }
    }
}

/// Checks the body of handler `handler` (`#[attr]`) against its context parameters; `support`
/// is the generated code's path to the runtime's macro support (for the repair).
pub(crate) fn check(
    attr: &str,
    handler: &str,
    func: &syn::ItemFn,
    params: &[Param],
    support: TokenStream,
    errors: &mut Errors,
) -> Repair {
    let mut repair = Repair {
        support,
        ..Repair::default()
    };
    let contexts: Vec<_> = params
        .iter()
        .filter_map(|p| match p {
            Param::Ctx {
                mutable,
                elem,
                ty,
                name,
            } => Some((*mutable, elem, &**ty, name.as_ref())),
            _ => None,
        })
        .collect();

    undeclared_ctx(attr, handler, func, &contexts, &mut repair, errors);
    shared_ctx_asks(func, &contexts, &mut repair, errors);
    repair
}

/// A context parameter: `&mut`?, the referenced type, the reference type, the name.
type CtxParam<'a> = (bool, &'a syn::Type, &'a syn::Type, Option<&'a syn::Ident>);

/// `ctx` used in the body, but not declared: an error at the first use naming the parameter
/// to add (or the context parameter's other name).
fn undeclared_ctx(
    attr: &str,
    handler: &str,
    func: &syn::ItemFn,
    contexts: &[CtxParam<'_>],
    repair: &mut Repair,
    errors: &mut Errors,
) {
    let declared_ctx = contexts
        .iter()
        .any(|(_, _, _, name)| name.is_some_and(|n| n == CTX));
    if !declared_ctx && contexts.len() <= 1 {
        let mut scan = Scan::new(CTX);
        for input in &func.sig.inputs {
            if let syn::FnArg::Typed(pt) = input {
                scan.visit_pat(&pt.pat);
            }
        }
        scan.visit_block(&func.block);
        if let Some(first) = scan.first_use() {
            let message = match contexts.first() {
                None => {
                    let asks = scan.uses.iter().any(|u| {
                        u.method
                            .as_ref()
                            .is_some_and(|m| needs_mut(&m.to_string()).is_some())
                    });
                    let shared = if asks {
                        ""
                    } else {
                        " (`&RequestContext` is enough when it only reads from the context)"
                    };
                    format!(
                        "`ctx` is not declared: the request context is a parameter, which \
                     `#[{attr}]` fills in on every call. Add `ctx: &mut RequestContext` to the \
                     parameters of `{handler}`{shared}"
                    )
                }
                Some((_, _, _, Some(name))) => {
                    let what = match &first.method {
                        Some(m) => format!("`{name}.{m}(..)`"),
                        None => format!("`{name}`"),
                    };
                    format!(
                        "`ctx` is not declared: the request context of `{handler}` is its \
                     parameter `{name}`; write {what}, or rename the parameter `ctx`"
                    )
                }
                // A context parameter that is a pattern: nothing sure to say.
                Some((_, _, _, None)) => String::new(),
            };
            if !message.is_empty() {
                errors.push(syn::Error::new(first.span, message));
                repair.declare_ctx = Some(syn::Ident::new(CTX, first.span));
            }
        }
    }
}

/// A shared context (`&RequestContext`) that the body asks through: an error at its type
/// saying to take `&mut`.
fn shared_ctx_asks(
    func: &syn::ItemFn,
    contexts: &[CtxParam<'_>],
    repair: &mut Repair,
    errors: &mut Errors,
) {
    for (mutable, elem, ty, name) in contexts {
        let (false, Some(name)) = (mutable, name) else {
            continue;
        };
        let Some(elem_name) = context_type_name(elem) else {
            continue;
        };
        let name_str = name.to_string();
        let mut scan = Scan::new(&name_str);
        scan.visit_block(&func.block);
        if scan.unsure() {
            continue;
        }
        let found = scan.uses.iter().find_map(|u| {
            let m = u.method.as_ref()?;
            needs_mut(&m.to_string()).map(|why| (m, why))
        });
        if let Some((method, why)) = found {
            errors.spanned(
                ty,
                format!(
                    "the request context must be `&mut {elem_name}` for `{name}.{method}(..)`: \
                 {why}. Write `{name}: &mut {elem_name}`"
                ),
            );
            repair.make_mut.push((*name).clone());
        }
    }
}

/// The name of the referenced type when it is the runtime's context (`RequestContext`), by the last segment of its path: an alias of one's own is not
/// recognised (rustc's error stands).
fn context_type_name(elem: &syn::Type) -> Option<String> {
    let syn::Type::Path(p) = elem else {
        return None;
    };
    let last = p.path.segments.last()?;
    (last.arguments.is_none() && last.ident == "RequestContext").then(|| last.ident.to_string())
}

/// One use of the name: a method call's receiver or a field access's base.
struct Use {
    span: Span,
    /// The method called on it (`None` for a field access).
    method: Option<syn::Ident>,
}

/// What a body does with one name.
struct Scan<'n> {
    name: &'n str,
    /// A pattern binds it, or a nested item names it.
    bound: bool,
    /// A macro that could bind it, or that the scan cannot read through.
    opaque: bool,
    /// Its uses, in order.
    uses: Vec<Use>,
}

impl<'n> Scan<'n> {
    fn new(name: &'n str) -> Self {
        Scan {
            name,
            bound: false,
            opaque: false,
            uses: Vec::new(),
        }
    }

    /// Whether the name might be something else than what the signature declares.
    fn unsure(&self) -> bool {
        self.bound || self.opaque
    }

    /// The first use of a name nothing binds.
    fn first_use(&self) -> Option<&Use> {
        if self.unsure() {
            None
        } else {
            self.uses.first()
        }
    }

    /// Whether `expr` is the bare name.
    fn is_name(&self, expr: &syn::Expr) -> Option<Span> {
        let syn::Expr::Path(p) = expr else {
            return None;
        };
        let ident = p.path.get_ident()?;
        (p.qself.is_none() && ident == self.name).then(|| ident.span())
    }

    fn mentions(&self, tokens: TokenStream) -> bool {
        tokens.into_iter().any(|t| match t {
            TokenTree::Ident(i) => i == self.name,
            TokenTree::Group(g) => self.mentions(g.stream()),
            _ => false,
        })
    }
}

fn expression_macro(mac: &syn::Macro) -> bool {
    mac.path
        .segments
        .last()
        .is_some_and(|s| EXPRESSION_MACROS.iter().any(|m| s.ident == m))
}

impl<'ast> Visit<'ast> for Scan<'_> {
    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        if p.ident == self.name {
            self.bound = true;
        }
        visit::visit_pat_ident(self, p);
    }

    /// A nested item is a scope of its own: not read, unless it names the name.
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if self.mentions(item.to_token_stream()) {
            self.bound = true;
        }
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        if let Some(span) = self.is_name(&call.receiver) {
            self.uses.push(Use {
                span,
                method: Some(call.method.clone()),
            });
        }
        visit::visit_expr_method_call(self, call);
    }

    fn visit_expr_field(&mut self, field: &'ast syn::ExprField) {
        if let Some(span) = self.is_name(&field.base) {
            self.uses.push(Use { span, method: None });
        }
        visit::visit_expr_field(self, field);
    }

    /// A statement-position macro could declare a local (a procedural one, with call-site
    /// hygiene): only the standard ones are read through.
    fn visit_stmt_macro(&mut self, stmt: &'ast syn::StmtMacro) {
        if !expression_macro(&stmt.mac) {
            self.opaque = true;
            return;
        }
        visit::visit_stmt_macro(self, stmt);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        if !self.mentions(mac.tokens.clone()) {
            return;
        }
        if expression_macro(mac)
            && let Ok(args) =
                mac.parse_body_with(Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)
        {
            for arg in &args {
                <Self as Visit<'_>>::visit_expr(self, arg);
            }
            return;
        }
        self.opaque = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn scan(name: &str, body: TokenStream) -> (bool, Vec<String>) {
        let block: syn::Block = syn::parse2(body).unwrap();
        let mut s = Scan::new(name);
        s.visit_block(&block);
        let uses = s
            .uses
            .iter()
            .map(|u| {
                u.method
                    .as_ref()
                    .map_or("<field>".into(), ToString::to_string)
            })
            .collect();
        (s.unsure(), uses)
    }

    #[test]
    fn uses_are_receivers_and_field_bases() {
        let (unsure, uses) = scan(
            "ctx",
            quote! {{
                let a = ctx.elicit::<F>("k", "m", ()).await?;
                let b = ctx.round;
                helper(ctx);
                println!("{}", ctx.principal());
                let c = async { ctx.sample("s", p).await };
            }},
        );
        assert!(!unsure);
        assert_eq!(uses, ["elicit", "<field>", "principal", "sample"]);
    }

    #[test]
    fn any_binding_or_unreadable_macro_makes_it_unsure() {
        for body in [
            quote! {{ let ctx = 1; ctx.to_string() }},
            quote! {{ let f = |ctx: &str| ctx.len(); }},
            quote! {{ if let Some(ctx) = x { ctx.go() } }},
            quote! {{ match x { S { ctx, .. } => ctx.go() } }},
            quote! {{ for ctx in xs { ctx.go(); } }},
            quote! {{ fn ctx() {} ctx.go() }},
            quote! {{ use a::b as ctx; ctx.go() }},
            quote! {{ my_setup!(); ctx.go() }},
            quote! {{ let a = bind!(ctx => 1); ctx.go() }},
            quote! {{ let a = matches!(x, Some(ctx) if ctx.ok()); }},
        ] {
            assert!(scan("ctx", body.clone()).0, "{body}");
        }
        // Standard statement macros that do not mention it are read through.
        assert!(
            !scan(
                "ctx",
                quote! {{ println!("hi"); tracing::info!("x"); ctx.go() }}
            )
            .0
        );
    }
}
