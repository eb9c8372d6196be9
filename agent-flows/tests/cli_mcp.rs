//! `agent run react --mode llm --mcp "python server.py"` as a user runs it: the MCP server's
//! tools join the flow's, the model calls one, and its result reaches the answer. Also from
//! an `mcpServers` file (`--mcp-config`), and the errors of a server that cannot start and of
//! a flow that takes no tools.
//!
//! The MCP server is agent-tools' test server, written with the official Python SDK (a cached
//! venv from `agent-tools/tests/mcp/python.sh`), so those tests run under CI (`CI` set) or
//! with `AGENTGRAPH_MCP_TESTS=1`, and say they skipped otherwise. The model is a local fake
//! speaking OpenAI's chat-completions wire format: it asks for `add` with fixed arguments,
//! then answers with the tool message it is sent.

mod common;

use common::fake_openai::FakeModel;
use common::{Scratch, run};
use serde_json::{Value, json};

#[path = "../../agent-tools/tests/mcp/python.rs"]
mod mcp_python_sdk;

use mcp_python_sdk::mcp_python as python;

const MCP_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../agent-tools/tests/mcp");

fn llm_run(s: &Scratch, model: &FakeModel, extra: &[&str]) -> common::Run {
    let mut args = vec![
        "run",
        "react",
        "what is 19 + 23?",
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

/// The tool messages of a `--json` report's state.
fn tool_messages(report: &Value) -> Vec<Value> {
    report["state"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["type"] == "tool")
        .cloned()
        .collect()
}

#[test]
fn the_react_flow_calls_a_tool_of_an_mcp_server() {
    let Some(python) = python() else { return };
    let s = Scratch::new("mcp-react");
    let model = FakeModel::start("add", json!({"a": 19, "b": 23}));
    let server = format!("{python} {MCP_DIR}/server.py");
    let out = llm_run(&s, &model, &["--mcp", &server]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    let tools = tool_messages(&report);
    assert_eq!(tools.len(), 1, "{report:#}");
    assert_eq!(tools[0]["content"], "42");
    assert!(
        report["response"]
            .as_str()
            .unwrap()
            .starts_with("The result is 42."),
        "{report:#}"
    );
    // The model was offered the server's tools with their schemas, beside the flow's own.
    let first = &model.requests()[0];
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for name in ["echo", "calculator", "datetime", "add", "greet", "slow"] {
        assert!(offered.contains(&name), "{name} not in {offered:?}");
    }
    let add = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "add")
        .unwrap();
    assert_eq!(add["function"]["parameters"]["required"], json!(["a", "b"]));

    // The same server from an mcpServers file, and an error result reaching the model.
    let file = s.path("mcp.json");
    std::fs::write(
        &file,
        json!({"mcpServers": {"math": {"command": python, "args": [format!("{MCP_DIR}/server.py")]}}})
            .to_string(),
    )
    .unwrap();
    let failing = FakeModel::start("fail", json!({"reason": "no luck"}));
    let out = llm_run(&s, &failing, &["--mcp-config", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    let tools = tool_messages(&report);
    assert_eq!(tools.len(), 1, "{report:#}");
    assert!(
        tools[0]["content"]
            .as_str()
            .unwrap()
            .contains("failed on purpose: no luck"),
        "{report:#}"
    );

    // A flow that takes no tools says so.
    let out = run(s.agent(&["run", "tool-router", "time in Oslo", "--mcp", &server]));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("takes no tools from outside"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_mcp_server_that_cannot_start_is_a_clear_error() {
    let s = Scratch::new("mcp-missing");
    let out = run(s.agent(&[
        "run",
        "react",
        "hello",
        "--mcp",
        "agentgraph-no-such-program --port 1",
    ]));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "cannot start MCP server `agentgraph-no-such-program` (`agentgraph-no-such-program --port 1`)"
        ),
        "{}",
        out.stderr
    );
    let out = run(s.agent(&["run", "react", "hello", "--mcp", "python 'unclosed"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("a quote is not closed"),
        "{}",
        out.stderr
    );
    let out = run(s.agent(&[
        "run",
        "react",
        "hello",
        "--mcp-config",
        "/nonexistent/mcp.json",
    ]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("cannot read the MCP configuration /nonexistent/mcp.json"),
        "{}",
        out.stderr
    );
}
