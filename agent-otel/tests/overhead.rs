//! What exporting costs a run: a ten-node sequential graph (sequential_10's shape) run many
//! times with no subscriber, then with agent-otel's pipeline exporting every span over
//! OTLP/HTTP to a local receiver that accepts and drops them. Prints microseconds per node for
//! both; asserts nothing about time (run it in release, by hand):
//!
//! `cargo test -p agent-otel --release --test overhead -- --ignored --nocapture`

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{CompiledGraph, END, GraphState, RunConfig, START, StateGraph};
use axum::routing::post;
use tracing_subscriber::layer::SubscriberExt;

#[derive(GraphState, Clone, Default, Debug)]
struct S {
    #[reducer(add)]
    count: u64,
}

const NODES: usize = 10;
const RUNS: usize = 3_000;

fn graph() -> CompiledGraph<S> {
    let mut builder = StateGraph::new();
    for i in 0..NODES {
        builder = builder.add_node(format!("n{i}"), |_s: Arc<S>| async {
            SUpdate::default().count(1)
        });
    }
    builder = builder.add_edge(START, "n0");
    for i in 1..NODES {
        builder = builder.add_edge(format!("n{}", i - 1), format!("n{i}"));
    }
    builder
        .add_edge(format!("n{}", NODES - 1), END)
        .compile()
        .unwrap()
}

/// Microseconds per node over `RUNS` runs (after a warm-up).
async fn per_node(graph: &CompiledGraph<S>) -> f64 {
    for _ in 0..100 {
        graph
            .invoke(S::default(), RunConfig::default())
            .await
            .unwrap();
    }
    let started = Instant::now();
    for _ in 0..RUNS {
        let out = graph
            .invoke(S::default(), RunConfig::default())
            .await
            .unwrap();
        assert_eq!(out.count, NODES as u64);
    }
    started.elapsed().as_secs_f64() * 1e6 / (RUNS * NODES) as f64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, run by hand in release"]
async fn cost_of_exporting_spans() {
    let graph = graph();
    let bare = per_node(&graph).await;

    let app = axum::Router::new()
        .route("/v1/traces", post(|| async { "" }))
        .route("/v1/metrics", post(|| async { "" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let (layer, guard) = agent_otel::Builder::from_env()
        .endpoint(url)
        .protocol(agent_otel::Protocol::HttpProtobuf)
        .build()
        .unwrap();
    let exported = {
        // The graph's steps have one task each: they run on this task, under this default.
        let _default = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
        per_node(&graph).await
    };
    let flushed = Instant::now();
    tokio::task::block_in_place(|| guard.shutdown()).unwrap();
    let flush = flushed.elapsed();

    println!(
        "sequential_10 in memory, no checkpointer: {bare:.2} us/node with no subscriber, \
         {exported:.2} us/node exporting every span over OTLP/HTTP ({:.2} us/node more; \
         last flush {:?})",
        exported - bare,
        flush.min(Duration::from_secs(60)),
    );
}
