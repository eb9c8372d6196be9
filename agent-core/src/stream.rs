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
//!
//! # Subgraphs and namespaces
//!
//! Every part has a [`Namespace`] ([`StreamPart::namespace`]): the root graph's parts are
//! under the root namespace (empty), a subgraph's under `"<node>:<task id>"` — the string its
//! checkpoints use as `checkpoint_ns` — and a nested subgraph's under its parent's followed by
//! its own (`"outer:<id>|inner:<id>"`). Messages and custom items written inside a subgraph
//! always reach the caller, with the namespace in [`StreamMeta::ns`]; events with it in their
//! metadata (`langgraph_checkpoint_ns`, `checkpoint_ns`).
//!
//! A subgraph node's `updates` part in its parent is one update, whatever the subgraph ran
//! (never one per inner node): what the parent applies, the subgraph's updates folded
//! (LangGraph shows the subgraph's whole final state there).
//!
//! A subgraph's own `values`, `updates` and `debug` parts (LangGraph's
//! `stream(..., subgraphs=True)`), and its nodes' `events`, stream only when the caller asks,
//! with [`StreamModes::with_subgraphs`]. They arrive while the subgraph runs, before its
//! node's update in the parent. A subgraph that pauses on `interrupt()` streams an `updates`
//! part of node [`INTERRUPT`] (`{"__interrupt__": [{"value", "id"}]}`) under each namespace
//! the pause crosses; the root's interrupts are in the run's output. A subgraph may have a state of its own, so its parts are
//! type-erased: [`StreamPart::Subgraph`] holds a [`SubgraphPart`] whose states and updates are
//! JSON (the dicts LangGraph streams). Without the flag the stream is what it was before:
//! the parent's parts, and its subgraphs' messages, custom items and node-written events.
//!
//! ```no_run
//! # use agent_core::{CompiledGraph, GraphState, RunConfig, StreamMode, StreamModes, Input};
//! # use futures::StreamExt;
//! # async fn demo<S: GraphState>(graph: CompiledGraph<S>, input: Input<S>) {
//! let modes = StreamModes::from([StreamMode::Updates, StreamMode::Values]).with_subgraphs();
//! let mut stream = graph.stream(input, RunConfig::default(), modes);
//! while let Some(Ok(part)) = stream.next().await {
//!     // `updates` for the root graph, `updates|sub:<task_id>` inside a subgraph: the
//!     // event names of LangGraph's server.
//!     println!("{}", part.event_name());
//! }
//! # }
//! ```

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
    /// LangGraph's name for the mode: `values`, `updates`, `messages`, `custom`, `debug`,
    /// `events`.
    pub const fn as_str(self) -> &'static str {
        match self {
            StreamMode::Values => "values",
            StreamMode::Updates => "updates",
            StreamMode::Messages => "messages",
            StreamMode::Custom => "custom",
            StreamMode::Debug => "debug",
            StreamMode::Events => "events",
        }
    }

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

impl std::fmt::Display for StreamMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// A set of stream modes, and whether subgraphs stream theirs too.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct StreamModes(u8);

/// The flag of [`StreamModes::with_subgraphs`], next to the modes' bits.
const SUBGRAPHS: u8 = 64;

impl StreamModes {
    /// No mode.
    pub const NONE: StreamModes = StreamModes(0);

    /// The set, with subgraphs streaming their parts too (LangGraph's `subgraphs=True`):
    /// their `values`, `updates` and `debug` parts as [`StreamPart::Subgraph`] under their
    /// namespace, and their nodes' `events`. Off by default.
    pub const fn with_subgraphs(self) -> StreamModes {
        StreamModes(self.0 | SUBGRAPHS)
    }

    /// Whether subgraphs stream their parts too.
    pub const fn subgraphs(self) -> bool {
        self.0 & SUBGRAPHS != 0
    }

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

/// Where in a graph of subgraphs a part comes from: the path of subgraph runs, outermost
/// first, each `"<node>:<id>"` (LangGraph's namespace tuple; empty for the root graph), the
/// id a uuid derived from the subgraph's task id (free of `:` and `|`).
///
/// Displayed joined by `|`, which is the subgraph's `checkpoint_ns` when the run checkpoints
/// (without a checkpointer, the task ids are made up for the stream). It serializes as the
/// list of segments, and reads as a slice of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Namespace(Vec<String>);

impl Namespace {
    /// The root graph's namespace.
    pub const fn root() -> Namespace {
        Namespace(Vec::new())
    }

    /// Whether this is the root graph's.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The segments, outermost first.
    pub fn segments(&self) -> &[String] {
        &self.0
    }

    /// Reads a namespace written joined by `|` (a `checkpoint_ns`); `""` is the root.
    pub fn parse(joined: &str) -> Namespace {
        if joined.is_empty() {
            return Namespace::root();
        }
        Namespace(joined.split('|').map(str::to_owned).collect())
    }

    /// This namespace followed by `segment`.
    pub(crate) fn child(&self, segment: String) -> Namespace {
        let mut segments = self.0.clone();
        segments.push(segment);
        Namespace(segments)
    }
}

impl std::ops::Deref for Namespace {
    type Target = [String];

    fn deref(&self) -> &[String] {
        &self.0
    }
}

impl std::fmt::Display for Namespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, segment) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("|")?;
            }
            f.write_str(segment)?;
        }
        Ok(())
    }
}

impl<S: Into<String>> FromIterator<S> for Namespace {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        Namespace(iter.into_iter().map(Into::into).collect())
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
    /// The namespace of the (sub)graph run the node belongs to; root for the root graph.
    pub ns: Namespace,
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

/// The tag that keeps a model call out of the `messages` stream mode (LangGraph's
/// `TAG_NOSTREAM`): a call tagged with it (or any call of a run whose config carries it)
/// streams no chunks as chat messages, so a router's, a classifier's or a verifier's raw
/// output never shows in a chat. Its `events` (`on_chat_model_*`) still go out, with the
/// tag among theirs. See [`NodeContext::write_message_tagged`](crate::NodeContext::write_message_tagged).
pub const TAG_NOSTREAM: &str = "nostream";

/// The node name of a subgraph's `updates` item that reports its interrupts (LangGraph's
/// `"__interrupt__"` key): its update is the list of `{"value", "id"}`.
pub const INTERRUPT: &str = "__interrupt__";

/// A subgraph's own part, type-erased: its state and updates as JSON (a subgraph may have a
/// state of its own, which a parent's [`StreamPart`] cannot hold).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SubgraphPart {
    /// `values`: the subgraph's state, every field by name.
    Values {
        /// The state.
        state: serde_json::Value,
    },
    /// `updates`: one of its nodes' update.
    Updates {
        /// The subgraph's node.
        node: String,
        /// Its update.
        update: serde_json::Value,
    },
    /// `debug`: its tasks and checkpoints.
    Debug {
        /// The event.
        event: DebugEvent,
    },
}

impl SubgraphPart {
    /// The mode this part belongs to.
    pub fn mode(&self) -> StreamMode {
        match self {
            SubgraphPart::Values { .. } => StreamMode::Values,
            SubgraphPart::Updates { .. } => StreamMode::Updates,
            SubgraphPart::Debug { .. } => StreamMode::Debug,
        }
    }
}

/// One item of a graph stream, tagged by its mode.
///
/// The root graph's `values`, `updates` and `debug` are typed; a subgraph's come as
/// [`StreamPart::Subgraph`] (only with [`StreamModes::with_subgraphs`]). `messages`, `custom`
/// and `events` are JSON anyway and keep their variant wherever they come from: their
/// namespace is in their metadata. [`StreamPart::namespace`] reads it for every part.
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
    /// A subgraph's `values`, `updates` or `debug` part, under its namespace.
    Subgraph {
        /// The subgraph run's namespace (never the root).
        ns: Namespace,
        /// The part.
        part: SubgraphPart,
    },
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
            StreamPart::Subgraph { part, .. } => part.mode(),
        }
    }

    /// The namespace of the (sub)graph run the part comes from (LangGraph's `ns` in
    /// `(ns, chunk)`): root for the graph streamed.
    pub fn namespace(&self) -> Namespace {
        match self {
            StreamPart::Values(_) | StreamPart::Updates { .. } | StreamPart::Debug(_) => {
                Namespace::root()
            }
            StreamPart::Messages { meta, .. } | StreamPart::Custom { meta, .. } => meta.ns.clone(),
            StreamPart::Event(event) => event.namespace(),
            StreamPart::Subgraph { ns, .. } => ns.clone(),
        }
    }

    /// The part's event name in LangGraph's server: the mode (`updates`), followed by `|`
    /// and the namespace for a part from a subgraph (`updates|sub:<task_id>`).
    pub fn event_name(&self) -> String {
        let ns = self.namespace();
        if ns.is_root() {
            self.mode().as_str().to_owned()
        } else {
            format!("{}|{ns}", self.mode())
        }
    }
}

impl Event {
    /// The namespace of the (sub)graph run the event comes from, read from its metadata's
    /// `checkpoint_ns` (absent: the root graph).
    pub fn namespace(&self) -> Namespace {
        self.metadata
            .get("checkpoint_ns")
            .and_then(serde_json::Value::as_str)
            .map(Namespace::parse)
            .unwrap_or_default()
    }
}

/// What nodes send, without the state type.
#[derive(Debug, Clone)]
pub(crate) enum NodePart {
    Messages(serde_json::Value, StreamMeta),
    Custom(serde_json::Value, StreamMeta),
    Event(Event),
    /// A subgraph run's own part (its emitter sends these to its parent's sink).
    Subgraph(Namespace, SubgraphPart),
}

/// The state-independent side of an emitter, for node contexts.
pub(crate) trait NodeSink: Send + Sync {
    fn modes(&self) -> StreamModes;
    fn send(&self, part: NodePart) -> BoxFuture<bool>;
}

/// The sending side of a graph stream.
pub(crate) struct Emitter<S: GraphState> {
    out: Out<S>,
    pub(crate) modes: StreamModes,
}

/// Where an emitter's parts go.
enum Out<S: GraphState> {
    /// The caller's stream (the root run).
    Channel(mpsc::Sender<Result<StreamPart<S>, GraphError>>),
    /// A subgraph run's: its parent's sink, type-erased, under the subgraph's namespace.
    Parent {
        sink: Arc<dyn NodeSink>,
        ns: Namespace,
    },
}

impl<S: GraphState> Emitter<S> {
    /// The emitter of a root run, sending to the caller's stream.
    pub(crate) fn new(
        tx: mpsc::Sender<Result<StreamPart<S>, GraphError>>,
        modes: StreamModes,
    ) -> Self {
        Emitter {
            out: Out::Channel(tx),
            modes,
        }
    }

    /// The emitter of a subgraph run under `ns`, sending through its parent's `sink` (in the
    /// caller's modes).
    pub(crate) fn child(sink: Arc<dyn NodeSink>, ns: Namespace) -> Self {
        Emitter {
            modes: sink.modes(),
            out: Out::Parent { sink, ns },
        }
    }

    /// Sends the interrupts a subgraph run paused on, as its `updates` item
    /// `{"__interrupt__": [{"value", "id"}, ...]}` under its namespace (LangGraph's); nothing
    /// for the root run, whose caller reports its own. `false` when the consumer is gone.
    pub(crate) async fn send_interrupts(&self, interrupts: &[crate::interrupt::Interrupt]) -> bool {
        let Out::Parent { sink, ns } = &self.out else {
            return true;
        };
        let update = interrupts
            .iter()
            .map(|i| serde_json::json!({ "value": i.value, "id": i.id }))
            .collect();
        sink.send(NodePart::Subgraph(
            ns.clone(),
            SubgraphPart::Updates {
                node: INTERRUPT.to_owned(),
                update: serde_json::Value::Array(update),
            },
        ))
        .await
    }

    /// Sends a part; `false` when the consumer is gone.
    pub(crate) async fn send(&self, part: StreamPart<S>) -> bool {
        match &self.out {
            Out::Channel(tx) => tx.send(Ok(part)).await.is_ok(),
            Out::Parent { sink, ns } => {
                let erased = |part| NodePart::Subgraph(ns.clone(), part);
                let part = match part {
                    StreamPart::Values(state) => erased(SubgraphPart::Values {
                        state: json(&(*state).clone().into_update()),
                    }),
                    StreamPart::Updates { node, update } => erased(SubgraphPart::Updates {
                        node,
                        update: json(&update),
                    }),
                    StreamPart::Debug(event) => erased(SubgraphPart::Debug { event }),
                    StreamPart::Messages { chunk, meta } => NodePart::Messages(chunk, meta),
                    StreamPart::Custom { value, meta } => NodePart::Custom(value, meta),
                    StreamPart::Event(event) => NodePart::Event(event),
                    StreamPart::Subgraph { ns, part } => NodePart::Subgraph(ns, part),
                };
                sink.send(part).await
            }
        }
    }
}

fn json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}

impl<S: GraphState> NodeSink for Emitter<S> {
    fn modes(&self) -> StreamModes {
        self.modes
    }

    fn send(&self, part: NodePart) -> BoxFuture<bool> {
        let tx = match &self.out {
            Out::Channel(tx) => tx.clone(),
            Out::Parent { sink, .. } => return sink.send(part),
        };
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
            NodePart::Subgraph(ns, part)
                if self.modes.subgraphs() && self.modes.has(part.mode()) =>
            {
                Some(StreamPart::Subgraph { ns, part })
            }
            _ => None,
        };
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
