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
    // The chat: the question, then (with tools) an AI message with a call per selected tool
    // and a tool message per call, then the answer.
    let messages = state["messages"].as_array().unwrap();
    let calls = if selected.is_empty() {
        0
    } else {
        1 + selected.len()
    };
    assert_eq!(messages.len(), 2 + calls, "{messages:?}");
    assert_eq!(messages[0]["type"], "human");
    assert_eq!(messages[messages.len() - 1]["type"], "ai");
    if calls > 0 {
        let asked = messages[1]["tool_calls"].as_array().map(Vec::len);
        assert_eq!(asked, Some(selected.len()), "{messages:?}");
    }
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

/// The `react` flow in llm mode and agent-tools' prebuilt ReAct agent, each once on the real
/// model. SmolLM2-135M produces tool calls that llama-server can parse only under a grammar,
/// so both ask for `tool_choice: required` while a tool round is left (the flow's option,
/// the model's bound options for the prebuilt); the flow then asks for an answer with
/// `tool_choice: none`. Four model calls of at most 48 tokens.
#[test]
fn react_and_the_prebuilt_agent_on_a_real_model() {
    use std::time::Duration;

    use agent_core::RunConfig;
    use agent_llm::{
        CallOptions, ChatModelExt, Message, OpenAiCompatible, RetryPolicy, Timeouts, ToolChoice,
    };
    use agent_tools::ToolRegistry;
    use agent_tools::builtin::Echo;
    use agent_tools::prebuilt::{AgentState, NEED_MORE_STEPS, create_react_agent};

    let Some(url) = service_url("LLAMA_SERVER_URL") else {
        return;
    };
    let _server = one_at_a_time();

    // The flow, through the binary.
    let s = Scratch::new("llama-react");
    let out = agent_on_llama(
        &s,
        &url,
        &[
            "run",
            "react",
            "--mode",
            "llm",
            "--set",
            "tool_choice=required",
            "--set",
            "max_tokens=48",
            "Repeat: hello world",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    let path: Vec<String> = serde_json::from_value::<Vec<Vec<String>>>(report["path"].clone())
        .unwrap()
        .concat();
    let with_tools = [
        "planner",
        "model",
        "tools",
        "model",
        "sync",
        "critic",
        "finalizer",
    ];
    let closed = ["planner", "model", "sync", "critic", "finalizer"];
    assert!(path == with_tools || path == closed, "path {path:?}");
    let state = &report["state"];
    let stop = state["stop"].as_str().unwrap();
    assert!(
        ["answered", "tool_call_cap", "repeated_call", "tool_rounds"].contains(&stop),
        "{stop}"
    );
    assert_eq!(
        path == with_tools,
        !state["calls"].as_array().unwrap().is_empty()
    );
    // Every call the model asked for is answered (run, or refused by a guard).
    let messages = state["messages"].as_array().unwrap();
    let asked: Vec<&str> = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let answered: Vec<&str> = messages
        .iter()
        .filter(|m| m["type"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(asked, answered);
    assert!(
        !asked.is_empty(),
        "tool_choice=required: the model called a tool"
    );
    for call in state["calls"].as_array().unwrap() {
        let key = call["key"].as_str().unwrap();
        let artifact = &state["artifacts"][key];
        assert!(
            artifact.get("output").is_some() || artifact.get("error").is_some(),
            "{key}: {artifact}"
        );
    }
    let block = &state["final_block"];
    assert!(!block["summary"].as_str().unwrap().trim().is_empty());
    let confidence = block["confidence"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&confidence), "{confidence}");
    assert!(report["usage"]["input_tokens"].as_u64().unwrap_or(0) > 0);

    // The prebuilt agent, in-process, on the same server.
    let model = OpenAiCompatible::builder()
        .base_url(&url)
        .model("smollm2-135m")
        .retry(
            RetryPolicy::new()
                .max_attempts(2)
                .initial_interval(Duration::from_millis(100)),
        )
        .timeouts(Timeouts {
            connect: Duration::from_secs(5),
            request: Duration::from_secs(600),
            stream_idle: Duration::from_secs(600),
        })
        .build()
        .unwrap()
        .bind(
            CallOptions::new()
                .max_tokens(48)
                .temperature(0.0)
                .tool_choice(ToolChoice::Required),
        );
    let agent = create_react_agent(model, ToolRegistry::new().with_tool(Echo).unwrap())
        .prompt("Call echo to repeat what the user asks you to repeat.")
        .max_steps(2)
        .build()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let out = runtime
        .block_on(agent.invoke(
            AgentState::user("Repeat: hello world"),
            RunConfig::default(),
        ))
        .unwrap();
    // A tool call (the grammar makes it one), its answer, then the step limit's message:
    // a second required call would ask for tools with no step left to read them.
    assert_eq!(
        out.path.to_vec().concat(),
        ["agent", "tools", "agent"],
        "{:?}",
        out.messages
    );
    let kinds: Vec<&str> = out.messages.iter().map(Message::kind).collect();
    assert_eq!(kinds, ["human", "ai", "tool", "ai"]);
    let call = &out.messages[1].tool_calls()[0];
    assert_eq!(call.name, "echo");
    assert!(call.args.is_object(), "{:?}", call.args);
    assert_eq!(out.answer(), Some(NEED_MORE_STEPS));
    assert!(out.usage.get("input_tokens").copied().unwrap_or(0) > 0);
}
