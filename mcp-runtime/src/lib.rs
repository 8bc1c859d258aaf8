//! A stateless MCP 2026-07-28 server runtime.
//!
//! Any instance can finish a flow another instance began, using nothing but the retry request,
//! the shared signing key and the shared replay store.

pub mod context;
pub mod form;
mod form_shim;
pub mod prelude;
mod principal;
pub mod replay;
pub mod router;
pub mod sandbox;
pub mod scope;
pub mod server;
pub mod state;
pub mod tool;
pub mod transport;

pub use principal::Principal;
pub use server::{Server, ServerBuilder};
