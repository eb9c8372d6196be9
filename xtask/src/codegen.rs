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
//! diff). It finds them by looking for `fn codegen_` in the workspace members' `src/` and
//! `tests/` and builds only the test targets that hold one (`--lib`, `--test <name>`), so it
//! is quick enough to run before every commit; it keeps `--workspace` so features resolve as
//! in `cargo test --workspace` and nothing is compiled twice. The test harness's output is
//! printed only when something fails; all is well in one line. A new generator only needs a
//! test whose name starts with `codegen_` that calls `xtask::sourcegen::ensure_dir`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use xtask::sourcegen::{MODE_ENV, display_path, project_root};

use crate::shell;

/// The prefix of every generator test's name.
pub const TEST_PREFIX: &str = "codegen_";

/// The cargo target selection that builds a generator: a library's unit tests or an
/// integration test.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    Lib,
    Test(String),
}

impl Target {
    fn args(&self) -> Vec<String> {
        match self {
            Target::Lib => vec!["--lib".to_owned()],
            Target::Test(name) => vec!["--test".to_owned(), name.clone()],
        }
    }
}

/// Runs the command.
pub fn run(args: &[String]) -> Result<(), String> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => return Err("usage: cargo xtask codegen [--check]".to_owned()),
    };
    let root = project_root();
    let generators = generators(&root)?;
    let mut targets: Vec<Target> = generators.iter().map(|(_, t)| t.clone()).collect();
    targets.sort();
    targets.dedup();

    let mut cmd = shell::cargo();
    cmd.env(MODE_ENV, if check { "check" } else { "write" })
        .args(["test", "--workspace", "--no-fail-fast", "--quiet"])
        .args(targets.iter().flat_map(Target::args))
        .args(["--", TEST_PREFIX]);
    if !check {
        // Shows the generators' "updated <file>" lines.
        cmd.arg("--nocapture");
    }
    let started = Instant::now();
    let outcome = shell::run_quiet(cmd);
    let files: Vec<String> = generators
        .iter()
        .map(|(path, _)| display_path(path))
        .collect();
    match outcome {
        Ok(()) if check => {
            eprintln!(
                "codegen: every generated file is up to date ({} in {:.1} s)",
                files.join(", "),
                started.elapsed().as_secs_f64()
            );
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

/// Every file of the workspace members that holds a generator (`fn codegen_`), with the
/// target that builds it, sorted by path.
fn generators(root: &Path) -> Result<Vec<(PathBuf, Target)>, String> {
    let mut found = Vec::new();
    for member in members(root)? {
        let dir = root.join(&member);
        for path in rust_files(&dir.join("src")) {
            if holds_generator(&path) {
                found.push((path, Target::Lib));
            }
        }
        for path in rust_files(&dir.join("tests")) {
            if !holds_generator(&path) {
                continue;
            }
            // `tests/name.rs` is the test `name`; `tests/name/main.rs` too.
            let Ok(rel) = path.strip_prefix(dir.join("tests")) else {
                continue;
            };
            let mut parts = rel.components();
            let first = parts
                .next()
                .map(|c| c.as_os_str().to_string_lossy().into_owned());
            let name = match (first, parts.next()) {
                (Some(file), None) => file.strip_suffix(".rs").map(str::to_owned),
                (Some(dir), Some(_)) if rel.ends_with("main.rs") => Some(dir),
                _ => None,
            };
            if let Some(name) = name {
                found.push((path, Target::Test(name)));
            }
        }
    }
    found.sort();
    if found.is_empty() {
        return Err(format!(
            "no generator found: no `fn {TEST_PREFIX}` in the src/ or tests/ of {}",
            display_path(&root.join("Cargo.toml"))
        ));
    }
    Ok(found)
}

/// The member directories listed in the workspace's `members = [...]`.
fn members(root: &Path) -> Result<Vec<String>, String> {
    let manifest = root.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .map_err(|e| format!("cannot read {}: {e}", manifest.display()))?;
    // `members = [ ... ]`, on one line or spread over several.
    let start = text
        .lines()
        .map(str::trim_start)
        .find(|l| l.starts_with("members") && l["members".len()..].trim_start().starts_with('='))
        .and_then(|line| text.find(line))
        .ok_or_else(|| format!("{} has no `members = [...]` list", manifest.display()))?;
    let rest = &text[start..];
    let open = rest.find('[');
    let close = rest.find(']');
    let list = match (open, close) {
        (Some(open), Some(close)) if open < close => &rest[open + 1..close],
        _ => {
            return Err(format!(
                "{}: `members` is not a `[...]` list",
                manifest.display()
            ));
        }
    };
    Ok(list
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(str::to_owned)
        .collect())
}

/// Whether a line of the file declares a `fn codegen_*` (comments that name it do not count).
fn holds_generator(path: &Path) -> bool {
    let declares = |line: &str| {
        let line = line.trim_start();
        let line = line.strip_prefix("pub ").unwrap_or(line);
        let line = line.strip_prefix("async ").unwrap_or(line);
        line.strip_prefix("fn ")
            .is_some_and(|rest| rest.starts_with(TEST_PREFIX))
    };
    std::fs::read_to_string(path).is_ok_and(|text| text.lines().any(declares))
}

/// The `.rs` files below `dir`, sorted; none when it does not exist. `tests/ui` holds
/// trybuild fixtures, not tests, and is skipped.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                if !path.ends_with("tests/ui") {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_workspace_generators() {
        let root = project_root();
        let found = generators(&root).unwrap();
        let shown: Vec<(String, Target)> = found
            .iter()
            .map(|(p, t)| (display_path(p), t.clone()))
            .collect();
        assert!(
            shown.contains(&("agent-macros/src/expansions.rs".to_owned(), Target::Lib)),
            "{shown:?}"
        );
        assert!(
            shown.iter().all(|(p, _)| !p.starts_with("xtask/")),
            "this file names the prefix but holds no generator: {shown:?}"
        );
    }

    #[test]
    fn members_are_read_from_the_manifest() {
        let members = members(&project_root()).unwrap();
        assert!(members.contains(&"agent-macros".to_owned()), "{members:?}");
        assert!(members.contains(&"xtask".to_owned()), "{members:?}");
    }
}
