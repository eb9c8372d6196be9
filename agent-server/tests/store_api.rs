//! `/store/*` over HTTP as langgraph-sdk's `client.store.*` calls it, on the in-memory,
//! SQLite and PostgreSQL servers; and a served graph writing to the same store from a node.

mod common;

use std::sync::Arc;

use agent_core::{BoxResult, END, GraphState, NodeContext, START, StateGraph};
use agent_server::Server;
use serde_json::{Value, json};

#[derive(GraphState, Clone, Default, Debug, serde::Serialize, serde::Deserialize)]
struct Note {
    user: String,
    text: String,
}

/// Keeps the run's text in the store under the user's namespace.
async fn keep(state: Arc<Note>, ctx: NodeContext) -> BoxResult<NoteUpdate> {
    let store = ctx.store().ok_or("the server gives its graphs a store")?;
    store
        .put(
            &agent_core::store::ns(["notes", state.user.as_str()]),
            "last",
            json!({"text": state.text}),
        )
        .await?;
    Ok(NoteUpdate::default())
}

fn graph() -> StateGraph<Note> {
    StateGraph::new()
        .add_node("keep", keep)
        .add_edge(START, "keep")
        .add_edge("keep", END)
}

use common::served::Served as Api;

async fn exercise(api: &Api) {
    use reqwest::Method;
    let put = |ns: Value, key: &str, value: Value| {
        api.call(
            Method::PUT,
            "/store/items",
            Some(json!({"namespace": ns, "key": key, "value": value})),
        )
    };
    assert_eq!(
        put(
            json!(["users", "ada"]),
            "profile",
            json!({"name": "Ada", "age": 36})
        )
        .await
        .0,
        204
    );
    assert_eq!(
        put(
            json!(["users", "bob"]),
            "profile",
            json!({"name": "Bob", "age": 51})
        )
        .await
        .0,
        204
    );
    assert_eq!(
        put(
            json!(["users", "ada", "facts"]),
            "tea",
            json!({"likes": "tea"})
        )
        .await
        .0,
        204
    );

    let (status, item) = api
        .call(
            Method::GET,
            "/store/items?namespace=users.ada&key=profile",
            None,
        )
        .await;
    assert_eq!(status, 200, "{item}");
    assert_eq!(item["namespace"], json!(["users", "ada"]));
    assert_eq!(item["value"], json!({"name": "Ada", "age": 36}));
    assert!(
        item["created_at"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z') || t.contains('+')),
        "{item}"
    );
    let (status, missing) = api
        .call(
            Method::GET,
            "/store/items?namespace=users.ada&key=nope",
            None,
        )
        .await;
    assert_eq!((status, missing), (200, Value::Null));

    let (status, found) = api
        .call(
            Method::POST,
            "/store/items/search",
            Some(json!({"namespace_prefix": ["users"], "filter": {"age": {"$gt": 40}}})),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    let keys: Vec<&Value> = found["items"]
        .as_array()
        .map(|a| a.iter().map(|i| &i["namespace"]).collect())
        .unwrap_or_default();
    assert_eq!(keys, [&json!(["users", "bob"])]);
    assert_eq!(found["items"][0]["score"], Value::Null);

    let (status, listed) = api
        .call(
            Method::POST,
            "/store/namespaces",
            Some(json!({"prefix": ["users"], "max_depth": 2})),
        )
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(
        listed["namespaces"],
        json!([["users", "ada"], ["users", "bob"]])
    );
    let (_, suffixed) = api
        .call(
            Method::POST,
            "/store/namespaces",
            Some(json!({"suffix": ["facts"]})),
        )
        .await;
    assert_eq!(suffixed["namespaces"], json!([["users", "ada", "facts"]]));

    let (status, _) = api
        .call(
            Method::DELETE,
            "/store/items",
            Some(json!({"namespace": ["users", "bob"], "key": "profile"})),
        )
        .await;
    assert_eq!(status, 204);
    let (_, gone) = api
        .call(
            Method::GET,
            "/store/items?namespace=users.bob&key=profile",
            None,
        )
        .await;
    assert_eq!(gone, Value::Null);

    // Without an index a query is ignored (langgraph-api's answer): the filtered items,
    // unranked.
    let (status, found) = api
        .call(
            Method::POST,
            "/store/items/search",
            Some(json!({"namespace_prefix": ["users"], "query": "who likes tea?", "filter": {"name": "Ada"}})),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["items"][0]["value"]["name"], "Ada", "{found}");
    assert_eq!(found["items"][0]["score"], Value::Null);

    // Refusals are 422s with a detail.
    for (method, path, body) in [
        (
            Method::PUT,
            "/store/items",
            json!({"namespace": ["a.b"], "key": "k", "value": {}}),
        ),
        (
            Method::PUT,
            "/store/items",
            json!({"namespace": ["langgraph"], "key": "k", "value": {}}),
        ),
        (
            Method::PUT,
            "/store/items",
            json!({"namespace": ["a"], "key": "k", "value": [1]}),
        ),
        (
            Method::PUT,
            "/store/items",
            json!({"namespace": ["a"], "key": "k", "value": {}, "ttl": -1}),
        ),
        (
            Method::POST,
            "/store/items/search",
            json!({"filter": {"a": {"$regex": "x"}}}),
        ),
    ] {
        let (status, error) = api.call(method, path, Some(body.clone())).await;
        assert_eq!(status, 422, "{body} -> {error}");
        assert!(
            error["detail"].as_str().is_some_and(|d| !d.is_empty()),
            "{error}"
        );
    }

    // A served graph's node writes to the same store.
    let (status, out) = api
        .call(
            Method::POST,
            "/runs/wait",
            Some(json!({"assistant_id": "notes", "input": {"user": "ada", "text": "from a run"}})),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    let (_, kept) = api
        .call(
            Method::GET,
            "/store/items?namespace=notes.ada&key=last",
            None,
        )
        .await;
    assert_eq!(kept["value"], json!({"text": "from a run"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_endpoints_in_memory() {
    exercise(&Api::start(Server::builder().graph("notes", graph())).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_endpoints_on_sqlite_keep_items_in_the_servers_file() {
    let dir = std::env::temp_dir().join(format!(
        "agentgraph-store-api-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("server.sqlite");
    exercise(&Api::start(Server::builder().sqlite(&path).graph("notes", graph())).await).await;
    let store = agent_core::store::SqliteStore::open(&path).expect("the server's file");
    use agent_core::store::Store;
    let kept = store
        .get(&agent_core::store::ns(["users", "ada"]), "profile")
        .await
        .expect("get");
    assert!(kept.is_some(), "the item is in the server's file");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_endpoints_on_postgres() {
    let Some(url) = common::fresh_database("store_api").await else {
        return;
    };
    exercise(&Api::start(Server::builder().postgres(url).graph("notes", graph())).await).await;
}
