//! The reference notes server: Markdown notes in real directories, listed and deleted through
//! MCP tools, where every deletion needs the user's explicit, signed, single-use confirmation.
//!
//! - [`notes`]: the domain (workspaces, notes, titles), on top of `mcp_runtime::scope`.
//! - [`backend`]: where notes live (files, SQLite, PostgreSQL) behind [`backend::NotesBackend`].
//! - [`tools`]: `notes_list` and `notes_delete`, declared with `#[tool]`, and the server.
//! - [`connect`]: `notes_connect_export`, an out-of-band step via URL-mode elicitation.
//! - [`export`]: `notes_export`, a long-running tool that runs as a task when the client
//!   supports the tasks extension.
//! - [`serve`]: `notes-example serve` (config, sandbox, stdio or HTTP).
//! - [`demo`]: the in-process demo and its transcript.
//! - [`cli`]: the command line.
//! - [`telemetry`]: OpenTelemetry export (`--otlp-endpoint`).

pub mod backend;
pub mod cli;
pub mod connect;
pub mod demo;
pub mod export;
pub mod notes;
pub mod serve;
pub mod telemetry;
pub mod tools;
