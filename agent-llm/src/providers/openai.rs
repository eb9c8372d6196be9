//! OpenAI-compatible chat completions (`POST {base}/chat/completions`): OpenAI, vLLM,
//! llama.cpp server, LM Studio, OpenRouter, Groq, Ollama's `/v1`...
//!
//! Tools, tool choice, streamed tool-call deltas, `response_format: json_schema`, usage in
//! streams (`stream_options.include_usage`). Assistant message fields this crate does not model
//! (`reasoning_content`...) are kept in `extra` and sent back.

use std::time::Instant;

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, HeaderMap};
use serde_json::{Map, Value, json};

use crate::error::{LlmError, snippet};
use crate::message::{AiMessage, Message, ToolCall, Usage};
use crate::model::ChatModel;
use crate::observe;
use crate::options::{CallOptions, ToolChoice};
use crate::providers::http::{
    EventParser, HttpSettings, RawEvent, Transport, event_json, http_builder_methods, parse_events,
    secret_header, sse_events, stream_error,
};
use crate::secret::SecretString;
use crate::stream::{
    ChatChunk, ChatResponse, ChatStream, FinishReason, ToolCallChunk, parse_tool_args,
};

const PROVIDER: &str = "openai";
const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

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
#[derive(Clone, Debug)]
pub struct OpenAiCompatible {
    model: String,
    url: String,
    api_key: Option<SecretString>,
    transport: Transport,
}

/// Builds an [`OpenAiCompatible`].
#[derive(Clone, Debug)]
pub struct OpenAiCompatibleBuilder {
    settings: HttpSettings,
}

impl OpenAiCompatibleBuilder {
    http_builder_methods!();

    /// Builds the model. Fails without a model name, or on a base URL that is not http(s).
    pub fn build(self) -> Result<OpenAiCompatible, LlmError> {
        let s = self.settings;
        let model = s
            .model
            .clone()
            .filter(|m| !m.is_empty())
            .ok_or_else(|| LlmError::Config {
                provider: PROVIDER,
                message: "no model name; call .model(..) or set OPENAI_MODEL".into(),
            })?;
        let base = s
            .base_url
            .clone()
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        let base = base.trim_end_matches('/');
        let transport = Transport::new(PROVIDER, &s, base)?;
        Ok(OpenAiCompatible {
            model,
            url: format!("{base}/chat/completions"),
            api_key: s.api_key.clone().filter(|k| !k.is_empty()),
            transport,
        })
    }
}

impl OpenAiCompatible {
    /// A builder with no model, the OpenAI base URL and no key.
    pub fn builder() -> OpenAiCompatibleBuilder {
        OpenAiCompatibleBuilder {
            settings: HttpSettings::new(),
        }
    }

    /// A builder filled from `OPENAI_API_KEY`, `OPENAI_BASE_URL` and `OPENAI_MODEL` (each
    /// optional; the builder's setters override them).
    pub fn builder_from_env() -> OpenAiCompatibleBuilder {
        let mut b = Self::builder();
        b.settings.api_key = std::env::var("OPENAI_API_KEY").ok().map(SecretString::from);
        b.settings.base_url = std::env::var("OPENAI_BASE_URL").ok();
        b.settings.model = std::env::var("OPENAI_MODEL").ok();
        b
    }

    /// A model configured from the environment (see [`builder_from_env`](Self::builder_from_env)).
    pub fn from_env() -> Result<Self, LlmError> {
        Self::builder_from_env().build()
    }

    fn headers(&self) -> Result<HeaderMap, LlmError> {
        let mut h = HeaderMap::new();
        if let Some(key) = &self.api_key {
            h.insert(
                AUTHORIZATION,
                secret_header(PROVIDER, &format!("Bearer {}", key.expose_secret()))?,
            );
        }
        Ok(h)
    }

    /// The request body for `messages` and `options` (public for tests and debugging; it holds
    /// no key).
    pub fn request_body(&self, messages: &[Message], options: &CallOptions, stream: bool) -> Value {
        let mut body = Map::new();
        body.insert(
            "model".into(),
            json!(options.model.as_deref().unwrap_or(&self.model)),
        );
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
    let usage = usage(v).unwrap_or_default();
    Ok(ChatResponse {
        message: AiMessage {
            id: v.get("id").and_then(Value::as_str).map(str::to_owned),
            content,
            tool_calls,
            usage: Some(usage),
            extra,
        },
        usage,
        finish_reason: reason,
        model: v
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(model)
            .to_owned(),
        latency: Default::default(),
    })
}

/// Turns chat.completion.chunk events into chunks.
#[derive(Default)]
struct ChunkParser {
    started: bool,
    done: bool,
    finished: bool,
    refusal: String,
}

impl EventParser for ChunkParser {
    fn on_event(&mut self, event: RawEvent) -> Result<Vec<ChatChunk>, LlmError> {
        let data = event.data.trim();
        if self.done || data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.done = true;
            return self.on_end();
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

    fn on_end(&mut self) -> Result<Vec<ChatChunk>, LlmError> {
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

#[async_trait]
impl ChatModel for OpenAiCompatible {
    fn provider(&self) -> &'static str {
        PROVIDER
    }

    fn model_name(&self) -> &str {
        &self.model
    }

    async fn invoke(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<ChatResponse, LlmError> {
        let body = self.request_body(messages, options, false);
        let model = options.model.as_deref().unwrap_or(&self.model);
        observe::observe_invoke(PROVIDER, model, async {
            let started = Instant::now();
            let v = self
                .transport
                .post_json(&self.url, &self.headers()?, &body)
                .await?;
            let mut response = parse_completion(&v, model)?;
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
        let body = self.request_body(messages, options, true);
        let model = options.model.clone().unwrap_or_else(|| self.model.clone());
        let span = observe::call_span(PROVIDER, &model, true);
        let started = Instant::now();
        let response = match self
            .transport
            .post(&self.url, &self.headers()?, &body, true)
            .await
        {
            Ok(r) => r,
            Err(e) => {
                observe::record_error(&span, PROVIDER, &model, &e);
                return Err(e);
            }
        };
        let events = sse_events(&self.transport, &self.url, response);
        let stream = parse_events(events, ChunkParser::default());
        Ok(observe::observe_stream(
            PROVIDER, model, span, started, stream,
        ))
    }
}
