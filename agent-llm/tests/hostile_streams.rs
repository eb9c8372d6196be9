//! Hostile replies through the public API of every provider (OpenAI-compatible, Anthropic,
//! Ollama, Gemini): arbitrary, truncated, mutated and re-framed SSE / NDJSON streams and JSON
//! bodies, odd tool-call deltas and error statuses give a message or a typed [`LlmError`],
//! never a panic or a hang; and replies over the size ceilings or past a stream's deadline
//! end with the typed error that says so.
//!
//! One tiny HTTP server per test (a tokio `TcpListener` writing canned bytes, keep-alive so a
//! case costs no new connection) answers every case of that test. Properties run
//! `PROPTEST_CASES` cases (256 by default); each case picks one provider.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_llm::providers::anthropic::AnthropicWire;
use agent_llm::providers::gemini::GeminiWire;
use agent_llm::providers::ollama::OllamaWire;
use agent_llm::providers::openai::OpenAiWire;
use agent_llm::{
    CallOptions, ChatChunk, ChatModel, ChatResponse, HttpChatModel, HttpChatModelBuilder, LlmError,
    Message, RetryPolicy, Timeouts, Wire,
};
use futures::StreamExt;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

// --- the server --------------------------------------------------------------------------------

/// What the server answers the next request with.
#[derive(Clone, Debug)]
struct Canned {
    status: u16,
    content_type: &'static str,
    /// The body, written piece by piece (flushed between pieces).
    pieces: Vec<Vec<u8>>,
    /// Written again and again after `pieces`, `every` apart, until the client hangs up.
    endless: Option<(Vec<u8>, Duration)>,
    /// Whether the body has a `Content-Length` (and the connection is kept alive) or ends
    /// when the server closes the connection.
    length: bool,
}

impl Canned {
    fn ok(content_type: &'static str, body: Vec<u8>) -> Self {
        Canned {
            status: 200,
            content_type,
            pieces: vec![body],
            endless: None,
            length: true,
        }
    }

    /// The body cut at `cuts` (indexes into it), written as separate pieces.
    fn cut(mut self, cuts: &[Index]) -> Self {
        let body: Vec<u8> = self.pieces.concat();
        let mut at: Vec<usize> = cuts.iter().map(|i| i.index(body.len() + 1)).collect();
        at.sort_unstable();
        at.dedup();
        let mut pieces = Vec::new();
        let mut from = 0;
        for to in at.into_iter().chain([body.len()]) {
            if to > from {
                pieces.push(body[from..to].to_vec());
                from = to;
            }
        }
        self.pieces = pieces;
        self
    }
}

struct Server {
    addr: SocketAddr,
    canned: Arc<Mutex<Canned>>,
}

impl Server {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let canned = Arc::new(Mutex::new(Canned::ok("application/json", b"{}".to_vec())));
        let shared = canned.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, shared.clone()));
            }
        });
        Server { addr, canned }
    }
}

/// Answers the requests of one connection with whatever is canned when each arrives.
async fn serve(socket: TcpStream, canned: Arc<Mutex<Canned>>) {
    let _ = socket.set_nodelay(true);
    let mut reader = BufReader::new(socket);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let reply = canned.lock().unwrap().clone();
        let socket = reader.get_mut();
        let total: usize = reply.pieces.iter().map(Vec::len).sum();
        let framing = if reply.length && reply.endless.is_none() {
            format!("content-length: {total}\r\n")
        } else {
            "connection: close\r\n".to_owned()
        };
        let head = format!(
            "HTTP/1.1 {} Canned\r\ncontent-type: {}\r\n{framing}\r\n",
            reply.status, reply.content_type
        );
        if socket.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        for piece in &reply.pieces {
            if socket.write_all(piece).await.is_err() || socket.flush().await.is_err() {
                return;
            }
            tokio::task::yield_now().await;
        }
        if let Some((chunk, every)) = &reply.endless {
            loop {
                tokio::time::sleep(*every).await;
                if socket.write_all(chunk).await.is_err() {
                    return;
                }
            }
        }
        if !reply.length {
            let _ = socket.shutdown().await;
            return;
        }
    }
}

// --- the providers -----------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Provider {
    OpenAi,
    Anthropic,
    Ollama,
    Gemini,
}

const PROVIDERS: [Provider; 4] = [
    Provider::OpenAi,
    Provider::Anthropic,
    Provider::Ollama,
    Provider::Gemini,
];

/// Builder settings a test changes.
#[derive(Clone, Copy, Default)]
struct Settings {
    max_body: Option<usize>,
    max_event: Option<usize>,
    deadline: Option<Duration>,
}

fn build<W: Wire + Default>(base: &str, s: Settings) -> Arc<dyn ChatModel> {
    let mut b: HttpChatModelBuilder<W> = HttpChatModel::<W>::builder()
        .base_url(base)
        .api_key("test-key")
        .model("mock-model")
        .retry(RetryPolicy::none())
        .timeouts(Timeouts {
            connect: Duration::from_secs(2),
            request: Duration::from_secs(10),
            stream_idle: Duration::from_secs(10),
        });
    if let Some(n) = s.max_body {
        b = b.max_body_bytes(n);
    }
    if let Some(n) = s.max_event {
        b = b.max_event_bytes(n);
    }
    if let Some(d) = s.deadline {
        b = b.stream_deadline(d);
    }
    Arc::new(b.build().unwrap())
}

impl Provider {
    fn model(self, base: &str, s: Settings) -> Arc<dyn ChatModel> {
        match self {
            Provider::OpenAi => build::<OpenAiWire>(base, s),
            Provider::Anthropic => build::<AnthropicWire>(base, s),
            Provider::Ollama => build::<OllamaWire>(base, s),
            Provider::Gemini => build::<GeminiWire>(base, s),
        }
    }

    fn sse(self) -> bool {
        self != Provider::Ollama
    }

    fn stream_type(self) -> &'static str {
        if self.sse() {
            "text/event-stream"
        } else {
            "application/x-ndjson"
        }
    }

    /// The events of a complete streamed reply: (SSE event name, data).
    fn stream_events(self, spec: &Spec) -> Vec<(Option<&'static str>, String)> {
        let mut out: Vec<(Option<&'static str>, Value)> = Vec::new();
        match self {
            Provider::OpenAi => {
                let chunk = |delta: Value, finish: Option<&str>| {
                    json!({"id": "c1", "object": "chat.completion.chunk", "model": "m",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
                };
                out.push((
                    None,
                    chunk(json!({"role": "assistant", "content": ""}), None),
                ));
                for p in &spec.text {
                    out.push((None, chunk(json!({"content": p}), None)));
                }
                for (i, call) in spec.calls.iter().enumerate() {
                    for (j, fragment) in call.fragments().iter().enumerate() {
                        let mut delta = json!({"index": i, "function": {"arguments": fragment}});
                        if j == 0 {
                            delta["id"] = json!(format!("call_{i}"));
                            delta["type"] = json!("function");
                            delta["function"]["name"] = json!(call.name);
                        }
                        out.push((None, chunk(json!({"tool_calls": [delta]}), None)));
                    }
                }
                out.push((None, chunk(json!({}), Some("stop"))));
                out.push((
                    None,
                    json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}}),
                ));
                let mut events: Vec<_> = out.into_iter().map(|(n, v)| (n, v.to_string())).collect();
                events.push((None, "[DONE]".to_owned()));
                return events;
            }
            Provider::Anthropic => {
                let named = |v: Value| (v["type"].as_str().map(event_name), v);
                out.push(named(
                    json!({"type": "message_start", "message": {"id": "msg", "model": "m",
                    "usage": {"input_tokens": 3, "output_tokens": 1}}}),
                ));
                out.push(named(json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}})));
                for p in &spec.text {
                    out.push(named(json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": p}})));
                }
                out.push(named(json!({"type": "content_block_stop", "index": 0})));
                for (i, call) in spec.calls.iter().enumerate() {
                    let index = i + 1;
                    out.push(named(json!({"type": "content_block_start", "index": index,
                        "content_block": {"type": "tool_use", "id": format!("toolu_{i}"),
                                          "name": call.name, "input": {}}})));
                    for fragment in call.fragments() {
                        out.push(named(json!({"type": "content_block_delta", "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": fragment}})));
                    }
                    out.push(named(json!({"type": "content_block_stop", "index": index})));
                }
                out.push(named(json!({"type": "ping"})));
                out.push(named(json!({"type": "message_delta",
                    "delta": {"stop_reason": if spec.calls.is_empty() { "end_turn" } else { "tool_use" }},
                    "usage": {"output_tokens": 4}})));
                out.push(named(json!({"type": "message_stop"})));
            }
            Provider::Ollama => {
                for p in &spec.text {
                    out.push((
                        None,
                        json!({"model": "m", "done": false,
                        "message": {"role": "assistant", "content": p}}),
                    ));
                }
                if !spec.calls.is_empty() {
                    let calls: Vec<Value> = spec
                        .calls
                        .iter()
                        .map(|c| json!({"function": {"name": c.name, "arguments": c.args}}))
                        .collect();
                    out.push((
                        None,
                        json!({"model": "m", "done": false,
                        "message": {"role": "assistant", "content": "", "tool_calls": calls}}),
                    ));
                }
                out.push((
                    None,
                    json!({"model": "m", "done": true, "done_reason": "stop",
                    "message": {"role": "assistant", "content": ""},
                    "prompt_eval_count": 3, "eval_count": 4}),
                ));
            }
            Provider::Gemini => {
                let event = |parts: Value| {
                    json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
                           "modelVersion": "m", "responseId": "r"})
                };
                for p in &spec.text {
                    out.push((None, event(json!([{"text": p}]))));
                }
                let calls: Vec<Value> = spec
                    .calls
                    .iter()
                    .map(|c| json!({"functionCall": {"name": c.name, "args": c.args}}))
                    .collect();
                let mut last = event(Value::Array(calls));
                last["candidates"][0]["finishReason"] = json!("STOP");
                last["usageMetadata"] = json!({"promptTokenCount": 3, "candidatesTokenCount": 4});
                out.push((None, last));
            }
        }
        out.into_iter().map(|(n, v)| (n, v.to_string())).collect()
    }

    /// A whole (non-streamed) reply.
    fn json_reply(self, spec: &Spec) -> Value {
        let text = spec.text.concat();
        match self {
            Provider::OpenAi => {
                let mut message = json!({"role": "assistant", "content": text});
                if !spec.calls.is_empty() {
                    message["tool_calls"] = spec
                        .calls
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            json!({"id": format!("call_{i}"), "type": "function",
                            "function": {"name": c.name, "arguments": c.args.to_string()}})
                        })
                        .collect();
                }
                json!({"id": "c1", "model": "m", "choices": [{"index": 0, "message": message,
                       "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 4}})
            }
            Provider::Anthropic => {
                let mut content = vec![json!({"type": "text", "text": text})];
                content.extend(spec.calls.iter().enumerate().map(|(i, c)| {
                    json!({"type": "tool_use", "id": format!("toolu_{i}"), "name": c.name, "input": c.args})
                }));
                json!({"id": "msg", "type": "message", "model": "m", "content": content,
                       "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 4}})
            }
            Provider::Ollama => {
                let calls: Vec<Value> = spec
                    .calls
                    .iter()
                    .map(|c| json!({"function": {"name": c.name, "arguments": c.args}}))
                    .collect();
                json!({"model": "m", "done": true, "done_reason": "stop",
                       "message": {"role": "assistant", "content": text, "tool_calls": calls},
                       "prompt_eval_count": 3, "eval_count": 4})
            }
            Provider::Gemini => {
                let mut parts = vec![json!({"text": text})];
                parts.extend(
                    spec.calls
                        .iter()
                        .map(|c| json!({"functionCall": {"name": c.name, "args": c.args}})),
                );
                json!({"candidates": [{"content": {"role": "model", "parts": parts},
                       "finishReason": "STOP", "index": 0}],
                       "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4}})
            }
        }
    }

    /// `events` framed canonically: SSE (`event:` for named events) or NDJSON lines.
    fn frame(self, events: &[(Option<&'static str>, String)]) -> Vec<u8> {
        let mut out = String::new();
        for (name, data) in events {
            if self.sse() {
                if let Some(name) = name {
                    out.push_str(&format!("event: {name}\n"));
                }
                out.push_str(&format!("data: {data}\n\n"));
            } else {
                out.push_str(data);
                out.push('\n');
            }
        }
        out.into_bytes()
    }
}

fn event_name(s: &str) -> &'static str {
    match s {
        "message_start" => "message_start",
        "content_block_start" => "content_block_start",
        "content_block_delta" => "content_block_delta",
        "content_block_stop" => "content_block_stop",
        "message_delta" => "message_delta",
        "message_stop" => "message_stop",
        "ping" => "ping",
        _ => "message",
    }
}

/// A well-formed reply: text in pieces and tool calls with their arguments in fragments.
#[derive(Clone, Debug)]
struct Spec {
    text: Vec<String>,
    calls: Vec<Call>,
}

#[derive(Clone, Debug)]
struct Call {
    name: String,
    args: Value,
    /// Where the arguments text is cut into fragments (OpenAI and Anthropic stream them).
    cuts: Vec<Index>,
}

impl Call {
    fn fragments(&self) -> Vec<String> {
        let text = self.args.to_string();
        let chars: Vec<char> = text.chars().collect();
        let mut at: Vec<usize> = self.cuts.iter().map(|i| i.index(chars.len() + 1)).collect();
        at.sort_unstable();
        at.dedup();
        let mut out = Vec::new();
        let mut from = 0;
        for to in at.into_iter().chain([chars.len()]) {
            if to > from || out.is_empty() {
                out.push(chars[from..to.max(from)].iter().collect());
                from = to.max(from);
            }
        }
        out
    }
}

fn args_strategy() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        any::<String>().prop_map(Value::from),
        Just(Value::Null),
    ];
    proptest::collection::btree_map("[a-z_]{1,6}", scalar, 0..4)
        .prop_map(|m: BTreeMap<String, Value>| Value::Object(m.into_iter().collect()))
}

fn spec_strategy() -> impl Strategy<Value = Spec> {
    let call = (
        "[a-z_]{1,10}",
        args_strategy(),
        proptest::collection::vec(any::<Index>(), 0..4),
    )
        .prop_map(|(name, args, cuts)| Call { name, args, cuts });
    (
        proptest::collection::vec(any::<String>(), 0..5),
        proptest::collection::vec(call, 0..3),
    )
        .prop_map(|(text, calls)| Spec { text, calls })
}

fn provider_strategy() -> impl Strategy<Value = Provider> {
    proptest::sample::select(PROVIDERS.to_vec())
}

/// Keys the providers' decoders look at, so arbitrary documents reach their branches.
const KEYS: &[&str] = &[
    "choices",
    "delta",
    "content",
    "tool_calls",
    "index",
    "id",
    "function",
    "name",
    "arguments",
    "finish_reason",
    "usage",
    "type",
    "message",
    "content_block",
    "partial_json",
    "input",
    "candidates",
    "parts",
    "text",
    "functionCall",
    "args",
    "finishReason",
    "done",
    "error",
    "thinking",
    "refusal",
    "stop_reason",
    "model",
    "done_reason",
    "prompt_tokens",
    "input_tokens",
    "output_tokens",
    "usageMetadata",
    "promptFeedback",
    "blockReason",
    "thought",
    "reasoning_content",
    "status",
    "code",
];

fn json_strategy() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        4 => proptest::sample::select(KEYS).prop_map(str::to_owned),
        1 => any::<String>(),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        proptest::sample::select(KEYS).prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

// --- the harness -------------------------------------------------------------------------------

struct Harness {
    rt: tokio::runtime::Runtime,
    server: Server,
    models: Vec<(Provider, Arc<dyn ChatModel>)>,
}

impl Harness {
    fn new() -> Self {
        Self::with(Settings::default())
    }

    fn with(settings: Settings) -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let server = rt.block_on(Server::start());
        let base = format!("http://{}", server.addr);
        let models = PROVIDERS
            .iter()
            .map(|p| (*p, p.model(&base, settings)))
            .collect();
        Harness { rt, server, models }
    }

    fn model(&self, p: Provider) -> &dyn ChatModel {
        self.models
            .iter()
            .find(|(q, _)| *q == p)
            .map(|(_, m)| m.as_ref())
            .unwrap()
    }

    /// A streamed call answered with `canned`, collected into one reply.
    fn stream(&self, p: Provider, canned: Canned) -> Result<ChatResponse, LlmError> {
        *self.server.canned.lock().unwrap() = canned;
        let model = self.model(p);
        self.within(model.stream_collect(&[Message::human("hi")], &CallOptions::default()))
    }

    /// A whole call answered with `canned`.
    fn invoke(&self, p: Provider, canned: Canned) -> Result<ChatResponse, LlmError> {
        *self.server.canned.lock().unwrap() = canned;
        let model = self.model(p);
        self.within(model.invoke(&[Message::human("hi")], &CallOptions::default()))
    }

    fn within<T>(&self, call: impl std::future::Future<Output = T>) -> T {
        self.rt
            .block_on(async { tokio::time::timeout(Duration::from_secs(20), call).await })
            .expect("the call hung")
    }

    fn stream_of(
        &self,
        p: Provider,
        body: Vec<u8>,
        cuts: &[Index],
    ) -> Result<ChatResponse, LlmError> {
        self.stream(p, Canned::ok(p.stream_type(), body).cut(cuts))
    }

    fn invoke_of(
        &self,
        p: Provider,
        body: Vec<u8>,
        cuts: &[Index],
    ) -> Result<ChatResponse, LlmError> {
        self.invoke(p, Canned::ok("application/json", body).cut(cuts))
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn run<S: Strategy>(strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    if let Err(e) = runner.run(&strategy, test) {
        panic!("{e}");
    }
}

/// A reply or an error about the reply: the server always answered, so never a transport
/// failure; and the error prints.
fn typed(p: Provider, r: &Result<ChatResponse, LlmError>) -> Result<(), TestCaseError> {
    match r {
        Ok(_) => Ok(()),
        Err(e) => typed_error(p, e),
    }
}

fn typed_error(p: Provider, e: &LlmError) -> Result<(), TestCaseError> {
    prop_assert!(!e.to_string().is_empty());
    prop_assert!(
        !matches!(
            e,
            LlmError::Connection { .. }
                | LlmError::Timeout { .. }
                | LlmError::StreamDeadline { .. }
        ),
        "{p:?}: {e}"
    );
    Ok(())
}

/// The reply carries exactly the spec's text and tool calls.
fn matches_spec(p: Provider, spec: &Spec, r: &ChatResponse) -> Result<(), TestCaseError> {
    prop_assert_eq!(r.text(), spec.text.concat(), "{:?}", p);
    let got: Vec<(&str, &Value)> = r
        .tool_calls()
        .iter()
        .map(|c| (c.name.as_str(), &c.args))
        .collect();
    let want: Vec<(&str, &Value)> = spec
        .calls
        .iter()
        .map(|c| (c.name.as_str(), &c.args))
        .collect();
    prop_assert_eq!(got, want, "{:?}", p);
    Ok(())
}

// --- properties --------------------------------------------------------------------------------

/// Any bytes at all, as a stream or as a whole body, cut anywhere.
#[test]
fn arbitrary_bytes_give_a_reply_or_a_typed_error() {
    let h = Harness::new();
    let strategy = (
        provider_strategy(),
        proptest::collection::vec(any::<u8>(), 0..2048),
        proptest::collection::vec(any::<Index>(), 0..6),
    );
    run(strategy, |(p, body, cuts)| {
        typed(p, &h.stream_of(p, body.clone(), &cuts))?;
        typed(p, &h.invoke_of(p, body, &cuts))
    });
}

/// A well-formed reply is the same message however the body is cut into reads, streamed
/// or whole.
#[test]
fn well_formed_replies_survive_any_cutting() {
    let h = Harness::new();
    let strategy = (
        provider_strategy(),
        spec_strategy(),
        proptest::collection::vec(any::<Index>(), 0..12),
    );
    run(strategy, |(p, spec, cuts)| {
        let body = p.frame(&p.stream_events(&spec));
        let streamed = h.stream_of(p, body, &cuts);
        prop_assert!(streamed.is_ok(), "{p:?}: {streamed:?}");
        matches_spec(p, &spec, &streamed.unwrap())?;
        let whole = serde_json::to_vec(&p.json_reply(&spec)).unwrap();
        let invoked = h.invoke_of(p, whole, &cuts);
        prop_assert!(invoked.is_ok(), "{p:?}: {invoked:?}");
        matches_spec(p, &spec, &invoked.unwrap())
    });
}

/// A reply cut short: the whole message (the end marker came before the cut) or a typed
/// error; a whole body cut short is malformed.
#[test]
fn truncated_replies_are_whole_or_typed_errors() {
    let h = Harness::new();
    let strategy = (provider_strategy(), spec_strategy(), any::<Index>());
    run(strategy, |(p, spec, at)| {
        let body = p.frame(&p.stream_events(&spec));
        let cut = at.index(body.len());
        let streamed = h.stream_of(p, body[..cut].to_vec(), &[]);
        typed(p, &streamed)?;
        if let Ok(r) = &streamed {
            matches_spec(p, &spec, r)?;
        }
        let whole = serde_json::to_vec(&p.json_reply(&spec)).unwrap();
        let cut = at.index(whole.len());
        let invoked = h.invoke_of(p, whole[..cut].to_vec(), &[]);
        prop_assert!(
            matches!(invoked, Err(LlmError::MalformedResponse { .. })),
            "{p:?}: {invoked:?}"
        );
        Ok(())
    });
}

#[derive(Clone, Debug)]
enum Mutation {
    Flip(Index, u8),
    Insert(Index, Vec<u8>),
    Delete(Index, Index),
    Repeat(Index, Index),
}

fn mutation_strategy() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), 1..=255u8).prop_map(|(i, x)| Mutation::Flip(i, x)),
        (
            any::<Index>(),
            prop_oneof![
                proptest::collection::vec(any::<u8>(), 1..16),
                proptest::sample::select(vec![
                    b"\n".to_vec(),
                    b"\r".to_vec(),
                    b"\n\n".to_vec(),
                    b"data: ".to_vec(),
                    b"data: [DONE]\n\n".to_vec(),
                    b"{".to_vec(),
                    b"\"".to_vec(),
                    b"\xff".to_vec(),
                    b"\xEF\xBB\xBF".to_vec(),
                    b"event: error\n".to_vec(),
                ]),
            ]
        )
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Delete(a, b)),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Repeat(a, b)),
    ]
}

fn mutate(mut body: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = body.len();
        match m {
            Mutation::Flip(i, x) if len > 0 => body[i.index(len)] ^= x,
            Mutation::Flip(..) => {}
            Mutation::Insert(i, bytes) => {
                let at = i.index(len + 1);
                body.splice(at..at, bytes.iter().copied());
            }
            Mutation::Delete(a, b) | Mutation::Repeat(a, b) => {
                let from = a.index(len + 1);
                let to = (from + b.index(65)).min(len);
                if matches!(m, Mutation::Delete(..)) {
                    body.drain(from..to);
                } else {
                    let copy = body[from..to].to_vec();
                    body.splice(to..to, copy);
                }
            }
        }
    }
    body
}

/// Real replies with bytes flipped, inserted, deleted or repeated.
#[test]
fn mutated_replies_give_a_reply_or_a_typed_error() {
    let h = Harness::new();
    let strategy = (
        provider_strategy(),
        spec_strategy(),
        proptest::collection::vec(mutation_strategy(), 1..5),
        proptest::collection::vec(any::<Index>(), 0..4),
    );
    run(strategy, |(p, spec, mutations, cuts)| {
        let body = mutate(p.frame(&p.stream_events(&spec)), &mutations);
        typed(p, &h.stream_of(p, body, &cuts))?;
        let whole = mutate(
            serde_json::to_vec(&p.json_reply(&spec)).unwrap(),
            &mutations,
        );
        typed(p, &h.invoke_of(p, whole, &cuts))
    });
}

/// Arbitrary JSON documents (built from the keys the decoders look for) as whole bodies and
/// as the events of a stream.
#[test]
fn arbitrary_json_gives_a_reply_or_a_typed_error() {
    let h = Harness::new();
    let strategy = (
        provider_strategy(),
        proptest::collection::vec(json_strategy(), 1..5),
    );
    run(strategy, |(p, docs)| {
        let events: Vec<(Option<&'static str>, String)> = docs
            .iter()
            .map(|d| {
                (
                    d.get("type").and_then(Value::as_str).map(event_name),
                    d.to_string(),
                )
            })
            .collect();
        typed(p, &h.stream_of(p, p.frame(&events), &[]))?;
        typed(
            p,
            &h.invoke_of(p, serde_json::to_vec(&docs[0]).unwrap(), &[]),
        )
    });
}

/// Tool-call deltas of any shape: indexes of any size or type, ids and names present or not,
/// argument fragments that are any text. A reply, or a typed error about the reply.
#[test]
fn odd_tool_call_deltas_give_a_reply_or_a_typed_error() {
    let h = Harness::new();
    let index = prop_oneof![
        any::<u64>().prop_map(Value::from),
        (0..4u64).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        Just(json!("0")),
        Just(Value::Null),
    ];
    let delta = (
        index,
        proptest::option::of("[a-z0-9_]{0,8}"),
        proptest::option::of("[a-z_]{0,8}"),
        prop_oneof![
            any::<String>(),
            Just("{\"a\":".to_owned()),
            Just("1}".to_owned())
        ],
        json_strategy(),
    );
    let strategy = (provider_strategy(), proptest::collection::vec(delta, 1..8));
    run(strategy, |(p, deltas)| {
        let mut events: Vec<(Option<&'static str>, String)> = Vec::new();
        match p {
            Provider::OpenAi => {
                for (index, id, name, args, _) in &deltas {
                    let call = json!({"index": index, "id": id, "function": {"name": name, "arguments": args}});
                    events.push((
                        None,
                        json!({"choices": [{"delta": {"tool_calls": [call]}}]}).to_string(),
                    ));
                }
                events.push((
                    None,
                    json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}).to_string(),
                ));
            }
            Provider::Anthropic => {
                events.push((
                    Some("message_start"),
                    json!({"type": "message_start", "message": {}}).to_string(),
                ));
                for (index, id, name, args, _) in &deltas {
                    if let Some(name) = name {
                        events.push((Some("content_block_start"), json!({"type": "content_block_start", "index": index,
                            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}).to_string()));
                    }
                    events.push((
                        Some("content_block_delta"),
                        json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": args}})
                        .to_string(),
                    ));
                }
                events.push((
                    Some("message_stop"),
                    json!({"type": "message_stop"}).to_string(),
                ));
            }
            Provider::Ollama => {
                for (_, id, name, args, doc) in &deltas {
                    let arguments = if args.len() % 2 == 0 {
                        json!(args)
                    } else {
                        doc.clone()
                    };
                    let call =
                        json!({"id": id, "function": {"name": name, "arguments": arguments}});
                    events.push((
                        None,
                        json!({"done": false, "message": {"tool_calls": [call]}}).to_string(),
                    ));
                }
                events.push((None, json!({"done": true}).to_string()));
            }
            Provider::Gemini => {
                for (_, id, name, _, doc) in &deltas {
                    let call = json!({"id": id, "name": name, "args": doc});
                    events.push((
                        None,
                        json!({"candidates": [{"content": {"parts": [{"functionCall": call}]}}]})
                            .to_string(),
                    ));
                }
                events.push((
                    None,
                    json!({"candidates": [{"content": {"parts": []}, "finishReason": "STOP"}]})
                        .to_string(),
                ));
            }
        }
        let r = h.stream_of(p, p.frame(&events), &[]);
        typed(p, &r)?;
        if let Err(e) = &r {
            prop_assert!(
                matches!(
                    e,
                    LlmError::InvalidToolArguments { .. } | LlmError::MalformedResponse { .. }
                ),
                "{p:?}: {e}"
            );
        }
        Ok(())
    });
}

/// SSE as servers may write it (any line ends, comments, `id:` and `retry:` fields, a
/// byte-order mark, `data:` without a space) is the same reply as the canonical framing.
#[test]
fn sse_framing_variants_give_the_same_reply() {
    let h = Harness::new();
    let style = (0..3usize, any::<bool>(), any::<bool>(), any::<bool>());
    let strategy = (
        proptest::sample::select(vec![
            Provider::OpenAi,
            Provider::Anthropic,
            Provider::Gemini,
        ]),
        spec_strategy(),
        proptest::collection::vec(style, 1..8),
        any::<bool>(),
        proptest::collection::vec(any::<Index>(), 0..8),
    );
    run(strategy, |(p, spec, styles, bom, cuts)| {
        let events = p.stream_events(&spec);
        let mut body: Vec<u8> = if bom {
            b"\xEF\xBB\xBF".to_vec()
        } else {
            Vec::new()
        };
        for (i, (name, data)) in events.iter().enumerate() {
            let (eol, comment, extra, tight) = styles[i % styles.len()];
            let eol = ["\n", "\r", "\r\n"][eol];
            if comment {
                body.extend(format!(": keep-alive{eol}").bytes());
            }
            if let Some(name) = name {
                body.extend(format!("event: {name}{eol}").bytes());
            }
            if extra {
                body.extend(format!("id: {i}{eol}retry: 1000{eol}x-unknown: 1{eol}").bytes());
            }
            let sep = if tight { "" } else { " " };
            body.extend(format!("data:{sep}{data}{eol}{eol}").bytes());
        }
        let r = h.stream_of(p, body, &cuts);
        prop_assert!(r.is_ok(), "{p:?}: {r:?}");
        matches_spec(p, &spec, &r.unwrap())
    });
}

/// Error statuses with any body: an error naming the status (or a typed reading of the
/// provider's message), streamed or whole.
#[test]
fn error_statuses_with_any_body_are_typed_errors() {
    let h = Harness::new();
    let body = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..512),
        json_strategy().prop_map(|v| serde_json::to_vec(&v).unwrap()),
        any::<String>()
            .prop_map(
                |m| serde_json::to_vec(&json!({"error": {"message": m, "type": "x"}})).unwrap()
            ),
    ];
    let strategy = (provider_strategy(), 400..600u16, body);
    run(strategy, |(p, status, body)| {
        for streamed in [false, true] {
            let canned = Canned {
                status,
                ..Canned::ok("application/json", body.clone())
            };
            let r = if streamed {
                h.stream(p, canned)
            } else {
                h.invoke(p, canned)
            };
            let Err(e) = r else {
                return Err(TestCaseError::fail(format!(
                    "{p:?}: HTTP {status} gave a reply"
                )));
            };
            typed_error(p, &e)?;
            if let Some(got) = e.status() {
                prop_assert_eq!(got, status, "{:?}: {}", p, e);
            } else {
                prop_assert!(
                    matches!(
                        e,
                        LlmError::ContextLengthExceeded { .. } | LlmError::ContentFiltered { .. }
                    ),
                    "{p:?}: {e}"
                );
            }
        }
        Ok(())
    });
}

// --- ceilings and the deadline (each fails without its fix) ------------------------------------

const MIB: usize = 1 << 20;

fn big_spec(bytes: usize) -> Spec {
    Spec {
        text: vec!["x".repeat(bytes)],
        calls: Vec::new(),
    }
}

/// A whole reply whose text is `bytes` long (spliced in: serialising megabytes in a debug
/// build is slow).
fn big_reply(p: Provider, bytes: usize) -> Vec<u8> {
    let marker = "\u{1F600}marker";
    let json = serde_json::to_string(&p.json_reply(&big_spec(0).with_text(marker))).unwrap();
    json.replacen(marker, &"x".repeat(bytes), 1).into_bytes()
}

impl Spec {
    fn with_text(mut self, text: &str) -> Self {
        self.text = vec![text.to_owned()];
        self
    }
}

/// A 20 MiB body is refused with the size error, announced (`Content-Length`) or not, while
/// a body under the ceiling still reads.
#[test]
fn a_20_mib_body_is_refused() {
    let h = Harness::new();
    for p in PROVIDERS {
        let body = big_reply(p, 20 * MIB);
        for length in [true, false] {
            let canned = Canned {
                length,
                pieces: body.chunks(MIB).map(<[u8]>::to_vec).collect(),
                ..Canned::ok("application/json", Vec::new())
            };
            let err = h.invoke(p, canned).unwrap_err();
            assert!(
                matches!(err, LlmError::ResponseTooLarge { what: "response body", limit, .. } if limit == 16 * MIB),
                "{p:?}: {err}"
            );
            assert!(err.to_string().contains("max_body_bytes"), "{err}");
        }
        let fits = big_reply(p, 2 * MIB);
        let r = h.invoke(p, Canned::ok("application/json", fits));
        assert_eq!(r.unwrap().text().len(), 2 * MIB, "{p:?}");
    }
    let small = Harness::with(Settings {
        max_body: Some(1000),
        ..Settings::default()
    });
    let body = big_reply(Provider::OpenAi, 2000);
    let err = small
        .invoke(Provider::OpenAi, Canned::ok("application/json", body))
        .unwrap_err();
    assert!(
        matches!(err, LlmError::ResponseTooLarge { limit: 1000, .. }),
        "{err}"
    );
}

/// One SSE event or NDJSON line over 1 MiB ends the stream with the size error; the same
/// reply in small events reads.
#[test]
fn an_event_over_the_ceiling_is_refused() {
    let h = Harness::new();
    for p in PROVIDERS {
        let body = p.frame(&p.stream_events(&big_spec(2 * MIB)));
        let err = h.stream_of(p, body, &[]).unwrap_err();
        let what = if p.sse() { "SSE event" } else { "NDJSON line" };
        assert!(
            matches!(&err, LlmError::ResponseTooLarge { what: w, limit, .. } if *w == what && *limit == MIB),
            "{p:?}: {err}"
        );
        assert!(err.to_string().contains("max_event_bytes"), "{err}");
        let spec = Spec {
            text: vec!["y".repeat(512 * 1024); 4],
            calls: Vec::new(),
        };
        let r = h.stream_of(p, p.frame(&p.stream_events(&spec)), &[]);
        assert_eq!(r.unwrap().text().len(), 2 * MIB, "{p:?}");
    }
}

/// A line that never ends is refused once it passes the ceiling, not buffered until the
/// server stops sending.
#[test]
fn an_endless_line_is_refused_before_it_ends() {
    let h = Harness::with(Settings {
        max_event: Some(256 * 1024),
        ..Settings::default()
    });
    for p in PROVIDERS {
        let canned = Canned {
            status: 200,
            content_type: p.stream_type(),
            pieces: vec![b"data: {\"x\": \"".to_vec()],
            endless: Some((vec![b'x'; 16 * 1024], Duration::ZERO)),
            length: false,
        };
        let err = h.stream(p, canned).unwrap_err();
        assert!(
            matches!(err, LlmError::ResponseTooLarge { .. }),
            "{p:?}: {err}"
        );
    }
}

/// A stream that keeps sending text and never finishes ends at its deadline with the typed
/// error, after the text that came before it.
#[test]
fn a_stream_past_its_deadline_ends_with_a_typed_error() {
    let deadline = Duration::from_millis(300);
    let h = Harness::with(Settings {
        deadline: Some(deadline),
        ..Settings::default()
    });
    for p in PROVIDERS {
        let start = p.stream_events(&Spec {
            text: vec!["a".into()],
            calls: Vec::new(),
        });
        // The reply's first events up to its text (no end marker), then the text event
        // again every 20 ms.
        let text_at = start.iter().position(|(_, d)| d.contains("\"a\"")).unwrap();
        let head = p.frame(&start[..=text_at]);
        let piece = p.frame(&start[text_at..=text_at]);
        let canned = Canned {
            status: 200,
            content_type: p.stream_type(),
            pieces: vec![head],
            endless: Some((piece, Duration::from_millis(20))),
            length: false,
        };
        *h.server.canned.lock().unwrap() = canned;
        let model = h.model(p);
        let (text, error) = h.within(async {
            let mut stream = model
                .stream(&[Message::human("hi")], &CallOptions::default())
                .await
                .unwrap();
            let mut text = String::new();
            let mut error = None;
            while let Some(item) = stream.next().await {
                match item {
                    Ok(ChatChunk::Text { text: t }) => text.push_str(&t),
                    Ok(_) => {}
                    Err(e) => error = Some(e),
                }
            }
            (text, error)
        });
        assert!(!text.is_empty(), "{p:?}: text arrived before the deadline");
        assert!(
            matches!(&error, Some(LlmError::StreamDeadline { deadline: d, .. }) if *d == deadline),
            "{p:?}: {error:?}"
        );
    }
}
