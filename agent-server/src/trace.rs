//! Trace propagation: a request's W3C trace context becomes the parent of what the server
//! does for it, and goes on with what the server sends out.
//!
//! - Every request gets an HTTP server span ([`http_span`]: `{method} {route}`, with the
//!   OpenTelemetry HTTP conventions' `http.request.method`, `http.route`,
//!   `http.response.status_code`, `url.path`, `otel.kind = server`), whose parent is the
//!   caller's `traceparent` / `tracestate`, with its `baggage`. The span lasts until the
//!   response's body is sent (an SSE stream's whole life). Health probes (`/ok`) and
//!   metric scrapes (`/metrics`) get none.
//! - A run keeps the context it was created in ([`Carrier`], in the run's stored document
//!   under `trace_context`, which the API never shows): the request's span, or, when this
//!   process exports no spans, the caller's context as it came. Whichever instance executes
//!   the run, and however late (queued behind another run, scheduled with `after_seconds`,
//!   taken over after its instance died), its `run` span ([`run_span`]) is a child of that
//!   context, and the graph's `invoke_agent` span a child of it: one trace from the
//!   caller's request to the last model call. A cron's runs start traces of their own.
//! - Webhooks carry the context of their delivery's client span in `traceparent`
//!   (`webhook.rs`); the MCP client of agent-tools carries it in `params._meta`.
//!
//! Every request is hostile here: a `traceparent` that does not parse is ignored (the request
//! goes on as if it had none), as is a repeated one; `tracestate` over 512 bytes and
//! `baggage` over 8192 bytes (W3C's limits) are dropped, not cut; a stored context is read
//! back with the same bounds.
//!
//! Why these dependencies, and no feature flag: the OpenTelemetry API (`opentelemetry`),
//! the SDK's two W3C propagators (`opentelemetry_sdk` with its `trace` feature: no exporter,
//! no provider, nothing installed globally) and `tracing-opentelemetry`'s
//! `OpenTelemetrySpanExt` (to set a span's remote parent and read its context). They start
//! nothing and cost a few header lookups per request when no span is exported; exporting is
//! the program's choice (agent-otel's layer, which `agent serve` installs from the `OTEL_*`
//! variables). A feature would make propagation silently absent for a server whose builder
//! forgot it, while costing the same when on. What it asks of a program that exports: its
//! subscriber's OpenTelemetry layer is `tracing-opentelemetry` 0.34 (the one this crate
//! sets parents through), as agent-otel's is.

use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator as _};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// Where a run's document keeps the trace context it was created in.
pub(crate) const FIELD: &str = "trace_context";

/// The longest `traceparent` read (version 00's is 55 bytes; later versions may add fields).
const TRACEPARENT_MAX: usize = 256;
/// The longest `tracestate` read: W3C's 32 members of up to 512 bytes together.
const TRACESTATE_MAX: usize = 512;
/// The longest `baggage` read: W3C's limit for the whole header.
const BAGGAGE_MAX: usize = 8192;

/// A W3C trace context as text (`traceparent`, `tracestate`, `baggage`): what a request
/// brings, what a run keeps, what goes out. Every value is bounded (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Carrier {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    traceparent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tracestate: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    baggage: Option<String>,
}

/// `value` if it is printable ASCII of at most `max` bytes.
fn bounded(value: &str, max: usize) -> Option<String> {
    (!value.is_empty() && value.len() <= max && value.bytes().all(|b| (0x20..0x7f).contains(&b)))
        .then(|| value.to_owned())
}

/// Every value of header `name` joined with `,` (how W3C combines repeated `tracestate` and
/// `baggage` headers), if they fit in `max` bytes.
fn joined(headers: &HeaderMap, name: &str, max: usize) -> Option<String> {
    let mut out = String::new();
    for value in headers.get_all(name) {
        let text = value.to_str().ok()?;
        if !out.is_empty() {
            out.push(',');
        }
        if out.len() + text.len() > max {
            return None;
        }
        out.push_str(text);
    }
    bounded(&out, max)
}

impl Carrier {
    /// The trace headers of a request: one `traceparent` (two are ignored, as W3C says),
    /// `tracestate` and `baggage` combined over repeated headers, each within its bound.
    pub(crate) fn from_headers(headers: &HeaderMap) -> Carrier {
        let mut parents = headers.get_all("traceparent").iter();
        let traceparent = match (parents.next(), parents.next()) {
            (Some(one), None) => one
                .to_str()
                .ok()
                .and_then(|t| bounded(t.trim(), TRACEPARENT_MAX)),
            _ => None,
        };
        if traceparent.is_none() && headers.get("baggage").is_none() {
            return Carrier::default();
        }
        Carrier {
            tracestate: traceparent
                .as_ref()
                .and_then(|_| joined(headers, "tracestate", TRACESTATE_MAX)),
            traceparent,
            baggage: joined(headers, "baggage", BAGGAGE_MAX),
        }
    }

    /// The carrier a run's document keeps (`None` and anything malformed: an empty one).
    pub(crate) fn from_run(run: &Value) -> Carrier {
        Carrier::from_json(&run[FIELD])
    }

    /// The carrier in a JSON object's `traceparent`, `tracestate` and `baggage` strings (a
    /// stored run's, an MCP request's `_meta`), each within its bound.
    pub(crate) fn from_json(stored: &Value) -> Carrier {
        match stored.as_object() {
            Some(fields) => Carrier::from_map(fields),
            None => Carrier::default(),
        }
    }

    /// [`from_json`](Self::from_json) of an object's fields.
    pub(crate) fn from_map(fields: &serde_json::Map<String, Value>) -> Carrier {
        let field = |key: &str, max: usize| {
            fields
                .get(key)
                .and_then(Value::as_str)
                .and_then(|v| bounded(v, max))
        };
        Carrier {
            traceparent: field("traceparent", TRACEPARENT_MAX),
            tracestate: field("tracestate", TRACESTATE_MAX),
            baggage: field("baggage", BAGGAGE_MAX),
        }
    }

    /// Whether it carries nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.traceparent.is_none() && self.baggage.is_none()
    }

    /// The OpenTelemetry context it describes: a remote parent span when its `traceparent`
    /// parses, and its baggage. Anything that does not parse is left out.
    pub(crate) fn context(&self) -> Context {
        if self.is_empty() {
            return Context::new();
        }
        let cx = TraceContextPropagator::new().extract(self);
        BaggagePropagator::new().extract_with_context(&cx, self)
    }

    /// The carrier of `cx`: empty when it has neither a valid span nor baggage.
    pub(crate) fn of(cx: &Context) -> Carrier {
        let mut carrier = Carrier::default();
        TraceContextPropagator::new().inject_context(cx, &mut carrier);
        BaggagePropagator::new().inject_context(cx, &mut carrier);
        carrier
    }

    /// The context of the span now current (the request's, the run's, the delivery's...),
    /// or, when this process exports no spans (that span has no OpenTelemetry context), the
    /// context the request being served came with.
    pub(crate) fn current() -> Carrier {
        let cx = tracing::Span::current().context();
        if cx.span().span_context().is_valid() {
            return Carrier::of(&cx);
        }
        INCOMING.try_with(Carrier::of).unwrap_or_default()
    }

    /// As a run's document keeps it (`None` when empty).
    pub(crate) fn to_json(&self) -> Option<Value> {
        (!self.is_empty())
            .then(|| serde_json::to_value(self).ok())
            .flatten()
    }

    /// Its values as header name and value pairs (webhooks' requests).
    pub(crate) fn headers(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("traceparent", self.traceparent.as_deref()),
            ("tracestate", self.tracestate.as_deref()),
            ("baggage", self.baggage.as_deref()),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.map(|v| (name, v)))
    }
}

impl Extractor for Carrier {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.traceparent.as_deref(),
            "tracestate" => self.tracestate.as_deref(),
            "baggage" => self.baggage.as_deref(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        self.headers().map(|(name, _)| name).collect()
    }
}

impl Injector for Carrier {
    fn set(&mut self, key: &str, value: String) {
        let (slot, max) = match key {
            "traceparent" => (&mut self.traceparent, TRACEPARENT_MAX),
            "tracestate" => (&mut self.tracestate, TRACESTATE_MAX),
            "baggage" => (&mut self.baggage, BAGGAGE_MAX),
            _ => return,
        };
        *slot = bounded(&value, max);
    }
}

tokio::task_local! {
    /// The trace context the request being served came with (read by [`Carrier::current`]
    /// when the request's span has no OpenTelemetry context of its own).
    static INCOMING: Context;
}

/// Runs `work` (serving one request) in `span`, `carrier` being the context the request came
/// with (see [`Carrier::current`]): for work that does not run inside [`http_span`]'s task.
pub(crate) async fn serve_in<T>(
    carrier: &Carrier,
    span: tracing::Span,
    work: impl Future<Output = T>,
) -> T {
    INCOMING
        .scope(carrier.context(), work.instrument(span))
        .await
}

/// The server span of an MCP `tools/call` of `tool` (the OpenTelemetry MCP conventions'
/// names), a child of `carrier` (the call's `_meta` or its HTTP request's headers).
pub(crate) fn mcp_span(tool: &str, carrier: &Carrier) -> tracing::Span {
    let span = tracing::info_span!(
        parent: None,
        "mcp_call",
        otel.name = tracing::field::Empty,
        otel.kind = "server",
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
    );
    if !span.is_disabled() {
        if !carrier.is_empty() {
            let _ = span.set_parent(carrier.context());
        }
        span.record("otel.name", format!("tools/call {tool}"));
    }
    span
}

/// The HTTP method as the conventions name it: the known ones, else `_OTHER`.
fn method_name(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "_OTHER",
    }
}

/// Routes that get no span: health probes and metric scrapes, every few seconds from
/// machines, would otherwise be most of the traces.
const UNTRACED: [&str; 2] = ["/ok", "/metrics"];

/// The HTTP server span of each request (see the module docs), a child of the caller's
/// trace context; the handler runs in it, and the response's body holds it until sent.
pub(crate) async fn http_span(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    if route.as_deref().is_some_and(|r| UNTRACED.contains(&r)) {
        return next.run(request).await;
    }
    let incoming = Carrier::from_headers(request.headers());
    let method = method_name(request.method());
    let span = tracing::info_span!(
        parent: None,
        "http_request",
        otel.name = tracing::field::Empty,
        otel.kind = "server",
        http.request.method = method,
        http.route = tracing::field::Empty,
        url.path = tracing::field::Empty,
        http.response.status_code = tracing::field::Empty,
        "error.type" = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    let cx = incoming.context();
    if !span.is_disabled() {
        if !incoming.is_empty() {
            // Before anything starts the span. Fails only when no OpenTelemetry layer
            // listens: nothing to parent then.
            let _ = span.set_parent(cx.clone());
        }
        match &route {
            Some(route) => {
                span.record("otel.name", format!("{method} {route}"));
                span.record("http.route", route.as_str());
            }
            None => {
                span.record("otel.name", method);
            }
        }
        span.record("url.path", request.uri().path());
    }
    let response = INCOMING
        .scope(cx, next.run(request).instrument(span.clone()))
        .await;
    if span.is_disabled() {
        return response;
    }
    let status = response.status();
    span.record("http.response.status_code", i64::from(status.as_u16()));
    if status.is_server_error() {
        span.record("error.type", status.as_str());
        span.record("otel.status_code", "ERROR");
    }
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, Body::new(Traced { body, _span: span }))
}

/// A response body that keeps its request's span open until it is sent (or dropped).
struct Traced {
    body: Body,
    _span: tracing::Span,
}

impl http_body::Body for Traced {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// The span of one attempt at executing `run` (of graph `graph_id`): `run {graph_id}`, a
/// child of the context the run was created in, or a root when it has none (a cron's run).
/// The run's end records `agentgraph.run.status` (and a failure) on it; agent-otel's
/// metrics read its duration, status and queue wait from it.
pub(crate) fn run_span(
    run: &Value,
    graph_id: &str,
    attempt: i64,
    started_ms: i64,
) -> tracing::Span {
    let span = tracing::info_span!(
        parent: None,
        "run",
        otel.name = tracing::field::Empty,
        otel.kind = "internal",
        agentgraph.run.id = run["run_id"].as_str().unwrap_or_default(),
        agentgraph.graph.id = graph_id,
        agentgraph.assistant.id = run["assistant_id"].as_str().unwrap_or_default(),
        gen_ai.conversation.id = run["thread_id"].as_str().unwrap_or_default(),
        agentgraph.run.attempt = attempt,
        agentgraph.run.queue_wait = tracing::field::Empty,
        agentgraph.run.status = tracing::field::Empty,
        "error.type" = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
    );
    if span.is_disabled() {
        return span;
    }
    let carrier = Carrier::from_run(run);
    if !carrier.is_empty() {
        let _ = span.set_parent(carrier.context());
    }
    span.record("otel.name", format!("run {graph_id}"));
    if attempt == 1
        && let Some(created) = run["created_at"].as_str().and_then(crate::time::parse_ms)
    {
        // From when it could start: its creation, or the time `after_seconds` set.
        let due = run["kwargs"]["not_before_ms"]
            .as_i64()
            .map_or(created, |due| due.max(created));
        let waited = (started_ms - due).max(0) as f64 / 1000.0;
        span.record("agentgraph.run.queue_wait", waited);
    }
    span
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use opentelemetry::baggage::BaggageExt as _;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn a_valid_traceparent_becomes_a_remote_parent() {
        let carrier = Carrier::from_headers(&headers(&[
            ("traceparent", PARENT),
            ("tracestate", "a=1"),
            ("tracestate", "b=2"),
            ("baggage", "user=ada,tenant=acme"),
        ]));
        let cx = carrier.context();
        let span = cx.span();
        let parent = span.span_context();
        assert!(parent.is_valid() && parent.is_remote());
        assert_eq!(
            parent.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(parent.trace_state().header(), "a=1,b=2");
        assert_eq!(
            cx.baggage().get("tenant").map(|v| v.to_string()),
            Some("acme".to_owned())
        );
        // What goes out again is what came in.
        let out = Carrier::of(&cx);
        assert_eq!(out.traceparent.as_deref(), Some(PARENT));
        assert_eq!(out.tracestate.as_deref(), Some("a=1,b=2"));
        assert!(out.baggage.as_deref().unwrap().contains("tenant=acme"));
        // And a run keeps it as JSON, read back the same.
        let run = serde_json::json!({ FIELD: out.to_json() });
        assert_eq!(Carrier::from_run(&run), out);
    }

    #[test]
    fn anything_malformed_is_ignored() {
        let long = format!("00-{}-00f067aa0ba902b7-01", "a".repeat(300));
        for bad in [
            "",
            "garbage",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            long.as_str(),
        ] {
            let cx = Carrier::from_headers(&headers(&[("traceparent", bad)])).context();
            assert!(!cx.span().span_context().is_valid(), "{bad}");
            assert!(Carrier::of(&cx).is_empty(), "{bad}");
        }
        // Two traceparents: neither is believed.
        let two = headers(&[("traceparent", PARENT), ("traceparent", PARENT)]);
        assert!(Carrier::from_headers(&two).is_empty());
        // Oversized tracestate and baggage are dropped whole; the parent stays.
        let big_state = vec!["k=v"; 200].join(",");
        let big_baggage = format!("k={}", "v".repeat(9000));
        let carrier = Carrier::from_headers(&headers(&[
            ("traceparent", PARENT),
            ("tracestate", &big_state),
            ("baggage", &big_baggage),
        ]));
        assert_eq!(carrier.traceparent.as_deref(), Some(PARENT));
        assert!(carrier.tracestate.is_none() && carrier.baggage.is_none());
        // A stored context that is not one: nothing.
        for stored in [
            serde_json::json!({FIELD: "x"}),
            serde_json::json!({FIELD: {"traceparent": 7}}),
            serde_json::json!({}),
        ] {
            assert!(Carrier::from_run(&stored).is_empty());
        }
    }

    #[test]
    fn outside_a_request_there_is_no_context() {
        assert!(Carrier::current().is_empty());
        assert!(Carrier::default().to_json().is_none());
    }
}
