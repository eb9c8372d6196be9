//! The [`ChatModel`] trait every provider implements, and [`ChatModelExt`], the generic helpers
//! on top of it (binding tools, structured output) that cannot live on a `dyn` trait.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::error::LlmError;
use crate::message::Message;
use crate::options::{CallOptions, ToolChoice, ToolSpec};
use crate::stream::{ChatResponse, ChatStream, ChunkAggregator};
use crate::structured::StructuredModel;

/// A chat model: messages in, an AI reply out, whole or streamed.
///
/// Object safe: store models as `Arc<dyn ChatModel>`. `Arc`, `Box` and references of a model
/// are models too.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// Short provider name for logs and errors (`openai`, `anthropic`, `ollama`, `scripted`).
    fn provider(&self) -> &'static str;

    /// The model name requests use by default.
    fn model_name(&self) -> &str;

    /// Tags every call of this model carries besides its own [`CallOptions::tags`]
    /// (LangChain's `model.with_config(tags=[...])`): a model made with
    /// [`ChatModelExt::bind`] over options with tags has them, so
    /// `model.bind(CallOptions::new().nostream())` is a model whose calls inside a graph
    /// node never stream as chat messages. None by default.
    fn tags(&self) -> Vec<String> {
        Vec::new()
    }

    /// Sends `messages` and waits for the whole reply.
    async fn invoke(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<ChatResponse, LlmError>;

    /// Sends `messages` and streams the reply. Errors before the first byte (HTTP status,
    /// connection, after retries) are returned here; later ones end the stream.
    async fn stream(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<ChatStream, LlmError>;

    /// Streams the reply and assembles it; the same result as [`invoke`](Self::invoke)
    /// through the streaming endpoint.
    async fn stream_collect(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let mut stream = self.stream(messages, options).await?;
        let mut aggregator = ChunkAggregator::new(self.provider()).started_at(started);
        while let Some(chunk) = stream.next().await {
            aggregator.push(&chunk?);
        }
        aggregator.finish()
    }
}

macro_rules! forward_chat_model {
    ($($ty:ty),*) => {$(
        #[async_trait]
        impl<M: ChatModel + ?Sized> ChatModel for $ty {
            fn provider(&self) -> &'static str {
                (**self).provider()
            }
            fn model_name(&self) -> &str {
                (**self).model_name()
            }

            fn tags(&self) -> Vec<String> {
                (**self).tags()
            }
            async fn invoke(
                &self,
                messages: &[Message],
                options: &CallOptions,
            ) -> Result<ChatResponse, LlmError> {
                (**self).invoke(messages, options).await
            }
            async fn stream(
                &self,
                messages: &[Message],
                options: &CallOptions,
            ) -> Result<ChatStream, LlmError> {
                (**self).stream(messages, options).await
            }
        }
    )*};
}

forward_chat_model!(Arc<M>, Box<M>, &M);

/// Helpers for every [`ChatModel`], including `Arc<dyn ChatModel>`.
pub trait ChatModelExt: ChatModel {
    /// This model with `tools` always offered (tool choice: auto; change it with
    /// [`BoundModel::tool_choice`]). LangChain's `bind_tools`.
    fn bind_tools(self, tools: impl IntoIterator<Item = ToolSpec>) -> BoundModel<Self>
    where
        Self: Sized,
    {
        BoundModel {
            inner: self,
            options: CallOptions::default().tools(tools),
        }
    }

    /// This model with `options` laid under every call's own options.
    fn bind(self, options: CallOptions) -> BoundModel<Self>
    where
        Self: Sized,
    {
        BoundModel {
            inner: self,
            options,
        }
    }

    /// This model answering with a `T`: the provider is asked for JSON matching `T`'s schema,
    /// the reply is parsed, and a reply that does not parse gets one corrective retry.
    fn with_structured_output<T: JsonSchema + DeserializeOwned>(self) -> StructuredModel<Self, T>
    where
        Self: Sized,
    {
        StructuredModel::new(self)
    }
}

impl<M: ChatModel + ?Sized> ChatModelExt for M {}

/// A model with call options (usually tools) bound to it; see [`ChatModelExt::bind_tools`].
#[derive(Clone, Debug)]
pub struct BoundModel<M> {
    inner: M,
    options: CallOptions,
}

impl<M> BoundModel<M> {
    /// Sets the tool choice (auto, none, required, or a named tool).
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.options.tool_choice = Some(choice);
        self
    }

    /// Allows or forbids several tool calls in one reply.
    pub fn parallel_tool_calls(mut self, allow: bool) -> Self {
        self.options.parallel_tool_calls = Some(allow);
        self
    }

    /// The bound options.
    pub fn options(&self) -> &CallOptions {
        &self.options
    }

    /// The wrapped model.
    pub fn inner(&self) -> &M {
        &self.inner
    }
}

#[async_trait]
impl<M: ChatModel> ChatModel for BoundModel<M> {
    fn provider(&self) -> &'static str {
        self.inner.provider()
    }

    fn model_name(&self) -> &str {
        self.inner.model_name()
    }

    fn tags(&self) -> Vec<String> {
        let mut tags = self.inner.tags();
        for tag in &self.options.tags {
            if !tags.contains(tag) {
                tags.push(tag.clone());
            }
        }
        tags
    }

    async fn invoke(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<ChatResponse, LlmError> {
        self.inner
            .invoke(messages, &self.options.merged(options))
            .await
    }

    async fn stream(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<ChatStream, LlmError> {
        self.inner
            .stream(messages, &self.options.merged(options))
            .await
    }
}
