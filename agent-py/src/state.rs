//! The Python state as an agent-core [`GraphState`]: values by slot, reducers from the schema.

use std::sync::Arc;

use agent_core::{FieldInfo, FieldSet, GraphState, ReducerError, StateDefault};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::{Deserialize, Serialize};

use crate::schema::{FIELDS, LAST_VALUE_SLOTS, Schema};
use crate::value::PyValue;

/// A graph's state: one optional Python object per slot.
///
/// It starts without a schema (agent-core builds initial states with
/// [`StateDefault::default`], which takes no argument); the first update applied brings it.
#[derive(Clone, Debug, Default)]
pub struct PyState {
    pub(crate) schema: Option<Arc<Schema>>,
    pub(crate) slots: Vec<Option<PyValue>>,
}

/// A node's partial update: the slots it writes, in the order written.
#[derive(Clone, Debug, Default)]
pub struct PyUpdate {
    pub(crate) schema: Option<Arc<Schema>>,
    pub(crate) writes: Vec<(u8, PyValue)>,
    /// Read from the node cache rather than written by the node running (the `updates`
    /// stream says so, as LangGraph does); not stored.
    pub(crate) cached: bool,
}

/// A stored update names its schema by id and by its keys (name and slot): ids are numbered
/// per process, so an update another process stored (a finished task's output next to an
/// interrupted sibling, a pending input) finds the same schema here by its keys. Updates
/// stored before the keys were added (two elements) are read by id.
impl Serialize for PyUpdate {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let keys: Option<Vec<(&str, u8)>> = self.schema.as_ref().map(|schema| {
            schema
                .keys
                .iter()
                .map(|key| (key.name.as_str(), key.slot as u8))
                .collect()
        });
        (self.schema.as_ref().map(|s| s.id), &self.writes, keys).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for PyUpdate {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::{Error, SeqAccess, Visitor};
        type Keys = Vec<(String, u8)>;
        struct Stored(Option<u32>, Vec<(u8, PyValue)>, Option<Keys>);
        struct StoredVisitor;
        impl<'de> Visitor<'de> for StoredVisitor {
            type Value = Stored;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a stored update (schema id, writes, schema keys)")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Stored, A::Error> {
                let id = seq
                    .next_element()?
                    .ok_or_else(|| A::Error::invalid_length(0, &self))?;
                let writes = seq
                    .next_element()?
                    .ok_or_else(|| A::Error::invalid_length(1, &self))?;
                let keys = seq.next_element::<Option<Keys>>()?.flatten();
                Ok(Stored(id, writes, keys))
            }
        }
        let Stored(id, writes, keys) = deserializer.deserialize_seq(StoredVisitor)?;
        let schema =
            match (id, keys) {
                (None, _) => None,
                (Some(id), Some(keys)) => Some(
                    Schema::lookup(id)
                        .filter(|schema| schema.has_keys(&keys))
                        .or_else(|| Schema::lookup_by_keys(&keys))
                        .ok_or_else(|| {
                            D::Error::custom(
                                "no live graph has the state schema this update was stored with",
                            )
                        })?,
                ),
                (Some(id), None) => Some(Schema::lookup(id).ok_or_else(|| {
                    D::Error::custom(format!("no live graph has state schema {id}"))
                })?),
            };
        Ok(PyUpdate {
            schema,
            writes,
            cached: false,
        })
    }
}

impl StateDefault for PyState {
    fn default() -> Self {
        Default::default()
    }
}

impl PyState {
    /// The value of a slot, or its key's initial value.
    fn value(&self, schema: &Schema, slot: usize) -> Option<PyValue> {
        match self.slots.get(slot).cloned().flatten() {
            Some(value) => Some(value),
            None => schema.key_of_slot(slot).and_then(|key| key.initial.clone()),
        }
    }

    /// The state as LangGraph shows it: a dict of the keys that have a value, in schema order.
    pub fn to_dict<'py>(&self, py: Python<'py>, schema: &Schema) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for key in &schema.keys {
            if let Some(value) = self.value(schema, key.slot) {
                dict.set_item(&key.name, value.bind(py))?;
            }
        }
        Ok(dict)
    }
}

impl PyUpdate {
    /// The update a dict writes; keys outside the schema are ignored, as LangGraph does.
    pub fn from_dict(schema: &Arc<Schema>, dict: &Bound<'_, PyDict>) -> PyResult<PyUpdate> {
        let mut writes = Vec::with_capacity(dict.len());
        for (key, value) in dict.iter() {
            let name: String = key.extract()?;
            if let Some(&index) = schema.by_name.get(&name) {
                writes.push((schema.keys[index].slot as u8, PyValue::new(value)));
            }
        }
        Ok(PyUpdate {
            schema: Some(schema.clone()),
            writes,
            cached: false,
        })
    }

    /// An update of `(key, value)` pairs, a key possibly written more than once (each write
    /// goes through the key's reducer in turn, as LangGraph's `Command(update=[...])`); a key
    /// without a reducer written twice is LangGraph's `InvalidUpdateError`.
    pub fn from_pairs(schema: &Arc<Schema>, pairs: &Bound<'_, PyAny>) -> PyResult<PyUpdate> {
        let mut writes = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for pair in pairs.try_iter()? {
            let (name, value): (String, Bound<'_, PyAny>) = pair?.extract()?;
            if let Some(&index) = schema.by_name.get(&name) {
                let key = &schema.keys[index];
                if !seen.insert(key.slot) && key.reducer.is_none() {
                    return Err(crate::errors::error_class(
                        pairs.py(),
                        "InvalidUpdateError",
                        format!(
                            "At key '{name}': Can receive only one value per step. Use an Annotated key to handle multiple values."
                        ),
                    ));
                }
                writes.push((key.slot as u8, PyValue::new(value)));
            }
        }
        Ok(PyUpdate {
            schema: Some(schema.clone()),
            writes,
            cached: false,
        })
    }

    /// The update as LangGraph's `updates` mode shows it (`None` when it writes nothing; a
    /// list of one-key dicts, a write each, when it writes a key more than once).
    pub fn to_py<'py>(&self, py: Python<'py>, schema: &Schema) -> PyResult<Bound<'py, PyAny>> {
        if self.writes.is_empty() {
            return Ok(py.None().into_bound(py));
        }
        let mut seen = std::collections::HashSet::new();
        let repeated = self.writes.iter().any(|(slot, _)| !seen.insert(*slot));
        if repeated {
            let list = pyo3::types::PyList::empty(py);
            for (slot, value) in &self.writes {
                if let Some(key) = schema.key_of_slot(*slot as usize) {
                    let dict = PyDict::new(py);
                    dict.set_item(&key.name, value.bind(py))?;
                    list.append(dict)?;
                }
            }
            return Ok(list.into_any());
        }
        let dict = PyDict::new(py);
        for (slot, value) in &self.writes {
            if let Some(key) = schema.key_of_slot(*slot as usize) {
                dict.set_item(&key.name, value.bind(py))?;
            }
        }
        Ok(dict.into_any())
    }
}

impl GraphState for PyState {
    type Update = PyUpdate;

    fn fields() -> &'static [FieldInfo] {
        &FIELDS
    }

    fn writes(update: &PyUpdate) -> FieldSet {
        let mut set = FieldSet::EMPTY;
        for (slot, _) in &update.writes {
            set.insert(*slot as usize);
        }
        set
    }

    fn apply(&mut self, update: PyUpdate) -> Result<(), ReducerError> {
        let Some(schema) = update.schema.or_else(|| self.schema.clone()) else {
            return Ok(());
        };
        if self.schema.is_none() {
            self.schema = Some(schema.clone());
        }
        for (slot, value) in update.writes {
            let slot = slot as usize;
            if self.slots.len() <= slot {
                self.slots.resize(slot + 1, None);
            }
            let reducer = schema
                .key_of_slot(slot)
                .and_then(|key| key.reducer.as_ref());
            let next = match (reducer, self.value(&schema, slot)) {
                (Some(reducer), Some(current)) if slot >= LAST_VALUE_SLOTS => {
                    Python::attach(|py| -> PyResult<PyValue> {
                        let out = reducer.bind(py).call1((current.bind(py), value.bind(py)))?;
                        Ok(PyValue::new(out))
                    })
                    .map_err(|error| ReducerError {
                        field: FIELDS[slot].name,
                        reducer: "python",
                        source: Box::new(error),
                    })?
                }
                _ => value,
            };
            self.slots[slot] = Some(next);
        }
        Ok(())
    }

    fn into_update(self) -> PyUpdate {
        let writes = self
            .slots
            .into_iter()
            .enumerate()
            .filter_map(|(slot, value)| value.map(|v| (slot as u8, v)))
            .collect();
        PyUpdate {
            schema: self.schema,
            writes,
            cached: false,
        }
    }

    fn serialize_field<S: serde::Serializer>(
        &self,
        index: usize,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        self.slots
            .get(index)
            .cloned()
            .flatten()
            .serialize(serializer)
    }

    fn deserialize_field<'de, D: serde::Deserializer<'de>>(
        &mut self,
        index: usize,
        deserializer: D,
    ) -> Result<(), D::Error> {
        let value: Option<PyValue> = Deserialize::deserialize(deserializer)?;
        if self.slots.len() <= index {
            self.slots.resize(index + 1, None);
        }
        self.slots[index] = value;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::LAST_VALUE_SLOTS;

    fn schema(py: Python<'_>) -> Arc<Schema> {
        let add = py.import("operator").unwrap().getattr("add").unwrap();
        let empty = PyValue::new(pyo3::types::PyList::empty(py).into_any());
        Schema::new(vec![
            ("topic".into(), None, None),
            ("notes".into(), Some(add.unbind()), Some(empty)),
            ("other".into(), None, None),
        ])
        .unwrap()
    }

    #[test]
    fn keys_take_slots_of_their_kind() {
        Python::initialize();
        Python::attach(|py| {
            let schema = schema(py);
            let slots: Vec<usize> = schema.keys.iter().map(|k| k.slot).collect();
            assert_eq!(slots, [0, LAST_VALUE_SLOTS, 1]);
            assert_eq!(schema.key_of_field("reduced_0"), Some("notes"));
            assert_eq!(schema.key_of_field("value_1"), Some("other"));
            assert!(PyState::last_value_fields().contains(0));
            assert!(!PyState::last_value_fields().contains(LAST_VALUE_SLOTS));
        });
    }

    #[test]
    fn reducer_keys_fold_from_their_initial_value() {
        Python::initialize();
        Python::attach(|py| {
            let schema = schema(py);
            let update = |code: &str| {
                let dict = py
                    .eval(&std::ffi::CString::new(code).unwrap(), None, None)
                    .unwrap();
                PyUpdate::from_dict(&schema, dict.cast::<PyDict>().unwrap()).unwrap()
            };
            let mut state = <PyState as StateDefault>::default();
            // A reducer key shows its initial value before any write, as LangGraph's.
            assert_eq!(
                state.to_dict(py, &schema).unwrap().to_string(),
                "{'notes': []}"
            );
            state
                .apply(update("{'topic': 'a', 'notes': [1], 'unknown': 0}"))
                .unwrap();
            state.apply(update("{'notes': [2], 'topic': 'b'}")).unwrap();
            let out = state.to_dict(py, &schema).unwrap();
            assert_eq!(out.to_string(), "{'topic': 'b', 'notes': [1, 2]}");
            let failing = update("{'notes': 3}");
            let error = state.apply(failing).unwrap_err();
            assert_eq!(error.field, "reduced_0");
        });
    }

    #[test]
    fn an_update_survives_serialization() {
        Python::initialize();
        let (bytes, expected) = Python::attach(|py| {
            crate::value::testing::stand_in_serde(py);
            let schema = schema(py);
            let dict = PyDict::new(py);
            dict.set_item("topic", "t").unwrap();
            let update = PyUpdate::from_dict(&schema, &dict).unwrap();
            (rmp_serde::to_vec(&update).unwrap(), schema)
        });
        let back: PyUpdate = rmp_serde::from_slice(&bytes).unwrap();
        Python::attach(|py| {
            assert_eq!(back.schema.as_ref().map(|s| s.id), Some(expected.id));
            assert_eq!(
                back.to_py(py, &expected).unwrap().to_string(),
                "{'topic': 't'}"
            );
        });
    }

    #[test]
    fn an_update_from_another_process_finds_its_schema_by_keys() {
        Python::initialize();
        let (schema, keys, writes) = Python::attach(|py| {
            crate::value::testing::stand_in_serde(py);
            let schema = schema(py);
            let keys: Vec<(String, u8)> = schema
                .keys
                .iter()
                .map(|k| (k.name.clone(), k.slot as u8))
                .collect();
            let writes = vec![(0u8, PyValue::new("t".into_pyobject(py).unwrap().into_any()))];
            (schema, keys, writes)
        });
        // Another process numbered its schema differently: found by its keys.
        let bytes = rmp_serde::to_vec(&(Some(u32::MAX), &writes, Some(&keys))).unwrap();
        let back: PyUpdate = rmp_serde::from_slice(&bytes).unwrap();
        assert!(back.schema.as_ref().is_some_and(|s| s.has_keys(&keys)));
        Python::attach(|py| {
            assert_eq!(
                back.to_py(py, &schema).unwrap().to_string(),
                "{'topic': 't'}"
            );
        });
        // Stored before the keys: read by id.
        let bytes = rmp_serde::to_vec(&(Some(schema.id), &writes)).unwrap();
        let back: PyUpdate = rmp_serde::from_slice(&bytes).unwrap();
        assert_eq!(back.schema.map(|s| s.id), Some(schema.id));
        // Keys no live schema has: an error, not another graph's schema.
        let other = vec![("nobody".to_owned(), 0u8)];
        let bytes = rmp_serde::to_vec(&(Some(schema.id), &writes, Some(&other))).unwrap();
        assert!(rmp_serde::from_slice::<PyUpdate>(&bytes).is_err());
    }
}
