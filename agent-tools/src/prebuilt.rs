//! [`create_react_agent`]: LangGraph's prebuilt ReAct agent — a model that calls tools in a
//! loop until it answers — as a graph you can run, stream, checkpoint and extend.
//!
//! ```text
//! START -> agent -(tool calls)-> tools -> agent
//!                -(answer)-----> END                       (or generate_structured_response -> END)
//! ```
//!
//! - `agent` calls the model with the tools bound (and the system prompt, not stored in the
//!   state); `tools` runs every call of its reply through a [`ToolNode`], concurrently.
//! - **Step limit**: at most [`max_steps`](ReactAgentBuilder::max_steps) model calls per user
//!   turn (default [`DEFAULT_MAX_STEPS`]). A reply that asks for tools when no model call is
//!   left for reading their results — by this limit, or by the run's recursion limit — is
//!   replaced by LangGraph's "Sorry, need more steps to process this request.", so the run
//!   ends cleanly instead of failing with a recursion error.
//! - **Approval**: with [`approve_tools`](ReactAgentBuilder::approve_tools) (or
//!   [`approve_all_tools`](ReactAgentBuilder::approve_all_tools)), `tools` pauses with an
//!   `interrupt()` that shows the calls ([`ApprovalRequest`]) before running them; resume the
//!   thread with `Command::resume(Approval::...)`. Rejected calls are answered with an error
//!   tool message that says so, and the model goes on. Needs a checkpointer and a thread.
//! - **Structured response**: with [`response_format`](ReactAgentBuilder::response_format),
//!   a last model call turns the conversation into a `T` (JSON-schema structured output),
//!   stored in [`AgentState::structured_response`].
//!
//! ```
//! use std::sync::Arc;
//! use agent_core::RunConfig;
//! use agent_llm::{Reply, ScriptedModel};
//! use agent_tools::{ToolRegistry, prebuilt::{AgentState, create_react_agent}};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let model = ScriptedModel::new([Reply::tool_call("calculator", json!({"expression": "6 * 7"})), Reply::text("6 × 7 = 42")]);
//! let agent = create_react_agent(model, ToolRegistry::builtins()).build()?;
//! let out = agent.invoke(AgentState::user("What is 6 times 7?"), RunConfig::default()).await?;
//! assert_eq!(out.answer(), Some("6 × 7 = 42"));
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use agent_core::{
    BoxResult, Checkpointer, CompiledGraph, END, GraphState, NodeContext, START, StateGraph,
};
use agent_llm::{
    CallOptions, ChatModel, ChatModelExt, LlmError, Message, ToolCall, ToolMessage, invoke_in_node,
};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;
use crate::node::ToolNode;
use crate::registry::ToolRegistry;
use crate::state::last_ai_message;

/// Model calls per user turn unless set.
pub const DEFAULT_MAX_STEPS: usize = 10;

/// What the agent says when it runs out of steps (LangGraph's words).
pub const NEED_MORE_STEPS: &str = "Sorry, need more steps to process this request.";

/// The state of a prebuilt agent: the conversation, and the structured response when one was
/// asked for.
#[derive(GraphState, Clone, Default, Debug)]
pub struct AgentState {
    /// The conversation (LangGraph's `messages`).
    #[reducer(agent_llm::add_messages)]
    pub messages: Vec<Message>,
    /// The last turn's structured response (with a response format).
    pub structured_response: Option<Value>,
}

crate::messages_state!(AgentState, messages);

impl AgentState {
    /// The input of one turn: the user's message (and last turn's structured response
    /// cleared).
    pub fn user(text: impl Into<String>) -> AgentStateUpdate {
        AgentStateUpdate::default()
            .messages(vec![Message::human(text)])
            .structured_response(None::<Value>)
    }

    /// The text of the last AI message, when it has some.
    pub fn answer(&self) -> Option<&str> {
        last_ai_message(&self.messages)
            .map(|ai| ai.content.as_str())
            .filter(|text| !text.is_empty())
    }

    /// The structured response as a `T` (`None` when there is none).
    pub fn structured<T: DeserializeOwned>(&self) -> Option<Result<T, serde_json::Error>> {
        self.structured_response.clone().map(serde_json::from_value)
    }
}

/// What `tools` shows the human when it pauses for approval (the interrupt's value).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// Always `tool_approval`.
    pub kind: String,
    /// The calls waiting for approval, as the model asked for them.
    pub tool_calls: Vec<ToolCall>,
}

/// The human's answer to an [`ApprovalRequest`]: resume with
/// `Command::resume(Approval::approve())` (or a plain `true` / `"yes"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Approval {
    /// `true`: run every call; `false`: run none.
    All(bool),
    /// Every call, with a reason for a rejection.
    Decision {
        /// Whether the calls may run.
        approve: bool,
        /// Why not (shown to the model).
        #[serde(default)]
        reason: Option<String>,
    },
    /// Call by call: the ids approved map to `true`; any id not listed is rejected.
    PerCall {
        /// Decision per call id.
        calls: BTreeMap<String, bool>,
        /// Why the others were not approved (shown to the model).
        #[serde(default)]
        reason: Option<String>,
    },
    /// `yes`, `y`, `ok`, `approve`, `approved` or `true` run every call; any other text
    /// rejects them all and is shown to the model as the reason.
    Text(String),
}

impl Approval {
    /// Run every call.
    pub fn approve() -> Self {
        Approval::All(true)
    }

    /// Run none, telling the model why.
    pub fn reject(reason: impl Into<String>) -> Self {
        Approval::Decision {
            approve: false,
            reason: Some(reason.into()),
        }
    }

    /// Run only the calls with these ids.
    pub fn only<I: Into<String>>(ids: impl IntoIterator<Item = I>) -> Self {
        Approval::PerCall {
            calls: ids.into_iter().map(|id| (id.into(), true)).collect(),
            reason: None,
        }
    }

    /// Whether the call `id` may run.
    pub fn allows(&self, id: &str) -> bool {
        match self {
            Approval::All(yes) => *yes,
            Approval::Decision { approve, .. } => *approve,
            Approval::PerCall { calls, .. } => calls.get(id).copied().unwrap_or(false),
            Approval::Text(text) => matches!(
                text.trim().to_ascii_lowercase().as_str(),
                "yes" | "y" | "ok" | "approve" | "approved" | "true"
            ),
        }
    }

    /// The reason given for rejections, if any.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Approval::Decision { reason, .. } | Approval::PerCall { reason, .. } => {
                reason.as_deref()
            }
            Approval::Text(text) if !self.allows("") => Some(text.as_str()),
            _ => None,
        }
    }
}

/// Which tools need approval.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum ApprovalPolicy {
    #[default]
    None,
    All,
    Only(BTreeSet<String>),
}

impl ApprovalPolicy {
    fn needs(&self, tool: &str) -> bool {
        match self {
            ApprovalPolicy::None => false,
            ApprovalPolicy::All => true,
            ApprovalPolicy::Only(names) => names.contains(tool),
        }
    }
}

type Structurer = Arc<
    dyn Fn(
            Arc<dyn ChatModel>,
            Vec<Message>,
            NodeContext,
        ) -> BoxFuture<'static, Result<Value, LlmError>>
        + Send
        + Sync,
>;

/// Builds a prebuilt ReAct agent; see [`create_react_agent`].
#[must_use = "call .build() to get the agent"]
pub struct ReactAgentBuilder {
    model: Arc<dyn ChatModel>,
    tools: ToolNode,
    prompt: Option<String>,
    max_steps: usize,
    checkpointer: Option<Arc<dyn Checkpointer>>,
    approval: ApprovalPolicy,
    structurer: Option<Structurer>,
}

impl std::fmt::Debug for ReactAgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReactAgentBuilder")
            .field(
                "model",
                &format!("{}:{}", self.model.provider(), self.model.model_name()),
            )
            .field("tools", &self.tools)
            .field("prompt", &self.prompt.is_some())
            .field("max_steps", &self.max_steps)
            .field("checkpointer", &self.checkpointer.is_some())
            .field("approval", &self.approval)
            .field("structured_response", &self.structurer.is_some())
            .finish()
    }
}

impl From<ToolRegistry> for ToolNode {
    fn from(registry: ToolRegistry) -> Self {
        ToolNode::new(registry)
    }
}

/// LangGraph's `create_react_agent(model, tools)`: a model that calls `tools` in a loop until
/// it answers. `tools` is a [`ToolRegistry`], or a [`ToolNode`] set up with timeouts, retries
/// or error handling. Configure the rest on the builder, then [`build`](ReactAgentBuilder::build).
pub fn create_react_agent(
    model: impl ChatModel + 'static,
    tools: impl Into<ToolNode>,
) -> ReactAgentBuilder {
    ReactAgentBuilder {
        model: Arc::new(model),
        tools: tools.into(),
        prompt: None,
        max_steps: DEFAULT_MAX_STEPS,
        checkpointer: None,
        approval: ApprovalPolicy::None,
        structurer: None,
    }
}

impl ReactAgentBuilder {
    /// The system prompt, sent before the conversation on every model call (not stored in the
    /// state).
    pub fn prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = Some(prompt.into());
        self
    }

    /// At most `steps` model calls per user turn (at least 1).
    pub fn max_steps(mut self, steps: usize) -> Self {
        self.max_steps = steps.max(1);
        self
    }

    /// Where threads persist (needed for approval, and for conversations across runs).
    pub fn checkpointer(mut self, saver: Arc<dyn Checkpointer>) -> Self {
        self.checkpointer = Some(saver);
        self
    }

    /// Pauses for a human's approval before running any of these tools.
    pub fn approve_tools<N: Into<String>>(mut self, names: impl IntoIterator<Item = N>) -> Self {
        let mut set = match std::mem::take(&mut self.approval) {
            ApprovalPolicy::Only(set) => set,
            _ => BTreeSet::new(),
        };
        set.extend(names.into_iter().map(Into::into));
        self.approval = ApprovalPolicy::Only(set);
        self
    }

    /// Pauses for a human's approval before running any tool.
    pub fn approve_all_tools(mut self) -> Self {
        self.approval = ApprovalPolicy::All;
        self
    }

    /// Ends each turn with a structured response of type `T`, in
    /// [`AgentState::structured_response`] (read it with [`AgentState::structured`]).
    pub fn response_format<T>(mut self) -> Self
    where
        T: JsonSchema + DeserializeOwned + Serialize + Send + 'static,
    {
        self.structurer = Some(Arc::new(|model, messages, ctx| {
            Box::pin(async move {
                let reply = model
                    .with_structured_output::<T>()
                    .invoke_in(&ctx, &messages, &CallOptions::new())
                    .await?;
                serde_json::to_value(reply.value).map_err(|e| LlmError::Other {
                    provider: "prebuilt",
                    message: format!("the structured response does not serialize: {e}"),
                })
            })
        }));
        self
    }

    /// The agent's graph, not compiled: add nodes or edges before compiling it yourself.
    pub fn graph(self) -> Result<StateGraph<AgentState>, ToolError> {
        self.check()?;
        Ok(self.into_graph().0)
    }

    /// The compiled agent (with the checkpointer, when one was given).
    pub fn build(self) -> Result<CompiledGraph<AgentState>, ToolError> {
        self.check()?;
        let (graph, saver) = self.into_graph();
        Ok(match saver {
            Some(saver) => graph.compile_with(saver)?,
            None => graph.compile()?,
        })
    }

    fn check(&self) -> Result<(), ToolError> {
        if self.approval != ApprovalPolicy::None && self.checkpointer.is_none() {
            return Err(ToolError::AgentSetup {
                message: "approval before tools pauses the run, which needs a checkpointer: \
                          add .checkpointer(..) and run on a thread"
                    .to_owned(),
            });
        }
        if let ApprovalPolicy::Only(names) = &self.approval {
            let registry = self.tools.registry();
            let unknown: Vec<&str> = names
                .iter()
                .map(String::as_str)
                .filter(|n| !registry.contains(n))
                .collect();
            if !unknown.is_empty() {
                return Err(ToolError::AgentSetup {
                    message: format!(
                        "approval asked for tools the agent does not have: {}; its tools: {}",
                        unknown.join(", "),
                        registry.names().collect::<Vec<_>>().join(", ")
                    ),
                });
            }
        }
        Ok(())
    }

    fn into_graph(self) -> (StateGraph<AgentState>, Option<Arc<dyn Checkpointer>>) {
        let ReactAgentBuilder {
            model,
            tools,
            prompt,
            max_steps,
            checkpointer,
            approval,
            structurer,
        } = self;
        let specs = tools.registry().specs();
        let structured = structurer.is_some();
        let agent_model = model.clone();
        let agent = move |state: Arc<AgentState>, ctx: NodeContext| {
            let model = agent_model.clone();
            let prompt = prompt.clone();
            let specs = specs.clone();
            async move {
                let turn = turn(&state.messages);
                let calls_so_far = turn.iter().filter(|m| m.kind() == "ai").count();
                let mut messages = Vec::with_capacity(state.messages.len() + 1);
                if let Some(prompt) = &prompt {
                    messages.push(Message::system(prompt.clone()));
                }
                messages.extend(state.messages.iter().cloned());
                let reply =
                    invoke_in_node(&*model, &messages, &CallOptions::new().tools(specs), &ctx)
                        .await?;
                let mut message = reply.message;
                // Tools need a step after them to read their results: without one, say so.
                // This step, the tools' and the agent's after them (and the structured
                // response's, when asked for).
                let steps_needed = 3 + usize::from(structured);
                let last_step =
                    calls_so_far + 1 >= max_steps || ctx.remaining_steps() < steps_needed;
                if last_step && message.has_tool_calls() {
                    message.tool_calls.clear();
                    message.content = NEED_MORE_STEPS.to_owned();
                }
                BoxResult::Ok(AgentStateUpdate::default().messages(vec![Message::Ai(message)]))
            }
        };
        let tools_node = move |state: Arc<AgentState>, ctx: NodeContext| {
            let tools = tools.clone();
            let approval = approval.clone();
            async move {
                let calls = last_ai_message(&state.messages)
                    .map(|ai| ai.tool_calls.clone())
                    .unwrap_or_default();
                let waiting: Vec<ToolCall> = calls
                    .iter()
                    .filter(|c| approval.needs(&c.name))
                    .cloned()
                    .collect();
                let decision = if waiting.is_empty() {
                    None
                } else {
                    Some(ctx.interrupt_as::<Approval>(ApprovalRequest {
                        kind: "tool_approval".to_owned(),
                        tool_calls: waiting.clone(),
                    })?)
                };
                let allowed = |call: &ToolCall| match &decision {
                    Some(decision) if waiting.iter().any(|w| w.id == call.id) => {
                        decision.allows(&call.id)
                    }
                    _ => true,
                };
                let to_run: Vec<ToolCall> = calls.iter().filter(|c| allowed(c)).cloned().collect();
                let mut ran = tools.run_calls_in(&to_run, Some(&ctx)).await?.into_iter();
                let reason = decision
                    .as_ref()
                    .and_then(Approval::reason)
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default();
                let answers: Vec<Message> = calls
                    .iter()
                    .filter_map(|call| {
                        if allowed(call) {
                            ran.next().map(Message::Tool)
                        } else {
                            Some(Message::Tool(ToolMessage {
                                tool_call_id: call.id.clone(),
                                name: Some(call.name.clone()),
                                content: format!(
                                    "The user rejected this call of `{}`{reason}. Do not call it again unless asked.",
                                    call.name
                                ),
                                is_error: true,
                                ..ToolMessage::default()
                            }))
                        }
                    })
                    .collect();
                BoxResult::Ok(AgentStateUpdate::default().messages(answers))
            }
        };
        let route = move |state: &AgentState| -> &'static str {
            match state.messages.last() {
                Some(Message::Ai(ai)) if ai.has_tool_calls() => "tools",
                _ if structured => "respond",
                _ => "end",
            }
        };
        let mut graph = StateGraph::<AgentState>::new()
            .add_node("agent", agent)
            .add_node("tools", tools_node)
            .add_edge(START, "agent")
            .add_edge("tools", "agent");
        graph = match structurer {
            Some(structurer) => {
                let respond = move |state: Arc<AgentState>, ctx: NodeContext| {
                    let structurer = structurer.clone();
                    let model = model.clone();
                    async move {
                        let value = structurer(model, state.messages.clone(), ctx).await?;
                        BoxResult::Ok(AgentStateUpdate::default().structured_response(Some(value)))
                    }
                };
                graph
                    .add_node("generate_structured_response", respond)
                    .add_conditional_edges(
                        "agent",
                        route,
                        [
                            ("tools", "tools"),
                            ("respond", "generate_structured_response"),
                        ],
                    )
                    .add_edge("generate_structured_response", END)
            }
            None => graph.add_conditional_edges("agent", route, [("tools", "tools"), ("end", END)]),
        };
        (graph, checkpointer)
    }
}

/// The messages of the current turn: after the last human message.
fn turn(messages: &[Message]) -> &[Message] {
    match messages.iter().rposition(|m| m.kind() == "human") {
        Some(at) => &messages[at + 1..],
        None => messages,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn approvals_read_every_shape() {
        for (value, allows_a, reason) in [
            (json!(true), true, None),
            (json!(false), false, None),
            (json!("yes"), true, None),
            (json!("not today"), false, Some("not today")),
            (
                json!({"approve": false, "reason": "too risky"}),
                false,
                Some("too risky"),
            ),
            (json!({"calls": {"a": true, "b": false}}), true, None),
            (json!({"calls": {"b": true}}), false, None),
        ] {
            let approval: Approval = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(approval.allows("a"), allows_a, "{value}");
            assert_eq!(approval.reason(), reason, "{value}");
        }
        assert!(Approval::only(["x"]).allows("x"));
        assert!(!Approval::only(["x"]).allows("y"));
        assert!(!Approval::reject("no").allows("x"));
        assert_eq!(
            serde_json::to_value(Approval::approve()).unwrap(),
            json!(true)
        );
    }

    #[test]
    fn the_turn_starts_after_the_last_human_message() {
        let messages = [
            Message::human("a"),
            Message::ai("b"),
            Message::human("c"),
            Message::ai("d"),
        ];
        assert_eq!(turn(&messages).len(), 1);
        assert_eq!(turn(&[]).len(), 0);
    }
}
