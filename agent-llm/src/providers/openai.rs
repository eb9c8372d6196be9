//! OpenAI-compatible chat completions (`POST {base}/chat/completions`): OpenAI, vLLM,
//! llama.cpp server, LM Studio, OpenRouter, Groq, Ollama's `/v1`...
//!
//! Tools, tool choice, streamed tool-call deltas, `response_format: json_schema`, usage in
//! streams (`stream_options.include_usage`). Assistant message fields this crate does not model
//! (`reasoning_content`...) are kept in `extra` and sent back.

use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};

use crate::error::{LlmError, snippet};
use crate::message::{AiMessage, Message, ToolCall, Usage};
use crate::options::{CallOptions, ToolChoice};
use crate::providers::http::{event_json, stream_error};
use crate::providers::model::{HttpChatModel, HttpChatModelBuilder};
use crate::providers::wire::{EnvVars, Framing, StreamDecoder, Wire, WireEvent, bearer_headers};
use crate::secret::SecretString;
use crate::stream::{ChatChunk, ChatResponse, FinishReason, ToolCallChunk, parse_tool_args};

const PROVIDER: &str = "openai";

/// A chat model behind an OpenAI-compatible `/chat/completions` endpoint.
///
/// ```no_run
/// use agent_llm::OpenAiCompatible;
/// // OPENAI_API_KEY, OPENAI_BASE_URL (default https://api.openai.com/v1), OPENAI_MODEL
/// let from_env = OpenAiCompatible::from_env()?;
/// let local = OpenAiCompatible::builder()
///     .base_url("http://127.0.0.1:8080/v1")
///     .model("smollm2")
///     .build()?;
/// # Ok::<(), agent_llm::LlmError>(())
/// ```
pub type OpenAiCompatible = HttpChatModel<OpenAiWire>;

/// Builds an [`OpenAiCompatible`].
pub type OpenAiCompatibleBuilder = HttpChatModelBuilder<OpenAiWire>;

/// The OpenAI chat-completions wire format (`POST {base}/chat/completions`, bearer key, SSE
/// `chat.completion.chunk` events ending in `data: [DONE]`).
#[derive(Clone, Debug, Default)]
pub struct OpenAiWire;

impl Wire for OpenAiWire {
    const PROVIDER: &'static str = PROVIDER;
    const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";
    const ENV: EnvVars = EnvVars {
        api_key: "OPENAI_API_KEY",
        base_url: "OPENAI_BASE_URL",
        model: "OPENAI_MODEL",
    };
    const FRAMING: Framing = Framing::Sse;
    type Decoder = ChunkDecoder;

    fn url(&self, base_url: &str, _model: &str, _stream: bool) -> String {
        format!("{base_url}/chat/completions")
    }

    fn headers(&self, api_key: Option<&SecretString>) -> Result<HeaderMap, LlmError> {
        bearer_headers(PROVIDER, api_key)
    }

    fn request_body(
        &self,
        model: &str,
        messages: &[Message],
        options: &CallOptions,
        stream: bool,
    ) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(model));
        body.insert(
            "messages".into(),
            Value::Array(messages.iter().filter_map(wire_message).collect()),
        );
        if stream {
            body.insert("stream".into(), json!(true));
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        if !options.tools.is_empty() {
            let tools: Vec<Value> = options
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters,
                    }})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(choice) = &options.tool_choice {
            let v = match choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
            };
            body.insert("tool_choice".into(), v);
        }
        if let Some(p) = options.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), json!(p));
        }
        if let Some(f) = &options.response_format {
            let mut schema = Map::new();
            schema.insert("name".into(), json!(f.name));
            if let Some(d) = &f.description {
                schema.insert("description".into(), json!(d));
            }
            schema.insert("schema".into(), f.schema.clone());
            schema.insert("strict".into(), json!(f.strict));
            body.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": schema}),
            );
        }
        if let Some(t) = options.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(m) = options.max_tokens {
            body.insert("max_tokens".into(), json!(m));
        }
        if !options.stop.is_empty() {
            body.insert("stop".into(), json!(options.stop));
        }
        if let Some(s) = options.seed {
            body.insert("seed".into(), json!(s));
        }
        Value::Object(body)
    }

    fn parse_response(
        &self,
        body: &Value,
        model: &str,
        _options: &CallOptions,
    ) -> Result<ChatResponse, LlmError> {
        parse_completion(body, model)
    }

    fn decoder(&self, _options: &CallOptions) -> ChunkDecoder {
        ChunkDecoder::default()
    }
}

/// One message in the OpenAI wire format (`None` for [`Message::Remove`]).
fn wire_message(m: &Message) -> Option<Value> {
    let (mut obj, extra) = match m {
        Message::System(m) => (json!({"role": "system", "content": m.content}), &m.extra),
        Message::Human(m) => {
            let mut v = json!({"role": "user", "content": m.content});
            if let Some(name) = &m.name {
                v["name"] = json!(name);
            }
            (v, &m.extra)
        }
        Message::Ai(m) => {
            let mut v = json!({"role": "assistant", "content": m.content});
            if !m.tool_calls.is_empty() {
                if m.content.is_empty() {
                    v["content"] = Value::Null;
                }
                v["tool_calls"] = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function", "function": {
                            "name": c.name, "arguments": c.args.to_string(),
                        }})
                    })
                    .collect();
            }
            (v, &m.extra)
        }
        Message::Tool(m) => (
            json!({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}),
            &m.extra,
        ),
        Message::Remove(_) => return None,
    };
    if let Value::Object(o) = &mut obj {
        for (k, v) in extra {
            o.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    Some(obj)
}

fn finish_reason(s: &str) -> FinishReason {
    match s {
        "stop" | "eos" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

fn usage(v: &Value) -> Option<Usage> {
    let u = v.get("usage").filter(|u| u.is_object())?;
    Some(Usage::new(
        u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        u.get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    ))
}

fn malformed(reason: impl Into<String>, v: &Value) -> LlmError {
    LlmError::MalformedResponse {
        provider: PROVIDER,
        reason: reason.into(),
        bytes: snippet(v.to_string().as_bytes()),
    }
}

/// Parses a non-streamed completion.
fn parse_completion(v: &Value, model: &str) -> Result<ChatResponse, LlmError> {
    if v.get("error").is_some_and(|e| !e.is_null()) {
        return Err(stream_error(PROVIDER, v));
    }
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| malformed("completion has no choices", v))?;
    let message = choice
        .get("message")
        .and_then(Value::as_object)
        .ok_or_else(|| malformed("choice has no message", v))?;
    let content = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if let Some(refusal) = message
        .get("refusal")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
    {
        return Err(LlmError::Refusal {
            provider: PROVIDER,
            message: refusal.to_owned(),
        });
    }
    let reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map_or(FinishReason::Stop, finish_reason);
    if reason == FinishReason::ContentFilter {
        return Err(LlmError::ContentFiltered {
            provider: PROVIDER,
            partial: content,
        });
    }
    let mut tool_calls = Vec::new();
    for (i, call) in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("call_{i}"), str::to_owned);
        let function = call.get("function").unwrap_or(&Value::Null);
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed(format!("tool call {i} has no function name"), v))?;
        let args = match function.get("arguments") {
            Some(Value::String(s)) => parse_tool_args(name, &id, s)?,
            Some(obj @ Value::Object(_)) => obj.clone(),
            _ => Value::Object(Map::new()),
        };
        tool_calls.push(ToolCall::new(id, name, args));
    }
    let mut extra = Map::new();
    for (k, val) in message {
        let empty = match val {
            Value::Null => true,
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            Value::String(s) => s.is_empty(),
            _ => false,
        };
        if !empty && !matches!(k.as_str(), "role" | "content" | "tool_calls" | "refusal") {
            extra.insert(k.clone(), val.clone());
        }
    }
    let message = AiMessage {
        id: v.get("id").and_then(Value::as_str).map(str::to_owned),
        content,
        tool_calls,
        usage: None,
        extra,
    };
    let answered = v.get("model").and_then(Value::as_str).unwrap_or(model);
    Ok(ChatResponse::new(
        message,
        usage(v).unwrap_or_default(),
        reason,
        answered,
    ))
}

/// Turns `chat.completion.chunk` events into chunks.
#[derive(Debug, Default)]
pub struct ChunkDecoder {
    started: bool,
    done: bool,
    finished: bool,
    refusal: String,
}

impl StreamDecoder for ChunkDecoder {
    fn decode(&mut self, event: WireEvent) -> Result<Vec<ChatChunk>, LlmError> {
        let data = event.data.trim();
        if self.done || data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.done = true;
            return self.finish();
        }
        let v = event_json(PROVIDER, data)?;
        if v.get("error").is_some_and(|e| !e.is_null()) {
            return Err(stream_error(PROVIDER, &v));
        }
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            out.push(ChatChunk::Start {
                id: v.get("id").and_then(Value::as_str).map(str::to_owned),
                model: v.get("model").and_then(Value::as_str).map(str::to_owned),
            });
        }
        for choice in v
            .get("choices")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(delta) = choice.get("delta") {
                if let Some(text) = delta
                    .get("content")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    out.push(ChatChunk::Text {
                        text: text.to_owned(),
                    });
                }
                for key in ["reasoning_content", "reasoning"] {
                    if let Some(text) = delta
                        .get(key)
                        .and_then(Value::as_str)
                        .filter(|t| !t.is_empty())
                    {
                        out.push(ChatChunk::Reasoning {
                            text: text.to_owned(),
                        });
                    }
                }
                if let Some(r) = delta.get("refusal").and_then(Value::as_str) {
                    self.refusal.push_str(r);
                }
                for (pos, call) in delta
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let index = call
                        .get("index")
                        .and_then(Value::as_u64)
                        .and_then(|i| usize::try_from(i).ok())
                        .unwrap_or(pos);
                    let function = call.get("function");
                    let args = match function.and_then(|f| f.get("arguments")) {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Null) | None => String::new(),
                        Some(other) => other.to_string(),
                    };
                    out.push(ChatChunk::ToolCall(ToolCallChunk {
                        index,
                        id: call.get("id").and_then(Value::as_str).map(str::to_owned),
                        name: function
                            .and_then(|f| f.get("name"))
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        args,
                    }));
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finished = true;
                out.push(ChatChunk::Finish {
                    reason: finish_reason(reason),
                });
            }
        }
        if let Some(u) = usage(&v) {
            out.push(ChatChunk::Usage { usage: u });
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<ChatChunk>, LlmError> {
        if !self.refusal.is_empty() {
            return Err(LlmError::Refusal {
                provider: PROVIDER,
                message: std::mem::take(&mut self.refusal),
            });
        }
        if !self.done && !self.finished {
            return Err(LlmError::TruncatedStream {
                provider: PROVIDER,
                detail: "neither a finish_reason nor `data: [DONE]` arrived".into(),
            });
        }
        Ok(Vec::new())
    }
}
