//! A compiled graph behind the API: erased over its state and context types.
//!
//! The HTTP side speaks JSON; a graph speaks its own `State`, `Update` and context types.
//! [`ServedGraph`] is the object-safe seam between them (as axum's `Handler` erases a
//! function's argument types): JSON input and commands in, LangGraph's stream events and
//! thread states out. [`Served`] implements it for any [`CompiledGraph`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use agent_core::{
    Command, CompiledGraph, DebugEvent, Durability, GraphError, GraphState, Input, Interrupt,
    ListFilter, PendingTask, RunConfig, StateSnapshot, StreamMode, StreamModes, StreamPart,
};
use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::messages;
use crate::time::iso_ms;

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
#[derive(Debug, Clone)]
pub struct GraphJob {
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

    fn of(e: &GraphError) -> Failure {
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
    /// Starts a run; dropping the stream cancels it.
    fn start(&self, job: GraphJob) -> Result<BoxStream<'static, GraphPart>, ApiError>;
    /// The thread's state (LangGraph's ThreadState), latest or at `checkpoint_id`.
    async fn state(
        &self,
        thread_id: &str,
        checkpoint_id: Option<&str>,
        subgraphs: bool,
    ) -> Result<Option<Value>, ApiError>;
    /// Checkpoints, newest first.
    async fn history(&self, thread_id: &str, filter: ListFilter) -> Result<Vec<Value>, ApiError>;
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
    /// Copies the thread's latest state to a new thread (one `update` checkpoint).
    async fn copy_thread(&self, from: &str, to: &str) -> Result<(), ApiError>;
    /// The graph as LangGraph's `to_json` (`nodes`, `edges`).
    fn drawing(&self) -> Value;
    /// Input, output, state and context JSON Schemas.
    fn schemas(&self, graph_id: &str) -> Value;
    /// Node names (for `interrupt_before: "*"` and `as_node` checks).
    fn nodes(&self) -> Vec<String>;
}

/// Builds a graph's context from a run's `context` JSON.
pub type ContextFn<C> = Arc<dyn Fn(&Value) -> Result<C, String> + Send + Sync>;

/// Turns a chat turn (the text of the one human message a chat client sent) into the
/// graph's input, with the run's `context` JSON: how a graph whose input is more than
/// its messages serves chat UIs.
pub type TurnFn<U> = Arc<dyn Fn(&str, &Value) -> Result<U, String> + Send + Sync>;

/// A [`CompiledGraph`] served through [`ServedGraph`].
pub struct Served<S: GraphState, C> {
    graph: CompiledGraph<S, C>,
    context: ContextFn<C>,
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
            message_fields: messages::message_fields::<S>(),
            context_schema: None,
            turn: None,
        }
    }

    /// Builds the input of a chat turn with `turn`: when a run's input is only a messages
    /// field holding one human message, `turn(text, context)` makes the input instead.
    pub fn with_turns(mut self, turn: TurnFn<S::Update>) -> Self {
        self.turn = Some(turn);
        self
    }

    /// The text of a chat turn: an input object whose only key is a messages field holding
    /// exactly one human (or `user`) message.
    fn turn_text(&self, input: &Value) -> Option<String> {
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
        let m = &wrapper[key.as_str()][0];
        (m["type"] == "human").then(|| m["content"].as_str().unwrap_or_default().to_owned())
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
            JobInput::Input(value) => match (&self.turn, self.turn_text(&value)) {
                (Some(turn), Some(text)) => {
                    Input::Update(turn(&text, context).map_err(|m| Failure {
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

fn task_json(thread: &str, t: &PendingTask) -> Value {
    let state = t.subgraph.as_ref().map(|sub| {
        json!({
            "values": sub.values,
            "next": sub.next,
            "tasks": sub.tasks.iter().map(|t| task_json(thread, t)).collect::<Vec<_>>(),
            "metadata": {"step": sub.step, "checkpoint_ns": sub.checkpoint_ns},
            "created_at": null,
            "checkpoint": {"thread_id": thread, "checkpoint_ns": sub.checkpoint_ns, "checkpoint_id": sub.checkpoint_id},
            "parent_checkpoint": null,
            "interrupts": sub.interrupts.iter().map(interrupt_json).collect::<Vec<_>>(),
        })
    });
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

fn core_error(e: GraphError) -> ApiError {
    match e {
        GraphError::UnknownNode { name, .. } => {
            ApiError::bad_request(format!("Node {name} does not exist"))
        }
        GraphError::InvalidInput(m) => ApiError::bad_request(m),
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
        let translator = Translator {
            asked,
            subgraphs: job.subgraphs,
            fields: self.message_fields.clone(),
            metadata: job.metadata.clone(),
            thread_id: job.thread_id.clone(),
            streamed: HashMap::new(),
            streamed_nodes: HashSet::new(),
            seen: HashSet::new(),
            last_values: Value::Null,
        };
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
        let snapshot = if subgraphs {
            self.graph.get_state_with_subgraphs(&config).await
        } else {
            self.graph.get_state(&config).await
        }
        .map_err(core_error)?;
        Ok(snapshot.map(|s| self.snapshot_json(s)))
    }

    async fn history(&self, thread_id: &str, filter: ListFilter) -> Result<Vec<Value>, ApiError> {
        let config = RunConfig::default().thread_id(thread_id);
        let snapshots = self
            .graph
            .get_state_history(&config, &filter)
            .await
            .map_err(core_error)?;
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

    fn drawing(&self) -> Value {
        let t = self.graph.topology();
        let mut nodes =
            vec![json!({"id": "__start__", "type": "runnable", "data": {"name": "__start__"}})];
        nodes.extend(
            t.nodes
                .iter()
                .map(|n| json!({"id": n, "type": "runnable", "data": {"name": n}})),
        );
        nodes.push(json!({"id": "__end__", "type": "runnable", "data": {"name": "__end__"}}));
        let mut edges: Vec<Value> = t
            .edges
            .iter()
            .map(|(a, b)| json!({"source": a, "target": b}))
            .collect();
        let mut seen = HashSet::new();
        for (from, _, to) in &t.conditional {
            if seen.insert((from.clone(), to.clone())) {
                edges.push(json!({"source": from, "target": to, "conditional": true}));
            }
        }
        for (from, to) in &t.commands {
            if seen.insert((from.clone(), to.clone())) {
                edges.push(json!({"source": from, "target": to, "conditional": true}));
            }
        }
        json!({"nodes": nodes, "edges": edges})
    }

    fn schemas(&self, graph_id: &str) -> Value {
        let message_ref = json!({"oneOf": [
            {"$ref": "#/$defs/HumanMessage"}, {"$ref": "#/$defs/AIMessage"},
            {"$ref": "#/$defs/ToolMessage"}, {"$ref": "#/$defs/SystemMessage"}]});
        let mut props = Map::new();
        for f in S::fields() {
            let schema = if self.message_fields.contains(&f.name) {
                json!({"type": "array", "items": message_ref, "title": title(f.name)})
            } else {
                json!({"title": title(f.name)})
            };
            props.insert(f.name.to_owned(), schema);
        }
        let defs = message_defs();
        let names: Vec<&str> = S::fields().iter().map(|f| f.name).collect();
        let io = json!({"$defs": defs, "properties": props, "title": "State", "type": "object"});
        let mut state_props = props.clone();
        for v in state_props.values_mut() {
            if let Some(o) = v.as_object_mut() {
                o.insert("default".to_owned(), Value::Null);
            }
        }
        let _ = names;
        json!({
            "graph_id": graph_id,
            "input_schema": io,
            "output_schema": io,
            "state_schema": {"$defs": defs, "properties": state_props, "title": format!("{graph_id}_state"), "type": "object"},
            "config_schema": self.context_schema.clone().unwrap_or_else(|| json!({})),
            "context_schema": self.context_schema.clone(),
        })
    }

    fn nodes(&self) -> Vec<String> {
        self.graph.topology().nodes.clone()
    }
}

fn title(name: &str) -> String {
    name.split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// JSON Schemas of the message dicts a messages field holds (Studio renders a chat box
/// for a field whose items reference them).
fn message_defs() -> Value {
    let def = |kind: &str, name: &str, extra: Value| {
        let mut props = json!({
            "content": {"anyOf": [{"type": "string"}, {"type": "array", "items": {}}], "title": "Content"},
            "additional_kwargs": {"type": "object", "title": "Additional Kwargs"},
            "response_metadata": {"type": "object", "title": "Response Metadata"},
            "type": {"const": kind, "default": kind, "title": "Type", "type": "string"},
            "name": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Name"},
            "id": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Id"},
        });
        if let (Some(p), Value::Object(e)) = (props.as_object_mut(), extra) {
            p.extend(e);
        }
        let required: Vec<&str> = if kind == "tool" {
            vec!["content", "tool_call_id"]
        } else {
            vec!["content"]
        };
        json!({"additionalProperties": true, "properties": props, "required": required, "title": name, "type": "object"})
    };
    json!({
        "HumanMessage": def("human", "HumanMessage", json!({})),
        "AIMessage": def("ai", "AIMessage", json!({"tool_calls": {"type": "array", "items": {"type": "object"}, "title": "Tool Calls"}})),
        "ToolMessage": def("tool", "ToolMessage", json!({"tool_call_id": {"type": "string", "title": "Tool Call Id"}})),
        "SystemMessage": def("system", "SystemMessage", json!({})),
    })
}

/// What a run's stream needs of the graph without its types.
struct Erased {
    fields: Vec<&'static str>,
}

/// Turns the runtime's typed stream parts into LangGraph's events.
struct Translator {
    asked: HashSet<ApiMode>,
    subgraphs: bool,
    fields: Vec<&'static str>,
    metadata: Map<String, Value>,
    thread_id: String,
    /// Per (node, step, ns): the id of the message being streamed and its text so far.
    streamed: HashMap<(String, i64, Vec<String>), (String, String)>,
    /// Nodes (node, step) that streamed tokens: their whole messages are not sent again.
    streamed_nodes: HashSet<(String, i64)>,
    /// Message ids already sent whole.
    seen: HashSet<String>,
    last_values: Value,
}

impl Translator {
    fn wants(&self, mode: ApiMode) -> bool {
        self.asked.contains(&mode)
    }

    fn name(&self, base: &str, ns: &[String]) -> Option<String> {
        if ns.is_empty() {
            Some(base.to_owned())
        } else if self.subgraphs {
            Some(format!("{base}|{}", ns.join("|")))
        } else {
            None
        }
    }

    fn message_meta(&self, node: &str, step: i64, triggers: &[String], ns: &[String]) -> Value {
        let mut meta = self.metadata.clone();
        let checkpoint_ns = if ns.is_empty() {
            node.to_owned()
        } else {
            ns.join("|")
        };
        meta.insert("thread_id".into(), self.thread_id.clone().into());
        meta.insert("langgraph_step".into(), step.into());
        meta.insert("langgraph_node".into(), node.into());
        meta.insert("langgraph_triggers".into(), json!(triggers));
        meta.insert("langgraph_path".into(), json!(["__pregel_pull", node]));
        meta.insert(
            "langgraph_checkpoint_ns".into(),
            checkpoint_ns.clone().into(),
        );
        meta.insert("checkpoint_ns".into(), checkpoint_ns.into());
        Value::Object(meta)
    }

    fn push(out: &mut Vec<GraphPart>, name: Option<String>, data: Value) {
        if let Some(name) = name {
            out.push(GraphPart::Event { name, data });
        }
    }

    fn translate<S: GraphState>(&mut self, erased: &Erased, part: StreamPart<S>) -> Vec<GraphPart> {
        let mut out = Vec::new();
        match part {
            StreamPart::Values(state) => {
                let mut v =
                    serde_json::to_value((*state).clone().into_update()).unwrap_or(Value::Null);
                messages::outgoing(&erased.fields, &mut v);
                if let Some(list) = self
                    .fields
                    .first()
                    .and_then(|f| v.get(*f))
                    .and_then(Value::as_array)
                {
                    // Messages already in the state (the input's) are not sent as new.
                    for m in list {
                        if let Some(id) = m.get("id").and_then(Value::as_str)
                            && self.last_values.is_null()
                        {
                            self.seen.insert(id.to_owned());
                        }
                    }
                }
                self.last_values = v.clone();
                if self.wants(ApiMode::Values) {
                    out.push(GraphPart::Event {
                        name: "values".into(),
                        data: v,
                    });
                }
            }
            StreamPart::Updates { node, update } => {
                let mut v = serde_json::to_value(&update).unwrap_or(Value::Null);
                messages::outgoing(&erased.fields, &mut v);
                if self.wants(ApiMode::Messages) || self.wants(ApiMode::MessagesTuple) {
                    self.whole_messages(&node, &v, &mut out);
                }
                if self.wants(ApiMode::Updates) {
                    let data = if v.as_object().is_some_and(Map::is_empty) {
                        Value::Null
                    } else {
                        v
                    };
                    out.push(GraphPart::Event {
                        name: "updates".into(),
                        data: json!({ node: data }),
                    });
                }
            }
            StreamPart::Messages { chunk, meta } => {
                self.chunk(
                    chunk,
                    &meta.node,
                    meta.step,
                    &meta.triggers,
                    &meta.ns,
                    &mut out,
                );
            }
            StreamPart::Custom { value, meta } => {
                if self.wants(ApiMode::Custom) {
                    Self::push(&mut out, self.name("custom", &meta.ns), value);
                }
            }
            StreamPart::Event(event) => {
                if self.wants(ApiMode::Events) {
                    out.push(GraphPart::Event {
                        name: "events".into(),
                        data: serde_json::to_value(&event).unwrap_or(Value::Null),
                    });
                }
            }
            StreamPart::Debug(debug) => self.debug(debug, &mut out),
        }
        out
    }

    fn whole_messages(&mut self, node: &str, update: &Value, out: &mut Vec<GraphPart>) {
        if node == "__start__" {
            return;
        }
        for field in &self.fields {
            let Some(list) = update.get(*field).and_then(Value::as_array) else {
                continue;
            };
            for m in list {
                let id = m
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let kind = m.get("type").and_then(Value::as_str).unwrap_or_default();
                if (!id.is_empty() && !self.seen.insert(id.clone()))
                    || (kind == "ai" && self.streamed_nodes.iter().any(|(n, _)| n == node))
                {
                    continue;
                }
                let meta = self.message_meta(node, -1, &[], &[]);
                if self.wants(ApiMode::MessagesTuple) {
                    out.push(GraphPart::Event {
                        name: "messages".into(),
                        data: json!([m, meta]),
                    });
                }
                if self.wants(ApiMode::Messages) {
                    out.push(GraphPart::Event {
                        name: "messages/metadata".into(),
                        data: json!({ id.clone(): {"metadata": meta} }),
                    });
                    out.push(GraphPart::Event {
                        name: "messages/complete".into(),
                        data: json!([m]),
                    });
                }
            }
        }
    }

    fn chunk(
        &mut self,
        chunk: Value,
        node: &str,
        step: i64,
        triggers: &[String],
        ns: &[String],
        out: &mut Vec<GraphPart>,
    ) {
        use agent_llm::ChatChunk;
        let Ok(chunk) = serde_json::from_value::<ChatChunk>(chunk) else {
            return;
        };
        let key = (node.to_owned(), step, ns.to_vec());
        self.streamed_nodes.insert((node.to_owned(), step));
        let fresh_id = || format!("run--{}", uuid::Uuid::new_v4());
        let (piece, calls, last) = match chunk {
            ChatChunk::Start { id, .. } => {
                let id = id.unwrap_or_else(fresh_id);
                self.streamed.insert(key, (id, String::new()));
                return;
            }
            ChatChunk::Text { text } => (text, Vec::new(), false),
            ChatChunk::ToolCall(tc) => (
                String::new(),
                vec![
                    json!({"name": tc.name, "args": tc.args, "id": tc.id, "index": tc.index, "type": "tool_call_chunk"}),
                ],
                false,
            ),
            ChatChunk::Finish { .. } => (String::new(), Vec::new(), true),
            ChatChunk::Reasoning { .. } | ChatChunk::Usage { .. } => return,
        };
        let entry = self
            .streamed
            .entry(key.clone())
            .or_insert_with(|| (fresh_id(), String::new()));
        let first = entry.1.is_empty() && !last;
        entry.1.push_str(&piece);
        let (id, text) = entry.clone();
        if last {
            self.streamed.remove(&key);
            self.seen.insert(id.clone());
        }
        let meta = self.message_meta(node, step, triggers, ns);
        if self.wants(ApiMode::MessagesTuple) {
            let name = self.name("messages", ns);
            Self::push(
                out,
                name,
                json!([messages::chunk_dict(&id, &piece, calls.clone(), last), meta]),
            );
        }
        if self.wants(ApiMode::Messages) && (!piece.is_empty() || !calls.is_empty()) {
            if first {
                out.push(GraphPart::Event {
                    name: "messages/metadata".into(),
                    data: json!({ id.clone(): {"metadata": meta} }),
                });
            }
            let mut whole = messages::chunk_dict(&id, &text, calls, false);
            whole["type"] = "ai".into();
            out.push(GraphPart::Event {
                name: "messages/partial".into(),
                data: json!([whole]),
            });
        }
    }

    fn debug(&mut self, debug: DebugEvent, out: &mut Vec<GraphPart>) {
        let now = crate::time::now_iso();
        let (kind, step, payload) = match debug {
            DebugEvent::Task {
                step,
                node,
                triggers,
            } => {
                let task = json!({"id": format!("{step}:{node}"), "name": node, "input": null, "triggers": triggers});
                if self.wants(ApiMode::Tasks) {
                    out.push(GraphPart::Event {
                        name: "tasks".into(),
                        data: task.clone(),
                    });
                }
                ("task", step, task)
            }
            DebugEvent::TaskResult {
                step,
                node,
                result,
                error,
            } => {
                let task = json!({"id": format!("{step}:{node}"), "name": node, "error": error, "result": result, "interrupts": []});
                if self.wants(ApiMode::Tasks) {
                    out.push(GraphPart::Event {
                        name: "tasks".into(),
                        data: task.clone(),
                    });
                }
                ("task_result", step, task)
            }
            DebugEvent::Checkpoint {
                step,
                checkpoint_id,
                next,
            } => {
                let checkpoint = json!({
                    "config": {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}},
                    "values": self.last_values,
                    "metadata": {"step": step},
                    "next": next,
                    "tasks": next.iter().map(|n| json!({"name": n, "interrupts": [], "state": null})).collect::<Vec<_>>(),
                });
                if self.wants(ApiMode::Checkpoints) {
                    out.push(GraphPart::Event {
                        name: "checkpoints".into(),
                        data: checkpoint.clone(),
                    });
                }
                ("checkpoint", step, checkpoint)
            }
        };
        if self.wants(ApiMode::Debug) {
            out.push(GraphPart::Event {
                name: "debug".into(),
                data: json!({"step": step, "timestamp": now, "type": kind, "payload": payload}),
            });
        }
    }
}

fn async_stream<S: GraphState, C: Send + Sync + 'static>(
    graph: CompiledGraph<S, C>,
    input: Result<Input<S>, Failure>,
    config: RunConfig,
    modes: StreamModes,
    mut translator: Translator,
    erased: Erased,
) -> BoxStream<'static, GraphPart> {
    let (tx, rx) = tokio::sync::mpsc::channel::<GraphPart>(64);
    let interrupt_before_pause =
        !config.interrupt_before.is_empty() || !config.interrupt_after.is_empty();
    tokio::spawn(async move {
        let input = match input {
            Ok(input) => input,
            Err(failure) => {
                let _ = tx
                    .send(GraphPart::Done(Outcome {
                        values: Value::Null,
                        interrupts: Vec::new(),
                        next: Vec::new(),
                        error: Some(failure),
                    }))
                    .await;
                return;
            }
        };
        let mut stream = graph.stream(input, config, modes);
        let mut failure = None;
        while let Some(part) = stream.next().await {
            match part {
                Ok(part) => {
                    for event in translator.translate(&erased, part) {
                        if tx.send(event).await.is_err() {
                            return; // the run's consumer went away: dropping `stream` cancels it
                        }
                    }
                }
                Err(e) => {
                    failure = Some(Failure::of(&e));
                    break;
                }
            }
        }
        let outcome = match failure {
            Some(f) => Outcome {
                values: translator.last_values.clone(),
                interrupts: Vec::new(),
                next: Vec::new(),
                error: Some(f),
            },
            None => match stream.into_output().await {
                Ok(output) => {
                    let mut values =
                        serde_json::to_value(output.state.into_update()).unwrap_or(Value::Null);
                    messages::outgoing(&erased.fields, &mut values);
                    let interrupts: Vec<Value> =
                        output.interrupts.iter().map(interrupt_json).collect();
                    let paused = !output.next.is_empty();
                    if paused {
                        let with_schema: Vec<Value> = interrupts
                            .iter()
                            .map(|i| json!({"value": i["value"], "id": i["id"], "response_schema": null}))
                            .collect();
                        if translator.wants(ApiMode::Updates)
                            && (!with_schema.is_empty() || interrupt_before_pause)
                        {
                            let _ = tx
                                .send(GraphPart::Event {
                                    name: "updates".into(),
                                    data: json!({"__interrupt__": with_schema}),
                                })
                                .await;
                        }
                        if translator.wants(ApiMode::Values) && !with_schema.is_empty() {
                            let mut v = values.clone();
                            if let Some(o) = v.as_object_mut() {
                                o.insert("__interrupt__".into(), Value::Array(with_schema));
                            }
                            let _ = tx
                                .send(GraphPart::Event {
                                    name: "values".into(),
                                    data: v,
                                })
                                .await;
                        }
                    }
                    Outcome {
                        values,
                        interrupts,
                        next: output.next,
                        error: None,
                    }
                }
                Err(e) => Outcome {
                    values: translator.last_values.clone(),
                    interrupts: Vec::new(),
                    next: Vec::new(),
                    error: Some(Failure::of(&e)),
                },
            },
        };
        let _ = tx.send(GraphPart::Done(outcome)).await;
    });
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|p| (p, rx)) }).boxed()
}
