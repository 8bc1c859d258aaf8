//! `sandbox`: not written yet.
