//! The `react` flow through its public API: a table of queries run in both modes — the seed's
//! paths, the echo fallback on and off, step exhaustion, the cap on tool calls, loops of a
//! stubborn rule and of stubborn models stopped by the guards, failing tools — pinned as one
//! snapshot of node paths and outcomes (`snapshots/react_paths__paths.snap`), each row also
//! checked by assertions; then threads, validation and model failures.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::{CompiledGraph, InMemorySaver, ManualClock, RunConfig};
use agent_flows::react::nodes::NOT_RUN;
use agent_flows::react::rules::Proposal;
use agent_flows::react::{
    self, Mode, ReactContext, ReactState, ReactStateUpdate, RuleInput, StaticRules, StopReason,
    TurnSettings, Verdict, turn_input,
};
use agent_llm::{ChatModel, Message, Reply, ScriptedModel, ToolChoice};
use serde_json::{Value, json};

/// 2026-07-15 12:00:00 UTC, as the demo snapshots.
const NOON: i64 = 1_784_116_800;

#[derive(Clone, Copy)]
enum ModelKind {
    Offline,
    /// Always calls `echo` with the same text.
    SameCall,
    /// Calls `echo` with a new text each time.
    NewCalls,
    /// Calls `echo` twice with the same arguments in one reply.
    TwinCalls,
}

#[derive(Clone, Copy)]
enum RulesKind {
    Builtin,
    /// Adds a rule that proposes the same call forever.
    Stubborn,
    /// Adds a rule that proposes a new call forever.
    Endless,
    /// Adds a rule that calls a tool nobody registered.
    UnknownTool,
}

struct Case {
    name: &'static str,
    mode: Mode,
    query: &'static str,
    settings: fn(&mut TurnSettings),
    model: ModelKind,
    rules: RulesKind,
    stop: StopReason,
    verdict: Verdict,
}

fn defaults(_: &mut TurnSettings) {}

fn model(kind: ModelKind) -> Arc<dyn ChatModel> {
    match kind {
        ModelKind::Offline => react::offline::model(),
        ModelKind::SameCall => Arc::new(ScriptedModel::from_fn(|_| {
            Reply::tool_call("echo", json!({"text": "again"}))
        })),
        ModelKind::NewCalls => {
            let n = Arc::new(AtomicUsize::new(0));
            Arc::new(ScriptedModel::from_fn(move |_| {
                let i = n.fetch_add(1, Ordering::SeqCst);
                Reply::tool_call("echo", json!({ "text": format!("again {i}") }))
            }))
        }
        ModelKind::TwinCalls => Arc::new(ScriptedModel::new([Reply::tool_calls([
            ("echo", json!({"text": "twice"})),
            ("echo", json!({"text": "twice"})),
        ])])),
    }
}

fn rules(kind: RulesKind) -> StaticRules {
    let builtin = StaticRules::builtin();
    match kind {
        RulesKind::Builtin => builtin,
        RulesKind::Stubborn => builtin.with_rule("stubborn", |_: &RuleInput<'_>| {
            Some(Proposal {
                tool: "echo".into(),
                args: json!({"text": "again"}),
            })
        }),
        RulesKind::Endless => builtin.with_rule("endless", |input: &RuleInput<'_>| {
            Some(Proposal {
                tool: "echo".into(),
                args: json!({ "text": format!("call {}", input.state.calls.len()) }),
            })
        }),
        RulesKind::UnknownTool => builtin.with_rule("search", |_: &RuleInput<'_>| {
            Some(Proposal {
                tool: "web_search".into(),
                args: json!({"query": "react"}),
            })
        }),
    }
}

fn graph(model: Arc<dyn ChatModel>, rules: StaticRules) -> CompiledGraph<ReactState, ReactContext> {
    let context = ReactContext::new(model, Arc::new(ManualClock::at_unix_seconds(NOON)))
        .expect("context")
        .with_rules(rules);
    react::build(context).expect("the graph compiles")
}

fn input(case: &Case) -> ReactStateUpdate {
    let mut settings = TurnSettings {
        mode: case.mode,
        ..TurnSettings::default()
    };
    (case.settings)(&mut settings);
    turn_input(case.query, settings).expect("valid input")
}

const CASES: &[Case] = &[
    // Static mode.
    Case {
        name: "static: an echo request takes the seed's path",
        mode: Mode::Static,
        query: "Repite: hola mundo",
        settings: defaults,
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::Answered,
        verdict: Verdict::Supported,
    },
    Case {
        name: "static: forced echo, then a calculation and a time",
        mode: Mode::Static,
        query: "How much is 12*(3+4), and what time is it in Sydney?",
        settings: defaults,
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::Answered,
        verdict: Verdict::Supported,
    },
    Case {
        name: "static: nothing for a tool to do",
        mode: Mode::Static,
        query: "¿Qué es un agente ReAct?",
        settings: defaults,
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::Answered,
        verdict: Verdict::NoToolNeeded,
    },
    Case {
        name: "static: steps exhausted",
        mode: Mode::Static,
        query: "What is 2+2, and what time is it in Lima and Oslo?",
        settings: |s| s.max_steps = 2,
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::StepLimit,
        verdict: Verdict::Unsupported,
    },
    Case {
        name: "static: one step may only close",
        mode: Mode::Static,
        query: "echo hi",
        settings: |s| s.max_steps = 1,
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::StepLimit,
        verdict: Verdict::Unsupported,
    },
    Case {
        name: "static: the cap on tool calls",
        mode: Mode::Static,
        query: "echo hi; 2*3; time in Oslo and Lima",
        settings: |s| {
            s.max_steps = 8;
            s.max_tool_calls = 2;
        },
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::ToolCallCap,
        verdict: Verdict::Partial,
    },
    Case {
        name: "static: a rule repeating a call is stopped",
        mode: Mode::Static,
        query: "hello",
        settings: defaults,
        model: ModelKind::Offline,
        rules: RulesKind::Stubborn,
        stop: StopReason::RepeatedCall,
        verdict: Verdict::NoToolNeeded,
    },
    Case {
        name: "static: an endless rule runs into max_steps = 8 within the recursion limit",
        mode: Mode::Static,
        query: "hello",
        settings: |s| {
            s.max_steps = 8;
            s.max_tool_calls = 16;
        },
        model: ModelKind::Offline,
        rules: RulesKind::Endless,
        stop: StopReason::StepLimit,
        verdict: Verdict::NoToolNeeded,
    },
    Case {
        name: "static: a failing tool",
        mode: Mode::Static,
        query: "how much is 1/0?",
        settings: defaults,
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::Answered,
        verdict: Verdict::Unsupported,
    },
    Case {
        name: "static: an echo with nothing to echo fails",
        mode: Mode::Static,
        query: "repite",
        settings: defaults,
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::Answered,
        verdict: Verdict::Unsupported,
    },
    Case {
        name: "static: a rule calling an unknown tool fails, then is stopped repeating it",
        mode: Mode::Static,
        query: "hello",
        settings: defaults,
        model: ModelKind::Offline,
        rules: RulesKind::UnknownTool,
        stop: StopReason::RepeatedCall,
        verdict: Verdict::NoToolNeeded,
    },
    // LLM mode, offline model.
    Case {
        name: "llm: echo with the fallback off takes the seed's path",
        mode: Mode::Llm,
        query: "echo \"hello, world\"",
        settings: defaults,
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::Answered,
        verdict: Verdict::Supported,
    },
    Case {
        name: "llm: echo with the fallback on",
        mode: Mode::Llm,
        query: "echo \"hello, world\"",
        settings: |s| s.llm_fallback = true,
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::Fallback,
        verdict: Verdict::Supported,
    },
    Case {
        name: "llm: the fallback on but no echo asked",
        mode: Mode::Llm,
        query: "¿Cuánto es 15 por 3?",
        settings: |s| s.llm_fallback = true,
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::Answered,
        verdict: Verdict::Supported,
    },
    Case {
        name: "llm: parallel calls in one reply",
        mode: Mode::Llm,
        query: "Повтори: привет, и который час в Москве?",
        settings: defaults,
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::Answered,
        verdict: Verdict::Supported,
    },
    Case {
        name: "llm: on the last step the model is asked to answer without tools",
        mode: Mode::Llm,
        query: "What is 6 times 7?",
        settings: |s| s.max_steps = 1,
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::Answered,
        verdict: Verdict::Unsupported,
    },
    Case {
        name: "llm: with more tool rounds allowed the model closes the loop itself",
        mode: Mode::Llm,
        query: "2*3, and what time is it in Lima?",
        settings: |s| s.max_tool_rounds = 3,
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::Answered,
        verdict: Verdict::Supported,
    },
    Case {
        name: "llm: the cap on tool calls",
        mode: Mode::Llm,
        query: "what time is it in Tokyo, London, Paris and Sydney?",
        settings: |s| s.max_tool_calls = 3,
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::ToolCallCap,
        verdict: Verdict::Unsupported,
    },
    Case {
        name: "llm: a failing tool",
        mode: Mode::Llm,
        query: "Calculate 10 / (5 - 5)",
        settings: defaults,
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::Answered,
        verdict: Verdict::Unsupported,
    },
    Case {
        name: "llm: a direct answer",
        mode: Mode::Llm,
        query: "hola, ¿qué puedes hacer?",
        settings: defaults,
        model: ModelKind::Offline,
        rules: RulesKind::Builtin,
        stop: StopReason::Answered,
        verdict: Verdict::NoToolNeeded,
    },
    // LLM mode, models that would loop.
    Case {
        name: "llm: a model asking again after its round is closed (the seed's one round)",
        mode: Mode::Llm,
        query: "say something",
        settings: defaults,
        model: ModelKind::SameCall,
        rules: RulesKind::Builtin,
        stop: StopReason::ToolRounds,
        verdict: Verdict::Partial,
    },
    Case {
        name: "llm: a repeated identical call is stopped",
        mode: Mode::Llm,
        query: "say something",
        settings: |s| s.max_tool_rounds = 5,
        model: ModelKind::SameCall,
        rules: RulesKind::Builtin,
        stop: StopReason::RepeatedCall,
        verdict: Verdict::Partial,
    },
    Case {
        name: "llm: two identical calls in one reply are stopped",
        mode: Mode::Llm,
        query: "say something",
        settings: defaults,
        model: ModelKind::TwinCalls,
        rules: RulesKind::Builtin,
        stop: StopReason::RepeatedCall,
        verdict: Verdict::Unsupported,
    },
    Case {
        name: "llm: new calls forever run into the step limit",
        mode: Mode::Llm,
        query: "say something",
        settings: |s| {
            s.max_tool_rounds = 7;
            s.max_steps = 4;
        },
        model: ModelKind::NewCalls,
        rules: RulesKind::Builtin,
        stop: StopReason::StepLimit,
        verdict: Verdict::Partial,
    },
    Case {
        name: "llm: new calls forever run into the cap on tool calls",
        mode: Mode::Llm,
        query: "say something",
        settings: |s| {
            s.max_tool_rounds = 7;
            s.max_steps = 8;
            s.max_tool_calls = 2;
        },
        model: ModelKind::NewCalls,
        rules: RulesKind::Builtin,
        stop: StopReason::ToolCallCap,
        verdict: Verdict::Partial,
    },
];

fn tool_messages(state: &ReactState) -> Vec<&agent_llm::ToolMessage> {
    state
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(t) => Some(t),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn every_path_of_both_modes() {
    let mut table = Vec::new();
    for case in CASES {
        let graph = graph(model(case.model), rules(case.rules));
        let out = graph
            .invoke(input(case), RunConfig::default())
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let path: Vec<String> = out.path.to_vec().into_iter().flatten().collect();
        let block = out.final_block.clone().expect("a final block");
        let name = case.name;

        // What every run must do, whatever the case.
        assert_eq!(path.first().map(String::as_str), Some("planner"), "{name}");
        assert_eq!(
            &path[path.len() - 2..],
            ["critic", "finalizer"],
            "{name}: every run ends with the review and the final block"
        );
        assert_eq!(out.stop, Some(case.stop), "{name}");
        assert_eq!(block.stop, case.stop, "{name}");
        assert_eq!(block.verdict, case.verdict, "{name}: {:?}", out.review);
        assert!(out.ready_to_answer, "{name}");
        assert!(out.selected.is_none(), "{name}");
        assert!((0.0..=1.0).contains(&block.confidence), "{name}");
        assert!(!block.summary.trim().is_empty(), "{name}");
        assert!(out.step <= out.max_steps, "{name}: steps within the limit");
        assert!(
            out.calls.len() <= out.max_tool_calls as usize,
            "{name}: calls within the cap"
        );
        for key in &block.evidence_keys {
            assert!(out.artifacts[key].get("output").is_some(), "{name}: {key}");
        }
        if case.stop.is_guard() {
            let guards = [
                "step limit",
                "tool-call cap",
                "repeated call stopped",
                "tool rounds",
            ];
            assert!(
                out.errors
                    .iter()
                    .any(|e| guards.iter().any(|g| e.starts_with(g))),
                "{name}: the guard is recorded among the errors: {:?}",
                out.errors
            );
        }
        let mut seen = Vec::new();
        for call in &out.calls {
            assert!(
                !seen.contains(&(&call.tool, &call.args)),
                "{name}: no call ran twice: {call:?}"
            );
            seen.push((&call.tool, &call.args));
        }
        match case.mode {
            Mode::Static => {
                // The chat: the query, each call and its result, the summary.
                let kinds: Vec<&str> = out.messages.iter().map(Message::kind).collect();
                let mut chat = vec!["human"];
                for _ in &out.calls {
                    chat.extend(["ai", "tool"]);
                }
                chat.push("ai");
                assert_eq!(kinds, chat, "{name}: static mode's chat");
                assert_eq!(
                    out.messages.last().map(Message::content),
                    out.final_block.as_ref().map(|b| b.summary.as_str()),
                    "{name}"
                );
                assert!(!path.iter().any(|n| n == "model"), "{name}");
                if !out.calls.is_empty() {
                    assert_eq!(
                        out.calls
                            .first()
                            .map(|c| (c.tool.as_str(), c.origin.as_str())),
                        Some(("echo", "forced")),
                        "{name}: the first pass forces echo"
                    );
                }
            }
            Mode::Llm => {
                assert!(!path.iter().any(|n| n == "reasoner"), "{name}");
                // The system hint opens the model's calls without being kept.
                assert_eq!(out.messages[0].kind(), "human", "{name}");
                assert_eq!(out.messages[0].content(), case.query, "{name}");
                assert!(!out.messages.iter().any(|m| m.kind() == "system"), "{name}");
                // Every call the model asked for is answered, run or not.
                let asked: Vec<String> = out
                    .messages
                    .iter()
                    .flat_map(Message::tool_calls)
                    .map(|c| c.id.clone())
                    .collect();
                let answered: Vec<String> = tool_messages(&out)
                    .iter()
                    .map(|t| t.tool_call_id.clone())
                    .collect();
                assert_eq!(asked, answered, "{name}: every call is answered");
                assert_eq!(
                    out.messages.last().map(Message::content),
                    Some(block.summary.as_str()),
                    "{name}: the conversation ends with the answer"
                );
            }
        }
        table.push(json!({
            "case": name,
            "path": path,
            "stop": out.stop,
            "calls": out.calls.iter().map(|c| format!("{} {} ({})", c.key, c.args, c.origin)).collect::<Vec<_>>(),
            "errors": out.errors,
            "verdict": block.verdict,
            "confidence": block.confidence,
            "response": react::response(&out.state),
        }));
    }
    insta::assert_yaml_snapshot!("paths", table);
}

#[tokio::test]
async fn the_fallback_answers_the_models_own_calls_as_not_run() {
    let graph = graph(react::offline::model(), StaticRules::builtin());
    let settings = TurnSettings {
        mode: Mode::Llm,
        llm_fallback: true,
        ..TurnSettings::default()
    };
    let out = graph
        .invoke(
            turn_input("Echo: buenos días", settings).unwrap(),
            RunConfig::default(),
        )
        .await
        .unwrap();
    let tools = tool_messages(&out);
    assert_eq!(tools.len(), 2);
    assert!(
        tools[0].content.starts_with(NOT_RUN),
        "{}",
        tools[0].content
    );
    assert_eq!(
        serde_json::from_str::<Value>(&tools[1].content).unwrap()["echo"],
        "buenos días"
    );
    assert_eq!(out.calls.len(), 1, "only the fallback's call ran");
    assert_eq!(out.calls[0].origin, "fallback");
    assert_eq!(out.working_memory["echo_1"]["echo"], "buenos días");
}

#[tokio::test]
async fn turns_on_a_thread_keep_the_conversation_and_reset_the_rest() {
    let context = ReactContext::new(
        react::offline::model(),
        Arc::new(ManualClock::at_unix_seconds(NOON)),
    )
    .unwrap();
    let graph = react::graph()
        .compile_with(Arc::new(InMemorySaver::new()))
        .unwrap()
        .with_context(context);
    let config = RunConfig::default().thread_id("t");
    let llm = TurnSettings {
        mode: Mode::Llm,
        ..TurnSettings::default()
    };
    let first = graph
        .invoke(
            turn_input("What is 6 times 7?", llm).unwrap(),
            config.clone(),
        )
        .await
        .unwrap();
    assert_eq!(first.final_block.as_ref().unwrap().summary, "6 * 7 = 42");
    let second = graph
        .invoke(turn_input("echo bye", llm).unwrap(), config.clone())
        .await
        .unwrap();
    let kinds: Vec<&str> = second.messages.iter().map(Message::kind).collect();
    assert_eq!(
        kinds,
        ["human", "ai", "tool", "ai", "human", "ai", "tool", "ai"],
        "both turns kept"
    );
    assert_eq!(second.final_block.as_ref().unwrap().summary, "Echo: bye");
    assert_eq!(
        second.artifacts.len(),
        1,
        "the first turn's evidence is gone"
    );
    assert_eq!(second.calls.len(), 1);
    assert_eq!(second.step, 2);

    // A static turn on the same thread adds to the chat: the query, each call with its
    // result, the summary.
    let third = graph
        .invoke(
            turn_input("2+2?", TurnSettings::default()).unwrap(),
            config.clone(),
        )
        .await
        .unwrap();
    assert_eq!(third.messages[..second.messages.len()], second.messages[..]);
    let added: Vec<&str> = third.messages[second.messages.len()..]
        .iter()
        .map(Message::kind)
        .collect();
    assert_eq!(added, ["human", "ai", "tool", "ai", "tool", "ai"]);
    assert_eq!(third.mode, Mode::Static);
    assert!(
        third
            .final_block
            .as_ref()
            .unwrap()
            .summary
            .starts_with("2 + 2 = 4")
    );
}

#[tokio::test]
async fn a_state_built_by_hand_is_validated_by_the_planner() {
    let graph = graph(react::offline::model(), StaticRules::builtin());
    let bad = ReactState {
        user_query: "echo hi".into(),
        confidence: 1.5,
        ..ReactState::default()
    };
    let error = graph
        .invoke(bad, RunConfig::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("node `planner`")
            && error
                .contains("field `confidence`: 1.5 is out of range; it must be between 0 and 1"),
        "{error}"
    );
    let bad = ReactState {
        user_query: "echo hi".into(),
        max_steps: 0,
        ..ReactState::default()
    };
    let error = graph
        .invoke(bad, RunConfig::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("field `max_steps`: 0 is out of range"),
        "{error}"
    );
}

#[tokio::test]
async fn a_model_that_fails_fails_the_turn_with_its_error() {
    let failing: Arc<dyn ChatModel> = Arc::new(ScriptedModel::new([Reply::fail("quota exceeded")]));
    let graph = graph(failing, StaticRules::builtin());
    let settings = TurnSettings {
        mode: Mode::Llm,
        ..TurnSettings::default()
    };
    let error = graph
        .invoke(
            turn_input("echo hi", settings).unwrap(),
            RunConfig::default(),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("node `model`") && error.contains("quota exceeded"),
        "{error}"
    );
}

#[tokio::test]
async fn the_real_model_path_sees_the_tools_and_the_hint() {
    let scripted = ScriptedModel::new([
        Reply::tool_call("calculator", json!({"expression": "6*7"})),
        Reply::text("It is 42."),
    ]);
    let graph = graph(Arc::new(scripted.clone()), StaticRules::builtin());
    let settings = TurnSettings {
        mode: Mode::Llm,
        ..TurnSettings::default()
    };
    let out = graph
        .invoke(
            turn_input("What is 6 times 7?", settings).unwrap(),
            RunConfig::default(),
        )
        .await
        .unwrap();
    let requests = scripted.requests();
    assert_eq!(requests.len(), 2);
    let offered: Vec<&str> = requests[0]
        .options
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(offered, ["echo", "calculator", "datetime"]);
    assert_eq!(requests[0].options.max_tokens, Some(200));
    assert_eq!(requests[0].messages[0].content(), react::nodes::SYSTEM_HINT);
    assert_eq!(requests[1].messages.len(), 4, "system, human, ai, tool");
    // While a tool round is left the model decides; after it, it is asked to answer.
    assert_eq!(requests[0].options.tool_choice, None);
    assert_eq!(requests[1].options.tool_choice, Some(ToolChoice::None));
    // The model's own answer is the summary; the critic still checks it against the evidence.
    let block = out.final_block.as_ref().unwrap();
    assert_eq!(block.summary, "It is 42.");
    assert_eq!(block.verdict, Verdict::Supported);
    assert_eq!(out.working_memory["calculator_1"], json!(42));
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct CityArgs {
    /// The city.
    city: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SearchArgs {
    /// What to look for.
    query: String,
}

/// Tools the offline rules know nothing of: `weather` (fails for Atlantis) and `search`
/// (finds nothing).
fn program_tools() -> agent_tools::ToolRegistry {
    let weather = agent_tools::tool_fn(
        "weather",
        "The weather in a city.",
        |args: CityArgs| async move {
            if args.city == "Atlantis" {
                Err(format!("no weather station in {}", args.city))
            } else {
                Ok(json!({ "city": args.city, "temp_c": 21, "sky": "sunny" }))
            }
        },
    );
    let search = agent_tools::tool_fn(
        "search",
        "Searches the web.",
        |args: SearchArgs| async move {
            let _ = args.query;
            Ok::<_, String>(json!({ "results": [] }))
        },
    );
    agent_tools::ToolRegistry::new()
        .with_tool(weather)
        .and_then(|r| r.with_tool(search))
        .expect("valid tools")
}

/// Runs `query` in llm mode on a scripted model with the program's tools.
async fn llm_run(query: &str, replies: Vec<Reply>) -> ReactState {
    let model = ScriptedModel::new(replies);
    let context = ReactContext::new(
        Arc::new(model),
        Arc::new(ManualClock::at_unix_seconds(NOON)),
    )
    .expect("context")
    .with_tools(program_tools());
    let settings = TurnSettings {
        mode: Mode::Llm,
        ..TurnSettings::default()
    };
    react::build(context)
        .expect("the graph compiles")
        .invoke(turn_input(query, settings).unwrap(), RunConfig::default())
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"))
        .state
}

#[tokio::test]
async fn in_llm_mode_the_critic_judges_the_models_own_tools() {
    // A tool the rules do not know, a result, an answer that uses it: supported.
    let out = llm_run(
        "What's the weather like in Paris?",
        vec![
            Reply::tool_call("weather", json!({"city": "Paris"})),
            Reply::text("It is 21 °C and sunny in Paris."),
        ],
    )
    .await;
    let review = out.review.as_ref().unwrap();
    assert_eq!(review.verdict, Verdict::Supported, "{review:?}");
    assert_eq!(review.asked, [r#"weather {"city":"Paris"}"#]);
    assert!(review.missing.is_empty());
    assert_eq!(review.evidence_keys, ["weather_1"]);
    assert_eq!(review.confidence, 0.8, "0.6 for the result, lifted by half");
    let block = out.final_block.as_ref().unwrap();
    assert_eq!((block.verdict, block.confidence), (Verdict::Supported, 0.8));
    assert_eq!(block.summary, "It is 21 °C and sunny in Paris.");

    // The same result, but the answer ignores it: nothing backs the answer.
    let out = llm_run(
        "What's the weather like in Paris?",
        vec![
            Reply::tool_call("weather", json!({"city": "Paris"})),
            Reply::text("I could not find out the weather in Paris."),
        ],
    )
    .await;
    let review = out.review.as_ref().unwrap();
    assert_eq!(review.verdict, Verdict::Unsupported, "{review:?}");
    assert_eq!(review.confidence, 0.0);
    assert!(review.evidence_keys.is_empty());
    assert!(
        review
            .notes
            .contains(&"the answer does not use weather_1".to_owned()),
        "{review:?}"
    );

    // Two calls, one fails: partial, the error halves what the result raised.
    let out = llm_run(
        "Weather in Paris and in Atlantis?",
        vec![
            Reply::tool_calls([
                ("weather", json!({"city": "Paris"})),
                ("weather", json!({"city": "Atlantis"})),
            ]),
            Reply::text("Paris: 21 °C. Atlantis: no weather station."),
        ],
    )
    .await;
    let review = out.review.as_ref().unwrap();
    assert_eq!(review.verdict, Verdict::Partial, "{review:?}");
    assert_eq!(review.missing, [r#"weather {"city":"Atlantis"}"#]);
    assert_eq!(review.evidence_keys, ["weather_1"]);
    assert_eq!(review.errors, 1);
    assert_eq!(review.confidence, 0.15, "(0.6 halved) times one of two");
    assert!(
        review
            .notes
            .iter()
            .any(|n| n.starts_with("weather_2 failed: ") && n.contains("no weather station")),
        "{review:?}"
    );

    // An empty result backs nothing.
    let out = llm_run(
        "Search the web for agentgraph",
        vec![
            Reply::tool_call("search", json!({"query": "agentgraph"})),
            Reply::text("I found nothing about agentgraph."),
        ],
    )
    .await;
    let review = out.review.as_ref().unwrap();
    assert_eq!(review.verdict, Verdict::Unsupported, "{review:?}");
    assert_eq!(review.confidence, 0.0);
    assert!(
        review
            .notes
            .contains(&"search_1 returned nothing".to_owned()),
        "{review:?}"
    );

    // A guard that keeps the model's calls from running leaves them unmet.
    let out = llm_run(
        "Weather in Paris, twice",
        vec![Reply::tool_calls([
            ("weather", json!({"city": "Paris"})),
            ("weather", json!({"city": "Paris"})),
        ])],
    )
    .await;
    assert_eq!(out.stop, Some(StopReason::RepeatedCall));
    let review = out.review.as_ref().unwrap();
    assert_eq!(review.verdict, Verdict::Unsupported, "{review:?}");
    assert_eq!(review.asked.len(), 2);
    assert_eq!(review.missing, review.asked);

    // No call at all: the model answered alone, and the rules read no request a tool meets.
    let out = llm_run(
        "What's the weather like in Paris?",
        vec![Reply::text("Probably sunny.")],
    )
    .await;
    let review = out.review.as_ref().unwrap();
    assert_eq!(review.verdict, Verdict::NoToolNeeded, "{review:?}");
    assert_eq!(review.confidence, 0.0);
    assert_eq!(review.notes[0], "the model answered without calling a tool");
}
