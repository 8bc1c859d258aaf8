//! The fixture tools of `conformance-server`, grouped by what they exercise.

pub mod content;
// `#[derive(ElicitForm)]` on a form without run-time choices expands to
// `fn choices() -> Self::Choices { () }`, which trips clippy::unused_unit in the user's crate;
// allowed here, narrowly, until the derive emits `{}` instead.
#[allow(clippy::unused_unit)]
pub mod forms;
pub mod mrtr;
pub mod streaming;
