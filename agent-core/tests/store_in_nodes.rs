//! The store in nodes: `ctx.store()` (and `rt.store()`), given at compile time
//! (`CompiledGraph::with_store`) or per run (`RunConfig::store`), inherited by subgraphs;
//! a node remembering a user across threads on every saver.

mod common;

use std::sync::Arc;

use agent_core::store::{InMemoryStore, PostgresStore, SqliteStore, Store, ns};
use agent_core::{BoxResult, END, GraphState, NodeContext, RunConfig, Runtime, START, StateGraph};
use serde_json::json;

#[derive(GraphState, Clone, Default, Debug)]
struct Chat {
    user: String,
    said: String,
    #[reducer(append)]
    known: Vec<String>,
}

/// Remembers what each user says (`remember: <fact>`) and answers with every fact it knows
/// about the user: the store outlives the thread.
async fn remember(state: Arc<Chat>, ctx: NodeContext) -> BoxResult<ChatUpdate> {
    let store = ctx.store().ok_or("this graph needs a store")?;
    let space = ns(["facts", state.user.as_str()]);
    if let Some(fact) = state.said.strip_prefix("remember: ") {
        let key = format!("{}", fact.len());
        store.put(&space, &key, json!({"fact": fact})).await?;
    }
    let facts = store
        .search(agent_core::store::SearchOp::new(space).limit(100))
        .await?;
    let mut known: Vec<String> = facts
        .iter()
        .filter_map(|i| i.value["fact"].as_str().map(str::to_owned))
        .collect();
    known.sort();
    Ok(ChatUpdate::default().known(known))
}

fn chat_graph() -> StateGraph<Chat> {
    StateGraph::new()
        .add_node("remember", remember)
        .add_edge(START, "remember")
        .add_edge("remember", END)
}

fn said(user: &str, text: &str) -> ChatUpdate {
    ChatUpdate::default()
        .user(user.to_owned())
        .said(text.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_remembers_a_user_across_threads_on_every_saver() {
    for (name, saver) in common::backends().await {
        let store: Arc<dyn Store> = match name {
            "sqlite" => Arc::new(SqliteStore::open(common::sqlite_path()).expect("store")),
            "postgres" => {
                let url = common::postgres_url().expect("a postgres saver has a URL");
                Arc::new(PostgresStore::connect(&url).await.expect("store"))
            }
            _ => Arc::new(InMemoryStore::new()),
        };
        let graph = chat_graph()
            .compile_with(saver)
            .expect("compile")
            .with_store(store.clone());
        let user = common::unique("ada");
        let thread = |t: &str| RunConfig::new().thread_id(common::unique(t));
        graph
            .invoke(said(&user, "remember: likes tea"), thread("a"))
            .await
            .expect("thread a");
        let out = graph
            .invoke(said(&user, "what do I like?"), thread("b"))
            .await
            .expect("thread b");
        assert_eq!(
            out.known,
            ["likes tea"],
            "{name}: thread b knows thread a's fact"
        );
        let other = graph
            .invoke(said("someone-else", "hello"), thread("c"))
            .await
            .expect("thread c");
        assert!(other.known.is_empty(), "{name}: another user knows nothing");
    }
}

#[tokio::test]
async fn a_runs_store_wins_and_nodes_without_one_see_none() {
    let graph_store = Arc::new(InMemoryStore::new());
    let run_store = Arc::new(InMemoryStore::new());
    let graph = chat_graph()
        .compile()
        .expect("compile")
        .with_store(graph_store.clone());
    graph
        .invoke(
            said("u", "remember: per run"),
            RunConfig::new().store(run_store.clone()),
        )
        .await
        .expect("run");
    let space = ns(["facts", "u"]);
    assert_eq!(
        run_store
            .search(agent_core::store::SearchOp::new(space.clone()))
            .await
            .expect("search")
            .len(),
        1
    );
    assert!(
        graph_store
            .search(agent_core::store::SearchOp::new(space))
            .await
            .expect("search")
            .is_empty()
    );

    let without = StateGraph::<Chat>::new()
        .add_node("look", |_s: Arc<Chat>, ctx: NodeContext| async move {
            ChatUpdate::default().known(vec![format!("store: {}", ctx.store().is_some())])
        })
        .add_edge(START, "look")
        .add_edge("look", END)
        .compile()
        .expect("compile");
    let out = without
        .invoke(Chat::default(), RunConfig::new())
        .await
        .expect("run");
    assert_eq!(out.known, ["store: false"]);
    let failed = chat_graph()
        .compile()
        .expect("compile")
        .invoke(said("u", "hi"), RunConfig::new())
        .await;
    assert!(failed.is_err_and(|e| e.to_string().contains("this graph needs a store")));
}

#[tokio::test]
async fn subgraphs_inherit_the_store_and_runtime_nodes_reach_it() {
    struct Settings {
        prefix: String,
    }
    let child = StateGraph::<Chat, Settings>::with_context_type()
        .add_node("note", |s: Arc<Chat>, rt: Runtime<Settings>| async move {
            let store = rt.store().ok_or("no store in the subgraph")?;
            store
                .put(
                    &ns(["notes"]),
                    &s.user,
                    json!({"by": format!("{}{}", rt.context().prefix, s.user)}),
                )
                .await?;
            BoxResult::Ok(ChatUpdate::default())
        })
        .add_edge(START, "note")
        .add_edge("note", END)
        .compile()
        .expect("child");
    let parent = StateGraph::<Chat, Settings>::with_context_type()
        .add_node("child", child)
        .add_edge(START, "child")
        .add_edge("child", END)
        .compile()
        .expect("parent");
    let store = Arc::new(InMemoryStore::new());
    let parent = parent
        .with_context(Settings {
            prefix: "by-".into(),
        })
        .with_store(store.clone());
    parent
        .invoke(said("ada", ""), RunConfig::new())
        .await
        .expect("run");
    let item = store.get(&ns(["notes"]), "ada").await.expect("get");
    assert_eq!(item.map(|i| i.value["by"].clone()), Some(json!("by-ada")));
}
