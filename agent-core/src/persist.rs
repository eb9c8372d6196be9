//! Between the executor and a [`Checkpointer`]: encoding a run's position into a checkpoint
//! and restoring it, and task outputs into pending writes and back.
//!
//! Everything here runs only when a checkpointer is configured; the run loop without one
//! never serializes.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::checkpoint::codec::{self, Body, FieldCache, serde_bytes_vec::Bytes};
use crate::checkpoint::{CheckpointRecord, FieldBlob, LoadedCheckpoint, WriteKind};
use crate::command::{Command, Goto, Send};
use crate::compiled::Graph;
use crate::constants::START;
use crate::error::GraphError;
use crate::interrupt::Interrupt;
use crate::node::NodeOutput;
use crate::state::{GraphState, StateUpdate};

/// A task output as stored in a pending write.
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
pub(crate) struct StoredOutput<U: StateUpdate> {
    update: Option<U>,
    goto: Vec<StoredGoto<U>>,
    #[serde(default)]
    batch: Option<Vec<U>>,
}

#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
enum StoredGoto<U: StateUpdate> {
    Node(String),
    Send(String, U),
}

/// A state as an update that writes every field (how `Send` inputs are stored).
pub(crate) fn state_to_update<S: GraphState>(state: &S) -> S::Update {
    state.clone().into_update()
}

/// The state an update builds from the default state.
pub(crate) fn update_to_state<S: GraphState>(update: S::Update) -> Result<S, String> {
    let mut state = S::default();
    state.apply(update).map_err(|e| e.to_string())?;
    Ok(state)
}

pub(crate) fn encode_output<S: GraphState>(output: &NodeOutput<S>) -> Result<Vec<u8>, String> {
    let stored: StoredOutput<S::Update> = match output {
        NodeOutput::Update(update) => StoredOutput {
            update: Some(update.clone()),
            goto: Vec::new(),
            batch: None,
        },
        NodeOutput::Batch(batch) => StoredOutput {
            update: None,
            goto: Vec::new(),
            batch: Some(batch.clone()),
        },
        NodeOutput::Command(command) => StoredOutput {
            update: command.update.clone(),
            goto: command
                .goto
                .iter()
                .map(|g| match g {
                    Goto::Node(name) => StoredGoto::Node(name.clone()),
                    Goto::Send(send) => {
                        StoredGoto::Send(send.node.clone(), state_to_update(&send.input))
                    }
                })
                .collect(),
            batch: None,
        },
    };
    codec::encode(&stored)
}

pub(crate) fn decode_output<S: GraphState>(bytes: &[u8]) -> Result<NodeOutput<S>, String> {
    let stored: StoredOutput<S::Update> = codec::decode(bytes)?;
    if let Some(batch) = stored.batch {
        return Ok(NodeOutput::Batch(batch));
    }
    if stored.goto.is_empty() {
        return Ok(NodeOutput::Update(stored.update.unwrap_or_default()));
    }
    let mut goto = Vec::with_capacity(stored.goto.len());
    for g in stored.goto {
        goto.push(match g {
            StoredGoto::Node(name) => Goto::Node(name),
            StoredGoto::Send(node, input) => Goto::Send(Send::new(node, update_to_state(input)?)),
        });
    }
    Ok(NodeOutput::Command(Command {
        update: stored.update,
        goto,
        resume: None,
    }))
}

/// A run's position restored from a checkpoint.
pub(crate) struct Restored<S: GraphState> {
    pub(crate) record: CheckpointRecord,
    pub(crate) state: S,
    pub(crate) versions: Vec<Option<String>>,
    pub(crate) caches: Vec<Option<FieldCache>>,
    pub(crate) pulls: Vec<usize>,
    pub(crate) pushes: Vec<(usize, S)>,
    pub(crate) joins: Vec<Vec<bool>>,
    /// The input of an `input` checkpoint that was not applied yet.
    pub(crate) pending_input: Option<S::Update>,
    /// Outputs of tasks that finished, by task id.
    pub(crate) outputs: HashMap<String, NodeOutput<S>>,
    /// Resume values by task id.
    pub(crate) resume: HashMap<String, Vec<serde_json::Value>>,
    /// Tasks paused on `interrupt()`, with what they asked.
    pub(crate) interrupted: Vec<(String, Vec<Interrupt>)>,
    /// Errors of tasks that failed, by task id.
    pub(crate) errors: HashMap<String, String>,
}

fn corrupt(record: &CheckpointRecord, detail: impl Into<String>) -> GraphError {
    GraphError::CorruptCheckpoint {
        thread_id: record.thread_id.clone(),
        checkpoint_id: record.id.clone(),
        detail: detail.into(),
    }
}

/// Rebuilds a run's position from a loaded checkpoint; `None` when there is none.
pub(crate) fn restore<S: GraphState>(
    graph: &Graph<S>,
    loaded: LoadedCheckpoint,
) -> Result<Option<Restored<S>>, GraphError> {
    let LoadedCheckpoint {
        record,
        blobs,
        writes,
    } = loaded;
    let Some(record) = record else {
        return Ok(None);
    };
    let body: Body = codec::decode(&record.body)
        .map_err(|e| corrupt(&record, format!("unreadable body: {e}")))?;
    if body.format != codec::FORMAT {
        return Err(corrupt(
            &record,
            format!(
                "format {} is not supported by this version (expected {})",
                body.format,
                codec::FORMAT
            ),
        ));
    }

    let fields = S::fields();
    let mut state = S::default();
    let mut versions = vec![None; fields.len()];
    let mut caches = vec![None; fields.len()];
    let by_key: HashMap<(String, String), &FieldBlob> = blobs
        .iter()
        .map(|b| ((b.field.clone(), b.version.clone()), b))
        .collect();
    for (field, version) in &record.versions {
        let Some(index) = fields.iter().position(|f| f.name == field) else {
            tracing::warn!(field, checkpoint = %record.id, "checkpoint has a field this state does not; ignored");
            continue;
        };
        let (bytes, cache) = codec::reconstruct(field, version, &by_key)
            .map_err(|e| corrupt(&record, format!("field `{field}`: {e}")))?;
        state
            .deserialize_field(index, &mut rmp_serde::Deserializer::new(&bytes[..]))
            .map_err(|e| {
                corrupt(
                    &record,
                    format!("field `{field}` does not decode into this state: {e}"),
                )
            })?;
        versions[index] = Some(version.clone());
        caches[index] = Some(cache);
    }

    let mut pulls = Vec::new();
    let mut pending_input = None;
    for name in &body.next {
        if name == START {
            let write = writes
                .iter()
                .find(|w| w.task_id == START && w.kind == WriteKind::Output)
                .ok_or_else(|| corrupt(&record, "input checkpoint without its input"))?;
            pending_input = Some(
                codec::decode::<S::Update>(&write.data)
                    .map_err(|e| corrupt(&record, format!("input does not decode: {e}")))?,
            );
            continue;
        }
        let index = graph.index.get(name).copied().ok_or_else(|| {
            corrupt(
                &record,
                format!("the checkpoint's next node `{name}` is not in this graph"),
            )
        })?;
        pulls.push(index);
    }
    let mut pushes = Vec::new();
    for (name, input) in &body.sends {
        let index = graph.index.get(name).copied().ok_or_else(|| {
            corrupt(
                &record,
                format!("a pending Send targets `{name}`, which is not in this graph"),
            )
        })?;
        let update = codec::decode::<S::Update>(&input.0)
            .map_err(|e| corrupt(&record, format!("Send input does not decode: {e}")))?;
        let input = update_to_state(update).map_err(|e| corrupt(&record, e))?;
        pushes.push((index, input));
    }
    let joins = if body.joins.len() == graph.joins.len()
        && body
            .joins
            .iter()
            .zip(&graph.joins)
            .all(|(seen, join)| seen.len() == join.sources)
    {
        body.joins
    } else {
        return Err(corrupt(
            &record,
            "the checkpoint's joins do not match this graph's (the graph changed shape)",
        ));
    };

    let mut outputs = HashMap::new();
    let mut resume: HashMap<String, Vec<serde_json::Value>> = HashMap::new();
    let mut interrupted = Vec::new();
    let mut errors = HashMap::new();
    for write in &writes {
        match write.kind {
            WriteKind::Output if write.task_id != START => {
                let output = decode_output::<S>(&write.data).map_err(|e| {
                    corrupt(
                        &record,
                        format!("output of task `{}` does not decode: {e}", write.task_id),
                    )
                })?;
                outputs.insert(write.task_id.clone(), output);
            }
            WriteKind::Output => {}
            WriteKind::Resume => {
                let values: Vec<serde_json::Value> = codec::decode(&write.data)
                    .map_err(|e| corrupt(&record, format!("resume values do not decode: {e}")))?;
                resume.insert(write.task_id.clone(), values);
            }
            WriteKind::Interrupt => {
                let list: Vec<Interrupt> = codec::decode(&write.data)
                    .map_err(|e| corrupt(&record, format!("interrupt does not decode: {e}")))?;
                interrupted.push((write.task_id.clone(), list));
            }
            WriteKind::Error => {
                let message: String = codec::decode(&write.data).unwrap_or_default();
                errors.insert(write.task_id.clone(), message);
            }
        }
    }
    interrupted.retain(|(task, _)| !outputs.contains_key(task));

    Ok(Some(Restored {
        record,
        state,
        versions,
        caches,
        pulls,
        pushes,
        joins,
        pending_input,
        outputs,
        resume,
        interrupted,
        errors,
    }))
}

/// The body of a checkpoint at a run's position.
pub(crate) fn encode_body<S: GraphState>(
    graph: &Graph<S>,
    pulls: &[usize],
    pushes: &[(usize, S)],
    joins: &[Vec<bool>],
    pending_input: bool,
) -> Result<Vec<u8>, String> {
    let mut next: Vec<usize> = pulls.to_vec();
    next.sort_unstable_by_key(|&n| graph.rank[n]);
    let mut names: Vec<String> = Vec::with_capacity(next.len() + 1);
    if pending_input {
        names.push(START.to_owned());
    }
    names.extend(next.iter().map(|&n| graph.names[n].to_string()));
    let mut sends = Vec::with_capacity(pushes.len());
    for (node, input) in pushes {
        sends.push((
            graph.names[*node].to_string(),
            Bytes(codec::encode(&state_to_update(input))?),
        ));
    }
    codec::encode(&Body {
        format: codec::FORMAT,
        next: names,
        sends,
        joins: joins.to_vec(),
        fields: S::fields().iter().map(|f| f.name.to_owned()).collect(),
    })
}

/// Task id of a step's task: the checkpoint the step starts from, plus the task's path.
pub(crate) fn task_id(checkpoint_id: &str, graph_name: &str, push_index: Option<usize>) -> String {
    match push_index {
        None => format!("{checkpoint_id}:pull:{graph_name}"),
        Some(i) => format!("{checkpoint_id}:push:{i}"),
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// A new time-ordered checkpoint id.
pub(crate) fn new_checkpoint_id() -> String {
    uuid::Uuid::now_v7().to_string()
}
