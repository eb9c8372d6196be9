//! `cargo xtask wheel`: the `agentgraph` Python package as a wheel (abi3, CPython ≥ 3.10),
//! built by maturin in release from `agent-py/`, into `<target dir>/wheels`.
//!
//! maturin comes from agent-py's test venv (`agent-py/tests/python.sh`, pinned, cached in
//! `~/.cache/agentgraph`), so nothing is installed into the user's own Python.

use std::path::{Path, PathBuf};
use std::process::Command;

use xtask::sourcegen::project_root;

use crate::shell;

pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(extra) = args.first() {
        return Err(format!("`wheel` takes no arguments (got `{extra}`)"));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| project_root().join("target"));
    let wheels = target.join("wheels");
    build(&wheels)?;
    eprintln!("wheel in {}", wheels.display());
    Ok(())
}

/// Builds the release wheel into `wheels` and returns its path (the newest `.whl` there).
pub fn build(wheels: &Path) -> Result<PathBuf, String> {
    let root = project_root();
    let script = root.join("agent-py/tests/python.sh");
    let out = Command::new(&script)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let python = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let mut build = Command::new(&python);
    build
        .current_dir(&root)
        .args([
            "-m",
            "maturin",
            "build",
            "--release",
            "-m",
            "agent-py/Cargo.toml",
            "-o",
        ])
        .arg(wheels);
    shell::run(build)?;
    let entries =
        std::fs::read_dir(wheels).map_err(|e| format!("cannot read {}: {e}", wheels.display()))?;
    entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "whl"))
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .map(|e| e.path())
        .ok_or_else(|| format!("maturin left no wheel in {}", wheels.display()))
}
