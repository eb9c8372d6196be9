//! What reaches `tracing`: usage and latency of every call, retries, and never an API key.
//! One test in its own binary, because it installs a global subscriber.

mod common;

use agent_llm::{CallOptions, ChatModel, Message, OpenAiCompatible, Reply, ScriptedModel};
use common::{fast_retry, test_timeouts};
use futures::StreamExt;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-test-SECRET-0123456789";

#[tokio::test]
async fn usage_latency_and_retries_are_traced_and_keys_never_are() {
    let captured = common::capture_tracing();

    // Usage and latency of invoke and stream.
    let model = ScriptedModel::new([
        Reply::text("hi").with_usage(21, 4),
        Reply::text("yo").with_usage(2, 1),
    ]);
    model
        .invoke(&[Message::human("x")], &CallOptions::default())
        .await
        .unwrap();
    let mut s = model.stream(&[], &CallOptions::default()).await.unwrap();
    while s.next().await.is_some() {}
    drop(s);
    let text = captured.text();
    assert!(text.contains("llm call finished"), "{text}");
    assert!(
        text.contains("input_tokens=21") && text.contains("output_tokens=4"),
        "{text}"
    );
    assert!(
        text.contains("input_tokens=2 ") && text.contains("output_tokens=1"),
        "{text}"
    );
    assert!(text.contains("latency_ms="), "{text}");
    assert!(text.contains("provider=\"scripted\""), "{text}");

    // A failing provider call with retries: the key is in no log line, error or Debug output.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string("busy"))
        .mount(&server)
        .await;
    let m = OpenAiCompatible::builder()
        .base_url(server.uri())
        .api_key(KEY)
        .model("gpt-test")
        .retry(fast_retry(2))
        .timeouts(test_timeouts())
        .build()
        .unwrap();
    let err = m
        .invoke(&[Message::human("hi")], &CallOptions::default())
        .await
        .unwrap_err();
    let stream_err = m.stream(&[], &CallOptions::default()).await.err().unwrap();
    let debug = format!("{m:?}");
    let shown = format!("{err} {stream_err} {err:?} {stream_err:?}");
    let logs = captured.text();
    for text in [&debug, &shown, &logs] {
        assert!(!text.contains(KEY), "key leaked: {text}");
        assert!(!text.contains("SECRET"), "key leaked: {text}");
    }
    assert!(debug.contains("Sensitive"), "{debug}");
    assert!(logs.contains("retrying llm request"), "{logs}");
    assert!(logs.contains("llm call failed"), "{logs}");
}
