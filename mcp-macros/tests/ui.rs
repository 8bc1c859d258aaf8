//! Compile-fail tests: every shape the macros reject, with the checked-in diagnostics
//! (`TRYBUILD=overwrite` regenerates `tests/ui/*.stderr`; review each message after doing so).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
