//! The orchestrator through its public API: redaction end to end, the router's checks, parallel
//! calls, input validation, options, the profile store, metrics from real usage and the
//! clock, the retry cap, a thread that keeps its summary across sessions, and the
//! verifier's relevance check (rules offline, the model's verdict otherwise). Models are
//! scripted where a test needs a planner that misbehaves; otherwise the offline one.

use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    InMemorySaver, Input, ManualClock, RunConfig, SqliteSaver, StreamMode, StreamModes, StreamPart,
};
use agent_flows::orchestrator::profiles::{Preferences, Profile};
use agent_flows::orchestrator::tools::{ToolSettings, layered};
use agent_flows::orchestrator::{
    OrchestratorContext, OrchestratorState, ProfileStore, Settings, build, turn_input,
};
use agent_flows::registry::state_json;
use agent_flows::{FlowEnv, StreamItem, find};
use agent_llm::{CallOptions, ChatModel, Message, Reply, ScriptedModel};
use agent_tools::{ToolRegistry, tool_fn};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const FIXED_TIME: i64 = 1_784_116_800;

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::at_unix_seconds(FIXED_TIME))
}

/// A profile store with the demo users and `ada`, who may use every tool.
fn profiles() -> Arc<ProfileStore> {
    let store = ProfileStore::demo().unwrap();
    store
        .put(&Profile {
            user_id: "ada".into(),
            display_name: "Ada".into(),
            role: "admin".into(),
            permissions: vec!["*".into()],
            preferences: Preferences::default(),
        })
        .unwrap();
    Arc::new(store)
}

/// Whether the planner's request already holds this turn's tool results.
fn after_tools(messages: &[Message]) -> bool {
    let last_human = messages
        .iter()
        .rposition(|m| m.kind() == "human")
        .unwrap_or(0);
    messages[last_human..].iter().any(|m| m.kind() == "tool")
}

/// A model whose planner makes `first` calls, then none; the generator says `answer`.
fn scripted(
    first: Vec<(&'static str, &'static str, Value)>,
    answer: &'static str,
) -> Arc<dyn ChatModel> {
    Arc::new(ScriptedModel::from_request_fn(
        move |messages, options: &CallOptions| match options.task.as_deref() {
            Some("planner") if !after_tools(messages) => first
                .iter()
                .fold(Reply::text(""), |reply, (id, name, args)| {
                    reply.with_tool_call_id(*id, *name, args.clone())
                }),
            Some("planner") => Reply::text("nothing else to try"),
            Some("RelevanceVerdict") => {
                Reply::json(json!({"relevant": true, "reason": "the results fit"}))
            }
            _ => Reply::text(answer),
        },
    ))
}

async fn run_graph(
    context: OrchestratorContext,
    message: &str,
    user: &str,
) -> (OrchestratorState, Vec<agent_core::Event>, Vec<Vec<String>>) {
    let graph = build(context).unwrap();
    let mut stream = graph.stream(
        Input::Update(turn_input(message, user)),
        RunConfig::default(),
        StreamModes::from(StreamMode::Events),
    );
    let mut events = Vec::new();
    while let Some(part) = stream.next().await {
        if let StreamPart::Event(event) = part.unwrap() {
            events.push(event);
        }
    }
    let output = stream.into_output().await.unwrap();
    (output.state.clone(), events, output.path.to_vec())
}

fn flat(path: &[Vec<String>]) -> Vec<&str> {
    path.iter().flatten().map(String::as_str).collect()
}

#[derive(Deserialize, JsonSchema)]
struct Who {
    /// Whose contact to look up.
    name: String,
}

#[tokio::test]
async fn results_are_redacted_before_state_events_and_the_generator_see_them() {
    let contacts = tool_fn(
        "contacts",
        "Looks up who to contact about a data provider.",
        |who: Who| async move {
            Ok::<_, String>(json!({
                "name": who.name,
                "email": "ana.lopez@stats.example.org",
                "card": "4111 1111 1111 1111",
                "note": "key sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX1234 and token=abc123secret",
                "api_key": "api-key-value-77",
            }))
        },
    );
    let mut registry = ToolRegistry::new();
    registry
        .register_arc(layered(
            contacts,
            Duration::from_secs(1),
            &ToolSettings::default(),
        ))
        .unwrap();
    let context = OrchestratorContext::new(
        scripted(
            vec![("c1", "contacts", json!({"name": "Ana"}))],
            "Contact found.",
        ),
        clock(),
        Settings::default(),
        profiles(),
    )
    .unwrap()
    .with_tools(registry);
    let (state, events, _) =
        run_graph(context, "Who do I contact at the statistics office?", "ada").await;
    let everything = format!(
        "{}\n{}",
        state_json(&state),
        serde_json::to_string(&events).unwrap()
    );
    for secret in [
        "ana.lopez@stats.example.org",
        "4111 1111 1111 1111",
        "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX1234",
        "abc123secret",
        "api-key-value-77",
    ] {
        assert!(!everything.contains(secret), "{secret} leaked");
    }
    let output = &state.scratchpad["c1"].output;
    assert_eq!(output["email"], "[REDACTED:email]");
    assert_eq!(output["card"], "[REDACTED:card]");
    assert_eq!(output["api_key"], "[REDACTED]");
    assert_eq!(
        output["note"],
        "key [REDACTED:token] and token=[REDACTED:secret]"
    );
    assert_eq!(output["name"], "Ana");
    // The generator was sent the redacted results.
    let generator_input = events
        .iter()
        .find(|e| e.event == "on_chat_model_start" && e.metadata["langgraph_node"] == "generator")
        .unwrap();
    assert!(
        generator_input
            .data
            .to_string()
            .contains("[REDACTED:email]")
    );
    assert_eq!(state.response, "Contact found.");
}

#[tokio::test]
async fn the_router_turns_unknown_forbidden_and_malformed_calls_into_error_results() {
    let context = OrchestratorContext::new(
        scripted(
            vec![
                ("c1", "web_search", json!({"q": "gdp"})),
                ("c2", "sql_query", json!({"sql": "SELECT 1"})),
                ("c3", "calculator", json!({"expr": "1+1"})),
            ],
            "Sorry.",
        ),
        clock(),
        Settings::default(),
        profiles(),
    )
    .unwrap();
    let (state, events, path) = run_graph(context, "Search the web for GDP", "guest").await;
    let kinds: Vec<(bool, String)> = state
        .routes
        .iter()
        .map(|r| {
            (
                r.allowed,
                serde_json::to_value(r.rejection.as_ref().map(|f| f.kind))
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            (false, "\"unknown_tool\"".to_owned()),
            (false, "\"forbidden\"".to_owned()),
            (false, "\"invalid_args\"".to_owned()),
        ]
    );
    let reasons: Vec<&str> = state
        .routes
        .iter()
        .map(|r| r.rejection.as_ref().unwrap().message.as_str())
        .collect();
    assert!(
        reasons[0].starts_with("`web_search` is not a tool here; the tools are"),
        "{}",
        reasons[0]
    );
    assert!(
        reasons[1].contains("user `guest` (role guest) may not use `sql_query`"),
        "{}",
        reasons[1]
    );
    assert!(
        reasons[2].contains("the required property `expression` is missing"),
        "{}",
        reasons[2]
    );
    // The calculator's schema does not forbid other properties, so `expr` alone is no
    // violation: only what the schema says counts.
    assert!(!reasons[2].contains("`expr`"), "{}", reasons[2]);
    // Every call got an error result; none ran.
    assert!(state.tool_outputs.iter().all(|m| m.is_error));
    assert!(
        state.tool_outputs[1]
            .content
            .starts_with("Error (forbidden): ")
    );
    assert_eq!(
        events.iter().filter(|e| e.event == "on_tool_start").count(),
        0
    );
    // The verifier sent the flow back; the planner had nothing else; the generator answered.
    assert_eq!(
        flat(&path),
        [
            "ingress",
            "planner",
            "tool_router",
            "tool_executor",
            "verifier",
            "planner",
            "generator",
            "summarizer"
        ]
    );
    assert_eq!(state.retry_count, 1);
    assert_eq!(state.response, "Sorry.");
}

#[tokio::test]
async fn independent_calls_run_at_the_same_time() {
    #[derive(Deserialize, JsonSchema)]
    struct Nothing {}
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let mut registry = ToolRegistry::new();
    for name in ["left", "right"] {
        let barrier = barrier.clone();
        let tool = tool_fn(name, "Waits for the other one.", move |_: Nothing| {
            let barrier = barrier.clone();
            async move {
                // Both calls pass only if they wait at the same time.
                tokio::time::timeout(Duration::from_secs(20), barrier.wait())
                    .await
                    .map(|_| "met")
                    .map_err(|_| "ran alone".to_owned())
            }
        });
        registry
            .register_arc(layered(
                tool,
                Duration::from_secs(30),
                &ToolSettings::default(),
            ))
            .unwrap();
    }
    let context = OrchestratorContext::new(
        scripted(
            vec![("a", "left", json!({})), ("b", "right", json!({}))],
            "Both met.",
        ),
        clock(),
        Settings::default(),
        profiles(),
    )
    .unwrap()
    .with_tools(registry);
    let (state, _, _) = run_graph(context, "Run both", "ada").await;
    assert_eq!(state.scratchpad["a"].output, "met");
    assert_eq!(state.scratchpad["b"].output, "met");
}

async fn turn(env: &FlowEnv, message: &str) -> agent_flows::TurnReport {
    find("orchestrator")
        .unwrap()
        .open(env, None, None)
        .unwrap()
        .turn(message, None, StreamModes::NONE, &mut |_: StreamItem| {})
        .await
        .unwrap()
}

#[tokio::test]
async fn unusable_input_gets_a_clear_refusal_and_never_reaches_the_planner() {
    let env = FlowEnv::offline().with_clock(clock());
    let report = turn(&env, "GDP in 2008?\u{1b}[2J").await;
    assert_eq!(flat(&report.path), ["ingress", "summarizer"]);
    assert_eq!(report.state["safety_check"]["category"], "invalid_input");
    assert_eq!(
        report.response,
        "I can't read that message: a control character (U+001B) at character 13. Please send plain text."
    );
    assert_eq!(
        report.state["messages"][0]["content"],
        "[message withheld by the safety policy: invalid_input]"
    );
    let short = env.clone().with_option("max_input_chars", "20");
    let report = turn(&short, "What was the unemployment rate in 2008?").await;
    assert!(
        report
            .response
            .contains("the message has 39 characters; the limit is 20"),
        "{}",
        report.response
    );
    // An empty message does not even make it to the graph through a session; straight into
    // the graph, ingress refuses it.
    let context = OrchestratorContext::from_env(&env).unwrap();
    let output = build(context)
        .unwrap()
        .invoke(turn_input("   ", "demo"), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(output.safety_check.findings[0].rule, "empty");
    assert!(output.response.contains("the message has no text"));
}

#[test]
fn options_are_checked_with_a_message_that_says_what_to_do() {
    let flow = find("orchestrator").unwrap();
    for (key, value, expected) in [
        ("max_retries", "9", "9 is more than 4"),
        ("max_retries", "two", "`two` is not a whole number"),
        ("context_tokens", "10", "use at least 100"),
        ("sql_timeout_ms", "0", "0 ms would stop every query"),
        ("colour", "blue", "not an option of this flow"),
    ] {
        let env = FlowEnv::offline().with_option(key, value);
        let error = flow.open(&env, None, None).err().expect("refused");
        let text = error.to_string();
        assert!(text.contains(&format!("option `{key}`")), "{text}");
        assert!(text.contains(expected), "{text}");
    }
    let env = FlowEnv::offline().with_option("profiles", "/proc/nope/profiles.sqlite");
    let error = flow
        .open(&env, None, None)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        error.contains("profile store /proc/nope/profiles.sqlite"),
        "{error}"
    );
}

#[tokio::test]
async fn the_profiles_option_opens_a_sqlite_store_that_ingress_reads() {
    let dir = std::env::temp_dir().join(format!("agentgraph-orch-profiles-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("profiles.sqlite");
    let store = ProfileStore::open(&path).unwrap();
    store
        .put(&Profile {
            user_id: "zoe".into(),
            display_name: "Zoe".into(),
            role: "reader".into(),
            permissions: vec!["doc_search".into()],
            preferences: Preferences::default(),
        })
        .unwrap();
    drop(store);
    let env = FlowEnv::offline()
        .with_clock(clock())
        .with_option("profiles", path.display().to_string())
        .with_option("user", "zoe");
    let report = turn(&env, "What was the highest unemployment rate?").await;
    assert_eq!(report.state["user_context"]["display_name"], "Zoe");
    assert_eq!(report.state["user_context"]["known"], true);
    assert_eq!(report.state["routes"][0]["tool"], "doc_search");
    assert!(
        report.response.contains(
            "(Your profile (reader) may not use sql_query, so I used doc_search instead.)"
        ),
        "{}",
        report.response
    );
    // The demo users were seeded into the new file too.
    assert!(
        ProfileStore::open(&path)
            .unwrap()
            .get("maria")
            .unwrap()
            .is_some()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn tokens_come_from_reported_usage_and_start_time_from_the_clock() {
    let clock = clock();
    let env = FlowEnv::offline().with_clock(clock.clone());
    let session = find("orchestrator")
        .unwrap()
        .open(&env, Some(Arc::new(InMemorySaver::new())), None)
        .unwrap();
    let first = session
        .turn(
            "What was GDP in 2008?",
            Some("t"),
            StreamModes::NONE,
            &mut |_| {},
        )
        .await
        .unwrap();
    let used = |r: &agent_flows::TurnReport| r.usage["input_tokens"] + r.usage["output_tokens"];
    assert_eq!(first.state["start_time"], json!(FIXED_TIME as f64));
    assert_eq!(first.state["tokens_used"], json!(used(&first)));
    assert!(used(&first) > 0);
    clock.advance(Duration::from_secs(90));
    let second = session
        .turn("And in 2009?", Some("t"), StreamModes::NONE, &mut |_| {})
        .await
        .unwrap();
    assert_eq!(second.state["start_time"], json!((FIXED_TIME + 90) as f64));
    assert_eq!(
        second.state["tokens_used"],
        json!(used(&first) + used(&second))
    );
    assert_eq!(second.state["session_id"], "t");
    assert_eq!(second.state["turn"], 2);
}

#[tokio::test]
async fn with_no_retries_allowed_an_empty_result_is_reported_at_once() {
    let env = FlowEnv::offline()
        .with_clock(clock())
        .with_option("max_retries", "0");
    let report = turn(&env, "What do the docs say about joblessness?").await;
    assert_eq!(
        flat(&report.path),
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
    assert_eq!(report.state["verification"]["verdict"], "give_up");
    assert!(
        report
            .response
            .contains("nothing in the documentation matches “joblessness”"),
        "{}",
        report.response
    );
}

#[tokio::test]
async fn a_thread_continues_in_a_new_session_with_its_summary() {
    let path = std::env::temp_dir().join(format!(
        "agentgraph-orch-thread-{}.sqlite",
        std::process::id()
    ));
    let env = FlowEnv::offline().with_clock(clock());
    let open = || {
        find("orchestrator")
            .unwrap()
            .open(
                &env,
                Some(Arc::new(SqliteSaver::open(&path).unwrap())),
                None,
            )
            .unwrap()
    };
    let first = open()
        .turn(
            "¿Cuál fue la tasa de paro en 1982?",
            Some("paro"),
            StreamModes::NONE,
            &mut |_| {},
        )
        .await
        .unwrap();
    assert!(
        first.response.starts_with("Tasa de paro (%): T1 1982 8,8"),
        "{}",
        first.response
    );
    let second = open()
        .turn("¿Y en 1983?", Some("paro"), StreamModes::NONE, &mut |_| {})
        .await
        .unwrap();
    let summary = second.state["summary"].as_str().unwrap();
    assert!(
        summary.starts_with(
            "Turn 1 (es): asked «¿Cuál fue la tasa de paro en 1982?»; sql_query unemp @ 1982"
        ),
        "{summary}"
    );
    assert!(summary.contains("Turn 2 (es)"), "{summary}");
    assert_eq!(
        second.state["tool_calls"][0]["args"]["params"],
        json!([1983, 1983])
    );
    assert!(
        second.response.starts_with("Tasa de paro (%): T1 1983"),
        "{}",
        second.response
    );
    let _ = std::fs::remove_file(&path);
}

/// A model whose planner's first round makes `first` calls; everything else (the re-plans,
/// the verifier's judgement, the answer) is the offline model's rules.
fn wrong_first_then_offline(first: Vec<(&'static str, &'static str, Value)>) -> Arc<dyn ChatModel> {
    use agent_flows::offline::RuleReply;
    use agent_flows::orchestrator::offline::{answer, planner};
    use agent_flows::orchestrator::relevance;
    Arc::new(ScriptedModel::from_request_fn(
        move |messages, options: &CallOptions| match options.task.as_deref() {
            Some("planner") if !after_tools(messages) => first
                .iter()
                .fold(Reply::text(""), |reply, (id, name, args)| {
                    reply.with_tool_call_id(*id, *name, args.clone())
                }),
            Some("planner") => match planner::reply(messages, options) {
                RuleReply::ToolCalls { text, calls } => {
                    calls.into_iter().fold(Reply::text(text), |reply, call| {
                        reply.with_tool_call_id(call.id, call.name, call.args)
                    })
                }
                RuleReply::Text(text) => Reply::text(text),
                RuleReply::Json(value) => Reply::json(value),
            },
            Some(relevance::TASK) => {
                Reply::json(serde_json::to_value(relevance::reply(messages)).unwrap())
            }
            _ => Reply::text(answer::reply(messages)),
        },
    ))
}

fn offline_context(model: Arc<dyn ChatModel>) -> OrchestratorContext {
    OrchestratorContext::new(model, clock(), Settings::default(), profiles()).unwrap()
}

const PATH_WITH_ONE_REPLAN: [&str; 11] = [
    "ingress",
    "planner",
    "tool_router",
    "tool_executor",
    "verifier",
    "planner",
    "tool_router",
    "tool_executor",
    "verifier",
    "generator",
    "summarizer",
];

#[tokio::test]
async fn a_result_for_another_series_is_judged_off_and_replanned_until_it_answers() {
    let wrong = json!({
        "sql": "SELECT year, quarter, infl FROM macrodata WHERE year BETWEEN ?1 AND ?2 ORDER BY year, quarter",
        "params": [2008, 2008],
    });
    let context = offline_context(wrong_first_then_offline(vec![("c1", "sql_query", wrong)]));
    let (state, events, path) =
        run_graph(context, "What was the unemployment rate in 2008?", "demo").await;
    assert_eq!(flat(&path), PATH_WITH_ONE_REPLAN);
    assert_eq!(state.retry_count, 1);
    // The wrong result is marked with the verifier's reason...
    let off = &state.scratchpad["c1"];
    let error = off.error.as_ref().unwrap();
    assert_eq!(
        serde_json::to_value(error.kind).unwrap(),
        json!("irrelevant")
    );
    assert_eq!(
        error.message,
        "`c1` returned infl, but the question asks for unemp"
    );
    // ...the re-plan asked for the series the question names, over the same year...
    let fixed: Vec<&agent_flows::orchestrator::ToolRecord> =
        state.scratchpad.values().filter(|r| r.round == 1).collect();
    assert_eq!(fixed.len(), 1);
    assert!(fixed[0].args["sql"].as_str().unwrap().contains("unemp"));
    assert_eq!(fixed[0].args["params"], json!([2008, 2008]));
    // ...which the verifier passes, and the answer is about unemployment only.
    assert_eq!(
        state.verification.reasons.last().unwrap(),
        "relevant: the results fit what was asked (unemp @ 2008)"
    );
    assert!(
        state.response.starts_with("Unemployment rate (%): 2008Q1"),
        "{}",
        state.response
    );
    assert!(!state.response.contains("Inflation"), "{}", state.response);
    let retry = events
        .iter()
        .find(|e| e.event == "on_custom_event")
        .unwrap();
    assert_eq!(retry.data["status"], "planning_retry");
    assert_eq!(
        retry.data["reasons"][1],
        "not relevant: `c1` returned infl, but the question asks for unemp"
    );
}

#[tokio::test]
async fn a_result_for_another_period_is_replanned_in_any_language() {
    for (question, wrong_params, expected) in [
        (
            "What was GDP in 2008Q3?",
            json!([1982, 3]),
            json!([2008, 3]),
        ),
        (
            "¿Cuál fue el PIB en el tercer trimestre de 2008?",
            json!([2008, 1]),
            json!([2008, 3]),
        ),
        (
            "Какой был ВВП в третьем квартале 2008 года?",
            json!([1990, 3]),
            json!([2008, 3]),
        ),
    ] {
        let wrong = json!({
            "sql": "SELECT year, quarter, realgdp FROM macrodata WHERE year = ?1 AND quarter = ?2",
            "params": wrong_params,
        });
        let context = offline_context(wrong_first_then_offline(vec![("c1", "sql_query", wrong)]));
        let (state, _, path) = run_graph(context, question, "demo").await;
        assert_eq!(flat(&path), PATH_WITH_ONE_REPLAN, "{question}");
        let error = state.scratchpad["c1"].error.as_ref().unwrap();
        assert!(
            error
                .message
                .ends_with("but the question asks about 2008Q3"),
            "{question}: {}",
            error.message
        );
        let fixed: Vec<&agent_flows::orchestrator::ToolRecord> =
            state.scratchpad.values().filter(|r| r.round == 1).collect();
        assert_eq!(fixed[0].args["params"], expected, "{question}");
        assert!(
            state.response.contains("2008"),
            "{question}: {}",
            state.response
        );
    }
}

#[tokio::test]
async fn a_result_that_answers_passes_the_relevance_check() {
    let context = offline_context(agent_flows::orchestrator::offline::model());
    let (state, _, path) = run_graph(context, "¿Cuál fue la tasa de paro en 1982?", "demo").await;
    assert_eq!(
        flat(&path),
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
    assert_eq!(state.retry_count, 0);
    assert_eq!(
        state.verification.reasons.last().unwrap(),
        "relevant: the results fit what was asked (unemp @ 1982)"
    );
}

#[tokio::test]
async fn with_a_model_the_relevance_verdict_is_the_models() {
    // The first query is right by the rules; the model judges otherwise, and its reason
    // reaches the planner.
    let judged = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = judged.clone();
    let model = Arc::new(ScriptedModel::from_request_fn(
        move |messages, options: &CallOptions| match options.task.as_deref() {
            Some("planner") if !after_tools(messages) => Reply::tool_call_with_id(
                "c1",
                "sql_query",
                json!({"sql": "SELECT year, quarter, unemp FROM macrodata WHERE year = ?1", "params": [2008]}),
            ),
            Some("planner")
                if messages
                    .iter()
                    .any(|m| m.content().contains("Calls to replace: c1")) =>
            {
                Reply::tool_call_with_id(
                    "c2",
                    "sql_query",
                    json!({"sql": "SELECT year, quarter, unemp FROM macrodata WHERE year = ?1", "params": [2009]}),
                )
            }
            Some("planner") => Reply::text("no reason given"),
            Some("RelevanceVerdict") => {
                if seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                    Reply::json(json!({
                        "relevant": false,
                        "reason": "the user meant the year after the crisis, 2009",
                        "off_calls": ["c1"],
                    }))
                } else {
                    Reply::json(json!({"relevant": true, "reason": "2009 as meant"}))
                }
            }
            _ => Reply::text("Unemployment was 9.3% in 2009."),
        },
    ));
    let context = offline_context(model.clone());
    let (state, _, path) =
        run_graph(context, "What was the unemployment rate in 2008?", "demo").await;
    assert_eq!(flat(&path), PATH_WITH_ONE_REPLAN);
    assert_eq!(judged.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(
        state.scratchpad["c1"].error.as_ref().unwrap().message,
        "the user meant the year after the crisis, 2009"
    );
    assert_eq!(
        state.scratchpad["c2"].status,
        agent_flows::orchestrator::Status::Ok
    );
    assert_eq!(
        state.verification.reasons.last().unwrap(),
        "relevant: 2009 as meant"
    );
    // The judge was shown the question and the round's results.
    let request = model
        .requests()
        .into_iter()
        .find(|r| r.options.task.as_deref() == Some("RelevanceVerdict"))
        .unwrap();
    let shown: Vec<&str> = request.messages.iter().map(|m| m.content()).collect();
    assert!(shown.contains(&"What was the unemployment rate in 2008?"));
    assert!(
        shown
            .iter()
            .any(|m| m.starts_with("Results to judge:") && m.contains("\"c1\""))
    );
    assert_eq!(state.response, "Unemployment was 9.3% in 2009.");
}

async fn ask(session: &dyn agent_flows::FlowSession, text: &str, thread: &str) -> String {
    session
        .turn(text, Some(thread), StreamModes::NONE, &mut |_| {})
        .await
        .unwrap()
        .response
}

#[tokio::test]
async fn a_user_is_remembered_across_threads_and_another_user_is_not() {
    use agent_core::store::{InMemoryStore, Store, ns};
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let saver: Arc<dyn agent_core::Checkpointer> = Arc::new(InMemorySaver::new());
    let open = |user: &str| {
        find("orchestrator")
            .unwrap()
            .open(
                &FlowEnv::offline().with_option("user", user),
                Some(saver.clone()),
                Some(store.clone()),
            )
            .unwrap()
    };
    let demo = open("demo");
    ask(
        demo.as_ref(),
        "What was the unemployment rate in 2008?",
        "memory-a",
    )
    .await;
    // A new thread of the same user: the follow-up resolves from the last thread's summary.
    let follow_up = ask(demo.as_ref(), "And in 2009?", "memory-b").await;
    assert!(
        follow_up.to_lowercase().contains("unemployment"),
        "{follow_up}"
    );
    assert!(follow_up.contains("2009"), "{follow_up}");
    let recalled = ask(demo.as_ref(), "What did I ask before?", "memory-c").await;
    assert!(recalled.contains("unemployment rate in 2008"), "{recalled}");
    // Another user's new thread knows nothing of it.
    let maria = open("maria");
    let theirs = ask(maria.as_ref(), "What did I ask before?", "memory-d").await;
    assert!(!theirs.contains("unemployment"), "{theirs}");
    // The store holds the user's profile and summary.
    let profile = store.get(&ns(["users", "demo"]), "profile").await.unwrap();
    assert!(profile.is_some_and(|p| p.value.contains_key("role")));
    let summary = store
        .get(&ns(["users", "demo"]), "summary")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(summary.value["session_id"], "memory-c");
    assert!(summary.value["summary"].as_str().unwrap().contains("2009"));
}
