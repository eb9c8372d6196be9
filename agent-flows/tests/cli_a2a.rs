//! `agent run react --mode llm --a2a URL` as a user runs it: the remote agent's card is
//! fetched, the agent joins the flow's tools, the model calls it, and its answer reaches the
//! flow's. The remote agents: an assistant of agentgraph's own server (the reference graphs,
//! served in the test's process), and an agent served by the official A2A SDK's Python server
//! (`agent-server/tests/a2a/server.py`, a cached venv from `agent-server/tests/a2a/python.sh`,
//! so that one runs under CI or with `AGENTGRAPH_A2A_TESTS=1`). Also the errors of an agent
//! that is not there, of a credential missing, and of a flow that takes no tools. And the
//! other way: a2a-sdk's client talks to every flow `agent serve` serves
//! (`agent-server/tests/a2a/flows.py`: a send and a stream each). The model is a local fake speaking
//! OpenAI's chat-completions wire format: it calls the tool it is told to with fixed
//! arguments, then answers with the tool message it is sent.

mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};

use common::fake_openai::FakeModel;
use common::{Scratch, run};
use serde_json::{Value, json};

#[path = "../../agent-server/examples/reference/graphs.rs"]
#[allow(dead_code)]
mod graphs;

#[path = "../../agent-server/tests/a2a/python.rs"]
mod a2a_python_sdk;

/// `agent run react "<question>" --mode llm --model openai:fake --json` with `extra`.
fn llm_run(s: &Scratch, model: &FakeModel, question: &str, extra: &[&str]) -> common::Run {
    let mut args = vec![
        "run",
        "react",
        question,
        "--mode",
        "llm",
        "--model",
        "openai:fake",
        "--json",
    ];
    args.extend_from_slice(extra);
    let mut cmd = s.agent(&args);
    cmd.env("OPENAI_BASE_URL", &model.url)
        .env("OPENAI_API_KEY", "sk-fake");
    run(cmd)
}

fn out_json(out: common::Run) -> Value {
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.json()
}

fn tool_messages(report: &Value) -> Vec<Value> {
    report["state"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["type"] == "tool")
        .cloned()
        .collect()
}

fn offered(model: &FakeModel) -> Vec<String> {
    model.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The reference graphs served in this process (behind `key`); their base URL.
async fn our_server(key: &str) -> String {
    let router = graphs::server()
        .api_key(key)
        .build()
        .await
        .unwrap()
        .start()
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_react_flow_calls_an_assistant_of_agentgraphs_server() {
    let base = our_server("a2a-test-key").await;
    let report = tokio::task::spawn_blocking(move || {
        let s = Scratch::new("a2a-react-ours");
        let url = format!("{base}/a2a/agent");
        let key = [
            "--a2a",
            url.as_str(),
            "--a2a-header",
            "x-api-key: a2a-test-key",
        ];
        let model = FakeModel::start("agent", json!({"message": "hello over A2A"}));
        let out = llm_run(&s, &model, "ask the remote agent", &key);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let names = offered(&model);
        for name in ["echo", "calculator", "datetime", "agent"] {
            assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
        }
        // Without the key, no card: a clear error.
        let out = llm_run(&s, &model, "again", &["--a2a", &url]);
        assert_eq!(out.code, 1, "{}", out.stderr);
        assert!(out.stderr.contains("no agent card found"), "{}", out.stderr);
        assert!(out.stderr.contains("401"), "{}", out.stderr);
        // A flow that takes no tools says so.
        let mut args = vec!["run", "tool-router", "time in Oslo"];
        args.extend_from_slice(&key);
        let refused = run(s.agent(&args));
        assert_eq!(refused.code, 1, "{}", refused.stderr);
        assert!(
            refused.stderr.contains("takes no tools from outside"),
            "{}",
            refused.stderr
        );
        out_json(llm_run(&s, &model, "ask the remote agent", &key))
    })
    .await
    .unwrap();
    let tools = tool_messages(&report);
    assert_eq!(tools.len(), 1, "{report:#}");
    let content = tools[0]["content"].as_str().unwrap();
    assert!(
        content.starts_with("from inner subgraph node"),
        "{report:#}"
    );
    assert!(content.contains("context_id: "), "{content}");
    assert!(
        report["response"]
            .as_str()
            .unwrap()
            .starts_with("The result is from inner subgraph node"),
        "{report:#}"
    );
}

/// The Python A2A server, killed when dropped.
struct PythonAgent {
    child: Child,
    url: String,
}

impl Drop for PythonAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn python_agent(python: &str) -> PythonAgent {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../agent-server/tests/a2a/server.py"
    );
    let mut child = Command::new(python)
        .arg(script)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the A2A server did not start: {line:?}"))
        .to_owned();
    PythonAgent { child, url }
}

#[test]
fn the_react_flow_calls_an_agent_of_the_python_a2a_sdk() {
    let Some(python) = a2a_python_sdk::a2a_python() else {
        return;
    };
    let agent = python_agent(&python);
    let s = Scratch::new("a2a-react-python");
    let model = FakeModel::start(
        "Capital_Agent",
        json!({"message": "What is the capital of France?"}),
    );
    let out = llm_run(&s, &model, "capital of France?", &["--a2a", &agent.url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(offered(&model).iter().any(|n| n == "Capital_Agent"));
    let report = out.json();
    let tools = tool_messages(&report);
    assert_eq!(tools.len(), 1, "{report:#}");
    assert!(
        tools[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("The capital of France is Paris."),
        "{report:#}"
    );
    assert!(
        report["response"]
            .as_str()
            .unwrap()
            .contains("The capital of France is Paris."),
        "{report:#}"
    );
    // A question back reaches the model as the tool's result, with the task to answer.
    let asking = FakeModel::start("Capital_Agent", json!({"message": "What is the capital?"}));
    let out = llm_run(&s, &asking, "a capital?", &["--a2a", &agent.url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    let content = tool_messages(&report)[0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(content.contains("needs more input"), "{content}");
    assert!(content.contains("Which country?"), "{content}");
    assert!(content.contains("task_id \""), "{content}");
}

#[test]
fn an_agent_that_is_not_there_and_a_bad_header_are_clear_errors() {
    let s = Scratch::new("a2a-errors");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/a2a/nobody", listener.local_addr().unwrap());
    drop(listener);
    let out = run(s.agent(&["run", "react", "hello", "--a2a", &dead]));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("no agent card found"), "{}", out.stderr);
    let out = run(s.agent(&["run", "react", "hello", "--a2a", "not a url"]));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("not a URL"), "{}", out.stderr);
    let out = run(s.agent(&[
        "run",
        "react",
        "hello",
        "--a2a",
        "http://127.0.0.1:1/x",
        "--a2a-header",
        "no colon",
    ]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("Name: value"), "{}", out.stderr);
}

#[test]
fn the_python_a2a_client_talks_to_every_flow_of_agent_serve() {
    let Some(python) = a2a_python_sdk::a2a_python() else {
        return;
    };
    let s = Scratch::new("a2a-serve-flows");
    let served = common::serve::serve(&s, &[]);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../agent-server/tests/a2a/flows.py"
    );
    let status = Command::new(python)
        .args([script, &served.url])
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the Python A2A client's checks of the flows failed (their output is above)"
    );
}
