//! `agent run data` as a user runs it: offline answers in Russian and English with their
//! tables, the JSON report with the plan, the data and the usage per node, a follow-up in a
//! second process on the same thread, and clear failures for input the flow refuses.

mod common;

use common::{Scratch, run, run_with_stdin};
use serde_json::json;

#[test]
fn answers_in_russian_and_english_with_a_table() {
    let s = Scratch::new("data-run");
    let out = run(s.agent(&["run", "data", "Какой была средняя безработица в 2008 году?"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "Уровень безработицы в 2008 г., в среднем: 5,80 % (4 квартала).\n"
    );

    let out = run(s.agent(&["run", "data", "Show unemployment by quarter in 2009"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "Unemployment rate from 2009 Q1 to 2009 Q3, by quarter: 3 quarters.\n\
         year  quarter  unemployment rate, %\n\
         2009        1                  8.10\n\
         2009        2                  9.20\n\
         2009        3                  9.60\n\
         Note: the data cover 1959 Q1 – 2009 Q3: the period was cut to 2009 Q1 – 2009 Q3.\n"
    );
    assert!(!out.stdout.contains('\u{1b}'), "no colour into a pipe");
}

#[test]
fn json_shows_the_plan_the_data_and_usage_per_node() {
    let s = Scratch::new("data-json");
    let out = run(s.agent(&[
        "run",
        "data",
        "Top 3 quarters with the lowest real interest rate",
        "--json",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    assert_eq!(report["flow"], "data");
    assert_eq!(
        report["path"],
        json!([["intent"], ["parser"], ["planner"], ["executor"]])
    );
    let state = &report["state"];
    assert_eq!(state["intent"], "data");
    assert_eq!(
        state["execution_plan"][0]["operation"],
        json!({"kind": "rank", "direction": "asc"})
    );
    assert_eq!(state["execution_plan"][0]["limit"], 3);
    assert_eq!(state["data"][0]["rows"][0], json!([2008, 2, -6.79]));
    assert!(
        state["data"][0]["sql"]
            .as_str()
            .unwrap()
            .contains("LIMIT ?")
    );
    assert_eq!(report["response"], state["response"]);
    for node in ["intent", "parser"] {
        assert!(
            state["usage"]["by_node"][node]["input_tokens"]
                .as_u64()
                .unwrap()
                > 0,
            "{node}"
        );
    }
    assert_eq!(
        state["usage"]["total"]["output_tokens"],
        report["usage"]["output_tokens"]
    );
}

#[test]
fn a_follow_up_continues_in_a_second_process() {
    let s = Scratch::new("data-thread");
    let first = run(s.agent(&[
        "run",
        "data",
        "What was inflation in 1980?",
        "--thread",
        "d1",
    ]));
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(
        first.stdout,
        "Inflation rate in 1980, average: 11.15% (4 quarters).\n"
    );
    let second = run(s.agent(&["run", "data", "And in 1990?", "--thread", "d1", "--json"]));
    assert_eq!(second.code, 0, "{}", second.stderr);
    let report = second.json();
    assert_eq!(
        report["state"]["internal_query"],
        "Average inflation rate in 1990."
    );
    assert_eq!(
        report["response"],
        "Inflation rate in 1990, average: 5.49% (4 quarters)."
    );
    assert_eq!(report["state"]["messages"].as_array().unwrap().len(), 4);
    // The first turn's results do not leak into the second.
    assert_eq!(report["state"]["data"].as_array().unwrap().len(), 1);
}

#[test]
fn chat_explains_and_answers() {
    let s = Scratch::new("data-chat");
    let out = run_with_stdin(
        s.agent(&["chat", "data", "--thread", "c"]),
        "Что такое ИПЦ?\nКакой был ИПЦ в конце 2008 года?\n/exit\n".as_bytes(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("Индекс потребительских цен (ИПЦ) для городских потребителей:"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(
            "Индекс потребительских цен в 2008 г., последнее значение: 212,17 (4 кв. 2008)."
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn refused_input_fails_clearly() {
    let s = Scratch::new("data-refused");
    let huge = "GDP ".repeat(1000);
    let out = run(s.agent(&["run", "data", &huge]));
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("at most 2000"), "{}", out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);

    let out = run(s.agent(&["run", "data", "hi", "--set", "rows=5"]));
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("this flow takes no options"),
        "{}",
        out.stderr
    );

    // An unanswerable question is an answer (exit 0) that says why.
    let out = run(s.agent(&["run", "data", "What was the price of oil in 1990?"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .starts_with("I could not answer this:\n- Step 1: the data set has no oil price."),
        "{}",
        out.stdout
    );
}

#[test]
fn the_graph_is_the_seeds() {
    let s = Scratch::new("data-graph");
    let out = run(s.agent(&["graph", "data", "--ascii"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    for edge in [
        "intent -.-> parser  [if data]",
        "intent -.-> end  [if chitchat]",
        "intent -.-> end  [if concept]",
        "parser --> planner",
        "planner --> executor",
    ] {
        assert!(out.stdout.contains(edge), "{edge}:\n{}", out.stdout);
    }
}
