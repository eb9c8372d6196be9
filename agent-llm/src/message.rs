//! Chat messages: what a conversation is made of and what graph state stores.
//!
//! The four roles of LangChain (`system`, `human`, `ai`, `tool`) plus `remove`, the instruction
//! [`add_messages`](crate::add_messages) understands to delete a message (LangGraph's
//! `RemoveMessage`). Messages serialize with a `type` tag, every field present (no field is
//! skipped, so positional formats such as MessagePack arrays round-trip too), and keep
//! provider fields this crate does not model in `extra`, which providers send back.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The id of [`Message::remove_all`]: removing it clears the whole list
/// (LangGraph's `REMOVE_ALL_MESSAGES`).
pub const REMOVE_ALL_MESSAGES: &str = "__remove_all__";

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// Instructions for the model.
    System(SystemMessage),
    /// What the user said.
    Human(HumanMessage),
    /// What the model said: text and/or tool calls.
    Ai(AiMessage),
    /// The result of one tool call, linked by its call id.
    Tool(ToolMessage),
    /// An instruction to [`add_messages`](crate::add_messages): delete the message with this id
    /// (or all of them, for [`REMOVE_ALL_MESSAGES`]). Never sent to a model.
    Remove(RemoveMessage),
}

/// Instructions for the model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemMessage {
    /// Id, unique in a conversation; [`add_messages`](crate::add_messages) gives one if missing.
    pub id: Option<String>,
    /// The text.
    pub content: String,
    /// Provider fields this crate does not model, kept so they round-trip.
    #[serde(default)]
    pub extra: Map<String, Value>,
}

/// What the user said.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HumanMessage {
    /// Id, unique in a conversation.
    pub id: Option<String>,
    /// The text (of a message sent as blocks: its text blocks, joined).
    pub content: String,
    /// Optional name of the speaker.
    #[serde(default)]
    pub name: Option<String>,
    /// Provider fields this crate does not model, kept so they round-trip.
    #[serde(default)]
    pub extra: Map<String, Value>,
    /// The content as a list of blocks, when the message came so (LangChain's list
    /// content: `{"type": "text", "text": ...}`, images, files... as chat clients send
    /// them): kept as sent so the message reads back whole, attachments included.
    /// [`content`](Self::content) is then the text of its text blocks, which is what models
    /// and rules read; providers send only that text. `None` for a message of plain text.
    #[serde(default)]
    pub content_blocks: Option<Vec<Value>>,
}

impl HumanMessage {
    /// A human message of plain text, without id (one is given when it joins a
    /// conversation).
    pub fn text(content: impl Into<String>) -> Self {
        HumanMessage {
            content: content.into(),
            ..Default::default()
        }
    }

    /// A human message sent as content blocks: [`content`](Self::content) is the text of
    /// its text blocks (`{"type": "text", "text": ...}`, or bare strings), joined; the
    /// blocks are kept as they are.
    pub fn blocks(blocks: Vec<Value>) -> Self {
        HumanMessage {
            content: text_of_blocks(&blocks),
            content_blocks: Some(blocks),
            ..Default::default()
        }
    }

    /// The same message with its id set.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

/// The text of LangChain content blocks: bare strings and the `text` of text blocks,
/// joined (image, file and other blocks have no text to read).
pub fn text_of_blocks(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            Value::String(s) => Some(s.as_str()),
            Value::Object(o)
                if o.get("type")
                    .and_then(Value::as_str)
                    .is_none_or(|t| t == "text") =>
            {
                o.get("text").and_then(Value::as_str)
            }
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

/// What the model said.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AiMessage {
    /// Id, unique in a conversation (providers use their response id).
    pub id: Option<String>,
    /// The text (for structured output: the JSON text).
    pub content: String,
    /// Tools the model asks to run, in order.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Tokens this reply cost, when the provider said.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Provider fields this crate does not model (`reasoning_content`, Anthropic thinking
    /// blocks, Ollama `thinking`...), kept so they are sent back on the next turn.
    #[serde(default)]
    pub extra: Map<String, Value>,
}

/// The result of a tool call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolMessage {
    /// Id, unique in a conversation.
    pub id: Option<String>,
    /// The id of the [`ToolCall`] this answers.
    pub tool_call_id: String,
    /// The tool's name (Ollama needs it; others ignore it).
    #[serde(default)]
    pub name: Option<String>,
    /// What the tool returned, as text.
    pub content: String,
    /// Whether the tool failed (the content is then the error text).
    #[serde(default)]
    pub is_error: bool,
    /// Provider fields this crate does not model, kept so they round-trip.
    #[serde(default)]
    pub extra: Map<String, Value>,
}

/// Instruction to delete the message with `id` (see [`add_messages`](crate::add_messages)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoveMessage {
    /// The id to delete, or [`REMOVE_ALL_MESSAGES`].
    pub id: String,
}

/// A tool the model asks to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id; the [`ToolMessage`] answering it carries the same id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as JSON (an object for every provider here).
    pub args: Value,
}

/// Tokens a call cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Usage of `input_tokens` in and `output_tokens` out.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Usage {
            input_tokens,
            output_tokens,
        }
    }

    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

impl std::ops::Add for Usage {
    type Output = Usage;
    fn add(self, rhs: Usage) -> Usage {
        Usage::new(
            self.input_tokens + rhs.input_tokens,
            self.output_tokens + rhs.output_tokens,
        )
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        *self = *self + rhs;
    }
}

impl ToolCall {
    /// A tool call with the given id, name and JSON arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, args: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            args,
        }
    }
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::System(SystemMessage {
            content: content.into(),
            ..Default::default()
        })
    }

    /// A human (user) message.
    pub fn human(content: impl Into<String>) -> Self {
        Message::Human(HumanMessage {
            content: content.into(),
            ..Default::default()
        })
    }

    /// An AI message with text only.
    pub fn ai(content: impl Into<String>) -> Self {
        Message::Ai(AiMessage {
            content: content.into(),
            ..Default::default()
        })
    }

    /// An AI message with tool calls (and no text).
    pub fn ai_tool_calls(tool_calls: impl IntoIterator<Item = ToolCall>) -> Self {
        Message::Ai(AiMessage {
            tool_calls: tool_calls.into_iter().collect(),
            ..Default::default()
        })
    }

    /// The result of the tool call `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::Tool(ToolMessage {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
            ..Default::default()
        })
    }

    /// The failed result of the tool call `tool_call_id`.
    pub fn tool_error(tool_call_id: impl Into<String>, error: impl Into<String>) -> Self {
        Message::Tool(ToolMessage {
            tool_call_id: tool_call_id.into(),
            content: error.into(),
            is_error: true,
            ..Default::default()
        })
    }

    /// An instruction to delete the message `id` (LangGraph's `RemoveMessage(id=...)`).
    pub fn remove(id: impl Into<String>) -> Self {
        Message::Remove(RemoveMessage { id: id.into() })
    }

    /// An instruction to delete every message before it (LangGraph's
    /// `RemoveMessage(id=REMOVE_ALL_MESSAGES)`); messages after it in the same update are kept.
    pub fn remove_all() -> Self {
        Message::remove(REMOVE_ALL_MESSAGES)
    }

    /// The same message with its id set.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.set_id(id);
        self
    }

    /// The message's id, if it has one.
    pub fn id(&self) -> Option<&str> {
        match self {
            Message::System(m) => m.id.as_deref(),
            Message::Human(m) => m.id.as_deref(),
            Message::Ai(m) => m.id.as_deref(),
            Message::Tool(m) => m.id.as_deref(),
            Message::Remove(m) => Some(&m.id),
        }
    }

    /// Sets the message's id.
    pub fn set_id(&mut self, id: impl Into<String>) {
        let id: String = id.into();
        match self {
            Message::System(m) => m.id = Some(id),
            Message::Human(m) => m.id = Some(id),
            Message::Ai(m) => m.id = Some(id),
            Message::Tool(m) => m.id = Some(id),
            Message::Remove(m) => m.id = id,
        }
    }

    /// The text of the message (empty for [`Message::Remove`]).
    pub fn content(&self) -> &str {
        match self {
            Message::System(m) => &m.content,
            Message::Human(m) => &m.content,
            Message::Ai(m) => &m.content,
            Message::Tool(m) => &m.content,
            Message::Remove(_) => "",
        }
    }

    /// The role name as LangChain spells it: `system`, `human`, `ai`, `tool` or `remove`.
    pub fn kind(&self) -> &'static str {
        match self {
            Message::System(_) => "system",
            Message::Human(_) => "human",
            Message::Ai(_) => "ai",
            Message::Tool(_) => "tool",
            Message::Remove(_) => "remove",
        }
    }

    /// The AI message inside, if this is one.
    pub fn as_ai(&self) -> Option<&AiMessage> {
        match self {
            Message::Ai(m) => Some(m),
            _ => None,
        }
    }

    /// The tool calls of an AI message (empty for any other message).
    pub fn tool_calls(&self) -> &[ToolCall] {
        match self {
            Message::Ai(m) => &m.tool_calls,
            _ => &[],
        }
    }
}

impl AiMessage {
    /// Whether the model asked for at least one tool call.
    pub fn has_tool_calls(&self) -> bool {
        !self.tool_calls.is_empty()
    }
}

impl From<AiMessage> for Message {
    fn from(m: AiMessage) -> Self {
        Message::Ai(m)
    }
}

impl From<HumanMessage> for Message {
    fn from(m: HumanMessage) -> Self {
        Message::Human(m)
    }
}

impl From<&str> for HumanMessage {
    fn from(text: &str) -> Self {
        HumanMessage::text(text)
    }
}

impl From<&String> for HumanMessage {
    fn from(text: &String) -> Self {
        HumanMessage::text(text.as_str())
    }
}

impl From<String> for HumanMessage {
    fn from(text: String) -> Self {
        HumanMessage::text(text)
    }
}

impl From<SystemMessage> for Message {
    fn from(m: SystemMessage) -> Self {
        Message::System(m)
    }
}

impl From<ToolMessage> for Message {
    fn from(m: ToolMessage) -> Self {
        Message::Tool(m)
    }
}

impl From<RemoveMessage> for Message {
    fn from(m: RemoveMessage) -> Self {
        Message::Remove(m)
    }
}
