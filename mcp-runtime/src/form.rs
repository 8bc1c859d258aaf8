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

mod check;
mod error;
mod field;
mod format;
mod schema;

pub use check::*;
pub use error::*;
pub use field::*;
pub use schema::*;

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

    /// Writes the `requestedSchema` for `choices` as JSON: what the runtime sends on the leg
    /// that asks.
    ///
    /// Contract: exactly the bytes serde_json writes for [`ElicitForm::requested_schema`] of
    /// the same `choices`. The default serializes that schema; `#[derive(ElicitForm)]` writes
    /// it from its field declarations with [`write_fields_schema`] instead, which builds no
    /// schema. A hand-written form overriding it must keep the contract: the runtime reads
    /// back what any form but a derived one writes before sending it, and fails the call with
    /// `-32603` naming the form when it is not a `requestedSchema` (a server bug).
    fn write_requested_schema(choices: &Self::Choices, out: &mut Vec<u8>) {
        // Serialising a schema into a Vec cannot fail.
        let _ = serde_json::to_writer(out, &Self::requested_schema(choices));
    }

    /// Whether [`ElicitForm::write_requested_schema`] is the derive's writer, whose bytes a
    /// property test holds to serde's for every field list: the runtime then sends them
    /// without reading them back. `#[derive(ElicitForm)]` sets it; a hand-written form leaves
    /// it `false`, so what it writes is checked on every ask.
    #[doc(hidden)]
    const SCHEMA_WRITER_IS_DERIVED: bool = false;

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
    /// The same options as a constant, so that `#[derive(ElicitForm)]` can check a field's
    /// `default` and `min_items` against them at compile time (the derive sets it). `None`,
    /// the default, skips those checks.
    const STATIC_OPTIONS: Option<&'static [StaticChoice]> = None;
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
        fn word() -> impl Strategy<Value = &'static str> + Clone {
            prop::sample::select(vec!["a", "b", "ab", ""])
        }

        /// A choice whose value and label are drawn from `text`.
        fn choice_of(
            text: impl Strategy<Value = &'static str> + Clone,
        ) -> impl Strategy<Value = Choice> {
            (text.clone(), prop::option::of(text)).prop_map(|(v, t)| Choice {
                value: v.to_owned(),
                title: t.map(str::to_owned),
            })
        }

        fn choice() -> impl Strategy<Value = Choice> {
            choice_of(word())
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

        /// A field named from `names`, labelled from `text`, of a kind from `kind`.
        fn field_of(
            names: Vec<&'static str>,
            text: impl Strategy<Value = &'static str> + Clone,
            kind: impl Strategy<Value = FieldKind<'static>>,
        ) -> impl Strategy<Value = FieldSpec<'static>> {
            (
                prop::sample::select(names),
                prop::option::of(text.clone()),
                prop::option::of(text),
                any::<bool>(),
                kind,
            )
                .prop_map(|(name, title, description, required, kind)| FieldSpec {
                    name,
                    title,
                    description,
                    required,
                    kind,
                })
        }

        fn field() -> impl Strategy<Value = FieldSpec<'static>> {
            field_of(vec!["x", "y"], word(), kind())
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

        /// Strings that need escaping, and non-ASCII, beside plain ones.
        fn text() -> impl Strategy<Value = &'static str> + Clone {
            prop::sample::select(vec![
                "a",
                "",
                "q\"uote",
                "back\\slash",
                "line\nbreak",
                "ctl\u{1}",
                "é☃",
            ])
        }

        fn rich_choice() -> impl Strategy<Value = Choice> {
            choice_of(text())
        }

        fn float() -> impl Strategy<Value = f64> {
            prop::sample::select(vec![
                0.0,
                -0.0,
                0.5,
                -1.0,
                0.1,
                -2.5e-7,
                1e300,
                9.0e15,
                f64::NAN,
                f64::INFINITY,
            ])
        }

        fn int() -> impl Strategy<Value = i128> {
            prop_oneof![
                -3i128..3,
                prop::sample::select(vec![
                    i128::from(i64::MIN),
                    i128::from(i64::MAX),
                    i128::from(u64::MAX),
                    i128::MAX,
                    i128::MIN,
                ]),
            ]
        }

        fn rich_kind() -> impl Strategy<Value = FieldKind<'static>> {
            let formats = prop::option::of(prop::sample::select(vec![
                StringFormat::Email,
                StringFormat::Uri,
                StringFormat::Date,
                StringFormat::DateTime,
            ]));
            prop_oneof![
                (
                    prop::option::of(any::<u64>()),
                    prop::option::of(0u64..3),
                    formats,
                    prop::option::of(text()),
                )
                    .prop_map(|(min_length, max_length, format, d)| {
                        FieldKind::Text {
                            min_length,
                            max_length,
                            format,
                            default: d.map(str::to_owned),
                        }
                    }),
                (int(), int(), prop::option::of(int())).prop_map(|(minimum, maximum, default)| {
                    FieldKind::Integer {
                        minimum,
                        maximum,
                        default,
                    }
                }),
                (
                    prop::option::of(float()),
                    prop::option::of(float()),
                    prop::option::of(float()),
                )
                    .prop_map(|(minimum, maximum, default)| FieldKind::Number {
                        minimum,
                        maximum,
                        default,
                    }),
                prop::option::of(any::<bool>()).prop_map(|default| FieldKind::Boolean { default }),
                (
                    prop::collection::vec(rich_choice(), 0..4),
                    prop::option::of(text())
                )
                    .prop_map(|(options, d)| FieldKind::Select {
                        options: options.into(),
                        default: d.map(str::to_owned),
                    }),
                (
                    prop::collection::vec(rich_choice(), 0..4),
                    prop::option::of(any::<u64>()),
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

        fn rich_field() -> impl Strategy<Value = FieldSpec<'static>> {
            // Repeated names now and then: a later field replaces an earlier one.
            field_of(vec!["x", "y", "n\"ame", "ü"], text(), rich_kind())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            /// The schema written from the declarations is the one built from them, byte for
            /// byte as serde writes it, and reads back as the same schema.
            #[test]
            fn the_written_schema_is_the_built_one(
                fields in prop::collection::vec(rich_field(), 0..5),
            ) {
                let mut written = Vec::new();
                write_fields_schema(&fields, &mut written);
                let built = requested_schema(&fields);
                prop_assert_eq!(
                    String::from_utf8(written.clone()).unwrap(),
                    serde_json::to_string(&built).unwrap()
                );
                let read: mcp_types::RequestedSchema = serde_json::from_slice(&written).unwrap();
                prop_assert_eq!(read, built);
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
