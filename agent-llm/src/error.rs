//! The crate's one error type, [`LlmError`].
//!
//! Every variant says what went wrong, where (which provider, which message or tool call) and,
//! where there is one, what to do about it. Provider payloads are kept (HTTP status and the
//! provider's own message, the offending bytes of a malformed body) so a failure can be
//! diagnosed from the error alone. API keys never reach an error: requests carry them in
//! sensitive headers only, and nothing here formats a request.

use std::time::Duration;

/// The error [`add_messages`](crate::add_messages) returns.
///
/// An alias of [`LlmError`] so the crate keeps a single error enum; the reducer only ever
/// returns [`LlmError::UnknownMessageId`].
pub type MessagesError = LlmError;

/// How many bytes of an offending payload an error keeps.
pub(crate) const MAX_SNIPPET: usize = 2048;

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// `add_messages` was asked to remove a message id that is not in the list.
    #[error(
        "cannot remove message `{id}`: no message with that id is in the list; remove only ids read from the current state"
    )]
    UnknownMessageId {
        /// The id that was asked for.
        id: String,
    },

    /// A provider was configured wrongly (missing model, bad URL, missing TLS support...).
    #[error("{provider}: invalid configuration: {message}")]
    Config {
        /// Provider name (`openai`, `anthropic`, `ollama`, `scripted`).
        provider: &'static str,
        /// What is wrong and how to fix it.
        message: String,
    },

    /// The provider answered with a non-success HTTP status.
    #[error(
        "{provider}: HTTP {status}: {message}{}",
        if *.retryable { " (retryable; retries exhausted or disabled)" } else { "" }
    )]
    Http {
        /// Provider name.
        provider: &'static str,
        /// HTTP status code.
        status: u16,
        /// The provider's own error message (or the body when it had none).
        message: String,
        /// Whether the status is one the provider documents as safe to send again (429
        /// rate limited, 503 unavailable, 529 overloaded): the request was not processed.
        retryable: bool,
    },

    /// The request could not be sent or its response could not be read (connection refused,
    /// reset, DNS...).
    #[error(
        "{provider}: connection to {url} failed{}: {message}; check that the server is running and the base URL is right",
        if *.before_sending { " before the request was sent" } else if *.unanswered { " (closed with no answer)" } else { "" }
    )]
    Connection {
        /// Provider name.
        provider: &'static str,
        /// The URL (never carries credentials).
        url: String,
        /// What the HTTP client reported.
        message: String,
        /// Whether the connection failed while being made (refused, DNS, TLS handshake,
        /// connect timeout), so no byte of the request left: only then is it retried, as a
        /// request that may have reached the server may be paid for twice.
        before_sending: bool,
        /// Whether the server closed the connection without a byte of answer. Most often a
        /// kept-alive connection the server gave up just as the request went out on it
        /// (llama.cpp's server closes one after each streamed response, without saying
        /// so); retried, as the official OpenAI and Anthropic clients do.
        unanswered: bool,
    },

    /// The provider did not answer (or stopped sending) within the configured time.
    #[error(
        "{provider}: no answer from {url} within {timeout:?}; raise the timeout or check the server"
    )]
    Timeout {
        /// Provider name.
        provider: &'static str,
        /// The URL.
        url: String,
        /// The limit that was hit.
        timeout: Duration,
    },

    /// A streamed call did not finish within its overall deadline (the builder's
    /// `stream_deadline`), counted from sending the request.
    #[error(
        "{provider}: the streamed reply from {url} did not finish within its deadline of {deadline:?}; raise `stream_deadline` on the builder or ask for a shorter reply"
    )]
    StreamDeadline {
        /// Provider name.
        provider: &'static str,
        /// The URL.
        url: String,
        /// The deadline that passed.
        deadline: Duration,
    },

    /// A response body, SSE event or NDJSON line is larger than the configured ceiling; the
    /// rest of it was not read.
    #[error(
        "{provider}: the {what} is larger than the limit of {limit} bytes; if the provider is trusted and the reply is meant to be this large, raise `{setting}` on the builder"
    )]
    ResponseTooLarge {
        /// Provider name.
        provider: &'static str,
        /// What was too large: `response body`, `SSE event` or `NDJSON line`.
        what: &'static str,
        /// The ceiling in bytes.
        limit: usize,
        /// The builder setting that raises it.
        setting: &'static str,
    },

    /// A response body, SSE event or NDJSON line could not be parsed.
    #[error("{provider}: malformed response ({reason}); offending bytes: {bytes}")]
    MalformedResponse {
        /// Provider name.
        provider: &'static str,
        /// What the parser said.
        reason: String,
        /// The offending bytes (lossy UTF-8, at most 2 KiB).
        bytes: String,
    },

    /// A streamed response ended before the provider said it was complete.
    #[error(
        "{provider}: the stream ended before the response was complete ({detail}); the connection was probably cut, retry the call"
    )]
    TruncatedStream {
        /// Provider name.
        provider: &'static str,
        /// What was missing.
        detail: String,
    },

    /// The prompt does not fit the model's context window.
    #[error(
        "{provider}: context length exceeded: {message}; shorten or summarise the conversation"
    )]
    ContextLengthExceeded {
        /// Provider name.
        provider: &'static str,
        /// The provider's message.
        message: String,
    },

    /// The model refused to answer.
    #[error("{provider}: the model refused: {message}")]
    Refusal {
        /// Provider name.
        provider: &'static str,
        /// The refusal text the model gave.
        message: String,
    },

    /// The provider's content filter stopped the response.
    #[error("{provider}: the response was stopped by the content filter{}", if .partial.is_empty() { String::new() } else { format!(" after: {}", .partial) })]
    ContentFiltered {
        /// Provider name.
        provider: &'static str,
        /// Text generated before the filter stopped it.
        partial: String,
    },

    /// A tool call's arguments are not valid JSON.
    #[error(
        "tool call `{call_id}` to `{tool}` has arguments that are not valid JSON ({reason}): {arguments}"
    )]
    InvalidToolArguments {
        /// The tool's name.
        tool: String,
        /// The tool call id.
        call_id: String,
        /// The raw arguments text.
        arguments: String,
        /// The JSON parser's message.
        reason: String,
    },

    /// Structured output did not match its type, even after one corrective retry.
    #[error(
        "structured output for `{type_name}` failed its schema after {attempts} attempts: {reason}; last reply: {raw}"
    )]
    StructuredOutput {
        /// The Rust type that was asked for.
        type_name: &'static str,
        /// How many replies were tried.
        attempts: u32,
        /// Why the last reply did not fit.
        reason: String,
        /// The last reply's text.
        raw: String,
        /// Tokens of all the attempts (they were spent even though nothing parsed).
        usage: crate::message::Usage,
    },

    /// A retryable failure kept happening until the retry budget ran out.
    #[error("{provider}: gave up after {attempts} attempts: {last}")]
    RetriesExhausted {
        /// Provider name.
        provider: &'static str,
        /// How many requests were sent.
        attempts: u32,
        /// The last failure.
        last: Box<LlmError>,
    },

    /// A [`ScriptedModel`](crate::ScriptedModel) was called more times than it has replies.
    #[error(
        "scripted model: call {call} has no reply (the script holds {len}); add replies to the script or use ScriptedModel::from_fn"
    )]
    ScriptExhausted {
        /// 1-based number of the call that found no reply.
        call: usize,
        /// How many replies the script had.
        len: usize,
    },

    /// A failure a test or a [`ScriptedModel`](crate::ScriptedModel) script injected.
    #[error("{provider}: {message}")]
    Other {
        /// Provider name.
        provider: &'static str,
        /// What happened.
        message: String,
    },
}

impl LlmError {
    /// Whether sending the same request again is safe and may succeed: what the providers
    /// document as not processed (HTTP 429, 503, 529), a connection that failed before
    /// the request was sent, and one the server closed with no answer at all. Not 500, 409,
    /// a timeout or a connection lost mid-answer: the server may have done the work (and
    /// billed it) already.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Http { retryable, .. } => *retryable,
            LlmError::Connection {
                before_sending,
                unanswered,
                ..
            } => *before_sending || *unanswered,
            _ => false,
        }
    }

    /// The HTTP status behind this error, looking through [`LlmError::RetriesExhausted`].
    pub fn status(&self) -> Option<u16> {
        match self {
            LlmError::Http { status, .. } => Some(*status),
            LlmError::RetriesExhausted { last, .. } => last.status(),
            _ => None,
        }
    }
}

/// A model call is retried by default when [`LlmError::is_retryable`] says so.
impl agent_core::Retryable for LlmError {
    fn retry_by_default(&self) -> bool {
        self.is_retryable()
    }
}

/// Lossy UTF-8 of at most [`MAX_SNIPPET`] bytes, for error messages.
pub(crate) fn snippet(bytes: &[u8]) -> String {
    let cut = bytes.len().min(MAX_SNIPPET);
    let mut s = String::from_utf8_lossy(&bytes[..cut]).into_owned();
    if bytes.len() > cut {
        s.push_str("...");
    }
    s
}
