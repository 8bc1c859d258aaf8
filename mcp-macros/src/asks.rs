//! The compile-time half of "an undeclared ask fails loudly": a handler's body is scanned for
//! calls of the request context's asking methods, and a call in a mode the attribute does not
//! declare (`requires(..)` or `optional(..)`) is a compile error at the call.
//!
//! The scan is over tokens, so it sees method-call syntax only (`x.elicit(..)`,
//! `x.elicit::<F>(..)`, on any receiver, inside closures, blocks and macro arguments too), never
//! a free function or a path call of the same name. What it cannot see (an ask inside a helper
//! function, or a hand-written handler) the runtime refuses when it happens.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

use crate::util::Errors;

/// A way of asking, with the `requires(..)` entry that declares it.
struct Mode {
    /// The `requires(..)` entry.
    requirement: &'static str,
    /// What an ask in this mode does.
    how: &'static str,
    /// The context's methods that ask in it.
    methods: &'static [&'static str],
}

const MODES: &[Mode] = &[
    Mode {
        requirement: "form_elicitation",
        how: "asks the user through form elicitation",
        methods: &[
            "elicit",
            "try_elicit",
            "elicit_with_commit",
            "elicit_with_mutation",
        ],
    },
    Mode {
        requirement: "url_elicitation",
        how: "sends the user to a URL (URL-mode elicitation)",
        methods: &["elicit_url", "elicit_url_again"],
    },
    Mode {
        requirement: "sampling",
        how: "asks the client's model (sampling)",
        methods: &["sample", "try_sample"],
    },
    Mode {
        requirement: "roots",
        how: "asks the client for its roots",
        methods: &["list_roots", "try_list_roots"],
    },
];

/// One asking call found in a body.
struct Ask {
    method: proc_macro2::Ident,
    mode: &'static Mode,
}

/// Reports every mode `body` asks in that `declared` (the `requires(..)` and `optional(..)`
/// entries, by name) leaves out: one error per mode, at its first call. `attr` is the
/// attribute (`tool`, `prompt`, `resource`) and `handler` the function's name, for the message.
pub(crate) fn check(
    attr: &str,
    handler: &str,
    body: TokenStream,
    declared: &[String],
    errors: &mut Errors,
) {
    let mut asks = Vec::new();
    scan(body, &mut asks);
    let mut reported: Vec<&str> = Vec::new();
    for ask in asks {
        let req = ask.mode.requirement;
        if declared.iter().any(|d| d == req) || reported.contains(&req) {
            continue;
        }
        reported.push(req);
        let method = ask.method.to_string();
        let mut message = format!(
            "`{handler}` calls `{method}`, which {how}; declare it: `#[{attr}(requires({req}))]`, \
             so a client without it is refused before the {attr} runs (or `optional({req})` when \
             the {attr} asks only if `ctx.client_capabilities()` has it)",
            how = ask.mode.how,
        );
        if req == "sampling" {
            // `sample` is a common method name (`rand::Rng::sample`); say how to keep one.
            message.push_str(&format!(
                "; if this is another type's `{method}`, call it by path: `Type::{method}(..)`"
            ));
        }
        errors.push(syn::Error::new(ask.method.span(), message));
    }
}

/// Whether `method` is one of the context's asking methods (all take `&mut self`).
pub(crate) fn is_asking_method(method: &str) -> bool {
    MODES.iter().any(|m| m.methods.contains(&method))
}

/// Collects the asking method calls in `tokens`, in order, looking inside every group.
fn scan(tokens: TokenStream, asks: &mut Vec<Ask>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tree) in tokens.iter().enumerate() {
        match tree {
            TokenTree::Group(g) => scan(g.stream(), asks),
            TokenTree::Punct(p) if p.as_char() == '.' => {
                // The second dot of `..` (a range, `0..sample(n)`) is no method call.
                let range = i > 0
                    && matches!(&tokens[i - 1],
                        TokenTree::Punct(q) if q.as_char() == '.' && q.spacing() == Spacing::Joint);
                if range {
                    continue;
                }
                let Some(TokenTree::Ident(method)) = tokens.get(i + 1) else {
                    continue;
                };
                // A call: `(..)` right after the name, or a turbofish (`::<..>`), which only a
                // method call can have after `.name`.
                let called = match tokens.get(i + 2) {
                    Some(TokenTree::Group(g)) => g.delimiter() == Delimiter::Parenthesis,
                    Some(TokenTree::Punct(p)) => p.as_char() == ':',
                    _ => false,
                };
                if !called {
                    continue;
                }
                let name = method.to_string();
                if let Some(mode) = MODES.iter().find(|m| m.methods.contains(&name.as_str())) {
                    asks.push(Ask {
                        method: method.clone(),
                        mode,
                    });
                }
            }
            _ => {}
        }
    }
}

/// The asking modes an attribute declares, required or optional (entry names of its parsed
/// `Requirement` variants).
pub(crate) fn declared_names(requires: &[TokenStream], optional: &[TokenStream]) -> Vec<String> {
    requires
        .iter()
        .chain(optional)
        .filter_map(|v| match v.to_string().as_str() {
            "FormElicitation" => Some("form_elicitation".to_owned()),
            "UrlElicitation" => Some("url_elicitation".to_owned()),
            "Sampling" => Some("sampling".to_owned()),
            "Roots" => Some("roots".to_owned()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn found(body: TokenStream) -> Vec<String> {
        let mut asks = Vec::new();
        scan(body, &mut asks);
        asks.iter()
            .map(|a| format!("{}:{}", a.method, a.mode.requirement))
            .collect()
    }

    #[test]
    fn finds_method_calls_only() {
        let body = quote! {{
            let a = ctx.elicit::<F>("k", "m", ()).await?;
            let b = async { ctx.try_sample("s", p).await }.await;
            let n = 0..sample(3);
            let f = x.list_roots;
            let r = Helper::list_roots(&mut ctx);
            helper(|c| c.elicit_url("u", "m", url));
            format!("{}", ctx.try_list_roots("r").await?.len());
        }};
        assert_eq!(
            found(body),
            [
                "elicit:form_elicitation",
                "try_sample:sampling",
                "elicit_url:url_elicitation",
                "try_list_roots:roots"
            ]
        );
    }

    #[test]
    fn one_error_per_undeclared_mode() {
        let body = quote! {{
            ctx.elicit::<F>("a", "m", ()).await?;
            ctx.elicit::<F>("b", "m", ()).await?;
            ctx.sample("s", p).await?;
            ctx.list_roots("r").await?;
        }};
        let mut errors = Errors::default();
        check("tool", "t", body, &["roots".to_owned()], &mut errors);
        let e = errors.finish().unwrap_err();
        let messages: Vec<String> = e.into_iter().map(|e| e.to_string()).collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(messages[0].contains("requires(form_elicitation)"));
        assert!(messages[1].contains("requires(sampling)"));
    }
}
