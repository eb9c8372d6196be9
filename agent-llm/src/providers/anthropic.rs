//! Anthropic Messages API (`POST {base}/v1/messages`).
//!
//! System messages become the `system` prompt; tool calls and results become `tool_use` /
//! `tool_result` content blocks (consecutive messages of one role are merged, as the API
//! wants strictly alternating turns); streaming follows the documented event types
//! (`message_start`, `content_block_start/delta/stop` incl. `input_json_delta`,
//! `message_delta`, `message_stop`, `ping`, `error`). Structured output is a forced tool whose
//! input schema is the wanted schema; its input becomes the reply's text. Content blocks this
//! crate does not model (thinking...) are kept in `extra.anthropic_blocks` and sent back by
//! `invoke`; a stream yields thinking text as reasoning chunks but does not keep the blocks'
//! signatures, so extended thinking with tool use needs `invoke`.

use std::collections::HashSet;

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Map, Value, json};

use crate::error::{LlmError, snippet};
use crate::message::{AiMessage, Message, ToolCall, Usage};
use crate::options::{CallOptions, ToolChoice};
use crate::providers::http::{event_json, stream_error};
use crate::providers::model::{HttpChatModel, HttpChatModelBuilder};
use crate::providers::wire::{EnvVars, Framing, StreamDecoder, Wire, WireEvent, sensitive_header};
use crate::secret::SecretString;
use crate::stream::{ChatChunk, ChatResponse, FinishReason, ToolCallChunk};

const PROVIDER: &str = "anthropic";
const API_VERSION: &str = "2023-06-01";
const DEFAULT_MAX_TOKENS: u32 = 4096;
const EXTRA_BLOCKS: &str = "anthropic_blocks";

/// A chat model behind the Anthropic Messages API.
///
/// ```no_run
/// use agent_llm::Anthropic;
/// // ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL (default https://api.anthropic.com), ANTHROPIC_MODEL
/// let model = Anthropic::builder_from_env().model("claude-sonnet-4-5").build()?;
/// # Ok::<(), agent_llm::LlmError>(())
/// ```
pub type Anthropic = HttpChatModel<AnthropicWire>;

/// Builds an [`Anthropic`] model.
pub type AnthropicBuilder = HttpChatModelBuilder<AnthropicWire>;

impl HttpChatModelBuilder<AnthropicWire> {
    /// Sets `max_tokens` for calls that do not set it (the API requires one; default 4096).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.wire.max_tokens = max_tokens;
        self
    }
}

/// The Anthropic Messages wire format (`POST {base}/v1/messages`, `x-api-key` and
/// `anthropic-version` headers, named SSE events).
#[derive(Clone, Debug)]
pub struct AnthropicWire {
    /// `max_tokens` of calls that do not set one.
    pub max_tokens: u32,
}

impl Default for AnthropicWire {
    fn default() -> Self {
        AnthropicWire {
            max_tokens: DEFAULT_MAX_TOKENS,
        }
    }
}

impl Wire for AnthropicWire {
    const PROVIDER: &'static str = PROVIDER;
    const DEFAULT_BASE_URL: &'static str = "https://api.anthropic.com";
    const ENV: EnvVars = EnvVars {
        api_key: "ANTHROPIC_API_KEY",
        base_url: "ANTHROPIC_BASE_URL",
        model: "ANTHROPIC_MODEL",
    };
    const FRAMING: Framing = Framing::Sse;
    type Decoder = EventsDecoder;

    fn url(&self, base_url: &str, _model: &str, _stream: bool) -> String {
        if base_url.ends_with("/v1") {
            format!("{base_url}/messages")
        } else {
            format!("{base_url}/v1/messages")
        }
    }

    fn headers(&self, api_key: Option<&SecretString>) -> Result<HeaderMap, LlmError> {
        let mut h = HeaderMap::new();
        h.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        if let Some(key) = api_key {
            h.insert(
                "x-api-key",
                sensitive_header(PROVIDER, key.expose_secret())?,
            );
        }
        Ok(h)
    }

    fn parse_response(
        &self,
        body: &Value,
        model: &str,
        options: &CallOptions,
    ) -> Result<ChatResponse, LlmError> {
        let structured = options.response_format.as_ref().map(|f| f.name.as_str());
        parse_message(body, model, structured)
    }

    fn decoder(&self, options: &CallOptions) -> EventsDecoder {
        EventsDecoder::new(options.response_format.as_ref().map(|f| f.name.clone()))
    }

    fn request_body(
        &self,
        model: &str,
        messages: &[Message],
        options: &CallOptions,
        stream: bool,
    ) -> Value {
        let mut system = Vec::new();
        let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
        for m in messages {
            let (role, blocks) = match m {
                Message::System(m) => {
                    system.push(m.content.clone());
                    continue;
                }
                Message::Human(m) => ("user", vec![json!({"type": "text", "text": m.content})]),
                Message::Ai(m) => {
                    let mut blocks: Vec<Value> = m
                        .extra
                        .get(EXTRA_BLOCKS)
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    if !m.content.is_empty() {
                        blocks.push(json!({"type": "text", "text": m.content}));
                    }
                    for c in &m.tool_calls {
                        blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.args}));
                    }
                    if blocks.is_empty() {
                        continue;
                    }
                    ("assistant", blocks)
                }
                Message::Tool(m) => (
                    "user",
                    vec![json!({
                        "type": "tool_result", "tool_use_id": m.tool_call_id,
                        "content": m.content, "is_error": m.is_error,
                    })],
                ),
                Message::Remove(_) => continue,
            };
            match turns.last_mut() {
                Some((last, content)) if *last == role => content.extend(blocks),
                _ => turns.push((role, blocks)),
            }
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(model));
        body.insert(
            "max_tokens".into(),
            json!(options.max_tokens.unwrap_or(self.max_tokens)),
        );
        if !system.is_empty() {
            body.insert("system".into(), json!(system.join("\n\n")));
        }
        body.insert(
            "messages".into(),
            turns
                .into_iter()
                .map(|(role, content)| json!({"role": role, "content": content}))
                .collect(),
        );
        let mut tools: Vec<Value> = options
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        let mut choice = options.tool_choice.as_ref().map(|c| match c {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
        });
        if let Some(f) = &options.response_format {
            let description = f
                .description
                .clone()
                .unwrap_or_else(|| format!("Give the answer as `{}`.", f.name));
            tools.push(
                json!({"name": f.name, "description": description, "input_schema": f.schema}),
            );
            choice = Some(json!({"type": "tool", "name": f.name}));
        }
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(mut choice) = choice {
            if options.parallel_tool_calls == Some(false) && choice["type"] != "none" {
                choice["disable_parallel_tool_use"] = json!(true);
            }
            body.insert("tool_choice".into(), choice);
        }
        if let Some(t) = options.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if !options.stop.is_empty() {
            body.insert("stop_sequences".into(), json!(options.stop));
        }
        if stream {
            body.insert("stream".into(), json!(true));
        }
        Value::Object(body)
    }
}

fn stop_reason(s: &str) -> FinishReason {
    match s {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::Refusal,
        other => FinishReason::Other(other.to_owned()),
    }
}

fn usage_of(v: Option<&Value>) -> (Option<u64>, Option<u64>) {
    let get = |k: &str| v.and_then(|u| u.get(k)).and_then(Value::as_u64);
    (get("input_tokens"), get("output_tokens"))
}

/// Parses a non-streamed Messages response; `structured` names the forced output tool.
fn parse_message(
    v: &Value,
    model: &str,
    structured: Option<&str>,
) -> Result<ChatResponse, LlmError> {
    if v.get("type").and_then(Value::as_str) == Some("error") {
        return Err(stream_error(PROVIDER, v));
    }
    let blocks =
        v.get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| LlmError::MalformedResponse {
                provider: PROVIDER,
                reason: "message has no content array".into(),
                bytes: snippet(v.to_string().as_bytes()),
            })?;
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    let mut kept = Vec::new();
    let mut structured_hit = false;
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => content.push_str(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            Some("tool_use") => {
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                if structured == Some(name) {
                    structured_hit = true;
                    content = input.to_string();
                } else {
                    let id = block.get("id").and_then(Value::as_str).unwrap_or_default();
                    tool_calls.push(ToolCall::new(id, name, input));
                }
            }
            _ => kept.push(block.clone()),
        }
    }
    let mut reason = v
        .get("stop_reason")
        .and_then(Value::as_str)
        .map_or(FinishReason::Stop, stop_reason);
    if structured_hit && reason == FinishReason::ToolCalls && tool_calls.is_empty() {
        reason = FinishReason::Stop;
    }
    if reason == FinishReason::Refusal {
        return Err(LlmError::Refusal {
            provider: PROVIDER,
            message: content,
        });
    }
    let (input, output) = usage_of(v.get("usage"));
    let usage = Usage::new(input.unwrap_or(0), output.unwrap_or(0));
    let mut extra = Map::new();
    if !kept.is_empty() {
        extra.insert(EXTRA_BLOCKS.into(), Value::Array(kept));
    }
    let message = AiMessage {
        id: v.get("id").and_then(Value::as_str).map(str::to_owned),
        content,
        tool_calls,
        usage: None,
        extra,
    };
    let answered = v.get("model").and_then(Value::as_str).unwrap_or(model);
    Ok(ChatResponse::new(message, usage, reason, answered))
}

/// Turns Messages stream events into chunks.
#[derive(Debug)]
pub struct EventsDecoder {
    structured: Option<String>,
    /// Content-block indexes that are the structured-output tool (their JSON is the text).
    structured_blocks: HashSet<u64>,
    input_tokens: u64,
    output_tokens: u64,
    stop: Option<FinishReason>,
    done: bool,
}

impl EventsDecoder {
    fn new(structured: Option<String>) -> Self {
        EventsDecoder {
            structured,
            structured_blocks: HashSet::new(),
            input_tokens: 0,
            output_tokens: 0,
            stop: None,
            done: false,
        }
    }
}

fn index_of(v: &Value) -> u64 {
    v.get("index").and_then(Value::as_u64).unwrap_or(0)
}

impl StreamDecoder for EventsDecoder {
    fn decode(&mut self, event: WireEvent) -> Result<Vec<ChatChunk>, LlmError> {
        if self.done || event.data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let v = event_json(PROVIDER, &event.data)?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        let mut out = Vec::new();
        match kind {
            "message_start" => {
                let message = v.get("message");
                let (input, output) = usage_of(message.and_then(|m| m.get("usage")));
                self.input_tokens = input.unwrap_or(0);
                self.output_tokens = output.unwrap_or(0);
                out.push(ChatChunk::Start {
                    id: message
                        .and_then(|m| m.get("id"))
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    model: message
                        .and_then(|m| m.get("model"))
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                });
            }
            "content_block_start" => {
                let index = index_of(&v);
                let block = v.get("content_block").unwrap_or(&Value::Null);
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = block
                            .get("text")
                            .and_then(Value::as_str)
                            .filter(|t| !t.is_empty())
                        {
                            out.push(ChatChunk::Text { text: t.to_owned() });
                        }
                    }
                    Some("tool_use") => {
                        let name = block
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        if self.structured.as_deref() == Some(name) {
                            self.structured_blocks.insert(index);
                        } else {
                            out.push(ChatChunk::ToolCall(ToolCallChunk {
                                index: usize::try_from(index).unwrap_or(usize::MAX),
                                id: block.get("id").and_then(Value::as_str).map(str::to_owned),
                                name: Some(name.to_owned()),
                                args: String::new(),
                            }));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = index_of(&v);
                let delta = v.get("delta").unwrap_or(&Value::Null);
                let text = |k: &str| {
                    delta
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => out.push(ChatChunk::Text { text: text("text") }),
                    Some("input_json_delta") if self.structured_blocks.contains(&index) => {
                        out.push(ChatChunk::Text {
                            text: text("partial_json"),
                        });
                    }
                    Some("input_json_delta") => out.push(ChatChunk::ToolCall(ToolCallChunk {
                        index: usize::try_from(index).unwrap_or(usize::MAX),
                        id: None,
                        name: None,
                        args: text("partial_json"),
                    })),
                    Some("thinking_delta") => out.push(ChatChunk::Reasoning {
                        text: text("thinking"),
                    }),
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = v
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    let mut reason = stop_reason(r);
                    if reason == FinishReason::ToolCalls && !self.structured_blocks.is_empty() {
                        reason = FinishReason::Stop;
                    }
                    self.stop = Some(reason);
                }
                let (input, output) = usage_of(v.get("usage"));
                if let Some(i) = input.filter(|i| *i > 0) {
                    self.input_tokens = i;
                }
                if let Some(o) = output {
                    self.output_tokens = o;
                }
            }
            "message_stop" => {
                self.done = true;
                out.push(ChatChunk::Usage {
                    usage: Usage::new(self.input_tokens, self.output_tokens),
                });
                out.push(ChatChunk::Finish {
                    reason: self.stop.clone().unwrap_or_default(),
                });
            }
            "error" => return Err(stream_error(PROVIDER, &v)),
            _ => {} // ping, content_block_stop, future event types
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<ChatChunk>, LlmError> {
        if self.done {
            Ok(Vec::new())
        } else {
            Err(LlmError::TruncatedStream {
                provider: PROVIDER,
                detail: "no `message_stop` event arrived".into(),
            })
        }
    }
}
