//! The `add_messages` reducer: how a node's new messages merge into a conversation.
//!
//! Same semantics as LangGraph's `add_messages`, in a shape agent-core's
//! `#[reducer(path)]` accepts (`fn(&mut T, T) -> Result<(), E>`).

use std::collections::{HashMap, HashSet};

use agent_core::reducers::Written;

use crate::error::{LlmError, MessagesError};
use crate::message::{Message, REMOVE_ALL_MESSAGES};

/// Merges `update` into `current` the way LangGraph's `add_messages` does:
///
/// - a message whose id is not in `current` is appended;
/// - a message whose id is already there replaces it in place (same position);
/// - a message without id gets a fresh one (UUID v7) first, and so is appended;
/// - [`Message::remove(id)`](Message::remove) deletes the message with that id (an id that is
///   neither in `current` nor earlier in `update` is an error, and then `current` is left as
///   it was);
/// - [`Message::remove_all()`](Message::remove_all) clears everything before it: the result is
///   the rest of `update`, merged into an empty list;
/// - messages already in `current` without an id get one.
///
/// Returns [`Written::Appended`] when the update only added messages after the existing ones
/// (the usual case: a reply, tool results), so a checkpoint stores only the new messages;
/// [`Written::Rewritten`] after a replacement or a removal.
///
/// Use it on a graph state field: `#[reducer(agent_llm::add_messages)] messages: Vec<Message>`.
///
/// ```
/// use agent_llm::{add_messages, Message};
///
/// let mut messages = vec![Message::human("hi").with_id("1")];
/// add_messages(&mut messages, vec![Message::ai("hello").with_id("2")])?;
/// add_messages(&mut messages, vec![Message::human("hi!").with_id("1"), Message::remove("2")])?;
/// assert_eq!(messages, vec![Message::human("hi!").with_id("1")]);
/// # Ok::<(), agent_llm::MessagesError>(())
/// ```
pub fn add_messages(
    current: &mut Vec<Message>,
    update: Vec<Message>,
) -> Result<Written, MessagesError> {
    let start = update
        .iter()
        .rposition(|m| matches!(m, Message::Remove(r) if r.id == REMOVE_ALL_MESSAGES))
        .map_or(0, |i| i + 1);
    let clear = start > 0;
    let mut update: Vec<Message> = update.into_iter().skip(start).collect();
    for m in &mut update {
        if m.id().is_none() {
            m.set_id(new_message_id());
        }
    }

    // Where each id named by the update currently sits (None: not in `current`).
    let mut position: HashMap<String, Option<usize>> = update
        .iter()
        .filter_map(|m| m.id().map(|id| (id.to_owned(), None)))
        .collect();
    if !clear && !position.is_empty() {
        // A few ids (the usual update): compare strings, and hash only on a match.
        let few: Vec<String> = if position.len() <= 8 {
            position.keys().cloned().collect()
        } else {
            Vec::new()
        };
        for (i, m) in current.iter().enumerate() {
            let Some(id) = m.id() else { continue };
            if !few.is_empty() && !few.iter().any(|k| k == id) {
                continue;
            }
            if let Some(slot) = position.get_mut(id) {
                *slot = Some(i);
            }
        }
    }

    // Check every removal before touching `current`, so a failed update changes nothing.
    let mut known: HashSet<&str> = position
        .iter()
        .filter(|(_, pos)| pos.is_some())
        .map(|(id, _)| id.as_str())
        .collect();
    for m in &update {
        match m {
            Message::Remove(r) if !known.contains(r.id.as_str()) => {
                return Err(LlmError::UnknownMessageId { id: r.id.clone() });
            }
            Message::Remove(_) => {}
            other => {
                if let Some(id) = other.id() {
                    known.insert(id);
                }
            }
        }
    }
    drop(known);

    // Whether anything but an append happened (checkpoints then store the list whole).
    let mut rewritten = clear;
    if clear {
        current.clear();
    }
    for m in current.iter_mut() {
        if m.id().is_none() {
            m.set_id(new_message_id());
            rewritten = true;
        }
    }
    let mut removed: HashSet<String> = HashSet::new();
    for m in update {
        let Some(id) = m.id().map(str::to_owned) else {
            continue;
        };
        if matches!(m, Message::Remove(_)) {
            removed.insert(id);
            rewritten = true;
            continue;
        }
        match position.get(&id).copied().flatten() {
            Some(i) => {
                removed.remove(&id);
                current[i] = m;
                rewritten = true;
            }
            None => {
                position.insert(id, Some(current.len()));
                current.push(m);
            }
        }
    }
    if !removed.is_empty() {
        current.retain(|m| m.id().is_none_or(|id| !removed.contains(id)));
    }
    Ok(if rewritten {
        Written::Rewritten
    } else {
        Written::Appended
    })
}

/// A fresh message id: a UUID v7, so ids sort by creation time.
pub fn new_message_id() -> String {
    agent_core::new_id()
}
