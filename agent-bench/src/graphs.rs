//! The shapes as agentgraph graphs: LangGraph's benchmark graphs (`libs/langgraph/bench`)
//! rebuilt with the same nodes, edges, sizes and payloads, plus `send_fanout`.
//!
//! Two things differ in form, not in work:
//! - `fanout_to_subgraph`: the subgraph has a state of its own (LangGraph's input/output
//!   schemas), so it is a node through `CompiledGraph::as_node`, which maps the parent's `Send`
//!   payload to the subgraph's input and its output `jokes` back to the parent. With a saver,
//!   the subgraph checkpoints into the parent's saver and thread under its own namespace, with
//!   the parent run's durability, as LangGraph's subgraphs do. Its nodes count their runs, so
//!   the outcome's steps and tasks include the subgraph's, as LangGraph's count does.
//! - `wide_state`: Python lists and dicts hold references, so LangGraph's reducers copy
//!   pointers, never the nested input document. The Rust state holds that document as
//!   [`Doc`] (`agent_core::Shared`, an `Arc`), so appending it to a list costs what it costs in
//!   Python: a count bump. Checkpoints store each shared value once per thread and a reference
//!   wherever it appears (LangGraph's serializer writes the whole document at every
//!   occurrence); JSON output writes the document itself.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::{
    BoxError, BoxFuture, Checkpointer, CompiledGraph, END, GraphError, GraphState, RunConfig,
    START, Send as SendTo, StateGraph,
};
use agent_llm::{CallOptions, ChatModel, ChatModelExt, LlmError, Message, Reply, ScriptedModel};
use agent_tools::{ToolNode, ToolRegistry, messages_state, tool, tools_condition};
use serde_json::{Value, json};

use crate::{Outcome, Runner, Shape};

/// Builds the runner of `shape`: the compiled graph (with `saver`, if any) and its input.
pub fn build(shape: Shape, saver: Option<Arc<dyn Checkpointer>>) -> Result<Runner, BoxError> {
    match shape {
        Shape::Sequential(n) => sequential(n, saver),
        Shape::SendFanout(n) => send_fanout(n, saver),
        Shape::ReactAgent(n) => react_agent(n, saver),
        Shape::WideState { n, outer, inner } => wide_state(n, outer, inner, saver),
        Shape::FanoutToSubgraph(n) => fanout_to_subgraph(n, saver),
    }
}

fn compile<S: GraphState>(
    graph: StateGraph<S>,
    saver: &Option<Arc<dyn Checkpointer>>,
) -> Result<CompiledGraph<S>, GraphError> {
    match saver {
        Some(saver) => graph.compile_with(saver.clone()),
        None => graph.compile(),
    }
}

/// A runner that clones `input` before the clock starts, then invokes `graph` on it.
fn runner<S, I>(
    graph: CompiledGraph<S>,
    input: I,
    check: impl Fn(&S) -> Value + Send + Sync + 'static,
) -> Runner
where
    S: GraphState,
    I: Into<agent_core::Input<S>> + Clone + Send + Sync + 'static,
{
    let check = Arc::new(check);
    Box::new(move || {
        let graph = graph.clone();
        let input = input.clone();
        let check = check.clone();
        Box::new(
            move |config: RunConfig| -> BoxFuture<Result<Outcome, BoxError>> {
                Box::pin(async move {
                    let out = graph.invoke(input, config).await?;
                    Ok(Outcome {
                        steps: out.steps,
                        tasks: out.tasks,
                        check: check(&out.state),
                    })
                })
            },
        )
    })
}

// ---------------------------------------------------------------------------------------------
// sequential_N: a chain of N no-op nodes over a messages state.

/// LangGraph's `MessagesState`.
#[derive(GraphState, Clone, Default, Debug)]
pub struct Messages {
    /// The conversation.
    #[reducer(agent_llm::add_messages)]
    pub messages: Vec<Message>,
}

fn sequential(n: usize, saver: Option<Arc<dyn Checkpointer>>) -> Result<Runner, BoxError> {
    use agent_core::NodeExt;
    let nodes = (0..n).map(|i| {
        let noop = |_: Arc<Messages>| async {};
        (format!("node_{i}"), NodeExt::<Messages, _>::boxed(noop))
    });
    let graph = StateGraph::<Messages>::new()
        .add_sequence(nodes)
        .add_edge(START, "node_0")
        .add_edge(format!("node_{}", n - 1), END);
    let graph = compile(graph, &saver)?;
    let input = MessagesUpdate::default().messages(Vec::new());
    Ok(runner(
        graph,
        input,
        |s: &Messages| json!({ "messages": s.messages.len() }),
    ))
}

// ---------------------------------------------------------------------------------------------
// send_fanout_N: a router on START returns N `Send`s; each worker appends one string.

/// The fan-out state: the worker count and the results. A worker's index is its own input
/// (what its `Send` carries), not a field of the state.
#[derive(GraphState, Clone, Default, Debug)]
pub struct Fan {
    /// How many workers the router starts.
    pub count: usize,
    /// One entry per worker, in `Send` order.
    #[reducer(append)]
    pub results: Vec<String>,
}

fn send_fanout(n: usize, saver: Option<Arc<dyn Checkpointer>>) -> Result<Runner, BoxError> {
    let graph = StateGraph::<Fan>::new()
        .add_node_with_input("worker", |index: usize| async move {
            FanUpdate::default().results(vec![format!("result {index}")])
        })
        .add_conditional_edges(
            START,
            |s: &Fan| {
                (0..s.count)
                    .map(|index| SendTo::input("worker", index))
                    .collect::<Vec<_>>()
            },
            ["worker"],
        )
        .add_edge("worker", END);
    let graph = compile(graph, &saver)?;
    Ok(runner(
        graph,
        FanUpdate::default().count(n),
        |s: &Fan| json!({ "results": s.results.len() }),
    ))
}

// ---------------------------------------------------------------------------------------------
// react_agent_Nx: a model node makes N tool calls, one per turn, then answers.

/// The agent's state: LangGraph's `MessagesState`.
#[derive(GraphState, Clone, Default, Debug)]
pub struct Agent {
    /// The conversation.
    #[reducer(agent_llm::add_messages)]
    pub messages: Vec<Message>,
}

messages_state!(Agent, messages);

/// Looks a query up: "result for query: <query>", ten times.
#[tool]
async fn lookup(query: String) -> Result<String, String> {
    Ok(format!("result for query: {query}").repeat(10))
}

/// LangGraph's fake model: n answers that each call the tool once (arguments: a uuid repeated
/// 100 times), then "answer" x100; then it starts over (so every run sees the same script).
///
/// Replies carry their token usage, as a provider's do: without it the scripted model
/// estimates usage by counting the words of the whole conversation on every call, test-double
/// work that grows with the history (36 KB per tool answer here) and that no provider call
/// does.
pub fn react_model(n: usize) -> ScriptedModel {
    struct Turn {
        id: String,
        call: Option<(String, String)>,
    }
    let turns: Vec<Turn> = (0..=n)
        .map(|i| Turn {
            id: agent_llm::new_message_id(),
            call: (i < n).then(|| {
                (
                    agent_llm::new_message_id(),
                    agent_llm::new_message_id().repeat(100),
                )
            }),
        })
        .collect();
    let answer = "answer".repeat(100);
    let next = AtomicUsize::new(0);
    ScriptedModel::from_fn(move |_| {
        let turn = &turns[next.fetch_add(1, Ordering::Relaxed) % turns.len()];
        match &turn.call {
            Some((call_id, query)) => {
                Reply::tool_call_with_id(call_id.clone(), "lookup", json!({ "query": query }))
                    .with_id(turn.id.clone())
                    .with_usage(10, 10)
            }
            None => Reply::text(answer.clone())
                .with_id(turn.id.clone())
                .with_usage(10, 10),
        }
    })
    .without_recording()
}

/// The registry with the shape's one tool.
pub fn react_tools() -> Result<ToolRegistry, BoxError> {
    Ok(ToolRegistry::new().with_tool(lookup)?)
}

fn react_agent(n: usize, saver: Option<Arc<dyn Checkpointer>>) -> Result<Runner, BoxError> {
    let registry = react_tools()?;
    let model = Arc::new(react_model(n).bind_tools(registry.specs()));
    let graph = StateGraph::<Agent>::new()
        .add_node("agent", move |s: Arc<Agent>| {
            let model = model.clone();
            async move {
                let reply = model.invoke(&s.messages, &CallOptions::default()).await?;
                Ok::<_, LlmError>(AgentUpdate::default().messages(vec![reply.into()]))
            }
        })
        .add_node("tools", ToolNode::new(registry))
        .add_edge(START, "agent")
        .add_conditional_edges("agent", tools_condition, ["tools", END])
        .add_edge("tools", "agent");
    let graph = compile(graph, &saver)?;
    let input = AgentUpdate::default().messages(vec![Message::human("hi?")]);
    Ok(runner(
        graph,
        input,
        |s: &Agent| json!({ "messages": s.messages.len() }),
    ))
}

// ---------------------------------------------------------------------------------------------
// wide_state_AxN: 15 fields with append / union / last-non-null reducers, six nodes in a loop.

/// A value shared by reference, as Python shares a dict between lists: putting it in another
/// list bumps a count instead of copying it, and a checkpoint stores it once per thread.
pub use agent_core::Shared;

/// A JSON object whose entries are shared (LangGraph's dict of dicts).
pub type Doc = Shared<BTreeMap<String, Shared<Value>>>;

/// The input message: `outer` keys ("0000000000"...) each mapping `inner` keys to
/// `["hi?"*10, true, 1, 6327816386138, null] * 5`.
pub fn wide_message(outer: usize, inner: usize) -> Doc {
    let list: Vec<Value> = (0..5)
        .flat_map(|_| {
            [
                json!("hi?".repeat(10)),
                json!(true),
                json!(1),
                json!(6_327_816_386_138_u64),
                Value::Null,
            ]
        })
        .collect();
    let entry = |i: usize| {
        let map: serde_json::Map<String, Value> = (0..inner)
            .map(|j| (j.to_string().repeat(10), Value::Array(list.clone())))
            .collect();
        (i.to_string().repeat(10), Shared::new(Value::Object(map)))
    };
    Shared::new((0..outer).map(entry).collect())
}

/// `lambda x, y: y or x`: an empty update keeps the current value.
pub fn or_keep(current: &mut String, update: String) {
    if !update.is_empty() {
        *current = update;
    }
}

/// `lambda _, y: y`: always overwrite (a reducer, so several writes in a step are fine).
pub fn overwrite<T>(current: &mut T, update: T) {
    *current = update;
}

/// `lambda x, y: y if y else x`: an empty or missing dict keeps the current value.
pub fn if_truthy(current: &mut Option<Doc>, update: Option<Doc>) {
    if update.as_ref().is_some_and(|d| !d.is_empty()) {
        *current = update;
    }
}

/// `lambda x, y: y if y is not None else x`.
pub fn non_null<T>(current: &mut Option<T>, update: Option<T>) {
    if update.is_some() {
        *current = update;
    }
}

/// LangGraph's `wide_state` dataclass, field for field.
#[derive(GraphState, Clone, Debug)]
pub struct Wide {
    /// Messages (the loop ends once there are more than n).
    #[reducer(append)]
    pub messages: Vec<Doc>,
    /// External events converted by the graph.
    #[reducer(append)]
    pub trigger_events: Vec<Doc>,
    /// `y or x`; "email" by default.
    #[reducer(self::or_keep)]
    pub primary_issue_medium: String,
    /// Always overwritten.
    #[reducer(self::overwrite)]
    pub autoresponse: Option<Doc>,
    /// `y if y else x`.
    #[reducer(self::if_truthy)]
    pub issue: Option<Doc>,
    /// Last value.
    pub relevant_rules: Option<Vec<Doc>>,
    /// Last value.
    pub memory_docs: Option<Vec<Doc>>,
    /// Appended.
    #[reducer(append)]
    pub categorizations: Vec<Doc>,
    /// Appended.
    #[reducer(append)]
    pub responses: Vec<Doc>,
    /// Last non-null.
    #[reducer(self::non_null)]
    pub user_info: Option<Doc>,
    /// Last non-null.
    #[reducer(self::non_null)]
    pub crm_info: Option<Doc>,
    /// Last non-null.
    #[reducer(self::non_null)]
    pub email_thread_id: Option<String>,
    /// Dict union.
    #[reducer(merge)]
    pub slack_participants: BTreeMap<String, Shared<Value>>,
    /// Last value.
    pub bot_id: Option<String>,
    /// Dict union.
    #[reducer(merge)]
    pub notified_assignees: BTreeMap<String, Shared<Value>>,
}

impl Default for Wide {
    fn default() -> Self {
        Wide {
            messages: Vec::new(),
            trigger_events: Vec::new(),
            primary_issue_medium: "email".to_owned(),
            autoresponse: None,
            issue: None,
            relevant_rules: None,
            memory_docs: None,
            categorizations: Vec::new(),
            responses: Vec::new(),
            user_info: None,
            crm_info: None,
            email_thread_id: None,
            slack_participants: BTreeMap::new(),
            bot_id: None,
            notified_assignees: BTreeMap::new(),
        }
    }
}

/// n random lowercase letters (LangGraph's `"".join(choice(...) for _ in range(n))`).
pub fn random_letters(n: usize) -> String {
    (0..n).map(|_| fastrand::lowercase()).collect()
}

/// The last element of a list field (`val[-1]`).
fn last(list: &[Doc]) -> Option<Doc> {
    list.last().cloned()
}

/// The dict-union update of a document (`current | doc`).
fn entries(doc: Option<&Doc>) -> BTreeMap<String, Shared<Value>> {
    doc.map(|d| (**d).clone()).unwrap_or_default()
}

fn wide_state(
    n: usize,
    outer: usize,
    inner: usize,
    saver: Option<Arc<dyn Checkpointer>>,
) -> Result<Runner, BoxError> {
    let graph = StateGraph::<Wide>::new()
        .add_node("one", move |s: Arc<Wide>| async move {
            WideUpdate::default()
                .trigger_events(s.messages.clone())
                .primary_issue_medium(random_letters(n))
        })
        .add_node("two", |s: Arc<Wide>| async move {
            let doc = last(&s.trigger_events);
            WideUpdate::default().autoresponse(doc.clone()).issue(doc)
        })
        .add_node("three", |s: Arc<Wide>| async move {
            WideUpdate::default().relevant_rules(s.autoresponse.clone().map(|d| vec![d]))
        })
        .add_node("four", |s: Arc<Wide>| async move {
            WideUpdate::default()
                .categorizations(s.trigger_events.clone())
                .responses(s.trigger_events.clone())
                .memory_docs(Some(s.trigger_events.clone()))
        })
        .add_node("five", move |s: Arc<Wide>| async move {
            let doc = last(&s.categorizations);
            WideUpdate::default()
                .user_info(doc.clone())
                .crm_info(doc.clone())
                .email_thread_id(Some(random_letters(n)))
                .slack_participants(entries(doc.as_ref()))
                .bot_id(Some(random_letters(n)))
                .notified_assignees(entries(doc.as_ref()))
        })
        .add_node("six", |s: Arc<Wide>| async move {
            WideUpdate::default().messages(s.responses.clone())
        })
        .add_edge(START, "one")
        .add_edge("one", "two")
        .add_edge("two", "three")
        .add_edge("two", "four")
        .add_edge(["three", "four"], "five")
        .add_edge("five", "six")
        .add_conditional_edges(
            "six",
            move |s: &Wide| if s.messages.len() > n { END } else { "one" },
            ["one", END],
        );
    let graph = compile(graph, &saver)?;
    let input = WideUpdate::default().messages(vec![wide_message(outer, inner)]);
    Ok(runner(
        graph,
        input,
        |s: &Wide| json!({ "messages": s.messages.len() }),
    ))
}

// ---------------------------------------------------------------------------------------------
// fanout_to_subgraph_Nx: Send each subject to a subgraph that edits, generates and bumps.

/// The parent state: the subjects, one subject (a `Send` payload), the jokes.
#[derive(GraphState, Clone, Default, Debug)]
pub struct Overall {
    /// Lists of 1,000 random letters.
    pub subjects: Vec<Vec<char>>,
    /// The subject a `Send` carries to `generate_joke`.
    pub subject: Vec<char>,
    /// One joke per subject.
    #[reducer(append)]
    pub jokes: Vec<String>,
}

/// The subgraph's state. `letters` is LangGraph's `subject` as it comes in (a list);
/// `subject` is what `edit` makes of it (Python rebinds one key to a string).
#[derive(GraphState, Clone, Default, Debug)]
pub struct JokeState {
    /// The input subject.
    pub letters: Vec<char>,
    /// The edited subject.
    pub subject: String,
    /// The joke (last value, as in LangGraph's `JokeOutput`).
    pub jokes: Vec<String>,
}

/// What the joke ends with when the subgraph stops bumping.
pub const BUMPED: &str = " a a a a a a a a a a";

/// The subgraph: edit -> generate -> bump (looping until the joke ends with " a" x10). Every
/// node run adds one to `runs` (each of its steps runs one task).
pub fn joke_subgraph(runs: Arc<AtomicUsize>) -> Result<CompiledGraph<JokeState>, GraphError> {
    let counted = move || {
        let runs = runs.clone();
        move || {
            runs.fetch_add(1, Ordering::Relaxed);
        }
    };
    let (edit, generate, bump) = (counted(), counted(), counted());
    StateGraph::<JokeState>::new()
        .add_node("edit", move |s: Arc<JokeState>| {
            edit();
            // Python's f"{subject}" of a list of one-letter strings: ['a', 'b', ...].
            async move { JokeStateUpdate::default().subject(format!("{:?} - hohoho", s.letters)) }
        })
        .add_node("generate", move |s: Arc<JokeState>| {
            generate();
            async move { JokeStateUpdate::default().jokes(vec![format!("Joke about {}", s.subject)]) }
        })
        .add_node("bump", move |s: Arc<JokeState>| {
            bump();
            async move {
                let joke = s.jokes.first().map(String::as_str).unwrap_or_default();
                JokeStateUpdate::default().jokes(vec![format!("{joke} a")])
            }
        })
        .add_edge(START, "edit")
        .add_edge("edit", "generate")
        .add_edge("generate", "bump")
        .add_conditional_edges(
            "bump",
            |s: &JokeState| {
                let done = s.jokes.first().is_some_and(|j| j.ends_with(BUMPED));
                if done { END } else { "bump" }
            },
            ["bump", END],
        )
        .add_edge("generate", END)
        .compile()
}

/// `n` subjects of 1,000 random letters (seeded: every process measures the same input).
pub fn subjects(n: usize) -> Vec<Vec<char>> {
    let mut rng = fastrand::Rng::with_seed(7);
    (0..n)
        .map(|_| (0..1000).map(|_| rng.lowercase()).collect())
        .collect()
}

fn fanout_to_subgraph(n: usize, saver: Option<Arc<dyn Checkpointer>>) -> Result<Runner, BoxError> {
    // Node runs of the subgraph (one per subgraph step), added to the parent's counts.
    let inner = Arc::new(AtomicUsize::new(0));
    let subgraph = joke_subgraph(inner.clone())?.as_node(
        |s: &Overall| JokeStateUpdate::default().letters(s.subject.clone()),
        |joke: JokeState| OverallUpdate::default().jokes(joke.jokes),
    );
    let graph = StateGraph::<Overall>::new()
        .add_node("generate_joke", subgraph)
        .add_conditional_edges(
            START,
            |s: &Overall| {
                s.subjects
                    .iter()
                    .map(|subject| {
                        SendTo::new(
                            "generate_joke",
                            Overall {
                                subject: subject.clone(),
                                ..Overall::default()
                            },
                        )
                    })
                    .collect::<Vec<_>>()
            },
            ["generate_joke"],
        )
        .add_edge("generate_joke", END);
    let graph = compile(graph, &saver)?;
    let input = OverallUpdate::default().subjects(subjects(n));
    Ok(Box::new(move || {
        let graph = graph.clone();
        let input = input.clone();
        let inner = inner.clone();
        Box::new(
            move |config: RunConfig| -> BoxFuture<Result<Outcome, BoxError>> {
                Box::pin(async move {
                    inner.store(0, Ordering::Relaxed);
                    let out = graph.invoke(input, config).await?;
                    let inner = inner.load(Ordering::Relaxed);
                    Ok(Outcome {
                        steps: out.steps + inner,
                        tasks: out.tasks + inner,
                        check: json!({
                            "jokes": out.jokes.len(),
                            "joke_chars": out.jokes.first().map_or(0, String::len),
                        }),
                    })
                })
            },
        )
    }))
}
