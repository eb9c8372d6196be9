//! The ReAct flow's offline model: llm mode's decisions made by rules, through the same
//! tool-calling interface a real model gets (`CallOptions::tools`).
//!
//! Task `react_model`:
//! - it reads the user's message ([`analyze`]) and calls a tool per request not tried yet this
//!   turn, all in one reply (they run in parallel): `echo` for the text to echo, `calculator`
//!   per expression, `datetime` per place whose time is asked (UTC when none is named) — only
//!   tools it was offered, only the one named when the call names one;
//! - with nothing left to call, it answers from this turn's results in the message's language
//!   ([`answer::compose`]), errors included, or directly (a greeting, what it can do, places
//!   it does not know);
//! - it honours `tool_choice`: `none` makes it answer now (saying what it could not do without
//!   tools), `required` makes it call a tool even with nothing left to do (an echo of the
//!   message) — as a grammar-constrained model would.

use std::sync::Arc;

use agent_llm::{CallOptions, ChatModel, Message, ToolCall, ToolChoice};
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
    let results = evidence(episode(messages));
    let allowed = |tool: &str| {
        options.tools.iter().any(|t| t.name == tool)
            && match &options.tool_choice {
                Some(ToolChoice::Tool(name)) => name == tool,
                _ => true,
            }
    };
    if options.tool_choice == Some(ToolChoice::None) {
        return RuleReply::Text(if results.is_empty() && !intents.needs().is_empty() {
            answer::without_tools(&intents)
        } else {
            answer::compose(query, &intents, &results)
        });
    }
    // A request is tried once: a failed call is not retried (the answer says it failed).
    let calls: Vec<(String, Value)> = intents
        .needs()
        .iter()
        .filter(|need| allowed(need.tool()))
        .map(|need| (need.tool().to_owned(), need.args()))
        .filter(|(tool, args)| !results.iter().any(|e| e.tool == *tool && e.args == *args))
        .collect();
    if !calls.is_empty() {
        return RuleReply::ToolCalls {
            text: String::new(),
            // The model numbers the calls (`call_1`, `call_2`...).
            calls: calls
                .into_iter()
                .map(|(name, args)| ToolCall::new(String::new(), name, args))
                .collect(),
        };
    }
    let forced = matches!(
        options.tool_choice,
        Some(ToolChoice::Required | ToolChoice::Tool(_))
    );
    if forced && allowed("echo") {
        return RuleReply::ToolCalls {
            text: String::new(),
            calls: vec![ToolCall::new(
                String::new(),
                "echo",
                serde_json::json!({ "text": query }),
            )],
        };
    }
    RuleReply::Text(answer::compose(query, &intents, &results))
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
            RuleReply::ToolCalls { calls, .. } => {
                calls.into_iter().map(|c| (c.name, c.args)).collect()
            }
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
    fn honours_the_tool_choice() {
        let question = [Message::human("What is 6 times 7?")];
        let mut none = offered(&["echo", "calculator", "datetime"]);
        none.tool_choice = Some(ToolChoice::None);
        assert_eq!(
            reply(&question, &none),
            RuleReply::Text(
                "I have no tool call left for this, so I cannot: calculate 6 * 7.".into()
            )
        );
        let mut required = offered(&["echo", "calculator", "datetime"]);
        required.tool_choice = Some(ToolChoice::Required);
        let hello = [Message::human("hello")];
        assert_eq!(
            calls(reply(&hello, &required)),
            [("echo".to_owned(), json!({"text": "hello"}))]
        );
        let mut named = offered(&["echo", "calculator", "datetime"]);
        named.tool_choice = Some(ToolChoice::Tool("datetime".into()));
        let both = [Message::human("2+2 and the time in Oslo?")];
        assert_eq!(
            calls(reply(&both, &named)),
            [("datetime".to_owned(), json!({"timezone": "Europe/Oslo"}))]
        );
    }

    #[test]
    fn calls_what_is_left_in_a_later_round() {
        let options = offered(&["echo", "calculator", "datetime"]);
        let messages = [
            Message::human("2+2 and the time in Oslo?"),
            Message::ai_tool_calls([ToolCall::new(
                "1",
                "calculator",
                json!({"expression": "2 + 2"}),
            )]),
            Message::tool("1", "4"),
        ];
        assert_eq!(
            calls(reply(&messages, &options)),
            [("datetime".to_owned(), json!({"timezone": "Europe/Oslo"}))]
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
