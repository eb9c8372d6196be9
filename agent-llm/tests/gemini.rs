//! The Gemini wire against a local wiremock server speaking the documented `generateContent` /
//! `streamGenerateContent` JSON: what the requests look like and how the parts of a response
//! map to messages. What every wire shares is in `conformance.rs`.

mod common;

use agent_llm::{
    AiMessage, CallOptions, ChatChunk, ChatModel, ChatModelExt, FinishReason, Gemini, LlmError,
    Message, RetryPolicy, ToolCall, ToolChoice, ToolSpec, Usage,
};
use common::{sent_body, sse, test_timeouts};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "gemini-test-SECRET-key";

fn model(server: &MockServer) -> Gemini {
    Gemini::builder()
        .base_url(server.uri())
        .api_key(KEY)
        .model("gemini-test")
        .retry(RetryPolicy::none())
        .timeouts(test_timeouts())
        .build()
        .unwrap()
}

fn response(parts: Value, finish: &str) -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}],
        "usageMetadata": {"promptTokenCount": 21, "candidatesTokenCount": 5, "thoughtsTokenCount": 3,
                          "totalTokenCount": 29},
        "modelVersion": "gemini-test-001",
        "responseId": "resp-7",
    })
}

async fn mount_json(server: &MockServer, body: Value) {
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .mount(server)
        .await;
}

#[tokio::test]
async fn requests_follow_the_documented_shape() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1beta/models/gemini-test:generateContent"))
        .and(header("x-goog-api-key", KEY))
        .respond_with(ResponseTemplate::new(200).set_body_json(response(
            json!([{"text": "Weighing the options.", "thought": true}, {"text": "Paris."}]),
            "STOP",
        )))
        .expect(1)
        .mount(&server)
        .await;
    let lookup = ToolSpec::new(
        "lookup",
        "Looks a country up",
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
    );
    let ai = AiMessage {
        content: "Let me look.".into(),
        tool_calls: vec![
            ToolCall::new("call_1", "lookup", json!({"q": "France"})),
            ToolCall::new("call_2", "lookup", json!({"q": "Spain"})),
        ],
        ..Default::default()
    };
    let msgs = [
        Message::system("Be brief."),
        Message::system("Answer in English."),
        Message::human("Capitals of France and Spain?"),
        Message::Ai(ai),
        Message::tool("call_1", "{\"capital\": \"Paris\"}"),
        Message::tool_error("call_2", "service down"),
        Message::human("And France again?"),
        Message::remove("ignored"),
    ];
    let options = CallOptions::default()
        .tools([lookup])
        .tool_choice(ToolChoice::Tool("lookup".into()))
        .temperature(0.5)
        .max_tokens(64)
        .stop("END")
        .seed(7);
    let r = model(&server).invoke(&msgs, &options).await.unwrap();

    assert_eq!(r.text(), "Paris.");
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(
        r.usage,
        Usage::new(21, 8),
        "thought tokens are output tokens"
    );
    assert_eq!(r.model, "gemini-test-001");
    assert_eq!(r.message.id.as_deref(), Some("resp-7"));
    assert_eq!(
        r.message.extra.get("reasoning_content"),
        Some(&json!("Weighing the options."))
    );
    assert!(
        !r.message.extra.contains_key("gemini_parts"),
        "a thought flag alone is rebuilt from reasoning, not kept: {:?}",
        r.message.extra
    );

    let body = sent_body(&server, 0).await;
    assert_eq!(
        body,
        json!({
            "systemInstruction": {"parts": [{"text": "Be brief.\n\nAnswer in English."}]},
            "contents": [
                {"role": "user", "parts": [{"text": "Capitals of France and Spain?"}]},
                {"role": "model", "parts": [
                    {"text": "Let me look."},
                    {"functionCall": {"name": "lookup", "args": {"q": "France"}}},
                    {"functionCall": {"name": "lookup", "args": {"q": "Spain"}}},
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "lookup", "response": {"output": {"capital": "Paris"}}}},
                    {"functionResponse": {"name": "lookup", "response": {"error": "service down"}}},
                    {"text": "And France again?"},
                ]},
            ],
            "tools": [{"functionDeclarations": [{
                "name": "lookup", "description": "Looks a country up",
                "parametersJsonSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
            }]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["lookup"]}},
            "generationConfig": {"temperature": 0.5, "maxOutputTokens": 64, "stopSequences": ["END"], "seed": 7},
        })
    );
}

#[test]
fn tool_choices_map_to_function_calling_modes() {
    let m = Gemini::builder().model("m").build().unwrap();
    let mode = |choice: ToolChoice| {
        m.request_body(&[], &CallOptions::default().tool_choice(choice), false)["toolConfig"]
            ["functionCallingConfig"]
            .clone()
    };
    assert_eq!(mode(ToolChoice::Auto), json!({"mode": "AUTO"}));
    assert_eq!(mode(ToolChoice::None), json!({"mode": "NONE"}));
    assert_eq!(mode(ToolChoice::Required), json!({"mode": "ANY"}));
}

#[test]
fn urls_carry_the_model_and_the_api_version() {
    let m = Gemini::builder().model("gemini-2.5-flash").build().unwrap();
    assert_eq!(
        m.url("gemini-2.5-flash", false),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    );
    assert_eq!(
        m.url("models/gemini-2.5-flash", true),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    let v1 = Gemini::builder()
        .model("m")
        .base_url("http://127.0.0.1:9/v1/")
        .build()
        .unwrap();
    assert_eq!(
        v1.url("m", false),
        "http://127.0.0.1:9/v1/models/m:generateContent"
    );
}

#[tokio::test]
async fn calls_keep_their_ids_and_signatures_for_the_next_turn() {
    let server = MockServer::start().await;
    mount_json(
        &server,
        response(
            json!([{"functionCall": {"id": "fc-1", "name": "lookup", "args": {"q": "Oslo"}},
                    "thoughtSignature": "c2lnbmF0dXJl"}]),
            "STOP",
        ),
    )
    .await;
    let m = model(&server);
    let r = m
        .invoke(&[Message::human("Oslo?")], &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        r.tool_calls(),
        &[ToolCall::new("fc-1", "lookup", json!({"q": "Oslo"}))]
    );
    let kept = r.message.extra["gemini_parts"].clone();

    let next = [
        Message::human("Oslo?"),
        r.into_message(),
        Message::tool("fc-1", "sunny"),
    ];
    m.invoke(&next, &CallOptions::default()).await.unwrap();
    let body = sent_body(&server, 1).await;
    assert_eq!(body["contents"][1]["parts"], kept, "sent back verbatim");
    assert_eq!(
        body["contents"][2]["parts"][0],
        json!({"functionResponse": {"id": "fc-1", "name": "lookup", "response": {"output": "sunny"}}})
    );
}

#[tokio::test]
async fn calls_without_ids_get_fresh_ones_that_are_not_sent_back() {
    let server = MockServer::start().await;
    mount_json(
        &server,
        response(
            json!([{"functionCall": {"name": "lookup", "args": {"q": "a"}}},
                   {"functionCall": {"name": "lookup"}}]),
            "STOP",
        ),
    )
    .await;
    let m = model(&server);
    let r = m.invoke(&[], &CallOptions::default()).await.unwrap();
    let [a, b] = r.tool_calls() else {
        panic!("{r:?}")
    };
    assert!(a.id.starts_with("call_") && b.id.starts_with("call_") && a.id != b.id);
    assert_eq!(b.args, json!({}));
    let next = [r.clone().into_message(), Message::tool(a.id.clone(), "x")];
    m.invoke(&next, &CallOptions::default()).await.unwrap();
    let body = sent_body(&server, 1).await;
    assert_eq!(
        body["contents"][1]["parts"][0],
        json!({"functionResponse": {"name": "lookup", "response": {"output": "x"}}})
    );
}

#[tokio::test]
async fn streams_are_sse_responses_with_text_thoughts_calls_and_usage() {
    let server = MockServer::start().await;
    let event = |parts: Value| {
        json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
                                      "modelVersion": "gemini-test-001", "responseId": "resp-9"})
    };
    let mut last = response(
        json!([{"functionCall": {"name": "lookup", "args": {"q": "Oslo"}}}]),
        "STOP",
    );
    last["responseId"] = json!("resp-9");
    let body = sse(&[
        event(json!([{"text": "Hmm.", "thought": true}])),
        event(json!([{"text": "Let me "}])),
        event(json!([{"text": "check."}])),
        last,
    ]);
    Mock::given(method("POST"))
        .and(path("/v1beta/models/gemini-test:streamGenerateContent"))
        .and(query_param("alt", "sse"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .mount(&server)
        .await;
    let m = model(&server);
    let mut stream = m
        .stream(&[Message::human("Oslo?")], &CallOptions::default())
        .await
        .unwrap();
    let mut chunks = Vec::new();
    while let Some(chunk) = stream.next().await {
        chunks.push(chunk.unwrap());
    }
    assert_eq!(
        chunks,
        vec![
            ChatChunk::Start {
                id: Some("resp-9".into()),
                model: Some("gemini-test-001".into())
            },
            ChatChunk::Reasoning {
                text: "Hmm.".into()
            },
            ChatChunk::Text {
                text: "Let me ".into()
            },
            ChatChunk::Text {
                text: "check.".into()
            },
            ChatChunk::ToolCall(agent_llm::ToolCallChunk {
                index: 0,
                id: match &chunks[4] {
                    ChatChunk::ToolCall(c) => c.id.clone(),
                    _ => None,
                },
                name: Some("lookup".into()),
                args: "{\"q\":\"Oslo\"}".into(),
            }),
            ChatChunk::Usage {
                usage: Usage::new(21, 8)
            },
            ChatChunk::Finish {
                reason: FinishReason::ToolCalls
            },
        ]
    );
    let r = m
        .stream_collect(&[Message::human("Oslo?")], &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(r.text(), "Let me check.");
    assert_eq!(r.tool_calls()[0].args, json!({"q": "Oslo"}));
    assert_eq!(r.message.extra["reasoning_content"], "Hmm.");
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Capital {
    country: String,
    city: String,
}

#[tokio::test]
async fn structured_output_asks_for_json_matching_the_schema() {
    let server = MockServer::start().await;
    mount_json(
        &server,
        response(
            json!([{"text": "{\"country\": \"France\", \"city\": \"Paris\"}"}]),
            "STOP",
        ),
    )
    .await;
    let c = model(&server)
        .with_structured_output::<Capital>()
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
    let config = &sent_body(&server, 0).await["generationConfig"];
    assert_eq!(config["responseMimeType"], "application/json");
    assert_eq!(
        config["responseJsonSchema"]["required"],
        json!(["country", "city"])
    );
}

#[tokio::test]
async fn safety_stops_and_blocked_prompts_are_content_filtered() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(response(json!([{"text": "Once upon"}]), "SAFETY")),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
            "usageMetadata": {"promptTokenCount": 4, "totalTokenCount": 4},
        })))
        .with_priority(2)
        .mount(&server)
        .await;
    let m = model(&server);
    let err = m.invoke(&[], &CallOptions::default()).await.unwrap_err();
    assert!(
        matches!(&err, LlmError::ContentFiltered { partial, .. } if partial == "Once upon"),
        "{err}"
    );
    let err = m.invoke(&[], &CallOptions::default()).await.unwrap_err();
    assert!(
        matches!(&err, LlmError::ContentFiltered { partial, .. } if partial.contains("PROHIBITED_CONTENT")),
        "{err}"
    );
}

#[tokio::test]
async fn a_max_tokens_stop_is_length() {
    let server = MockServer::start().await;
    mount_json(
        &server,
        response(json!([{"text": "The long"}]), "MAX_TOKENS"),
    )
    .await;
    let r = model(&server)
        .invoke(&[], &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(r.finish_reason, FinishReason::Length);
    assert_eq!(r.text(), "The long");
}
