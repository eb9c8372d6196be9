//! Many instances on one PostgreSQL: each run executes exactly once, a client follows a run
//! that executes on another instance, and a run whose instance is killed (SIGKILL) is taken
//! over by another and resumes from its last checkpoint — the input applied once, a node
//! that finished not run again; a cancel asked of one instance stops a run executing on
//! another within a second, nothing written after; a join of a run whose events and result
//! were swept answers at once from the run's row. Each test gets a database of its own; the servers are the
//! reference example, run as processes.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;

use common::{Instance, fresh_database, start_reference};

fn start(db: &str, lease_ms: u64) -> Instance {
    start_reference(&[
        "--db",
        db,
        "--lease-ms",
        &lease_ms.to_string(),
        "--with-slow",
    ])
}

async fn database() -> Option<String> {
    fresh_database("agentgraph_srv").await
}

fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

async fn post(c: &reqwest::Client, url: String, body: Value) -> Value {
    let r = c.post(&url).json(&body).send().await.unwrap();
    assert!(r.status().is_success(), "{url}: {}", r.status());
    r.json().await.unwrap()
}

async fn get(c: &reqwest::Client, url: String) -> Value {
    c.get(&url).send().await.unwrap().json().await.unwrap()
}

async fn until(what: &str, timeout: Duration, mut check: impl AsyncFnMut() -> bool) {
    let start = Instant::now();
    while !check().await {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_instances_run_resumes_on_another_from_its_last_checkpoint() {
    let Some(db) = database().await else {
        return;
    };
    let c = http();
    let mut a = start(&db, 1500);
    let thread = post(&c, format!("{}/threads", a.url), json!({})).await;
    let t = thread["thread_id"].as_str().unwrap().to_owned();
    let run = post(
        &c,
        format!("{}/threads/{t}/runs", a.url),
        json!({"assistant_id": "slow", "input": {"seconds": 4, "inputs": ["once"]}, "stream_resumable": true}),
    )
    .await;
    let r = run["run_id"].as_str().unwrap().to_owned();
    // A claims it (B is not up yet) and gets past `first` into `wait`.
    until(
        "the run to reach `wait`",
        Duration::from_secs(20),
        async || {
            let state = get(&c, format!("{}/threads/{t}/state", a.url)).await;
            state["next"] == json!(["wait"])
        },
    )
    .await;
    let b = start(&db, 1500);
    // A client follows the run on B while A executes it.
    let follower = {
        let c = c.clone();
        let url = format!("{}/threads/{t}/runs/{r}/stream", b.url);
        tokio::spawn(async move {
            let resp = c
                .get(&url)
                .header("last-event-id", "-1")
                .send()
                .await
                .unwrap();
            resp.text().await.unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    a.child.kill().unwrap(); // SIGKILL: no goodbye, the lease just runs out
    a.child.wait().unwrap();

    let finished = Instant::now();
    until("B to finish the run", Duration::from_secs(30), async || {
        get(&c, format!("{}/threads/{t}/runs/{r}", b.url)).await["status"] == "success"
    })
    .await;
    eprintln!(
        "taken over and finished {:?} after the kill",
        finished.elapsed()
    );
    let values = get(&c, format!("{}/threads/{t}/state", b.url)).await["values"].clone();
    assert_eq!(
        values["ran"],
        json!(["first", "wait", "last"]),
        "`first` ran once: {values}"
    );
    assert_eq!(
        values["inputs"],
        json!(["once"]),
        "the input applied once: {values}"
    );
    let run = get(&c, format!("{}/threads/{t}/runs/{r}", b.url)).await;
    assert_eq!(run["status"], "success");

    let text = tokio::time::timeout(Duration::from_secs(20), follower)
        .await
        .unwrap()
        .unwrap();
    let metadata: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("data: {\"attempt\"") || l.contains("\"attempt\":"))
        .collect();
    assert!(
        metadata.len() >= 2,
        "the follower saw both attempts start: {text}"
    );
    let last_values = text
        .split("\r\n\r\n")
        .filter(|b| b.contains("event: values"))
        .last()
        .unwrap_or_default();
    assert!(
        last_values.contains("\"last\""),
        "the follower saw the run end: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_created_at_once_on_two_instances_each_run_once() {
    let Some(db) = database().await else {
        return;
    };
    let c = http();
    let a = start(&db, 5000);
    let b = start(&db, 5000);
    let mut runs = Vec::new();
    for i in 0..24 {
        let base = if i % 2 == 0 { &a.url } else { &b.url };
        let t = post(&c, format!("{base}/threads"), json!({})).await["thread_id"]
            .as_str()
            .unwrap()
            .to_owned();
        // Two runs per thread: the second waits for the first (one run per thread at once).
        for n in 0..2 {
            let run = post(
                &c,
                format!("{base}/threads/{t}/runs"),
                json!({"assistant_id": "slow", "input": {"seconds": 0.05, "inputs": [format!("{i}-{n}")]}}),
            )
            .await;
            runs.push((t.clone(), run["run_id"].as_str().unwrap().to_owned()));
        }
    }
    for (t, r) in &runs {
        until(
            "every run to succeed",
            Duration::from_secs(60),
            async || {
                get(&c, format!("{}/threads/{t}/runs/{r}", a.url)).await["status"] == "success"
            },
        )
        .await;
    }
    for (t, _) in runs.iter().step_by(2) {
        let values = get(&c, format!("{}/threads/{t}/state", b.url)).await["values"].clone();
        assert_eq!(
            values["ran"].as_array().unwrap().len(),
            6,
            "two runs of three nodes, each once: {values}"
        );
        assert_eq!(values["inputs"].as_array().unwrap().len(), 2, "{values}");
    }
}

/// A new thread on `url` with a `slow` run (input "x") sleeping `seconds`: (thread, run).
async fn slow_run(c: &reqwest::Client, url: &str, seconds: f64) -> (String, String) {
    let thread = post(c, format!("{url}/threads"), json!({})).await;
    let t = thread["thread_id"].as_str().unwrap().to_owned();
    let run = post(
        c,
        format!("{url}/threads/{t}/runs"),
        json!({"assistant_id": "slow", "input": {"seconds": seconds, "inputs": ["x"]}}),
    )
    .await;
    (t, run["run_id"].as_str().unwrap().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_on_another_instance_stops_the_run_within_a_second() {
    let Some(db) = database().await else {
        return;
    };
    let c = http();
    let a = start(&db, 5000);
    let (t, r) = slow_run(&c, &a.url, 3.0).await;
    until(
        "A to run it into `wait`",
        Duration::from_secs(20),
        async || get(&c, format!("{}/threads/{t}/state", a.url)).await["next"] == json!(["wait"]),
    )
    .await;
    // B did not claim it (it started after); the cancel goes through B.
    let b = start(&db, 5000);
    let asked = Instant::now();
    let resp = c
        .post(format!(
            "{}/threads/{t}/runs/{r}/cancel?action=interrupt",
            b.url
        ))
        .send()
        .await
        .unwrap();
    assert!(
        resp.status().is_success(),
        "cancel via B: {}",
        resp.status()
    );
    until("the run to stop", Duration::from_secs(1), async || {
        get(&c, format!("{}/threads/{t}/runs/{r}", b.url)).await["status"] == "interrupted"
    })
    .await;
    eprintln!("stopped {:?} after the cancel", asked.elapsed());
    // `wait` (3 s) never finishes: nothing is written after the stop.
    let history = |url: String| {
        let c = c.clone();
        async move {
            let r = c
                .post(url)
                .json(&json!({"limit": 100}))
                .send()
                .await
                .unwrap();
            r.json::<Vec<Value>>().await.unwrap().len()
        }
    };
    let at_stop = history(format!("{}/threads/{t}/history", a.url)).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        history(format!("{}/threads/{t}/history", a.url)).await,
        at_stop,
        "a checkpoint landed after the cancel"
    );
    let values = get(&c, format!("{}/threads/{t}/state", a.url)).await["values"].clone();
    assert_eq!(values["ran"], json!(["first"]), "{values}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joining_a_swept_run_answers_at_once() {
    let Some(db) = database().await else {
        return;
    };
    let c = http();
    let a = start(&db, 5000);
    let (t, r) = slow_run(&c, &a.url, 0.0).await;
    until("the run to end", Duration::from_secs(20), async || {
        get(&c, format!("{}/threads/{t}/runs/{r}", a.url)).await["status"] == "success"
    })
    .await;
    // What the sweep does ten minutes after a run's end: its events and result go.
    let (client, connection) = tokio_postgres::connect(&db, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    for table in ["api_run_events", "api_run_results"] {
        client
            .execute(&format!("DELETE FROM {table} WHERE run_id = $1"), &[&r])
            .await
            .unwrap();
    }
    // B never saw the run: it answers from the run's row, at once, for a join and a join
    // stream alike.
    let b = start(&db, 5000);
    for path in ["join", "stream"] {
        let asked = Instant::now();
        let resp = tokio::time::timeout(
            Duration::from_secs(5),
            c.get(format!("{}/threads/{t}/runs/{r}/{path}", b.url))
                .send(),
        )
        .await
        .unwrap_or_else(|_| panic!("{path} of a swept run hung"))
        .unwrap();
        let status = resp.status().as_u16();
        let body = tokio::time::timeout(Duration::from_secs(5), resp.text())
            .await
            .unwrap_or_else(|_| panic!("the {path} body of a swept run never ended"))
            .unwrap();
        assert!(status == 200 || status == 404, "{path}: {status} {body}");
        eprintln!("{path}: {status} in {:?}: {body}", asked.elapsed());
    }
}
