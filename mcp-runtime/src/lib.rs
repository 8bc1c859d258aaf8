//! A stateless MCP 2026-07-28 server runtime.
