//! Macro diagnostics (trybuild): every user-facing error of `#[derive(GraphState)]` and
//! `#[node]` points at the user's tokens and says how to fix it.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
