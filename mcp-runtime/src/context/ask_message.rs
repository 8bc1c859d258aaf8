//! [`AskMessage`]: the words shown with a question, as text or built on demand.

use std::borrow::Cow;

/// The message shown to the user with an elicitation: plain text (`&str`, `String`,
/// `Cow<str>`, `Box<str>`), or a closure returning a `String` that the form-mode asks
/// (`elicit`, `try_elicit`, `elicit_with_commit`, `elicit_with_mutation`) call only when the
/// question is actually sent. The URL-mode asks (`elicit_url`, `elicit_url_again`) take the
/// same kinds of message and build it on every pass.
///
/// A tool runs from the top on every pass of a flow, and on the retry that brings the answer
/// the question is not sent again: a message built with `format!` is built for nothing on
/// that pass. Pass the closure instead and it is never built there:
///
/// ```
/// # use mcp_runtime::prelude::*;
/// # #[derive(ElicitForm)] struct Confirm { /// Really?
/// #     yes: bool }
/// #[tool(destructive, requires(form_elicitation))]
/// async fn wipe(
///     ctx: &mut RequestContext,
///     /// How many notes there are
///     count: u32,
/// ) -> ToolResult<String> {
///     // Formatted on the pass that asks, skipped on the pass that reads the answer.
///     let message = || format!("Wipe all {count} notes?");
///     match ctx.elicit::<Confirm>("confirm", message, ()).await? {
///         Elicitation::Accepted(c) if c.yes => Ok(format!("wiped {count}")),
///         _ => Ok("nothing wiped".into()),
///     }
/// }
/// ```
///
/// The message is not part of what the sealed state binds (the form, its choices and their
/// labels are), so a message that reads differently on a later pass changes nothing.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the message of an elicitation",
    label = "not text, nor a closure returning a `String`",
    note = "pass text (`&str`, `String`, `Cow<str>`, `Box<str>`), or a closure building it only \
            when the question is sent: `|| format!(\"...\")`; a closure must return a `String` \
            (add `.to_owned()` or `.into()` to one returning `&str`)"
)]
pub trait AskMessage {
    /// The message text.
    fn into_text(self) -> String;
}

impl AskMessage for String {
    fn into_text(self) -> String {
        self
    }
}

impl AskMessage for &str {
    fn into_text(self) -> String {
        self.to_owned()
    }
}

impl AskMessage for &String {
    fn into_text(self) -> String {
        self.clone()
    }
}

impl AskMessage for Cow<'_, str> {
    fn into_text(self) -> String {
        self.into_owned()
    }
}

impl AskMessage for Box<str> {
    fn into_text(self) -> String {
        self.into_string()
    }
}

impl<F: FnOnce() -> String> AskMessage for F {
    fn into_text(self) -> String {
        self()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_text_is_its_text() {
        let owned = String::from("Delete note-14?");
        assert_eq!("Delete note-14?".into_text(), owned);
        assert_eq!((&owned).into_text(), owned);
        assert_eq!(Cow::Borrowed("Delete note-14?").into_text(), owned);
        assert_eq!(Box::<str>::from("Delete note-14?").into_text(), owned);
        assert_eq!(owned.clone().into_text(), owned);
    }

    #[test]
    fn a_closure_runs_only_when_the_text_is_taken() {
        let calls = std::cell::Cell::new(0);
        let message = || {
            calls.set(calls.get() + 1);
            format!("{} notes match", 3)
        };
        assert_eq!(calls.get(), 0);
        assert_eq!(message.into_text(), "3 notes match");
        assert_eq!(calls.get(), 1);
    }
}
