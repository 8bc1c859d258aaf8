//! Form field shapes: which Rust field types form mode can carry, decided from the type as
//! written (`Option`, `Vec`, scalars), with an error that says why for the rest.

/// What a field's Rust type maps to.
pub(crate) enum Shape {
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
pub(crate) fn classify(ty: &syn::Type, choices: bool) -> Result<Shape, syn::Error> {
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
