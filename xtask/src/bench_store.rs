//! `cargo xtask bench store [--quick] [--items N] [--searches N]`: our long-term memory stores
//! (`InMemoryStore`, `SqliteStore` on a file, `PostgresStore` on a fresh database when
//! `AGENTGRAPH_POSTGRES_URL` is set) against LangGraph's `InMemoryStore` and `PostgresStore`
//! (langgraph-checkpoint-postgres) in one run, with identical data and operations: put, get,
//! filtered search, put with an index and semantic search over 10,000 items by default.
//!
//! Both sides embed with agentgraph's offline embedding (LangGraph's through a Python port in
//! `xtask/bench/langgraph_store.py`); before measuring, both print the data set, the queries
//! and a few vectors, and the bench stops if a line differs. Ours is agent-bench's
//! `store_bench` (release); LangGraph runs in the bench venv (`xtask/bench/requirements.txt`).
//! Every store runs in a process of its own, for its peak RSS. Files go to
//! `<target dir>/bench/store/`: `agentgraph.jsonl`, `langgraph.jsonl`, `report.md` and the
//! SQLite file.

use std::path::Path;
use std::process::{Command, Stdio};

use xtask::sourcegen::{display_path, project_root};

use crate::{bench, shell};

const USAGE: &str = "usage: cargo xtask bench store [--quick] [--items N] [--searches N]";

/// Runs the command.
pub fn run(args: &[String]) -> Result<(), String> {
    let mut items = None;
    let mut searches = None;
    let mut quick = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--items" => items = Some(it.next().ok_or(USAGE)?.clone()),
            "--searches" => searches = Some(it.next().ok_or(USAGE)?.clone()),
            _ => return Err(format!("unknown argument `{arg}`\n{USAGE}")),
        }
    }
    let items = items.unwrap_or_else(|| if quick { "2000" } else { "10000" }.to_owned());
    let searches = searches.unwrap_or_else(|| if quick { "50" } else { "200" }.to_owned());
    let sizes = ["--items".to_owned(), items, "--searches".into(), searches];

    let root = project_root();
    let target = bench::target_dir(&root);
    let dir = target.join("bench/store");
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create {}: {e}", display_path(&dir)))?;
    let ours = dir.join("agentgraph.jsonl");
    let theirs = dir.join("langgraph.jsonl");
    for file in [&ours, &theirs] {
        remove(file)?;
    }

    eprintln!("== bench store: release build");
    let mut cmd = shell::cargo();
    cmd.args([
        "build",
        "--release",
        "-p",
        "agent-bench",
        "--bin",
        "store_bench",
    ]);
    shell::run(cmd)?;
    let binary = target.join("release/store_bench");
    let python = bench::venv(&root, &target.join("bench"))?;
    let script = root.join("xtask/bench/langgraph_store.py");

    eprintln!("\n== bench store: the same data, queries and embedding on both sides");
    let mine = output(Command::new(&binary).arg("check").args(&sizes))?;
    let port = output(
        Command::new(&python)
            .arg(&script)
            .arg("--check")
            .args(&sizes),
    )?;
    same_lines(&mine, &port)?;
    eprintln!("(identical: {} lines)", mine.lines().count());

    let postgres = std::env::var("AGENTGRAPH_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty());
    let load_before = bench::load_average();
    let mut backends = vec!["memory", "sqlite"];
    if postgres.is_some() {
        backends.push("postgres");
    } else {
        eprintln!(
            "PostgreSQL: not measured (`AGENTGRAPH_POSTGRES_URL` is not set; `source .ci/services/postgres.sh` starts a server)"
        );
    }
    for backend in &backends {
        eprintln!("\n== bench store: agentgraph, {backend}");
        let mut cmd = Command::new(&binary);
        cmd.args(["run", "--backend", backend]).args(&sizes);
        if *backend == "sqlite" {
            let file = dir.join("store.sqlite");
            for suffix in ["", "-wal", "-shm"] {
                remove(&dir.join(format!("store.sqlite{suffix}")))?;
            }
            cmd.arg("--sqlite").arg(&file);
        }
        shell::run(append_to(cmd, &ours)?)?;
        if *backend == "sqlite" {
            continue;
        }
        eprintln!("\n== bench store: LangGraph, {backend}");
        let mut cmd = Command::new(&python);
        cmd.arg(&script).args(["--backend", backend]).args(&sizes);
        shell::run(append_to(cmd, &theirs)?)?;
    }

    eprintln!("\n== bench store: report");
    let tables = output(Command::new(&binary).arg("report").arg(&ours).arg(&theirs))?;
    let report = format!(
        "Machine: {}; load average (1, 5, 15 min) {load_before} before, {} after.\n\n{tables}",
        bench::machine(),
        bench::load_average(),
    );
    println!("{report}");
    let path = dir.join("report.md");
    std::fs::write(&path, &report)
        .map_err(|e| format!("cannot write {}: {e}", display_path(&path)))?;
    eprintln!(
        "(also in {}; JSON lines in {})",
        display_path(&path),
        display_path(&dir)
    );
    Ok(())
}

fn remove(path: &Path) -> Result<(), String> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot remove {}: {e}", display_path(path)))
        }
        _ => Ok(()),
    }
}

/// `cmd` with its standard output appended to `path`.
fn append_to(mut cmd: Command, path: &Path) -> Result<Command, String> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", display_path(path)))?;
    cmd.stdout(Stdio::from(file));
    Ok(cmd)
}

/// The standard output of `cmd` (its errors shown as they come), failing when it fails.
fn output(cmd: &mut Command) -> Result<String, String> {
    let shown = format!("{:?}", cmd.get_program());
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{shown} failed ({})", out.status));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("{shown} printed no UTF-8: {e}"))
}

/// Fails at the first line where ours and the Python port differ.
fn same_lines(ours: &str, port: &str) -> Result<(), String> {
    let mut theirs = port.lines();
    for (n, line) in ours.lines().enumerate() {
        match theirs.next() {
            Some(other) if other == line => {}
            other => {
                return Err(format!(
                    "the Python port differs from store_bench at line {}: the bench's data or embedding would not be the same on both sides\n  agentgraph: {}\n  Python:     {}",
                    n + 1,
                    cut(line),
                    other.map_or("(no line)".to_owned(), cut)
                ));
            }
        }
    }
    match theirs.next() {
        Some(extra) => Err(format!(
            "the Python port prints more lines than store_bench: {}",
            cut(extra)
        )),
        None => Ok(()),
    }
}

fn cut(line: &str) -> String {
    line.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_must_match() {
        assert!(same_lines("a\nb\n", "a\nb\n").is_ok());
        let err = same_lines("a\nb\n", "a\nc\n").unwrap_err();
        assert!(err.contains("line 2"), "{err}");
        assert!(same_lines("a\n", "a\nb\n").is_err());
        assert!(same_lines("a\nb\n", "a\n").is_err());
    }
}
