//! `tool`: not written yet.
