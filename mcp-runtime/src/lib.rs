// The crate documentation is the tool author's guide; every example in it is a doctest. Its
// examples use the default edges and the client, so a build without them (the feature matrix)
// gets a short note instead of examples that cannot compile there.
#![cfg_attr(
    all(
        feature = "http",
        feature = "sqlite",
        feature = "scope",
        feature = "legacy-2025-11-25",
        feature = "client"
    ),
    doc = include_str!("guide.md")
)]
#![cfg_attr(
    not(all(
        feature = "http",
        feature = "sqlite",
        feature = "scope",
        feature = "legacy-2025-11-25",
        feature = "client"
    )),
    doc = "A stateless MCP 2026-07-28 server runtime. The tool author's guide is this crate's \
           documentation built with the default features plus `client` \
           (`cargo doc -p mcp-runtime --all-features --open`)."
)]
// The contributor's map (layers, the path of a request, the feature table, extending), in
// every build: its examples need only the core.
#![doc = include_str!("architecture.md")]
// docs.rs (`--cfg docsrs`, nightly) marks every item that needs a Cargo feature with it.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(hidden)]
#[path = "macro_support.rs"]
pub mod __macro_support_v1;
// Lets unit tests include fixtures shared with the integration tests, which name the crate.
#[cfg(test)]
extern crate self as mcp_runtime;

pub mod backend;
#[cfg(feature = "client")]
pub mod client;
pub mod context;
pub mod extract;
pub mod form;
mod handler_error;
mod json_bytes;
#[cfg(feature = "legacy-2025-11-25")]
pub mod legacy;
pub(crate) mod log_safe;
mod mrtr;
pub mod observe;
pub mod prelude;
mod principal;
pub mod prompt;
pub mod rate_limit;
pub mod replay;
pub mod resource;
pub mod router;
#[cfg(feature = "scope")]
pub mod sandbox;
#[cfg(feature = "scope")]
pub mod scope;
mod scratch;
pub mod server;
pub mod service;
pub mod state;
pub mod tasks;
pub mod tool;
pub mod transport;
pub(crate) mod uri_template;
pub mod url_elicitation;

pub use mcp_macros::{ElicitChoice, ElicitForm, args, prompt, resource, tool};
pub use principal::Principal;
