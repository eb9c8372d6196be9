//! What a node knows about its run: name, step, remaining steps, config, and the door to
//! run-scoped services (interrupts now; the stream writer as it lands).
//!
//! A node gets a [`NodeContext`] next to the state snapshot. It is cheap to clone (one `Arc`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::config::RunConfig;
use crate::interrupt::{InterruptSlots, Interrupted};
use crate::node_input::{AnyInput, NodeInput};
use crate::runtime::AnyContext;
use crate::stream::{Event, Namespace, NodePart, NodeSink, StreamMeta, StreamMode};

/// The context of one task: which node, which step, how many steps remain, the run's config.
#[derive(Debug, Clone)]
pub struct NodeContext {
    inner: Arc<TaskInfo>,
}

#[derive(Debug)]
struct TaskInfo {
    /// The task's node: its index in the run's `names`. (The context once held the name
    /// itself, a clone of the compiled graph's `Arc<str>`: every task of every run on every
    /// core bumped and dropped the same counts, and their cache lines moved between the
    /// cores at each step of sibling subgraphs.)
    node: usize,
    step: i64,
    remaining_steps: usize,
    run: Arc<RunInfo>,
    interrupts: Mutex<InterruptSlots>,
    /// Set when the run streams: what triggered the task, its own run id.
    streaming: Option<TaskStream>,
    /// Set when the run checkpoints: the task's deterministic id.
    task_id: Option<Arc<str>>,
    /// Whether a subgraph run of this task starts in a namespace nothing is stored under yet
    /// (taken by the first one: a retried call looks again).
    fresh: std::sync::atomic::AtomicBool,
    /// The node's own input, when a `Send::input` runs it.
    input: Option<AnyInput>,
}

#[derive(Debug, Clone)]
pub(crate) struct TaskStream {
    pub(crate) triggers: Vec<String>,
    pub(crate) run_id: String,
}

/// Run-wide facts shared by every task of a run.
pub(crate) struct RunInfo {
    pub(crate) run_id: Arc<str>,
    /// The graph's node names (the compiled graph's, shared: one count a run).
    pub(crate) names: Arc<[Arc<str>]>,
    pub(crate) config: RunConfig,
    /// Whether a checkpointer will persist a pause (interrupts need one).
    pub(crate) can_pause: bool,
    /// Where nodes stream to, when the caller streams.
    pub(crate) sink: Option<Arc<dyn NodeSink>>,
    /// Counters nodes add to (token usage); returned with the run's output.
    pub(crate) usage: Mutex<BTreeMap<String, u64>>,
    /// The run's namespace: the subgraph runs it is nested in (root for the root graph).
    pub(crate) ns: Namespace,
    /// The event stream's run ids enclosing this run's tasks, outermost first: the root
    /// graph's run, then for a subgraph each enclosing task's.
    pub(crate) event_parents: Vec<String>,
    /// The graph's runtime context, when it has one (see [`crate::Runtime`]).
    pub(crate) context: Option<AnyContext>,
    /// The run's writer to its checkpointer, when it checkpoints: its subgraphs checkpoint
    /// there too, in their namespace, through the same writer (so their checkpoints batch with
    /// the parent's and their siblings').
    pub(crate) writer: Option<crate::executor::Writer>,
    /// Set when the root run time-travels (continues from an older checkpoint): what its
    /// per-thread subgraphs load on their first call (see [`ReplayBound`]).
    pub(crate) replay: std::sync::OnceLock<Arc<ReplayBound>>,
}

/// A time-traveling run's bound for its per-thread subgraphs
/// ([`SubgraphCheckpoints::PerThread`](crate::SubgraphCheckpoints::PerThread)), LangGraph's
/// `ReplayState`: the first call of each such subgraph loads its latest checkpoint from before
/// `before` (the state it had at that point of the parent's history), later calls their
/// latest as usual. Shared by every level of the run.
#[derive(Debug)]
pub(crate) struct ReplayBound {
    pub(crate) before: Arc<str>,
    /// The checkpoints named for some namespaces ([`RunConfig::checkpoint_map`]).
    pub(crate) at: std::collections::BTreeMap<String, String>,
    visited: Mutex<std::collections::HashSet<String>>,
}

impl ReplayBound {
    pub(crate) fn new(before: Arc<str>, at: std::collections::BTreeMap<String, String>) -> Self {
        ReplayBound {
            before,
            at,
            visited: Mutex::new(std::collections::HashSet::new()),
        }
    }

    /// Whether this is the first call in namespace `ns` of the run.
    pub(crate) fn first_visit(&self, ns: &str) -> bool {
        match self.visited.lock() {
            Ok(mut visited) => visited.insert(ns.to_owned()),
            Err(_) => false,
        }
    }
}

impl std::fmt::Debug for RunInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunInfo")
            .field("run_id", &self.run_id)
            .field("config", &self.config)
            .field("can_pause", &self.can_pause)
            .field("streaming", &self.sink.is_some())
            .finish_non_exhaustive()
    }
}

impl NodeContext {
    pub(crate) fn new(
        node: usize,
        step: i64,
        remaining_steps: usize,
        run: Arc<RunInfo>,
        resume: Vec<serde_json::Value>,
        streaming: Option<TaskStream>,
        task_id: Option<Arc<str>>,
    ) -> Self {
        NodeContext {
            inner: Arc::new(TaskInfo {
                node,
                step,
                remaining_steps,
                run,
                interrupts: Mutex::new(InterruptSlots {
                    resume,
                    next: 0,
                    recorded: false,
                }),
                streaming,
                task_id,
                fresh: false.into(),
                input: None,
            }),
        }
    }

    /// The context of a task that runs on a node's own input (a `Send::input`); called on a
    /// context just made, before anything shares it.
    pub(crate) fn with_input(mut self, input: AnyInput) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(info) => info.input = Some(input),
            None => debug_assert!(false, "with_input on a shared NodeContext"),
        }
        self
    }

    /// The node's own input, when the task was sent one of type `I` (a
    /// [`Send::input`](crate::Send::input)); `None` for a task that runs on the state. Nodes
    /// made with [`input_node`](crate::input_node) or `#[node]` get it as their first argument;
    /// a hand-written [`Node`](crate::Node) reads it here.
    pub fn input<I: NodeInput>(&self) -> Option<I> {
        self.inner.input.as_ref()?.cloned::<I>()
    }

    /// The input of a node that takes one, or the error saying why there is none (the
    /// executor checks `Send`s against the node's input type, so this fails only for a node
    /// called outside a graph, or a hand-made spec whose declared type is not the one it reads).
    pub(crate) fn task_input<I: NodeInput>(&self) -> Result<I, crate::node::NodeError> {
        let error = |found: String| {
            crate::node::NodeError::Failed(Box::new(crate::error::GraphError::SendInput {
                from: "unknown".to_owned(),
                node: self.node().to_owned(),
                expected: format!("its own input `{}`", std::any::type_name::<I>()),
                found,
                fix: format!(
                    "run it through `Send::input(\"{}\", ..)` with a `{}`",
                    self.node(),
                    std::any::type_name::<I>()
                ),
            }))
        };
        match &self.inner.input {
            None => Err(error("no input".to_owned())),
            Some(input) => input
                .cloned::<I>()
                .ok_or_else(|| error(format!("an input `{}`", input.ty.name))),
        }
    }

    /// The task's id when the run checkpoints (subgraphs name their namespace after it).
    pub(crate) fn task_id(&self) -> Option<&str> {
        self.inner.task_id.as_deref()
    }

    /// Marks the task's namespace as new (see [`take_fresh`](Self::take_fresh)).
    pub(crate) fn with_fresh_namespace(self, fresh: bool) -> Self {
        self.inner
            .fresh
            .store(fresh, std::sync::atomic::Ordering::Relaxed);
        self
    }

    /// Whether a subgraph run of this task may skip looking for a stored checkpoint: its
    /// namespace is new. True once: a second call of the node (a retry) finds what the first
    /// one stored.
    pub(crate) fn take_fresh(&self) -> bool {
        self.inner
            .fresh
            .swap(false, std::sync::atomic::Ordering::Relaxed)
    }

    /// The resume values this task was given (a subgraph passes them to its paused task).
    pub(crate) fn resume_values(&self) -> Vec<serde_json::Value> {
        self.inner
            .interrupts
            .lock()
            .map(|slots| slots.resume.clone())
            .unwrap_or_default()
    }

    /// The run's long-term memory, if it has one: the run's
    /// [`RunConfig::store`](crate::RunConfig::store), else the compiled graph's
    /// [`with_store`](crate::CompiledGraph::with_store) (LangGraph's `runtime.store`).
    pub fn store(&self) -> Option<Arc<dyn crate::store::Store>> {
        self.inner.run.config.store.clone()
    }

    /// The run's writer to its checkpointer, if it checkpoints.
    pub(crate) fn writer(&self) -> Option<crate::executor::Writer> {
        self.inner.run.writer.clone()
    }

    /// The time-traveling run's bound for per-thread subgraphs, if the run time-travels.
    pub(crate) fn replay(&self) -> Option<Arc<ReplayBound>> {
        self.inner.run.replay.get().cloned()
    }

    /// A context outside any run, for calling a node directly (unit tests of nodes).
    pub fn detached(node: &str) -> Self {
        NodeContext::new(
            0,
            0,
            crate::config::DEFAULT_RECURSION_LIMIT,
            Arc::new(RunInfo {
                run_id: "detached".into(),
                names: Arc::from([Arc::from(node)]),
                config: RunConfig::default(),
                can_pause: false,
                sink: None,
                usage: Mutex::new(BTreeMap::new()),
                ns: Namespace::root(),
                event_parents: vec!["detached".to_owned()],
                context: None,
                writer: None,
                replay: std::sync::OnceLock::new(),
            }),
            Vec::new(),
            None,
            None,
        )
    }

    /// The node's name in the graph.
    pub fn node(&self) -> &str {
        &self.inner.run.names[self.inner.node]
    }

    /// The super-step this task runs in (LangGraph's `langgraph_step`: the first node of a
    /// thread runs in step 1).
    pub fn step(&self) -> i64 {
        self.inner.step
    }

    /// How many super-steps the run may still take, this one included: a node that sees 1
    /// runs in the last step the limit allows. LangGraph's `RemainingSteps` is one less (it
    /// leaves the current step out: 0 there in the last step, and its `IsLastStep` is true
    /// one step before it).
    pub fn remaining_steps(&self) -> usize {
        self.inner.remaining_steps
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.inner.run.run_id
    }

    /// The run's configuration (tags, metadata, thread id...).
    pub fn config(&self) -> &RunConfig {
        &self.inner.run.config
    }

    /// Pauses the run for human input. Returns the resume value when the run was resumed
    /// with one for this call (matched in call order within the node); otherwise returns
    /// [`Interrupted`], which the node must return so the run pauses.
    ///
    /// ```no_run
    /// # use agent_core::{BoxError, NodeContext};
    /// # async fn node(ctx: &NodeContext) -> Result<(), BoxError> {
    /// let answer = ctx.interrupt(serde_json::json!({"question": "ship it?"}))?;
    /// if answer == "yes" { /* ... */ }
    /// # Ok(()) }
    /// ```
    pub fn interrupt(
        &self,
        value: impl serde::Serialize,
    ) -> Result<serde_json::Value, Interrupted> {
        let value = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
        let mut slots = self
            .inner
            .interrupts
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let index = slots.next;
        slots.next += 1;
        match slots.resume.get(index) {
            Some(answer) => Ok(answer.clone()),
            None => Err(Interrupted {
                index,
                value,
                journal: Vec::new(),
            }),
        }
    }

    /// Like [`NodeContext::interrupt`], with the resume value deserialized into `T`.
    pub fn interrupt_as<T: serde::de::DeserializeOwned>(
        &self,
        value: impl serde::Serialize,
    ) -> Result<T, crate::BoxError> {
        let answer = self.interrupt(value)?;
        Ok(serde_json::from_value(answer)?)
    }

    /// Whether the caller streams `mode` (skip building chunks nobody reads).
    pub fn is_streaming(&self, mode: StreamMode) -> bool {
        self.inner
            .run
            .sink
            .as_ref()
            .is_some_and(|sink| sink.modes().has(mode))
    }

    fn meta(&self) -> StreamMeta {
        StreamMeta {
            node: self.node().to_owned(),
            step: self.inner.step,
            triggers: self
                .inner
                .streaming
                .as_ref()
                .map(|s| s.triggers.clone())
                .unwrap_or_default(),
            ns: self.inner.run.ns.clone(),
        }
    }

    /// The run's context, type-erased ([`crate::Runtime`] is the typed door).
    pub(crate) fn context_any(&self) -> Option<AnyContext> {
        self.inner.run.context.clone()
    }

    /// The namespace of the (sub)graph run this task belongs to (root in the root graph;
    /// `"<node>:<task_id>"` segments for subgraphs, see [`Namespace`]).
    pub fn ns(&self) -> &Namespace {
        &self.inner.run.ns
    }

    /// The event stream's run ids enclosing this task (see `RunInfo::event_parents`).
    pub(crate) fn event_parents(&self) -> &[String] {
        &self.inner.run.event_parents
    }

    pub(crate) fn sink(&self) -> Option<Arc<dyn NodeSink>> {
        self.inner.run.sink.clone()
    }

    async fn send(&self, part: NodePart) {
        if let Some(sink) = &self.inner.run.sink {
            // A consumer that went away cancels the run; nothing to do here.
            let _ = sink.send(part).await;
        }
    }

    /// Writes a value to the `custom` stream mode (LangGraph's `get_stream_writer()`).
    /// Waits while the consumer is behind, so a slow consumer slows the node down rather than
    /// growing memory.
    pub async fn write_custom(&self, value: impl serde::Serialize) {
        if !self.is_streaming(StreamMode::Custom) {
            return;
        }
        let value = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
        self.send(NodePart::Custom(value, self.meta())).await;
    }

    /// Writes an LLM message chunk (JSON) to the `messages` stream mode. Chat model
    /// integrations call this for every token as it arrives. Nothing is written when the
    /// run is tagged [`TAG_NOSTREAM`](crate::TAG_NOSTREAM); a call with tags of its own
    /// writes through [`write_message_tagged`](Self::write_message_tagged).
    pub async fn write_message(&self, chunk: serde_json::Value) {
        self.write_message_tagged(chunk, &[]).await;
    }

    /// Whether the chunks of a model call tagged `tags` reach the `messages` stream mode:
    /// the caller streams `messages`, and neither the call nor the run is tagged
    /// [`TAG_NOSTREAM`](crate::TAG_NOSTREAM) (LangGraph's rule). A call that streams for
    /// nothing else can then be a plain request.
    pub fn streams_messages(&self, tags: &[String]) -> bool {
        let nostream = |tags: &[String]| tags.iter().any(|t| t == crate::TAG_NOSTREAM);
        self.is_streaming(StreamMode::Messages)
            && !nostream(tags)
            && !nostream(&self.inner.run.config.tags)
    }

    /// Writes a chunk of a model call tagged `tags` (LangChain's run tags) to the `messages`
    /// stream mode, unless the call or the run is tagged
    /// [`TAG_NOSTREAM`](crate::TAG_NOSTREAM): an internal call (a router, a classifier, a
    /// verifier) is not streamed as a chat message.
    pub async fn write_message_tagged(&self, chunk: serde_json::Value, tags: &[String]) {
        if !self.streams_messages(tags) {
            return;
        }
        self.send(NodePart::Messages(chunk, self.meta())).await;
    }

    /// The run id of this task in the event stream (events of the node use it).
    pub fn task_run_id(&self) -> String {
        self.inner
            .streaming
            .as_ref()
            .map(|s| s.run_id.clone())
            .unwrap_or_default()
    }

    /// A fresh run id for something running inside this node (a model or tool call).
    pub fn child_run_id(&self) -> String {
        crate::ids::new_id()
    }

    /// Emits an `astream_events` v2 event from inside the node: `on_custom_event` for your own
    /// events, or `on_chat_model_*` / `on_tool_*` from integrations. `run_id` is the emitting
    /// runnable's id (`None`: this task's); parents are the graph and, for child runs, this
    /// task.
    pub async fn emit_event(
        &self,
        event: &str,
        name: &str,
        run_id: Option<&str>,
        data: serde_json::Value,
    ) {
        self.emit_event_tagged(event, name, run_id, data, &[]).await;
    }

    /// [`emit_event`](Self::emit_event) for a runnable with tags of its own (a model call's
    /// [`TAG_NOSTREAM`](crate::TAG_NOSTREAM)...): the event's tags are the run's, then
    /// these.
    pub async fn emit_event_tagged(
        &self,
        event: &str,
        name: &str,
        run_id: Option<&str>,
        data: serde_json::Value,
        tags: &[String],
    ) {
        if !self.is_streaming(StreamMode::Events) {
            return;
        }
        let task_run_id = self.task_run_id();
        let mut parent_ids = self.inner.run.event_parents.clone();
        let run_id = match run_id {
            Some(id) if id != task_run_id => {
                parent_ids.push(task_run_id);
                id.to_owned()
            }
            _ => task_run_id,
        };
        let config = &self.inner.run.config;
        let mut metadata = serde_json::json!({
            "langgraph_node": self.node(),
            "langgraph_step": self.inner.step,
            "langgraph_triggers": self.meta().triggers,
            "thread_id": config.thread_id,
        });
        add_namespace(&mut metadata, &self.inner.run.ns);
        let event = Event {
            event: event.to_owned(),
            name: name.to_owned(),
            run_id,
            parent_ids,
            tags: config.tags.iter().chain(tags).cloned().collect(),
            metadata,
            data,
        };
        self.send(NodePart::Event(event)).await;
    }

    /// Adds to a run-wide counter (e.g. `input_tokens`); the totals come back in
    /// [`RunOutput::usage`](crate::RunOutput).
    pub fn add_usage(&self, key: &str, amount: u64) {
        let mut usage = self
            .inner
            .run
            .usage
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *usage.entry(key.to_owned()).or_default() += amount;
    }

    /// Takes the next slot of the task's journal, in call order with `interrupt()` (the two
    /// share the slots: resume answers and recorded values). Returns the slot and what an
    /// earlier attempt of the task recorded there, if anything (a resume answer too, when the
    /// call order changed: the caller tells its own values apart). A node replays work it must
    /// not redo this way (LangGraph's `@task` results inside an entrypoint): slot it, and
    /// [`record`](Self::record) the result when there is none.
    pub fn journal_slot(&self) -> (usize, Option<serde_json::Value>) {
        let mut slots = self
            .inner
            .interrupts
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let index = slots.next;
        slots.next += 1;
        slots.recorded = true;
        (index, slots.resume.get(index).cloned())
    }

    /// Records `value` in slot `index` of the task's journal (from
    /// [`journal_slot`](Self::journal_slot); results may land out of order). When the task then
    /// pauses, the journal is kept with its interrupt (slots before the interrupt's; a slot
    /// never recorded reads back as `null`), and the resumed task finds it.
    pub fn record(&self, index: usize, value: serde_json::Value) {
        let mut slots = self
            .inner
            .interrupts
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if slots.resume.len() <= index {
            slots.resume.resize(index + 1, serde_json::Value::Null);
        }
        slots.resume[index] = value;
        slots.recorded = true;
    }

    /// The journal a pause at slot `index` keeps: the slots before it, when the node used its
    /// journal (empty otherwise: resume answers are kept as they come). Slots taken but never
    /// recorded are `null`, so the resume answer lands in the interrupt's slot.
    pub(crate) fn journal_before(&self, index: usize) -> Vec<serde_json::Value> {
        let slots = self
            .inner
            .interrupts
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if !slots.recorded {
            return Vec::new();
        }
        let mut journal: Vec<_> = slots.resume.iter().take(index).cloned().collect();
        journal.resize(index, serde_json::Value::Null);
        journal
    }

    /// The whole journal, when the node used it (kept when the task fails, so running the
    /// thread on replays what finished).
    pub(crate) fn journal(&self) -> Vec<serde_json::Value> {
        let slots = self
            .inner
            .interrupts
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if slots.recorded {
            slots.resume.clone()
        } else {
            Vec::new()
        }
    }

    /// Starts a new attempt: the node is called again from the top, so its `interrupt()`
    /// calls count from the first again and take the resume values in order. Retry layers
    /// call it before each attempt (agent-core's own, or one around a foreign function).
    pub fn restart_attempt(&self) {
        let mut slots = self
            .inner
            .interrupts
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        slots.next = 0;
    }
}

/// Puts a subgraph's namespace in an event's metadata, where LangGraph has it
/// (`langgraph_checkpoint_ns`, `checkpoint_ns`); the root graph's events have none.
pub(crate) fn add_namespace(metadata: &mut serde_json::Value, ns: &Namespace) {
    if ns.is_root() {
        return;
    }
    if let Some(map) = metadata.as_object_mut() {
        let joined = serde_json::Value::String(ns.to_string());
        map.insert("langgraph_checkpoint_ns".to_owned(), joined.clone());
        map.insert("checkpoint_ns".to_owned(), joined);
    }
}
