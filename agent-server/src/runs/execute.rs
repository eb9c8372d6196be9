//! Executing one run: its graph's events into the run's channel (or, on a shared store,
//! into the store for every instance), its end recorded on the run and its thread, its
//! lease renewed meanwhile.
//!
//! A run stops at once when asked (a cancel, its time limit, its thread deleted, the server
//! handing it back): the task driving its graph is aborted, dropping the step in flight,
//! and its checkpoints' gate is closed, so nothing it had under way lands afterwards. Every
//! write it makes after it was claimed carries its claim (`Token`): a run another instance
//! took over, or one deleted, writes nothing — its checkpoints (fenced on PostgreSQL), its
//! events and its end are refused.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tracing::Instrument as _;

use super::{CancelAction, Next, Registered, RunChannel, Runs, Stop};
use crate::error::ApiError;
use crate::graph::{ApiMode, Failure, GraphJob, GraphPart, JobInput, ServedGraph};
use crate::store::{Kind, Notice, StoredEvent, ThreadEnd, Token};
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
    /// Answered once every event before it is stored.
    Flush(oneshot::Sender<()>),
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

    /// Waits until every event emitted so far is stored (a shared store; at once otherwise).
    async fn flush(&self) {
        if let Some((tx, _)) = &self.forward {
            let (done, stored) = oneshot::channel();
            if tx.send(Forward::Flush(done)).is_ok() {
                let _ = stored.await;
            }
        }
    }

    /// The run's end for its followers: its `/wait` body into the local channel; on a shared
    /// store (where the body was stored with the run's end) a notice that it is there.
    async fn finish(&self, runs: &Runs, run_id: &str, body: Value) {
        match &self.forward {
            None => self.channel.finish(body),
            Some(_) => {
                let _ = runs
                    .store
                    .notify(&Notice::Events {
                        run_id: run_id.to_owned(),
                    })
                    .await;
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

/// How a run that was stopped, or that failed, ends.
enum End {
    /// It finished (maybe paused at an interrupt).
    Done,
    /// It failed.
    Error(Failure),
    /// A cancel (or its thread's deletion) stopped it.
    Interrupted(Failure),
    /// Its time limit stopped it.
    Timeout(Failure),
}

impl End {
    fn status(&self) -> &'static str {
        match self {
            End::Done => "success",
            End::Error(_) => "error",
            End::Interrupted(_) => "interrupted",
            End::Timeout(_) => "timeout",
        }
    }

    fn failure(&self) -> Option<&Failure> {
        match self {
            End::Done => None,
            End::Error(f) | End::Interrupted(f) | End::Timeout(f) => Some(f),
        }
    }

    fn scrubbed(self) -> End {
        match self {
            End::Done => End::Done,
            End::Error(f) => End::Error(f.scrubbed()),
            End::Interrupted(f) => End::Interrupted(f.scrubbed()),
            End::Timeout(f) => End::Timeout(f.scrubbed()),
        }
    }
}

impl Runs {
    pub(super) async fn output(self: &Arc<Self>, run_id: &str, token: &Token) -> Output {
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
        let token = token.clone();
        let task = tokio::spawn(async move {
            let mut batch = Vec::new();
            // Once refused (the run is not this claim's any more), no event is stored.
            let mut fenced = false;
            while let Some(first) = rx.recv().await {
                let mut flushes = Vec::new();
                let mut next = Some(first);
                while let Some(f) = next.take() {
                    match f {
                        Forward::Event(e) => batch.push(e),
                        Forward::Flush(done) => flushes.push(done),
                    }
                    next = rx.try_recv().ok();
                }
                if !fenced && !batch.is_empty() {
                    match me.store.append_events(&id, &token, &batch).await {
                        Ok(()) => {
                            let _ = me
                                .store
                                .notify(&Notice::Events { run_id: id.clone() })
                                .await;
                        }
                        Err(e) if e.is_fenced() => fenced = true,
                        Err(e) => {
                            tracing::error!(run_id = id, error = %e, "storing a run's events failed")
                        }
                    }
                }
                batch.clear();
                for done in flushes {
                    let _ = done.send(());
                }
            }
        });
        Output {
            channel,
            forward: Some((tx, task)),
            seq: next.into(),
        }
    }

    fn heartbeat(self: Arc<Self>, run_id: String, token: Token) -> Heartbeat {
        let (tx, lost) = watch::channel(false);
        let every = (self.leases.ttl / 3).max(Duration::from_millis(100));
        let task = tokio::spawn(async move {
            if !self.store.shared() {
                return;
            }
            let mut renewed = tokio::time::Instant::now();
            loop {
                tokio::time::sleep(every).await;
                let asked = tokio::time::Instant::now();
                match self.store.renew(&run_id, &token, self.leases.ttl).await {
                    Ok(Some(None)) => renewed = asked,
                    Ok(Some(Some(action))) => {
                        renewed = asked;
                        if let Some(gate) = self.stop_local(&run_id, Stop::parse(&action)) {
                            gate.close().await;
                        }
                    }
                    Ok(None) => {
                        tx.send_replace(true);
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(run_id, error = %e, "renewing a lease failed");
                        // Cut off from the database for as long as the lease: another
                        // instance may have the run by now.
                        if renewed.elapsed() >= self.leases.ttl {
                            tx.send_replace(true);
                            return;
                        }
                    }
                }
            }
        });
        Heartbeat { lost, task }
    }

    /// Executes a claimed run to its end, renewing its lease meanwhile; a stop ends it at
    /// once. Returns what its end claimed for this worker. Everything it does is in its
    /// `run` span, a child of the trace it was created in (see `crate::trace`).
    pub(super) async fn execute(self: &Arc<Self>, run: Value, registered: Registered) -> Next {
        let graph_id = run["kwargs"]["config"]["configurable"]["graph_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let attempt = run["attempt"].as_i64().unwrap_or(1);
        let span = crate::trace::run_span(&run, &graph_id, attempt, now_ms());
        self.execute_attempt(run, registered).instrument(span).await
    }

    async fn execute_attempt(self: &Arc<Self>, mut run: Value, registered: Registered) -> Next {
        let Registered {
            stop: mut stops,
            gate,
        } = registered;
        let run_id = run["run_id"].as_str().unwrap_or_default().to_owned();
        let thread_id = run["thread_id"].as_str().unwrap_or_default().to_owned();
        let token = Token::of(&run, &self.owner);
        let channel = self.output(&run_id, &token).await;
        if run["kwargs"]["resumable"] == true {
            channel.channel.keep(self.limits.event_log_bytes);
        }
        let started = now_ms();
        // A stop asked for before this attempt (a cancel of a run that was then queued again
        // after its instance stopped) applies at once.
        let asked = if self.store.shared() {
            match self.store.renew(&run_id, &token, self.leases.ttl).await {
                Ok(Some(asked)) => asked,
                _ => None,
            }
        } else {
            run["stop_asked"].as_str().map(str::to_owned)
        };
        if let Some(asked) = asked {
            drop(self.stop_local(&run_id, Stop::parse(&asked)));
        }
        let heartbeat = self.clone().heartbeat(run_id.clone(), token.clone());
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
            return self
                .conclude(
                    &mut run,
                    &channel,
                    &token,
                    Value::Null,
                    Vec::new(),
                    End::Error(failure),
                    started,
                )
                .await;
        };
        // The thread's latest checkpoint: where a run taken over from an instance that died
        // resumes (its input was applied and its finished nodes are not run again).
        // A stateless run's first attempt starts on a thread of its own: nothing to read.
        let fresh = attempt == 1 && kwargs["temporary"] == true;
        let latest = if fresh {
            None
        } else {
            graph.state(&thread_id, None, false).await.ok().flatten()
        };
        let mut job = job_of(&run_id, &thread_id, kwargs);
        job.checkpointer = Some(self.run_saver(&run_id, &token, gate.clone()));
        if attempt > 1
            && latest
                .as_ref()
                .is_some_and(|s| s["metadata"]["run_id"] == run_id.as_str())
        {
            job.input = JobInput::Continue;
            job.checkpoint_id = None;
        }
        // A stop asked for before the graph starts: it does not start (it writes nothing).
        let stopped_early = stops.borrow().is_some();
        let mut parts = match stopped_early {
            true => futures::StreamExt::boxed(futures::stream::empty()),
            false => match graph.start(job) {
                Ok(parts) => parts,
                Err(e) => {
                    let failure = Failure {
                        error: "InvalidContext".into(),
                        message: e.detail,
                    };
                    return self
                        .conclude(
                            &mut run,
                            &channel,
                            &token,
                            Value::Null,
                            Vec::new(),
                            End::Error(failure),
                            started,
                        )
                        .await;
                }
            },
        };
        let limit = self.timeouts.of(&graph_id);
        let deadline = async move {
            match limit {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(deadline);
        let mut stopped = *stops.borrow();
        let mut lease_lost = false;
        let mut outcome = None;
        while stopped.is_none() {
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
                changed = stops.changed() => {
                    if changed.is_err() { break; }
                    stopped = *stops.borrow();
                }
                _ = &mut deadline => stopped = Some(Stop::Timeout),
            }
        }
        // Stops the graph at once (the step in flight is dropped at its next await), and
        // waits for the checkpoint writes it had under way: nothing of it lands later.
        drop(parts);
        gate.close().await;
        if lease_lost {
            // Another instance took the run over (this one was cut off from the database
            // for longer than the lease): stop without writing; the new owner finishes it.
            tracing::warn!(run_id, "lost the run's lease; another instance has it");
            ended_as("lease_lost");
            return Next::Unknown;
        }
        // Its end is decided here: by the strongest stop asked for until now (one that came
        // as the graph ended included), or by the graph.
        let stopped = self.decide_end(&run_id, stopped);
        let values_now = || async {
            graph
                .state(&thread_id, None, false)
                .await
                .ok()
                .flatten()
                .map(|s| s["values"].clone())
                .unwrap_or(Value::Null)
        };
        match (stopped, outcome) {
            (Some(Stop::Handover), _) => {
                ended_as("handed_over");
                Next::Unknown
            }
            (Some(Stop::Cancel(CancelAction::Rollback)), _) => {
                self.roll_back(&run, &channel, &token, started).await
            }
            (Some(Stop::Cancel(CancelAction::Interrupt) | Stop::ThreadDeleted), _) => {
                let failure = Failure {
                    error: "UserInterrupt".into(),
                    message: format!(
                        "interrupt requested via POST /threads/{thread_id}/runs/{run_id}/cancel"
                    ),
                };
                let values = values_now().await;
                self.conclude(
                    &mut run,
                    &channel,
                    &token,
                    values,
                    Vec::new(),
                    End::Interrupted(failure),
                    started,
                )
                .await
            }
            (Some(Stop::Timeout), _) => {
                let secs = limit.unwrap_or_default().as_secs_f64();
                let failure = Failure {
                    error: "TimeoutError".into(),
                    message: format!(
                        "the run took longer than its time limit of {secs} s and was stopped; its last checkpoint is kept"
                    ),
                };
                channel.emit("error", &failure.to_json());
                let values = values_now().await;
                self.conclude(
                    &mut run,
                    &channel,
                    &token,
                    values,
                    Vec::new(),
                    End::Timeout(failure),
                    started,
                )
                .await
            }
            (None, Some(o)) => {
                if let Some(f) = &o.error {
                    // The database went away under the run: it is not the run's failure.
                    // Its lease ends now and it resumes from its last checkpoint on its next
                    // attempt (here or on another instance), once the database is back.
                    if self.store.shared() && f.error == "Storage" {
                        tracing::warn!(run_id, error = %f.message, "the run's storage failed; handing it back to the queue");
                        let _ = self.store.renew(&run_id, &token, Duration::ZERO).await;
                        ended_as("handed_over");
                        return Next::Unknown;
                    }
                    channel.emit("error", &f.to_json());
                }
                let end = match o.error {
                    Some(f) => End::Error(f),
                    None => End::Done,
                };
                self.conclude(
                    &mut run,
                    &channel,
                    &token,
                    o.values,
                    o.interrupts,
                    end,
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
                self.conclude(
                    &mut run,
                    &channel,
                    &token,
                    Value::Null,
                    Vec::new(),
                    End::Error(failure),
                    started,
                )
                .await
            }
        }
    }

    /// A rollback, as langgraph-api does it: the run is deleted with every checkpoint it
    /// wrote, and its thread is back where it was before the run.
    async fn roll_back(&self, run: &Value, channel: &Output, token: &Token, started: i64) -> Next {
        let run_id = run["run_id"].as_str().unwrap_or_default();
        let thread_id = run["thread_id"].as_str().unwrap_or_default();
        // Its checkpoints first, while its row still holds the thread: the next run on the
        // thread starts only once the row goes, from the checkpoint before this run (not
        // from one of this run's, whose blobs are about to be deleted). Only while the run is
        // still this worker's: one taken over is its new owner's to finish.
        let saver = self.rollback_saver(run_id, token);
        let deleted = saver.delete_for_runs(thread_id, &[run_id]).await;
        if let Err(e) = deleted {
            tracing::warn!(run_id, error = %e, "the rolled back run's checkpoints were not deleted");
            return Next::Unknown;
        }
        // The checkpoint it went on from (a resume) gets back the pending writes it had: its
        // thread looks as it did before the run (its next, tasks and interrupts too).
        let written_over = self
            .gate_of(run_id)
            .map(|gate| gate.written_over())
            .unwrap_or_default();
        for (ns, id, writes) in written_over {
            if let Err(e) = saver.replace_writes(thread_id, &ns, &id, &writes).await {
                tracing::warn!(run_id, error = %e, "the writes the rolled back run left were not taken back");
                return Next::Unknown;
            }
        }
        match self.store.delete_claimed(run_id, token).await {
            Ok(()) => {
                let _ = self.refresh_thread(thread_id, None, false).await;
            }
            Err(e) if e.is_fenced() => {
                tracing::warn!(run_id, "a rolled back run was no longer this worker's");
            }
            Err(e) => tracing::error!(run_id, error = %e, "deleting the rolled back run failed"),
        }
        channel.flush().await;
        channel.finish(self, run_id, json!({})).await;
        self.count("rolled_back", started);
        Next::Unknown
    }

    /// Records a run's end, with its thread's, and claims in the same step the next run for
    /// this worker; then ends its stream. The end is written only while the run is still its
    /// claim's; a write that fails for another reason is tried again.
    #[allow(clippy::too_many_arguments)]
    async fn conclude(
        &self,
        run: &mut Value,
        channel: &Output,
        token: &Token,
        values: Value,
        interrupts: Vec<Value>,
        end: End,
        started: i64,
    ) -> Next {
        let run_id = run["run_id"].as_str().unwrap_or_default().to_owned();
        let thread_id = run["thread_id"].as_str().unwrap_or_default().to_owned();
        // What clients read of a failure (the run, the thread, `/wait`, the webhook).
        let end = end.scrubbed();
        let status = end.status();
        if let End::Error(f) | End::Timeout(f) = &end {
            agent_core::telemetry::record_error(&tracing::Span::current(), &f.error, &f.message);
        }
        run["status"] = status.into();
        run["updated_at"] = now_iso().into();
        // Stateless runs clean up their thread unless asked to keep it: its checkpoints
        // (once the end is recorded), its document and its runs.
        let temporary =
            run["kwargs"]["temporary"] == true && run["kwargs"]["on_completion"] != "keep";
        let thread_end = if temporary {
            Ok(ThreadEnd::Delete(thread_id.clone()))
        } else {
            let cancelled = matches!(end, End::Interrupted(_));
            self.thread_after(&thread_id, Some(&run_id), end.failure(), cancelled)
                .await
                .map(|doc| doc.map_or(ThreadEnd::Gone, ThreadEnd::Put))
        };
        let thread_end = thread_end.unwrap_or_else(|e| {
            tracing::error!(run_id, error = %e.detail, "reading the thread failed");
            ThreadEnd::Gone
        });
        let body = match end.failure() {
            Some(f) if !matches!(end, End::Interrupted(_)) => json!({"__error__": f.to_json()}),
            _ => {
                let mut v = if values.is_null() {
                    json!({})
                } else {
                    values.clone()
                };
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
        // Its events stored before its end (followers read them, then the result).
        channel.flush().await;
        let claim = self.next_claim();
        let looked = claim.is_some();
        let recorded = self.record_end(run, thread_end, token, &body, claim).await;
        let next = match recorded {
            Recorded::Done(Some(claimed)) => Next::Run(claimed),
            Recorded::Done(None) if looked => Next::Idle,
            Recorded::Done(None) | Recorded::Later => Next::Unknown,
            Recorded::Fenced => {
                // Not this worker's run any more: its new owner (or nobody, if it was
                // deleted) records its end; followers here learn it from the store.
                if !self.store.shared() {
                    channel.finish(self, &run_id, body).await;
                }
                return Next::Unknown;
            }
            // Its client was told the run is stopped (the stop came as its graph ended): it
            // ends as a stop does, rolled back or interrupted, whatever the graph did.
            Recorded::Stop(Stop::Cancel(CancelAction::Rollback)) => {
                return self.roll_back(run, channel, token, started).await;
            }
            Recorded::Stop(_) => {
                let failure = Failure {
                    error: "UserInterrupt".into(),
                    message: format!(
                        "interrupt requested via POST /threads/{thread_id}/runs/{run_id}/cancel"
                    ),
                };
                let end = End::Interrupted(failure);
                return Box::pin(self.conclude(
                    run,
                    channel,
                    token,
                    values,
                    Vec::new(),
                    end,
                    started,
                ))
                .await;
            }
        };
        if temporary
            && let Some(graph) = self.graph_of(run)
            && let Err(e) = graph.delete_thread(&thread_id).await
        {
            tracing::error!(run_id, error = %e.detail, "deleting the run's checkpoints failed");
        }
        if let Some(url) = run["kwargs"]["webhook"].as_str() {
            let body = super::webhook::payload(run, started, &values, end.failure());
            super::webhook::deliver(self.webhooks.clone(), url.to_owned(), body);
        }
        channel.finish(self, &run_id, body).await;
        if temporary && !self.store.shared() {
            // Deleted with its thread: nobody can join it.
            self.forget(&run_id);
        }
        self.count(status, started);
        next
    }

    /// Writes a run's end, trying again a few times when the store fails (a full disk, a
    /// database restarting); past those, it keeps trying in the background (the clients
    /// meanwhile see the run's end in its stream) until the write passes or is refused.
    async fn record_end(
        &self,
        run: &Value,
        thread_end: ThreadEnd,
        token: &Token,
        body: &Value,
        claim: Option<crate::store::Claim<'_>>,
    ) -> Recorded {
        let run_id = run["run_id"].as_str().unwrap_or_default().to_owned();
        let mut wait = Duration::from_millis(100);
        let mut claim = claim;
        for _ in 0..5 {
            match self
                .store
                .finish(run, thread_end.clone(), token, body, claim.take())
                .await
            {
                Ok(next) => return Recorded::Done(next),
                Err(e) if e.is_fenced() => return Recorded::Fenced,
                Err(e) if e.asked_stop().is_some() => {
                    return Recorded::Stop(Stop::parse(e.asked_stop().unwrap_or_default()));
                }
                Err(e) => {
                    tracing::warn!(run_id, error = %e, "recording the run's end failed; trying again");
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                }
            }
        }
        tracing::error!(
            run_id,
            "recording the run's end keeps failing; trying again every 5 s"
        );
        let (store, run, token, body) =
            (self.store.clone(), run.clone(), token.clone(), body.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                match store
                    .finish(&run, thread_end.clone(), &token, &body, None)
                    .await
                {
                    Ok(_) => {
                        tracing::info!(run_id, "the run's end is recorded");
                        return;
                    }
                    // Fenced, or a stop asked for meanwhile: the worker that applies it (or
                    // the run's next owner) records the end.
                    Err(e) if e.is_fenced() || e.asked_stop().is_some() => return,
                    Err(e) => tracing::warn!(run_id, error = %e, "recording the run's end failed"),
                }
            }
        });
        Recorded::Later
    }

    fn count(&self, status: &str, started: i64) {
        ended_as(status);
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

    /// Tells the thread's streams here and on the other instances that its state was
    /// written outside a run.
    pub(crate) async fn state_written(&self, thread_id: &str) {
        let _ = self.state_updates.send(thread_id.to_owned());
        let notice = crate::store::Notice::State {
            thread_id: thread_id.to_owned(),
        };
        if let Err(e) = self.store.notify(&notice).await {
            tracing::warn!(error = %e, "could not tell other instances of a state write");
        }
    }

    /// Recomputes a thread's status, values and interrupts from its checkpoints and runs.
    pub async fn refresh_thread(
        &self,
        thread_id: &str,
        error: Option<&Failure>,
        cancelled: bool,
    ) -> Result<(), ApiError> {
        if let Some(thread) = self.thread_after(thread_id, None, error, cancelled).await? {
            self.store.refresh_thread(&thread).await?;
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
        // The status it has when no run of it is active: the store makes it `busy`, as it
        // writes it, when one is (decided there, where the runs are, not from a look taken
        // before another run's end).
        let status = if cancelled {
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
        crate::api::retention::touch(&mut thread);
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

/// Records how the run's attempt ended on its span (`agentgraph.run.status`: `success`,
/// `error`, `timeout`, `interrupted`, `rolled_back`, or `handed_over` / `lease_lost` for an
/// attempt another one finishes).
fn ended_as(status: &str) {
    tracing::Span::current().record("agentgraph.run.status", status);
}

/// What recording a run's end did.
enum Recorded {
    /// Written; the run the worker claimed with it, if any.
    Done(Option<Value>),
    /// Refused: the run is not this worker's claim any more.
    Fenced,
    /// Refused: a stop was asked for the run as it ended; it ends as the stop says.
    Stop(Stop),
    /// Not written yet: a task keeps trying.
    Later,
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
        checkpointer: None,
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
