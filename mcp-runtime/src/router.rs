//! `router`: not written yet.
