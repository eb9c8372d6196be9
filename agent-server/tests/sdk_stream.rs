//! The real SDKs' thread-streaming surfaces against our server: `tests/sdk/run.sh` with
//! `SDK_CHECK_SCRIPT=stream_check` runs the python `langgraph-sdk` (`AsyncThreadStream` and
//! the sync one, over SSE and WebSocket) and the JS `@langchain/langgraph-sdk`
//! (`client.threads.stream`, SSE and WebSocket) on the reference graphs with `--with-tools`:
//! tokens, tool calls, an interrupt answered with `respond`, a reconnect with `since`, a
//! subgraph's events by namespace.
//!
//! On a SQLite file, then on PostgreSQL with two instances and the clients connected to the
//! one that does not execute the runs: its only worker is kept busy, so every run the
//! clients start there is claimed by the other, and their events reach the clients through
//! the store and its notices.
//!
//! The SDKs are installed from PyPI and npm on first use (cached), so this runs under CI
//! (`CI` set) or with `AGENTGRAPH_SDK_CHECKS=1`, and says it skipped otherwise.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn run_checks(url: &str, what: &str) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/run.sh");
    for lang in ["py", "js"] {
        let status = Command::new("bash")
            .args([script, url, "--timeout", "60"])
            .env("SDK_CHECK_LANGS", lang)
            .env("SDK_CHECK_SCRIPT", "stream_check")
            .status()
            .unwrap();
        assert!(
            status.success(),
            "the {lang} SDK's stream checks failed on {what} (their output is above)"
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdks_thread_streams_work_on_sqlite_and_across_two_postgres_instances() {
    if !wanted() {
        return;
    }
    tokio::task::spawn_blocking(on_sqlite).await.unwrap();
    on_postgres().await;
}

fn on_sqlite() {
    let dir = std::env::temp_dir().join(format!("agentgraph-sdk-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("server.sqlite").display().to_string();
    let server = common::start_reference(&["--db", &db, "--with-tools"]);
    run_checks(&server.url, "SQLite");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

async fn on_postgres() {
    let Some(db) = common::fresh_database("agentgraph_sdk_stream").await else {
        return;
    };
    let runner = common::start_reference(&["--db", &db, "--with-tools"]);
    let client_side = common::start_reference(&["--db", &db, "--with-tools", "--workers", "1"]);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    // The client side's one worker sleeps on a run of its own (claimed as it was queued
    // there, a worker being free).
    let thread: Value = http
        .post(format!("{}/threads", client_side.url))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let t = thread["thread_id"].as_str().unwrap().to_owned();
    let busy: Value = http
        .post(format!("{}/threads/{t}/runs", client_side.url))
        .json(&json!({"assistant_id": "agent",
            "input": {"messages": [{"role": "user", "content": "sleep 600"}]}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let busy_id = busy["run_id"].as_str().unwrap().to_owned();
    let started = Instant::now();
    loop {
        let run: Value = http
            .get(format!("{}/threads/{t}/runs/{busy_id}", client_side.url))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if run["status"] == "running" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{run}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let url = client_side.url.clone();
    tokio::task::spawn_blocking(move || run_checks(&url, "PostgreSQL (two instances)"))
        .await
        .unwrap();
    // Every run the checks started ran on the other instance: this one's worker was busy
    // all along.
    let run: Value = http
        .get(format!("{}/threads/{t}/runs/{busy_id}", client_side.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(run["status"], "running", "{run}");
    drop(runner);
}
