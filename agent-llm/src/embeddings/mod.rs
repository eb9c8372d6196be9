//! Embeddings: texts to vectors, for the store's semantic search (LangChain's `Embeddings`).
//!
//! [`Embeddings`] has `embed_documents` and `embed_query`; every implementation is also
//! agent-core's [`Embed`] (through [`to_embed`] for a trait object),
//! so a store's [`IndexConfig`] takes it as it is ([`index_config`] builds one). Providers:
//! [`OpenAiEmbeddings`] (`/v1/embeddings` of OpenAI or any compatible server: llama-server,
//! vLLM...), [`OllamaEmbeddings`] (`/api/embed`) and [`OfflineEmbeddings`] (hashed character
//! n-grams: deterministic, no model, no network; lexical, not semantic). [`init_embeddings`]
//! picks one from a `provider:model` string.
//!
//! ```
//! use agent_core::store::{ns, InMemoryStore, SearchOp, Store};
//! use agent_llm::embeddings::{index_config, init_embeddings};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let embeddings = init_embeddings("offline")?;
//! let store = InMemoryStore::new().with_index(index_config(embeddings, ["text"]).await?);
//! let notes = ns(["notes"]);
//! store.put(&notes, "1", json!({"text": "the train to Lyon leaves at nine"})).await?;
//! store.put(&notes, "2", json!({"text": "buy oat milk and bread"})).await?;
//! let found = store.search(SearchOp::new(notes).query("when does my train leave?").limit(1)).await?;
//! assert_eq!(found[0].key, "1");
//! # Ok(()) }
//! ```

mod http;
mod offline;

use std::fmt;
use std::sync::Arc;

use agent_core::BoxError;
use agent_core::store::{Embed, IndexConfig};
use async_trait::async_trait;

pub use http::{
    EmbeddingsWire, HttpEmbeddings, HttpEmbeddingsBuilder, OllamaEmbeddings, OpenAiEmbeddings,
};
pub use offline::OfflineEmbeddings;

use crate::error::LlmError;

/// Turns texts into vectors (LangChain's `Embeddings`).
#[async_trait]
pub trait Embeddings: Send + Sync + fmt::Debug {
    /// The vectors' length, when known without asking the model.
    fn dims(&self) -> Option<usize>;

    /// The vectors of documents to store, one per text, in order.
    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError>;

    /// The vector of a query.
    async fn embed_query(&self, text: &str) -> Result<Vec<f32>, LlmError> {
        let mut vectors = self.embed_documents(&[text.to_owned()]).await?;
        vectors.pop().ok_or_else(|| LlmError::MalformedResponse {
            provider: "embeddings",
            reason: "no vector for the query".into(),
            bytes: String::new(),
        })
    }
}

/// An [`Embeddings`] trait object as agent-core's [`Embed`].
pub fn to_embed(embeddings: Arc<dyn Embeddings>) -> Arc<dyn Embed> {
    Arc::new(AsEmbed(embeddings))
}

#[derive(Debug)]
struct AsEmbed(Arc<dyn Embeddings>);

#[async_trait]
impl Embed for AsEmbed {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, BoxError> {
        Ok(self.0.embed_documents(texts).await?)
    }
}

/// A store index embedding `fields` with `embeddings`; its dimensions are the embeddings'
/// own, or those of one vector asked for when they are not known (Ollama's models).
pub async fn index_config<I, S>(
    embeddings: Arc<dyn Embeddings>,
    fields: I,
) -> Result<IndexConfig, LlmError>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let dims = match embeddings.dims() {
        Some(dims) => dims,
        None => embeddings.embed_query("dimensions").await?.len(),
    };
    Ok(IndexConfig::new(dims, to_embed(embeddings)).fields(fields))
}

/// The embedding providers [`init_embeddings`] knows, with what configures them.
pub const EMBEDDING_PROVIDERS: &[(&str, &str)] = &[
    (
        "openai",
        "OpenAI or any server with /v1/embeddings: OPENAI_API_KEY, OPENAI_BASE_URL",
    ),
    ("ollama", "a local Ollama server (/api/embed): OLLAMA_HOST"),
    (
        "offline",
        "hashed character n-grams, no model or network (lexical similarity); `offline:<dims>`",
    ),
];

/// Embeddings from `provider:model`: `openai:text-embedding-3-small`,
/// `ollama:nomic-embed-text`, or `offline` (`offline:512` for 512 dimensions, 256 by
/// default). Keys and base URLs come from the environment as for chat models.
///
/// ```
/// let offline = agent_llm::embeddings::init_embeddings("offline:64").unwrap();
/// assert_eq!(offline.dims(), Some(64));
/// assert!(agent_llm::embeddings::init_embeddings("cohere:embed").is_err());
/// ```
pub fn init_embeddings(spec: &str) -> Result<Arc<dyn Embeddings>, LlmError> {
    let spec = spec.trim();
    let (provider, model) = spec.split_once(':').unwrap_or((spec, ""));
    let model = model.trim();
    let bad = |message: String| LlmError::Config {
        provider: "init_embeddings",
        message: format!("`{spec}`: {message}"),
    };
    if provider == "offline" {
        let dims = match model {
            "" => OfflineEmbeddings::DEFAULT_DIMS,
            n => n
                .parse()
                .ok()
                .filter(|&d| d > 0)
                .ok_or_else(|| bad(format!("`{n}` is not a number of dimensions")))?,
        };
        return Ok(Arc::new(OfflineEmbeddings::new(dims)));
    }
    if model.is_empty() {
        return Err(bad(
            "expected `provider:model`, e.g. `openai:text-embedding-3-small`, or `offline`".into(),
        ));
    }
    Ok(match provider {
        "openai" => Arc::new(OpenAiEmbeddings::builder_from_env().model(model).build()?),
        "ollama" => Arc::new(OllamaEmbeddings::builder_from_env().model(model).build()?),
        other => {
            let known: Vec<&str> = EMBEDDING_PROVIDERS.iter().map(|(n, _)| *n).collect();
            return Err(bad(format!(
                "unknown provider `{other}`; known providers: {}",
                known.join(", ")
            )));
        }
    })
}
