//! A sweep of hostile requests against `agent serve` (the built binary, keyless on
//! loopback, the most exposed way to run it): every context option of every flow, and
//! `model`, set to paths, devices, a FIFO, URLs, huge and negative numbers, long strings and
//! odd JSON — in runs, assistants and crons; pages from evil origins; rebinding Host names;
//! limits asked far past their bounds; malformed bodies. No answer is a 5xx, none carries
//! the canary the server's environment and a file next to it hold (nor `/etc/passwd`'s
//! first line), every request is answered in time, and the server still runs a normal
//! request afterwards.

mod common;

use std::time::Duration;

use common::Scratch;
use common::serve::{client, serve_with};
use serde_json::{Value, json};

struct Sweep {
    c: reqwest::Client,
    url: String,
    canary: String,
    sent: usize,
}

impl Sweep {
    /// Sends one request; checks its answer; returns the status.
    async fn send(&mut self, req: reqwest::RequestBuilder, what: &str) -> u16 {
        self.sent += 1;
        let resp = req
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{what}: no answer in time: {e}"));
        let status = resp.status().as_u16();
        let headers = format!("{:?}", resp.headers());
        let body = resp.text().await.unwrap_or_default();
        assert!(status < 500, "{what}: {status} {body}");
        for leak in [self.canary.as_str(), "root:x:0:0"] {
            assert!(
                !body.contains(leak) && !headers.contains(leak),
                "{what}: the answer quotes {leak}: {body}"
            );
        }
        status
    }

    async fn post(&mut self, path: &str, body: Value, what: &str) -> u16 {
        let req = self.c.post(format!("{}{path}", self.url)).json(&body);
        self.send(req, what).await
    }
}

fn chat(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": text}]})
}

#[tokio::test]
async fn hostile_requests_get_4xx_and_leak_nothing() {
    let s = Scratch::new("serve-sweep");
    let canary = format!(
        "canary-{:016x}{:016x}",
        fastrand::u64(..),
        fastrand::u64(..)
    );
    let secret_file = s.path("secret.toml");
    std::fs::write(&secret_file, format!("name = \"{canary}\"\n")).unwrap();
    let fifo = s.path("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let server = serve_with(
        &s,
        &["--set", "user=ivan"],
        &[("AGENTGRAPH_TEST_CANARY", canary.as_str())],
    );
    let mut sweep = Sweep {
        c: client(),
        url: server.url.clone(),
        canary,
        sent: 0,
    };

    // Every option of every flow, and the model, set to what a client must not make the
    // server read, reach or hold.
    let paths = [
        "/proc/self/environ".to_owned(),
        "/etc/passwd".to_owned(),
        "/dev/zero".to_owned(),
        "/dev/stdin".to_owned(),
        secret_file.display().to_string(),
        fifo.display().to_string(),
        "../../../../etc/passwd".to_owned(),
        "file:///etc/passwd".to_owned(),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "postgres://user:pass@127.0.0.1:1/db".to_owned(),
        "openai:gpt-4o".to_owned(),
        "x".repeat(100_000),
        String::new(),
    ];
    let mut values: Vec<Value> = paths.iter().map(|p| json!(p)).collect();
    values.extend([
        json!(-1),
        json!(0),
        json!(u64::MAX),
        json!(1e308),
        json!(true),
        json!([1, 2, 3]),
        json!({"$ref": "/etc/passwd"}),
        json!({"fields": [{"name": "a", "type": "text", "pattern": "(a+)+$"}]}),
    ]);
    for flow in agent_flows::FLOWS {
        let info = flow.info();
        let keys = info.options.iter().map(|o| o.key).chain([
            "model",
            "langgraph_auth_user",
            "not_an_option",
        ]);
        for key in keys {
            for value in &values {
                let what = format!("{} context.{key}={}", info.name, short(value));
                let context = json!({ key: value });
                let status = sweep
                    .post(
                        "/runs/wait",
                        json!({"assistant_id": info.name, "input": chat("hello"), "context": context}),
                        &what,
                    )
                    .await;
                // A path, device, URL or model of the client's choosing is never taken, by
                // any option (an empty one is the default's, for the options that have one).
                if value.as_str().is_some_and(|v| !v.is_empty()) {
                    assert!(status >= 400, "{what}: {status}");
                }
            }
            // As an assistant's context and a cron's, too.
            let context = json!({ key: "/proc/self/environ" });
            let what = format!("{} assistant context.{key}", info.name);
            let status = sweep
                .post(
                    "/assistants",
                    json!({"graph_id": info.name, "context": context}),
                    &what,
                )
                .await;
            assert!(status >= 400, "{what}: {status}");
            let what = format!("{} cron context.{key}", info.name);
            let status = sweep
                .post(
                    "/runs/crons",
                    json!({"assistant_id": info.name, "schedule": "* * * * *", "context": context}),
                    &what,
                )
                .await;
            assert!(status >= 400, "{what}: {status}");
        }
    }

    // Pages from other origins, simple requests and preflights alike.
    for origin in [
        "https://evil.example",
        "null",
        "http://localhost.evil.example",
        "http://127.0.0.1.nip.io:2024",
    ] {
        for path in [
            "/threads/search",
            "/runs/wait",
            "/store/items/search",
            "/mcp",
        ] {
            let req = sweep
                .c
                .post(format!("{}{path}", sweep.url))
                .header("origin", origin)
                .header("content-type", "text/plain")
                .body(r#"{"assistant_id": "tool-router", "input": {}}"#);
            let what = format!("origin {origin} {path}");
            assert_eq!(sweep.send(req, &what).await, 403, "{what}");
        }
    }
    // Rebinding hosts: a name that resolves to loopback is still not a loopback name.
    for host in [
        "evil.example",
        "evil.example:2024",
        "127.0.0.1.nip.io",
        "localhost.evil.example",
        "0.0.0.0",
        "[::ffff:127.0.0.1].evil",
    ] {
        for path in ["/threads/search", "/mcp", "/"] {
            let req = sweep
                .c
                .post(format!("{}{path}", sweep.url))
                .header("host", host)
                .json(&json!({}));
            let what = format!("host {host} {path}");
            assert_eq!(sweep.send(req, &what).await, 403, "{what}");
        }
    }

    // Limits asked far past their bounds, and malformed bodies.
    let big = json!({"k": "x".repeat(1_000_000)});
    for (path, body) in [
        ("/threads/search", json!({"limit": 1_000_000_000u64})),
        ("/threads/search", json!({"limit": 10, "offset": u64::MAX})),
        ("/threads/search", json!({"limit": -1})),
        ("/assistants/search", json!({"limit": 100_000})),
        ("/runs/crons/search", json!({"limit": 100_000})),
        ("/store/items/search", json!({"limit": 100_000})),
        ("/store/namespaces", json!({"limit": 100_000})),
        (
            "/runs/wait",
            json!({"assistant_id": "tool-router", "input": chat("hi"), "config": {"recursion_limit": 1_000_000_000u64}}),
        ),
        (
            "/runs/wait",
            json!({"assistant_id": "tool-router", "input": chat("hi"), "metadata": big}),
        ),
        ("/threads", json!({"metadata": big})),
        (
            "/runs",
            json!({"assistant_id": "tool-router", "input": chat("hi"), "after_seconds": 1e300}),
        ),
        (
            "/runs",
            json!({"assistant_id": "tool-router", "input": chat("hi"), "stream_mode": ["values", "nope"]}),
        ),
        (
            "/runs",
            json!({"assistant_id": "tool-router", "input": chat("hi"), "webhook": "http://169.254.169.254/"}),
        ),
        (
            "/runs",
            json!({"assistant_id": "/etc/passwd", "input": chat("hi")}),
        ),
        (
            "/runs/batch",
            Value::Array(vec![json!({"assistant_id": "tool-router"}); 1000]),
        ),
        ("/threads/search", json!("not an object")),
        ("/threads/search", json!(null)),
    ] {
        let what = format!("{path} {}", short(&body));
        let status = sweep.post(path, body, &what).await;
        assert!((400..500).contains(&status), "{what}: {status}");
    }
    let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let req = sweep
        .c
        .post(format!("{}/threads/search", sweep.url))
        .header("content-type", "application/json")
        .body(deep);
    assert_eq!(sweep.send(req, "deeply nested JSON").await, 422);
    let req = sweep
        .c
        .put(format!("{}/store/items", sweep.url))
        .json(&json!({"namespace": ["a.b"], "key": "k", "value": {}}));
    let status = sweep.send(req, "a dotted store label").await;
    assert!((400..500).contains(&status), "{status}");

    // The server still answers a normal run, after all of it.
    let req = sweep
        .c
        .post(format!("{}/runs/wait", sweep.url))
        .json(&json!({"assistant_id": "tool-router", "input": chat("What time is it in Tokyo?")}));
    assert_eq!(sweep.send(req, "a normal run after the sweep").await, 200);
    eprintln!("{} hostile requests, none a 5xx or a leak", sweep.sent);
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 60 {
        format!("{}...", &s[..60])
    } else {
        s
    }
}
