//! Google Gemini's `generateContent` API (`POST {base}/v1beta/models/{model}:generateContent`,
//! streamed through `:streamGenerateContent?alt=sse`), with the key in `x-goog-api-key`.
//!
//! System messages become `systemInstruction`; conversation turns become `contents` with the
//! roles `user` and `model` (consecutive turns of one role are merged, so the results of
//! parallel tool calls travel together); tool calls and results are `functionCall` /
//! `functionResponse` parts (results as `{"output": ...}`, failures as `{"error": ...}`, the
//! documented keys). Tools are declared with `parametersJsonSchema`, structured output asks for
//! `responseMimeType: application/json` with a `responseJsonSchema`. Gemini names no call ids
//! on older models, so fresh ones are made when it gives none. Parts this crate does not model
//! (thought signatures...) make the reply keep its parts verbatim in `extra.gemini_parts`, and
//! they are sent back as they came by `invoke`; a stream yields thought text as reasoning
//! chunks but does not keep signatures, so thinking models with tool use need `invoke`.

use std::collections::{HashMap, HashSet};

use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};

use crate::error::{LlmError, snippet};
use crate::message::{AiMessage, Message, ToolCall, Usage};
use crate::options::{CallOptions, ToolChoice};
use crate::providers::http::{event_json, stream_error};
use crate::providers::model::{HttpChatModel, HttpChatModelBuilder};
use crate::providers::wire::{EnvVars, Framing, StreamDecoder, Wire, WireEvent, sensitive_header};
use crate::reducer::new_message_id;
use crate::secret::SecretString;
use crate::stream::{ChatChunk, ChatResponse, FinishReason, ToolCallChunk};

const PROVIDER: &str = "gemini";
const EXTRA_PARTS: &str = "gemini_parts";

/// A chat model behind Google's Gemini API.
///
/// ```no_run
/// use agent_llm::Gemini;
/// // GEMINI_API_KEY, GEMINI_BASE_URL (default https://generativelanguage.googleapis.com),
/// // GEMINI_MODEL
/// let model = Gemini::builder_from_env().model("gemini-2.5-flash").build()?;
/// # Ok::<(), agent_llm::LlmError>(())
/// ```
pub type Gemini = HttpChatModel<GeminiWire>;

/// Builds a [`Gemini`] model.
pub type GeminiBuilder = HttpChatModelBuilder<GeminiWire>;

/// The Gemini `generateContent` wire format. See the [module docs](self).
#[derive(Clone, Debug, Default)]
pub struct GeminiWire;

impl Wire for GeminiWire {
    const PROVIDER: &'static str = PROVIDER;
    const DEFAULT_BASE_URL: &'static str = "https://generativelanguage.googleapis.com";
    const ENV: EnvVars = EnvVars {
        api_key: "GEMINI_API_KEY",
        base_url: "GEMINI_BASE_URL",
        model: "GEMINI_MODEL",
    };
    const FRAMING: Framing = Framing::Sse;
    type Decoder = ResponsesDecoder;

    /// The base URL may end in an API version (`.../v1beta`); without one, `v1beta` is used.
    fn base_url(&self, configured: &str) -> String {
        let base = configured.trim_end_matches('/');
        let versioned = base
            .rsplit('/')
            .next()
            .is_some_and(|last| last.starts_with("v1"));
        if versioned {
            base.to_owned()
        } else {
            format!("{base}/v1beta")
        }
    }

    fn url(&self, base_url: &str, model: &str, stream: bool) -> String {
        let model = model.strip_prefix("models/").unwrap_or(model);
        if stream {
            format!("{base_url}/models/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("{base_url}/models/{model}:generateContent")
        }
    }

    fn headers(&self, api_key: Option<&SecretString>) -> Result<HeaderMap, LlmError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = api_key {
            headers.insert(
                "x-goog-api-key",
                sensitive_header(PROVIDER, key.expose_secret())?,
            );
        }
        Ok(headers)
    }

    fn request_body(
        &self,
        _model: &str,
        messages: &[Message],
        options: &CallOptions,
        _stream: bool,
    ) -> Value {
        let mut body = Map::new();
        let (system, contents) = contents(messages);
        if !system.is_empty() {
            body.insert(
                "systemInstruction".into(),
                json!({"parts": [{"text": system.join("\n\n")}]}),
            );
        }
        body.insert("contents".into(), Value::Array(contents));
        if !options.tools.is_empty() {
            let declarations: Vec<Value> = options
                .tools
                .iter()
                .map(|t| {
                    json!({"name": t.name, "description": t.description,
                           "parametersJsonSchema": t.parameters})
                })
                .collect();
            body.insert(
                "tools".into(),
                json!([{"functionDeclarations": declarations}]),
            );
        }
        if let Some(choice) = &options.tool_choice {
            let config = match choice {
                ToolChoice::Auto => json!({"mode": "AUTO"}),
                ToolChoice::None => json!({"mode": "NONE"}),
                ToolChoice::Required => json!({"mode": "ANY"}),
                ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
            };
            body.insert(
                "toolConfig".into(),
                json!({"functionCallingConfig": config}),
            );
        }
        let mut generation = Map::new();
        if let Some(t) = options.temperature {
            generation.insert("temperature".into(), json!(t));
        }
        if let Some(m) = options.max_tokens {
            generation.insert("maxOutputTokens".into(), json!(m));
        }
        if !options.stop.is_empty() {
            generation.insert("stopSequences".into(), json!(options.stop));
        }
        if let Some(s) = options.seed {
            generation.insert("seed".into(), json!(s));
        }
        if let Some(f) = &options.response_format {
            generation.insert("responseMimeType".into(), json!("application/json"));
            generation.insert("responseJsonSchema".into(), f.schema.clone());
        }
        if !generation.is_empty() {
            body.insert("generationConfig".into(), Value::Object(generation));
        }
        Value::Object(body)
    }

    fn parse_response(
        &self,
        body: &Value,
        model: &str,
        _options: &CallOptions,
    ) -> Result<ChatResponse, LlmError> {
        parse_response(body, model)
    }

    fn decoder(&self, _options: &CallOptions) -> ResponsesDecoder {
        ResponsesDecoder::default()
    }
}

/// The system instruction's texts and the `contents` turns of a conversation.
fn contents(messages: &[Message]) -> (Vec<String>, Vec<Value>) {
    let mut system = Vec::new();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    // Tool names by call id (a functionResponse names its function, a tool message may not),
    // and the call ids Gemini itself gave (only those are sent back).
    let mut call_names: HashMap<&str, &str> = HashMap::new();
    let mut gemini_ids: HashSet<String> = HashSet::new();
    for m in messages {
        let (role, parts) = match m {
            Message::System(m) => {
                system.push(m.content.clone());
                continue;
            }
            Message::Human(m) => ("user", vec![json!({"text": m.content})]),
            Message::Ai(m) => {
                for c in &m.tool_calls {
                    call_names.insert(c.id.as_str(), c.name.as_str());
                }
                let parts =
                    match m.extra.get(EXTRA_PARTS).and_then(Value::as_array) {
                        Some(kept) => {
                            gemini_ids.extend(kept.iter().filter_map(|p| {
                                p.pointer("/functionCall/id")
                                    .and_then(Value::as_str)
                                    .map(str::to_owned)
                            }));
                            kept.clone()
                        }
                        None => {
                            let mut parts = Vec::new();
                            if !m.content.is_empty() {
                                parts.push(json!({"text": m.content}));
                            }
                            parts.extend(m.tool_calls.iter().map(
                                |c| json!({"functionCall": {"name": c.name, "args": c.args}}),
                            ));
                            parts
                        }
                    };
                if parts.is_empty() {
                    continue;
                }
                ("model", parts)
            }
            Message::Tool(m) => {
                let name = m
                    .name
                    .as_deref()
                    .or_else(|| call_names.get(m.tool_call_id.as_str()).copied())
                    .unwrap_or(m.tool_call_id.as_str());
                let value = serde_json::from_str::<Value>(&m.content)
                    .unwrap_or_else(|_| Value::String(m.content.clone()));
                let key = if m.is_error { "error" } else { "output" };
                let mut response = json!({"name": name, "response": {key: value}});
                if gemini_ids.contains(&m.tool_call_id) {
                    response["id"] = json!(m.tool_call_id);
                }
                ("user", vec![json!({"functionResponse": response})])
            }
            Message::Remove(_) => continue,
        };
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(parts),
            _ => turns.push((role, parts)),
        }
    }
    let contents = turns
        .into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect();
    (system, contents)
}

fn finish_reason(s: &str) -> FinishReason {
    match s {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            FinishReason::ContentFilter
        }
        other => FinishReason::Other(other.to_owned()),
    }
}

fn usage(v: &Value) -> Option<Usage> {
    let u = v.get("usageMetadata").filter(|u| u.is_object())?;
    let count = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage::new(
        count("promptTokenCount"),
        count("candidatesTokenCount") + count("thoughtsTokenCount"),
    ))
}

/// The error a response carries instead of an answer: an `error` object, or a prompt the
/// safety filters blocked (no candidates, `promptFeedback.blockReason`).
fn refused(v: &Value) -> Option<LlmError> {
    if v.get("error").is_some_and(|e| !e.is_null()) {
        return Some(stream_error(PROVIDER, v));
    }
    let no_candidates = v
        .get("candidates")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    let blocked = v
        .pointer("/promptFeedback/blockReason")
        .and_then(Value::as_str);
    match blocked {
        Some(reason) if no_candidates => Some(LlmError::ContentFiltered {
            provider: PROVIDER,
            partial: format!("(the prompt was blocked: {reason})"),
        }),
        _ => None,
    }
}

/// One call of a `functionCall` part, with a fresh id when Gemini gave none.
fn function_call(call: &Value) -> Result<ToolCall, LlmError> {
    let name =
        call.get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| LlmError::MalformedResponse {
                provider: PROVIDER,
                reason: "functionCall has no name".into(),
                bytes: snippet(call.to_string().as_bytes()),
            })?;
    let id = call
        .get("id")
        .and_then(Value::as_str)
        .map_or_else(|| format!("call_{}", new_message_id()), str::to_owned);
    let args = call
        .get("args")
        .filter(|a| !a.is_null())
        .cloned()
        .unwrap_or_else(|| json!({}));
    Ok(ToolCall::new(id, name, args))
}

/// The first candidate's parts.
fn parts(v: &Value) -> &[Value] {
    v.pointer("/candidates/0/content/parts")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn is_thought(part: &Value) -> bool {
    part.get("thought").and_then(Value::as_bool) == Some(true)
}

/// Parses a whole `GenerateContentResponse`.
fn parse_response(v: &Value, model: &str) -> Result<ChatResponse, LlmError> {
    if let Some(error) = refused(v) {
        return Err(error);
    }
    if v.pointer("/candidates/0").is_none() {
        return Err(LlmError::MalformedResponse {
            provider: PROVIDER,
            reason: "response has no candidates".into(),
            bytes: snippet(v.to_string().as_bytes()),
        });
    }
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut tool_calls = Vec::new();
    let mut unmodelled = false;
    for part in parts(v) {
        if let Some(call) = part.get("functionCall") {
            tool_calls.push(function_call(call)?);
        } else if let Some(text) = part.get("text").and_then(Value::as_str) {
            if is_thought(part) {
                reasoning.push_str(text);
            } else {
                content.push_str(text);
            }
        }
        unmodelled |= part.as_object().is_some_and(|o| {
            o.keys()
                .any(|k| !matches!(k.as_str(), "text" | "thought" | "functionCall"))
        });
    }
    let mut reason = v
        .pointer("/candidates/0/finishReason")
        .and_then(Value::as_str)
        .map_or(FinishReason::Stop, finish_reason);
    if reason == FinishReason::ContentFilter {
        return Err(LlmError::ContentFiltered {
            provider: PROVIDER,
            partial: content,
        });
    }
    if !tool_calls.is_empty() {
        reason = FinishReason::ToolCalls;
    }
    let mut extra = Map::new();
    if !reasoning.is_empty() {
        extra.insert("reasoning_content".into(), json!(reasoning));
    }
    if unmodelled {
        extra.insert(EXTRA_PARTS.into(), Value::Array(parts(v).to_vec()));
    }
    let message = AiMessage {
        id: v
            .get("responseId")
            .and_then(Value::as_str)
            .map(str::to_owned),
        content,
        tool_calls,
        usage: None,
        extra,
    };
    let answered = v
        .get("modelVersion")
        .and_then(Value::as_str)
        .unwrap_or(model);
    Ok(ChatResponse::new(
        message,
        usage(v).unwrap_or_default(),
        reason,
        answered,
    ))
}

/// Turns the stream of `GenerateContentResponse`s (one per SSE event) into chunks.
#[derive(Debug, Default)]
pub struct ResponsesDecoder {
    started: bool,
    calls: usize,
    text: String,
    finished: bool,
}

impl StreamDecoder for ResponsesDecoder {
    fn decode(&mut self, event: WireEvent) -> Result<Vec<ChatChunk>, LlmError> {
        if self.finished || event.data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let v = event_json(PROVIDER, &event.data)?;
        if let Some(error) = refused(&v) {
            return Err(error);
        }
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            out.push(ChatChunk::Start {
                id: v
                    .get("responseId")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                model: v
                    .get("modelVersion")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        }
        for part in parts(&v) {
            if let Some(call) = part.get("functionCall") {
                let call = function_call(call)?;
                out.push(ChatChunk::ToolCall(ToolCallChunk {
                    index: self.calls,
                    id: Some(call.id),
                    name: Some(call.name),
                    args: call.args.to_string(),
                }));
                self.calls += 1;
            } else if let Some(text) = part
                .get("text")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                if is_thought(part) {
                    out.push(ChatChunk::Reasoning {
                        text: text.to_owned(),
                    });
                } else {
                    self.text.push_str(text);
                    out.push(ChatChunk::Text {
                        text: text.to_owned(),
                    });
                }
            }
        }
        if let Some(u) = usage(&v) {
            out.push(ChatChunk::Usage { usage: u });
        }
        if let Some(reason) = v
            .pointer("/candidates/0/finishReason")
            .and_then(Value::as_str)
        {
            self.finished = true;
            let mut reason = finish_reason(reason);
            if reason == FinishReason::ContentFilter {
                return Err(LlmError::ContentFiltered {
                    provider: PROVIDER,
                    partial: std::mem::take(&mut self.text),
                });
            }
            if self.calls > 0 {
                reason = FinishReason::ToolCalls;
            }
            out.push(ChatChunk::Finish { reason });
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<ChatChunk>, LlmError> {
        if self.finished {
            Ok(Vec::new())
        } else {
            Err(LlmError::TruncatedStream {
                provider: PROVIDER,
                detail: "no response with a `finishReason` arrived".into(),
            })
        }
    }
}
