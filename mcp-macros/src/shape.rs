//! Form field types the derive rejects from their syntax alone: references, tuples, arrays and
//! nested `Option`/`Vec`, with an error that says why. Every other type is judged by the
//! compiler through the runtime's `FormField` trait, so that aliases and user types work.

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

/// Rejects a field type whose syntax form mode cannot carry.
pub(crate) fn reject_syntax(ty: &syn::Type) -> Result<(), syn::Error> {
    let inner = generic_arg(ty, "Option").unwrap_or(ty);
    let err = |msg: &str| Err(syn::Error::new_spanned(inner, msg));
    match inner {
        syn::Type::Reference(_) => err(
            "form fields must be owned values: references cannot be parsed from client content; use `String`",
        ),
        syn::Type::Tuple(_) => err(
            "tuples cannot be form fields: form mode carries only flat primitive fields; split it into named fields",
        ),
        syn::Type::Array(_) | syn::Type::Slice(_) => err(
            "arrays cannot be form fields; a multi select is `Vec<E>` of a `#[derive(ElicitChoice)]` enum",
        ),
        syn::Type::Path(_) if generic_arg(inner, "Option").is_some() => {
            err("`Option<Option<_>>` cannot be a form field; use a single `Option`")
        }
        syn::Type::Path(_) => match generic_arg(inner, "Vec") {
            Some(item)
                if generic_arg(item, "Option").is_some() || generic_arg(item, "Vec").is_some() =>
            {
                err(
                    "nested lists cannot be form fields: a multi select is a flat `Vec` of an ElicitChoice enum",
                )
            }
            _ => Ok(()),
        },
        _ => err("unsupported form field type; use String, a number, bool or an ElicitChoice enum"),
    }
}
