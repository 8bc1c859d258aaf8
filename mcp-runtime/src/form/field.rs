//! Which Rust types a form field can have, decided by traits instead of by how the type is
//! spelled: a type alias (`type Title = String;`) is the type it names, and a user's own type
//! becomes a field kind by implementing [`FormValue`] and [`FormKind`].
//!
//! `#[derive(ElicitForm)]` asks each field's type, through one bound on [`FormField`] (or
//! [`ChoicesField`] for `#[form(choices)]`), whether the field is required, how to read it
//! from checked content, how to write it back ([`FormSlot`]) and which schema kind it has,
//! built from the field's `#[form(..)]` attributes ([`FieldOptions`]). Attributes that do not fit a kind
//! are rejected at compile time by the marker traits in [`fits`].

use super::*;

/// A literal from a `#[form(..)]` attribute (`default`, `minimum`, `maximum`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Literal {
    /// A string literal.
    Str(&'static str),
    /// An integer literal (possibly negated).
    Int(i128),
    /// A float literal (possibly negated).
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
}

impl Literal {
    /// The literal as a number (integers widen), if it is one.
    #[allow(clippy::cast_precision_loss)]
    #[must_use]
    pub fn as_f64(self) -> Option<f64> {
        match self {
            Literal::Int(i) => Some(i as f64),
            Literal::Float(f) => Some(f),
            _ => None,
        }
    }

    /// The literal as an integer, if it is one.
    #[must_use]
    pub fn as_i128(self) -> Option<i128> {
        match self {
            Literal::Int(i) => Some(i),
            _ => None,
        }
    }

    /// The literal as text, if it is a string.
    #[must_use]
    pub fn as_string(self) -> Option<String> {
        match self {
            Literal::Str(s) => Some(s.to_owned()),
            _ => None,
        }
    }
}

/// A field's constraints as written in its `#[form(..)]` attributes. The derive has already
/// checked (through [`fits`]) that each one applies to the field's kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldOptions {
    /// `min_length` (text).
    pub min_length: Option<u64>,
    /// `max_length` (text).
    pub max_length: Option<u64>,
    /// `format` (text).
    pub format: Option<StringFormat>,
    /// `minimum` (numbers).
    pub minimum: Option<Literal>,
    /// `maximum` (numbers).
    pub maximum: Option<Literal>,
    /// `min_items` (multi select).
    pub min_items: Option<u64>,
    /// `max_items` (multi select).
    pub max_items: Option<u64>,
    /// `default`.
    pub default: Option<Literal>,
}

impl FieldOptions {
    /// No constraints (the base the derive fills in).
    pub const NONE: FieldOptions = FieldOptions {
        min_length: None,
        max_length: None,
        format: None,
        minimum: None,
        maximum: None,
        min_items: None,
        max_items: None,
        default: None,
    };
}

/// A value form mode can carry: read from a checked [`FieldValue`], written back as submitted
/// JSON. Implemented for `String`, `bool`, the integer types up to 64 bits, `f32`/`f64`,
/// `#[derive(ElicitChoice)]` enums, and `Vec`s of those enums or of `String`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a form field",
    label = "not a string, number, bool, `#[derive(ElicitChoice)]` enum or `Vec` of one",
    note = "form mode carries only flat primitive fields: no nested structs, maps, sets, boxes, JSON values, 128-bit integers or lists of non-enums",
    note = "if `{Self}` is a unit-only enum, add `#[derive(ElicitChoice)]` to it"
)]
pub trait FormValue: Sized {
    /// The typed value of a field that passed its checks.
    ///
    /// # Errors
    /// The value is of another kind or out of the type's range.
    fn from_value(value: FieldValue, field: &str) -> Result<Self, FormError>;
    /// This value as the JSON a client submits.
    fn to_value(&self) -> Value;

    /// For an integer type, its range as `(MIN, MAX)`, so that `#[derive(ElicitForm)]` refuses
    /// at compile time a `default` outside it, a `minimum` above it and a `maximum` below it
    /// (the field could never take them). `None`, the default, for every other type.
    const INTEGER_RANGE: Option<(i128, i128)> = None;

    /// The values answers are picked from, when they are fixed at compile time (an
    /// [`ElicitChoice`] enum, a `Vec` of one), so that `#[derive(ElicitForm)]` refuses at
    /// compile time a `default` that is not one of them and a `min_items` above their number.
    /// `None`, the default, when they are not known then.
    const FIXED_OPTIONS: Option<&'static [StaticChoice]> = None;
}

/// A [`FormValue`] with a fixed schema kind.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a form field",
    label = "not a string, number, bool, `#[derive(ElicitChoice)]` enum or `Vec` of one",
    note = "form mode carries only flat primitive fields: no nested structs, maps, sets, boxes, JSON values, 128-bit integers or lists of non-enums",
    note = "if `{Self}` is a unit-only enum, add `#[derive(ElicitChoice)]` to it; `Vec<String>` is a multi select only with `#[form(choices)]`"
)]
pub trait FormKind: FormValue {
    /// The field's kind and constraints.
    fn kind(options: &FieldOptions) -> FieldKind<'static>;
}

/// A [`FormValue`] whose options are supplied at run time (`#[form(choices)]`).
#[diagnostic::on_unimplemented(
    message = "`#[form(choices)]` cannot apply to a `{Self}` field",
    label = "`#[form(choices)]` needs a `String` (single select) or `Vec<String>` (multi select) field"
)]
pub trait ChoicesKind: FormValue {
    /// The field's kind, offering `choices`.
    fn kind<'a>(choices: &'a [Choice], options: &FieldOptions) -> FieldKind<'a>;
}

/// A form field's type as a slot of the form: a [`FormValue`] (required) or an `Option` of
/// one (optional).
pub trait FormSlot: Sized {
    /// The value type (`T` of `Option<T>`).
    type Value: FormValue;
    /// Whether the client must send it (without a `default`).
    const REQUIRED: bool;
    /// Takes the field's value out of the checked content (fields come in declaration order).
    ///
    /// # Errors
    /// A required field is missing, or its value does not convert.
    fn take(checked: &mut CheckedForm) -> Result<Self, FormError>;
    /// The submitted value, `None` when an optional field is absent.
    fn content(&self) -> Option<Value>;
}

impl<T: FormValue> FormSlot for T {
    type Value = T;
    const REQUIRED: bool = true;
    fn take(checked: &mut CheckedForm) -> Result<Self, FormError> {
        let (name, value) = checked.required()?;
        T::from_value(value, name)
    }
    fn content(&self) -> Option<Value> {
        Some(self.to_value())
    }
}

impl<T: FormValue> FormSlot for Option<T> {
    type Value = T;
    const REQUIRED: bool = false;
    fn take(checked: &mut CheckedForm) -> Result<Self, FormError> {
        checked
            .optional()
            .map(|(name, value)| T::from_value(value, name))
            .transpose()
    }
    fn content(&self) -> Option<Value> {
        self.as_ref().map(T::to_value)
    }
}

/// The type of a form field: a [`FormKind`] value, or an `Option` of one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a form field",
    label = "not a string, number, bool, `#[derive(ElicitChoice)]` enum, `Vec` of one, or `Option` of those",
    note = "form mode carries only flat primitive fields: no nested structs, maps, sets, boxes, JSON values, 128-bit integers or lists of non-enums",
    note = "a unit-only enum needs `#[derive(ElicitChoice)]`; `Vec<String>` is a multi select only with `#[form(choices)]`"
)]
pub trait FormField: FormSlot {
    /// The field's kind and constraints.
    fn kind(options: &FieldOptions) -> FieldKind<'static>;
}

impl<T: FormKind> FormField for T {
    fn kind(options: &FieldOptions) -> FieldKind<'static> {
        T::kind(options)
    }
}

impl<T: FormKind> FormField for Option<T> {
    fn kind(options: &FieldOptions) -> FieldKind<'static> {
        T::kind(options)
    }
}

/// The type of a `#[form(choices)]` field: a [`ChoicesKind`] value, or an `Option` of one.
#[diagnostic::on_unimplemented(
    message = "`#[form(choices)]` cannot apply to a `{Self}` field",
    label = "`#[form(choices)]` needs a `String` (single select) or `Vec<String>` (multi select) field"
)]
pub trait ChoicesField: FormSlot {
    /// The field's kind, offering `choices`.
    fn kind<'a>(choices: &'a [Choice], options: &FieldOptions) -> FieldKind<'a>;
}

impl<T: ChoicesKind> ChoicesField for T {
    fn kind<'a>(choices: &'a [Choice], options: &FieldOptions) -> FieldKind<'a> {
        T::kind(choices, options)
    }
}

impl<T: ChoicesKind> ChoicesField for Option<T> {
    fn kind<'a>(choices: &'a [Choice], options: &FieldOptions) -> FieldKind<'a> {
        T::kind(choices, options)
    }
}

impl FormValue for String {
    fn from_value(value: FieldValue, field: &str) -> Result<Self, FormError> {
        value.into_string(field)
    }
    fn to_value(&self) -> Value {
        Value::String(self.clone())
    }
}

impl FormKind for String {
    fn kind(o: &FieldOptions) -> FieldKind<'static> {
        FieldKind::Text {
            min_length: o.min_length,
            max_length: o.max_length,
            format: o.format,
            default: o.default.and_then(Literal::as_string),
        }
    }
}

impl ChoicesKind for String {
    fn kind<'a>(choices: &'a [Choice], o: &FieldOptions) -> FieldKind<'a> {
        FieldKind::Select {
            options: Cow::Borrowed(choices),
            default: o.default.and_then(Literal::as_string),
        }
    }
}

impl FormValue for Vec<String> {
    fn from_value(value: FieldValue, field: &str) -> Result<Self, FormError> {
        value.into_strings(field)
    }
    fn to_value(&self) -> Value {
        Value::Array(self.iter().cloned().map(Value::String).collect())
    }
}

impl ChoicesKind for Vec<String> {
    fn kind<'a>(choices: &'a [Choice], o: &FieldOptions) -> FieldKind<'a> {
        FieldKind::MultiSelect {
            options: Cow::Borrowed(choices),
            min_items: o.min_items,
            max_items: o.max_items,
        }
    }
}

impl FormValue for bool {
    fn from_value(value: FieldValue, field: &str) -> Result<Self, FormError> {
        value.into_bool(field)
    }
    fn to_value(&self) -> Value {
        Value::Bool(*self)
    }
}

impl FormKind for bool {
    fn kind(o: &FieldOptions) -> FieldKind<'static> {
        let default = match o.default {
            Some(Literal::Bool(b)) => Some(b),
            _ => None,
        };
        FieldKind::Boolean { default }
    }
}

/// A whole number as JSON; one outside `i64`/`u64` becomes its nearest float, which the
/// server's bounds check then judges.
fn json_integer<T: TryInto<i64> + TryInto<u64> + TryInto<i128> + Copy>(v: T) -> Value {
    if let Ok(n) = TryInto::<i64>::try_into(v) {
        return Value::Number(n.into());
    }
    if let Ok(n) = TryInto::<u64>::try_into(v) {
        return Value::Number(n.into());
    }
    #[allow(clippy::cast_precision_loss)]
    let wide = TryInto::<i128>::try_into(v).map_or(f64::MAX, |n| n as f64);
    json_f64(wide)
}

/// An `f64` as JSON (a non-finite value becomes `null`, which the server rejects).
fn json_f64(v: f64) -> Value {
    Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// An `f32` as JSON, written with its shortest decimal form (`0.1`, not `0.100000001…`).
fn json_f32(v: f32) -> Value {
    v.to_string().parse::<f64>().map_or(Value::Null, json_f64)
}

macro_rules! integer_fields {
    ($($t:ty),*) => {$(
        impl FormValue for $t {
            fn from_value(value: FieldValue, field: &str) -> Result<Self, FormError> {
                value.into_int::<$t>(field)
            }
            fn to_value(&self) -> Value {
                json_integer(*self)
            }
            const INTEGER_RANGE: Option<(i128, i128)> = Some((<$t>::MIN as i128, <$t>::MAX as i128));
        }

        impl FormKind for $t {
            // A bound outside the type's range is clamped to it: the type's range is the
            // real constraint.
            fn kind(o: &FieldOptions) -> FieldKind<'static> {
                let (lo, hi) = (<$t>::MIN as i128, <$t>::MAX as i128);
                FieldKind::Integer {
                    minimum: o.minimum.and_then(Literal::as_i128).map_or(lo, |v| v.max(lo)),
                    maximum: o.maximum.and_then(Literal::as_i128).map_or(hi, |v| v.min(hi)),
                    default: o.default.and_then(Literal::as_i128),
                }
            }
        }

        impl fits::Number for $t {}
    )*};
}

integer_fields!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

macro_rules! float_fields {
    ($($t:ty => $write:ident),*) => {$(
        impl FormValue for $t {
            #[allow(clippy::cast_possible_truncation)]
            fn from_value(value: FieldValue, field: &str) -> Result<Self, FormError> {
                value.into_f64(field).map(|f| f as $t)
            }
            fn to_value(&self) -> Value {
                $write(*self)
            }
        }

        impl FormKind for $t {
            fn kind(o: &FieldOptions) -> FieldKind<'static> {
                FieldKind::Number {
                    minimum: o.minimum.and_then(Literal::as_f64),
                    maximum: o.maximum.and_then(Literal::as_f64),
                    default: o.default.and_then(Literal::as_f64),
                }
            }
        }

        impl fits::Number for $t {}
    )*};
}

float_fields!(f32 => json_f32, f64 => json_f64);

impl<E: ElicitChoice> FormValue for E {
    fn from_value(value: FieldValue, field: &str) -> Result<Self, FormError> {
        value.into_choice::<E>(field)
    }
    fn to_value(&self) -> Value {
        Value::String(self.value().to_owned())
    }
    const FIXED_OPTIONS: Option<&'static [StaticChoice]> = <E as ElicitChoice>::STATIC_OPTIONS;
}

impl<E: ElicitChoice> FormKind for E {
    fn kind(o: &FieldOptions) -> FieldKind<'static> {
        FieldKind::select_of::<E>(o.default.and_then(Literal::as_string))
    }
}

impl<E: ElicitChoice> FormValue for Vec<E> {
    fn from_value(value: FieldValue, field: &str) -> Result<Self, FormError> {
        value.into_choices::<E>(field)
    }
    fn to_value(&self) -> Value {
        Value::Array(
            self.iter()
                .map(|e| Value::String(e.value().to_owned()))
                .collect(),
        )
    }
    const FIXED_OPTIONS: Option<&'static [StaticChoice]> = <E as ElicitChoice>::STATIC_OPTIONS;
}

impl<E: ElicitChoice> FormKind for Vec<E> {
    fn kind(o: &FieldOptions) -> FieldKind<'static> {
        FieldKind::multi_select_of::<E>(o.min_items, o.max_items)
    }
}

/// Compile-time checks that a `#[form(..)]` attribute fits the field's kind: the derive
/// requires the marker of each attribute it sees of the field's value type.
pub mod fits {
    use super::{ElicitChoice, StaticChoice};

    /// Free text: `min_length`, `max_length`, `format`.
    #[diagnostic::on_unimplemented(
        message = "this attribute applies only to free-text `String` fields, not to `{Self}`",
        label = "`min_length`, `max_length` and `format` apply only to free-text `String` fields"
    )]
    pub trait Text {}
    impl Text for String {}

    /// Numbers: `minimum`, `maximum`, and an integer `default`.
    #[diagnostic::on_unimplemented(
        message = "this attribute applies only to number fields, not to `{Self}`",
        label = "`minimum`, `maximum` and a numeric `default` apply only to number fields"
    )]
    pub trait Number {}

    /// Floating-point numbers: a fractional `minimum`, `maximum` or `default`.
    #[diagnostic::on_unimplemented(
        message = "a fractional number does not fit a `{Self}` field",
        label = "expected an integer literal; fractions apply only to `f32`/`f64` fields"
    )]
    pub trait Fraction {}
    impl Fraction for f32 {}
    impl Fraction for f64 {}

    /// Multi selects: `min_items`, `max_items`.
    #[diagnostic::on_unimplemented(
        message = "this attribute applies only to multi-select (`Vec`) fields, not to `{Self}`",
        label = "`min_items` and `max_items` apply only to multi-select (`Vec`) fields"
    )]
    pub trait Items {}
    impl<E: ElicitChoice> Items for Vec<E> {}
    impl Items for Vec<String> {}

    /// A string `default`: text and single selects.
    #[diagnostic::on_unimplemented(
        message = "a string `default` does not fit a `{Self}` field",
        label = "a string default applies only to text and single-select fields",
        note = "a `bool` takes `true` or `false`, a number field a number; a multi-select field takes no `default` (make it an `Option` or set min_items)"
    )]
    pub trait StrDefault {}
    impl StrDefault for String {}
    impl<E: ElicitChoice> StrDefault for E {}

    /// A `true`/`false` `default`.
    #[diagnostic::on_unimplemented(
        message = "a boolean `default` does not fit a `{Self}` field",
        label = "`true` or `false` is the default only of a `bool` field"
    )]
    pub trait BoolDefault {}
    impl BoolDefault for bool {}

    /// Whether `value` lies outside the inclusive `range` (a `const fn`, for the derive's
    /// compile-time check of an integer `default`).
    #[must_use]
    pub const fn outside(value: i128, range: (i128, i128)) -> bool {
        value < range.0 || value > range.1
    }

    /// Whether `value` is the value of one of `options` (a `const fn`, for the derive's
    /// compile-time check of a `default`).
    #[must_use]
    pub const fn offers(options: &[StaticChoice], value: &str) -> bool {
        let value = value.as_bytes();
        let mut i = 0;
        while i < options.len() {
            let option = options[i].value.as_bytes();
            if option.len() == value.len() {
                let mut j = 0;
                while j < value.len() && option[j] == value[j] {
                    j += 1;
                }
                if j == value.len() {
                    return true;
                }
            }
            i += 1;
        }
        false
    }

    /// Requires `T: Text` (called by generated code).
    pub fn text<T: Text + ?Sized>() {}
    /// Requires `T: Number`.
    pub fn number<T: Number + ?Sized>() {}
    /// Requires `T: Fraction`.
    pub fn fraction<T: Fraction + ?Sized>() {}
    /// Requires `T: Items`.
    pub fn items<T: Items + ?Sized>() {}
    /// Requires `T: StrDefault`.
    pub fn str_default<T: StrDefault + ?Sized>() {}
    /// Requires `T: BoolDefault`.
    pub fn bool_default<T: BoolDefault + ?Sized>() {}
}
