//! The orchestrator's `astream_events` v2 stream against the seed's event table: which events
//! each node emits, in order, for the four paths the issue names — a simple query, a tool
//! path, an empty result re-planned into a success, and errors past the retry cap. Each
//! sequence (event, node, name; a run of tokens as one line) is an insta snapshot
//! (`snapshots/orchestrator_events__<path>.snap`), and every event of the table's types is
//! checked to come from the node the table names.

use std::sync::Arc;

use agent_core::{InMemorySaver, ManualClock, StreamMode};
use agent_flows::{FlowEnv, StreamItem, find};
use serde_json::Value;

/// 2026-07-15 12:00:00 UTC, as the demo snapshots.
const FIXED_TIME: i64 = 1_784_116_800;

struct Run {
    events: Vec<agent_core::Event>,
    path: Vec<Vec<String>>,
}

async fn run(message: &str, options: &[(&str, &str)]) -> Run {
    let mut env = FlowEnv::offline().with_clock(Arc::new(ManualClock::at_unix_seconds(FIXED_TIME)));
    for (key, value) in options {
        env = env.with_option(*key, *value);
    }
    let session = find("orchestrator")
        .unwrap()
        .open(&env, Some(Arc::new(InMemorySaver::new())), None)
        .unwrap();
    let mut events = Vec::new();
    let report = session
        .turn(
            message,
            Some("events"),
            StreamMode::Events.into(),
            &mut |item| {
                if let StreamItem::Events { event } = item {
                    events.push(event);
                }
            },
        )
        .await
        .unwrap();
    Run {
        events,
        path: report.path,
    }
}

fn node(event: &agent_core::Event) -> &str {
    event.metadata["langgraph_node"].as_str().unwrap_or("")
}

/// The node, or `(graph)` for the graph's own events.
fn shown_node(event: &agent_core::Event) -> &str {
    match node(event) {
        "" => "(graph)",
        name => name,
    }
}

/// One line per event (`event node name`), a run of `on_chat_model_stream` as one line with
/// its count.
fn sequence(events: &[agent_core::Event]) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut tokens = 0;
    for (i, event) in events.iter().enumerate() {
        if event.event == "on_chat_model_stream" {
            tokens += 1;
            let next_is_stream = events
                .get(i + 1)
                .is_some_and(|e| e.event == "on_chat_model_stream");
            if !next_is_stream {
                lines.push(format!(
                    "on_chat_model_stream {} {} x{tokens}",
                    shown_node(event),
                    event.name
                ));
                tokens = 0;
            }
            continue;
        }
        let mut line = format!("{} {} {}", event.event, shown_node(event), event.name);
        if event.event == "on_custom_event" {
            line.push_str(&format!(" {}", event.data["status"]));
        }
        lines.push(line);
    }
    lines.join("\n")
}

/// The seed's table: which node may emit each event type.
fn check_table(events: &[agent_core::Event]) {
    for event in events {
        let allowed: &[&str] = match event.event.as_str() {
            "on_chat_model_start" | "on_chat_model_end" => &["planner", "generator"],
            "on_chat_model_stream" => &["generator"],
            "on_tool_start" | "on_tool_end" => &["tool_executor"],
            "on_custom_event" => &["verifier"],
            _ => continue,
        };
        assert!(
            allowed.contains(&node(event)),
            "{} from {}: the seed's table allows it from {allowed:?}",
            event.event,
            node(event)
        );
        match event.event.as_str() {
            "on_chat_model_start" => assert!(event.data["input"]["messages"].is_array()),
            "on_chat_model_stream" => assert!(event.data["chunk"].is_object()),
            "on_tool_start" => assert!(event.data.get("input").is_some()),
            "on_tool_end" => assert!(event.data.get("output").is_some()),
            "on_custom_event" => assert_eq!(event.data["status"], "planning_retry"),
            _ => {}
        }
    }
}

fn count(events: &[agent_core::Event], name: &str) -> usize {
    events.iter().filter(|e| e.event == name).count()
}

fn nodes(path: &[Vec<String>]) -> Vec<&str> {
    path.iter().flatten().map(String::as_str).collect()
}

#[tokio::test]
async fn a_simple_query_streams_the_generator_only() {
    let run = run("Hello! What can you do?", &[]).await;
    check_table(&run.events);
    assert_eq!(
        nodes(&run.path),
        ["ingress", "planner", "generator", "summarizer"]
    );
    assert_eq!(count(&run.events, "on_tool_start"), 0);
    assert_eq!(count(&run.events, "on_custom_event"), 0);
    assert_eq!(count(&run.events, "on_chat_model_start"), 2);
    assert!(count(&run.events, "on_chat_model_stream") > 5);
    insta::assert_snapshot!("simple_query", sequence(&run.events));
}

#[tokio::test]
async fn a_tool_path_shows_the_tool_calls() {
    let run = run("¿Cuál fue el PIB real de EE. UU. en 2008?", &[]).await;
    check_table(&run.events);
    assert_eq!(
        nodes(&run.path),
        [
            "ingress",
            "planner",
            "tool_router",
            "tool_executor",
            "verifier",
            "generator",
            "summarizer"
        ]
    );
    assert_eq!(count(&run.events, "on_tool_start"), 1);
    assert_eq!(count(&run.events, "on_tool_end"), 1);
    assert_eq!(count(&run.events, "on_custom_event"), 0);
    let tool_start = run
        .events
        .iter()
        .find(|e| e.event == "on_tool_start")
        .unwrap();
    assert_eq!(tool_start.name, "sql_query");
    assert_eq!(
        tool_start.data["input"]["params"],
        serde_json::json!([2008, 2008])
    );
    insta::assert_snapshot!("tool_path", sequence(&run.events));
}

#[tokio::test]
async fn an_empty_result_is_re_planned_into_a_success() {
    let run = run("What do the docs say about joblessness?", &[]).await;
    check_table(&run.events);
    let custom: Vec<&agent_core::Event> = run
        .events
        .iter()
        .filter(|e| e.event == "on_custom_event")
        .collect();
    assert_eq!(custom.len(), 1);
    assert_eq!(custom[0].data["retry_count"], 1);
    assert_eq!(count(&run.events, "on_tool_start"), 2);
    let ends: Vec<&Value> = run
        .events
        .iter()
        .filter(|e| e.event == "on_tool_end")
        .map(|e| &e.data["output"])
        .collect();
    assert!(
        ends[0].as_str().unwrap().contains("\"hits\":[]"),
        "{}",
        ends[0]
    );
    assert!(
        ends[1].as_str().unwrap().contains("\"id\":\"unemp\""),
        "{}",
        ends[1]
    );
    assert_eq!(
        nodes(&run.path).iter().filter(|n| **n == "planner").count(),
        2
    );
    insta::assert_snapshot!("empty_retry_success", sequence(&run.events));
}

#[tokio::test]
async fn errors_past_the_retry_cap_end_in_the_generator() {
    let run = run(
        "Run SELECT count(*) FROM macrodata a, macrodata b, macrodata c, macrodata d",
        &[("sql_timeout_ms", "50"), ("max_retries", "2")],
    )
    .await;
    check_table(&run.events);
    // Two re-plans (the cap), three rounds of calls, then the generator says what failed.
    assert_eq!(count(&run.events, "on_custom_event"), 2);
    assert_eq!(count(&run.events, "on_tool_start"), 3);
    let path = nodes(&run.path);
    assert_eq!(path.iter().filter(|n| **n == "verifier").count(), 3);
    assert_eq!(path[path.len() - 2..], ["generator", "summarizer"]);
    for end in run.events.iter().filter(|e| e.event == "on_tool_end") {
        assert_eq!(end.data["is_error"], true);
        assert!(
            end.data["output"]
                .as_str()
                .unwrap()
                .contains("stopped after 50ms"),
            "{}",
            end.data["output"]
        );
    }
    insta::assert_snapshot!("errors_past_the_cap", sequence(&run.events));
}
