//! `state`: not written yet.
