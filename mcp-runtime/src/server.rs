//! `server`: not written yet.
