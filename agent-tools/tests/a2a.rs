//! A2A agents as tools, against a tiny A2A server of the test's own (plain HTTP/1.1 on a
//! loopback port, JSON-RPC and SSE written by hand): the card found at the agent's URL, a
//! send, a stream, a question back (`input-required`) answered through the task's id, a
//! failed task as a tool error, calls kept on the operator's origin whatever the card names,
//! no redirect followed, and `create_react_agent` delegating to the agent.
//! (`agent-server/tests/a2a_client.rs` runs the same client against `agent serve`'s server.)

use std::sync::{Arc, Mutex};

use agent_core::RunConfig;
use agent_llm::{Message, Reply as ModelReply, ScriptedModel};
use agent_tools::a2a::{A2aAgent, A2aConfig, A2aError, TaskState, connect_all};
use agent_tools::prebuilt::{AgentState, create_react_agent};
use agent_tools::{DynTool, ToolError, ToolRegistry};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// The tiny agent: where it listens and every JSON-RPC request it got.
struct Tiny {
    base: String,
    requests: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Tiny {
    async fn start() -> Tiny {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let seen = seen.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, seen).await;
                });
            }
        });
        Tiny { base, requests }
    }

    fn methods(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|(path, r)| format!("{path} {}", r["method"].as_str().unwrap_or_default()))
            .collect()
    }

    fn last(&self) -> Value {
        self.requests.lock().unwrap().last().unwrap().1.clone()
    }
}

/// Answers one request on `stream`.
async fn serve(
    stream: tokio::net::TcpStream,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    reader.read_line(&mut head).await?;
    let mut parts = head.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or_default().to_owned(),
        parts.next().unwrap_or_default().to_owned(),
    );
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).await?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    let mut stream = reader.into_inner();
    let (status, kind, text) = route(&method, &path, &body, &seen);
    let extra = if status == 302 {
        "location: http://127.0.0.1:1/elsewhere\r\n"
    } else {
        ""
    };
    let response = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n{text}",
        text.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

fn card() -> Value {
    // The card names another host: calls must go to the origin the operator gave.
    json!({
        "name": "Weather Agent", "description": "Knows the weather of any city.",
        "url": "http://weather.invalid:9/rpc", "version": "1.0.0", "protocolVersion": "0.3.0",
        "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "forecast", "name": "Forecast", "description": "Tomorrow's weather.", "tags": []}],
    })
}

fn task(id: &str, context: &str, state: &str, answer: Option<&str>, asked: Option<&str>) -> Value {
    let mut t = json!({"kind": "task", "id": id, "contextId": context, "status": {"state": state}});
    if let Some(a) = answer {
        t["artifacts"] = json!([{"artifactId": "a1", "parts": [{"kind": "text", "text": a}]}]);
    }
    if let Some(q) = asked {
        t["status"]["message"] = json!({"kind": "message", "role": "agent", "messageId": "q",
            "parts": [{"kind": "text", "text": q}]});
    }
    t
}

/// What the tiny agent answers to `text` (continuing `task_id` when given).
fn answer(text: &str, task_id: Option<&str>, context: &str) -> Value {
    match (text, task_id) {
        (_, Some(t)) => task(
            t,
            context,
            "completed",
            Some(&format!("Weather in {text}: sunny")),
            None,
        ),
        ("weather?", None) => task(
            "t-ask",
            context,
            "input-required",
            None,
            Some("Which city?"),
        ),
        ("fail", None) => task("t-fail", context, "failed", None, Some("boom")),
        (other, None) => task(
            "t-1",
            context,
            "completed",
            Some(&format!("You said: {other}")),
            None,
        ),
    }
}

fn route(
    method: &str,
    path: &str,
    body: &[u8],
    seen: &Mutex<Vec<(String, Value)>>,
) -> (u16, &'static str, String) {
    match (method, path) {
        ("GET", "/.well-known/agent-card.json") => (200, "application/json", card().to_string()),
        ("GET", "/moved/.well-known/agent-card.json") => (302, "text/plain", String::new()),
        ("POST", "/rpc") => {
            let request: Value = serde_json::from_slice(body).unwrap_or_default();
            seen.lock()
                .unwrap()
                .push((path.to_owned(), request.clone()));
            let id = request["id"].clone();
            let m = &request["params"]["message"];
            let text = m["parts"][0]["text"].as_str().unwrap_or_default();
            let context = m["contextId"].as_str().unwrap_or("ctx-1");
            let task_id = m["taskId"].as_str();
            match request["method"].as_str() {
                Some("message/send") => {
                    let out = json!({"jsonrpc": "2.0", "id": id, "result": answer(text, task_id, context)});
                    (200, "application/json", out.to_string())
                }
                Some("message/stream") => {
                    let t = "t-s";
                    let events = [
                        json!({"kind": "task", "id": t, "contextId": context, "status": {"state": "submitted"}}),
                        json!({"kind": "artifact-update", "taskId": t, "contextId": context, "append": false, "lastChunk": false,
                               "artifact": {"artifactId": "s", "parts": [{"kind": "text", "text": "Sun"}]}}),
                        json!({"kind": "artifact-update", "taskId": t, "contextId": context, "append": true, "lastChunk": false,
                               "artifact": {"artifactId": "s", "parts": [{"kind": "text", "text": "ny"}]}}),
                        json!({"kind": "artifact-update", "taskId": t, "contextId": context, "append": false, "lastChunk": true,
                               "artifact": {"artifactId": "s", "parts": [{"kind": "text", "text": "Sunny all day"}]}}),
                        json!({"kind": "status-update", "taskId": t, "contextId": context, "final": true,
                               "status": {"state": "completed"}}),
                    ];
                    let sse: String = events
                        .iter()
                        .map(|e| {
                            format!(
                                "event: message\r\ndata: {}\r\n\r\n",
                                json!({"jsonrpc": "2.0", "id": id, "result": e})
                            )
                        })
                        .collect();
                    (200, "text/event-stream", sse)
                }
                _ => {
                    let out = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}});
                    (200, "application/json", out.to_string())
                }
            }
        }
        _ => (404, "text/plain", "not found".to_owned()),
    }
}

#[tokio::test]
async fn the_card_is_found_and_calls_stay_on_the_operators_origin() {
    let tiny = Tiny::start().await;
    let agent = A2aAgent::connect(&tiny.base).await.unwrap();
    assert_eq!(agent.name(), "Weather Agent");
    assert_eq!(agent.description(), "Knows the weather of any city.");
    assert!(agent.streams());
    assert_eq!(agent.endpoint(), format!("{}/rpc", tiny.base));
    // The card's own URL works too.
    let by_card = A2aAgent::connect(format!("{}/.well-known/agent-card.json", tiny.base))
        .await
        .unwrap();
    assert_eq!(by_card.endpoint(), agent.endpoint());
    let reply = agent.send("hello", None, None).await.unwrap();
    assert_eq!(reply.state, TaskState::Completed);
    assert_eq!(reply.text, "You said: hello");
    assert_eq!(reply.context_id.as_deref(), Some("ctx-1"));
    let sent = tiny.last();
    assert_eq!(sent["method"], "message/send");
    assert_eq!(sent["params"]["message"]["role"], "user");
    assert!(sent["params"]["message"]["messageId"].is_string());
    // A redirect is not followed; a URL that is not an agent says so.
    let e = A2aAgent::connect(format!("{}/moved", tiny.base))
        .await
        .unwrap_err();
    assert!(matches!(e, A2aError::Card { .. }), "{e}");
    assert!(e.to_string().contains("302"), "{e}");
    let e = A2aAgent::connect("ftp://127.0.0.1/x").await.unwrap_err();
    assert!(matches!(e, A2aError::Config { .. }), "{e}");
}

#[tokio::test]
async fn the_tool_answers_asks_back_and_fails_as_the_agent_does() {
    let tiny = Tiny::start().await;
    let tool = A2aAgent::connect(&tiny.base).await.unwrap().tool();
    assert_eq!(tool.name(), "Weather_Agent");
    assert!(tool.description().contains("Knows the weather"));
    assert!(tool.description().contains("Forecast: Tomorrow's weather."));
    assert_eq!(tool.parameters()["required"], json!(["message"]));
    let out = tool.call(json!({"message": "hello"})).await.unwrap();
    let out = out.as_str().unwrap();
    assert!(out.starts_with("You said: hello"), "{out}");
    assert!(out.contains("context_id: ctx-1"), "{out}");
    // A question back is a result the model can act on.
    let out = tool.call(json!({"message": "weather?"})).await.unwrap();
    let out = out.as_str().unwrap().to_owned();
    assert!(out.contains("needs more input"), "{out}");
    assert!(out.contains("Which city?"), "{out}");
    assert!(out.contains("task_id \"t-ask\""), "{out}");
    // ...answered through the task's id, in its context.
    let done = tool
        .call(json!({"message": "Paris", "task_id": "t-ask", "context_id": "ctx-1"}))
        .await
        .unwrap();
    assert!(
        done.as_str()
            .unwrap()
            .starts_with("Weather in Paris: sunny")
    );
    let sent = tiny.last();
    assert_eq!(sent["params"]["message"]["taskId"], "t-ask");
    assert_eq!(sent["params"]["message"]["contextId"], "ctx-1");
    // A failed task is the tool's error.
    let e = tool.call(json!({"message": "fail"})).await.unwrap_err();
    assert!(matches!(e, ToolError::Failed { .. }), "{e}");
    assert!(e.to_string().contains("failed: boom"), "{e}");
    let e = tool.call(json!({"nothing": 1})).await.unwrap_err();
    assert!(matches!(e, ToolError::InvalidArguments { .. }), "{e}");
}

#[tokio::test]
async fn a_stream_gives_the_text_as_it_comes_and_the_whole_answer() {
    let tiny = Tiny::start().await;
    let agent = A2aAgent::connect(&tiny.base).await.unwrap();
    let mut pieces = Vec::new();
    let reply = agent
        .stream("forecast?", None, None, |t| pieces.push(t.to_owned()))
        .await
        .unwrap();
    assert_eq!(pieces, ["Sun", "ny"]);
    assert_eq!(reply.state, TaskState::Completed);
    assert_eq!(reply.text, "Sunny all day");
    assert_eq!(reply.task_id.as_deref(), Some("t-s"));
    // The tool streams when told to.
    let tool = A2aAgent::connect_with(A2aConfig::new(&tiny.base).streaming(true).name("weather"))
        .await
        .unwrap()
        .tool();
    assert_eq!(tool.name(), "weather");
    let out = tool.call(json!({"message": "forecast?"})).await.unwrap();
    assert!(out.as_str().unwrap().starts_with("Sunny all day"), "{out}");
    assert_eq!(tiny.methods().last().unwrap(), "/rpc message/stream");
}

#[tokio::test]
async fn create_react_agent_delegates_to_the_remote_agent() {
    let tiny = Tiny::start().await;
    let tools = connect_all(vec![A2aConfig::new(&tiny.base)], &["echo"])
        .await
        .unwrap();
    let mut registry = ToolRegistry::new();
    for tool in tools {
        registry.register_arc(Arc::new(tool)).unwrap();
    }
    // The model asks the agent, answers its question with the task's id, then answers.
    let model = ScriptedModel::from_fn(|messages: &[Message]| {
        let tool_results: Vec<&str> = messages
            .iter()
            .filter(|m| m.kind() == "tool")
            .map(|m| m.content())
            .collect();
        match tool_results.as_slice() {
            [] => ModelReply::tool_call("Weather_Agent", json!({"message": "weather?"})),
            [asked] => {
                let task = asked
                    .split("task_id \"")
                    .nth(1)
                    .and_then(|r| r.split('"').next())
                    .unwrap_or_default()
                    .to_owned();
                ModelReply::tool_call("Weather_Agent", json!({"message": "Oslo", "task_id": task}))
            }
            [.., last] => ModelReply::text(format!("The agent says: {last}")),
        }
    });
    let agent = create_react_agent(Arc::new(model), registry)
        .build()
        .unwrap();
    let out = agent
        .invoke(
            AgentState::user("What is the weather?"),
            RunConfig::default(),
        )
        .await
        .unwrap();
    let answer = out.answer().unwrap_or_default().to_owned();
    assert!(answer.contains("Weather in Oslo: sunny"), "{answer}");
    let sent: Vec<Value> = tiny
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|(_, r)| r["params"]["message"]["taskId"].clone())
        .collect();
    assert_eq!(sent, [Value::Null, json!("t-ask")]);
}
