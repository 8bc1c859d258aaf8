//! Why submitted content was refused: [`FormError`] for code, and [`explain`] for the person
//! who filled in the form.

use super::*;

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

/// Longest stretch of a submitted value quoted back in an explanation.
pub(super) const QUOTE_MAX_CHARS: usize = 60;

/// `value` in typographic quotes, shortened when long and with control characters dropped,
/// so an explanation stays one readable line whatever was submitted.
pub(super) fn quoted(value: &str) -> String {
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
