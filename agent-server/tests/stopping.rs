//! Stopping a server as an orchestrator does (SIGTERM): with a client following a thread
//! (`GET /threads/{id}/stream`, which has no end of its own) and a run executing, the run
//! finishes within the grace, the thread's stream is ended with a last event, and the
//! process exits — it does not wait on the stream forever. The server is the reference
//! example, run as a process on SQLite.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_open_thread_streams_and_drains() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = std::env::temp_dir().join(format!("agentgraph-stop-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("server.sqlite");
    let mut server = common::start_reference(&["--db", db.to_str().unwrap(), "--with-slow"]);
    let c = reqwest::Client::new();
    let thread: Value = c
        .post(format!("{}/threads", server.url))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let t = thread["thread_id"].as_str().unwrap().to_owned();
    let follower = {
        let url = format!("{}/threads/{t}/stream", server.url);
        let c = c.clone();
        tokio::spawn(async move {
            let resp = c.get(url).send().await.unwrap();
            assert_eq!(resp.status(), 200);
            resp.text().await.unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let run: Value = c
        .post(format!("{}/threads/{t}/runs", server.url))
        .json(&json!({"assistant_id": "slow", "input": {"seconds": 1.0, "inputs": ["x"]}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let r = run["run_id"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stopped = Instant::now();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    // The process exits well within its 30 s grace: the run ends in a second.
    let exit = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            stopped.elapsed() < Duration::from_secs(35),
            "SIGTERM did not stop the server (an open stream held it?)"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!("exited {exit:?} {:?} after SIGTERM", stopped.elapsed());
    let text = tokio::time::timeout(Duration::from_secs(5), follower)
        .await
        .expect("the thread's stream to end")
        .unwrap();
    assert!(
        text.contains("\"last\""),
        "the follower saw the run finish: {text}"
    );
    assert!(
        text.contains("ServerShutdown"),
        "the stream ended with a last event that says why: {text}"
    );
    // The run finished (drained), not handed back: on the next start it is `success`.
    let again = common::start_reference(&["--db", db.to_str().unwrap(), "--with-slow"]);
    let run: Value = c
        .get(format!("{}/threads/{t}/runs/{r}", again.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(run["status"], "success", "{run}");
    drop(again);
    let _ = std::fs::remove_dir_all(&dir);
}
