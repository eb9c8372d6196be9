//! The scripted model, binding tools, structured output with its corrective retry, and the
//! tracing of usage and latency.

mod common;

use std::sync::Arc;

use agent_llm::{
    CallOptions, ChatChunk, ChatModel, ChatModelExt, FinishReason, LlmError, Message, Reply,
    ScriptedModel, ToolChoice, ToolSpec, Usage,
};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

fn opts() -> CallOptions {
    CallOptions::default()
}

#[tokio::test]
async fn replies_in_order_then_reports_exhaustion() {
    let model = ScriptedModel::new(["one", "two"]);
    let msgs = [Message::human("hello there")];
    assert_eq!(model.invoke(&msgs, &opts()).await.unwrap().text(), "one");
    assert_eq!(model.invoke(&msgs, &opts()).await.unwrap().text(), "two");
    let err = model.invoke(&msgs, &opts()).await.unwrap_err();
    assert!(
        matches!(err, LlmError::ScriptExhausted { call: 3, len: 2 }),
        "{err}"
    );
    assert!(err.to_string().contains("add replies to the script"));
    assert_eq!(model.call_count(), 3);
}

#[tokio::test]
async fn tool_calls_get_deterministic_ids_and_default_usage() {
    let model = ScriptedModel::new([
        Reply::tool_call("echo", json!({"text": "hi"})),
        Reply::tool_calls([("a", json!({})), ("b", json!({"x": 1}))]),
    ]);
    let r = model
        .invoke(&[Message::human("say hi please")], &opts())
        .await
        .unwrap();
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(r.tool_calls()[0].id, "call_1");
    assert_eq!(r.tool_calls()[0].args, json!({"text": "hi"}));
    assert_eq!(r.usage.input_tokens, 3, "three words in");
    assert_eq!(r.message.usage, Some(r.usage));
    let r = model.invoke(&[], &opts()).await.unwrap();
    let ids: Vec<_> = r.tool_calls().iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_2", "call_3"]);
}

#[tokio::test]
async fn streams_chunk_by_chunk_and_matches_invoke() {
    let script = || {
        ScriptedModel::new([Reply::text("the quick brown fox")
            .with_tool_call("search", json!({"query": "fox facts", "limit": 3}))
            .with_usage(11, 5)
            .with_id("msg-1")])
    };
    let streamed = script();
    let mut stream = streamed
        .stream(&[Message::human("hi")], &opts())
        .await
        .unwrap();
    let mut chunks = Vec::new();
    while let Some(c) = stream.next().await {
        chunks.push(c.unwrap());
    }
    let texts: Vec<_> = chunks
        .iter()
        .filter_map(|c| match c {
            ChatChunk::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["the ", "quick ", "brown ", "fox"]);
    let fragments = chunks
        .iter()
        .filter(|c| matches!(c, ChatChunk::ToolCall(_)))
        .count();
    assert_eq!(fragments, 2, "arguments arrive in two fragments");
    assert!(matches!(chunks.last(), Some(ChatChunk::Finish { .. })));

    let collected = script()
        .stream_collect(&[Message::human("hi")], &opts())
        .await
        .unwrap();
    let invoked = script()
        .invoke(&[Message::human("hi")], &opts())
        .await
        .unwrap();
    assert_eq!(collected.message, invoked.message);
    assert_eq!(invoked.message.id.as_deref(), Some("msg-1"));
    assert_eq!(invoked.usage, Usage::new(11, 5));
    assert_eq!(invoked.tool_calls()[0].args["limit"], 3);
}

/// `invoke` builds its reply directly; every kind of reply must come out as the collected
/// stream gives it, errors included.
#[tokio::test]
async fn invoke_is_the_collected_stream_for_every_kind_of_reply() {
    let replies = || {
        vec![
            Reply::text("plain words, no usage"),
            Reply::text("")
                .with_tool_call("search", json!({"q": "ünïcødé ✓", "n": [1, 2.5, null]})),
            Reply::tool_calls([("a", json!({})), ("b", json!("not an object"))]).with_id("m-2"),
            Reply::text("cut").with_finish_reason(FinishReason::Length),
            Reply::text("no").with_finish_reason(FinishReason::Refusal),
            Reply::text("hidden").with_finish_reason(FinishReason::ContentFilter),
            Reply::tool_call("", json!({"x": 1})),
            Reply::tool_call_with_id("", "lookup", json!({"x": 2})),
        ]
    };
    let messages = [Message::human("count these four words")];
    let (streamed, invoked) = (ScriptedModel::new(replies()), ScriptedModel::new(replies()));
    for (n, reply) in replies().iter().enumerate() {
        let collected = streamed.stream_collect(&messages, &opts()).await;
        let direct = invoked.invoke(&messages, &opts()).await;
        match (collected, direct) {
            (Ok(c), Ok(d)) => {
                assert_eq!(c.message, d.message, "reply {n}: {reply:?}");
                assert_eq!(c.usage, d.usage, "reply {n}");
                assert_eq!(c.finish_reason, d.finish_reason, "reply {n}");
                assert_eq!(c.model, d.model, "reply {n}");
            }
            (Err(c), Err(d)) => assert_eq!(c.to_string(), d.to_string(), "reply {n}"),
            (c, d) => panic!("reply {n} ({reply:?}): collected {c:?}, invoked {d:?}"),
        }
    }
}

#[tokio::test]
async fn dynamic_replies_see_the_messages() {
    let model = ScriptedModel::new([Reply::text("first")]).then_fn(|messages| {
        Reply::text(format!(
            "echo: {}",
            messages.last().map(|m| m.content()).unwrap_or("")
        ))
    });
    assert_eq!(model.invoke(&[], &opts()).await.unwrap().text(), "first");
    let r = model
        .invoke(&[Message::human("ping")], &opts())
        .await
        .unwrap();
    assert_eq!(r.text(), "echo: ping");

    let always = ScriptedModel::from_fn(|m| Reply::text(m.len().to_string()));
    assert_eq!(
        always
            .invoke(&[Message::human("a"), Message::human("b")], &opts())
            .await
            .unwrap()
            .text(),
        "2"
    );
}

#[tokio::test]
async fn scripted_errors_are_returned() {
    let model = ScriptedModel::new([Reply::fail("rate limited (scripted)"), Reply::text("ok")]);
    let err = model.invoke(&[], &opts()).await.unwrap_err();
    assert_eq!(err.to_string(), "scripted: rate limited (scripted)");
    assert!(model.stream(&[], &opts()).await.is_ok());
}

#[tokio::test]
async fn bound_tools_reach_the_model_and_dyn_works() {
    let scripted = ScriptedModel::new([Reply::text("a"), Reply::text("b")]);
    let spec = ToolSpec::new("echo", "Echoes", json!({"type": "object"}));
    let bound = scripted
        .clone()
        .bind_tools([spec.clone()])
        .tool_choice(ToolChoice::Tool("echo".into()))
        .parallel_tool_calls(false);
    let model: Arc<dyn ChatModel> = Arc::new(bound);
    model.invoke(&[Message::human("x")], &opts()).await.unwrap();
    model
        .invoke(
            &[],
            &CallOptions::default()
                .tool_choice(ToolChoice::Required)
                .temperature(0.0),
        )
        .await
        .unwrap();
    let requests = scripted.requests();
    assert_eq!(requests[0].options.tools, vec![spec.clone()]);
    assert_eq!(
        requests[0].options.tool_choice,
        Some(ToolChoice::Tool("echo".into()))
    );
    assert_eq!(requests[0].options.parallel_tool_calls, Some(false));
    assert_eq!(requests[0].messages, vec![Message::human("x")]);
    assert_eq!(
        requests[1].options.tool_choice,
        Some(ToolChoice::Required),
        "call options win"
    );
    assert_eq!(requests[1].options.temperature, Some(0.0));
    assert_eq!(model.provider(), "scripted");
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Weather {
    city: String,
    celsius: f64,
}

#[tokio::test]
async fn structured_output_parses_and_sends_the_schema() {
    let model = ScriptedModel::new([Reply::json(json!({"city": "Oslo", "celsius": -3.5}))]);
    let structured = model.clone().with_structured_output::<Weather>();
    let w = structured
        .invoke(&[Message::human("weather in Oslo?")])
        .await
        .unwrap();
    assert_eq!(
        w,
        Weather {
            city: "Oslo".into(),
            celsius: -3.5
        }
    );
    let format = model.requests()[0].options.response_format.clone().unwrap();
    assert_eq!(format.name, "Weather");
    assert_eq!(format.schema["type"], "object");
    assert_eq!(format.schema["required"], json!(["city", "celsius"]));
    assert!(format.schema.get("$schema").is_none());
}

#[tokio::test]
async fn structured_output_retries_once_showing_the_error() {
    let model = ScriptedModel::new([
        Reply::json(json!({"city": "Oslo"})),
        Reply::text("```json\n{\"city\": \"Oslo\", \"celsius\": 2}\n```"),
    ]);
    let reply = model
        .clone()
        .with_structured_output::<Weather>()
        .invoke_with(&[Message::human("weather?")], &opts())
        .await
        .unwrap();
    assert_eq!(reply.value.celsius, 2.0);
    assert_eq!(reply.attempts, 2);
    let second = &model.requests()[1].messages;
    assert_eq!(second.len(), 3);
    assert_eq!(second[1].content(), r#"{"city":"Oslo"}"#);
    assert!(
        second[2].content().contains("missing field `celsius`"),
        "{}",
        second[2].content()
    );
    assert!(
        reply.usage.input_tokens > reply.response.usage.input_tokens,
        "usage sums both attempts"
    );
}

#[tokio::test]
async fn structured_output_gives_up_after_the_corrective_retry() {
    let model = ScriptedModel::new([
        Reply::text("sunny").with_usage(3, 2),
        Reply::text("still sunny").with_usage(4, 3),
    ]);
    let err = model
        .with_structured_output::<Weather>()
        .invoke(&[Message::human("weather?")])
        .await
        .unwrap_err();
    match &err {
        LlmError::StructuredOutput {
            attempts,
            raw,
            usage,
            ..
        } => {
            assert_eq!(*attempts, 2);
            assert_eq!(raw, "still sunny");
            // The tokens of both attempts were spent.
            assert_eq!((usage.input_tokens, usage.output_tokens), (7, 5));
        }
        other => panic!("unexpected {other}"),
    }
    assert!(err.to_string().contains("Weather"), "{err}");
}

#[tokio::test]
async fn delays_and_recording_switch() {
    let model = ScriptedModel::new([
        Reply::text("slow").with_delay(std::time::Duration::from_millis(200)),
        Reply::text("fast"),
    ])
    .without_recording();
    let slow = tokio::time::timeout(
        std::time::Duration::from_millis(20),
        model.invoke(&[], &opts()),
    )
    .await;
    assert!(slow.is_err(), "the delayed reply is still pending");
    // The timed-out call consumed its reply; the next one answers at once.
    assert_eq!(model.invoke(&[], &opts()).await.unwrap().text(), "fast");
    assert_eq!(model.call_count(), 2);
    assert!(model.requests().is_empty());
    assert_eq!(model.remaining(), 0);
}
