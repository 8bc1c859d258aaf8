//! `form`: not written yet.
