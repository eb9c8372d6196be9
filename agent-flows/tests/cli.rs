//! The `agent` program as a user runs it: the built binary, its output and exit codes.

mod common;

use common::{Scratch, run, run_with_stdin};
use serde_json::Value;

#[test]
fn list_names_every_flow() {
    let s = Scratch::new("list");
    let out = run(s.agent(&["list"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    for flow in agent_flows::FLOWS {
        let info = flow.info();
        assert!(out.stdout.contains(info.name), "{}", out.stdout);
        assert!(out.stdout.contains(info.summary), "{}", out.stdout);
    }
    let out = run(s.agent(&["list", "--json"]));
    let first: Value = serde_json::from_str(out.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(first["name"], "tool-router");
    // Each option says who may set it when the flow is served.
    let orchestrator: Value = serde_json::from_str(out.stdout.lines().nth(2).unwrap()).unwrap();
    let access = |key: &str| {
        orchestrator["options"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["key"] == key)
            .unwrap()["access"]
            .clone()
    };
    assert_eq!(access("user")["kind"], "identity");
    assert_eq!(access("profiles")["kind"], "operator");
    assert_eq!(access("planner")["kind"], "client");
    assert_eq!(access("max_input_chars")["default"], 4000);
    assert!(
        access("max_retries")["who"]
            .as_str()
            .unwrap()
            .contains("a request may lower it")
    );
}

/// Whether `line` tells the time in `city` in Spanish: "En Lima son las 16:10 ..." or, in the
/// one o'clock hour, "En Lima es la 1:10 ..." (the real clock decides which).
fn tells_time(line: &str, city: &str) -> bool {
    line.starts_with(&format!("En {city} son las "))
        || line.starts_with(&format!("En {city} es la 1:"))
}

#[test]
fn run_answers_in_spanish_and_english_offline() {
    let s = Scratch::new("run");
    let out = run(s.agent(&["run", "tool-router", "¿Qué hora es en Tokio y Londres?"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    assert!(tells_time(lines[0], "Tokio"), "{}", out.stdout);
    assert!(tells_time(lines[1], "Londres"), "{}", out.stdout);
    assert!(!out.stdout.contains('\u{1b}'), "no colour into a pipe");

    let out = run(s.agent(&["run", "tool-router", "What time is it in New York?"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("In New York it is"),
        "{}",
        out.stdout
    );
}

#[test]
fn run_json_prints_one_object() {
    let s = Scratch::new("json");
    let out = run(s.agent(&[
        "run",
        "tool-router",
        "What time is it in New York?",
        "--json",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    assert_eq!(report["flow"], "tool-router");
    assert_eq!(report["thread_id"], Value::Null);
    assert_eq!(
        report["path"],
        serde_json::json!([["router"], ["tool_executor"], ["generator"]])
    );
    assert_eq!(
        report["state"]["selected_tools"],
        serde_json::json!(["datetime"])
    );
    assert_eq!(
        report["state"]["tool_args"]["datetime_0"]["timezone"],
        "America/New_York"
    );
    assert_eq!(report["response"], report["state"]["response"]);
    assert!(report["usage"]["input_tokens"].as_u64().unwrap() > 0);
    assert!(report["usage"]["output_tokens"].as_u64().unwrap() > 0);
}

#[test]
fn the_message_can_come_from_stdin() {
    let s = Scratch::new("stdin");
    let out = run_with_stdin(
        s.agent(&["run", "tool-router"]),
        "Который час в Москве?\n".as_bytes(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("В Москве сейчас"), "{}", out.stdout);
}

#[test]
fn stream_modes_show_the_run_live() {
    let s = Scratch::new("stream");
    let out = run(s.agent(&["run", "tool-router", "time in Tokyo", "--stream", "updates"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let nodes: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.split(' ').next())
        .collect();
    assert_eq!(
        &nodes[..3],
        ["router", "tool_executor", "generator"],
        "{}",
        out.stdout
    );

    let out = run(s.agent(&[
        "run",
        "tool-router",
        "time in Tokyo",
        "--stream",
        "messages",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("generator › In Tokyo it is"),
        "{}",
        out.stdout
    );
    // The answer came as tokens; it is not printed a second time.
    assert_eq!(
        out.stdout.matches("In Tokyo it is").count(),
        1,
        "{}",
        out.stdout
    );

    let out = run(s.agent(&[
        "run",
        "tool-router",
        "time in Tokyo",
        "--stream",
        "events",
        "--json",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let events: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["event"]["event"].as_str())
        .collect();
    for expected in [
        "on_chain_start",
        "on_chat_model_start",
        "on_chat_model_stream",
        "on_tool_start",
        "on_tool_end",
        "on_chain_end",
    ] {
        assert!(
            events.contains(&expected),
            "{expected} missing from {events:?}"
        );
    }
    // The last line is the turn's result.
    assert_eq!(lines.last().unwrap()["flow"], "tool-router");
}

#[test]
fn a_thread_continues_in_a_second_process() {
    let s = Scratch::new("thread");
    let db = s.path("custom.sqlite");
    let db = db.to_str().unwrap();
    let first = run(s.agent(&["run", "tool-router", "Hola", "--thread", "t1", "--db", db]));
    assert_eq!(first.code, 0, "{}", first.stderr);
    let second = run(s.agent(&[
        "run",
        "tool-router",
        "¿Y qué hora es en Madrid?",
        "--thread",
        "t1",
        "--db",
        db,
        "--json",
    ]));
    assert_eq!(second.code, 0, "{}", second.stderr);
    let report = second.json();
    assert_eq!(report["thread_id"], "t1");
    let messages = report["state"]["messages"].as_array().unwrap();
    let kinds: Vec<&str> = messages
        .iter()
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    // Both turns are on the thread, the second's tool call and result too.
    assert_eq!(kinds, ["human", "ai", "human", "ai", "tool", "ai"]);
    assert_eq!(messages[0]["content"], "Hola");
    assert_eq!(
        messages[4]["tool_call_id"],
        messages[3]["tool_calls"][0]["id"]
    );
    assert!(tells_time(report["response"].as_str().unwrap(), "Madrid"));
    // The results of the first turn do not leak into the second.
    assert_eq!(
        report["state"]["tool_results"].as_object().unwrap().len(),
        1
    );

    // AGENTGRAPH_DB is the default store: a thread there is separate from --db's.
    let other = run(s.agent(&["run", "tool-router", "hi", "--thread", "t1", "--json"]));
    assert_eq!(
        other.json()["state"]["messages"].as_array().unwrap().len(),
        2
    );
    assert!(s.path("threads.sqlite").exists());
}

#[test]
fn chat_reads_a_turn_per_line_on_a_thread() {
    let s = Scratch::new("chat");
    let out = run_with_stdin(
        s.agent(&["chat", "tool-router", "--thread", "c1"]),
        "Hola\n\n¿Qué hora es en Lima?\n/exit\n".as_bytes(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("¡Hola! Puedo decirte la hora"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.lines().any(|l| tells_time(l, "Lima")),
        "{}",
        out.stdout
    );
    assert!(out.stderr.contains("thread c1"), "{}", out.stderr);
    let after = run(s.agent(&["run", "tool-router", "gracias", "--thread", "c1", "--json"]));
    // Three turns, the second with its tool call and result.
    assert_eq!(
        after.json()["state"]["messages"].as_array().unwrap().len(),
        8
    );
}

#[test]
fn graph_prints_mermaid_or_ascii() {
    let s = Scratch::new("graph");
    let out = run(s.agent(&["graph", "tool-router"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("graph TD;"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("router -. &nbsp;tools&nbsp; .-> tool_executor;")
    );
    let out = run(s.agent(&["graph", "tool-router", "--ascii"]));
    assert!(
        out.stdout.contains("router -.-> tool_executor  [if tools]"),
        "{}",
        out.stdout
    );
}

#[test]
fn help_and_version_work_everywhere() {
    let s = Scratch::new("help");
    for args in [
        vec!["--help"],
        vec!["--version"],
        vec!["run", "--help"],
        vec!["chat", "--help"],
        vec!["list", "--help"],
        vec!["graph", "--help"],
    ] {
        let out = run(s.agent(&args));
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        assert!(!out.stdout.is_empty(), "{args:?}");
    }
    let out = run(s.agent(&["--version"]));
    assert!(out.stdout.starts_with("agent "), "{}", out.stdout);
    // --help is never sent to a flow as a question.
    let out = run(s.agent(&["run", "tool-router", "--help"]));
    assert!(out.stdout.contains("Usage: agent run"), "{}", out.stdout);
}

#[test]
fn usage_errors_exit_2_with_a_clear_message() {
    let s = Scratch::new("usage");
    let out = run(s.agent(&["run", "nope", "hi"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("unknown flow `nope`; known flows: tool-router"),
        "{}",
        out.stderr
    );

    let out = run(s.agent(&["run", "tool-router", "hi", "--stream", "sideways"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("invalid value 'sideways'"),
        "{}",
        out.stderr
    );

    let out = run(s.agent(&[]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("Usage: agent"), "{}", out.stderr);

    // A message that is not UTF-8 is not a usage error but a runtime one (exit 1, as on
    // standard input): see `cli_hostile.rs`.
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let mut cmd = s.agent(&["run", "tool-router"]);
        cmd.arg(std::ffi::OsStr::from_bytes(b"\xff\xfe"));
        let out = run(cmd);
        assert_eq!(out.code, 1, "{}", out.stderr);
        assert!(out.stderr.contains("not UTF-8 text"), "{}", out.stderr);
    }
}

#[test]
fn runtime_errors_exit_1_with_the_cause_and_no_panic() {
    let s = Scratch::new("runtime");
    let out = run_with_stdin(s.agent(&["run", "tool-router"]), b"\xff\xfe what time");
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("not UTF-8"), "{}", out.stderr);

    let out = run(s.agent(&["run", "tool-router", "   "]));
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("the message is empty"),
        "{}",
        out.stderr
    );

    let out = run(s.agent(&["run", "tool-router", "hi", "--model", "gemini-pro"]));
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("expected `provider:model`"),
        "{}",
        out.stderr
    );

    let out = run(s.agent(&["run", "tool-router", "hi", "--set", "colour=blue"]));
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("option `colour`"), "{}", out.stderr);

    // A provider that cannot be reached: the error and its cause, no Debug dump, no panic.
    let mut cmd = s.agent(&[
        "run",
        "tool-router",
        "time in Oslo",
        "--model",
        "openai:gpt-test",
    ]);
    cmd.env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .env("OPENAI_API_KEY", "sk-test-secret");
    let out = run(cmd);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("error: node `router`"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert!(!out.stderr.contains("sk-test-secret"), "{}", out.stderr);
    assert!(
        !out.stderr.contains(" { "),
        "no Debug output: {}",
        out.stderr
    );

    let out = run(s.agent(&[
        "run",
        "tool-router",
        "hi",
        "--thread",
        "x",
        "--db",
        "/proc/nope/threads.sqlite",
    ]));
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("thread store"), "{}", out.stderr);
}

#[test]
fn threads_can_live_in_postgres() {
    let Some(url) = common::service_url("AGENTGRAPH_POSTGRES_URL") else {
        return;
    };
    let s = Scratch::new("postgres");
    let thread = format!("cli-pg-{}", std::process::id());
    let first = run(s.agent(&[
        "run",
        "tool-router",
        "hello",
        "--thread",
        &thread,
        "--db",
        &url,
    ]));
    assert_eq!(first.code, 0, "{}", first.stderr);
    let mut cmd = s.agent(&[
        "run",
        "tool-router",
        "time in Lima?",
        "--thread",
        &thread,
        "--json",
    ]);
    cmd.env("AGENTGRAPH_DB", &url);
    let second = run(cmd);
    assert_eq!(second.code, 0, "{}", second.stderr);
    // Both turns are in the thread: "hello" and its answer, then the question, the tool call
    // (an AI message with tool_calls and the tool's message) and the answer.
    let messages = second.json()["state"]["messages"].clone();
    assert_eq!(messages.as_array().unwrap().len(), 6, "{messages}");
    assert!(
        messages[0]["content"].to_string().contains("hello"),
        "{messages}"
    );
    assert!(
        messages[2]["content"].to_string().contains("Lima"),
        "{messages}"
    );
    assert!(!s.path("threads.sqlite").exists(), "nothing went to SQLite");
}
