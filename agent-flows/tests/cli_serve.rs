//! `agent serve`, the built binary: the five flows behind the LangGraph API, a chat turn
//! answered by a flow, the flow options a run's context may set (and a 422 for others),
//! the API key, the refusal to listen beyond loopback without one, and private webhook
//! targets refused unless `--allow-private-webhooks`.

mod common;
#[path = "../../agent-tools/tests/mcp/python.rs"]
mod mcp_python_sdk;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use common::Scratch;
use serde_json::{Value, json};

struct Served {
    child: Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(s: &Scratch, extra: &[&str]) -> Served {
    let mut args = vec!["serve", "--port", "0"];
    args.extend_from_slice(extra);
    let mut child = s.agent(&args).stderr(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    stderr.read_line(&mut line).unwrap();
    // Keep reading what the server writes, so its stderr never closes under it.
    std::thread::spawn(move || {
        let mut sink = String::new();
        while stderr.read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    Served { child, url }
}

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

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
