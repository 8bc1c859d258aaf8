// The crate documentation is the tool author's guide; every example in it is a doctest.
#![doc = include_str!("guide.md")]

#[doc(hidden)]
#[path = "macro_support.rs"]
pub mod __macro_support_v1;
#[cfg(feature = "client")]
pub mod client;
pub mod context;
pub mod form;
#[cfg(feature = "legacy-2025-11-25")]
pub mod legacy;
pub mod log_safe;
mod members;
pub mod prelude;
mod principal;
pub mod prompt;
pub mod replay;
pub mod resource;
pub mod router;
#[cfg(feature = "scope")]
pub mod sandbox;
#[cfg(feature = "scope")]
pub mod scope;
pub mod server;
pub mod state;
pub mod tool;
pub mod transport;
pub mod uri_template;

pub use mcp_macros::{ElicitChoice, ElicitForm, prompt, resource, tool};
pub use principal::Principal;
pub use server::{Server, ServerBuilder};
