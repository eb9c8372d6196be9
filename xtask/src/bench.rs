//! `cargo xtask bench [--vs-langgraph] [--quick] [--shape NAME]..`: LangGraph's benchmark
//! shapes on agentgraph (the `agent-bench` crate's `shapes` bench, release build), each with no
//! checkpointer and every saver, next to a hand-written floor; with `--vs-langgraph`, the same
//! shapes on `langgraph==1.2.22` in Python in the same invocation, and the tables of ratios.
//!
//! Files go to `<target dir>/bench/`: `agentgraph.jsonl`, `langgraph.jsonl`, `report.md`, and
//! the Python venv (`venv/`, created once with the pins of `xtask/bench/requirements.txt`,
//! recreated when they change). Postgres is measured when `AGENTGRAPH_POSTGRES_URL` is set
//! (`source .ci/services/postgres.sh` starts one). `python3` (or `$AGENTGRAPH_PYTHON`) must
//! exist for `--vs-langgraph`; pip fetches from PyPI. The bench counts allocations over
//! mimalloc; `--system-alloc` builds it over the system's allocator instead.
//!
//! `cargo xtask bench server` is the server bench instead (see `bench_server`), `cargo xtask
//! bench store` the store bench (see `bench_store`), `cargo xtask bench --python` the shapes
//! as Python programs on LangGraph and on agentgraph's Python package (see `bench_python`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use xtask::sourcegen::{display_path, project_root};

use crate::shell;

const USAGE: &str = "usage: cargo xtask bench server [..] | cargo xtask bench store [..] | cargo xtask bench --python [..] | cargo xtask bench [--vs-langgraph] [--quick] [--shape NAME].. [--runtime multi|current] [--api async|sync|both] [--processes N] [--system-alloc]";

/// Runs the command (`bench server ..`: the server bench, `bench_server`).
pub fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("server") => return crate::bench_server::run(&args[1..]),
        Some("store") => return crate::bench_store::run(&args[1..]),
        _ => {}
    }
    if args.iter().any(|arg| arg == "--python") {
        return crate::bench_python::run(args);
    }
    let mut vs_langgraph = false;
    let mut quick = false;
    let mut shapes = Vec::new();
    let mut runtime = None;
    let mut api = None;
    let mut processes = None;
    let mut system_alloc = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--vs-langgraph" => vs_langgraph = true,
            "--quick" => quick = true,
            "--shape" => shapes.push(it.next().ok_or(USAGE)?.clone()),
            "--runtime" => runtime = Some(it.next().ok_or(USAGE)?.clone()),
            "--api" => api = Some(it.next().ok_or(USAGE)?.clone()),
            "--processes" => processes = Some(it.next().ok_or(USAGE)?.clone()),
            "--system-alloc" => system_alloc = true,
            _ => return Err(format!("unknown argument `{arg}`\n{USAGE}")),
        }
    }
    let root = project_root();
    let dir = target_dir(&root).join("bench");
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create {}: {e}", display_path(&dir)))?;
    let ours = dir.join("agentgraph.jsonl");
    let theirs = dir.join("langgraph.jsonl");

    let load_before = load_average();
    eprintln!("== bench: {}, load average {load_before}", machine());
    let mut bench_args: Vec<String> = vec!["--out".into(), path_arg(&ours)];
    if quick {
        bench_args.push("--quick".into());
    }
    for shape in &shapes {
        bench_args.extend(["--shape".into(), shape.clone()]);
    }
    if let Some(runtime) = &runtime {
        bench_args.extend(["--runtime".into(), runtime.clone()]);
    }
    if let Some(processes) = &processes {
        bench_args.extend(["--processes".into(), processes.clone()]);
    }
    eprintln!("\n== bench: agentgraph (release build)");
    shell::run(shapes_bench(&bench_args, system_alloc))?;

    let mut report_args = vec!["report".to_owned(), path_arg(&ours)];
    if vs_langgraph {
        let python = venv(&root, &dir)?;
        eprintln!("\n== bench: LangGraph (Python)");
        let script = root.join("xtask/bench/langgraph_shapes.py");
        let mut cmd = Command::new(&python);
        cmd.arg(&script);
        if quick {
            cmd.arg("--quick");
        }
        cmd.args([
            "--api",
            api.as_deref()
                .unwrap_or(if quick { "async" } else { "both" }),
        ]);
        for shape in &shapes {
            cmd.args(["--shape", shape]);
        }
        if let Some(processes) = &processes {
            cmd.args(["--processes", processes]);
        }
        let file = std::fs::File::create(&theirs)
            .map_err(|e| format!("cannot create {}: {e}", display_path(&theirs)))?;
        cmd.stdout(Stdio::from(file));
        eprintln!("(LangGraph's JSON lines go to {})", display_path(&theirs));
        shell::run(cmd)?;
        report_args.push(path_arg(&theirs));
    }

    eprintln!("\n== bench: report");
    let mut cmd = shapes_bench(&report_args, system_alloc);
    let output = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run the report: {e}"))?;
    if !output.status.success() {
        return Err(format!("the report failed ({})", output.status));
    }
    let report = format!(
        "Machine: {}; load average (1, 5, 15 min) {load_before} before, {} after.\n\n{}",
        machine(),
        load_average(),
        String::from_utf8_lossy(&output.stdout)
    );
    println!("{report}");
    let path = dir.join("report.md");
    std::fs::write(&path, &report)
        .map_err(|e| format!("cannot write {}: {e}", display_path(&path)))?;
    eprintln!("(also in {})", display_path(&path));
    Ok(())
}

/// `cargo bench -p agent-bench --bench shapes -- <args>` (the bench profile: release); with
/// `system_alloc`, without the default `mimalloc` feature (the system's allocator).
fn shapes_bench(args: &[String], system_alloc: bool) -> Command {
    let mut cmd = shell::cargo();
    cmd.args(["bench", "-q", "-p", "agent-bench", "--bench", "shapes"]);
    if system_alloc {
        cmd.arg("--no-default-features");
    }
    cmd.arg("--").args(args);
    cmd
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// `$CARGO_TARGET_DIR`, or `target/` of the workspace.
pub(crate) fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

/// The venv's python, creating the venv (or refreshing it when the pins changed).
pub(crate) fn venv(root: &Path, dir: &Path) -> Result<PathBuf, String> {
    let requirements = root.join("xtask/bench/requirements.txt");
    let pins = std::fs::read_to_string(&requirements)
        .map_err(|e| format!("cannot read {}: {e}", display_path(&requirements)))?;
    let venv = dir.join("venv");
    let python = venv.join("bin/python");
    let stamp = venv.join("agentgraph-requirements.txt");
    if python.exists() && std::fs::read_to_string(&stamp).is_ok_and(|s| s == pins) {
        eprintln!("(LangGraph venv: {}, up to date)", display_path(&venv));
        return Ok(python);
    }
    eprintln!(
        "\n== bench: creating the LangGraph venv in {}",
        display_path(&venv)
    );
    let system = std::env::var("AGENTGRAPH_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let mut cmd = Command::new(&system);
    cmd.args(["-m", "venv", "--clear"]).arg(&venv);
    shell::run(cmd)?;
    let mut cmd = Command::new(&python);
    cmd.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "-r",
    ])
    .arg(&requirements);
    shell::run(cmd)?;
    std::fs::write(&stamp, pins)
        .map_err(|e| format!("cannot write {}: {e}", display_path(&stamp)))?;
    Ok(python)
}

/// CPU model, cores and today's date (UTC), for the report.
pub(crate) fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores, {}", today())
}

/// The 1-, 5- and 15-minute load averages (other work on the machine skews timings).
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock (days-to-civil, Howard Hinnant's).
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn today_is_a_date() {
        let date = today();
        assert_eq!(date.len(), 10, "{date}");
        assert!(date.starts_with("20"), "{date}");
    }
}
