//! [`Shared<T>`]: one value held in many places, stored once per thread.
//!
//! Python states share by reference: a retrieved document put in three lists is one dict, and
//! appending it again costs a pointer. LangGraph's serializer expands every reference, so a
//! checkpoint re-encodes the same document as often as it appears. In Rust the sharing is an
//! `Arc`; `Shared<T>` is that `Arc` with a checkpoint encoding that keeps the sharing: the first
//! checkpoint that meets a value stores it once in the thread's table of shared values, and
//! every place that holds it (in that checkpoint or any later one) stores a five-byte reference.
//! Restoring rebuilds the sharing: every reference to one entry decodes to one `Arc`.
//!
//! Anywhere else (JSON, streams, pending writes, your own serde use) a `Shared<T>` serializes
//! as the `T` it holds.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::de::{self, IntoDeserializer, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::checkpoint::interning;

/// A value shared by reference (an `Arc`) whose checkpoints store it once per thread.
///
/// Clone is a reference-count bump; equality compares the values. See the module docs of
/// [`checkpoint`](crate::checkpoint) for how the table of shared values is stored.
///
/// ```
/// use agent_core::{GraphState, Shared};
///
/// #[derive(GraphState, Clone, Default)]
/// struct Research {
///     /// Every document retrieved, in order.
///     #[reducer(append)]
///     docs: Vec<Shared<String>>,
///     /// The documents the answer cites: the same values, stored as references.
///     #[reducer(append)]
///     cited: Vec<Shared<String>>,
/// }
///
/// let doc = Shared::new("a long retrieved page".to_owned());
/// let update = ResearchUpdate::default().docs(vec![doc.clone()]).cited(vec![doc]);
/// # let _ = update;
/// ```
pub struct Shared<T>(Arc<T>);

impl<T> Shared<T> {
    /// Shares `value`.
    pub fn new(value: T) -> Self {
        Shared(Arc::new(value))
    }

    /// The `Arc` it holds.
    pub fn as_arc(&self) -> &Arc<T> {
        &self.0
    }

    /// Whether both hold the same allocation (not only equal values).
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(Arc::clone(&self.0))
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> AsRef<T> for Shared<T> {
    fn as_ref(&self) -> &T {
        &self.0
    }
}

impl<T> From<T> for Shared<T> {
    fn from(value: T) -> Self {
        Shared::new(value)
    }
}

impl<T> From<Arc<T>> for Shared<T> {
    fn from(arc: Arc<T>) -> Self {
        Shared(arc)
    }
}

impl<T: Default> Default for Shared<T> {
    fn default() -> Self {
        Shared::new(T::default())
    }
}

impl<T: fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<T: fmt::Display> fmt::Display for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl<T: Eq> Eq for Shared<T> {}

impl<T: std::hash::Hash> std::hash::Hash for Shared<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state)
    }
}

impl<T: PartialOrd> PartialOrd for Shared<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        self.0.partial_cmp(&other.0)
    }
}

impl<T: Ord> Ord for Shared<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl<T: Serialize + std::marker::Send + Sync + 'static> Serialize for Shared<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !serializer.is_human_readable() {
            // Looked up by address; the `Arc` is cloned into the table only when it is new.
            let key = Arc::as_ptr(&self.0) as usize;
            if let Some(id) = interning::intern(
                key,
                || self.0.clone(),
                || crate::checkpoint::codec::encode(&*self.0),
            ) {
                let id = id.map_err(serde::ser::Error::custom)?;
                return interning::Ref(id).serialize(serializer);
            }
        }
        self.0.serialize(serializer)
    }
}

impl<'de, T> Deserialize<'de> for Shared<T>
where
    T: serde::de::DeserializeOwned + std::marker::Send + Sync + 'static,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if !deserializer.is_human_readable() && interning::resolving() {
            return deserializer.deserialize_any(SharedVisitor(std::marker::PhantomData));
        }
        T::deserialize(deserializer).map(Shared::new)
    }
}

/// Reads a reference into the thread's table, or (a value stored inline, as before the table
/// existed) the value itself.
struct SharedVisitor<T>(std::marker::PhantomData<T>);

macro_rules! forward_scalars {
    ($($visit:ident($ty:ty);)*) => {
        $(fn $visit<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            T::deserialize(v.into_deserializer()).map(Shared::new)
        })*
    };
}

impl<'de, T> Visitor<'de> for SharedVisitor<T>
where
    T: serde::de::DeserializeOwned + std::marker::Send + Sync + 'static,
{
    type Value = Shared<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a shared value or a reference to one")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let (tag, bytes) =
            <(i8, crate::checkpoint::codec::serde_bytes_vec::Bytes)>::deserialize(d)?;
        let id = interning::Ref::parse(tag, &bytes.0).map_err(de::Error::custom)?;
        interning::resolve::<T>(id)
            .map(Shared)
            .map_err(de::Error::custom)
    }

    forward_scalars! {
        visit_bool(bool);
        visit_i64(i64);
        visit_u64(u64);
        visit_f32(f32);
        visit_f64(f64);
        visit_i8(i8);
        visit_i16(i16);
        visit_i32(i32);
        visit_u8(u8);
        visit_u16(u16);
        visit_u32(u32);
        visit_string(String);
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        T::deserialize(de::value::StrDeserializer::new(v)).map(Shared::new)
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
        T::deserialize(de::value::BytesDeserializer::new(v)).map(Shared::new)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        T::deserialize(de::value::UnitDeserializer::new()).map(Shared::new)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        T::deserialize(d).map(Shared::new)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        T::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Shared::new)
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Shared::new)
    }
}
