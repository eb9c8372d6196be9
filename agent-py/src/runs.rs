//! What a run's Python code needs that agent-core does not carry: the caller's config dict
//! and asyncio loop (for nodes that take `config`, and async nodes), and exceptions raised
//! where agent-core takes no error (routers).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use pyo3::prelude::*;
use pyo3_async_runtimes::TaskLocals;

/// A run's Python context.
pub struct RunEntry {
    /// The config dict `invoke` got (what nodes taking `config` receive).
    pub config: Py<PyAny>,
    /// The caller's event loop, for `ainvoke`/`astream` (async nodes are awaited on it).
    pub locals: Option<TaskLocals>,
}

static RUNS: LazyLock<Mutex<HashMap<String, Arc<RunEntry>>>> = LazyLock::new(Default::default);

/// Keeps a run registered while it lives.
pub struct RunGuard(pub String);

impl RunGuard {
    /// Registers `entry` under `run_id`.
    pub fn register(run_id: String, entry: RunEntry) -> RunGuard {
        if let Ok(mut runs) = RUNS.lock() {
            runs.insert(run_id.clone(), Arc::new(entry));
        }
        RunGuard(run_id)
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if let Ok(mut runs) = RUNS.lock() {
            runs.remove(&self.0);
        }
    }
}

/// The context of the run `run_id`.
pub fn lookup(run_id: &str) -> Option<Arc<RunEntry>> {
    RUNS.lock().ok()?.get(run_id).cloned()
}

/// A router's target that carries a Python exception out of agent-core: a name no node can
/// have, which the run fails on (`UnknownTarget` / `RouteNotInPathMap`); the error mapping
/// finds the exception by it.
pub const ERROR_TARGET: &str = "__agentgraph_error__:";

static ERRORS: LazyLock<Mutex<HashMap<u64, PyErr>>> = LazyLock::new(Default::default);
static NEXT_ERROR: AtomicU64 = AtomicU64::new(0);

/// Keeps `error` and returns the target name that stands for it.
pub fn stash_error(error: PyErr) -> String {
    let id = NEXT_ERROR.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut errors) = ERRORS.lock() {
        errors.insert(id, error);
    }
    format!("{ERROR_TARGET}{id}")
}

/// The exception a target name from [`stash_error`] stands for.
pub fn take_error(target: &str) -> Option<PyErr> {
    let id: u64 = target.strip_prefix(ERROR_TARGET)?.parse().ok()?;
    ERRORS.lock().ok()?.remove(&id)
}
