//! `transport`: not written yet.
