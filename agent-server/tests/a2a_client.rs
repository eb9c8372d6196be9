//! agent-tools' A2A client against this server's `/a2a`: an assistant found by its card and
//! called as a tool (send, stream, a question back answered through its task), behind an API
//! key, and a `create_react_agent` that delegates to it.

mod common;
#[path = "../examples/reference/graphs.rs"]
#[allow(dead_code)]
mod graphs;

use std::sync::Arc;

use agent_core::RunConfig;
use agent_llm::{Message, Reply as ModelReply, ScriptedModel};
use agent_tools::a2a::{A2aAgent, A2aConfig, TaskState};
use agent_tools::prebuilt::{AgentState, create_react_agent};
use agent_tools::{DynTool, ToolRegistry};
use common::served::Served;
use serde_json::json;

#[tokio::test]
async fn the_client_talks_to_an_assistant_of_this_server() {
    let served = Served::start(graphs::server()).await;
    let agent = A2aAgent::connect(served.url("/a2a/agent")).await.unwrap();
    assert_eq!(agent.name(), "agent");
    assert!(agent.streams());
    assert!(agent.endpoint().starts_with(&served.url("/a2a/")));
    let reply = agent.send("hello", None, None).await.unwrap();
    assert_eq!(reply.state, TaskState::Completed);
    assert_eq!(reply.text, "from inner subgraph node");
    // The same conversation goes on in its context.
    let context = reply.context_id.clone().unwrap();
    let again = agent.send("more", Some(&context), None).await.unwrap();
    assert_eq!(again.context_id.as_deref(), Some(context.as_str()));
    let (_, state) = served.get(&format!("/threads/{context}/state")).await;
    assert_eq!(state["values"]["count"], 4);
    // Streamed: the tokens first, then the whole answer.
    let mut pieces = Vec::new();
    let streamed = agent
        .stream("tokens please", None, None, |t| pieces.push(t.to_owned()))
        .await
        .unwrap();
    assert!(
        pieces.concat().starts_with("echo: tokens please"),
        "{pieces:?}"
    );
    assert!(pieces.len() > 2, "{pieces:?}");
    assert_eq!(streamed.text, "from inner subgraph node");
    // The card's other URLs find the same agent.
    let by_query = A2aAgent::connect(served.url("/.well-known/agent-card.json?assistant_id=agent"))
        .await
        .unwrap();
    assert_eq!(by_query.endpoint(), agent.endpoint());
}

#[tokio::test]
async fn the_tool_relays_a_question_and_its_answer() {
    let served = Served::start(graphs::server().api_key("key-for-the-a2a-client")).await;
    // Without the key: no card.
    assert!(A2aAgent::connect(served.url("/a2a/agent")).await.is_err());
    let config = A2aConfig::new(served.url("/a2a/agent"))
        .header("x-api-key", "key-for-the-a2a-client")
        .streaming(true);
    let tool = A2aAgent::connect_with(config).await.unwrap().tool();
    let asked = tool.call(json!({"message": "please ask"})).await.unwrap();
    let asked = asked.as_str().unwrap().to_owned();
    assert!(asked.contains("needs more input"), "{asked}");
    assert!(asked.contains("approve?"), "{asked}");
    let task = asked
        .split("task_id \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_owned();
    let done = tool
        .call(json!({"message": "yes", "task_id": task}))
        .await
        .unwrap();
    assert!(
        done.as_str().unwrap().starts_with("human said: yes"),
        "{done}"
    );
    // A failing run is the tool's error.
    let e = tool.call(json!({"message": "fail now"})).await.unwrap_err();
    assert!(e.to_string().contains("failed on purpose"), "{e}");
}

#[tokio::test]
async fn a_react_agent_delegates_to_an_assistant_of_this_server() {
    let served = Served::start(graphs::server()).await;
    let tool = A2aAgent::connect(served.url("/a2a/agent"))
        .await
        .unwrap()
        .tool();
    let name = tool.name().to_owned();
    let registry = ToolRegistry::new().with_tool(tool).unwrap();
    let called = name.clone();
    let model = ScriptedModel::from_fn(move |messages: &[Message]| {
        match messages.iter().rev().find(|m| m.kind() == "tool") {
            None => ModelReply::tool_call(called.clone(), json!({"message": "ping"})),
            Some(result) => ModelReply::text(format!("Remote: {}", result.content())),
        }
    });
    let agent = create_react_agent(Arc::new(model), registry)
        .build()
        .unwrap();
    let out = agent
        .invoke(
            AgentState::user("ask the remote agent"),
            RunConfig::default(),
        )
        .await
        .unwrap();
    let answer = out.answer().unwrap_or_default();
    assert!(
        answer.starts_with("Remote: from inner subgraph node"),
        "{answer}"
    );
    assert_eq!(name, "agent");
}
