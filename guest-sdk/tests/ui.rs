//! Compile-time checks of the export macros: accepted signatures build, and
//! wrong ones fail with a message that says what is expected.

#[test]
fn export_macros() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass_*.rs");
    t.compile_fail("tests/ui/fail_*.rs");
}
