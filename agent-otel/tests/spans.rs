//! Every span kind agentgraph emits, as OpenTelemetry sees it: agent-otel's layer over
//! in-memory exporters (spans and metrics), installed once as the global subscriber (spawned
//! tasks run on other threads, where a thread-local subscriber would not reach). Each test runs
//! under a root span of its own and reads only its own trace, so the tests run in parallel.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_core::{
    END, GraphState, InMemorySaver, NodeContext, NodeError, NodeExt, RetryPolicy, RunConfig, START,
    Send, StateGraph,
};
use agent_llm::{CallOptions, ChatModel, Message, Reply, ScriptedModel, ToolCall};
use agent_tools::{ToolNode, ToolRegistry, tool_fn};
use futures::StreamExt;
use opentelemetry::trace::{SpanId, Status, TraceId};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

struct Harness {
    spans: InMemorySpanExporter,
    metrics: InMemoryMetricExporter,
    meter_provider: SdkMeterProvider,
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
        assert!(guard.is_active());
        // Kept for the whole test process.
        std::mem::forget(guard);
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
        Harness {
            spans,
            metrics,
            meter_provider,
        }
    })
}

/// A finished span, simplified.
#[derive(Debug, Clone)]
struct Span {
    name: String,
    id: SpanId,
    parent: SpanId,
    attributes: HashMap<String, Value>,
    status: Status,
    events: Vec<String>,
}

impl Span {
    fn attr(&self, key: &str) -> Option<&Value> {
        self.attributes.get(key)
    }
    fn str(&self, key: &str) -> Option<String> {
        self.attr(key).map(|v| v.as_str().into_owned())
    }
    fn int(&self, key: &str) -> Option<i64> {
        match self.attr(key)? {
            Value::I64(n) => Some(*n),
            _ => None,
        }
    }
    fn bool(&self, key: &str) -> Option<bool> {
        match self.attr(key)? {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    fn is_error(&self) -> bool {
        matches!(self.status, Status::Error { .. })
    }
}

/// A test's spans: those of the trace under its root span.
struct Trace {
    spans: Vec<Span>,
}

impl Trace {
    fn named(&self, name: &str) -> Vec<&Span> {
        self.spans.iter().filter(|s| s.name == name).collect()
    }
    fn one(&self, name: &str) -> &Span {
        let found = self.named(name);
        assert_eq!(found.len(), 1, "one span named {name}: {:#?}", self.spans);
        found[0]
    }
    fn by_id(&self, id: SpanId) -> Option<&Span> {
        self.spans.iter().find(|s| s.id == id)
    }
    fn children(&self, of: &Span) -> Vec<&Span> {
        self.spans.iter().filter(|s| s.parent == of.id).collect()
    }
    /// Whether `span` is under `ancestor`.
    fn under(&self, span: &Span, ancestor: &Span) -> bool {
        let mut at = span.parent;
        while let Some(parent) = self.by_id(at) {
            if parent.id == ancestor.id {
                return true;
            }
            at = parent.parent;
        }
        false
    }
}

fn simplify(data: &SpanData) -> Span {
    Span {
        name: data.name.to_string(),
        id: data.span_context.span_id(),
        parent: data.parent_span_id,
        attributes: data
            .attributes
            .iter()
            .map(|KeyValue { key, value, .. }| (key.to_string(), value.clone()))
            .collect(),
        status: data.status.clone(),
        events: data.events.iter().map(|e| e.name.to_string()).collect(),
    }
}

/// Runs `work` under a root span named `test`, and returns its result and the test's trace.
async fn traced<T>(test: &str, work: impl Future<Output = T>) -> (T, Trace) {
    let harness = harness();
    let root = tracing::info_span!("test", otel.name = test);
    let out = work.instrument(root.clone()).await;
    drop(root);
    // Background checkpoint writes and streams end shortly after.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let all = harness.spans.get_finished_spans().expect("spans");
    let trace: TraceId = all
        .iter()
        .find(|s| s.name == test)
        .map(|s| s.span_context.trace_id())
        .expect("the root span was exported");
    let spans = all
        .iter()
        .filter(|s| s.span_context.trace_id() == trace)
        .map(simplify)
        .collect();
    (out, Trace { spans })
}

#[derive(GraphState, Clone, Default, Debug)]
struct S {
    #[reducer(append)]
    log: Vec<String>,
}

fn logs(
    name: &'static str,
) -> impl Fn(Arc<S>) -> futures::future::BoxFuture<'static, SUpdate> + Clone {
    move |_s: Arc<S>| Box::pin(async move { SUpdate::default().log(vec![name.to_owned()]) })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_two_steps_with_checkpoints() {
    let graph = StateGraph::new()
        .add_node("first", logs("first"))
        .add_node("second", logs("second"))
        .add_edge(START, "first")
        .add_edge("first", "second")
        .add_edge("second", END)
        .compile_with(Arc::new(InMemorySaver::new()))
        .unwrap()
        .with_name("two_steps");
    let config = RunConfig::default().thread_id("t-two");
    let (out, trace) = traced("two_steps", graph.invoke(S::default(), config)).await;
    let out = out.unwrap();
    assert_eq!(out.log, ["first", "second"]);

    let run = trace.one("invoke_agent two_steps");
    assert_eq!(
        run.str("gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(run.str("gen_ai.agent.name").as_deref(), Some("two_steps"));
    assert_eq!(run.str("gen_ai.conversation.id").as_deref(), Some("t-two"));
    assert_eq!(run.str("agentgraph.durability").as_deref(), Some("sync"));
    assert!(
        run.str("agentgraph.run.id")
            .is_some_and(|id| !id.is_empty())
    );
    assert_eq!(run.int("agentgraph.steps"), Some(2));
    assert_eq!(run.int("agentgraph.tasks"), Some(2));
    assert_eq!(run.status, Status::Unset);

    let steps = trace.named("step");
    assert_eq!(steps.len(), 2);
    let mut numbers: Vec<i64> = steps
        .iter()
        .filter_map(|s| s.int("agentgraph.step"))
        .collect();
    numbers.sort();
    assert_eq!(numbers, [1, 2]);
    for step in &steps {
        assert_eq!(step.parent, run.id, "steps are the run's children");
        assert_eq!(step.int("agentgraph.step.tasks"), Some(1));
        let nodes = trace.children(step);
        let node = nodes
            .iter()
            .find(|n| n.attr("agentgraph.node").is_some())
            .unwrap();
        assert_eq!(
            Some(node.name.clone()),
            step.str("agentgraph.step.nodes"),
            "the step runs its node"
        );
    }
    let first = trace.one("first");
    assert_eq!(first.str("agentgraph.node").as_deref(), Some("first"));
    assert_eq!(first.int("agentgraph.step"), Some(1));

    // Checkpoint writes: the input's and one per step, in the run's trace, with their bytes.
    let writes = trace.named("checkpoint memory");
    assert!(writes.len() >= 3, "{writes:#?}");
    for write in &writes {
        assert_eq!(
            write.str("agentgraph.checkpoint.backend").as_deref(),
            Some("memory")
        );
        assert!(write.int("agentgraph.checkpoint.bytes").unwrap() > 0);
        assert!(write.int("agentgraph.checkpoint.ops").unwrap() >= 1);
        assert!(trace.under(write, run), "{write:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wide_step_and_subgraphs_on_spawned_tasks_nest_under_their_nodes() {
    let inner = StateGraph::new()
        .add_node("edit", |_s: Arc<S>| async {
            // Waits, so the wide step spawns its task on another worker.
            tokio::time::sleep(Duration::from_millis(5)).await;
            SUpdate::default().log(vec!["edit".to_owned()])
        })
        .add_edge(START, "edit")
        .add_edge("edit", END)
        .compile()
        .unwrap()
        .with_name("inner");
    let graph = StateGraph::new()
        .add_node("plan", logs("plan"))
        .add_node("sub", inner)
        .add_edge(START, "plan")
        .add_conditional_edges(
            "plan",
            |_: &S| {
                (0..5)
                    .map(|_| Send::new("sub", S::default()))
                    .collect::<Vec<_>>()
            },
            ["sub"],
        )
        .add_edge("sub", END)
        .compile()
        .unwrap()
        .with_name("outer");
    let (out, trace) = traced("wide", graph.invoke(S::default(), RunConfig::default())).await;
    assert_eq!(out.unwrap().log.len(), 6);

    let outer = trace.one("invoke_agent outer");
    assert_eq!(outer.bool("agentgraph.subgraph"), Some(false));
    let wide = trace
        .named("step")
        .into_iter()
        .find(|s| s.int("agentgraph.step.tasks") == Some(5))
        .expect("the wide step");
    assert_eq!(wide.parent, outer.id);
    let subs = trace.named("sub");
    assert_eq!(subs.len(), 5);
    for sub in &subs {
        assert_eq!(
            sub.parent, wide.id,
            "each task's node span is the step's child"
        );
    }
    let inners = trace.named("invoke_agent inner");
    assert_eq!(inners.len(), 5);
    for run in &inners {
        assert_eq!(run.bool("agentgraph.subgraph"), Some(true));
        let node = trace.by_id(run.parent).expect("a parent");
        assert_eq!(
            node.name, "sub",
            "a subgraph's run is under its node's span"
        );
    }
    let edits = trace.named("edit");
    assert_eq!(edits.len(), 5);
    for edit in &edits {
        let run = inners.iter().find(|r| trace.under(edit, r));
        assert!(
            run.is_some(),
            "the subgraph's nodes are under its run: {edit:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_failures_and_timeouts_are_on_the_node_span() {
    let tries = Arc::new(AtomicU32::new(0));
    let counted = tries.clone();
    let graph = StateGraph::new()
        .add_node(
            "flaky",
            (move |_s: Arc<S>| {
                let counted = counted.clone();
                async move {
                    if counted.fetch_add(1, Ordering::SeqCst) < 2 {
                        return Err::<SUpdate, _>(NodeError::Failed("not yet".into()));
                    }
                    Ok(SUpdate::default().log(vec!["flaky".to_owned()]))
                }
            })
            .with_retry(
                RetryPolicy::new()
                    .max_attempts(3)
                    .initial_interval(Duration::from_millis(1))
                    .jitter(false),
            ),
        )
        .add_node("broken", |_s: Arc<S>| async {
            Err::<SUpdate, _>(NodeError::Failed("the disk is on fire".into()))
        })
        .add_edge(START, "flaky")
        .add_edge("flaky", "broken")
        .add_edge("broken", END)
        .compile()
        .unwrap()
        .with_name("failing");
    let (out, trace) = traced("failing", graph.invoke(S::default(), RunConfig::default())).await;
    assert!(out.is_err());

    let flaky = trace.one("flaky");
    assert_eq!(flaky.int("agentgraph.node.attempts"), Some(3));
    assert_eq!(flaky.status, Status::Unset, "it succeeded in the end");
    assert_eq!(
        flaky
            .events
            .iter()
            .filter(|e| e.contains("retrying"))
            .count(),
        2,
        "each failed attempt is an event: {:?}",
        flaky.events
    );

    let broken = trace.one("broken");
    assert_eq!(broken.str("error.type").as_deref(), Some("node_error"));
    match &broken.status {
        Status::Error { description } => assert!(description.contains("on fire"), "{description}"),
        other => panic!("{other:?}"),
    }
    let run = trace.one("invoke_agent failing");
    assert_eq!(run.str("error.type").as_deref(), Some("node_error"));
    assert!(run.is_error());

    // A timeout.
    let slow = StateGraph::new()
        .add_node(
            "slow",
            (|_s: Arc<S>| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                SUpdate::default()
            })
            .with_timeout(Duration::from_millis(10)),
        )
        .add_edge(START, "slow")
        .add_edge("slow", END)
        .compile()
        .unwrap();
    let (out, trace) = traced(
        "timing_out",
        slow.invoke(S::default(), RunConfig::default()),
    )
    .await;
    assert!(out.is_err());
    let slow = trace.one("slow");
    assert_eq!(slow.str("error.type").as_deref(), Some("timeout"));
    assert!(slow.is_error());
    assert_eq!(
        trace
            .one("invoke_agent LangGraph")
            .str("error.type")
            .as_deref(),
        Some("timeout")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_is_not_an_error() {
    let graph = StateGraph::new()
        .add_node("ask", |_s: Arc<S>, ctx: NodeContext| async move {
            let answer = ctx.interrupt(json!({"question": "ship it?"}))?;
            Ok::<_, agent_core::BoxError>(SUpdate::default().log(vec![answer.to_string()]))
        })
        .add_edge(START, "ask")
        .add_edge("ask", END)
        .compile_with(Arc::new(InMemorySaver::new()))
        .unwrap();
    let config = RunConfig::default().thread_id("t-ask");
    let (out, trace) = traced("interrupt", graph.invoke(S::default(), config)).await;
    assert_eq!(out.unwrap().interrupts.len(), 1);
    let ask = trace.one("ask");
    assert_eq!(ask.bool("agentgraph.interrupted"), Some(true));
    assert_eq!(ask.status, Status::Unset);
    assert!(ask.attr("error.type").is_none());
    let run = trace.one("invoke_agent LangGraph");
    assert_eq!(run.bool("agentgraph.interrupted"), Some(true));
    assert_eq!(run.status, Status::Unset);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_call_carries_its_usage_and_the_metrics_count_it() {
    let model = Arc::new(ScriptedModel::new([
        Reply::text("hello").with_usage(21, 4),
        Reply::text("again").with_usage(3, 2),
    ]));
    let used = model.clone();
    let graph = StateGraph::new()
        .add_node("talk", move |_s: Arc<S>, ctx: NodeContext| {
            let model = used.clone();
            async move {
                let options = CallOptions::default();
                let mut options = options;
                options.temperature = Some(0.5);
                options.max_tokens = Some(64);
                for _ in 0..2 {
                    agent_llm::invoke_in_node(&*model, &[Message::human("hi")], &options, &ctx)
                        .await?;
                }
                Ok::<_, agent_core::BoxError>(SUpdate::default())
            }
        })
        .add_edge(START, "talk")
        .add_edge("talk", END)
        .compile()
        .unwrap();
    let (out, trace) = traced("chat", graph.invoke(S::default(), RunConfig::default())).await;
    let out = out.unwrap();

    let calls = trace.named("chat scripted");
    assert_eq!(calls.len(), 2);
    let talk = trace.one("talk");
    let (mut input, mut output) = (0, 0);
    for call in &calls {
        assert_eq!(call.parent, talk.id, "model calls are the node's children");
        assert_eq!(call.str("gen_ai.operation.name").as_deref(), Some("chat"));
        assert_eq!(
            call.str("gen_ai.provider.name").as_deref(),
            Some("scripted")
        );
        assert_eq!(
            call.str("gen_ai.request.model").as_deref(),
            Some("scripted")
        );
        assert_eq!(
            call.str("gen_ai.response.model").as_deref(),
            Some("scripted")
        );
        assert_eq!(
            call.str("gen_ai.response.finish_reasons").as_deref(),
            Some("stop")
        );
        assert_eq!(
            call.attr("gen_ai.request.temperature"),
            Some(&Value::F64(0.5))
        );
        assert_eq!(call.int("gen_ai.request.max_tokens"), Some(64));
        assert!(call.attr("gen_ai.request.stream").is_none());
        input += call.int("gen_ai.usage.input_tokens").unwrap();
        output += call.int("gen_ai.usage.output_tokens").unwrap();
    }
    assert_eq!(
        input, out.usage["input_tokens"] as i64,
        "the spans add up to the run's usage"
    );
    assert_eq!(output, out.usage["output_tokens"] as i64);
    assert_eq!((input, output), (24, 6));

    // The token histogram counts them (cumulative, across tests: at least these).
    let harness = harness();
    harness.meter_provider.force_flush().unwrap();
    let exported = harness.metrics.get_finished_metrics().unwrap();
    let mut input_sum = 0;
    let mut durations = 0;
    for resource in &exported {
        for scope in resource.scope_metrics() {
            for metric in scope.metrics() {
                match (metric.name(), metric.data()) {
                    (
                        "gen_ai.client.token.usage",
                        AggregatedMetrics::U64(MetricData::Histogram(h)),
                    ) => {
                        for point in h.data_points() {
                            let input = point.attributes().any(|kv| {
                                kv.key.as_str() == "gen_ai.token.type"
                                    && kv.value.as_str() == "input"
                            });
                            if input {
                                input_sum = input_sum.max(point.sum());
                            }
                        }
                    }
                    (
                        "gen_ai.client.operation.duration",
                        AggregatedMetrics::F64(MetricData::Histogram(h)),
                    ) => durations += h.data_points().map(|p| p.count()).sum::<u64>(),
                    _ => {}
                }
            }
        }
    }
    assert!(input_sum >= 24, "input tokens recorded: {input_sum}");
    assert!(durations >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_call_has_its_time_to_first_chunk() {
    let model = ScriptedModel::new([Reply::text("streamed reply").with_usage(5, 3)]);
    let work = async {
        let mut stream = model
            .stream(&[Message::human("hi")], &CallOptions::default())
            .await
            .unwrap();
        while stream.next().await.is_some() {}
    };
    let ((), trace) = traced("stream", work).await;
    let call = trace.one("chat scripted");
    assert_eq!(call.bool("gen_ai.request.stream"), Some(true));
    let first = match call.attr("gen_ai.response.time_to_first_chunk") {
        Some(Value::F64(seconds)) => *seconds,
        other => panic!("{other:?}"),
    };
    assert!((0.0..5.0).contains(&first), "{first}");
    assert_eq!(call.int("gen_ai.usage.input_tokens"), Some(5));
    assert_eq!(call.int("gen_ai.usage.output_tokens"), Some(3));
}

#[derive(Deserialize, JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

fn tools() -> ToolNode {
    let add = tool_fn("add", "Adds two integers.", |x: Add| async move {
        Ok::<_, String>(x.a + x.b)
    });
    let fail = tool_fn("fail", "Always fails.", |_: Add| async move {
        Err::<i64, _>("no luck".to_owned())
    });
    ToolNode::new(
        ToolRegistry::new()
            .with_tool(add)
            .unwrap()
            .with_tool(fail)
            .unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_are_execute_tool_spans() {
    let node = tools();
    let calls = [
        ToolCall::new("call-1", "add", json!({"a": 2, "b": 3})),
        ToolCall::new("call-2", "fail", json!({"a": 0, "b": 0})),
    ];
    let (answers, trace) = traced("tools", node.run_calls(&calls)).await;
    let answers = answers.unwrap();
    assert_eq!(answers[0].content, "5");
    assert!(answers[1].is_error);

    let add = trace.one("execute_tool add");
    assert_eq!(
        add.str("gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(add.str("gen_ai.tool.name").as_deref(), Some("add"));
    assert_eq!(add.str("gen_ai.tool.call.id").as_deref(), Some("call-1"));
    assert_eq!(
        add.str("gen_ai.tool.description").as_deref(),
        Some("Adds two integers.")
    );
    assert_eq!(add.status, Status::Unset);
    let fail = trace.one("execute_tool fail");
    assert_eq!(fail.str("error.type").as_deref(), Some("tool_error"));
    assert!(fail.is_error());
}

/// One test for both, as the switch is the process's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_is_captured_only_when_asked() {
    let model = ScriptedModel::new([Reply::text("secret reply"), Reply::text("secret reply")]);
    let node = tools();
    let call = ToolCall::new("call-9", "add", json!({"a": 40, "b": 2}));
    let work = || async {
        model
            .invoke(&[Message::human("secret prompt")], &CallOptions::default())
            .await
            .unwrap();
        node.call_in(&call, None).await.unwrap();
    };

    if std::env::var_os(agent_llm::CAPTURE_CONTENT_ENV).is_none() {
        assert!(!agent_llm::capture_content(), "off by default");
    }
    agent_llm::set_capture_content(false);
    let ((), trace) = traced("content_off", work()).await;
    let chat = trace.one("chat scripted");
    assert!(chat.attr("gen_ai.input.messages").is_none());
    assert!(chat.attr("gen_ai.output.messages").is_none());
    let tool = trace.one("execute_tool add");
    assert!(tool.attr("gen_ai.tool.call.arguments").is_none());
    assert!(tool.attr("gen_ai.tool.call.result").is_none());
    let everything = format!("{:?}", trace.spans);
    assert!(!everything.contains("secret"), "{everything}");

    agent_llm::set_capture_content(true);
    let ((), trace) = traced("content_on", work()).await;
    agent_llm::set_capture_content(false);
    let chat = trace.one("chat scripted");
    let input: serde_json::Value =
        serde_json::from_str(&chat.str("gen_ai.input.messages").unwrap()).unwrap();
    assert_eq!(
        input,
        json!([{"role": "user", "parts": [{"type": "text", "content": "secret prompt"}]}])
    );
    let output: serde_json::Value =
        serde_json::from_str(&chat.str("gen_ai.output.messages").unwrap()).unwrap();
    assert_eq!(output[0]["parts"][0]["content"], "secret reply");
    assert_eq!(output[0]["finish_reason"], "stop");
    let tool = trace.one("execute_tool add");
    assert_eq!(
        tool.str("gen_ai.tool.call.arguments").as_deref(),
        Some(r#"{"a":40,"b":2}"#)
    );
    assert_eq!(tool.str("gen_ai.tool.call.result").as_deref(), Some("42"));
}
