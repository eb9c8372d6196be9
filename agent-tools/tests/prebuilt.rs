//! `create_react_agent` against the scripted model: several steps, parallel calls, the system
//! prompt, the step limit, approval before tools (pause, inspect, approve / reject / approve
//! some, resume), a structured response, and a conversation on a thread.

use std::sync::Arc;
use std::time::Duration;

use agent_core::{Command, InMemorySaver, RunConfig};
use agent_llm::{Message, Reply, ScriptedModel};
use agent_tools::builtin::{Calculator, DateTime, Echo};
use agent_tools::prebuilt::{
    AgentState, Approval, ApprovalRequest, NEED_MORE_STEPS, create_react_agent,
};
use agent_tools::{HandleErrors, ToolError, ToolNode, ToolRegistry};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Meet {
    name: String,
}

/// A tool whose call waits until the other call of the same reply has started.
fn meet() -> impl agent_tools::DynTool {
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    agent_tools::tool_fn("meet", "Meets the other call.", move |m: Meet| {
        let barrier = barrier.clone();
        async move {
            barrier.wait().await;
            Ok::<_, String>(format!("met {}", m.name))
        }
    })
}

fn registry() -> ToolRegistry {
    let noon = "2026-07-15T12:00:00Z".parse().unwrap();
    ToolRegistry::new()
        .with_tool(Echo)
        .unwrap()
        .with_tool(Calculator)
        .unwrap()
        .with_tool(DateTime::fixed(noon))
        .unwrap()
}

fn kinds(state: &AgentState) -> Vec<&str> {
    state.messages.iter().map(Message::kind).collect()
}

fn thread(id: &str) -> RunConfig {
    RunConfig::default().thread_id(id)
}

#[tokio::test]
async fn several_steps_until_the_model_answers() {
    let model = ScriptedModel::new([
        Reply::tool_call("calculator", json!({"expression": "6 * 7"})),
        Reply::tool_call("datetime", json!({"timezone": "Asia/Tokyo"})),
        Reply::text("42, and it is 21:00 in Tokyo."),
    ]);
    let agent = create_react_agent(model.clone(), registry())
        .prompt("You are terse.")
        .build()
        .unwrap();
    let out = agent
        .invoke(
            AgentState::user("6*7, and the time in Tokyo?"),
            RunConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        kinds(&out),
        ["human", "ai", "tool", "ai", "tool", "ai"],
        "the prompt is not stored"
    );
    assert_eq!(out.messages[2].content(), "42");
    assert!(out.messages[4].content().contains("21:00:00"));
    assert_eq!(out.answer(), Some("42, and it is 21:00 in Tokyo."));
    assert_eq!(
        out.path.to_vec(),
        [
            vec!["agent"],
            vec!["tools"],
            vec!["agent"],
            vec!["tools"],
            vec!["agent"]
        ]
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request.messages[0], Message::system("You are terse."));
        let tools: Vec<&str> = request
            .options
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(tools, ["echo", "calculator", "datetime"]);
    }
    assert_eq!(requests[2].messages.len(), 6, "prompt + five messages");
}

#[tokio::test]
async fn the_calls_of_one_reply_run_in_parallel() {
    let model = ScriptedModel::new([
        Reply::tool_calls([
            ("meet", json!({"name": "a"})),
            ("meet", json!({"name": "b"})),
        ]),
        Reply::text("both met"),
    ]);
    let tools = ToolNode::new(ToolRegistry::new().with_tool(meet()).unwrap());
    let agent = create_react_agent(model, tools).build().unwrap();
    // Each call waits for the other: this only finishes if they overlap.
    let out = tokio::time::timeout(
        Duration::from_secs(10),
        agent.invoke(AgentState::user("meet a and b"), RunConfig::default()),
    )
    .await
    .expect("the two calls never overlapped")
    .unwrap();
    let results: Vec<&str> = out
        .messages
        .iter()
        .filter(|m| m.kind() == "tool")
        .map(Message::content)
        .collect();
    assert_eq!(results, ["met a", "met b"], "answers in call order");
    assert_eq!(out.answer(), Some("both met"));
}

#[tokio::test]
async fn tool_errors_reach_the_model_and_a_tool_node_can_be_configured() {
    let model = ScriptedModel::new([
        Reply::tool_call("calculator", json!({"expression": "1/0"})),
        Reply::text("Division by zero is undefined."),
    ]);
    let tools = ToolNode::new(registry()).handle_errors(HandleErrors::Message("failed".into()));
    let agent = create_react_agent(model, tools).build().unwrap();
    let out = agent
        .invoke(AgentState::user("1/0?"), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.messages[2].content(), "failed");
    assert_eq!(out.answer(), Some("Division by zero is undefined."));
}

#[tokio::test]
async fn the_step_limit_ends_the_turn_with_a_message() {
    let looping = ScriptedModel::from_fn(|_| Reply::tool_call("echo", json!({"text": "again"})));
    let agent = create_react_agent(looping.clone(), registry())
        .max_steps(3)
        .build()
        .unwrap();
    let out = agent
        .invoke(AgentState::user("loop"), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(looping.call_count(), 3);
    assert_eq!(kinds(&out), ["human", "ai", "tool", "ai", "tool", "ai"]);
    assert_eq!(out.answer(), Some(NEED_MORE_STEPS));
    assert!(out.messages[5].tool_calls().is_empty());

    // The run's recursion limit is a limit too: no GraphRecursionError.
    let agent = create_react_agent(looping, registry()).build().unwrap();
    let out = agent
        .invoke(
            AgentState::user("loop"),
            RunConfig::default().recursion_limit(4),
        )
        .await
        .unwrap();
    assert_eq!(out.answer(), Some(NEED_MORE_STEPS));
    assert_eq!(out.steps, 3);
}

fn approval_model() -> ScriptedModel {
    ScriptedModel::new([
        Reply::tool_call_with_id("c1", "calculator", json!({"expression": "2 + 2"}))
            .with_tool_call("echo", json!({"text": "no approval needed"})),
        Reply::text("done"),
    ])
}

#[tokio::test]
async fn approval_pauses_before_the_tools_and_resumes() {
    let agent = create_react_agent(approval_model(), registry())
        .checkpointer(Arc::new(InMemorySaver::new()))
        .approve_tools(["calculator"])
        .build()
        .unwrap();
    let config = thread("approve");
    let out = agent
        .invoke(AgentState::user("2+2, and echo"), config.clone())
        .await
        .unwrap();
    assert_eq!(out.next, ["tools"]);
    assert_eq!(out.interrupts.len(), 1);
    let request: ApprovalRequest = serde_json::from_value(out.interrupts[0].value.clone()).unwrap();
    assert_eq!(request.kind, "tool_approval");
    assert_eq!(
        request.tool_calls.len(),
        1,
        "only the tool that needs approval"
    );
    assert_eq!(request.tool_calls[0].id, "c1");
    assert_eq!(request.tool_calls[0].args, json!({"expression": "2 + 2"}));
    assert_eq!(kinds(&out), ["human", "ai"], "nothing ran yet");

    let snapshot = agent.get_state(&config).await.unwrap().unwrap();
    assert_eq!(snapshot.next, ["tools"]);

    let out = agent
        .invoke(
            Command::resume(Approval::approve()).unwrap(),
            config.clone(),
        )
        .await
        .unwrap();
    assert!(out.interrupts.is_empty());
    assert_eq!(kinds(&out), ["human", "ai", "tool", "tool", "ai"]);
    assert_eq!(out.messages[2].content(), "4");
    assert_eq!(out.messages[3].content(), "no approval needed");
    assert_eq!(out.answer(), Some("done"));
}

#[tokio::test]
async fn rejected_calls_are_answered_and_the_model_goes_on() {
    let model = approval_model();
    let agent = create_react_agent(model.clone(), registry())
        .checkpointer(Arc::new(InMemorySaver::new()))
        .approve_all_tools()
        .build()
        .unwrap();
    let config = thread("reject");
    let out = agent
        .invoke(AgentState::user("2+2, and echo"), config.clone())
        .await
        .unwrap();
    let request: ApprovalRequest = serde_json::from_value(out.interrupts[0].value.clone()).unwrap();
    assert_eq!(request.tool_calls.len(), 2);
    let echo_id = request.tool_calls[1].id.clone();

    // Approve only the echo; the calculator is refused with the reason.
    let out = agent
        .invoke(
            Command::resume(json!({"calls": {echo_id: true}, "reason": "not now"})).unwrap(),
            config.clone(),
        )
        .await
        .unwrap();
    let tools: Vec<(&str, bool)> = out
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(t) => Some((t.content.as_str(), t.is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        tools,
        [
            (
                "The user rejected this call of `calculator`: not now. Do not call it again unless asked.",
                true
            ),
            ("no approval needed", false),
        ]
    );
    assert_eq!(out.answer(), Some("done"));
    // The model read the rejection.
    let last = model.requests().pop().unwrap();
    assert!(
        last.messages
            .iter()
            .any(|m| m.content().starts_with("The user rejected"))
    );
}

#[tokio::test]
async fn approval_needs_a_checkpointer_and_known_tools() {
    let error = create_react_agent(approval_model(), registry())
        .approve_all_tools()
        .build()
        .unwrap_err();
    assert!(matches!(error, ToolError::AgentSetup { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains("needs a checkpointer: add .checkpointer(..)"),
        "{error}"
    );
    let error = create_react_agent(approval_model(), registry())
        .checkpointer(Arc::new(InMemorySaver::new()))
        .approve_tools(["send_email"])
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "create_react_agent: approval asked for tools the agent does not have: send_email; its tools: echo, calculator, datetime"
    );
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Answer {
    /// The result.
    value: f64,
    /// How sure, 0 to 1.
    confidence: f64,
}

#[tokio::test]
async fn a_structured_response_ends_the_turn() {
    let model = ScriptedModel::new([
        Reply::tool_call("calculator", json!({"expression": "6 * 7"})),
        Reply::text("It is 42."),
        Reply::json(json!({"value": 42.0, "confidence": 0.9})),
    ]);
    let agent = create_react_agent(model.clone(), registry())
        .response_format::<Answer>()
        .build()
        .unwrap();
    let out = agent
        .invoke(AgentState::user("6*7?"), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(
        out.structured::<Answer>().unwrap().unwrap(),
        Answer {
            value: 42.0,
            confidence: 0.9
        }
    );
    assert_eq!(
        out.path.to_vec().last().unwrap(),
        &vec!["generate_structured_response".to_owned()]
    );
    let last = model.requests().pop().unwrap();
    let format = last.options.response_format.expect("asked for JSON");
    assert_eq!(format.name, "Answer");
    assert!(
        last.options.tools.is_empty(),
        "no tools for the structured call"
    );
    assert_eq!(out.answer(), Some("It is 42."));
}

#[tokio::test]
async fn a_thread_keeps_the_conversation() {
    let model = ScriptedModel::new([
        Reply::text("Hello, Ana."),
        Reply::tool_call("echo", json!({"text": "Ana"})),
        Reply::text("Your name is Ana."),
    ]);
    let agent = create_react_agent(model.clone(), registry())
        .checkpointer(Arc::new(InMemorySaver::new()))
        .build()
        .unwrap();
    let config = thread("chat");
    agent
        .invoke(AgentState::user("I am Ana"), config.clone())
        .await
        .unwrap();
    let out = agent
        .invoke(AgentState::user("What is my name?"), config.clone())
        .await
        .unwrap();
    assert_eq!(kinds(&out), ["human", "ai", "human", "ai", "tool", "ai"]);
    assert_eq!(out.answer(), Some("Your name is Ana."));
    assert_eq!(
        model.requests()[1].messages.len(),
        3,
        "the first turn was sent"
    );
}

#[tokio::test]
async fn the_graph_can_be_extended_before_compiling() {
    let graph = create_react_agent(approval_model(), registry())
        .graph()
        .unwrap()
        .compile()
        .unwrap();
    let mermaid = graph.draw_mermaid();
    assert!(mermaid.contains("agent"), "{mermaid}");
    assert!(mermaid.contains("tools"), "{mermaid}");
}
