//! `cargo xtask bench server [--no-vs-langgraph] [--quick] [server_bench options]..`: our
//! LangGraph server (`agent-server`'s reference example, release) against langgraph-api
//! (`langgraph dev`, in-memory runtime, `--n-jobs-per-worker 10`) serving the same graphs, in
//! one run: stateless `/runs/wait` requests per second and latency, time to the first SSE
//! event, RSS after 10,000 threads; ours on a SQLite file and, when `AGENTGRAPH_POSTGRES_URL` is
//! set, on a fresh PostgreSQL database with one and two instances. The load generator is
//! `agent-bench`'s `server_bench` binary, which starts and stops every server itself.
//!
//! langgraph-api goes in a venv of its own, cached in
//! `${AGENTGRAPH_CACHE:-~/.cache/agentgraph}/langgraph-api-0.16.7` (pip, PyPI); when it cannot be
//! installed the run goes on without it and says so. Files: `<target dir>/bench/server.json`
//! (the numbers), `server.md` (the tables), `server-work/` (the servers' logs and SQLite file).
//!
//! `--scale` measures reads at scale instead (`agent_bench::scale`): each server filled through
//! its API with 10,000 and then 200,000 threads (`--sizes`), a page of one user's threads, their
//! count and a page of all threads timed at each size, langgraph-api at the smallest; files
//! `server-scale.json` and `server-scale.md`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use xtask::sourcegen::{display_path, project_root};

use crate::{bench, shell};

const USAGE: &str = "usage: cargo xtask bench server [--no-vs-langgraph] [--quick] [--concurrency N] [--seconds N] [--warmup-seconds N] [--stream-runs N] [--threads N] [--client-threads N] [--scale [--sizes N,N..] [--reads N]]";

/// The peer's pins.
const LANGGRAPH_API: &str = "0.16.7";
const LANGGRAPH_CLI: &str = "0.4.40";

/// `server_bench` options passed through as they are.
const PASSED: &[&str] = &[
    "--concurrency",
    "--seconds",
    "--warmup-seconds",
    "--stream-runs",
    "--threads",
    "--client-threads",
    "--sizes",
    "--reads",
];

/// Runs the command.
pub fn run(args: &[String]) -> Result<(), String> {
    let mut vs_langgraph = true;
    let mut scale = false;
    let mut passed = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--vs-langgraph" => vs_langgraph = true,
            "--no-vs-langgraph" => vs_langgraph = false,
            "--scale" => {
                scale = true;
                passed.push(arg.clone());
            }
            "--quick" => passed.extend(
                [
                    "--seconds",
                    "3",
                    "--warmup-seconds",
                    "1",
                    "--stream-runs",
                    "50",
                    "--threads",
                    "1000",
                ]
                .map(String::from),
            ),
            flag if PASSED.contains(&flag) => {
                passed.push(flag.to_owned());
                passed.push(it.next().ok_or(USAGE)?.clone());
            }
            _ => return Err(format!("unknown argument `{arg}`\n{USAGE}")),
        }
    }
    let root = project_root();
    let target = bench::target_dir(&root);
    let dir = target.join("bench");
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create {}: {e}", display_path(&dir)))?;

    eprintln!("== bench server: release builds");
    // One build for both: built apart, their dependencies' features differ and each build
    // recompiles what the other built.
    let mut cmd = shell::cargo();
    cmd.args([
        "build",
        "--release",
        "-p",
        "agent-server",
        "-p",
        "agent-bench",
        "--example",
        "reference",
        "--bin",
        "server_bench",
    ]);
    shell::run(cmd)?;

    let mut notes = Vec::new();
    let name = if scale { "server-scale" } else { "server" };
    let json = dir.join(format!("{name}.json"));
    let mut bench_args: Vec<String> = vec![
        "--ours".into(),
        path_arg(&target.join("release/examples/reference")),
        "--out".into(),
        path_arg(&json),
        "--work".into(),
        path_arg(&dir.join(format!("{name}-work"))),
    ];
    if vs_langgraph {
        match langgraph_venv() {
            Ok(cli) => bench_args.extend([
                "--langgraph".into(),
                path_arg(&cli),
                "--langgraph-config".into(),
                path_arg(&root.join("docs/langgraph-api/capture/langgraph.json")),
            ]),
            Err(e) => {
                eprintln!("langgraph-api: not measured: {e}");
                notes.push(format!(
                    "langgraph-api {LANGGRAPH_API}: not measured, its install failed: {e}"
                ));
            }
        }
    }
    if let Some(quiet) = noisy() {
        eprintln!("warning: {quiet}");
        notes.push(quiet);
    }
    if let Some(commit) = commit(&root) {
        bench_args.extend(["--commit".into(), commit]);
    }
    for note in notes {
        bench_args.extend(["--note".into(), note]);
    }
    bench_args.extend(passed);

    eprintln!("\n== bench server: the servers, one deployment after the other");
    let mut cmd = Command::new(target.join("release/server_bench"));
    cmd.args(&bench_args).current_dir(&root);
    let output = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run server_bench: {e}"))?;
    let tables = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        eprint!("{tables}");
        return Err(format!("server_bench failed ({})", output.status));
    }
    println!("{tables}");
    let path = dir.join(format!("{name}.md"));
    std::fs::write(&path, tables.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", display_path(&path)))?;
    eprintln!(
        "(also in {}; JSON in {})",
        display_path(&path),
        display_path(&json)
    );
    Ok(())
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The `langgraph` CLI of the cached venv, installing langgraph-api into it the first time
/// (a stamp file marks a finished install).
fn langgraph_venv() -> Result<PathBuf, String> {
    let venv = shell::cache_dir()?.join(format!("langgraph-api-{LANGGRAPH_API}"));
    let cli = venv.join("bin/langgraph");
    let stamp = venv.join("agentgraph-installed");
    let pins = format!("langgraph-cli[inmem]=={LANGGRAPH_CLI} langgraph-api=={LANGGRAPH_API}");
    if cli.exists() && std::fs::read_to_string(&stamp).is_ok_and(|s| s == pins) {
        eprintln!("(langgraph-api venv: {}, installed)", display_path(&venv));
        return Ok(cli);
    }
    eprintln!(
        "\n== bench server: installing langgraph-api into {}",
        display_path(&venv)
    );
    let system = std::env::var("AGENTGRAPH_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let mut cmd = Command::new(&system);
    cmd.args(["-m", "venv"]).arg(&venv);
    shell::run(cmd)?;
    let mut cmd = Command::new(venv.join("bin/pip"));
    cmd.args(["install", "--quiet", "--disable-pip-version-check"])
        .arg(format!("langgraph-cli[inmem]=={LANGGRAPH_CLI}"))
        .arg(format!("langgraph-api=={LANGGRAPH_API}"));
    shell::run(cmd)?;
    std::fs::write(&stamp, pins)
        .map_err(|e| format!("cannot write {}: {e}", display_path(&stamp)))?;
    Ok(cli)
}

/// A warning when the machine is not quiet: a 1-minute load average of 0.5 or more, or a
/// compiler running.
fn noisy() -> Option<String> {
    let load: f64 = std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let compilers = Command::new("pgrep")
        .args(["-x", "rustc"])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    (load >= 0.5 || compilers).then(|| {
        format!(
            "Measured under load: 1-minute load average {load:.2} when the servers started{}; the numbers are not those of a quiet machine.",
            if compilers {
                ", with other compilers (rustc) running"
            } else {
                ""
            }
        )
    })
}

/// The short hash of `HEAD`, with `-dirty` when the tree has changes.
fn commit(root: &Path) -> Option<String> {
    let output = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(root)
        .output()
        .ok()?;
    let hash = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if hash.is_empty() {
        return None;
    }
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .current_dir(root)
        .output()
        .is_ok_and(|o| !o.stdout.is_empty());
    Some(if dirty { format!("{hash}-dirty") } else { hash })
}
