//! Ollama's native chat API (`POST {host}/api/chat`): NDJSON streaming, tools, `format` with a
//! JSON schema for structured output, `options` for sampling.
//!
//! Ollama has no `tool_choice`: a named tool choice narrows the offered tools to that one;
//! `required` cannot be enforced and is sent as auto. Ollama does not give tool calls ids, so
//! fresh ones are made. The model's `thinking` is kept in `extra.reasoning_content` and sent
//! back as `thinking`.

use std::collections::HashMap;

use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};

use crate::error::{LlmError, snippet};
use crate::message::{AiMessage, Message, ToolCall, Usage};
use crate::options::{CallOptions, ToolChoice};
use crate::providers::http::event_json;
use crate::providers::model::{HttpChatModel, HttpChatModelBuilder};
use crate::providers::wire::{EnvVars, Framing, StreamDecoder, Wire, WireEvent, bearer_headers};
use crate::reducer::new_message_id;
use crate::secret::SecretString;
use crate::stream::{ChatChunk, ChatResponse, FinishReason, ToolCallChunk};

const PROVIDER: &str = "ollama";

/// A chat model served by Ollama.
///
/// ```no_run
/// use agent_llm::Ollama;
/// // OLLAMA_HOST (default http://127.0.0.1:11434), OLLAMA_MODEL, OLLAMA_API_KEY (hosted
/// // Ollama behind a bearer token)
/// let model = Ollama::builder_from_env().model("qwen3").build()?;
/// # Ok::<(), agent_llm::LlmError>(())
/// ```
pub type Ollama = HttpChatModel<OllamaWire>;

/// Builds an [`Ollama`] model.
pub type OllamaBuilder = HttpChatModelBuilder<OllamaWire>;

/// Ollama's native chat wire format (`POST {host}/api/chat`, NDJSON streaming, an optional
/// bearer key).
#[derive(Clone, Debug, Default)]
pub struct OllamaWire;

impl Wire for OllamaWire {
    const PROVIDER: &'static str = PROVIDER;
    const DEFAULT_BASE_URL: &'static str = "http://127.0.0.1:11434";
    const ENV: EnvVars = EnvVars {
        api_key: "OLLAMA_API_KEY",
        base_url: "OLLAMA_HOST",
        model: "OLLAMA_MODEL",
    };
    const FRAMING: Framing = Framing::Ndjson;
    type Decoder = LinesDecoder;

    /// `OLLAMA_HOST` may be `host:port` without a scheme; that means `http://`.
    fn base_url(&self, configured: &str) -> String {
        let base = configured.trim_end_matches('/');
        if base.contains("://") {
            base.to_owned()
        } else {
            format!("http://{base}")
        }
    }

    fn url(&self, base_url: &str, _model: &str, _stream: bool) -> String {
        format!("{base_url}/api/chat")
    }

    fn headers(&self, api_key: Option<&SecretString>) -> Result<HeaderMap, LlmError> {
        bearer_headers(PROVIDER, api_key)
    }

    fn parse_response(
        &self,
        body: &Value,
        model: &str,
        _options: &CallOptions,
    ) -> Result<ChatResponse, LlmError> {
        parse_chat(body, model)
    }

    fn decoder(&self, _options: &CallOptions) -> LinesDecoder {
        LinesDecoder::default()
    }

    fn request_body(
        &self,
        model: &str,
        messages: &[Message],
        options: &CallOptions,
        stream: bool,
    ) -> Value {
        let mut call_names: HashMap<&str, &str> = HashMap::new();
        let mut wire = Vec::new();
        for m in messages {
            let v = match m {
                Message::System(m) => json!({"role": "system", "content": m.content}),
                Message::Human(m) => json!({"role": "user", "content": m.content}),
                Message::Ai(m) => {
                    let mut v = json!({"role": "assistant", "content": m.content});
                    if !m.tool_calls.is_empty() {
                        v["tool_calls"] = m
                            .tool_calls
                            .iter()
                            .map(|c| {
                                call_names.insert(c.id.as_str(), c.name.as_str());
                                json!({"function": {"name": c.name, "arguments": c.args}})
                            })
                            .collect();
                    }
                    if let Some(thinking) = m.extra.get("reasoning_content") {
                        v["thinking"] = thinking.clone();
                    }
                    v
                }
                Message::Tool(m) => {
                    let mut v = json!({"role": "tool", "content": m.content});
                    let name = m
                        .name
                        .as_deref()
                        .or_else(|| call_names.get(m.tool_call_id.as_str()).copied());
                    if let Some(name) = name {
                        v["tool_name"] = json!(name);
                    }
                    v
                }
                Message::Remove(_) => continue,
            };
            wire.push(v);
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(model));
        body.insert("messages".into(), Value::Array(wire));
        body.insert("stream".into(), json!(stream));
        let tools: Vec<Value> = match &options.tool_choice {
            Some(ToolChoice::None) => Vec::new(),
            choice => options
                .tools
                .iter()
                .filter(|t| match choice {
                    Some(ToolChoice::Tool(name)) => &t.name == name,
                    _ => true,
                })
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters,
                    }})
                })
                .collect(),
        };
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(f) = &options.response_format {
            body.insert("format".into(), f.schema.clone());
        }
        let mut opts = Map::new();
        if let Some(t) = options.temperature {
            opts.insert("temperature".into(), json!(t));
        }
        if let Some(m) = options.max_tokens {
            opts.insert("num_predict".into(), json!(m));
        }
        if !options.stop.is_empty() {
            opts.insert("stop".into(), json!(options.stop));
        }
        if let Some(s) = options.seed {
            opts.insert("seed".into(), json!(s));
        }
        if !opts.is_empty() {
            body.insert("options".into(), Value::Object(opts));
        }
        Value::Object(body)
    }
}

fn done_reason(v: &Value, saw_tools: bool) -> FinishReason {
    match v.get("done_reason").and_then(Value::as_str) {
        _ if saw_tools => FinishReason::ToolCalls,
        None | Some("stop") => FinishReason::Stop,
        Some("length") => FinishReason::Length,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

fn usage(v: &Value) -> Usage {
    Usage::new(
        v.get("prompt_eval_count")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        v.get("eval_count").and_then(Value::as_u64).unwrap_or(0),
    )
}

fn error_in(v: &Value) -> Option<LlmError> {
    let message = v.get("error")?.as_str()?.to_owned();
    Some(LlmError::Http {
        provider: PROVIDER,
        status: 500,
        message: format!("error inside the response: {message}"),
        retryable: false,
    })
}

/// The tool calls of one response message, with fresh ids where Ollama gave none.
fn tool_calls(message: &Value) -> Result<Vec<ToolCall>, LlmError> {
    let mut calls = Vec::new();
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let function = call.get("function").unwrap_or(&Value::Null);
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| LlmError::MalformedResponse {
                provider: PROVIDER,
                reason: "tool call has no function name".into(),
                bytes: snippet(call.to_string().as_bytes()),
            })?;
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("call_{}", new_message_id()), str::to_owned);
        let args = match function.get("arguments") {
            Some(Value::String(s)) => crate::stream::parse_tool_args(name, &id, s)?,
            Some(v) if !v.is_null() => v.clone(),
            _ => json!({}),
        };
        calls.push(ToolCall::new(id, name, args));
    }
    Ok(calls)
}

fn parse_chat(v: &Value, model: &str) -> Result<ChatResponse, LlmError> {
    if let Some(e) = error_in(v) {
        return Err(e);
    }
    let message = v
        .get("message")
        .ok_or_else(|| LlmError::MalformedResponse {
            provider: PROVIDER,
            reason: "response has no message".into(),
            bytes: snippet(v.to_string().as_bytes()),
        })?;
    let tool_calls = tool_calls(message)?;
    let mut extra = Map::new();
    if let Some(t) = message
        .get("thinking")
        .filter(|t| t.as_str().is_some_and(|s| !s.is_empty()))
    {
        extra.insert("reasoning_content".into(), t.clone());
    }
    let reason = done_reason(v, !tool_calls.is_empty());
    let message = AiMessage {
        id: None,
        content: message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        tool_calls,
        usage: None,
        extra,
    };
    let answered = v.get("model").and_then(Value::as_str).unwrap_or(model);
    Ok(ChatResponse::new(message, usage(v), reason, answered))
}

/// Turns NDJSON lines into chunks.
#[derive(Debug, Default)]
pub struct LinesDecoder {
    started: bool,
    done: bool,
    calls: usize,
}

impl StreamDecoder for LinesDecoder {
    fn decode(&mut self, event: WireEvent) -> Result<Vec<ChatChunk>, LlmError> {
        if self.done {
            return Ok(Vec::new());
        }
        let v = event_json(PROVIDER, &event.data)?;
        if let Some(e) = error_in(&v) {
            return Err(e);
        }
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            out.push(ChatChunk::Start {
                id: None,
                model: v.get("model").and_then(Value::as_str).map(str::to_owned),
            });
        }
        if let Some(message) = v.get("message") {
            if let Some(t) = message
                .get("thinking")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                out.push(ChatChunk::Reasoning { text: t.to_owned() });
            }
            if let Some(t) = message
                .get("content")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                out.push(ChatChunk::Text { text: t.to_owned() });
            }
            for call in tool_calls(message)? {
                out.push(ChatChunk::ToolCall(ToolCallChunk {
                    index: self.calls,
                    id: Some(call.id),
                    name: Some(call.name),
                    args: call.args.to_string(),
                }));
                self.calls += 1;
            }
        }
        if v.get("done").and_then(Value::as_bool) == Some(true) {
            self.done = true;
            out.push(ChatChunk::Usage { usage: usage(&v) });
            out.push(ChatChunk::Finish {
                reason: done_reason(&v, self.calls > 0),
            });
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<ChatChunk>, LlmError> {
        if self.done {
            Ok(Vec::new())
        } else {
            Err(LlmError::TruncatedStream {
                provider: PROVIDER,
                detail: "no line with `\"done\": true` arrived".into(),
            })
        }
    }
}
