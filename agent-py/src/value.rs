//! A Python object as a channel value: shared, never copied, serialized only for checkpoints.
//!
//! Values stay Python objects for the whole run (nodes get back the very objects they wrote,
//! as in LangGraph), so the executor's clones of the state are reference-count bumps on an
//! `Arc`, with no GIL. Only a checkpointer (or the `events` stream mode) serializes them, as
//! LangGraph's savers do: `(type, bytes)` from the process's serializer
//! (`agentgraph.checkpoint.serde`, LangGraph's `JsonPlusSerializer` format by default), so
//! what agent-core stores is what LangGraph's own serializer reads. Values stored before
//! (bare pickle bytes) still load.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyBytes;
use serde::ser::SerializeTuple;

/// The module holding the process's serializer (`_dumps`, `_loads`).
const SERDE: &str = "agentgraph.checkpoint.serde";

/// A Python object held by the Rust state.
#[derive(Clone, Debug)]
pub struct PyValue(pub Arc<Py<PyAny>>);

impl PyValue {
    /// Wraps a Python object.
    pub fn new(object: Bound<'_, PyAny>) -> Self {
        PyValue(Arc::new(object.unbind()))
    }

    /// The object, for a caller that holds the GIL.
    pub fn bind<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.0.bind(py).clone()
    }
}

/// `obj` as the process's serializer writes it: LangGraph's `(type, bytes)`.
pub fn dumps_typed(obj: &Bound<'_, PyAny>) -> PyResult<(String, Vec<u8>)> {
    static DUMPS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let py = obj.py();
    let (type_, data): (String, Bound<'_, PyBytes>) = DUMPS
        .import(py, SERDE, "_dumps")?
        .call1((obj,))?
        .extract()?;
    Ok((type_, data.as_bytes().to_vec()))
}

/// A `(type, bytes)` pair read back with the process's serializer.
pub fn loads_typed<'py>(py: Python<'py>, type_: &str, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    static LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    LOADS
        .import(py, SERDE, "_loads")?
        .call1((type_, PyBytes::new(py, data)))
}

impl serde::Serialize for PyValue {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (type_, data) =
            Python::attach(|py| dumps_typed(self.0.bind(py))).map_err(serde::ser::Error::custom)?;
        let mut pair = serializer.serialize_tuple(2)?;
        pair.serialize_element(&type_)?;
        pair.serialize_element(&Bytes(&data))?;
        pair.end()
    }
}

/// Bytes serialized as one binary value (msgpack bin), not a list of numbers.
struct Bytes<'a>(&'a [u8]);

impl serde::Serialize for Bytes<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self.0)
    }
}

impl<'de> serde::Deserialize<'de> for PyValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let stored: Stored = serde::Deserialize::deserialize(deserializer)?;
        Python::attach(|py| -> PyResult<PyValue> {
            let object = match stored {
                Stored::Typed(type_, data) => loads_typed(py, &type_, &data)?,
                Stored::Pickle(data) => py
                    .import("pickle")?
                    .call_method1("loads", (PyBytes::new(py, &data),))?,
            };
            Ok(PyValue::new(object))
        })
        .map_err(serde::de::Error::custom)
    }
}

/// A stored value: a serializer's `(type, bytes)`, or bare bytes from an older version
/// (pickle).
enum Stored {
    Typed(String, Vec<u8>),
    Pickle(Vec<u8>),
}

impl<'de> serde::Deserialize<'de> for Stored {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::{Error, SeqAccess, Visitor};
        struct StoredVisitor;
        impl<'de> Visitor<'de> for StoredVisitor {
            type Value = Stored;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a (type, bytes) pair or bytes")
            }
            fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<Stored, E> {
                Ok(Stored::Pickle(v.to_vec()))
            }
            fn visit_byte_buf<E: Error>(self, v: Vec<u8>) -> Result<Stored, E> {
                Ok(Stored::Pickle(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Stored, A::Error> {
                let type_: String = seq
                    .next_element()?
                    .ok_or_else(|| A::Error::invalid_length(0, &self))?;
                let data: serde_bytes_buf::Buf = seq
                    .next_element()?
                    .ok_or_else(|| A::Error::invalid_length(1, &self))?;
                Ok(Stored::Typed(type_, data.0))
            }
        }
        deserializer.deserialize_any(StoredVisitor)
    }
}

/// Bytes read from either a byte string or a sequence of numbers (JSON has no bytes).
mod serde_bytes_buf {
    use serde::de::{SeqAccess, Visitor};

    pub struct Buf(pub Vec<u8>);

    impl<'de> serde::Deserialize<'de> for Buf {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct BufVisitor;
            impl<'de> Visitor<'de> for BufVisitor {
                type Value = Buf;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("bytes")
                }
                fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Buf, E> {
                    Ok(Buf(v.to_vec()))
                }
                fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Buf, E> {
                    Ok(Buf(v))
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Buf, A::Error> {
                    let mut out = Vec::new();
                    while let Some(byte) = seq.next_element::<u8>()? {
                        out.push(byte);
                    }
                    Ok(Buf(out))
                }
            }
            deserializer.deserialize_bytes(BufVisitor)
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use pyo3::prelude::*;

    /// Puts a stand-in `agentgraph.checkpoint.serde` (pickle as `(type, bytes)`) where the
    /// embedded interpreter of `cargo test` finds it: the real package needs the wheel.
    pub(crate) fn stand_in_serde(py: Python<'_>) {
        let code = c"import pickle, sys, types\n\
for name in ('agentgraph', 'agentgraph.checkpoint', 'agentgraph.checkpoint.serde'):\n    sys.modules.setdefault(name, types.ModuleType(name))\n\
serde = sys.modules['agentgraph.checkpoint.serde']\n\
serde._dumps = lambda obj: ('pickle', pickle.dumps(obj))\n\
serde._loads = lambda type_, data: pickle.loads(data)\n";
        py.run(code, None, None).unwrap();
    }
}
