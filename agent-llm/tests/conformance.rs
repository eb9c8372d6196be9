//! One conformance suite for every wire format: the same checks (a plain reply, a reply
//! streamed in pieces, a tool call whole and streamed and its result sent back, structured
//! output, a client error that is typed and not retried) run against
//!
//! - wiremock, in process, speaking each wire's documented JSON (`wiremock::*`, every wire,
//!   always run), plus the failure modes only a scripted server can produce: retries,
//!   exhausted retries, truncated and malformed streams, errors inside a stream, time-outs,
//!   refused connections, keys kept out of errors and `Debug`;
//! - `@copilotkit/aimock` (`aimock::*`), a mock server that speaks OpenAI chat, Claude
//!   Messages, Ollama chat and Gemini `generateContent`, answering from
//!   `tests/fixtures/aimock.json`; needs `AIMOCK_URL`;
//! - llama.cpp's `llama-server` serving SmolLM2-135M-Instruct (`llama_server::*`, the
//!   OpenAI-compatible wire against a real model: the protocol is checked, never the wording);
//!   needs `LLAMA_SERVER_URL`.
//!
//! `.ci/services/llm.sh` starts both servers and exports their URLs; without them their tests
//! are skipped with a note, except under CI (`CI` set), where that is a failure. A new wire is
//! one more [`Fixture`] impl here (and one line in `aimock_targets` when aimock speaks it).

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_llm::{
    Anthropic, CallOptions, ChatChunk, ChatModel, ChatModelExt, FinishReason, Gemini, LlmError,
    Message, Ollama, OpenAiCompatible, RetryPolicy, Timeouts, ToolChoice, ToolSpec, Usage,
};
use common::{fast_retry, ndjson, service_url, sse, sse_named, test_timeouts};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const HELLO: &str = "Hello from the conformance fixture, streamed in several chunks.";
const SAY_HELLO: &str = "conformance: say hello";
const WEATHER: &str = "conformance: weather in Oslo";
const STRUCTURED: &str = "conformance: structured weather";
const BAD_REQUEST: &str = "conformance: bad request";
const BAD_REQUEST_MESSAGE: &str = "Invalid request from the fixture";
const KEY: &str = "sk-conformance-SECRET-0123456789";

/// The usage every wiremock reply reports.
const MOCK_USAGE: Usage = Usage {
    input_tokens: 11,
    output_tokens: 7,
};

/// The structured-output type of the suite: numbers and booleans only, so a real model under
/// a JSON-schema grammar has nothing to invent but the values.
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Forecast {
    celsius: i64,
    rain: bool,
}

/// What a target's replies can be checked against.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// A mock answering the suite's prompts with the fixture's replies, word for word.
    Fixture {
        /// The usage it reports, when it reports one.
        usage: Option<Usage>,
    },
    /// A real model: replies have the right shape, their wording is its own.
    Live,
}

/// A model under test and what to expect of it.
struct Target {
    model: Arc<dyn ChatModel>,
    expect: Expect,
}

impl Target {
    fn name(&self) -> &'static str {
        self.model.provider()
    }

    fn live(&self) -> bool {
        self.expect == Expect::Live
    }

    /// The options of every call: short and deterministic for a real model.
    fn options(&self) -> CallOptions {
        if self.live() {
            CallOptions::default().max_tokens(48).temperature(0.0)
        } else {
            CallOptions::default()
        }
    }

    fn prompt(&self, fixture: &str) -> Message {
        let live = match fixture {
            SAY_HELLO => "Write one sentence about the sea.",
            WEATHER => "What is the weather in Oslo?",
            STRUCTURED => "How warm is it in Oslo in celsius, and does it rain? Answer in JSON.",
            other => other,
        };
        Message::human(if self.live() { live } else { fixture })
    }

    fn check_usage(&self, usage: Usage) {
        match self.expect {
            Expect::Fixture { usage: Some(want) } => assert_eq!(usage, want, "{}", self.name()),
            Expect::Fixture { usage: None } => {}
            Expect::Live => assert!(
                usage.input_tokens > 0 && usage.output_tokens > 0,
                "{}: {usage:?}",
                self.name()
            ),
        }
    }
}

fn weather_tool() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "Current weather of a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}, "required": ["city"]}),
    )
}

// --- the checks ------------------------------------------------------------------------------

async fn plain_reply(t: &Target) {
    let name = t.name();
    let r = t
        .model
        .invoke(
            &[Message::system("Be brief."), t.prompt(SAY_HELLO)],
            &t.options(),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(r.tool_calls().is_empty(), "{name}");
    if t.live() {
        assert!(!r.text().trim().is_empty(), "{name}");
        assert!(
            matches!(r.finish_reason, FinishReason::Stop | FinishReason::Length),
            "{name}: {:?}",
            r.finish_reason
        );
    } else {
        assert_eq!(r.text(), HELLO, "{name}");
        assert_eq!(r.finish_reason, FinishReason::Stop, "{name}");
    }
    t.check_usage(r.usage);
}

async fn streamed_reply(t: &Target) {
    let name = t.name();
    let mut stream = t
        .model
        .stream(&[t.prompt(SAY_HELLO)], &t.options())
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let (mut pieces, mut finish, mut usage) = (Vec::new(), None, Usage::default());
    while let Some(chunk) = stream.next().await {
        match chunk.unwrap_or_else(|e| panic!("{name}: {e}")) {
            ChatChunk::Text { text } => pieces.push(text),
            ChatChunk::Finish { reason } => finish = Some(reason),
            ChatChunk::Usage { usage: u } => usage = u,
            _ => {}
        }
    }
    assert!(
        pieces.len() > 1,
        "{name}: text arrives in pieces: {pieces:?}"
    );
    assert!(finish.is_some(), "{name}: no finish chunk");
    if !t.live() {
        assert_eq!(pieces.concat(), HELLO, "{name}");
        assert_eq!(finish, Some(FinishReason::Stop), "{name}");
        let collected = t
            .model
            .stream_collect(&[t.prompt(SAY_HELLO)], &t.options())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(collected.text(), HELLO, "{name}");
    }
    t.check_usage(usage);
}

async fn tool_call(t: &Target) {
    let name = t.name();
    let mut bound = t.model.clone().bind_tools([weather_tool()]);
    if t.live() {
        bound = bound
            .tool_choice(ToolChoice::Required)
            .parallel_tool_calls(false);
    }
    let msgs = [t.prompt(WEATHER)];
    let whole = bound
        .invoke(&msgs, &t.options())
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let streamed = bound
        .stream_collect(&msgs, &t.options())
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    for r in [&whole, &streamed] {
        assert_eq!(r.tool_calls().len(), 1, "{name}: {r:?}");
        let call = &r.tool_calls()[0];
        assert_eq!(call.name, "get_weather", "{name}");
        assert!(!call.id.is_empty(), "{name}");
        if t.live() {
            assert!(call.args.is_object(), "{name}: {:?}", call.args);
        } else {
            assert_eq!(
                call.args,
                json!({"city": "Oslo", "unit": "celsius"}),
                "{name}"
            );
            assert_eq!(r.finish_reason, FinishReason::ToolCalls, "{name}");
        }
    }
    // The result goes back in the wire's format and the request is accepted.
    let call = whole.tool_calls()[0].clone();
    let follow_up = [
        msgs[0].clone(),
        whole.clone().into_message(),
        Message::tool(call.id, "12 degrees, dry"),
        t.prompt(SAY_HELLO),
    ];
    let r = bound
        .invoke(&follow_up, &t.options())
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    if !t.live() {
        assert_eq!(r.text(), HELLO, "{name}");
    }
}

async fn structured_output(t: &Target) {
    let name = t.name();
    let reply = t
        .model
        .clone()
        .with_structured_output::<Forecast>()
        .invoke_with(&[t.prompt(STRUCTURED)], &t.options())
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    if t.live() {
        assert!(reply.attempts <= 2, "{name}");
    } else {
        assert_eq!(
            reply.value,
            Forecast {
                celsius: 12,
                rain: false
            },
            "{name}"
        );
        assert_eq!(reply.attempts, 1, "{name}");
    }
}

/// A 400 comes back as a typed HTTP error with the server's message, at once: a retried one
/// would end as `RetriesExhausted`.
async fn client_error(t: &Target) {
    let name = t.name();
    let err = t
        .model
        .invoke(&[Message::human(BAD_REQUEST)], &t.options())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LlmError::Http { status: 400, retryable: false, message, .. } if message.contains(BAD_REQUEST_MESSAGE)),
        "{name}: {err}"
    );
}

/// Each check as a test against each kind of server; the checks after `live:` run against
/// the real model too (it has no fixture for a bad request).
macro_rules! conformance {
    ($($check:ident),* ; live: $($live:ident),*) => {
        mod wiremock_server {
            use super::*;
            $(
                #[tokio::test]
                async fn $check() {
                    for fixture in fixtures() {
                        let (_server, target) = mocked(fixture).await;
                        super::$check(&target).await;
                    }
                }
            )*
        }

        mod aimock {
            use super::*;
            $(
                #[tokio::test]
                async fn $check() {
                    let Some(url) = service_url("AIMOCK_URL") else {
                        return;
                    };
                    for target in aimock_targets(&url) {
                        super::$check(&target).await;
                    }
                }
            )*
        }

        mod llama_server {
            use super::*;
            $(
                #[tokio::test]
                async fn $live() {
                    if let Some(target) = llama_server_target() {
                        super::$live(&target).await;
                    }
                }
            )*
        }
    };
}

conformance!(
    plain_reply, streamed_reply, tool_call, structured_output, client_error;
    live: plain_reply, streamed_reply, tool_call, structured_output
);

/// SmolLM2-135M behind llama-server's OpenAI-compatible API, when `LLAMA_SERVER_URL` is set.
fn llama_server_target() -> Option<Target> {
    let url = service_url("LLAMA_SERVER_URL")?;
    let model = OpenAiCompatible::builder()
        .base_url(url)
        .model("smollm2-135m")
        .retry(RetryPolicy::new().max_attempts(2))
        .timeouts(Timeouts {
            connect: Duration::from_secs(5),
            request: Duration::from_secs(120),
            stream_idle: Duration::from_secs(60),
        })
        .build()
        .unwrap();
    Some(Target {
        model: Arc::new(model),
        expect: Expect::Live,
    })
}

fn aimock_targets(url: &str) -> Vec<Target> {
    let expect = Expect::Fixture { usage: None };
    let target = |model: Arc<dyn ChatModel>| Target { model, expect };
    vec![
        target(Arc::new(
            OpenAiCompatible::builder()
                .base_url(format!("{url}/v1"))
                .api_key("mock-key")
                .model("gpt-4o-mini")
                .retry(fast_retry(2))
                .timeouts(test_timeouts())
                .build()
                .unwrap(),
        )),
        target(Arc::new(
            Anthropic::builder()
                .base_url(url)
                .api_key("mock-key")
                .model("claude-sonnet-4-5")
                .retry(fast_retry(2))
                .timeouts(test_timeouts())
                .build()
                .unwrap(),
        )),
        target(Arc::new(
            Ollama::builder()
                .base_url(url)
                .model("llama3.2")
                .retry(fast_retry(2))
                .timeouts(test_timeouts())
                .build()
                .unwrap(),
        )),
        target(Arc::new(
            Gemini::builder()
                .base_url(url)
                .api_key("mock-key")
                .model("gemini-2.5-flash")
                .retry(fast_retry(2))
                .timeouts(test_timeouts())
                .build()
                .unwrap(),
        )),
    ]
}

// --- wiremock: each wire's documented JSON ---------------------------------------------------

/// One wire's side of the conversation, as its server writes it.
trait Fixture: Send + Sync + 'static {
    /// The model, talking to `base` (a server's root URL).
    fn model(&self, base: &str, retry: RetryPolicy, timeouts: Timeouts) -> Arc<dyn ChatModel>;
    /// The `Content-Type` of streamed bodies.
    fn stream_type(&self) -> &'static str {
        "text/event-stream"
    }
    /// Stream events as a body.
    fn frame(&self, events: &[Value]) -> String {
        sse(events)
    }
    /// A line that breaks the framing's JSON.
    fn broken_event(&self) -> &'static str {
        "data: {\"broken\": [BROKEN\n\n"
    }
    /// A whole reply with `text`.
    fn text_reply(&self, text: &str) -> Value;
    /// A whole reply calling `name` with `args`.
    fn tool_reply(&self, name: &str, args: &Value) -> Value;
    /// A whole structured reply of the type `type_name` holding `value`.
    fn structured_reply(&self, _type_name: &str, value: &Value) -> Value {
        self.text_reply(&value.to_string())
    }
    /// The complete stream of a reply in `pieces` of text.
    fn text_stream(&self, pieces: &[&str]) -> String;
    /// The complete stream of a reply calling `name` with `args`.
    fn tool_stream(&self, name: &str, args: &Value) -> String;
    /// The first events of a text stream, cut before the reply is complete.
    fn truncated_stream(&self, piece: &str) -> Vec<Value>;
    /// An event reporting `message` as a failure inside a stream.
    fn stream_error(&self, message: &str) -> Value;
    /// The body of an HTTP error with `message`.
    fn error_body(&self, message: &str) -> Value;
}

fn fixtures() -> Vec<Arc<dyn Fixture>> {
    vec![
        Arc::new(OpenAiFixture),
        Arc::new(AnthropicFixture),
        Arc::new(OllamaFixture),
        Arc::new(GeminiFixture),
    ]
}

/// A mock server answering the suite's prompts in `fixture`'s wire format, and the target
/// that talks to it.
async fn mocked(fixture: Arc<dyn Fixture>) -> (MockServer, Target) {
    let server = MockServer::start().await;
    let target = Target {
        model: fixture.model(&server.uri(), fast_retry(2), test_timeouts()),
        expect: Expect::Fixture {
            usage: Some(MOCK_USAGE),
        },
    };
    Mock::given(method("POST"))
        .respond_with(Responder { fixture })
        .mount(&server)
        .await;
    (server, target)
}

/// Answers like aimock does: by the last of the suite's prompts in the request.
struct Responder {
    fixture: Arc<dyn Fixture>,
}

impl Respond for Responder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let stream = body["stream"] == true || request.url.path().contains("streamGenerateContent");
        let text = body.to_string();
        let prompt = [SAY_HELLO, WEATHER, STRUCTURED, BAD_REQUEST]
            .into_iter()
            .filter_map(|p| text.rfind(p).map(|at| (at, p)))
            .max()
            .map(|(_, p)| p);
        let f = &self.fixture;
        let args = json!({"city": "Oslo", "unit": "celsius"});
        let streamed =
            |body: String| ResponseTemplate::new(200).set_body_raw(body, f.stream_type());
        match (prompt, stream) {
            (Some(SAY_HELLO), false) => {
                ResponseTemplate::new(200).set_body_json(f.text_reply(HELLO))
            }
            (Some(SAY_HELLO), true) => {
                let (a, b) = HELLO.split_at(20);
                let (b, c) = b.split_at(20);
                streamed(f.text_stream(&[a, b, c]))
            }
            (Some(WEATHER), false) => {
                ResponseTemplate::new(200).set_body_json(f.tool_reply("get_weather", &args))
            }
            (Some(WEATHER), true) => streamed(f.tool_stream("get_weather", &args)),
            (Some(STRUCTURED), _) => ResponseTemplate::new(200).set_body_json(
                f.structured_reply("Forecast", &json!({"celsius": 12, "rain": false})),
            ),
            _ => ResponseTemplate::new(400).set_body_json(f.error_body(BAD_REQUEST_MESSAGE)),
        }
    }
}

struct OpenAiFixture;

impl Fixture for OpenAiFixture {
    fn model(&self, base: &str, retry: RetryPolicy, timeouts: Timeouts) -> Arc<dyn ChatModel> {
        Arc::new(
            OpenAiCompatible::builder()
                .base_url(format!("{base}/v1"))
                .api_key(KEY)
                .model("mock-model")
                .retry(retry)
                .timeouts(timeouts)
                .build()
                .unwrap(),
        )
    }

    fn text_reply(&self, text: &str) -> Value {
        openai_completion(json!({"role": "assistant", "content": text}), "stop")
    }

    fn tool_reply(&self, name: &str, args: &Value) -> Value {
        openai_completion(
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": name, "arguments": args.to_string()}}]}),
            "tool_calls",
        )
    }

    fn text_stream(&self, pieces: &[&str]) -> String {
        let mut events = vec![openai_chunk(
            json!({"role": "assistant", "content": ""}),
            None,
        )];
        events.extend(
            pieces
                .iter()
                .map(|p| openai_chunk(json!({"content": p}), None)),
        );
        events.push(openai_chunk(json!({}), Some("stop")));
        events.push(openai_usage_chunk());
        self.frame(&events) + "data: [DONE]\n\n"
    }

    fn tool_stream(&self, name: &str, args: &Value) -> String {
        let args = args.to_string();
        let (a, b) = args.split_at(args.len() / 2);
        let events = [
            openai_chunk(json!({"role": "assistant", "content": null}), None),
            openai_chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                       "function": {"name": name, "arguments": a}}]}),
                None,
            ),
            openai_chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": b}}]}),
                None,
            ),
            openai_chunk(json!({}), Some("tool_calls")),
            openai_usage_chunk(),
        ];
        self.frame(&events) + "data: [DONE]\n\n"
    }

    fn truncated_stream(&self, piece: &str) -> Vec<Value> {
        vec![
            openai_chunk(json!({"role": "assistant", "content": ""}), None),
            openai_chunk(json!({"content": piece}), None),
        ]
    }

    fn stream_error(&self, message: &str) -> Value {
        json!({"error": {"message": message, "type": "server_error"}})
    }

    fn error_body(&self, message: &str) -> Value {
        json!({"error": {"message": message, "type": "invalid_request_error"}})
    }
}

fn openai_completion(message: Value, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "mock-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    })
}

fn openai_chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-2", "object": "chat.completion.chunk", "model": "mock-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
}

fn openai_usage_chunk() -> Value {
    json!({"id": "chatcmpl-2", "object": "chat.completion.chunk", "model": "mock-model",
           "choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})
}

struct AnthropicFixture;

impl Fixture for AnthropicFixture {
    fn model(&self, base: &str, retry: RetryPolicy, timeouts: Timeouts) -> Arc<dyn ChatModel> {
        Arc::new(
            Anthropic::builder()
                .base_url(base)
                .api_key(KEY)
                .model("mock-model")
                .retry(retry)
                .timeouts(timeouts)
                .build()
                .unwrap(),
        )
    }

    fn frame(&self, events: &[Value]) -> String {
        sse_named(events)
    }

    fn text_reply(&self, text: &str) -> Value {
        anthropic_message(json!([{"type": "text", "text": text}]), "end_turn")
    }

    fn tool_reply(&self, name: &str, args: &Value) -> Value {
        anthropic_message(
            json!([{"type": "tool_use", "id": "toolu_1", "name": name, "input": args}]),
            "tool_use",
        )
    }

    /// Structured output is a forced tool named after the type.
    fn structured_reply(&self, type_name: &str, value: &Value) -> Value {
        anthropic_message(
            json!([{"type": "tool_use", "id": "toolu_2", "name": type_name, "input": value}]),
            "tool_use",
        )
    }

    fn text_stream(&self, pieces: &[&str]) -> String {
        let mut events = vec![
            anthropic_start(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ];
        events.extend(pieces.iter().map(|p| {
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}})
        }));
        events.extend(anthropic_end(0, "end_turn"));
        self.frame(&events)
    }

    fn tool_stream(&self, name: &str, args: &Value) -> String {
        let args = args.to_string();
        let (a, b) = args.split_at(args.len() / 2);
        let mut events = vec![
            anthropic_start(),
            json!({"type": "content_block_start", "index": 0, "content_block":
                   {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}}),
        ];
        for part in [a, b] {
            events.push(json!({"type": "content_block_delta", "index": 0,
                               "delta": {"type": "input_json_delta", "partial_json": part}}));
        }
        events.extend(anthropic_end(0, "tool_use"));
        self.frame(&events)
    }

    fn truncated_stream(&self, piece: &str) -> Vec<Value> {
        vec![
            anthropic_start(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
        ]
    }

    fn stream_error(&self, message: &str) -> Value {
        json!({"type": "error", "error": {"type": "overloaded_error", "message": message}})
    }

    fn error_body(&self, message: &str) -> Value {
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
    }
}

fn anthropic_message(content: Value, stop: &str) -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "mock-model",
        "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 11, "output_tokens": 7},
    })
}

fn anthropic_start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant",
           "model": "mock-model", "content": [], "usage": {"input_tokens": 11, "output_tokens": 1}}})
}

fn anthropic_end(index: u64, stop: &str) -> [Value; 3] {
    [
        json!({"type": "content_block_stop", "index": index}),
        json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 7}}),
        json!({"type": "message_stop"}),
    ]
}

struct OllamaFixture;

impl Fixture for OllamaFixture {
    fn model(&self, base: &str, retry: RetryPolicy, timeouts: Timeouts) -> Arc<dyn ChatModel> {
        Arc::new(
            Ollama::builder()
                .base_url(base)
                .api_key(KEY)
                .model("mock-model")
                .retry(retry)
                .timeouts(timeouts)
                .build()
                .unwrap(),
        )
    }

    fn stream_type(&self) -> &'static str {
        "application/x-ndjson"
    }

    fn frame(&self, events: &[Value]) -> String {
        ndjson(events)
    }

    fn broken_event(&self) -> &'static str {
        "{\"broken\": [BROKEN\n"
    }

    fn text_reply(&self, text: &str) -> Value {
        ollama_done(json!({"role": "assistant", "content": text}))
    }

    fn tool_reply(&self, name: &str, args: &Value) -> Value {
        ollama_done(json!({"role": "assistant", "content": "",
                           "tool_calls": [{"function": {"name": name, "arguments": args}}]}))
    }

    fn text_stream(&self, pieces: &[&str]) -> String {
        let mut events: Vec<Value> = pieces.iter().map(|p| ollama_piece(p)).collect();
        events.push(ollama_done(json!({"role": "assistant", "content": ""})));
        self.frame(&events)
    }

    fn tool_stream(&self, name: &str, args: &Value) -> String {
        self.frame(&[
            json!({"model": "mock-model", "done": false, "message": {"role": "assistant", "content": "",
                   "tool_calls": [{"function": {"name": name, "arguments": args}}]}}),
            ollama_done(json!({"role": "assistant", "content": ""})),
        ])
    }

    fn truncated_stream(&self, piece: &str) -> Vec<Value> {
        vec![ollama_piece(piece)]
    }

    fn stream_error(&self, message: &str) -> Value {
        json!({"error": message})
    }

    fn error_body(&self, message: &str) -> Value {
        json!({"error": message})
    }
}

fn ollama_piece(text: &str) -> Value {
    json!({"model": "mock-model", "done": false, "message": {"role": "assistant", "content": text}})
}

fn ollama_done(message: Value) -> Value {
    json!({"model": "mock-model", "created_at": "2025-01-01T00:00:00Z", "message": message,
           "done": true, "done_reason": "stop", "prompt_eval_count": 11, "eval_count": 7})
}

struct GeminiFixture;

impl Fixture for GeminiFixture {
    fn model(&self, base: &str, retry: RetryPolicy, timeouts: Timeouts) -> Arc<dyn ChatModel> {
        Arc::new(
            Gemini::builder()
                .base_url(base)
                .api_key(KEY)
                .model("mock-model")
                .retry(retry)
                .timeouts(timeouts)
                .build()
                .unwrap(),
        )
    }

    fn text_reply(&self, text: &str) -> Value {
        gemini_response(json!([{"text": text}]), Some("STOP"))
    }

    fn tool_reply(&self, name: &str, args: &Value) -> Value {
        gemini_response(
            json!([{"functionCall": {"name": name, "args": args}}]),
            Some("STOP"),
        )
    }

    fn text_stream(&self, pieces: &[&str]) -> String {
        let last = pieces.len().saturating_sub(1);
        let events: Vec<Value> = pieces
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut event =
                    gemini_response(json!([{"text": p}]), (i == last).then_some("STOP"));
                if i != last {
                    event.as_object_mut().map(|o| o.remove("usageMetadata"));
                }
                event
            })
            .collect();
        self.frame(&events)
    }

    fn tool_stream(&self, name: &str, args: &Value) -> String {
        self.frame(&[gemini_response(
            json!([{"functionCall": {"name": name, "args": args}}]),
            Some("STOP"),
        )])
    }

    fn truncated_stream(&self, piece: &str) -> Vec<Value> {
        let mut event = gemini_response(json!([{"text": piece}]), None);
        event.as_object_mut().map(|o| o.remove("usageMetadata"));
        vec![event]
    }

    fn stream_error(&self, message: &str) -> Value {
        json!({"error": {"code": 503, "message": message, "status": "UNAVAILABLE"}})
    }

    fn error_body(&self, message: &str) -> Value {
        json!({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}})
    }
}

fn gemini_response(parts: Value, finish: Option<&str>) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(reason) = finish {
        candidate["finishReason"] = json!(reason);
    }
    json!({
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 7, "totalTokenCount": 18},
        "modelVersion": "mock-model", "responseId": "resp-1",
    })
}

// --- failure modes, against wiremock for every wire ------------------------------------------

/// A server that answers every request with `template`, and the wire's model on it.
async fn serving(
    fixture: &dyn Fixture,
    template: ResponseTemplate,
    retry: RetryPolicy,
) -> (MockServer, Arc<dyn ChatModel>) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(template)
        .mount(&server)
        .await;
    let model = fixture.model(&server.uri(), retry, test_timeouts());
    (server, model)
}

async fn requests(server: &MockServer) -> usize {
    server.received_requests().await.unwrap_or_default().len()
}

#[tokio::test]
async fn retryable_statuses_are_retried_then_succeed() {
    for f in fixtures() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(429)
                    .insert_header("retry-after-ms", "5")
                    .set_body_json(f.error_body("slow down")),
            )
            .up_to_n_times(1)
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(503).set_body_json(f.error_body("busy")))
            .up_to_n_times(1)
            .with_priority(2)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(f.text_reply("ok")))
            .with_priority(3)
            .mount(&server)
            .await;
        let model = f.model(&server.uri(), fast_retry(3), test_timeouts());
        let name = model.provider();
        let r = model
            .invoke(&[Message::human("hi")], &CallOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.text(), "ok", "{name}");
        assert_eq!(requests(&server).await, 3, "{name}");
    }
}

/// Only what the providers document as "not processed, send again" is retried: 429, 503 and
/// 529 (Anthropic's overloaded). A 500 or 409 may come after the model ran, so sending the
/// request again could pay twice for one call.
#[tokio::test]
async fn only_statuses_documented_as_safe_are_retried() {
    for f in fixtures() {
        for (status, retried) in [
            (429, true),
            (503, true),
            (529, true),
            (500, false),
            (409, false),
            (502, false),
            (504, false),
        ] {
            let template = ResponseTemplate::new(status)
                .set_body_json(f.error_body("the server had an error"));
            let (server, model) = serving(f.as_ref(), template, fast_retry(3)).await;
            let name = model.provider();
            let err = model
                .invoke(&[Message::human("hi")], &CallOptions::default())
                .await
                .unwrap_err();
            assert_eq!(err.status(), Some(status), "{name}: {err}");
            assert!(
                err.to_string().contains("the server had an error"),
                "{name}: {err}"
            );
            let sent = if retried { 3 } else { 1 };
            assert_eq!(requests(&server).await, sent, "{name} {status}: {err}");
            if retried {
                assert!(
                    matches!(&err, LlmError::RetriesExhausted { attempts: 3, .. }),
                    "{name}: {err}"
                );
            }
            // A stream is sent the same way before its first byte.
            let err = model
                .stream(&[Message::human("hi")], &CallOptions::default())
                .await
                .err()
                .unwrap_or_else(|| panic!("{name}: the stream started"));
            assert_eq!(err.status(), Some(status), "{name}: {err}");
            assert_eq!(requests(&server).await, 2 * sent, "{name} {status}");
        }
    }
}

/// A request that timed out after it was sent may have run: it is not sent again.
#[tokio::test]
async fn a_timeout_after_sending_is_not_retried() {
    for f in fixtures() {
        let template = ResponseTemplate::new(200)
            .set_delay(Duration::from_secs(5))
            .set_body_json(f.text_reply("late"));
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(template)
            .mount(&server)
            .await;
        let timeouts = Timeouts {
            request: Duration::from_millis(100),
            ..test_timeouts()
        };
        let model = f.model(&server.uri(), fast_retry(3), timeouts);
        let name = model.provider();
        let err = model
            .invoke(&[Message::human("hi")], &CallOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::Timeout { .. }), "{name}: {err}");
        assert_eq!(requests(&server).await, 1, "{name}");
    }
}

#[tokio::test]
async fn a_stream_cut_short_is_truncated() {
    for f in fixtures() {
        let body = f.frame(&f.truncated_stream("The answer is"));
        let template = ResponseTemplate::new(200).set_body_raw(body, f.stream_type());
        let (_server, model) = serving(f.as_ref(), template, RetryPolicy::none()).await;
        let name = model.provider();
        let mut stream = model
            .stream(&[Message::human("hi")], &CallOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut text = String::new();
        let mut error = None;
        while let Some(item) = stream.next().await {
            match item {
                Ok(ChatChunk::Text { text: t }) => text.push_str(&t),
                Ok(_) => {}
                Err(e) => error = Some(e),
            }
        }
        assert_eq!(text, "The answer is", "{name}: what arrived is delivered");
        assert!(
            matches!(error, Some(LlmError::TruncatedStream { .. })),
            "{name}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_malformed_event_reports_its_bytes() {
    for f in fixtures() {
        let body = f.frame(&f.truncated_stream("fine so far")) + f.broken_event();
        let template = ResponseTemplate::new(200).set_body_raw(body, f.stream_type());
        let (_server, model) = serving(f.as_ref(), template, RetryPolicy::none()).await;
        let name = model.provider();
        let err = model
            .stream_collect(&[Message::human("hi")], &CallOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, LlmError::MalformedResponse { bytes, .. } if bytes.contains("[BROKEN")),
            "{name}: {err}"
        );
    }
}

#[tokio::test]
async fn a_malformed_body_reports_its_bytes() {
    for f in fixtures() {
        let template = ResponseTemplate::new(200).set_body_raw("<html>gateway</html>", "text/html");
        let (_server, model) = serving(f.as_ref(), template, RetryPolicy::none()).await;
        let name = model.provider();
        let err = model
            .invoke(&[Message::human("hi")], &CallOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, LlmError::MalformedResponse { bytes, .. } if bytes == "<html>gateway</html>"),
            "{name}: {err}"
        );
    }
}

#[tokio::test]
async fn an_error_inside_the_stream_ends_it() {
    for f in fixtures() {
        let body = f.frame(&[f.stream_error("model overloaded")]);
        let template = ResponseTemplate::new(200).set_body_raw(body, f.stream_type());
        let (_server, model) = serving(f.as_ref(), template, RetryPolicy::none()).await;
        let name = model.provider();
        let err = model
            .stream_collect(&[Message::human("hi")], &CallOptions::default())
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("model overloaded"),
            "{name}: {err}"
        );
    }
}

/// Every wire against a server that answers after `delay`: the error is a typed timeout naming
/// `expected`, the limit that fired.
async fn times_out_naming(delay: Duration, timeouts: Timeouts, expected: Duration) {
    for f in fixtures() {
        let template = ResponseTemplate::new(200)
            .set_delay(delay)
            .set_body_json(f.text_reply("late"));
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(template)
            .mount(&server)
            .await;
        let model = f.model(&server.uri(), RetryPolicy::none(), timeouts.clone());
        let provider = model.provider();
        let err = model
            .invoke(&[Message::human("hi")], &CallOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(err, LlmError::Timeout { timeout, .. } if timeout == expected),
            "{provider}: {err}"
        );
    }
}

#[tokio::test]
async fn a_slow_server_is_a_typed_timeout() {
    let request = Duration::from_millis(100);
    let timeouts = Timeouts {
        request,
        ..test_timeouts()
    };
    times_out_naming(Duration::from_secs(10), timeouts, request).await;
}

#[tokio::test]
async fn a_silent_server_names_the_wait_between_reads_not_the_whole_request() {
    let idle = Duration::from_millis(200);
    let timeouts = Timeouts {
        request: Duration::from_secs(30),
        stream_idle: idle,
        ..test_timeouts()
    };
    times_out_naming(Duration::from_secs(5), timeouts, idle).await;
}

#[tokio::test]
async fn refused_connections_are_retried_then_reported_without_the_key() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    for f in fixtures() {
        let model = f.model(
            &format!("http://127.0.0.1:{port}"),
            fast_retry(3),
            test_timeouts(),
        );
        let name = model.provider();
        let err = model
            .invoke(&[Message::human("hi")], &CallOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, LlmError::RetriesExhausted { attempts: 3, last, .. } if matches!(**last, LlmError::Connection { before_sending: true, .. })),
            "{name}: {err}"
        );
        for shown in [err.to_string(), format!("{err:?}")] {
            assert!(!shown.contains(KEY), "{name}: the key leaked: {shown}");
        }
    }
}

#[test]
fn keys_never_show_in_debug() {
    let base = "http://127.0.0.1:1";
    let shown = [
        format!(
            "{:?}",
            OpenAiCompatible::builder()
                .base_url(base)
                .api_key(KEY)
                .model("m")
                .build()
        ),
        format!(
            "{:?}",
            Anthropic::builder()
                .base_url(base)
                .api_key(KEY)
                .model("m")
                .build()
        ),
        format!(
            "{:?}",
            Ollama::builder()
                .base_url(base)
                .api_key(KEY)
                .model("m")
                .build()
        ),
        format!(
            "{:?}",
            Gemini::builder()
                .base_url(base)
                .api_key(KEY)
                .model("m")
                .build()
        ),
        format!("{:?}", Gemini::builder().api_key(KEY)),
    ];
    for debug in shown {
        assert!(!debug.contains("SECRET"), "{debug}");
        assert!(
            debug.contains("Sensitive") || debug.contains("REDACTED"),
            "{debug}"
        );
    }
}

#[test]
fn a_missing_model_name_says_which_variable_sets_it() {
    let errors = [
        ("OPENAI_MODEL", OpenAiCompatible::builder().build().err()),
        ("ANTHROPIC_MODEL", Anthropic::builder().build().err()),
        ("OLLAMA_MODEL", Ollama::builder().build().err()),
        ("GEMINI_MODEL", Gemini::builder().build().err()),
    ];
    for (variable, error) in errors {
        let error = error.map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains(variable), "{variable}: {error}");
    }
    let err = Gemini::builder()
        .model("m")
        .base_url("ftp://x")
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("http://"), "{err}");
}

/// A server that answers the first request on a connection, keeps it alive without saying
/// otherwise, and closes it when the next request arrives on it, before answering: what
/// llama.cpp's server does after a streamed reply. Returns its URL and the connections made.
async fn closes_kept_alive_connections(
    reply: Value,
) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let body = reply.to_string();
            tokio::spawn(async move {
                // Reads one request: its head, then Content-Length bytes of body.
                async fn request(socket: &mut tokio::net::TcpStream) -> bool {
                    let mut read = Vec::new();
                    let mut buf = [0u8; 4096];
                    loop {
                        if let Some(end) = read.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&read[..end]).to_lowercase();
                            let length = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse::<usize>().ok())
                                .unwrap_or(0);
                            if read.len() >= end + 4 + length {
                                return true;
                            }
                        }
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return false,
                            Ok(n) => read.extend_from_slice(&buf[..n]),
                        }
                    }
                }
                if !request(&mut socket).await {
                    return;
                }
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
                // The next request on this connection is read and left unanswered.
                let _ = request(&mut socket).await;
            });
        }
    });
    (url, connections)
}

/// A kept-alive connection the server closes as the next request goes out on it got no
/// answer: the request is sent again on a new connection, and succeeds. Without retries the
/// error says the connection was closed unanswered, and is retryable.
#[tokio::test]
async fn a_kept_alive_connection_closed_unanswered_is_retried_on_a_new_one() {
    for f in fixtures() {
        let (url, connections) = closes_kept_alive_connections(f.text_reply("fine")).await;
        let model = f.model(&url, fast_retry(2), test_timeouts());
        let name = model.provider();
        for _ in 0..3 {
            let r = model
                .invoke(&[Message::human("hi")], &CallOptions::default())
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(r.text(), "fine", "{name}");
        }
        let made = connections.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(made, 3, "{name}: one connection per call");

        let (url, _) = closes_kept_alive_connections(f.text_reply("fine")).await;
        let model = f.model(&url, RetryPolicy::none(), test_timeouts());
        model
            .invoke(&[Message::human("hi")], &CallOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let err = model
            .invoke(&[Message::human("hi")], &CallOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(
                &err,
                LlmError::Connection {
                    unanswered: true,
                    before_sending: false,
                    ..
                }
            ) && err.is_retryable(),
            "{name}: {err:?}"
        );
    }
}
