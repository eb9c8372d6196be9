//! Async path functions (`add_conditional_edges` with an `async def` router).
//!
//! agent-core calls routers synchronously in its barrier, on a tokio worker. Under
//! `ainvoke`/`astream` an async router's coroutine is awaited on the run's own asyncio loop
//! (the caller's, idle while it awaits the run), as LangGraph awaits it: so it may await
//! anything bound to that loop. The worker waits for it in `block_in_place` (its other tasks
//! move to another thread) and without the GIL. The run is the one agent-core names as
//! routing on this thread (`agent_core::routing_run_id`). Under `invoke`/`stream` there is no
//! loop to await on and LangGraph raises its `TypeError` (its path runnable has no sync
//! function); so does this.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::runs;

/// Awaits a router's coroutine on its run's event loop and returns its result; `name` is the
/// router's, for the error a sync run raises.
#[pyfunction]
pub fn await_router(
    py: Python<'_>,
    coroutine: Bound<'_, PyAny>,
    name: Option<String>,
) -> PyResult<Py<PyAny>> {
    let entry = agent_core::routing_run_id().and_then(|id| runs::lookup(&id));
    let Some(locals) = entry.as_ref().and_then(|e| e.locals.as_ref()) else {
        // Not awaited: closed, so Python does not warn that it never was.
        coroutine.call_method0("close")?;
        let name = name.unwrap_or_else(|| "None".into());
        return Err(PyTypeError::new_err(format!(
            "No synchronous function provided to \"{name}\".\nEither initialize with a \
             synchronous function or invoke via the async API (ainvoke, astream, etc.)"
        )));
    };
    let event_loop = locals.event_loop(py);
    let future = py
        .import("asyncio")?
        .call_method1("run_coroutine_threadsafe", (coroutine, event_loop))?;
    // `result()` waits without the GIL.
    tokio::task::block_in_place(|| future.call_method0("result")).map(Bound::unbind)
}
