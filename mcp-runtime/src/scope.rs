//! `scope`: not written yet.
