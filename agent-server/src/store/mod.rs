//! The run store: assistants, threads and runs, and the queue of runs, in one database.
//!
//! Documents are kept as the JSON the API returns (one row per object, with the columns the
//! queue and the lookups need), so what a client reads is what was written. [`RunStore`] is
//! the seam for the backends: [`SqliteStore`] for one process, [`PostgresStore`] for many
//! instances on one database (claims with `FOR UPDATE SKIP LOCKED`, leases renewed by the
//! instance that runs a run, `LISTEN/NOTIFY` for wake-ups, cancels and streams). A thread
//! never runs two runs at once: only the oldest pending run of a thread with nothing running
//! can be claimed. Crons (scheduled runs) live beside them, claimed by their next time: a
//! claim moves that time on in the same transaction, so each tick fires once however many
//! instances look.

mod postgres;
mod postgres_search;
pub mod query;
mod sqlite;
mod sqlite_search;

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::mpsc;

pub use postgres::PostgresStore;
pub use query::Query;
pub use sqlite::SqliteStore;

/// A storage failure, with the operation that failed.
#[derive(Debug, thiserror::Error)]
#[error("run store: {op}: {message}")]
pub struct StoreError {
    /// What was being done.
    pub op: &'static str,
    /// What the database said.
    pub message: String,
    /// Whether it may pass (the database is down or full) or was refused.
    pub kind: StoreErrorKind,
}

/// What kind of failure a [`StoreError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreErrorKind {
    /// The statement failed.
    Failed,
    /// The database cannot be reached or written now (down, restarting, disk full): worth
    /// trying again later (a 503 with `Retry-After`).
    Unavailable,
    /// A write of a run that is no longer the writer's (taken over, ended, deleted, or its
    /// thread deleted): refused, nothing written.
    Fenced,
    /// A run's end written as its graph ended while a stop was asked for it (a cancel its
    /// client was told of): refused, the run ends as the stop says (`message`: the stop).
    StopAsked,
}

impl StoreError {
    /// A failure of `op`.
    pub fn failed(op: &'static str, message: impl Into<String>) -> Self {
        StoreError {
            op,
            message: message.into(),
            kind: StoreErrorKind::Failed,
        }
    }

    /// The database is down or full.
    pub fn unavailable(op: &'static str, message: impl Into<String>) -> Self {
        StoreError {
            op,
            message: message.into(),
            kind: StoreErrorKind::Unavailable,
        }
    }

    /// A write refused because the run is not the writer's any more.
    pub fn fenced(op: &'static str) -> Self {
        StoreError {
            op,
            message: "the run is no longer this worker's (taken over, ended or deleted); nothing was written".to_owned(),
            kind: StoreErrorKind::Fenced,
        }
    }

    /// Whether the write was refused by the run's fence.
    pub fn is_fenced(&self) -> bool {
        self.kind == StoreErrorKind::Fenced
    }

    /// A run's end refused because a stop was asked for the run (`action`: its name).
    pub fn stop_asked(op: &'static str, action: String) -> Self {
        StoreError {
            op,
            message: action,
            kind: StoreErrorKind::StopAsked,
        }
    }

    /// The stop asked for, when this refused a run's end for it.
    pub fn asked_stop(&self) -> Option<&str> {
        (self.kind == StoreErrorKind::StopAsked).then_some(self.message.as_str())
    }
}

/// The claim a worker holds on a run: its instance and the attempt. Every write the run
/// makes once claimed carries it, and is refused ([`StoreErrorKind::Fenced`]) once the run
/// is not this claim's (another instance took it over, it ended, or it was deleted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The claiming instance.
    pub owner: String,
    /// The attempt claimed.
    pub attempt: i64,
}

impl Token {
    /// The token of `run` as claimed by `owner`.
    pub fn of(run: &Value, owner: &str) -> Token {
        Token {
            owner: owner.to_owned(),
            attempt: run["attempt"].as_i64().unwrap_or(1),
        }
    }
}

/// How a run is queued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Queueing {
    /// A thread with a run pending or running takes none ([`Enqueued::Busy`]).
    pub reject_busy: bool,
    /// The thread is made with the run (a stateless run's, `if_not_exists: "create"`);
    /// otherwise it must still be there ([`Enqueued::ThreadGone`] when it was deleted
    /// meanwhile: a run never brings a deleted thread back).
    pub new_thread: bool,
}

/// What queuing a run did.
#[derive(Debug, Clone, PartialEq)]
pub enum Enqueued {
    /// Queued: a worker will claim it.
    Queued,
    /// Queued and claimed for the caller at once (as claimed).
    Claimed(Value),
    /// Not queued: its thread has a run pending or running, and the run asked for `reject`.
    Busy,
    /// Not queued: its thread was deleted.
    ThreadGone,
}

/// Result of the store's operations.
pub type StoreResult<T> = Result<T, StoreError>;

/// The kinds of documents kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Assistants (`assistant_id`).
    Assistant,
    /// Threads (`thread_id`).
    Thread,
    /// Runs (`run_id`).
    Run,
}

impl Kind {
    pub(crate) fn table(self) -> &'static str {
        match self {
            Kind::Assistant => "api_assistants",
            Kind::Thread => "api_threads",
            Kind::Run => "api_runs",
        }
    }

    pub(crate) fn key(self) -> &'static str {
        match self {
            Kind::Assistant => "assistant_id",
            Kind::Thread => "thread_id",
            Kind::Run => "run_id",
        }
    }

    pub(crate) fn id_of(self, doc: &Value) -> String {
        doc.get(self.key())
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }
}

/// One stored stream event of a run (for instances that follow a run another executes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// Its position in the run's stream.
    pub seq: i64,
    /// Its resumable id.
    pub id: String,
    /// The event name.
    pub name: String,
    /// The data, as JSON text.
    pub data: String,
}

/// What instances tell each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A run was queued or freed: claim.
    Wake,
    /// Stop this run (`interrupt` or `rollback`).
    Cancel {
        /// The run.
        run_id: String,
        /// `interrupt` or `rollback`.
        action: String,
    },
    /// The run has new stored events, or ended.
    Events {
        /// The run.
        run_id: String,
    },
    /// The thread's state was written outside a run (`POST /threads/{id}/state`).
    State {
        /// The thread.
        thread_id: String,
    },
}

/// A claim made as a run is queued, by an instance with a free worker, or as a run ends, by
/// the worker that ran it: the run starts without a trip through the queue.
#[derive(Debug, Clone, Copy)]
pub struct Claim<'a> {
    /// The claiming instance.
    pub owner: &'a str,
    /// Its lease on the run.
    pub lease: Duration,
}

/// What becomes of a run's thread as the run ends.
#[derive(Debug, Clone)]
pub enum ThreadEnd {
    /// The thread's new document.
    Put(Value),
    /// A temporary thread (a stateless run's): deleted with its runs.
    Delete(String),
    /// The thread is gone (deleted while the run went on).
    Gone,
}

/// What a cron claim does to a due cron at `now_ms`: its new document and next time
/// (`None`: it fires no more).
pub type CronAdvance = fn(&Value, i64) -> (Value, Option<i64>);

/// The fields of a thread's document a run's end (or a refresh) computes from the thread's
/// checkpoints and runs. The rest (`metadata`, `config`, ...) is kept as stored: a request
/// may have changed it since the fields were computed (a run queued, a PATCH).
const STATE_FIELDS: [&str; 7] = [
    "status",
    "values",
    "interrupts",
    "error",
    "updated_at",
    "state_updated_at",
    "ttl",
];

/// `current` (a thread's document as stored) with `fresh`'s state fields.
pub(crate) fn with_state_of(mut current: Value, fresh: &Value) -> Value {
    if let Some(doc) = current.as_object_mut() {
        for field in STATE_FIELDS {
            match fresh.get(field) {
                Some(v) => {
                    doc.insert(field.to_owned(), v.clone());
                }
                None => {
                    doc.remove(field);
                }
            }
        }
    }
    current
}

/// The error a thread shows when its run was abandoned: started as often as it may be and
/// never ended (its process kept stopping).
pub(crate) fn abandoned(attempts: i64) -> Value {
    serde_json::json!({
        "error": "WorkerLost",
        "message": format!("the run was started {attempts} times and never ended (its server kept stopping); it is not started again"),
    })
}

/// Runs by status, for `/metrics` (the same SQL on both backends).
const RUN_COUNTS: &str = "SELECT status, count(*) FROM api_runs GROUP BY status ORDER BY status";
/// What `ping` asks: an index probe, whatever the table holds.
const PING: &str = "SELECT 1 FROM api_runs LIMIT 1";

/// Where assistants, threads, runs and the queue live.
#[async_trait]
pub trait RunStore: Send + Sync + 'static {
    /// Inserts or replaces a document (its id is under the kind's key).
    async fn put(&self, kind: Kind, doc: &Value) -> StoreResult<()>;
    /// Replaces a document that exists; whether it did (a document deleted meanwhile is not
    /// made again). A thread's `status` is written `busy` while a run of it is pending or
    /// running (decided as it is written), whatever the document said.
    async fn update(&self, kind: Kind, doc: &Value) -> StoreResult<bool>;
    /// Writes a thread's state fields (status, values, interrupts, error, ttl, times) from
    /// `fresh` onto its document as stored, in one transaction (its other fields may have
    /// changed since `fresh` was read); whether the thread exists.
    async fn refresh_thread(&self, fresh: &Value) -> StoreResult<bool>;
    /// Inserts a document unless one with its id exists; whether it was inserted.
    async fn insert(&self, kind: Kind, doc: &Value) -> StoreResult<bool>;
    /// One document.
    async fn get(&self, kind: Kind, id: &str) -> StoreResult<Option<Value>>;
    /// Every document of a kind, oldest first.
    async fn all(&self, kind: Kind) -> StoreResult<Vec<Value>>;
    /// The documents of a kind that `query` asks for: filtered, sorted and paged by the
    /// database.
    async fn search(&self, kind: Kind, query: &Query) -> StoreResult<Vec<Value>>;
    /// How many documents of a kind match `query` (its order and page aside).
    async fn count(&self, kind: Kind, query: &Query) -> StoreResult<u64>;
    /// How many runs the store holds in each status (`/metrics`), counted by the database.
    async fn run_counts(&self) -> StoreResult<Vec<(String, u64)>>;
    /// Whether the database answers (`/ok?check_db=1`): one trivial read of the runs'
    /// table.
    async fn ping(&self) -> StoreResult<()>;
    /// Deletes one; whether it existed.
    async fn delete(&self, kind: Kind, id: &str) -> StoreResult<bool>;
    /// Deletes a thread with its runs and crons in one transaction; its runs that were
    /// claimed (running) as they went, which their instance must stop: after the delete no
    /// run of the thread is claimed or queued again.
    async fn delete_thread(&self, id: &str) -> StoreResult<Vec<String>>;
    /// The runs of a thread, oldest first.
    async fn runs_of(&self, thread_id: &str) -> StoreResult<Vec<Value>>;
    /// Keeps a version of an assistant.
    async fn put_version(&self, assistant_id: &str, version: i64, doc: &Value) -> StoreResult<()>;
    /// An assistant's versions, newest first.
    async fn versions(&self, assistant_id: &str) -> StoreResult<Vec<Value>>;
    /// Takes the oldest pending run whose thread runs nothing, marks it `running` for
    /// `owner` with a lease of `lease`, and returns it.
    async fn claim(&self, owner: &str, lease: Duration) -> StoreResult<Option<Value>>;
    /// Queues `run` (pending) with its thread's document (inserted or replaced) in one
    /// transaction; with `claim`, also claims it when its thread runs nothing else and its
    /// time has come. What `how` asks is decided inside that transaction: of two runs asking
    /// for `reject` at once on an idle thread, one is queued; a run on a thread deleted since
    /// it was read is not queued and does not bring the thread back.
    async fn enqueue(
        &self,
        thread: &Value,
        run: &Value,
        claim: Option<Claim<'_>>,
        how: Queueing,
    ) -> StoreResult<Enqueued>;
    /// Records a run's end (its final document, its `/wait` body for other instances) and its
    /// thread's (`busy` while another run of it is pending or running, decided in that
    /// transaction), in one transaction, if the run is still `token`'s (a [`StoreErrorKind::Fenced`]
    /// error, nothing written, otherwise); with `next` (the worker that ran it is free for
    /// another), claims in that same transaction what [`claim`](Self::claim) would, and
    /// returns it: the worker's next run, without a trip through the queue.
    async fn finish(
        &self,
        run: &Value,
        thread: ThreadEnd,
        token: &Token,
        result: &Value,
        next: Option<Claim<'_>>,
    ) -> StoreResult<Option<Value>>;
    /// Deletes a run that was rolled back, if it is still `token`'s (fenced otherwise).
    async fn delete_claimed(&self, run_id: &str, token: &Token) -> StoreResult<()>;
    /// Extends the lease of `token` on a running run. `None` when the run is no longer
    /// `token`'s (another instance took it over, or it ended); otherwise the cancel asked
    /// for it, if any.
    async fn renew(
        &self,
        run_id: &str,
        token: &Token,
        lease: Duration,
    ) -> StoreResult<Option<Option<String>>>;
    /// Runs whose lease ran out go back to `pending` with `attempt + 1`, or end `error` past
    /// `max_attempts` (their thread released); returns how many were requeued.
    async fn requeue_expired(&self, max_attempts: i64) -> StoreResult<usize>;
    /// Forgets the stored events and results of runs that ended more than `age` ago (no
    /// instance follows them any more); how many results went.
    async fn sweep_finished(&self, _age: Duration) -> StoreResult<u64> {
        Ok(0)
    }
    /// Marks `doc` (a pending run) `interrupted` if it is still pending; whether it was.
    async fn cancel_pending(&self, doc: &Value) -> StoreResult<bool>;
    /// Asks the owner of a running run to stop it; whether it was running (a store of one
    /// process says yes: the run's own channel carries the stop).
    async fn request_cancel(&self, run_id: &str, action: &str) -> StoreResult<bool>;
    /// Whether other processes use this store: then a run's events and result are stored
    /// for them, and notices go through the database.
    fn shared(&self) -> bool {
        false
    }
    /// Appends stream events of a run, if it is still `token`'s (fenced otherwise).
    async fn append_events(
        &self,
        _run_id: &str,
        _token: &Token,
        _events: &[StoredEvent],
    ) -> StoreResult<()> {
        Ok(())
    }
    /// A run's stored events after `seq`.
    async fn events_after(&self, _run_id: &str, _seq: i64) -> StoreResult<Vec<StoredEvent>> {
        Ok(Vec::new())
    }
    /// Keeps the `/wait` body of a run that ended without a worker (cancelled while
    /// pending).
    async fn put_result(&self, _run_id: &str, _body: &Value) -> StoreResult<()> {
        Ok(())
    }
    /// A run's `/wait` body, once it ended.
    async fn result(&self, _run_id: &str) -> StoreResult<Option<Value>> {
        Ok(None)
    }
    /// Inserts or replaces a cron (`cron_id`), due at `next_run_ms` (`None`: never, as a
    /// disabled or ended cron).
    async fn put_cron(&self, doc: &Value, next_run_ms: Option<i64>) -> StoreResult<()>;
    /// One cron.
    async fn get_cron(&self, cron_id: &str) -> StoreResult<Option<Value>>;
    /// Every cron, oldest first.
    async fn crons(&self) -> StoreResult<Vec<Value>>;
    /// The crons that `query` asks for (as [`search`](Self::search)).
    async fn search_crons(&self, query: &Query) -> StoreResult<Vec<Value>>;
    /// How many crons match `query`.
    async fn count_crons(&self, query: &Query) -> StoreResult<u64>;
    /// Deletes a cron; whether it existed.
    async fn delete_cron(&self, cron_id: &str) -> StoreResult<bool>;
    /// Takes the crons due at `now_ms` (at most 100), moves each on with `advance` in the
    /// same transaction, and returns them as they were: a cron claimed here is claimed by
    /// no other caller until its next time.
    async fn claim_crons(&self, now_ms: i64, advance: CronAdvance) -> StoreResult<Vec<Value>>;
    /// Takes the threads whose ttl ran out by `now_ms` (at most `limit`, the longest
    /// expired first), moving each one's expiry `hold_ms` on in the same step, so no other
    /// sweep takes it meanwhile; returns them as they are now.
    async fn claim_expired_threads(
        &self,
        now_ms: i64,
        limit: usize,
        hold_ms: i64,
    ) -> StoreResult<Vec<Value>>;
    /// Threads shown `busy` with no run pending or running (a server stopped between a
    /// run's end and its thread's update): at most `limit`.
    async fn stale_busy_threads(&self, limit: usize) -> StoreResult<Vec<String>>;
    /// Tells the other instances.
    async fn notify(&self, _notice: &Notice) -> StoreResult<()> {
        Ok(())
    }
    /// What the other instances tell; `None` for a store no other process uses.
    async fn listen(&self) -> StoreResult<Option<mpsc::UnboundedReceiver<Notice>>> {
        Ok(None)
    }
}

impl Notice {
    /// As a NOTIFY payload.
    pub fn to_payload(&self) -> String {
        match self {
            Notice::Wake => "wake".to_owned(),
            Notice::Cancel { run_id, action } => format!("cancel:{action}:{run_id}"),
            Notice::Events { run_id } => format!("events:{run_id}"),
            Notice::State { thread_id } => format!("state:{thread_id}"),
        }
    }

    /// From a NOTIFY payload.
    pub fn from_payload(p: &str) -> Option<Notice> {
        if p == "wake" {
            return Some(Notice::Wake);
        }
        if let Some(thread_id) = p.strip_prefix("state:") {
            return Some(Notice::State {
                thread_id: thread_id.to_owned(),
            });
        }
        if let Some(run_id) = p.strip_prefix("events:") {
            return Some(Notice::Events {
                run_id: run_id.to_owned(),
            });
        }
        let rest = p.strip_prefix("cancel:")?;
        let (action, run_id) = rest.split_once(':')?;
        Some(Notice::Cancel {
            run_id: run_id.to_owned(),
            action: action.to_owned(),
        })
    }
}
