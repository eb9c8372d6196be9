//! `agent run` sends its trace to the OTLP collector the environment names: a local OTLP/HTTP
//! receiver here (POST /v1/traces and /v1/metrics, protobuf bodies decoded) gets one trace
//! with the run, its steps, their nodes and the model and tool calls under them, before the
//! program exits. Without the variables nothing is sent.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use common::{Scratch, run};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

#[derive(Default)]
struct Received {
    spans: Vec<Span>,
    resource: HashMap<String, String>,
    metrics: Vec<String>,
}

type Shared = Arc<Mutex<Received>>;

async fn traces(State(received): State<Shared>, body: Bytes) -> &'static str {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP trace request");
    let mut received = received.lock().unwrap();
    for resource_spans in request.resource_spans {
        if let Some(resource) = resource_spans.resource {
            for kv in resource.attributes {
                received
                    .resource
                    .insert(kv.key, text(kv.value.and_then(|v| v.value)));
            }
        }
        for scope in resource_spans.scope_spans {
            received.spans.extend(scope.spans);
        }
    }
    ""
}

async fn metrics(State(received): State<Shared>, body: Bytes) -> &'static str {
    let request = ExportMetricsServiceRequest::decode(body).expect("an OTLP metrics request");
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

fn text(value: Option<AnyValue>) -> String {
    match value {
        Some(AnyValue::StringValue(s)) => s,
        Some(AnyValue::IntValue(n)) => n.to_string(),
        Some(AnyValue::BoolValue(b)) => b.to_string(),
        Some(AnyValue::DoubleValue(x)) => x.to_string(),
        other => format!("{other:?}"),
    }
}

fn attr(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .map(|kv| text(kv.value.clone().and_then(|v| v.value)))
}

/// A receiver on a free loopback port: its base URL and what it received.
async fn receiver() -> (String, Shared) {
    let received = Shared::default();
    let app = axum::Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/metrics", post(metrics))
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_run_exports_one_trace_of_run_steps_nodes_and_calls() {
    let (url, received) = receiver().await;
    let s = Scratch::new("otel");
    let mut cmd = s.agent(&["run", "tool-router", "What time is it in New York?"]);
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &url)
        .env("OTEL_SERVICE_NAME", "agent-otel-test")
        // Exported on exit, not on the batch timer.
        .env("OTEL_BSP_SCHEDULE_DELAY", "60000");
    let out = tokio::task::spawn_blocking(move || run(cmd)).await.unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);

    let received = received.lock().unwrap();
    assert_eq!(
        received.resource.get("service.name").map(String::as_str),
        Some("agent-otel-test")
    );
    let spans = &received.spans;
    assert!(!spans.is_empty(), "no span arrived");
    let trace = &spans[0].trace_id;
    assert!(spans.iter().all(|s| &s.trace_id == trace), "one trace");
    let named = |name: &str| spans.iter().filter(|s| s.name == name).collect::<Vec<_>>();
    let by_id = |id: &Vec<u8>| spans.iter().find(|s| &s.span_id == id);
    let under = |span: &Span, ancestor: &Span| {
        let mut at = &span.parent_span_id;
        while let Some(parent) = by_id(at) {
            if parent.span_id == ancestor.span_id {
                return true;
            }
            at = &parent.parent_span_id;
        }
        false
    };

    let runs = named("invoke_agent tool-router");
    assert_eq!(runs.len(), 1, "{spans:#?}");
    let run_span = runs[0];
    assert!(
        run_span.parent_span_id.is_empty(),
        "the run is the trace's root"
    );
    assert_eq!(
        attr(run_span, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(attr(run_span, "agentgraph.steps").as_deref(), Some("3"));

    let steps = named("step");
    assert_eq!(steps.len(), 3);
    assert!(steps.iter().all(|s| s.parent_span_id == run_span.span_id));
    for node in ["router", "tool_executor", "generator"] {
        let found = named(node);
        assert_eq!(found.len(), 1, "{node}");
        assert!(
            steps.iter().any(|s| found[0].parent_span_id == s.span_id),
            "{node} under a step"
        );
    }
    let chats: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat "))
        .collect();
    assert!(chats.len() >= 2, "the router's and the generator's calls");
    for chat in &chats {
        assert!(attr(chat, "gen_ai.usage.input_tokens").is_some());
        assert!(
            under(chat, named("router")[0]) || under(chat, named("generator")[0]),
            "{chat:?}"
        );
    }
    let tools: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("execute_tool "))
        .collect();
    assert_eq!(tools.len(), 1);
    assert_eq!(
        attr(tools[0], "gen_ai.tool.name").as_deref(),
        Some("datetime")
    );
    assert!(under(tools[0], named("tool_executor")[0]));

    // The metrics went with them.
    assert!(
        received
            .metrics
            .iter()
            .any(|m| m == "gen_ai.client.token.usage"),
        "{:?}",
        received.metrics
    );
    assert!(
        received
            .metrics
            .iter()
            .any(|m| m == "agentgraph.run.duration")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_endpoint_nothing_is_sent() {
    let (url, received) = receiver().await;
    let s = Scratch::new("otel-off");
    let mut cmd = s.agent(&["run", "tool-router", "What time is it in New York?"]);
    // A protocol and a service name alone name no collector.
    cmd.env("OTEL_SERVICE_NAME", "agent-otel-test")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
    let out = tokio::task::spawn_blocking(move || run(cmd)).await.unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);

    // OTEL_SDK_DISABLED wins over an endpoint.
    let mut cmd = s.agent(&["run", "tool-router", "What time is it in New York?"]);
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &url)
        .env("OTEL_SDK_DISABLED", "true");
    let out = tokio::task::spawn_blocking(move || run(cmd)).await.unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);

    let received = received.lock().unwrap();
    assert!(received.spans.is_empty() && received.metrics.is_empty());
}

#[test]
fn an_unknown_protocol_is_an_error() {
    let s = Scratch::new("otel-bad");
    let mut cmd = s.agent(&["run", "tool-router", "What time is it in New York?"]);
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
    let out = run(cmd);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("http/json"), "{}", out.stderr);
}
