//! `GraphState` without the derive: a hand-written impl (and its `StateDefault`) runs a graph
//! and checkpoints like a derived one.

use std::sync::Arc;

use agent_core::reducers::append;
use agent_core::{
    END, FieldInfo, FieldSet, GraphState, InMemorySaver, Input, NodeOutput, ReducerError,
    ReducerKind, RunConfig, START, StateDefault, StateGraph,
};
use serde::{Deserialize, Serialize};

/// A log whose fresh state is not empty, which is why it starts from `StateDefault` rather
/// than a derived `Default`.
#[derive(Clone, Debug, PartialEq)]
struct Log {
    lines: Vec<String>,
}

#[derive(Clone, Default, Debug, Serialize, Deserialize)]
struct LogUpdate {
    lines: Option<Vec<String>>,
}

impl StateDefault for Log {
    fn default() -> Self {
        Log {
            lines: vec!["start".to_owned()],
        }
    }
}

impl GraphState for Log {
    type Update = LogUpdate;

    fn fields() -> &'static [FieldInfo] {
        &[FieldInfo {
            name: "lines",
            reducer: ReducerKind::Append,
            reducer_name: "append",
        }]
    }

    fn writes(update: &LogUpdate) -> FieldSet {
        if update.lines.is_some() {
            FieldSet::single(0)
        } else {
            FieldSet::EMPTY
        }
    }

    fn apply(&mut self, update: LogUpdate) -> Result<(), ReducerError> {
        if let Some(lines) = update.lines {
            append(&mut self.lines, lines);
        }
        Ok(())
    }

    fn into_update(self) -> LogUpdate {
        LogUpdate {
            lines: Some(self.lines),
        }
    }

    fn serialize_field<S: serde::Serializer>(
        &self,
        index: usize,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match index {
            0 => self.lines.serialize(serializer),
            _ => Err(serde::ser::Error::custom("no such field")),
        }
    }

    fn deserialize_field<'de, D: serde::Deserializer<'de>>(
        &mut self,
        index: usize,
        deserializer: D,
    ) -> Result<(), D::Error> {
        match index {
            0 => {
                self.lines = Vec::deserialize(deserializer)?;
                Ok(())
            }
            _ => Err(serde::de::Error::custom("no such field")),
        }
    }
}

#[tokio::test]
async fn a_hand_written_state_runs_and_checkpoints() {
    let graph = StateGraph::<Log>::new()
        .add_node("write", |state: Arc<Log>| async move {
            NodeOutput::Update(LogUpdate {
                lines: Some(vec![format!("after {}", state.lines.len())]),
            })
        })
        .add_edge(START, "write")
        .add_edge("write", END)
        .compile_with(Arc::new(InMemorySaver::new()))
        .unwrap();
    let config = RunConfig::default().thread_id("hand-written");
    let input = || Input::Update(LogUpdate::default());
    let out = graph.invoke(input(), config.clone()).await.unwrap();
    assert_eq!(out.lines, ["start", "after 1"]);
    let again = graph.invoke(input(), config).await.unwrap();
    assert_eq!(again.lines, ["start", "after 1", "after 2"]);
}
