//! A Python state schema as agent-core fields.
//!
//! agent-core's [`GraphState::fields`](agent_core::GraphState::fields) is static: one Rust
//! type, one list of fields. A Python program compiles many schemas into one process, so the
//! Python state is one Rust type with [`MAX_FIELDS`] generic *slots*: slots `0..64` are
//! last-value fields (agent-core rejects two writes to one in a step, LangGraph's
//! `InvalidUpdateError`), slots `64..128` are reducer fields (writes folded in task order by
//! the key's Python reducer). A [`Schema`] gives each key of the Python schema a slot of the
//! right kind; errors that name a slot are translated back to the key.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use agent_core::{FieldInfo, MAX_FIELDS, ReducerKind};
use pyo3::prelude::*;

use crate::value::PyValue;

/// Slots `0..LAST_VALUE_SLOTS` are last-value fields, the rest reducer fields.
pub const LAST_VALUE_SLOTS: usize = MAX_FIELDS / 2;

/// The static field list every Python state shares.
pub static FIELDS: LazyLock<Vec<FieldInfo>> = LazyLock::new(|| {
    (0..MAX_FIELDS)
        .map(|slot| {
            if slot < LAST_VALUE_SLOTS {
                FieldInfo {
                    name: format!("value_{slot}").leak(),
                    reducer: ReducerKind::Replace,
                    reducer_name: "replace",
                }
            } else {
                FieldInfo {
                    name: format!("reduced_{}", slot - LAST_VALUE_SLOTS).leak(),
                    reducer: ReducerKind::Custom,
                    reducer_name: "python",
                }
            }
        })
        .collect()
});

/// One key of the schema.
#[derive(Debug)]
pub struct Key {
    /// The key's name in the state dict.
    pub name: String,
    /// Its slot in [`FIELDS`].
    pub slot: usize,
    /// `reducer(current, update)`, for reducer keys.
    pub reducer: Option<Py<PyAny>>,
    /// The value before any write (LangGraph's `typ()` of a reducer channel, e.g. `[]`).
    pub initial: Option<PyValue>,
}

/// A compiled Python schema.
#[derive(Debug)]
pub struct Schema {
    /// Its id in the process-wide registry (updates read back from a checkpoint name it).
    pub id: u32,
    /// Keys in declaration order.
    pub keys: Vec<Key>,
    /// Key index by name.
    pub by_name: HashMap<String, usize>,
    /// Key index by slot.
    pub by_slot: Vec<Option<usize>>,
}

/// Every schema alive in the process, by id (weak: a dropped graph frees its schema).
static REGISTRY: Mutex<Vec<Weak<Schema>>> = Mutex::new(Vec::new());

impl Schema {
    /// Builds a schema from `(name, reducer or None, initial or None)` in declaration order.
    pub fn new(spec: Vec<(String, Option<Py<PyAny>>, Option<PyValue>)>) -> PyResult<Arc<Schema>> {
        let mut keys = Vec::with_capacity(spec.len());
        let mut by_name = HashMap::new();
        let mut by_slot = vec![None; MAX_FIELDS];
        let (mut last_value, mut reduced) = (0, LAST_VALUE_SLOTS);
        for (name, reducer, initial) in spec {
            let slot = if reducer.is_some() {
                reduced += 1;
                reduced - 1
            } else {
                last_value += 1;
                last_value - 1
            };
            if last_value > LAST_VALUE_SLOTS || reduced > MAX_FIELDS {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "a state schema may have at most {LAST_VALUE_SLOTS} keys without a reducer and {LAST_VALUE_SLOTS} with one"
                )));
            }
            by_slot[slot] = Some(keys.len());
            if by_name.insert(name.clone(), keys.len()).is_some() {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "the state schema has the key `{name}` twice"
                )));
            }
            keys.push(Key {
                name,
                slot,
                reducer,
                initial,
            });
        }
        let mut registry = REGISTRY.lock().map_err(|_| poisoned())?;
        registry.retain(|weak| weak.strong_count() > 0);
        let id = registry
            .iter()
            .filter_map(Weak::upgrade)
            .map(|schema| schema.id + 1)
            .max()
            .unwrap_or(0);
        let schema = Arc::new(Schema {
            id,
            keys,
            by_name,
            by_slot,
        });
        registry.push(Arc::downgrade(&schema));
        Ok(schema)
    }

    /// The schema registered under `id`, if its graph is alive.
    pub fn lookup(id: u32) -> Option<Arc<Schema>> {
        let registry = REGISTRY.lock().ok()?;
        registry
            .iter()
            .filter_map(Weak::upgrade)
            .find(|schema| schema.id == id)
    }

    /// The newest live schema whose keys are `keys` (name and slot, in order): how an update
    /// stored by another process finds its schema (ids are numbered per process).
    pub fn lookup_by_keys(keys: &[(String, u8)]) -> Option<Arc<Schema>> {
        let registry = REGISTRY.lock().ok()?;
        registry
            .iter()
            .rev()
            .filter_map(Weak::upgrade)
            .find(|schema| schema.has_keys(keys))
    }

    /// Whether this schema's keys are `keys` (name and slot, in order).
    pub fn has_keys(&self, keys: &[(String, u8)]) -> bool {
        self.keys.len() == keys.len()
            && self
                .keys
                .iter()
                .zip(keys)
                .all(|(key, (name, slot))| key.name == *name && key.slot == *slot as usize)
    }

    /// The key a slot holds.
    pub fn key_of_slot(&self, slot: usize) -> Option<&Key> {
        self.by_slot
            .get(slot)
            .copied()
            .flatten()
            .map(|i| &self.keys[i])
    }

    /// The key name an agent-core field name stands for (for error messages).
    pub fn key_of_field(&self, field: &str) -> Option<&str> {
        let slot = FIELDS.iter().position(|f| f.name == field)?;
        self.key_of_slot(slot).map(|key| key.name.as_str())
    }
}

fn poisoned() -> PyErr {
    pyo3::exceptions::PyRuntimeError::new_err("agentgraph's schema registry lock was poisoned")
}
