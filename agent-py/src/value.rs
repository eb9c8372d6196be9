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
        let human = serializer.is_human_readable();
        let mut pair = serializer.serialize_tuple(2)?;
        pair.serialize_element(&type_)?;
        if human {
            // JSON has no bytes: a hex string, not a list of numbers (a `serde_json::Value`
            // of one number a byte takes some 40 bytes a byte; agent-core turns updates into
            // JSON for `debug`, and wide states held hundreds of MiB so).
            pair.serialize_element(&hex::encode(&data))?;
        } else {
            pair.serialize_element(&Bytes(&data))?;
        }
        pair.end()
    }
}

/// Bytes as lowercase hex, for human-readable formats (JSON), and back.
mod hex {
    pub fn encode(data: &[u8]) -> String {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(data.len() * 2);
        for byte in data {
            out.push(DIGITS[usize::from(byte >> 4)] as char);
            out.push(DIGITS[usize::from(byte & 0xf)] as char);
        }
        out
    }

    pub fn decode(text: &str) -> Option<Vec<u8>> {
        fn digit(c: u8) -> Option<u8> {
            (c as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
        }
        let bytes = text.as_bytes();
        if !bytes.len().is_multiple_of(2) {
            return None;
        }
        bytes
            .chunks_exact(2)
            .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
            .collect()
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
                fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Buf, E> {
                    super::hex::decode(v)
                        .map(Buf)
                        .ok_or_else(|| E::custom("bytes as hex: not a hex string"))
                }
            }
            // Any: a byte string (MessagePack), a hex string or a list of numbers (JSON).
            deserializer.deserialize_any(BufVisitor)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_carries_bytes_as_hex_and_reads_every_form_back() {
        Python::initialize();
        Python::attach(|py| {
            testing::stand_in_serde(py);
            let value = PyValue::new(
                py.eval(c"{'a': [1, 2.5, None, 'x' * 300]}", None, None)
                    .unwrap(),
            );
            let json = serde_json::to_value(&value).unwrap();
            assert!(json[1].is_string(), "{json}");
            let back: PyValue = serde_json::from_value(json.clone()).unwrap();
            assert!(back.bind(py).eq(value.bind(py)).unwrap());
            let text = serde_json::to_string(&value).unwrap();
            let back: PyValue = serde_json::from_str(&text).unwrap();
            assert!(back.bind(py).eq(value.bind(py)).unwrap());
            // The list of numbers earlier versions wrote.
            let (type_, data) = dumps_typed(&value.bind(py)).unwrap();
            let old = serde_json::json!([type_, data]);
            let back: PyValue = serde_json::from_value(old).unwrap();
            assert!(back.bind(py).eq(value.bind(py)).unwrap());
            // MessagePack keeps bytes.
            let packed = rmp_serde::to_vec(&value).unwrap();
            let back: PyValue = rmp_serde::from_slice(&packed).unwrap();
            assert!(back.bind(py).eq(value.bind(py)).unwrap());
            assert_eq!(hex::decode("0fA0"), Some(vec![0x0f, 0xa0]));
            assert_eq!(hex::decode("0g"), None);
            assert_eq!(hex::decode("abc"), None);
        });
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
