//! What every wire shares below the [`Wire`](super::Wire) level: timeouts, sending with
//! retries (agent-core's [`RetryPolicy`] over [`LlmError`], plus `Retry-After`), mapping HTTP
//! failures to [`LlmError`], and turning response bodies into event streams (SSE through
//! `eventsource-stream`, NDJSON lines) that a [`StreamDecoder`] turns into chunks.

use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::error::{LlmError, snippet};
use crate::providers::wire::{StreamDecoder, WireEvent};
use crate::secret::SecretString;
use crate::stream::{ChatChunk, ChatStream};

/// How often a failed request to a model is sent again: agent-core's
/// [`RetryPolicy`](agent_core::RetryPolicy) over [`LlmError`], the vocabulary node and tool
/// retries use too.
///
/// By default: 3 attempts, waits of 0.5 s doubling (jittered) up to 128 s. Retried (see
/// [`LlmError::is_retryable`]): HTTP 408, 409, 429 and 5xx, connection errors and timeouts;
/// never other 4xx (the request itself is wrong). A wait is never shorter than the server's
/// `Retry-After` (or `retry-after-ms`); a `Retry-After` longer than the provider's
/// `max_retry_after` (builder setting, default 60 s) is not waited for: the error is returned
/// at once.
pub type RetryPolicy = agent_core::RetryPolicy<LlmError>;

/// Timeouts of an HTTP provider.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeouts {
    /// Establishing the connection.
    pub connect: Duration,
    /// A whole non-streamed request.
    pub request: Duration,
    /// Longest silence between two pieces of a streamed response.
    pub stream_idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            request: Duration::from_secs(300),
            stream_idle: Duration::from_secs(120),
        }
    }
}

/// Connection settings every HTTP provider builder carries.
#[derive(Clone, Debug)]
pub(crate) struct HttpSettings {
    pub(crate) base_url: Option<String>,
    pub(crate) api_key: Option<SecretString>,
    pub(crate) model: Option<String>,
    pub(crate) retry: RetryPolicy,
    pub(crate) max_retry_after: Duration,
    pub(crate) timeouts: Timeouts,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            base_url: None,
            api_key: None,
            model: None,
            retry: RetryPolicy::default(),
            max_retry_after: DEFAULT_MAX_RETRY_AFTER,
            timeouts: Timeouts::default(),
        }
    }
}

/// The longest `Retry-After` a provider waits for unless told otherwise.
pub(crate) const DEFAULT_MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// A reqwest client plus retry policy and error mapping for one provider.
#[derive(Clone, Debug)]
pub(crate) struct Transport {
    pub(crate) provider: &'static str,
    client: reqwest::Client,
    retry: RetryPolicy,
    max_retry_after: Duration,
    timeouts: Timeouts,
}

impl Transport {
    pub(crate) fn new(
        provider: &'static str,
        settings: &HttpSettings,
        base_url: &str,
    ) -> Result<Self, LlmError> {
        if base_url.starts_with("https://") && !cfg!(feature = "rustls") {
            return Err(LlmError::Config {
                provider,
                message: format!(
                    "base URL {base_url} needs TLS, which this build lacks; enable the `rustls` feature of agent-llm"
                ),
            });
        }
        if !base_url.starts_with("http://") && !base_url.starts_with("https://") {
            return Err(LlmError::Config {
                provider,
                message: format!("base URL `{base_url}` must start with http:// or https://"),
            });
        }
        #[cfg(feature = "rustls")]
        {
            // reqwest's rustls comes without a crypto provider; install ring's once per
            // process (an error only says another one is installed already, which is fine).
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = reqwest::Client::builder()
            .connect_timeout(settings.timeouts.connect)
            .read_timeout(settings.timeouts.stream_idle)
            .build()
            .map_err(|e| LlmError::Config {
                provider,
                message: format!("cannot build the HTTP client: {e}"),
            })?;
        Ok(Transport {
            provider,
            client,
            retry: settings.retry.clone(),
            max_retry_after: settings.max_retry_after,
            timeouts: settings.timeouts.clone(),
        })
    }

    /// POSTs `body` as JSON, retrying per the policy; returns a response with a success status.
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &Value,
        streaming: bool,
    ) -> Result<reqwest::Response, LlmError> {
        let provider = self.provider;
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let started = std::time::Instant::now();
            let mut request = self.client.post(url).headers(headers.clone()).json(body);
            if !streaming {
                request = request.timeout(self.timeouts.request);
            }
            let (error, retry_after) = match request.send().await {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status().as_u16();
                    let retry_after = retry_after(response.headers());
                    let body = response.bytes().await.unwrap_or_default();
                    (http_error(provider, status, &body), retry_after)
                }
                Err(e) => (
                    self.request_error(url, &e, (!streaming).then_some(started)),
                    None,
                ),
            };
            if !(self.retry.retry_on)(&error) {
                return Err(error);
            }
            let Some(delay) = retry_delay(
                &self.retry,
                self.max_retry_after,
                attempt,
                &error,
                retry_after,
            ) else {
                return Err(if attempt > 1 {
                    LlmError::RetriesExhausted {
                        provider,
                        attempts: attempt,
                        last: Box::new(error),
                    }
                } else {
                    error
                });
            };
            tracing::warn!(
                target: "agent_llm",
                provider,
                attempt,
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                %error,
                "retrying llm request"
            );
            tokio::time::sleep(delay).await;
        }
    }

    /// POSTs and parses the JSON response body.
    pub(crate) async fn post_json(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &Value,
    ) -> Result<Value, LlmError> {
        let started = std::time::Instant::now();
        let response = self.post(url, headers, body, false).await?;
        let bytes = response
            .bytes()
            .await
            .map_err(|e| self.request_error(url, &e, Some(started)))?;
        serde_json::from_slice(&bytes).map_err(|e| LlmError::MalformedResponse {
            provider: self.provider,
            reason: format!("response body is not JSON: {e}"),
            bytes: snippet(&bytes),
        })
    }

    /// A transport error as an [`LlmError`]. `started` is when a whole (non-streaming) request
    /// began, `None` for a stream: a request has two limits (the whole request, and the wait
    /// between reads) and a timeout names the one that fired.
    pub(crate) fn request_error(
        &self,
        url: &str,
        e: &reqwest::Error,
        started: Option<std::time::Instant>,
    ) -> LlmError {
        if e.is_timeout() {
            let whole = self.timeouts.request;
            let timeout = match started {
                // Well before the whole request's limit: the wait between reads ran out.
                Some(started) if started.elapsed() + Duration::from_millis(100) < whole => {
                    self.timeouts.stream_idle.min(whole)
                }
                Some(_) => whole,
                None => self.timeouts.stream_idle,
            };
            LlmError::Timeout {
                provider: self.provider,
                url: url.to_owned(),
                timeout,
            }
        } else {
            LlmError::Connection {
                provider: self.provider,
                url: url.to_owned(),
                message: error_chain(e),
            }
        }
    }
}

/// The wait before the attempt after `attempt` (1-based) failed with `error`: the policy's
/// interval, or the server's `Retry-After` when that is longer; `None` when the policy gives
/// up or the server asks for more than `max_retry_after`.
fn retry_delay(
    policy: &RetryPolicy,
    max_retry_after: Duration,
    attempt: u32,
    error: &LlmError,
    retry_after: Option<Duration>,
) -> Option<Duration> {
    let wait = policy.next_wait(attempt, error)?;
    match retry_after {
        Some(asked) if asked > max_retry_after => None,
        Some(asked) => Some(asked.max(wait)),
        None => Some(wait),
    }
}

/// An error and its sources, joined with `: `.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

/// The delay a `Retry-After` (seconds) or `retry-after-ms` header asks for.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let parse = |name: &str| -> Option<f64> {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    if let Some(ms) = parse("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    parse("retry-after").map(Duration::from_secs_f64)
}

/// Maps a non-success status and its body to an error, recognising context-length and
/// content-filter errors of the providers here.
pub(crate) fn http_error(provider: &'static str, status: u16, body: &[u8]) -> LlmError {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let (message, code) = match &json {
        Some(v) => provider_message(v),
        None => (None, String::new()),
    };
    let message = message.unwrap_or_else(|| {
        if body.is_empty() {
            "(empty body)".to_owned()
        } else {
            snippet(body)
        }
    });
    let lower = message.to_lowercase();
    if code.contains("context_length")
        || code.contains("exceed_context")
        || lower.contains("context length")
        || lower.contains("context window")
        || lower.contains("context size")
        || lower.contains("prompt is too long")
        || lower.contains("maximum context")
    {
        return LlmError::ContextLengthExceeded { provider, message };
    }
    if code.contains("content_filter") || code.contains("content_policy") {
        return LlmError::ContentFiltered {
            provider,
            partial: String::new(),
        };
    }
    LlmError::Http {
        provider,
        status,
        message,
        retryable: matches!(status, 408 | 409 | 429) || status >= 500,
    }
}

/// The message and code/type of an error body: OpenAI / Anthropic `{"error": {"message",
/// "type", "code"}}`, Gemini `{"error": {"code": 400, "message", "status"}}`, Ollama
/// `{"error": "..."}`, or `{"message": "..."}`.
pub(crate) fn provider_message(v: &Value) -> (Option<String>, String) {
    let error = v.get("error");
    let message = error
        .and_then(|e| e.get("message"))
        .or_else(|| error.filter(|e| e.is_string()))
        .or_else(|| v.get("message"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let code = ["code", "type", "status"]
        .iter()
        .filter_map(|k| error.and_then(|e| e.get(*k)).and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    (message, code)
}

/// The SSE events of a response body.
pub(crate) fn sse_events(
    transport: &Transport,
    url: &str,
    response: reqwest::Response,
) -> impl Stream<Item = Result<WireEvent, LlmError>> + Send + 'static {
    let transport = transport.clone();
    let url = url.to_owned();
    let provider = transport.provider;
    response
        .bytes_stream()
        .eventsource()
        .map(move |item| match item {
            Ok(ev) => Ok(WireEvent {
                event: ev.event,
                data: ev.data,
            }),
            Err(EventStreamError::Transport(e)) => Err(transport.request_error(&url, &e, None)),
            Err(EventStreamError::Utf8(e)) => Err(LlmError::MalformedResponse {
                provider,
                reason: format!("SSE stream is not UTF-8: {e}"),
                bytes: snippet(e.as_bytes()),
            }),
            Err(EventStreamError::Parser(e)) => Err(LlmError::MalformedResponse {
                provider,
                reason: "SSE stream does not parse".into(),
                bytes: snippet(e.to_string().as_bytes()),
            }),
        })
}

/// The NDJSON lines of a response body (empty lines skipped).
pub(crate) fn ndjson_events(
    transport: &Transport,
    url: &str,
    response: reqwest::Response,
) -> impl Stream<Item = Result<WireEvent, LlmError>> + Send + 'static {
    let transport = transport.clone();
    let url = url.to_owned();
    let body = response.bytes_stream();
    struct State<S> {
        body: S,
        buffer: Vec<u8>,
        ended: bool,
    }
    futures::stream::unfold(
        State {
            body,
            buffer: Vec::new(),
            ended: false,
        },
        move |mut st| {
            let transport = transport.clone();
            let url = url.clone();
            async move {
                loop {
                    if let Some(pos) = st.buffer.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = st.buffer.drain(..=pos).collect();
                        match line_event(transport.provider, &line) {
                            Some(ev) => return Some((ev, st)),
                            None => continue,
                        }
                    }
                    if st.ended {
                        if st.buffer.is_empty() {
                            return None;
                        }
                        let line = std::mem::take(&mut st.buffer);
                        match line_event(transport.provider, &line) {
                            Some(ev) => return Some((ev, st)),
                            None => return None,
                        }
                    }
                    match st.body.next().await {
                        Some(Ok(bytes)) => st.buffer.extend_from_slice(&bytes),
                        Some(Err(e)) => {
                            st.ended = true;
                            st.buffer.clear();
                            return Some((Err(transport.request_error(&url, &e, None)), st));
                        }
                        None => st.ended = true,
                    }
                }
            }
        },
    )
}

fn line_event(provider: &'static str, line: &[u8]) -> Option<Result<WireEvent, LlmError>> {
    let text = match std::str::from_utf8(line) {
        Ok(t) => t.trim(),
        Err(e) => {
            return Some(Err(LlmError::MalformedResponse {
                provider,
                reason: format!("NDJSON line is not UTF-8: {e}"),
                bytes: snippet(line),
            }));
        }
    };
    if text.is_empty() {
        return None;
    }
    Some(Ok(WireEvent {
        event: String::new(),
        data: text.to_owned(),
    }))
}

/// Drives `decoder` over `events`; the stream ends after the first error.
pub(crate) fn decode_events<S, D>(events: S, decoder: D) -> ChatStream
where
    S: Stream<Item = Result<WireEvent, LlmError>> + Send + 'static,
    D: StreamDecoder,
{
    struct State<S, D> {
        events: std::pin::Pin<Box<S>>,
        decoder: D,
        finished: bool,
    }
    let state = State {
        events: Box::pin(events),
        decoder,
        finished: false,
    };
    let stream = futures::stream::unfold(state, |mut st| async move {
        if st.finished {
            return None;
        }
        loop {
            let batch = match st.events.next().await {
                Some(Ok(event)) => st.decoder.decode(event),
                Some(Err(e)) => Err(e),
                None => {
                    st.finished = true;
                    st.decoder.finish()
                }
            };
            match batch {
                Ok(chunks) if chunks.is_empty() && !st.finished => continue,
                Ok(chunks) => {
                    let items: Vec<Result<ChatChunk, LlmError>> =
                        chunks.into_iter().map(Ok).collect();
                    return Some((items, st));
                }
                Err(e) => {
                    st.finished = true;
                    return Some((vec![Err(e)], st));
                }
            }
        }
    });
    Box::pin(stream.flat_map(futures::stream::iter))
}

/// Parses an event's data as JSON, keeping the offending bytes when it is not.
pub(crate) fn event_json(provider: &'static str, data: &str) -> Result<Value, LlmError> {
    serde_json::from_str(data).map_err(|e| LlmError::MalformedResponse {
        provider,
        reason: format!("stream event is not JSON: {e}"),
        bytes: snippet(data.as_bytes()),
    })
}

/// An error a provider reported inside a stream (`{"error": ...}`).
pub(crate) fn stream_error(provider: &'static str, v: &Value) -> LlmError {
    let (message, code) = provider_message(v);
    let message = message.unwrap_or_else(|| v.to_string());
    let status = if code.contains("overloaded") {
        529
    } else if code.contains("rate_limit") {
        429
    } else if code.contains("invalid_request") {
        400
    } else {
        500
    };
    match http_error(provider, status, v.to_string().as_bytes()) {
        LlmError::Http { .. } => LlmError::Http {
            provider,
            status,
            message: format!("error inside the stream: {message}"),
            retryable: false,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn waits_follow_the_policy_and_honour_retry_after() {
        let policy = RetryPolicy::new()
            .max_attempts(4)
            .initial_interval(Duration::from_millis(100))
            .max_interval(Duration::from_millis(350))
            .jitter(false);
        let limit = Duration::from_secs(60);
        let busy = http_error("openai", 503, b"busy");
        let wait = |attempt, retry_after| retry_delay(&policy, limit, attempt, &busy, retry_after);
        assert_eq!(wait(1, None), Some(Duration::from_millis(100)));
        assert_eq!(wait(2, None), Some(Duration::from_millis(200)));
        assert_eq!(wait(3, None), Some(Duration::from_millis(350)));
        assert_eq!(wait(4, None), None, "the fourth attempt was the last");
        assert_eq!(
            wait(1, Some(Duration::from_secs(2))),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            wait(2, Some(Duration::from_millis(1))),
            Some(Duration::from_millis(200)),
            "a short Retry-After does not shorten the backoff"
        );
        assert_eq!(wait(1, Some(Duration::from_secs(3600))), None);
        let bad = http_error("openai", 400, b"bad");
        assert_eq!(retry_delay(&policy, limit, 1, &bad, None), None);
    }

    #[test]
    fn retry_after_headers() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut d = HeaderMap::new();
        d.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&d), None);
    }

    #[test]
    fn classifies_error_bodies() {
        let e = http_error(
            "openai",
            400,
            br#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#,
        );
        assert!(matches!(e, LlmError::ContextLengthExceeded { .. }), "{e}");
        let e = http_error(
            "anthropic",
            400,
            br#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        );
        assert!(matches!(e, LlmError::ContextLengthExceeded { .. }), "{e}");
        let e = http_error("ollama", 404, br#"{"error":"model 'x' not found"}"#);
        assert_eq!(e.to_string(), "ollama: HTTP 404: model 'x' not found");
        let e = http_error("openai", 503, b"upstream down");
        assert!(e.is_retryable());
        assert!(e.to_string().contains("upstream down"));
    }
}
