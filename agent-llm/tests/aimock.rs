//! Wire conformance of the three providers against `@copilotkit/aimock`, a mock server that
//! speaks OpenAI chat, Claude Messages and Ollama chat (streaming and tool calls included),
//! answering from `tests/fixtures/aimock.json`. Needs `AIMOCK_URL` (set by
//! `.ci/services/llm.sh`); skipped without it outside CI.

mod common;

use std::sync::Arc;

use agent_llm::{
    Anthropic, CallOptions, ChatChunk, ChatModel, ChatModelExt, FinishReason, LlmError, Message,
    Ollama, OpenAiCompatible, ToolSpec,
};
use common::{fast_retry, service_url, test_timeouts};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

fn providers(url: &str) -> Vec<Arc<dyn ChatModel>> {
    vec![
        Arc::new(
            OpenAiCompatible::builder()
                .base_url(format!("{url}/v1"))
                .api_key("mock-key")
                .model("gpt-4o-mini")
                .retry(fast_retry(1))
                .timeouts(test_timeouts())
                .build()
                .unwrap(),
        ),
        Arc::new(
            Anthropic::builder()
                .base_url(url)
                .api_key("mock-key")
                .model("claude-sonnet-4-5")
                .retry(fast_retry(1))
                .timeouts(test_timeouts())
                .build()
                .unwrap(),
        ),
        Arc::new(
            Ollama::builder()
                .base_url(url)
                .model("llama3.2")
                .retry(fast_retry(1))
                .timeouts(test_timeouts())
                .build()
                .unwrap(),
        ),
    ]
}

fn weather_tool() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "Current weather of a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}, "required": ["city"]}),
    )
}

const HELLO: &str = "Hello from the conformance fixture, streamed in several chunks.";

#[tokio::test]
async fn plain_reply() {
    let Some(url) = service_url("AIMOCK_URL") else {
        return;
    };
    for model in providers(&url) {
        let r = model
            .invoke(
                &[
                    Message::system("Be nice."),
                    Message::human("conformance: say hello"),
                ],
                &CallOptions::default(),
            )
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", model.provider()));
        assert_eq!(r.text(), HELLO, "{}", model.provider());
        assert_eq!(r.finish_reason, FinishReason::Stop, "{}", model.provider());
        assert!(r.tool_calls().is_empty());
    }
}

#[tokio::test]
async fn streamed_reply_arrives_in_pieces() {
    let Some(url) = service_url("AIMOCK_URL") else {
        return;
    };
    for model in providers(&url) {
        let mut stream = model
            .stream(
                &[Message::human("conformance: say hello")],
                &CallOptions::default(),
            )
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", model.provider()));
        let mut pieces = Vec::new();
        let mut finished = false;
        while let Some(chunk) = stream.next().await {
            match chunk.unwrap_or_else(|e| panic!("{}: {e}", model.provider())) {
                ChatChunk::Text { text } => pieces.push(text),
                ChatChunk::Finish { .. } => finished = true,
                _ => {}
            }
        }
        assert!(finished, "{}", model.provider());
        assert!(pieces.len() > 1, "{}: {pieces:?}", model.provider());
        assert_eq!(pieces.concat(), HELLO, "{}", model.provider());
    }
}

#[tokio::test]
async fn tool_call_whole_and_streamed() {
    let Some(url) = service_url("AIMOCK_URL") else {
        return;
    };
    for model in providers(&url) {
        let provider = model.provider();
        let bound = model.bind_tools([weather_tool()]);
        let msgs = [Message::human("conformance: weather in Oslo")];
        let whole = bound
            .invoke(&msgs, &CallOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{provider}: {e}"));
        let streamed = bound
            .stream_collect(&msgs, &CallOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{provider}: {e}"));
        for r in [&whole, &streamed] {
            assert_eq!(r.tool_calls().len(), 1, "{provider}");
            let call = &r.tool_calls()[0];
            assert_eq!(call.name, "get_weather", "{provider}");
            assert_eq!(
                call.args,
                json!({"city": "Oslo", "unit": "celsius"}),
                "{provider}"
            );
            assert!(!call.id.is_empty(), "{provider}");
            assert_eq!(r.finish_reason, FinishReason::ToolCalls, "{provider}");
        }
        // The tool result goes back in the provider's format and the request is accepted.
        let call = whole.tool_calls()[0].clone();
        let follow_up = [
            msgs[0].clone(),
            whole.clone().into_message(),
            Message::tool(call.id, "12 degrees"),
            Message::human("conformance: say hello"),
        ];
        let r = bound
            .invoke(&follow_up, &CallOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{provider}: {e}"));
        assert_eq!(r.text(), HELLO, "{provider}");
    }
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Weather {
    city: String,
    celsius: i64,
}

#[tokio::test]
async fn structured_output() {
    let Some(url) = service_url("AIMOCK_URL") else {
        return;
    };
    for model in providers(&url) {
        let provider = model.provider();
        let w = model
            .with_structured_output::<Weather>()
            .invoke(&[Message::human("conformance: structured weather")])
            .await
            .unwrap_or_else(|e| panic!("{provider}: {e}"));
        assert_eq!(
            w,
            Weather {
                city: "Oslo".into(),
                celsius: 12
            },
            "{provider}"
        );
    }
}

#[tokio::test]
async fn client_errors_are_typed_and_not_retried() {
    let Some(url) = service_url("AIMOCK_URL") else {
        return;
    };
    for model in providers(&url) {
        let provider = model.provider();
        let err = model
            .invoke(
                &[Message::human("conformance: bad request")],
                &CallOptions::default(),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(&err, LlmError::Http { status: 400, message, .. } if message.contains("Invalid request from the fixture")),
            "{provider}: {err}"
        );
    }
}
