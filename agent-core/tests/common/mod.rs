//! Shared test helpers: the three checkpointers, one list, so every persistence test runs on
//! all of them.

#![allow(dead_code)]

use std::sync::Arc;

use agent_core::checkpoint::Checkpointer;
use agent_core::{InMemorySaver, PostgresSaver, SqliteSaver};

/// A unique name for threads and files of this test run.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}-{}", std::process::id(), fastrand::u64(..))
}

/// A fresh SQLite file in the temp dir.
pub fn sqlite_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("{}.sqlite", unique("agentgraph-test")))
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

/// Every backend available here: memory, SQLite (a temp file) and PostgreSQL (when up).
pub async fn backends() -> Vec<(&'static str, Arc<dyn Checkpointer>)> {
    let mut out: Vec<(&'static str, Arc<dyn Checkpointer>)> = vec![
        ("memory", Arc::new(InMemorySaver::new())),
        (
            "sqlite",
            Arc::new(SqliteSaver::open(sqlite_path()).expect("sqlite")),
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
