//! The OTLP exporters against local receivers: HTTP/protobuf (POST /v1/traces and
//! /v1/metrics, bodies decoded) and gRPC (tonic's trace service). A graph run under each
//! pipeline, the guard shut down, and the receiver holds the run's spans.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use agent_core::{END, GraphState, RunConfig, START, StateGraph};
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message as _;
use tracing_subscriber::layer::SubscriberExt;

#[derive(Default)]
struct Received {
    spans: Vec<String>,
    metrics: Vec<String>,
}

type Shared = Arc<Mutex<Received>>;

fn keep(received: &Shared, request: ExportTraceServiceRequest) {
    let mut received = received.lock().unwrap();
    for resource in request.resource_spans {
        for scope in resource.scope_spans {
            received
                .spans
                .extend(scope.spans.into_iter().map(|s| s.name));
        }
    }
}

#[derive(GraphState, Clone, Default, Debug)]
struct S {
    #[reducer(append)]
    log: Vec<String>,
}

/// Runs a two-node graph named `name` under `builder`'s pipeline, then shuts it down.
async fn run_under(builder: agent_otel::Builder, name: &str) {
    let (layer, guard) = builder.build().expect("pipeline");
    assert!(layer.is_some() && guard.is_active());
    let subscriber = tracing_subscriber::registry().with(layer);
    let graph = StateGraph::new()
        .add_node("one", |_s: std::sync::Arc<S>| async {
            SUpdate::default().log(vec!["one".to_owned()])
        })
        .add_node("two", |_s: std::sync::Arc<S>| async {
            SUpdate::default().log(vec!["two".to_owned()])
        })
        .add_edge(START, "one")
        .add_edge("one", "two")
        .add_edge("two", END)
        .compile()
        .unwrap()
        .with_name(name);
    {
        // Every task of this graph runs on the test's own task (steps of one task).
        let _default = tracing::subscriber::set_default(subscriber);
        let out = graph
            .invoke(S::default(), RunConfig::default())
            .await
            .unwrap();
        assert_eq!(out.log, ["one", "two"]);
    }
    // Waits for the exports (off this worker: the receiver runs on the others).
    tokio::task::block_in_place(|| guard.shutdown()).expect("exported");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_protobuf_exports_spans_and_metrics() {
    async fn traces(State(received): State<Shared>, body: Bytes) -> &'static str {
        keep(&received, ExportTraceServiceRequest::decode(body).unwrap());
        ""
    }
    async fn metrics(State(received): State<Shared>, body: Bytes) -> &'static str {
        let request = ExportMetricsServiceRequest::decode(body).unwrap();
        let mut received = received.lock().unwrap();
        for resource in request.resource_metrics {
            for scope in resource.scope_metrics {
                received
                    .metrics
                    .extend(scope.metrics.into_iter().map(|m| m.name));
            }
        }
        ""
    }
    let received = Shared::default();
    let app = axum::Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/metrics", post(metrics))
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let builder = agent_otel::Builder::from_env()
        .endpoint(url)
        .protocol(agent_otel::Protocol::HttpProtobuf);
    run_under(builder, "over_http").await;

    let received = received.lock().unwrap();
    for name in ["invoke_agent over_http", "step", "one", "two"] {
        assert!(
            received.spans.iter().any(|s| s == name),
            "{name}: {:?}",
            received.spans
        );
    }
    assert!(
        received
            .metrics
            .iter()
            .any(|m| m == "agentgraph.node.duration"),
        "{:?}",
        received.metrics
    );
}

struct Collector(Shared);

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        keep(&self.0, request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_exports_spans() {
    let received = Shared::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let service = TraceServiceServer::new(Collector(received.clone()));
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(incoming),
    );

    let builder = agent_otel::Builder::from_env()
        .endpoint(format!("http://{addr}"))
        .protocol(agent_otel::Protocol::Grpc)
        .metrics(false);
    run_under(builder, "over_grpc").await;

    let received = received.lock().unwrap();
    for name in ["invoke_agent over_grpc", "step", "one", "two"] {
        assert!(
            received.spans.iter().any(|s| s == name),
            "{name}: {:?}",
            received.spans
        );
    }
}
