//! `context`: not written yet.
