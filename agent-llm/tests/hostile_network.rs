//! A hostile or careless network, for every provider: absurd `Retry-After` values and retry
//! policies do not panic, a redirect to another origin does not carry the API key, and a key
//! is not sent in clear text to another machine unless the user opts in.

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_llm::{
    Anthropic, CallOptions, ChatModel, Gemini, LlmError, Message, Ollama, OpenAiCompatible,
    RetryPolicy,
};
use common::{fast_retry, test_timeouts};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-hostile-network-test-key";

/// Each provider on `base`, with `retry`, and a whole text reply in its wire format.
fn models(base: &str, retry: &RetryPolicy) -> Vec<(Arc<dyn ChatModel>, Value)> {
    let t = test_timeouts;
    vec![
        (
            Arc::new(
                OpenAiCompatible::builder()
                    .base_url(base)
                    .api_key(KEY)
                    .model("m")
                    .retry(retry.clone())
                    .timeouts(t())
                    .build()
                    .unwrap(),
            ),
            json!({"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}),
        ),
        (
            Arc::new(
                Anthropic::builder()
                    .base_url(base)
                    .api_key(KEY)
                    .model("m")
                    .retry(retry.clone())
                    .timeouts(t())
                    .build()
                    .unwrap(),
            ),
            json!({"type": "message", "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}),
        ),
        (
            Arc::new(
                Ollama::builder()
                    .base_url(base)
                    .api_key(KEY)
                    .model("m")
                    .retry(retry.clone())
                    .timeouts(t())
                    .build()
                    .unwrap(),
            ),
            json!({"message": {"role": "assistant", "content": "ok"}, "done": true}),
        ),
        (
            Arc::new(
                Gemini::builder()
                    .base_url(base)
                    .api_key(KEY)
                    .model("m")
                    .retry(retry.clone())
                    .timeouts(t())
                    .build()
                    .unwrap(),
            ),
            json!({"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}),
        ),
    ]
}

async fn requests(server: &MockServer) -> usize {
    server.received_requests().await.unwrap_or_default().len()
}

/// `Retry-After: 1e20` (and other absurd waits) is longer than any `max_retry_after`: the
/// error comes back at once instead of a panic converting it into a `Duration`. A negative or
/// NaN value is ignored: the policy's own backoff applies.
#[tokio::test]
async fn absurd_retry_after_values_do_not_panic() {
    for (header, value, waited) in [
        ("retry-after", "1e20", false),
        ("retry-after", "inf", false),
        ("retry-after-ms", "1e300", false),
        ("retry-after", "-5", true),
        ("retry-after", "NaN", true),
        ("retry-after-ms", "-1", true),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(429).insert_header(header, value))
            .mount(&server)
            .await;
        for (model, _) in models(&server.uri(), &fast_retry(3)) {
            let name = model.provider();
            let before = requests(&server).await;
            let err = model
                .invoke(&[Message::human("hi")], &CallOptions::default())
                .await
                .unwrap_err();
            assert_eq!(err.status(), Some(429), "{name} {header}: {value}: {err}");
            let sent = requests(&server).await - before;
            assert_eq!(sent, if waited { 3 } else { 1 }, "{name} {header}: {value}");
        }
    }
}

/// A policy asking for waits longer than a `Duration` holds waits (saturated), it does not
/// panic computing them.
#[tokio::test]
async fn a_huge_retry_policy_waits_instead_of_panicking() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    let huge = RetryPolicy::new()
        .initial_interval(Duration::MAX)
        .backoff_factor(f64::INFINITY)
        .max_interval(Duration::MAX);
    let (messages, options) = ([Message::human("hi")], CallOptions::default());
    for (model, _) in models(&server.uri(), &huge) {
        let call = model.invoke(&messages, &options);
        let waited = tokio::time::timeout(Duration::from_millis(300), call).await;
        assert!(
            waited.is_err(),
            "{}: still waiting to retry",
            model.provider()
        );
    }
}

/// A redirect to another origin (another port counts) is not followed, so no key reaches it;
/// the error says why. A redirect within the origin is followed.
#[tokio::test]
async fn a_redirect_to_another_origin_does_not_carry_the_key() {
    let elsewhere = MockServer::start().await;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(307)
                .insert_header("location", format!("{}/stolen", elsewhere.uri())),
        )
        .mount(&server)
        .await;
    for (model, reply) in models(&server.uri(), &fast_retry(3)) {
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(reply))
            .mount(&elsewhere)
            .await;
        let name = model.provider();
        let err = model
            .invoke(&[Message::human("hi")], &CallOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, LlmError::Http { status: 307, message, .. } if message.contains("another origin")),
            "{name}: {err}"
        );
        let stream_err = model
            .stream(&[Message::human("hi")], &CallOptions::default())
            .await
            .err()
            .unwrap_or_else(|| panic!("{name}: the stream followed the redirect"));
        assert_eq!(stream_err.status(), Some(307), "{name}: {stream_err}");
        let leaked = elsewhere.received_requests().await.unwrap_or_default();
        assert!(
            leaked.is_empty(),
            "{name}: {} requests reached the other origin",
            leaked.len()
        );
        elsewhere.reset().await;
    }

    // Within the origin, a redirect is followed (with the key: it stays with its server).
    let same = MockServer::start().await;
    for (model, reply) in models(&same.uri(), &fast_retry(1)) {
        same.reset().await;
        Mock::given(method("POST"))
            .and(path("/moved"))
            .respond_with(ResponseTemplate::new(200).set_body_json(reply))
            .with_priority(1)
            .mount(&same)
            .await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(307)
                    .insert_header("location", format!("{}/moved", same.uri())),
            )
            .with_priority(2)
            .mount(&same)
            .await;
        let name = model.provider();
        let r = model
            .invoke(&[Message::human("hi")], &CallOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.text(), "ok", "{name}");
    }
}

/// A key over plain `http://` to a host that is not this machine is refused when the model
/// is built (before anything is sent), naming the opt-in; loopback, `https://`, no key and
/// the opt-in all build.
#[test]
fn a_key_over_plain_http_to_another_machine_needs_the_opt_in() {
    // 192.0.2.0/24 is TEST-NET-1: nothing answers there, and nothing is sent.
    let remote = "http://192.0.2.10:8080";
    macro_rules! check {
        ($provider:ident) => {{
            let build = |base: &str, key: bool, allow: bool| {
                let mut b = $provider::builder()
                    .base_url(base)
                    .model("m")
                    .allow_insecure_http(allow);
                if key {
                    b = b.api_key(KEY);
                }
                b.build().map(|_| ())
            };
            let err = build(remote, true, false).unwrap_err();
            assert!(
                matches!(err, LlmError::Config { .. })
                    && err.to_string().contains("allow_insecure_http"),
                "{err}"
            );
            assert!(err.to_string().contains("192.0.2.10"), "{err}");
            assert!(!err.to_string().contains(KEY), "{err}");
            build(remote, true, true).unwrap();
            build(remote, false, false).unwrap();
            build("http://127.0.0.1:8080", true, false).unwrap();
            build("http://localhost:8080", true, false).unwrap();
            build("http://[::1]:8080", true, false).unwrap();
            if cfg!(feature = "rustls") {
                build("https://192.0.2.10", true, false).unwrap();
            }
        }};
    }
    check!(OpenAiCompatible);
    check!(Anthropic);
    check!(Ollama);
    check!(Gemini);
    // Ollama's host without a scheme means http://.
    let err = Ollama::builder()
        .base_url("gpu-box:11434")
        .api_key(KEY)
        .model("m")
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("allow_insecure_http"), "{err}");
}
