//! The fixture tools of `conformance-server`, grouped by what they exercise.

pub mod catalog;
pub mod classic;
pub mod content;
pub mod forms;
pub mod mrtr;
pub mod schemas;
pub mod streaming;
