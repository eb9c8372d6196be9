//! Typed node inputs: a node may take a value of its own type instead of the graph state, and
//! a [`Send`](crate::Send) carries that value to it (LangGraph's `Send(node, arg)`), so a
//! map-reduce worker does not have to fake a whole state.
//!
//! Inside the executor the value is erased ([`AnyInput`]): an `Arc<dyn Any>` plus the few
//! functions of its type the run needs (its name for errors, MessagePack for checkpoints,
//! JSON for `Debug`). The node records its input type ([`InputType`]) when it is added, so a
//! `Send` of the wrong type fails when it is routed, naming the node and both types, and a
//! checkpointed `Send` decodes with the type of the node it targets.

use std::any::{Any, TypeId};
use std::sync::Arc;

use crate::checkpoint::codec;

/// What a node's own input must be: owned, cloneable, and storable in a checkpoint.
///
/// Implemented for every type that fits; derive `Clone`, `serde::Serialize` and
/// `serde::Deserialize` on your input struct.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a node's input",
    note = "a node's own input (what `Send::input` carries) is stored in checkpoints and cloned for retries: derive `Clone, serde::Serialize, serde::Deserialize` on it; to read the graph state instead, take it by reference: `state: &State`"
)]
pub trait NodeInput:
    serde::Serialize + serde::de::DeserializeOwned + Clone + Send + Sync + 'static
{
}

// Reported as one `NodeInput` error at the user's type, not one per missing trait.
#[diagnostic::do_not_recommend]
impl<T> NodeInput for T where
    T: serde::Serialize + serde::de::DeserializeOwned + Clone + Send + Sync + 'static
{
}

/// The input type a node declared: what a `Send` to it must carry, and how to read one back
/// from a checkpoint.
#[derive(Clone, Copy)]
pub(crate) struct InputType {
    pub(crate) id: TypeId,
    pub(crate) name: &'static str,
    /// Whether the node also runs on the state, when an edge or a name triggers it
    /// ([`NodeSpec::with_input_or_state`](crate::NodeSpec::with_input_or_state)).
    pub(crate) or_state: bool,
    decode: fn(&[u8]) -> Result<AnyInput, String>,
}

impl std::fmt::Debug for InputType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl InputType {
    pub(crate) fn of<I: NodeInput>() -> Self {
        InputType {
            id: TypeId::of::<I>(),
            name: std::any::type_name::<I>(),
            or_state: false,
            decode: |bytes| codec::decode::<I>(bytes).map(AnyInput::new),
        }
    }

    /// The same type, for a node that also runs on the state.
    pub(crate) fn or_state(self) -> Self {
        InputType {
            or_state: true,
            ..self
        }
    }

    /// A stored input of this type.
    pub(crate) fn decode(&self, bytes: &[u8]) -> Result<AnyInput, String> {
        (self.decode)(bytes)
    }
}

/// A node input with its type erased: cheap to clone (one `Arc`).
#[derive(Clone)]
pub(crate) struct AnyInput {
    value: Arc<dyn Any + Send + Sync>,
    pub(crate) ty: InputType,
    encode: fn(&(dyn Any + Send + Sync)) -> Result<Vec<u8>, String>,
    json: fn(&(dyn Any + Send + Sync)) -> serde_json::Value,
}

impl AnyInput {
    pub(crate) fn new<I: NodeInput>(value: I) -> Self {
        AnyInput {
            value: Arc::new(value),
            ty: InputType::of::<I>(),
            encode: |value| match value.downcast_ref::<I>() {
                Some(value) => codec::encode(value),
                None => Err("a node input of another type".to_owned()),
            },
            json: |value| {
                value
                    .downcast_ref::<I>()
                    .and_then(|v| serde_json::to_value(v).ok())
                    .unwrap_or(serde_json::Value::Null)
            },
        }
    }

    /// The value, when it is an `I`.
    pub(crate) fn get<I: 'static>(&self) -> Option<&I> {
        self.value.downcast_ref::<I>()
    }

    /// An owned copy of the value, when it is an `I`.
    pub(crate) fn cloned<I: NodeInput>(&self) -> Option<I> {
        self.get::<I>().cloned()
    }

    /// MessagePack, as checkpoints store it.
    pub(crate) fn encode(&self) -> Result<Vec<u8>, String> {
        (self.encode)(&*self.value)
    }

    /// JSON, for `Debug` and streams.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        (self.json)(&*self.value)
    }
}

impl std::fmt::Debug for AnyInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", self.ty.name, self.to_json())
    }
}

/// Two inputs are equal when they are of one type and encode to the same bytes.
impl PartialEq for AnyInput {
    fn eq(&self, other: &Self) -> bool {
        self.ty.id == other.ty.id
            && (Arc::ptr_eq(&self.value, &other.value)
                || matches!((self.encode(), other.encode()), (Ok(a), Ok(b)) if a == b))
    }
}
