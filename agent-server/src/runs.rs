//! Runs: the queue, the workers that execute runs, and the live channel of each run.
//!
//! Every run, streamed or not, goes through the queue in the [`RunStore`]: a request inserts
//! a `pending` run, a worker claims it (one running run per thread), executes its graph and
//! writes every event into the run's [`RunChannel`], where `/stream`, `/wait`, `/join` and
//! join-stream readers follow it from whatever position they ask for. The run's row and its
//! thread are final before the channel closes, so a client that checks the run after the
//! stream ended sees how it ended (the python SDK does).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, Semaphore, watch};

use crate::error::ApiError;
use crate::graph::{ApiMode, Failure, GraphJob, GraphPart, JobInput, ServedGraph};
use crate::store::{Kind, RunStore};
use crate::time::{now_iso, now_ms};

/// How a cancel treats the run's work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelAction {
    /// Stop it; keep what it checkpointed; the run ends `interrupted`.
    Interrupt,
    /// Stop it, put the thread back where it was before, and delete the run.
    Rollback,
}

/// One event of a run, as sent: its resumable id, name and JSON data.
#[derive(Debug, Clone)]
pub struct LiveEvent {
    /// `<ms>-<seq>`, LangGraph's resumable id.
    pub id: String,
    /// The event name.
    pub name: String,
    /// The data, serialized once.
    pub data: Arc<str>,
}

#[derive(Default)]
struct Log {
    events: Vec<LiveEvent>,
    /// The `/wait` body, once the run ended.
    result: Option<Value>,
}

/// The live side of one run: its events so far and how it ended.
pub struct RunChannel {
    /// The run.
    pub run_id: String,
    log: Mutex<Log>,
    version: watch::Sender<usize>,
    cancel: watch::Sender<Option<CancelAction>>,
    started_ms: i64,
}

impl RunChannel {
    fn new(run_id: &str) -> Arc<Self> {
        Arc::new(RunChannel {
            run_id: run_id.to_owned(),
            log: Mutex::new(Log::default()),
            version: watch::channel(0).0,
            cancel: watch::channel(None).0,
            started_ms: now_ms(),
        })
    }

    fn push(&self, name: &str, data: &Value) {
        if let Ok(mut log) = self.log.lock() {
            let id = format!("{}-{}", now_ms(), log.events.len());
            log.events.push(LiveEvent {
                id,
                name: name.to_owned(),
                data: data.to_string().into(),
            });
            let n = log.events.len();
            self.version.send_replace(n);
        }
    }

    fn finish(&self, result: Value) {
        if let Ok(mut log) = self.log.lock() {
            log.result = Some(result);
        }
        self.version.send_modify(|v| *v += 0);
    }

    /// The position right after the event with `id` (`-1`: the start), or the end.
    pub fn position_after(&self, id: Option<&str>) -> usize {
        let Ok(log) = self.log.lock() else {
            return 0;
        };
        match id {
            Some("-1") => 0,
            Some(id) => log
                .events
                .iter()
                .position(|e| e.id == id)
                .map(|i| i + 1)
                .unwrap_or(0),
            None => log.events.len(),
        }
    }

    /// Whether the run ended.
    pub fn finished(&self) -> bool {
        self.log.lock().map(|l| l.result.is_some()).unwrap_or(true)
    }

    /// Events from `from` on, as they come; ends when the run ends.
    pub fn follow(self: &Arc<Self>, from: usize) -> futures::stream::BoxStream<'static, LiveEvent> {
        let rx = self.version.subscribe();
        let me = self.clone();
        futures::stream::unfold((me, rx, from), |(me, mut rx, pos)| async move {
            loop {
                let (next, done) = {
                    let log = me.log.lock().ok()?;
                    (log.events.get(pos).cloned(), log.result.is_some())
                };
                if let Some(e) = next {
                    return Some((e, (me, rx, pos + 1)));
                }
                if done {
                    return None;
                }
                rx.changed().await.ok()?;
            }
        })
        .boxed()
    }

    /// The `/wait` body once the run ends.
    pub async fn result(&self) -> Value {
        let mut rx = self.version.subscribe();
        loop {
            if let Ok(log) = self.log.lock()
                && let Some(r) = &log.result
            {
                return r.clone();
            }
            if rx.changed().await.is_err() {
                return json!({});
            }
        }
    }
}

/// Counters for `/metrics`.
#[derive(Default)]
pub struct Metrics {
    /// Runs finished, by status.
    pub finished: Mutex<BTreeMap<String, u64>>,
    /// Sum of run durations (ms) and their count.
    pub duration_ms: Mutex<(u64, u64)>,
}

/// The runs of one server: queue, workers, live channels.
pub struct Runs {
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) graphs: Arc<BTreeMap<String, Arc<dyn ServedGraph>>>,
    live: Mutex<HashMap<String, Arc<RunChannel>>>,
    wake: Notify,
    slots: Arc<Semaphore>,
    /// What `/metrics` reports.
    pub metrics: Metrics,
}

/// How long a finished run's events stay joinable in memory.
const KEEP_FINISHED: Duration = Duration::from_secs(600);

impl Runs {
    pub(crate) fn new(
        store: Arc<dyn RunStore>,
        graphs: Arc<BTreeMap<String, Arc<dyn ServedGraph>>>,
        workers: usize,
    ) -> Arc<Self> {
        Arc::new(Runs {
            store,
            graphs,
            live: Mutex::new(HashMap::new()),
            wake: Notify::new(),
            slots: Arc::new(Semaphore::new(workers.max(1))),
            metrics: Metrics::default(),
        })
    }

    /// The live channel of a run (registered when it was queued, or when it starts).
    pub fn channel(&self, run_id: &str) -> Option<Arc<RunChannel>> {
        self.live.lock().ok()?.get(run_id).cloned()
    }

    fn open_channel(&self, run_id: &str) -> Arc<RunChannel> {
        let mut live = match self.live.lock() {
            Ok(l) => l,
            Err(p) => p.into_inner(),
        };
        let now = now_ms();
        live.retain(|_, c| !c.finished() || now - c.started_ms < KEEP_FINISHED.as_millis() as i64);
        live.entry(run_id.to_owned())
            .or_insert_with(|| RunChannel::new(run_id))
            .clone()
    }

    /// Queues `run` (a run document, `pending`) and wakes a worker.
    pub async fn enqueue(&self, run: &Value) -> Result<Arc<RunChannel>, ApiError> {
        let id = run["run_id"].as_str().unwrap_or_default().to_owned();
        let channel = self.open_channel(&id);
        self.store.put(Kind::Run, run).await?;
        self.wake.notify_one();
        Ok(channel)
    }

    /// Starts the worker loop: claims runs while a slot is free.
    pub fn spawn_workers(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                let Ok(permit) = me.slots.clone().acquire_owned().await else {
                    return;
                };
                match me.store.claim().await {
                    Ok(Some(run)) => {
                        let runner = me.clone();
                        tokio::spawn(async move {
                            runner.execute(run).await;
                            drop(permit);
                            runner.wake.notify_one();
                        });
                    }
                    Ok(None) => {
                        drop(permit);
                        let _ =
                            tokio::time::timeout(Duration::from_secs(1), me.wake.notified()).await;
                    }
                    Err(e) => {
                        drop(permit);
                        tracing::error!(error = %e, "claiming a run failed");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        })
    }

    /// Cancels a pending or running run. Whether there was one to cancel.
    pub async fn cancel(&self, run: &Value, action: CancelAction) -> Result<bool, ApiError> {
        let id = run["run_id"].as_str().unwrap_or_default();
        match run["status"].as_str() {
            Some("pending") => {
                let channel = self.open_channel(id);
                // Claimed meanwhile? Then it is running and the channel's cancel stops it.
                channel.cancel.send_replace(Some(action));
                if let Some(mut current) = self.store.get(Kind::Run, id).await?
                    && current["status"] == "pending"
                {
                    let thread = current["thread_id"].as_str().unwrap_or_default().to_owned();
                    if action == CancelAction::Rollback {
                        self.store.delete(Kind::Run, id).await?;
                    } else {
                        current["status"] = "interrupted".into();
                        current["updated_at"] = now_iso().into();
                        self.store.put(Kind::Run, &current).await?;
                    }
                    channel.finish(json!({}));
                    self.refresh_thread(&thread, None, false).await?;
                }
                Ok(true)
            }
            Some("running") => {
                let channel = self.open_channel(id);
                channel.cancel.send_replace(Some(action));
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Active (pending or running) runs of a thread.
    pub async fn active_on(&self, thread_id: &str) -> Result<Vec<Value>, ApiError> {
        Ok(self
            .store
            .runs_of(thread_id)
            .await?
            .into_iter()
            .filter(|r| matches!(r["status"].as_str(), Some("pending" | "running")))
            .collect())
    }

    async fn execute(&self, mut run: Value) {
        let run_id = run["run_id"].as_str().unwrap_or_default().to_owned();
        let thread_id = run["thread_id"].as_str().unwrap_or_default().to_owned();
        let channel = self.open_channel(&run_id);
        let started = now_ms();
        let attempt = run["attempt"].as_i64().unwrap_or(1);
        let kwargs = &run["kwargs"];
        let graph_id = kwargs["config"]["configurable"]["graph_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        channel.push("metadata", &json!({"run_id": run_id, "attempt": attempt}));
        let Some(graph) = self.graphs.get(&graph_id).cloned() else {
            let failure = Failure {
                error: "GraphNotFound".into(),
                message: format!("graph '{graph_id}' is not served here"),
            };
            self.conclude(
                &mut run,
                &channel,
                Value::Null,
                Vec::new(),
                Some(failure),
                None,
                started,
            )
            .await;
            return;
        };
        // Where the thread was, for a rollback.
        let before = graph
            .state(&thread_id, None, false)
            .await
            .ok()
            .flatten()
            .and_then(|s| s["checkpoint_id"].as_str().map(str::to_owned));
        let job = job_of(&run_id, &thread_id, kwargs);
        let mut parts = match graph.start(job) {
            Ok(parts) => parts,
            Err(e) => {
                let failure = Failure {
                    error: "InvalidContext".into(),
                    message: e.detail,
                };
                self.conclude(
                    &mut run,
                    &channel,
                    Value::Null,
                    Vec::new(),
                    Some(failure),
                    None,
                    started,
                )
                .await;
                return;
            }
        };
        let mut cancel = channel.cancel.subscribe();
        let mut cancelled = *cancel.borrow();
        let mut outcome = None;
        while cancelled.is_none() {
            tokio::select! {
                part = parts.next() => match part {
                    Some(GraphPart::Event { name, data }) => channel.push(&name, &data),
                    Some(GraphPart::Done(o)) => { outcome = Some(o); break; }
                    None => break,
                },
                changed = cancel.changed() => {
                    if changed.is_err() { break; }
                    cancelled = *cancel.borrow();
                }
            }
        }
        drop(parts); // cancels the graph's run if it is still going
        match (cancelled, outcome) {
            (Some(CancelAction::Rollback), _) => {
                let restored = match &before {
                    Some(cp) => graph
                        .update_state(&thread_id, json!({}), None, Some(cp))
                        .await
                        .map(|_| ()),
                    None => graph.delete_thread(&thread_id).await,
                };
                if let Err(e) = restored {
                    tracing::error!(run_id, error = %e.detail, "rolling back the thread failed");
                }
                let _ = self.store.delete(Kind::Run, &run_id).await;
                channel.finish(json!({}));
                let _ = self.refresh_thread(&thread_id, None, false).await;
                self.count("rolled_back", started);
            }
            (Some(CancelAction::Interrupt), _) => {
                let failure = Failure {
                    error: "UserInterrupt".into(),
                    message: format!(
                        "interrupt requested via POST /threads/{thread_id}/runs/{run_id}/cancel"
                    ),
                };
                let values = graph
                    .state(&thread_id, None, false)
                    .await
                    .ok()
                    .flatten()
                    .map(|s| s["values"].clone())
                    .unwrap_or(Value::Null);
                self.conclude(
                    &mut run,
                    &channel,
                    values,
                    Vec::new(),
                    None,
                    Some(failure),
                    started,
                )
                .await;
            }
            (None, Some(o)) => {
                if let Some(f) = &o.error {
                    channel.push("error", &f.to_json());
                }
                self.conclude(
                    &mut run,
                    &channel,
                    o.values,
                    o.interrupts,
                    o.error,
                    None,
                    started,
                )
                .await;
            }
            (None, None) => {
                let failure = Failure {
                    error: "RunAborted".into(),
                    message: "the run stopped without an outcome".into(),
                };
                channel.push("error", &failure.to_json());
                self.conclude(
                    &mut run,
                    &channel,
                    Value::Null,
                    Vec::new(),
                    Some(failure),
                    None,
                    started,
                )
                .await;
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn conclude(
        &self,
        run: &mut Value,
        channel: &RunChannel,
        values: Value,
        interrupts: Vec<Value>,
        error: Option<Failure>,
        cancelled: Option<Failure>,
        started: i64,
    ) {
        let run_id = run["run_id"].as_str().unwrap_or_default().to_owned();
        let thread_id = run["thread_id"].as_str().unwrap_or_default().to_owned();
        let status = if cancelled.is_some() {
            "interrupted"
        } else if error.is_some() {
            "error"
        } else {
            "success"
        };
        run["status"] = status.into();
        run["updated_at"] = now_iso().into();
        if let Err(e) = self.store.put(Kind::Run, run).await {
            tracing::error!(run_id, error = %e, "recording the run's end failed");
        }
        let thread_error = error.as_ref().or(cancelled.as_ref());
        if let Err(e) = self
            .refresh_thread(&thread_id, thread_error, cancelled.is_some())
            .await
        {
            tracing::error!(run_id, error = %e.detail, "updating the thread failed");
        }
        let body = match &error {
            Some(f) => json!({"__error__": f.to_json()}),
            None => {
                let mut v = if values.is_null() { json!({}) } else { values };
                if !interrupts.is_empty()
                    && let Some(o) = v.as_object_mut()
                {
                    let list: Vec<Value> = interrupts
                        .iter()
                        .map(|i| json!({"value": i["value"], "id": i["id"], "response_schema": null}))
                        .collect();
                    o.insert("__interrupt__".into(), Value::Array(list));
                }
                v
            }
        };
        // Stateless runs clean up their thread unless asked to keep it.
        if run["kwargs"]["temporary"] == true && run["kwargs"]["on_completion"] != "keep" {
            if let Some(graph) = self.graph_of(run) {
                let _ = graph.delete_thread(&thread_id).await;
            }
            let _ = self.store.delete(Kind::Thread, &thread_id).await;
        }
        channel.finish(body);
        self.count(status, started);
    }

    fn count(&self, status: &str, started: i64) {
        if let Ok(mut m) = self.metrics.finished.lock() {
            *m.entry(status.to_owned()).or_default() += 1;
        }
        if let Ok(mut d) = self.metrics.duration_ms.lock() {
            d.0 += (now_ms() - started).max(0) as u64;
            d.1 += 1;
        }
    }

    fn graph_of(&self, run: &Value) -> Option<Arc<dyn ServedGraph>> {
        let id = run["kwargs"]["config"]["configurable"]["graph_id"].as_str()?;
        self.graphs.get(id).cloned()
    }

    /// Recomputes a thread's status, values and interrupts from its checkpoints and runs.
    pub async fn refresh_thread(
        &self,
        thread_id: &str,
        error: Option<&Failure>,
        cancelled: bool,
    ) -> Result<(), ApiError> {
        let Some(mut thread) = self.store.get(Kind::Thread, thread_id).await? else {
            return Ok(());
        };
        let graph_id = thread["metadata"]["graph_id"].as_str().unwrap_or_default();
        let state = match self.graphs.get(graph_id) {
            Some(g) => g.state(thread_id, None, false).await?,
            None => None,
        };
        let active = !self.active_on(thread_id).await?.is_empty();
        let next_pending = state
            .as_ref()
            .and_then(|s| s["next"].as_array())
            .is_some_and(|n| !n.is_empty());
        let status = if active {
            "busy"
        } else if cancelled {
            "interrupted"
        } else if error.is_some() {
            "error"
        } else if next_pending {
            "interrupted"
        } else {
            "idle"
        };
        let mut interrupts = Map::new();
        if let Some(tasks) = state.as_ref().and_then(|s| s["tasks"].as_array()) {
            for t in tasks {
                if let Some(list) = t["interrupts"].as_array()
                    && !list.is_empty()
                {
                    interrupts.insert(
                        t["id"].as_str().unwrap_or_default().to_owned(),
                        Value::Array(list.clone()),
                    );
                }
            }
        }
        thread["status"] = status.into();
        thread["values"] = state.map(|s| s["values"].clone()).unwrap_or(Value::Null);
        thread["interrupts"] = Value::Object(interrupts);
        thread["error"] = match error {
            Some(f) if !active => f.to_json(),
            _ => Value::Null,
        };
        let now = now_iso();
        thread["updated_at"] = now.clone().into();
        thread["state_updated_at"] = now.into();
        self.store.put(Kind::Thread, &thread).await?;
        Ok(())
    }
}

/// The graph job a run's `kwargs` describe.
fn job_of(run_id: &str, thread_id: &str, kwargs: &Value) -> GraphJob {
    let strings = |v: &Value| -> Vec<String> {
        match v {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a
                .iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        }
    };
    let command = &kwargs["command"];
    let input = if command.is_object() {
        JobInput::Command {
            resume: command.get("resume").cloned().filter(|v| !v.is_null()),
            update: command.get("update").cloned().filter(|v| !v.is_null()),
            goto: command.get("goto").cloned().filter(|v| !v.is_null()),
        }
    } else if kwargs["input"].is_null() {
        JobInput::Continue
    } else {
        JobInput::Input(kwargs["input"].clone())
    };
    let modes = strings(&kwargs["stream_mode"])
        .iter()
        .filter_map(|m| ApiMode::parse(m).ok())
        .collect();
    let mut metadata = kwargs["config"]["metadata"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for key in ["graph_id", "assistant_id"] {
        if let Some(v) = kwargs["config"]["configurable"].get(key) {
            metadata.insert(key.to_owned(), v.clone());
        }
    }
    metadata.insert("run_id".into(), run_id.into());
    GraphJob {
        run_id: run_id.to_owned(),
        thread_id: thread_id.to_owned(),
        input,
        checkpoint_id: kwargs["checkpoint_id"].as_str().map(str::to_owned),
        context: kwargs["context"].clone(),
        interrupt_before: strings(&kwargs["interrupt_before"]),
        interrupt_after: strings(&kwargs["interrupt_after"]),
        recursion_limit: kwargs["config"]["recursion_limit"]
            .as_u64()
            .map(|n| n as usize),
        modes,
        subgraphs: kwargs["subgraphs"] == true,
        metadata,
        durability: match kwargs["durability"].as_str() {
            Some("sync") => Some(agent_core::Durability::Sync),
            Some("exit") => Some(agent_core::Durability::Exit),
            Some("async") => Some(agent_core::Durability::Async),
            _ => None,
        },
    }
}
