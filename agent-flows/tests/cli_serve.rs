//! `agent serve`, the built binary: the five flows behind the LangGraph API, a chat turn
//! answered by a flow, the flow options a run's context may set (and a 422 for others: a
//! hostile request names no file, database, user or unlisted model, raises no limit, and
//! reads nothing back), the operator's settings checked and form files read once at start,
//! the API key, the refusal to listen beyond loopback without one, private webhook
//! targets refused unless `--allow-private-webhooks`, and semantic search in the store
//! (`--store-index`, the config file's `[store]`).

mod common;
#[path = "../../agent-tools/tests/mcp/python.rs"]
mod mcp_python_sdk;

use common::Scratch;
use common::serve::{client, fails_to_start, serve, serve_with};
use serde_json::{Value, json};

fn chat(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": text}]})
}

#[tokio::test]
async fn the_flows_answer_langgraph_clients() {
    let s = Scratch::new("serve");
    let server = serve(&s, &[]);
    let c = client();
    let found: Value = c
        .post(format!("{}/assistants/search", server.url))
        .json(&json!({"limit": 10}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut graphs: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["graph_id"].as_str().unwrap())
        .collect();
    graphs.sort();
    assert_eq!(
        graphs,
        ["data", "form", "orchestrator", "react", "tool-router"]
    );

    // A chat turn becomes the flow's turn input, as `agent run` makes it.
    let resp = c
        .post(format!("{}/runs/wait", server.url))
        .json(&json!({"assistant_id": "tool-router", "input": chat("What time is it in Tokyo?")}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let out: Value = resp.json().await.unwrap();
    let last = out["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["type"], "ai", "{out}");
    assert!(last["content"].as_str().unwrap().contains("Tokyo"), "{out}");

    // The context sets the flow's options by name; others are refused before queueing.
    let resp = c
        .post(format!("{}/runs/wait", server.url))
        .json(&json!({"assistant_id": "react", "context": {"mode": "static"}, "input": chat("What is 12 * 7?")}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let resp = c
        .post(format!("{}/runs/wait", server.url))
        .json(&json!({"assistant_id": "react", "context": {"bogus": "1"}, "input": chat("hi")}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 422);
    let e: Value = resp.json().await.unwrap();
    assert!(
        e["detail"].as_str().unwrap().contains("mode"),
        "names the options: {e}"
    );
}

#[tokio::test]
async fn an_api_key_guards_every_request_but_ok() {
    let s = Scratch::new("serve-key");
    let server = serve(&s, &["--api-key", "sesame"]);
    let c = client();
    let ok = c.get(format!("{}/ok", server.url)).send().await.unwrap();
    assert_eq!(ok.status(), 200);
    let refused = c
        .post(format!("{}/threads", server.url))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let allowed = c
        .post(format!("{}/threads", server.url))
        .header("x-api-key", "sesame")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(allowed.status(), 200);
}

#[test]
fn beyond_loopback_needs_a_key() {
    let s = Scratch::new("serve-host");
    let out = s
        .agent(&["serve", "--host", "0.0.0.0", "--port", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--api-key"), "{stderr}");
}

/// The official Python MCP client (`agent-server/tests/mcp/client.py`) lists the five flows
/// as tools at `/mcp` and calls them, with the API key. Installs the Python MCP SDK on first
/// use (cached), so it runs under CI or with `AGENTGRAPH_MCP_TESTS=1` and skips otherwise.
#[test]
fn the_python_mcp_client_calls_the_flows() {
    let Some(python) = mcp_python_sdk::mcp_python() else {
        return;
    };
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let s = Scratch::new("serve-mcp");
    let server = serve(&s, &["--api-key", "sesame"]);
    let status = std::process::Command::new(&python)
        .arg(format!("{root}/agent-server/tests/mcp/client.py"))
        .args([&format!("{}/mcp", server.url), "flows", "sesame"])
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the Python MCP client's checks failed (its output is above)"
    );
}

#[tokio::test]
async fn private_webhooks_need_the_flag() {
    let s = Scratch::new("serve-webhooks");
    let c = client();
    let body = json!({"assistant_id": "tool-router", "input": chat("hi"),
                      "webhook": "http://127.0.0.1:9/hook"});
    let strict = serve(&s, &[]);
    let r = c
        .post(format!("{}/runs", strict.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let detail: Value = r.json().await.unwrap();
    assert!(
        detail["detail"]
            .as_str()
            .unwrap()
            .contains("--allow-private-webhooks"),
        "{detail}"
    );
    drop(strict);
    let open = serve(&s, &["--allow-private-webhooks"]);
    let r = c
        .post(format!("{}/runs", open.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
}

/// What a run request answered: its status and its body as text.
async fn post(c: &reqwest::Client, url: &str, body: &Value) -> (u16, String) {
    let resp = c
        .post(format!("{url}/runs/wait"))
        .timeout(std::time::Duration::from_secs(20))
        .json(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{body}: no answer: {e}"));
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap())
}

/// The `detail` of a 422, which must name `option` and say the operator sets it.
fn operator_only(status: u16, body: &str, option: &str) -> String {
    assert_eq!(status, 422, "{body}");
    let detail = serde_json::from_str::<Value>(body).unwrap()["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(detail.contains(&format!("`{option}`")), "{detail}");
    assert!(detail.contains("operator"), "{detail}");
    detail
}

/// Every request is hostile: a run's `context` sets only what the operator lets a client set.
/// No path, database, identity or model of the client's choosing; limits only lowered; error
/// text quotes nothing the server read. One server for every case.
#[tokio::test]
async fn a_request_sets_only_what_the_operator_allows() {
    let s = Scratch::new("serve-hostile");
    let canary = format!("canary-{:016x}", fastrand::u64(..));
    let server = serve_with(
        &s,
        &["--models", "offline,ollama:qwen2.5", "--set", "user=ivan"],
        &[
            ("AGENTGRAPH_TEST_CANARY", canary.as_str()),
            ("OLLAMA_HOST", "http://127.0.0.1:9"),
        ],
    );
    let c = client();
    let url = server.url.as_str();
    let mut answers = Vec::new();

    // (a) A form "file" names a file of the server: refused before anything is read.
    let fifo = s.path("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    for path in [
        "/proc/self/environ",
        "/etc/passwd",
        "/dev/zero",
        fifo.to_str().unwrap(),
    ] {
        let started = std::time::Instant::now();
        let (status, body) = post(
            &c,
            url,
            &json!({"assistant_id": "form", "input": chat("hi"), "context": {"form": path}}),
        )
        .await;
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{path}: took {:?}",
            started.elapsed()
        );
        let detail = operator_only(status, &body, "form");
        assert!(
            !detail.contains(path),
            "the value sent is not quoted: {detail}"
        );
        answers.push(body);
    }
    // The server still answers a normal run after them.
    let (status, body) = post(
        &c,
        url,
        &json!({"assistant_id": "form", "input": chat("hi"), "context": {"form": "contact"}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    answers.push(body);

    // (b) A profile database of the client's choosing: refused, and nothing is created.
    let db = s.path("x.db");
    let (status, body) = post(
        &c,
        url,
        &json!({"assistant_id": "orchestrator", "input": chat("hi"),
                "context": {"profiles": db.to_str().unwrap()}}),
    )
    .await;
    operator_only(status, &body, "profiles");
    assert!(!db.exists(), "no file at {}", db.display());
    answers.push(body);

    // (c) Whose profile a run gets: never the client's say, neither through the context...
    let (status, body) = post(
        &c,
        url,
        &json!({"assistant_id": "orchestrator", "input": chat("hi"), "context": {"user": "maria"}}),
    )
    .await;
    operator_only(status, &body, "user");
    answers.push(body);
    // ...nor through the state's `user_id` in a raw input: the operator's user (`--set
    // user=ivan`) runs it.
    let (status, body) = post(
        &c,
        url,
        &json!({"assistant_id": "orchestrator",
                "input": {"user_id": "maria", "messages": [{"role": "user", "content": "Hello!"}]}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let out: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(out["user_id"], "ivan", "{out}");
    assert_eq!(out["user_context"]["user_id"], "ivan", "{out}");
    answers.push(body);

    // (d) A limit: lowered, the flow applies it; raised, refused with the ceiling named.
    let (status, body) = post(
        &c,
        url,
        &json!({"assistant_id": "orchestrator", "input": chat("hi"),
                "context": {"max_input_chars": 100000}}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body.contains("max_input_chars") && body.contains("4000"),
        "{body}"
    );
    let (status, body) = post(
        &c,
        url,
        &json!({"assistant_id": "orchestrator",
                "input": chat("What was the unemployment rate in 2008?"),
                "context": {"max_input_chars": "20"}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("the message has 39 characters; the limit is 20"),
        "{body}"
    );

    // (e) Models: one of the operator's list, else refused with the list named.
    let (status, body) = post(
        &c,
        url,
        &json!({"assistant_id": "tool-router", "input": chat("hi"),
                "context": {"model": "ollama:llama3"}}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("offline, ollama:qwen2.5"), "{body}");
    let (status, body) = post(
        &c,
        url,
        &json!({"assistant_id": "tool-router", "input": chat("What time is it in Tokyo?"),
                "context": {"model": "offline"}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Tokyo"), "{body}");
    let found: Value = c
        .post(format!("{url}/assistants/search"))
        .json(&json!({"graph_id": "orchestrator"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let assistant = found[0]["assistant_id"].as_str().unwrap();
    let schemas: Value = c
        .get(format!("{url}/assistants/{assistant}/schemas"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let context = &schemas["context_schema"]["properties"];
    assert_eq!(
        context["model"]["enum"],
        json!(["offline", "ollama:qwen2.5"])
    );
    assert_eq!(context["max_input_chars"]["maximum"], 4000, "{context}");
    assert!(
        context.get("user").is_none() && context.get("profiles").is_none(),
        "{context}"
    );

    // (f) A form as a JSON object: the flow asks its first field; a bad one names the field.
    let (status, body) = post(
        &c,
        url,
        &json!({"assistant_id": "form", "input": chat("hi"),
        "context": {"form": {"name": "trip", "fields": [
            {"name": "city", "type": "text", "prompt": {"en": "Which city are you flying to?"}}
        ]}}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Which city are you flying to?"), "{body}");
    let (status, body) = post(
        &c,
        url,
        &json!({"assistant_id": "form", "input": chat("hi"),
                "context": {"form": {"fields": [{"name": "email", "type": "mail"}]}}}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body.contains("field 1 (`email`): unknown type `mail`"),
        "{body}"
    );

    // Nothing the server read reached a client.
    let home = s.dir.display().to_string();
    for body in &answers {
        assert!(!body.contains(&canary), "the environment leaked: {body}");
        assert!(!body.contains("AGENTGRAPH_TEST_CANARY"), "{body}");
        assert!(!body.contains(&home), "{body}");
        assert!(!body.contains("root:"), "/etc/passwd leaked: {body}");
        for line in passwd.lines().filter(|l| l.len() > 8) {
            assert!(!body.contains(line), "/etc/passwd leaked: {body}");
        }
    }
}

/// A request with a path on the server, its answer as JSON.
async fn call(
    c: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    body: &Value,
) -> (u16, Value) {
    let resp = c
        .request(method, &url)
        .timeout(std::time::Duration::from_secs(20))
        .json(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{url} {body}: no answer: {e}"));
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// The tools a thread's latest turn ran, and how each went (`ok`, `error`...).
async fn tools_run(c: &reqwest::Client, url: &str, thread: &str) -> Vec<(String, String)> {
    let (status, state) = call(
        c,
        reqwest::Method::GET,
        format!("{url}/threads/{thread}/state"),
        &Value::Null,
    )
    .await;
    assert_eq!(status, 200, "{state}");
    state["values"]["scratchpad"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(_, r)| {
            (
                r["tool"].as_str().unwrap_or_default().to_owned(),
                r["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// A client writes state, not authority: the orchestrator's profile and permissions written
/// through `update_state` or a command's `update` (with a `goto` past `ingress`), or routes
/// written as the router's, give no tool the operator's user lacks; react's limits in a raw
/// input, a command's update, `update_state` or a cron stay at most the operator's.
#[tokio::test]
async fn a_clients_write_to_the_state_raises_no_permission_or_limit() {
    use reqwest::Method;
    let s = Scratch::new("serve-writes");
    // `guest` may not use `sql_query`; react's steps are capped at 3 by the operator.
    let server = serve(&s, &["--set", "user=guest", "--set", "max_steps=3"]);
    let c = client();
    let url = server.url.as_str();
    let question = "What was the unemployment rate in 2008?";
    let new_thread = || async {
        let (status, thread) = call(&c, Method::POST, format!("{url}/threads"), &json!({})).await;
        assert_eq!(status, 200, "{thread}");
        thread["thread_id"].as_str().unwrap().to_owned()
    };
    let wait = |thread: String, body: Value| {
        let c = c.clone();
        async move {
            call(
                &c,
                Method::POST,
                format!("{url}/threads/{thread}/runs/wait"),
                &body,
            )
            .await
        }
    };

    // The guest's own turn: `sql_query` is refused, the planner answers from the documents.
    let thread = new_thread().await;
    let (status, out) = wait(
        thread.clone(),
        json!({"assistant_id": "orchestrator", "input": chat(question)}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let ran = tools_run(&c, url, &thread).await;
    assert!(
        ran.contains(&("sql_query".into(), "error".into())),
        "{ran:?}"
    );
    let mut forged = out["user_context"].clone();
    assert_eq!(forged["user_id"], "guest", "{out}");
    forged["permissions"] = json!(["*"]);
    forged["role"] = json!("admin");
    let no_sql = |ran: &[(String, String)], how: &str| {
        assert!(
            !ran.iter()
                .any(|(tool, status)| tool == "sql_query" && status != "error"),
            "{how}: the guest ran sql_query: {ran:?}"
        );
        assert!(
            ran.iter().any(|(tool, _)| tool == "sql_query"),
            "{how}: the planner asked for sql_query: {ran:?}"
        );
    };

    // (1) update_state as `ingress` with every permission, then the thread runs on.
    let (status, written) = call(
        &c,
        Method::POST,
        format!("{url}/threads/{thread}/state"),
        &json!({"values": {"user_context": forged, "user_id": "demo", "scratchpad": {},
                           "retry_count": 0, "messages": [{"type": "human", "content": question}]},
                "as_node": "ingress"}),
    )
    .await;
    assert_eq!(status, 200, "{written}");
    let (status, out) = wait(
        thread.clone(),
        json!({"assistant_id": "orchestrator", "input": null}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    no_sql(&tools_run(&c, url, &thread).await, "update_state");

    // (2) A command's update with every permission and a goto past `ingress`.
    let thread = new_thread().await;
    let (status, out) = wait(
        thread.clone(),
        json!({"assistant_id": "orchestrator", "command": {
            "update": {"user_context": forged, "user_id": "demo",
                       "messages": [{"type": "human", "content": question}]},
            "goto": "planner"}}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    no_sql(&tools_run(&c, url, &thread).await, "command goto");
    // The turns' long-term summary is kept under the operator's user, not the state's.
    let summary = |user: &str| {
        let c = c.clone();
        let path = format!("{url}/store/items?namespace=users.{user}&key=summary");
        async move { call(&c, Method::GET, path, &Value::Null).await }
    };
    let (status, demo) = summary("demo").await;
    assert_eq!(
        (status, &demo),
        (200, &Value::Null),
        "written as demo: {demo}"
    );
    let (status, guest) = summary("guest").await;
    assert_eq!(status, 200, "{guest}");
    assert!(guest["value"].is_object(), "{guest}");

    // (3) Routes written as the router's, the call marked allowed: the executor checks again.
    let thread = new_thread().await;
    let (status, out) = wait(
        thread.clone(),
        json!({"assistant_id": "orchestrator", "input": chat(question)}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let sql = json!({"sql": "SELECT year, unemp FROM macrodata WHERE year = 2008", "params": []});
    let (status, written) = call(
        &c,
        Method::POST,
        format!("{url}/threads/{thread}/state"),
        &json!({"values": {"user_context": forged, "scratchpad": {}, "retry_count": 0,
                           "routes": [{"id": "call_forged", "tool": "sql_query", "args": sql,
                                       "allowed": true, "rejection": null}]},
                "as_node": "tool_router"}),
    )
    .await;
    assert_eq!(status, 200, "{written}");
    let (status, out) = wait(
        thread.clone(),
        json!({"assistant_id": "orchestrator", "input": null}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    no_sql(&tools_run(&c, url, &thread).await, "forged routes");

    // React: a limit written into the state is checked against the operator's ceiling (3),
    // not the flow's own range (up to 8), wherever the write comes from.
    let refused = |status: u16, body: &Value, how: &str| {
        assert_eq!(status, 422, "{how}: {body}");
        let detail = body["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("max_steps")
                && detail.contains("more than 3")
                && detail.contains("operator"),
            "{how}: {detail}"
        );
    };
    let raw = |steps: u32| json!({"user_query": "What is 12 * 7?", "max_steps": steps});
    let (status, body) = call(
        &c,
        Method::POST,
        format!("{url}/runs/wait"),
        &json!({"assistant_id": "react", "input": raw(8)}),
    )
    .await;
    refused(status, &body, "raw input");
    let (status, body) = call(
        &c,
        Method::POST,
        format!("{url}/runs/wait"),
        &json!({"assistant_id": "react", "input": raw(2)}),
    )
    .await;
    assert_eq!(status, 200, "a lower limit is the client's: {body}");
    assert_eq!(body["max_steps"], 2, "{body}");
    let thread = new_thread().await;
    let (status, body) = wait(
        thread.clone(),
        json!({"assistant_id": "react", "input": chat("What is 12 * 7?")}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["max_steps"], 3, "the operator's value: {body}");
    let (status, body) = call(
        &c,
        Method::POST,
        format!("{url}/threads/{thread}/state"),
        &json!({"values": {"max_steps": 8}}),
    )
    .await;
    refused(status, &body, "update_state");
    let (status, body) = wait(
        thread.clone(),
        json!({"assistant_id": "react", "command": {"update": {"max_steps": 7}, "goto": "planner"}}),
    )
    .await;
    refused(status, &body, "command update");
    let (status, body) = call(
        &c,
        Method::POST,
        format!("{url}/runs/crons"),
        &json!({"assistant_id": "react", "schedule": "0 0 1 1 *", "input": raw(8)}),
    )
    .await;
    refused(status, &body, "cron");
}

/// The operator's settings are checked when `agent serve` starts, and a form file is read
/// then, once: runs never touch it (it can be gone).
#[tokio::test]
async fn the_operators_settings_are_read_once_at_start() {
    let s = Scratch::new("serve-operator");
    let bad = s.path("bad.toml");
    std::fs::write(&bad, "[[fields]]\nname = \"web\"\ntype = \"link\"\n").unwrap();
    let form = format!("form={}", bad.display());
    let stderr = fails_to_start(&s, &["--set", &form]);
    assert!(
        stderr.contains("bad.toml") && stderr.contains("field 1 (`web`): unknown type `link`"),
        "{stderr}"
    );
    let stderr = fails_to_start(&s, &["--set", "colour=red"]);
    assert!(stderr.contains("`colour`"), "{stderr}");
    let stderr = fails_to_start(&s, &["--models", "offline,nope"]);
    assert!(stderr.contains("`nope`"), "{stderr}");
    let stderr = fails_to_start(&s, &["--set", "max_input_chars=many"]);
    assert!(stderr.contains("max_input_chars"), "{stderr}");

    let good = s.path("trip.json");
    std::fs::write(
        &good,
        r#"{"fields": [{"name": "city", "type": "text", "prompt": {"en": "Which city are you flying to?"}}]}"#,
    )
    .unwrap();
    let form = format!("form={}", good.display());
    let server = serve(&s, &["--set", &form]);
    std::fs::remove_file(&good).unwrap();
    let c = client();
    let (status, body) = post(
        &c,
        &server.url,
        &json!({"assistant_id": "form", "input": chat("hi")}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Which city are you flying to?"), "{body}");
}

/// Puts three notes and searches them with a query: the best match first, scored, with an
/// index; the page unranked (no scores) without one.
async fn search_notes(url: &str) -> Vec<Value> {
    let c = client();
    for (key, text) in [
        ("train", "the train to Lyon leaves at nine"),
        ("milk", "buy oat milk and bread"),
        ("call", "call the dentist on Monday"),
    ] {
        let resp = c
            .put(format!("{url}/store/items"))
            .json(&json!({"namespace": ["notes"], "key": key, "value": {"text": text}}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 204);
    }
    let resp = c
        .post(format!("{url}/store/items/search"))
        .json(&json!({"namespace_prefix": ["notes"], "query": "when does my train leave?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let found: Value = resp.json().await.unwrap();
    found["items"].as_array().unwrap().clone()
}

#[tokio::test]
async fn the_store_index_ranks_searches_by_meaning() {
    // Without an index: the query is ignored, as langgraph-api does.
    let s = Scratch::new("serve-noindex");
    let server = serve(&s, &[]);
    let items = search_notes(&server.url).await;
    assert_eq!(items.len(), 3);
    assert!(items.iter().all(|i| i["score"].is_null()), "{items:?}");

    // With one, from the flag or from the config file.
    let s = Scratch::new("serve-index");
    let server = serve(&s, &["--store-index", "offline"]);
    let items = search_notes(&server.url).await;
    assert_eq!(items[0]["key"], "train", "{items:?}");
    assert!(items[0]["score"].as_f64().is_some(), "{items:?}");

    let s = Scratch::new("serve-index-file");
    let config = s.path("agentgraph.toml");
    std::fs::write(
        &config,
        "[store]\nindex = \"offline:128\"\nfields = [\"text\"]\ndims = 128\n",
    )
    .unwrap();
    let server = serve(&s, &["--config", config.to_str().unwrap()]);
    let items = search_notes(&server.url).await;
    assert_eq!(items[0]["key"], "train", "{items:?}");
}

#[test]
fn a_store_index_that_cannot_be_built_stops_the_start() {
    let s = Scratch::new("serve-index-bad");
    let e = fails_to_start(&s, &["--store-index", "cohere:embed"]);
    assert!(e.contains("--store-index") && e.contains("cohere"), "{e}");
    let config = s.path("agentgraph.toml");
    std::fs::write(&config, "[store]\nindex = \"offline:64\"\ndims = 32\n").unwrap();
    let e = fails_to_start(&s, &["--config", config.to_str().unwrap()]);
    assert!(e.contains("64") && e.contains("32"), "{e}");
}
