//! Offline models: each flow's decisions made by rules, behind the same [`ChatModel`] trait a
//! real provider implements.
//!
//! A node calls its model the same way whether it is offline or not (structured output,
//! token streaming, usage, events); only the answers differ. An [`OfflineModel`] holds one
//! rule per task: the call's [`CallOptions::task`] (structured-output calls default it to the
//! schema's name, e.g. `RouterDecision`). A rule reads the messages and options and returns
//! text, JSON or tool calls (for a model with tools bound); the model streams it word by word
//! and reports usage estimated from the text (about four characters a token), so offline runs
//! exercise the whole pipeline.

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_llm::{CallOptions, ChatModel, LlmError, Message, Reply, ScriptedModel, ToolCall};
use serde::Serialize;

use crate::lang::estimate_tokens;

/// What a rule answers.
#[derive(Clone, Debug, PartialEq)]
pub enum RuleReply {
    /// A text answer.
    Text(String),
    /// A JSON answer (structured output).
    Json(serde_json::Value),
    /// An answer that calls tools (a model with tools bound), with its text (often empty).
    ToolCalls {
        /// Text beside the calls.
        text: String,
        /// The calls; an empty id lets the model number it (`call_1`, `call_2`...).
        calls: Vec<ToolCall>,
    },
}

type Rule = Arc<dyn Fn(&[Message], &CallOptions) -> Result<RuleReply, String> + Send + Sync>;

/// A rule-based chat model; see the module docs.
///
/// ```
/// use agent_flows::offline::{OfflineModel, RuleReply};
/// use agent_llm::{CallOptions, ChatModel, Message};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_llm::LlmError> {
/// let model = OfflineModel::new("offline-greeter")
///     .text("greet", |messages, _| format!("hello, {}", messages.last().map(Message::content).unwrap_or("")))
///     .build();
/// let reply = model.invoke(&[Message::human("Ana")], &CallOptions::new().task("greet")).await?;
/// assert_eq!(reply.text(), "hello, Ana");
/// let unknown = model.invoke(&[], &CallOptions::new().task("other")).await;
/// assert!(unknown.is_err_and(|e| e.to_string().contains("no rule for task `other`")));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct OfflineModel {
    name: String,
    rules: BTreeMap<String, Rule>,
}

impl std::fmt::Debug for OfflineModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OfflineModel")
            .field("name", &self.name)
            .field("tasks", &self.rules.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl OfflineModel {
    /// A model with no rules yet, reporting `name` as its model name.
    pub fn new(name: impl Into<String>) -> Self {
        OfflineModel {
            name: name.into(),
            rules: BTreeMap::new(),
        }
    }

    /// Answers calls labelled `task` with the text `rule` returns.
    pub fn text(
        self,
        task: &str,
        rule: impl Fn(&[Message], &CallOptions) -> String + Send + Sync + 'static,
    ) -> Self {
        self.rule(task, move |messages, options| {
            Ok(RuleReply::Text(rule(messages, options)))
        })
    }

    /// Answers calls labelled `task` (for structured output: the schema's name) with the
    /// JSON of what `rule` returns.
    pub fn json<T: Serialize>(
        self,
        task: &str,
        rule: impl Fn(&[Message], &CallOptions) -> T + Send + Sync + 'static,
    ) -> Self {
        self.rule(task, move |messages, options| {
            serde_json::to_value(rule(messages, options))
                .map(RuleReply::Json)
                .map_err(|e| format!("the rule's answer does not serialize: {e}"))
        })
    }

    /// Answers calls labelled `task` with whatever `rule` returns, or fails the call.
    pub fn rule(
        mut self,
        task: &str,
        rule: impl Fn(&[Message], &CallOptions) -> Result<RuleReply, String> + Send + Sync + 'static,
    ) -> Self {
        self.rules.insert(task.to_owned(), Arc::new(rule));
        self
    }

    /// The model, ready to hand to a flow.
    pub fn build(self) -> Arc<dyn ChatModel> {
        let OfflineModel { name, rules } = self;
        let model_name = name.clone();
        let model = ScriptedModel::from_request_fn(move |messages, options| {
            let task = options.task.as_deref().unwrap_or("");
            let Some(rule) = rules.get(task) else {
                let known: Vec<&str> = rules.keys().map(String::as_str).collect();
                return Reply::error(LlmError::Other {
                    provider: "offline",
                    message: format!(
                        "{model_name} has no rule for task `{task}` (it answers: {})",
                        known.join(", ")
                    ),
                });
            };
            let input: u64 = messages.iter().map(|m| estimate_tokens(m.content())).sum();
            match rule(messages, options) {
                Ok(RuleReply::Text(text)) => {
                    let output = estimate_tokens(&text);
                    Reply::text(text).with_usage(input, output)
                }
                Ok(RuleReply::Json(value)) => {
                    let output = estimate_tokens(&value.to_string());
                    Reply::json(value).with_usage(input, output)
                }
                Ok(RuleReply::ToolCalls { text, calls }) => {
                    let output = estimate_tokens(&text)
                        + calls
                            .iter()
                            .map(|c| 1 + estimate_tokens(&c.args.to_string()))
                            .sum::<u64>();
                    calls
                        .into_iter()
                        .fold(Reply::text(text), |reply, call| {
                            if call.id.is_empty() {
                                reply.with_tool_call(call.name, call.args)
                            } else {
                                reply.with_tool_call_id(call.id, call.name, call.args)
                            }
                        })
                        .with_usage(input, output)
                }
                Err(message) => Reply::error(LlmError::Other {
                    provider: "offline",
                    message: format!("{model_name}, task `{task}`: {message}"),
                }),
            }
        })
        .with_name(name)
        .without_recording();
        Arc::new(model)
    }
}

/// The text of the last human message (what most rules read).
pub fn last_human(messages: &[Message]) -> &str {
    messages
        .iter()
        .rev()
        .find(|m| m.kind() == "human")
        .map(Message::content)
        .unwrap_or_default()
}

/// The text of the system messages whose content starts with `prefix`, prefix removed (how
/// nodes pass data such as tool results to the model, as the seeds do).
pub fn system_block<'a>(messages: &'a [Message], prefix: &str) -> Option<&'a str> {
    messages
        .iter()
        .filter(|m| m.kind() == "system")
        .find_map(|m| m.content().strip_prefix(prefix))
        .map(str::trim)
}
