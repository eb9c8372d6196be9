//! OpenTelemetry metrics from the spans agentgraph already opens: a `tracing` layer that reads
//! the fields of the run, node, model and tool spans as they close and records histograms.
//!
//! Why a layer over the spans rather than instruments in the libraries: the libraries stay on
//! `tracing` alone (no OpenTelemetry dependency, no global meter), the numbers are the ones
//! the trace shows, and a program without this layer pays nothing for them.
//!
//! | metric | unit | from | attributes |
//! | --- | --- | --- | --- |
//! | `gen_ai.client.operation.duration` | `s` | `chat`, `embeddings` spans | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.response.model`, `error.type` |
//! | `gen_ai.client.token.usage` | `{token}` | `chat` spans with usage | the same (no `error.type`) and `gen_ai.token.type` (`input` / `output`) |
//! | `gen_ai.client.operation.time_to_first_chunk` | `s` | streamed `chat` spans | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.response.model` |
//! | `agentgraph.run.duration` | `s` | root `invoke_agent` spans (not subgraphs) | `gen_ai.agent.name`, `error.type` |
//! | `agentgraph.node.duration` | `s` | `node` spans | `agentgraph.node`, `error.type` |
//! | `agentgraph.tool.duration` | `s` | `execute_tool` spans | `gen_ai.tool.name`, `error.type` |
//! | `agentgraph.server.run.duration` | `s` | agent-server's `run` spans (one per attempt at a queued run) | `agentgraph.graph.id`, `agentgraph.run.status`, `error.type` |
//! | `agentgraph.server.run.queue_wait` | `s` | the same, first attempts: from the run's creation (or its `after_seconds`) to its start | `agentgraph.graph.id` |
//! | `agentgraph.server.runs` | `{run}` (counter) | the same, as each ends | `agentgraph.graph.id`, `agentgraph.run.status` (`success`, `error`, `timeout`, `interrupted`, `rolled_back`, `handed_over`, `lease_lost`) |
//!
//! The GenAI histograms use the bucket boundaries their conventions advise.

use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// Bucket boundaries the GenAI conventions advise for durations, in seconds.
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// Bucket boundaries the GenAI conventions advise for token counts.
const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// The spans the layer measures.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Run,
    Node,
    Model,
    Tool,
    /// An attempt at a queued run, in agent-server.
    ServerRun,
}

impl Kind {
    fn of(metadata: &Metadata<'_>) -> Option<Kind> {
        if !metadata.target().starts_with("agent_") {
            return None;
        }
        match metadata.name() {
            "invoke_agent" => Some(Kind::Run),
            "node" => Some(Kind::Node),
            "chat" | "embeddings" => Some(Kind::Model),
            "execute_tool" => Some(Kind::Tool),
            "run" if metadata.target().starts_with("agent_server") => Some(Kind::ServerRun),
            _ => None,
        }
    }
}

/// What the layer keeps of a span while it is open (in the span's extensions).
struct Measured {
    kind: Kind,
    started: Instant,
    fields: Fields,
}

/// The span fields the metrics read.
#[derive(Default)]
struct Fields {
    operation: Option<String>,
    provider: Option<String>,
    request_model: Option<String>,
    response_model: Option<String>,
    error_type: Option<String>,
    agent: Option<String>,
    node: Option<String>,
    tool: Option<String>,
    subgraph: bool,
    graph: Option<String>,
    status: Option<String>,
    queue_wait: Option<f64>,
    input_tokens: Option<i64>,
    output_tokens: Option<i64>,
    first_chunk: Option<f64>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        let slot = match field.name() {
            "gen_ai.operation.name" => &mut self.operation,
            "gen_ai.provider.name" => &mut self.provider,
            "gen_ai.request.model" => &mut self.request_model,
            "gen_ai.response.model" => &mut self.response_model,
            "error.type" => &mut self.error_type,
            "gen_ai.agent.name" => &mut self.agent,
            "agentgraph.node" => &mut self.node,
            "gen_ai.tool.name" => &mut self.tool,
            "agentgraph.graph.id" => &mut self.graph,
            "agentgraph.run.status" => &mut self.status,
            _ => return,
        };
        *slot = Some(value.to_owned());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        match field.name() {
            "gen_ai.usage.input_tokens" => self.input_tokens = Some(value),
            "gen_ai.usage.output_tokens" => self.output_tokens = Some(value),
            _ => {}
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.record_i64(field, i64::try_from(value).unwrap_or(i64::MAX));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        match field.name() {
            "gen_ai.response.time_to_first_chunk" => self.first_chunk = Some(value),
            "agentgraph.run.queue_wait" => self.queue_wait = Some(value),
            _ => {}
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        if field.name() == "agentgraph.subgraph" {
            self.subgraph = value;
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        // `%value` fields arrive here; only the names above matter.
        if matches!(
            field.name(),
            "gen_ai.request.model" | "gen_ai.response.model" | "gen_ai.agent.name"
        ) {
            self.record_str(field, &format!("{value:?}"));
        }
    }
}

/// The histograms.
struct Instruments {
    operation_duration: Histogram<f64>,
    token_usage: Histogram<u64>,
    time_to_first_chunk: Histogram<f64>,
    run_duration: Histogram<f64>,
    node_duration: Histogram<f64>,
    tool_duration: Histogram<f64>,
    server_run_duration: Histogram<f64>,
    queue_wait: Histogram<f64>,
    server_runs: Counter<u64>,
}

/// The layer that records metrics from agentgraph's spans (see the module docs).
pub struct MetricsLayer {
    instruments: Instruments,
}

impl MetricsLayer {
    /// A layer recording into `meter`'s instruments.
    pub fn new(meter: &Meter) -> Self {
        let seconds = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build()
        };
        MetricsLayer {
            instruments: Instruments {
                operation_duration: seconds(
                    "gen_ai.client.operation.duration",
                    "GenAI operation duration.",
                ),
                token_usage: meter
                    .u64_histogram("gen_ai.client.token.usage")
                    .with_unit("{token}")
                    .with_description("Number of input and output tokens used.")
                    .with_boundaries(TOKEN_BUCKETS.to_vec())
                    .build(),
                time_to_first_chunk: seconds(
                    "gen_ai.client.operation.time_to_first_chunk",
                    "Time to receive the first chunk of a streamed response.",
                ),
                run_duration: seconds("agentgraph.run.duration", "Duration of a graph run."),
                node_duration: seconds(
                    "agentgraph.node.duration",
                    "Duration of a node task (all its attempts).",
                ),
                tool_duration: seconds("agentgraph.tool.duration", "Duration of a tool call."),
                server_run_duration: seconds(
                    "agentgraph.server.run.duration",
                    "Duration of an attempt at a queued run, in the server.",
                ),
                queue_wait: seconds(
                    "agentgraph.server.run.queue_wait",
                    "Time a run waited in the server's queue before it started.",
                ),
                server_runs: meter
                    .u64_counter("agentgraph.server.runs")
                    .with_unit("{run}")
                    .with_description("Runs the server ended, by status.")
                    .build(),
            },
        }
    }
}

impl<S> Layer<S> for MetricsLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(kind) = Kind::of(attrs.metadata()) else {
            return;
        };
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        span.extensions_mut().insert(Measured {
            kind,
            started: Instant::now(),
            fields,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        if let Some(measured) = span.extensions_mut().get_mut::<Measured>() {
            values.record(&mut measured.fields);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(measured) = span.extensions_mut().remove::<Measured>() else {
            return;
        };
        self.record(measured);
    }
}

impl MetricsLayer {
    fn record(&self, measured: Measured) {
        let seconds = measured.started.elapsed().as_secs_f64();
        let fields = measured.fields;
        let mut attributes = Vec::with_capacity(6);
        let mut push = |key: &'static str, value: &Option<String>| {
            if let Some(value) = value {
                attributes.push(KeyValue::new(key, value.clone()));
            }
        };
        let i = &self.instruments;
        match measured.kind {
            Kind::Run => {
                if fields.subgraph {
                    return;
                }
                push("gen_ai.agent.name", &fields.agent);
                push("error.type", &fields.error_type);
                i.run_duration.record(seconds, &attributes);
            }
            Kind::Node => {
                push("agentgraph.node", &fields.node);
                push("error.type", &fields.error_type);
                i.node_duration.record(seconds, &attributes);
            }
            Kind::ServerRun => {
                let mut attributes = Vec::with_capacity(3);
                if let Some(graph) = fields.graph {
                    attributes.push(KeyValue::new("agentgraph.graph.id", graph));
                }
                if let Some(wait) = fields.queue_wait {
                    i.queue_wait.record(wait, &attributes);
                }
                if let Some(status) = fields.status {
                    attributes.push(KeyValue::new("agentgraph.run.status", status));
                }
                i.server_runs.add(1, &attributes);
                if let Some(error) = fields.error_type {
                    attributes.push(KeyValue::new("error.type", error));
                }
                i.server_run_duration.record(seconds, &attributes);
            }
            Kind::Tool => {
                push("gen_ai.tool.name", &fields.tool);
                push("error.type", &fields.error_type);
                i.tool_duration.record(seconds, &attributes);
            }
            Kind::Model => {
                push("gen_ai.operation.name", &fields.operation);
                push("gen_ai.provider.name", &fields.provider);
                push("gen_ai.request.model", &fields.request_model);
                push("gen_ai.response.model", &fields.response_model);
                if let Some(first) = fields.first_chunk {
                    i.time_to_first_chunk.record(first, &attributes);
                }
                for (kind, count) in [
                    ("input", fields.input_tokens),
                    ("output", fields.output_tokens),
                ] {
                    if let Some(count) = count.and_then(|n| u64::try_from(n).ok()) {
                        let mut with_type = attributes.clone();
                        with_type.push(KeyValue::new("gen_ai.token.type", kind));
                        i.token_usage.record(count, &with_type);
                    }
                }
                let mut with_error = attributes;
                if let Some(error) = fields.error_type {
                    with_error.push(KeyValue::new("error.type", error));
                }
                i.operation_duration.record(seconds, &with_error);
            }
        }
    }
}
