//! The ReAct flow's offline model: llm mode's decisions made by rules, through the same
//! tool-calling interface a real model gets (`CallOptions::tools`).
//!
//! Task `react_model`:
//! - before any tool result this turn, it reads the user's message ([`analyze`]) and calls a
//!   tool per request, all in one reply (they run in parallel): `echo` for the text to echo,
//!   `calculator` per expression, `datetime` per place whose time is asked (UTC when none is
//!   named) — only tools it was offered; with nothing to call, it answers directly (a greeting,
//!   what it can do, places it does not know);
//! - after the results, it answers from them in the message's language ([`answer::compose`]),
//!   errors included.

use std::sync::Arc;

use agent_llm::{CallOptions, ChatModel, Message};
use serde_json::Value;

use super::answer::{self, Evidence};
use super::intent::analyze;
use super::nodes::{MODEL_TASK, episode};
use crate::offline::{OfflineModel, RuleReply, last_human};

/// The offline model of the `react` flow.
pub fn model() -> Arc<dyn ChatModel> {
    OfflineModel::new("offline-react")
        .rule(MODEL_TASK, |messages, options| Ok(reply(messages, options)))
        .build()
}

/// The rules: see the module docs.
pub fn reply(messages: &[Message], options: &CallOptions) -> RuleReply {
    let query = last_human(messages);
    let intents = analyze(query);
    let turn = episode(messages);
    let offered = |tool: &str| options.tools.iter().any(|t| t.name == tool);
    if !turn.iter().any(|m| m.kind() == "tool") {
        let calls: Vec<(String, Value)> = intents
            .needs()
            .iter()
            .filter(|need| offered(need.tool()))
            .map(|need| (need.tool().to_owned(), need.args()))
            .collect();
        if calls.is_empty() {
            return RuleReply::Text(answer::compose(query, &intents, &[]));
        }
        return RuleReply::ToolCalls {
            text: String::new(),
            calls,
        };
    }
    RuleReply::Text(answer::compose(query, &intents, &evidence(turn)))
}

/// The tool results of a turn, paired with the calls that asked for them.
fn evidence(turn: &[Message]) -> Vec<Evidence> {
    let calls: Vec<&agent_llm::ToolCall> = turn.iter().flat_map(Message::tool_calls).collect();
    turn.iter()
        .filter_map(|m| match m {
            Message::Tool(tool) => Some(tool),
            _ => None,
        })
        .enumerate()
        .map(|(i, tool)| {
            let call = calls.iter().find(|c| c.id == tool.tool_call_id);
            let name = call
                .map(|c| c.name.clone())
                .or_else(|| tool.name.clone())
                .unwrap_or_default();
            Evidence {
                key: format!("{name}_{}", i + 1),
                tool: name,
                args: call.map(|c| c.args.clone()).unwrap_or(Value::Null),
                outcome: if tool.is_error {
                    Err(tool.content.clone())
                } else {
                    Ok(serde_json::from_str(&tool.content)
                        .unwrap_or_else(|_| Value::from(tool.content.clone())))
                },
                origin: "model".to_owned(),
                step: 0,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use agent_llm::{ToolCall, ToolSpec};
    use serde_json::json;

    use super::*;

    fn offered(names: &[&str]) -> CallOptions {
        CallOptions::new().task(MODEL_TASK).tools(
            names
                .iter()
                .map(|n| ToolSpec::new(*n, "a tool", json!({"type": "object"}))),
        )
    }

    fn calls(reply: RuleReply) -> Vec<(String, Value)> {
        match reply {
            RuleReply::ToolCalls { calls, .. } => calls,
            other => panic!("expected tool calls, got {other:?}"),
        }
    }

    #[test]
    fn calls_a_tool_per_request_in_one_reply() {
        let all = offered(&["echo", "calculator", "datetime"]);
        let got = calls(reply(
            &[Message::human(
                "Repite «hola» y ¿qué hora es en Madrid y en Lima?",
            )],
            &all,
        ));
        assert_eq!(
            got,
            [
                ("echo".to_owned(), json!({"text": "hola"})),
                ("datetime".to_owned(), json!({"timezone": "Europe/Madrid"})),
                ("datetime".to_owned(), json!({"timezone": "America/Lima"})),
            ]
        );
        // Only tools it was offered.
        let only_echo = offered(&["echo"]);
        let got = reply(&[Message::human("what is 2+2?")], &only_echo);
        assert!(matches!(got, RuleReply::Text(_)), "{got:?}");
    }

    #[test]
    fn answers_from_the_results_of_this_turn_only() {
        let options = offered(&["echo", "calculator", "datetime"]);
        let messages = [
            Message::human("echo old"),
            Message::ai_tool_calls([ToolCall::new("1", "echo", json!({"text": "old"}))]),
            Message::tool("1", r#"{"echo":"old","chars":3,"words":1}"#),
            Message::ai("Echo: old"),
            Message::human("Сколько будет 7 умножить на 6?"),
            Message::ai_tool_calls([ToolCall::new(
                "2",
                "calculator",
                json!({"expression": "7 * 6"}),
            )]),
            Message::tool("2", "42"),
        ];
        assert_eq!(
            reply(&messages, &options),
            RuleReply::Text("7 * 6 = 42".into())
        );
        let failed = [
            Message::human("calculate 1/0"),
            Message::ai_tool_calls([ToolCall::new(
                "3",
                "calculator",
                json!({"expression": "1 / 0"}),
            )]),
            Message::tool_error(
                "3",
                "Error: tool `calculator` failed: division by zero\n Please fix your mistakes.",
            ),
        ];
        assert_eq!(
            reply(&failed, &options),
            RuleReply::Text(
                "I could not calculate 1 / 0: tool `calculator` failed: division by zero".into()
            )
        );
    }

    #[test]
    fn greets_and_says_what_it_can_do_without_tools() {
        let options = offered(&["echo", "calculator", "datetime"]);
        let RuleReply::Text(text) = reply(&[Message::human("hola, ¿qué puedes hacer?")], &options)
        else {
            panic!("a text answer");
        };
        assert!(text.starts_with("¡Hola! Puedo repetir texto"), "{text}");
    }
}
