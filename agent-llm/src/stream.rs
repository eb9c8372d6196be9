//! Streamed replies: the chunks a [`ChatModel::stream`](crate::ChatModel::stream) yields and
//! the [`ChunkAggregator`] that assembles them (text, tool-call fragments, usage) into the
//! same [`ChatResponse`] `invoke` returns.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::LlmError;
use crate::message::{AiMessage, Message, ToolCall, Usage};

/// A stream of reply chunks; it ends after the reply is complete, or with an error.
pub type ChatStream = Pin<Box<dyn Stream<Item = Result<ChatChunk, LlmError>> + Send + 'static>>;

/// One piece of a streamed reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatChunk {
    /// The provider's response id and model, when it sends them (first).
    Start {
        /// Response id (becomes the AI message id).
        id: Option<String>,
        /// The model that answers.
        model: Option<String>,
    },
    /// A piece of text.
    Text {
        /// The text.
        text: String,
    },
    /// A piece of the model's reasoning (kept in the message's `extra.reasoning_content`).
    Reasoning {
        /// The text.
        text: String,
    },
    /// A piece of a tool call: calls are keyed by `index`; `id` and `name` come once,
    /// `args` fragments are concatenated.
    ToolCall(ToolCallChunk),
    /// Token usage of the whole reply (the last one received wins).
    Usage {
        /// The usage.
        usage: Usage,
    },
    /// Why the reply ended; the reply is complete once this arrived (a usage chunk may follow).
    Finish {
        /// The reason.
        reason: FinishReason,
    },
}

/// A piece of a tool call in a stream.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCallChunk {
    /// Which call of the reply this belongs to.
    pub index: usize,
    /// The call id (usually in the first piece only).
    pub id: Option<String>,
    /// The tool name (usually in the first piece only).
    pub name: Option<String>,
    /// A fragment of the JSON arguments text.
    pub args: String,
}

/// Why a reply ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model finished its answer (or hit a stop sequence).
    #[default]
    Stop,
    /// The token limit cut the answer.
    Length,
    /// The model asks for tool calls.
    ToolCalls,
    /// A content filter stopped the answer.
    ContentFilter,
    /// The model refused.
    Refusal,
    /// Anything else, as the provider spelled it.
    Other(String),
}

/// A complete reply: the AI message plus what the call cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The reply (its `usage` is set too).
    pub message: AiMessage,
    /// Tokens in and out.
    pub usage: Usage,
    /// Why the reply ended.
    pub finish_reason: FinishReason,
    /// The model that answered.
    pub model: String,
    /// Wall time from sending the request to the end of the reply.
    pub latency: Duration,
}

impl ChatResponse {
    /// A reply: `message` (its usage set to `usage`), why it ended and the model that
    /// answered. Latency starts at zero; whoever times the call sets it.
    pub fn new(
        message: AiMessage,
        usage: Usage,
        finish_reason: FinishReason,
        model: impl Into<String>,
    ) -> Self {
        ChatResponse {
            message: AiMessage {
                usage: Some(usage),
                ..message
            },
            usage,
            finish_reason,
            model: model.into(),
            latency: Duration::ZERO,
        }
    }

    /// The reply's text.
    pub fn text(&self) -> &str {
        &self.message.content
    }

    /// The reply's tool calls.
    pub fn tool_calls(&self) -> &[ToolCall] {
        &self.message.tool_calls
    }

    /// The reply as a [`Message`], ready for [`add_messages`](crate::add_messages).
    pub fn into_message(self) -> Message {
        Message::Ai(self.message)
    }
}

impl From<ChatResponse> for Message {
    fn from(r: ChatResponse) -> Self {
        r.into_message()
    }
}

#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: Option<String>,
    args: String,
}

/// Assembles [`ChatChunk`]s into a [`ChatResponse`].
///
/// ```
/// use agent_llm::{ChatChunk, ChunkAggregator, FinishReason, ToolCallChunk};
///
/// let mut agg = ChunkAggregator::new("example");
/// agg.push(&ChatChunk::Text { text: "Hel".into() });
/// agg.push(&ChatChunk::Text { text: "lo".into() });
/// agg.push(&ChatChunk::ToolCall(ToolCallChunk { index: 0, id: Some("c1".into()), name: Some("echo".into()), args: "{\"x\":".into() }));
/// agg.push(&ChatChunk::ToolCall(ToolCallChunk { index: 0, args: "1}".into(), ..Default::default() }));
/// agg.push(&ChatChunk::Finish { reason: FinishReason::ToolCalls });
/// let response = agg.finish()?;
/// assert_eq!(response.text(), "Hello");
/// assert_eq!(response.tool_calls()[0].args, serde_json::json!({"x": 1}));
/// # Ok::<(), agent_llm::LlmError>(())
/// ```
#[derive(Debug)]
pub struct ChunkAggregator {
    provider: &'static str,
    started: Instant,
    id: Option<String>,
    model: Option<String>,
    text: String,
    reasoning: String,
    calls: BTreeMap<usize, PartialCall>,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
}

impl ChunkAggregator {
    /// An empty aggregator; `provider` names the source in errors. Latency counts from here.
    pub fn new(provider: &'static str) -> Self {
        ChunkAggregator {
            provider,
            started: Instant::now(),
            id: None,
            model: None,
            text: String::new(),
            reasoning: String::new(),
            calls: BTreeMap::new(),
            usage: None,
            finish: None,
        }
    }

    /// Counts latency from `started` instead of from construction.
    pub fn started_at(mut self, started: Instant) -> Self {
        self.started = started;
        self
    }

    /// Adds one chunk.
    pub fn push(&mut self, chunk: &ChatChunk) {
        match chunk {
            ChatChunk::Start { id, model } => {
                if self.id.is_none() {
                    self.id.clone_from(id);
                }
                if self.model.is_none() {
                    self.model.clone_from(model);
                }
            }
            ChatChunk::Text { text } => self.text.push_str(text),
            ChatChunk::Reasoning { text } => self.reasoning.push_str(text),
            ChatChunk::ToolCall(piece) => {
                let call = self.calls.entry(piece.index).or_default();
                if let Some(id) = piece.id.as_ref().filter(|s| !s.is_empty()) {
                    call.id = Some(id.clone());
                }
                if let Some(name) = piece.name.as_ref().filter(|s| !s.is_empty()) {
                    call.name = Some(name.clone());
                }
                call.args.push_str(&piece.args);
            }
            ChatChunk::Usage { usage } => self.usage = Some(*usage),
            ChatChunk::Finish { reason } => self.finish = Some(reason.clone()),
        }
    }

    /// The text received so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether a [`ChatChunk::Finish`] arrived.
    pub fn is_finished(&self) -> bool {
        self.finish.is_some()
    }

    /// The assembled reply. Fails when no finish chunk arrived (truncated stream), when a tool
    /// call's arguments are not JSON, on a refusal or a content-filter stop.
    pub fn finish(self) -> Result<ChatResponse, LlmError> {
        let provider = self.provider;
        let Some(finish_reason) = self.finish else {
            return Err(LlmError::TruncatedStream {
                provider,
                detail: "no finish reason was received".into(),
            });
        };
        match finish_reason {
            FinishReason::ContentFilter => {
                return Err(LlmError::ContentFiltered {
                    provider,
                    partial: self.text,
                });
            }
            FinishReason::Refusal => {
                return Err(LlmError::Refusal {
                    provider,
                    message: self.text,
                });
            }
            _ => {}
        }
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (index, call) in self.calls {
            let id = call.id.unwrap_or_else(|| format!("call_{index}"));
            let Some(name) = call.name else {
                return Err(LlmError::MalformedResponse {
                    provider,
                    reason: format!("streamed tool call {index} (`{id}`) never received a name"),
                    bytes: call.args,
                });
            };
            let args = parse_tool_args(&name, &id, &call.args)?;
            tool_calls.push(ToolCall { id, name, args });
        }
        let mut extra = Map::new();
        if !self.reasoning.is_empty() {
            extra.insert("reasoning_content".into(), Value::String(self.reasoning));
        }
        let message = AiMessage {
            id: self.id,
            content: self.text,
            tool_calls,
            usage: None,
            extra,
        };
        let usage = self.usage.unwrap_or_default();
        let mut response = ChatResponse::new(
            message,
            usage,
            finish_reason,
            self.model.unwrap_or_default(),
        );
        response.latency = self.started.elapsed();
        Ok(response)
    }
}

/// Parses a tool call's JSON arguments text; empty text means `{}`.
pub(crate) fn parse_tool_args(name: &str, id: &str, args: &str) -> Result<Value, LlmError> {
    if args.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_str(args).map_err(|e| LlmError::InvalidToolArguments {
        tool: name.to_owned(),
        call_id: id.to_owned(),
        arguments: args.to_owned(),
        reason: e.to_string(),
    })
}

/// Drains `stream` into one [`ChatResponse`] (the first error ends it).
pub async fn collect_stream(
    provider: &'static str,
    mut stream: ChatStream,
) -> Result<ChatResponse, LlmError> {
    let mut agg = ChunkAggregator::new(provider);
    while let Some(chunk) = stream.next().await {
        agg.push(&chunk?);
    }
    agg.finish()
}
