//! What nodes stream as Python objects: `custom` items (`get_stream_writer()`, `writer`),
//! `messages` chunks (the LangChain callback handler of `agentgraph._stream`), and the results
//! the `tasks`/`debug` modes show.
//!
//! agent-core's `custom` and `messages` parts carry JSON; LangGraph streams the very objects
//! (an `AIMessageChunk`, any value). So an object crosses agent-core as a ticket,
//! `{"__agentgraph_object__": n}`, and the stream's outbox keeps the object until the consumer
//! takes it back. Going through agent-core's own channel keeps the order exact: an item a node
//! writes reaches the caller before that node's update, after the parts emitted before it.
//!
//! A stream's outbox lives as long as its `NativeStream` (objects never taken, because the
//! consumer stopped early, go with it). Nodes find it by run id.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use pyo3::prelude::*;

/// The key of a ticket.
const TICKET: &str = "__agentgraph_object__";

/// The Python side of one stream.
pub struct Outbox {
    objects: Mutex<HashMap<u64, Py<PyAny>>>,
    next: AtomicU64,
    /// Task outcomes by `(step, node)`, for the `tasks`/`debug` modes.
    results: Mutex<HashMap<(i64, String), Py<PyAny>>>,
    /// Tasks that paused on `interrupt()`.
    paused: Mutex<HashSet<(i64, String)>>,
    /// Tasks whose writes came from the node cache: LangGraph reports no result for them.
    cached: Mutex<HashSet<(i64, String)>>,
    /// The stream modes asked for, by LangGraph's names.
    pub modes: Vec<String>,
    /// The stream's Python state (`agentgraph._stream.StreamState`: the messages handler).
    pub state: Py<PyAny>,
}

impl Outbox {
    /// An outbox for a stream of `modes`.
    pub fn new(modes: Vec<String>, state: Py<PyAny>) -> Self {
        Outbox {
            objects: Mutex::default(),
            next: AtomicU64::new(0),
            results: Mutex::default(),
            paused: Mutex::default(),
            cached: Mutex::default(),
            modes,
            state,
        }
    }

    /// Keeps `object`; the ticket that stands for it.
    pub fn put(&self, object: Py<PyAny>) -> serde_json::Value {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut objects) = self.objects.lock() {
            objects.insert(id, object);
        }
        serde_json::json!({ TICKET: id })
    }

    /// The object a ticket stands for (once).
    pub fn take(&self, ticket: &serde_json::Value) -> Option<Py<PyAny>> {
        let id = ticket.get(TICKET)?.as_u64()?;
        self.objects.lock().ok()?.remove(&id)
    }

    /// Keeps how a task ended (`{"result": ...}` or `{"error": ...}`), for its `task_result`.
    pub fn put_result(&self, step: i64, node: String, result: Py<PyAny>) {
        if let Ok(mut results) = self.results.lock() {
            results.insert((step, node), result);
        }
    }

    /// Notes that the task `node` of `step` paused.
    pub fn put_paused(&self, step: i64, node: String) {
        if let Ok(mut paused) = self.paused.lock() {
            paused.insert((step, node));
        }
    }

    /// Notes that the task `node` of `step` read its writes from the node cache.
    pub fn put_cached(&self, step: i64, node: String) {
        if let Ok(mut cached) = self.cached.lock() {
            cached.insert((step, node));
        }
    }

    /// Whether the task `node` of `step` read its writes from the node cache.
    pub fn is_cached(&self, step: i64, node: &str) -> bool {
        self.cached
            .lock()
            .is_ok_and(|cached| cached.contains(&(step, node.to_owned())))
    }

    /// Whether the task `node` of `step` paused.
    pub fn is_paused(&self, step: i64, node: &str) -> bool {
        self.paused
            .lock()
            .is_ok_and(|paused| paused.contains(&(step, node.to_owned())))
    }

    /// What the task `node` of `step` returned, if it returned (kept while the stream lives:
    /// `tasks` and `debug` both show it).
    pub fn result(&self, py: Python<'_>, step: i64, node: &str) -> Option<Py<PyAny>> {
        let results = self.results.lock().ok()?;
        results
            .get(&(step, node.to_owned()))
            .map(|r| r.clone_ref(py))
    }
}

static OUTBOXES: LazyLock<Mutex<HashMap<String, Arc<Outbox>>>> = LazyLock::new(Default::default);

/// Keeps a stream's outbox registered while the stream lives.
pub struct OutboxGuard(String);

/// Registers `outbox` for the run `run_id`.
pub fn register(run_id: String, outbox: Arc<Outbox>) -> OutboxGuard {
    if let Ok(mut outboxes) = OUTBOXES.lock() {
        outboxes.insert(run_id.clone(), outbox);
    }
    OutboxGuard(run_id)
}

impl Drop for OutboxGuard {
    fn drop(&mut self) {
        let removed = OUTBOXES.lock().ok().and_then(|mut o| o.remove(&self.0));
        // Objects never taken are Python objects: dropped under the GIL.
        if let Some(outbox) = removed {
            Python::attach(|_| drop(outbox));
        }
    }
}

/// The outbox of the run `run_id`, when it is a stream.
pub fn lookup(run_id: &str) -> Option<Arc<Outbox>> {
    OUTBOXES.lock().ok()?.get(run_id).cloned()
}
