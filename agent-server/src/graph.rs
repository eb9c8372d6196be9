//! A compiled graph behind the API: erased over its state and context types.
//!
//! The HTTP side speaks JSON; a graph speaks its own `State`, `Update` and context types.
//! [`ServedGraph`] is the object-safe seam between them (as axum's `Handler` erases a
//! function's argument types): JSON input and commands in, LangGraph's stream events and
//! thread states out. [`Served`] implements it for any [`CompiledGraph`].

use std::collections::HashSet;
use std::sync::Arc;

use agent_core::{
    Command, CompiledGraph, Durability, GraphError, GraphState, Input, Interrupt, ListFilter,
    PendingTask, RunConfig, StateSnapshot, StreamMode, StreamModes,
};
use agent_llm::{HumanMessage, Message};
use async_trait::async_trait;
use futures::stream::BoxStream;
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::messages;
use crate::schema;
use crate::time::iso_ms;
use crate::translate::{Erased, Translator, async_stream};

/// A stream mode a client may ask for (`stream_mode` of a run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiMode {
    /// `values`: the state after the input and after each step.
    Values,
    /// `updates`: each node's update.
    Updates,
    /// `messages`: LLM tokens as accumulated messages (`messages/partial`...).
    Messages,
    /// `messages-tuple`: LLM tokens as `[chunk, metadata]` (event name `messages`).
    MessagesTuple,
    /// `custom`: what nodes wrote to the custom stream.
    Custom,
    /// `events`: astream_events v2.
    Events,
    /// `debug`: tasks and checkpoints.
    Debug,
    /// `tasks`: task starts and results.
    Tasks,
    /// `checkpoints`: each checkpoint written.
    Checkpoints,
}

impl ApiMode {
    /// Every mode by its wire name.
    pub const ALL: [(&'static str, ApiMode); 9] = [
        ("values", ApiMode::Values),
        ("updates", ApiMode::Updates),
        ("messages", ApiMode::Messages),
        ("messages-tuple", ApiMode::MessagesTuple),
        ("custom", ApiMode::Custom),
        ("events", ApiMode::Events),
        ("debug", ApiMode::Debug),
        ("tasks", ApiMode::Tasks),
        ("checkpoints", ApiMode::Checkpoints),
    ];

    /// The mode called `name`, or a 422 listing the known ones.
    pub fn parse(name: &str) -> Result<ApiMode, ApiError> {
        Self::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                let known: Vec<&str> = Self::ALL.iter().map(|(n, _)| *n).collect();
                ApiError::invalid(format!(
                    "'{name}' is not a stream mode; use one of: {}",
                    known.join(", ")
                ))
            })
    }

    /// The wire name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, m)| *m == self)
            .map(|(n, _)| *n)
            .unwrap_or("values")
    }

    /// The event names this mode produces (a join's `stream_mode` filter keeps these).
    pub fn event_names(self) -> &'static [&'static str] {
        match self {
            ApiMode::Messages => &["messages/metadata", "messages/partial", "messages/complete"],
            ApiMode::MessagesTuple => &["messages"],
            other => match other {
                ApiMode::Values => &["values"],
                ApiMode::Updates => &["updates"],
                ApiMode::Custom => &["custom"],
                ApiMode::Events => &["events"],
                ApiMode::Debug => &["debug"],
                ApiMode::Tasks => &["tasks"],
                _ => &["checkpoints"],
            },
        }
    }
}

/// What a run starts from.
#[derive(Debug, Clone, PartialEq)]
pub enum JobInput {
    /// New input: a partial state as JSON.
    Input(Value),
    /// A command: resume a pause, update, route.
    Command {
        /// What `interrupt()` returns.
        resume: Option<Value>,
        /// A partial state to write first.
        update: Option<Value>,
        /// Nodes to go to (a name or a list of names).
        goto: Option<Value>,
    },
    /// Continue the thread from its checkpoint (no input, no command).
    Continue,
}

/// One run of a graph, as the run queue hands it over.
#[derive(Clone)]
pub struct GraphJob {
    /// The saver the run writes its checkpoints through (the server's, behind the run's
    /// gate and fence); `None`: the graph's own.
    pub checkpointer: Option<Arc<dyn agent_core::Checkpointer>>,
    /// The run's id.
    pub run_id: String,
    /// The thread it runs on.
    pub thread_id: String,
    /// Input, command or nothing.
    pub input: JobInput,
    /// Start from (fork at) this checkpoint instead of the latest.
    pub checkpoint_id: Option<String>,
    /// The run's context (merged over the assistant's).
    pub context: Value,
    /// Pause before these nodes (`*`: all).
    pub interrupt_before: Vec<String>,
    /// Pause after these nodes (`*`: all).
    pub interrupt_after: Vec<String>,
    /// Super-step limit.
    pub recursion_limit: Option<usize>,
    /// The modes the client asked for.
    pub modes: Vec<ApiMode>,
    /// Whether subgraphs' events come through, named `<mode>|<ns>`.
    pub subgraphs: bool,
    /// Metadata recorded on its checkpoints and sent with message events.
    pub metadata: Map<String, Value>,
    /// How checkpoints are written.
    pub durability: Option<Durability>,
}

impl std::fmt::Debug for GraphJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphJob")
            .field("run_id", &self.run_id)
            .field("thread_id", &self.thread_id)
            .field("input", &self.input)
            .field("checkpoint_id", &self.checkpoint_id)
            .field("modes", &self.modes)
            .finish_non_exhaustive()
    }
}

/// How a run ended, as `/wait` and the thread report it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The state at the end (message fields as LangChain dicts).
    pub values: Value,
    /// Pauses: `{"id", "value"}` each, empty when the run finished.
    pub interrupts: Vec<Value>,
    /// Nodes that would run next (non-empty when paused).
    pub next: Vec<String>,
    /// The failure, when the run failed.
    pub error: Option<Failure>,
}

/// A failed run: LangGraph's `{"error": <kind>, "message": <text>}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The kind (`NodeError`, `GraphRecursionError`, `UserInterrupt`...).
    pub error: String,
    /// What happened.
    pub message: String,
}

impl Failure {
    /// `{"error", "message"}`.
    pub fn to_json(&self) -> Value {
        json!({"error": self.error, "message": self.message})
    }

    /// This failure with environment values taken out of its message (see `redact`).
    pub(crate) fn scrubbed(mut self) -> Failure {
        self.message = crate::redact::scrub(&self.message).into_owned();
        self
    }

    pub(crate) fn of(e: &GraphError) -> Failure {
        let debug = format!("{e:?}");
        let kind: String = debug
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        Failure {
            error: match kind.as_str() {
                "RecursionLimit" => "GraphRecursionError".to_owned(),
                "Node" => "NodeError".to_owned(),
                "" => "GraphError".to_owned(),
                k => k.to_owned(),
            },
            message: e.to_string(),
        }
    }
}

/// What a running graph sends: events for the client, then how it ended.
#[derive(Debug, Clone, PartialEq)]
pub enum GraphPart {
    /// An SSE event (`values`, `updates`, `messages`...; `<mode>|<ns>` for subgraphs).
    Event {
        /// The event name.
        name: String,
        /// Its data.
        data: Value,
    },
    /// The run ended (always the last item).
    Done(Outcome),
}

/// A graph the server runs, with the JSON face the API needs.
#[async_trait]
pub trait ServedGraph: Send + Sync + 'static {
    /// Whether a run's `context` fits the graph (a 422 naming what does not, before the
    /// run is queued).
    fn check_context(&self, context: &Value) -> Result<(), ApiError>;
    /// Whether a client's write to the state (a run's input, a command's `update`,
    /// `update_state`'s values) is one the server takes (see [`WriteCheck`]): a 422 naming
    /// what is not, before the run is queued.
    fn check_write(&self, values: &Value) -> Result<(), ApiError>;
    /// Starts a run; dropping the stream cancels it.
    fn start(&self, job: GraphJob) -> Result<BoxStream<'static, GraphPart>, ApiError>;
    /// The thread's state (LangGraph's ThreadState), latest or at `checkpoint_id`.
    async fn state(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
        subgraphs: bool,
    ) -> Result<Option<Value>, ApiError>;
    /// The thread's checkpoints under `ns` (`""`: the root graph's), newest first.
    async fn history(
        &self,
        thread_id: &str,
        ns: &str,
        filter: ListFilter,
    ) -> Result<Vec<Value>, ApiError>;
    /// Writes `values` as `as_node`; returns the new checkpoint's id.
    async fn update_state(
        &self,
        thread_id: &str,
        values: Value,
        as_node: Option<&str>,
        checkpoint_id: Option<&str>,
    ) -> Result<String, ApiError>;
    /// Deletes the thread's checkpoints.
    async fn delete_thread(&self, thread_id: &str) -> Result<(), ApiError>;
    /// Keeps only the thread's latest checkpoint (of each namespace); how many went.
    async fn keep_latest(&self, thread_id: &str) -> Result<usize, ApiError>;
    /// Copies the thread's latest state to a new thread (one `update` checkpoint).
    async fn copy_thread(&self, from: &str, to: &str) -> Result<(), ApiError>;
    /// The graph as LangGraph's `to_json` (`nodes`, `edges`), subgraphs drawn `xray`
    /// levels deep.
    fn drawing(&self, xray: usize) -> Value;
    /// Its subgraphs' schemas by namespace, as LangGraph's `get_subgraphs`: every subgraph
    /// node's (nested ones too, `a|b`, when `recurse`), or only the one at `namespace`.
    fn subgraphs(&self, namespace: Option<&str>, recurse: bool) -> Value;
    /// Input, output, state and context JSON Schemas.
    fn schemas(&self, graph_id: &str) -> Value;
    /// Node names (for `interrupt_before: "*"` and `as_node` checks).
    fn nodes(&self) -> Vec<String>;
}

/// Builds a graph's context from a run's `context` JSON.
pub type ContextFn<C> = Arc<dyn Fn(&Value) -> Result<C, String> + Send + Sync>;

/// Turns a chat turn (the one human message a chat client sent, whole: its id and content
/// blocks as sent, `content` their text) into the graph's input, with the run's `context`
/// JSON: how a graph whose input is more than its messages serves chat UIs. The input
/// should append that message to the graph's messages as it is, so the thread reads back
/// what the client sent.
pub type TurnFn<U> = Arc<dyn Fn(HumanMessage, &Value) -> Result<U, String> + Send + Sync>;

/// Checks a client's write to a graph's state, as JSON, before it is parsed: a run's input
/// (a chat turn's too), a command's `update`, `update_state`'s values (a thread's
/// `supersteps` included). An `Err` refuses the write with a 422 carrying its message. For
/// fields the client must not set or raise: those the server's operator bounds, or those the
/// graph only takes from the server.
pub type WriteCheck = Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

/// A [`CompiledGraph`] served through [`ServedGraph`].
pub struct Served<S: GraphState, C> {
    graph: CompiledGraph<S, C>,
    context: ContextFn<C>,
    write_check: Option<WriteCheck>,
    message_fields: Vec<&'static str>,
    context_schema: Option<Value>,
    turn: Option<TurnFn<S::Update>>,
}

impl<S: GraphState, C: Send + Sync + 'static> Served<S, C> {
    /// Serves `graph`, building each run's context with `context`.
    pub fn new(graph: CompiledGraph<S, C>, context: ContextFn<C>) -> Self {
        Served {
            graph,
            context,
            write_check: None,
            message_fields: messages::message_fields::<S>(),
            context_schema: None,
            turn: None,
        }
    }

    /// Builds the input of a chat turn with `turn`: when a run's input is only a messages
    /// field holding one human message, `turn(message, context)` makes the input instead.
    pub fn with_turns(mut self, turn: TurnFn<S::Update>) -> Self {
        self.turn = Some(turn);
        self
    }

    /// The message of a chat turn: an input object whose only key is a messages field
    /// holding exactly one human (or `user`) message.
    fn turn_message(&self, input: &Value) -> Option<HumanMessage> {
        let map = input.as_object()?;
        let (key, value) = map.iter().next().filter(|_| map.len() == 1)?;
        if !self.message_fields.contains(&key.as_str()) {
            return None;
        }
        let mut one = match value {
            Value::Array(items) if items.len() == 1 => items[0].clone(),
            Value::String(s) => json!({"type": "human", "content": s}),
            _ => return None,
        };
        let mut wrapper = json!({ key.clone(): [one.take()] });
        messages::incoming(&self.message_fields, &mut wrapper);
        match serde_json::from_value(wrapper[key.as_str()][0].take()) {
            Ok(Message::Human(human)) => Some(human),
            _ => None,
        }
    }

    /// Checks every client write to the state with `check` first.
    pub fn with_write_check(mut self, check: WriteCheck) -> Self {
        self.write_check = Some(check);
        self
    }

    fn checked_write(&self, values: &Value) -> Result<(), ApiError> {
        match &self.write_check {
            Some(check) => check(values).map_err(ApiError::invalid),
            None => Ok(()),
        }
    }

    /// Reports `schema` as the graph's `context_schema`.
    pub fn with_context_schema(mut self, schema: Value) -> Self {
        self.context_schema = Some(schema);
        self
    }

    fn state_json(&self, state: &S) -> Value {
        let mut v = serde_json::to_value(state.clone().into_update()).unwrap_or(Value::Null);
        messages::outgoing(&self.message_fields, &mut v);
        v
    }

    fn parse_update(&self, mut value: Value) -> Result<S::Update, ApiError> {
        self.checked_write(&value)?;
        messages::incoming(&self.message_fields, &mut value);
        serde_json::from_value(value)
            .map_err(|e| ApiError::invalid(format!("the values do not fit the graph's state: {e}")))
    }

    fn expand(&self, nodes: &[String]) -> Vec<String> {
        if nodes.iter().any(|n| n == "*") {
            self.nodes()
        } else {
            nodes.to_vec()
        }
    }

    fn input(&self, input: JobInput, context: &Value) -> Result<Input<S>, Failure> {
        let invalid = |e: ApiError| Failure {
            error: "InvalidInput".to_owned(),
            message: e.detail,
        };
        Ok(match input {
            JobInput::Continue => Input::Continue,
            JobInput::Input(value) => match (&self.turn, self.turn_message(&value)) {
                (Some(turn), Some(message)) => {
                    Input::Update(turn(message, context).map_err(|m| Failure {
                        error: "InvalidInput".to_owned(),
                        message: m,
                    })?)
                }
                _ => Input::Update(self.parse_update(value).map_err(invalid)?),
            },
            JobInput::Command {
                resume,
                update,
                goto,
            } => {
                let mut command = match resume {
                    Some(v) => Command::resume(v).map_err(|e| Failure::of(&e))?,
                    None => Command::default(),
                };
                if let Some(update) = update {
                    command.update = Some(self.parse_update(update).map_err(invalid)?);
                }
                match goto {
                    Some(Value::String(node)) => command = command.and_goto(node),
                    Some(Value::Array(nodes)) => {
                        for node in nodes {
                            match node {
                                Value::String(n) => command = command.and_goto(n),
                                other => {
                                    return Err(Failure {
                                        error: "InvalidInput".to_owned(),
                                        message: format!("goto takes node names, not {other}"),
                                    });
                                }
                            }
                        }
                    }
                    Some(Value::Null) | None => {}
                    Some(other) => {
                        return Err(Failure {
                            error: "InvalidInput".to_owned(),
                            message: format!(
                                "goto takes a node name or a list of them, not {other}"
                            ),
                        });
                    }
                }
                Input::Command(command)
            }
        })
    }

    fn snapshot_json(&self, snapshot: StateSnapshot<S>) -> Value {
        let thread = snapshot.config.thread_id.clone().unwrap_or_default();
        let checkpoint = |c: &RunConfig| {
            json!({
                "thread_id": thread,
                "checkpoint_ns": c.checkpoint_ns,
                "checkpoint_id": c.checkpoint_id,
            })
        };
        let parent = snapshot.parent_config.as_ref().map(checkpoint);
        json!({
            "values": self.state_json(&snapshot.values),
            "next": snapshot.next,
            "tasks": snapshot.tasks.iter().map(|t| task_json(&thread, t)).collect::<Vec<_>>(),
            "metadata": snapshot.metadata,
            "created_at": iso_ms(snapshot.created_at_ms),
            "checkpoint": checkpoint(&snapshot.config),
            "parent_checkpoint": parent,
            "interrupts": snapshot.interrupts.iter().map(interrupt_json).collect::<Vec<_>>(),
            "checkpoint_id": snapshot.config.checkpoint_id,
            "parent_checkpoint_id": snapshot.parent_config.as_ref().and_then(|c| c.checkpoint_id.clone()),
        })
    }
}

/// `{"id", "value"}` of a pause.
pub fn interrupt_json(i: &Interrupt) -> Value {
    json!({"id": i.id, "value": i.value})
}

/// A subgraph's state at one of its checkpoints, as a ThreadState.
fn subgraph_json(thread: &str, sub: &agent_core::SubgraphSnapshot) -> Value {
    json!({
        "values": sub.values,
        "next": sub.next,
        "tasks": sub.tasks.iter().map(|t| task_json(thread, t)).collect::<Vec<_>>(),
        "metadata": {"step": sub.step, "checkpoint_ns": sub.checkpoint_ns},
        "created_at": null,
        "checkpoint": {"thread_id": thread, "checkpoint_ns": sub.checkpoint_ns, "checkpoint_id": sub.checkpoint_id},
        "parent_checkpoint": null,
        "interrupts": sub.interrupts.iter().map(interrupt_json).collect::<Vec<_>>(),
        "checkpoint_id": sub.checkpoint_id,
    })
}

fn task_json(thread: &str, t: &PendingTask) -> Value {
    let state = t.subgraph.as_ref().map(|sub| subgraph_json(thread, sub));
    json!({
        "id": t.id,
        "name": t.node,
        "path": ["__pregel_pull", t.node],
        "error": t.error,
        "interrupts": t.interrupts.iter().map(interrupt_json).collect::<Vec<_>>(),
        "checkpoint": null,
        "state": state,
        "result": null,
    })
}

/// A read of a thread's checkpoints that may meet the thread mid-change: a checkpoint
/// listed, then deleted with its blobs (a rollback, a prune) before its blobs are read. Such
/// a read is made again (a few times, a moment apart); a checkpoint that still cannot be
/// restored then is corrupt, and says so.
async fn settled<T, F, Fut>(read: F) -> Result<T, ApiError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, GraphError>>,
{
    let mut tries = 0;
    loop {
        match read().await {
            Err(GraphError::CorruptCheckpoint { .. }) if tries < 3 => {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(20 * tries)).await;
            }
            done => return done.map_err(core_error),
        }
    }
}

pub(crate) fn core_error(e: GraphError) -> ApiError {
    match e {
        GraphError::UnknownNode { name, .. } => {
            ApiError::bad_request(format!("Node {name} does not exist"))
        }
        GraphError::InvalidInput(m) => ApiError::bad_request(m),
        e @ GraphError::CheckpointNotFound { .. } => ApiError::not_found(e.to_string()),
        // The checkpoint store failed (down, restarting, full): worth trying again.
        e @ GraphError::Storage { .. } => ApiError::unavailable(e.to_string()),
        other => ApiError::internal(other.to_string()),
    }
}

#[async_trait]
impl<S: GraphState, C: Send + Sync + 'static> ServedGraph for Served<S, C> {
    fn check_context(&self, context: &Value) -> Result<(), ApiError> {
        (self.context)(context)
            .map(|_| ())
            .map_err(ApiError::invalid)
    }

    fn check_write(&self, values: &Value) -> Result<(), ApiError> {
        self.checked_write(values)
    }

    fn start(&self, job: GraphJob) -> Result<BoxStream<'static, GraphPart>, ApiError> {
        let context = (self.context)(&job.context).map_err(ApiError::invalid)?;
        let graph = self.graph.with_context(context);
        let mut config = RunConfig::default()
            .thread_id(job.thread_id.clone())
            .run_id(job.run_id.clone())
            .interrupt_before(self.expand(&job.interrupt_before))
            .interrupt_after(self.expand(&job.interrupt_after));
        if let Some(limit) = job.recursion_limit {
            config = config.recursion_limit(limit);
        }
        if let Some(id) = &job.checkpoint_id {
            config = config.checkpoint_id(id.clone());
        }
        if let Some(d) = job.durability {
            config = config.durability(d);
        }
        if let Some(saver) = job.checkpointer {
            config = config.checkpointer(saver);
        }
        for (k, v) in &job.metadata {
            config = config.metadata(k.clone(), v.clone());
        }
        let asked: HashSet<ApiMode> = job.modes.iter().copied().collect();
        let mut modes = StreamModes::NONE.with(StreamMode::Values);
        if asked.contains(&ApiMode::Updates)
            || asked.contains(&ApiMode::Messages)
            || asked.contains(&ApiMode::MessagesTuple)
        {
            modes = modes.with(StreamMode::Updates);
        }
        if asked.contains(&ApiMode::Messages) || asked.contains(&ApiMode::MessagesTuple) {
            modes = modes.with(StreamMode::Messages);
        }
        if asked.contains(&ApiMode::Custom) {
            modes = modes.with(StreamMode::Custom);
        }
        if asked.contains(&ApiMode::Events) {
            modes = modes.with(StreamMode::Events);
        }
        if asked.contains(&ApiMode::Debug)
            || asked.contains(&ApiMode::Tasks)
            || asked.contains(&ApiMode::Checkpoints)
        {
            modes = modes.with(StreamMode::Debug);
        }
        if job.subgraphs {
            // Subgraphs' parts too, named `<mode>|<ns>` by the translator.
            modes = modes.with_subgraphs();
        }
        let translator = Translator::new(
            asked,
            job.subgraphs,
            self.message_fields.clone(),
            job.metadata.clone(),
            job.thread_id.clone(),
        );
        let input = self.input(job.input, &job.context);
        let this = Erased {
            fields: self.message_fields.clone(),
        };
        let stream = async_stream(graph, input, config, modes, translator, this);
        Ok(stream)
    }

    async fn state(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
        subgraphs: bool,
    ) -> Result<Option<Value>, ApiError> {
        let mut config = RunConfig::default().thread_id(thread_id);
        if let Some(id) = checkpoint_id {
            config = config.checkpoint_id(id);
        }
        let snapshot = settled(|| async {
            if subgraphs {
                self.graph.get_state_with_subgraphs(&config).await
            } else {
                self.graph.get_state(&config).await
            }
        })
        .await?;
        Ok(snapshot.map(|s| self.snapshot_json(s)))
    }

    async fn history(
        &self,
        thread_id: &str,
        ns: &str,
        filter: ListFilter,
    ) -> Result<Vec<Value>, ApiError> {
        if !ns.is_empty() {
            // A subgraph's checkpoints: its state type is erased in its node, so its values
            // come as JSON, field by field.
            let config = RunConfig::default()
                .thread_id(thread_id)
                .checkpoint_ns(ns.to_owned());
            let snapshots =
                settled(|| async { self.graph.get_subgraph_history(&config, &filter).await })
                    .await?;
            return Ok(snapshots
                .iter()
                .map(|sub| subgraph_json(thread_id, sub))
                .collect());
        }
        let config = RunConfig::default().thread_id(thread_id);
        let snapshots =
            settled(|| async { self.graph.get_state_history(&config, &filter).await }).await?;
        Ok(snapshots
            .into_iter()
            .map(|s| self.snapshot_json(s))
            .collect())
    }

    async fn update_state(
        &self,
        thread_id: &str,
        values: Value,
        as_node: Option<&str>,
        checkpoint_id: Option<&str>,
    ) -> Result<String, ApiError> {
        let values = match values {
            Value::Null => json!({}),
            v @ Value::Object(_) => v,
            other => {
                return Err(ApiError::invalid(format!(
                    "values must be an object of state fields, not {other}"
                )));
            }
        };
        let update = self.parse_update(values)?;
        let mut config = RunConfig::default().thread_id(thread_id);
        if let Some(id) = checkpoint_id {
            config = config.checkpoint_id(id);
        }
        let written = self
            .graph
            .update_state(&config, update, as_node)
            .await
            .map_err(core_error)?;
        Ok(written.checkpoint_id.unwrap_or_default())
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), ApiError> {
        self.graph
            .delete_thread(thread_id)
            .await
            .map_err(core_error)
    }

    async fn keep_latest(&self, thread_id: &str) -> Result<usize, ApiError> {
        let Some(saver) = self.graph.checkpointer() else {
            return Ok(0);
        };
        // Each namespace's newest: the root's and every subgraph's (a paused subgraph
        // resumes from its own).
        saver.keep_latest(thread_id).await.map_err(core_error)
    }

    async fn copy_thread(&self, from: &str, to: &str) -> Result<(), ApiError> {
        let config = RunConfig::default().thread_id(from);
        let Some(snapshot) = self.graph.get_state(&config).await.map_err(core_error)? else {
            return Ok(());
        };
        let target = RunConfig::default().thread_id(to);
        self.graph
            .update_state(&target, snapshot.values.into_update(), None)
            .await
            .map_err(core_error)?;
        Ok(())
    }

    fn drawing(&self, xray: usize) -> Value {
        crate::drawing::to_json(self.graph.topology(), xray)
    }

    fn subgraphs(&self, namespace: Option<&str>, recurse: bool) -> Value {
        let root = self.graph.topology();
        let mut out = Map::new();
        for (ns, sub) in schema::subgraphs_at(root, namespace, recurse) {
            // A subgraph with the graph's context type takes the same context; one with a
            // type of its own was given its own, whose schema is not known here.
            let context = (sub.context_type.is_some() && sub.context_type == root.context_type)
                .then_some(self.context_schema.as_ref());
            let name = ns.rsplit('|').next().unwrap_or_default();
            let schemas = schema::graph_schemas(&sub.fields, &format!("{name}_state"), context);
            out.insert(ns, Value::Object(schemas));
        }
        Value::Object(out)
    }

    fn schemas(&self, graph_id: &str) -> Value {
        let mut out = Map::new();
        out.insert("graph_id".into(), graph_id.into());
        out.extend(schema::graph_schemas(
            S::fields(),
            &format!("{graph_id}_state"),
            Some(self.context_schema.as_ref()),
        ));
        Value::Object(out)
    }

    fn nodes(&self) -> Vec<String> {
        self.graph.topology().nodes.clone()
    }
}
