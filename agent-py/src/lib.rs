//! # agent-py: LangGraph's Python API on agent-core
//!
//! The native half (`agentgraph._native`) of the `agentgraph` Python package; the Python half
//! (`python/agentgraph`) has LangGraph's module layout and names, reads state schemas and node
//! signatures, and hands this crate plain data to compile.
//!
//! ## How a Python graph maps onto agent-core
//!
//! - **State.** agent-core's state is a Rust type whose field list is static; a Python process
//!   compiles any number of schemas. So every Python graph runs on one state type,
//!   `state::PyState`: 128 generic slots, the first 64 last-value fields, the other 64
//!   reducer fields (`schema`). A schema key without a reducer takes a last-value slot
//!   (agent-core then rejects two writes in one step: LangGraph's `InvalidUpdateError`); a key
//!   with `Annotated[T, reducer]` takes a reducer slot, whose writes agent-core folds in task
//!   order through the key's Python reducer, called under the GIL. `operator.add`,
//!   `add_messages` and any function are all just callables there: one path, LangGraph's
//!   semantics by construction. A reducer key starts from `T()` when that constructs (an empty
//!   list for `Annotated[list, operator.add]`), as LangGraph's `BinaryOperatorAggregate` does.
//! - **Values stay Python objects** (`value::PyValue`, an `Arc<Py<PyAny>>`), never converted
//!   or copied: nodes see the very objects written (LangGraph's semantics, identity included),
//!   a step's state snapshot is reference-count bumps, and no serializer runs on the hot path.
//!   Converting to JSON or msgpack per step would cost more than the Python nodes themselves
//!   and lose types (messages, dataclasses). Values are serialized only for a checkpointer,
//!   with `pickle` for now; LangGraph's own format (msgpack with its extension types, as
//!   `JsonPlusSerializer` writes) is the next step, so savers are shared with LangGraph.
//! - **Nodes** (`nodes`): a sync function runs in `block_in_place` on a tokio worker (its
//!   other tasks move away; parallel nodes overlap outside the GIL), an async one is
//!   awaited on the caller's asyncio loop (`pyo3-async-runtimes`). The state dict a node gets
//!   is built per call from the slots; its returned dict becomes a `state::PyUpdate`.
//! - **Routers** run under the GIL in agent-core's barrier; their exceptions leave agent-core
//!   through a target name no node can have (`runs::stash_error`) and are raised as
//!   themselves.
//! - **Errors** (`errors`): a node's exception is re-raised as itself; agent-core's run
//!   errors become LangGraph's exception classes (`agentgraph.errors`).
//! - **Interrupts** (`scope`): `interrupt()` finds its node through a context variable set
//!   around each call (`agentgraph._runtime`), asks agent-core's `NodeContext::interrupt`, and
//!   raises `GraphInterrupt` to unwind the node; the wrapper hands agent-core its
//!   `Interrupted`. Interrupt and resume values cross as JSON (agent-core keeps them as
//!   `serde_json::Value`).
//! - **asyncio** (`bridge`): `ainvoke` and `astream` resolve asyncio futures from tokio
//!   tasks; `atexit` waits for any hand-over in flight, so a program's last `asyncio.run`
//!   cannot race the interpreter's finalization.
//! - **Runs' Python context** (`runs`): the config dict and the caller's event loop, by run
//!   id, for nodes (agent-core's `RunConfig` holds no Python objects).
//! - **Thread API** (`thread`): `get_state_history` and `update_state` over agent-core's
//!   `state_api`; snapshots cross as tuples that `agentgraph.graph.state` turns into
//!   LangGraph's `StateSnapshot`. The rules LangGraph applies around them (which node an
//!   update counts as, the order of next tasks) live there too, in Python, beside the types.
//! - **Run options** (`run_options`): `interrupt_before`/`interrupt_after`/`durability` of one
//!   run, into agent-core's `RunConfig`.
//! - **Retry and cache policies** are Python wrappers around the node function
//!   (`agentgraph.graph._policies`): their decisions are Python calls (`retry_on`,
//!   `key_func`), so agent-core's Rust layers would only add crossings. A cache hit returns
//!   `CachedWrites`, which `nodes` marks on the update (`PyUpdate::cached`) for the `updates`
//!   stream.

mod bridge;
mod command;
mod errors;
mod graph;
mod nodes;
mod run_options;
mod runs;
mod saver;
mod schema;
mod scope;
mod state;
mod thread;
mod value;

use pyo3::prelude::*;

/// The native module: `compile`, the compiled graph and stream classes, the savers.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(graph::compile, m)?)?;
    m.add_function(wrap_pyfunction!(bridge::drain, m)?)?;
    m.add_function(wrap_pyfunction!(thread::get_state_history, m)?)?;
    m.add_function(wrap_pyfunction!(thread::update_state, m)?)?;
    m.add_class::<graph::NativeGraph>()?;
    m.add_class::<graph::NativeStream>()?;
    m.add_class::<saver::NativeSaver>()?;
    m.add_class::<scope::NodeScope>()?;
    Ok(())
}
