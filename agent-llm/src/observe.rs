//! Usage and latency through `tracing`: one span per model call and one `llm call finished`
//! event (target `agent_llm`) with provider, model, tokens in and out and latency in ms.
//!
//! Nothing here sees requests or keys; only names, counts and durations are recorded.

use std::time::{Duration, Instant};

use futures::StreamExt;
use tracing::Instrument;

use crate::error::LlmError;
use crate::message::Usage;
use crate::stream::{ChatChunk, ChatResponse, ChatStream};

/// The span a model call runs in.
pub(crate) fn call_span(provider: &'static str, model: &str, streaming: bool) -> tracing::Span {
    tracing::info_span!(
        target: "agent_llm",
        "llm_call",
        provider,
        model,
        streaming,
        input_tokens = tracing::field::Empty,
        output_tokens = tracing::field::Empty,
        latency_ms = tracing::field::Empty,
    )
}

/// Records the end of a call on `span` and as an event.
pub(crate) fn record(
    span: &tracing::Span,
    provider: &'static str,
    model: &str,
    usage: Usage,
    latency: Duration,
) {
    let latency_ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
    span.record("input_tokens", usage.input_tokens);
    span.record("output_tokens", usage.output_tokens);
    span.record("latency_ms", latency_ms);
    span.in_scope(|| {
        tracing::info!(
            target: "agent_llm",
            provider,
            model,
            input_tokens = usage.input_tokens,
            output_tokens = usage.output_tokens,
            latency_ms,
            "llm call finished"
        );
    });
}

/// Records a failed call.
pub(crate) fn record_error(
    span: &tracing::Span,
    provider: &'static str,
    model: &str,
    error: &LlmError,
) {
    span.in_scope(|| {
        tracing::warn!(target: "agent_llm", provider, model, %error, "llm call failed");
    });
}

/// Runs an `invoke` future inside a call span and records its outcome.
pub(crate) async fn observe_invoke<F>(
    provider: &'static str,
    model: &str,
    fut: F,
) -> Result<ChatResponse, LlmError>
where
    F: Future<Output = Result<ChatResponse, LlmError>>,
{
    let span = call_span(provider, model, false);
    let started = Instant::now();
    let result = fut.instrument(span.clone()).await;
    match &result {
        Ok(response) => record(
            &span,
            provider,
            &response_model(response, model),
            response.usage,
            started.elapsed(),
        ),
        Err(e) => record_error(&span, provider, model, e),
    }
    result
}

fn response_model(response: &ChatResponse, fallback: &str) -> String {
    if response.model.is_empty() {
        fallback.to_owned()
    } else {
        response.model.clone()
    }
}

/// Wraps a provider stream so its usage and latency (up to its last chunk) are recorded when
/// the stream is dropped, and a failure as soon as it arrives.
pub(crate) fn observe_stream(
    provider: &'static str,
    model: String,
    span: tracing::Span,
    started: Instant,
    stream: ChatStream,
) -> ChatStream {
    struct Watch {
        provider: &'static str,
        model: String,
        span: tracing::Span,
        started: Instant,
        last_item: Instant,
        usage: Usage,
        done: bool,
    }
    impl Drop for Watch {
        fn drop(&mut self) {
            if !self.done {
                self.done = true;
                // Latency runs to the last chunk, not to when the consumer drops the stream.
                let latency = self.last_item.duration_since(self.started);
                record(&self.span, self.provider, &self.model, self.usage, latency);
            }
        }
    }
    let mut watch = Watch {
        provider,
        model,
        span,
        started,
        last_item: started,
        usage: Usage::default(),
        done: false,
    };
    Box::pin(stream.map(move |item| {
        watch.last_item = Instant::now();
        match &item {
            Ok(ChatChunk::Usage { usage }) => watch.usage = *usage,
            Ok(ChatChunk::Start { model: Some(m), .. }) if !m.is_empty() => watch.model = m.clone(),
            Err(e) if !watch.done => {
                watch.done = true;
                record_error(&watch.span, watch.provider, &watch.model, e);
            }
            _ => {}
        }
        item
    }))
}
