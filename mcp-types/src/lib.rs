//! Typed serde model of the Model Context Protocol 2026-07-28 wire format.
//!
//! This crate holds data types only: no I/O, no async, no runtime logic.
//!
//! Every type carries its spec name (`CallToolRequestParams`, `InputRequiredResult`, ...)
//! and has exactly one path: the crate root, `mcp_types::CallToolRequestParams`. The spec
//! names are unique across the whole schema, so a reader who knows a name from the spec finds
//! it here without knowing how the source groups the types (one private module per protocol
//! concept). The only public modules are [`depth`] (nesting checks) and [`members`] (member
//! lookup in small objects): helpers rather than wire types.
//!
//! Conventions that hold for every type:
//! - Unknown members survive a round trip (a flattened `extra` map); nothing uses
//!   `deny_unknown_fields`, because the spec's objects are open.
//! - Fields the schema types as `number` use [`serde_json::Number`], so `50` never
//!   comes back as `50.0`.
//! - Optional fields are `Option` and skipped when absent, so "absent" and
//!   "default" stay distinguishable (`isError` absent is not `isError: false`).
//!
//! # Finding a wire type
//!
//! - **By its spec name.** A definition of the specification's schema is the Rust type of the
//!   same name: `CallToolRequestParams`, `InputRequiredResult`, `ElicitRequestFormParams`.
//!   Type the name into the search box of these docs.
//! - **By method.** Each method and notification name is a constant beside its types:
//!   `METHOD_TOOLS_CALL` is `"tools/call"`, `METHOD_NOTIFICATION_PROGRESS` is
//!   `"notifications/progress"`.
//! - **By error.** [`ErrorCode`] lists the codes. The constructors of [`ErrorObject`] are named
//!   after the errors (`parse_error`, `header_mismatch`, `rate_limited`, ...), and those with
//!   a `data` shape in the specification fill it in: for example
//!   [`ErrorObject::missing_required_client_capability`] for `-32021`.
//! - **By concept.** The sources have one file per concept, named as the modules below are:
//!   `tools.rs` (`tools/list`, `tools/call`, the `Tool` descriptor), `mrtr.rs` (input requests
//!   and responses), `elicitation.rs` and `form_schema.rs` (form and URL mode), `meta.rs`
//!   (`_meta`), `jsonrpc.rs` (envelopes and their classifier), `errors.rs`, and so on.
//!
//! # No I/O
//!
//! This crate only describes bytes: no sockets or files, no clock, no async runtime, no
//! randomness. Its dependencies are `serde`, `serde_json`, `indexmap` and `thiserror`. The
//! rule keeps the model usable from any runtime, from a client as well as a server, and from
//! the fuzz targets. Code that performs I/O, waits or keeps state belongs in `mcp-runtime`. A
//! helper belongs here when it is a pure function of a message, as `classify_envelope`,
//! `ToolsCall::read`, the depth checks and the member lookups are.
//!
//! # Example
//!
//! Classify an incoming message, read its per-request `_meta`, and answer a request that
//! needs a capability the client did not declare with the spec's exact error:
//!
//! ```
//! use mcp_types::{
//!     ClientCapabilities, ClientMessage, ElicitationCapability, ErrorObject,
//!     JsonRpcErrorResponse, RequestMeta, parse_client_message,
//! };
//!
//! let raw = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{
//!     "name":"notes_delete","arguments":{"title":"TPS"},
//!     "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
//!              "io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}}"#;
//! let ClientMessage::Request(request) = parse_client_message(raw).expect("valid JSON-RPC") else {
//!     unreachable!("this is a request")
//! };
//! let params = request.params.clone().unwrap_or_default();
//! let meta = RequestMeta::from_params(&params).expect("valid _meta");
//! assert_eq!(meta.protocol_version, "2026-07-28");
//!
//! let needed = ClientCapabilities::none().with_elicitation(ElicitationCapability::form());
//! let missing = needed.missing_from(&meta.client_capabilities).expect("form is missing");
//! let error = ErrorObject::missing_required_client_capability(&missing);
//! let response = JsonRpcErrorResponse::new(Some(request.id.clone()), error);
//! assert_eq!(
//!     serde_json::to_value(&response).unwrap()["error"]["data"],
//!     serde_json::json!({"requiredCapabilities": {"elicitation": {"form": {}}}})
//! );
//! ```

// Error responses are returned by value because the contract hands them to the
// transport ready to send, and wire enums mirror the spec's unions 1:1; boxing
// would only add noise to every caller for a rare error path.
#![allow(clippy::result_large_err, clippy::large_enum_variant)]

#[macro_use]
mod macros;
mod serde_util;

mod capabilities;
mod completion;
mod content;
pub mod depth;
mod discover;
mod elicitation;
mod errors;
mod form_schema;
mod jsonrpc;
pub mod members;
mod meta;
mod mrtr;
mod notifications;
mod param_headers;
mod prompts;
mod resources;
mod result;
mod roots;
mod sampling;
mod subscriptions;
mod tasks;
mod tools;
mod tools_call;

pub use capabilities::*;
pub use completion::*;
pub use content::*;
pub use discover::*;
pub use elicitation::*;
pub use errors::*;
pub use form_schema::*;
pub use jsonrpc::*;
pub use meta::*;
pub use mrtr::*;
pub use notifications::*;
pub use param_headers::*;
pub use prompts::*;
pub use resources::*;
pub use result::*;
pub use roots::*;
pub use sampling::*;
pub use subscriptions::*;
pub use tasks::*;
pub use tools::*;
pub use tools_call::*;

/// A JSON object (`{ [key: string]: unknown }` in the spec).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// The protocol revision this crate models.
pub const LATEST_PROTOCOL_VERSION: &str = "2026-07-28";
