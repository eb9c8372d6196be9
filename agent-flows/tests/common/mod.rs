//! Helpers for tests that run the built `agent` binary: a command in a scratch directory (its
//! own data directory and thread store, so nothing touches the user's), the output parsed,
//! and the URLs of the model servers CI starts.

#![allow(dead_code)]

pub mod fake_openai;
pub mod serve;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A scratch directory for one test, removed when dropped.
pub struct Scratch {
    pub dir: PathBuf,
}

impl Scratch {
    pub fn new(name: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "agentgraph-test-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch { dir }
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// `agent` with `args`, its data directory and thread store inside this scratch dir.
    pub fn agent(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent"));
        cmd.args(args)
            .env("HOME", &self.dir)
            .env("XDG_DATA_HOME", self.dir.join("data"))
            .env("AGENTGRAPH_DB", self.dir.join("threads.sqlite"))
            .env_remove("AGENTGRAPH_MODEL")
            .env_remove("AGENTGRAPH_API_KEY")
            .env_remove("AGENTGRAPH_JWT_SECRET")
            .env_remove("LLM_FALLBACK")
            .env_remove("RUST_LOG")
            // Nothing is exported unless a test asks.
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
            .stdin(Stdio::null());
        cmd
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What a finished run printed.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not one JSON value ({e}):\n{}", self.stdout))
    }
}

fn finish(output: Output) -> Run {
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs `cmd` to the end.
pub fn run(mut cmd: Command) -> Run {
    finish(cmd.output().expect("the agent binary runs"))
}

/// Runs `cmd` with `input` on its standard input.
pub fn run_with_stdin(mut cmd: Command, input: &[u8]) -> Run {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("the agent binary starts");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input)
        .expect("stdin written");
    finish(child.wait_with_output().expect("the agent binary runs"))
}

/// A service URL CI exports; `None` (skip) outside CI when it is not set.
pub fn service_url(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().trim_end_matches('/').to_owned()),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{var} is not set but CI is: `.ci/services/llm.sh` should have started the server and exported {var}"
            );
            eprintln!(
                "note: {var} is not set, skipping; `source .ci/services/llm.sh` starts the server"
            );
            None
        }
    }
}

pub fn exists(path: &Path) -> bool {
    path.exists()
}
