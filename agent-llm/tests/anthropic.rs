//! The Anthropic provider against a local wiremock server speaking the documented Messages API
//! wire format (including its streaming event types).

mod common;

use agent_llm::{
    AiMessage, Anthropic, CallOptions, ChatChunk, ChatModel, ChatModelExt, FinishReason, LlmError,
    Message, RetryPolicy, ToolCall, ToolChoice, ToolSpec, Usage,
};
use common::{fast_retry, sent_body, sse_named, test_timeouts};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-ant-SECRET-abcdef";

fn model(server: &MockServer, retry: RetryPolicy) -> Anthropic {
    Anthropic::builder()
        .base_url(server.uri())
        .api_key(KEY)
        .model("claude-test")
        .max_tokens(256)
        .retry(retry)
        .timeouts(test_timeouts())
        .build()
        .unwrap()
}

fn message(content: Value, stop: &str) -> Value {
    json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test-2025",
        "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 25, "output_tokens": 8},
    })
}

async fn mount_json(server: &MockServer, body: Value) {
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .mount(server)
        .await;
}

async fn mount_sse(server: &MockServer, body: String) {
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .mount(server)
        .await;
}

fn start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg_02", "type": "message", "role": "assistant",
           "model": "claude-test-2025", "content": [], "stop_reason": null,
           "usage": {"input_tokens": 30, "output_tokens": 1}}})
}

fn block_start(index: u64, block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

fn delta(index: u64, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

fn block_stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_delta(stop: &str, output: u64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": output}})
}

fn stop() -> Value {
    json!({"type": "message_stop"})
}

#[tokio::test]
async fn plain_invoke_maps_system_tools_and_results() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(ResponseTemplate::new(200).set_body_json(message(
            json!([{"type": "thinking", "thinking": "hmm", "signature": "sig"},
                   {"type": "text", "text": "It is 12°C."}]),
            "end_turn",
        )))
        .expect(1)
        .mount(&server)
        .await;
    let msgs = [
        Message::system("You are terse."),
        Message::human("Weather in Oslo and Bergen?"),
        Message::Ai(AiMessage {
            content: "Checking.".into(),
            tool_calls: vec![
                ToolCall::new("toolu_1", "weather", json!({"city": "Oslo"})),
                ToolCall::new("toolu_2", "weather", json!({"city": "Bergen"})),
            ],
            ..Default::default()
        }),
        Message::tool("toolu_1", "12°C"),
        Message::tool_error("toolu_2", "station offline"),
        Message::system("Answer in one sentence."),
    ];
    let spec = ToolSpec::new("weather", "Current weather", json!({"type": "object"}));
    let r = model(&server, RetryPolicy::none())
        .invoke(
            &msgs,
            &CallOptions::default()
                .tools([spec])
                .temperature(0.2)
                .stop("END"),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "It is 12°C.");
    assert_eq!(r.usage, Usage::new(25, 8));
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(r.message.id.as_deref(), Some("msg_01"));
    assert_eq!(
        r.message.extra["anthropic_blocks"][0]["signature"], "sig",
        "thinking kept"
    );

    let body = sent_body(&server, 0).await;
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(body["system"], "You are terse.\n\nAnswer in one sentence.");
    assert_eq!(body["temperature"], json!(0.2f32));
    assert_eq!(body["stop_sequences"], json!(["END"]));
    assert_eq!(
        body["tools"],
        json!([{"name": "weather", "description": "Current weather", "input_schema": {"type": "object"}}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo and Bergen?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Bergen"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "12°C", "is_error": false},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "station offline", "is_error": true},
            ]},
        ])
    );

    // The thinking block goes back in front of the assistant's text on the next turn.
    let next = model(&server, RetryPolicy::none()).request_body(
        &[Message::Ai(r.message)],
        &CallOptions::default(),
        false,
    );
    assert_eq!(next["messages"][0]["content"][0]["type"], "thinking");
    assert_eq!(next["messages"][0]["content"][1]["text"], "It is 12°C.");
}

#[tokio::test]
async fn tool_use_reply_and_tool_choice() {
    let server = MockServer::start().await;
    mount_json(
        &server,
        message(
            json!([{"type": "tool_use", "id": "toolu_9", "name": "add", "input": {"a": 1, "b": 2}}]),
            "tool_use",
        ),
    )
    .await;
    let m = model(&server, RetryPolicy::none())
        .bind_tools([ToolSpec::new("add", "Adds", json!({"type": "object"}))])
        .tool_choice(ToolChoice::Required)
        .parallel_tool_calls(false);
    let r = m
        .invoke(&[Message::human("1+2")], &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        r.tool_calls(),
        &[ToolCall::new("toolu_9", "add", json!({"a": 1, "b": 2}))]
    );
    assert_eq!(
        sent_body(&server, 0).await["tool_choice"],
        json!({"type": "any", "disable_parallel_tool_use": true})
    );
    m.invoke(
        &[],
        &CallOptions::default().tool_choice(ToolChoice::Tool("add".into())),
    )
    .await
    .unwrap();
    assert_eq!(
        sent_body(&server, 1).await["tool_choice"],
        json!({"type": "tool", "name": "add", "disable_parallel_tool_use": true})
    );
}

#[tokio::test]
async fn streamed_text_follows_the_event_types() {
    let server = MockServer::start().await;
    mount_sse(
        &server,
        sse_named(&[
            start(),
            block_start(0, json!({"type": "text", "text": ""})),
            json!({"type": "ping"}),
            delta(0, json!({"type": "text_delta", "text": "Hello"})),
            delta(0, json!({"type": "text_delta", "text": " there"})),
            block_stop(0),
            message_delta("end_turn", 12),
            stop(),
        ]),
    )
    .await;
    let m = model(&server, RetryPolicy::none());
    let mut s = m
        .stream(&[Message::human("hi")], &CallOptions::default())
        .await
        .unwrap();
    let mut chunks = Vec::new();
    while let Some(c) = s.next().await {
        chunks.push(c.unwrap());
    }
    assert_eq!(
        chunks,
        vec![
            ChatChunk::Start {
                id: Some("msg_02".into()),
                model: Some("claude-test-2025".into())
            },
            ChatChunk::Text {
                text: "Hello".into()
            },
            ChatChunk::Text {
                text: " there".into()
            },
            ChatChunk::Usage {
                usage: Usage::new(30, 12)
            },
            ChatChunk::Finish {
                reason: FinishReason::Stop
            },
        ]
    );
    assert_eq!(sent_body(&server, 0).await["stream"], true);
}

#[tokio::test]
async fn streamed_tool_use_assembles_input_json_deltas() {
    let server = MockServer::start().await;
    mount_sse(
        &server,
        sse_named(&[
            start(),
            block_start(0, json!({"type": "text", "text": ""})),
            delta(0, json!({"type": "text_delta", "text": "Let me check."})),
            block_stop(0),
            block_start(
                1,
                json!({"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {}}),
            ),
            delta(1, json!({"type": "input_json_delta", "partial_json": ""})),
            delta(
                1,
                json!({"type": "input_json_delta", "partial_json": "{\"city\": \"Os"}),
            ),
            delta(
                1,
                json!({"type": "input_json_delta", "partial_json": "lo\"}"}),
            ),
            block_stop(1),
            block_start(
                2,
                json!({"type": "tool_use", "id": "toolu_b", "name": "now", "input": {}}),
            ),
            block_stop(2),
            message_delta("tool_use", 40),
            stop(),
        ]),
    )
    .await;
    let r = model(&server, RetryPolicy::none())
        .stream_collect(&[Message::human("weather?")], &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(r.text(), "Let me check.");
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        r.tool_calls(),
        &[
            ToolCall::new("toolu_a", "weather", json!({"city": "Oslo"})),
            ToolCall::new("toolu_b", "now", json!({})),
        ]
    );
    assert_eq!(r.usage, Usage::new(30, 40));
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Sentiment {
    label: String,
    score: f64,
}

#[tokio::test]
async fn structured_output_is_a_forced_tool() {
    let server = MockServer::start().await;
    mount_json(
        &server,
        message(
            json!([{"type": "tool_use", "id": "toolu_s", "name": "Sentiment", "input": {"label": "positive", "score": 0.9}}]),
            "tool_use",
        ),
    )
    .await;
    let m = model(&server, RetryPolicy::none()).with_structured_output::<Sentiment>();
    let s = m.invoke(&[Message::human("I love it")]).await.unwrap();
    assert_eq!(
        s,
        Sentiment {
            label: "positive".into(),
            score: 0.9
        }
    );
    let body = sent_body(&server, 0).await;
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "Sentiment"})
    );
    assert_eq!(body["tools"][0]["name"], "Sentiment");
    assert_eq!(
        body["tools"][0]["input_schema"]["required"],
        json!(["label", "score"])
    );
}

#[tokio::test]
async fn structured_output_streams_as_text() {
    let server = MockServer::start().await;
    mount_sse(
        &server,
        sse_named(&[
            start(),
            block_start(
                0,
                json!({"type": "tool_use", "id": "toolu_s", "name": "Sentiment", "input": {}}),
            ),
            delta(
                0,
                json!({"type": "input_json_delta", "partial_json": "{\"label\": \"neg"}),
            ),
            delta(
                0,
                json!({"type": "input_json_delta", "partial_json": "ative\", \"score\": 0.2}"}),
            ),
            block_stop(0),
            message_delta("tool_use", 9),
            stop(),
        ]),
    )
    .await;
    let options =
        CallOptions::default().response_format(agent_llm::ResponseFormat::for_type::<Sentiment>());
    let r = model(&server, RetryPolicy::none())
        .stream_collect(&[], &options)
        .await
        .unwrap();
    assert!(r.tool_calls().is_empty());
    assert_eq!(r.finish_reason, FinishReason::Stop);
    let s: Sentiment = serde_json::from_str(r.text()).unwrap();
    assert_eq!(s.label, "negative");
}

#[tokio::test]
async fn invalid_request_is_not_retried_and_prompt_too_long_is_typed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"type": "error", "error": {
            "type": "invalid_request_error", "message": "prompt is too long: 250000 tokens > 200000 maximum"}})))
        .expect(1)
        .mount(&server)
        .await;
    let err = model(&server, fast_retry(3))
        .invoke(&[], &CallOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, LlmError::ContextLengthExceeded { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn refusal_stop_reason_is_a_typed_error() {
    let server = MockServer::start().await;
    mount_json(
        &server,
        message(json!([{"type": "text", "text": "I won't."}]), "refusal"),
    )
    .await;
    let err = model(&server, RetryPolicy::none())
        .invoke(&[], &CallOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LlmError::Refusal { message, .. } if message == "I won't."),
        "{err}"
    );
}
