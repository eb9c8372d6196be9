//! Restoring a run's position from a loaded checkpoint: its state (each field rebuilt from
//! its blob and delta chain), what runs next, and the pending writes of its step (finished
//! tasks' outputs, resume values, interrupts, errors). What does not decode ends in
//! `CorruptCheckpoint`.

use std::collections::HashMap;
use std::sync::Arc;

use crate::checkpoint::codec::{self, Body, FieldCache};
use crate::checkpoint::interning::{self, Interner, Resolver};
use crate::checkpoint::{CheckpointRecord, FieldBlob, LoadedCheckpoint, WriteKind};
use crate::command::SendArg;
use crate::compiled::Graph;
use crate::constants::START;
use crate::error::GraphError;
use crate::interrupt::Interrupt;
use crate::state::GraphState;

use super::super::runner::TaskWrites;
use super::task_writes::{decode_input, decode_writes, update_to_state};

/// A run's position restored from a checkpoint.
pub(crate) struct Restored<S: GraphState> {
    pub(crate) record: CheckpointRecord,
    pub(crate) state: S,
    pub(crate) versions: Vec<Option<Arc<str>>>,
    pub(crate) caches: Vec<Option<FieldCache>>,
    /// The table of shared values, numbered as stored.
    pub(crate) interner: Interner,
    pub(crate) pulls: Vec<usize>,
    pub(crate) pushes: Vec<(usize, SendArg<S>)>,
    pub(crate) joins: Vec<Vec<bool>>,
    /// The input of an `input` checkpoint that was not applied yet.
    pub(crate) pending_input: Option<S::Update>,
    /// Writes of tasks that finished, by task id.
    pub(crate) outputs: HashMap<String, TaskWrites<S>>,
    /// Resume values by task id.
    pub(crate) resume: HashMap<String, Vec<serde_json::Value>>,
    /// Tasks paused on `interrupt()`, with what they asked.
    pub(crate) interrupted: Vec<(String, Vec<Interrupt>)>,
    /// Errors of tasks that failed, by task id.
    pub(crate) errors: HashMap<String, String>,
    /// The nodes whose writes made the checkpoint's step.
    pub(crate) writers: Vec<String>,
}

fn corrupt(record: &CheckpointRecord, detail: impl Into<String>) -> GraphError {
    GraphError::CorruptCheckpoint {
        thread_id: record.thread_id.to_string(),
        checkpoint_id: record.id.to_string(),
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
    let mut body: Body = codec::decode(&record.body)
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
    let by_key = codec::blob_index(&blobs);
    let mut resolver = shared_table(&record, &by_key)?;
    interning::decoding(&mut resolver, || {
        for (field, version) in record.versions.entries() {
            let (field, version): (&str, &Arc<str>) = (field, version);
            if field == interning::FIELD {
                continue;
            }
            let Some(index) = fields.iter().position(|f| f.name == field) else {
                tracing::warn!(field, checkpoint = %record.id, "checkpoint has a field this state does not; ignored");
                continue;
            };
            let (bytes, cache) = codec::reconstruct(field, version, &by_key)
                .map_err(|e| corrupt(&record, format!("field `{field}`: {e}")))?;
            let _nesting = crate::checkpoint::nesting::enter(&bytes)
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
        Ok::<_, GraphError>(())
    })?;

    let mut pulls = Vec::new();
    let mut pending_input = None;
    for name in &body.next {
        if name == START {
            let write = writes
                .iter()
                .find(|w| w.task_id == START && w.kind == WriteKind::Output)
                .ok_or_else(|| corrupt(&record, "input checkpoint without its input"))?;
            pending_input = Some(
                interning::decode_with_table::<S::Update>(&write.data, Some(&resolver))
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
    for (position, (name, input)) in body.sends.iter().enumerate() {
        let index = graph.index.get(name).copied().ok_or_else(|| {
            corrupt(
                &record,
                format!("a pending Send targets `{name}`, which is not in this graph"),
            )
        })?;
        let arg = if body.input_sends.contains(&(position as u32)) {
            let lookup = |node: &str| graph.input_of(node);
            decode_input::<S>(&lookup, name.clone(), &input.0)
                .map_err(|e| corrupt(&record, e))?
                .arg
        } else {
            let update = interning::decode_with_table::<S::Update>(&input.0, None)
                .map_err(|e| corrupt(&record, format!("Send input does not decode: {e}")))?;
            SendArg::State(update_to_state(update).map_err(|e| corrupt(&record, e))?)
        };
        pushes.push((index, arg));
    }
    let joins = if body.joins.len() == graph.joins.len()
        && body
            .joins
            .iter()
            .zip(&graph.joins)
            .all(|(seen, join)| seen.len() == join.sources)
    {
        std::mem::take(&mut body.joins)
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
                // The node is set from the task when the writes are used.
                let node = graph.index.get(&write.node).copied().unwrap_or_default();
                let output =
                    decode_writes::<S>(&|n| graph.input_of(n), node, &write.data, Some(&resolver))
                        .map_err(|e| {
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
    let interner = resolver.into_interner();

    Ok(Some(Restored {
        record,
        state,
        versions,
        caches,
        interner,
        pulls,
        pushes,
        joins,
        pending_input,
        outputs,
        resume,
        interrupted,
        errors,
        writers: body.writers,
    }))
}

/// The checkpoint's table of shared values (empty when it stored none).
pub(crate) fn shared_table(
    record: &CheckpointRecord,
    blobs: &HashMap<(&str, &str), &FieldBlob>,
) -> Result<Resolver, GraphError> {
    let Some(version) = record.versions.get_shared(interning::FIELD) else {
        return Ok(Resolver::empty());
    };
    codec::reconstruct(interning::FIELD, version, blobs)
        .and_then(|(bytes, _)| Resolver::new(bytes, Some(version.clone())))
        .map_err(|e| corrupt(record, format!("the table of shared values: {e}")))
}
