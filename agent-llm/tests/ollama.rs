//! The Ollama provider against a local wiremock server speaking the documented `/api/chat`
//! wire format (NDJSON streaming).

mod common;

use agent_llm::{
    AiMessage, CallOptions, ChatModel, ChatModelExt, FinishReason, LlmError, Message, Ollama,
    RetryPolicy, ToolCall, ToolChoice, ToolSpec, Usage,
};
use common::{fast_retry, ndjson, sent_body, test_timeouts};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn model(server: &MockServer, retry: RetryPolicy) -> Ollama {
    Ollama::builder()
        .base_url(server.uri())
        .model("qwen3:test")
        .retry(retry)
        .timeouts(test_timeouts())
        .build()
        .unwrap()
}

fn done(message: Value, reason: &str) -> Value {
    json!({
        "model": "qwen3:test", "created_at": "2025-01-01T00:00:00Z", "message": message,
        "done": true, "done_reason": reason, "total_duration": 1000, "prompt_eval_count": 21, "eval_count": 6,
    })
}

fn piece(message: Value) -> Value {
    json!({"model": "qwen3:test", "created_at": "2025-01-01T00:00:00Z", "message": message, "done": false})
}

async fn mount(server: &MockServer, template: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/api/chat"))
        .respond_with(template)
        .mount(server)
        .await;
}

async fn mount_ndjson(server: &MockServer, body: String) {
    mount(
        server,
        ResponseTemplate::new(200).set_body_raw(body, "application/x-ndjson"),
    )
    .await;
}

#[tokio::test]
async fn plain_invoke_and_request_shape() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(done(
            json!({"role": "assistant", "content": "Twelve degrees.", "thinking": "look it up"}),
            "stop",
        )),
    )
    .await;
    let msgs = [
        Message::system("Be brief."),
        Message::human("Weather in Oslo?"),
        Message::Ai(AiMessage {
            tool_calls: vec![ToolCall::new("call_1", "weather", json!({"city": "Oslo"}))],
            ..Default::default()
        }),
        Message::tool("call_1", "12°C"),
    ];
    let r = model(&server, RetryPolicy::none())
        .invoke(
            &msgs,
            &CallOptions::default()
                .temperature(0.0)
                .max_tokens(64)
                .seed(1)
                .stop("\n\n"),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "Twelve degrees.");
    assert_eq!(r.usage, Usage::new(21, 6));
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(r.message.extra["reasoning_content"], "look it up");
    let body = sent_body(&server, 0).await;
    assert_eq!(body["model"], "qwen3:test");
    assert_eq!(body["stream"], false);
    assert_eq!(
        body["options"],
        json!({"temperature": 0.0, "num_predict": 64, "seed": 1, "stop": ["\n\n"]})
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "weather", "arguments": {"city": "Oslo"}}}]},
            {"role": "tool", "content": "12°C", "tool_name": "weather"},
        ])
    );
    // Thinking goes back as `thinking`.
    let next = model(&server, RetryPolicy::none()).request_body(
        &[Message::Ai(r.message)],
        &CallOptions::default(),
        true,
    );
    assert_eq!(next["messages"][0]["thinking"], "look it up");
}

#[tokio::test]
async fn tools_and_tool_calls() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(done(
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "add", "arguments": {"a": 1, "b": 2}}},
                {"id": "call_x", "function": {"name": "add", "arguments": {"a": 3, "b": 4}}},
            ]}),
            "stop",
        )),
    )
    .await;
    let specs = [
        ToolSpec::new("add", "Adds", json!({"type": "object"})),
        ToolSpec::new("sub", "Subtracts", json!({"type": "object"})),
    ];
    let m = model(&server, RetryPolicy::none())
        .bind_tools(specs)
        .tool_choice(ToolChoice::Tool("add".into()));
    let r = m
        .invoke(&[Message::human("1+2, 3+4")], &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(r.tool_calls().len(), 2);
    assert_eq!(r.tool_calls()[0].name, "add");
    assert_eq!(r.tool_calls()[0].args, json!({"a": 1, "b": 2}));
    assert!(
        r.tool_calls()[0].id.starts_with("call_"),
        "an id is made up"
    );
    assert_eq!(r.tool_calls()[1].id, "call_x");
    let body = sent_body(&server, 0).await;
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {"name": "add", "description": "Adds", "parameters": {"type": "object"}}}]),
        "a named tool choice narrows the tools"
    );
}

#[tokio::test]
async fn ndjson_streaming_with_tool_calls() {
    let server = MockServer::start().await;
    mount_ndjson(
        &server,
        ndjson(&[
            piece(json!({"role": "assistant", "content": "Let "})),
            piece(json!({"role": "assistant", "content": "me check."})),
            piece(json!({"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "weather", "arguments": {"city": "Oslo"}}}]})),
            done(json!({"role": "assistant", "content": ""}), "stop"),
        ]),
    )
    .await;
    let m = model(&server, RetryPolicy::none());
    let mut s = m
        .stream(&[Message::human("weather?")], &CallOptions::default())
        .await
        .unwrap();
    let mut texts = Vec::new();
    let mut all = Vec::new();
    while let Some(c) = s.next().await {
        let c = c.unwrap();
        if let agent_llm::ChatChunk::Text { text } = &c {
            texts.push(text.clone());
        }
        all.push(c);
    }
    assert_eq!(texts, ["Let ", "me check."]);
    let r = m
        .stream_collect(&[Message::human("weather?")], &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(r.text(), "Let me check.");
    assert_eq!(r.tool_calls()[0].name, "weather");
    assert_eq!(r.tool_calls()[0].args, json!({"city": "Oslo"}));
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(r.usage, Usage::new(21, 6));
    assert_eq!(r.model, "qwen3:test");
    assert_eq!(sent_body(&server, 0).await["stream"], true);
}

#[tokio::test]
async fn ndjson_lines_split_across_network_chunks_and_without_final_newline() {
    let server = MockServer::start().await;
    let mut body = ndjson(&[piece(json!({"content": "a"}))]);
    body.push_str(&done(json!({"content": "b"}), "length").to_string()); // no trailing newline
    mount_ndjson(&server, body).await;
    let r = model(&server, RetryPolicy::none())
        .stream_collect(&[], &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(r.text(), "ab");
    assert_eq!(r.finish_reason, FinishReason::Length);
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Country {
    name: String,
    capital: String,
}

#[tokio::test]
async fn structured_output_sends_format_schema() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(done(
            json!({"role": "assistant", "content": "{\"name\": \"Norway\", \"capital\": \"Oslo\"}"}),
            "stop",
        )),
    )
    .await;
    let c = model(&server, RetryPolicy::none())
        .with_structured_output::<Country>()
        .invoke(&[Message::human("Tell me about Norway")])
        .await
        .unwrap();
    assert_eq!(
        c,
        Country {
            name: "Norway".into(),
            capital: "Oslo".into()
        }
    );
    let body = sent_body(&server, 0).await;
    assert_eq!(body["format"]["type"], "object");
    assert_eq!(body["format"]["required"], json!(["name", "capital"]));
}

#[tokio::test]
async fn missing_model_is_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(404).set_body_json(
            json!({"error": "model \"qwen3:test\" not found, try pulling it first"}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let err = model(&server, fast_retry(3))
        .invoke(&[], &CallOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LlmError::Http { status: 404, message, .. } if message.contains("try pulling")),
        "{err}"
    );
}

#[test]
fn host_without_scheme_is_accepted() {
    let m = Ollama::builder()
        .base_url("127.0.0.1:11434")
        .model("m")
        .build()
        .unwrap();
    assert_eq!(m.model_name(), "m");
}
