//! LangGraph's own checkpointers (any `BaseCheckpointSaver`: its `InMemorySaver`,
//! `SqliteSaver`, `PostgresSaver`, ...) as agent-core's [`Checkpointer`].
//!
//! agent-core hands a saver encoded field blobs (deltas on earlier versions, compressed);
//! LangGraph's savers keep LangGraph's checkpoint dict, values by state key. So this adapter
//! rebuilds each new field version's whole encoding
//! ([`field_value_bytes`](agent_core::checkpoint::field_value_bytes)), decodes it into the
//! Python value (the state's own decoding), and hands the saver the checkpoint with every
//! key's value; a LangGraph graph of the same schema then reads the thread. Loading goes the
//! other way: each value is encoded whole, as one full blob.
//!
//! The dict shape and LangGraph's method calls are in `agentgraph.checkpoint._langgraph`;
//! the saver's sync methods are called under the GIL from agent-core's threads.
//!
//! A delta needs its base's bytes: the adapter keeps each field's latest version per thread
//! (what a run builds on), and reads an older one back from the saver (the checkpoint whose
//! id is the version wrote it).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agent_core::checkpoint::{
    CheckpointMetadata, CheckpointRecord, FieldBlob, LoadedCheckpoint, PendingWrite, Versions,
    WriteKind, field_value_bytes,
};
use agent_core::{Checkpointer, GraphError, Interrupt, ListFilter};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict};

use crate::schema::{FIELDS, Schema};
use crate::value::PyValue;

/// The Python half.
const HELPERS: &str = "agentgraph.checkpoint._langgraph";

/// A LangGraph checkpointer under agent-core, for one compiled graph's schema.
pub struct LangGraphSaver {
    saver: Py<PyAny>,
    schema: Arc<Schema>,
    /// The graph's joins, by how many sources each waits for (a LangGraph checkpoint's body
    /// needs one entry each).
    joins: Vec<usize>,
    /// The latest version of each (thread, namespace, field) this adapter saw, whole.
    known: Mutex<HashMap<(String, String, String), Known>>,
}

/// One field version: its whole encoding and its value.
#[derive(Clone)]
struct Known {
    version: Arc<str>,
    bytes: Vec<u8>,
    value: Option<PyValue>,
}

/// One checkpoint as the Python half reads it: id, parent, step, created (ms), metadata
/// (JSON), values by key, versions by key, agent-core's stash (body, versions by field), the
/// nodes LangGraph would run next.
type Read = (
    String,
    Option<String>,
    i64,
    i64,
    String,
    Py<PyDict>,
    HashMap<String, String>,
    Option<(Vec<u8>, HashMap<String, String>)>,
    Vec<String>,
);

/// agent-core's checkpoint body (`codec::Body`, a map by field name) for a checkpoint
/// LangGraph wrote: its next nodes, no pending sends, joins with no source arrived.
#[derive(serde::Serialize)]
struct Body<'a> {
    format: u32,
    next: &'a [String],
    sends: [(); 0],
    joins: Vec<Vec<bool>>,
    fields: Vec<&'static str>,
    writers: [(); 0],
    input_sends: [(); 0],
}

/// The body format agent-core reads (`codec::FORMAT`).
const BODY_FORMAT: u32 = 1;

fn storage(detail: impl std::fmt::Display) -> GraphError {
    GraphError::Storage {
        backend: "langgraph",
        detail: detail.to_string(),
    }
}

fn helper<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    MODULE
        .get_or_try_init(py, || Ok::<_, PyErr>(py.import(HELPERS)?.unbind()))?
        .bind(py)
        .getattr(name)
}

/// A field's value decoded from its whole encoding (the state's own decoding).
fn decode(bytes: &[u8]) -> Result<Option<PyValue>, GraphError> {
    rmp_serde::from_slice(bytes).map_err(storage)
}

/// A value encoded whole, as the state encodes a field.
fn encode(value: &Option<PyValue>) -> Result<Vec<u8>, GraphError> {
    rmp_serde::to_vec(value).map_err(storage)
}

impl LangGraphSaver {
    /// Wraps `saver` for a graph of `schema`.
    pub fn new(saver: Py<PyAny>, schema: Arc<Schema>, joins: Vec<usize>) -> Self {
        LangGraphSaver {
            saver,
            schema,
            joins,
            known: Mutex::new(HashMap::new()),
        }
    }

    fn key_of(&self, field: &str) -> Option<String> {
        self.schema.key_of_field(field).map(str::to_owned)
    }

    fn field_of(&self, key: &str) -> Option<&'static str> {
        let index = *self.schema.by_name.get(key)?;
        Some(FIELDS[self.schema.keys[index].slot].name)
    }

    fn remember(&self, thread: &str, ns: &str, field: &str, known: Known) {
        if let Ok(mut map) = self.known.lock() {
            map.insert((thread.to_owned(), ns.to_owned(), field.to_owned()), known);
        }
    }

    fn recall(&self, thread: &str, ns: &str, field: &str, version: &str) -> Option<Known> {
        let map = self.known.lock().ok()?;
        map.get(&(thread.to_owned(), ns.to_owned(), field.to_owned()))
            .filter(|known| &*known.version == version)
            .cloned()
    }

    /// `field` at `version`, read back from the saver: the checkpoint whose id is the version
    /// wrote it.
    fn fetch(
        &self,
        thread: &str,
        ns: &str,
        field: &str,
        version: &str,
    ) -> Result<Known, GraphError> {
        let key = self
            .key_of(field)
            .ok_or_else(|| storage(format!("no state key for field `{field}`")))?;
        let value = Python::attach(|py| -> PyResult<Option<PyValue>> {
            let found = helper(py, "get")?.call1((self.saver.bind(py), thread, ns, version))?;
            if found.is_none() {
                return Ok(None);
            }
            let values = found.get_item(5)?;
            Ok(values.cast::<PyDict>()?.get_item(&key)?.map(PyValue::new))
        })
        .map_err(storage)?;
        let known = Known {
            version: Arc::from(version),
            bytes: encode(&value)?,
            value,
        };
        self.remember(thread, ns, field, known.clone());
        Ok(known)
    }

    fn value_at(
        &self,
        thread: &str,
        ns: &str,
        field: &str,
        version: &str,
    ) -> Result<Known, GraphError> {
        match self.recall(thread, ns, field, version) {
            Some(known) => Ok(known),
            None => self.fetch(thread, ns, field, version),
        }
    }

    /// A new blob's whole value, its delta base looked up when it has one.
    fn rebuild(&self, thread: &str, ns: &str, blob: &FieldBlob) -> Result<Known, GraphError> {
        let mut chain = vec![blob.clone()];
        if let Some((base, _)) = &blob.base {
            let known = self.value_at(thread, ns, &blob.field, base)?;
            chain.push(FieldBlob {
                field: blob.field.clone(),
                version: known.version.clone(),
                base: None,
                data: known.bytes,
            });
        }
        let bytes = field_value_bytes(&blob.field, &blob.version, &chain).map_err(storage)?;
        Ok(Known {
            version: blob.version.clone(),
            value: decode(&bytes)?,
            bytes,
        })
    }

    fn record(
        &self,
        thread: &str,
        ns: &str,
        read: &Read,
    ) -> Result<(CheckpointRecord, Vec<(String, String)>), GraphError> {
        let (id, parent, step, created, metadata, _, by_key, stash, next) = read;
        let (body, fields): (Vec<u8>, Vec<(String, String)>) = match stash {
            Some((body, fields)) => (
                body.clone(),
                fields.iter().map(|(f, v)| (f.clone(), v.clone())).collect(),
            ),
            // Written by LangGraph: its values by key, agent-core's body made up.
            None => {
                let fields = by_key
                    .iter()
                    .filter_map(|(key, version)| {
                        Some((self.field_of(key)?.to_owned(), version.clone()))
                    })
                    .collect();
                let body = Body {
                    format: BODY_FORMAT,
                    next,
                    sends: [],
                    joins: self.joins.iter().map(|&n| vec![false; n]).collect(),
                    fields: FIELDS.iter().map(|f| f.name).collect(),
                    writers: [],
                    input_sends: [],
                };
                (rmp_serde::to_vec_named(&body).map_err(storage)?, fields)
            }
        };
        let metadata: serde_json::Value = serde_json::from_str(metadata).map_err(storage)?;
        let versions: Versions = fields
            .iter()
            .map(|(f, v)| (f.as_str(), v.as_str()))
            .collect();
        let record = CheckpointRecord {
            thread_id: Arc::from(thread),
            ns: Arc::from(ns),
            id: Arc::from(id.as_str()),
            parent_id: parent.as_deref().map(Arc::from),
            step: *step,
            created_at_ms: *created,
            metadata: CheckpointMetadata::from_json(&metadata),
            versions,
            body,
        };
        Ok((record, fields))
    }
}

#[async_trait::async_trait]
impl Checkpointer for LangGraphSaver {
    fn backend(&self) -> &'static str {
        "langgraph"
    }

    async fn put(&self, record: &CheckpointRecord, blobs: &[FieldBlob]) -> Result<(), GraphError> {
        let (thread, ns) = (&*record.thread_id, &*record.ns);
        let mut new_fields = Vec::with_capacity(blobs.len());
        for blob in blobs {
            let known = self.rebuild(thread, ns, blob)?;
            self.remember(thread, ns, &blob.field, known);
            new_fields.push(blob.field.to_string());
        }
        let mut values = Vec::new();
        for (field, version) in record.versions.iter() {
            let Some(key) = self.key_of(field) else {
                return Err(storage(format!("field `{field}` has no state key")));
            };
            values.push((
                key,
                version.to_owned(),
                self.value_at(thread, ns, field, version)?,
            ));
        }
        Python::attach(|py| -> PyResult<()> {
            let by_key = PyDict::new(py);
            let versions = PyDict::new(py);
            for (key, version, known) in &values {
                if let Some(value) = &known.value {
                    by_key.set_item(key, value.bind(py))?;
                }
                versions.set_item(key, version)?;
            }
            let fields = PyDict::new(py);
            for (field, version) in record.versions.iter() {
                fields.set_item(field, version)?;
            }
            let new_keys: Vec<String> = new_fields.iter().filter_map(|f| self.key_of(f)).collect();
            helper(py, "put")?.call1((
                self.saver.bind(py),
                thread,
                ns,
                &*record.id,
                record.parent_id.as_deref(),
                record.created_at_ms,
                record.metadata.to_json().to_string(),
                by_key,
                versions,
                new_keys,
                PyBytes::new(py, &record.body),
                fields,
            ))?;
            Ok(())
        })
        .map_err(storage)
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), GraphError> {
        Python::attach(|py| -> PyResult<()> {
            let list: Vec<(String, String, i16, Bound<'_, PyBytes>)> = writes
                .iter()
                .map(|w| {
                    (
                        w.task_id.clone(),
                        w.node.clone(),
                        w.kind.code(),
                        PyBytes::new(py, &w.data),
                    )
                })
                .collect();
            helper(py, "put_writes")?.call1((
                self.saver.bind(py),
                thread_id,
                ns,
                checkpoint_id,
                list,
            ))?;
            Ok(())
        })
        .map_err(storage)
    }

    async fn get(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<LoadedCheckpoint, GraphError> {
        type Found = (
            Read,
            Vec<(String, String, i64, Vec<u8>)>,
            Vec<(String, String, Vec<String>)>,
        );
        let found: Option<Found> = Python::attach(|py| -> PyResult<Option<Found>> {
            let found =
                helper(py, "get")?.call1((self.saver.bind(py), thread_id, ns, checkpoint_id))?;
            if found.is_none() {
                return Ok(None);
            }
            let read: Read = found
                .get_item(pyo3::types::PySlice::new(py, 0, 9, 1))?
                .extract()?;
            let writes = found.get_item(9)?.extract()?;
            let interrupts = found.get_item(10)?.extract()?;
            Ok(Some((read, writes, interrupts)))
        })
        .map_err(storage)?;
        let Some((read, writes, interrupts)) = found else {
            return Ok(LoadedCheckpoint::default());
        };
        let (record, fields) = self.record(thread_id, ns, &read)?;
        let values = Python::attach(|py| -> PyResult<Vec<(String, String, Option<PyValue>)>> {
            let dict = read.5.bind(py);
            let mut out = Vec::with_capacity(fields.len());
            for (field, version) in &fields {
                let value = match self.key_of(field) {
                    Some(key) => dict.get_item(key)?.map(PyValue::new),
                    None => None,
                };
                out.push((field.clone(), version.clone(), value));
            }
            Ok(out)
        })
        .map_err(storage)?;
        let mut blobs = Vec::with_capacity(values.len());
        for (field, version, value) in values {
            let bytes = encode(&value)?;
            let version: Arc<str> = Arc::from(version);
            self.remember(
                thread_id,
                ns,
                &field,
                Known {
                    version: version.clone(),
                    bytes: bytes.clone(),
                    value,
                },
            );
            blobs.push(FieldBlob {
                field: Cow::Owned(field),
                version,
                base: None,
                data: bytes,
            });
        }
        let mut writes: Vec<PendingWrite> = writes
            .into_iter()
            .filter_map(|(task_id, node, kind, data)| {
                Some(PendingWrite {
                    task_id,
                    node,
                    kind: WriteKind::from_code(kind)?,
                    data,
                })
            })
            .collect();
        // LangGraph's own interrupts on a checkpoint it wrote, as agent-core stores its.
        for (task_id, node, values) in interrupts {
            let list = values
                .iter()
                .enumerate()
                .map(|(index, value)| {
                    Ok(Interrupt {
                        id: format!("{task_id}#{index}"),
                        node: node.clone(),
                        value: serde_json::from_str(value).map_err(storage)?,
                    })
                })
                .collect::<Result<Vec<_>, GraphError>>()?;
            writes.push(PendingWrite {
                task_id,
                node,
                kind: WriteKind::Interrupt,
                data: rmp_serde::to_vec_named(&list).map_err(storage)?,
            });
        }
        Ok(LoadedCheckpoint {
            record: Some(record),
            blobs,
            writes,
        })
    }

    async fn list(
        &self,
        thread_id: &str,
        ns: &str,
        filter: &ListFilter,
    ) -> Result<Vec<CheckpointRecord>, GraphError> {
        let metadata = serde_json::to_string(&filter.metadata).map_err(storage)?;
        let reads: Vec<Read> = Python::attach(|py| -> PyResult<Vec<Read>> {
            helper(py, "list_")?
                .call1((
                    self.saver.bind(py),
                    thread_id,
                    ns,
                    filter.before.as_deref(),
                    filter.limit,
                    metadata,
                ))?
                .extract()
        })
        .map_err(storage)?;
        let mut records = Vec::with_capacity(reads.len());
        for read in &reads {
            records.push(self.record(thread_id, ns, read)?.0);
        }
        Ok(records)
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), GraphError> {
        Python::attach(|py| -> PyResult<()> {
            helper(py, "delete_thread")?.call1((self.saver.bind(py), thread_id))?;
            Ok(())
        })
        .map_err(storage)?;
        if let Ok(mut map) = self.known.lock() {
            map.retain(|(thread, _, _), _| thread != thread_id);
        }
        Ok(())
    }

    async fn prune(
        &self,
        _thread_id: &str,
        _ns: &str,
        _keep_last: usize,
    ) -> Result<usize, GraphError> {
        Err(storage(
            "pruning is not offered through a LangGraph checkpointer",
        ))
    }

    async fn keep_latest(&self, _thread_id: &str) -> Result<usize, GraphError> {
        Err(storage(
            "pruning is not offered through a LangGraph checkpointer",
        ))
    }

    async fn replace_writes(
        &self,
        _thread_id: &str,
        _ns: &str,
        _checkpoint_id: &str,
        _writes: &[PendingWrite],
    ) -> Result<(), GraphError> {
        Err(storage(
            "replacing a checkpoint's writes is not offered through a LangGraph checkpointer",
        ))
    }

    async fn delete_for_runs(
        &self,
        _thread_id: &str,
        _run_ids: &[&str],
    ) -> Result<usize, GraphError> {
        Err(storage(
            "delete_for_runs is not offered through a LangGraph checkpointer",
        ))
    }
}
