//! An async stream's parts, handed to asyncio as they come rather than fetched per `anext()`.
//!
//! Why: `anext()` used to spawn a tokio task per part that waited for it and then woke the
//! loop. Profiled (py-spy, `wide_state_15x600` through `astream`), a fifth of the loop
//! thread's time went to that spawn: the futex wake of a tokio worker, an eventfd write, the
//! loop lookup. Here one task per stream (the forwarder) waits for parts, converts each under
//! the GIL and either resolves the future `anext()` is waiting on or queues the item; an
//! `anext()` that finds one queued returns a done future with no thread hand-off. It runs at
//! most [`WINDOW`] items ahead of the consumer and only while someone streams: when the
//! window is full it stops, and the next `anext()` starts it again. Dropping the stream stops
//! it at once (the run is then dropped, as before).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// How many converted parts may wait for the consumer.
const WINDOW: usize = 16;

/// One part for Python (`None` at the end), and whether it is the stream's last.
pub type Fetched = (PyResult<Py<PyAny>>, bool);

/// Fetches the next part (awaits the run, converts under the GIL).
pub type Fetch = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Fetched> + Send>> + Send + Sync>;

/// The forwarder's and `anext()`'s shared state.
pub struct Feed {
    state: Mutex<State>,
    closed: tokio::sync::Notify,
    fetch: Fetch,
}

#[derive(Default)]
struct State {
    ready: VecDeque<PyResult<Py<PyAny>>>,
    /// The future an `anext()` returned before its item came.
    waiter: Option<Py<PyAny>>,
    /// The consumer's loop (one stream, one loop).
    event_loop: Option<Py<PyAny>>,
    running: bool,
    /// The last part was fetched.
    done: bool,
    closed: bool,
}

impl Feed {
    pub fn new(fetch: Fetch) -> Arc<Feed> {
        Arc::new(Feed {
            state: Mutex::new(State::default()),
            closed: tokio::sync::Notify::new(),
            fetch,
        })
    }

    /// The next part as an awaitable: done already when one was waiting.
    ///
    /// Python is never called with the state locked: a call may let the GIL go (a socket
    /// write in `call_soon_threadsafe`, a finalizer), and the other side may be waiting for
    /// the lock while holding the GIL.
    pub fn anext<'py>(self: &Arc<Self>, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let known = self.lock()?.event_loop.as_ref().map(|l| l.clone_ref(py));
        let event_loop = match known {
            Some(event_loop) => event_loop.into_bound(py),
            None => {
                let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
                self.lock()?.event_loop = Some(event_loop.clone().unbind());
                event_loop
            }
        };
        let future = event_loop.call_method0("create_future")?;
        let (popped, spawn) = {
            let mut state = self.lock()?;
            let popped = match state.ready.pop_front() {
                Some(item) => Some(item),
                None if state.done => Some(Ok(py.None())),
                None => {
                    state.waiter = Some(future.clone().unbind());
                    None
                }
            };
            let spawn = !state.running && !state.done && !state.closed;
            if spawn {
                state.running = true;
            }
            (popped, spawn)
        };
        match popped {
            Some(Ok(item)) => {
                future.call_method1("set_result", (item,))?;
            }
            Some(Err(error)) => {
                future.call_method1("set_exception", (error.into_value(py),))?;
            }
            None => {}
        }
        if spawn {
            crate::bridge::enter();
            let feed = self.clone();
            pyo3_async_runtimes::tokio::get_runtime().spawn(async move {
                feed.forward().await;
                crate::bridge::exit();
            });
        }
        Ok(future)
    }

    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, State>> {
        self.state
            .lock()
            .map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("stream state poisoned"))
    }

    /// The forwarder: fetches while someone waits or the window has room.
    async fn forward(&self) {
        loop {
            {
                let Ok(mut state) = self.state.lock() else {
                    return;
                };
                if state.closed || (state.waiter.is_none() && state.ready.len() >= WINDOW) {
                    state.running = false;
                    return;
                }
            }
            let (item, last) = tokio::select! {
                fetched = (self.fetch)() => fetched,
                () = self.closed.notified() => return,
            };
            let stop = Python::attach(|py| {
                let mut item = Some(item);
                // Under the lock: the item is queued, or the waiting future taken.
                let waiting = {
                    let Ok(mut state) = self.state.lock() else {
                        return true;
                    };
                    if state.closed {
                        return true;
                    }
                    if last {
                        state.done = true;
                        state.running = false;
                    }
                    let event_loop = state.event_loop.as_ref().map(|l| l.clone_ref(py));
                    match (state.waiter.take(), event_loop) {
                        (Some(future), Some(event_loop)) => Some((future, event_loop)),
                        (waiter, _) => {
                            state.waiter = waiter;
                            if let Some(item) = item.take() {
                                state.ready.push_back(item);
                            }
                            None
                        }
                    }
                };
                if let (Some((future, event_loop)), Some(item)) = (waiting, item)
                    && hand_over(py, event_loop.bind(py), future, item).is_err()
                {
                    // The loop is closed: nobody awaits the result any more.
                    if let Ok(mut state) = self.state.lock() {
                        state.closed = true;
                    }
                    return true;
                }
                last
            });
            if stop {
                return;
            }
        }
    }

    /// The stream was dropped: stops the forwarder and lets go of what it queued.
    pub fn close(&self) {
        let dropped = match self.state.lock() {
            Ok(mut state) => {
                state.closed = true;
                (std::mem::take(&mut state.ready), state.waiter.take())
            }
            Err(_) => return,
        };
        self.closed.notify_one();
        drop(dropped);
    }
}

/// Resolves `future` on its loop with `item` (`agentgraph._bridge.resolve`).
fn hand_over(
    py: Python<'_>,
    event_loop: &Bound<'_, PyAny>,
    future: Py<PyAny>,
    item: PyResult<Py<PyAny>>,
) -> PyResult<()> {
    static RESOLVE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let resolve = RESOLVE.import(py, "agentgraph._bridge", "resolve")?;
    let (ok, value) = match item {
        Ok(value) => (true, value),
        Err(error) => (false, error.into_value(py).into_any()),
    };
    event_loop.call_method1("call_soon_threadsafe", (resolve, future, ok, value))?;
    Ok(())
}
