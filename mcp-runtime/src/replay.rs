//! `replay`: not written yet.
