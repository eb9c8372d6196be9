//! Rust futures as asyncio futures, with the interpreter's exit in mind.
//!
//! `pyo3-async-runtimes`' `future_into_py` hands the result to the loop from a tokio thread
//! that may still hold Python objects when the awaiting coroutine has already returned and
//! the interpreter is finalizing: a crash at exit (seen with `asyncio.run(graph.ainvoke(..))`
//! as a program's last line). Here the handing over is counted, and `drain()` — registered
//! with `atexit` by the package — waits for every one in flight before Python finalizes.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// An asyncio future on the running loop, resolved with what `future` returns.
pub fn spawn<'py, F>(py: Python<'py>, future: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = PyResult<Py<PyAny>>> + Send + 'static,
{
    let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
    let py_future = event_loop.call_method0("create_future")?;
    let resolve = py
        .import("agentgraph._bridge")?
        .getattr("resolve")?
        .unbind();
    let (event_loop_ref, future_ref) = (event_loop.unbind(), py_future.clone().unbind());
    IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
    pyo3_async_runtimes::tokio::get_runtime().spawn(async move {
        let result = future.await;
        Python::attach(|py| {
            let (ok, value) = match result {
                Ok(value) => (true, value),
                Err(error) => (false, error.into_value(py).into_any()),
            };
            let handed = event_loop_ref.bind(py).call_method1(
                "call_soon_threadsafe",
                (resolve.bind(py), future_ref.bind(py), ok, value),
            );
            // The loop is closed: nobody awaits the result any more.
            drop(handed);
        });
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    });
    Ok(py_future)
}

/// Counts a hand-over that lives longer than one future (a stream's forwarder, `feed`).
pub fn enter() {
    IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
}

/// Ends what [`enter`] counted.
pub fn exit() {
    IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
}

/// Waits (without the GIL, up to five seconds) until no result is being handed over.
#[pyfunction]
pub fn drain(py: Python<'_>) {
    py.detach(|| {
        let deadline = Instant::now() + Duration::from_secs(5);
        while IN_FLIGHT.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}
