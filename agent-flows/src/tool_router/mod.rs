//! Seed 000, the tool router (`tool-router`): `router` decides which tools a question needs,
//! `tool_executor` runs every call in parallel, `generator` writes the answer from the
//! results in the user's language.
//!
//! ```text
//! START -> router -(tools)--> tool_executor -> generator -> END
//!                 \-(direct)-------------------^
//! ```
//!
//! The state is the seed's `AgentState`. Decisions the seed gives to an LLM go through the
//! context's [`ChatModel`]: the router asks for a [`RouterDecision`] (structured output), the
//! generator streams its answer. Offline, both are rules ([`offline`]): places in English,
//! Spanish and Russian resolved to IANA zones ([`places`]), arithmetic in words or symbols
//! ([`arithmetic`]), answers written in the question's language.
//!
//! Where the seed is loose, decided here:
//! - The seed keys arguments by call (`datetime_0`, `datetime_1`) but looks them up by tool
//!   name, so two calls of one tool would share arguments. Here every call has its own id,
//!   `<tool>_<position>`, and `tool_args` / `tool_results` are keyed by it.
//! - `tool_results` merges (the seed's reducer) within a turn; a turn's input clears it (an
//!   empty map resets, see [`merge_or_clear`]), so one turn's answer never reads another's
//!   results. The conversation (`messages`) carries over on a thread.
//! - A tool that fails or gets arguments that do not fit its schema yields an error result
//!   that the generator explains; a router reply that is not a valid decision after one
//!   corrective retry fails the turn with the model's error.
//! - `messages` is a chat ([`crate::chat`]): the question as the user sent it, then, when
//!   tools ran, an AI message with the planned calls and a tool message per result (written
//!   by `tool_executor`; their call ids are unique in the conversation, while `tool_args` and
//!   `tool_results` keep the seed's `<tool>_<position>` keys), then the answer. The router's
//!   call is tagged `nostream`: its JSON never streams as a chat message. The generator reads
//!   the conversation without the tool exchange, the results coming in the seed's
//!   `Tool Results` message.

pub mod arithmetic;
pub mod nodes;
pub mod offline;
pub mod places;

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_core::{Clock, END, GraphState, START, StateGraph};
use agent_llm::{ChatModel, ChatModelExt, HumanMessage, Message, StructuredModel};
use agent_tools::builtin::{Calculator, DateTime};
use agent_tools::{ToolNode, ToolRegistry};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::env::FlowEnv;
use crate::error::FlowError;
use crate::registry::{Demo, FlowSpec, MAX_MESSAGE_CHARS, check_length};

// The nodes stay in their module: `#[node]` makes each fn a unit struct of the same name,
// which would shadow bindings such as schemars' `generator` in derives here.

/// The flow's state, field for field the seed's `AgentState`.
#[derive(GraphState, Clone, Default, Debug)]
pub struct ToolRouterState {
    /// The conversation (LangGraph's `MessagesAnnotation`).
    #[reducer(agent_llm::add_messages)]
    pub messages: Vec<Message>,
    /// The tool of each call the router planned, in order (`["datetime", "datetime"]`).
    pub selected_tools: Vec<String>,
    /// Arguments by call id (`datetime_0`, `datetime_1`...).
    pub tool_args: BTreeMap<String, Value>,
    /// Results by call id: `{"tool", "args", "output"}` or `{"tool", "args", "error"}`.
    #[reducer(merge_or_clear)]
    pub tool_results: BTreeMap<String, Value>,
    /// The answer of the turn.
    pub response: String,
}

/// `tool_results`' reducer: merges key by key (the seed's `{...x, ...y}`); an empty map
/// clears the field (a new turn).
pub fn merge_or_clear(current: &mut BTreeMap<String, Value>, update: BTreeMap<String, Value>) {
    if update.is_empty() {
        current.clear();
    } else {
        current.extend(update);
    }
}

/// One call the router plans.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlannedCall {
    /// The tool's name (`datetime`, `calculator`).
    pub tool: String,
    /// Its arguments, an object matching the tool's schema.
    pub args: Value,
}

/// What the router decides: the calls to make, none to answer directly.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RouterDecision {
    /// The tool calls, in the order the question asks; empty when no tool is needed.
    pub calls: Vec<PlannedCall>,
}

/// What the nodes read beside the state.
pub struct ToolRouterContext {
    /// The router: the model asked for a [`RouterDecision`].
    pub router: StructuredModel<Arc<dyn ChatModel>, RouterDecision>,
    /// The model that writes the answer.
    pub generator: Arc<dyn ChatModel>,
    /// The tools (`datetime` on the context's clock, `calculator`), run with per-call
    /// timeouts.
    pub tools: ToolNode,
    /// The clock.
    pub clock: Arc<dyn Clock>,
}

impl ToolRouterContext {
    /// A context on `model` and `clock`.
    pub fn new(model: Arc<dyn ChatModel>, clock: Arc<dyn Clock>) -> Result<Self, FlowError> {
        let registry = ToolRegistry::new()
            .with_tool(DateTime::with_clock(clock.clone()))
            .and_then(|r| r.with_tool(Calculator))
            .map_err(|e| FlowError::Setup {
                flow: ToolRouter::NAME,
                message: e.to_string(),
            })?;
        Ok(ToolRouterContext {
            router: model
                .clone()
                .with_structured_output::<RouterDecision>()
                .with_schema(decision_schema(&registry)),
            generator: model,
            tools: ToolNode::new(registry).call_timeout(std::time::Duration::from_secs(10)),
            clock,
        })
    }
}

/// The arguments the router fills, per tool; the tools' other arguments keep their defaults
/// (the datetime tool's `format`, say). A tool not listed gets its whole schema.
const ROUTER_ARGS: &[(&str, &[&str])] =
    &[("datetime", &["timezone"]), ("calculator", &["expression"])];

/// The most calls one decision may plan.
pub const MAX_CALLS: usize = 8;

/// The JSON schema of a [`RouterDecision`] over `registry`: each call is one of the
/// registry's tools with that tool's own argument schema, every argument the router fills
/// required, nothing else allowed. Grammar-constrained models (llama.cpp, OpenAI strict
/// mode) can then only produce calls that the tools accept.
pub fn decision_schema(registry: &ToolRegistry) -> Value {
    let calls: Vec<Value> = registry
        .specs()
        .into_iter()
        .map(|spec| {
            let all = spec.parameters["properties"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            let filled: Vec<String> = match ROUTER_ARGS.iter().find(|(tool, _)| *tool == spec.name)
            {
                Some((_, names)) => names.iter().map(|n| (*n).to_owned()).collect(),
                None => all.keys().cloned().collect(),
            };
            let properties: serde_json::Map<String, Value> = all
                .into_iter()
                .filter(|(name, _)| filled.contains(name))
                .map(|(name, mut schema)| {
                    if let Some(schema) = schema.as_object_mut() {
                        schema.remove("default");
                    }
                    (name, schema)
                })
                .collect();
            serde_json::json!({
                "type": "object",
                "description": spec.description,
                "properties": {
                    "tool": { "type": "string", "enum": [spec.name] },
                    "args": {
                        "type": "object",
                        "properties": properties,
                        "required": filled,
                        "additionalProperties": false,
                    },
                },
                "required": ["tool", "args"],
                "additionalProperties": false,
            })
        })
        .collect();
    serde_json::json!({
        "type": "object",
        "properties": {
            "calls": {
                "type": "array",
                "description": "The tool calls, in the order the question asks; empty when no tool is needed.",
                "items": { "anyOf": calls },
                "maxItems": MAX_CALLS,
            },
        },
        "required": ["calls"],
        "additionalProperties": false,
    })
}

/// The graph, as the seed builds it.
pub fn graph() -> StateGraph<ToolRouterState, ToolRouterContext> {
    StateGraph::with_context_type()
        .add_named(nodes::router)
        .add_named(nodes::tool_executor)
        .add_named(nodes::generator)
        .add_edge(START, "router")
        .add_conditional_edges(
            "router",
            nodes::route_after_router,
            [("tools", "tool_executor"), ("direct", "generator")],
        )
        .add_edge("tool_executor", "generator")
        .add_edge("generator", END)
}

/// The compiled flow with `context` (no checkpointer).
pub fn build(
    context: ToolRouterContext,
) -> Result<agent_core::CompiledGraph<ToolRouterState, ToolRouterContext>, FlowError> {
    Ok(graph().compile()?.with_context(context))
}

/// The input of one turn: the question (appended to `messages` as it is), and the per-turn
/// fields reset.
pub fn question(message: impl Into<HumanMessage>) -> ToolRouterStateUpdate {
    ToolRouterStateUpdate::default()
        .messages(vec![Message::Human(message.into())])
        .selected_tools(Vec::new())
        .tool_args(BTreeMap::new())
        .tool_results(BTreeMap::new())
        .response(String::new())
}

/// The registry entry.
pub struct ToolRouter;

impl FlowSpec for ToolRouter {
    type State = ToolRouterState;
    type Context = ToolRouterContext;

    const NAME: &'static str = "tool-router";
    const SEED: &'static str = "000";
    const SUMMARY: &'static str =
        "time anywhere and arithmetic: router -> parallel tool calls -> answer (es/en/ru)";
    const DESCRIPTION: &'static str = "Seed 000: `router` decides which tools a question needs \
        (structured output: a list of calls), `tool_executor` runs every call in parallel \
        (`datetime` in any IANA zone or major city, `calculator`), `generator` answers from \
        the results in the user's language. A question that needs no tool goes straight to \
        `generator`.";

    fn demos() -> &'static [Demo] {
        &[
            Demo {
                name: "two_cities_es",
                turns: &["¿Qué hora es en Tokio y Londres?"],
                options: &[],
            },
            Demo {
                name: "new_york_en",
                turns: &["What time is it in New York?"],
                options: &[],
            },
            Demo {
                name: "moscow_ru",
                turns: &["Который час в Москве?"],
                options: &[],
            },
            Demo {
                name: "arithmetic_and_time",
                turns: &["How much is 12*(3+4), and what time is it in Sydney?"],
                options: &[],
            },
            Demo {
                name: "unknown_city",
                turns: &["¿Qué hora es en Atlantis?"],
                options: &[],
            },
            Demo {
                name: "no_tool_then_tool",
                turns: &[
                    "Hola, ¿qué puedes hacer?",
                    "¿Y qué hora es en Buenos Aires?",
                ],
                options: &[],
            },
        ]
    }

    fn graph() -> StateGraph<ToolRouterState, ToolRouterContext> {
        graph()
    }

    fn context(env: &FlowEnv) -> Result<ToolRouterContext, FlowError> {
        env.no_tools(Self::NAME)?;
        ToolRouterContext::new(env.model_or(offline::model), env.clock.clone())
    }

    fn input(message: HumanMessage, _env: &FlowEnv) -> Result<ToolRouterStateUpdate, FlowError> {
        check_length(Self::NAME, &message.content, MAX_MESSAGE_CHARS)?;
        Ok(question(message))
    }

    fn response(state: &ToolRouterState) -> String {
        state.response.clone()
    }
}
