//! Flat elicitation forms: the [`ElicitForm`] trait implemented by `#[derive(ElicitForm)]`.
//!
//! A form is a flat struct whose fields are strings, numbers, booleans, single selects
//! (unit-only enums with `#[derive(ElicitChoice)]`, or strings whose choices are supplied at
//! run time) and multi selects. The derive describes each field as a [`FieldSpec`]; this module
//! turns those specs into the wire `requestedSchema` and re-checks every constraint on the
//! submitted content. Client-side validation creates no trust: a value the server did not offer,
//! a string of the wrong format or a number out of range is rejected here, with a [`FormError`]
//! that names the field.
//!
//! Keys in the submitted content that the form does not define are ignored (they never reach
//! the handler).

mod format;

use std::borrow::Cow;

use mcp_types::{
    EnumOption, JsonObject, NumberKind, NumberSchema, PrimitiveSchemaDefinition, RequestedSchema,
    StringFormat, StringSchema, TitledEnumItems, TitledMultiSelectEnumSchema,
    TitledSingleSelectEnumSchema, UntitledEnumItems, UntitledMultiSelectEnumSchema,
    UntitledSingleSelectEnumSchema,
};
use serde_json::{Number, Value};

/// A flat form-mode elicitation form. Implement it with `#[derive(ElicitForm)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an elicitation form",
    label = "this type does not implement `ElicitForm`",
    note = "add `#[derive(ElicitForm)]` to `{Self}` (a struct of flat named fields)"
)]
pub trait ElicitForm: Sized + Send + 'static {
    /// Values known only at run time (for `#[form(choices)]` fields). `()` when the form has
    /// none; otherwise the derive generates `<Name>Choices`, a builder with one method per
    /// such field.
    type Choices: Send + Sync + 'static;

    /// The empty choices builder.
    fn choices() -> Self::Choices;

    /// The describing schema sent as `requestedSchema` (deterministic for equal choices).
    fn requested_schema(choices: &Self::Choices) -> RequestedSchema;

    /// Parses accepted content, re-checking every constraint server-side; values outside the
    /// supplied choices are rejected.
    fn from_content(content: &JsonObject, choices: &Self::Choices) -> Result<Self, FormError>;

    /// Writes a description of the form shown for `choices` that the runtime hashes into the
    /// signed `requestState`, so that an answer is only accepted against the exact form (field
    /// set, constraints and offered choices) the user saw.
    ///
    /// Contract: the same `choices` always write the same bytes (within one build), and two
    /// `choices` whose [`ElicitForm::requested_schema`] differ never write the same bytes.
    /// The default writes the serialized `requestedSchema`; `#[derive(ElicitForm)]` writes
    /// its field declarations with [`write_fields_binding`] instead, which builds no schema.
    ///
    /// # Errors
    /// Whatever `out` returns (hashing writers never fail).
    fn write_binding(choices: &Self::Choices, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer(out, &Self::requested_schema(choices)).map_err(std::io::Error::from)
    }

    /// Checks `choices` before the form is shown: every `#[form(choices)]` field must offer
    /// at least one option, since a select with nothing in it cannot be answered. The runtime
    /// calls it before it asks, and fails the call with a tool error instead of sending
    /// `"enum": []`. The default (forms without run-time choices) accepts everything.
    ///
    /// # Errors
    /// [`FormProblem::NoChoices`] naming the first field without options.
    fn check_choices(choices: &Self::Choices) -> Result<(), FormError> {
        let _ = choices;
        Ok(())
    }

    /// Explains a rejected answer in words for the person who gave it, using the field's
    /// label (`title`, else description, else wire name). The runtime puts it in front of the
    /// message when it asks again. The default, for hand-written forms, explains it the same
    /// way with the wire name as the label ([`explain`] with no field declarations).
    fn explain(error: &FormError, choices: &Self::Choices) -> String {
        let _ = choices;
        explain(&[], error)
    }

    /// [`ElicitForm::from_content`] for the typed content map of an `ElicitResult`.
    fn from_elicit_content(
        content: &mcp_types::ElicitContent,
        choices: &Self::Choices,
    ) -> Result<Self, FormError> {
        let mut object = JsonObject::new();
        for (key, value) in content {
            let value = match value {
                mcp_types::ElicitContentValue::String(s) => Value::String(s.clone()),
                mcp_types::ElicitContentValue::Number(n) => Value::Number(n.clone()),
                mcp_types::ElicitContentValue::Boolean(b) => Value::Bool(*b),
                mcp_types::ElicitContentValue::StringArray(items) => {
                    Value::Array(items.iter().cloned().map(Value::String).collect())
                }
            };
            object.insert(key.clone(), value);
        }
        Self::from_content(&object, choices)
    }
}

/// The content a client submits for a filled-in form: the inverse of
/// [`ElicitForm::from_content`]. `#[derive(ElicitForm)]` implements it, so a test or client can
/// answer a form with the author's own struct (see `mcp_runtime::client`); absent `Option`
/// fields are left out.
pub trait FormContent {
    /// This value as form content (`{"field": value, ...}`, wire names).
    fn to_content(&self) -> JsonObject;
}

/// A unit-only enum usable as a single select (or, in a `Vec`, a multi select) form field.
/// Implement it with `#[derive(ElicitChoice)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a form field",
    label = "not a string, number, bool or `#[derive(ElicitChoice)]` enum",
    note = "form mode carries only flat primitive fields: no nested structs, maps or lists of non-enums",
    note = "if `{Self}` is a unit-only enum, add `#[derive(ElicitChoice)]` to it"
)]
pub trait ElicitChoice: Sized + Send + 'static {
    /// Every variant as `(value, optional title)`, in declaration order.
    fn options() -> &'static [StaticChoice];
    /// The variant whose value is `value`.
    fn from_value(value: &str) -> Option<Self>;
    /// The wire value of this variant.
    fn value(&self) -> &'static str;
}

/// One compile-time option of an [`ElicitChoice`] enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticChoice {
    /// The value sent back by the client.
    pub value: &'static str,
    /// The label shown to the user, if any.
    pub title: Option<&'static str>,
}

/// One run-time option of a `#[form(choices)]` field: a value and an optional label.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Choice {
    /// The value sent back by the client (and checked on the way back).
    pub value: String,
    /// The label shown to the user; without one the value is shown.
    pub title: Option<String>,
}

impl Choice {
    /// A labelled choice.
    pub fn titled(value: impl Into<String>, title: impl Into<String>) -> Self {
        Choice {
            value: value.into(),
            title: Some(title.into()),
        }
    }
}

impl From<String> for Choice {
    fn from(value: String) -> Self {
        Choice { value, title: None }
    }
}

impl From<&str> for Choice {
    fn from(value: &str) -> Self {
        Choice {
            value: value.to_owned(),
            title: None,
        }
    }
}

impl From<&String> for Choice {
    fn from(value: &String) -> Self {
        Choice::from(value.as_str())
    }
}

impl From<(String, String)> for Choice {
    fn from((value, title): (String, String)) -> Self {
        Choice {
            value,
            title: Some(title),
        }
    }
}

impl From<(&str, &str)> for Choice {
    fn from((value, title): (&str, &str)) -> Self {
        Choice::titled(value, title)
    }
}

impl From<StaticChoice> for Choice {
    fn from(c: StaticChoice) -> Self {
        Choice {
            value: c.value.to_owned(),
            title: c.title.map(str::to_owned),
        }
    }
}

/// Why submitted form content was rejected. `Display` names the field and what to fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("form field `{field}`: {problem}")]
pub struct FormError {
    /// The form field (wire name).
    pub field: String,
    /// What was wrong with it.
    pub problem: FormProblem,
}

impl FormError {
    /// An error about `field`.
    pub fn new(field: impl Into<String>, problem: FormProblem) -> Self {
        FormError {
            field: field.into(),
            problem,
        }
    }
}

/// The specific constraint a submitted value broke.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FormProblem {
    /// A required field is absent.
    #[error("is required but missing")]
    Missing,
    /// The JSON type is wrong.
    #[error("expected {expected}, got {got}")]
    WrongType {
        /// What the schema asks for.
        expected: &'static str,
        /// What was sent.
        got: &'static str,
    },
    /// Fewer characters than `minLength`.
    #[error("must be at least {min} characters long, got {len}")]
    TooShort {
        /// `minLength`.
        min: u64,
        /// Characters sent.
        len: u64,
    },
    /// More characters than `maxLength`.
    #[error("must be at most {max} characters long, got {len}")]
    TooLong {
        /// `maxLength`.
        max: u64,
        /// Characters sent.
        len: u64,
    },
    /// The string does not match its `format`.
    #[error("is not a valid {format}")]
    BadFormat {
        /// The format name (`email`, `uri`, `date`, `date-time`).
        format: &'static str,
    },
    /// A number with a fractional part for an integer field.
    #[error("must be a whole number, got {value}")]
    NotInteger {
        /// The number sent.
        value: String,
    },
    /// Below `minimum`.
    #[error("must be at least {minimum}, got {value}")]
    BelowMinimum {
        /// `minimum`.
        minimum: String,
        /// The number sent.
        value: String,
    },
    /// Above `maximum`.
    #[error("must be at most {maximum}, got {value}")]
    AboveMaximum {
        /// `maximum`.
        maximum: String,
        /// The number sent.
        value: String,
    },
    /// A value that was not offered.
    #[error("{value:?} is not one of the offered choices ({allowed})")]
    NotAChoice {
        /// The value sent.
        value: String,
        /// The offered values, comma separated (shortened when long).
        allowed: String,
    },
    /// Fewer selections than `minItems`.
    #[error("select at least {min} option(s), got {len}")]
    TooFewItems {
        /// `minItems`.
        min: u64,
        /// Selections sent.
        len: u64,
    },
    /// More selections than `maxItems`.
    #[error("select at most {max} option(s), got {len}")]
    TooManyItems {
        /// `maxItems`.
        max: u64,
        /// Selections sent.
        len: u64,
    },
    /// The same option selected twice.
    #[error("option {value:?} is selected more than once")]
    DuplicateItem {
        /// The repeated value.
        value: String,
    },
    /// A select was given no options to offer (empty run-time choices): found before the form
    /// is shown, never on the wire.
    #[error(
        "was given no choices to offer; check for an empty list before asking, and answer without a form when there is nothing to choose"
    )]
    NoChoices,
    /// The field's declared default breaks its own constraints (a bug in the form declaration).
    #[error("the form's default value is invalid: {0}")]
    InvalidDefault(Box<FormProblem>),
}

/// The declaration of one form field, produced by `#[derive(ElicitForm)]`.
///
/// `'a` is the lifetime of run-time choices: a derived form's fields borrow the options of its
/// `Choices` value instead of copying them on every use.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldSpec<'a> {
    /// Wire name (the property key).
    pub name: &'static str,
    /// Label.
    pub title: Option<&'static str>,
    /// Help text.
    pub description: Option<&'static str>,
    /// Whether the client must send it (`false` for `Option` fields and fields with a default).
    pub required: bool,
    /// Type and constraints.
    pub kind: FieldKind<'a>,
}

/// Type and constraints of a [`FieldSpec`].
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind<'a> {
    /// Free text.
    Text {
        /// `minLength` in characters.
        min_length: Option<u64>,
        /// `maxLength` in characters.
        max_length: Option<u64>,
        /// `format`.
        format: Option<StringFormat>,
        /// Value used when absent.
        default: Option<String>,
    },
    /// A whole number within `[minimum, maximum]` (the Rust type's range unless narrowed).
    Integer {
        /// Inclusive minimum.
        minimum: i128,
        /// Inclusive maximum.
        maximum: i128,
        /// Value used when absent.
        default: Option<i128>,
    },
    /// Any finite number.
    Number {
        /// Inclusive minimum.
        minimum: Option<f64>,
        /// Inclusive maximum.
        maximum: Option<f64>,
        /// Value used when absent.
        default: Option<f64>,
    },
    /// A checkbox.
    Boolean {
        /// Value used when absent.
        default: Option<bool>,
    },
    /// Exactly one of `options` (titled `oneOf` if any option has a title, else `enum`).
    Select {
        /// The offered options, in display order.
        options: Cow<'a, [Choice]>,
        /// Value used when absent.
        default: Option<String>,
    },
    /// Any subset of `options`.
    MultiSelect {
        /// The offered options, in display order.
        options: Cow<'a, [Choice]>,
        /// `minItems`.
        min_items: Option<u64>,
        /// `maxItems`.
        max_items: Option<u64>,
    },
}

impl FieldKind<'static> {
    /// Single-select options of an [`ElicitChoice`] enum.
    pub fn select_of<E: ElicitChoice>(default: Option<String>) -> Self {
        FieldKind::Select {
            options: Cow::Owned(E::options().iter().copied().map(Choice::from).collect()),
            default,
        }
    }

    /// Multi-select options of an [`ElicitChoice`] enum.
    pub fn multi_select_of<E: ElicitChoice>(
        min_items: Option<u64>,
        max_items: Option<u64>,
    ) -> Self {
        FieldKind::MultiSelect {
            options: Cow::Owned(E::options().iter().copied().map(Choice::from).collect()),
            min_items,
            max_items,
        }
    }
}

/// Writes an unambiguous encoding of `fields` (the [`ElicitForm::write_binding`] of derived
/// forms).
///
/// The wire `requestedSchema` is a function of the field declarations alone
/// ([`requested_schema`]), so an injective encoding of the declarations binds the schema too.
/// Every string and list is length-prefixed and every optional value tagged, so no two field
/// lists share an encoding.
///
/// # Errors
/// Whatever `out` returns.
pub fn write_fields_binding(
    fields: &[FieldSpec<'_>],
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut w = BindingWriter(out);
    w.bytes(b"fields/v1")?;
    w.len(fields.len())?;
    for f in fields {
        w.bytes(f.name.as_bytes())?;
        w.opt_str(f.title)?;
        w.opt_str(f.description)?;
        w.tag(u8::from(f.required))?;
        match &f.kind {
            FieldKind::Text {
                min_length,
                max_length,
                format,
                default,
            } => {
                w.tag(1)?;
                w.opt_u64(*min_length)?;
                w.opt_u64(*max_length)?;
                match format {
                    None => w.tag(0)?,
                    Some(StringFormat::Email) => w.tag(1)?,
                    Some(StringFormat::Uri) => w.tag(2)?,
                    Some(StringFormat::Date) => w.tag(3)?,
                    Some(StringFormat::DateTime) => w.tag(4)?,
                }
                w.opt_str(default.as_deref())?;
            }
            FieldKind::Integer {
                minimum,
                maximum,
                default,
            } => {
                w.tag(2)?;
                w.0.write_all(&minimum.to_le_bytes())?;
                w.0.write_all(&maximum.to_le_bytes())?;
                match default {
                    None => w.tag(0)?,
                    Some(d) => {
                        w.tag(1)?;
                        w.0.write_all(&d.to_le_bytes())?;
                    }
                }
            }
            FieldKind::Number {
                minimum,
                maximum,
                default,
            } => {
                w.tag(3)?;
                for v in [minimum, maximum, default] {
                    w.opt_u64(v.map(f64::to_bits))?;
                }
            }
            FieldKind::Boolean { default } => {
                w.tag(4)?;
                w.opt_u64(default.map(u64::from))?;
            }
            FieldKind::Select { options, default } => {
                w.tag(5)?;
                w.choices(options)?;
                w.opt_str(default.as_deref())?;
            }
            FieldKind::MultiSelect {
                options,
                min_items,
                max_items,
            } => {
                w.tag(6)?;
                w.choices(options)?;
                w.opt_u64(*min_items)?;
                w.opt_u64(*max_items)?;
            }
        }
    }
    Ok(())
}

/// Length-prefixed, tagged writes for [`write_fields_binding`].
struct BindingWriter<'a>(&'a mut dyn std::io::Write);

impl BindingWriter<'_> {
    fn tag(&mut self, t: u8) -> std::io::Result<()> {
        self.0.write_all(&[t])
    }

    fn len(&mut self, n: usize) -> std::io::Result<()> {
        self.0.write_all(&(n as u64).to_le_bytes())
    }

    fn bytes(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.len(b.len())?;
        self.0.write_all(b)
    }

    fn opt_str(&mut self, s: Option<&str>) -> std::io::Result<()> {
        match s {
            None => self.tag(0),
            Some(s) => {
                self.tag(1)?;
                self.bytes(s.as_bytes())
            }
        }
    }

    fn opt_u64(&mut self, v: Option<u64>) -> std::io::Result<()> {
        match v {
            None => self.tag(0),
            Some(v) => {
                self.tag(1)?;
                self.0.write_all(&v.to_le_bytes())
            }
        }
    }

    fn choices(&mut self, options: &[Choice]) -> std::io::Result<()> {
        self.len(options.len())?;
        for c in options {
            self.bytes(c.value.as_bytes())?;
            self.opt_str(c.title.as_deref())?;
        }
        Ok(())
    }
}

/// Builds the wire `requestedSchema` for a list of fields (order preserved).
pub fn requested_schema(fields: &[FieldSpec<'_>]) -> RequestedSchema {
    let mut schema = RequestedSchema::new();
    for f in fields {
        schema = schema.field(f.name, definition(f), f.required);
    }
    schema
}

fn titled(options: &[Choice]) -> bool {
    options.iter().any(|c| c.title.is_some())
}

fn enum_options(options: &[Choice]) -> Vec<EnumOption> {
    options
        .iter()
        .map(|c| EnumOption::new(&c.value, c.title.as_deref().unwrap_or(&c.value)))
        .collect()
}

fn values(options: &[Choice]) -> Vec<String> {
    options.iter().map(|c| c.value.clone()).collect()
}

/// A JSON number for an integer bound: exact for anything `i64`/`u64` can hold.
fn int_number(v: i128) -> Number {
    if let Ok(i) = i64::try_from(v) {
        Number::from(i)
    } else if let Ok(u) = u64::try_from(v) {
        Number::from(u)
    } else {
        // Bounds come from Rust integer types no wider than 64 bits, so this is unreachable in
        // generated code; saturate rather than panic.
        Number::from(if v < 0 { i64::MIN } else { i64::MAX })
    }
}

/// A JSON number for a float bound: whole values print without `.0`.
fn float_number(v: f64) -> Option<Number> {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        #[allow(clippy::cast_possible_truncation)]
        return Some(Number::from(v as i64));
    }
    Number::from_f64(v)
}

fn definition(f: &FieldSpec<'_>) -> PrimitiveSchemaDefinition {
    let title = f.title.map(str::to_owned);
    let description = f.description.map(str::to_owned);
    match &f.kind {
        FieldKind::Text {
            min_length,
            max_length,
            format,
            default,
        } => {
            let mut s = StringSchema::new();
            s.title = title;
            s.description = description;
            s.min_length = *min_length;
            s.max_length = *max_length;
            s.format = *format;
            s.default = default.clone();
            s.into()
        }
        FieldKind::Integer {
            minimum,
            maximum,
            default,
        } => {
            let mut s = NumberSchema::new(NumberKind::Integer);
            s.title = title;
            s.description = description;
            s.minimum = Some(int_number(*minimum));
            s.maximum = Some(int_number(*maximum));
            s.default = default.map(int_number);
            s.into()
        }
        FieldKind::Number {
            minimum,
            maximum,
            default,
        } => {
            let mut s = NumberSchema::new(NumberKind::Number);
            s.title = title;
            s.description = description;
            s.minimum = minimum.and_then(float_number);
            s.maximum = maximum.and_then(float_number);
            s.default = default.and_then(float_number);
            s.into()
        }
        FieldKind::Boolean { default } => {
            let mut s = mcp_types::BooleanSchema::new();
            s.title = title;
            s.description = description;
            s.default = *default;
            s.into()
        }
        FieldKind::Select { options, default } => {
            if titled(options) {
                TitledSingleSelectEnumSchema {
                    kind: Default::default(),
                    title,
                    description,
                    one_of: enum_options(options),
                    default: default.clone(),
                    extra: JsonObject::new(),
                }
                .into()
            } else {
                UntitledSingleSelectEnumSchema {
                    kind: Default::default(),
                    title,
                    description,
                    values: values(options),
                    default: default.clone(),
                    extra: JsonObject::new(),
                }
                .into()
            }
        }
        FieldKind::MultiSelect {
            options,
            min_items,
            max_items,
        } => {
            if titled(options) {
                TitledMultiSelectEnumSchema {
                    kind: Default::default(),
                    title,
                    description,
                    min_items: *min_items,
                    max_items: *max_items,
                    items: TitledEnumItems {
                        any_of: enum_options(options),
                        extra: JsonObject::new(),
                    },
                    default: None,
                    extra: JsonObject::new(),
                }
                .into()
            } else {
                UntitledMultiSelectEnumSchema {
                    kind: Default::default(),
                    title,
                    description,
                    min_items: *min_items,
                    max_items: *max_items,
                    items: UntitledEnumItems {
                        kind: Default::default(),
                        values: values(options),
                        extra: JsonObject::new(),
                    },
                    default: None,
                    extra: JsonObject::new(),
                }
                .into()
            }
        }
    }
}

/// A value that passed every check of its [`FieldSpec`].
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue {
    /// Checked text.
    Text(String),
    /// Checked whole number (within the field's bounds).
    Integer(i128),
    /// Checked finite number.
    Number(f64),
    /// A boolean.
    Boolean(bool),
    /// One offered value.
    Selected(String),
    /// Distinct offered values, in the order sent.
    SelectedMany(Vec<String>),
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn wrong(expected: &'static str, v: &Value) -> FormProblem {
    FormProblem::WrongType {
        expected,
        got: json_kind(v),
    }
}

fn allowed_list(options: &[Choice]) -> String {
    const SHOWN: usize = 10;
    let mut s = options
        .iter()
        .take(SHOWN)
        .map(|c| format!("{:?}", c.value))
        .collect::<Vec<_>>()
        .join(", ");
    if options.len() > SHOWN {
        s.push_str(&format!(", … {} more", options.len() - SHOWN));
    }
    if options.is_empty() {
        s.push_str("none were offered");
    }
    s
}

fn check_choice(options: &[Choice], v: &str) -> Result<(), FormProblem> {
    if options.iter().any(|c| c.value == v) {
        Ok(())
    } else {
        Err(FormProblem::NotAChoice {
            value: v.to_owned(),
            allowed: allowed_list(options),
        })
    }
}

/// The integer a JSON number denotes, if it is whole (`5` and `5.0` are; `5.5` is not).
fn whole(n: &Number) -> Result<i128, FormProblem> {
    if let Some(i) = n.as_i64() {
        return Ok(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Ok(i128::from(u));
    }
    match n.as_f64() {
        // Integral floats beyond ±2^63 exceed every supported Rust integer type anyway;
        // report them as out of range via the caller's bounds check.
        Some(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 1.0e30 =>
        {
            #[allow(clippy::cast_possible_truncation)]
            Ok(f as i128)
        }
        _ => Err(FormProblem::NotInteger {
            value: n.to_string(),
        }),
    }
}

fn check_value(kind: &FieldKind<'_>, v: &Value) -> Result<FieldValue, FormProblem> {
    match kind {
        FieldKind::Text {
            min_length,
            max_length,
            format,
            ..
        } => {
            let Value::String(s) = v else {
                return Err(wrong("a string", v));
            };
            let len = s.chars().count() as u64;
            if let Some(min) = *min_length
                && len < min
            {
                return Err(FormProblem::TooShort { min, len });
            }
            if let Some(max) = *max_length
                && len > max
            {
                return Err(FormProblem::TooLong { max, len });
            }
            if let Some(f) = format {
                format::check(*f, s)?;
            }
            Ok(FieldValue::Text(s.clone()))
        }
        FieldKind::Integer {
            minimum, maximum, ..
        } => {
            let Value::Number(n) = v else {
                return Err(wrong("a whole number", v));
            };
            let i = whole(n)?;
            if i < *minimum {
                return Err(FormProblem::BelowMinimum {
                    minimum: minimum.to_string(),
                    value: n.to_string(),
                });
            }
            if i > *maximum {
                return Err(FormProblem::AboveMaximum {
                    maximum: maximum.to_string(),
                    value: n.to_string(),
                });
            }
            Ok(FieldValue::Integer(i))
        }
        FieldKind::Number {
            minimum, maximum, ..
        } => {
            let Value::Number(n) = v else {
                return Err(wrong("a number", v));
            };
            let Some(f) = n.as_f64().filter(|f| f.is_finite()) else {
                return Err(wrong("a finite number", v));
            };
            if let Some(min) = *minimum
                && f < min
            {
                return Err(FormProblem::BelowMinimum {
                    minimum: min.to_string(),
                    value: n.to_string(),
                });
            }
            if let Some(max) = *maximum
                && f > max
            {
                return Err(FormProblem::AboveMaximum {
                    maximum: max.to_string(),
                    value: n.to_string(),
                });
            }
            Ok(FieldValue::Number(f))
        }
        FieldKind::Boolean { .. } => match v {
            Value::Bool(b) => Ok(FieldValue::Boolean(*b)),
            _ => Err(wrong("a boolean", v)),
        },
        FieldKind::Select { options, .. } => {
            let Value::String(s) = v else {
                return Err(wrong("a string (one of the offered choices)", v));
            };
            check_choice(options, s)?;
            Ok(FieldValue::Selected(s.clone()))
        }
        FieldKind::MultiSelect {
            options,
            min_items,
            max_items,
        } => {
            let Value::Array(items) = v else {
                return Err(wrong("an array of strings", v));
            };
            let mut out: Vec<String> = Vec::with_capacity(items.len());
            for item in items {
                let Value::String(s) = item else {
                    return Err(wrong("an array of strings", v));
                };
                check_choice(options, s)?;
                if out.contains(s) {
                    return Err(FormProblem::DuplicateItem { value: s.clone() });
                }
                out.push(s.clone());
            }
            let len = out.len() as u64;
            if let Some(min) = *min_items
                && len < min
            {
                return Err(FormProblem::TooFewItems { min, len });
            }
            if let Some(max) = *max_items
                && len > max
            {
                return Err(FormProblem::TooManyItems { max, len });
            }
            Ok(FieldValue::SelectedMany(out))
        }
    }
}

fn default_value(kind: &FieldKind<'_>) -> Option<Value> {
    match kind {
        FieldKind::Text { default, .. } => default.clone().map(Value::String),
        FieldKind::Integer { default, .. } => default.map(|d| Value::Number(int_number(d))),
        FieldKind::Number { default, .. } => default.and_then(float_number).map(Value::Number),
        FieldKind::Boolean { default } => default.map(Value::Bool),
        FieldKind::Select { default, .. } => default.clone().map(Value::String),
        FieldKind::MultiSelect { .. } => None,
    }
}

/// Checks one field of submitted content. `Ok(None)` means an optional field was left empty.
/// `null` is not "absent": the schema gives every property a type, so it is rejected.
pub fn check_field(
    spec: &FieldSpec<'_>,
    content: &JsonObject,
) -> Result<Option<FieldValue>, FormError> {
    match content.get(spec.name) {
        Some(v) => check_value(&spec.kind, v)
            .map(Some)
            .map_err(|p| FormError::new(spec.name, p)),
        None => match default_value(&spec.kind) {
            Some(d) => check_value(&spec.kind, &d)
                .map(Some)
                .map_err(|p| FormError::new(spec.name, FormProblem::InvalidDefault(Box::new(p)))),
            None if spec.required => Err(FormError::new(spec.name, FormProblem::Missing)),
            None => Ok(None),
        },
    }
}

/// Refuses a form whose selects offer nothing (the [`ElicitForm::check_choices`] of derived
/// forms): the first field with an empty option list.
///
/// # Errors
/// [`FormProblem::NoChoices`] naming that field.
pub fn check_offered(fields: &[FieldSpec<'_>]) -> Result<(), FormError> {
    for f in fields {
        let empty = match &f.kind {
            FieldKind::Select { options, .. } | FieldKind::MultiSelect { options, .. } => {
                options.is_empty()
            }
            _ => false,
        };
        if empty {
            return Err(FormError::new(f.name, FormProblem::NoChoices));
        }
    }
    Ok(())
}

/// Longest stretch of a submitted value quoted back in an explanation.
const QUOTE_MAX_CHARS: usize = 60;

/// `value` in typographic quotes, shortened when long and with control characters dropped,
/// so an explanation stays one readable line whatever was submitted.
fn quoted(value: &str) -> String {
    let mut out = String::from("\u{2018}");
    let mut chars = value.chars().filter(|c| !c.is_control());
    out.extend(chars.by_ref().take(QUOTE_MAX_CHARS));
    if chars.next().is_some() {
        out.push('\u{2026}');
    }
    out.push('\u{2019}');
    out
}

/// Explains `error` in words for the person who filled in the form (the
/// [`ElicitForm::explain`] of derived forms): the field is named by its label (`title`, else
/// description, else wire name) and the problem said as an instruction, e.g.
/// "‘shopping.md’ is not one of the options offered for “Note to delete”."
pub fn explain(fields: &[FieldSpec<'_>], error: &FormError) -> String {
    let spec = fields.iter().find(|f| f.name == error.field);
    let label = spec
        .and_then(|f| f.title.or(f.description))
        .unwrap_or(error.field.as_str());
    let label = format!("\u{201c}{}\u{201d}", label.trim_end_matches('.'));
    match &error.problem {
        FormProblem::Missing => format!("Please fill in {label}; it is required."),
        FormProblem::WrongType { expected, .. } => {
            format!("{label} needs {expected}; please answer it again.")
        }
        FormProblem::TooShort { min, len } => {
            format!("{label} must be at least {min} characters long; the answer had {len}.")
        }
        FormProblem::TooLong { max, len } => {
            format!("{label} must be at most {max} characters long; the answer had {len}.")
        }
        FormProblem::BadFormat { format } => {
            let what = match *format {
                "email" => "an email address",
                "uri" => "a web address (URI)",
                "date" => "a date (YYYY-MM-DD)",
                "date-time" => "a date and time (e.g. 2026-07-28T09:30:00Z)",
                other => other,
            };
            format!("{label} must be {what}.")
        }
        FormProblem::NotInteger { value } => {
            format!("{label} must be a whole number, not {}.", quoted(value))
        }
        FormProblem::BelowMinimum { minimum, value } => {
            format!("{label} must be at least {minimum}, not {}.", quoted(value))
        }
        FormProblem::AboveMaximum { maximum, value } => {
            format!("{label} must be at most {maximum}, not {}.", quoted(value))
        }
        FormProblem::NotAChoice { value, .. } => format!(
            "{} is not one of the options offered for {label}; please pick one of them.",
            quoted(value)
        ),
        FormProblem::TooFewItems { min, .. } => {
            format!("Please select at least {min} option(s) for {label}.")
        }
        FormProblem::TooManyItems { max, .. } => {
            format!("Please select at most {max} option(s) for {label}.")
        }
        FormProblem::DuplicateItem { value } => {
            format!("{} was selected twice for {label}.", quoted(value))
        }
        FormProblem::NoChoices => format!("{label} has no options to choose from."),
        FormProblem::InvalidDefault(_) => format!(
            "{label} has an invalid default value in this form (a server bug); please fill it in."
        ),
    }
}

/// Checks every field of submitted content, in declaration order; the first violation wins.
pub fn check_all(fields: &[FieldSpec<'_>], content: &JsonObject) -> Result<CheckedForm, FormError> {
    let mut values = Vec::with_capacity(fields.len());
    for f in fields {
        values.push((f.name, check_field(f, content)?));
    }
    Ok(CheckedForm {
        values: values.into_iter(),
    })
}

/// The checked values of a form, handed out in declaration order to the generated constructor.
#[derive(Debug)]
pub struct CheckedForm {
    values: std::vec::IntoIter<(&'static str, Option<FieldValue>)>,
}

impl CheckedForm {
    /// The next field, which must be present.
    pub fn required(&mut self) -> Result<(&'static str, FieldValue), FormError> {
        match self.values.next() {
            Some((name, Some(v))) => Ok((name, v)),
            Some((name, None)) => Err(FormError::new(name, FormProblem::Missing)),
            None => Err(FormError::new("?", FormProblem::Missing)),
        }
    }

    /// The next field, which may be absent.
    pub fn optional(&mut self) -> Option<(&'static str, FieldValue)> {
        self.values
            .next()
            .and_then(|(name, v)| v.map(|v| (name, v)))
    }
}

fn mismatch(field: &str, expected: &'static str) -> FormError {
    FormError::new(
        field,
        FormProblem::WrongType {
            expected,
            got: "a value of another kind",
        },
    )
}

impl FieldValue {
    /// The text of a text field.
    pub fn into_string(self, field: &str) -> Result<String, FormError> {
        match self {
            FieldValue::Text(s) | FieldValue::Selected(s) => Ok(s),
            _ => Err(mismatch(field, "a string")),
        }
    }

    /// The integer of an integer field, converted to the field's Rust type.
    pub fn into_int<T: TryFrom<i128>>(self, field: &str) -> Result<T, FormError> {
        match self {
            FieldValue::Integer(i) => T::try_from(i).map_err(|_| {
                FormError::new(
                    field,
                    FormProblem::AboveMaximum {
                        maximum: "the field type's range".into(),
                        value: i.to_string(),
                    },
                )
            }),
            _ => Err(mismatch(field, "a whole number")),
        }
    }

    /// The number of a number field.
    pub fn into_f64(self, field: &str) -> Result<f64, FormError> {
        match self {
            FieldValue::Number(n) => Ok(n),
            #[allow(clippy::cast_precision_loss)]
            FieldValue::Integer(i) => Ok(i as f64),
            _ => Err(mismatch(field, "a number")),
        }
    }

    /// The number of an `f32` field.
    pub fn into_f32(self, field: &str) -> Result<f32, FormError> {
        #[allow(clippy::cast_possible_truncation)]
        self.into_f64(field).map(|f| f as f32)
    }

    /// The boolean of a boolean field.
    pub fn into_bool(self, field: &str) -> Result<bool, FormError> {
        match self {
            FieldValue::Boolean(b) => Ok(b),
            _ => Err(mismatch(field, "a boolean")),
        }
    }

    /// The variant chosen in a single select of an [`ElicitChoice`] enum.
    pub fn into_choice<E: ElicitChoice>(self, field: &str) -> Result<E, FormError> {
        let s = self.into_string(field)?;
        E::from_value(&s).ok_or_else(|| not_a_variant::<E>(field, s))
    }

    /// The values chosen in a multi select of run-time choices.
    pub fn into_strings(self, field: &str) -> Result<Vec<String>, FormError> {
        match self {
            FieldValue::SelectedMany(v) => Ok(v),
            _ => Err(mismatch(field, "an array of strings")),
        }
    }

    /// The variants chosen in a multi select of an [`ElicitChoice`] enum.
    pub fn into_choices<E: ElicitChoice>(self, field: &str) -> Result<Vec<E>, FormError> {
        self.into_strings(field)?
            .into_iter()
            .map(|s| E::from_value(&s).ok_or_else(|| not_a_variant::<E>(field, s)))
            .collect()
    }
}

fn not_a_variant<E: ElicitChoice>(field: &str, value: String) -> FormError {
    let options: Vec<Choice> = E::options().iter().copied().map(Choice::from).collect();
    FormError::new(
        field,
        FormProblem::NotAChoice {
            value,
            allowed: allowed_list(&options),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> JsonObject {
        match v {
            Value::Object(o) => o,
            _ => JsonObject::new(),
        }
    }

    fn text(
        min: Option<u64>,
        max: Option<u64>,
        format: Option<StringFormat>,
    ) -> FieldSpec<'static> {
        FieldSpec {
            name: "t",
            title: None,
            description: None,
            required: true,
            kind: FieldKind::Text {
                min_length: min,
                max_length: max,
                format,
                default: None,
            },
        }
    }

    #[test]
    fn length_counts_characters_not_bytes() {
        let f = text(Some(2), Some(3), None);
        assert!(check_field(&f, &obj(json!({"t": "äöü"}))).is_ok());
        let e = check_field(&f, &obj(json!({"t": "äöüß"}))).unwrap_err();
        assert_eq!(e.problem, FormProblem::TooLong { max: 3, len: 4 });
        let e = check_field(&f, &obj(json!({"t": "ä"}))).unwrap_err();
        assert_eq!(e.problem, FormProblem::TooShort { min: 2, len: 1 });
    }

    #[test]
    fn integers_accept_whole_floats_and_enforce_bounds() {
        let f = FieldSpec {
            name: "n",
            title: None,
            description: None,
            required: true,
            kind: FieldKind::Integer {
                minimum: 0,
                maximum: 255,
                default: None,
            },
        };
        assert_eq!(
            check_field(&f, &obj(json!({"n": 5.0}))).unwrap(),
            Some(FieldValue::Integer(5))
        );
        assert!(matches!(
            check_field(&f, &obj(json!({"n": 5.5})))
                .unwrap_err()
                .problem,
            FormProblem::NotInteger { .. }
        ));
        assert!(matches!(
            check_field(&f, &obj(json!({"n": 256})))
                .unwrap_err()
                .problem,
            FormProblem::AboveMaximum { .. }
        ));
        assert!(matches!(
            check_field(&f, &obj(json!({"n": -1}))).unwrap_err().problem,
            FormProblem::BelowMinimum { .. }
        ));
        assert!(matches!(
            check_field(&f, &obj(json!({"n": "5"})))
                .unwrap_err()
                .problem,
            FormProblem::WrongType { .. }
        ));
    }

    #[test]
    fn multi_select_rejects_duplicates_and_unknown_values() {
        let f = FieldSpec {
            name: "m",
            title: None,
            description: None,
            required: true,
            kind: FieldKind::MultiSelect {
                options: vec!["a".into(), "b".into()].into(),
                min_items: Some(1),
                max_items: Some(2),
            },
        };
        assert!(check_field(&f, &obj(json!({"m": ["a", "b"]}))).is_ok());
        assert!(matches!(
            check_field(&f, &obj(json!({"m": ["a", "a"]})))
                .unwrap_err()
                .problem,
            FormProblem::DuplicateItem { .. }
        ));
        assert!(matches!(
            check_field(&f, &obj(json!({"m": ["c"]})))
                .unwrap_err()
                .problem,
            FormProblem::NotAChoice { .. }
        ));
        assert!(matches!(
            check_field(&f, &obj(json!({"m": []}))).unwrap_err().problem,
            FormProblem::TooFewItems { .. }
        ));
    }

    #[test]
    fn error_display_names_field_and_fix() {
        let e = FormError::new("email", FormProblem::BadFormat { format: "email" });
        assert_eq!(e.to_string(), "form field `email`: is not a valid email");
    }

    #[test]
    fn schema_prints_whole_float_bounds_without_fraction() {
        let f = FieldSpec {
            name: "x",
            title: Some("X"),
            description: None,
            required: false,
            kind: FieldKind::Number {
                minimum: Some(0.0),
                maximum: Some(1.5),
                default: None,
            },
        };
        let s = serde_json::to_string(&requested_schema(&[f])).unwrap();
        assert_eq!(
            s,
            r#"{"type":"object","properties":{"x":{"type":"number","title":"X","minimum":0,"maximum":1.5}}}"#
        );
    }

    mod binding {
        use super::super::*;
        use proptest::prelude::*;

        fn bytes(fields: &[FieldSpec]) -> Vec<u8> {
            let mut out = Vec::new();
            write_fields_binding(fields, &mut out).unwrap();
            out
        }

        fn schema(fields: &[FieldSpec]) -> String {
            serde_json::to_string(&requested_schema(fields)).unwrap()
        }

        // Small alphabets, so that equal and nearly equal forms are generated often.
        fn word() -> impl Strategy<Value = &'static str> {
            prop::sample::select(vec!["a", "b", "ab", ""])
        }

        fn choice() -> impl Strategy<Value = Choice> {
            (word(), prop::option::of(word())).prop_map(|(v, t)| Choice {
                value: v.to_owned(),
                title: t.map(str::to_owned),
            })
        }

        fn kind() -> impl Strategy<Value = FieldKind<'static>> {
            prop_oneof![
                (
                    prop::option::of(0u64..3),
                    prop::option::of(0u64..3),
                    prop::option::of(prop::sample::select(vec![
                        StringFormat::Email,
                        StringFormat::Uri,
                        StringFormat::Date,
                        StringFormat::DateTime,
                    ])),
                    prop::option::of(word()),
                )
                    .prop_map(|(min_length, max_length, format, d)| {
                        FieldKind::Text {
                            min_length,
                            max_length,
                            format,
                            default: d.map(str::to_owned),
                        }
                    }),
                (-2i128..2, -2i128..2, prop::option::of(-2i128..2)).prop_map(
                    |(minimum, maximum, default)| FieldKind::Integer {
                        minimum,
                        maximum,
                        default,
                    }
                ),
                (
                    prop::option::of(prop::sample::select(vec![0.0, 0.5, -1.0])),
                    prop::option::of(prop::sample::select(vec![0.0, 0.5])),
                )
                    .prop_map(|(minimum, maximum)| FieldKind::Number {
                        minimum,
                        maximum,
                        default: None,
                    }),
                prop::option::of(any::<bool>()).prop_map(|default| FieldKind::Boolean { default }),
                (
                    prop::collection::vec(choice(), 0..3),
                    prop::option::of(word())
                )
                    .prop_map(|(options, d)| FieldKind::Select {
                        options: options.into(),
                        default: d.map(str::to_owned),
                    }),
                (
                    prop::collection::vec(choice(), 0..3),
                    prop::option::of(0u64..2),
                    prop::option::of(0u64..2),
                )
                    .prop_map(|(options, min_items, max_items)| {
                        FieldKind::MultiSelect {
                            options: options.into(),
                            min_items,
                            max_items,
                        }
                    }),
            ]
        }

        fn field() -> impl Strategy<Value = FieldSpec<'static>> {
            (
                prop::sample::select(vec!["x", "y"]),
                prop::option::of(word()),
                prop::option::of(word()),
                any::<bool>(),
                kind(),
            )
                .prop_map(|(name, title, description, required, kind)| FieldSpec {
                    name,
                    title,
                    description,
                    required,
                    kind,
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            /// The binding is a function of the declaration, and two declarations whose wire
            /// schemas differ never share a binding (so a changed form is always noticed).
            #[test]
            fn differing_schemas_never_share_a_binding(
                a in prop::collection::vec(field(), 0..3),
                b in prop::collection::vec(field(), 0..3),
            ) {
                prop_assert_eq!(bytes(&a), bytes(&a.clone()));
                if schema(&a) != schema(&b) {
                    prop_assert_ne!(bytes(&a), bytes(&b));
                }
                if a == b {
                    prop_assert_eq!(bytes(&a), bytes(&b));
                }
            }
        }

        #[test]
        fn every_part_of_a_choice_is_bound() {
            let select = |options: Vec<Choice>| {
                vec![FieldSpec {
                    name: "pick",
                    title: None,
                    description: None,
                    required: true,
                    kind: FieldKind::Select {
                        options: options.into(),
                        default: None,
                    },
                }]
            };
            let base = bytes(&select(vec![Choice::titled("n-1", "One"), "n-2".into()]));
            for other in [
                select(vec![Choice::titled("n-1", "One")]),
                select(vec![Choice::titled("n-1", "Two"), "n-2".into()]),
                select(vec![Choice::titled("n-1", "One"), "n-3".into()]),
                select(vec!["n-2".into(), Choice::titled("n-1", "One")]),
                select(vec![
                    Choice::titled("n-1", "One"),
                    Choice::titled("n-2", "n-2"),
                ]),
            ] {
                assert_ne!(base, bytes(&other));
            }
        }
    }
}
