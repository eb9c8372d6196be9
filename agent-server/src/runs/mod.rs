//! Runs: the queue, the workers that execute runs, and the live channel of each run.
//!
//! Every run, streamed or not, goes through the queue in the [`RunStore`]: a request inserts
//! a `pending` run, a worker claims it (one running run per thread), executes its graph and
//! writes every event into the run's [`RunChannel`], where `/stream`, `/wait`, `/join` and
//! join-stream readers follow it from whatever position they ask for. The run's row and its
//! thread are final before the channel closes, so a client that checks the run after the
//! stream ended sees how it ended (the python SDK does).
//!
//! On a store many instances share (PostgreSQL), the executing instance holds a lease on
//! the run and renews it; its events and result go through the store, and the instance a
//! client is connected to follows them there (`mirror`), woken by notices. A run whose
//! instance died is queued again and resumes from its last checkpoint.

mod channel;
pub mod cron;
mod execute;
mod gate;
mod mirror;
pub mod webhook;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::Checkpointer;
use serde_json::{Value, json};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};

pub use channel::{LiveEvent, RunChannel};
pub(crate) use gate::Gate;

use crate::error::ApiError;
use crate::graph::ServedGraph;
use crate::store::{Claim, Kind, Notice, RunStore};
use crate::time::now_ms;

/// What a worker does after a run: the run its end claimed, or nothing.
pub(crate) enum Next {
    /// The run the end claimed for this worker.
    Run(Value),
    /// The end looked for a run to claim and found none.
    Idle,
    /// The end did not look (a rollback, a lost lease, a failed write, draining).
    Unknown,
}

/// How a cancel treats the run's work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelAction {
    /// Stop it; keep what it checkpointed; the run ends `interrupted`.
    Interrupt,
    /// Stop it, put the thread back where it was before, and delete the run.
    Rollback,
}

impl CancelAction {
    fn name(self) -> &'static str {
        match self {
            CancelAction::Interrupt => "interrupt",
            CancelAction::Rollback => "rollback",
        }
    }
}

/// Why an executing run is stopped before it ends by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// A client's cancel.
    Cancel(CancelAction),
    /// Its thread is being deleted: it ends, and nothing of it is kept.
    ThreadDeleted,
    /// It ran past its time limit.
    Timeout,
    /// The server stops before it ended: it is handed back to the queue, unrecorded, and
    /// resumes from its last checkpoint on its next attempt.
    Handover,
}

impl Stop {
    /// As the store's `cancel` column (and NOTIFY payloads) carry it.
    fn name(self) -> &'static str {
        match self {
            Stop::Cancel(a) => a.name(),
            Stop::ThreadDeleted => "delete",
            Stop::Timeout => "timeout",
            Stop::Handover => "handover",
        }
    }

    /// Which of two stops asked for the same run it ends by: a rollback over everything (its
    /// client was told the run is undone), a thread's deletion over a cancel's interrupt,
    /// any cancel over a time limit, anything over a hand-over.
    fn rank(self) -> u8 {
        match self {
            Stop::Handover => 0,
            Stop::Timeout => 1,
            Stop::Cancel(CancelAction::Interrupt) => 2,
            Stop::ThreadDeleted => 3,
            Stop::Cancel(CancelAction::Rollback) => 4,
        }
    }

    /// `self` asked for a run already asked to stop for `before`: the one it ends by.
    fn over(self, before: Option<Stop>) -> Stop {
        match before {
            Some(b) if b.rank() >= self.rank() => b,
            _ => self,
        }
    }

    fn parse(s: &str) -> Stop {
        match s {
            "rollback" => Stop::Cancel(CancelAction::Rollback),
            "delete" => Stop::ThreadDeleted,
            "timeout" => Stop::Timeout,
            "handover" => Stop::Handover,
            _ => Stop::Cancel(CancelAction::Interrupt),
        }
    }
}

/// A run executing here: how to stop it, and its checkpoints' gate.
struct Executing {
    stop: watch::Sender<Option<Stop>>,
    gate: Arc<Gate>,
    token: crate::store::Token,
    /// Its end is decided (by a stop or by its graph): a stop asked for now is too late.
    ending: bool,
}

impl Executing {
    /// Asks it to stop (the strongest stop asked for wins); its gate.
    fn ask(&self, stop: Stop) -> Arc<Gate> {
        self.stop.send_if_modified(|now| {
            let next = Some(stop.over(*now));
            let changed = next != *now;
            *now = next;
            changed
        });
        self.gate.clone()
    }
}

/// What a stop asked of a run in this process found.
enum Asked {
    /// It executes here: its gate, to wait on until it writes nothing more.
    Here(Arc<Gate>),
    /// Its end was already decided: the stop comes too late.
    Ended,
    /// Not executing yet: the stop is kept for it to find as it starts.
    Kept,
}

/// What a claimed run starts with: its stop signal and its gate.
pub(crate) struct Registered {
    stop: watch::Receiver<Option<Stop>>,
    gate: Arc<Gate>,
}

/// Counters for `/metrics`.
#[derive(Default)]
pub struct Metrics {
    /// Runs finished, by status.
    pub finished: Mutex<BTreeMap<String, u64>>,
    /// Sum of run durations (ms) and their count.
    pub duration_ms: Mutex<(u64, u64)>,
}

/// Leases of runs on a shared store.
#[derive(Debug, Clone, Copy)]
pub struct Leases {
    /// How long a claim holds without renewal; a dead instance's runs are taken over after
    /// at most this plus one sweep.
    pub ttl: Duration,
    /// How many times a run is started before it ends `error` (its instance kept dying).
    pub max_attempts: i64,
}

impl Default for Leases {
    fn default() -> Self {
        Leases {
            ttl: Duration::from_secs(20),
            max_attempts: 3,
        }
    }
}

/// How long runs may take: the server's default and per graph (none: no limit).
#[derive(Debug, Clone, Default)]
pub(crate) struct Timeouts {
    pub(crate) default: Option<Duration>,
    pub(crate) per_graph: BTreeMap<String, Duration>,
}

impl Timeouts {
    /// The limit of a run of `graph_id`.
    pub(crate) fn of(&self, graph_id: &str) -> Option<Duration> {
        self.per_graph.get(graph_id).copied().or(self.default)
    }
}

/// The runs of one server: queue, workers, live channels.
pub struct Runs {
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) graphs: Arc<BTreeMap<String, Arc<dyn ServedGraph>>>,
    live: Mutex<Live>,
    /// Runs executing here, with how to stop each.
    executing: Mutex<HashMap<String, Executing>>,
    /// Stops that arrived for runs claimed here but not yet started.
    early_cancels: Mutex<HashMap<String, Stop>>,
    /// The server's checkpointer: each run writes through a gated saver over it.
    pub(crate) saver: Arc<dyn Checkpointer>,
    /// On PostgreSQL, the saver whose fenced clones a run writes through (each write holds
    /// the run's row and is refused once the run is not its claim's).
    pub(crate) postgres: Option<agent_core::PostgresSaver>,
    /// Time limits: the server's default and per graph.
    pub(crate) timeouts: Timeouts,
    /// Wakes followers of a thread's runs (`GET /threads/{id}/stream`) when one is queued.
    pub(crate) queued: Arc<Notify>,
    /// The threads whose state was written outside a run, here or on another instance
    /// (`GET /threads/{id}/stream`'s `state_update`).
    pub(crate) state_updates: tokio::sync::broadcast::Sender<String>,
    /// Wakes mirrors of runs executing elsewhere when their events arrive.
    mirrors: Mutex<HashMap<String, Arc<Notify>>>,
    wake: Notify,
    slots: Arc<Semaphore>,
    /// How many runs this instance executes at once (`slots`' permits).
    workers: usize,
    /// This instance's name in leases.
    pub(crate) owner: String,
    pub(crate) leases: Leases,
    draining: AtomicBool,
    /// How the webhooks of runs that end here are sent.
    pub(crate) webhooks: Arc<webhook::WebhookPolicy>,
    /// The event logs' bounds (and the rest of the server's limits).
    pub(crate) limits: crate::limits::Limits,
    /// What `/metrics` reports.
    pub metrics: Metrics,
}

/// How long a finished run's events stay joinable in memory.
const KEEP_FINISHED: Duration = Duration::from_secs(600);

/// The live channels of this process, with the order in which they come up for expiry:
/// each request looks only at the few channels whose time is up (a scan of every channel
/// per run cost more than the run itself once many thousands were kept).
#[derive(Default)]
struct Live {
    channels: HashMap<String, Arc<RunChannel>>,
    /// `(when to look again, run)`, oldest first.
    expiry: VecDeque<(i64, String)>,
}

impl Live {
    fn get(&self, run_id: &str) -> Option<&Arc<RunChannel>> {
        self.channels.get(run_id)
    }

    /// Drops the channels of runs that finished at least `KEEP_FINISHED` ago; a channel
    /// still running when its time comes is looked at again one period later.
    fn expire(&mut self, now: i64) {
        let keep = KEEP_FINISHED.as_millis() as i64;
        while let Some((due, _)) = self.expiry.front() {
            if *due > now {
                break;
            }
            let Some((_, id)) = self.expiry.pop_front() else {
                break;
            };
            match self.channels.get(&id) {
                Some(c) if !c.finished() => self.expiry.push_back((now + keep, id)),
                Some(_) => {
                    self.channels.remove(&id);
                }
                None => {}
            }
        }
    }
}

impl Runs {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        store: Arc<dyn RunStore>,
        graphs: Arc<BTreeMap<String, Arc<dyn ServedGraph>>>,
        workers: usize,
        leases: Leases,
        webhooks: webhook::WebhookPolicy,
        limits: crate::limits::Limits,
        saver: Arc<dyn Checkpointer>,
        postgres: Option<agent_core::PostgresSaver>,
        timeouts: Timeouts,
    ) -> Arc<Self> {
        Arc::new(Runs {
            store,
            graphs,
            live: Mutex::new(Live::default()),
            executing: Mutex::new(HashMap::new()),
            early_cancels: Mutex::new(HashMap::new()),
            saver,
            postgres,
            timeouts,
            queued: Arc::new(Notify::new()),
            state_updates: tokio::sync::broadcast::channel(64).0,
            mirrors: Mutex::new(HashMap::new()),
            wake: Notify::new(),
            slots: Arc::new(Semaphore::new(workers.max(1))),
            workers: workers.max(1),
            owner: uuid::Uuid::new_v4().to_string(),
            leases,
            draining: AtomicBool::new(false),
            webhooks: Arc::new(webhooks),
            limits,
            metrics: Metrics::default(),
        })
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The channel of a run in this process, made when it was queued or started here.
    fn local_channel(&self, run_id: &str) -> Arc<RunChannel> {
        let mut live = self.live();
        let now = now_ms();
        live.expire(now);
        if let Some(c) = live.channels.get(run_id) {
            return c.clone();
        }
        let channel = RunChannel::new(run_id, self.limits.event_window_bytes);
        live.channels.insert(run_id.to_owned(), channel.clone());
        live.expiry
            .push_back((now + KEEP_FINISHED.as_millis() as i64, run_id.to_owned()));
        channel
    }

    /// Forgets a finished run's channel at once (a run deleted as it ended: nobody can
    /// join it); readers that hold it keep it.
    pub(crate) fn forget(&self, run_id: &str) {
        self.live().channels.remove(run_id);
    }

    /// The channel to follow a run by: this process's, or (on a shared store) a mirror of
    /// the run executing elsewhere. `None` for a run this process knows nothing of, or one
    /// that ended whose stored events are gone (its final row answers instead).
    pub async fn follow(self: &Arc<Self>, run_id: &str) -> Option<Arc<RunChannel>> {
        if let Some(c) = self.live().get(run_id).cloned() {
            return Some(c);
        }
        if !self.store.shared() {
            return None;
        }
        // A run that ended is followed only while its result is kept: after the sweep, a
        // mirror would wait for a result that never comes.
        let ended = match self.store.get(Kind::Run, run_id).await {
            Ok(Some(run)) => !matches!(run["status"].as_str(), Some("pending" | "running")),
            Ok(None) => true,
            Err(_) => false,
        };
        if ended && !matches!(self.store.result(run_id).await, Ok(Some(_))) {
            return None;
        }
        Some(self.mirror(run_id))
    }

    /// Queues `run` (a run document, `pending`) with its thread's document, in one
    /// transaction. When a worker here is free and the thread runs nothing else, the run is
    /// claimed in that same transaction and starts at once; otherwise a worker (here or
    /// elsewhere) is woken to claim it from the queue.
    pub async fn enqueue(
        self: &Arc<Self>,
        thread: &Value,
        run: &Value,
        new_thread: bool,
    ) -> Result<Arc<RunChannel>, ApiError> {
        let id = run["run_id"].as_str().unwrap_or_default().to_owned();
        let channel = if self.store.shared() {
            self.mirror(&id)
        } else {
            self.local_channel(&id)
        };
        if run["kwargs"]["resumable"] == true {
            channel.keep(self.limits.event_log_bytes);
        }
        let permit = if self.draining.load(Ordering::SeqCst) {
            None
        } else {
            self.slots.clone().try_acquire_owned().ok()
        };
        let claim = permit.as_ref().and_then(|_| self.next_claim());
        let how = crate::store::Queueing {
            reject_busy: run["multitask_strategy"] == "reject",
            new_thread,
        };
        match (self.store.enqueue(thread, run, claim, how).await?, permit) {
            (crate::store::Enqueued::Busy, _) => {
                self.forget(&id);
                return Err(ApiError::conflict(
                    "Thread is already running a task. Wait for it to finish or choose a different multitask strategy.",
                ));
            }
            (crate::store::Enqueued::ThreadGone, _) => {
                self.forget(&id);
                return Err(ApiError::not_found("Thread or assistant not found."));
            }
            (crate::store::Enqueued::Claimed(claimed), Some(permit)) => {
                self.launch(claimed, permit)
            }
            _ => {
                self.wake.notify_one();
                self.store.notify(&Notice::Wake).await?;
            }
        }
        self.queued.notify_waiters();
        Ok(channel)
    }

    /// Executes a run this instance claimed, on a task of its own holding a worker slot, and
    /// then the runs its end claimed for the same slot. The claim loop (and the other
    /// instances) are woken when the slot is freed, unless the last run's end looked for a run
    /// to claim and found none: then there is none to claim.
    fn launch(self: &Arc<Self>, run: Value, permit: OwnedSemaphorePermit) {
        let mut registered = self.register(&run);
        let runner = self.clone();
        tokio::spawn(async move {
            let mut run = run;
            let looked = loop {
                let id = run["run_id"].as_str().unwrap_or_default().to_owned();
                let next = runner.execute(run, registered).await;
                if let Ok(mut ex) = runner.executing.lock() {
                    ex.remove(&id);
                }
                match next {
                    Next::Run(claimed) => {
                        registered = runner.register(&claimed);
                        run = claimed;
                    }
                    Next::Idle => break true,
                    Next::Unknown => break false,
                }
            };
            drop(permit);
            if !looked {
                runner.wake.notify_one();
                let _ = runner.store.notify(&Notice::Wake).await;
            }
        });
    }

    /// Records a claimed run as executing here: the receiver of its stops (one asked
    /// before it started is already in) and its gate.
    fn register(&self, run: &Value) -> Registered {
        let id = run["run_id"].as_str().unwrap_or_default().to_owned();
        let (tx, rx) = watch::channel(None);
        let gate = Arc::new(Gate::default());
        if let Ok(mut ex) = self.executing.lock() {
            let early = self
                .early_cancels
                .lock()
                .ok()
                .and_then(|mut e| e.remove(&id));
            if let Some(stop) = early {
                tx.send_replace(Some(stop));
            }
            ex.insert(
                id,
                Executing {
                    stop: tx,
                    gate: gate.clone(),
                    token: crate::store::Token::of(run, &self.owner),
                    ending: false,
                },
            );
        }
        Registered { stop: rx, gate }
    }

    /// The claim a worker that is free again makes (none while draining).
    fn next_claim(&self) -> Option<Claim<'_>> {
        (!self.draining.load(Ordering::SeqCst)).then_some(Claim {
            owner: &self.owner,
            lease: self.leases.ttl,
        })
    }

    /// Starts the worker loop, and on a shared store the notice listener and the sweeper of
    /// expired leases.
    pub fn spawn_workers(self: &Arc<Self>) {
        let me = self.clone();
        tokio::spawn(async move { me.claim_loop().await });
        if self.store.shared() {
            let me = self.clone();
            tokio::spawn(async move { me.notice_loop().await });
            let me = self.clone();
            tokio::spawn(async move { me.sweep_loop().await });
        }
    }

    async fn claim_loop(self: Arc<Self>) {
        loop {
            let Ok(permit) = self.slots.clone().acquire_owned().await else {
                return;
            };
            if self.draining.load(Ordering::SeqCst) {
                return;
            }
            match self.store.claim(&self.owner, self.leases.ttl).await {
                Ok(Some(run)) => self.launch(run, permit),
                Ok(None) => {
                    drop(permit);
                    let _ =
                        tokio::time::timeout(Duration::from_secs(1), self.wake.notified()).await;
                }
                Err(e) => {
                    drop(permit);
                    tracing::error!(error = %e, "claiming a run failed");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    /// Notices from other instances: wake-ups, cancels of runs executing here, events of
    /// runs followed here. Reconnects when the listening connection drops.
    async fn notice_loop(self: Arc<Self>) {
        loop {
            match self.store.listen().await {
                Ok(Some(mut rx)) => {
                    while let Some(notice) = rx.recv().await {
                        match notice {
                            Notice::Wake => self.wake.notify_one(),
                            Notice::Cancel { run_id, action } => {
                                self.stop_local(&run_id, Stop::parse(&action));
                            }
                            Notice::State { thread_id } => {
                                let _ = self.state_updates.send(thread_id);
                            }
                            Notice::Events { run_id } => {
                                let waker = self
                                    .mirrors
                                    .lock()
                                    .ok()
                                    .and_then(|m| m.get(&run_id).cloned());
                                if let Some(w) = waker {
                                    w.notify_one();
                                }
                            }
                        }
                    }
                    tracing::warn!("lost the notice listener; reconnecting");
                    // Notices sent meanwhile are lost: wake whoever waits on one.
                    self.wake_all();
                }
                Ok(None) => return,
                Err(e) => tracing::warn!(error = %e, "cannot listen for notices; retrying"),
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Requeues runs whose instance stopped renewing their lease, and forgets the stored
    /// events of runs long finished.
    async fn sweep_loop(self: Arc<Self>) {
        let every = (self.leases.ttl / 4).max(Duration::from_millis(200));
        loop {
            tokio::time::sleep(every).await;
            // Finished runs' stored events and results, once nobody follows them (a
            // stateless run's are otherwise never deleted: its run row goes with its thread).
            if let Err(e) = self.store.sweep_finished(KEEP_FINISHED).await {
                tracing::warn!(error = %e, "sweeping finished runs' events failed");
            }
            if let Err(e) = self.repair_busy().await {
                tracing::warn!(error = %e.detail, "looking for threads left busy failed");
            }
            match self.store.requeue_expired(self.leases.max_attempts).await {
                Ok(0) => {}
                Ok(n) => {
                    tracing::info!(runs = n, "requeued runs whose instance stopped");
                    self.wake.notify_one();
                    let _ = self.store.notify(&Notice::Wake).await;
                }
                Err(e) => tracing::warn!(error = %e, "sweeping expired leases failed"),
            }
        }
    }

    /// Wakes every waiter on a notice (the listener was lost: notices may have been).
    fn wake_all(&self) {
        self.wake.notify_one();
        self.queued.notify_waiters();
        if let Ok(m) = self.mirrors.lock() {
            for w in m.values() {
                w.notify_one();
            }
        }
    }

    /// The checkpoints' gate of a run executing in this process.
    pub(crate) fn gate_of(&self, run_id: &str) -> Option<Arc<Gate>> {
        let ex = self.executing.lock().unwrap_or_else(|p| p.into_inner());
        ex.get(run_id).map(|e| e.gate.clone())
    }

    /// Stops a run executing in this process; the gate to wait on (until it writes nothing
    /// more), when it was here.
    fn stop_local(&self, run_id: &str, stop: Stop) -> Option<Arc<Gate>> {
        let ex = self.executing.lock().unwrap_or_else(|p| p.into_inner());
        Some(ex.get(run_id)?.ask(stop))
    }

    /// Stops a run executing in this process, or, when it is not executing yet, keeps the
    /// stop for it to find as it starts (under the same lock [`register`](Self::register)
    /// takes, so no stop is lost between the two). One whose end is already decided is not
    /// stopped (one store, one process: its end is not refused later, as PostgreSQL's is).
    fn stop_here_or_early(&self, run_id: &str, stop: Stop) -> Asked {
        let ex = self.executing.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(executing) = ex.get(run_id) {
            if executing.ending {
                return Asked::Ended;
            }
            return Asked::Here(executing.ask(stop));
        }
        if let Ok(mut early) = self.early_cancels.lock() {
            let before = early.get(run_id).copied();
            early.insert(run_id.to_owned(), stop.over(before));
        }
        Asked::Kept
    }

    /// A run's end is decided: the stop it ends by, the strongest asked for up to now (none
    /// if its graph ended by itself). In one process a stop asked for later is told the run
    /// ended; on PostgreSQL its mark refuses the run's end instead.
    pub(super) fn decide_end(&self, run_id: &str, seen: Option<Stop>) -> Option<Stop> {
        let mut ex = self.executing.lock().unwrap_or_else(|p| p.into_inner());
        let Some(executing) = ex.get_mut(run_id) else {
            return seen;
        };
        executing.ending = true;
        let asked = *executing.stop.borrow();
        seen.map(|s| s.over(asked)).or(asked)
    }

    /// Cancels a pending or running run; whether there was one to cancel. When it returns,
    /// the run writes nothing more (no checkpoint, no event): a running one has been stopped
    /// at once, the step it was in dropped, and what it wrote is all it ever will.
    pub async fn cancel(
        self: &Arc<Self>,
        run: &Value,
        action: CancelAction,
    ) -> Result<bool, ApiError> {
        self.stop(run, Stop::Cancel(action)).await
    }

    /// Stops a pending or running run for `why` (see [`cancel`](Self::cancel)).
    pub(crate) async fn stop(self: &Arc<Self>, run: &Value, why: Stop) -> Result<bool, ApiError> {
        let action = match why {
            // A rollback acknowledged before (kept in a SQLite run's document, for a run
            // queued again after a restart) is not weakened.
            _ if run["stop_asked"] == "rollback" => CancelAction::Rollback,
            Stop::Cancel(a) => a,
            _ => CancelAction::Interrupt,
        };
        let id = run["run_id"].as_str().unwrap_or_default().to_owned();
        let thread = run["thread_id"].as_str().unwrap_or_default().to_owned();
        match run["status"].as_str() {
            Some("pending") => {
                let mut doc = run.clone();
                doc["status"] = "interrupted".into();
                doc["updated_at"] = crate::time::now_iso().into();
                // A run queued again after its instance stopped has checkpoints: a rollback
                // deletes them while the run still waits (and so holds back every later run
                // of its thread, which would otherwise start from them).
                if action == CancelAction::Rollback
                    && let Some(saver) = self.pending_saver(&id).await?
                    && let Err(e) = saver.delete_for_runs(&thread, &[&id]).await
                    && !matches!(e, agent_core::GraphError::Fenced { .. })
                {
                    tracing::error!(run_id = id, error = %e, "deleting a rolled back run's checkpoints failed");
                }
                if self.store.cancel_pending(&doc).await? {
                    if action == CancelAction::Rollback {
                        // Gone, and nothing of it kept (followers elsewhere see it gone).
                        self.store.delete(Kind::Run, &id).await?;
                    } else {
                        self.store.put_result(&id, &json!({})).await?;
                    }
                    if let Some(c) = self.live().get(&id).cloned() {
                        c.finish(json!({}));
                    }
                    self.store
                        .notify(&Notice::Events { run_id: id.clone() })
                        .await?;
                    self.refresh_thread(&thread, None, false).await?;
                    return Ok(true);
                }
                // Claimed meanwhile: it is running now.
                self.stop_running(&id, why).await
            }
            Some("running") => self.stop_running(&id, why).await,
            _ => Ok(false),
        }
    }

    /// Stops a running run and returns once it writes nothing more: here, its gate closed
    /// (the writes under way done); on another instance, its row marked (each checkpoint and
    /// event it writes holds that row and is refused once marked, so the mark waits for the
    /// writes under way and stops every later one), then that instance told. Whether there
    /// was a run to stop: one that ended meanwhile is not (the client is told so, not that
    /// a run which kept its writes was cancelled).
    async fn stop_running(self: &Arc<Self>, id: &str, why: Stop) -> Result<bool, ApiError> {
        if self.store.shared() {
            if !self.store.request_cancel(id, why.name()).await? {
                // Not running any more: ended, or queued again after its instance stopped
                // (then stopped as a pending run is).
                return match self.store.get(Kind::Run, id).await? {
                    Some(run) if run["status"] == "pending" => Box::pin(self.stop(&run, why)).await,
                    _ => Ok(false),
                };
            }
            if let Some(gate) = self.stop_local(id, why) {
                gate.close().await;
                return Ok(true);
            }
            // Another instance's (its row marked above stops its writes); told, to stop now.
            self.store
                .notify(&Notice::Cancel {
                    run_id: id.to_owned(),
                    action: why.name().to_owned(),
                })
                .await?;
        } else {
            // Kept in the store first: a stop acknowledged outlives this process.
            if !self.store.request_cancel(id, why.name()).await? {
                return Ok(false);
            }
            match self.stop_here_or_early(id, why) {
                Asked::Here(gate) => gate.close().await,
                Asked::Ended => return Ok(false),
                Asked::Kept => return self.kept_for(id).await,
            }
        }
        Ok(true)
    }

    /// A stop kept for a run not executing here yet: whether there is a run to stop (one
    /// that ended meanwhile is not, and its kept stop is for nobody).
    async fn kept_for(&self, id: &str) -> Result<bool, ApiError> {
        if !self
            .store
            .get(Kind::Run, id)
            .await?
            .is_some_and(|r| matches!(r["status"].as_str(), Some("pending" | "running")))
        {
            // Ended meanwhile: the stop kept for it is for nobody.
            if let Ok(mut early) = self.early_cancels.lock() {
                early.remove(id);
            }
            return Ok(false);
        }
        // Otherwise claimed here a moment ago and not started: it finds the stop as it
        // starts, before its graph does (nothing is written).
        Ok(true)
    }

    /// Stops every run of a thread being deleted (pending ones end, running ones stop and
    /// write nothing more); returns once none writes.
    pub(crate) async fn stop_thread(self: &Arc<Self>, thread_id: &str) -> Result<(), ApiError> {
        for run in self.active_on(thread_id).await? {
            self.stop(&run, Stop::ThreadDeleted).await?;
        }
        Ok(())
    }

    /// Deletes a thread's checkpoints (every namespace) from the saver the served graphs
    /// share.
    pub(crate) async fn delete_checkpoints(&self, thread_id: &str) -> Result<(), ApiError> {
        self.saver
            .delete_thread(thread_id)
            .await
            .map_err(crate::graph::core_error)
    }

    /// Stops the runs of a deleted thread that were claimed as it went (their rows are gone:
    /// nothing claims them again): here, each one's gate closed, or the stop kept for one
    /// not started yet. On PostgreSQL another instance's run is fenced by its row.
    pub(crate) async fn stop_claimed(&self, run_ids: &[String]) {
        for id in run_ids {
            let gate = if self.store.shared() {
                self.stop_local(id, Stop::ThreadDeleted)
            } else {
                match self.stop_here_or_early(id, Stop::ThreadDeleted) {
                    Asked::Here(gate) => Some(gate),
                    Asked::Ended | Asked::Kept => None,
                }
            };
            if let Some(gate) = gate {
                gate.close().await;
            }
        }
    }

    /// This instance's workers: how many runs it executes at once, and how many it is
    /// executing now (`/metrics`).
    pub(crate) fn workers(&self) -> (usize, usize) {
        let free = self.slots.available_permits().min(self.workers);
        (self.workers, self.workers - free)
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

    /// A saver for one run, over the server's: behind its gate, and on PostgreSQL fenced by
    /// its claim (`token`).
    pub(crate) fn run_saver(
        &self,
        run_id: &str,
        token: &crate::store::Token,
        gate: Arc<Gate>,
    ) -> Arc<dyn Checkpointer> {
        let inner: Arc<dyn Checkpointer> = match &self.postgres {
            Some(pg) => Arc::new(pg.fenced(crate::store::PostgresStore::fence(run_id, token))),
            None => self.saver.clone(),
        };
        Arc::new(gate::Gated::new(inner, gate))
    }

    /// Sets right the threads left `busy` with no run (a server stopped between a run's end
    /// and its thread's update); how many.
    pub(crate) async fn repair_busy(&self) -> Result<usize, ApiError> {
        let stale = self.store.stale_busy_threads(100).await?;
        for id in &stale {
            self.refresh_thread(id, None, false).await?;
        }
        Ok(stale.len())
    }

    /// The saver a pending run's rollback deletes its checkpoints through: only while the
    /// run is still pending (on PostgreSQL its row held until the delete commits; here, in
    /// one process, looked at just before). A run claimed, or ended, meanwhile keeps them:
    /// the next run of its thread may have started from them.
    async fn pending_saver(&self, run_id: &str) -> Result<Option<Arc<dyn Checkpointer>>, ApiError> {
        Ok(match &self.postgres {
            Some(pg) => Some(Arc::new(
                pg.fenced(crate::store::PostgresStore::still_pending(run_id)),
            )),
            None => {
                let pending = self
                    .store
                    .get(Kind::Run, run_id)
                    .await?
                    .is_some_and(|r| r["status"] == "pending");
                pending.then(|| self.saver.clone())
            }
        })
    }

    /// The saver a rolled back run deletes its checkpoints through: on PostgreSQL fenced by
    /// its claim, so a worker that lost the run deletes nothing of what its new owner writes.
    pub(crate) fn rollback_saver(
        &self,
        run_id: &str,
        token: &crate::store::Token,
    ) -> Arc<dyn Checkpointer> {
        match &self.postgres {
            Some(pg) => Arc::new(pg.fenced(crate::store::PostgresStore::held(run_id, token))),
            None => self.saver.clone(),
        }
    }

    /// Stops claiming, waits up to `grace` for the runs executing here, and hands the rest
    /// back to the queue (on a shared store another instance takes them over at once; on
    /// SQLite they resume at the next start).
    pub async fn drain(&self, grace: Duration) {
        self.draining.store(true, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let left: Vec<(String, crate::store::Token)> = self
                .executing
                .lock()
                .map(|e| {
                    e.iter()
                        .map(|(id, x)| (id.clone(), x.token.clone()))
                        .collect()
                })
                .unwrap_or_default();
            if left.is_empty() {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                for (id, token) in left {
                    // Stopped, writing nothing more, and handed back: a lease ending now,
                    // which the next sweep (another instance's) requeues; on SQLite the
                    // next start does.
                    if let Some(gate) = self.stop_local(&id, Stop::Handover) {
                        gate.close().await;
                    }
                    let _ = self.store.renew(&id, &token, Duration::ZERO).await;
                }
                let _ = self.store.notify(&Notice::Wake).await;
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{CancelAction, Stop};

    #[test]
    fn the_strongest_stop_asked_for_wins() {
        let rollback = Stop::Cancel(CancelAction::Rollback);
        let interrupt = Stop::Cancel(CancelAction::Interrupt);
        assert_eq!(interrupt.over(Some(rollback)), rollback);
        assert_eq!(rollback.over(Some(interrupt)), rollback);
        assert_eq!(interrupt.over(Some(Stop::Timeout)), interrupt);
        assert_eq!(Stop::Handover.over(Some(interrupt)), interrupt);
        assert_eq!(
            Stop::ThreadDeleted.over(Some(interrupt)),
            Stop::ThreadDeleted
        );
        assert_eq!(interrupt.over(None), interrupt);
    }
}
