//! [`ScriptedModel`]: a deterministic [`ChatModel`] for tests, benchmarks and offline runs.
//!
//! It answers from a script of [`Reply`]s (text, tool calls, JSON, errors, or a function of
//! the incoming messages), streams each reply chunk by chunk like a provider would, reports
//! usage, and records every request so tests can assert on what the model was sent.
//! `invoke` and `stream` produce the same reply: `invoke` gives what aggregating the stream
//! would, built directly.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;

use crate::error::LlmError;
use crate::message::{AiMessage, Message, ToolCall, Usage};
use crate::model::ChatModel;
use crate::observe;
use crate::options::CallOptions;
use crate::stream::{
    ChatChunk, ChatResponse, ChatStream, ChunkAggregator, FinishReason, ToolCallChunk,
};

const PROVIDER: &str = "scripted";

type ReplyFn = Arc<dyn Fn(&[Message], &CallOptions) -> Reply + Send + Sync>;

/// One scripted answer.
///
/// ```
/// use agent_llm::Reply;
/// use serde_json::json;
///
/// let plain = Reply::text("hello");
/// let call = Reply::tool_call("search", json!({"query": "rust"}));
/// let both = Reply::text("let me look").with_tool_call("search", json!({"query": "rust"}));
/// let data = Reply::json(json!({"answer": 42})).with_usage(10, 3);
/// let echo = Reply::from_fn(|messages| Reply::text(messages.last().map(|m| m.content()).unwrap_or("")));
/// ```
pub struct Reply {
    kind: ReplyKind,
}

enum ReplyKind {
    Message {
        text: String,
        tool_calls: Vec<(Option<String>, String, Value)>,
        usage: Option<Usage>,
        id: Option<String>,
        finish: Option<FinishReason>,
        delay: Option<Duration>,
    },
    Error(LlmError),
    Dynamic(ReplyFn),
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ReplyKind::Message {
                text, tool_calls, ..
            } => f
                .debug_struct("Reply")
                .field("text", text)
                .field(
                    "tool_calls",
                    &tool_calls.iter().map(|c| &c.1).collect::<Vec<_>>(),
                )
                .finish(),
            ReplyKind::Error(e) => f.debug_tuple("Reply::error").field(e).finish(),
            ReplyKind::Dynamic(_) => f.write_str("Reply::from_fn(..)"),
        }
    }
}

impl Reply {
    fn message(text: String) -> Self {
        Reply {
            kind: ReplyKind::Message {
                text,
                tool_calls: Vec::new(),
                usage: None,
                id: None,
                finish: None,
                delay: None,
            },
        }
    }

    /// A text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self::message(text.into())
    }

    /// A JSON answer (its text is the compact JSON), for structured output.
    pub fn json(value: Value) -> Self {
        Self::message(value.to_string())
    }

    /// An answer that calls one tool (ids are `call_1`, `call_2`... per model unless set with
    /// [`tool_call_with_id`](Self::tool_call_with_id)).
    pub fn tool_call(name: impl Into<String>, args: Value) -> Self {
        Self::message(String::new()).with_tool_call(name, args)
    }

    /// An answer that calls one tool with the given call id.
    pub fn tool_call_with_id(id: impl Into<String>, name: impl Into<String>, args: Value) -> Self {
        let mut r = Self::message(String::new());
        if let ReplyKind::Message { tool_calls, .. } = &mut r.kind {
            tool_calls.push((Some(id.into()), name.into(), args));
        }
        r
    }

    /// An answer that calls several tools at once.
    pub fn tool_calls<N: Into<String>>(calls: impl IntoIterator<Item = (N, Value)>) -> Self {
        calls
            .into_iter()
            .fold(Self::message(String::new()), |r, (name, args)| {
                r.with_tool_call(name, args)
            })
    }

    /// A failure: the call returns `error`.
    pub fn error(error: LlmError) -> Self {
        Reply {
            kind: ReplyKind::Error(error),
        }
    }

    /// A failure with a message (an [`LlmError::Other`]).
    pub fn fail(message: impl Into<String>) -> Self {
        Self::error(LlmError::Other {
            provider: PROVIDER,
            message: message.into(),
        })
    }

    /// An answer computed from the incoming messages when the call happens.
    pub fn from_fn(f: impl Fn(&[Message]) -> Reply + Send + Sync + 'static) -> Self {
        Reply {
            kind: ReplyKind::Dynamic(Arc::new(move |messages, _| f(messages))),
        }
    }

    /// An answer computed from the whole request (messages and options: tools, response
    /// format, [`CallOptions::task`]) when the call happens.
    pub fn from_request_fn(
        f: impl Fn(&[Message], &CallOptions) -> Reply + Send + Sync + 'static,
    ) -> Self {
        Reply {
            kind: ReplyKind::Dynamic(Arc::new(f)),
        }
    }

    /// Adds a tool call to this answer.
    pub fn with_tool_call(mut self, name: impl Into<String>, args: Value) -> Self {
        if let ReplyKind::Message { tool_calls, .. } = &mut self.kind {
            tool_calls.push((None, name.into(), args));
        }
        self
    }

    /// Adds a tool call with the given call id to this answer.
    pub fn with_tool_call_id(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        args: Value,
    ) -> Self {
        if let ReplyKind::Message { tool_calls, .. } = &mut self.kind {
            tool_calls.push((Some(id.into()), name.into(), args));
        }
        self
    }

    /// Sets the usage reported (default: whitespace-separated words in and out).
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        if let ReplyKind::Message { usage, .. } = &mut self.kind {
            *usage = Some(Usage::new(input_tokens, output_tokens));
        }
        self
    }

    /// Sets the AI message id (default: none, so `add_messages` gives one).
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        if let ReplyKind::Message { id: slot, .. } = &mut self.kind {
            *slot = Some(id.into());
        }
        self
    }

    /// Makes the call take `delay` before answering (for timeouts and concurrency tests).
    pub fn with_delay(mut self, delay: Duration) -> Self {
        if let ReplyKind::Message { delay: slot, .. } = &mut self.kind {
            *slot = Some(delay);
        }
        self
    }

    /// Sets the finish reason (default: `tool_calls` when there are tool calls, else `stop`).
    pub fn with_finish_reason(mut self, reason: FinishReason) -> Self {
        if let ReplyKind::Message { finish, .. } = &mut self.kind {
            *finish = Some(reason);
        }
        self
    }
}

impl From<&str> for Reply {
    fn from(text: &str) -> Self {
        Reply::text(text)
    }
}

impl From<String> for Reply {
    fn from(text: String) -> Self {
        Reply::text(text)
    }
}

/// A request the scripted model received.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptedRequest {
    /// The messages sent.
    pub messages: Vec<Message>,
    /// The options sent (bound tools included).
    pub options: CallOptions,
}

struct Script {
    replies: VecDeque<Reply>,
    fallback: Option<ReplyFn>,
    requests: Vec<ScriptedRequest>,
    record: bool,
    calls: usize,
    scripted: usize,
}

/// A deterministic chat model that answers from a script.
///
/// Clones share the script and the request log, so a test can hand a clone to a graph and
/// inspect [`requests`](Self::requests) afterwards.
///
/// ```
/// use agent_llm::{CallOptions, ChatModel, Message, Reply, ScriptedModel};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), agent_llm::LlmError> {
/// let model = ScriptedModel::new([
///     Reply::tool_call("echo", json!({"text": "hi"})),
///     Reply::text("done"),
/// ]);
/// let first = model.invoke(&[Message::human("say hi")], &CallOptions::default()).await?;
/// assert_eq!(first.tool_calls()[0].name, "echo");
/// let second = model.invoke(&[Message::human("and now?")], &CallOptions::default()).await?;
/// assert_eq!(second.text(), "done");
/// assert_eq!(model.requests().len(), 2);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ScriptedModel {
    name: String,
    script: Arc<Mutex<Script>>,
    call_ids: Arc<AtomicUsize>,
}

impl fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.lock();
        f.debug_struct("ScriptedModel")
            .field("name", &self.name)
            .field("remaining", &s.replies.len())
            .field("requests", &s.requests.len())
            .finish()
    }
}

impl ScriptedModel {
    /// A model that gives these replies in order, then fails with
    /// [`LlmError::ScriptExhausted`].
    pub fn new<R: Into<Reply>>(replies: impl IntoIterator<Item = R>) -> Self {
        let replies: VecDeque<Reply> = replies.into_iter().map(Into::into).collect();
        ScriptedModel {
            name: "scripted".into(),
            script: Arc::new(Mutex::new(Script {
                scripted: replies.len(),
                replies,
                fallback: None,
                requests: Vec::new(),
                record: true,
                calls: 0,
            })),
            call_ids: Arc::new(AtomicUsize::new(1)),
        }
    }

    /// A model that answers every call with `f(messages)`.
    pub fn from_fn(f: impl Fn(&[Message]) -> Reply + Send + Sync + 'static) -> Self {
        Self::from_request_fn(move |messages, _| f(messages))
    }

    /// A model that answers every call with `f(messages, options)`: a rule-based model that
    /// can tell calls apart by [`CallOptions::task`] or the response format asked for.
    pub fn from_request_fn(
        f: impl Fn(&[Message], &CallOptions) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let model = Self::new(Vec::<Reply>::new());
        model.lock().fallback = Some(Arc::new(f));
        model
    }

    /// Answers with `f(messages)` once the script is used up (instead of failing).
    pub fn then_fn(self, f: impl Fn(&[Message]) -> Reply + Send + Sync + 'static) -> Self {
        self.lock().fallback = Some(Arc::new(move |messages, _| f(messages)));
        self
    }

    /// Sets the model name it reports.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Stops keeping a copy of every request (for benchmarks and long runs);
    /// [`requests`](Self::requests) is then empty, [`call_count`](Self::call_count) still counts.
    pub fn without_recording(self) -> Self {
        self.lock().record = false;
        self
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: impl Into<Reply>) {
        let mut s = self.lock();
        s.scripted += 1;
        s.replies.push_back(reply.into());
    }

    /// Replies not used yet.
    pub fn remaining(&self) -> usize {
        self.lock().replies.len()
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<ScriptedRequest> {
        self.lock().requests.clone()
    }

    /// How many calls were made.
    pub fn call_count(&self) -> usize {
        self.lock().calls
    }

    fn lock(&self) -> MutexGuard<'_, Script> {
        // A panic while holding the lock cannot leave the script half-updated in a way that
        // matters for a test double, so a poisoned lock is simply taken over.
        self.script.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the request and takes the next reply, dynamic ones run.
    fn next_reply(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<Scripted, LlmError> {
        let reply = {
            let mut s = self.lock();
            s.calls += 1;
            if s.record {
                s.requests.push(ScriptedRequest {
                    messages: messages.to_vec(),
                    options: options.clone(),
                });
            }
            let call = s.calls;
            match s.replies.pop_front() {
                Some(r) => r,
                None => match &s.fallback {
                    Some(f) => Reply {
                        kind: ReplyKind::Dynamic(Arc::clone(f)),
                    },
                    None => {
                        return Err(LlmError::ScriptExhausted {
                            call,
                            len: s.scripted,
                        });
                    }
                },
            }
        };
        // Run dynamic replies outside the lock: they may call the model's own methods.
        let mut reply = reply;
        for _ in 0..8 {
            match reply.kind {
                ReplyKind::Dynamic(f) => reply = f(messages, options),
                _ => break,
            }
        }
        let ReplyKind::Message {
            text,
            tool_calls,
            usage,
            id,
            finish,
            delay,
        } = reply.kind
        else {
            return match reply.kind {
                ReplyKind::Error(e) => Err(e),
                _ => Err(LlmError::Other {
                    provider: PROVIDER,
                    message: "Reply::from_fn kept returning Reply::from_fn".into(),
                }),
            };
        };
        let finish = finish.unwrap_or(if tool_calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        });
        let calls: Vec<ToolCall> = tool_calls
            .into_iter()
            .map(|(id, name, args)| {
                let id = id.unwrap_or_else(|| {
                    format!("call_{}", self.call_ids.fetch_add(1, Ordering::Relaxed))
                });
                ToolCall { id, name, args }
            })
            .collect();
        // Without a scripted usage, words stand for tokens: the conversation's in, the
        // reply's text and arguments out.
        let usage = usage.unwrap_or_else(|| {
            let words_in: usize = messages
                .iter()
                .map(|m| m.content().split_whitespace().count())
                .sum();
            let words_args: usize = calls
                .iter()
                .map(|c| c.args.to_string().split_whitespace().count().max(1))
                .sum();
            let words_out = text.split_whitespace().count() + words_args;
            Usage::new(words_in as u64, words_out as u64)
        });
        Ok(Scripted {
            id,
            text,
            calls,
            usage,
            finish,
            delay,
        })
    }
}

/// A reply ready to be sent: as chunks (`stream`) or whole (`invoke`).
struct Scripted {
    id: Option<String>,
    text: String,
    calls: Vec<ToolCall>,
    usage: Usage,
    finish: FinishReason,
    delay: Option<Duration>,
}

impl Scripted {
    /// The reply as a provider streams it: text word by word, each call's arguments as JSON
    /// text in two pieces, then usage and the finish reason.
    fn into_chunks(self, model: &str) -> Vec<ChatChunk> {
        let mut chunks = vec![ChatChunk::Start {
            id: self.id,
            model: Some(model.to_owned()),
        }];
        for piece in self.text.split_inclusive(' ') {
            chunks.push(ChatChunk::Text {
                text: piece.to_owned(),
            });
        }
        for (index, call) in self.calls.into_iter().enumerate() {
            let json = call.args.to_string();
            // Split the arguments in two chunks, on a char boundary near the middle.
            let mut mid = json.len() / 2;
            while !json.is_char_boundary(mid) {
                mid += 1;
            }
            chunks.push(ChatChunk::ToolCall(ToolCallChunk {
                index,
                id: Some(call.id),
                name: Some(call.name),
                args: json[..mid].to_owned(),
            }));
            chunks.push(ChatChunk::ToolCall(ToolCallChunk {
                index,
                id: None,
                name: None,
                args: json[mid..].to_owned(),
            }));
        }
        chunks.push(ChatChunk::Usage { usage: self.usage });
        chunks.push(ChatChunk::Finish {
            reason: self.finish,
        });
        chunks
    }

    /// The reply whole, as the aggregated stream would give it, without writing the
    /// arguments out as JSON text and parsing them back (a provider's non-streaming answer
    /// parses once; a script has the values already). Replies the aggregator turns into
    /// errors (a refusal, a filtered answer, a call without a name) go through it.
    fn into_response(self, model: &str) -> Result<ChatResponse, LlmError> {
        let aggregated = matches!(
            self.finish,
            FinishReason::ContentFilter | FinishReason::Refusal
        ) || self
            .calls
            .iter()
            .any(|c| c.name.is_empty() || c.id.is_empty());
        if aggregated {
            let mut agg = ChunkAggregator::new(PROVIDER);
            for chunk in self.into_chunks(model) {
                agg.push(&chunk);
            }
            return agg.finish();
        }
        let message = AiMessage {
            id: self.id,
            content: self.text,
            tool_calls: self.calls,
            ..AiMessage::default()
        };
        Ok(ChatResponse::new(message, self.usage, self.finish, model))
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    fn provider(&self) -> &'static str {
        PROVIDER
    }

    fn model_name(&self) -> &str {
        &self.name
    }

    async fn invoke(
        &self,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<ChatResponse, LlmError> {
        let call = observe::Call {
            provider: PROVIDER,
            model: &self.name,
            messages,
            options,
        };
        observe::observe_invoke(call, async {
            let started = Instant::now();
            let mut reply = self.next_reply(messages, options)?;
            if let Some(delay) = reply.delay.take() {
                tokio::time::sleep(delay).await;
            }
            let mut response = reply.into_response(&self.name)?;
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
        let call = observe::Call {
            provider: PROVIDER,
            model: &self.name,
            messages,
            options,
        };
        let span = observe::call_span(&call, true);
        let started = Instant::now();
        let chunks = match self.next_reply(messages, options) {
            Ok(mut reply) => {
                if let Some(delay) = reply.delay.take() {
                    tokio::time::sleep(delay).await;
                }
                reply.into_chunks(&self.name)
            }
            Err(e) => {
                observe::record_error(&span, &call, &e);
                return Err(e);
            }
        };
        let stream = Box::pin(futures::stream::iter(chunks.into_iter().map(Ok)));
        Ok(observe::observe_stream(&call, span, started, stream))
    }
}
