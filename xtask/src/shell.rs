//! Running cargo from xtask: the `cargo` that runs us (`$CARGO`), from the workspace root,
//! each command echoed before it runs; and the cache directory tools are installed into.

use std::path::PathBuf;
use std::process::Command;

use xtask::sourcegen::{MODE_ENV, project_root};

/// `$CARGO` (the cargo running `cargo xtask`), or `cargo` from `PATH`, in the workspace root.
/// Generated files are only checked unless the caller says otherwise (an exported
/// `AGENTGRAPH_CODEGEN=write` must not make `cargo xtask ci` rewrite them).
pub fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(project_root()).env_remove(MODE_ENV);
    cmd
}

/// Runs `cmd`, echoing it first; an error says which command failed.
pub fn run(mut cmd: Command) -> Result<(), String> {
    let shown = show(&cmd);
    eprintln!("$ {shown}");
    match cmd.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("`{shown}` failed ({status})")),
        Err(error) => Err(format!("cannot run `{shown}`: {error}")),
    }
}

/// Runs `cmd` with its standard output held back, echoing the command first: the output is
/// printed only when the command fails (compiler errors go to standard error and show as they
/// come). An error says which command failed.
pub fn run_quiet(mut cmd: Command) -> Result<(), String> {
    let shown = show(&cmd);
    eprintln!("$ {shown}");
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit());
    match cmd.output() {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => {
            print!("{}", String::from_utf8_lossy(&output.stdout));
            Err(format!("`{shown}` failed ({})", output.status))
        }
        Err(error) => Err(format!("cannot run `{shown}`: {error}")),
    }
}

/// The command as a shell line: environment set on it, program name, arguments.
fn show(cmd: &Command) -> String {
    let mut parts: Vec<String> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some(format!("{}={}", k.to_str()?, v?.to_str()?)))
        .collect();
    let program = cmd.get_program().to_string_lossy();
    // `$CARGO` is an absolute path into the toolchain; `cargo` reads better.
    let program = if program.ends_with("cargo") {
        "cargo".into()
    } else {
        program
    };
    parts.push(program.into_owned());
    parts.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    parts.join(" ")
}

/// `${AGENTGRAPH_CACHE:-~/.cache/agentgraph}`: where tools installed once per machine live
/// (langgraph-api's venv, mdbook).
pub fn cache_dir() -> Result<PathBuf, String> {
    match std::env::var_os("AGENTGRAPH_CACHE") {
        Some(dir) if !dir.is_empty() => Ok(PathBuf::from(dir)),
        _ => std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(".cache/agentgraph"))
            .ok_or_else(|| "neither AGENTGRAPH_CACHE nor HOME is set".to_owned()),
    }
}
