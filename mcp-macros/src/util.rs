//! Helpers shared by the macros: error accumulation, doc comments, renaming, crate paths.

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;

/// Collects errors so every problem is reported in one compile run.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    pub(crate) fn spanned(&mut self, at: impl quote::ToTokens, msg: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(at, msg));
    }

    pub(crate) fn finish(self) -> syn::Result<()> {
        match self.0 {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Parses `requires(form_elicitation, url_elicitation, sampling, roots)` into the
/// `Requirement` variant names, in order (shared by `#[tool]`, `#[prompt]` and `#[resource]`).
pub(crate) fn parse_requires(
    meta: &syn::meta::ParseNestedMeta<'_>,
    requires: &mut Vec<TokenStream>,
) -> syn::Result<()> {
    meta.parse_nested_meta(|cap| {
        let v = match cap.path.get_ident().map(ToString::to_string).as_deref() {
            Some("form_elicitation") => quote!(FormElicitation),
            Some("url_elicitation") => quote!(UrlElicitation),
            Some("sampling") => quote!(Sampling),
            Some("roots") => quote!(Roots),
            _ => {
                return Err(cap.error(
                    "unknown capability; expected form_elicitation, url_elicitation, sampling or roots",
                ));
            }
        };
        requires.push(v);
        Ok(())
    })
}

/// Parses `scopes = ["notes:write", ...]` into the OAuth scopes, each checked to be an
/// RFC 6749 `scope-token` (printable ASCII without space, `"` or `\\`) so that a typo fails
/// the build rather than every request (shared by `#[tool]`, `#[prompt]` and `#[resource]`).
pub(crate) fn parse_scopes(
    meta: &syn::meta::ParseNestedMeta<'_>,
    scopes: &mut Vec<syn::LitStr>,
) -> syn::Result<()> {
    const SHAPE: &str = "expected `scopes = [\"scope\", ...]`: a list of string literals";
    let value = meta.value()?;
    let list: syn::ExprArray = value
        .parse()
        .map_err(|e| syn::Error::new(e.span(), SHAPE))?;
    for elem in list.elems {
        let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) = elem
        else {
            return Err(syn::Error::new_spanned(elem, SHAPE));
        };
        let scope = s.value();
        let token = !scope.is_empty()
            && scope
                .bytes()
                .all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E));
        if !token {
            return Err(syn::Error::new_spanned(
                s,
                "an OAuth scope is printable ASCII without spaces, quotes or backslashes",
            ));
        }
        scopes.push(s);
    }
    Ok(())
}

/// The doc comment of an item: lines trimmed, joined with `\n`, outer blank lines dropped.
pub(crate) fn doc_comment(attrs: &[syn::Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for a in attrs {
        if !a.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &a.meta
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
        {
            lines.push(s.value().trim().to_owned());
        }
    }
    let joined = lines.join("\n");
    let trimmed = joined.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

/// The runtime crate path (`crate = "..."`, default `::mcp_runtime`).
pub(crate) fn crate_path(custom: Option<&syn::LitStr>) -> syn::Result<syn::Path> {
    match custom {
        Some(s) => s.parse::<syn::Path>().map_err(|_| {
            syn::Error::new_spanned(s, "`crate` must be a path such as \"::mcp_runtime\"")
        }),
        None => Ok(syn::parse_quote!(::mcp_runtime)),
    }
}

/// `path::__macro_support_v1` for `crate = ".."` (or the default path when it is not a path,
/// which is reported elsewhere).
pub(crate) fn support_or_default(custom: Option<&syn::LitStr>) -> TokenStream {
    let krate = crate_path(custom).unwrap_or_else(|_| syn::parse_quote!(::mcp_runtime));
    support(&krate)
}

/// `path::__macro_support_v1`.
pub(crate) fn support(krate: &syn::Path) -> TokenStream {
    quote!(#krate::__macro_support_v1)
}

/// Splits `snake_case`, `camelCase` or `PascalCase` into lowercase words.
pub(crate) fn words(name: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c == '_' || c == '-' {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The serde-style `rename_all` rules the derives understand.
pub(crate) const RENAME_RULES: &str = "\"camelCase\", \"snake_case\", \"kebab-case\", \"lowercase\", \"PascalCase\" or \"SCREAMING_SNAKE_CASE\"";

/// Applies a `rename_all` rule; `None` if the rule is unknown.
pub(crate) fn rename(name: &str, rule: &str) -> Option<String> {
    let w = words(name);
    let cap = |s: &String| {
        let mut c = s.chars();
        c.next()
            .map(|f| f.to_uppercase().chain(c).collect::<String>())
            .unwrap_or_default()
    };
    Some(match rule {
        "camelCase" => w
            .iter()
            .enumerate()
            .map(|(i, s)| if i == 0 { s.clone() } else { cap(s) })
            .collect(),
        "PascalCase" => w.iter().map(cap).collect(),
        "snake_case" => w.join("_"),
        "kebab-case" => w.join("-"),
        "lowercase" => w.concat(),
        "SCREAMING_SNAKE_CASE" => w.join("_").to_uppercase(),
        _ => return None,
    })
}

/// Parses `lit` (or `-lit`) as an integer.
pub(crate) fn int_expr(e: &syn::Expr) -> syn::Result<i128> {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse::<i128>(),
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => int_expr(expr).map(|v| -v),
        _ => Err(syn::Error::new(e.span(), "expected an integer literal")),
    }
}

/// Parses `lit` (or `-lit`) as a number.
pub(crate) fn float_expr(e: &syn::Expr) -> syn::Result<f64> {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse::<f64>(),
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Float(f),
            ..
        }) => f.base10_parse::<f64>(),
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => float_expr(expr).map(|v| -v),
        _ => Err(syn::Error::new(e.span(), "expected a number literal")),
    }
}

/// A descriptor's `description`: the explicit `description = "..."` attribute, else the item's
/// doc comment, as an `Option<&str>` expression.
pub(crate) fn description(explicit: &Option<String>, attrs: &[syn::Attribute]) -> TokenStream {
    opt_str(&explicit.clone().or_else(|| doc_comment(attrs)))
}

/// Tokens for `Option<&'static str>`.
pub(crate) fn opt_str(s: &Option<String>) -> TokenStream {
    match s {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames() {
        assert_eq!(
            rename("workspace_uri", "camelCase").as_deref(),
            Some("workspaceUri")
        );
        assert_eq!(
            rename("DeleteAll", "snake_case").as_deref(),
            Some("delete_all")
        );
        assert_eq!(
            rename("DeleteAll", "kebab-case").as_deref(),
            Some("delete-all")
        );
        assert_eq!(rename("x", "nope"), None);
        assert_eq!(words("apiKey"), vec!["api", "key"]);
    }
}

/// The attributes `#[derive(ElicitForm)]` and `#[derive(ElicitChoice)]` share on the type:
/// `#[form(crate = "..", rename_all = "..")]`.
#[derive(Default)]
pub(crate) struct Container {
    pub(crate) krate: Option<syn::LitStr>,
    pub(crate) rename_all: Option<syn::LitStr>,
}

/// Reads [`Container`] from the type's `#[form]` attributes; `what` names the item in the
/// error for an unknown one (`"on a struct"`, `"on an enum"`).
pub(crate) fn parse_container(
    input: &syn::DeriveInput,
    errors: &mut Errors,
    what: &str,
) -> Container {
    let mut out = Container::default();
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("form")) {
        let r = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                out.krate = Some(meta.value()?.parse::<syn::LitStr>()?);
            } else if meta.path.is_ident("rename_all") {
                out.rename_all = Some(meta.value()?.parse()?);
            } else {
                return Err(meta.error(format!(
                    "unknown `form` attribute {what}; expected `crate = \"...\"` or `rename_all = \"...\"`"
                )));
            }
            Ok(())
        });
        if let Err(e) = r {
            errors.push(e);
        }
    }
    out
}
