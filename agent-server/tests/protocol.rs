//! The thread-streaming protocol (v2) over HTTP and a WebSocket, as a client meets it:
//! `run.start` queues a run on the one queue (it is a run of the thread like any other), the
//! SSE stream carries its lifecycle, tokens, tool calls and interrupts with `seq` ids and
//! replays them after `since`; `input.respond` resumes a pause; refusals are typed; another
//! user's thread is not there, on every route, the WebSocket's upgrade included; a page from
//! another origin cannot open the socket. (The real SDKs drive the same routes in
//! `tests/sdk_stream.rs`.)

mod common;

#[path = "../examples/reference/graphs.rs"]
#[allow(dead_code)]
mod graphs;

use std::time::Duration;

use agent_server::auth::{Builtin, Jwt, JwtKeys};
use futures::{SinkExt, StreamExt};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use common::served::Served;

async fn serve() -> Served {
    Served::start(graphs::server().graph("tools", graphs::tools())).await
}

fn thread_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Reads SSE frames (`id`, event) until `stop` holds for one, or `n` were read.
async fn sse(
    req: reqwest::RequestBuilder,
    n: usize,
    stop: impl Fn(&Value) -> bool,
) -> (u16, Vec<(String, Value)>) {
    let mut resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let mut out = Vec::new();
    if status != 200 {
        return (status, out);
    }
    let mut buf = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while out.len() < n {
        let chunk = tokio::time::timeout_at(deadline, resp.chunk())
            .await
            .expect("the stream went quiet")
            .unwrap();
        let Some(chunk) = chunk else { break };
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\r\n\r\n") {
            let frame: String = buf.drain(..end + 4).collect();
            let id = frame.lines().find_map(|l| l.strip_prefix("id: "));
            let data = frame.lines().find_map(|l| l.strip_prefix("data: "));
            if let (Some(id), Some(data)) = (id, data) {
                let event: Value = serde_json::from_str(data).unwrap();
                let done = stop(&event);
                out.push((id.to_owned(), event));
                if done || out.len() >= n {
                    return (status, out);
                }
            }
        }
    }
    (status, out)
}

fn root_end(e: &Value) -> bool {
    e["method"] == "lifecycle"
        && e["params"]["namespace"] == json!([])
        && matches!(
            e["params"]["data"]["event"].as_str(),
            Some("completed" | "failed" | "interrupted")
        )
}

fn events_req(api: &Served, t: &str, body: Value) -> reqwest::RequestBuilder {
    api.http
        .post(api.url(&format!("/threads/{t}/stream/events")))
        .json(&body)
}

async fn command(api: &Served, t: &str, body: Value) -> (u16, Value) {
    api.post(&format!("/threads/{t}/commands"), body).await
}

fn human(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": text}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_started_run_streams_its_tokens_tool_calls_and_end_and_replays_after_since() {
    let api = serve().await;
    let t = thread_id();
    // The stream is opened before the thread exists (as the SDKs do), and waits for it.
    let all = [
        "lifecycle",
        "values",
        "updates",
        "messages",
        "tools",
        "input",
    ];
    let reader = tokio::spawn(sse(
        events_req(&api, &t, json!({"channels": all})),
        200,
        root_end,
    ));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, started) = command(
        &api,
        &t,
        json!({"id": 1, "method": "run.start",
            "params": {"assistant_id": "tools", "input": human("add 2 and 3")}}),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["type"], "success", "{started}");
    assert_eq!(started["id"], 1);
    let run_id = started["result"]["run_id"].as_str().unwrap().to_owned();
    // A run of the thread like any other.
    let (_, runs) = api.get(&format!("/threads/{t}/runs")).await;
    assert!(
        runs.as_array()
            .unwrap()
            .iter()
            .any(|r| r["run_id"] == run_id.as_str()),
        "{runs}"
    );
    let (status, events) = reader.await.unwrap();
    assert_eq!(status, 200);
    let seqs: Vec<u64> = events
        .iter()
        .map(|(_, e)| e["seq"].as_u64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert!(
        events
            .iter()
            .all(|(id, e)| id.parse::<u64>().ok() == e["seq"].as_u64())
    );
    let kinds: Vec<String> = events
        .iter()
        .map(|(_, e)| {
            format!(
                "{}:{}",
                e["method"].as_str().unwrap(),
                e["params"]["data"]["event"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(kinds[0], "lifecycle:running", "{kinds:?}");
    assert_eq!(kinds.last().unwrap(), "lifecycle:completed", "{kinds:?}");
    for k in [
        "tools:tool-started",
        "tools:tool-finished",
        "messages:message-start",
        "messages:content-block-delta",
        "messages:message-finish",
        "values:",
        "updates:",
    ] {
        assert!(kinds.iter().any(|x| x == k), "{k} missing: {kinds:?}");
    }
    let text: String = events
        .iter()
        .filter(|(_, e)| e["params"]["data"]["delta"]["type"] == "text-delta")
        .map(|(_, e)| e["params"]["data"]["delta"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "the sum is 5");
    let started_tool = events
        .iter()
        .find(|(_, e)| e["params"]["data"]["event"] == "tool-started")
        .unwrap();
    assert_eq!(started_tool.1["params"]["data"]["tool_name"], "add");
    assert_eq!(
        started_tool.1["params"]["data"]["input"],
        json!({"a": 2, "b": 3})
    );

    // A second connection numbers the same events the same way; `since` skips the start;
    // a filter by channel keeps the seqs (with gaps).
    let cut = events[4].1["seq"].as_u64().unwrap();
    let (_, again) = sse(
        events_req(&api, &t, json!({"channels": all, "since": cut})),
        5,
        |_| false,
    )
    .await;
    let ids = |v: &[(String, Value)]| -> Vec<String> {
        v.iter().map(|(_, e)| e["event_id"].to_string()).collect()
    };
    assert_eq!(ids(&again), ids(&events[5..10]));
    let (_, tools) = sse(
        events_req(&api, &t, json!({"channels": ["tools"]})),
        2,
        |_| false,
    )
    .await;
    let tool_seqs: Vec<&Value> = tools.iter().map(|(_, e)| &e["seq"]).collect();
    let expected: Vec<&Value> = events
        .iter()
        .filter(|(_, e)| e["method"] == "tools")
        .map(|(_, e)| &e["seq"])
        .collect();
    assert_eq!(tool_seqs, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_is_requested_and_answered_with_respond() {
    let api = serve().await;
    let t = thread_id();
    let channels = json!({"channels": ["lifecycle", "input"]});
    let reader = tokio::spawn(sse(events_req(&api, &t, channels.clone()), 50, root_end));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (_, r) = command(
        &api,
        &t,
        json!({"id": 1, "method": "run.start",
            "params": {"assistant_id": "agent", "input": human("please ask")}}),
    )
    .await;
    assert_eq!(r["type"], "success", "{r}");
    let (_, events) = reader.await.unwrap();
    let requested = events
        .iter()
        .find(|(_, e)| e["method"] == "input.requested")
        .map(|(_, e)| e["params"]["data"].clone())
        .unwrap();
    // Both SDKs' names for the interrupt's value.
    assert_eq!(requested["payload"]["question"], "approve?");
    assert_eq!(requested["value"], requested["payload"]);
    assert_eq!(
        events.last().unwrap().1["params"]["data"]["event"],
        "interrupted"
    );
    let iid = requested["interrupt_id"].as_str().unwrap();

    let (_, wrong) = command(
        &api,
        &t,
        json!({"id": 2, "method": "input.respond", "params": {"interrupt_id": "nope", "response": 1}}),
    )
    .await;
    assert_eq!(wrong["error"], "no_such_interrupt", "{wrong}");
    let (_, ok) = command(
        &api,
        &t,
        json!({"id": 3, "method": "input.respond",
            "params": {"interrupt_id": iid, "namespace": [], "response": "sure"}}),
    )
    .await;
    assert_eq!(ok["type"], "success", "{ok}");
    assert_eq!(ok["result"], json!({}));
    // The resumed run is the thread's second: its end comes after the first's.
    let (_, events) = sse(events_req(&api, &t, channels), 50, |e| {
        root_end(e) && e["params"]["data"]["event"] == "completed"
    })
    .await;
    let runs: Vec<&str> = events
        .iter()
        .filter(|(_, e)| e["params"]["data"]["event"] == "running")
        .map(|(_, e)| e["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(runs.len(), 2, "{events:?}");
    let (_, state) = api.get(&format!("/threads/{t}/state")).await;
    let last = state["values"]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["content"], "human said: sure");
}

#[tokio::test]
async fn refusals_are_typed() {
    let api = serve().await;
    let t = thread_id();
    let raw = |body: &'static str| {
        api.http
            .post(api.url(&format!("/threads/{t}/commands")))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let r = raw("{not json").await.unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().await.unwrap()["detail"],
        "Invalid JSON body"
    );
    let r = raw(r#"{"id": "1", "method": "run.start"}"#).await.unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (v["type"].as_str(), v["error"].as_str()),
        (Some("error"), Some("invalid_argument"))
    );
    for (method, params, code) in [
        ("state.get", json!({}), "unknown_command"),
        ("run.start", json!({}), "invalid_argument"),
        ("agent.getTree", json!({}), "no_such_run"),
        ("input.respond", json!({"response": 1}), "invalid_argument"),
        ("input.respond", json!({"interrupt_id": "x"}), "no_such_run"),
        (
            "run.start",
            json!({"assistant_id": "nope"}),
            "unknown_error",
        ),
        (
            "run.start",
            json!({"assistant_id": "agent", "config": {"configurable": {"checkpoint_id": "x"}}}),
            "invalid_argument",
        ),
    ] {
        let (status, v) = command(
            &api,
            &t,
            json!({"id": 7, "method": method, "params": params}),
        )
        .await;
        assert_eq!(status, 200, "{method}: {v}");
        assert_eq!(
            (v["id"].as_i64(), v["error"].as_str()),
            (Some(7), Some(code)),
            "{method}: {v}"
        );
    }
    let (status, v) = command(&api, "not-a-uuid", json!({"id": 1, "method": "run.start"})).await;
    assert_eq!(status, 422, "{v}");
    for body in [
        json!({}),
        json!({"channels": []}),
        json!({"channels": ["debug"]}),
    ] {
        let (status, v) = api
            .post(&format!("/threads/{t}/stream/events"), body.clone())
            .await;
        assert_eq!(status, 400, "{body}: {v}");
        assert!(v["detail"].is_string(), "{v}");
    }
    // Text PostgreSQL could not store is refused before anything is queued.
    let (_, v) = command(
        &api,
        &t,
        json!({"id": 8, "method": "run.start",
            "params": {"assistant_id": "agent", "input": human("nul \u{0} here")}}),
    )
    .await;
    assert_eq!(v["error"], "invalid_argument", "{v}");
    // A body over the limit is the API's 413, on both routes.
    let small = Served::start(graphs::server().body_limit(2048)).await;
    for path in ["commands", "stream/events"] {
        let big = json!({"id": 1, "method": "run.start", "channels": ["values"],
            "params": {"input": "x".repeat(4096)}});
        let (status, v) = small.post(&format!("/threads/{t}/{path}"), big).await;
        assert_eq!(status, 413, "{path}: {v}");
        assert!(v["detail"].is_string(), "{v}");
    }
    // `reject` on a busy thread: the queue's own refusal, as langgraph-api words it.
    let start = |id: i64, text: &str, strategy: &str| {
        json!({"id": id, "method": "run.start", "params": {"assistant_id": "agent",
            "input": human(text), "multitaskStrategy": strategy}})
    };
    let (_, a) = command(&api, &t, start(1, "sleep 2", "enqueue")).await;
    assert_eq!(a["type"], "success", "{a}");
    let (_, b) = command(&api, &t, start(2, "hi", "reject")).await;
    assert_eq!(b["error"], "unknown_error", "{b}");
    assert!(b["message"].as_str().unwrap().starts_with("409: "), "{b}");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_thread_is_not_there_and_other_origins_cannot_open_the_socket() {
    let auth = Builtin::new().jwt(Jwt::new(JwtKeys::Secret(SECRET.to_vec())).await.unwrap());
    let api = Served::start(graphs::server().auth(auth)).await;
    let t = thread_id();
    let post = |who: Option<&str>, path: String, body: Value| {
        let mut req = api.http.post(api.url(&path)).json(&body);
        if let Some(w) = who {
            req = req.header("authorization", bearer(w));
        }
        req.send()
    };
    let start = json!({"id": 1, "method": "run.start",
        "params": {"assistant_id": "agent", "input": human("hi")}});
    let r = post(None, format!("/threads/{t}/commands"), start.clone())
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = post(
        Some("alice"),
        format!("/threads/{t}/commands"),
        start.clone(),
    )
    .await
    .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "success", "{v}");
    // Bob: the thread is not there, whatever the route.
    let r = post(
        Some("bob"),
        format!("/threads/{t}/stream/events"),
        json!({"channels": ["values"]}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 404);
    let r = post(Some("bob"), format!("/threads/{t}/commands"), start)
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"], "unknown_error", "{v}");
    assert!(v["message"].as_str().unwrap().starts_with("404: "), "{v}");
    // Nor does an answer to one of its interrupts tell Bob anything of it.
    let respond = json!({"id": 2, "method": "input.respond",
        "params": {"interrupt_id": "x", "response": 1}});
    let r = post(Some("bob"), format!("/threads/{t}/commands"), respond)
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert!(v["message"].as_str().unwrap().starts_with("404: "), "{v}");
    let ws_url = format!(
        "{}/threads/{t}/stream/events",
        api.base.replacen("http", "ws", 1)
    );
    let mut req = ws_url.as_str().into_client_request().unwrap();
    req.headers_mut()
        .insert("authorization", bearer("bob").parse().unwrap());
    let err = tokio_tungstenite::connect_async(req).await.err().unwrap();
    assert!(err.to_string().contains("404"), "{err}");
    // Alice from a page elsewhere: refused before the upgrade.
    let mut req = ws_url.as_str().into_client_request().unwrap();
    req.headers_mut()
        .insert("authorization", bearer("alice").parse().unwrap());
    req.headers_mut()
        .insert("origin", "https://evil.example".parse().unwrap());
    let err = tokio_tungstenite::connect_async(req).await.err().unwrap();
    assert!(err.to_string().contains("403"), "{err}");
    // Alice herself gets a socket.
    let mut req = ws_url.as_str().into_client_request().unwrap();
    req.headers_mut()
        .insert("authorization", bearer("alice").parse().unwrap());
    assert!(tokio_tungstenite::connect_async(req).await.is_ok());
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn send(v: Value, ws: &mut Ws) {
    ws.send(Message::Text(v.to_string().into())).await.unwrap();
}

async fn next(ws: &mut Ws) -> Value {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("the socket went quiet")
            .unwrap()
            .unwrap();
        if let Message::Text(text) = m {
            return serde_json::from_str(&text).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_websocket_carries_commands_answers_and_subscribed_events() {
    let api = serve().await;
    let t = thread_id();
    let url = format!(
        "{}/threads/{t}/stream/events",
        api.base.replacen("http", "ws", 1)
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    send(json!("not a command"), &mut ws).await;
    let bad = next(&mut ws).await;
    assert_eq!(bad["error"], "invalid_argument", "{bad}");
    send(
        json!({"id": 1, "method": "subscription.subscribe",
            "params": {"channels": ["lifecycle", "messages"], "namespaces": [[]], "depth": 0}}),
        &mut ws,
    )
    .await;
    let sub = next(&mut ws).await;
    assert_eq!(sub["type"], "success", "{sub}");
    send(
        json!({"id": 2, "method": "run.start",
            "params": {"assistant_id": "agent", "input": human("hello ws")}}),
        &mut ws,
    )
    .await;
    let mut events = Vec::new();
    let mut answered = false;
    loop {
        let m = next(&mut ws).await;
        if m["type"] == "success" && m["id"] == 2 {
            answered = true;
            continue;
        }
        assert_eq!(m["type"], "event", "{m}");
        assert_eq!(m["params"]["namespace"], json!([]), "{m}");
        let end = root_end(&m);
        events.push(m);
        if end {
            break;
        }
    }
    assert!(answered);
    let text: String = events
        .iter()
        .filter_map(|e| e["params"]["data"]["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "echo: hello ws");
    send(json!({"id": 3, "method": "agent.getTree"}), &mut ws).await;
    let tree = next(&mut ws).await;
    assert_eq!(tree["result"]["tree"]["graph_name"], "agent", "{tree}");
    assert_eq!(
        tree["result"]["tree"]["children"][0]["graph_name"], "sub",
        "{tree}"
    );
    send(
        json!({"id": 4, "method": "subscription.unsubscribe", "params": {"subscription_id": "nope"}}),
        &mut ws,
    )
    .await;
    let gone = next(&mut ws).await;
    assert_eq!(gone["error"], "no_such_subscription", "{gone}");
    // A later subscription gets what the connection read before it, once.
    send(
        json!({"id": 5, "method": "subscription.subscribe", "params": {"channels": ["values"]}}),
        &mut ws,
    )
    .await;
    let mut replayed = 0;
    loop {
        let m = next(&mut ws).await;
        if m["type"] == "success" {
            assert_eq!(m["result"]["replayed_events"], replayed, "{m}");
            break;
        }
        assert_eq!(m["method"], "values", "{m}");
        replayed += 1;
    }
    assert!(replayed > 0);
}
