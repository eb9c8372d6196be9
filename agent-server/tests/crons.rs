//! Crons and webhooks over HTTP, as clients use them: crons made, searched, counted,
//! updated and deleted, their ticks firing runs by a clock the test moves (on SQLite and
//! PostgreSQL), each tick fired exactly once by two instances on one PostgreSQL, and
//! webhooks delivered to a receiver in the test (retried after a 500) or refused for a
//! private target.

mod common;
#[path = "../examples/reference/graphs.rs"]
#[allow(dead_code)]
mod graphs;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_server::{Clock, ManualClock, ServerBuilder};
use axum::http::StatusCode;
use serde_json::{Value, json};

/// 2026-11-27T10:00:30Z: half a minute before a tick of `* * * * *`.
const START_MS: i64 = 1_795_773_630_000;

use common::served::Served as Api;

impl Api {
    async fn ok(&self, path: &str, body: Value) -> Value {
        let (status, v) = self.post(path, body).await;
        assert_eq!(status, 200, "{path}: {v}");
        v
    }

    async fn thread(&self) -> String {
        self.ok("/threads", json!({})).await["thread_id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn runs_of(&self, thread: &str) -> Vec<Value> {
        let (status, runs) = self.get(&format!("/threads/{thread}/runs?limit=100")).await;
        assert_eq!(status, 200, "{runs}");
        runs.as_array().unwrap().clone()
    }

    async fn cron(&self, id: &str) -> Value {
        let (status, cron) = self.get(&format!("/runs/crons/{id}")).await;
        assert_eq!(status, 200, "{cron}");
        cron
    }
}

async fn until(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let start = Instant::now();
    while !check().await {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn at(text: &str) -> i64 {
    text.parse::<jiff::Timestamp>().unwrap().as_millisecond()
}

fn builder(clock: &Arc<ManualClock>) -> ServerBuilder {
    graphs::server()
        .workers(4)
        .clock(clock.clone())
        .cron_poll(Duration::from_millis(20))
}

fn sqlite_file() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("agentgraph-crons-{}.db", uuid::Uuid::new_v4()))
}

/// What every backend must do: refusals, a thread cron's ticks (missed ones fired once),
/// search, count, update, disable, delete, and a thread's crons going with it.
async fn crons_over_http(builder: ServerBuilder, clock: Arc<ManualClock>) {
    assert_eq!(clock.now_ms(), START_MS);
    let api = Api::start(builder).await;
    let t = api.thread().await;

    // Refusals name the problem.
    for (body, says) in [
        (
            json!({"assistant_id": "simple", "schedule": "61 * * * *"}),
            "Invalid cron schedule '61 * * * *'",
        ),
        (
            json!({"assistant_id": "simple", "schedule": "0 * * * * *"}),
            "5 fields",
        ),
        (
            json!({"assistant_id": "simple", "schedule": "* * * * *", "timezone": "Nowhere/City"}),
            "Invalid timezone",
        ),
        (
            json!({"assistant_id": "simple", "schedule": "* * * * *", "end_time": "tomorrow"}),
            "end_time: must be an ISO-8601 date-time",
        ),
        (
            json!({"assistant_id": "simple"}),
            "schedule: a required property",
        ),
        (
            json!({"assistant_id": "nope", "schedule": "* * * * *"}),
            "Invalid assistant: 'nope'",
        ),
        (
            json!({"assistant_id": "simple", "schedule": "* * * * *", "stream_mode": "sideways"}),
            "sideways",
        ),
        (
            json!({"assistant_id": "simple", "schedule": "* * * * *", "on_run_completed": "later"}),
            "on_run_completed: unknown variant `later`, expected `delete` or `keep`",
        ),
        // Every field a run's creation checks is checked when the cron is made, not at a tick.
        (
            json!({"assistant_id": "simple", "schedule": "* * * * *", "on_completion": "bogus"}),
            "on_completion",
        ),
        (
            json!({"assistant_id": "simple", "schedule": "* * * * *", "after_seconds": -1}),
            "after_seconds",
        ),
    ] {
        let (status, e) = api.post("/runs/crons", body.clone()).await;
        assert_eq!(status, 422, "{body}: {e}");
        assert!(e["detail"].as_str().unwrap().contains(says), "{body}: {e}");
    }
    let missing = uuid::Uuid::new_v4();
    let (status, _) = api
        .post(
            &format!("/threads/{missing}/runs/crons"),
            json!({"assistant_id": "simple", "schedule": "* * * * *"}),
        )
        .await;
    assert_eq!(status, 404);

    // A cron on the thread: next tick at 10:01.
    let cron = api
        .ok(
            &format!("/threads/{t}/runs/crons"),
            json!({"assistant_id": "simple", "schedule": "* * * * *",
                   "input": {"value": "tick"}, "metadata": {"team": "a"}}),
        )
        .await;
    let c = cron["cron_id"].as_str().unwrap().to_owned();
    assert_eq!(cron["thread_id"], t.as_str());
    assert_eq!(cron["schedule"], "* * * * *");
    assert_eq!(cron["next_run_date"], "2026-11-27T10:01:00.000000+00:00");
    assert_eq!(cron["enabled"], true);
    assert_eq!(cron["payload"]["input"], json!({"value": "tick"}));
    assert_eq!(cron["payload"]["assistant_id"], cron["assistant_id"]);
    assert!(uuid::Uuid::parse_str(cron["assistant_id"].as_str().unwrap()).is_ok());
    assert_eq!(cron["metadata"], json!({"team": "a"}));
    assert!(api.runs_of(&t).await.is_empty());

    // A second one, disabled: it never fires.
    let off = api
        .ok(
            &format!("/threads/{t}/runs/crons"),
            json!({"assistant_id": "simple", "schedule": "* * * * *", "enabled": false,
                   "input": {"value": "never"}}),
        )
        .await;
    assert_eq!(off["next_run_date"], Value::Null);
    let off_id = off["cron_id"].as_str().unwrap().to_owned();

    // Search and count.
    let found = api
        .ok(
            "/runs/crons/search",
            json!({"thread_id": t, "enabled": true}),
        )
        .await;
    assert_eq!(found.as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found[0]["cron_id"], c.as_str());
    let found = api
        .ok(
            "/runs/crons/search",
            json!({"assistant_id": "simple", "sort_by": "created_at", "sort_order": "asc",
                   "select": ["cron_id", "enabled"]}),
        )
        .await;
    assert_eq!(
        found,
        json!([{"cron_id": c, "enabled": true}, {"cron_id": off_id, "enabled": false}])
    );
    let n = api
        .ok("/runs/crons/count", json!({"metadata": {"team": "a"}}))
        .await;
    assert_eq!(n, json!(1));
    let n = api.ok("/runs/crons/count", json!({})).await;
    assert_eq!(n, json!(2));

    // 10:01 comes: one run on the thread, with the cron's input.
    clock.set(at("2026-11-27T10:01:00Z"));
    until("the first tick's run", async || {
        api.runs_of(&t)
            .await
            .iter()
            .any(|r| r["status"] == "success")
    })
    .await;
    let runs = api.runs_of(&t).await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["metadata"]["team"], "a");
    let (_, state) = api.get(&format!("/threads/{t}/state")).await;
    assert_eq!(state["values"]["value"], "TICK");
    assert_eq!(
        api.cron(&c).await["next_run_date"],
        "2026-11-27T10:02:00.000000+00:00"
    );

    // Down until 10:05:10: four ticks missed fire once; the next is 10:06.
    clock.set(at("2026-11-27T10:05:10Z"));
    until("the missed ticks' run", async || {
        let runs = api.runs_of(&t).await;
        runs.len() >= 2 && runs.iter().all(|r| r["status"] == "success")
    })
    .await;
    assert_eq!(
        api.cron(&c).await["next_run_date"],
        "2026-11-27T10:06:00.000000+00:00"
    );
    tokio::time::sleep(Duration::from_millis(200)).await; // ten more scheduler passes
    assert_eq!(
        api.runs_of(&t).await.len(),
        2,
        "one run for the missed ticks"
    );

    // Update: a new schedule and input, and an end time before its next tick.
    let (status, patched) = api
        .call(
            reqwest::Method::PATCH,
            &format!("/runs/crons/{c}"),
            Some(json!({"schedule": "*/10 * * * *", "input": {"value": "later"}})),
        )
        .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(patched["next_run_date"], "2026-11-27T10:10:00.000000+00:00");
    assert_eq!(patched["payload"]["input"], json!({"value": "later"}));
    let (status, e) = api
        .call(
            reqwest::Method::PATCH,
            &format!("/runs/crons/{c}"),
            Some(json!({"schedule": "whenever"})),
        )
        .await;
    assert_eq!(status, 422, "{e}");
    clock.set(at("2026-11-27T10:10:00Z"));
    until("the updated cron's run", async || {
        let runs = api.runs_of(&t).await;
        runs.len() >= 3 && runs.iter().all(|r| r["status"] == "success")
    })
    .await;
    let (_, state) = api.get(&format!("/threads/{t}/state")).await;
    assert_eq!(state["values"]["value"], "LATER");
    let (status, ended) = api
        .call(
            reqwest::Method::PATCH,
            &format!("/runs/crons/{c}"),
            Some(json!({"end_time": "2026-11-27T10:15:00+00:00"})),
        )
        .await;
    assert_eq!(status, 200, "{ended}");
    assert_eq!(ended["next_run_date"], Value::Null, "past its end time");
    let (status, e) = api
        .call(
            reqwest::Method::PATCH,
            &format!("/runs/crons/{c}"),
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 400, "{e}");

    // Delete: 204, then 404.
    let (status, _) = api
        .call(reqwest::Method::DELETE, &format!("/runs/crons/{c}"), None)
        .await;
    assert_eq!(status, 204);
    let (status, _) = api
        .call(reqwest::Method::DELETE, &format!("/runs/crons/{c}"), None)
        .await;
    assert_eq!(status, 404);
    let (status, _) = api.get(&format!("/runs/crons/{c}")).await;
    assert_eq!(status, 404);
    // Deleting the thread deletes its crons.
    let (status, _) = api
        .call(reqwest::Method::DELETE, &format!("/threads/{t}"), None)
        .await;
    assert_eq!(status, 204);
    assert_eq!(api.ok("/runs/crons/count", json!({})).await, json!(0));

    // A stateless cron keeping its threads: each tick a fresh thread with the run's values.
    let kept = api
        .ok(
            "/runs/crons",
            json!({"assistant_id": "simple", "schedule": "0 * * * *",
                   "input": {"value": "fresh"}, "on_run_completed": "keep",
                   "metadata": {"kind": "stateless"}}),
        )
        .await;
    assert_eq!(kept["thread_id"], Value::Null);
    assert_eq!(kept["on_run_completed"], "keep");
    assert_eq!(kept["next_run_date"], "2026-11-27T11:00:00.000000+00:00");
    clock.set(at("2026-11-27T11:00:00Z"));
    until("the stateless tick's thread", async || {
        let threads = api
            .ok("/threads/search", json!({"values": {"value": "FRESH"}}))
            .await;
        threads.as_array().is_some_and(|t| t.len() == 1)
    })
    .await;
    let (status, _) = api
        .call(
            reqwest::Method::DELETE,
            &format!("/runs/crons/{}", kept["cron_id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(status, 204);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crons_on_sqlite() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let path = sqlite_file();
    crons_over_http(builder(&clock).sqlite(&path), clock).await;
    // The file and SQLite's log and shared-memory files beside it (they were left in the
    // temporary directory, two per run).
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.clone().into_os_string();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crons_on_postgres() {
    let Some(db) = common::fresh_database("agentgraph_cron").await else {
        return;
    };
    let clock = Arc::new(ManualClock::new(START_MS));
    crons_over_http(builder(&clock).postgres(db), clock).await;
}

/// Two instances on one PostgreSQL, one clock: each tick of each cron fires exactly once.
/// Eight crons make each claim a transaction of eight updates, so the two schedulers'
/// claims overlap often: without the row locks they would both fire some ticks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_fire_each_tick_exactly_once() {
    let Some(db) = common::fresh_database("agentgraph_cron2").await else {
        return;
    };
    let clock = Arc::new(ManualClock::new(START_MS));
    let a = Api::start(builder(&clock).postgres(db.clone())).await;
    let b = Api::start(builder(&clock).postgres(db)).await;
    let mut threads = Vec::new();
    for i in 0..8 {
        let t = a.thread().await;
        let api = if i % 2 == 0 { &a } else { &b };
        api.ok(
            &format!("/threads/{t}/runs/crons"),
            json!({"assistant_id": "simple", "schedule": "* * * * *", "input": {"value": "x"}}),
        )
        .await;
        threads.push(t);
    }
    let ticks = 4usize;
    for tick in 1..=ticks {
        clock.advance(Duration::from_secs(60));
        for t in &threads {
            until("the tick's runs", async || {
                let runs = a.runs_of(t).await;
                runs.len() >= tick && runs.iter().all(|r| r["status"] == "success")
            })
            .await;
        }
        // Both schedulers look every 20 ms: give each a few passes at this tick.
        tokio::time::sleep(Duration::from_millis(200)).await;
        for t in &threads {
            assert_eq!(
                a.runs_of(t).await.len(),
                tick,
                "tick {tick} fired once on {t}"
            );
        }
    }
    let crons = b.ok("/runs/crons/search", json!({"limit": 100})).await;
    let crons = crons.as_array().unwrap();
    assert_eq!(crons.len(), 8);
    for c in crons {
        assert_eq!(c["next_run_date"], "2026-11-27T10:05:00.000000+00:00");
    }
}

/// A receiver of webhooks: every body it got, answering 500 to the first `fail_first`.
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<Value>>>,
}

async fn receiver(fail_first: usize) -> Receiver {
    let got: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
            let seen = seen.clone();
            async move {
                let mut seen = seen.lock().unwrap();
                seen.push(body);
                if seen.len() <= fail_first {
                    StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    StatusCode::OK
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Receiver { url, got }
}

impl Receiver {
    fn bodies(&self) -> Vec<Value> {
        self.got.lock().unwrap().clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_deliver_the_final_result_retrying_after_a_500() {
    let hook = receiver(1).await;
    let clock = Arc::new(ManualClock::new(START_MS));
    let api = Api::start(
        builder(&clock)
            .allow_private_webhooks(true)
            .webhook_retries(4, Duration::from_millis(50), Duration::from_secs(10)),
    )
    .await;
    let t = api.thread().await;
    let run = api
        .ok(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "simple", "input": {"value": "hook"}, "webhook": hook.url}),
        )
        .await;
    until("the retried delivery", async || hook.bodies().len() >= 2).await;
    let bodies = hook.bodies();
    assert_eq!(bodies.len(), 2, "one 500, then delivered: {bodies:?}");
    for body in &bodies {
        assert_eq!(body["run_id"], run["run_id"]);
        assert_eq!(body["thread_id"], t.as_str());
        assert_eq!(body["status"], "success");
        assert_eq!(body["values"], json!({"value": "HOOK"}));
        assert_eq!(body["webhook_sent_at"].as_str().map(str::len), Some(32));
        assert!(body["run_started_at"].is_string() && body["run_ended_at"].is_string());
        assert_eq!(body.get("error"), None);
    }

    // A failing run: its error, and the values it had.
    let failed = receiver(0).await;
    let t2 = api.thread().await;
    api.ok(
        &format!("/threads/{t2}/runs"),
        json!({"assistant_id": "agent", "webhook": failed.url,
               "input": {"messages": [{"role": "user", "content": "please fail"}]}}),
    )
    .await;
    until("the failed run's webhook", async || {
        !failed.bodies().is_empty()
    })
    .await;
    let body = &failed.bodies()[0];
    assert_eq!(body["status"], "error", "{body}");
    assert!(body["error"]["error"].is_string(), "{body}");
    assert!(body["error"]["message"].is_string(), "{body}");

    // A stateless cron's tick with a webhook: its thread is gone when the webhook comes.
    let hook = receiver(0).await;
    api.ok(
        "/runs/crons",
        json!({"assistant_id": "simple", "schedule": "* * * * *",
               "input": {"value": "cron"}, "webhook": hook.url}),
    )
    .await;
    clock.advance(Duration::from_secs(30));
    until("the cron run's webhook", async || !hook.bodies().is_empty()).await;
    let body = &hook.bodies()[0];
    assert_eq!(body["values"], json!({"value": "CRON"}));
    assert_eq!(body["status"], "success");
    let (status, _) = api
        .get(&format!("/threads/{}", body["thread_id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 404, "on_run_completed defaults to delete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_webhook_targets_are_refused_unless_allowed() {
    let hook = receiver(0).await;
    let clock = Arc::new(ManualClock::new(START_MS));
    let api = Api::start(builder(&clock)).await;
    let t = api.thread().await;
    for (path, body) in [
        (
            format!("/threads/{t}/runs"),
            json!({"assistant_id": "simple", "input": {"value": "x"}, "webhook": hook.url}),
        ),
        (
            "/runs/wait".to_owned(),
            json!({"assistant_id": "simple", "input": {"value": "x"}, "webhook": hook.url}),
        ),
        (
            "/runs/crons".to_owned(),
            json!({"assistant_id": "simple", "schedule": "* * * * *", "webhook": hook.url}),
        ),
        (
            format!("/threads/{t}/runs/crons"),
            json!({"assistant_id": "simple", "schedule": "* * * * *",
                   "webhook": "http://169.254.169.254/latest/meta-data"}),
        ),
    ] {
        let (status, e) = api.post(&path, body).await;
        assert_eq!(status, 422, "{path}: {e}");
        assert!(
            e["detail"]
                .as_str()
                .unwrap()
                .contains("Webhook host blocked"),
            "{e}"
        );
    }
    let (status, e) = api
        .post(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "simple", "webhook": "file:///etc/passwd"}),
        )
        .await;
    assert_eq!(status, 422);
    assert!(
        e["detail"]
            .as_str()
            .unwrap()
            .contains("only http and https"),
        "{e}"
    );
    assert!(api.runs_of(&t).await.is_empty(), "nothing was queued");
    assert!(hook.bodies().is_empty());
}
