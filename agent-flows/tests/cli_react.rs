//! `agent run react` as a user runs it: both modes, the echo fallback by flag and by
//! environment, options checked with clear errors, a conversation continued by a second
//! process, and structured logs with a span per node and nothing private in them.

mod common;

use common::{Scratch, run};
use serde_json::Value;

fn path(report: &Value) -> Vec<String> {
    report["path"]
        .as_array()
        .expect("a path")
        .iter()
        .flat_map(|step| step.as_array().expect("a step").iter())
        .map(|n| n.as_str().expect("a node name").to_owned())
        .collect()
}

const STATIC_ECHO: [&str; 7] = [
    "planner",
    "reasoner",
    "tool_selector",
    "tool_executor",
    "reasoner",
    "critic",
    "finalizer",
];
const LLM_ECHO: [&str; 7] = [
    "planner",
    "model",
    "tools",
    "model",
    "sync",
    "critic",
    "finalizer",
];
const LLM_FALLBACK: [&str; 6] = [
    "planner",
    "model",
    "fallback",
    "sync",
    "critic",
    "finalizer",
];

#[test]
fn both_modes_and_the_fallback() {
    let s = Scratch::new("react-modes");
    let out = run(s.agent(&["run", "react", "Repite: hola mundo"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "Eco: hola mundo\n[evidence: echo_1; confidence 0.80]\n"
    );

    let out = run(s.agent(&["run", "react", "Repite: hola mundo", "--json"]));
    let report = out.json();
    assert_eq!(path(&report), STATIC_ECHO);
    assert_eq!(report["state"]["mode"], "static");
    assert_eq!(report["state"]["final_block"]["evidence_keys"][0], "echo_1");

    let out = run(s.agent(&["run", "react", "--mode", "llm", "echo hi", "--json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    assert_eq!(path(&report), LLM_ECHO);
    assert!(report["usage"]["input_tokens"].as_u64().unwrap() > 0);

    // The flag before the message does not swallow it.
    let out = run(s.agent(&[
        "run",
        "react",
        "--mode",
        "llm",
        "--llm-fallback",
        "echo hi",
        "--json",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(path(&out.json()), LLM_FALLBACK);

    let mut cmd = s.agent(&["run", "react", "--mode", "llm", "echo hi", "--json"]);
    cmd.env("LLM_FALLBACK", "1");
    let out = run(cmd);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    assert_eq!(path(&report), LLM_FALLBACK);
    assert_eq!(report["state"]["stop"], "fallback");

    let mut cmd = s.agent(&[
        "run",
        "react",
        "--mode",
        "llm",
        "--llm-fallback=false",
        "echo hi",
        "--json",
    ]);
    cmd.env("LLM_FALLBACK", "1");
    let out = run(cmd);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        path(&out.json()),
        LLM_ECHO,
        "the flag wins over the environment"
    );
}

#[test]
fn guards_are_options_and_bad_values_are_refused() {
    let s = Scratch::new("react-options");
    let out = run(s.agent(&[
        "run",
        "react",
        "What is 2+2, and what time is it in Lima?",
        "--set",
        "max_steps=2",
        "--json",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    assert_eq!(report["state"]["stop"], "step_limit");
    assert!(
        report["response"]
            .as_str()
            .unwrap()
            .contains("I stopped at the step limit (2 steps)."),
        "{}",
        report["response"]
    );

    for (set, expected) in [
        (
            "max_steps=0",
            "flow `react`: option `max_steps`: 0 is out of range; it must be between 1 and 8",
        ),
        (
            "max_steps=9",
            "flow `react`: option `max_steps`: 9 is out of range; it must be between 1 and 8",
        ),
        (
            "max_tool_calls=lots",
            "option `max_tool_calls`: `lots` is not a whole number",
        ),
        ("mode=fast", "option `mode`: `fast` is not a mode"),
        ("colour=blue", "option `colour`: not an option of this flow"),
    ] {
        let out = run(s.agent(&["run", "react", "echo hi", "--set", set]));
        assert_eq!(out.code, 1, "{set}: {}", out.stderr);
        assert!(out.stderr.contains(expected), "{set}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{set}");
    }
    let long = "x".repeat(4001);
    let out = run(s.agent(&["run", "react", &long]));
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("invalid input: field `user_query`: it has 4001 characters"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_second_process_continues_the_conversation() {
    let s = Scratch::new("react-thread");
    let first = run(s.agent(&[
        "run",
        "react",
        "--mode",
        "llm",
        "¿Cuánto es 15 por 3?",
        "--thread",
        "r1",
    ]));
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first.stdout.starts_with("15 * 3 = 45\n"),
        "{}",
        first.stdout
    );
    let second = run(s.agent(&[
        "run",
        "react",
        "--mode",
        "llm",
        "Y repite: gracias",
        "--thread",
        "r1",
        "--json",
    ]));
    assert_eq!(second.code, 0, "{}", second.stderr);
    let report = second.json();
    assert_eq!(report["thread_id"], "r1");
    let messages = report["state"]["messages"].as_array().unwrap();
    let kinds: Vec<&str> = messages
        .iter()
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    // The system hint opens every model call without being kept: the chat is what was said.
    assert_eq!(
        kinds,
        ["human", "ai", "tool", "ai", "human", "ai", "tool", "ai"]
    );
    assert_eq!(messages[0]["content"], "¿Cuánto es 15 por 3?");
    assert!(
        report["response"]
            .as_str()
            .unwrap()
            .starts_with("Eco: gracias")
    );
    // Per-turn fields start over.
    assert_eq!(report["state"]["artifacts"].as_object().unwrap().len(), 1);
    assert_eq!(report["state"]["calls"].as_array().unwrap().len(), 1);
}

#[test]
fn json_logs_have_a_span_per_node_and_nothing_private() {
    let s = Scratch::new("react-logs");
    let secret = "sk-test-secret-4242";
    let email = "ana.garcia@example.com";
    let phone = "+34 600 123 456";
    let query = format!("echo my email is {email}, phone {phone}");
    for mode in ["static", "llm"] {
        let mut cmd = s.agent(&[
            "--log-format",
            "json",
            "run",
            "react",
            "--mode",
            mode,
            &query,
            "--json",
        ]);
        cmd.env("OPENAI_API_KEY", secret).env(
            "RUST_LOG",
            "agent_flows=debug,agent_core=debug,agent_tools=debug,agent_llm=debug",
        );
        let out = run(cmd);
        assert_eq!(out.code, 0, "{mode}: {}", out.stderr);
        let report = out.json();
        // The answer does hold the echo: it is output, not a log.
        assert!(report["response"].as_str().unwrap().contains(email));

        let lines: Vec<Value> = out
            .stderr
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{mode}: {e}: {l}")))
            .collect();
        let finished: Vec<&Value> = lines
            .iter()
            .filter(|l| l["fields"]["message"] == "react node finished")
            .collect();
        let nodes: Vec<&str> = finished
            .iter()
            .map(|l| l["fields"]["node"].as_str().unwrap())
            .collect();
        assert_eq!(nodes, path(&report), "{mode}: one finished event per node");
        for line in &finished {
            assert!(line["fields"]["step"].is_u64(), "{line}");
            assert!(line["fields"]["duration_ms"].is_f64(), "{line}");
            assert_eq!(line["span"]["name"], "react_node", "{line}");
            assert_eq!(line["span"]["mode"], mode, "{line}");
        }
        // Tool calls are logged, their text masked.
        assert!(
            out.stderr.contains("tool call started") && out.stderr.contains("[REDACTED]"),
            "{mode}: {}",
            out.stderr
        );
        for private in [secret, email, phone, "600 123", "ana.garcia"] {
            assert!(
                !out.stderr.contains(private),
                "{mode}: `{private}` reached the logs:\n{}",
                out.stderr
            );
        }
    }
}

#[test]
fn the_graph_shows_both_modes_and_list_the_options() {
    let s = Scratch::new("react-graph");
    let out = run(s.agent(&["graph", "react", "--ascii"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    for edge in [
        "planner -.-> reasoner  [if static]",
        "planner -.-> model  [if llm]",
        "model -.-> fallback  [if fallback]",
        "model -.-> tools  [if tools]",
        "tool_selector -.-> tool_executor  [if execute]",
    ] {
        assert!(out.stdout.contains(edge), "{edge}:\n{}", out.stdout);
    }
    let out = run(s.agent(&["list"]));
    for option in [
        "--set mode=",
        "--set llm_fallback=",
        "--set max_steps=",
        "--set max_tool_calls=",
        "--set max_tool_rounds=",
    ] {
        assert!(out.stdout.contains(option), "{option}: {}", out.stdout);
    }
}
