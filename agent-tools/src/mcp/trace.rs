//! The trace context an MCP call carries to its server: the W3C `traceparent`, `tracestate`
//! and `baggage` of the call's span in the request's `params._meta`, where the OpenTelemetry
//! MCP conventions put them (MCP's SEP-414; HTTP headers would cover the HTTP request, not
//! each message, and stdio has none).
//!
//! Read through `tracing-opentelemetry` (the span's OpenTelemetry context, when the program's
//! subscriber has that layer: agent-otel's) and written with the SDK's W3C propagators; with
//! no such layer the span has no context and nothing is added. No exporter, no global state.

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use rmcp::model::{MetaObject, RequestMetaObject};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::McpError;

/// The `_meta` of a request made in `span`: its trace context, or `None` when it has none.
pub(super) fn meta_of(span: &tracing::Span) -> Option<RequestMetaObject> {
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut fields = std::collections::HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut fields);
    BaggagePropagator::new().inject_context(&cx, &mut fields);
    let mut meta = MetaObject::new();
    for (key, value) in fields {
        if value.is_empty() {
            continue;
        }
        match key.as_str() {
            "traceparent" => meta.set_traceparent(value),
            "tracestate" => meta.set_tracestate(value),
            "baggage" => meta.set_baggage(value),
            _ => {}
        }
    }
    Some(RequestMetaObject(meta))
}

/// The `error.type` of a call that failed with `error`.
pub(super) fn error_type(error: &McpError) -> &'static str {
    match error {
        McpError::TimedOut { .. } => "timeout",
        McpError::Refused { .. } => "refused",
        McpError::Exited { .. } | McpError::Connection { .. } | McpError::Spawn { .. } => {
            "connection"
        }
        McpError::ToolReported { .. } => "tool_error",
        _ => "mcp_error",
    }
}
