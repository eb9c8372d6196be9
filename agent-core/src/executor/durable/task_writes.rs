//! A task's writes as stored in a pending write (and in the node cache): its update or batch
//! of updates, and where it routes (`goto`, `Send`s), and back.

use serde::{Deserialize, Serialize};

use crate::checkpoint::codec::serde_bytes_vec::Bytes;
use crate::checkpoint::interning::{self, Interner, Resolver};
use crate::command::{Goto, Send, SendArg};
use crate::node_input::InputType;
use crate::state::{GraphState, StateUpdate};

use super::super::runner::{TaskWrites, Updates};

/// A task's writes as stored in a pending write.
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
struct StoredWrites<U: StateUpdate> {
    update: Option<U>,
    goto: Vec<StoredGoto<U>>,
    #[serde(default)]
    batch: Option<Vec<U>>,
}

#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
enum StoredGoto<U: StateUpdate> {
    Node(String),
    Send(String, U),
    /// A `Send::input`: the node, and its input encoded as the node's input type.
    Input(String, Bytes),
}

/// A state as an update that writes every field (how `Send` inputs are stored).
pub(super) fn state_to_update<S: GraphState>(state: &S) -> S::Update {
    state.clone().into_update()
}

/// The state an update builds from the default state.
pub(super) fn update_to_state<S: GraphState>(update: S::Update) -> Result<S, String> {
    let mut state = S::default();
    state.apply(update).map_err(|e| e.to_string())?;
    Ok(state)
}

/// `thread`: the run's table of shared values, whose stored entries the write may reference
/// (a pending write next to the thread's checkpoints; `None` for one that stands alone).
pub(crate) fn encode_writes<S: GraphState>(
    writes: &TaskWrites<S>,
    thread: Option<&Interner>,
) -> Result<Vec<u8>, String> {
    let (update, batch) = match &writes.updates {
        Updates::None => (None, None),
        Updates::One(update) => (Some(update.clone()), None),
        Updates::Batch(list) => (None, Some(list.clone())),
    };
    let mut goto = Vec::with_capacity(writes.goto.len());
    for g in &writes.goto {
        goto.push(match g {
            Goto::Node(name) => StoredGoto::Node(name.clone()),
            Goto::Send(send) => match &send.arg {
                SendArg::State(state) => {
                    StoredGoto::Send(send.node.clone(), state_to_update(state))
                }
                SendArg::Input(input) => {
                    StoredGoto::Input(send.node.clone(), Bytes(input.encode()?))
                }
            },
        });
    }
    let stored: StoredWrites<S::Update> = StoredWrites {
        update,
        batch,
        goto,
    };
    interning::encode_with_table(&stored, thread)
}

/// Finds the input type of a node by name (how a stored `Send::input` decodes).
pub(crate) type InputLookup<'a> = &'a dyn Fn(&str) -> Option<InputType>;

/// A stored `Send::input` for `node`, decoded as the node's input type.
pub(super) fn decode_input<S>(
    inputs: InputLookup<'_>,
    node: String,
    bytes: &[u8],
) -> Result<Send<S>, String> {
    let Some(ty) = inputs(&node) else {
        return Err(format!(
            "a pending Send carries an input to `{node}`, which in this graph does not take one (the graph changed)"
        ));
    };
    let input = ty.decode(bytes).map_err(|e| {
        format!(
            "the input of a Send to `{node}` does not decode as `{}`: {e}",
            ty.name
        )
    })?;
    Ok(Send {
        node,
        arg: SendArg::Input(input),
    })
}

pub(crate) fn decode_writes<S: GraphState>(
    inputs: InputLookup<'_>,
    node: usize,
    bytes: &[u8],
    thread: Option<&Resolver>,
) -> Result<TaskWrites<S>, String> {
    let stored: StoredWrites<S::Update> = interning::decode_with_table(bytes, thread)?;
    let updates = match (stored.batch, stored.update) {
        (Some(batch), _) => Updates::Batch(batch),
        (None, Some(update)) => Updates::One(update),
        (None, None) if stored.goto.is_empty() => Updates::One(S::Update::default()),
        (None, None) => Updates::None,
    };
    let mut goto = Vec::with_capacity(stored.goto.len());
    for g in stored.goto {
        goto.push(match g {
            StoredGoto::Node(name) => Goto::Node(name),
            StoredGoto::Send(node, input) => Goto::Send(Send::new(node, update_to_state(input)?)),
            StoredGoto::Input(node, bytes) => Goto::Send(decode_input(inputs, node, &bytes.0)?),
        });
    }
    Ok(TaskWrites {
        node,
        updates,
        goto,
    })
}
