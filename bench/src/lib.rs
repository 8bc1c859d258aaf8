//! The notes benchmark served with this framework, for side-by-side load runs against the
//! same server written with the official Rust SDK (`/work/shared/bench/rmcp-notes`).
//!
//! [`notes`] holds the tools; the `bench-server` binary serves them over Streamable HTTP.
//! The module is also compiled into `mcp-runtime/benches/dispatch.rs` (by path), so the
//! in-process numbers and the HTTP numbers measure the same code.

pub mod notes;
