//! Ids: a step's task ids (the checkpoint the step starts from plus the task's path, so a
//! resumed step finds the writes its finished tasks kept) and new checkpoint ids.

use std::sync::Arc;

use crate::state::GraphState;

use super::super::Run;
use super::super::algo::Task;

impl<S: GraphState> Run<'_, S> {
    /// Gives the step's tasks their ids: the checkpoint the step starts from plus the task's
    /// path. Before a thread's first checkpoint (`Durability::Exit`) the prefix is a
    /// placeholder; a pause re-prefixes them with the checkpoint it writes.
    pub(crate) fn name_tasks(&self, tasks: &mut [Task<S>]) {
        let Some(durable) = &self.durable else {
            return;
        };
        let cp = durable.checkpoint_id.as_deref().unwrap_or("unsaved");
        for task in tasks {
            task.id = Some(task_id(cp, &self.graph.names[task.node], task.push));
        }
    }
}

/// Task id of a step's task: the checkpoint the step starts from, plus the task's path. Put
/// together on the stack (one per task per step): its one allocation is the shared string.
pub(crate) fn task_id(checkpoint_id: &str, node: &str, push: Option<usize>) -> Arc<str> {
    // Pieces written by hand: the formatting machinery costs more than the copying.
    let write = |out: &mut dyn std::fmt::Write| {
        out.write_str(checkpoint_id)?;
        match push {
            None => out.write_str(":pull:").and_then(|()| out.write_str(node)),
            Some(i) => out.write_str(":push:").and_then(|()| write!(out, "{i}")),
        }
    };
    let mut id = StackStr::default();
    match write(&mut id).ok().and_then(|()| id.as_str()) {
        Some(id) => Arc::from(id),
        // Longer than the stack buffer (a very long node name).
        None => {
            let mut id = String::new();
            let _ = write(&mut id);
            id.into()
        }
    }
}

/// A short string written on the stack; writing past its end fails.
struct StackStr {
    bytes: [u8; 128],
    len: usize,
}

impl Default for StackStr {
    fn default() -> Self {
        StackStr {
            bytes: [0; 128],
            len: 0,
        }
    }
}

impl StackStr {
    /// What was written (only whole `&str`s are, so it is UTF-8).
    fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes[..self.len]).ok()
    }
}

impl std::fmt::Write for StackStr {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let dest = self.bytes.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        dest.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Milliseconds since the Unix epoch.
pub(super) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// A new checkpoint id (see [`crate::new_id`]).
pub(crate) fn new_checkpoint_id() -> Arc<str> {
    crate::ids::new_shared_id_at().0
}

#[cfg(test)]
mod tests {
    /// Task ids: the checkpoint, then the pull's node or the push's index; a name too long
    /// for the stack buffer gets the same id.
    #[test]
    fn task_ids_name_the_checkpoint_and_the_path() {
        let cp = "0190000a-0000-7000-8000-000000000000";
        assert_eq!(
            &*super::task_id(cp, "agent", None),
            format!("{cp}:pull:agent")
        );
        assert_eq!(
            &*super::task_id(cp, "agent", Some(17)),
            format!("{cp}:push:17")
        );
        let long = "n".repeat(300);
        assert_eq!(
            &*super::task_id(cp, &long, None),
            format!("{cp}:pull:{long}")
        );
    }

    #[test]
    fn checkpoint_ids_are_v7_unique_and_ordered() {
        let ids: Vec<std::sync::Arc<str>> =
            (0..10_000).map(|_| super::new_checkpoint_id()).collect();
        for pair in ids.windows(2) {
            assert!(pair[0] < pair[1], "{} then {}", pair[0], pair[1]);
        }
        let parsed = uuid::Uuid::parse_str(&ids[0]).unwrap();
        assert_eq!(parsed.get_version_num(), 7);
        assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122);
        let ms = parsed.get_timestamp().unwrap().to_unix();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        assert!(now.as_secs().abs_diff(ms.0) < 5);
    }
}
