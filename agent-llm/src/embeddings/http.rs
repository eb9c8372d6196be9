//! Embeddings over HTTP: one [`HttpEmbeddings`] over the chat wires' connection settings
//! (base URL, key, environment variables, retries, timeouts, size limits: the chat models'
//! transport), with each wire's embeddings endpoint — OpenAI's `/embeddings` and Ollama's
//! `/api/embed` — as an [`EmbeddingsWire`]. Texts go in batches of at most
//! [`HttpEmbeddingsBuilder::batch_size`] per request.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use super::Embeddings;
use crate::error::{LlmError, snippet};
use crate::providers::http::{HttpSettings, RetryPolicy, Transport};
use crate::providers::ollama::OllamaWire;
use crate::providers::openai::OpenAiWire;
use crate::providers::origin::INSECURE_ENV;
use crate::providers::wire::Wire;
use crate::secret::SecretString;

/// A wire's embeddings endpoint: where, what to send, how to read the answer.
pub trait EmbeddingsWire: Wire + Default + Clone + std::fmt::Debug {
    /// The URL of the endpoint under `base_url`.
    fn embeddings_url(&self, base_url: &str) -> String;

    /// The request body.
    fn embeddings_body(&self, model: &str, texts: &[String], dims: Option<usize>) -> Value;

    /// The vectors of a response, in the order of the texts.
    fn embeddings_parse(&self, body: &Value) -> Result<Vec<Vec<f32>>, String>;

    /// The vectors' length of a known model, if any.
    fn known_dims(&self, _model: &str) -> Option<usize> {
        None
    }
}

fn floats(v: &Value) -> Result<Vec<f32>, String> {
    v.as_array()
        .ok_or("an embedding is not an array")?
        .iter()
        .map(|x| {
            x.as_f64()
                .map(|f| f as f32)
                .ok_or_else(|| format!("`{x}` is not a number"))
        })
        .collect()
}

impl EmbeddingsWire for OpenAiWire {
    fn embeddings_url(&self, base_url: &str) -> String {
        format!("{base_url}/embeddings")
    }

    fn embeddings_body(&self, model: &str, texts: &[String], dims: Option<usize>) -> Value {
        let mut body = json!({"model": model, "input": texts, "encoding_format": "float"});
        if let Some(dims) = dims {
            body["dimensions"] = json!(dims);
        }
        body
    }

    fn embeddings_parse(&self, body: &Value) -> Result<Vec<Vec<f32>>, String> {
        let data = body["data"].as_array().ok_or("no `data` array")?;
        let mut indexed = data
            .iter()
            .enumerate()
            .map(|(i, d)| {
                Ok((
                    d["index"].as_u64().map_or(i, |n| n as usize),
                    floats(&d["embedding"])?,
                ))
            })
            .collect::<Result<Vec<_>, String>>()?;
        indexed.sort_by_key(|(i, _)| *i);
        Ok(indexed.into_iter().map(|(_, v)| v).collect())
    }

    fn known_dims(&self, model: &str) -> Option<usize> {
        match model {
            "text-embedding-3-small" | "text-embedding-ada-002" => Some(1536),
            "text-embedding-3-large" => Some(3072),
            _ => None,
        }
    }
}

impl EmbeddingsWire for OllamaWire {
    fn embeddings_url(&self, base_url: &str) -> String {
        format!("{base_url}/api/embed")
    }

    fn embeddings_body(&self, model: &str, texts: &[String], dims: Option<usize>) -> Value {
        let mut body = json!({"model": model, "input": texts});
        if let Some(dims) = dims {
            body["dimensions"] = json!(dims);
        }
        body
    }

    fn embeddings_parse(&self, body: &Value) -> Result<Vec<Vec<f32>>, String> {
        body["embeddings"]
            .as_array()
            .ok_or("no `embeddings` array")?
            .iter()
            .map(floats)
            .collect()
    }
}

/// Embeddings from an HTTP server speaking wire `W`.
#[derive(Debug, Clone)]
pub struct HttpEmbeddings<W: EmbeddingsWire> {
    wire: W,
    model: String,
    url: String,
    headers: HeaderMap,
    transport: Transport,
    dims: Option<usize>,
    batch_size: usize,
}

/// OpenAI's (or a compatible server's) `/embeddings`.
pub type OpenAiEmbeddings = HttpEmbeddings<OpenAiWire>;

/// Ollama's `/api/embed`.
pub type OllamaEmbeddings = HttpEmbeddings<OllamaWire>;

/// Settings for an [`HttpEmbeddings`].
#[derive(Debug, Clone)]
pub struct HttpEmbeddingsBuilder<W: EmbeddingsWire> {
    wire: W,
    settings: HttpSettings,
    dims: Option<usize>,
    batch_size: usize,
}

impl<W: EmbeddingsWire> HttpEmbeddings<W> {
    /// A builder with nothing set.
    pub fn builder() -> HttpEmbeddingsBuilder<W> {
        HttpEmbeddingsBuilder {
            wire: W::default(),
            settings: HttpSettings::default(),
            dims: None,
            batch_size: 256,
        }
    }

    /// A builder filled from the wire's environment variables (key and base URL, as for its
    /// chat models; the model is not read from them).
    pub fn builder_from_env() -> HttpEmbeddingsBuilder<W> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let mut builder = Self::builder();
        builder.settings.api_key = var(W::ENV.api_key).map(SecretString::from);
        builder.settings.base_url = var(W::ENV.base_url);
        builder.settings.allow_insecure_http =
            var(INSECURE_ENV).is_some_and(|v| matches!(v.trim(), "1" | "true" | "yes"));
        builder
    }

    /// The model's name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint's URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl<W: EmbeddingsWire> HttpEmbeddingsBuilder<W> {
    /// The embedding model.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.settings.model = Some(model.into());
        self
    }

    /// The server's base URL (as for the wire's chat models: `https://api.openai.com/v1`,
    /// `http://127.0.0.1:11434`).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.settings.base_url = Some(url.into());
        self
    }

    /// The API key.
    pub fn api_key(mut self, key: impl Into<SecretString>) -> Self {
        self.settings.api_key = Some(key.into());
        self
    }

    /// Asks for vectors of `dims` dimensions (OpenAI's `dimensions`, for models that can cut
    /// their vectors).
    pub fn dimensions(mut self, dims: usize) -> Self {
        self.dims = Some(dims);
        self
    }

    /// At most `n` texts per request (256 by default).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.max(1);
        self
    }

    /// When and how often failed requests are retried.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.settings.retry = retry;
        self
    }

    /// The time limit of a whole request.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.settings.timeouts.request = timeout;
        self
    }

    /// Builds it: a model name is required.
    pub fn build(self) -> Result<HttpEmbeddings<W>, LlmError> {
        let model = self
            .settings
            .model
            .clone()
            .filter(|m| !m.trim().is_empty())
            .ok_or_else(|| LlmError::Config {
                provider: W::PROVIDER,
                message: "no embedding model name; call .model(..)".into(),
            })?;
        let configured = self
            .settings
            .base_url
            .as_deref()
            .unwrap_or(W::DEFAULT_BASE_URL);
        let base_url = self.wire.base_url(configured);
        let transport = Transport::new(W::PROVIDER, &self.settings, &base_url)?;
        let api_key = self.settings.api_key.as_ref().filter(|k| !k.is_empty());
        let headers = self.wire.headers(api_key)?;
        Ok(HttpEmbeddings {
            url: self.wire.embeddings_url(&base_url),
            dims: self.dims.or_else(|| self.wire.known_dims(&model)),
            wire: self.wire,
            model,
            headers,
            transport,
            batch_size: self.batch_size,
        })
    }
}

#[async_trait]
impl<W: EmbeddingsWire> Embeddings for HttpEmbeddings<W> {
    fn dims(&self) -> Option<usize> {
        self.dims
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        let request = self.embed_batches(texts);
        crate::observe::observe_embed(W::PROVIDER, &self.model, self.dims, texts.len(), request)
            .await
    }
}

impl<W: EmbeddingsWire> HttpEmbeddings<W> {
    /// The vectors of `texts`, asked for in batches of `batch_size`.
    async fn embed_batches(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.batch_size) {
            let body = self.wire.embeddings_body(&self.model, chunk, self.dims);
            let answer = self
                .transport
                .post_json(&self.url, &self.headers, &body)
                .await?;
            let malformed = |reason: String| LlmError::MalformedResponse {
                provider: W::PROVIDER,
                reason: format!("embeddings: {reason}"),
                bytes: snippet(answer.to_string().as_bytes()),
            };
            let vectors = self.wire.embeddings_parse(&answer).map_err(malformed)?;
            if vectors.len() != chunk.len() {
                return Err(malformed(format!(
                    "{} vectors for {} texts",
                    vectors.len(),
                    chunk.len()
                )));
            }
            out.extend(vectors);
        }
        Ok(out)
    }
}

#[async_trait]
impl<W: EmbeddingsWire> agent_core::store::Embed for HttpEmbeddings<W> {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, agent_core::BoxError> {
        Ok(self.embed_documents(texts).await?)
    }
}
