//! The two graphs the API was observed on (langgraph-api's reference app, ported): `agent`
//! (START -> chat -> sub(inner -> sub_ask) -> human -> END over messages and a counter) and
//! `simple` (upper-cases `value`). The SDK conformance scripts run against either server.
//!
//! - `chat` streams `echo: <text>` token by token, writes a custom event, sleeps N seconds
//!   on "sleep N" and fails on "fail";
//! - `sub_ask` (inside the subgraph) interrupts when the text contains "subask";
//! - `human` interrupts on the word "ask".

use std::sync::Arc;
use std::time::Duration;

use agent_core::{BoxError, END, GraphState, NodeContext, START, StateGraph};
use agent_llm::{AiMessage, CallOptions, Message, Reply, ScriptedModel, invoke_in_node};
use serde_json::json;

/// The `agent` graph's state.
#[derive(GraphState, Clone, Default, Debug)]
pub struct State {
    /// The conversation.
    #[reducer(agent_llm::add_messages)]
    pub messages: Vec<Message>,
    /// Incremented by `chat` and `human`.
    #[reducer(add)]
    pub count: i64,
}

/// The `agent` graph's context (unused by its nodes, as in the reference).
#[allow(dead_code)]
#[derive(Clone, Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct Context {
    /// A model name.
    pub model: Option<String>,
    /// A user name.
    pub user: Option<String>,
}

fn last_human(state: &State) -> String {
    state
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Human(h) => Some(h.content.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

fn ai(id: Option<String>, text: impl Into<String>) -> Message {
    Message::Ai(AiMessage {
        id,
        content: text.into(),
        ..AiMessage::default()
    })
}

async fn chat(state: Arc<State>, ctx: NodeContext) -> Result<StateUpdate, BoxError> {
    let text = last_human(&state);
    ctx.write_custom(json!({"progress": "chat started", "text": text}))
        .await;
    let words: Vec<&str> = text.split_whitespace().collect();
    if let Some(i) = words.iter().position(|w| *w == "sleep") {
        let secs: f64 = words.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(3.0);
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    }
    if words.contains(&"fail") {
        return Err("node chat failed on purpose".into());
    }
    // A fake chat model (LangChain's GenericFakeChatModel in the reference): its reply
    // streams token by token into the run's `messages` and `events` streams.
    let model = ScriptedModel::from_fn(|messages: &[Message]| {
        let text = messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::Human(h) => Some(h.content.clone()),
                _ => None,
            })
            .unwrap_or_default();
        Reply::text(format!("echo: {text}"))
    })
    .with_name("fake-chat-model")
    .without_recording();
    let reply = invoke_in_node(&model, &state.messages, &CallOptions::default(), &ctx).await?;
    Ok(StateUpdate::default()
        .messages(vec![Message::Ai(reply.message)])
        .count(1))
}

async fn inner(_state: Arc<State>) -> StateUpdate {
    StateUpdate::default().messages(vec![ai(None, "from inner subgraph node")])
}

async fn sub_ask(state: Arc<State>, ctx: NodeContext) -> Result<StateUpdate, BoxError> {
    if last_human(&state).contains("subask") {
        let answer = ctx.interrupt(json!({"question": "sub approve?"}))?;
        let answer = answer
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| answer.to_string());
        return Ok(StateUpdate::default().messages(vec![ai(None, format!("sub answer: {answer}"))]));
    }
    Ok(StateUpdate::default())
}

async fn human(state: Arc<State>, ctx: NodeContext) -> Result<StateUpdate, BoxError> {
    let text = last_human(&state);
    if text.split_whitespace().any(|w| w == "ask") {
        let answer = ctx.interrupt(json!({"question": "approve?", "text": text}))?;
        let answer = answer
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| answer.to_string());
        return Ok(StateUpdate::default().messages(vec![ai(None, format!("human said: {answer}"))]));
    }
    Ok(StateUpdate::default().count(1))
}

/// `agent`.
pub fn agent() -> StateGraph<State, Context> {
    let sub = StateGraph::<State, Context>::with_context_type()
        .add_node("inner", inner)
        .add_node("sub_ask", sub_ask)
        .add_edge(START, "inner")
        .add_edge("inner", "sub_ask")
        .add_edge("sub_ask", END)
        .compile()
        .expect("the subgraph compiles");
    StateGraph::<State, Context>::with_context_type()
        .add_node("chat", chat)
        .add_node("sub", sub)
        .add_node("human", human)
        .add_edge(START, "chat")
        .add_edge("chat", "sub")
        .add_edge("sub", "human")
        .add_edge("human", END)
}

/// The `simple` graph's state.
#[derive(GraphState, Clone, Default, Debug)]
pub struct Simple {
    /// Upper-cased by the one node.
    pub value: String,
}

/// `simple`.
pub fn simple() -> StateGraph<Simple> {
    StateGraph::new()
        .add_node("upper", |s: Arc<Simple>| async move {
            SimpleUpdate::default().value(s.value.to_uppercase())
        })
        .add_edge(START, "upper")
        .add_edge("upper", END)
}

/// `tools` (the streaming protocol's checks): a model that asks for the `add` tool with the
/// two numbers of the question (streamed as tool-call chunks), the tool node answering with a
/// tool message, then the model's streamed answer `the sum is N`.
pub fn tools() -> StateGraph<State, Context> {
    async fn model(state: Arc<State>, ctx: NodeContext) -> Result<StateUpdate, BoxError> {
        let model = ScriptedModel::from_fn(|messages: &[Message]| match messages.last() {
            Some(Message::Tool(t)) => Reply::text(format!("the sum is {}", t.content)),
            _ => {
                let text = messages
                    .iter()
                    .rev()
                    .find_map(|m| match m {
                        Message::Human(h) => Some(h.content.clone()),
                        _ => None,
                    })
                    .unwrap_or_default();
                let n: Vec<i64> = text
                    .split(|c: char| !c.is_ascii_digit() && c != '-')
                    .filter_map(|w| w.parse().ok())
                    .collect();
                Reply::tool_call_with_id(
                    format!("call-{}", messages.len()),
                    "add",
                    json!({"a": n.first().copied().unwrap_or(0), "b": n.get(1).copied().unwrap_or(0)}),
                )
            }
        })
        .with_name("fake-tool-model")
        .without_recording();
        let reply = invoke_in_node(&model, &state.messages, &CallOptions::default(), &ctx).await?;
        Ok(StateUpdate::default().messages(vec![Message::Ai(reply.message)]))
    }
    async fn run_tools(state: Arc<State>) -> StateUpdate {
        let Some(Message::Ai(ai)) = state.messages.last() else {
            return StateUpdate::default();
        };
        let results: Vec<Message> = ai
            .tool_calls
            .iter()
            .map(|call| {
                let sum =
                    call.args["a"].as_i64().unwrap_or(0) + call.args["b"].as_i64().unwrap_or(0);
                Message::Tool(agent_llm::ToolMessage {
                    tool_call_id: call.id.clone(),
                    name: Some(call.name.clone()),
                    content: sum.to_string(),
                    ..agent_llm::ToolMessage::default()
                })
            })
            .collect();
        StateUpdate::default().messages(results)
    }
    StateGraph::<State, Context>::with_context_type()
        .add_node("model", model)
        .add_node("tools", run_tools)
        .add_edge(START, "model")
        .add_conditional_edges(
            "model",
            |s: &State| match s.messages.last() {
                Some(Message::Ai(ai)) if !ai.tool_calls.is_empty() => "tools".to_owned(),
                _ => END.to_owned(),
            },
            vec!["tools", END],
        )
        .add_edge("tools", "model")
}

/// A server with both graphs.
pub fn server() -> agent_server::ServerBuilder {
    agent_server::Server::builder()
        .graph("agent", agent())
        .graph("simple", simple())
}

/// The `slow` graph's state: which nodes ran, in order.
#[derive(GraphState, Clone, Default, Debug)]
pub struct Slow {
    /// Seconds `wait` sleeps.
    pub seconds: f64,
    /// One entry per node run (a node run twice shows twice).
    #[reducer(append)]
    pub ran: Vec<String>,
    /// Input items, appended once per input applied.
    #[reducer(append)]
    pub inputs: Vec<String>,
}

/// `slow` (fault tests): `first` finishes at once, then `wait` sleeps `seconds`, then
/// `last`. A run taken over by another instance while `wait` sleeps must not run `first`
/// again nor apply its input twice.
pub fn slow() -> StateGraph<Slow> {
    StateGraph::new()
        .add_node("first", |_s: Arc<Slow>| async move {
            SlowUpdate::default().ran(vec!["first".to_owned()])
        })
        .add_node("wait", |s: Arc<Slow>| async move {
            tokio::time::sleep(Duration::from_secs_f64(s.seconds.clamp(0.0, 600.0))).await;
            SlowUpdate::default().ran(vec!["wait".to_owned()])
        })
        .add_node("last", |_s: Arc<Slow>| async move {
            SlowUpdate::default().ran(vec!["last".to_owned()])
        })
        .add_edge(START, "first")
        .add_edge("first", "wait")
        .add_edge("wait", "last")
        .add_edge("last", END)
}
