//! Helpers shared by the black-box integration tests.
