//! What a server tells about itself and its data, over HTTP as langgraph-api answers it:
//! `/ok?check_db=1` (the database asked, a 500 with `services.database = unhealthy` when it
//! fails), `/info`'s flags, `/metrics?format=json`, `/threads/{id}/storage` on the three
//! savers, `/assistants/{id}/subgraphs` with each subgraph's schemas (`namespace`,
//! `recurse`), and store searches with a query, with and without an index.

mod common;

#[path = "../examples/reference/graphs.rs"]
#[allow(dead_code)]
mod graphs;

use std::sync::Arc;

use agent_core::{END, GraphState, START, StateGraph};
use reqwest::Method;
use serde_json::{Value, json};

use common::served::Served as Api;

fn temp_dir(what: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "agentgraph-{what}-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ok_checks_the_database_when_asked() {
    let dir = temp_dir("health");
    let path = dir.join("server.sqlite");
    let api = Api::start(graphs::server().sqlite(&path)).await;
    assert_eq!(
        api.get("/ok").await,
        (200, json!({"ok": true, "services": {}}))
    );
    assert_eq!(
        api.get("/ok?check_db=1").await,
        (
            200,
            json!({"ok": true, "services": {"database": "healthy"}})
        )
    );
    assert_eq!(api.get("/ok?check_db=0").await.0, 200);
    let (status, error) = api.get("/ok?check_db=yes").await;
    assert_eq!(status, 422, "{error}");

    // The runs' table gone from under the server: the check fails, plain `/ok` does not.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("DROP TABLE api_runs").unwrap();
    drop(conn);
    assert_eq!(
        api.get("/ok?check_db=1").await,
        (
            500,
            json!({"ok": false, "services": {"database": "unhealthy"}})
        )
    );
    assert_eq!(api.get("/ok").await.0, 200);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn info_tells_the_features_and_metrics_come_as_json() {
    let api = Api::start(graphs::server().workers(3)).await;
    let (_, info) = api.get("/info").await;
    assert_eq!(
        info["flags"],
        json!({
            "assistants": true, "crons": true, "langsmith": false,
            "langsmith_tracing_replicas": false, "langsmith_tracing_session_on_runs": false,
        })
    );

    let (_, thread) = api.post("/threads", json!({})).await;
    let t = thread["thread_id"].as_str().unwrap();
    let (status, out) = api
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({"assistant_id": "simple", "input": {"value": "x"}}),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    // The run's end is counted as it is written, about when `/wait` answers.
    let mut m = Value::Null;
    for _ in 0..100 {
        let (status, got) = api.get("/metrics?format=json").await;
        assert_eq!(status, 200, "{got}");
        m = got;
        if m["agentgraph"]["runs_finished"]["success"] == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(m["queue"]["n_pending"], 0, "{m}");
    assert_eq!(m["queue"]["n_running"], 0, "{m}");
    assert!(
        m["queue"]["pending_runs_wait_time_max_secs"].is_null(),
        "{m}"
    );
    assert_eq!(m["workers"], json!({"max": 3, "active": 0, "available": 3}));
    assert_eq!(m["agentgraph"]["runs"]["success"], 1, "{m}");
    assert_eq!(m["agentgraph"]["runs_finished"]["success"], 1, "{m}");
    assert_eq!(m["agentgraph"]["run_duration_seconds"]["count"], 1, "{m}");
    assert!(m.get("postgres").is_none(), "no pool in memory: {m}");

    // Prometheus stays the default, and what an unknown format gets.
    for path in [
        "/metrics",
        "/metrics?format=prometheus",
        "/metrics?format=xml",
    ] {
        let (status, text) = api.get(path).await;
        assert_eq!(status, 200);
        assert!(
            text.as_str()
                .is_some_and(|t| t.contains("agentgraph_runs{status=\"success\"} 1")),
            "{path}: {text}"
        );
    }
}

fn hi(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": text}]})
}

/// A thread's storage after two runs of `agent` (a subgraph's checkpoints included), then
/// gone with the thread.
async fn storage(api: &Api) {
    let (_, thread) = api.post("/threads", json!({})).await;
    let t = thread["thread_id"].as_str().unwrap().to_owned();
    let (status, empty) = api.get(&format!("/threads/{t}/storage")).await;
    assert_eq!(status, 200, "{empty}");
    assert_eq!(
        empty,
        json!({
            "thread_id": t, "total_bytes": 0,
            "checkpoints": {"count": 0, "bytes": 0},
            "channel_values": {"count": 0, "bytes": 0, "by_channel": {}},
            "pending_writes": {"count": 0, "bytes": 0},
        })
    );
    for text in ["hello", "again"] {
        let (status, out) = api
            .post(
                &format!("/threads/{t}/runs/wait"),
                json!({"assistant_id": "agent", "input": hi(text)}),
            )
            .await;
        assert_eq!(status, 200, "{out}");
    }
    let (status, s) = api.get(&format!("/threads/{t}/storage")).await;
    assert_eq!(status, 200, "{s}");
    assert_eq!(s["thread_id"], t.as_str());
    // Two runs of START -> chat -> sub(inner -> sub_ask) -> human: the root's checkpoints
    // and the subgraph's.
    let (_, history) = api
        .post(&format!("/threads/{t}/history"), json!({"limit": 100}))
        .await;
    let root = history.as_array().unwrap().len() as u64;
    let checkpoints = s["checkpoints"]["count"].as_u64().unwrap();
    assert!(checkpoints > root, "the subgraph's count too: {s}");
    let by_channel = s["channel_values"]["by_channel"].as_object().unwrap();
    assert!(
        by_channel["messages"]["versions"].as_u64().unwrap() >= 2,
        "{s}"
    );
    assert!(by_channel["count"]["bytes"].as_u64().unwrap() > 0, "{s}");
    let sum = |key: &str| s[key]["bytes"].as_u64().unwrap();
    assert_eq!(
        s["total_bytes"].as_u64().unwrap(),
        sum("checkpoints") + sum("channel_values") + sum("pending_writes"),
        "{s}"
    );
    let per_channel: u64 = by_channel
        .values()
        .map(|c| c["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(per_channel, sum("channel_values"), "{s}");

    let missing = uuid::Uuid::new_v4();
    assert_eq!(api.get(&format!("/threads/{missing}/storage")).await.0, 404);
    assert_eq!(api.get("/threads/not-a-uuid/storage").await.0, 422);
    assert_eq!(
        api.call(Method::DELETE, &format!("/threads/{t}"), None)
            .await
            .0,
        204
    );
    assert_eq!(api.get(&format!("/threads/{t}/storage")).await.0, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_storage_in_memory() {
    storage(&Api::start(graphs::server()).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_storage_on_sqlite() {
    let dir = temp_dir("storage");
    storage(&Api::start(graphs::server().sqlite(dir.join("server.sqlite"))).await).await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_storage_on_postgres() {
    let Some(url) = common::fresh_database("storage_api").await else {
        return;
    };
    storage(&Api::start(graphs::server().postgres(url)).await).await;
}

/// `outer`'s state: a note; its subgraph `inner` (another state) is nested inside it.
#[derive(GraphState, Clone, Default, Debug)]
struct Outer {
    note: String,
}

#[derive(GraphState, Clone, Default, Debug)]
struct Inner {
    #[reducer(agent_llm::add_messages)]
    chat: Vec<agent_llm::Message>,
    depth: i64,
}

/// START -> outer(START -> deep(inner) -> END) -> END, under `graphs::State`'s parent, and
/// the reference's same-state subgraph beside it.
fn nested() -> StateGraph<graphs::State, graphs::Context> {
    let inner = StateGraph::<Inner>::new()
        .add_node("think", |_s: Arc<Inner>| async { InnerUpdate::default() })
        .add_edge(START, "think")
        .add_edge("think", END)
        .compile()
        .unwrap();
    let outer = StateGraph::<Outer>::new()
        .add_node(
            "deep",
            inner.as_node(
                |_o: &Outer| InnerUpdate::default(),
                |_i: Inner| OuterUpdate::default(),
            ),
        )
        .add_edge(START, "deep")
        .add_edge("deep", END)
        .compile()
        .unwrap();
    StateGraph::<graphs::State, graphs::Context>::with_context_type()
        .add_node(
            "outer",
            outer.as_node(
                |_s: &graphs::State| OuterUpdate::default(),
                |_o: Outer| graphs::StateUpdate::default(),
            ),
        )
        .add_node("agent", graphs::agent().compile().unwrap())
        .add_edge(START, "outer")
        .add_edge("outer", "agent")
        .add_edge("agent", END)
}

fn properties(schema: &Value) -> Vec<String> {
    let mut keys: Vec<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subgraphs_come_with_their_schemas() {
    let api = Api::start(graphs::server().graph("nested", nested())).await;
    let (_, found) = api
        .post("/assistants/search", json!({"graph_id": "nested"}))
        .await;
    let id = found[0]["assistant_id"].as_str().unwrap().to_owned();
    let api = &api;
    let subgraphs = |query: &str| {
        let path = format!("/assistants/{id}/subgraphs{query}");
        async move {
            let (status, v) = api.get(&path).await;
            assert_eq!(status, 200, "{path}: {v}");
            v
        }
    };

    // Each of the root's subgraphs, with its own state's schemas.
    let top = subgraphs("").await;
    let mut keys: Vec<&String> = top.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["agent", "outer"], "{top}");
    let outer = &top["outer"];
    for key in ["input_schema", "output_schema"] {
        assert_eq!(properties(&outer[key]), ["note"], "{key}: {outer}");
    }
    assert_eq!(outer["state_schema"]["title"], "outer_state");
    assert_eq!(properties(&outer["state_schema"]), ["note"]);
    // A context type of its own (none): its context is not the parent's.
    assert!(outer["context_schema"].is_null(), "{outer}");
    let agent = &top["agent"];
    assert_eq!(properties(&agent["input_schema"]), ["count", "messages"]);
    assert_eq!(
        agent["input_schema"]["properties"]["messages"]["items"]["oneOf"][0]["$ref"],
        "#/$defs/HumanMessage"
    );
    // The parent's context type: the parent's context schema.
    assert_eq!(
        properties(&agent["context_schema"]),
        ["model", "user"],
        "{agent}"
    );
    assert_eq!(agent["config_schema"], agent["context_schema"]);

    // `recurse`: nested ones too, by their path.
    let all = subgraphs("?recurse=true").await;
    let mut keys: Vec<&String> = all.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["agent", "agent|sub", "outer", "outer|deep"], "{all}");
    let deep = &all["outer|deep"];
    assert_eq!(properties(&deep["input_schema"]), ["chat", "depth"]);
    assert_eq!(deep["state_schema"]["title"], "deep_state");
    assert_eq!(
        deep["input_schema"]["properties"]["chat"]["type"], "array",
        "a messages field: {deep}"
    );

    // A namespace: only the subgraph there (LangGraph ignores `recurse` then).
    for (query, wanted) in [
        ("/outer", vec!["outer"]),
        ("/outer?recurse=true", vec!["outer"]),
        ("/outer%7Cdeep", vec!["outer|deep"]),
        ("/agent%7Csub", vec!["agent|sub"]),
        ("/nope", vec![]),
        ("/outer%7Cnope", vec![]),
    ] {
        let v = subgraphs(query).await;
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, wanted, "{query}: {v}");
    }
    assert_eq!(subgraphs("/outer%7Cdeep").await["outer|deep"], *deep);

    // The root's own schemas are unchanged by the refactor.
    let (_, schemas) = api.get(&format!("/assistants/{id}/schemas")).await;
    assert_eq!(schemas["graph_id"], "nested");
    assert_eq!(schemas["state_schema"]["title"], "nested_state");
    assert_eq!(properties(&schemas["input_schema"]), ["count", "messages"]);
}

#[derive(GraphState, Clone, Default, Debug)]
struct Nothing {
    n: i64,
}

fn nothing() -> StateGraph<Nothing> {
    StateGraph::new()
        .add_node("noop", |_s: Arc<Nothing>| async {
            NothingUpdate::default()
        })
        .add_edge(START, "noop")
        .add_edge("noop", END)
}

/// Puts three notes under `["notes"]` and one elsewhere.
async fn notes(api: &Api) {
    for (ns, key, text) in [
        (
            json!(["notes"]),
            "train",
            "the train to Lyon leaves at nine",
        ),
        (json!(["notes"]), "milk", "buy oat milk and bread"),
        (json!(["notes"]), "call", "call the dentist on Monday"),
        (json!(["other"]), "train", "a train set for the children"),
    ] {
        let (status, v) = api
            .call(
                Method::PUT,
                "/store/items",
                Some(json!({"namespace": ns, "key": key, "value": {"text": text}})),
            )
            .await;
        assert_eq!(status, 204, "{v}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_search_query_without_an_index_is_ignored() {
    let api = Api::start(agent_server::Server::builder().graph("nothing", nothing())).await;
    notes(&api).await;
    let (status, found) = api
        .post(
            "/store/items/search",
            json!({"namespace_prefix": ["notes"], "query": "when does my train leave?", "limit": 2}),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    let items = found["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "the page, unranked: {found}");
    assert!(items.iter().all(|i| i["score"].is_null()), "{found}");
    assert!(items.iter().all(|i| i["namespace"] == json!(["notes"])));
    // Filters still apply.
    let (_, found) = api
        .post(
            "/store/items/search",
            json!({"namespace_prefix": ["notes"], "query": "anything", "filter": {"text": "buy oat milk and bread"}}),
        )
        .await;
    assert_eq!(found["items"].as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found["items"][0]["key"], "milk");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_index_ranks_searches_by_their_query() {
    let embeddings: Arc<dyn agent_llm::embeddings::Embeddings> =
        Arc::new(agent_llm::embeddings::OfflineEmbeddings::new(256));
    let index = agent_llm::embeddings::index_config(embeddings, ["text"])
        .await
        .unwrap();
    let dir = temp_dir("store-index");
    let api = Api::start(
        agent_server::Server::builder()
            .sqlite(dir.join("server.sqlite"))
            .store_index(index)
            .graph("nothing", nothing()),
    )
    .await;
    notes(&api).await;
    let (status, found) = api
        .post(
            "/store/items/search",
            json!({"namespace_prefix": ["notes"], "query": "when does my train leave?", "limit": 1}),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["items"][0]["key"], "train", "{found}");
    assert_eq!(found["items"][0]["namespace"], json!(["notes"]));
    assert!(found["items"][0]["score"].as_f64().is_some(), "{found}");
    let _ = std::fs::remove_dir_all(dir);

    // An index and a store of one's own at once: the index belongs to that store.
    let index = agent_core::store::IndexConfig::new(
        256,
        agent_llm::embeddings::to_embed(Arc::new(agent_llm::embeddings::OfflineEmbeddings::new(
            256,
        ))),
    );
    let both = agent_server::Server::builder()
        .store(Arc::new(agent_core::store::InMemoryStore::new()))
        .store_index(index)
        .graph("nothing", nothing())
        .build()
        .await;
    assert!(both.is_err());
}
