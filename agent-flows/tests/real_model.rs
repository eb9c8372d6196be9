//! Each flow once end to end on a real model: SmolLM2-135M on llama-server (OpenAI-compatible,
//! JSON-schema constrained output), through the `agent` binary and `--model openai:...`, as a
//! user switches to a server. Asserts the shape of the run, never the wording: a 135M model
//! answers badly, but every decision must parse and every path must be one the seed allows.
//! Needs `LLAMA_SERVER_URL` (`.ci/services/llm.sh`); skipped without it outside CI.

mod common;

use common::{Scratch, run, service_url};
use serde_json::Value;

fn agent_on_llama(s: &Scratch, url: &str, args: &[&str]) -> common::Run {
    let mut cmd = s.agent(args);
    cmd.args(["--model", "openai:smollm2-135m", "--json"])
        .env("OPENAI_BASE_URL", url)
        .env_remove("OPENAI_API_KEY");
    run(cmd)
}

#[test]
fn tool_router_on_a_real_model() {
    let Some(url) = service_url("LLAMA_SERVER_URL") else {
        return;
    };
    let s = Scratch::new("llama-tool-router");
    let out = agent_on_llama(
        &s,
        &url,
        &["run", "tool-router", "What time is it in Tokyo?"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    let path: Vec<Vec<String>> = serde_json::from_value(report["path"].clone()).unwrap();
    let direct = vec![vec!["router".to_owned()], vec!["generator".to_owned()]];
    let with_tools = vec![
        vec!["router".to_owned()],
        vec!["tool_executor".to_owned()],
        vec!["generator".to_owned()],
    ];
    assert!(path == direct || path == with_tools, "path {path:?}");
    let state = &report["state"];
    let selected = state["selected_tools"].as_array().unwrap();
    assert_eq!(path == with_tools, !selected.is_empty());
    // Every planned call has its own id and object arguments; every call got a result.
    for (position, tool) in selected.iter().enumerate() {
        let id = format!("{}_{position}", tool.as_str().unwrap());
        assert!(state["tool_args"][&id].is_object() || state["tool_args"][&id].is_null());
        let result = &state["tool_results"][&id];
        assert!(
            result.get("output").is_some() || result.get("error").is_some(),
            "{result}"
        );
    }
    assert!(!report["response"].as_str().unwrap().trim().is_empty());
    assert!(report["usage"]["input_tokens"].as_u64().unwrap_or(0) > 0);
    assert_eq!(state["messages"].as_array().map(Vec::len), Some(2));
    let _: &Value = &report["thread_id"];
}

#[test]
fn data_on_a_real_model() {
    let Some(url) = service_url("LLAMA_SERVER_URL") else {
        return;
    };
    let s = Scratch::new("llama-data");
    let out = agent_on_llama(
        &s,
        &url,
        &[
            "run",
            "data",
            "What was the average unemployment rate in 2008?",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    let path: Vec<Vec<String>> = serde_json::from_value(report["path"].clone()).unwrap();
    let nodes = |names: &[&str]| -> Vec<Vec<String>> {
        names.iter().map(|n| vec![(*n).to_owned()]).collect()
    };
    let data_path = nodes(&["intent", "parser", "planner", "executor"]);
    let end_path = nodes(&["intent", "end"]);
    assert!(path == data_path || path == end_path, "path {path:?}");
    let state = &report["state"];
    let intent = state["intent"].as_str().unwrap();
    assert!(
        ["data", "chitchat", "concept"].contains(&intent),
        "{intent}"
    );
    assert_eq!(path == data_path, intent == "data");
    assert!(["ru", "en"].contains(&state["lang"].as_str().unwrap()));
    if path == data_path {
        // Every step parsed into atoms; every request the planner made ran, and whatever it
        // refused is a plan error, not a crash.
        for step in state["parsed_query"].as_array().unwrap() {
            assert!(step["atoms"].is_array(), "{step}");
        }
        let plan = state["execution_plan"].as_array().unwrap();
        let results = state["data"].as_array().unwrap();
        assert_eq!(plan.len(), results.len());
        assert!(!plan.is_empty() || !state["plan_errors"].as_array().unwrap().is_empty());
        for result in results {
            assert!(
                result["rows"].is_array() || result["error"].is_string(),
                "{result}"
            );
        }
    }
    assert!(!report["response"].as_str().unwrap().trim().is_empty());
    // Usage of the real model, per node and per model, the same as the run's counters (a
    // parse that never fitted still spent its tokens, booked to `parser`).
    let usage = &state["usage"];
    assert!(
        usage["by_node"]["intent"]["input_tokens"]
            .as_u64()
            .unwrap_or(0)
            > 0
    );
    assert_eq!(
        usage["by_node"].as_object().map(|m| m.len()),
        Some(2),
        "{usage}"
    );
    assert_eq!(
        usage["by_model"].as_object().map(|m| m.len()),
        Some(1),
        "{usage}"
    );
    assert_eq!(usage["by_model"]["smollm2-135m"]["calls"], 2, "{usage}");
    assert_eq!(
        usage["total"]["input_tokens"],
        report["usage"]["input_tokens"]
    );
    assert_eq!(
        usage["total"]["output_tokens"],
        report["usage"]["output_tokens"]
    );
}
