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
mod mirror;
pub mod webhook;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};

pub use channel::{LiveEvent, RunChannel};

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

    fn parse(s: &str) -> CancelAction {
        if s == "rollback" {
            CancelAction::Rollback
        } else {
            CancelAction::Interrupt
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

/// The runs of one server: queue, workers, live channels.
pub struct Runs {
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) graphs: Arc<BTreeMap<String, Arc<dyn ServedGraph>>>,
    live: Mutex<Live>,
    /// Runs executing here, with the sender that stops each.
    executing: Mutex<HashMap<String, watch::Sender<Option<CancelAction>>>>,
    /// Cancels that arrived for runs claimed here but not yet started.
    early_cancels: Mutex<HashMap<String, CancelAction>>,
    /// Wakes mirrors of runs executing elsewhere when their events arrive.
    mirrors: Mutex<HashMap<String, Arc<Notify>>>,
    wake: Notify,
    slots: Arc<Semaphore>,
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
    pub(crate) fn new(
        store: Arc<dyn RunStore>,
        graphs: Arc<BTreeMap<String, Arc<dyn ServedGraph>>>,
        workers: usize,
        leases: Leases,
        webhooks: webhook::WebhookPolicy,
        limits: crate::limits::Limits,
    ) -> Arc<Self> {
        Arc::new(Runs {
            store,
            graphs,
            live: Mutex::new(Live::default()),
            executing: Mutex::new(HashMap::new()),
            early_cancels: Mutex::new(HashMap::new()),
            mirrors: Mutex::new(HashMap::new()),
            wake: Notify::new(),
            slots: Arc::new(Semaphore::new(workers.max(1))),
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
    /// the run executing elsewhere. `None` for a run this process knows nothing of.
    pub async fn follow(self: &Arc<Self>, run_id: &str) -> Option<Arc<RunChannel>> {
        if let Some(c) = self.live().get(run_id).cloned() {
            return Some(c);
        }
        if !self.store.shared() {
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
        match (self.store.enqueue(thread, run, claim).await?, permit) {
            (Some(claimed), Some(permit)) => self.launch(claimed, permit),
            _ => {
                self.wake.notify_one();
                self.store.notify(&Notice::Wake).await?;
            }
        }
        Ok(channel)
    }

    /// Executes a run this instance claimed, on a task of its own holding a worker slot, and
    /// then the runs its end claimed for the same slot. The claim loop (and the other
    /// instances) are woken when the slot is freed, unless the last run's end looked for a run
    /// to claim and found none: then there is none to claim.
    fn launch(self: &Arc<Self>, run: Value, permit: OwnedSemaphorePermit) {
        let mut cancel = self.register(&run);
        let runner = self.clone();
        tokio::spawn(async move {
            let mut run = run;
            let looked = loop {
                let id = run["run_id"].as_str().unwrap_or_default().to_owned();
                let next = runner.execute(run, cancel).await;
                if let Ok(mut ex) = runner.executing.lock() {
                    ex.remove(&id);
                }
                match next {
                    Next::Run(claimed) => {
                        cancel = runner.register(&claimed);
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

    /// Records a claimed run as executing here; the receiver of its cancels (one asked
    /// before it started is already in).
    fn register(&self, run: &Value) -> watch::Receiver<Option<CancelAction>> {
        let id = run["run_id"].as_str().unwrap_or_default().to_owned();
        let (tx, rx) = watch::channel(None);
        let early = self
            .early_cancels
            .lock()
            .ok()
            .and_then(|mut e| e.remove(&id));
        if let Some(action) = early {
            tx.send_replace(Some(action));
        }
        if let Ok(mut ex) = self.executing.lock() {
            ex.insert(id, tx);
        }
        rx
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
                                self.stop_local(&run_id, CancelAction::parse(&action));
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

    /// Stops a run executing in this process; whether it was here.
    fn stop_local(&self, run_id: &str, action: CancelAction) -> bool {
        let ex = self.executing.lock().unwrap_or_else(|p| p.into_inner());
        match ex.get(run_id) {
            Some(tx) => {
                tx.send_replace(Some(action));
                true
            }
            None => false,
        }
    }

    /// Cancels a pending or running run. Whether there was one to cancel.
    pub async fn cancel(
        self: &Arc<Self>,
        run: &Value,
        action: CancelAction,
    ) -> Result<bool, ApiError> {
        let id = run["run_id"].as_str().unwrap_or_default().to_owned();
        let thread = run["thread_id"].as_str().unwrap_or_default().to_owned();
        match run["status"].as_str() {
            Some("pending") => {
                let mut doc = run.clone();
                doc["status"] = "interrupted".into();
                doc["updated_at"] = crate::time::now_iso().into();
                if self.store.cancel_pending(&doc).await? {
                    if action == CancelAction::Rollback {
                        self.store.delete(Kind::Run, &id).await?;
                    }
                    self.store.put_result(&id, &json!({})).await?;
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
                self.cancel_running(&id, action).await?;
                Ok(true)
            }
            Some("running") => {
                self.cancel_running(&id, action).await?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn cancel_running(&self, id: &str, action: CancelAction) -> Result<(), ApiError> {
        if self.stop_local(id, action) {
            return Ok(());
        }
        if self.store.shared() {
            self.store.request_cancel(id, action.name()).await?;
            self.store
                .notify(&Notice::Cancel {
                    run_id: id.to_owned(),
                    action: action.name().to_owned(),
                })
                .await?;
        } else if let Ok(mut early) = self.early_cancels.lock() {
            // Claimed by this process a moment ago and not started yet.
            early.insert(id.to_owned(), action);
        }
        Ok(())
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

    /// Stops claiming, waits up to `grace` for the runs executing here, and hands the rest
    /// back to the queue (on a shared store another instance takes them over at once; on
    /// SQLite they resume at the next start).
    pub async fn drain(&self, grace: Duration) {
        self.draining.store(true, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let left: Vec<String> = self
                .executing
                .lock()
                .map(|e| e.keys().cloned().collect())
                .unwrap_or_default();
            if left.is_empty() {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                for id in left {
                    // A lease ending now: the next sweep requeues it.
                    let _ = self.store.renew(&id, &self.owner, Duration::ZERO).await;
                }
                let _ = self.store.notify(&Notice::Wake).await;
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
