//! End to end against a real model: llama.cpp's `llama-server` serving SmolLM2-135M-Instruct
//! through the OpenAI-compatible provider. Checks the protocol (replies arrive, stream in
//! pieces, carry usage, tool calls and structured output parse), never the wording.
//! Needs `LLAMA_SERVER_URL` (set by `.ci/services/llm.sh`); skipped without it outside CI.

mod common;

use std::time::Duration;

use agent_llm::{
    CallOptions, ChatChunk, ChatModel, ChatModelExt, FinishReason, Message, OpenAiCompatible,
    RetryPolicy, Timeouts, ToolChoice, ToolSpec,
};
use common::service_url;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

fn model(url: &str) -> OpenAiCompatible {
    OpenAiCompatible::builder()
        .base_url(url)
        .model("smollm2-135m")
        .retry(RetryPolicy::new(1).initial_backoff(Duration::from_millis(100)))
        .timeouts(Timeouts {
            connect: Duration::from_secs(5),
            request: Duration::from_secs(120),
            stream_idle: Duration::from_secs(60),
        })
        .build()
        .unwrap()
}

fn short() -> CallOptions {
    CallOptions::default().max_tokens(32).temperature(0.0)
}

#[tokio::test]
async fn plain_chat() {
    let Some(url) = service_url("LLAMA_SERVER_URL") else {
        return;
    };
    let r = model(&url)
        .invoke(
            &[
                Message::system("You are a helpful assistant."),
                Message::human("What is the capital of France?"),
            ],
            &short(),
        )
        .await
        .unwrap();
    assert!(!r.text().trim().is_empty());
    assert!(
        matches!(r.finish_reason, FinishReason::Stop | FinishReason::Length),
        "{:?}",
        r.finish_reason
    );
    assert!(
        r.usage.input_tokens > 0 && r.usage.output_tokens > 0,
        "{:?}",
        r.usage
    );
    assert!(r.usage.output_tokens <= 32);
}

#[tokio::test]
async fn streamed_chat() {
    let Some(url) = service_url("LLAMA_SERVER_URL") else {
        return;
    };
    let m = model(&url);
    let mut stream = m
        .stream(
            &[Message::human("Write one sentence about the sea.")],
            &short(),
        )
        .await
        .unwrap();
    let (mut texts, mut usage, mut finish) = (Vec::new(), None, None);
    while let Some(chunk) = stream.next().await {
        match chunk.unwrap() {
            ChatChunk::Text { text } => texts.push(text),
            ChatChunk::Usage { usage: u } => usage = Some(u),
            ChatChunk::Finish { reason } => finish = Some(reason),
            _ => {}
        }
    }
    assert!(texts.len() > 1, "tokens arrive one by one: {texts:?}");
    assert!(finish.is_some());
    let usage = usage.expect("stream_options.include_usage gives usage");
    assert!(usage.output_tokens > 0);
}

#[tokio::test]
async fn tool_call() {
    let Some(url) = service_url("LLAMA_SERVER_URL") else {
        return;
    };
    let weather = ToolSpec::new(
        "get_weather",
        "Get the current weather for a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    );
    let m = model(&url)
        .bind_tools([weather])
        .tool_choice(ToolChoice::Required)
        .parallel_tool_calls(false);
    let msgs = [Message::human("What is the weather in Paris?")];
    let opts = CallOptions::default().max_tokens(64).temperature(0.0);
    for r in [
        m.invoke(&msgs, &opts).await.unwrap(),
        m.stream_collect(&msgs, &opts).await.unwrap(),
    ] {
        assert_eq!(r.tool_calls().len(), 1, "{r:?}");
        let call = &r.tool_calls()[0];
        assert_eq!(call.name, "get_weather");
        assert!(call.args.is_object(), "{:?}", call.args);
        assert!(!call.id.is_empty());
    }
}

/// Numbers and booleans only: the server's JSON-schema grammar then fixes every character
/// but the digits, so the check does not depend on what a 135M model writes in free text
/// (and the `--logit-bias` that helps its tool calls does not leak into strings).
#[derive(Debug, Deserialize, JsonSchema)]
struct Answer {
    result: i64,
    sure: bool,
}

#[tokio::test]
async fn structured_output() {
    let Some(url) = service_url("LLAMA_SERVER_URL") else {
        return;
    };
    let reply = model(&url)
        .with_structured_output::<Answer>()
        .invoke_with(
            &[Message::human("What is 2 + 3? Answer in JSON.")],
            &CallOptions::default().max_tokens(64).temperature(0.0),
        )
        .await
        .unwrap();
    assert!(reply.attempts <= 2);
    let v: serde_json::Value = serde_json::from_str(reply.response.text()).unwrap();
    assert_eq!(v["result"].as_i64(), Some(reply.value.result));
    assert_eq!(v["sure"].as_bool(), Some(reply.value.sure));
}
