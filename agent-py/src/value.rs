//! A Python object as a channel value: shared, never copied, serialized only for checkpoints.
//!
//! Values stay Python objects for the whole run (nodes get back the very objects they wrote,
//! as in LangGraph), so the executor's clones of the state are reference-count bumps on an
//! `Arc`, with no GIL. Only a checkpointer (or the `events` stream mode) serializes them: with
//! `pickle` for now (see the crate docs: LangGraph's msgpack format is the goal).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

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

impl serde::Serialize for PyValue {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let bytes = Python::attach(|py| -> PyResult<Vec<u8>> {
            let pickle = py.import("pickle")?;
            let dumped = pickle.call_method1("dumps", (self.0.bind(py),))?;
            Ok(dumped.cast::<PyBytes>()?.as_bytes().to_vec())
        })
        .map_err(serde::ser::Error::custom)?;
        serializer.serialize_bytes(&bytes)
    }
}

impl<'de> serde::Deserialize<'de> for PyValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let bytes: serde_bytes_buf::Buf = serde::Deserialize::deserialize(deserializer)?;
        Python::attach(|py| -> PyResult<PyValue> {
            let pickle = py.import("pickle")?;
            let loaded = pickle.call_method1("loads", (PyBytes::new(py, &bytes.0),))?;
            Ok(PyValue::new(loaded))
        })
        .map_err(serde::de::Error::custom)
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
