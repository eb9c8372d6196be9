//! Every flow served keeps LangGraph's chat contract (issue 58), as a chat UI sees it
//! (LangChain's Agent Chat UI: `useStream` draws a thread's `messages`): the five flows behind
//! an in-process `agent_server::Server` (each added with `Flow::serve`), offline and with a
//! scripted model (a run's `context.model`), turns sent as Agent Chat UI sends them — a human
//! message with the client's id and content blocks — over `/runs/wait` and `/runs/stream`
//! (`messages-tuple` and `values`).
//!
//! After each turn the thread's `messages` hold the human message with its id and blocks,
//! the tool use as AI `tool_calls` each followed by its `ToolMessage`s where the flow uses
//! tools, and the answer as an AI message. In a streamed turn every streamed AI chunk carries
//! the id of an AI message the thread keeps (the answer's, when a model wrote it), the
//! chunks of a message add up to its text, and nothing of an internal model call (a router's
//! JSON, a classifier's, an extractor's) is streamed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use agent_flows::{FLOWS, Models, ServeFlow};
use agent_llm::{CallOptions, ChatModel, Message, Reply, ScriptedModel};
use serde_json::{Value, json};

mod common;

/// How a turn is sent.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Via {
    /// `POST /threads/{id}/runs/wait`.
    Wait,
    /// `POST /threads/{id}/runs/stream`, `stream_mode: ["messages-tuple", "values"]`.
    Stream,
}

/// One turn of a case.
struct Turn {
    text: &'static str,
    via: Via,
    /// Whether the flow uses tools on it.
    tools: bool,
    /// Whether a model writes the answer (so it streams, under the id the thread keeps).
    streamed_answer: bool,
}

/// A conversation with one flow.
struct Case {
    flow: &'static str,
    /// `offline` or `scripted`.
    model: &'static str,
    context: Value,
    turns: Vec<Turn>,
}

fn turn(text: &'static str, via: Via, tools: bool, streamed_answer: bool) -> Turn {
    Turn {
        text,
        via,
        tools,
        streamed_answer,
    }
}

fn cases() -> Vec<Case> {
    use Via::{Stream, Wait};
    let case = |flow, model, context: Value, turns| Case {
        flow,
        model,
        context,
        turns,
    };
    let mut all = Vec::new();
    for model in ["offline", "scripted"] {
        all.extend([
            case(
                "tool-router",
                model,
                json!({}),
                vec![
                    turn("What time is it in Tokyo and in London?", Wait, true, true),
                    turn("And how much is 6*7?", Stream, true, true),
                ],
            ),
            case(
                "form",
                model,
                json!({}),
                vec![
                    turn("Me llamo Juan", Stream, false, false),
                    turn("juan@ejemplo.com", Stream, false, true),
                ],
            ),
            case(
                "orchestrator",
                model,
                json!({}),
                vec![
                    turn("What was the unemployment rate in 2008?", Wait, true, true),
                    turn(
                        "What was the unemployment rate in 2008?",
                        Stream,
                        true,
                        true,
                    ),
                ],
            ),
            case(
                "data",
                model,
                json!({}),
                vec![
                    turn(
                        "What was the average unemployment rate in 2008?",
                        Stream,
                        false,
                        false,
                    ),
                    turn("Hello! What can you do?", Stream, false, true),
                    turn("Hello! What can you do?", Wait, false, true),
                ],
            ),
            case(
                "react",
                model,
                json!({"mode": "llm"}),
                vec![
                    turn("Repite: hola", Wait, true, false),
                    turn("Repite: hola", Stream, true, false),
                ],
            ),
        ]);
    }
    // Static mode: rules, no model; the chat is the same.
    all.push(case(
        "react",
        "offline",
        json!({"mode": "static"}),
        vec![
            turn(
                "¿Cuánto es 12*(3+4) y qué hora es en Tokio?",
                Stream,
                true,
                false,
            ),
            turn("Repite: hola", Wait, true, false),
        ],
    ));
    all
}

/// Whether this turn's tool results are in the request (the messages after its human one).
fn after_tools(messages: &[Message]) -> bool {
    let start = messages
        .iter()
        .rposition(|m| m.kind() == "human")
        .unwrap_or(0);
    messages[start..].iter().any(|m| m.kind() == "tool")
}

/// The last human message's text.
fn last_human(messages: &[Message]) -> String {
    messages
        .iter()
        .rev()
        .find(|m| m.kind() == "human")
        .map(|m| m.content().to_owned())
        .unwrap_or_default()
}

/// A scripted model that answers every call of `flow` by its task.
fn scripted(flow: &str) -> Arc<dyn ChatModel> {
    let reply: fn(&[Message], &CallOptions) -> Reply = match flow {
        "tool-router" => |messages, options| match options.task.as_deref() {
            Some("RouterDecision") if last_human(messages).contains("6*7") => Reply::json(
                json!({"calls": [{"tool": "calculator", "args": {"expression": "6*7"}}]}),
            ),
            Some("RouterDecision") => Reply::json(json!({"calls": [
                {"tool": "datetime", "args": {"timezone": "Asia/Tokyo"}},
                {"tool": "datetime", "args": {"timezone": "Europe/London"}},
            ]})),
            _ => Reply::text("Here are the results you asked for."),
        },
        "form" => |messages, options| match options.task.as_deref() {
            Some("HumanIntent") => Reply::json(json!({"wants_human": false})),
            Some("CorrectionCheck") => {
                Reply::json(json!({"is_correction": false, "field": "none"}))
            }
            Some("OffTopicCheck") => Reply::json(json!({"off_topic": false})),
            Some("FieldExtraction") => {
                let text = last_human(messages);
                let value = if text.contains('@') {
                    text.as_str()
                } else {
                    "Juan"
                };
                Reply::json(json!({ "value": value }))
            }
            _ => Reply::text("¡Gracias, Juan! Anoté juan@ejemplo.com."),
        },
        "orchestrator" => |messages, options| {
            match options.task.as_deref() {
            Some("planner") if !after_tools(messages) => Reply::text("").with_tool_call(
                "sql_query",
                json!({"sql": "SELECT avg(unemp) AS unemp FROM macrodata WHERE year = ?1", "params": [2008]}),
            ),
            Some("planner") => Reply::text("nothing else to try"),
            Some("RelevanceVerdict") => {
                Reply::json(json!({"relevant": true, "reason": "the results fit"}))
            }
            _ => Reply::text("Unemployment averaged 5.8% in 2008."),
        }
        },
        "data" => |messages, options| match options.task.as_deref() {
            Some("IntentDecision") if last_human(messages).starts_with("Hello") => Reply::json(
                json!({"intent": "chitchat", "lang": "en", "internal_query": "Hello! What can you do?"}),
            ),
            Some("IntentDecision") => Reply::json(json!({
                "intent": "data", "lang": "en",
                "internal_query": "What was the average unemployment rate in 2008?",
            })),
            Some("ParsedQuery") => {
                Reply::json(json!({"thoughts": "one average", "steps": [{"atoms": [
                    {"atom": "metric", "name": "unemp"},
                    {"atom": "time_range", "from": "2008", "to": "2008"},
                    {"atom": "aggregate", "function": "avg"},
                ]}]}))
            }
            _ => Reply::text("Hello! I answer questions about US macroeconomic data."),
        },
        _ => |messages, _| {
            if after_tools(messages) {
                Reply::text("hola")
            } else {
                Reply::tool_call("echo", json!({"text": "hola"}))
            }
        },
    };
    Arc::new(ScriptedModel::from_request_fn(reply))
}

/// The five flows behind an in-process server; its URL.
async fn serve() -> String {
    let mut builder = agent_server::Server::builder().web_page(false).mcp(false);
    for flow in FLOWS {
        let name = flow.info().name;
        let models = Models::offline().with("scripted", scripted(name));
        let served = ServeFlow::new(name).with_models(Arc::new(models));
        builder = flow.serve(builder, &served).unwrap();
    }
    let server = builder.build().await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(server.serve(listener));
    url
}

/// The events of an SSE body: `(name, data)`.
fn events(body: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let body = body.replace("\r\n", "\n");
    for block in body.split("\n\n") {
        let mut name = String::new();
        let mut data = String::new();
        for line in block.lines() {
            if let Some(n) = line.strip_prefix("event:") {
                name = n.trim().to_owned();
            } else if let Some(d) = line.strip_prefix("data:") {
                data.push_str(d.trim_start());
            }
        }
        if !name.is_empty() {
            out.push((name, serde_json::from_str(&data).unwrap_or(Value::Null)));
        }
    }
    out
}

/// What a streamed turn sent as chat messages.
#[derive(Default, Debug)]
struct Streamed {
    /// The text of the AI chunks, by message id.
    chunks: BTreeMap<String, String>,
    /// The ids of whole messages sent.
    whole: Vec<String>,
    /// The last `values` event's messages.
    last_values: Vec<Value>,
}

fn streamed(events: &[(String, Value)]) -> Streamed {
    let mut out = Streamed::default();
    for (name, data) in events {
        match name.as_str() {
            "messages" => {
                let message = &data[0];
                let id = message["id"].as_str().unwrap_or_else(|| {
                    panic!("every streamed message has an id: {message}");
                });
                if message["type"] == "AIMessageChunk" {
                    out.chunks
                        .entry(id.to_owned())
                        .or_default()
                        .push_str(message["content"].as_str().unwrap_or_default());
                } else {
                    out.whole.push(id.to_owned());
                }
            }
            "values" => {
                out.last_values = data["messages"].as_array().cloned().unwrap_or_default();
            }
            "error" => panic!("the run failed: {data}"),
            _ => {}
        }
    }
    out
}

/// Checks one turn's part of the thread's `messages` (the human message whose id is `sent`
/// and what follows it); returns the answer.
fn check_messages<'a>(
    label: &str,
    messages: &'a [Value],
    sent: &str,
    blocks: &Value,
    turn: &Turn,
) -> &'a Value {
    let at = messages
        .iter()
        .position(|m| m["id"] == sent)
        .unwrap_or_else(|| {
            panic!("{label}: the human message keeps the client's id: {messages:#?}")
        });
    let human = &messages[at];
    assert_eq!(human["type"], "human", "{label}");
    assert_eq!(&human["content"], blocks, "{label}: the blocks as sent");
    let after = &messages[at + 1..];
    let mut ids = BTreeSet::new();
    for m in messages {
        let id = m["id"].as_str().unwrap_or_default();
        assert!(!id.is_empty(), "{label}: every message has an id: {m}");
        assert!(ids.insert(id), "{label}: ids are unique: {id}");
    }
    // Tool use: an AI message with the calls, then a tool message per call, in order.
    let mut calls_seen = 0;
    let mut i = 0;
    while i < after.len() {
        let calls = after[i]["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if after[i]["type"] == "ai" && !calls.is_empty() {
            for (k, call) in calls.iter().enumerate() {
                assert!(
                    call["name"].as_str().is_some_and(|n| !n.is_empty()),
                    "{label}: {call}"
                );
                assert!(call["args"].is_object(), "{label}: {call}");
                let result = after
                    .get(i + 1 + k)
                    .unwrap_or_else(|| panic!("{label}: no result for {call}"));
                assert_eq!(result["type"], "tool", "{label}: {after:#?}");
                assert_eq!(result["tool_call_id"], call["id"], "{label}: {after:#?}");
                assert_eq!(result["name"], call["name"], "{label}");
            }
            calls_seen += calls.len();
            i += 1 + calls.len();
        } else {
            i += 1;
        }
    }
    assert_eq!(
        calls_seen > 0,
        turn.tools,
        "{label}: tool calls: {after:#?}"
    );
    let answer = after.last().unwrap_or_else(|| panic!("{label}: no answer"));
    assert_eq!(answer["type"], "ai", "{label}: {answer}");
    assert_eq!(answer["tool_calls"], json!([]), "{label}");
    assert!(
        answer["content"]
            .as_str()
            .is_some_and(|c| !c.trim().is_empty()),
        "{label}: {answer}"
    );
    answer
}

/// Checks what a streamed turn sent against the thread's messages.
fn check_stream(
    label: &str,
    seen: &Streamed,
    messages: &[Value],
    sent: &str,
    turn: &Turn,
    answer: &Value,
) {
    let at = messages.iter().position(|m| m["id"] == sent).unwrap();
    let kept: BTreeMap<&str, &Value> = messages[at + 1..]
        .iter()
        .map(|m| (m["id"].as_str().unwrap_or_default(), m))
        .collect();
    for (id, text) in &seen.chunks {
        let message = kept.get(id.as_str()).unwrap_or_else(|| {
            panic!("{label}: a streamed message the thread does not keep ({id}: {text:?}): an internal call streamed")
        });
        assert_eq!(message["type"], "ai", "{label}");
        assert!(!text.trim_start().starts_with('{'), "{label}: {text}");
        if message["tool_calls"] == json!([]) {
            assert_eq!(
                text.trim(),
                message["content"].as_str().unwrap_or_default(),
                "{label}: the chunks add up to the message"
            );
        }
    }
    let answer_id = answer["id"].as_str().unwrap();
    if turn.streamed_answer {
        assert!(
            seen.chunks.contains_key(answer_id),
            "{label}: the answer streamed under its id {answer_id}: {seen:#?}"
        );
    }
    if !label.starts_with("react") {
        // Only the answer's model call streams (react's llm mode streams its tool calls
        // too: they are its model's messages).
        let others: Vec<&String> = seen.chunks.keys().filter(|id| *id != answer_id).collect();
        assert!(others.is_empty(), "{label}: {others:?}");
    }
    if !seen.chunks.contains_key(answer_id) {
        assert!(
            seen.whole.iter().any(|id| id == answer_id),
            "{label}: the answer was sent whole: {seen:#?}"
        );
    }
    for id in &seen.whole {
        assert!(
            kept.contains_key(id.as_str()),
            "{label}: a whole message the thread does not keep: {id}"
        );
    }
    assert_eq!(
        seen.last_values, messages,
        "{label}: the last values are the thread's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_flow_served_keeps_the_chat_contract() {
    let url = serve().await;
    let c = common::serve::client();
    for case in cases() {
        let thread: Value = c
            .post(format!("{url}/threads"))
            .json(&json!({}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let thread = thread["thread_id"].as_str().unwrap().to_owned();
        let mut context = case.context.clone();
        context["model"] = json!(case.model);
        for (n, turn) in case.turns.iter().enumerate() {
            let label = format!(
                "{} {} {:?} turn {}",
                case.flow,
                case.model,
                case.context,
                n + 1
            );
            // As Agent Chat UI sends it: a uuid, content blocks.
            let sent = format!("5f0c1a2e-77b4-4c1e-9d3a-{:012}", n + 1);
            let blocks = json!([{"type": "text", "text": turn.text}]);
            let body = json!({
                "assistant_id": case.flow,
                "input": {"messages": [{"type": "human", "id": sent, "content": blocks}]},
                "context": context,
                "stream_mode": ["messages-tuple", "values"],
            });
            let via = match turn.via {
                Via::Wait => "wait",
                Via::Stream => "stream",
            };
            let resp = c
                .post(format!("{url}/threads/{thread}/runs/{via}"))
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200, "{label}");
            let text = resp.text().await.unwrap();
            let state: Value = c
                .get(format!("{url}/threads/{thread}/state"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let messages = state["values"]["messages"].as_array().cloned().unwrap();
            let answer = check_messages(&label, &messages, &sent, &blocks, turn).clone();
            match turn.via {
                Via::Wait => {
                    let out: Value = serde_json::from_str(&text).unwrap();
                    assert_eq!(out["messages"].as_array(), Some(&messages), "{label}");
                }
                Via::Stream => {
                    let seen = streamed(&events(&text));
                    check_stream(&label, &seen, &messages, &sent, turn, &answer);
                }
            }
        }
    }
}
