//! Every run ends exactly once, over HTTP as clients meet it, on SQLite and PostgreSQL: a
//! cancel stops the run at once (nothing written after it is acknowledged), a client that
//! goes away with `on_disconnect: cancel` too; a rollback
//! deletes the run with every checkpoint it wrote and the thread's history stays readable;
//! `reject` is decided in the queue (of two runs racing on an idle thread one is queued);
//! a deleted thread's run writes nothing after the delete (the id made again is empty); a
//! run past its time limit ends `timeout`; threads with a ttl are swept, and
//! `/threads/prune` prunes now (`keep_latest` every namespace's older checkpoints, a
//! paused subgraph's too, and no checkpoint left naming a parent that went); a rolled back
//! resume leaves its thread exactly as before it (the answer it gave is not kept).

mod common;

#[path = "../examples/reference/graphs.rs"]
#[allow(dead_code)]
mod graphs;

use std::time::{Duration, Instant};

use agent_server::ServerBuilder;
use serde_json::{Value, json};

use common::served::Served;

impl Served {
    async fn ok(&self, path: &str, body: Value) -> Value {
        let (status, v) = self.post(path, body).await;
        assert!((200..300).contains(&status), "{path}: {status} {v}");
        v
    }

    async fn thread(&self) -> String {
        self.ok("/threads", json!({})).await["thread_id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The thread's checkpoints, newest first.
    async fn history(&self, t: &str) -> Vec<Value> {
        let (status, h) = self
            .post(&format!("/threads/{t}/history"), json!({"limit": 1000}))
            .await;
        assert_eq!(status, 200, "history: {h}");
        h.as_array().unwrap().clone()
    }

    /// Every parent a thread's history names is one of its checkpoints (none was deleted
    /// from under a checkpoint that still names it).
    async fn parents_load(&self, t: &str) {
        let history = self.history(t).await;
        let ids: Vec<&Value> = history
            .iter()
            .map(|c| &c["checkpoint"]["checkpoint_id"])
            .collect();
        for c in &history {
            let parent = &c["parent_checkpoint"];
            if parent.is_null() {
                continue;
            }
            assert!(
                ids.contains(&&parent["checkpoint_id"]),
                "a checkpoint names the parent {parent}, which is gone: {history:?}"
            );
        }
    }

    async fn until(&self, what: &str, mut check: impl AsyncFnMut(&Served) -> bool) {
        let start = Instant::now();
        while !check(self).await {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "timed out: {what}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

fn slow(seconds: f64, tag: &str) -> Value {
    json!({"assistant_id": "slow", "input": {"seconds": seconds, "inputs": [tag]}})
}

fn ran(state: &Value) -> Vec<String> {
    state["values"]["ran"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

async fn cancel_stops_the_run_at_once(api: &Served) {
    let t = api.thread().await;
    let run = api.ok(&format!("/threads/{t}/runs"), slow(2.0, "a")).await;
    let r = run["run_id"].as_str().unwrap().to_owned();
    // `first` is done and `wait` sleeps: cancel, waiting for it.
    api.until("the run to reach `wait`", async |api| {
        let (_, s) = api.get(&format!("/threads/{t}/state")).await;
        ran(&s) == ["first"]
    })
    .await;
    let (status, _) = api
        .post(
            &format!("/threads/{t}/runs/{r}/cancel?action=interrupt&wait=true"),
            json!({}),
        )
        .await;
    assert!(status < 300, "cancel: {status}");
    let at_cancel = api.history(&t).await.len();
    // Long enough for the step in flight to have ended and written, had it gone on.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let history = api.history(&t).await;
    assert_eq!(
        history.len(),
        at_cancel,
        "a checkpoint landed after the cancel"
    );
    let (_, s) = api.get(&format!("/threads/{t}/state")).await;
    assert_eq!(ran(&s), ["first"], "the cancelled step did not finish: {s}");
    let (_, run) = api.get(&format!("/threads/{t}/runs/{r}")).await;
    assert_eq!(run["status"], "interrupted");
    // The thread goes on from there.
    let out = api
        .ok(&format!("/threads/{t}/runs/wait"), slow(0.0, "b"))
        .await;
    assert_eq!(out["inputs"], json!(["a", "b"]), "{out}");
}

async fn rollback_deletes_the_run_and_its_checkpoints(api: &Served) {
    let t = api.thread().await;
    api.ok(&format!("/threads/{t}/runs/wait"), slow(0.0, "kept"))
        .await;
    let before = api.history(&t).await;
    let first = api
        .ok(&format!("/threads/{t}/runs"), slow(30.0, "rolled-back"))
        .await;
    let r1 = first["run_id"].as_str().unwrap().to_owned();
    api.until("the first run to write", async |api| {
        api.history(&t).await.len() > before.len()
    })
    .await;
    let mut second = slow(0.0, "after");
    second["multitask_strategy"] = "rollback".into();
    let out = api.ok(&format!("/threads/{t}/runs/wait"), second).await;
    assert_eq!(out["inputs"], json!(["kept", "after"]), "{out}");
    // The rolled back run is gone, with its checkpoints; the history reads back whole.
    api.until("the rolled back run to be deleted", async |api| {
        api.get(&format!("/threads/{t}/runs/{r1}")).await.0 == 404
    })
    .await;
    let history = api.history(&t).await;
    assert!(
        history
            .iter()
            .all(|c| c["metadata"]["run_id"] != r1.as_str()),
        "a rolled back run's checkpoint is left"
    );
    for c in &history {
        let id = c["checkpoint"]["checkpoint_id"].as_str().unwrap();
        let (status, s) = api.get(&format!("/threads/{t}/state/{id}")).await;
        assert_eq!(status, 200, "checkpoint {id}: {s}");
    }
    api.parents_load(&t).await;
}

async fn reject_is_decided_in_the_queue(api: &Served) {
    for _ in 0..8 {
        let t = api.thread().await;
        let mut body = slow(0.3, "x");
        body["multitask_strategy"] = "reject".into();
        let path = format!("/threads/{t}/runs");
        let (a, b) = tokio::join!(api.post(&path, body.clone()), api.post(&path, body.clone()));
        let mut statuses = [a.0, b.0];
        statuses.sort();
        assert_eq!(statuses, [200, 409], "{a:?} {b:?}");
    }
}

async fn a_deleted_threads_run_writes_nothing_after(api: &Served) {
    let t = api.thread().await;
    api.ok(&format!("/threads/{t}/runs"), slow(1.0, "gone"))
        .await;
    api.until("the run to reach `wait`", async |api| {
        let (_, s) = api.get(&format!("/threads/{t}/state")).await;
        ran(&s) == ["first"]
    })
    .await;
    let (status, _) = api
        .call(reqwest::Method::DELETE, &format!("/threads/{t}"), None)
        .await;
    assert_eq!(status, 204);
    tokio::time::sleep(Duration::from_millis(1800)).await;
    assert_eq!(api.get(&format!("/threads/{t}")).await.0, 404);
    // The id made again holds nothing of the deleted thread.
    api.ok("/threads", json!({"thread_id": t})).await;
    assert!(api.history(&t).await.is_empty(), "checkpoints came back");
    let (_, runs) = api.get(&format!("/threads/{t}/runs")).await;
    assert_eq!(runs, json!([]), "a run came back");
}

async fn a_run_past_its_time_limit_ends_timeout(api: &Served) {
    let t = api.thread().await;
    let (status, out) = api
        .post(&format!("/threads/{t}/runs/wait"), slow(30.0, "late"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(out["__error__"]["error"], "TimeoutError", "{out}");
    let (_, runs) = api.get(&format!("/threads/{t}/runs")).await;
    assert_eq!(runs[0]["status"], "timeout");
    let (_, thread) = api.get(&format!("/threads/{t}")).await;
    assert_eq!(thread["status"], "error", "{thread}");
    let (_, s) = api.get(&format!("/threads/{t}/state")).await;
    assert_eq!(ran(&s), ["first"]);
}

async fn threads_expire_and_prune(api: &Served) {
    // A ttl as the SDK sends it, shown with ?include=ttl.
    let kept = api
        .ok(
            "/threads",
            json!({"ttl": {"ttl": 60, "strategy": "keep_latest"}}),
        )
        .await;
    assert!(kept.get("ttl").is_none(), "shown only when asked for");
    let k = kept["thread_id"].as_str().unwrap().to_owned();
    let (_, shown) = api.get(&format!("/threads/{k}?include=ttl")).await;
    assert_eq!(shown["ttl"]["strategy"], "keep_latest");
    assert_eq!(shown["ttl"]["ttl_minutes"], 60.0);
    // Patched as the SDK sends it.
    let (status, _) = api
        .call(
            reqwest::Method::PATCH,
            &format!("/threads/{k}"),
            Some(json!({"ttl": {"ttl": 90, "strategy": "delete"}})),
        )
        .await;
    assert_eq!(status, 200);
    let (_, shown) = api.get(&format!("/threads/{k}?include=ttl")).await;
    assert_eq!(shown["ttl"]["strategy"], "delete", "{shown}");
    assert_eq!(shown["ttl"]["ttl_minutes"], 90.0, "{shown}");
    let (status, _) = api
        .call(
            reqwest::Method::PATCH,
            &format!("/threads/{k}"),
            Some(json!({"ttl": {"ttl": 60, "strategy": "keep_latest"}})),
        )
        .await;
    assert_eq!(status, 200);
    for tag in ["1", "2"] {
        api.ok(&format!("/threads/{k}/runs/wait"), slow(0.0, tag))
            .await;
    }
    assert!(api.history(&k).await.len() > 2);
    // `keep_latest` now: the thread and its latest state stay.
    let pruned = api
        .ok(
            "/threads/prune",
            json!({"thread_ids": [k], "strategy": "keep_latest"}),
        )
        .await;
    assert_eq!(pruned["pruned_count"], 1);
    let history = api.history(&k).await;
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!(history[0]["values"]["inputs"], json!(["1", "2"]));
    assert_eq!(history[0]["parent_checkpoint"], Value::Null, "{history:?}");
    // A short ttl: the sweeper deletes the thread with its runs and checkpoints.
    let short = api.ok("/threads", json!({"ttl": 0.002})).await;
    let s = short["thread_id"].as_str().unwrap().to_owned();
    api.ok(&format!("/threads/{s}/runs/wait"), slow(0.0, "x"))
        .await;
    api.until("the expired thread to be swept", async |api| {
        api.get(&format!("/threads/{s}")).await.0 == 404
    })
    .await;
    api.ok("/threads", json!({"thread_id": s})).await;
    assert!(api.history(&s).await.is_empty());
    // `/threads/prune` deletes what it names (not what it cannot see).
    let d = api.thread().await;
    let pruned = api
        .ok(
            "/threads/prune",
            json!({"thread_ids": [d, uuid::Uuid::new_v4().to_string()]}),
        )
        .await;
    assert_eq!(pruned["pruned_count"], 1);
    assert_eq!(api.get(&format!("/threads/{d}")).await.0, 404);
}

async fn a_client_gone_with_on_disconnect_cancel_stops_the_run(api: &Served) {
    let t = api.thread().await;
    let mut body = slow(2.0, "gone");
    body["on_disconnect"] = "cancel".into();
    body["stream_mode"] = json!(["values"]);
    let mut resp = api
        .http
        .post(api.url(&format!("/threads/{t}/runs/stream")))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    // The client reads until `first` is done, then goes away.
    let mut seen = String::new();
    while !seen.contains("\"first\"") {
        let chunk = tokio::time::timeout(Duration::from_secs(20), resp.chunk())
            .await
            .expect("the stream to go on")
            .unwrap()
            .expect("the stream not to end");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(resp);
    api.until("the run to be cancelled", async |api| {
        let (_, runs) = api.get(&format!("/threads/{t}/runs")).await;
        runs[0]["status"] == "interrupted"
    })
    .await;
    let at_cancel = api.history(&t).await.len();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        api.history(&t).await.len(),
        at_cancel,
        "a checkpoint landed after the cancel"
    );
    let (_, s) = api.get(&format!("/threads/{t}/state")).await;
    assert_eq!(ran(&s), ["first"], "the step in flight went on: {s}");
}

/// A server's default ttl (`--thread-ttl`) sweeps a thread created without one of its own;
/// a thread with its own keeps it.
async fn the_servers_default_ttl_applies_to_threads_without_one(api: &Served) {
    let plain = api.thread().await;
    let own = api.ok("/threads", json!({"ttl": 60})).await["thread_id"]
        .as_str()
        .unwrap()
        .to_owned();
    api.ok(&format!("/threads/{plain}/runs/wait"), slow(0.0, "x"))
        .await;
    api.until("the thread without a ttl to be swept", async |api| {
        api.get(&format!("/threads/{plain}")).await.0 == 404
    })
    .await;
    assert_eq!(api.get(&format!("/threads/{own}")).await.0, 200);
}

/// Side effects of the `effect` graph's node (a model call that costs money, a tool that
/// sends an email): how many times it got past its wait.
static EFFECTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

#[derive(agent_core::GraphState, Clone, Default, Debug)]
struct Effect {
    done: bool,
}

/// One node that waits a second, then has its effect.
fn effect() -> agent_core::StateGraph<Effect> {
    agent_core::StateGraph::new()
        .add_node("effect", |_s: std::sync::Arc<Effect>| async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            EFFECTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            EffectUpdate::default().done(true)
        })
        .add_edge(agent_core::START, "effect")
        .add_edge("effect", agent_core::END)
}

async fn a_cancelled_step_has_no_effect(api: &Served) {
    let t = api.thread().await;
    let before = EFFECTS.load(std::sync::atomic::Ordering::SeqCst);
    let run = api
        .ok(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "effect", "input": {}}),
        )
        .await;
    let r = run["run_id"].as_str().unwrap().to_owned();
    api.until("the run to start", async |api| {
        api.get(&format!("/threads/{t}/runs/{r}")).await.1["status"] == "running"
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, _) = api
        .post(
            &format!("/threads/{t}/runs/{r}/cancel?wait=true"),
            json!({}),
        )
        .await;
    assert!(status < 300);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        EFFECTS.load(std::sync::atomic::Ordering::SeqCst),
        before,
        "the cancelled node went on to its effect"
    );
}

/// The history of a thread's namespace `ns`, newest first.
async fn history_in(api: &Served, t: &str, ns: &str) -> Vec<Value> {
    let (status, h) = api
        .post(
            &format!("/threads/{t}/history"),
            json!({"limit": 1000, "checkpoint": {"checkpoint_ns": ns}}),
        )
        .await;
    assert_eq!(status, 200, "history of {ns}: {h}");
    h.as_array().unwrap().clone()
}

async fn keep_latest_prunes_every_namespace(api: &Served) {
    let t = api.thread().await;
    let say = |text: &str| json!({"assistant_id": "agent", "input": {"messages": [{"type": "human", "content": text}]}});
    api.ok(&format!("/threads/{t}/runs/wait"), say("hello"))
        .await;
    // Paused inside the subgraph, whose namespace has checkpoints of its own.
    api.ok(&format!("/threads/{t}/runs/wait"), say("now subask"))
        .await;
    let (_, state) = api.get(&format!("/threads/{t}/state?subgraphs=true")).await;
    let ns = state["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|task| task["state"]["checkpoint"]["checkpoint_ns"].as_str())
        .unwrap_or_else(|| panic!("no paused subgraph: {state}"))
        .to_owned();
    assert!(history_in(api, &t, &ns).await.len() > 1, "{ns}");
    assert!(api.history(&t).await.len() > 1);
    let pruned = api
        .ok(
            "/threads/prune",
            json!({"thread_ids": [t], "strategy": "keep_latest"}),
        )
        .await;
    assert_eq!(pruned["pruned_count"], 1);
    for ns in ["", ns.as_str()] {
        let history = history_in(api, &t, ns).await;
        assert_eq!(history.len(), 1, "`{ns}` kept {history:?}");
        assert_eq!(history[0]["parent_checkpoint"], Value::Null, "{history:?}");
    }
    // The subgraph resumes from its kept checkpoint.
    let out = api
        .ok(
            &format!("/threads/{t}/runs/wait"),
            json!({"assistant_id": "agent", "command": {"resume": "yes"}}),
        )
        .await;
    let said: Vec<&str> = out["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(said.contains(&"sub answer: yes"), "{out}");
}

#[derive(agent_core::GraphState, Clone, Default, Debug)]
struct Asks {
    #[reducer(append)]
    answers: Vec<String>,
    #[reducer(append)]
    ran: Vec<String>,
}

/// `ask` asks (an interrupt) and keeps the answer; `hold` then takes two seconds.
fn asks() -> agent_core::StateGraph<Asks> {
    agent_core::StateGraph::new()
        .add_node(
            "ask",
            |_s: std::sync::Arc<Asks>, ctx: agent_core::NodeContext| async move {
                let answer = ctx.interrupt(json!("answer?"))?;
                Ok::<_, agent_core::BoxError>(
                    AsksUpdate::default().answers(vec![answer.as_str().unwrap_or("?").to_owned()]),
                )
            },
        )
        .add_node("hold", |_s: std::sync::Arc<Asks>| async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            AsksUpdate::default().ran(vec!["hold".to_owned()])
        })
        .add_edge(agent_core::START, "ask")
        .add_edge("ask", "hold")
        .add_edge("hold", agent_core::END)
}

async fn a_rolled_back_resume_leaves_the_thread_as_before(api: &Served) {
    let t = api.thread().await;
    api.ok(
        &format!("/threads/{t}/runs/wait"),
        json!({"assistant_id": "asks", "input": {}}),
    )
    .await;
    let before = api.get(&format!("/threads/{t}/state")).await.1;
    assert_eq!(before["next"], json!(["ask"]), "{before}");
    let thread_before = api.get(&format!("/threads/{t}")).await.1;
    // A resume answers, goes on to `hold`, and is rolled back there.
    let run = api
        .ok(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "asks", "command": {"resume": "first"}}),
        )
        .await;
    let r = run["run_id"].as_str().unwrap().to_owned();
    api.until("the resume to answer", async |api| {
        let (_, s) = api.get(&format!("/threads/{t}/state")).await;
        s["values"]["answers"] == json!(["first"])
    })
    .await;
    let (status, _) = api
        .post(
            &format!("/threads/{t}/runs/{r}/cancel?action=rollback&wait=true"),
            json!({}),
        )
        .await;
    assert!(status < 300, "cancel: {status}");
    api.until("the rolled back run to be deleted", async |api| {
        api.get(&format!("/threads/{t}/runs/{r}")).await.0 == 404
    })
    .await;
    // The thread as it was: the same checkpoint, next, tasks and interrupts.
    let after = api.get(&format!("/threads/{t}/state")).await.1;
    for key in [
        "values",
        "next",
        "tasks",
        "interrupts",
        "checkpoint",
        "metadata",
    ] {
        assert_eq!(
            after[key], before[key],
            "`{key}` after the rollback: {after}\nbefore: {before}"
        );
    }
    let thread_after = api.get(&format!("/threads/{t}")).await.1;
    assert_eq!(thread_after["status"], thread_before["status"]);
    assert_eq!(thread_after["interrupts"], thread_before["interrupts"]);
    // The next resume is the one answer given.
    let out = api
        .ok(
            &format!("/threads/{t}/runs/wait"),
            json!({"assistant_id": "asks", "command": {"resume": "second"}}),
        )
        .await;
    assert_eq!(out["answers"], json!(["second"]), "{out}");
    assert_eq!(out["ran"], json!(["hold"]), "{out}");
    api.parents_load(&t).await;
}

fn server() -> ServerBuilder {
    graphs::server()
        .graph("slow", graphs::slow())
        .graph("effect", effect())
        .graph("asks", asks())
        .ttl_sweep(Duration::from_millis(50))
}

/// Every case, on servers `on` puts on a database (a fresh one each).
async fn every_case(on: impl Fn(ServerBuilder) -> ServerBuilder) {
    let api = Served::start(on(server())).await;
    cancel_stops_the_run_at_once(&api).await;
    a_cancelled_step_has_no_effect(&api).await;
    a_client_gone_with_on_disconnect_cancel_stops_the_run(&api).await;
    rollback_deletes_the_run_and_its_checkpoints(&api).await;
    reject_is_decided_in_the_queue(&api).await;
    a_deleted_threads_run_writes_nothing_after(&api).await;
    threads_expire_and_prune(&api).await;
    keep_latest_prunes_every_namespace(&api).await;
    a_rolled_back_resume_leaves_the_thread_as_before(&api).await;
    let timed = Served::start(on(server().run_timeout(Duration::from_millis(700)))).await;
    a_run_past_its_time_limit_ends_timeout(&timed).await;
    // The limit of one graph (an assistant's `run_timeout_seconds` in `agent serve`).
    let per_graph = Served::start(on(graphs::server()
        .graph("slow", graphs::slow())
        .graph_timeout(Duration::from_millis(700))))
    .await;
    a_run_past_its_time_limit_ends_timeout(&per_graph).await;
    let expiring = Served::start(on(
        server().thread_ttl(agent_server::ThreadTtl::new(0.002, "delete").unwrap())
    ))
    .await;
    the_servers_default_ttl_applies_to_threads_without_one(&expiring).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_run_ends_once_on_sqlite() {
    let dir = std::env::temp_dir().join(format!("agentgraph-ends-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    every_case(|b| b.sqlite(dir.join(format!("{}.sqlite", uuid::Uuid::new_v4())))).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_run_ends_once_on_postgres() {
    let mut urls = Vec::new();
    for _ in 0..4 {
        let Some(url) = common::fresh_database("agentgraph_ends").await else {
            return;
        };
        urls.push(url);
    }
    let urls = std::sync::Mutex::new(urls);
    every_case(|b| b.postgres(urls.lock().unwrap().pop().unwrap())).await;
}
