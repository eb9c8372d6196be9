//! `cargo xtask codegen [--check]`: every generated file of the workspace, written or verified.
//!
//! The generators are ordinary tests named `codegen_*` next to what they describe, so plain
//! `cargo test` catches a stale file too:
//!
//! - `agent-macros/src/expansions.rs`: pretty-printed expansions of the macros on
//!   representative inputs, in `agent-macros/expansions/*.rs`;
//! - `agent-flows/tests/diagrams.rs`: the Mermaid diagram of every flow in
//!   the flow registry (`agent_flows::FLOWS`), in `docs/graphs/*.md`.
//!
//! This command runs exactly those tests, with `AGENTGRAPH_CODEGEN=write` (they update the
//! files) or, with `--check`, `AGENTGRAPH_CODEGEN=check` (they fail on any difference, with a
//! diff). It builds with `--workspace` like `cargo test --workspace`, so after a test run
//! nothing is compiled again. A new generator only needs a test whose name starts with
//! `codegen_` that calls `xtask::sourcegen::ensure_dir`.

use xtask::sourcegen::MODE_ENV;

use crate::shell;

/// The prefix of every generator test's name.
pub const TEST_PREFIX: &str = "codegen_";

/// Runs the command.
pub fn run(args: &[String]) -> Result<(), String> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => return Err("usage: cargo xtask codegen [--check]".to_owned()),
    };
    let mut cmd = shell::cargo();
    cmd.env(MODE_ENV, if check { "check" } else { "write" })
        .args([
            "test",
            "--workspace",
            "--tests",
            "--no-fail-fast",
            "--quiet",
        ])
        .args(["--", TEST_PREFIX]);
    if !check {
        // Shows the generators' "updated <file>" lines.
        cmd.arg("--nocapture");
    }
    match shell::run(cmd) {
        Ok(()) if check => {
            eprintln!("codegen: every generated file is up to date");
            Ok(())
        }
        Ok(()) => {
            eprintln!("codegen: generated files written (see `git status`)");
            Ok(())
        }
        Err(error) if check => Err(format!(
            "{error}\ngenerated files are stale or missing (diffs above): run `cargo xtask codegen`"
        )),
        Err(error) => Err(format!(
            "{error}\ncodegen could not write every file (see above)"
        )),
    }
}
