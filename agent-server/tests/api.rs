//! The API driven over HTTP the way clients drive it, against the reference graphs
//! (`examples/reference/graphs.rs`): system, assistants, threads, runs (wait, stream,
//! background, join), interrupts and resume, double texting, cancel, stateless runs, and
//! every malformed request answered with a 4xx and a `detail`.

mod common;

#[path = "../examples/reference/graphs.rs"]
#[allow(dead_code)]
mod graphs;

use std::time::Duration;

use serde_json::{Value, json};

use common::served::Served as Api;

impl Api {
    async fn thread(&self) -> String {
        let (status, t) = self.post("/threads", json!({})).await;
        assert_eq!(status, 200, "{t}");
        t["thread_id"].as_str().unwrap().to_owned()
    }

    /// The SSE events of a streamed run: (name, data).
    async fn stream(
        &self,
        path: &str,
        body: Value,
    ) -> (reqwest::header::HeaderMap, Vec<(String, Value)>) {
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let headers = resp.headers().clone();
        let text = resp.text().await.unwrap();
        (headers, parse_sse(&text))
    }

    async fn until_status(&self, thread: &str, wanted: &str) -> Value {
        for _ in 0..200 {
            let (_, t) = self.get(&format!("/threads/{thread}")).await;
            if t["status"] == wanted {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("thread {thread} never became {wanted}");
    }
}

fn parse_sse(text: &str) -> Vec<(String, Value)> {
    assert!(
        !text.contains("\n\n") || text.contains("\r\n"),
        "lines end with CRLF"
    );
    text.split("\r\n\r\n")
        .filter_map(|block| {
            let mut name = None;
            let mut data = None;
            for line in block.split("\r\n") {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = Some(n.to_owned());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(d).ok();
                }
            }
            Some((name?, data?))
        })
        .collect()
}

fn hi(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": text}]})
}

#[tokio::test]
async fn system_endpoints_answer() {
    let api = Api::start(graphs::server().workers(4)).await;
    assert_eq!(
        api.get("/ok").await,
        (200, json!({"ok": true, "services": {}}))
    );
    let (status, info) = api.get("/info").await;
    assert_eq!(status, 200);
    assert!(info["version"].as_str().unwrap().starts_with("0.16"));
    assert_eq!(info["flags"]["assistants"], true);
    let (status, _) = api.get("/nope").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn system_assistants_are_searchable_and_user_assistants_versioned() {
    let api = Api::start(graphs::server().workers(4)).await;
    let (status, found) = api.post("/assistants/search", json!({"limit": 10})).await;
    assert_eq!(status, 200);
    let graphs: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["graph_id"].as_str().unwrap())
        .collect();
    assert_eq!(graphs.len(), 2, "{found}");
    assert!(graphs.contains(&"agent") && graphs.contains(&"simple"));
    let agent = found
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["graph_id"] == "agent")
        .unwrap();
    assert_eq!(
        agent["assistant_id"], "fe096781-5601-53d2-b2f6-0d3403f7e9ca",
        "langgraph-api's id"
    );
    assert_eq!(agent["metadata"]["created_by"], "system");

    let (status, mine) = api
        .post("/assistants", json!({"graph_id": "agent", "name": "mine", "context": {"model": "fake"}, "metadata": {"team": "a"}}))
        .await;
    assert_eq!(status, 200, "{mine}");
    assert_eq!(mine["config"]["configurable"]["model"], "fake");
    let id = mine["assistant_id"].as_str().unwrap();
    let (status, patched) = api
        .call(
            reqwest::Method::PATCH,
            &format!("/assistants/{id}"),
            Some(json!({"metadata": {"x": 1}})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(patched["version"], 2);
    assert_eq!(patched["metadata"], json!({"team": "a", "x": 1}));
    let (_, versions) = api
        .post(&format!("/assistants/{id}/versions"), json!({}))
        .await;
    assert_eq!(versions.as_array().unwrap().len(), 2);
    let (_, count) = api
        .post("/assistants/count", json!({"metadata": {"team": "a"}}))
        .await;
    assert_eq!(count, 1);
    let (status, graph) = api.get(&format!("/assistants/{id}/graph")).await;
    assert_eq!(status, 200);
    assert!(
        graph["edges"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["source"] == "chat" && e["target"] == "sub")
    );
    let (status, schemas) = api.get(&format!("/assistants/{id}/schemas")).await;
    assert_eq!(status, 200);
    assert_eq!(schemas["state_schema"]["title"], "agent_state");
    assert!(schemas["input_schema"]["properties"]["messages"]["items"].is_object());

    let (status, _) = api
        .call(reqwest::Method::DELETE, &format!("/assistants/{id}"), None)
        .await;
    assert_eq!(status, 204);
    let (status, _) = api.get(&format!("/assistants/{id}")).await;
    assert_eq!(status, 404);
    let (status, e) = api.post("/assistants", json!({"graph_id": "nope"})).await;
    assert_eq!(status, 404);
    assert!(e["detail"].as_str().unwrap().contains("agent"), "{e}");
}

#[tokio::test]
async fn a_run_waits_for_the_reply_and_the_thread_keeps_it() {
    let api = Api::start(graphs::server().workers(4)).await;
    let thread = api.thread().await;
    let (status, out) = api
        .post(
            &format!("/threads/{thread}/runs/wait"),
            json!({"assistant_id": "agent", "input": hi("hi there")}),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    let messages = out["messages"].as_array().unwrap();
    assert_eq!(messages[0]["type"], "human");
    assert_eq!(messages[0]["additional_kwargs"], json!({}));
    assert!(messages[0]["id"].is_string());
    assert_eq!(messages[1]["content"], "echo: hi there");
    assert_eq!(messages[1]["type"], "ai");
    assert_eq!(out["count"], 2);

    let t = api.until_status(&thread, "idle").await;
    assert_eq!(t["values"]["count"], 2);
    assert_eq!(t["metadata"]["graph_id"], "agent");
    let (_, state) = api.get(&format!("/threads/{thread}/state")).await;
    assert_eq!(state["values"]["count"], 2);
    assert_eq!(state["next"], json!([]));
    let (_, runs) = api.get(&format!("/threads/{thread}/runs")).await;
    assert_eq!(runs[0]["status"], "success");

    // A second turn continues the thread.
    let (_, out) = api
        .post(
            &format!("/threads/{thread}/runs/wait"),
            json!({"assistant_id": "agent", "input": hi("again")}),
        )
        .await;
    assert_eq!(out["count"], 4);
    assert_eq!(
        out["messages"].as_array().unwrap().len(),
        6,
        "human, echo, inner twice"
    );
    let (_, history) = api
        .post(&format!("/threads/{thread}/history"), json!({"limit": 10}))
        .await;
    assert!(history.as_array().unwrap().len() > 4, "{history}");

    // Prometheus reads the runs by status (counted by the store) and what this instance did.
    let (status, metrics) = api.get("/metrics").await;
    assert_eq!(status, 200);
    let metrics = metrics.as_str().unwrap();
    for line in [
        "agentgraph_runs{status=\"success\"} 2",
        "agentgraph_queue_depth 0",
        "agentgraph_runs_finished_total{status=\"success\"} 2",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
    }
}

#[tokio::test]
async fn streams_speak_langgraphs_events() {
    let api = Api::start(graphs::server().workers(4)).await;
    let thread = api.thread().await;
    let (headers, events) = api
        .stream(
            &format!("/threads/{thread}/runs/stream"),
            json!({"assistant_id": "agent", "input": hi("hello"), "stream_mode": ["values", "updates", "messages-tuple", "custom"]}),
        )
        .await;
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[0], "metadata", "{names:?}");
    assert!(events[0].1["run_id"].is_string());
    assert_eq!(events[0].1["attempt"], 1);
    assert!(!names.contains(&"end"));
    assert!(names.contains(&"custom") && names.contains(&"updates") && names.contains(&"messages"));
    let tokens: String = events
        .iter()
        .filter(|(n, d)| n == "messages" && d[0]["type"] == "AIMessageChunk")
        .map(|(_, d)| d[0]["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tokens, "echo: hello");
    let meta = &events.iter().find(|(n, _)| n == "messages").unwrap().1[1];
    assert_eq!(meta["langgraph_node"], "chat");
    let last_values = events.iter().rev().find(|(n, _)| n == "values").unwrap();
    assert_eq!(last_values.1["count"], 2);
    let run_id = events[0].1["run_id"].as_str().unwrap();
    assert_eq!(
        headers["content-location"],
        format!("/threads/{thread}/runs/{run_id}").as_str()
    );
    // The run is final once the stream closed.
    let (_, run) = api.get(&format!("/threads/{thread}/runs/{run_id}")).await;
    assert_eq!(run["status"], "success");
}

/// A namespace segment of a `<mode>|<ns>` event name: `sub:<task id>`, the id free of `:`.
fn is_sub_ns(ns: &str) -> bool {
    ns.strip_prefix("sub:")
        .is_some_and(|id| !id.is_empty() && !id.contains([':', '|']))
}

#[tokio::test]
async fn stream_subgraphs_names_subgraph_events_mode_bar_namespace() {
    let api = Api::start(graphs::server().workers(4)).await;
    let thread = api.thread().await;
    let modes = json!([
        "values",
        "updates",
        "messages-tuple",
        "debug",
        "tasks",
        "checkpoints"
    ]);
    let (_, events) = api
        .stream(
            &format!("/threads/{thread}/runs/stream"),
            json!({"assistant_id": "agent", "input": hi("hi subask"), "stream_mode": modes, "stream_subgraphs": true}),
        )
        .await;
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    // Every mode asked for names the subgraph's parts `<mode>|sub:<task id>`, one task.
    let mut namespaces = std::collections::BTreeSet::new();
    let mut modes_seen = std::collections::BTreeSet::new();
    for name in names.iter().filter(|n| n.contains('|')) {
        let (mode, ns) = name.split_once('|').unwrap();
        assert!(is_sub_ns(ns), "{name}");
        namespaces.insert(ns);
        modes_seen.insert(mode);
    }
    assert_eq!(namespaces.len(), 1, "{names:?}");
    assert_eq!(
        modes_seen.into_iter().collect::<Vec<_>>(),
        [
            "checkpoints",
            "debug",
            "messages",
            "tasks",
            "updates",
            "values"
        ],
        "{names:?}"
    );
    let ns = namespaces.into_iter().next().unwrap();
    let data = |name: String| -> Vec<&Value> {
        events
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, d)| d)
            .collect()
    };
    // The subgraph's updates: its node `inner`, then its interrupt.
    let sub_updates = data(format!("updates|{ns}"));
    assert_eq!(sub_updates.len(), 2, "{sub_updates:?}");
    assert!(sub_updates[0]["inner"]["messages"].is_array());
    assert_eq!(
        sub_updates[1]["__interrupt__"][0]["value"]["question"],
        "sub approve?"
    );
    // The root gets the interrupt too, after the subgraph's; the paused `sub` has no update.
    let root_updates = data("updates".to_owned());
    let root_nodes: Vec<&String> = root_updates
        .iter()
        .filter_map(|u| u.as_object()?.keys().next())
        .collect();
    assert_eq!(root_nodes, ["chat", "__interrupt__"]);
    assert_eq!(
        root_updates[1]["__interrupt__"][0]["value"]["question"],
        "sub approve?"
    );
    let sub_interrupt = names
        .iter()
        .position(|n| *n == format!("updates|{ns}"))
        .unwrap();
    let root_interrupt = names.iter().rposition(|n| *n == "updates").unwrap();
    assert!(sub_interrupt < root_interrupt);
    // The subgraph's values are its state; its message comes as `messages|<ns>`, with its
    // namespace in the metadata, and not again at the root.
    let sub_values = data(format!("values|{ns}"));
    assert_eq!(
        sub_values.last().unwrap()["messages"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let sub_messages = data(format!("messages|{ns}"));
    assert_eq!(sub_messages.len(), 1, "{sub_messages:?}");
    assert_eq!(sub_messages[0][0]["content"], "from inner subgraph node");
    assert_eq!(sub_messages[0][1]["langgraph_checkpoint_ns"], ns);
    assert!(
        !data("messages".to_owned())
            .iter()
            .any(|m| m[0]["content"] == "from inner subgraph node")
    );
    // Its checkpoints carry its checkpoint_ns.
    let checkpoints = data(format!("checkpoints|{ns}"));
    assert_eq!(
        checkpoints[0]["config"]["configurable"]["checkpoint_ns"],
        ns
    );

    // Without `stream_subgraphs`: no `|` names, one update per root node, and the
    // subgraph's message still comes through under plain `messages`.
    let thread = api.thread().await;
    let (_, events) = api
        .stream(
            &format!("/threads/{thread}/runs/stream"),
            json!({"assistant_id": "agent", "input": hi("hi plain"), "stream_mode": ["updates", "messages-tuple"]}),
        )
        .await;
    assert!(events.iter().all(|(n, _)| !n.contains('|')));
    let root_nodes: Vec<&String> = events
        .iter()
        .filter(|(n, _)| n == "updates")
        .filter_map(|(_, u)| u.as_object()?.keys().next())
        .collect();
    assert_eq!(root_nodes, ["chat", "sub", "human"]);
    assert!(
        events
            .iter()
            .any(|(n, m)| n == "messages" && m[0]["content"] == "from inner subgraph node")
    );
}

#[tokio::test]
async fn an_interrupt_pauses_the_thread_and_a_command_resumes_it() {
    let api = Api::start(graphs::server().workers(4)).await;
    let thread = api.thread().await;
    let (_, out) = api
        .post(
            &format!("/threads/{thread}/runs/wait"),
            json!({"assistant_id": "agent", "input": hi("please ask me")}),
        )
        .await;
    let pause = &out["__interrupt__"][0];
    assert_eq!(pause["value"]["question"], "approve?", "{out}");
    assert!(pause["id"].is_string());
    let t = api.until_status(&thread, "interrupted").await;
    assert_eq!(t["interrupts"].as_object().unwrap().len(), 1, "{t}");
    let (_, state) = api.get(&format!("/threads/{thread}/state")).await;
    assert_eq!(state["next"], json!(["human"]));
    let (_, runs) = api.get(&format!("/threads/{thread}/runs")).await;
    assert_eq!(runs[0]["status"], "success", "a paused run succeeded");

    let (_, out) = api
        .post(
            &format!("/threads/{thread}/runs/wait"),
            json!({"assistant_id": "agent", "command": {"resume": "yes"}}),
        )
        .await;
    let last = out["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["content"], "human said: yes", "{out}");
    api.until_status(&thread, "idle").await;
}

#[tokio::test]
async fn stateless_runs_and_update_state() {
    let api = Api::start(graphs::server().workers(4)).await;
    let (status, out) = api
        .post(
            "/runs/wait",
            json!({"assistant_id": "simple", "input": {"value": "abc"}}),
        )
        .await;
    assert_eq!((status, out), (200, json!({"value": "ABC"})));
    let (_, events) = api
        .stream(
            "/runs/stream",
            json!({"assistant_id": "simple", "input": {"value": "x"}}),
        )
        .await;
    assert_eq!(events.last().unwrap().1, json!({"value": "X"}));
    let (_, threads) = api.post("/threads/search", json!({})).await;
    assert_eq!(threads, json!([]), "temporary threads are deleted");

    let thread = api.thread().await;
    api.post(
        &format!("/threads/{thread}/runs/wait"),
        json!({"assistant_id": "simple", "input": {"value": "a"}}),
    )
    .await;
    let (status, written) = api
        .post(
            &format!("/threads/{thread}/state"),
            json!({"values": {"value": "edited"}, "as_node": "upper"}),
        )
        .await;
    assert_eq!(status, 200, "{written}");
    assert!(written["checkpoint_id"].is_string());
    let (_, state) = api.get(&format!("/threads/{thread}/state")).await;
    assert_eq!(state["values"]["value"], "edited");
    assert_eq!(state["metadata"]["source"], "update");
    let (status, e) = api
        .post(
            &format!("/threads/{thread}/state"),
            json!({"values": {"value": "x"}, "as_node": "nope"}),
        )
        .await;
    assert_eq!(status, 400, "{e}");
}

#[tokio::test]
async fn double_texting_and_cancel() {
    let api = Api::start(graphs::server().workers(4)).await;
    let thread = api.thread().await;
    let (status, first) = api
        .post(
            &format!("/threads/{thread}/runs"),
            json!({"assistant_id": "agent", "input": hi("sleep 1")}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(first["status"], "pending");
    api.until_status(&thread, "busy").await;
    let (status, e) = api
        .post(
            &format!("/threads/{thread}/runs"),
            json!({"assistant_id": "agent", "input": hi("x"), "multitask_strategy": "reject"}),
        )
        .await;
    assert_eq!(status, 409, "{e}");
    let (_, second) = api
        .post(
            &format!("/threads/{thread}/runs"),
            json!({"assistant_id": "agent", "input": hi("after")}),
        )
        .await;
    let (_, joined) = api
        .get(&format!(
            "/threads/{thread}/runs/{}/join",
            second["run_id"].as_str().unwrap()
        ))
        .await;
    let texts: Vec<&str> = joined["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert!(
        texts.contains(&"echo: sleep 1") && texts.contains(&"echo: after"),
        "enqueued after the first: {texts:?}"
    );

    let (_, slow) = api
        .post(
            &format!("/threads/{thread}/runs"),
            json!({"assistant_id": "agent", "input": hi("sleep 5")}),
        )
        .await;
    let slow_id = slow["run_id"].as_str().unwrap();
    for _ in 0..100 {
        let (_, r) = api.get(&format!("/threads/{thread}/runs/{slow_id}")).await;
        if r["status"] == "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, _) = api
        .post(
            &format!("/threads/{thread}/runs/{slow_id}/cancel?wait=1&action=interrupt"),
            json!({}),
        )
        .await;
    assert_eq!(status, 200);
    let (_, r) = api.get(&format!("/threads/{thread}/runs/{slow_id}")).await;
    assert_eq!(r["status"], "interrupted");
    let t = api.until_status(&thread, "interrupted").await;
    assert_eq!(t["error"]["error"], "UserInterrupt");
    let (status, _) = api
        .post(
            &format!("/threads/{thread}/runs/{slow_id}/cancel"),
            json!({}),
        )
        .await;
    assert_eq!(status, 404, "a finished run cannot be cancelled");
}

#[tokio::test]
async fn a_failing_run_reports_its_error() {
    let api = Api::start(graphs::server().workers(4)).await;
    let thread = api.thread().await;
    let (status, out) = api
        .post(
            &format!("/threads/{thread}/runs/wait"),
            json!({"assistant_id": "agent", "input": hi("please fail")}),
        )
        .await;
    assert_eq!(status, 200);
    assert!(
        out["__error__"]["message"]
            .as_str()
            .unwrap()
            .contains("failed on purpose"),
        "{out}"
    );
    let t = api.until_status(&thread, "error").await;
    assert!(t["error"]["message"].is_string());
    let (_, events) = api
        .stream(
            &format!("/threads/{thread}/runs/stream"),
            json!({"assistant_id": "agent", "input": hi("fail again")}),
        )
        .await;
    assert_eq!(events.last().unwrap().0, "error", "{events:?}");
}

#[tokio::test]
async fn malformed_requests_get_4xx_with_a_detail() {
    let api = Api::start(graphs::server().workers(4)).await;
    let thread = api.thread().await;
    let cases: Vec<(reqwest::Method, String, Option<&str>, u16)> = vec![
        (
            reqwest::Method::POST,
            "/threads".into(),
            Some("{not json"),
            422,
        ),
        (
            reqwest::Method::POST,
            "/threads".into(),
            Some("[1, 2]"),
            422,
        ),
        (
            reqwest::Method::GET,
            "/threads/not-a-uuid".into(),
            None,
            422,
        ),
        (
            reqwest::Method::GET,
            format!("/threads/{}", uuid::Uuid::nil()),
            None,
            404,
        ),
        (reqwest::Method::GET, "/assistants/agent".into(), None, 422),
        (
            reqwest::Method::POST,
            format!("/threads/{thread}/runs"),
            Some(r#"{"assistant_id": "nope"}"#),
            422,
        ),
        (
            reqwest::Method::POST,
            format!("/threads/{thread}/runs"),
            Some(r#"{"assistant_id": "00000000-0000-0000-0000-000000000001"}"#),
            404,
        ),
        (
            reqwest::Method::POST,
            format!("/threads/{thread}/runs"),
            Some(r#"{"assistant_id": "agent", "stream_mode": "bogus"}"#),
            422,
        ),
        (
            reqwest::Method::POST,
            format!("/threads/{thread}/runs"),
            Some(r#"{"assistant_id": "agent", "multitask_strategy": 5}"#),
            422,
        ),
        (
            reqwest::Method::POST,
            format!("/threads/{thread}/runs"),
            Some(r#"{}"#),
            422,
        ),
        (
            reqwest::Method::POST,
            "/assistants/search".into(),
            Some(r#"{"limit": "abc"}"#),
            422,
        ),
        (reqwest::Method::POST, "/runs/batch".into(), Some("[]"), 422),
        (
            reqwest::Method::GET,
            format!("/threads/{thread}/history?limit=x"),
            None,
            422,
        ),
    ];
    for (method, path, body, expected) in cases {
        let mut req = api
            .http
            .request(method.clone(), format!("{}{path}", api.base));
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_owned());
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let v: Value = resp.json().await.unwrap();
        assert_eq!(status, expected, "{method} {path} {body:?}: {v}");
        assert!(
            v["detail"].as_str().is_some_and(|d| !d.is_empty()),
            "{method} {path}: {v}"
        );
    }
    let resp = api
        .http
        .post(format!("{}/assistants/search", api.base))
        .header("content-type", "text/plain")
        .body(r#"{"graph_id": "simple"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "JSON sent as text/plain is read");
    let found: Value = resp.json().await.unwrap();
    assert_eq!(found.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn cors_lets_studio_in() {
    let api = Api::start(graphs::server().workers(4)).await;
    let resp = api
        .http
        .request(reqwest::Method::OPTIONS, format!("{}/threads", api.base))
        .header("origin", "https://smith.langchain.com")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type,x-api-key")
        .header("access-control-request-private-network", "true")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let h = resp.headers();
    assert_eq!(h["access-control-allow-private-network"], "true");
    assert_eq!(
        h["access-control-allow-origin"],
        "https://smith.langchain.com"
    );
}

/// On a SQLite file, the run store and the checkpointer share the file: many runs and
/// requests at once never get "database is locked" (a write transaction takes its lock up
/// front instead of failing when another connection wrote since it read).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_file_takes_many_runs_at_once() {
    let dir = std::env::temp_dir().join(format!("agentgraph-api-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let api = Api::start(
        graphs::server()
            .sqlite(dir.join("server.sqlite"))
            .workers(8),
    )
    .await;
    let mut tasks = Vec::new();
    for i in 0..40 {
        let http = api.http.clone();
        let base = api.base.clone();
        tasks.push(tokio::spawn(async move {
            let t: Value = http
                .post(format!("{base}/threads"))
                .json(&json!({}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let t = t["thread_id"].as_str().unwrap().to_owned();
            let resp = http
                .post(format!("{base}/threads/{t}/runs/wait"))
                .json(&json!({"assistant_id": "agent", "input": hi(&format!("n{i}"))}))
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200);
            let out: Value = resp.json().await.unwrap();
            assert_eq!(out["count"], 2, "{out}");
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `after_seconds` keeps a run in the queue until then; a bad value is a 422.
#[tokio::test]
async fn a_delayed_run_waits_its_turn() {
    let api = Api::start(graphs::server().workers(4)).await;
    let thread = api.thread().await;
    let started = std::time::Instant::now();
    let (_, run) = api
        .post(
            &format!("/threads/{thread}/runs"),
            json!({"assistant_id": "simple", "input": {"value": "later"}, "after_seconds": 1.5}),
        )
        .await;
    let run_id = run["run_id"].as_str().unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    let (_, r) = api.get(&format!("/threads/{thread}/runs/{run_id}")).await;
    assert_eq!(r["status"], "pending", "not due yet");
    let (_, out) = api
        .get(&format!("/threads/{thread}/runs/{run_id}/join"))
        .await;
    assert_eq!(out["value"], "LATER");
    assert!(started.elapsed() >= Duration::from_millis(1500));
    let (status, e) = api
        .post(
            &format!("/threads/{thread}/runs"),
            json!({"assistant_id": "simple", "input": {"value": "x"}, "after_seconds": -1}),
        )
        .await;
    assert_eq!(status, 422, "{e}");
}

/// `GET /threads/{id}/stream` follows every run of the thread on one stream: each run's
/// events, then `metadata {"status": "run_done"}`.
#[tokio::test]
async fn a_thread_stream_follows_run_after_run() {
    let api = Api::start(graphs::server().workers(4)).await;
    let thread = api.thread().await;
    let resp = api
        .http
        .get(format!("{}/threads/{thread}/stream", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut ids = Vec::new();
    for text in ["one", "two"] {
        let (_, run) = api
            .post(
                &format!("/threads/{thread}/runs"),
                json!({"assistant_id": "agent", "input": hi(text)}),
            )
            .await;
        ids.push(run["run_id"].as_str().unwrap().to_owned());
    }
    let mut body = String::new();
    let mut resp = resp;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while body.matches("run_done").count() < 2 {
        let chunk = tokio::time::timeout_at(deadline, resp.chunk())
            .await
            .unwrap_or_else(|_| panic!("two runs done in 20 s; got: {body}"))
            .unwrap()
            .unwrap();
        body.push_str(&String::from_utf8_lossy(&chunk));
    }
    let events = parse_sse(&body);
    let metadata: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| n == "metadata")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(metadata.len(), 4, "{metadata:?}");
    assert_eq!(metadata[0]["run_id"], ids[0].as_str());
    assert_eq!(
        metadata[1],
        &json!({"status": "run_done", "run_id": ids[0]})
    );
    assert_eq!(metadata[2]["run_id"], ids[1].as_str());
    assert_eq!(metadata[3]["status"], "run_done");
    assert!(body.contains("\r\nid: "), "every event has an id");
    assert!(
        events.iter().any(|(n, d)| n == "values" && d["count"] == 4),
        "the second run's values"
    );
}
