//! The seed's extension points, used from outside the flow: a new tool registered in
//! `TOOL_REGISTRY` (its own test binary, since the registry is process-wide), a new static
//! rule that picks it, a model that calls it, and another system hint.

use std::sync::Arc;

use agent_core::{ManualClock, RunConfig};
use agent_flows::react::rules::Proposal;
use agent_flows::react::{
    self, Mode, ReactContext, Registration, RuleInput, StaticRules, TOOL_REGISTRY, TurnSettings,
    ensure_tools_registered, turn_input,
};
use agent_llm::{Reply, ScriptedModel};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct ReverseArgs {
    /// The text to reverse.
    text: String,
}

fn reverse() -> impl agent_tools::DynTool {
    agent_tools::tool_fn(
        "reverse",
        "Reverses a text.",
        |args: ReverseArgs| async move { Ok::<_, String>(args.text.chars().rev().collect::<String>()) },
    )
}

/// "reverse <word>" asks for the reverse tool.
fn reverse_rule(input: &RuleInput<'_>) -> Option<Proposal> {
    let word = input.state.user_query.strip_prefix("reverse ")?;
    let args = json!({ "text": word });
    (!input.state.calls.iter().any(|c| c.is("reverse", &args))).then(|| Proposal {
        tool: "reverse".into(),
        args,
    })
}

#[tokio::test]
async fn a_registered_tool_is_used_without_touching_the_flow() {
    ensure_tools_registered();
    assert_eq!(
        TOOL_REGISTRY.register_tool(reverse()).unwrap(),
        Registration::Added
    );
    assert_eq!(
        TOOL_REGISTRY.register_tool(reverse()).unwrap(),
        Registration::AlreadyRegistered,
        "registration is idempotent"
    );
    assert_eq!(ensure_tools_registered(), 0);
    let clock = Arc::new(ManualClock::at_unix_seconds(1_784_116_800));

    // Static mode: a rule of the program's own picks the new tool after the forced echo.
    let context = ReactContext::new(react::offline::model(), clock.clone())
        .unwrap()
        .with_rules(StaticRules::builtin().with_rule("reverse", reverse_rule));
    let graph = react::build(context).unwrap();
    let out = graph
        .invoke(
            turn_input("reverse hello", TurnSettings::default()).unwrap(),
            RunConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.artifacts["reverse_2"]["output"], "olleh");
    assert_eq!(out.calls[1].origin, "rule:reverse");
    let block = out.final_block.as_ref().unwrap();
    assert_eq!(block.summary, "reverse: olleh");
    assert_eq!(block.evidence_keys, ["echo_1", "reverse_2"]);
    assert_eq!(
        out.metadata["tools"],
        json!(["echo", "calculator", "datetime", "reverse"])
    );

    // LLM mode: the model is offered the new tool, calls it, answers; another system hint.
    let model = ScriptedModel::new([
        Reply::tool_call("reverse", json!({"text": "abc"})),
        Reply::text("It is cba."),
    ]);
    let context = ReactContext::new(Arc::new(model.clone()), clock)
        .unwrap()
        .with_system_hint("Reverse things.");
    let graph = react::build(context).unwrap();
    let settings = TurnSettings {
        mode: Mode::Llm,
        ..TurnSettings::default()
    };
    let out = graph
        .invoke(
            turn_input("reverse abc", settings).unwrap(),
            RunConfig::default(),
        )
        .await
        .unwrap();
    let requests = model.requests();
    assert!(
        requests[0]
            .options
            .tools
            .iter()
            .any(|t| t.name == "reverse")
    );
    assert_eq!(requests[0].messages[0].content(), "Reverse things.");
    assert_eq!(out.working_memory["reverse_1"], "cba");
    assert_eq!(out.final_block.as_ref().unwrap().summary, "It is cba.");
}
