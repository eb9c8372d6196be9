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
//! - **Schemas.** The keys are the union of every schema a graph names (state, input,
//!   output, each node's input schema: LangGraph's channels, private state included), read on
//!   the Python side (`graph/_schema.py`); where a node or router must see fewer keys, or a
//!   dataclass or Pydantic instance, the Python side wraps its function, so this crate only
//!   ever hands out and takes state dicts.
//! - **Values stay Python objects** (`value::PyValue`, an `Arc<Py<PyAny>>`), never converted
//!   or copied: nodes see the very objects written (LangGraph's semantics, identity included),
//!   a step's state snapshot is reference-count bumps, and no serializer runs on the hot path.
//!   Converting to JSON or msgpack per step would cost more than the Python nodes themselves
//!   and lose types (messages, dataclasses). Values are serialized only for a checkpointer,
//!   in LangGraph's own format: the `(type, bytes)` of the process's serializer
//!   (`agentgraph.checkpoint.serde`, LangGraph's `JsonPlusSerializer` format by default:
//!   msgpack with its extension types), so stored values are LangGraph's.
//! - **Savers** (`saver`): agent-core's memory, SQLite and PostgreSQL savers (read back for
//!   LangGraph's `get_tuple`/`list` as a run loads them); or any LangGraph
//!   `BaseCheckpointSaver` through `langgraph_saver`, which rebuilds each field version whole
//!   and hands the saver LangGraph's checkpoint dict by state key (agent-core's body rides
//!   along), so LangGraph and agentgraph read each other's threads.
//! - **Nodes** (`nodes`): a sync function runs in `block_in_place` on a tokio worker (its
//!   other tasks move away; parallel nodes overlap outside the GIL), an async one is
//!   awaited on the caller's asyncio loop (`pyo3-async-runtimes`). The state dict a node gets
//!   is built per call from the slots; its returned dict becomes a `state::PyUpdate` (a
//!   `Command`'s list of `(key, value)` pairs too: a key written more than once goes through
//!   its reducer each time, and the `updates` stream shows one dict a write, as LangGraph).
//! - **`Send`** (`nodes`, `command`): agent-core sends typed inputs only to nodes that
//!   declare an input type; a Python node takes the state or a `Send`'s argument, so every
//!   node declares `PyValue` with `NodeSpec::with_input_or_state` and gets the argument
//!   verbatim (the very object) when a `Send` carries one, unread by the node's input schema
//!   (`NodeScope::sent` tells the Python wrapper). Checkpoints keep it like any value.
//! - **Subgraphs** (`subgraph`, `subgraph_stream`): a compiled graph as a node and a graph
//!   invoked inside a node both run through agent-core's `CompiledGraph::invoke_in`, a child
//!   run of the node's task (its checkpoints, stream namespace and pauses are agent-core's).
//!   Parent and child are one Rust type with different schemas, so state crosses by key name;
//!   a child's `Command.PARENT` crosses as the Python command, read with the parent's schema.
//! - **A subgraph's own state** (`subgraph_state`): `compile(checkpointer=True | False)` on
//!   a child is agent-core's `SubgraphCheckpoints` (one history per thread, or none); the
//!   state API on a subgraph's `checkpoint_ns` reads through the child's graph with the root
//!   graph's saver (the Python side finds the child by the namespace's node names).
//! - **Routers** run under the GIL in agent-core's barrier; their exceptions leave agent-core
//!   through a target name no node can have (`runs::stash_error`) and are raised as
//!   themselves. An async router is awaited on its run's loop (`async_router`).
//! - **Errors** (`errors`): a node's exception is re-raised as itself; agent-core's run
//!   errors become LangGraph's exception classes (`agentgraph.errors`).
//! - **Interrupts** (`scope`): `interrupt()` finds its node through a context variable set
//!   around each call (`agentgraph._runtime`), asks agent-core's `NodeContext::interrupt`, and
//!   raises `GraphInterrupt` to unwind the node; the wrapper hands agent-core its
//!   `Interrupted`. Interrupt and resume values cross as JSON (agent-core keeps them as
//!   `serde_json::Value`); a value JSON has no type for goes through the checkpoint serializer,
//!   tagged inside that JSON.
//! - **asyncio** (`bridge`, `feed`): `ainvoke` resolves an asyncio future from a tokio task;
//!   `astream`'s parts are forwarded to the loop as they come by one task per stream (an
//!   `anext()` that finds one waiting costs no thread hand-off); `atexit` waits for any
//!   hand-over in flight, so a program's last `asyncio.run` cannot race the interpreter's
//!   finalization.
//! - **The stores** (`store`): `agentgraph.store.memory.InMemoryStore`, `.sqlite.SqliteStore`
//!   and `.postgres.PostgresStore` are agent-core's three stores behind one class
//!   (`NativeStore`); ops and results cross as JSON text (the stores hold JSON values) and run
//!   on the graphs' tokio runtime without the GIL. The in-memory store's Python side keeps the
//!   dicts put (returned as themselves, in LangGraph's order). A graph's store travels in the
//!   run's config to the nodes that ask for it.
//! - **Runs' Python context** (`runs`): the config dict and the caller's event loop, by run
//!   id, for nodes (agent-core's `RunConfig` holds no Python objects).
//! - **Thread API** (`thread`): `get_state_history`, `update_state` and `copy_checkpoint`
//!   (`as_node="__copy__"`) over agent-core's
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
//! - **The functional API** (`agentgraph.func`): an `@entrypoint` is a one-node graph with
//!   private keys (input, return value, saved value); `@task` calls inside it are Python
//!   futures (threads or asyncio tasks) whose results go into agent-core's task journal
//!   (`NodeScope.journal_slot`/`record` over `NodeContext::journal_slot`/`record`), which a
//!   pause or a failure keeps, so a resumed entrypoint replays finished tasks. Their `updates` chunks
//!   travel the `custom` stream and are shown as updates on the Python side.
//! - **A task's config and arguments** (`agentgraph._runtime`, `agentgraph._stream`): each node
//!   call gets the config LangGraph builds for a task (`langgraph_*` metadata, the task's
//!   `checkpoint_ns`), set as LangChain's config context variable too, and the arguments its
//!   signature names (`config`, `writer`, `runtime`, `store`).
//! - **Stream modes from Python** (`outbox`): `custom` items and `messages` chunks are Python
//!   objects; they travel agent-core's own `custom`/`messages` parts as tickets to the
//!   stream's outbox, so their order against the other parts is agent-core's. A sync node
//!   waits for room in the channel (without the GIL); an async node queues, and its wrapper
//!   forwards while it runs (it shares the caller's loop, which must not block). `messages`
//!   comes from a LangChain callback handler in the task's config, and so do `tools` events,
//!   which ride the `messages` route (the Python stream shows them as `tools`). A subgraph's
//!   `custom`/`messages` parts stream under their namespace, only with `subgraphs=True`.
//!   `tasks`, `checkpoints` and
//!   `debug` are built from agent-core's `debug` parts, the state (from `values` parts the
//!   stream reads for itself) and what the node wrapper kept of each task's end, reordered
//!   as LangGraph shows them (a task's result after its update).

mod async_router;
mod bridge;
mod command;
mod errors;
mod feed;
mod graph;
mod langgraph_saver;
mod nodes;
mod outbox;
mod run_options;
mod runs;
mod saver;
mod schema;
mod scope;
mod state;
mod store;
mod subgraph;
mod subgraph_state;
mod subgraph_stream;
mod thread;
mod value;

use pyo3::prelude::*;

/// The native module: `compile`, the compiled graph and stream classes, the savers, the store.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(graph::compile, m)?)?;
    m.add_function(wrap_pyfunction!(bridge::drain, m)?)?;
    m.add_function(wrap_pyfunction!(async_router::await_router, m)?)?;
    m.add_function(wrap_pyfunction!(thread::get_state_history, m)?)?;
    m.add_function(wrap_pyfunction!(thread::update_state, m)?)?;
    m.add_function(wrap_pyfunction!(thread::copy_checkpoint, m)?)?;
    m.add_function(wrap_pyfunction!(scope::task_id, m)?)?;
    m.add_function(wrap_pyfunction!(subgraph::invoke_in, m)?)?;
    m.add_function(wrap_pyfunction!(
        subgraph_state::with_subgraph_checkpoints,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(subgraph_state::get_state_in, m)?)?;
    m.add_function(wrap_pyfunction!(subgraph::ainvoke_in, m)?)?;
    m.add_class::<graph::NativeGraph>()?;
    m.add_class::<graph::NativeStream>()?;
    m.add_class::<saver::NativeSaver>()?;
    m.add_class::<store::NativeStore>()?;
    m.add_class::<scope::NodeScope>()?;
    Ok(())
}
