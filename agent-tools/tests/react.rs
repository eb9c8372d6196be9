//! The ReAct loop end to end: an agent node (a scripted model bound to the registry's specs)
//! -> `tools_condition` -> `ToolNode` -> back to the agent, until the model answers in text.
//!
//! Checks the messages the run produces, what the model was sent each turn, the order nodes
//! ran in, that the calls of one AI message overlap, and the error paths (reported to the
//! model by default, failing the run when asked to).

use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    CompiledGraph, END, GraphError, GraphState, NodeSpec, RunConfig, START, StateGraph,
};
use agent_llm::{
    BoundModel, CallOptions, ChatModel, ChatModelExt, LlmError, Message, Reply, ScriptedModel,
};
use agent_tools::builtin::{Calculator, DateTime, Echo};
use agent_tools::{
    HandleErrors, ToolError, ToolNode, ToolRegistry, messages_state, tool, tools_condition,
};
use serde_json::{Value, json};

#[derive(GraphState, Clone, Default, Debug)]
struct Agent {
    #[reducer(agent_llm::add_messages)]
    messages: Vec<Message>,
    /// Which node ran, in order (each node appends its name).
    #[reducer(append)]
    trace: Vec<String>,
}

messages_state!(Agent, messages);

/// Waits `seconds` (virtual time in these tests), then says so.
#[tool]
async fn wait(seconds: u64) -> Result<String, String> {
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    Ok(format!("waited {seconds}s"))
}

fn registry() -> ToolRegistry {
    let noon_utc = "2025-07-01T12:00:00Z".parse().unwrap();
    ToolRegistry::new()
        .with_tool(Echo)
        .unwrap()
        .with_tool(DateTime::fixed(noon_utc))
        .unwrap()
        .with_tool(Calculator)
        .unwrap()
        .with_tool(wait)
        .unwrap()
}

fn agent_node(
    model: Arc<BoundModel<ScriptedModel>>,
) -> impl Fn(Arc<Agent>) -> futures::future::BoxFuture<'static, Result<AgentUpdate, LlmError>>
+ Send
+ Sync
+ 'static {
    move |state: Arc<Agent>| {
        let model = model.clone();
        Box::pin(async move {
            let reply = model
                .invoke(&state.messages, &CallOptions::default())
                .await?;
            Ok(AgentUpdate::default()
                .messages(vec![reply.into()])
                .trace(vec!["agent".to_owned()]))
        })
    }
}

/// The ReAct graph; `tools` is the tool node as the test wants it.
fn build(
    model: &ScriptedModel,
    registry: &ToolRegistry,
    tools: NodeSpec<Agent>,
) -> CompiledGraph<Agent> {
    let bound = Arc::new(model.clone().bind_tools(registry.specs()));
    StateGraph::<Agent>::new()
        .add_node("agent", agent_node(bound))
        .add_node("tools", tools)
        .add_edge(START, "agent")
        .add_conditional_edges("agent", tools_condition, ["tools", END])
        .add_edge("tools", "agent")
        .compile()
        .unwrap()
}

/// The tool node, also recording itself in the trace.
fn traced_tools(node: ToolNode) -> NodeSpec<Agent> {
    node.into_node_with(
        |state: &Agent| &state.messages,
        |answers| {
            AgentUpdate::default()
                .messages(answers)
                .trace(vec!["tools".to_owned()])
        },
    )
}

fn question(text: &str) -> AgentUpdate {
    AgentUpdate::default().messages(vec![Message::human(text)])
}

fn tool_results(messages: &[Message]) -> Vec<(&str, &str, bool)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(t) => Some((t.tool_call_id.as_str(), t.content.as_str(), t.is_error)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn react_loop_runs_tools_until_the_model_answers() {
    let registry = registry();
    let model = ScriptedModel::new([
        Reply::tool_call_with_id("tokyo", "datetime", json!({"timezone": "Asia/Tokyo"}))
            .with_tool_call(
                "datetime",
                json!({"timezone": "Europe/London", "format": "%H:%M"}),
            )
            .with_tool_call("calculator", json!({"expression": "2^10"})),
        Reply::tool_call("echo", json!({"text": "almost done"})),
        Reply::text("Tokyo: 21:00, London: 13:00, 2^10 = 1024."),
    ]);
    let graph = build(
        &model,
        &registry,
        traced_tools(ToolNode::new(registry.clone())),
    );

    let out = graph
        .invoke(
            question("time in Tokyo and London, and 2^10?"),
            RunConfig::default(),
        )
        .await
        .unwrap();

    assert_eq!(out.trace, ["agent", "tools", "agent", "tools", "agent"]);
    let kinds: Vec<&str> = out.messages.iter().map(Message::kind).collect();
    assert_eq!(
        kinds,
        ["human", "ai", "tool", "tool", "tool", "ai", "tool", "ai"]
    );

    // Answers are linked to the calls by id, in call order.
    let first_calls = out.messages[1].tool_calls();
    let call_ids: Vec<&str> = first_calls.iter().map(|c| c.id.as_str()).collect();
    let results = tool_results(&out.messages);
    assert_eq!(call_ids[0], "tokyo");
    assert_eq!(
        results.iter().take(3).map(|r| r.0).collect::<Vec<_>>(),
        call_ids
    );
    assert!(results.iter().all(|r| !r.2), "{results:?}");
    let tokyo: Value = serde_json::from_str(results[0].1).unwrap();
    assert_eq!(tokyo["local_time"], "2025-07-01 21:00:00");
    assert_eq!(tokyo["utc_offset"], "+09:00");
    let london: Value = serde_json::from_str(results[1].1).unwrap();
    assert_eq!(
        (
            london["local_time"].as_str(),
            london["abbreviation"].as_str()
        ),
        (Some("13:00"), Some("BST"))
    );
    assert_eq!(london["is_dst"], true);
    assert_eq!(results[2].1, "1024");
    assert_eq!(results[3].1, "almost done");
    assert_eq!(
        out.messages[7].content(),
        "Tokyo: 21:00, London: 13:00, 2^10 = 1024."
    );

    // The model saw the registry's tools on every turn, and the tool results on the next.
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        let names: Vec<&str> = request
            .options
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(names, ["echo", "datetime", "calculator", "wait"]);
    }
    assert_eq!(requests[1].messages.len(), 5);
    assert_eq!(requests[2].messages.len(), 7);
    let wait_spec = &requests[0].options.tools[3];
    assert_eq!(
        wait_spec.description,
        "Waits `seconds` (virtual time in these tests), then says so."
    );
    assert_eq!(wait_spec.parameters["required"], json!(["seconds"]));
}

#[tokio::test]
async fn the_plain_tool_node_works_on_a_messages_state() {
    let registry = registry();
    let model = ScriptedModel::new([
        Reply::tool_call("echo", json!({"text": "ping"})),
        Reply::text("pong"),
    ]);
    let bound = Arc::new(model.clone().bind_tools(registry.specs()));
    let graph = StateGraph::<Agent>::new()
        .add_node("agent", agent_node(bound))
        .add_node("tools", ToolNode::new(registry))
        .add_edge(START, "agent")
        .add_conditional_edges("agent", tools_condition, ["tools", END])
        .add_edge("tools", "agent")
        .compile()
        .unwrap();
    let out = graph
        .invoke(question("ping?"), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.trace, ["agent", "agent"]);
    assert_eq!(tool_results(&out.messages), [("call_1", "ping", false)]);
    assert_eq!(out.messages.last().map(Message::content), Some("pong"));
    // add_messages gave every message an id.
    assert!(out.messages.iter().all(|m| m.id().is_some()));
}

#[tokio::test(start_paused = true)]
async fn calls_of_one_ai_message_overlap_inside_the_graph() {
    let registry = registry();
    let model = ScriptedModel::new([
        Reply::tool_calls([
            ("wait", json!({"seconds": 3})),
            ("wait", json!({"seconds": 2})),
            ("wait", json!({"seconds": 1})),
        ]),
        Reply::text("done"),
    ]);
    let graph = build(
        &model,
        &registry,
        traced_tools(ToolNode::new(registry.clone())),
    );
    let started = tokio::time::Instant::now();
    let out = graph
        .invoke(question("wait"), RunConfig::default())
        .await
        .unwrap();
    // Sequential calls would take 6 s of (virtual) time; overlapping ones take the longest.
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    let contents: Vec<&str> = tool_results(&out.messages).iter().map(|r| r.1).collect();
    assert_eq!(contents, ["waited 3s", "waited 2s", "waited 1s"]);
}

#[tokio::test]
async fn tool_errors_go_back_to_the_model() {
    let registry = registry();
    let model = ScriptedModel::new([
        Reply::tool_calls([
            ("calculator", json!({"expression": "1 / (2 - 2)"})),
            ("search", json!({"query": "rust"})),
            ("datetime", json!({"timezone": 42})),
        ]),
        Reply::tool_call("calculator", json!({"expression": "1 / 2"})),
        Reply::text("1/2 is 0.5"),
    ]);
    let graph = build(
        &model,
        &registry,
        traced_tools(ToolNode::new(registry.clone())),
    );
    let out = graph
        .invoke(question("1/0?"), RunConfig::default())
        .await
        .unwrap();
    let results = tool_results(&out.messages);
    assert_eq!(results.len(), 4);
    assert!(results[..3].iter().all(|r| r.2));
    assert!(
        results[0].1.contains("division by zero at position 3"),
        "{}",
        results[0].1
    );
    assert!(
        results[1]
            .1
            .starts_with("Error: `search` is not a valid tool"),
        "{}",
        results[1].1
    );
    assert!(
        results[2]
            .1
            .contains("invalid arguments for tool `datetime` at `timezone`"),
        "{}",
        results[2].1
    );
    assert_eq!(results[3], ("call_4", "0.5", false));
    // The model read the errors on its next turn.
    let second = &model.requests()[1].messages;
    assert!(
        second
            .iter()
            .any(|m| m.content().contains("division by zero"))
    );
    assert_eq!(out.trace, ["agent", "tools", "agent", "tools", "agent"]);
}

#[tokio::test]
async fn propagated_errors_fail_the_run_naming_the_node() {
    let registry = registry();
    let model = ScriptedModel::new([Reply::tool_call("search", json!({}))]);
    let strict = ToolNode::new(registry.clone()).handle_errors(HandleErrors::Propagate);
    let graph = build(&model, &registry, traced_tools(strict));
    let error = graph
        .invoke(question("search"), RunConfig::default())
        .await
        .unwrap_err();
    match &error {
        GraphError::Node { node, source, .. } => {
            assert_eq!(node, "tools");
            let tool_error = source.downcast_ref::<ToolError>().expect("a ToolError");
            assert!(matches!(tool_error, ToolError::UnknownTool { name, .. } if name == "search"));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        error.to_string().contains("`search` is not a valid tool"),
        "{error}"
    );
}

#[tokio::test]
async fn a_tool_node_without_an_ai_message_fails_clearly() {
    let graph = StateGraph::<Agent>::new()
        .add_node("tools", ToolNode::new(registry()))
        .add_edge(START, "tools")
        .add_edge("tools", END)
        .compile()
        .unwrap();
    let error = graph
        .invoke(question("hi"), RunConfig::default())
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("tool node found no AI message in the state (1 messages)"),
        "{error}"
    );
}
