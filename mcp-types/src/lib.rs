//! Typed serde model of the Model Context Protocol 2026-07-28 wire format.
//!
//! This crate holds data types only: no I/O, no async, no runtime logic.
