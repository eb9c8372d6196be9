//! `cargo xtask wheel`: the `agentgraph` Python package as a wheel (abi3, CPython ≥ 3.10),
//! built by maturin in release from `agent-py/`, into `<target dir>/wheels`.
//!
//! maturin comes from agent-py's test venv (`agent-py/tests/python.sh`, pinned, cached in
//! `~/.cache/agentgraph`), so nothing is installed into the user's own Python.

use std::path::PathBuf;
use std::process::Command;

use xtask::sourcegen::project_root;

use crate::shell;

pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(extra) = args.first() {
        return Err(format!("`wheel` takes no arguments (got `{extra}`)"));
    }
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
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let wheels = target.join("wheels");
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
        .arg(&wheels);
    shell::run(build)?;
    eprintln!("wheel in {}", wheels.display());
    Ok(())
}
