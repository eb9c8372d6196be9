//! The `agentgraph` package's pytest suite (`tests/test_*.py`), conformance against LangGraph
//! included: the wheel built with maturin, unpacked into the target directory and put on
//! `PYTHONPATH` of a cached venv with maturin, pytest and LangGraph (`tests/python.sh`).
//!
//! It installs from PyPI on first use and builds the crate once more as an extension module,
//! so it runs under CI (`CI` set) or with `AGENTGRAPH_PY_TESTS=1`, and says it skipped
//! otherwise.
//!
//! `langgraph_suite` runs LangGraph's own tests (from its sdist, see `tests/langgraph_suite/`)
//! on the same wheel.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const CRATE: &str = env!("CARGO_MANIFEST_DIR");

fn enabled() -> bool {
    std::env::var_os("CI").is_some() || std::env::var("AGENTGRAPH_PY_TESTS").is_ok_and(|v| v == "1")
}

/// The target directory this test binary was built in (`<target>/debug/deps/pytest-...`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().to_path_buf()
}

fn run(command: &mut Command) -> String {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{command:?} failed\n--- stdout\n{stdout}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The wheel, built once per test binary and unpacked: the directory to put on `PYTHONPATH`,
/// and the venv's python.
fn wheel() -> &'static (PathBuf, String) {
    static WHEEL: OnceLock<(PathBuf, String)> = OnceLock::new();
    WHEEL.get_or_init(|| {
        let python = run(&mut Command::new(Path::new(CRATE).join("tests/python.sh")));
        let python = python.trim().to_string();
        // A target directory of its own: the extension-module build differs from this one's,
        // and cargo's lock on this one may still be held.
        let target = target_dir().join("agent-py-wheel");
        let wheels = target.join("wheels");
        let _ = std::fs::remove_dir_all(&wheels);
        run(Command::new(&python)
            .args([
                "-m",
                "maturin",
                "build",
                "--profile",
                "dev",
                "--quiet",
                "-o",
            ])
            .arg(&wheels)
            .arg("-m")
            .arg(Path::new(CRATE).join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", &target));
        let wheel = std::fs::read_dir(&wheels)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "whl"))
            .expect("maturin built a wheel");
        let site = target.join("site");
        let _ = std::fs::remove_dir_all(&site);
        run(Command::new(&python)
            .args(["-m", "zipfile", "-e"])
            .arg(&wheel)
            .arg(&site));
        (site, python)
    })
}

#[test]
fn pytest_suite() {
    if !enabled() {
        eprintln!("skipped: set AGENTGRAPH_PY_TESTS=1 (or CI) to build the wheel and run pytest");
        return;
    }
    let (site, python) = wheel();
    let out = run(Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(Path::new(CRATE).join("tests"))
        .arg("--ignore")
        .arg(Path::new(CRATE).join("tests/langgraph_suite"))
        .env("PYTHONPATH", site)
        .env("PYTHONDONTWRITEBYTECODE", "1"));
    eprintln!("{out}");
}

/// The ids in one of `tests/langgraph_suite`'s lists (`#` starts a comment line).
fn listed(name: &str) -> Vec<String> {
    let path = Path::new(CRATE).join("tests/langgraph_suite").join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

/// LangGraph's own tests (the langgraph 1.2.22 sdist's `tests/`, fetched by
/// `tests/langgraph_suite/fetch.sh`, which `.ci/run` runs) that use only LangGraph's public
/// API, run on agentgraph through `agentgraph.compat.install()`: fails when a test listed in
/// `agentgraph_passing.txt` does not pass, and reports how many of the
/// `langgraph_public.txt` tests (those passing on LangGraph itself) pass.
#[test]
fn langgraph_suite() {
    if !enabled() {
        eprintln!("skipped: set AGENTGRAPH_PY_TESTS=1 (or CI) to run LangGraph's own tests");
        return;
    }
    let cache = std::env::var_os("AGENTGRAPH_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/agentgraph")
        });
    let sdist = cache.join("langgraph-1.2.22-sdist/langgraph-1.2.22");
    if !sdist.join("tests/conftest.py").exists() {
        let fetch = Path::new(CRATE).join("tests/langgraph_suite/fetch.sh");
        assert!(
            std::env::var_os("CI").is_none(),
            "LangGraph's sdist is missing at {}: .ci/run fetches it with {}",
            sdist.display(),
            fetch.display()
        );
        eprintln!(
            "skipped: LangGraph's sdist is missing; fetch it with {}",
            fetch.display()
        );
        return;
    }
    let (site, python) = wheel();
    let suite = Path::new(CRATE).join("tests/langgraph_suite");
    let results = target_dir().join("langgraph-suite-results.tsv");
    let _ = std::fs::remove_file(&results);
    // pytest fails whenever any test does; what counts is the list below.
    let out = Command::new(python)
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "compat_plugin",
            "--timeout=60",
            "--continue-on-collection-errors",
        ])
        .arg("-c")
        .arg(suite.join("pytest.ini"))
        .arg("--rootdir")
        .arg(&sdist)
        .args(listed("files.txt"))
        .current_dir(&sdist)
        .env(
            "PYTHONPATH",
            std::env::join_paths([site.as_path(), suite.as_path()]).unwrap(),
        )
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("NO_DOCKER", "true")
        .env("AG_LANGGRAPH_RESULTS", &results)
        .output()
        .expect("pytest runs");
    let log = String::from_utf8_lossy(&out.stdout);
    let outcomes: HashMap<String, String> = std::fs::read_to_string(&results)
        .unwrap_or_else(|e| {
            panic!(
                "no results from pytest ({e})\n{log}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(id, outcome)| (id.to_string(), outcome.to_string()))
        .collect();
    let passed = |id: &String| outcomes.get(id).is_some_and(|o| o == "passed");
    let public = listed("langgraph_public.txt");
    let expected = listed("agentgraph_passing.txt");
    let count = public.iter().filter(|id| passed(id)).count();
    eprintln!(
        "LangGraph's own tests on agentgraph: {count} of {} public-API tests pass",
        public.len()
    );
    let new: Vec<_> = public
        .iter()
        .filter(|id| passed(id) && !expected.contains(id))
        .collect();
    if !new.is_empty() {
        eprintln!(
            "passing, not yet in agentgraph_passing.txt:\n  {}",
            new.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n  ")
        );
    }
    let regressed: Vec<_> = expected.iter().filter(|id| !passed(id)).collect();
    assert!(
        regressed.is_empty(),
        "listed in agentgraph_passing.txt but not passing:\n  {}\n--- pytest\n{log}",
        regressed
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}
