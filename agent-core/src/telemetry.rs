//! What a run tells `tracing`, shaped for OpenTelemetry: the spans a run opens, their fields
//! (named as the OpenTelemetry attributes they become) and how a failure is recorded on them.
//!
//! The crate only emits `tracing` spans; nothing here exports anything or holds global state.
//! A subscriber with `tracing-opentelemetry`'s layer (the `agent-otel` crate sets one up from
//! the standard `OTEL_*` environment variables) turns them into OpenTelemetry spans: a field
//! named `otel.name` becomes the span's name, `otel.kind` its kind, `otel.status_code` and
//! `otel.status_description` its status, every other field an attribute of the same name.
//!
//! | span (`tracing` name) | OpenTelemetry name | attributes |
//! | --- | --- | --- |
//! | `invoke_agent` | `invoke_agent {graph}` | `gen_ai.operation.name` = `invoke_agent`, `gen_ai.agent.name`, `gen_ai.conversation.id` (the thread), `agentgraph.run.id`, `agentgraph.durability`, `agentgraph.subgraph`, `agentgraph.checkpoint.ns` (a subgraph's), `agentgraph.steps`, `agentgraph.tasks`, `agentgraph.interrupted` |
//! | `step` | `step` | `agentgraph.step`, `agentgraph.step.tasks`, `agentgraph.step.nodes` |
//! | `node` | the node's name | `agentgraph.node`, `agentgraph.step`, `agentgraph.node.attempts` (with a retry policy), `agentgraph.cache.hit` (with a cache policy), `agentgraph.interrupted` |
//! | `checkpoint` | `checkpoint {backend}` | `agentgraph.checkpoint.backend`, `agentgraph.checkpoint.ops`, `agentgraph.checkpoint.bytes` |
//!
//! Spans nest as the work does: the run, its steps, each step's nodes (also those a wide step
//! runs on other tokio tasks: a task's future carries its node span), a subgraph's run under
//! the node that runs it, and the checkpoint writes under the span that queued them (a
//! background write is still parented to it, so it lands in the run's trace). A run started
//! with [`CompiledGraph::stream`](crate::CompiledGraph::stream) nests under the span that was
//! current where `stream` was called.
//!
//! A span that failed carries `error.type` (a short, stable name of the failure, see
//! [`graph_error_type`] and [`node_error_type`]) and an error status whose description is the
//! error's message. An interrupt is not a failure: the node and the run record
//! `agentgraph.interrupted = true`.
//!
//! Cost: every span is at `INFO` level; with no subscriber interested, opening one is a
//! relaxed atomic load, and the values that need formatting or counting (names, byte counts,
//! error messages) are only computed for a span that is enabled.

use std::fmt::Display;

use crate::checkpoint::StoreOp;
use crate::error::GraphError;
use crate::node::NodeError;

/// Records a failure on `span`: `error.type`, and an error status whose description is
/// `description`. Does nothing (and formats nothing) when the span is disabled. The span
/// must have declared the fields `error.type`, `otel.status_code` and
/// `otel.status_description` (as `tracing::field::Empty`).
///
/// Shared by the crates that emit spans (`agent-llm`, `agent-tools`), so every failure is
/// recorded the same way.
pub fn record_error(span: &tracing::Span, error_type: &str, description: &dyn Display) {
    if span.is_disabled() {
        return;
    }
    span.record("error.type", error_type);
    span.record("otel.status_code", "ERROR");
    span.record("otel.status_description", description.to_string());
}

/// The `error.type` of a run that failed with `error`: a short, stable name for each kind of
/// failure (`node_error`, `timeout`, `panic`, `recursion_limit`, `storage`, `fenced`,
/// `cancelled`, `invalid_update`, ...).
pub fn graph_error_type(error: &GraphError) -> &'static str {
    match error {
        GraphError::Node { .. } => "node_error",
        GraphError::NodeTimeout { .. } => "timeout",
        GraphError::NodePanicked { .. } => "panic",
        GraphError::RecursionLimit { .. } => "recursion_limit",
        GraphError::Storage { .. } => "storage",
        GraphError::Fenced { .. } => "fenced",
        GraphError::Cancelled => "cancelled",
        GraphError::InvalidUpdate { .. } => "invalid_update",
        GraphError::Reducer { .. } => "reducer",
        GraphError::RouteNotInPathMap { .. } | GraphError::UnknownTarget { .. } => "routing",
        GraphError::SendInput { .. } => "send_input",
        GraphError::NoCheckpointer(_) => "no_checkpointer",
        GraphError::NothingToResume(_) => "nothing_to_resume",
        GraphError::CheckpointNotFound { .. } => "checkpoint_not_found",
        GraphError::CorruptCheckpoint { .. } => "corrupt_checkpoint",
        GraphError::InvalidInput(_) => "invalid_input",
        GraphError::ParentCommand(_) => "parent_command",
        GraphError::ContextMismatch { .. } | GraphError::MissingContext { .. } => "context",
        _ => "invalid_graph",
    }
}

/// The `error.type` of a node call that failed with `error`: `timeout` for an attempt that
/// ran past its timeout, the last attempt's type when retries gave up, a failed subgraph's
/// [`graph_error_type`], and `node_error` for anything the node returned.
pub fn node_error_type(error: &NodeError) -> &'static str {
    match error {
        NodeError::TimedOut(_) => "timeout",
        NodeError::RetriesExhausted { last, .. } => node_error_type(last),
        NodeError::Failed(source) => match source.downcast_ref::<GraphError>() {
            Some(graph) => graph_error_type(graph),
            None => "node_error",
        },
    }
}

/// The bytes `ops` store: checkpoint bodies, field blobs and pending writes.
pub(crate) fn ops_bytes(ops: &[StoreOp]) -> u64 {
    ops.iter()
        .map(|op| match op {
            StoreOp::Checkpoint { record, blobs } => {
                record.body.len() + blobs.iter().map(|b| b.data.len()).sum::<usize>()
            }
            StoreOp::Writes { writes, .. } => writes.iter().map(|w| w.data.len()).sum(),
        })
        .map(|n| n as u64)
        .sum()
}

/// The span of one checkpoint write of `ops` to the saver `backend`, a child of `parent`
/// (the span that queued the ops); disabled when nobody listens.
pub(crate) fn checkpoint_span(
    parent: Option<&tracing::Span>,
    backend: &'static str,
    ops: &[StoreOp],
) -> tracing::Span {
    let span = match parent {
        Some(parent) => tracing::info_span!(
            parent: parent,
            "checkpoint",
            otel.name = tracing::field::Empty,
            agentgraph.checkpoint.backend = backend,
            agentgraph.checkpoint.ops = tracing::field::Empty,
            agentgraph.checkpoint.bytes = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            otel.status_description = tracing::field::Empty,
        ),
        None => tracing::info_span!(
            "checkpoint",
            otel.name = tracing::field::Empty,
            agentgraph.checkpoint.backend = backend,
            agentgraph.checkpoint.ops = tracing::field::Empty,
            agentgraph.checkpoint.bytes = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            otel.status_description = tracing::field::Empty,
        ),
    };
    if !span.is_disabled() {
        span.record("otel.name", format!("checkpoint {backend}"));
        span.record("agentgraph.checkpoint.ops", ops.len() as i64);
        span.record(
            "agentgraph.checkpoint.bytes",
            i64::try_from(ops_bytes(ops)).unwrap_or(i64::MAX),
        );
    }
    span
}

/// Records a failed checkpoint write on its span.
pub(crate) fn checkpoint_failed(span: &tracing::Span, error: &GraphError) {
    record_error(span, graph_error_type(error), error);
}

/// An integer as OpenTelemetry stores it (`tracing-opentelemetry` turns `u64` and `usize`
/// fields into strings; `i64` stays a number).
pub(crate) fn int(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The span of a run of the graph `name` (a subgraph's run, under its parent's node span,
/// when `subgraph`): `invoke_agent {name}`.
pub(crate) fn run_span(
    name: &str,
    run_id: &str,
    thread_id: Option<&str>,
    durability: crate::config::Durability,
    subgraph: bool,
) -> tracing::Span {
    let span = tracing::info_span!(
        "invoke_agent",
        otel.name = tracing::field::Empty,
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = name,
        gen_ai.conversation.id = tracing::field::Empty,
        agentgraph.run.id = run_id,
        agentgraph.durability = durability_name(durability),
        agentgraph.subgraph = subgraph,
        agentgraph.checkpoint.ns = tracing::field::Empty,
        agentgraph.steps = tracing::field::Empty,
        agentgraph.tasks = tracing::field::Empty,
        agentgraph.interrupted = tracing::field::Empty,
        "error.type" = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
    );
    if !span.is_disabled() {
        span.record("otel.name", format!("invoke_agent {name}"));
        if let Some(thread) = thread_id {
            span.record("gen_ai.conversation.id", thread);
        }
    }
    span
}

/// The span of super-step `step` running `tasks`.
pub(crate) fn step_span<S: crate::state::GraphState>(
    step: i64,
    tasks: &[crate::executor::Task<S>],
    names: &[std::sync::Arc<str>],
) -> tracing::Span {
    let span = tracing::info_span!(
        "step",
        agentgraph.step = step,
        agentgraph.step.tasks = int(tasks.len()),
        agentgraph.step.nodes = tracing::field::Empty,
    );
    if !span.is_disabled() {
        let mut nodes = String::new();
        for task in tasks {
            if !nodes.is_empty() {
                nodes.push(',');
            }
            nodes.push_str(&names[task.node]);
        }
        span.record("agentgraph.step.nodes", nodes);
    }
    span
}

/// The span of a task of `node` in super-step `step`: named after the node.
pub(crate) fn node_span(node: &str, step: i64) -> tracing::Span {
    tracing::info_span!(
        "node",
        otel.name = node,
        agentgraph.node = node,
        agentgraph.step = step,
        agentgraph.node.attempts = tracing::field::Empty,
        agentgraph.cache.hit = tracing::field::Empty,
        agentgraph.interrupted = tracing::field::Empty,
        "error.type" = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
    )
}

/// How a run's checkpoints are written, as its span says it.
fn durability_name(durability: crate::config::Durability) -> &'static str {
    match durability {
        crate::config::Durability::Sync => "sync",
        crate::config::Durability::Async => "async",
        crate::config::Durability::Exit => "exit",
    }
}
