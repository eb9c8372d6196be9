//! `/a2a/{assistant_id}` spoken over HTTP as A2A clients speak it (JSON-RPC 2.0 POSTs, SSE for
//! `message/stream`), against the reference graphs: the agent card, a send, a stream with the
//! answer's tokens as artifact updates, a conversation of several turns on one context, an
//! interrupt answered through its task, cancels, JSON-RPC errors, and the API's auth, owner
//! scoping, origin guard and the switch that turns A2A off.

mod common;
#[path = "../examples/reference/graphs.rs"]
#[allow(dead_code)]
mod graphs;

use std::sync::Arc;
use std::time::Duration;

use agent_server::auth::{ApiKeys, Builtin, Jwt, JwtKeys};
use common::served::Served;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};

/// The served reference graphs and the credential a client sends.
struct Agent {
    served: Arc<Served>,
    header: Option<(&'static str, String)>,
}

impl Agent {
    async fn start(builder: agent_server::ServerBuilder) -> Agent {
        Agent {
            served: Arc::new(Served::start(builder).await),
            header: None,
        }
    }

    fn with(&self, name: &'static str, value: String) -> Agent {
        Agent {
            served: self.served.clone(),
            header: Some((name, value)),
        }
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut req = self.served.http.request(method, self.served.url(path));
        if let Some((name, value)) = &self.header {
            req = req.header(*name, value);
        }
        req
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let resp = self
            .request(reqwest::Method::GET, path)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// POSTs a raw body to `/a2a/{assistant}`: (status, JSON).
    async fn post_raw(&self, assistant: &str, body: String) -> (u16, Value) {
        let resp = self
            .request(reqwest::Method::POST, &format!("/a2a/{assistant}"))
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// A JSON-RPC call: the response object (checked to be 2.0 with the id sent).
    async fn rpc(&self, assistant: &str, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": "req-1", "method": method, "params": params});
        let (status, out) = self.post_raw(assistant, body.to_string()).await;
        assert_eq!(status, 200, "{method}: {out}");
        assert_eq!(out["jsonrpc"], "2.0", "{out}");
        assert_eq!(out["id"], "req-1", "{out}");
        out
    }

    /// A call that must succeed: its result.
    async fn ok(&self, assistant: &str, method: &str, params: Value) -> Value {
        let out = self.rpc(assistant, method, params).await;
        assert!(out.get("error").is_none(), "{method}: {out}");
        out["result"].clone()
    }

    /// A call that must fail: its error.
    async fn err(&self, assistant: &str, method: &str, params: Value) -> Value {
        let out = self.rpc(assistant, method, params).await;
        assert!(out.get("result").is_none(), "{method}: {out}");
        out["error"].clone()
    }

    /// `message/stream`: every event's JSON-RPC response, in order.
    async fn stream(&self, assistant: &str, params: Value) -> Vec<Value> {
        let body = json!({"jsonrpc": "2.0", "id": 9, "method": "message/stream", "params": params});
        let resp = self
            .request(reqwest::Method::POST, &format!("/a2a/{assistant}"))
            .header("accept", "text/event-stream")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert!(
            resp.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        let text = tokio::time::timeout(Duration::from_secs(30), resp.text())
            .await
            .expect("the stream ends")
            .unwrap();
        text.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str::<Value>(d).unwrap())
            .inspect(|e| assert_eq!(e["id"], 9, "{e}"))
            .collect()
    }
}

fn message(text: &str) -> Value {
    json!({"kind": "message", "role": "user", "messageId": uuid::Uuid::new_v4().to_string(),
           "parts": [{"kind": "text", "text": text}]})
}

fn send(text: &str) -> Value {
    json!({"message": message(text)})
}

fn on(context: &str, text: &str) -> Value {
    let mut m = message(text);
    m["contextId"] = context.into();
    json!({"message": m})
}

fn answer_of(task: &Value) -> String {
    task["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn texts(history: &Value) -> Vec<String> {
    history
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}: {}",
                m["role"].as_str().unwrap(),
                m["parts"][0]["text"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test]
async fn the_card_describes_the_assistant() {
    let agent = Agent::start(
        graphs::server()
            .graph("simple2", graphs::simple())
            .description("Upper-cases a value."),
    )
    .await;
    let (status, card) = agent
        .get("/.well-known/agent-card.json?assistant_id=agent")
        .await;
    assert_eq!(status, 200, "{card}");
    assert_eq!(card["name"], "agent");
    assert_eq!(card["description"], "agent assistant");
    assert_eq!(card["protocolVersion"], "0.3.0");
    assert_eq!(card["preferredTransport"], "JSONRPC");
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(card["capabilities"]["pushNotifications"], false);
    let url = card["url"].as_str().unwrap();
    let id = url.rsplit('/').next().unwrap();
    assert!(uuid::Uuid::parse_str(id).is_ok(), "{url}");
    assert_eq!(url, agent.served.url(&format!("/a2a/{id}")));
    let skill = &card["skills"][0];
    assert_eq!(skill["id"], format!("{id}-main"));
    assert_eq!(skill["name"], "agent Capabilities");
    assert_eq!(skill["metadata"]["inputSchema"]["supportsA2A"], true);
    assert_eq!(
        skill["metadata"]["inputSchema"]["properties"],
        json!(["count", "messages"])
    );
    // The context schema: what `params.context` may set.
    assert!(
        skill["metadata"]["contextSchema"]["properties"]["model"].is_object(),
        "{skill}"
    );
    // The same card at the agent's own well-known path and at its endpoint.
    for path in [
        format!("/a2a/{id}/.well-known/agent-card.json"),
        format!("/a2a/{id}/.well-known/agent.json"),
        format!("/a2a/{id}"),
        "/a2a/agent".to_owned(),
    ] {
        let (status, other) = agent.get(&path).await;
        assert_eq!(status, 200, "{path}: {other}");
        assert_eq!(other, card, "{path}");
    }
    // A described graph without messages.
    let (_, simple) = agent.get("/a2a/simple2/.well-known/agent-card.json").await;
    assert_eq!(simple["description"], "Upper-cases a value.");
    assert_eq!(
        simple["skills"][0]["metadata"]["inputSchema"]["supportsA2A"],
        false
    );
    // No assistant named, an unknown one.
    let (status, e) = agent.get("/.well-known/agent-card.json").await;
    assert_eq!(status, 400, "{e}");
    assert_eq!(e["error"]["code"], -32602);
    let (status, e) = agent
        .get(&format!(
            "/a2a/{}/.well-known/agent-card.json",
            uuid::Uuid::new_v4()
        ))
        .await;
    assert_eq!(status, 404, "{e}");
    // The forwarded scheme is the card's.
    let resp = agent
        .request(reqwest::Method::GET, "/a2a/agent")
        .header("x-forwarded-proto", "https")
        .send()
        .await
        .unwrap();
    let card: Value = resp.json().await.unwrap();
    assert!(
        card["url"]
            .as_str()
            .unwrap()
            .starts_with("https://127.0.0.1:")
    );
}

#[tokio::test]
async fn a_send_runs_the_graph_and_answers_with_the_task() {
    let agent = Agent::start(graphs::server()).await;
    let task = agent.ok("agent", "message/send", send("hello there")).await;
    assert_eq!(task["kind"], "task", "{task}");
    assert_eq!(task["status"]["state"], "completed", "{task}");
    let context = task["contextId"].as_str().unwrap();
    assert!(uuid::Uuid::parse_str(context).is_ok());
    let id = task["id"].as_str().unwrap();
    let (ctx, run) = id.split_once(':').unwrap();
    assert_eq!(ctx, context);
    // The task is a run on the context's thread.
    let (status, run_doc) = agent.get(&format!("/threads/{ctx}/runs/{run}")).await;
    assert_eq!(status, 200, "{run_doc}");
    assert_eq!(run_doc["status"], "success");
    assert_eq!(task["artifacts"][0]["name"], "Assistant Response");
    // The reference graph's last AI message of the turn is its subgraph's.
    assert_eq!(answer_of(&task), "from inner subgraph node");
    assert_eq!(
        texts(&task["history"]),
        [
            "user: hello there",
            "agent: echo: hello there",
            "agent: from inner subgraph node"
        ]
    );
    assert!(
        task["history"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["taskId"] == id && m["contextId"] == context)
    );
    // historyLength keeps the last messages; 0 none.
    let mut p = send("again");
    p["configuration"] = json!({"historyLength": 1});
    let short = agent.ok("agent", "message/send", p).await;
    assert_eq!(
        texts(&short["history"]),
        ["agent: from inner subgraph node"]
    );
    let mut p = send("again");
    p["configuration"] = json!({"historyLength": 0});
    assert!(
        agent
            .ok("agent", "message/send", p)
            .await
            .get("history")
            .is_none()
    );
    // tasks/get reads the same task later.
    let got = agent.ok("agent", "tasks/get", json!({"id": id})).await;
    assert_eq!(got["status"]["state"], "completed");
    assert_eq!(got["id"], id);
    assert_eq!(answer_of(&got), "from inner subgraph node");
    assert_eq!(texts(&got["history"])[0], "user: hello there");
    // A graph without messages takes a data part and answers with its state.
    let simple = agent
        .ok(
            "simple",
            "message/send",
            json!({"message": {"role": "user", "messageId": "m1",
                "parts": [{"kind": "data", "data": {"value": "quiet"}}]}}),
        )
        .await;
    assert_eq!(simple["status"]["state"], "completed", "{simple}");
    assert_eq!(
        simple["artifacts"][0]["parts"][0]["data"],
        json!({"value": "QUIET"})
    );
    // ...but no text.
    let e = agent.err("simple", "message/send", send("hi")).await;
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("'messages'"), "{e}");
}

#[tokio::test]
async fn a_long_send_says_it_is_alive_until_its_answer() {
    let agent = Agent::start(graphs::server()).await;
    let body =
        json!({"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": send("sleep 2.5")});
    let text = agent
        .request(reqwest::Method::POST, "/a2a/agent")
        .json(&body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.starts_with('\n'), "a heartbeat first: {text:?}");
    let out: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(out["result"]["status"]["state"], "completed", "{out}");
}

#[tokio::test]
async fn a_conversation_goes_on_in_its_context() {
    let agent = Agent::start(graphs::server()).await;
    let first = agent
        .ok("agent", "message/send", send("my name is Ada"))
        .await;
    let context = first["contextId"].as_str().unwrap().to_owned();
    let second = agent
        .ok("agent", "message/send", on(&context, "what is my name"))
        .await;
    assert_eq!(second["contextId"], context.as_str());
    assert_ne!(second["id"], first["id"]);
    assert_eq!(second["status"]["state"], "completed");
    // Each task's history is its own turn; the thread holds the whole conversation.
    assert_eq!(texts(&second["history"])[0], "user: what is my name");
    let (_, state) = agent.get(&format!("/threads/{context}/state")).await;
    let all: Vec<&str> = state["values"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["type"] == "human")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(all, ["my name is Ada", "what is my name"]);
    assert_eq!(state["values"]["count"], 4, "two turns of two counts");
    // The first task still reads as it ended.
    let got = agent
        .ok("agent", "tasks/get", json!({"id": first["id"]}))
        .await;
    assert_eq!(texts(&got["history"])[0], "user: my name is Ada");
    // A context that is not a UUID.
    let e = agent
        .err("agent", "message/send", on("not-a-uuid", "hi"))
        .await;
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("UUID"), "{e}");
    // A context of the client's choosing (a UUID) is a new thread.
    let mine = uuid::Uuid::new_v4().to_string();
    let t = agent.ok("agent", "message/send", on(&mine, "hi")).await;
    assert_eq!(t["contextId"], mine.as_str());
}

#[tokio::test]
async fn a_stream_sends_the_task_the_tokens_and_the_end() {
    let agent = Agent::start(graphs::server()).await;
    let events = agent.stream("agent", send("stream me")).await;
    let results: Vec<&Value> = events.iter().map(|e| &e["result"]).collect();
    assert_eq!(results[0]["kind"], "task", "{events:?}");
    assert_eq!(results[0]["status"]["state"], "submitted");
    assert_eq!(results[0]["history"][0]["parts"][0]["text"], "stream me");
    let task_id = results[0]["id"].as_str().unwrap();
    assert_eq!(results[1]["kind"], "status-update");
    assert_eq!(results[1]["status"]["state"], "working");
    assert_eq!(results[1]["final"], false);
    // The answer's tokens, appended to one artifact.
    let chunks: Vec<&&Value> = results
        .iter()
        .filter(|r| r["kind"] == "artifact-update" && r["lastChunk"] == false)
        .collect();
    assert!(chunks.len() > 2, "token by token: {events:?}");
    assert_eq!(chunks[0]["append"], false);
    assert!(chunks[1..].iter().all(|c| c["append"] == true));
    let artifact = chunks[0]["artifact"]["artifactId"].clone();
    assert!(
        chunks
            .iter()
            .all(|c| c["artifact"]["artifactId"] == artifact)
    );
    let streamed: String = chunks
        .iter()
        .map(|c| c["artifact"]["parts"][0]["text"].as_str().unwrap())
        .collect();
    assert!(streamed.starts_with("echo: stream me"), "{streamed}");
    // Then the whole answer replaces it, and the last status ends the stream.
    let n = results.len();
    assert_eq!(results[n - 2]["kind"], "artifact-update");
    assert_eq!(results[n - 2]["lastChunk"], true);
    assert_eq!(results[n - 2]["append"], false);
    assert_eq!(results[n - 2]["artifact"]["artifactId"], artifact);
    assert_eq!(
        results[n - 2]["artifact"]["parts"][0]["text"],
        "from inner subgraph node"
    );
    assert_eq!(results[n - 1]["kind"], "status-update");
    assert_eq!(results[n - 1]["status"]["state"], "completed");
    assert_eq!(results[n - 1]["final"], true);
    assert!(results.iter().skip(1).all(|r| r["taskId"] == task_id));
    // A stream needs an Accept that allows it.
    let (status, _) = {
        let resp = agent
            .request(reqwest::Method::POST, "/a2a/agent")
            .header("accept", "application/json")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": send("x")}))
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), ())
    };
    assert_eq!(status, 400);
    // A failing run ends its stream failed, with the error.
    let events = agent.stream("agent", send("please fail")).await;
    let last = &events.last().unwrap()["result"];
    assert_eq!(last["status"]["state"], "failed", "{events:?}");
    let text = last["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("failed on purpose"), "{text}");
}

#[tokio::test]
async fn an_interrupt_asks_for_input_and_the_next_message_answers_it() {
    let agent = Agent::start(graphs::server()).await;
    let task = agent.ok("agent", "message/send", send("please ask")).await;
    assert_eq!(task["status"]["state"], "input-required", "{task}");
    let asked = task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(asked.contains("approve?"), "{asked}");
    assert_eq!(task["artifacts"][0]["name"], "Interrupt");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["data"]["value"]["question"],
        "approve?"
    );
    let id = task["id"].as_str().unwrap();
    let got = agent.ok("agent", "tasks/get", json!({"id": id})).await;
    assert_eq!(got["status"]["state"], "input-required");
    // The answer, as text in the same task.
    let mut m = message("yes");
    m["taskId"] = id.into();
    m["contextId"] = task["contextId"].clone();
    let done = agent
        .ok("agent", "message/send", json!({"message": m}))
        .await;
    assert_eq!(done["id"], id, "the same task");
    assert_eq!(done["status"]["state"], "completed", "{done}");
    assert_eq!(answer_of(&done), "human said: yes");
    let got = agent.ok("agent", "tasks/get", json!({"id": id})).await;
    assert_eq!(got["status"]["state"], "completed");
    // A finished task takes no more messages.
    let mut m = message("again");
    m["taskId"] = id.into();
    let e = agent
        .err("agent", "message/send", json!({"message": m}))
        .await;
    assert_eq!(e["code"], -32004, "{e}");
    // Streamed, the pause ends the stream input-required; a data part's `resume` answers it.
    let events = agent.stream("agent", send("ask again")).await;
    let last = &events.last().unwrap()["result"];
    assert_eq!(last["status"]["state"], "input-required", "{events:?}");
    assert_eq!(last["final"], true);
    let id = last["taskId"].as_str().unwrap();
    let m = json!({"role": "user", "messageId": "r1", "taskId": id,
        "parts": [{"kind": "data", "data": {"resume": "from data"}}]});
    let done = agent
        .ok("agent", "message/send", json!({"message": m}))
        .await;
    assert_eq!(answer_of(&done), "human said: from data", "{done}");
}

#[tokio::test]
async fn tasks_are_cancelled() {
    let agent = Agent::start(graphs::server()).await;
    // A running task: sent without waiting, cancelled while its node sleeps.
    let mut p = send("sleep 20");
    p["configuration"] = json!({"blocking": false});
    let task = agent.ok("agent", "message/send", p).await;
    assert_eq!(task["status"]["state"], "submitted", "{task}");
    let id = task["id"].as_str().unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancelled = agent.ok("agent", "tasks/cancel", json!({"id": id})).await;
    assert_eq!(cancelled["status"]["state"], "canceled", "{cancelled}");
    let got = agent.ok("agent", "tasks/get", json!({"id": id})).await;
    assert_eq!(got["status"]["state"], "canceled", "{got}");
    let e = agent.err("agent", "tasks/cancel", json!({"id": id})).await;
    assert_eq!(e["code"], -32002, "{e}");
    // A task waiting for input.
    let paused = agent.ok("agent", "message/send", send("ask")).await;
    let id = paused["id"].as_str().unwrap();
    let cancelled = agent.ok("agent", "tasks/cancel", json!({"id": id})).await;
    assert_eq!(cancelled["status"]["state"], "canceled");
    let got = agent.ok("agent", "tasks/get", json!({"id": id})).await;
    assert_eq!(got["status"]["state"], "canceled", "{got}");
    // The context goes on with a new task.
    let next = agent
        .ok(
            "agent",
            "message/send",
            on(paused["contextId"].as_str().unwrap(), "hello"),
        )
        .await;
    assert_eq!(next["status"]["state"], "completed", "{next}");
    // Unknown tasks.
    for id in [
        "nope",
        &format!("{}:{}", uuid::Uuid::new_v4(), uuid::Uuid::new_v4()),
    ] {
        let e = agent.err("agent", "tasks/cancel", json!({"id": id})).await;
        assert_eq!(e["code"], -32001, "{e}");
        let e = agent.err("agent", "tasks/get", json!({"id": id})).await;
        assert_eq!(e["code"], -32001, "{e}");
    }
    // Another assistant's task is not this one's.
    let e = agent
        .err("simple", "tasks/get", json!({"id": next["id"]}))
        .await;
    assert_eq!(e["code"], -32001, "{e}");
}

#[tokio::test]
async fn json_rpc_errors() {
    let agent = Agent::start(graphs::server()).await;
    let (status, out) = agent.post_raw("agent", "{not json".into()).await;
    assert_eq!(status, 200);
    assert_eq!(out["error"]["code"], -32700, "{out}");
    assert_eq!(out["id"], Value::Null);
    let (_, out) = agent.post_raw("agent", "[1, 2]".into()).await;
    assert_eq!(out["error"]["code"], -32600, "{out}");
    let (_, out) = agent
        .post_raw(
            "agent",
            json!({"jsonrpc": "1.0", "id": 1, "method": "tasks/get"}).to_string(),
        )
        .await;
    assert_eq!(out["error"]["code"], -32600, "{out}");
    assert_eq!(out["id"], 1);
    let (_, out) = agent
        .post_raw(
            "agent",
            json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "tasks/get"}).to_string(),
        )
        .await;
    assert_eq!(out["error"]["code"], -32600, "{out}");
    let e = agent.err("agent", "tasks/list", json!({})).await;
    assert_eq!(e["code"], -32601);
    let e = agent.err("agent", "message/send", json!({})).await;
    assert_eq!(e["code"], -32602, "{e}");
    assert!(e["message"].as_str().unwrap().contains("message"), "{e}");
    let e = agent
        .err(
            "agent",
            "message/send",
            json!({"message": {"role": "user", "messageId": "x", "parts": []}}),
        )
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    let e = agent
        .err(
            "agent",
            "message/send",
            json!({"message": {"role": "user", "messageId": "x",
            "parts": [{"kind": "data", "data": [1]}]}}),
        )
        .await;
    assert_eq!(e["code"], -32005, "{e}");
    let mut p = send("hi");
    p["configuration"] = json!({"historyLength": 11});
    assert_eq!(agent.err("agent", "message/send", p).await["code"], -32602);
    let mut p = send("hi");
    p["configuration"] = json!({"pushNotificationConfig": {"url": "http://127.0.0.1:1/hook"}});
    assert_eq!(agent.err("agent", "message/send", p).await["code"], -32003);
    // A context the graph does not take is refused before anything runs.
    let mut p = send("hi");
    p["context"] = json!({"model": 5});
    assert_eq!(agent.err("agent", "message/send", p).await["code"], -32602);
    let e = agent
        .err(
            &uuid::Uuid::new_v4().to_string(),
            "message/send",
            send("hi"),
        )
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    // A 1.0 client's names answer in its spelling.
    let out = agent.ok("agent", "SendMessage", send("hi")).await;
    assert_eq!(
        out["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{out}"
    );
    assert_eq!(out["task"]["history"][0]["role"], "ROLE_USER");
    let card = agent
        .ok("agent", "agent/getAuthenticatedExtendedCard", json!({}))
        .await;
    assert_eq!(card["name"], "agent");
}

const SECRET: &[u8] = b"test-secret-test-secret-test-secret!";

fn bearer(sub: &str) -> String {
    let claims = json!({"sub": sub, "exp": jsonwebtoken::get_current_timestamp() + 600});
    let token = encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(SECRET).unwrap(),
    )
    .unwrap();
    format!("Bearer {token}")
}

#[tokio::test]
async fn auth_and_owners_hold_for_a2a() {
    let auth = Builtin::new()
        .keys(ApiKeys::operator("operator-key-for-tests").unwrap())
        .jwt(Jwt::new(JwtKeys::Secret(SECRET.to_vec())).await.unwrap());
    let agent = Agent::start(graphs::server().auth(auth)).await;
    // No credential: no card, no call.
    let (status, _) = agent
        .get("/.well-known/agent-card.json?assistant_id=agent")
        .await;
    assert_eq!(status, 401);
    let (status, _) = agent
        .post_raw(
            "agent",
            json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": send("hi")})
                .to_string(),
        )
        .await;
    assert_eq!(status, 401);
    let ada = agent.with("authorization", bearer("ada"));
    let bob = agent.with("authorization", bearer("bob"));
    let (status, _) = ada
        .get("/.well-known/agent-card.json?assistant_id=agent")
        .await;
    assert_eq!(status, 200);
    let task = ada.ok("agent", "message/send", send("secret plans")).await;
    let context = task["contextId"].as_str().unwrap();
    // Bob cannot read, cancel, or continue Ada's task or context.
    assert_eq!(
        bob.err("agent", "tasks/get", json!({"id": task["id"]}))
            .await["code"],
        -32001
    );
    assert_eq!(
        bob.err("agent", "tasks/cancel", json!({"id": task["id"]}))
            .await["code"],
        -32001
    );
    let e = bob
        .err("agent", "message/send", on(context, "let me in"))
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    assert!(!e.to_string().contains("secret"), "{e}");
    // Ada can.
    let got = ada
        .ok("agent", "tasks/get", json!({"id": task["id"]}))
        .await;
    assert_eq!(got["status"]["state"], "completed");
    let next = ada.ok("agent", "message/send", on(context, "more")).await;
    assert_eq!(next["status"]["state"], "completed");
    // Bob's own context is his.
    let his = bob.ok("agent", "message/send", send("mine")).await;
    assert_ne!(his["contextId"], context);
    // A page from another origin is refused before anything runs.
    let resp = ada
        .request(reqwest::Method::POST, "/a2a/agent")
        .header("origin", "https://evil.example")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": send("hi")}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
}

#[tokio::test]
async fn a2a_can_be_turned_off() {
    let agent = Agent::start(graphs::server().a2a(false)).await;
    let (status, _) = agent
        .get("/.well-known/agent-card.json?assistant_id=agent")
        .await;
    assert_eq!(status, 404);
    let (status, _) = agent
        .post_raw(
            "agent",
            json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": send("hi")})
                .to_string(),
        )
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn the_body_limit_holds() {
    let agent = Agent::start(graphs::server().body_limit(1024)).await;
    let big = "x".repeat(4096);
    let (status, _) = agent
        .post_raw(
            "agent",
            json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": send(&big)})
                .to_string(),
        )
        .await;
    assert_eq!(status, 413);
}

/// The same on PostgreSQL (its run queue, its cancels, its event mirror): a send, a second
/// turn on the context, a stream, a question answered, a cancel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_on_postgres() {
    let Some(db) = common::fresh_database("agentgraph_a2a").await else {
        return;
    };
    let agent = Agent::start(graphs::server().postgres(db)).await;
    let first = agent.ok("agent", "message/send", send("on postgres")).await;
    assert_eq!(first["status"]["state"], "completed", "{first}");
    let context = first["contextId"].as_str().unwrap();
    let second = agent
        .ok("agent", "message/send", on(context, "again"))
        .await;
    assert_eq!(second["contextId"], context);
    assert_eq!(texts(&second["history"])[0], "user: again");
    let events = agent.stream("agent", on(context, "streamed")).await;
    let last = &events.last().unwrap()["result"];
    assert_eq!(last["status"]["state"], "completed", "{events:?}");
    assert!(
        events.iter().any(|e| e["result"]["append"] == true),
        "{events:?}"
    );
    let asked = agent.ok("agent", "message/send", on(context, "ask")).await;
    assert_eq!(asked["status"]["state"], "input-required", "{asked}");
    let mut m = message("fine");
    m["taskId"] = asked["id"].clone();
    let done = agent
        .ok("agent", "message/send", json!({"message": m}))
        .await;
    assert_eq!(answer_of(&done), "human said: fine", "{done}");
    let mut p = send("sleep 20");
    p["configuration"] = json!({"blocking": false});
    let running = agent.ok("agent", "message/send", p).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancelled = agent
        .ok("agent", "tasks/cancel", json!({"id": running["id"]}))
        .await;
    assert_eq!(cancelled["status"]["state"], "canceled");
    let got = agent
        .ok("agent", "tasks/get", json!({"id": running["id"]}))
        .await;
    assert_eq!(got["status"]["state"], "canceled", "{got}");
}
