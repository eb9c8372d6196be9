//! Executing one run: its graph's events into the run's channel (or, on a shared store,
//! into the store for every instance), its end recorded on the run and its thread, its
//! lease renewed meanwhile.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, watch};

use super::{CancelAction, Next, RunChannel, Runs};
use crate::error::ApiError;
use crate::graph::{ApiMode, Failure, GraphJob, GraphPart, JobInput, ServedGraph};
use crate::store::{Kind, Notice, StoredEvent, ThreadEnd};
use crate::time::{now_iso, now_ms};

/// Where an executing run's events go: its local channel, or the shared store (read back
/// by every instance's followers, this one's included).
pub(super) struct Output {
    channel: Arc<RunChannel>,
    forward: Option<(mpsc::UnboundedSender<Forward>, tokio::task::JoinHandle<()>)>,
    seq: std::sync::atomic::AtomicI64,
}

enum Forward {
    Event(StoredEvent),
    Result(Value),
}

impl Output {
    pub(super) fn emit(&self, name: &str, data: &Value) {
        let scrubbed;
        let data = if name == "error" || name.starts_with("error|") {
            let mut clean = data.clone();
            crate::redact::scrub_json(&mut clean);
            scrubbed = clean;
            &scrubbed
        } else {
            data
        };
        match &self.forward {
            None => {
                self.channel.push(name, data);
            }
            Some((tx, _)) => {
                let seq = self.seq.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = tx.send(Forward::Event(StoredEvent {
                    seq,
                    id: format!("{}-{seq}", now_ms()),
                    name: name.to_owned(),
                    data: data.to_string(),
                }));
            }
        }
    }

    /// The run's end: its `/wait` body. On a shared store, after every event is stored.
    pub(super) async fn finish(&self, body: Value) {
        match &self.forward {
            None => self.channel.finish(body),
            Some((tx, _)) => {
                let _ = tx.send(Forward::Result(body));
            }
        }
    }
}

/// The lease of a run executing here, renewed on a task of its own.
pub(super) struct Heartbeat {
    lost: watch::Receiver<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Heartbeat {
    /// Resolves when the lease was lost; never on a store of one process (whose renewing
    /// task ends at once, dropping the sender).
    pub(super) async fn lost(&self) {
        let mut rx = self.lost.clone();
        if rx.wait_for(|l| *l).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Runs {
    pub(super) async fn output(self: &Arc<Self>, run_id: &str) -> Output {
        if !self.store.shared() {
            return Output {
                channel: self.local_channel(run_id),
                forward: None,
                seq: 0.into(),
            };
        }
        // Followers here read the run back from the store, as on any other instance.
        let channel = self.mirror(run_id);
        // A run taken over continues the stream its first attempt began.
        let next = match self.store.events_after(run_id, -1).await {
            Ok(events) => events.last().map_or(0, |e| e.seq + 1),
            Err(_) => 0,
        };
        let (tx, mut rx) = mpsc::unbounded_channel::<Forward>();
        let me = self.clone();
        let id = run_id.to_owned();
        let task = tokio::spawn(async move {
            let mut batch = Vec::new();
            while let Some(first) = rx.recv().await {
                let mut result = None;
                let mut next = Some(first);
                while let Some(f) = next.take() {
                    match f {
                        Forward::Event(e) => batch.push(e),
                        Forward::Result(r) => result = Some(r),
                    }
                    next = rx.try_recv().ok();
                }
                if let Err(e) = me.store.append_events(&id, &batch).await {
                    tracing::error!(run_id = id, error = %e, "storing a run's events failed");
                }
                batch.clear();
                if let Some(r) = result
                    && let Err(e) = me.store.put_result(&id, &r).await
                {
                    tracing::error!(run_id = id, error = %e, "storing a run's result failed");
                }
                let _ = me
                    .store
                    .notify(&Notice::Events { run_id: id.clone() })
                    .await;
            }
        });
        Output {
            channel,
            forward: Some((tx, task)),
            seq: next.into(),
        }
    }

    fn heartbeat(self: Arc<Self>, run_id: String) -> Heartbeat {
        let (tx, lost) = watch::channel(false);
        let every = (self.leases.ttl / 3).max(Duration::from_millis(100));
        let task = tokio::spawn(async move {
            if !self.store.shared() {
                return;
            }
            loop {
                tokio::time::sleep(every).await;
                match self
                    .store
                    .renew(&run_id, &self.owner, self.leases.ttl)
                    .await
                {
                    Ok(Some(None)) => {}
                    Ok(Some(Some(action))) => {
                        self.stop_local(&run_id, CancelAction::parse(&action));
                    }
                    Ok(None) => {
                        tx.send_replace(true);
                        return;
                    }
                    Err(e) => tracing::warn!(run_id, error = %e, "renewing a lease failed"),
                }
            }
        });
        Heartbeat { lost, task }
    }

    /// Executes a claimed run to its end, renewing its lease meanwhile; `cancel` stops it.
    /// Returns what its end claimed for this worker.
    pub(super) async fn execute(
        self: &Arc<Self>,
        mut run: Value,
        mut cancel: watch::Receiver<Option<CancelAction>>,
    ) -> Next {
        let run_id = run["run_id"].as_str().unwrap_or_default().to_owned();
        let thread_id = run["thread_id"].as_str().unwrap_or_default().to_owned();
        let channel = self.output(&run_id).await;
        if run["kwargs"]["resumable"] == true {
            channel.channel.keep(self.limits.event_log_bytes);
        }
        let started = now_ms();
        let heartbeat = self.clone().heartbeat(run_id.clone());
        let attempt = run["attempt"].as_i64().unwrap_or(1);
        let kwargs = &run["kwargs"];
        let graph_id = kwargs["config"]["configurable"]["graph_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        channel.emit("metadata", &json!({"run_id": run_id, "attempt": attempt}));
        let Some(graph) = self.graphs.get(&graph_id).cloned() else {
            let failure = Failure {
                error: "GraphNotFound".into(),
                message: format!("graph '{graph_id}' is not served here"),
            };
            return self.fail(&mut run, &channel, failure, started).await;
        };
        // The thread's latest checkpoint: where a rollback goes back to, and where a run taken
        // over from an instance that died resumes (its input was applied and its finished
        // nodes are not run again).
        // A stateless run's first attempt starts on a thread of its own: nothing to read.
        let fresh = attempt == 1 && kwargs["temporary"] == true;
        let latest = if fresh {
            None
        } else {
            graph.state(&thread_id, None, false).await.ok().flatten()
        };
        let mut job = job_of(&run_id, &thread_id, kwargs);
        if attempt > 1
            && latest
                .as_ref()
                .is_some_and(|s| s["metadata"]["run_id"] == run_id.as_str())
        {
            job.input = JobInput::Continue;
            job.checkpoint_id = None;
        }
        let before = latest.and_then(|s| s["checkpoint_id"].as_str().map(str::to_owned));
        let mut parts = match graph.start(job) {
            Ok(parts) => parts,
            Err(e) => {
                let failure = Failure {
                    error: "InvalidContext".into(),
                    message: e.detail,
                };
                return self.fail(&mut run, &channel, failure, started).await;
            }
        };
        let mut cancelled = *cancel.borrow();
        let mut lease_lost = false;
        let mut outcome = None;
        while cancelled.is_none() {
            tokio::select! {
                part = parts.next() => match part {
                    Some(GraphPart::Event { name, data }) => channel.emit(&name, &data),
                    Some(GraphPart::Done(o)) => { outcome = Some(o); break; }
                    None => break,
                },
                _ = heartbeat.lost() => {
                    lease_lost = true;
                    break;
                }
                changed = cancel.changed() => {
                    if changed.is_err() { break; }
                    cancelled = *cancel.borrow();
                }
            }
        }
        drop(parts); // cancels the graph's run if it is still going
        if lease_lost {
            // Another instance took the run over (this one was cut off from the database
            // for longer than the lease): stop without writing; the new owner finishes it.
            tracing::warn!(run_id, "lost the run's lease; another instance has it");
            return Next::Unknown;
        }
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
                channel.finish(json!({})).await;
                let _ = self.refresh_thread(&thread_id, None, false).await;
                self.count("rolled_back", started);
                Next::Unknown
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
                .await
            }
            (None, Some(o)) => {
                if let Some(f) = &o.error {
                    channel.emit("error", &f.to_json());
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
                .await
            }
            (None, None) => {
                let failure = Failure {
                    error: "RunAborted".into(),
                    message: "the run stopped without an outcome".into(),
                };
                channel.emit("error", &failure.to_json());
                self.fail(&mut run, &channel, failure, started).await
            }
        }
    }

    /// Ends a run that failed before its graph produced anything.
    async fn fail(
        &self,
        run: &mut Value,
        channel: &Output,
        failure: Failure,
        started: i64,
    ) -> Next {
        self.conclude(
            run,
            channel,
            Value::Null,
            Vec::new(),
            Some(failure),
            None,
            started,
        )
        .await
    }

    /// Records a run's end, with its thread's, and claims in the same step the next run for
    /// this worker; then ends its stream.
    #[allow(clippy::too_many_arguments)]
    async fn conclude(
        &self,
        run: &mut Value,
        channel: &Output,
        values: Value,
        interrupts: Vec<Value>,
        error: Option<Failure>,
        cancelled: Option<Failure>,
        started: i64,
    ) -> Next {
        let run_id = run["run_id"].as_str().unwrap_or_default().to_owned();
        let thread_id = run["thread_id"].as_str().unwrap_or_default().to_owned();
        // What clients read of a failure (the run, the thread, `/wait`, the webhook).
        let error = error.map(Failure::scrubbed);
        let cancelled = cancelled.map(Failure::scrubbed);
        let status = if cancelled.is_some() {
            "interrupted"
        } else if error.is_some() {
            "error"
        } else {
            "success"
        };
        run["status"] = status.into();
        run["updated_at"] = now_iso().into();
        // Stateless runs clean up their thread unless asked to keep it: its checkpoints, its
        // document and its runs.
        let temporary =
            run["kwargs"]["temporary"] == true && run["kwargs"]["on_completion"] != "keep";
        let thread_end = if temporary {
            if let Some(graph) = self.graph_of(run)
                && let Err(e) = graph.delete_thread(&thread_id).await
            {
                tracing::error!(run_id, error = %e.detail, "deleting the run's checkpoints failed");
            }
            Ok(ThreadEnd::Delete(thread_id.clone()))
        } else {
            let thread_error = error.as_ref().or(cancelled.as_ref());
            self.thread_after(&thread_id, Some(&run_id), thread_error, cancelled.is_some())
                .await
                .map(|doc| doc.map_or(ThreadEnd::Gone, ThreadEnd::Put))
        };
        let thread_end = thread_end.unwrap_or_else(|e| {
            tracing::error!(run_id, error = %e.detail, "reading the thread failed");
            ThreadEnd::Gone
        });
        let claim = self.next_claim();
        let looked = claim.is_some();
        let next = match self.store.finish(run, thread_end, claim).await {
            Ok(Some(claimed)) => Next::Run(claimed),
            Ok(None) if looked => Next::Idle,
            Ok(None) => Next::Unknown,
            Err(e) => {
                tracing::error!(run_id, error = %e, "recording the run's end failed");
                Next::Unknown
            }
        };
        if let Some(url) = run["kwargs"]["webhook"].as_str() {
            let failure = error.as_ref().or(cancelled.as_ref());
            let body = super::webhook::payload(run, started, &values, failure);
            super::webhook::deliver(self.webhooks.clone(), url.to_owned(), body);
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
        channel.finish(body).await;
        if temporary && !self.store.shared() {
            // Deleted with its thread: nobody can join it.
            self.forget(&run_id);
        }
        self.count(status, started);
        next
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
        if let Some(thread) = self.thread_after(thread_id, None, error, cancelled).await? {
            self.store.put(Kind::Thread, &thread).await?;
        }
        Ok(())
    }

    /// A thread's document with its status, values and interrupts recomputed from its
    /// checkpoints and runs (`ending`: a run that is ending, not counted as active);
    /// `None` when the thread is gone.
    async fn thread_after(
        &self,
        thread_id: &str,
        ending: Option<&str>,
        error: Option<&Failure>,
        cancelled: bool,
    ) -> Result<Option<Value>, ApiError> {
        let Some(mut thread) = self.store.get(Kind::Thread, thread_id).await? else {
            return Ok(None);
        };
        let graph_id = thread["metadata"]["graph_id"].as_str().unwrap_or_default();
        let state = match self.graphs.get(graph_id) {
            Some(g) => g.state(thread_id, None, false).await?,
            None => None,
        };
        let active = self
            .active_on(thread_id)
            .await?
            .iter()
            .any(|r| ending.is_none_or(|id| r["run_id"] != id));
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
        Ok(Some(thread))
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
    // The graph's context is built from the run's and the user it runs for, which the API
    // put in `config.configurable` (clients cannot set it).
    let mut context = kwargs["context"].clone();
    if let (Some(user), Some(c)) = (
        kwargs["config"]["configurable"].get(crate::api::AUTH_USER),
        context.as_object_mut(),
    ) {
        c.insert(crate::api::AUTH_USER.into(), user.clone());
    }
    GraphJob {
        run_id: run_id.to_owned(),
        thread_id: thread_id.to_owned(),
        input,
        checkpoint_id: kwargs["checkpoint_id"].as_str().map(str::to_owned),
        context,
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
