//! Macro diagnostics (trybuild): every user-facing error of `#[tool]` points at the user's
//! tokens and says how to fix it; the pass case shows the accepted shapes.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
