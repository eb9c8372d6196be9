//! Streaming a run: LangGraph's stream modes (`values`, `updates`, `messages`, `custom`,
//! `debug`) and an event stream with `astream_events` v2 names.
//!
//! [`CompiledGraph::stream`](crate::CompiledGraph::stream) runs the graph on its own task and
//! hands back a [`GraphStream`]: a `futures::Stream` over a bounded channel. A slow consumer
//! slows the run down instead of growing memory; dropping the stream cancels the run (its
//! tasks are aborted; checkpoints already written stay consistent).
//!
//! Nodes reach the caller while they run through their context:
//! [`NodeContext::write_custom`](crate::NodeContext::write_custom),
//! [`NodeContext::write_message`](crate::NodeContext::write_message) (LLM chunks; agent-llm
//! does this for you) and [`NodeContext::emit_event`](crate::NodeContext::emit_event). This
//! crate knows nothing of LLM types: message chunks travel as JSON.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::mpsc;

use crate::error::GraphError;
use crate::node::BoxFuture;
use crate::state::GraphState;

/// One stream mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamMode {
    /// The full state after the input and after every step.
    Values,
    /// Each node's update, after its step.
    Updates,
    /// LLM message chunks from inside nodes, with metadata.
    Messages,
    /// Whatever nodes write with `write_custom`.
    Custom,
    /// Task starts and results, checkpoints.
    Debug,
    /// `astream_events` v2: on_chain_start / on_chat_model_stream / on_tool_end / ...
    Events,
}

impl StreamMode {
    const fn bit(self) -> u8 {
        match self {
            StreamMode::Values => 1,
            StreamMode::Updates => 2,
            StreamMode::Messages => 4,
            StreamMode::Custom => 8,
            StreamMode::Debug => 16,
            StreamMode::Events => 32,
        }
    }
}

/// A set of stream modes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct StreamModes(u8);

impl StreamModes {
    /// No mode.
    pub const NONE: StreamModes = StreamModes(0);

    /// Whether `mode` is in the set.
    pub const fn has(self, mode: StreamMode) -> bool {
        self.0 & mode.bit() != 0
    }

    /// The set plus `mode`.
    pub const fn with(self, mode: StreamMode) -> StreamModes {
        StreamModes(self.0 | mode.bit())
    }
}

impl From<StreamMode> for StreamModes {
    fn from(mode: StreamMode) -> Self {
        StreamModes::NONE.with(mode)
    }
}

impl<const N: usize> From<[StreamMode; N]> for StreamModes {
    fn from(modes: [StreamMode; N]) -> Self {
        modes.into_iter().fold(StreamModes::NONE, StreamModes::with)
    }
}

impl From<&[StreamMode]> for StreamModes {
    fn from(modes: &[StreamMode]) -> Self {
        modes
            .iter()
            .copied()
            .fold(StreamModes::NONE, StreamModes::with)
    }
}

/// Where a streamed item comes from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StreamMeta {
    /// The node that produced it.
    pub node: String,
    /// The super-step.
    pub step: i64,
    /// What triggered the task: the nodes whose edges fired (`__start__` for the input),
    /// or `"send"` for a `Send` task.
    pub triggers: Vec<String>,
    /// Subgraph namespace path; empty for the root graph.
    pub ns: Vec<String>,
}

/// A task starting, finishing, or a checkpoint (the `debug` mode).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DebugEvent {
    /// A task is about to run.
    Task {
        /// The step.
        step: i64,
        /// The node.
        node: String,
        /// What triggered it.
        triggers: Vec<String>,
    },
    /// A task finished.
    TaskResult {
        /// The step.
        step: i64,
        /// The node.
        node: String,
        /// Its update as JSON, or `null` if it failed or paused.
        result: serde_json::Value,
        /// Its error, if any.
        error: Option<String>,
    },
    /// A checkpoint was written.
    Checkpoint {
        /// The step.
        step: i64,
        /// The checkpoint id.
        checkpoint_id: String,
        /// Nodes that run next.
        next: Vec<String>,
    },
}

/// An `astream_events` v2 event.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    /// `on_chain_start`, `on_chain_stream`, `on_chain_end`, `on_chat_model_start`,
    /// `on_chat_model_stream`, `on_chat_model_end`, `on_tool_start`, `on_tool_end`,
    /// `on_custom_event`.
    pub event: String,
    /// The graph's, node's, model's or tool's name.
    pub name: String,
    /// This runnable's run id.
    pub run_id: String,
    /// Run ids of the enclosing runnables, outermost first.
    pub parent_ids: Vec<String>,
    /// The run's tags.
    pub tags: Vec<String>,
    /// `langgraph_node`, `langgraph_step`, `thread_id`, ...
    pub metadata: serde_json::Value,
    /// `input`, `chunk` or `output`.
    pub data: serde_json::Value,
}

/// One item of a graph stream, tagged by its mode.
#[derive(Debug)]
pub enum StreamPart<S: GraphState> {
    /// `values`: the state.
    Values(Arc<S>),
    /// `updates`: a node's update.
    Updates {
        /// The node.
        node: String,
        /// Its update.
        update: S::Update,
    },
    /// `messages`: an LLM chunk (JSON of the model crate's chunk type).
    Messages {
        /// The chunk.
        chunk: serde_json::Value,
        /// Node, step, triggers.
        meta: StreamMeta,
    },
    /// `custom`: what a node wrote.
    Custom {
        /// The value.
        value: serde_json::Value,
        /// Node, step, triggers.
        meta: StreamMeta,
    },
    /// `debug`.
    Debug(DebugEvent),
    /// `events` (v2).
    Event(Event),
}

impl<S: GraphState> StreamPart<S> {
    /// The mode this part belongs to.
    pub fn mode(&self) -> StreamMode {
        match self {
            StreamPart::Values(_) => StreamMode::Values,
            StreamPart::Updates { .. } => StreamMode::Updates,
            StreamPart::Messages { .. } => StreamMode::Messages,
            StreamPart::Custom { .. } => StreamMode::Custom,
            StreamPart::Debug(_) => StreamMode::Debug,
            StreamPart::Event(_) => StreamMode::Events,
        }
    }
}

/// What nodes send, without the state type.
#[derive(Debug, Clone)]
pub(crate) enum NodePart {
    Messages(serde_json::Value, StreamMeta),
    Custom(serde_json::Value, StreamMeta),
    Event(Event),
}

/// The state-independent side of an emitter, for node contexts.
pub(crate) trait NodeSink: Send + Sync {
    fn modes(&self) -> StreamModes;
    fn send(&self, part: NodePart) -> BoxFuture<bool>;
}

/// The sending side of a graph stream.
pub(crate) struct Emitter<S: GraphState> {
    pub(crate) tx: mpsc::Sender<Result<StreamPart<S>, GraphError>>,
    pub(crate) modes: StreamModes,
}

impl<S: GraphState> Emitter<S> {
    /// Sends a part; `false` when the consumer is gone.
    pub(crate) async fn send(&self, part: StreamPart<S>) -> bool {
        self.tx.send(Ok(part)).await.is_ok()
    }
}

impl<S: GraphState> NodeSink for Emitter<S> {
    fn modes(&self) -> StreamModes {
        self.modes
    }

    fn send(&self, part: NodePart) -> BoxFuture<bool> {
        let part = match part {
            NodePart::Messages(chunk, meta) if self.modes.has(StreamMode::Messages) => {
                Some(StreamPart::Messages { chunk, meta })
            }
            NodePart::Custom(value, meta) if self.modes.has(StreamMode::Custom) => {
                Some(StreamPart::Custom { value, meta })
            }
            NodePart::Event(event) if self.modes.has(StreamMode::Events) => {
                Some(StreamPart::Event(event))
            }
            _ => None,
        };
        let tx = self.tx.clone();
        Box::pin(async move {
            match part {
                Some(part) => tx.send(Ok(part)).await.is_ok(),
                None => !tx.is_closed(),
            }
        })
    }
}

/// A running graph's stream. Dropping it cancels the run.
pub struct GraphStream<S: GraphState> {
    pub(crate) rx: mpsc::Receiver<Result<StreamPart<S>, GraphError>>,
    /// The run; `None` once [`GraphStream::into_output`] took it.
    pub(crate) task: Option<tokio::task::JoinHandle<Option<crate::RunOutput<S>>>>,
}

impl<S: GraphState> GraphStream<S> {
    /// Waits for the run to end and returns what [`invoke`](crate::CompiledGraph::invoke)
    /// would have: the final state, interrupts, path, usage. Parts not read yet are dropped;
    /// read the stream to its end first to see them all.
    pub async fn into_output(mut self) -> Result<crate::RunOutput<S>, GraphError> {
        let mut failure = None;
        while let Some(part) = self.rx.recv().await {
            if let Err(error) = part {
                failure = Some(error);
            }
        }
        let Some(task) = self.task.take() else {
            return Err(GraphError::InvalidInput(
                "the stream's run was already taken".into(),
            ));
        };
        match task.await {
            Ok(Some(output)) => Ok(output),
            Ok(None) => Err(failure.unwrap_or_else(|| {
                GraphError::InvalidInput("the run failed and its error was already read".into())
            })),
            Err(join) => Err(GraphError::InvalidInput(format!(
                "the run's task ended: {join}"
            ))),
        }
    }
}

impl<S: GraphState> std::fmt::Debug for GraphStream<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphStream").finish_non_exhaustive()
    }
}

impl<S: GraphState> futures::Stream for GraphStream<S> {
    type Item = Result<StreamPart<S>, GraphError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl<S: GraphState> Drop for GraphStream<S> {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// How many parts may wait for a slow consumer before the run waits.
pub(crate) const CHANNEL_CAPACITY: usize = 64;
