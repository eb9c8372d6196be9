//! What every wire shares below the [`Wire`](super::Wire) level: timeouts, sending with
//! retries (agent-core's [`RetryPolicy`] over [`LlmError`], plus `Retry-After`), mapping HTTP
//! failures to [`LlmError`], reading bodies under a size ceiling, and turning streamed bodies
//! into events (`framing`: SSE or NDJSON) that a [`StreamDecoder`] turns
//! into chunks, under an optional overall deadline.

use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio::time::Instant;

use crate::error::{LlmError, snippet};
use crate::providers::framing::{NdjsonParser, SseParser};
use crate::providers::origin::{check_key_transport, redirect_policy};
use crate::providers::wire::{Framing, StreamDecoder, WireEvent};
use crate::secret::SecretString;
use crate::stream::{ChatChunk, ChatStream};

/// How often a failed request to a model is sent again: agent-core's
/// [`RetryPolicy`](agent_core::RetryPolicy) over [`LlmError`], the vocabulary node and tool
/// retries use too.
///
/// By default: 3 attempts, waits of 0.5 s doubling (jittered) up to 128 s. Retried (see
/// [`LlmError::is_retryable`]) is only what the providers document as not processed, so a
/// retry cannot pay twice for one call: HTTP 429 (rate limited), 503 (unavailable) and 529
/// (Anthropic's overloaded), a connection that failed before the request was sent, and one
/// the server closed with no byte of answer (a kept-alive connection it had dropped). Not
/// 500, 502, 504, 409 or a timeout: the server may have run (and billed) the request; a
/// policy's own `retry_on` can opt into them. A wait is never shorter than the server's
/// `Retry-After` (or `retry-after-ms`); a `Retry-After` longer than the provider's
/// `max_retry_after` (builder setting, default 60 s) is not waited for: the error is returned
/// at once. An HTTP-date, negative or unparsable `Retry-After` is ignored.
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
    pub(crate) limits: Limits,
    pub(crate) allow_insecure_http: bool,
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
            limits: Limits::default(),
            allow_insecure_http: false,
        }
    }
}

/// Ceilings on what a provider may send back, so a broken or hostile server costs bounded
/// memory and time.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Limits {
    /// A whole (non-streamed) response body.
    pub(crate) max_body_bytes: usize,
    /// One SSE event or NDJSON line of a streamed response.
    pub(crate) max_event_bytes: usize,
    /// A whole streamed call, from sending the request to the last event.
    pub(crate) stream_deadline: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            stream_deadline: None,
        }
    }
}

/// The longest `Retry-After` a provider waits for unless told otherwise.
pub(crate) const DEFAULT_MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The largest non-streamed response body read unless told otherwise (16 MiB).
pub(crate) const DEFAULT_MAX_BODY_BYTES: usize = 16 << 20;

/// The largest SSE event or NDJSON line read unless told otherwise (1 MiB).
pub(crate) const DEFAULT_MAX_EVENT_BYTES: usize = 1 << 20;

/// How much of an error response's body is read: enough for any provider's error JSON.
const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

/// A reqwest client plus retry policy and error mapping for one provider.
#[derive(Clone, Debug)]
pub(crate) struct Transport {
    pub(crate) provider: &'static str,
    client: reqwest::Client,
    retry: RetryPolicy,
    max_retry_after: Duration,
    timeouts: Timeouts,
    limits: Limits,
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
        let has_key = settings.api_key.as_ref().is_some_and(|k| !k.is_empty());
        check_key_transport(provider, base_url, has_key, settings.allow_insecure_http)?;
        #[cfg(feature = "rustls")]
        {
            // reqwest's rustls comes without a crypto provider; install ring's once per
            // process (an error only says another one is installed already, which is fine).
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = reqwest::Client::builder()
            .connect_timeout(settings.timeouts.connect)
            .read_timeout(settings.timeouts.stream_idle)
            .redirect(redirect_policy())
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
            limits: settings.limits.clone(),
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
                Ok(response)
                    if response.status().is_redirection()
                        && response.headers().contains_key(reqwest::header::LOCATION) =>
                {
                    return Err(redirect_error(provider, &response));
                }
                Ok(mut response) => {
                    let status = response.status().as_u16();
                    let retry_after = retry_after(response.headers());
                    let limit = MAX_ERROR_BODY_BYTES.min(self.limits.max_body_bytes);
                    let body = read_at_most(&mut response, limit)
                        .await
                        .map(|(body, _cut)| body)
                        .unwrap_or_default();
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
        let mut response = self.post(url, headers, body, false).await?;
        let limit = self.limits.max_body_bytes;
        let too_large = || LlmError::ResponseTooLarge {
            provider: self.provider,
            what: "response body",
            limit,
            setting: "max_body_bytes",
        };
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(too_large());
        }
        let (bytes, cut) = read_at_most(&mut response, limit)
            .await
            .map_err(|e| self.request_error(url, &e, Some(started)))?;
        if cut {
            return Err(too_large());
        }
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
        // A connect error (refused, DNS, TLS handshake, connect timeout) means nothing was
        // sent, which makes it the one transport failure that is safe to retry.
        if e.is_connect() {
            return LlmError::Connection {
                provider: self.provider,
                url: url.to_owned(),
                message: error_chain(e),
                before_sending: true,
                unanswered: false,
            };
        }
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
                before_sending: false,
                unanswered: closed_unanswered(e),
            }
        }
    }

    /// POSTs a streamed request; the deadline of the whole call (when one is configured)
    /// covers the retries and waiting for the response too, and comes back for
    /// [`Transport::events`].
    pub(crate) async fn post_stream(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &Value,
    ) -> Result<(reqwest::Response, Option<Instant>), LlmError> {
        let Some(limit) = self.limits.stream_deadline else {
            return Ok((self.post(url, headers, body, true).await?, None));
        };
        let deadline = Instant::now().checked_add(limit);
        let post = self.post(url, headers, body, true);
        let response = match deadline {
            Some(at) => tokio::time::timeout_at(at, post)
                .await
                .map_err(|_| self.deadline_error(url))??,
            None => post.await?,
        };
        Ok((response, deadline))
    }

    /// The events of a streamed response body, framed as `framing` says, each SSE event or
    /// NDJSON line within the configured ceiling, the stream ending with an error once
    /// `deadline` passes.
    pub(crate) fn events(
        &self,
        url: &str,
        response: reqwest::Response,
        framing: Framing,
        deadline: Option<Instant>,
    ) -> Pin<Box<dyn Stream<Item = Result<WireEvent, LlmError>> + Send + 'static>> {
        let events = body_events(self, url, response, framing);
        match deadline {
            Some(at) => Box::pin(until_deadline(events, at, self.deadline_error(url))),
            None => Box::pin(events),
        }
    }

    fn deadline_error(&self, url: &str) -> LlmError {
        LlmError::StreamDeadline {
            provider: self.provider,
            url: url.to_owned(),
            deadline: self.limits.stream_deadline.unwrap_or_default(),
        }
    }
}

/// Reads at most `limit` bytes of a body; `true` when more was there (and left unread).
async fn read_at_most(
    response: &mut reqwest::Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            let room = limit - body.len();
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// A redirect that was not followed ([`redirect_policy`] follows only those within the
/// origin) as an error.
fn redirect_error(provider: &'static str, response: &reqwest::Response) -> LlmError {
    let status = response.status().as_u16();
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .map_or_else(String::new, |l| snippet(l.as_bytes()));
    LlmError::Http {
        provider,
        status,
        message: format!(
            "redirected to `{location}`; redirects to another origin are not followed, so the API key is not sent there; if that location is right, make it the base URL"
        ),
        retryable: false,
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
/// Whether the server closed the connection before a byte of its answer arrived (hyper's
/// "incomplete message" on a response not yet begun): the server did not answer the request.
fn closed_unanswered(e: &reqwest::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        if let Some(h) = inner.downcast_ref::<hyper::Error>() {
            return h.is_incomplete_message();
        }
        source = inner.source();
    }
    false
}

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

/// The delay a `Retry-After` (seconds) or `retry-after-ms` header asks for. A delay too long
/// for a [`Duration`] saturates (and is then longer than any `max_retry_after`); a negative,
/// NaN or non-numeric value is ignored.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let parse = |name: &str| -> Option<f64> {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| *v >= 0.0) // false for NaN
    };
    let secs = |s: f64| Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX);
    if let Some(ms) = parse("retry-after-ms") {
        return Some(secs(ms / 1000.0));
    }
    parse("retry-after").map(secs)
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
        retryable: is_retryable_status(status),
    }
}

/// The statuses the providers document as "not processed, send again": 429 rate limited, 503
/// unavailable (OpenAI, Gemini) and 529 overloaded (Anthropic). Other 5xx, 408 and 409 may
/// come after the model ran, so a retry could pay twice.
fn is_retryable_status(status: u16) -> bool {
    matches!(status, 429 | 503 | 529)
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

/// The events of a response body, cut as `framing` says.
fn body_events(
    transport: &Transport,
    url: &str,
    response: reqwest::Response,
    framing: Framing,
) -> impl Stream<Item = Result<WireEvent, LlmError>> + Send + 'static {
    enum Parser {
        Sse(SseParser),
        Ndjson(NdjsonParser),
    }
    impl Parser {
        fn push(&mut self, bytes: &[u8]) {
            match self {
                Parser::Sse(p) => p.push(bytes),
                Parser::Ndjson(p) => p.push(bytes),
            }
        }
        fn next_event(&mut self) -> Result<Option<WireEvent>, LlmError> {
            match self {
                Parser::Sse(p) => p.next_event(),
                Parser::Ndjson(p) => p.next_event(),
            }
        }
        fn finish(&mut self) -> Result<Option<WireEvent>, LlmError> {
            match self {
                Parser::Sse(p) => p.finish(),
                Parser::Ndjson(p) => p.finish(),
            }
        }
    }
    struct State<S> {
        body: S,
        parser: Parser,
        ended: bool,
        done: bool,
    }
    let provider = transport.provider;
    let max_event = transport.limits.max_event_bytes;
    let parser = match framing {
        Framing::Sse => Parser::Sse(SseParser::new(provider, max_event)),
        Framing::Ndjson => Parser::Ndjson(NdjsonParser::new(provider, max_event)),
    };
    let transport = transport.clone();
    let url = url.to_owned();
    let state = State {
        body: response.bytes_stream(),
        parser,
        ended: false,
        done: false,
    };
    futures::stream::unfold(state, move |mut st| {
        let transport = transport.clone();
        let url = url.clone();
        async move {
            if st.done {
                return None;
            }
            loop {
                match st.parser.next_event() {
                    Ok(Some(event)) => return Some((Ok(event), st)),
                    Ok(None) => {}
                    Err(e) => {
                        st.done = true;
                        return Some((Err(e), st));
                    }
                }
                if st.ended {
                    st.done = true;
                    return match st.parser.finish() {
                        Ok(Some(event)) => Some((Ok(event), st)),
                        Ok(None) => None,
                        Err(e) => Some((Err(e), st)),
                    };
                }
                match st.body.next().await {
                    Some(Ok(bytes)) => st.parser.push(&bytes),
                    Some(Err(e)) => {
                        st.done = true;
                        return Some((Err(transport.request_error(&url, &e, None)), st));
                    }
                    None => st.ended = true,
                }
            }
        }
    })
}

/// `events` until `at`; then `error`, and the end.
fn until_deadline<S>(
    events: S,
    at: Instant,
    error: LlmError,
) -> impl Stream<Item = Result<WireEvent, LlmError>> + Send + 'static
where
    S: Stream<Item = Result<WireEvent, LlmError>> + Send + 'static,
{
    let state = (Box::pin(events), Some(error));
    futures::stream::unfold(state, move |(mut events, error)| async move {
        let error = error?;
        match tokio::time::timeout_at(at, events.next()).await {
            Ok(Some(item)) => Some((item, (events, Some(error)))),
            Ok(None) => None,
            Err(_) => Some((Err(error), (events, None))),
        }
    })
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
