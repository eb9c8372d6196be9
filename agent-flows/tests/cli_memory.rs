//! Long-term memory through the `agent` program: the orchestrator remembers a user across
//! threads run by separate processes (the store in the thread store's file by default), and
//! `agent memory list|get|search|delete` inspects and edits what it keeps.

mod common;

use common::{Scratch, run};
use serde_json::Value;

#[test]
fn the_orchestrator_remembers_a_user_across_threads_and_memory_inspects_it() {
    let s = Scratch::new("memory-cli");
    let ask = |thread: &str, text: &str| {
        let out = run(s.agent(&["run", "orchestrator", text, "--thread", thread]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout
    };
    ask("a", "What was the unemployment rate in 2008?");
    let recalled = ask("b", "What did I ask before?");
    assert!(recalled.contains("unemployment rate in 2008"), "{recalled}");

    let out = run(s.agent(&["memory", "list"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "users.demo");

    let out = run(s.agent(&["memory", "get", "users.demo", "summary"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let summary: Value = serde_json::from_str(out.stdout.trim()).expect("JSON");
    assert_eq!(summary["session_id"], "b");
    assert!(
        summary["summary"]
            .as_str()
            .is_some_and(|s| s.contains("2008")),
        "{summary}"
    );

    let out = run(s.agent(&[
        "memory",
        "search",
        "users",
        "--query",
        "unemployment rate asked",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(
        lines.len(),
        2,
        "the profile and the summary: {}",
        out.stdout
    );
    assert_eq!(
        lines[0]["key"], "summary",
        "the summary ranks first: {}",
        out.stdout
    );
    assert!(lines[0]["score"].as_f64() > lines[1]["score"].as_f64());

    let out = run(s.agent(&[
        "memory",
        "search",
        "users",
        "--filter",
        r#"{"turn": {"$gte": 1}}"#,
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    let out = run(s.agent(&["memory", "search", "users", "--filter", "{not json"]));
    assert_eq!(out.code, 2, "a bad filter is a usage error");

    let out = run(s.agent(&["memory", "delete", "users.demo", "summary"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = run(s.agent(&["memory", "get", "users.demo", "summary"]));
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("no item `summary` in `users.demo`"),
        "{}",
        out.stderr
    );
    let forgotten = ask("c", "What did I ask before?");
    assert!(!forgotten.contains("unemployment"), "{forgotten}");

    // Another user, and another store file, know nothing of it.
    let out = run(s.agent(&[
        "run",
        "orchestrator",
        "What did I ask before?",
        "--thread",
        "d",
        "--user",
        "maria",
    ]));
    assert!(!out.stdout.contains("unemployment"), "{}", out.stdout);
    let other = s.path("other.sqlite");
    let other = other.to_str().expect("utf-8 path");
    let out = run(s.agent(&["memory", "list", "--store", other]));
    assert_eq!((out.code, out.stdout.trim()), (0, ""), "{}", out.stderr);
    let out = run(s.agent(&["memory", "get", "users.a.b", "k", "--store", other]));
    assert_eq!(out.code, 1);
}
