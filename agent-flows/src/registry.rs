//! The flow registry: every seed flow behind one erased [`Flow`] interface, so the `agent`
//! program, the snapshot tests and the generated diagrams are generic over it.
//!
//! A flow module implements the typed [`FlowSpec`] (its state, its context, its graph, how a
//! user message becomes input and what the user sees as the answer); [`FLOWS`](crate::FLOWS) lists one
//! [`Entry`] per module. Adding a flow is one module plus one line there.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;

use agent_core::{
    Checkpointer, CompiledGraph, GraphState, Input, RunConfig, RunOutput, StateGraph, StreamMode,
    StreamModes, StreamPart,
};
use agent_llm::HumanMessage;
use async_trait::async_trait;
use futures::StreamExt;
use serde::Serialize;
use serde_json::Value;

use crate::env::FlowEnv;
use crate::error::FlowError;
use crate::serve::{self, ServeFlow};

/// A conversation to show a flow with: the user's messages, one turn each, on one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Demo {
    /// A short name (snapshot file names use it).
    pub name: &'static str,
    /// The user's messages, in order.
    pub turns: &'static [&'static str],
    /// Options the demo runs with.
    pub options: &'static [(&'static str, &'static str)],
}

/// An option a flow takes (`agent run <flow> --set key=value`, or a dedicated CLI flag).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FlowOption {
    /// The option's name.
    pub key: &'static str,
    /// What it does and which values it takes.
    pub help: &'static str,
    /// Who may set it when the flow is served (`agent run` is the operator's: it sets all).
    pub access: Access,
}

/// Who may set a flow option of a served flow ([`Flow::serve`]): every HTTP request is
/// hostile, so a client sets only what the operator allows, never a path, a URL, a database or
/// an identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Any client may set it in a run's or assistant's `context` (checked and bounded by the
    /// flow).
    Client,
    /// A limit: the operator (CLI flag / `--set` / config file) sets the ceiling; a client
    /// may lower it, never raise it past the operator's value (or `default`, the flow's,
    /// when the operator set none).
    Ceiling {
        /// The flow's own value of the option.
        default: u64,
    },
    /// Only the operator: anything that names a file, a directory, a URL, a database.
    Operator,
    /// Who the run is for: from the authenticated caller, else the operator's value; never
    /// from a client's context.
    Identity,
    /// A client may pick one of these names or send the thing itself as an inline JSON
    /// object (the option's value is then that object's JSON text, checked like a file); a
    /// path only the operator.
    Catalog(&'static [&'static str]),
}

impl Access {
    /// Whether a request's context may set the option (within its bounds).
    pub fn client_may_set(self) -> bool {
        matches!(
            self,
            Access::Client | Access::Ceiling { .. } | Access::Catalog(_)
        )
    }

    /// Who sets the option of a served flow, in words (`agent list`).
    pub fn describe(self) -> String {
        match self {
            Access::Client => "a request may set it".to_owned(),
            Access::Ceiling { default } => {
                format!("the operator sets the ceiling (default {default}); a request may lower it")
            }
            Access::Operator => "the operator only".to_owned(),
            Access::Identity => {
                "the authenticated caller, else the operator; never a request".to_owned()
            }
            Access::Catalog(names) => format!(
                "a request may pick {} or send one as a JSON object; a file: the operator only",
                names.join(", ")
            ),
        }
    }
}

/// `{"kind": "client" | "ceiling" | "operator" | "identity" | "catalog"}`, with `default`
/// (ceiling) or `names` (catalog), and `who` in words.
impl Serialize for Access {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        let kind = match self {
            Access::Client => "client",
            Access::Ceiling { .. } => "ceiling",
            Access::Operator => "operator",
            Access::Identity => "identity",
            Access::Catalog(_) => "catalog",
        };
        map.serialize_entry("kind", kind)?;
        match self {
            Access::Ceiling { default } => map.serialize_entry("default", default)?,
            Access::Catalog(names) => map.serialize_entry("names", names)?,
            _ => {}
        }
        map.serialize_entry("who", &self.describe())?;
        map.end()
    }
}

/// The longest message, in characters, of the flows without a limit of their own
/// (`tool-router`, `form`; `orchestrator` has `max_input_chars`, `data` its
/// `MAX_QUESTION_CHARS`, `react` its `user_query` check): their rules read a message several
/// times over, and a megabyte kept one turn of `form` busy for more than a minute.
pub const MAX_MESSAGE_CHARS: usize = 4000;

/// An input error when `message` is longer than `max` characters.
pub fn check_length(flow: &str, message: &str, max: usize) -> Result<(), FlowError> {
    let length = message.chars().count();
    if length > max {
        return Err(FlowError::Input(format!(
            "the message is {length} characters long; the {flow} flow takes at most {max}, so shorten it"
        )));
    }
    Ok(())
}

/// A flow as its module writes it: typed state, typed context, the graph.
pub trait FlowSpec: Send + Sync + 'static {
    /// The graph's state.
    type State: GraphState;
    /// What the nodes read beside the state (models, tools, clock, settings).
    type Context: Send + Sync + 'static;

    /// The registry name (`tool-router`, `form`...).
    const NAME: &'static str;
    /// The seed document it implements (`000`...).
    const SEED: &'static str;
    /// One line for `agent list`.
    const SUMMARY: &'static str;
    /// A paragraph of Markdown for the generated docs.
    const DESCRIPTION: &'static str;
    /// The options it takes.
    const OPTIONS: &'static [FlowOption] = &[];

    /// Conversations to demo it with (the snapshot tests run every one).
    fn demos() -> &'static [Demo];

    /// The graph, not compiled (the caller picks the checkpointer).
    fn graph() -> StateGraph<Self::State, Self::Context>;

    /// The context for `env` (the offline model unless `env` names one).
    fn context(env: &FlowEnv) -> Result<Self::Context, FlowError>;

    /// The operator's settings made ready to serve, once, when the flow is served: the files
    /// they name are read now (a form file becomes the form itself, as JSON), so that no run
    /// reads a file. By default they stay as they are.
    fn prepare(env: FlowEnv) -> Result<FlowEnv, FlowError> {
        Ok(env)
    }

    /// The input of one turn: the user's message, appended to the flow's `messages` as it
    /// is (its id and content blocks kept, see [`crate::chat`]; its rules read its
    /// `content`, the text), and whatever else the flow resets per turn. `agent run` sends
    /// plain text ([`HumanMessage::text`]), a served chat turn the client's message whole.
    fn input(
        message: HumanMessage,
        env: &FlowEnv,
    ) -> Result<<Self::State as GraphState>::Update, FlowError>;

    /// What the user sees after a turn.
    fn response(state: &Self::State) -> String;
}

/// A flow of the registry, erased over its state and context types.
pub trait Flow: Send + Sync {
    /// Name, seed, summary, description, options, demos.
    fn info(&self) -> FlowInfo;

    /// The compiled graph drawn in Mermaid, or as an ASCII outline.
    fn diagram(&self, ascii: bool) -> Result<String, FlowError>;

    /// Adds the flow to a server as `served` says: under its id, with the operator's settings
    /// (checked now: a bad one, a form file that does not read, fails here and not in a run;
    /// files are read once, here) and the models runs may pick. Each run's `context` sets
    /// what its options' [`Access`] lets a client set: `model` (one of `served.models`), the
    /// client options, limits lowered, a catalog's names or an inline object; the
    /// authenticated caller (`langgraph_auth_user`) is who the run is for. What it leaves out
    /// comes from `served.defaults`. A chat turn (one human message, what chat UIs send)
    /// becomes the flow's turn input, as `agent run` makes it, with the client's message
    /// whole (its id and content blocks) in `messages`.
    fn serve(
        &self,
        builder: agent_server::ServerBuilder,
        served: &ServeFlow,
    ) -> Result<agent_server::ServerBuilder, FlowError>;

    /// The flow compiled for `env`, persisting threads through `saver` when given, with
    /// `store` as its long-term memory across threads (`ctx.store()` in its nodes).
    fn open(
        &self,
        env: &FlowEnv,
        saver: Option<Arc<dyn Checkpointer>>,
        store: Option<Arc<dyn agent_core::store::Store>>,
    ) -> Result<Box<dyn FlowSession>, FlowError>;
}

/// What the registry tells about a flow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FlowInfo {
    /// The registry name.
    pub name: &'static str,
    /// The seed it implements.
    pub seed: &'static str,
    /// One line.
    pub summary: &'static str,
    /// A paragraph of Markdown.
    pub description: &'static str,
    /// The options it takes.
    pub options: &'static [FlowOption],
    /// Demo conversations.
    pub demos: &'static [Demo],
}

/// A compiled flow, ready for turns.
#[async_trait]
pub trait FlowSession: Send + Sync {
    /// Runs one turn: `message` from the user (plain text: a human message without id, given
    /// one as it joins `messages`), on `thread` when given (the thread's state carries over
    /// between turns when the session has a checkpointer). With `modes`, what the run
    /// streams reaches `on_item` as it happens.
    async fn turn(
        &self,
        message: &str,
        thread: Option<&str>,
        modes: StreamModes,
        on_item: &mut (dyn FnMut(StreamItem) + Send),
    ) -> Result<TurnReport, FlowError>;
}

/// What one turn did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TurnReport {
    /// The flow's name.
    pub flow: &'static str,
    /// The thread, when the turn ran on one.
    pub thread_id: Option<String>,
    /// The nodes of each super-step, in order.
    pub path: Vec<Vec<String>>,
    /// The final state, as JSON.
    pub state: Value,
    /// What the user sees.
    pub response: String,
    /// Token usage and other run counters.
    pub usage: BTreeMap<String, u64>,
    /// Pauses requested by nodes (empty when the turn finished).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub interrupts: Vec<Value>,
}

/// One streamed item, without the flow's types.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum StreamItem {
    /// The state after the input and after each step.
    Values {
        /// The state.
        state: Value,
    },
    /// A node's update.
    Updates {
        /// The node.
        node: String,
        /// Its update.
        update: Value,
    },
    /// A piece of a model's reply, from inside a node.
    Messages {
        /// The node.
        node: String,
        /// The text of the piece (empty for tool-call and usage pieces).
        text: String,
        /// The chunk as the model crate streams it.
        chunk: Value,
    },
    /// Something a node wrote to the custom stream.
    Custom {
        /// The node.
        node: String,
        /// The value.
        value: Value,
    },
    /// An `astream_events` v2 event.
    Events {
        /// The event.
        event: agent_core::Event,
    },
}

/// A registry entry for the flow `F`.
pub struct Entry<F>(PhantomData<fn() -> F>);

impl<F> Entry<F> {
    /// The entry.
    pub const NEW: Self = Entry(PhantomData);
}

impl<F: FlowSpec> Flow for Entry<F> {
    fn info(&self) -> FlowInfo {
        FlowInfo {
            name: F::NAME,
            seed: F::SEED,
            summary: F::SUMMARY,
            description: F::DESCRIPTION,
            options: F::OPTIONS,
            demos: F::demos(),
        }
    }

    fn diagram(&self, ascii: bool) -> Result<String, FlowError> {
        let graph = F::graph().compile()?;
        Ok(if ascii {
            graph.draw_ascii()
        } else {
            graph.draw_mermaid()
        })
    }

    fn serve(
        &self,
        builder: agent_server::ServerBuilder,
        served: &ServeFlow,
    ) -> Result<agent_server::ServerBuilder, FlowError> {
        let defaults = F::prepare(served.defaults.clone())?;
        check_options::<F>(&defaults)?;
        check_ceilings::<F>(&defaults)?;
        // The operator's settings, checked once now: the context they build (a profile
        // database opens) and a turn's input (the per-turn options).
        F::context(&defaults)?;
        F::input(HumanMessage::text("hello"), &defaults)?;
        let schema = serve::context_schema(F::OPTIONS, &defaults, &served.models);
        let for_context = Arc::new(ServeFlow {
            defaults,
            ..served.clone()
        });
        let for_turns = for_context.clone();
        let for_writes = for_context.clone();
        let env = |served: &ServeFlow, context: &Value| {
            serve::env_from_context(
                F::NAME,
                F::OPTIONS,
                &served.defaults,
                &served.models,
                context,
            )
        };
        Ok(builder
            .graph_with_turns(
                served.id.clone(),
                F::graph(),
                move |context: &Value| {
                    let env = env(&for_context, context)?;
                    // The per-turn options too (react's mode and limits are read as a turn's
                    // input is built): a bad one is the request's 422, not the run's error.
                    F::input(HumanMessage::text("hello"), &env)
                        .map_err(|e| serve::client_error(F::NAME, e))?;
                    F::context(&env).map_err(|e| serve::client_error(F::NAME, e))
                },
                move |message: HumanMessage, context: &Value| {
                    let env = env(&for_turns, context)?;
                    F::input(message, &env).map_err(|e| serve::client_error(F::NAME, e))
                },
            )
            // A raw input, a command's update or update_state raises no limit either.
            .write_check(move |values: &Value| {
                serve::check_state_write(F::OPTIONS, &for_writes.defaults, values)
            })
            .context_schema(schema)
            .description(served.description.as_deref().unwrap_or(F::SUMMARY)))
    }

    fn open(
        &self,
        env: &FlowEnv,
        saver: Option<Arc<dyn Checkpointer>>,
        store: Option<Arc<dyn agent_core::store::Store>>,
    ) -> Result<Box<dyn FlowSession>, FlowError> {
        check_options::<F>(env)?;
        let context = F::context(env)?;
        let mut graph = match saver {
            Some(saver) => F::graph().compile_with(saver)?,
            None => F::graph().compile()?,
        }
        // Its runs' spans are `invoke_agent {flow}`.
        .with_name(F::NAME);
        if let Some(store) = store {
            graph = graph.with_store(store);
        }
        Ok(Box::new(Session::<F> {
            graph: graph.with_context(context),
            env: env.clone(),
        }))
    }
}

/// Refuses options the flow does not take, naming the ones it does.
fn check_options<F: FlowSpec>(env: &FlowEnv) -> Result<(), FlowError> {
    for key in env.options.keys() {
        if !F::OPTIONS.iter().any(|o| o.key == key) {
            let known: Vec<&str> = F::OPTIONS.iter().map(|o| o.key).collect();
            return Err(FlowError::Option {
                flow: F::NAME,
                key: key.clone(),
                message: if known.is_empty() {
                    "this flow takes no options".to_owned()
                } else {
                    format!(
                        "not an option of this flow (its options: {})",
                        known.join(", ")
                    )
                },
            });
        }
    }
    Ok(())
}

/// Refuses an operator's limit that is not a whole number (a served flow compares requests'
/// values with it).
fn check_ceilings<F: FlowSpec>(env: &FlowEnv) -> Result<(), FlowError> {
    for option in F::OPTIONS {
        if let (Access::Ceiling { .. }, Some(value)) = (option.access, env.option(option.key))
            && value.trim().parse::<u64>().is_err()
        {
            return Err(FlowError::Option {
                flow: F::NAME,
                key: option.key.to_owned(),
                message: format!("`{value}` is not a whole number"),
            });
        }
    }
    Ok(())
}

struct Session<F: FlowSpec> {
    graph: CompiledGraph<F::State, F::Context>,
    env: FlowEnv,
}

#[async_trait]
impl<F: FlowSpec> FlowSession for Session<F> {
    async fn turn(
        &self,
        message: &str,
        thread: Option<&str>,
        modes: StreamModes,
        on_item: &mut (dyn FnMut(StreamItem) + Send),
    ) -> Result<TurnReport, FlowError> {
        if message.trim().is_empty() {
            return Err(FlowError::Input(
                "the message is empty; say something to the flow".to_owned(),
            ));
        }
        let input = F::input(HumanMessage::text(message), &self.env)?;
        let mut config = RunConfig::default().tag(format!("flow:{}", F::NAME));
        if let Some(thread) = thread {
            config = config.thread_id(thread);
        }
        let output: RunOutput<F::State> = if modes == StreamModes::NONE {
            self.graph.invoke(Input::Update(input), config).await?
        } else {
            let mut stream = self.graph.stream(Input::Update(input), config, modes);
            while let Some(part) = stream.next().await {
                on_item(erase(part?));
            }
            stream.into_output().await?
        };
        Ok(TurnReport {
            flow: F::NAME,
            thread_id: thread.map(str::to_owned),
            path: output.path.to_vec(),
            state: state_json(&output.state),
            response: F::response(&output.state),
            usage: output.usage.clone(),
            interrupts: output.interrupts.iter().map(|i| i.value.clone()).collect(),
        })
    }
}

/// A state as JSON: every field by name.
pub fn state_json<S: GraphState>(state: &S) -> Value {
    serde_json::to_value(state.clone().into_update()).unwrap_or(Value::Null)
}

fn erase<S: GraphState>(part: StreamPart<S>) -> StreamItem {
    match part {
        StreamPart::Values(state) => StreamItem::Values {
            state: state_json(&*state),
        },
        StreamPart::Updates { node, update } => StreamItem::Updates {
            node,
            update: serde_json::to_value(update).unwrap_or(Value::Null),
        },
        StreamPart::Messages { chunk, meta } => StreamItem::Messages {
            node: meta.node,
            text: match serde_json::from_value::<agent_llm::ChatChunk>(chunk.clone()) {
                Ok(agent_llm::ChatChunk::Text { text }) => text,
                _ => String::new(),
            },
            chunk,
        },
        StreamPart::Custom { value, meta } => StreamItem::Custom {
            node: meta.node,
            value,
        },
        StreamPart::Event(event) => StreamItem::Events { event },
        StreamPart::Debug(debug) => StreamItem::Custom {
            node: String::new(),
            value: serde_json::to_value(debug).unwrap_or(Value::Null),
        },
        // Flows do not stream subgraphs; were one to, its parts show as custom items.
        StreamPart::Subgraph { ns, part } => StreamItem::Custom {
            node: ns.to_string(),
            value: serde_json::to_value(part).unwrap_or(Value::Null),
        },
    }
}

/// The stream modes of `--stream` names: `values`, `updates`, `messages`, `custom`, `events`.
pub fn stream_mode(name: &str) -> Option<StreamMode> {
    Some(match name {
        "values" => StreamMode::Values,
        "updates" => StreamMode::Updates,
        "messages" => StreamMode::Messages,
        "custom" => StreamMode::Custom,
        "events" => StreamMode::Events,
        _ => return None,
    })
}
