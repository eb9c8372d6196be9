//! The node cache: a node with a `CachePolicy` in a graph with a cache runs once per key;
//! entries expire after their time to live; a SQLite cache outlives its handle.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_core::{
    CachePolicy, CompiledGraph, END, GraphState, InMemoryCache, NodeCache, NodeExt, RunConfig,
    START, SqliteCache, StateGraph,
};

#[derive(GraphState, Clone, Default, Debug)]
struct S {
    question: String,
    asker: String,
    #[reducer(append)]
    answers: Vec<String>,
}

fn graph(calls: Arc<AtomicUsize>, policy: CachePolicy<S>) -> CompiledGraph<S> {
    let think = move |s: Arc<S>| {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        async move { SUpdate::default().answers(vec![format!("{} #{n}", s.question)]) }
    };
    StateGraph::new()
        .add_node("think", think.with_cache_policy(policy))
        .add_edge(START, "think")
        .add_edge("think", END)
        .compile()
        .unwrap()
}

fn ask(question: &str, asker: &str) -> SUpdate {
    SUpdate::default()
        .question(question.to_owned())
        .asker(asker.to_owned())
}

#[tokio::test]
async fn a_cached_node_runs_once_per_input() {
    let calls = Arc::new(AtomicUsize::new(0));
    let graph = graph(calls.clone(), CachePolicy::new()).with_cache(Arc::new(InMemoryCache::new()));
    let first = graph
        .invoke(ask("why?", "ada"), RunConfig::default())
        .await
        .unwrap();
    let again = graph
        .invoke(ask("why?", "ada"), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(
        first.answers, again.answers,
        "the same writes, from the cache"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    graph
        .invoke(ask("why?", "bob"), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "another input is another key"
    );

    // Without a cache on the handle, the policy does nothing.
    let plain = self::graph(calls.clone(), CachePolicy::new());
    plain
        .invoke(ask("why?", "ada"), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_custom_key_and_a_time_to_live() {
    let calls = Arc::new(AtomicUsize::new(0));
    let policy = CachePolicy::new()
        .key(|s: &S| s.question.as_bytes().to_vec())
        .ttl(Duration::from_millis(200));
    let graph = graph(calls.clone(), policy).with_cache(Arc::new(InMemoryCache::new()));
    graph
        .invoke(ask("why?", "ada"), RunConfig::default())
        .await
        .unwrap();
    graph
        .invoke(ask("why?", "bob"), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "keyed by the question only"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    graph
        .invoke(ask("why?", "bob"), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the entry expired");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_cache_outlives_its_handle() {
    let path = common::sqlite_path();
    let calls = Arc::new(AtomicUsize::new(0));
    {
        let cache = Arc::new(SqliteCache::open(&path).unwrap());
        let graph = graph(calls.clone(), CachePolicy::new()).with_cache(cache);
        graph
            .invoke(ask("how?", "ada"), RunConfig::default())
            .await
            .unwrap();
    }
    let cache = Arc::new(SqliteCache::open(&path).unwrap());
    let graph = graph(calls.clone(), CachePolicy::new()).with_cache(cache.clone());
    let out = graph
        .invoke(ask("how?", "ada"), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.answers, ["how? #0"]);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "answered from the file");
    cache.clear(&["think"]).await.unwrap();
    graph
        .invoke(ask("how?", "ada"), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2, "cleared");
}
