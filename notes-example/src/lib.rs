//! The reference notes server: Markdown notes in real directories, listed and deleted through
//! MCP tools, where every deletion needs the user's explicit, signed, single-use confirmation.
//!
//! - [`notes`]: the domain (workspaces, notes, titles), on top of `mcp_runtime::scope`.
//! - [`cli`]: the command line.

pub mod cli;
pub mod notes;
