//! `stream(..., subgraphs=True)`: a subgraph's own parts, as LangGraph yields them.
//!
//! agent-core hands a subgraph's `values` and `updates` type-erased (a child may have another
//! state type), as the JSON of the child's `PyUpdate`; read back with `PyUpdate`'s own
//! `Deserialize` (whatever its format, it names its schema), they are the child's dicts again.
//! A child that pauses streams only an `updates` item `{"__interrupt__": [...]}`; LangGraph's
//! `values` mode shows the child's last state with `__interrupt__` added, so the last values
//! seen per namespace are kept here, and agent-core is asked for `updates` too when the caller
//! wants `values` of subgraphs (the items not asked for are dropped).

use std::collections::HashMap;

use agent_core::{INTERRUPT, Namespace, SubgraphPart};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::state::{PyState, PyUpdate};

/// One chunk of a subgraph, still without the GIL.
pub enum ChildChunk {
    /// `values`: its state (a `PyUpdate` of every slot set, as JSON).
    Values(serde_json::Value),
    /// `updates`: one of its nodes' update.
    Updates(String, serde_json::Value),
    /// `updates`: `{"__interrupt__": (Interrupt, ...)}` (`[{"value", "id"}]` as JSON).
    Interrupts(serde_json::Value),
    /// `values`: its last state with `__interrupt__` added.
    PausedValues(serde_json::Value, serde_json::Value),
}

/// What the caller asked for, and what the subgraphs last showed.
pub struct Children {
    /// `values` asked.
    values: bool,
    /// `updates` asked.
    updates: bool,
    /// The last `values` of each subgraph run, by namespace.
    last_values: HashMap<Namespace, serde_json::Value>,
}

impl Children {
    /// For a caller that asked for `values` and/or `updates`.
    pub fn new(values: bool, updates: bool) -> Self {
        Children {
            values,
            updates,
            last_values: HashMap::new(),
        }
    }

    /// The chunks a subgraph's part makes (none for a mode not asked).
    pub fn chunks(&mut self, ns: &Namespace, part: SubgraphPart) -> Vec<ChildChunk> {
        match part {
            SubgraphPart::Values { state } => {
                self.last_values.insert(ns.clone(), state.clone());
                if self.values {
                    vec![ChildChunk::Values(state)]
                } else {
                    Vec::new()
                }
            }
            SubgraphPart::Updates { node, update } if node == INTERRUPT => {
                let mut chunks = Vec::new();
                if self.updates {
                    chunks.push(ChildChunk::Interrupts(update.clone()));
                }
                if self.values
                    && let Some(state) = self.last_values.get(ns)
                {
                    chunks.push(ChildChunk::PausedValues(state.clone(), update));
                }
                chunks
            }
            SubgraphPart::Updates { node, update } if self.updates => {
                vec![ChildChunk::Updates(node, update)]
            }
            _ => Vec::new(),
        }
    }
}

/// A child's `PyUpdate` from its JSON.
fn update(json: serde_json::Value) -> PyResult<PyUpdate> {
    serde_json::from_value(json).map_err(|error| {
        pyo3::exceptions::PyRuntimeError::new_err(format!(
            "a subgraph's streamed state could not be read: {error}"
        ))
    })
}

/// A child's state dict from the JSON of its values (reducer keys never written show their
/// initial value, as in LangGraph).
fn values_dict(py: Python<'_>, json: serde_json::Value) -> PyResult<Bound<'_, PyDict>> {
    let update = update(json)?;
    let Some(schema) = update.schema.clone() else {
        return Ok(PyDict::new(py));
    };
    let mut state = PyState {
        schema: Some(schema.clone()),
        slots: Vec::new(),
    };
    for (slot, value) in update.writes {
        let slot = slot as usize;
        if state.slots.len() <= slot {
            state.slots.resize(slot + 1, None);
        }
        state.slots[slot] = Some(value);
    }
    state.to_dict(py, &schema)
}

/// `(Interrupt, ...)` from agent-core's `[{"value", "id"}]`.
fn interrupts<'py>(py: Python<'py>, json: &serde_json::Value) -> PyResult<Bound<'py, PyTuple>> {
    let class = py.import("agentgraph.types")?.getattr("Interrupt")?;
    let mut items = Vec::new();
    for item in json.as_array().into_iter().flatten() {
        let value = crate::scope::from_json(py, &item["value"])?;
        let id = item["id"].as_str().unwrap_or_default();
        items.push(class.call1((value, id))?);
    }
    PyTuple::new(py, items)
}

/// The chunk as Python: its mode and value.
pub fn to_py(py: Python<'_>, chunk: ChildChunk) -> PyResult<(&'static str, Bound<'_, PyAny>)> {
    Ok(match chunk {
        ChildChunk::Values(state) => ("values", values_dict(py, state)?.into_any()),
        ChildChunk::Updates(node, json) => {
            let update = update(json)?;
            let dict = PyDict::new(py);
            let value = match update.schema.clone() {
                Some(schema) => update.to_py(py, &schema)?,
                None => py.None().into_bound(py),
            };
            dict.set_item(node, value)?;
            ("updates", dict.into_any())
        }
        ChildChunk::Interrupts(json) => {
            let dict = PyDict::new(py);
            dict.set_item(INTERRUPT, interrupts(py, &json)?)?;
            ("updates", dict.into_any())
        }
        ChildChunk::PausedValues(state, json) => {
            let dict = values_dict(py, state)?;
            dict.set_item(INTERRUPT, interrupts(py, &json)?)?;
            ("values", dict.into_any())
        }
    })
}

/// LangGraph's namespace tuple: `()` for the root graph, `("node:<id>", ...)` below it.
pub fn namespace<'py>(py: Python<'py>, ns: &Namespace) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, ns.segments())
}
