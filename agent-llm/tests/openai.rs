//! The OpenAI-compatible provider against a local wiremock server speaking the documented
//! chat-completions wire format.

mod common;

use agent_llm::{
    AiMessage, CallOptions, ChatChunk, ChatModel, ChatModelExt, FinishReason, LlmError, Message,
    OpenAiCompatible, RetryPolicy, ToolCall, ToolChoice, ToolSpec, Usage,
};
use common::{fast_retry, sent_body, sse, test_timeouts};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-test-SECRET-0123456789";

fn model(server: &MockServer, retry: RetryPolicy) -> OpenAiCompatible {
    OpenAiCompatible::builder()
        .base_url(format!("{}/v1", server.uri()))
        .api_key(KEY)
        .model("gpt-test")
        .retry(retry)
        .timeouts(test_timeouts())
        .build()
        .unwrap()
}

fn completion(message: Value, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-test-0613",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22},
    })
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-2", "object": "chat.completion.chunk", "model": "gpt-test-0613",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
}

fn usage_chunk() -> Value {
    json!({"id": "chatcmpl-2", "object": "chat.completion.chunk", "model": "gpt-test-0613",
           "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}})
}

async fn mount_sse(server: &MockServer, body: String) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .mount(server)
        .await;
}

async fn collect(
    m: &OpenAiCompatible,
    msgs: &[Message],
    o: &CallOptions,
) -> (Vec<ChatChunk>, Option<LlmError>) {
    let mut s = m.stream(msgs, o).await.unwrap();
    let mut chunks = Vec::new();
    while let Some(item) = s.next().await {
        match item {
            Ok(c) => chunks.push(c),
            Err(e) => return (chunks, Some(e)),
        }
    }
    (chunks, None)
}

#[tokio::test]
async fn plain_invoke_sends_the_conversation_and_parses_the_reply() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            json!({"role": "assistant", "content": "Paris.", "reasoning_content": "capital of France",
                   "refusal": null, "annotations": []}),
            "stop",
        )))
        .expect(1)
        .mount(&server)
        .await;
    let m = model(&server, RetryPolicy::none());
    let mut ai = AiMessage {
        tool_calls: vec![ToolCall::new("call_9", "lookup", json!({"q": "France"}))],
        ..Default::default()
    };
    ai.extra
        .insert("reasoning_content".into(), json!("earlier thoughts"));
    let msgs = [
        Message::system("Be brief."),
        Message::human("Capital of France?"),
        Message::Ai(ai),
        Message::tool("call_9", "Paris"),
        Message::remove("ignored"),
    ];
    let r = m
        .invoke(
            &msgs,
            &CallOptions::default()
                .temperature(0.0)
                .max_tokens(20)
                .seed(7)
                .stop("\n"),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "Paris.");
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(r.usage, Usage::new(17, 5));
    assert_eq!(r.model, "gpt-test-0613");
    assert_eq!(r.message.id.as_deref(), Some("chatcmpl-1"));
    assert_eq!(
        r.message.extra.get("reasoning_content"),
        Some(&json!("capital of France"))
    );
    assert!(
        !r.message.extra.contains_key("annotations"),
        "empty fields are not kept"
    );

    let body = sent_body(&server, 0).await;
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["max_tokens"], 20);
    assert_eq!(body["seed"], 7);
    assert_eq!(body["stop"], json!(["\n"]));
    assert!(body.get("stream").is_none());
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Capital of France?"},
            {"role": "assistant", "content": null, "reasoning_content": "earlier thoughts",
             "tool_calls": [{"id": "call_9", "type": "function",
                             "function": {"name": "lookup", "arguments": "{\"q\":\"France\"}"}}]},
            {"role": "tool", "tool_call_id": "call_9", "content": "Paris"},
        ])
    );
}

#[tokio::test]
async fn tools_and_tool_choice_go_on_the_wire_and_calls_come_back() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "add", "arguments": "{\"a\":1,\"b\":2}"}},
                {"id": "call_b", "type": "function", "function": {"name": "add", "arguments": ""}},
            ]}),
            "tool_calls",
        )))
        .mount(&server)
        .await;
    let spec = ToolSpec::new(
        "add",
        "Adds",
        json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
    );
    let m = model(&server, RetryPolicy::none())
        .bind_tools([spec])
        .tool_choice(ToolChoice::Required)
        .parallel_tool_calls(false);
    let r = m
        .invoke(&[Message::human("1+2")], &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        r.tool_calls()[0],
        ToolCall::new("call_a", "add", json!({"a": 1, "b": 2}))
    );
    assert_eq!(r.tool_calls()[1].args, json!({}));
    let body = sent_body(&server, 0).await;
    assert_eq!(body["tool_choice"], "required");
    assert_eq!(body["parallel_tool_calls"], false);
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {"name": "add", "description": "Adds",
               "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}])
    );

    let m2 = model(&server, RetryPolicy::none());
    m2.invoke(
        &[],
        &CallOptions::default().tool_choice(ToolChoice::Tool("add".into())),
    )
    .await
    .unwrap();
    assert_eq!(
        sent_body(&server, 1).await["tool_choice"],
        json!({"type": "function", "function": {"name": "add"}})
    );
}

#[tokio::test]
async fn streamed_text_with_usage() {
    let server = MockServer::start().await;
    let mut body = sse(&[
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": "Hel"}), None),
        chunk(
            json!({"content": "lo", "reasoning_content": "greeting"}),
            None,
        ),
        chunk(json!({}), Some("stop")),
        usage_chunk(),
    ]);
    body.push_str("data: [DONE]\n\n");
    mount_sse(&server, body).await;
    let m = model(&server, RetryPolicy::none());
    let (chunks, err) = collect(&m, &[Message::human("hi")], &CallOptions::default()).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        chunks,
        vec![
            ChatChunk::Start {
                id: Some("chatcmpl-2".into()),
                model: Some("gpt-test-0613".into())
            },
            ChatChunk::Text { text: "Hel".into() },
            ChatChunk::Text { text: "lo".into() },
            ChatChunk::Reasoning {
                text: "greeting".into()
            },
            ChatChunk::Finish {
                reason: FinishReason::Stop
            },
            ChatChunk::Usage {
                usage: Usage::new(9, 4)
            },
        ]
    );
    let body = sent_body(&server, 0).await;
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));

    let r = m
        .stream_collect(&[Message::human("hi")], &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(r.text(), "Hello");
    assert_eq!(r.usage, Usage::new(9, 4));
    assert_eq!(r.message.extra["reasoning_content"], "greeting");
}

#[tokio::test]
async fn streamed_tool_call_fragments_are_assembled() {
    let server = MockServer::start().await;
    let tc = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut call = json!({"index": index, "function": {"arguments": args}});
        if let Some(id) = id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        if let Some(name) = name {
            call["function"]["name"] = json!(name);
        }
        chunk(json!({"tool_calls": [call]}), None)
    };
    let mut body = sse(&[
        chunk(json!({"role": "assistant", "content": null}), None),
        tc(0, Some("call_1"), Some("weather"), ""),
        tc(0, None, None, "{\"ci"),
        tc(1, Some("call_2"), Some("time"), "{\"tz\":"),
        tc(0, None, None, "ty\": \"Oslo\"}"),
        tc(1, None, None, " \"CET\"}"),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(),
    ]);
    body.push_str("data: [DONE]\n\n");
    mount_sse(&server, body).await;
    let r = model(&server, RetryPolicy::none())
        .stream_collect(
            &[Message::human("weather and time")],
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        r.tool_calls(),
        &[
            ToolCall::new("call_1", "weather", json!({"city": "Oslo"})),
            ToolCall::new("call_2", "time", json!({"tz": "CET"})),
        ]
    );
}

#[tokio::test]
async fn broken_streamed_tool_arguments_are_a_typed_error() {
    let server = MockServer::start().await;
    let mut body = sse(&[
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{\"a\": "}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ]);
    body.push_str("data: [DONE]\n\n");
    mount_sse(&server, body).await;
    let err = model(&server, RetryPolicy::none())
        .stream_collect(&[], &CallOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LlmError::InvalidToolArguments { tool, arguments, .. } if tool == "f" && arguments == "{\"a\": "),
        "{err}"
    );
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Capital {
    country: String,
    city: String,
}

#[tokio::test]
async fn structured_output_uses_response_format_json_schema() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            json!({"role": "assistant", "content": "{\"country\":\"France\",\"city\":\"Paris\"}"}),
            "stop",
        )))
        .mount(&server)
        .await;
    let m = model(&server, RetryPolicy::none())
        .with_structured_output::<Capital>()
        .strict(true);
    let c = m
        .invoke(&[Message::human("capital of France")])
        .await
        .unwrap();
    assert_eq!(
        c,
        Capital {
            country: "France".into(),
            city: "Paris".into()
        }
    );
    let body = sent_body(&server, 0).await;
    let rf = &body["response_format"];
    assert_eq!(rf["type"], "json_schema");
    assert_eq!(rf["json_schema"]["name"], "Capital");
    assert_eq!(rf["json_schema"]["strict"], true);
    assert_eq!(
        rf["json_schema"]["schema"]["required"],
        json!(["country", "city"])
    );
}

#[tokio::test]
async fn context_length_is_recognised() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"error": {
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error"}})))
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
async fn refusal_and_content_filter_are_typed_errors() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            json!({"role": "assistant", "content": null, "refusal": "I can't help with that."}),
            "stop",
        )))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            json!({"content": "Once upon"}),
            "content_filter",
        )))
        .with_priority(2)
        .mount(&server)
        .await;
    let m = model(&server, RetryPolicy::none());
    let err = m.invoke(&[], &CallOptions::default()).await.unwrap_err();
    assert!(
        matches!(&err, LlmError::Refusal { message, .. } if message == "I can't help with that."),
        "{err}"
    );
    let err = m.invoke(&[], &CallOptions::default()).await.unwrap_err();
    assert!(
        matches!(&err, LlmError::ContentFiltered { partial, .. } if partial == "Once upon"),
        "{err}"
    );
}

#[test]
fn configuration_errors_say_what_to_do() {
    let err = OpenAiCompatible::builder().build().unwrap_err();
    assert!(err.to_string().contains("OPENAI_MODEL"), "{err}");
    if !cfg!(feature = "rustls") {
        let err = OpenAiCompatible::builder().model("m").build().unwrap_err();
        assert!(
            err.to_string().contains("enable the `rustls` feature"),
            "{err}"
        );
    }
    let err = OpenAiCompatible::builder()
        .model("m")
        .base_url("ftp://x")
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("http://"), "{err}");
}

/// The default build speaks TLS: an `https://` base URL builds, and talking TLS to a server
/// that only speaks plain HTTP fails the handshake with a connection error (no panic about a
/// missing crypto provider, no request sent in clear text).
#[tokio::test]
async fn https_is_on_by_default() {
    if !cfg!(feature = "rustls") {
        return;
    }
    let server = MockServer::start().await;
    let https = server.uri().replacen("http://", "https://", 1);
    let m = OpenAiCompatible::builder()
        .model("m")
        .base_url(https)
        .retry(RetryPolicy::none())
        .timeouts(test_timeouts())
        .build()
        .expect("https builds with the default features");
    let err = m
        .invoke(&[Message::human("hi")], &CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Connection { .. }), "{err}");
    assert!(
        server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
    );
}
