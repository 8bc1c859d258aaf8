//! The notes benchmark served with this framework, for side-by-side load runs against the
//! same server written with the official Rust SDK (`/work/shared/bench/rmcp-notes`).
//!
//! [`notes`] holds the tools; the `bench-server` binary serves them over Streamable HTTP.
//! [`lean`] is an instrument for splitting an MRTR leg's cost between the framework and the tool.
//! The module is also compiled into `mcp-runtime/benches/dispatch.rs` (by path), so the
//! in-process numbers and the HTTP numbers measure the same code.

pub mod lean;
pub mod notes;
