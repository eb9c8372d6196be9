//! `cargo xtask bench --python [--quick] [--shape NAME].. [--saver KIND].. [--api ..]
//! [--processes N]`: LangGraph's benchmark shapes (`xtask/bench/langgraph_shapes.py`) as
//! Python programs, once on `langgraph==1.2.22` and once on agentgraph's Python package
//! (`agent-py`), in one invocation: the very same script, nodes and harness, the second time
//! with `agentgraph.compat.install()` first (its `--agentgraph`). Each shape runs without a
//! saver, with the memory saver and with SQLite.
//!
//! The wheel is built in release by maturin (as `cargo xtask wheel`) and unpacked onto the
//! bench venv's `PYTHONPATH` (the venv of `--vs-langgraph`, `<target dir>/bench/venv`). Files
//! go to `<target dir>/bench/`: `python-langgraph.jsonl`, `python-agentgraph.jsonl` and the
//! table, `python.md` (`xtask/bench/python_report.py` writes it). A shape agentgraph cannot
//! run yet is a row that says "not yet" and why; the bench goes on.

use std::path::Path;
use std::process::{Command, Stdio};

use xtask::sourcegen::{display_path, project_root};

use crate::bench::{load_average, machine, target_dir, venv};
use crate::shell;

const USAGE: &str = "usage: cargo xtask bench --python [--quick] [--shape NAME].. [--saver none|memory|sqlite].. [--api async|sync|both] [--processes N]";

pub fn run(args: &[String]) -> Result<(), String> {
    let mut script_args: Vec<String> = vec!["--no-storage".into()];
    let mut api = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--python" => {}
            "--quick" => script_args.push(arg.clone()),
            "--shape" | "--saver" | "--processes" => {
                script_args.extend([arg.clone(), it.next().ok_or(USAGE)?.clone()]);
            }
            "--api" => api = Some(it.next().ok_or(USAGE)?.clone()),
            _ => return Err(format!("unknown argument `{arg}`\n{USAGE}")),
        }
    }
    script_args.extend(["--api".into(), api.unwrap_or_else(|| "async".into())]);

    let root = project_root();
    let dir = target_dir(&root).join("bench");
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create {}: {e}", display_path(&dir)))?;
    let load_before = load_average();
    eprintln!(
        "== bench --python: {}, load average {load_before}",
        machine()
    );

    eprintln!("\n== bench --python: the agentgraph wheel (release)");
    let wheels = dir.join("python-wheel");
    let _ = std::fs::remove_dir_all(&wheels);
    let wheel = crate::wheel::build(&wheels)?;
    let python = venv(&root, &dir)?;
    let site = dir.join("python-site");
    let _ = std::fs::remove_dir_all(&site);
    let mut unpack = Command::new(&python);
    unpack.args(["-m", "zipfile", "-e"]).arg(&wheel).arg(&site);
    shell::run(unpack)?;

    let script = root.join("xtask/bench/langgraph_shapes.py");
    let theirs = dir.join("python-langgraph.jsonl");
    let ours = dir.join("python-agentgraph.jsonl");
    eprintln!("\n== bench --python: LangGraph 1.2.22");
    shapes(&python, &script, &script_args, None, &theirs)?;
    eprintln!("\n== bench --python: agentgraph (compat.install())");
    shapes(&python, &script, &script_args, Some(&site), &ours)?;

    eprintln!("\n== bench --python: report");
    let report = dir.join("python.md");
    let mut cmd = Command::new(&python);
    cmd.arg(root.join("xtask/bench/python_report.py"))
        .arg(&theirs)
        .arg(&ours)
        .arg("--out")
        .arg(&report)
        .arg("--machine")
        .arg(format!(
            "{}; load average (1, 5, 15 min) {load_before} before, {} after",
            machine(),
            load_average()
        ));
    shell::run(cmd)?;
    let text = std::fs::read_to_string(&report)
        .map_err(|e| format!("cannot read {}: {e}", display_path(&report)))?;
    println!("{text}");
    eprintln!("(also in {})", display_path(&report));
    Ok(())
}

/// Runs the shapes script, its JSON lines into `out`. Failed cells are lines of their own
/// (the script goes on and exits non-zero), so only a script that could not run is an error.
fn shapes(
    python: &Path,
    script: &Path,
    args: &[String],
    agentgraph: Option<&Path>,
    out: &Path,
) -> Result<(), String> {
    let mut cmd = Command::new(python);
    cmd.arg(script).args(args);
    if let Some(site) = agentgraph {
        cmd.arg("--agentgraph").env("PYTHONPATH", site);
    }
    let file = std::fs::File::create(out)
        .map_err(|e| format!("cannot create {}: {e}", display_path(out)))?;
    cmd.stdout(Stdio::from(file));
    eprintln!("(JSON lines go to {})", display_path(out));
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {}: {e}", display_path(script)))?;
    let lines = std::fs::read_to_string(out).unwrap_or_default();
    if !status.success() && lines.trim().is_empty() {
        return Err(format!("{} failed ({status})", display_path(script)));
    }
    Ok(())
}
