//! `manage_memory` and `search_memory` in a graph: a memory created on one thread is found on
//! another thread of the same user, not by another user; updates, deletes, errors the model
//! can read, and their JSON schemas.

use std::sync::Arc;

use agent_core::store::{InMemoryStore, Store, ns};
use agent_core::{END, GraphState, RunConfig, START, StateGraph};
use agent_llm::embeddings::{index_config, init_embeddings};
use agent_llm::{CallOptions, ChatModel, ChatModelExt, LlmError, Message, Reply, ScriptedModel};
use agent_tools::{
    DynTool, ManageMemory, SearchMemory, ToolNode, ToolRegistry, messages_state, tools_condition,
};
use serde_json::{Value, json};

#[derive(GraphState, Clone, Default, Debug)]
struct Agent {
    #[reducer(agent_llm::add_messages)]
    messages: Vec<Message>,
}
messages_state!(Agent, messages);

fn registry() -> ToolRegistry {
    ToolRegistry::new()
        .with_tool(ManageMemory::new(["memories", "{user_id}"]))
        .and_then(|r| r.with_tool(SearchMemory::new(["memories", "{user_id}"])))
        .expect("registry")
}

/// An agent whose model makes `call` then answers "done".
async fn run(store: Arc<dyn Store>, user: &str, tool: &str, args: Value) -> Vec<Message> {
    let model = Arc::new(
        ScriptedModel::new([Reply::tool_call(tool, args), Reply::text("done")])
            .bind_tools(registry().specs()),
    );
    let graph = StateGraph::<Agent>::new()
        .add_node("agent", move |state: Arc<Agent>| {
            let model = model.clone();
            async move {
                let reply = model
                    .invoke(&state.messages, &CallOptions::default())
                    .await?;
                Ok::<_, LlmError>(AgentUpdate::default().messages(vec![reply.into()]))
            }
        })
        .add_node("tools", ToolNode::new(registry()))
        .add_edge(START, "agent")
        .add_conditional_edges("agent", tools_condition, ["tools", END])
        .add_edge("tools", "agent")
        .compile()
        .expect("compile")
        .with_store(store);
    let config = RunConfig::new()
        .thread_id(format!("{user}-{tool}"))
        .metadata("user_id", user);
    let input = AgentUpdate::default().messages(vec![Message::human("hi")]);
    graph
        .invoke(input, config)
        .await
        .expect("run")
        .messages
        .clone()
}

/// The tool message's JSON.
fn tool_output(messages: &[Message]) -> Value {
    let tool = messages
        .iter()
        .find(|m| m.kind() == "tool")
        .expect("a tool message");
    serde_json::from_str(tool.content())
        .unwrap_or_else(|_| Value::String(tool.content().to_owned()))
}

async fn remembers_across_threads(store: Arc<dyn Store>) {
    let created = tool_output(
        &run(
            store.clone(),
            "ada",
            "manage_memory",
            json!({"content": "Ada prefers green tea"}),
        )
        .await,
    );
    let id = created["created"].as_str().expect("an id").to_owned();
    let stored = store.get(&ns(["memories", "ada"]), &id).await.expect("get");
    assert_eq!(
        stored.map(|i| i.value),
        json!({"content": "Ada prefers green tea"})
            .as_object()
            .cloned()
    );

    let found = tool_output(
        &run(
            store.clone(),
            "ada",
            "search_memory",
            json!({"query": "what tea does she like"}),
        )
        .await,
    );
    assert_eq!(found[0]["id"], id.as_str(), "{found}");
    assert_eq!(found[0]["content"], "Ada prefers green tea");
    let other = tool_output(
        &run(
            store.clone(),
            "bob",
            "search_memory",
            json!({"query": "tea"}),
        )
        .await,
    );
    assert_eq!(other, json!([]), "another user's namespace is empty");

    let updated = tool_output(
        &run(
            store.clone(),
            "ada",
            "manage_memory",
            json!({"action": "update", "id": id, "content": "Ada now drinks coffee"}),
        )
        .await,
    );
    assert_eq!(updated["updated"], id.as_str());
    let deleted = tool_output(
        &run(
            store.clone(),
            "ada",
            "manage_memory",
            json!({"action": "delete", "id": id}),
        )
        .await,
    );
    assert_eq!(deleted["deleted"], id.as_str());
    assert_eq!(
        store.get(&ns(["memories", "ada"]), &id).await.expect("get"),
        None
    );
}

#[tokio::test]
async fn memories_cross_threads_with_semantic_search() {
    let index = index_config(init_embeddings("offline").expect("offline"), ["content"])
        .await
        .expect("index");
    remembers_across_threads(Arc::new(InMemoryStore::new().with_index(index))).await;
}

#[tokio::test]
async fn memories_cross_threads_without_an_index() {
    remembers_across_threads(Arc::new(InMemoryStore::new())).await;
}

#[tokio::test]
async fn errors_reach_the_model() {
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let missing = run(
        store.clone(),
        "ada",
        "manage_memory",
        json!({"action": "update", "content": "x"}),
    )
    .await;
    let text = tool_output(&missing)
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(text.contains("need the memory's `id`"), "{text}");
    let unknown = run(
        store,
        "ada",
        "manage_memory",
        json!({"action": "update", "id": "nope", "content": "x"}),
    )
    .await;
    let text = tool_output(&unknown)
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(text.contains("no memory with id `nope`"), "{text}");
    // Outside a graph, without a store of its own: the tool says how to give it one.
    let lone = ManageMemory::new(["memories"]);
    let err = DynTool::call(&lone, json!({"content": "x"}))
        .await
        .expect_err("no store");
    assert!(
        err.to_string().contains("CompiledGraph::with_store"),
        "{err}"
    );
    // With its own store, outside a graph (no metadata): a literal namespace works.
    let own = Arc::new(InMemoryStore::new());
    let tool = ManageMemory::new(["memories"]).with_store(own.clone());
    let out = DynTool::call(&tool, json!({"content": "kept"}))
        .await
        .expect("create");
    assert!(out["created"].is_string());
    let templated = ManageMemory::new(["memories", "{user_id}"]).with_store(own);
    let err = DynTool::call(&templated, json!({"content": "x"}))
        .await
        .expect_err("no user");
    assert!(
        err.to_string().contains("RunConfig::metadata(\"user_id\""),
        "{err}"
    );
}

#[test]
fn schemas_describe_the_arguments() {
    let manage = ManageMemory::new(["m"]);
    let schema = DynTool::parameters(&manage);
    let text = schema.to_string();
    for word in ["content", "action", "id", "create", "update", "delete"] {
        assert!(text.contains(word), "{word} in {schema}");
    }
    assert_eq!(DynTool::name(&manage), "manage_memory");
    let search = SearchMemory::new(["m"]);
    let schema = DynTool::parameters(&search);
    assert_eq!(schema["required"], json!(["query"]));
    assert_eq!(DynTool::name(&search.named("recall")), "recall");
}
