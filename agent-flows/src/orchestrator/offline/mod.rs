//! The orchestrator's offline model: the planner's and the generator's decisions made by
//! rules, in English, Spanish and Russian, behind the same [`ChatModel`] trait a provider
//! implements. The rules read exactly what a real model is sent: the system prompt (the
//! user's profile lines), the summary block, the conversation, this turn's earlier tool calls
//! and their results, and the tools bound to the call.
//!
//! - [`planner`] (task `planner` with tools bound, or `PlannerDecision` for the JSON
//!   planner): which tools a question needs — SQL over the data set for numbers
//!   ([`sql`] builds the query from the [`Question`](super::lexicon::Question)), the
//!   documents for definitions and history, the calculator, the clock — and, on a retry, what
//!   to try instead of what came back empty or failed.
//! - [`super::relevance`] (task `RelevanceVerdict`): whether the round's results are for the
//!   series and the period asked.
//! - [`answer`]: the answer from the results, in the user's language: values with their
//!   units, highest/lowest/average/change, the data set's coverage, document passages,
//!   honest failures, clarifying questions, greetings, and what was asked before (from the
//!   summary).

pub mod answer;
pub mod planner;
pub mod sql;

use std::sync::Arc;

use agent_llm::{CallOptions, ChatModel, Message, ToolCall, ToolMessage};
use serde_json::Value;

use super::tools::is_empty_result;
use crate::offline::{OfflineModel, RuleReply};

/// The offline model of the orchestrator (tasks `planner`, `PlannerDecision`,
/// `RelevanceVerdict` and `generator`).
pub fn model() -> Arc<dyn ChatModel> {
    OfflineModel::new("offline-orchestrator")
        .rule("planner", |messages: &[Message], options: &CallOptions| {
            Ok(planner::reply(messages, options))
        })
        .json(
            "PlannerDecision",
            |messages: &[Message], options: &CallOptions| planner::decision(messages, options),
        )
        .json(
            super::relevance::TASK,
            |messages: &[Message], _: &CallOptions| super::relevance::reply(messages),
        )
        .text("generator", |messages: &[Message], _: &CallOptions| {
            answer::reply(messages)
        })
        .build()
}

/// The value of a `Key: value` line of the system messages (the profile lines the nodes
/// write into their prompts).
pub fn profile_line<'a>(messages: &'a [Message], key: &str) -> Option<&'a str> {
    messages
        .iter()
        .filter(|m| m.kind() == "system")
        .flat_map(|m| m.content().lines())
        .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// What a tool call came back with, as a model reads it from the tool message.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// A result.
    Ok(Value),
    /// An empty result.
    Empty,
    /// A failure: its kind (`timeout`, `forbidden`...) and message.
    Error {
        /// The failure kind, as the executor writes it.
        kind: String,
        /// The message.
        message: String,
    },
    /// No result came back (the turn was cut short).
    Missing,
}

/// One call of this turn and what it came back with.
#[derive(Clone, Debug, PartialEq)]
pub struct Attempt {
    /// The call.
    pub call: ToolCall,
    /// What came back.
    pub outcome: Outcome,
    /// The planning round it belongs to (0 first).
    pub round: usize,
}

/// Parses a tool message the executor wrote: `Error (<kind>): <message>` for failures,
/// the result as JSON text otherwise.
pub fn outcome(tool: &str, message: &ToolMessage) -> Outcome {
    if message.is_error {
        let (kind, text) = message
            .content
            .strip_prefix("Error (")
            .and_then(|rest| rest.split_once("): "))
            .map(|(kind, text)| (kind.to_owned(), text.to_owned()))
            .unwrap_or_else(|| ("failed".to_owned(), message.content.clone()));
        return Outcome::Error {
            kind,
            message: text,
        };
    }
    let value = serde_json::from_str(&message.content)
        .unwrap_or_else(|_| Value::String(message.content.clone()));
    if is_empty_result(tool, &value) {
        Outcome::Empty
    } else {
        Outcome::Ok(value)
    }
}

/// The last human message and the tool calls made after it, with their outcomes.
pub fn current_turn(messages: &[Message]) -> (&str, Vec<Attempt>) {
    let start = messages
        .iter()
        .rposition(|m| m.kind() == "human")
        .unwrap_or(0);
    let question = messages
        .get(start)
        .filter(|m| m.kind() == "human")
        .map(Message::content)
        .unwrap_or("");
    let mut attempts: Vec<Attempt> = Vec::new();
    let mut round = 0;
    for message in &messages[start..] {
        match message {
            Message::Ai(ai) if !ai.tool_calls.is_empty() => {
                for call in &ai.tool_calls {
                    attempts.push(Attempt {
                        call: call.clone(),
                        outcome: Outcome::Missing,
                        round,
                    });
                }
                round += 1;
            }
            Message::Tool(tool) => {
                if let Some(attempt) = attempts
                    .iter_mut()
                    .rev()
                    .find(|a| a.call.id == tool.tool_call_id)
                {
                    attempt.outcome = outcome(&attempt.call.name, tool);
                }
            }
            _ => {}
        }
    }
    (question, attempts)
}

/// A planner reply: the calls, or a note when no tool is needed.
pub fn calls_reply(calls: Vec<ToolCall>, note: &str) -> RuleReply {
    if calls.is_empty() {
        RuleReply::Text(note.to_owned())
    } else {
        RuleReply::ToolCalls {
            text: String::new(),
            calls,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_current_turn() {
        let messages = vec![
            Message::system("prompt\nUser: Ana (role analyst)\nTime zone: Europe/Madrid"),
            Message::human("old question"),
            Message::ai("old answer"),
            Message::human("GDP in 2012?"),
            Message::ai_tool_calls([ToolCall::new(
                "call_1",
                "sql_query",
                json!({"sql": "SELECT 1"}),
            )]),
            Message::tool(
                "call_1",
                r#"{"columns":["realgdp"],"rows":[],"row_count":0,"truncated":false}"#,
            ),
            Message::ai_tool_calls([ToolCall::new("call_2", "doc_search", json!({"query": "x"}))]),
            Message::tool_error(
                "call_2",
                "Error (forbidden): user `guest` may not use `doc_search`",
            ),
        ];
        let (question, attempts) = current_turn(&messages);
        assert_eq!(question, "GDP in 2012?");
        assert_eq!(attempts.len(), 2);
        assert_eq!(attempts[0].outcome, Outcome::Empty);
        assert_eq!(attempts[0].round, 0);
        assert_eq!(
            attempts[1].outcome,
            Outcome::Error {
                kind: "forbidden".into(),
                message: "user `guest` may not use `doc_search`".into()
            }
        );
        assert_eq!(attempts[1].round, 1);
        assert_eq!(profile_line(&messages, "Time zone"), Some("Europe/Madrid"));
        assert_eq!(profile_line(&messages, "Detail"), None);
    }
}
