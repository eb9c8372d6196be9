//! The real clients against our server: `tests/sdk/run.sh` runs the python `langgraph-sdk`
//! and the JS `@langchain/langgraph-sdk` conformance scripts (checked against langgraph-api
//! itself) on the reference graphs, served by `examples/reference`.
//!
//! The SDKs are installed from PyPI and npm on first use (cached), so this runs under CI
//! (`CI` set) or with `AGENTGRAPH_SDK_CHECKS=1`, and says it skipped otherwise. Every check
//! of both scripts runs, on a SQLite file and on a PostgreSQL database.

mod common;

use std::process::Command;

fn run_checks(db: &str) {
    let server = common::start_reference(&["--db", db]);
    let url = &server.url;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/run.sh");
    for lang in ["py", "js"] {
        let status = Command::new("bash")
            .args([script, url])
            .env("SDK_CHECK_LANGS", lang)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "the {lang} SDK checks failed on {db} (their output is above)"
        );
    }
}

fn wanted() -> bool {
    if std::env::var_os("CI").is_none() && std::env::var_os("AGENTGRAPH_SDK_CHECKS").is_none() {
        eprintln!(
            "skipped: set AGENTGRAPH_SDK_CHECKS=1 to install the SDKs and run them (CI does)"
        );
        return false;
    }
    true
}

/// Both backends in one test, one after the other: the checks run concurrently and some
/// hold a run busy for seconds, which two servers at once on two cores made flaky.
#[tokio::test]
async fn the_python_and_js_sdks_work_against_the_server_on_sqlite_and_postgres() {
    if !wanted() {
        return;
    }
    tokio::task::spawn_blocking(on_sqlite).await.unwrap();
    on_postgres().await;
}

fn on_sqlite() {
    let dir = std::env::temp_dir().join(format!("agentgraph-sdk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    run_checks(&dir.join("server.sqlite").display().to_string());
    let _ = std::fs::remove_dir_all(&dir);
}

async fn on_postgres() {
    let Some(db) = common::fresh_database("agentgraph_sdk").await else {
        return;
    };
    tokio::task::spawn_blocking(move || run_checks(&db))
        .await
        .unwrap();
}
