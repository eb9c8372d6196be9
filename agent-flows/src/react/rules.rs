//! The static mode's tool selection: the first pass forces `echo` (the seed), then rules pick
//! the next call; [`select`] also applies the repeated-call guard.
//!
//! A rule is a function of the state (and the intents and tools) that proposes the next call,
//! or none. [`StaticRules::builtin`] has one, `needs`: the first thing the message asks for
//! ([`Need`](super::intent::Need)) whose tool is registered and whose call has not been made yet — so it
//! never repeats itself. Rules added with [`StaticRules::with_rule`] run after it (the seed's
//! extension point "change the rules of `tool_selector`"); a rule that proposes a call already
//! made is stopped by the guard, not run again.

use std::sync::Arc;

use agent_tools::ToolRegistry;
use serde_json::json;

use super::ReactState;
use super::intent::Intents;

/// What a rule reads.
pub struct RuleInput<'a> {
    /// The state so far.
    pub state: &'a ReactState,
    /// What the message asks for.
    pub intents: &'a Intents,
    /// The tools there are.
    pub tools: &'a ToolRegistry,
}

/// A call a rule proposes: the tool and its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub args: serde_json::Value,
}

/// A selector rule: the next call, or `None` when it has nothing to add.
pub type SelectorRule = Arc<dyn Fn(&RuleInput<'_>) -> Option<Proposal> + Send + Sync>;

/// The static mode's rules, in order.
#[derive(Clone)]
pub struct StaticRules {
    rules: Vec<(String, SelectorRule)>,
}

impl std::fmt::Debug for StaticRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.rules.iter().map(|(name, _)| name))
            .finish()
    }
}

impl Default for StaticRules {
    fn default() -> Self {
        StaticRules::builtin()
    }
}

impl StaticRules {
    /// No rules: after the forced echo, nothing.
    pub fn empty() -> Self {
        StaticRules { rules: Vec::new() }
    }

    /// The built-in rule, `needs` (see the module docs).
    pub fn builtin() -> Self {
        StaticRules::empty().with_rule("needs", needs_rule)
    }

    /// These rules and `rule` after them, named `name` in the state (`rule:<name>`).
    pub fn with_rule(
        mut self,
        name: impl Into<String>,
        rule: impl Fn(&RuleInput<'_>) -> Option<Proposal> + Send + Sync + 'static,
    ) -> Self {
        self.rules.push((name.into(), Arc::new(rule)));
        self
    }

    /// The rules' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.rules.iter().map(|(n, _)| n.as_str()).collect()
    }
}

/// The built-in rule: the first need not met yet whose tool is registered.
fn needs_rule(input: &RuleInput<'_>) -> Option<Proposal> {
    input
        .intents
        .needs()
        .iter()
        .filter(|need| input.tools.contains(need.tool()))
        .map(|need| Proposal {
            tool: need.tool().to_owned(),
            args: need.args(),
        })
        .find(|p| !input.state.calls.iter().any(|c| c.is(&p.tool, &p.args)))
}

/// The call of the first pass: `echo` of the text the message asks to echo, else of the
/// whole message.
pub fn first_pass(intents: &Intents, query: &str) -> Proposal {
    let text = intents.echo.clone().unwrap_or_else(|| query.to_owned());
    Proposal {
        tool: "echo".to_owned(),
        args: json!({ "text": text }),
    }
}

/// What the selector does next.
#[derive(Clone, Debug, PartialEq)]
pub enum Selection {
    /// Run this call; `origin` is `forced` or `rule:<name>`.
    Call {
        /// The call.
        proposal: Proposal,
        /// Who picked it.
        origin: String,
    },
    /// A rule proposed a call already made: the guard stops the loop.
    Repeated {
        /// The call.
        proposal: Proposal,
        /// The rule.
        origin: String,
    },
    /// Nothing left to do.
    Nothing,
}

/// The next selection for `state` (see the module docs).
pub fn select(
    state: &ReactState,
    intents: &Intents,
    rules: &StaticRules,
    tools: &ToolRegistry,
) -> Selection {
    if state.calls.is_empty() {
        return Selection::Call {
            proposal: first_pass(intents, &state.user_query),
            origin: "forced".to_owned(),
        };
    }
    let input = RuleInput {
        state,
        intents,
        tools,
    };
    for (name, rule) in &rules.rules {
        if let Some(proposal) = rule(&input) {
            let origin = format!("rule:{name}");
            let repeated = state
                .calls
                .iter()
                .any(|c| c.is(&proposal.tool, &proposal.args));
            return if repeated {
                Selection::Repeated { proposal, origin }
            } else {
                Selection::Call { proposal, origin }
            };
        }
    }
    Selection::Nothing
}

#[cfg(test)]
mod tests {
    use agent_tools::builtin::{Calculator, DateTime};

    use super::super::intent::analyze;
    use super::super::{CallRecord, tools::EchoTool};
    use super::*;

    fn registry() -> ToolRegistry {
        ToolRegistry::new()
            .with_tool(EchoTool)
            .and_then(|r| r.with_tool(Calculator))
            .and_then(|r| r.with_tool(DateTime::new()))
            .unwrap()
    }

    fn done(state: &mut ReactState, proposal: &Proposal) {
        let n = state.calls.len() + 1;
        state.calls.push(CallRecord {
            key: format!("{}_{n}", proposal.tool),
            tool: proposal.tool.clone(),
            args: proposal.args.clone(),
            call_id: format!("{}_{n}", proposal.tool),
            step: n as u32,
            origin: "test".into(),
        });
    }

    fn run(query: &str, rules: &StaticRules, tools: &ToolRegistry) -> Vec<Selection> {
        let mut state = ReactState {
            user_query: query.into(),
            ..ReactState::default()
        };
        let intents = analyze(query);
        let mut out = Vec::new();
        for _ in 0..10 {
            let selection = select(&state, &intents, rules, tools);
            out.push(selection.clone());
            match selection {
                Selection::Call { proposal, .. } => done(&mut state, &proposal),
                _ => break,
            }
        }
        out
    }

    fn calls(selections: &[Selection]) -> Vec<(String, serde_json::Value, String)> {
        selections
            .iter()
            .filter_map(|s| match s {
                Selection::Call { proposal, origin } => {
                    Some((proposal.tool.clone(), proposal.args.clone(), origin.clone()))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_first_pass_echoes_then_the_needs_follow_in_order() {
        let out = run(
            "¿Cuánto es 12*(3+4) y qué hora es en Tokio?",
            &StaticRules::builtin(),
            &registry(),
        );
        assert_eq!(
            calls(&out),
            [
                (
                    "echo".into(),
                    json!({"text": "¿Cuánto es 12*(3+4) y qué hora es en Tokio?"}),
                    "forced".into()
                ),
                (
                    "calculator".into(),
                    json!({"expression": "12 * (3 + 4)"}),
                    "rule:needs".into()
                ),
                (
                    "datetime".into(),
                    json!({"timezone": "Asia/Tokyo"}),
                    "rule:needs".into()
                ),
            ]
        );
        assert_eq!(out.last(), Some(&Selection::Nothing));
    }

    #[test]
    fn an_echo_request_is_met_by_the_forced_echo() {
        let out = run("Repite: hola mundo", &StaticRules::builtin(), &registry());
        assert_eq!(
            calls(&out),
            [(
                "echo".into(),
                json!({"text": "hola mundo"}),
                "forced".into()
            )]
        );
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn needs_without_their_tool_are_skipped() {
        let only_echo = ToolRegistry::new().with_tool(EchoTool).unwrap();
        let out = run("what is 2+2?", &StaticRules::builtin(), &only_echo);
        assert_eq!(calls(&out).len(), 1);
        assert_eq!(out.last(), Some(&Selection::Nothing));
    }

    #[test]
    fn a_rule_that_repeats_itself_is_stopped() {
        let stubborn = StaticRules::builtin().with_rule("stubborn", |_: &RuleInput<'_>| {
            Some(Proposal {
                tool: "echo".into(),
                args: json!({"text": "again"}),
            })
        });
        let out = run("hello", &stubborn, &registry());
        assert_eq!(calls(&out).len(), 2, "{out:?}");
        assert_eq!(
            out.last(),
            Some(&Selection::Repeated {
                proposal: Proposal {
                    tool: "echo".into(),
                    args: json!({"text": "again"})
                },
                origin: "rule:stubborn".into()
            })
        );
        assert_eq!(stubborn.names(), ["needs", "stubborn"]);
    }
}
