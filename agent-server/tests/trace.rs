//! The server joins its callers' traces, as OpenTelemetry sees it: agent-otel's layer over
//! in-memory exporters, installed once as the global subscriber. A request's `traceparent`
//! parents its HTTP server span, the run it queued is a child of that span (also when it
//! starts later, read back from the run store, on SQLite and on PostgreSQL), the graph's
//! spans nest under the run's, a webhook carries its client span's context (and the
//! caller's baggage) out, MCP tool calls carry theirs in `_meta` both ways, and a trace
//! header that is not one is ignored. The run spans feed the server's OTel metrics.
//!
//! Each test uses trace ids of its own and reads only its own traces, so they run in
//! parallel.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use agent_core::{END, GraphState, START, StateGraph};
use axum::http::HeaderMap;
use common::served::Served;
use opentelemetry::trace::{SpanId, SpanKind, Status, TraceId};
use opentelemetry::{KeyValue, Value as OtelValue};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value, json};
use tracing::Instrument as _;
use tracing_subscriber::layer::SubscriberExt as _;

struct Harness {
    spans: InMemorySpanExporter,
    metrics: InMemoryMetricExporter,
    meter_provider: SdkMeterProvider,
    /// The server's own record of its runs' spans (the trace view's route).
    recorder: agent_server::SpanRecorder,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let spans = InMemorySpanExporter::default();
        let metrics = InMemoryMetricExporter::default();
        let tracer_provider = SdkTracerProvider::builder()
            .with_simple_exporter(spans.clone())
            .build();
        let meter_provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics.clone()).build())
            .build();
        let (layer, guard) = agent_otel::Builder::from_env()
            .tracer_provider(tracer_provider)
            .meter_provider(meter_provider.clone())
            .filter("info")
            .build()
            .expect("pipeline");
        std::mem::forget(guard);
        let recorder = agent_server::SpanRecorder::new();
        let subscriber = tracing_subscriber::registry()
            .with(layer)
            .with(recorder.layer());
        tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
        Harness {
            spans,
            metrics,
            meter_provider,
            recorder,
        }
    })
}

/// A finished span, simplified.
#[derive(Debug, Clone)]
struct Span {
    name: String,
    kind: SpanKind,
    id: SpanId,
    parent: SpanId,
    remote_parent: bool,
    attributes: HashMap<String, OtelValue>,
    status: Status,
}

impl Span {
    fn str(&self, key: &str) -> Option<String> {
        self.attributes.get(key).map(|v| v.as_str().into_owned())
    }
    fn int(&self, key: &str) -> Option<i64> {
        match self.attributes.get(key)? {
            OtelValue::I64(n) => Some(*n),
            _ => None,
        }
    }
}

fn simplify(data: &SpanData) -> Span {
    Span {
        name: data.name.to_string(),
        kind: data.span_kind.clone(),
        id: data.span_context.span_id(),
        parent: data.parent_span_id,
        remote_parent: data.parent_span_is_remote,
        attributes: data
            .attributes
            .iter()
            .map(|KeyValue { key, value, .. }| (key.to_string(), value.clone()))
            .collect(),
        status: data.status.clone(),
    }
}

/// The spans of trace `trace` exported so far.
fn spans_of(trace: TraceId) -> Vec<Span> {
    harness()
        .spans
        .get_finished_spans()
        .expect("spans")
        .iter()
        .filter(|s| s.span_context.trace_id() == trace)
        .map(simplify)
        .collect()
}

/// The spans of `trace` once `ready` holds of them (within 10 s).
async fn wait_for(trace: TraceId, ready: impl Fn(&[Span]) -> bool) -> Vec<Span> {
    let start = Instant::now();
    loop {
        let spans = spans_of(trace);
        if ready(&spans) {
            return spans;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the trace never completed: {spans:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found: Vec<&Span> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one span named {name}: {spans:#?}");
    found[0]
}

/// A fresh caller context: its trace id, its span id, and the `traceparent` carrying them.
fn caller() -> (TraceId, SpanId, String) {
    let trace = TraceId::from_bytes(*uuid::Uuid::new_v4().as_bytes());
    let span = SpanId::from_bytes(uuid::Uuid::new_v4().as_bytes()[..8].try_into().unwrap());
    (trace, span, format!("00-{trace}-{span}-01"))
}

#[derive(GraphState, Clone, Default, Debug)]
struct Doc {
    value: String,
}

fn upper() -> StateGraph<Doc> {
    StateGraph::<Doc>::new()
        .add_node("upper", |d: Arc<Doc>| async move {
            DocUpdate::default().value(d.value.to_uppercase())
        })
        .add_edge(START, "upper")
        .add_edge("upper", END)
}

fn boom() -> StateGraph<Doc> {
    StateGraph::<Doc>::new()
        .add_node("boom", |_d: Arc<Doc>| async move {
            Err::<DocUpdate, agent_core::BoxError>("the node broke".into())
        })
        .add_edge(START, "boom")
        .add_edge("boom", END)
}

/// A webhook receiver on a free port: its URL and the headers of what it received.
async fn receiver() -> (String, Arc<Mutex<Vec<(HeaderMap, Value)>>>) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let store = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(
            move |headers: HeaderMap, axum::Json(body): axum::Json<Value>| {
                let store = store.clone();
                async move {
                    store.lock().unwrap().push((headers, body));
                    ""
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, got)
}

/// A scratch directory, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!(
        "agentgraph-trace-{name}-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

async fn post_traced(
    server: &Served,
    path: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> (u16, Value) {
    let mut request = server.http.post(server.url(path)).json(&body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_with_a_traceparent_parents_its_run_the_graph_and_the_webhook() {
    harness();
    let dir = scratch("wait");
    let server = Served::start(
        agent_server::Server::builder()
            .graph("upper", upper())
            .sqlite(dir.0.join("server.db"))
            .allow_private_webhooks(true),
    )
    .await;
    let (hook, delivered) = receiver().await;
    let (_, thread) = server.post("/threads", json!({})).await;
    let t = thread["thread_id"].as_str().unwrap();
    let (trace, parent, traceparent) = caller();
    let (status, out) = post_traced(
        &server,
        &format!("/threads/{t}/runs/wait"),
        &[
            ("traceparent", &traceparent),
            ("tracestate", "vendor=opaque"),
            ("baggage", "tenant=acme"),
        ],
        json!({"assistant_id": "upper", "input": {"value": "shout"}, "webhook": hook}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["value"], "SHOUT");

    let spans = wait_for(trace, |s| {
        [
            "POST",
            "POST /threads/{thread_id}/runs/wait",
            "upper",
            "run upper",
        ]
        .iter()
        .all(|name| s.iter().any(|span| span.name == *name))
    })
    .await;
    // The HTTP server span: the caller's child, with the HTTP conventions' attributes.
    let http = one(&spans, "POST /threads/{thread_id}/runs/wait");
    assert_eq!(http.kind, SpanKind::Server);
    assert_eq!((http.parent, http.remote_parent), (parent, true));
    assert_eq!(http.str("http.request.method").as_deref(), Some("POST"));
    assert_eq!(
        http.str("http.route").as_deref(),
        Some("/threads/{thread_id}/runs/wait")
    );
    assert_eq!(http.int("http.response.status_code"), Some(200));
    assert_eq!(
        http.str("url.path"),
        Some(format!("/threads/{t}/runs/wait"))
    );
    // The run, under the request; the graph under the run; its node under the graph.
    let run = one(&spans, "run upper");
    assert_eq!(run.parent, http.id);
    assert_eq!(run.str("agentgraph.run.status").as_deref(), Some("success"));
    assert_eq!(run.str("gen_ai.conversation.id").as_deref(), Some(t));
    assert!(matches!(
        run.attributes.get("agentgraph.run.queue_wait"),
        Some(OtelValue::F64(w)) if *w >= 0.0
    ));
    let graph = one(&spans, "invoke_agent upper");
    assert_eq!(graph.parent, run.id);
    assert_eq!(graph.str("gen_ai.agent.name").as_deref(), Some("upper"));
    let step = spans
        .iter()
        .find(|s| s.name == "step" && s.parent == graph.id)
        .expect("a step under the graph");
    assert_eq!(one(&spans, "upper").parent, step.id);

    // The webhook: a client span under the run, whose context went out in `traceparent`,
    // with the caller's tracestate and baggage.
    let webhook = one(&spans, "POST");
    assert_eq!(webhook.kind, SpanKind::Client);
    assert_eq!(webhook.parent, run.id);
    assert_eq!(webhook.int("http.response.status_code"), Some(200));
    let (headers, body) = delivered.lock().unwrap()[0].clone();
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    assert_eq!(
        header("traceparent"),
        format!("00-{trace}-{}-01", webhook.id)
    );
    assert_eq!(header("tracestate"), "vendor=opaque");
    assert!(header("baggage").contains("tenant=acme"), "{headers:?}");
    // Nobody reads the stored context: not the webhook, not the API.
    assert!(body.get("trace_context").is_none(), "{body}");
    let r = body["run_id"].as_str().unwrap();
    let (_, shown) = server.get(&format!("/threads/{t}/runs/{r}")).await;
    assert!(shown.get("trace_context").is_none(), "{shown}");
    assert_eq!(shown["status"], "success");
}

/// A run created now and started later (`after_seconds`), by whichever instance claims it
/// from the store, is still a child of the request that created it.
async fn a_run_started_later_joins_its_trace(server: &Served, also: Option<&Served>) {
    let (_, thread) = server.post("/threads", json!({})).await;
    let t = thread["thread_id"].as_str().unwrap();
    let (trace, parent, traceparent) = caller();
    let (status, run) = post_traced(
        server,
        &format!("/threads/{t}/runs"),
        &[("traceparent", &traceparent)],
        json!({"assistant_id": "upper", "input": {"value": "later"}, "after_seconds": 1}),
    )
    .await;
    assert_eq!(status, 200, "{run}");
    assert!(run.get("trace_context").is_none(), "{run}");
    let r = run["run_id"].as_str().unwrap();
    let start = Instant::now();
    loop {
        let (_, now) = also
            .unwrap_or(server)
            .get(&format!("/threads/{t}/runs/{r}"))
            .await;
        if now["status"] == "success" {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{now}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let spans = wait_for(trace, |s| s.iter().any(|span| span.name == "run upper")).await;
    let http = one(&spans, "POST /threads/{thread_id}/runs");
    assert_eq!(http.parent, parent);
    let run_span = one(&spans, "run upper");
    assert_eq!(run_span.parent, http.id, "{spans:#?}");
    assert_eq!(one(&spans, "invoke_agent upper").parent, run_span.id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_run_joins_its_trace_when_it_starts_on_sqlite() {
    harness();
    let dir = scratch("later");
    let server = Served::start(
        agent_server::Server::builder()
            .graph("upper", upper())
            .sqlite(dir.0.join("server.db")),
    )
    .await;
    a_run_started_later_joins_its_trace(&server, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_run_joins_its_trace_on_whichever_postgres_instance_runs_it() {
    harness();
    let Some(db) = common::fresh_database("agentgraph_trace").await else {
        return;
    };
    let builder = || {
        agent_server::Server::builder()
            .graph("upper", upper())
            .postgres(db.clone())
            .workers(1)
    };
    let a = Served::start(builder()).await;
    let b = Served::start(builder()).await;
    a_run_started_later_joins_its_trace(&a, Some(&b)).await;
    a_run_started_later_joins_its_trace(&b, Some(&a)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_headers_that_are_not_ones_are_ignored() {
    harness();
    let server = Served::start(agent_server::Server::builder().graph("upper", upper())).await;
    let (_, good_parent, good) = caller();
    let huge = format!("k={}", "v".repeat(9000));
    let bad: [Vec<(&str, &str)>; 5] = [
        vec![("traceparent", "not a traceparent")],
        vec![(
            "traceparent",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        )],
        vec![("traceparent", &good), ("traceparent", &good)],
        vec![("baggage", &huge)],
        vec![("traceparent", "00-zz"), ("tracestate", "=,=,=")],
    ];
    let mut paths = Vec::new();
    for headers in bad {
        let (_, thread) = server.post("/threads", json!({})).await;
        let t = thread["thread_id"].as_str().unwrap().to_owned();
        let path = format!("/threads/{t}/runs/wait");
        let (status, out) = post_traced(
            &server,
            &path,
            &headers,
            json!({"assistant_id": "upper", "input": {"value": "x"}}),
        )
        .await;
        assert_eq!(status, 200, "{headers:?}: {out}");
        assert_eq!(out["value"], "X");
        paths.push(path);
    }
    // Each request is a root of a trace of its own, with its run under it.
    let start = Instant::now();
    for path in paths {
        let http = loop {
            let all = harness().spans.get_finished_spans().unwrap();
            let found = all.iter().find(|s| {
                s.attributes
                    .iter()
                    .any(|kv| kv.key.as_str() == "url.path" && kv.value.as_str() == path)
            });
            if let Some(found) = found {
                break found.clone();
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "no span for {path}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(http.parent_span_id, SpanId::INVALID, "{path}");
        assert_ne!(http.parent_span_id, good_parent);
        let trace = http.span_context.trace_id();
        let spans = wait_for(trace, |s| s.iter().any(|span| span.name == "run upper")).await;
        assert_eq!(one(&spans, "run upper").parent, http.span_context.span_id());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_probes_and_metric_scrapes_make_no_span() {
    harness();
    let server = Served::start(agent_server::Server::builder().graph("upper", upper())).await;
    let (probe_trace, _, probe) = caller();
    let (info_trace, _, info) = caller();
    for (path, traceparent) in [("/ok", &probe), ("/metrics", &probe), ("/info", &info)] {
        let response = server
            .http
            .get(server.url(path))
            .header("traceparent", traceparent.as_str())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let _ = response.bytes().await;
    }
    // Once `/info`'s span (sent last) is there, the others would be too.
    wait_for(info_trace, |s| {
        s.iter().any(|span| span.name == "GET /info")
    })
    .await;
    assert!(
        spans_of(probe_trace).is_empty(),
        "{:#?}",
        spans_of(probe_trace)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_call_carries_its_trace_to_the_server_and_on_to_the_run() {
    harness();
    let server = Served::start(agent_server::Server::builder().graph("upper", upper())).await;
    let config = agent_tools::mcp::McpServerConfig::http(server.url("/mcp"));
    let client = agent_tools::mcp::McpClient::connect("self", &config)
        .await
        .unwrap();
    let root = tracing::info_span!("test", otel.name = "mcp caller");
    let result = async {
        let mut args = serde_json::Map::new();
        args.insert("value".into(), json!("over mcp"));
        client.call_tool("upper", args).await.unwrap()
    }
    .instrument(root.clone())
    .await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let trace = {
        use opentelemetry::trace::TraceContextExt as _;
        use tracing_opentelemetry::OpenTelemetrySpanExt as _;
        root.context().span().span_context().trace_id()
    };
    drop(root);
    let spans = wait_for(trace, |s| {
        s.iter().any(|span| span.name == "run upper")
            && s.iter().any(|span| span.name == "mcp caller")
    })
    .await;
    let calls: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "tools/call upper")
        .collect();
    let client_span = calls
        .iter()
        .find(|s| s.kind == SpanKind::Client)
        .expect("the client's span");
    let server_span = calls
        .iter()
        .find(|s| s.kind == SpanKind::Server)
        .expect("the server's span, in the caller's trace");
    assert_eq!(server_span.parent, client_span.id);
    assert_eq!(
        client_span.str("mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(client_span.str("network.transport").as_deref(), Some("tcp"));
    assert_eq!(one(&spans, "run upper").parent, server_span.id);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_is_an_error_on_its_span_and_on_the_node_that_failed() {
    harness();
    let server = Served::start(agent_server::Server::builder().graph("boom", boom())).await;
    let (trace, _, traceparent) = caller();
    let (status, out) = post_traced(
        &server,
        "/runs/wait",
        &[("traceparent", &traceparent)],
        json!({"assistant_id": "boom", "input": {"value": "x"}}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert!(out.get("__error__").is_some(), "{out}");
    let spans = wait_for(trace, |s| s.iter().any(|span| span.name == "run boom")).await;
    let run = one(&spans, "run boom");
    assert_eq!(run.str("agentgraph.run.status").as_deref(), Some("error"));
    assert!(run.str("error.type").is_some(), "{run:?}");
    assert!(matches!(run.status, Status::Error { .. }), "{run:?}");
    let node = one(&spans, "boom");
    assert_eq!(node.str("error.type").as_deref(), Some("node_error"));
    match &node.status {
        Status::Error { description } => assert!(description.contains("the node broke")),
        other => panic!("{other:?}"),
    }
    // The request itself succeeded: the failure is the run's.
    let http = one(&spans, "POST /runs/wait");
    assert_eq!(http.int("http.response.status_code"), Some(200));
    assert!(matches!(http.status, Status::Unset), "{http:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_spans_are_metrics_runs_by_status_duration_and_queue_wait() {
    let harness = harness();
    let server = Served::start(agent_server::Server::builder().graph("upper", upper())).await;
    let (status, _) = server
        .post(
            "/runs/wait",
            json!({"assistant_id": "upper", "input": {"value": "count me"}}),
        )
        .await;
    assert_eq!(status, 200);
    // The run's span closes as its worker moves on.
    let start = Instant::now();
    loop {
        harness.meter_provider.force_flush().unwrap();
        let mut runs = 0;
        let mut waits = 0;
        let mut durations = 0;
        for resource in harness.metrics.get_finished_metrics().unwrap() {
            for scope in resource.scope_metrics() {
                for metric in scope.metrics() {
                    match (metric.name(), metric.data()) {
                        ("agentgraph.server.runs", AggregatedMetrics::U64(MetricData::Sum(s))) => {
                            for point in s.data_points() {
                                let success = point.attributes().any(|kv| {
                                    kv.key.as_str() == "agentgraph.run.status"
                                        && kv.value.as_str() == "success"
                                });
                                if success {
                                    runs = runs.max(point.value());
                                }
                            }
                        }
                        (
                            "agentgraph.server.run.queue_wait",
                            AggregatedMetrics::F64(MetricData::Histogram(h)),
                        ) => waits = waits.max(h.data_points().map(|p| p.count()).sum()),
                        (
                            "agentgraph.server.run.duration",
                            AggregatedMetrics::F64(MetricData::Histogram(h)),
                        ) => durations = durations.max(h.data_points().map(|p| p.count()).sum()),
                        _ => {}
                    }
                }
            }
        }
        if runs >= 1 && waits >= 1 && durations >= 1 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "runs {runs}, waits {waits}, durations {durations}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_route_answers_what_the_server_recorded_of_a_run() {
    let harness = harness();
    let server = Served::start(
        agent_server::Server::builder()
            .graph("upper", upper())
            .span_recorder(harness.recorder.clone()),
    )
    .await;
    let (_, thread) = server.post("/threads", json!({})).await;
    let t = thread["thread_id"].as_str().unwrap();
    let (status, run) = server
        .post(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "upper", "input": {"value": "traced"}}),
        )
        .await;
    assert_eq!(status, 200, "{run}");
    let r = run["run_id"].as_str().unwrap();
    server.get(&format!("/threads/{t}/runs/{r}/join")).await;
    // The run's span closes as its worker moves on.
    let start = Instant::now();
    let trace = loop {
        let (status, trace) = server.get(&format!("/threads/{t}/runs/{r}/trace")).await;
        if status == 200
            && trace["spans"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["name"] == "run upper")
        {
            break trace;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{status} {trace}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(trace["run_id"], r);
    assert_eq!(trace["truncated"], false);
    let spans = trace["spans"].as_array().unwrap();
    let named = |name: &str| {
        spans
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {trace}"))
    };
    let run_span = named("run upper");
    assert!(run_span["parent"].is_null());
    assert_eq!(run_span["attributes"]["agentgraph.run.status"], "success");
    let graph = named("invoke_agent upper");
    assert_eq!(graph["parent"], run_span["id"]);
    let node = named("upper");
    assert_eq!(node["attributes"]["agentgraph.node"], "upper");
    let step = spans.iter().find(|s| s["id"] == node["parent"]).unwrap();
    assert_eq!(
        (step["name"].as_str(), &step["parent"]),
        (Some("step"), &graph["id"])
    );
    assert!(
        spans
            .iter()
            .any(|s| s["name"] == "checkpoint sqlite" || s["name"] == "checkpoint memory")
    );
    for s in spans {
        assert!(s["duration_us"].as_i64().unwrap() >= 0, "{s}");
        assert!(
            s["start_us"].as_i64().unwrap() >= run_span["start_us"].as_i64().unwrap(),
            "{s}"
        );
    }

    // A run of which nothing is kept, and a server that keeps nothing: 404s that say why.
    let unknown = uuid::Uuid::new_v4();
    let (status, body) = server
        .get(&format!("/threads/{t}/runs/{unknown}/trace"))
        .await;
    assert_eq!(status, 404, "{body}");
    let bare = Served::start(agent_server::Server::builder().graph("upper", upper())).await;
    let (_, thread) = bare.post("/threads", json!({})).await;
    let bt = thread["thread_id"].as_str().unwrap();
    bare.post(
        &format!("/threads/{bt}/runs/wait"),
        json!({"assistant_id": "upper", "input": {"value": "x"}}),
    )
    .await;
    let (_, runs) = bare.get(&format!("/threads/{bt}/runs")).await;
    let br = runs[0]["run_id"].as_str().unwrap();
    let (status, body) = bare.get(&format!("/threads/{bt}/runs/{br}/trace")).await;
    assert_eq!(status, 404);
    assert!(
        body["detail"].as_str().unwrap().contains("span_recorder"),
        "{body}"
    );
}
