//! Chat models for agent graphs: messages, the `add_messages` reducer, the [`ChatModel`] trait,
//! providers (OpenAI-compatible, Anthropic, Ollama, Gemini) and a [`ScriptedModel`] for tests.
//!
//! - [`Message`] is what a conversation (and a graph's state) holds: system, human, AI (with
//!   [`ToolCall`]s and [`Usage`]) and tool messages, plus [`Message::remove`] for deleting.
//! - [`add_messages`] merges a node's new messages into the conversation with LangGraph's
//!   semantics; use it as `#[reducer(agent_llm::add_messages)]`.
//! - [`ChatModel`] is object safe (`Arc<dyn ChatModel>`): `invoke` for a whole reply, `stream`
//!   for [`ChatChunk`]s, assembled by [`ChunkAggregator`]. [`ChatModelExt`] adds
//!   [`bind_tools`](ChatModelExt::bind_tools) and typed
//!   [`with_structured_output`](ChatModelExt::with_structured_output).
//! - [`OpenAiCompatible`], [`Anthropic`], [`Ollama`] and [`Gemini`] talk HTTP with retries
//!   ([`RetryPolicy`]), timeouts ([`Timeouts`]) and typed errors ([`LlmError`]); keys are
//!   [`SecretString`]s that never print, never follow a redirect to another origin and are
//!   not sent over plain HTTP to another machine unless allowed. Replies are read under
//!   ceilings (16 MiB a body, 1 MiB an SSE event or NDJSON line, by default) and streams may
//!   have an overall deadline. HTTPS needs the `rustls` feature. They are one
//!   [`HttpChatModel`] over different [`Wire`] formats; [`init_chat_model`] picks one from a
//!   `provider:model` string.
//! - [`trim_messages`] fits a conversation into a context window (LangChain's
//!   `trim_messages`: keep the system message and the latest turns within a token budget).
//! - Every call is traced (`tracing` span `llm_call`, event `llm call finished` with tokens
//!   and latency) and returns its [`Usage`] and latency in the [`ChatResponse`].
//!
//! # Example
//!
//! ```
//! use agent_llm::{add_messages, CallOptions, ChatModel, ChatModelExt, Message, Reply, ScriptedModel, ToolSpec};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), agent_llm::LlmError> {
//! let model = ScriptedModel::new([
//!     Reply::tool_call("add", json!({"a": 2, "b": 3})),
//!     Reply::text("2 + 3 = 5"),
//! ]);
//! let add = ToolSpec::new("add", "Adds two numbers", json!({
//!     "type": "object",
//!     "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
//!     "required": ["a", "b"],
//! }));
//! let model = model.bind_tools([add]);
//!
//! let mut messages = vec![Message::human("what is 2 + 3?")];
//! let reply = model.invoke(&messages, &CallOptions::default()).await?;
//! let call = reply.tool_calls()[0].clone();
//! add_messages(&mut messages, vec![reply.into(), Message::tool(call.id, "5")])?;
//!
//! let reply = model.invoke(&messages, &CallOptions::default()).await?;
//! assert_eq!(reply.text(), "2 + 3 = 5");
//! assert!(reply.usage.output_tokens > 0);
//! # Ok(())
//! # }
//! ```

pub mod embeddings;
mod error;
mod in_graph;
mod message;
mod model;
mod observe;
mod options;
pub mod providers;
mod reducer;
mod scripted;
mod secret;
mod spec;
mod stream;
mod structured;
mod trim;

pub use error::{LlmError, MessagesError};
pub use in_graph::{ChatModelNodeExt, invoke_in_node};
pub use message::{
    AiMessage, HumanMessage, Message, REMOVE_ALL_MESSAGES, RemoveMessage, SystemMessage, ToolCall,
    ToolMessage, Usage, text_of_blocks,
};
pub use model::{BoundModel, ChatModel, ChatModelExt};
pub use observe::{CAPTURE_CONTENT_ENV, capture_content, set_capture_content};
pub use options::{CallOptions, ResponseFormat, ToolChoice, ToolSpec, schema_for};
pub use providers::anthropic::{Anthropic, AnthropicBuilder};
pub use providers::gemini::{Gemini, GeminiBuilder};
pub use providers::http::{RetryPolicy, Timeouts};
pub use providers::ollama::{Ollama, OllamaBuilder};
pub use providers::openai::{OpenAiCompatible, OpenAiCompatibleBuilder};
pub use providers::{HttpChatModel, HttpChatModelBuilder, Wire};
pub use reducer::{add_messages, new_message_id};
pub use scripted::{Reply, ScriptedModel, ScriptedRequest};
pub use secret::SecretString;
pub use spec::{PROVIDERS, init_chat_model};
pub use stream::{
    ChatChunk, ChatResponse, ChatStream, ChunkAggregator, FinishReason, ToolCallChunk,
    collect_stream,
};
pub use structured::{StructuredModel, StructuredReply};
pub use trim::{
    TokenCounter, TrimMessages, TrimStrategy, count_tokens_approximately, trim_messages,
};

/// The crate README's example compiles and runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct CrateReadmeDoctests;
