//! Re-checking submitted content against every constraint of its [`FieldSpec`]s: the
//! server-side half of form validation (client-side checks create no trust).

use super::*;

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

pub(super) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(super) fn wrong(expected: &'static str, v: &Value) -> FormProblem {
    FormProblem::WrongType {
        expected,
        got: json_kind(v),
    }
}

pub(super) fn allowed_list(options: &[Choice]) -> String {
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

pub(super) fn check_choice(options: &[Choice], v: &str) -> Result<(), FormProblem> {
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
pub(super) fn whole(n: &Number) -> Result<i128, FormProblem> {
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

pub(super) fn check_value(kind: &FieldKind<'_>, v: &Value) -> Result<FieldValue, FormProblem> {
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

pub(super) fn default_value(kind: &FieldKind<'_>) -> Option<Value> {
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
    match mcp_types::members::member(content, spec.name) {
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

pub(super) fn mismatch(field: &str, expected: &'static str) -> FormError {
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

pub(super) fn not_a_variant<E: ElicitChoice>(field: &str, value: String) -> FormError {
    let options: Vec<Choice> = E::options().iter().copied().map(Choice::from).collect();
    FormError::new(
        field,
        FormProblem::NotAChoice {
            value,
            allowed: allowed_list(&options),
        },
    )
}
