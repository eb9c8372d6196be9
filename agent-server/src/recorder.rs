//! The server's own record of what its runs did, for the web page's trace view: a `tracing`
//! layer ([`SpanRecorder::layer`]) that keeps, for each run executed in this process, the
//! spans under its `run` span (the graph, its steps and nodes, model and tool calls,
//! checkpoint writes, webhooks) with their timing and the few attributes the view shows,
//! and `GET /threads/{thread_id}/runs/{run_id}/trace` that answers them.
//!
//! Why a layer the program adds, not something the server installs: the libraries never
//! install a subscriber (the program composes its own, as `agent serve` does); a server built
//! without a recorder answers the route with a 404 that says so. Why in memory, not in the run
//! store: the record is for looking at a run just made, from the instance that ran it; it is
//! bounded (the last [`MAX_RUNS`] runs, [`MAX_SPANS`] spans each) and gone at a restart. An
//! OTLP receiver (see `crate::trace`) is the place for keeping traces.
//!
//! Only names, timings, token counts, sizes and error messages are kept: no prompt, reply or
//! tool argument (even when content capture puts them on the spans).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Subscriber, span};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// How many runs' spans are kept (the oldest go first).
pub const MAX_RUNS: usize = 500;
/// How many spans of one run are kept (a run past it is marked truncated).
pub const MAX_SPANS: usize = 5_000;

/// The attributes the trace view shows, when a span has them.
const KEPT: [&str; 19] = [
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.response.time_to_first_chunk",
    "gen_ai.response.finish_reasons",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "agentgraph.node",
    "agentgraph.step",
    "agentgraph.node.attempts",
    "agentgraph.cache.hit",
    "agentgraph.interrupted",
    "agentgraph.checkpoint.backend",
    "agentgraph.checkpoint.bytes",
    "agentgraph.run.status",
    "http.response.status_code",
];

/// One recorded span, as the trace route answers it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RecordedSpan {
    /// Its id within the run's record.
    pub id: u64,
    /// Its parent's id (`None` for the run's own span).
    pub parent: Option<u64>,
    /// Its name (the OpenTelemetry one: `invoke_agent tool-router`, `chat gpt-4o`...).
    pub name: String,
    /// When it started, in microseconds since the Unix epoch.
    pub start_us: i64,
    /// How long it lasted, in microseconds.
    pub duration_us: i64,
    /// Its error (`error.type`: message), when it failed.
    pub error: Option<String>,
    /// The attributes the view shows (tokens, model, node, step, bytes, status...).
    #[schema(value_type = Object)]
    pub attributes: Map<String, Value>,
}

/// A run's record: its spans in the order they ended.
#[derive(Debug, Clone, Default)]
pub struct RunRecord {
    /// The spans.
    pub spans: Vec<RecordedSpan>,
    /// Whether spans were left out (past [`MAX_SPANS`]).
    pub truncated: bool,
}

#[derive(Default)]
struct Records {
    runs: HashMap<Arc<str>, RunRecord>,
    order: VecDeque<Arc<str>>,
}

/// Records the spans of the runs this process executes (see the module docs). Cheap to
/// clone: clones share the record. Add [`layer`](Self::layer) to the program's subscriber and
/// give the recorder to [`ServerBuilder::span_recorder`](crate::ServerBuilder::span_recorder).
#[derive(Clone, Default)]
pub struct SpanRecorder {
    records: Arc<Mutex<Records>>,
    next_id: Arc<AtomicU64>,
}

impl std::fmt::Debug for SpanRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let runs = self.records.lock().map(|r| r.runs.len()).unwrap_or(0);
        f.debug_struct("SpanRecorder").field("runs", &runs).finish()
    }
}

impl SpanRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The layer that records into this recorder.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        RecorderLayer {
            recorder: self.clone(),
        }
    }

    /// What was recorded of run `run_id`, if anything.
    pub fn run(&self, run_id: &str) -> Option<RunRecord> {
        self.records.lock().ok()?.runs.get(run_id).cloned()
    }

    fn keep(&self, run: Arc<str>, span: RecordedSpan) {
        let Ok(mut records) = self.records.lock() else {
            return;
        };
        if !records.runs.contains_key(&run) {
            while records.order.len() >= MAX_RUNS {
                if let Some(oldest) = records.order.pop_front() {
                    records.runs.remove(&oldest);
                }
            }
            records.order.push_back(run.clone());
        }
        let record = records.runs.entry(run).or_default();
        if record.spans.len() >= MAX_SPANS {
            record.truncated = true;
        } else {
            record.spans.push(span);
        }
    }
}

/// A span under a run, while it is open.
struct Open {
    run: Arc<str>,
    id: u64,
    parent: Option<u64>,
    start_us: i64,
    started: Instant,
    fields: Fields,
}

/// A span under a run that is not recorded (not one of agentgraph's): its children are
/// recorded under its nearest recorded ancestor.
struct Through {
    run: Arc<str>,
    parent: Option<u64>,
}

#[derive(Default)]
struct Fields {
    name: Option<String>,
    run_id: Option<String>,
    error_type: Option<String>,
    error: Option<String>,
    attributes: Map<String, Value>,
}

impl Fields {
    fn set(&mut self, field: &Field, value: Value) {
        match field.name() {
            "otel.name" => self.name = value.as_str().map(str::to_owned),
            "agentgraph.run.id" => self.run_id = value.as_str().map(str::to_owned),
            "error.type" => self.error_type = value.as_str().map(str::to_owned),
            "otel.status_description" => self.error = value.as_str().map(str::to_owned),
            name if KEPT.contains(&name) => {
                self.attributes.insert(name.to_owned(), value);
            }
            _ => {}
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.set(field, Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field, Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.set(field, Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.set(field, Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.set(field, Value::from(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "otel.name" || KEPT.contains(&field.name()) {
            self.set(field, Value::from(format!("{value:?}")));
        }
    }
}

struct RecorderLayer {
    recorder: SpanRecorder,
}

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl<S> Layer<S> for RecorderLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let metadata = attrs.metadata();
        let ours = metadata.target().starts_with("agent_");
        let is_run =
            ours && metadata.name() == "run" && metadata.target().starts_with("agent_server");
        let mut fields = Fields::default();
        // Where it hangs: a run's own span starts a record; any other hangs under its parent's.
        let (run, parent) = if is_run {
            attrs.record(&mut fields);
            match fields.run_id.as_deref() {
                Some(run) => (Arc::<str>::from(run), None),
                None => return,
            }
        } else {
            let Some(parent) = span.parent() else {
                return;
            };
            let extensions = parent.extensions();
            if let Some(open) = extensions.get::<Open>() {
                (open.run.clone(), Some(open.id))
            } else if let Some(through) = extensions.get::<Through>() {
                (through.run.clone(), through.parent)
            } else {
                return;
            }
        };
        if !ours {
            span.extensions_mut().insert(Through { run, parent });
            return;
        }
        if !is_run {
            attrs.record(&mut fields);
        }
        span.extensions_mut().insert(Open {
            run,
            id: self.recorder.next_id.fetch_add(1, Ordering::Relaxed),
            parent,
            start_us: now_us(),
            started: Instant::now(),
            fields,
        });
    }

    fn on_record(&self, id: &span::Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        if let Some(open) = span.extensions_mut().get_mut::<Open>() {
            values.record(&mut open.fields);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(open) = span.extensions_mut().remove::<Open>() else {
            return;
        };
        let Open {
            run,
            id,
            parent,
            start_us,
            started,
            fields,
        } = open;
        let error = match (fields.error_type, fields.error) {
            (Some(kind), Some(message)) => Some(format!("{kind}: {message}")),
            (Some(kind), None) => Some(kind),
            (None, Some(message)) => Some(message),
            (None, None) => None,
        };
        let record = RecordedSpan {
            id,
            parent,
            name: fields.name.unwrap_or_else(|| span.name().to_owned()),
            start_us,
            duration_us: i64::try_from(started.elapsed().as_micros()).unwrap_or(i64::MAX),
            error,
            attributes: fields.attributes,
        };
        self.recorder.keep(run, record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt as _;

    #[test]
    fn the_spans_under_a_run_are_kept_and_nothing_else() {
        let recorder = SpanRecorder::new();
        let subscriber = tracing_subscriber::registry().with(recorder.layer());
        tracing::subscriber::with_default(subscriber, || {
            let outside = tracing::info_span!(target: "agent_core", "node", otel.name = "lost");
            outside.in_scope(|| {});
            drop(outside);
            let run = tracing::info_span!(
                target: "agent_server::runs",
                "run",
                otel.name = "run g",
                agentgraph.run.id = "r1",
                agentgraph.run.status = tracing::field::Empty,
            );
            run.in_scope(|| {
                // A span of the program's own in between: its children still land.
                let mine = tracing::info_span!(target: "my_app", "mine");
                mine.in_scope(|| {
                    let call = tracing::info_span!(
                        target: "agent_llm",
                        "chat",
                        otel.name = "chat m",
                        gen_ai.usage.input_tokens = 7i64,
                        gen_ai.input.messages = "a secret prompt",
                        "error.type" = tracing::field::Empty,
                        otel.status_description = tracing::field::Empty,
                    );
                    call.record("error.type", "timeout");
                    call.record("otel.status_description", "too slow");
                });
            });
            run.record("agentgraph.run.status", "error");
        });
        let record = recorder.run("r1").expect("the run's record");
        assert!(!record.truncated);
        let names: Vec<&str> = record.spans.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["chat m", "run g"]);
        let (call, run) = (&record.spans[0], &record.spans[1]);
        assert_eq!(call.parent, Some(run.id));
        assert_eq!(run.parent, None);
        assert_eq!(call.attributes["gen_ai.usage.input_tokens"], 7);
        assert!(call.attributes.get("gen_ai.input.messages").is_none());
        assert_eq!(call.error.as_deref(), Some("timeout: too slow"));
        assert_eq!(run.attributes["agentgraph.run.status"], "error");
        assert!(recorder.run("lost").is_none());
    }

    #[test]
    fn the_record_is_bounded() {
        let recorder = SpanRecorder::new();
        let span = |n: usize| RecordedSpan {
            id: n as u64,
            parent: None,
            name: String::new(),
            start_us: 0,
            duration_us: 0,
            error: None,
            attributes: Map::new(),
        };
        for n in 0..MAX_SPANS + 3 {
            recorder.keep("big".into(), span(n));
        }
        let big = recorder.run("big").unwrap();
        assert_eq!(big.spans.len(), MAX_SPANS);
        assert!(big.truncated);
        for n in 0..MAX_RUNS {
            recorder.keep(Arc::from(format!("r{n}")), span(n));
        }
        assert!(recorder.run("big").is_none(), "the oldest run went");
        assert!(recorder.run(&format!("r{}", MAX_RUNS - 1)).is_some());
    }
}
