//! The one place model calls are observed: every call of a provider runs in a `chat` span
//! shaped by the OpenTelemetry GenAI semantic conventions (semantic-conventions 1.41, the
//! last release that held them; `gen_ai.provider.name`, which replaced the deprecated
//! `gen_ai.system`), and ends with one `llm call finished` event (target `agent_llm`) with
//! provider, model, tokens in and out and latency in ms, for logs.
//!
//! | span field | when |
//! | --- | --- |
//! | `otel.name` = `chat {model}`, `otel.kind` = `client` | always |
//! | `gen_ai.operation.name` = `chat`, `gen_ai.provider.name` (`openai`, `anthropic`, `gcp.gemini`, `ollama`, `scripted`), `gen_ai.request.model` | always, set when the span opens (samplers see them) |
//! | `gen_ai.request.stream` = `true` | streamed calls |
//! | `gen_ai.request.temperature`, `gen_ai.request.max_tokens`, `gen_ai.request.seed` | when the call sets them |
//! | `gen_ai.response.model`, `gen_ai.response.id`, `gen_ai.response.finish_reasons` | from the reply (the one choice's reason, as a string: `tracing` has no arrays) |
//! | `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens` | from the reply |
//! | `gen_ai.response.time_to_first_chunk` | streamed calls: seconds from sending the request to the first chunk |
//! | `agentgraph.task` | the call's [`CallOptions::task`] label |
//! | `gen_ai.input.messages`, `gen_ai.output.messages` | only with content capture on (see [`capture_content`]) |
//! | `error.type` and an error status | a failed call: the HTTP status (`429`, `503`), `timeout`, or the error's kind |
//!
//! Nothing here sees keys. Prompts and replies are user data: they are recorded only when
//! capture is turned on, as JSON strings in the conventions' message format.
//!
//! Cost: with no subscriber interested the span is disabled, and nothing is formatted or
//! serialized; content is serialized only for an enabled span with capture on.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use tracing::Instrument;
use tracing::field::Empty;

use crate::error::LlmError;
use crate::message::{Message, Usage};
use crate::options::CallOptions;
use crate::stream::{ChatChunk, ChatResponse, ChatStream, FinishReason};

/// The environment variable other OpenTelemetry GenAI instrumentations read to capture
/// message content: `true` (or `span_only`, `span_and_event`) turns capture on; `false`,
/// `no_content` or unset leaves it off.
pub const CAPTURE_CONTENT_ENV: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// Content capture: not decided yet (read the environment once), off, on.
static CAPTURE: AtomicU8 = AtomicU8::new(UNSET);
const UNSET: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

/// Whether prompts, replies, tool arguments and tool results are recorded on spans
/// (`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.tool.call.arguments`,
/// `gen_ai.tool.call.result`). Off by default: they hold user data.
///
/// Decided by [`set_capture_content`] when it was called, else by the environment variable
/// [`CAPTURE_CONTENT_ENV`] (read once).
pub fn capture_content() -> bool {
    match CAPTURE.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => {
            let on = std::env::var(CAPTURE_CONTENT_ENV)
                .map(|v| capture_value(&v))
                .unwrap_or(false);
            // A call of `set_capture_content` in between wins.
            let _ = CAPTURE.compare_exchange(
                UNSET,
                if on { ON } else { OFF },
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            CAPTURE.load(Ordering::Relaxed) == ON
        }
    }
}

/// Turns content capture on or off for the whole process, whatever the environment says
/// (see [`capture_content`]).
pub fn set_capture_content(on: bool) {
    CAPTURE.store(if on { ON } else { OFF }, Ordering::Relaxed);
}

/// Whether a value of [`CAPTURE_CONTENT_ENV`] turns capture on.
fn capture_value(value: &str) -> bool {
    let value = value.trim();
    ["true", "1", "span_only", "span_and_event"]
        .iter()
        .any(|on| value.eq_ignore_ascii_case(on))
}

/// What a model call is, for its span.
pub(crate) struct Call<'a> {
    /// The provider (`openai`, `anthropic`, `scripted`...).
    pub(crate) provider: &'static str,
    /// The model asked for.
    pub(crate) model: &'a str,
    /// What is sent.
    pub(crate) messages: &'a [Message],
    /// The call's options.
    pub(crate) options: &'a CallOptions,
}

/// The span a model call runs in (disabled when nobody listens).
pub(crate) fn call_span(call: &Call<'_>, streaming: bool) -> tracing::Span {
    let span = tracing::info_span!(
        target: "agent_llm",
        "chat",
        otel.name = Empty,
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider_name(call.provider),
        gen_ai.request.model = call.model,
        gen_ai.request.stream = Empty,
        gen_ai.request.temperature = Empty,
        gen_ai.request.max_tokens = Empty,
        gen_ai.request.seed = Empty,
        gen_ai.response.model = Empty,
        gen_ai.response.id = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.response.time_to_first_chunk = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        agentgraph.task = Empty,
        "error.type" = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    span.record("otel.name", format!("chat {}", call.model));
    if streaming {
        span.record("gen_ai.request.stream", true);
    }
    let options = call.options;
    if let Some(temperature) = options.temperature {
        span.record("gen_ai.request.temperature", f64::from(temperature));
    }
    if let Some(max_tokens) = options.max_tokens {
        span.record("gen_ai.request.max_tokens", i64::from(max_tokens));
    }
    if let Some(seed) = options.seed {
        span.record(
            "gen_ai.request.seed",
            i64::try_from(seed).unwrap_or(i64::MAX),
        );
    }
    if let Some(task) = &options.task {
        span.record("agentgraph.task", task.as_str());
    }
    if capture_content() {
        span.record(
            "gen_ai.input.messages",
            input_messages(call.messages).to_string(),
        );
    }
    span
}

/// What a call's reply says, for its span and its event.
struct Outcome<'a> {
    model: &'a str,
    id: Option<&'a str>,
    usage: Usage,
    finish: Option<&'a FinishReason>,
    latency: Duration,
}

/// Records the end of a call on `span` and as an event.
fn record(span: &tracing::Span, provider: &'static str, outcome: &Outcome<'_>) {
    let latency_ms = u64::try_from(outcome.latency.as_millis()).unwrap_or(u64::MAX);
    if !span.is_disabled() {
        span.record("gen_ai.response.model", outcome.model);
        if let Some(id) = outcome.id.filter(|id| !id.is_empty()) {
            span.record("gen_ai.response.id", id);
        }
        if let Some(finish) = outcome.finish {
            span.record("gen_ai.response.finish_reasons", finish_reason(finish));
        }
        span.record(
            "gen_ai.usage.input_tokens",
            tokens(outcome.usage.input_tokens),
        );
        span.record(
            "gen_ai.usage.output_tokens",
            tokens(outcome.usage.output_tokens),
        );
    }
    span.in_scope(|| {
        tracing::info!(
            target: "agent_llm",
            provider,
            model = outcome.model,
            input_tokens = outcome.usage.input_tokens,
            output_tokens = outcome.usage.output_tokens,
            latency_ms,
            "llm call finished"
        );
    });
}

/// Records a failed call on `span` and as an event.
pub(crate) fn record_error(span: &tracing::Span, call: &Call<'_>, error: &LlmError) {
    if !span.is_disabled() {
        agent_core::telemetry::record_error(span, &error_type(error), error);
    }
    let (provider, model) = (call.provider, call.model);
    span.in_scope(|| {
        tracing::warn!(target: "agent_llm", provider, model, %error, "llm call failed");
    });
}

/// Runs an `invoke` future inside a call span and records its outcome.
pub(crate) async fn observe_invoke<F>(call: Call<'_>, fut: F) -> Result<ChatResponse, LlmError>
where
    F: Future<Output = Result<ChatResponse, LlmError>>,
{
    let span = call_span(&call, false);
    let started = Instant::now();
    let result = fut.instrument(span.clone()).await;
    match &result {
        Ok(response) => {
            let model = response_model(response, call.model);
            if capture_content() && !span.is_disabled() {
                let output = output_messages(&response.message, &response.finish_reason);
                span.record("gen_ai.output.messages", output.to_string());
            }
            let outcome = Outcome {
                model: &model,
                id: response.message.id.as_deref(),
                usage: response.usage,
                finish: Some(&response.finish_reason),
                latency: started.elapsed(),
            };
            record(&span, call.provider, &outcome);
        }
        Err(e) => record_error(&span, &call, e),
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
/// the stream is dropped, a failure as soon as it arrives, and the time to its first chunk
/// as it arrives. `span` is the call's, opened (with [`call_span`]) before the request was
/// sent at `started`.
pub(crate) fn observe_stream(
    call: &Call<'_>,
    span: tracing::Span,
    started: Instant,
    stream: ChatStream,
) -> ChatStream {
    struct Watch {
        provider: &'static str,
        model: String,
        id: Option<String>,
        finish: Option<FinishReason>,
        /// The reply's text and tool calls, kept only with content capture on.
        content: Option<crate::stream::ChunkAggregator>,
        span: tracing::Span,
        started: Instant,
        last_item: Option<Instant>,
        usage: Usage,
        done: bool,
    }
    impl Drop for Watch {
        fn drop(&mut self) {
            if self.done {
                return;
            }
            self.done = true;
            // Latency runs to the last chunk, not to when the consumer drops the stream.
            let last = self.last_item.unwrap_or(self.started);
            if let Some(content) = self.content.take()
                && let Ok(reply) = content.finish()
            {
                let finish = self.finish.clone().unwrap_or_default();
                let output = output_messages(&reply.message, &finish);
                self.span
                    .record("gen_ai.output.messages", output.to_string());
            }
            let outcome = Outcome {
                model: &self.model,
                id: self.id.as_deref(),
                usage: self.usage,
                finish: self.finish.as_ref(),
                latency: last.duration_since(self.started),
            };
            record(&self.span, self.provider, &outcome);
        }
    }
    let recording = !span.is_disabled();
    let mut watch = Watch {
        provider: call.provider,
        model: call.model.to_owned(),
        id: None,
        finish: None,
        content: (recording && capture_content())
            .then(|| crate::stream::ChunkAggregator::new(call.provider)),
        span,
        started,
        last_item: None,
        usage: Usage::default(),
        done: false,
    };
    let call_model = call.model.to_owned();
    Box::pin(stream.map(move |item| {
        let now = Instant::now();
        if watch.last_item.is_none() && recording {
            let first = now.duration_since(watch.started).as_secs_f64();
            watch
                .span
                .record("gen_ai.response.time_to_first_chunk", first);
        }
        watch.last_item = Some(now);
        match &item {
            Ok(chunk) => {
                match chunk {
                    ChatChunk::Usage { usage } => watch.usage = *usage,
                    ChatChunk::Start { model, id } => {
                        if let Some(m) = model.as_ref().filter(|m| !m.is_empty()) {
                            watch.model = m.clone();
                        }
                        if id.is_some() {
                            watch.id = id.clone();
                        }
                    }
                    ChatChunk::Finish { reason } => watch.finish = Some(reason.clone()),
                    _ => {}
                }
                if let Some(content) = &mut watch.content {
                    content.push(chunk);
                }
            }
            Err(e) if !watch.done => {
                watch.done = true;
                let call = Call {
                    provider: watch.provider,
                    model: &call_model,
                    messages: &[],
                    options: &CallOptions::default(),
                };
                record_error(&watch.span, &call, e);
            }
            Err(_) => {}
        }
        item
    }))
}

/// Runs an embeddings request (`count` texts to `model` of `provider`) in an `embeddings`
/// span (`embeddings {model}`) and records its outcome.
pub(crate) async fn observe_embed<F>(
    provider: &'static str,
    model: &str,
    dims: Option<usize>,
    count: usize,
    fut: F,
) -> Result<Vec<Vec<f32>>, LlmError>
where
    F: Future<Output = Result<Vec<Vec<f32>>, LlmError>>,
{
    let span = tracing::info_span!(
        target: "agent_llm",
        "embeddings",
        otel.name = Empty,
        otel.kind = "client",
        gen_ai.operation.name = "embeddings",
        gen_ai.provider.name = provider_name(provider),
        gen_ai.request.model = model,
        gen_ai.embeddings.dimension.count = Empty,
        agentgraph.embeddings.inputs = i64::try_from(count).unwrap_or(i64::MAX),
        "error.type" = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    );
    if !span.is_disabled() {
        span.record("otel.name", format!("embeddings {model}"));
        if let Some(dims) = dims {
            span.record(
                "gen_ai.embeddings.dimension.count",
                i64::try_from(dims).unwrap_or(i64::MAX),
            );
        }
    }
    let result = fut.instrument(span.clone()).await;
    if let Err(error) = &result
        && !span.is_disabled()
    {
        agent_core::telemetry::record_error(&span, &error_type(error), error);
    }
    result
}

/// The `error.type` of a failed call: the HTTP status for a provider's error answer,
/// `timeout` for a time-out, else the kind of failure.
pub(crate) fn error_type(error: &LlmError) -> Cow<'static, str> {
    Cow::Borrowed(match error {
        LlmError::Http { status, .. } => return Cow::Owned(status.to_string()),
        LlmError::RetriesExhausted { last, .. } => return error_type(last),
        LlmError::Timeout { .. } | LlmError::StreamDeadline { .. } => "timeout",
        LlmError::Connection { .. } => "connection",
        LlmError::Config { .. } => "config",
        LlmError::ResponseTooLarge { .. } => "response_too_large",
        LlmError::MalformedResponse { .. } => "malformed_response",
        LlmError::TruncatedStream { .. } => "truncated_stream",
        LlmError::ContextLengthExceeded { .. } => "context_length_exceeded",
        LlmError::Refusal { .. } => "refusal",
        LlmError::ContentFiltered { .. } => "content_filter",
        LlmError::InvalidToolArguments { .. } => "invalid_tool_arguments",
        LlmError::StructuredOutput { .. } => "structured_output",
        LlmError::ScriptExhausted { .. } => "script_exhausted",
        _ => "_OTHER",
    })
}

/// `gen_ai.provider.name` for one of our providers: the conventions' well-known value where
/// one applies (`gcp.gemini` for Gemini's API at generativelanguage.googleapis.com), else our
/// name (`openai`, `anthropic`, `ollama`, `scripted`, `offline`).
fn provider_name(provider: &'static str) -> &'static str {
    match provider {
        "gemini" => "gcp.gemini",
        other => other,
    }
}

/// A token count as an attribute (a number: `u64` fields become strings).
fn tokens(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A finish reason as providers spell it (`gen_ai.response.finish_reasons`).
fn finish_reason(reason: &FinishReason) -> &str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::ContentFilter => "content_filter",
        FinishReason::Refusal => "refusal",
        FinishReason::Other(other) => other,
    }
}

/// `messages` in the conventions' input format: `[{role, parts: [...]}]`.
pub(crate) fn input_messages(messages: &[Message]) -> Value {
    let list: Vec<Value> = messages
        .iter()
        .filter_map(|message| match message {
            Message::System(m) => Some(json!({ "role": "system", "parts": [text(&m.content)] })),
            Message::Human(m) => Some(json!({ "role": "user", "parts": [text(&m.content)] })),
            Message::Ai(m) => Some(json!({ "role": "assistant", "parts": ai_parts(m) })),
            Message::Tool(m) => Some(json!({
                "role": "tool",
                "parts": [{
                    "type": "tool_call_response",
                    "id": m.tool_call_id,
                    "response": m.content,
                }],
            })),
            Message::Remove(_) => None,
        })
        .collect();
    Value::Array(list)
}

/// A reply in the conventions' output format: `[{role, parts, finish_reason}]`.
pub(crate) fn output_messages(message: &crate::message::AiMessage, finish: &FinishReason) -> Value {
    let finish = match finish {
        FinishReason::ToolCalls => "tool_call",
        other => finish_reason(other),
    };
    json!([{ "role": "assistant", "parts": ai_parts(message), "finish_reason": finish }])
}

fn text(content: &str) -> Value {
    json!({ "type": "text", "content": content })
}

fn ai_parts(message: &crate::message::AiMessage) -> Vec<Value> {
    let mut parts = Vec::with_capacity(1 + message.tool_calls.len());
    if !message.content.is_empty() {
        parts.push(text(&message.content));
    }
    for call in &message.tool_calls {
        parts.push(json!({
            "type": "tool_call",
            "id": call.id,
            "name": call.name,
            "arguments": call.args,
        }));
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{AiMessage, ToolCall, ToolMessage};

    #[test]
    fn capture_values() {
        for on in ["true", "TRUE", " 1", "span_only", "SPAN_AND_EVENT"] {
            assert!(capture_value(on), "{on}");
        }
        for off in ["", "false", "0", "no_content", "event_only", "yes please"] {
            assert!(!capture_value(off), "{off}");
        }
    }

    #[test]
    fn messages_follow_the_conventions_format() {
        let call = ToolCall::new("c1", "add", json!({"a": 1}));
        let ai = AiMessage {
            content: "adding".to_owned(),
            tool_calls: vec![call],
            ..AiMessage::default()
        };
        let messages = [
            Message::system("be brief"),
            Message::human("1+1?"),
            Message::Ai(ai.clone()),
            Message::Tool(ToolMessage {
                tool_call_id: "c1".to_owned(),
                content: "2".to_owned(),
                ..ToolMessage::default()
            }),
        ];
        assert_eq!(
            input_messages(&messages),
            json!([
                {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
                {"role": "user", "parts": [{"type": "text", "content": "1+1?"}]},
                {"role": "assistant", "parts": [
                    {"type": "text", "content": "adding"},
                    {"type": "tool_call", "id": "c1", "name": "add", "arguments": {"a": 1}},
                ]},
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "2"}]},
            ])
        );
        assert_eq!(
            output_messages(&ai, &FinishReason::ToolCalls)[0]["finish_reason"],
            "tool_call"
        );
    }

    #[test]
    fn error_types_are_short() {
        let http = LlmError::Http {
            provider: "openai",
            status: 429,
            message: "slow down".to_owned(),
            retryable: true,
        };
        assert_eq!(error_type(&http), "429");
        let exhausted = LlmError::RetriesExhausted {
            provider: "openai",
            attempts: 3,
            last: Box::new(http),
        };
        assert_eq!(error_type(&exhausted), "429");
        let timeout = LlmError::Timeout {
            provider: "openai",
            url: "u".to_owned(),
            timeout: Duration::from_secs(1),
        };
        assert_eq!(error_type(&timeout), "timeout");
    }
}
