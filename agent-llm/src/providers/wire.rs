//! The [`Wire`] trait: everything that makes one HTTP provider different from another, and
//! nothing else.
//!
//! A wire says where requests go ([`Wire::url`]), how they authenticate ([`Wire::headers`]),
//! how messages and options become a request body ([`Wire::request_body`]), how a whole
//! response becomes a [`ChatResponse`] ([`Wire::parse_response`]) and how the events of a
//! streamed one become [`ChatChunk`]s ([`Wire::decoder`], framed as [`Framing`] says).
//! [`HttpChatModel`](super::HttpChatModel) does the rest once for every wire: retries,
//! timeouts, error mapping, tracing spans and usage events, stream framing. Adding a provider
//! is adding one wire module.

use std::fmt;

use serde_json::Value;

use crate::error::LlmError;
use crate::message::Message;
use crate::options::CallOptions;
use crate::secret::SecretString;
use crate::stream::{ChatChunk, ChatResponse};

/// The header types [`Wire::headers`] works with (reqwest's), for wires written outside
/// this crate.
pub use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

/// How the body of a streamed response is cut into events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// Server-sent events (`event:` / `data:` lines, blank line between events).
    Sse,
    /// One JSON document per line.
    Ndjson,
}

/// One event of a streamed response: an SSE event (its name and data) or an NDJSON line
/// (data only, no name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireEvent {
    /// The SSE event name (`event:`), empty when there is none.
    pub event: String,
    /// The event's data: the `data:` lines joined, or the NDJSON line.
    pub data: String,
}

/// Turns the events of one streamed response into chunks.
pub trait StreamDecoder: Send + 'static {
    /// The chunks one event carries (often none).
    fn decode(&mut self, event: WireEvent) -> Result<Vec<ChatChunk>, LlmError>;

    /// Called when the body ends: the last chunks, or an error when the response was not
    /// complete ([`LlmError::TruncatedStream`]).
    fn finish(&mut self) -> Result<Vec<ChatChunk>, LlmError>;
}

/// The environment variables a provider reads in `builder_from_env`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnvVars {
    /// The API key.
    pub api_key: &'static str,
    /// The base URL (or host).
    pub base_url: &'static str,
    /// The default model name.
    pub model: &'static str,
}

/// One provider's wire format. See the [module docs](self).
pub trait Wire: Clone + fmt::Debug + Send + Sync + 'static {
    /// Short provider name for logs, errors and `provider()` (`openai`, `anthropic`...).
    const PROVIDER: &'static str;
    /// The base URL when none is configured.
    const DEFAULT_BASE_URL: &'static str;
    /// Where `builder_from_env` looks.
    const ENV: EnvVars;
    /// How streamed responses are framed.
    const FRAMING: Framing;
    /// The decoder of one streamed response.
    type Decoder: StreamDecoder;

    /// The base URL as configured, made canonical (by default: without trailing slashes).
    fn base_url(&self, configured: &str) -> String {
        configured.trim_end_matches('/').to_owned()
    }

    /// The URL a request for `model` goes to.
    fn url(&self, base_url: &str, model: &str, stream: bool) -> String;

    /// The headers every request carries: authentication (mark secrets with
    /// [`sensitive_header`]) and versions.
    fn headers(&self, api_key: Option<&SecretString>) -> Result<HeaderMap, LlmError>;

    /// The JSON request body.
    fn request_body(
        &self,
        model: &str,
        messages: &[Message],
        options: &CallOptions,
        stream: bool,
    ) -> Value;

    /// A whole (non-streamed) response body as a reply; `model` is the model asked for,
    /// for replies that do not name theirs. Latency is filled in by the caller.
    fn parse_response(
        &self,
        body: &Value,
        model: &str,
        options: &CallOptions,
    ) -> Result<ChatResponse, LlmError>;

    /// A decoder for the stream of one request made with `options`.
    fn decoder(&self, options: &CallOptions) -> Self::Decoder;
}

/// A header value that holds a secret: checked for characters HTTP allows, and marked
/// sensitive so `Debug` output of the headers never shows it.
pub fn sensitive_header(provider: &'static str, value: &str) -> Result<HeaderValue, LlmError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| LlmError::Config {
        provider,
        message: "the API key contains characters not allowed in an HTTP header; check the key"
            .into(),
    })?;
    v.set_sensitive(true);
    Ok(v)
}

/// Headers with `Authorization: Bearer <key>` when there is a key (OpenAI's scheme, which
/// many servers share).
pub fn bearer_headers(
    provider: &'static str,
    api_key: Option<&SecretString>,
) -> Result<HeaderMap, LlmError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = api_key {
        headers.insert(
            reqwest::header::AUTHORIZATION,
            sensitive_header(provider, &format!("Bearer {}", key.expose_secret()))?,
        );
    }
    Ok(headers)
}
