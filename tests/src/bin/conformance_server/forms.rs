//! The elicitation forms the fixtures ask users to fill in (schemas the scenarios expect:
//! `{name: string}`, `{ok: boolean}`, `{color: string}`, each field required).

use mcp_runtime::prelude::*;

/// The user's name.
#[derive(ElicitForm)]
pub struct NameForm {
    /// Your name
    pub name: String,
}

/// A yes/no confirmation.
#[derive(ElicitForm)]
pub struct ConfirmForm {
    /// Confirm?
    pub ok: bool,
}

/// The user's favourite colour.
#[derive(ElicitForm)]
pub struct ColorForm {
    /// Your favorite color
    pub color: String,
}
