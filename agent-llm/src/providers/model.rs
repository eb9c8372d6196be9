//! [`HttpChatModel`]: the one [`ChatModel`] over HTTP, generic over its [`Wire`] format, and
//! its builder. Every provider (`OpenAiCompatible`, `Anthropic`, `Ollama`, `Gemini`) is this
//! type with its wire; what they share (retries, timeouts, tracing spans and usage events,
//! stream framing) lives here once.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use reqwest::header::HeaderMap;
use serde_json::Value;
use tracing::Instrument;

use crate::error::LlmError;
use crate::message::Message;
use crate::model::ChatModel;
use crate::observe;
use crate::options::CallOptions;
use crate::providers::http::{HttpSettings, RetryPolicy, Timeouts, Transport, decode_events};
use crate::providers::origin::INSECURE_ENV;
use crate::providers::wire::Wire;
use crate::secret::SecretString;
use crate::stream::{ChatResponse, ChatStream};

/// A chat model behind an HTTP API that speaks the wire format `W`.
///
/// Use it through its aliases: [`OpenAiCompatible`](crate::OpenAiCompatible),
/// [`Anthropic`](crate::Anthropic), [`Ollama`](crate::Ollama), [`Gemini`](crate::Gemini).
/// Build one with `builder()` (settings by hand) or `builder_from_env()` / `from_env()` (the
/// provider's environment variables, see [`Wire::ENV`]).
#[derive(Clone, Debug)]
pub struct HttpChatModel<W: Wire> {
    wire: W,
    model: String,
    base_url: String,
    headers: HeaderMap,
    transport: Transport,
}

/// Builds an [`HttpChatModel`]: model name, base URL, key, retries and timeouts, plus the
/// wire's own settings (such as [`max_tokens`](HttpChatModelBuilder::max_tokens) for
/// Anthropic).
#[derive(Clone, Debug)]
pub struct HttpChatModelBuilder<W: Wire> {
    pub(crate) wire: W,
    settings: HttpSettings,
}

impl<W: Wire + Default> HttpChatModel<W> {
    /// A builder with no model, the provider's default base URL and no key.
    pub fn builder() -> HttpChatModelBuilder<W> {
        HttpChatModelBuilder {
            wire: W::default(),
            settings: HttpSettings::default(),
        }
    }

    /// A builder filled from the provider's environment variables ([`Wire::ENV`]: key, base
    /// URL, model; each optional). The builder's setters override them.
    pub fn builder_from_env() -> HttpChatModelBuilder<W> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let mut builder = Self::builder();
        builder.settings.api_key = var(W::ENV.api_key).map(SecretString::from);
        builder.settings.base_url = var(W::ENV.base_url);
        builder.settings.model = var(W::ENV.model);
        builder.settings.allow_insecure_http =
            var(INSECURE_ENV).is_some_and(|v| matches!(v.trim(), "1" | "true" | "yes"));
        builder
    }

    /// A model configured from the environment (see
    /// [`builder_from_env`](Self::builder_from_env)).
    pub fn from_env() -> Result<Self, LlmError> {
        Self::builder_from_env().build()
    }
}

impl<W: Wire> HttpChatModel<W> {
    /// The request body for `messages` and `options` (public for tests and debugging; it
    /// holds no key).
    pub fn request_body(&self, messages: &[Message], options: &CallOptions, stream: bool) -> Value {
        let model = options.model.as_deref().unwrap_or(&self.model);
        self.wire.request_body(model, messages, options, stream)
    }

    /// The URL requests for `model` go to.
    pub fn url(&self, model: &str, stream: bool) -> String {
        self.wire.url(&self.base_url, model, stream)
    }

    /// The wire format and its settings.
    pub fn wire(&self) -> &W {
        &self.wire
    }
}

impl<W: Wire> HttpChatModelBuilder<W> {
    /// Sets the model name.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.settings.model = Some(model.into());
        self
    }

    /// Sets the base URL of the API.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.settings.base_url = Some(url.into());
        self
    }

    /// Sets the API key.
    pub fn api_key(mut self, key: impl Into<SecretString>) -> Self {
        self.settings.api_key = Some(key.into());
        self
    }

    /// Sets the retry policy (see [`RetryPolicy`]).
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.settings.retry = retry;
        self
    }

    /// Sets the longest `Retry-After` the client waits for (default 60 s); a server asking
    /// for more gets its error returned at once.
    pub fn max_retry_after(mut self, limit: Duration) -> Self {
        self.settings.max_retry_after = limit;
        self
    }

    /// Sets all timeouts.
    pub fn timeouts(mut self, timeouts: Timeouts) -> Self {
        self.settings.timeouts = timeouts;
        self
    }

    /// Sets the timeout of a whole non-streamed request.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.settings.timeouts.request = timeout;
        self
    }

    /// Sets the largest non-streamed response body read (default 16 MiB); a larger one is
    /// [`LlmError::ResponseTooLarge`].
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.settings.limits.max_body_bytes = limit;
        self
    }

    /// Sets the largest SSE event or NDJSON line of a streamed response (default 1 MiB); a
    /// larger one ends the stream with [`LlmError::ResponseTooLarge`].
    pub fn max_event_bytes(mut self, limit: usize) -> Self {
        self.settings.limits.max_event_bytes = limit;
        self
    }

    /// Gives every streamed call an overall deadline, counted from sending the request
    /// (retries included); past it the stream ends with [`LlmError::StreamDeadline`]. None
    /// by default: a stream that keeps sending within `stream_idle` may run as long as it
    /// likes.
    pub fn stream_deadline(mut self, deadline: Duration) -> Self {
        self.settings.limits.stream_deadline = Some(deadline);
        self
    }

    /// Allows sending the API key over plain `http://` to a host that is not this machine
    /// (default: refused by `build`, as anyone on the path could read it). For a trusted
    /// network, such as a private link to a self-hosted server. Models built from the
    /// environment read `AGENT_LLM_ALLOW_INSECURE_HTTP=1`.
    pub fn allow_insecure_http(mut self, allow: bool) -> Self {
        self.settings.allow_insecure_http = allow;
        self
    }

    /// Builds the model. Fails without a model name, on a base URL that is not http(s), on
    /// a key that cannot be sent in a header, or on a key that would go over plain `http://`
    /// to another machine without [`allow_insecure_http`](Self::allow_insecure_http).
    pub fn build(self) -> Result<HttpChatModel<W>, LlmError> {
        let settings = self.settings;
        let model = settings
            .model
            .clone()
            .filter(|m| !m.trim().is_empty())
            .ok_or_else(|| LlmError::Config {
                provider: W::PROVIDER,
                message: format!("no model name; call .model(..) or set {}", W::ENV.model),
            })?;
        let configured = settings.base_url.as_deref().unwrap_or(W::DEFAULT_BASE_URL);
        let base_url = self.wire.base_url(configured);
        let transport = Transport::new(W::PROVIDER, &settings, &base_url)?;
        let api_key = settings.api_key.as_ref().filter(|k| !k.is_empty());
        let headers = self.wire.headers(api_key)?;
        Ok(HttpChatModel {
            wire: self.wire,
            model,
            base_url,
            headers,
            transport,
        })
    }
}

#[async_trait]
impl<W: Wire> ChatModel for HttpChatModel<W> {
    fn provider(&self) -> &'static str {
        W::PROVIDER
    }

    fn model_name(&self) -> &str {
        &self.model
    }

    async fn invoke(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<ChatResponse, LlmError> {
        let model = options.model.as_deref().unwrap_or(&self.model);
        let body = self.wire.request_body(model, messages, options, false);
        let url = self.url(model, false);
        let call = observe::Call {
            provider: W::PROVIDER,
            model,
            messages,
            options,
        };
        observe::observe_invoke(call, async {
            let started = Instant::now();
            let json = self.transport.post_json(&url, &self.headers, &body).await?;
            let mut response = self.wire.parse_response(&json, model, options)?;
            response.latency = started.elapsed();
            Ok(response)
        })
        .await
    }

    async fn stream(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<ChatStream, LlmError> {
        let model = options.model.clone().unwrap_or_else(|| self.model.clone());
        let body = self.wire.request_body(&model, messages, options, true);
        let url = self.url(&model, true);
        let call = observe::Call {
            provider: W::PROVIDER,
            model: &model,
            messages,
            options,
        };
        let span = observe::call_span(&call, true);
        let started = Instant::now();
        let sent = self
            .transport
            .post_stream(&url, &self.headers, &body)
            .instrument(span.clone())
            .await;
        let (response, deadline) = match sent {
            Ok(sent) => sent,
            Err(e) => {
                observe::record_error(&span, &call, &e);
                return Err(e);
            }
        };
        let events = self.transport.events(&url, response, W::FRAMING, deadline);
        let stream = decode_events(events, self.wire.decoder(options));
        Ok(observe::observe_stream(&call, span, started, stream))
    }
}
