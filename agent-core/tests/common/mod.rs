//! Shared test helpers: the three checkpointers, one list, so every persistence test runs on
//! all of them.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use agent_core::checkpoint::Checkpointer;
use agent_core::{InMemorySaver, PostgresSaver, SqliteSaver};

/// A unique name for threads and files of this test run.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}-{}", std::process::id(), fastrand::u64(..))
}

/// This test process's directory for files (`agentgraph-test-<pid>` in the temp dir). A test
/// binary has no teardown to remove it, so the first call removes those that processes no
/// longer running left behind: a run leaves at most its own files, not one more set per run.
pub fn scratch_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let tmp = std::env::temp_dir();
        sweep(&tmp);
        let dir = tmp.join(format!("{PREFIX}{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("test scratch dir");
        dir
    })
}

const PREFIX: &str = "agentgraph-test-";

/// Removes the scratch dirs of processes that have ended (only where `/proc` says so).
fn sweep(tmp: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A fresh SQLite file in this process's scratch dir.
pub fn sqlite_path() -> PathBuf {
    scratch_dir().join(format!("{}.sqlite", unique("db")))
}

/// The PostgreSQL URL, if the environment has one. With `CI` set and no URL, this panics:
/// the Postgres tests must run in CI, not skip.
pub fn postgres_url() -> Option<String> {
    match std::env::var("AGENTGRAPH_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!(
                "AGENTGRAPH_POSTGRES_URL is not set in CI: .ci/services/postgres.sh should have started a server"
            )
        }
        _ => {
            eprintln!(
                "note: AGENTGRAPH_POSTGRES_URL not set; skipping the postgres backend (source .ci/services/postgres.sh to run it)"
            );
            None
        }
    }
}

/// A PostgreSQL schema of the test's own (for tests that alter or pre-build tables): an admin
/// connection, the schema's name, and `url` with the schema as its search path. Drop it with
/// `DROP SCHEMA <name> CASCADE` at the end.
pub async fn postgres_schema(url: &str, prefix: &str) -> (tokio_postgres::Client, String, String) {
    let schema = format!("{prefix}_{}_{}", std::process::id(), fastrand::u32(..));
    let (admin, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .await
        .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let scoped = format!("{url}{sep}options=-c%20search_path%3D{schema}");
    (admin, schema, scoped)
}

/// Every backend available here: memory, SQLite (a temp file, shared and held by the saver
/// alone) and PostgreSQL (when up).
pub async fn backends() -> Vec<(&'static str, Arc<dyn Checkpointer>)> {
    let mut out: Vec<(&'static str, Arc<dyn Checkpointer>)> = vec![
        ("memory", Arc::new(InMemorySaver::new())),
        (
            "sqlite",
            Arc::new(SqliteSaver::open(sqlite_path()).expect("sqlite")),
        ),
        (
            "sqlite",
            Arc::new(SqliteSaver::open_exclusive(sqlite_path()).expect("sqlite, exclusive")),
        ),
    ];
    if let Some(url) = postgres_url() {
        out.push((
            "postgres",
            Arc::new(PostgresSaver::connect(&url).await.expect("postgres")),
        ));
    }
    out
}

/// Every backend with every durability that keeps a failed step's finished tasks (`Sync`,
/// `Async`).
pub async fn backends_and_durabilities()
-> Vec<(&'static str, Arc<dyn Checkpointer>, agent_core::Durability)> {
    let mut out = Vec::new();
    for durability in [agent_core::Durability::Sync, agent_core::Durability::Async] {
        for (name, saver) in backends().await {
            out.push((name, saver, durability));
        }
    }
    out
}
