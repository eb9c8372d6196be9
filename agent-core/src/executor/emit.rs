//! Stream emission: what a run sends to a [`GraphStream`](crate::GraphStream) in the modes its
//! caller asked for — `values` after each step, `updates` per task, `debug` task starts,
//! results and checkpoints, and `astream_events` v2 events for the graph and its nodes.
//! Nothing is built for a mode nobody streams.
//!
//! A task streams one update, whatever it wrote: a subgraph over its parent's state hands the
//! parent every update it applied (a batch), and its node's `updates` item folds them into one
//! ([`fold_updates`]) — LangGraph shows a subgraph node's output once, never one item per
//! inner node. (LangGraph's item is the subgraph's whole final state; ours is what the
//! parent applies, the same rule as the writes.)

use serde_json::Value;

use crate::context::TaskStream;
use crate::error::GraphError;
use crate::interrupt::Interrupt;
use crate::state::{GraphState, ReducerKind};
use crate::stream::{DebugEvent, Event, StreamMode, StreamPart};

use super::Run;
use super::algo::Task;
use super::runner::{Done, TaskWrites, Updates, to_json};

/// The updates of a step, taken before the barrier consumes them, to stream after it.
pub(crate) struct StepUpdates<U>(Vec<(usize, U)>);

impl<S: GraphState> Run<'_, S> {
    /// Whether the caller streams `mode`.
    pub(crate) fn streams(&self, mode: StreamMode) -> bool {
        self.emitter.as_ref().is_some_and(|e| e.modes.has(mode))
    }

    /// Sends a part; a consumer that went away cancels the run.
    pub(crate) async fn emit(&self, part: StreamPart<S>) -> Result<(), GraphError> {
        if let Some(emitter) = &self.emitter
            && !emitter.send(part).await
        {
            return Err(GraphError::Cancelled);
        }
        Ok(())
    }

    /// The `values` item: the whole state.
    pub(crate) async fn emit_values(&self) -> Result<(), GraphError> {
        if self.streams(StreamMode::Values) {
            self.emit(StreamPart::Values(self.state.clone())).await?;
        }
        Ok(())
    }

    fn event(
        &self,
        event: &str,
        name: &str,
        run_id: String,
        parent_ids: Vec<String>,
        metadata: serde_json::Value,
        data: serde_json::Value,
    ) -> StreamPart<S> {
        StreamPart::Event(Event {
            event: event.to_owned(),
            name: name.to_owned(),
            run_id,
            parent_ids,
            tags: self.info.config.tags.clone(),
            metadata,
            data,
        })
    }

    /// A graph-level event (`on_chain_start` / `on_chain_stream` / `on_chain_end`); none for
    /// a subgraph run, whose node's own events in the parent stand for it (as in LangGraph).
    pub(crate) async fn graph_event(
        &self,
        event: &str,
        data: serde_json::Value,
    ) -> Result<(), GraphError> {
        if !self.info.ns.is_root() {
            return Ok(());
        }
        let metadata = serde_json::json!({ "thread_id": self.info.config.thread_id });
        let part = self.event(
            event,
            "LangGraph",
            self.info.run_id.to_string(),
            Vec::new(),
            metadata,
            data,
        );
        self.emit(part).await
    }

    async fn node_event(
        &self,
        event: &str,
        node: usize,
        stream: &TaskStream,
        data: serde_json::Value,
    ) -> Result<(), GraphError> {
        let mut metadata = serde_json::json!({
            "langgraph_node": &*self.graph.names[node],
            "langgraph_step": self.step + 1,
            "langgraph_triggers": stream.triggers,
            "thread_id": self.info.config.thread_id,
        });
        crate::context::add_namespace(&mut metadata, &self.info.ns);
        let part = self.event(
            event,
            &self.graph.names[node],
            stream.run_id.clone(),
            self.info.event_parents.clone(),
            metadata,
            data,
        );
        self.emit(part).await
    }

    /// Stream items for the step's tasks, about to run (each gets its event run id).
    pub(crate) async fn tasks_started(&self, tasks: &mut [Task<S>]) -> Result<(), GraphError> {
        if self.emitter.is_none() {
            return Ok(());
        }
        let events = self.streams(StreamMode::Events);
        for task in tasks {
            let Some(stream) = &mut task.stream else {
                continue;
            };
            if events {
                stream.run_id = crate::ids::new_id();
            }
            if self.streams(StreamMode::Debug) {
                self.emit(StreamPart::Debug(DebugEvent::Task {
                    step: self.step + 1,
                    node: self.graph.names[task.node].to_string(),
                    triggers: stream.triggers.clone(),
                }))
                .await?;
            }
            if events {
                self.node_event(
                    "on_chain_start",
                    task.node,
                    stream,
                    serde_json::json!({ "input": null }),
                )
                .await?;
            }
        }
        Ok(())
    }

    /// Stream items for a task that finished (in completion order).
    pub(crate) async fn task_finished(
        &self,
        node: usize,
        stream: &TaskStream,
        done: &Result<Done<S>, GraphError>,
    ) -> Result<(), GraphError> {
        // The update as JSON is for these two modes only: a state's serializer may be costly
        // (agent-py's runs Python's), and `updates`/`values` streams never read it.
        if !self.streams(StreamMode::Debug) && !self.streams(StreamMode::Events) {
            return Ok(());
        }
        let update = match done {
            Ok(Done::Output(writes)) => match streamed::<S>(&writes.updates).as_slice() {
                [] => Value::Null,
                [one] => to_json(one),
                several => to_json(&several),
            },
            _ => Value::Null,
        };
        if self.streams(StreamMode::Debug) {
            self.emit(StreamPart::Debug(DebugEvent::TaskResult {
                step: self.step + 1,
                node: self.graph.names[node].to_string(),
                result: update.clone(),
                error: done.as_ref().err().map(ToString::to_string),
            }))
            .await?;
        }
        if self.streams(StreamMode::Events) && matches!(done, Ok(Done::Output(_))) {
            self.node_event(
                "on_chain_stream",
                node,
                stream,
                serde_json::json!({ "chunk": update }),
            )
            .await?;
            self.node_event(
                "on_chain_end",
                node,
                stream,
                serde_json::json!({ "output": update }),
            )
            .await?;
        }
        Ok(())
    }

    /// The step's updates, when `updates` or `events` are streamed.
    pub(crate) fn step_updates(&self, writes: &[TaskWrites<S>]) -> Option<StepUpdates<S::Update>> {
        if !self.streams(StreamMode::Updates) && !self.streams(StreamMode::Events) {
            return None;
        }
        Some(StepUpdates(
            writes
                .iter()
                .flat_map(|task| {
                    streamed::<S>(&task.updates)
                        .into_iter()
                        .map(|u| (task.node, u))
                })
                .collect(),
        ))
    }

    /// A subgraph run paused: its `updates` item `{"__interrupt__": [...]}` under its
    /// namespace, as LangGraph streams it (the root run's interrupts are its caller's to
    /// report, from [`RunOutput::interrupts`](crate::RunOutput)).
    pub(crate) async fn interrupts_emitted(&self, new: &[Interrupt]) -> Result<(), GraphError> {
        if self.info.ns.is_root() || new.is_empty() || !self.streams(StreamMode::Updates) {
            return Ok(());
        }
        if let Some(emitter) = &self.emitter
            && !emitter.send_interrupts(new).await
        {
            return Err(GraphError::Cancelled);
        }
        Ok(())
    }

    /// After the barrier: the step's updates (`updates`, and the graph's `on_chain_stream`
    /// event), then the state (`values`).
    pub(crate) async fn step_emitted(
        &self,
        updates: Option<StepUpdates<S::Update>>,
    ) -> Result<(), GraphError> {
        if let Some(StepUpdates(updates)) = updates {
            if self.streams(StreamMode::Events) {
                let mut chunk = serde_json::Map::new();
                for (node, update) in &updates {
                    chunk.insert(self.graph.names[*node].to_string(), to_json(update));
                }
                self.graph_event("on_chain_stream", serde_json::json!({ "chunk": chunk }))
                    .await?;
            }
            if self.streams(StreamMode::Updates) {
                for (node, update) in updates {
                    let node = self.graph.names[node].to_string();
                    self.emit(StreamPart::Updates { node, update }).await?;
                }
            }
        }
        self.emit_values().await
    }
}

/// A task's updates as its stream items show them: its update; for a batch, one update that
/// folds them ([`fold_updates`]), or each of them when they do not fold; none for a task that
/// only routed.
fn streamed<S: GraphState>(updates: &Updates<S::Update>) -> Vec<S::Update> {
    match updates {
        Updates::None => Vec::new(),
        Updates::One(update) => vec![update.clone()],
        Updates::Batch(list) if list.len() == 1 => list.clone(),
        Updates::Batch(list) => fold_updates::<S>(list).map_or_else(|| list.clone(), |u| vec![u]),
    }
}

/// One update that writes what `list` writes, in order, field by field on their JSON: a
/// last-value field keeps the last write; lists of an appending (or custom) reducer are
/// concatenated, maps merged (later keys win), numbers of an `add` field summed; anything
/// else keeps the last write. No reducer runs (a custom one may have effects on the state it
/// is given, e.g. ids given to messages). `None` when an update is not a JSON object or the
/// folded one does not read back as an update (a hand-written update type).
pub(crate) fn fold_updates<S: GraphState>(list: &[S::Update]) -> Option<S::Update> {
    let mut folded = serde_json::Map::new();
    for update in list {
        let Value::Object(fields) = serde_json::to_value(update).ok()? else {
            return None;
        };
        for (key, value) in fields {
            let kind = S::fields()
                .iter()
                .find(|field| field.name == key)
                .map_or(ReducerKind::Replace, |field| field.reducer);
            match folded.get_mut(&key) {
                Some(acc) => combine(kind, acc, value),
                None => {
                    folded.insert(key, value);
                }
            }
        }
    }
    serde_json::from_value(Value::Object(folded)).ok()
}

/// `next` written after `acc` to a field with reducer `kind`.
fn combine(kind: ReducerKind, acc: &mut Value, next: Value) {
    match (kind, &mut *acc, next) {
        (ReducerKind::Replace, _, next) => *acc = next,
        (_, Value::Array(items), Value::Array(more)) => items.extend(more),
        (_, Value::Object(map), Value::Object(more)) => map.extend(more),
        (ReducerKind::Add, Value::Number(a), Value::Number(b)) => {
            let sum = match (a.as_i64(), b.as_i64(), a.as_u64(), b.as_u64()) {
                (Some(x), Some(y), ..) => x.checked_add(y).map(Value::from),
                (.., Some(x), Some(y)) => x.checked_add(y).map(Value::from),
                _ => None,
            };
            *acc = sum
                .or_else(|| {
                    let (x, y) = (a.as_f64()?, b.as_f64()?);
                    serde_json::Number::from_f64(x + y).map(Value::Number)
                })
                .unwrap_or(Value::Number(b));
        }
        (_, _, next) => *acc = next,
    }
}
