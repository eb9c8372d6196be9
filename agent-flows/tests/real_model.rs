//! Each flow once end to end on a real model: SmolLM2-135M on llama-server (OpenAI-compatible,
//! JSON-schema constrained output), through the `agent` binary and `--model openai:...`, as a
//! user switches to a server. Asserts the shape of the run, never the wording: a 135M model
//! answers badly, but every decision must parse and every path must be one the seed allows.
//! Needs `LLAMA_SERVER_URL` (`.ci/services/llm.sh`); skipped without it outside CI.

mod common;

use common::{Scratch, run, service_url};
use serde_json::Value;

/// One test at a time on the server: llama-server has one slot, and two tests' calls queued
/// behind each other on a busy machine can outlast a request's timeout.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static SERVER: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERVER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

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
    let _server = one_at_a_time();
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
fn form_on_a_real_model() {
    let Some(url) = service_url("LLAMA_SERVER_URL") else {
        return;
    };
    let _server = one_at_a_time();
    let s = Scratch::new("llama-form");
    let step = |names: &[&str]| -> Vec<Vec<String>> {
        names.iter().map(|n| vec![(*n).to_owned()]).collect()
    };
    let escalated = step(&["check_escalation", "escalate"]);
    let asked = step(&[
        "check_escalation",
        "check_correction",
        "check_off_topic",
        "extract_field",
        "validate",
        "prompt_next",
    ]);
    let completed = step(&[
        "check_escalation",
        "check_correction",
        "check_off_topic",
        "extract_field",
        "validate",
        "complete",
    ]);
    // Two turns in two processes on one thread: llm_intent and extraction each turn, the
    // thanks of `complete` at the end (five small calls at most).
    let mut status = String::new();
    for message in ["Mi nombre es Juan", "juan@ejemplo.com"] {
        let out = agent_on_llama(&s, &url, &["run", "form", message, "--thread", "real"]);
        assert_eq!(out.code, 0, "{message}: {}", out.stderr);
        let report = out.json();
        let path: Vec<Vec<String>> = serde_json::from_value(report["path"].clone()).unwrap();
        let state = &report["state"];
        let conversation = &state["conversation"];
        if status == "escalated" {
            assert_eq!(path, escalated, "an escalated conversation stays so");
            break;
        }
        assert!(
            path == escalated || path == asked || path == completed,
            "{message}: path {path:?}"
        );
        // The state agrees with the path the model's decisions took.
        if path == escalated {
            assert_eq!(conversation["status"], "escalated");
            assert_eq!(conversation["escalation"]["policy"], "llm_intent");
        } else {
            let field = state["current_field"].as_str().unwrap();
            let stored = conversation["values"].get(field).is_some();
            assert_eq!(state["is_valid"].as_bool(), Some(stored), "{state}");
            if stored {
                assert_eq!(conversation["values"][field], state["extracted_value"]);
            }
            assert_eq!(path == completed, conversation["status"] == "completed");
        }
        assert!(!report["response"].as_str().unwrap().trim().is_empty());
        assert!(report["usage"]["input_tokens"].as_u64().unwrap_or(0) > 0);
        status = conversation["status"].as_str().unwrap().to_owned();
    }
}

#[test]
fn orchestrator_on_a_real_model() {
    let Some(url) = service_url("LLAMA_SERVER_URL") else {
        return;
    };
    let _server = one_at_a_time();
    let s = Scratch::new("llama-orchestrator");
    // The JSON planner (grammar-constrained, bounded) and no re-plan: two model calls.
    let out = agent_on_llama(
        &s,
        &url,
        &[
            "run",
            "orchestrator",
            "What was the unemployment rate in 2008?",
            "--set",
            "planner=json",
            "--set",
            "max_retries=0",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    let path: Vec<String> = serde_json::from_value::<Vec<Vec<String>>>(report["path"].clone())
        .unwrap()
        .concat();
    let direct = ["ingress", "planner", "generator", "summarizer"];
    let with_tools = [
        "ingress",
        "planner",
        "tool_router",
        "tool_executor",
        "verifier",
        "generator",
        "summarizer",
    ];
    assert!(path == direct || path == with_tools, "path {path:?}");
    let state = &report["state"];
    assert_eq!(state["phase"], "done");
    assert_eq!(state["safety_check"]["safe"], true);
    let calls = state["tool_calls"].as_array().unwrap();
    assert_eq!(path == with_tools, !calls.is_empty());
    assert_eq!(
        state["next_step"],
        if calls.is_empty() {
            "generate"
        } else {
            "tool_use"
        }
    );
    // Every planned call was routed and has a result: an output or a reason.
    for call in calls {
        let id = call["id"].as_str().unwrap();
        assert!(id.starts_with("call_"), "{call}");
        let route = state["routes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no route for {id}"));
        let record = &state["scratchpad"][id];
        assert!(
            ["ok", "empty", "error"].contains(&record["status"].as_str().unwrap()),
            "{record}"
        );
        if route["allowed"] == false {
            assert_eq!(record["status"], "error");
        }
    }
    if !calls.is_empty() {
        let verdict = state["verification"]["verdict"].as_str().unwrap();
        assert!(
            ["success", "clarify", "give_up"].contains(&verdict),
            "{verdict}"
        );
    }
    assert!(!report["response"].as_str().unwrap().trim().is_empty());
    let usage = report["usage"]["input_tokens"].as_u64().unwrap_or(0)
        + report["usage"]["output_tokens"].as_u64().unwrap_or(0);
    assert!(usage > 0);
    assert_eq!(state["tokens_used"].as_u64(), Some(usage));
    assert!(
        state["summary"]
            .as_str()
            .unwrap()
            .starts_with("Turn 1 (en): asked «What was the unemployment rate in 2008?»")
    );
}

#[test]
fn data_on_a_real_model() {
    let Some(url) = service_url("LLAMA_SERVER_URL") else {
        return;
    };
    let _server = one_at_a_time();
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
