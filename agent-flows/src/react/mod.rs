//! Seed 004, the ReAct archetype (`react`): a neutral reason–act loop over tools in two
//! modes, with guards that stop every loop, a critic and a final block.
//!
//! ```text
//! static:  START -> planner -> reasoner -(act)-> tool_selector -(execute)-> tool_executor -> reasoner
//!                              reasoner -(close)-> critic -> finalizer -> END
//!                              tool_selector -(reason)-> reasoner
//! llm:     START -> planner -> model -(tools)-> tools -> model
//!                              model -(fallback)-> fallback -> sync
//!                              model -(close)-> sync -> critic -> finalizer -> END
//! ```
//!
//! One graph holds both modes; `planner` routes by the turn's [`Mode`]. Static mode decides
//! by rules ([`rules`]): `tool_selector` forces `echo` on the first pass, then asks its rules
//! for the next call. LLM mode gives the decision to the context's [`ChatModel`], bound to
//! the registry's tools; `tools` runs its calls through [`ToolNode`] (in parallel),
//! `model_router` ([`nodes::model_router`]) closes, falls back or runs them. Offline, the
//! model is a rules engine ([`offline`]) that reads requests in English, Spanish and Russian
//! ([`intent`]) and answers from the tool results ([`answer`]).
//!
//! Tools come from [`TOOL_REGISTRY`] (the seed's registry; [`ensure_tools_registered`]
//! registers `echo`, `calculator` and `datetime` once, and any program can register more
//! before it opens the flow), plus the environment's tools ([`FlowEnv::tools`]: what
//! `agent run react --mcp ...` connects), or from a registry given to
//! [`ReactContext::with_tools`].
//!
//! # Where the seed is silent or loose, decided here
//!
//! - **One graph, two modes.** The mode is a state field set per turn (`--mode`, option
//!   `mode`); without one it is `static` on the offline model and `llm` when a model is named
//!   (`--model`), so naming a model never silently ignores it.
//! - **Steps.** `reasoner` (static) and `model` (llm) each count one step. The step that
//!   reaches `max_steps` may only close: its tools do not run. `max_steps` is 1 to
//!   [`MAX_STEPS`] (8), so the longest run (3 super-steps a static step) fits the default
//!   recursion limit of 25 super-steps. Default 6.
//! - **Guards.** Besides `max_steps`: a cap on tool calls per turn (`max_tool_calls`, 1 to
//!   16, default 5; a model reply that would pass it runs none of its calls), and a repeated
//!   identical call (same tool, same arguments as one already made this turn, or twice in one
//!   reply) stops the loop. In static mode the built-in rules never repeat a call, so the
//!   repeat guard stops rules added through [`StaticRules::with_rule`].
//! - **`model_router`** follows the seed's order: close once a tool round is answered (or
//!   steps run out), then the fallback, then `tools_condition`. Allowing several tool rounds
//!   (the seed's extension point) is the option `max_tool_rounds` (default 1, the seed).
//! - **The model is told what the router will allow**: a call made with no tool round or no
//!   step left for running tools asks for an answer (`tool_choice: none`), so a cooperating
//!   model answers instead of asking for calls that would not run; the guards stop the ones
//!   that ask anyway. While a round is left, `tool_choice` is the provider's `auto`, or
//!   `required` with the option `tool_choice=required` (small models that call tools reliably
//!   only under a grammar).
//! - **The fallback** is an override, as the seed orders it: with `LLM_FALLBACK=1`
//!   (`--llm-fallback`) and an echo request, the echo runs deterministically once whatever the
//!   model replied; calls the model asked for are answered "not run" so the conversation stays
//!   valid for the next turn, and the fallback's own call is recorded as an AI tool call and
//!   its result.
//! - **Dangling calls.** When a guard closes with calls pending, `sync` answers each with a
//!   "not run" tool message naming the guard (providers reject unanswered calls).
//! - **Confidence** starts at 0 each turn; each tool result raises it by 60% of what is left,
//!   each error halves it; the critic scales it by the share of requests covered, lifts a fully
//!   supported answer by half of what is left, halves it after a guard stop, and caps it at 0.2
//!   when no tool could answer. It stays in 0..=1 by construction.
//! - **The critic** judges what decided the calls. Static mode: the rules' reading of the
//!   message (`needs`), each met by a matching result. Llm mode: the run itself, since the
//!   model may call tools the rules know nothing of — each call the model asked for is a
//!   request, unmet when it failed, returned nothing, was kept from running by a guard, or its
//!   result does not show in the model's answer ([`review::review_run`]). A model that called
//!   no tool is judged by the rules, the only reading left.
//! - **Validation** is Pydantic's, at input: `max_steps`, `max_tool_calls`,
//!   `max_tool_rounds` and `confidence` out of range, or an empty or over-long query, are an
//!   error naming the field and its range — never clamped. `planner` validates the state it
//!   starts from too, for programs that build the input by hand.
//! - **Per turn** (one user message): the input resets every per-turn field; the conversation
//!   (`messages`) carries over on a thread.
//! - **The chat** ([`crate::chat`]), in both modes: the turn's input appends the user's
//!   message to `messages` as sent (its text is `user_query`), so the seed's `model` finds
//!   its Human there; the system hint opens every model call without being stored (as
//!   LangGraph's `prompt`), so a chat shows only what was said. Static mode writes each call
//!   of `tool_executor` as an AI message with the call and a tool message with its result,
//!   and the finalizer's summary as the answer; llm mode keeps the model's messages, the
//!   tool messages of `tools` and `fallback`, and adds the summary when the model did not end
//!   with it. Call ids are unique in the conversation; every message has its id before it
//!   is stored, the model's the id its tokens streamed under.
//! - **Observability.** Every node runs in a `react_node` span (node, mode, step) and logs
//!   `react node finished` with its duration; nothing the user wrote reaches the logs, and
//!   tool arguments are logged masked ([`tools::LOG_MASKED_KEYS`]).

pub mod answer;
pub mod intent;
pub mod nodes;
pub mod offline;
pub mod review;
pub mod rules;
pub mod tools;

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::sync::Arc;

use agent_core::{Clock, END, GraphState, START, StateGraph};
use agent_llm::{ChatModel, HumanMessage, Message, ToolChoice};
use agent_tools::{ToolNode, ToolRegistry};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::env::FlowEnv;
use crate::error::FlowError;
use crate::registry::{Access, Demo, FlowOption, FlowSpec};

pub use review::{FinalBlock, Review, Verdict};
pub use rules::{RuleInput, SelectorRule, StaticRules};
pub use tools::{
    EchoInput, EchoOutput, EchoTool, Registration, TOOL_REGISTRY, ToolCatalog, ToolDeps,
    ensure_tools_registered,
};

// The nodes stay in their module: `#[node]` makes each fn a unit struct of the same name,
// which would shadow bindings inside the derives here.

/// The most steps a turn may take (see the module docs).
pub const MAX_STEPS: u32 = 8;
/// Steps per turn unless set.
pub const DEFAULT_MAX_STEPS: u32 = 6;
/// The range of `max_steps`.
pub const MAX_STEPS_RANGE: RangeInclusive<u32> = 1..=MAX_STEPS;
/// Tool calls per turn unless set.
pub const DEFAULT_MAX_TOOL_CALLS: u32 = 5;
/// The range of `max_tool_calls`.
pub const MAX_TOOL_CALLS_RANGE: RangeInclusive<u32> = 1..=16;
/// The range of `max_tokens` (LLM mode).
pub const MAX_TOKENS_RANGE: RangeInclusive<u32> = 16..=4096;
/// Rounds of tool calls the model may make unless set (LLM mode; the seed's one).
pub const DEFAULT_MAX_TOOL_ROUNDS: u32 = 1;
/// The range of `max_tool_rounds` (LLM mode).
pub const MAX_TOOL_ROUNDS_RANGE: RangeInclusive<u32> = 1..=MAX_STEPS - 1;
/// The longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 4000;

/// How the flow decides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Deterministic routing by rules (tests, low latency).
    #[default]
    Static,
    /// A model picks the tools (`ToolNode` + `tools_condition`).
    Llm,
}

impl Mode {
    /// `static` or `llm`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Static => "static",
            Mode::Llm => "llm",
        }
    }
}

/// Why the loop closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Nothing was left to do (static), or the model answered.
    Answered,
    /// The deterministic echo fallback ran (llm mode, `LLM_FALLBACK=1`).
    Fallback,
    /// `max_steps` was reached with work left.
    StepLimit,
    /// The cap on tool calls would have been passed.
    ToolCallCap,
    /// A tool call identical to an earlier one was asked for.
    RepeatedCall,
    /// The model asked for tools after the allowed tool rounds (llm mode).
    ToolRounds,
}

impl StopReason {
    /// Whether a guard stopped the loop (rather than the work being done).
    pub fn is_guard(self) -> bool {
        matches!(
            self,
            StopReason::StepLimit
                | StopReason::ToolCallCap
                | StopReason::RepeatedCall
                | StopReason::ToolRounds
        )
    }
}

/// A tool call the static selector picked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSelection {
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub args: Value,
    /// Who picked it: `forced` (the first pass's echo) or `rule:<name>`.
    pub origin: String,
}

/// A tool call made this turn (the guards read these).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The evidence key of its result: `<tool>_<n>`, n counting calls from 1.
    pub key: String,
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub args: Value,
    /// The call id: the model's in llm mode, else the id of the call in the chat
    /// (`messages`), unique in the conversation.
    pub call_id: String,
    /// The step it ran in.
    pub step: u32,
    /// `forced`, `rule:<name>`, `model` or `fallback`.
    pub origin: String,
}

impl CallRecord {
    /// Whether this call is `tool` with `args`.
    pub fn is(&self, tool: &str, args: &Value) -> bool {
        self.tool == tool && self.args == *args
    }
}

/// The flow's state: the seed's fields first, then what the nodes hand each other.
#[derive(GraphState, Clone, Debug)]
pub struct ReactState {
    /// The user's request for this turn.
    pub user_query: String,
    /// Facts gathered this turn: each result by evidence key, `needs` (what the message asks
    /// for, as the rules read it), `answer` (the model's final text, llm mode).
    pub working_memory: BTreeMap<String, Value>,
    /// Evidence by key (`echo_1`, `calculator_2`...): `{tool, args, output | error, origin,
    /// step}`.
    pub artifacts: BTreeMap<String, Value>,
    /// What went wrong this turn: tool errors and guard stops.
    pub errors: Vec<String>,
    /// How well the evidence supports the answer, 0 to 1.
    pub confidence: f64,
    /// Steps taken this turn.
    pub step: u32,
    /// The most steps this turn may take (1 to [`MAX_STEPS`]).
    pub max_steps: u32,
    /// About the episode: mode, language, start time, model, tools.
    pub metadata: BTreeMap<String, Value>,
    /// The conversation (llm mode; carried over on a thread).
    #[reducer(agent_llm::add_messages)]
    pub messages: Vec<Message>,
    /// Static or LLM.
    pub mode: Mode,
    /// The deterministic echo fallback (llm mode).
    pub llm_fallback: bool,
    /// The most tool calls this turn may make.
    pub max_tool_calls: u32,
    /// How many rounds of tool calls the model may make (llm mode; the seed: 1).
    pub max_tool_rounds: u32,
    /// The static selector's pick, cleared by `tool_executor`.
    pub selected: Option<ToolSelection>,
    /// The calls made this turn.
    pub calls: Vec<CallRecord>,
    /// Whether the loop is done and the answer can be written.
    pub ready_to_answer: bool,
    /// Why the loop closed.
    pub stop: Option<StopReason>,
    /// The critic's review.
    pub review: Option<Review>,
    /// The final block: summary, evidence keys, confidence.
    pub final_block: Option<FinalBlock>,
}

impl Default for ReactState {
    fn default() -> Self {
        ReactState {
            user_query: String::new(),
            working_memory: BTreeMap::new(),
            artifacts: BTreeMap::new(),
            errors: Vec::new(),
            confidence: 0.0,
            step: 0,
            max_steps: DEFAULT_MAX_STEPS,
            metadata: BTreeMap::new(),
            messages: Vec::new(),
            mode: Mode::Static,
            llm_fallback: false,
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
            max_tool_rounds: DEFAULT_MAX_TOOL_ROUNDS,
            selected: None,
            calls: Vec::new(),
            ready_to_answer: false,
            stop: None,
            review: None,
            final_block: None,
        }
    }
}

agent_tools::messages_state!(ReactState, messages);

/// A field whose value the flow does not accept.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("field `{field}`: {message}")]
pub struct ValidationError {
    /// The field.
    pub field: &'static str,
    /// What is wrong and what it accepts.
    pub message: String,
}

fn in_range(
    field: &'static str,
    value: u32,
    range: &RangeInclusive<u32>,
) -> Result<(), ValidationError> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(ValidationError {
            field,
            message: format!(
                "{value} is out of range; it must be between {} and {}",
                range.start(),
                range.end()
            ),
        })
    }
}

fn check_confidence(value: f64) -> Result<(), ValidationError> {
    if value.is_finite() && (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(ValidationError {
            field: "confidence",
            message: format!("{value} is out of range; it must be between 0 and 1"),
        })
    }
}

fn check_query(query: &str) -> Result<(), ValidationError> {
    let chars = query.chars().count();
    if query.trim().is_empty() {
        Err(ValidationError {
            field: "user_query",
            message: "it is empty; ask the flow something".to_owned(),
        })
    } else if chars > MAX_QUERY_CHARS {
        Err(ValidationError {
            field: "user_query",
            message: format!(
                "it has {chars} characters; at most {MAX_QUERY_CHARS} are accepted, so shorten it"
            ),
        })
    } else {
        Ok(())
    }
}

/// Checks the fields an input sets, the way Pydantic validates a model: the first field out
/// of range is an error naming it and its range.
pub fn validate_update(update: &ReactStateUpdate) -> Result<(), ValidationError> {
    if let Some(query) = &update.user_query {
        check_query(query)?;
    }
    if let Some(max_steps) = update.max_steps {
        in_range("max_steps", max_steps, &MAX_STEPS_RANGE)?;
    }
    if let Some(max_tool_calls) = update.max_tool_calls {
        in_range("max_tool_calls", max_tool_calls, &MAX_TOOL_CALLS_RANGE)?;
    }
    if let Some(rounds) = update.max_tool_rounds {
        in_range("max_tool_rounds", rounds, &MAX_TOOL_ROUNDS_RANGE)?;
    }
    if let Some(confidence) = update.confidence {
        check_confidence(confidence)?;
    }
    if let (Some(step), Some(max_steps)) = (update.step, update.max_steps)
        && step > max_steps
    {
        return Err(ValidationError {
            field: "step",
            message: format!("{step} is past max_steps ({max_steps})"),
        });
    }
    Ok(())
}

/// Checks a whole state (what `planner` starts an episode from).
pub fn validate_state(state: &ReactState) -> Result<(), ValidationError> {
    check_query(&state.user_query)?;
    in_range("max_steps", state.max_steps, &MAX_STEPS_RANGE)?;
    in_range(
        "max_tool_calls",
        state.max_tool_calls,
        &MAX_TOOL_CALLS_RANGE,
    )?;
    in_range(
        "max_tool_rounds",
        state.max_tool_rounds,
        &MAX_TOOL_ROUNDS_RANGE,
    )?;
    check_confidence(state.confidence)
}

/// One turn's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TurnSettings {
    /// Static or LLM.
    pub mode: Mode,
    /// The echo fallback (llm mode).
    pub llm_fallback: bool,
    /// The most steps.
    pub max_steps: u32,
    /// The most tool calls.
    pub max_tool_calls: u32,
    /// The most tool rounds (llm mode).
    pub max_tool_rounds: u32,
}

impl Default for TurnSettings {
    fn default() -> Self {
        TurnSettings {
            mode: Mode::Static,
            llm_fallback: false,
            max_steps: DEFAULT_MAX_STEPS,
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
            max_tool_rounds: DEFAULT_MAX_TOOL_ROUNDS,
        }
    }
}

impl TurnSettings {
    /// The settings `env`'s options give (see [`React::OPTIONS`]).
    pub fn from_env(env: &FlowEnv) -> Result<Self, FlowError> {
        let option = |key: &'static str, message: String| FlowError::Option {
            flow: React::NAME,
            key: key.to_owned(),
            message,
        };
        let mode = match env.option("mode").map(str::trim) {
            None | Some("") => {
                if env.is_offline() {
                    Mode::Static
                } else {
                    Mode::Llm
                }
            }
            Some(m) if m.eq_ignore_ascii_case("static") => Mode::Static,
            Some(m) if m.eq_ignore_ascii_case("llm") => Mode::Llm,
            Some(other) => {
                return Err(option(
                    "mode",
                    format!("`{other}` is not a mode; use static or llm"),
                ));
            }
        };
        let number =
            |key: &'static str, default: u32, range: &RangeInclusive<u32>| match env.option(key) {
                Some(text) => parse_option(key, text, range),
                None => Ok(default),
            };
        Ok(TurnSettings {
            mode,
            llm_fallback: env.flag(React::NAME, "llm_fallback")?,
            max_steps: number("max_steps", DEFAULT_MAX_STEPS, &MAX_STEPS_RANGE)?,
            max_tool_calls: number(
                "max_tool_calls",
                DEFAULT_MAX_TOOL_CALLS,
                &MAX_TOOL_CALLS_RANGE,
            )?,
            max_tool_rounds: number(
                "max_tool_rounds",
                DEFAULT_MAX_TOOL_ROUNDS,
                &MAX_TOOL_ROUNDS_RANGE,
            )?,
        })
    }
}

/// A whole-number option within `range`, or an error naming it.
fn parse_option(
    key: &'static str,
    text: &str,
    range: &RangeInclusive<u32>,
) -> Result<u32, FlowError> {
    let option = |message: String| FlowError::Option {
        flow: React::NAME,
        key: key.to_owned(),
        message,
    };
    let value: u32 = text.trim().parse().map_err(|_| {
        option(format!(
            "`{text}` is not a whole number; give one between {} and {}",
            range.start(),
            range.end()
        ))
    })?;
    in_range(key, value, range).map_err(|e| option(e.message))?;
    Ok(value)
}

/// The input of one turn: the query (its text in `user_query`, the message itself appended
/// to `messages` as it is) and settings, every per-turn field reset. Validated.
pub fn turn_input(
    query: impl Into<HumanMessage>,
    settings: TurnSettings,
) -> Result<ReactStateUpdate, FlowError> {
    let message = query.into();
    let update = ReactStateUpdate::default()
        .user_query(message.content.trim())
        .messages(vec![Message::Human(message)])
        .mode(settings.mode)
        .llm_fallback(settings.llm_fallback)
        .max_steps(settings.max_steps)
        .max_tool_calls(settings.max_tool_calls)
        .max_tool_rounds(settings.max_tool_rounds)
        .working_memory(BTreeMap::new())
        .artifacts(BTreeMap::new())
        .errors(Vec::new())
        .confidence(0.0)
        .step(0)
        .metadata(BTreeMap::new())
        .selected(None::<ToolSelection>)
        .calls(Vec::new())
        .ready_to_answer(false)
        .stop(None::<StopReason>)
        .review(None::<Review>)
        .final_block(None::<FinalBlock>);
    validate_update(&update).map_err(|e| FlowError::Input(e.to_string()))?;
    Ok(update)
}

/// What the nodes read beside the state.
pub struct ReactContext {
    /// The model of llm mode (bound to the tools at each call).
    pub model: Arc<dyn ChatModel>,
    /// The tools, run with per-call timeouts (errors become results, not failures).
    pub tools: ToolNode,
    /// The static selector's rules.
    pub rules: StaticRules,
    /// The system message of llm mode (the seed's `SYSTEM_HINT`).
    pub system_hint: String,
    /// The most tokens one model reply may take (llm mode).
    pub max_tokens: u32,
    /// How the model is asked to use tools while a tool round is left: `None` lets it decide
    /// (the provider's `auto`), `Some(ToolChoice::Required)` makes it call one. With no round
    /// or step left it is always asked to answer (`ToolChoice::None`).
    pub tool_choice: Option<ToolChoice>,
    /// The clock.
    pub clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for ReactContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReactContext")
            .field(
                "model",
                &format!("{}:{}", self.model.provider(), self.model.model_name()),
            )
            .field("tools", &self.tools)
            .field("rules", &self.rules)
            .finish()
    }
}

/// How long one tool call may take.
pub const TOOL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl ReactContext {
    /// A context on `model` and `clock`, with the tools of [`TOOL_REGISTRY`] (built-ins
    /// registered first) and the built-in rules.
    pub fn new(model: Arc<dyn ChatModel>, clock: Arc<dyn Clock>) -> Result<Self, FlowError> {
        ensure_tools_registered();
        let registry = TOOL_REGISTRY
            .registry(&ToolDeps {
                clock: clock.clone(),
            })
            .map_err(|e| FlowError::Setup {
                flow: React::NAME,
                message: e.to_string(),
            })?;
        Ok(ReactContext {
            model,
            tools: tools::tool_node(registry),
            rules: StaticRules::builtin(),
            system_hint: nodes::SYSTEM_HINT.to_owned(),
            max_tokens: nodes::MODEL_MAX_TOKENS,
            tool_choice: None,
            clock,
        })
    }

    /// This context with the model asked to use tools this way while a tool round is left.
    pub fn with_tool_choice(mut self, choice: Option<ToolChoice>) -> Self {
        self.tool_choice = choice;
        self
    }

    /// This context with replies of at most `max_tokens` tokens (llm mode).
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// This context with exactly these tools (log masking and timeouts applied).
    pub fn with_tools(mut self, registry: ToolRegistry) -> Self {
        self.tools = tools::tool_node(registry);
        self
    }

    /// This context with these static rules.
    pub fn with_rules(mut self, rules: StaticRules) -> Self {
        self.rules = rules;
        self
    }

    /// This context with another system message for llm mode.
    pub fn with_system_hint(mut self, hint: impl Into<String>) -> Self {
        self.system_hint = hint.into();
        self
    }
}

/// The graph: both modes, `planner` picking one.
pub fn graph() -> StateGraph<ReactState, ReactContext> {
    StateGraph::with_context_type()
        .add_named(nodes::planner)
        .add_named(nodes::reasoner)
        .add_named(nodes::tool_selector)
        .add_named(nodes::tool_executor)
        .add_named(nodes::model)
        .add_named(nodes::tools)
        .add_named(nodes::fallback)
        .add_named(nodes::sync)
        .add_named(nodes::critic)
        .add_named(nodes::finalizer)
        .add_edge(START, "planner")
        .add_conditional_edges(
            "planner",
            nodes::route_mode,
            [("static", "reasoner"), ("llm", "model")],
        )
        .add_conditional_edges(
            "reasoner",
            nodes::route_after_reasoner,
            [("act", "tool_selector"), ("close", "critic")],
        )
        .add_conditional_edges(
            "tool_selector",
            nodes::route_after_selector,
            [("execute", "tool_executor"), ("reason", "reasoner")],
        )
        .add_edge("tool_executor", "reasoner")
        .add_conditional_edges(
            "model",
            nodes::model_router,
            [
                ("tools", "tools"),
                ("fallback", "fallback"),
                ("close", "sync"),
            ],
        )
        .add_edge("tools", "model")
        .add_edge("fallback", "sync")
        .add_edge("sync", "critic")
        .add_edge("critic", "finalizer")
        .add_edge("finalizer", END)
}

/// The compiled flow with `context` (no checkpointer).
pub fn build(
    context: ReactContext,
) -> Result<agent_core::CompiledGraph<ReactState, ReactContext>, FlowError> {
    Ok(graph().compile()?.with_context(context))
}

/// What the user sees: the summary, then the evidence and the confidence.
pub fn response(state: &ReactState) -> String {
    match &state.final_block {
        Some(block) => {
            let evidence = if block.evidence_keys.is_empty() {
                "none".to_owned()
            } else {
                block.evidence_keys.join(", ")
            };
            format!(
                "{}\n[evidence: {evidence}; confidence {:.2}]",
                block.summary, block.confidence
            )
        }
        None => String::new(),
    }
}

/// The registry entry.
pub struct React;

impl FlowSpec for React {
    type State = ReactState;
    type Context = ReactContext;

    const NAME: &'static str = "react";
    const SEED: &'static str = "004";
    const SUMMARY: &'static str =
        "ReAct loop over tools, static rules or an LLM, with anti-loop guards (es/en/ru)";
    const DESCRIPTION: &'static str = "Seed 004: a neutral ReAct archetype in two modes. \
        **Static**: `planner -> reasoner -> tool_selector -> tool_executor -> reasoner -> \
        critic -> finalizer`, rules pick the tools (`echo` forced on the first pass, then \
        arithmetic and the time somewhere). **LLM**: `planner -> model -> tools -> model -> \
        sync -> critic -> finalizer`, the model picks the tools (`ToolNode` + \
        `tools_condition`), with a deterministic `echo` fallback (`--llm-fallback`). Guards \
        stop every loop: a step limit, a cap on tool calls, a repeated identical call. The \
        critic checks the evidence; the finalizer writes the summary, the evidence keys and a \
        confidence.";
    const OPTIONS: &'static [FlowOption] = &[
        FlowOption {
            key: "mode",
            help: "static (rules; the default offline) or llm (a model picks the tools; the default with --model); also --mode",
            access: Access::Client,
        },
        FlowOption {
            key: "llm_fallback",
            help: "1: in llm mode, an echo request runs echo deterministically (also --llm-fallback, LLM_FALLBACK=1)",
            access: Access::Client,
        },
        FlowOption {
            key: "max_steps",
            help: "steps per turn, 1 to 8 (default 6)",
            access: Access::Ceiling {
                default: DEFAULT_MAX_STEPS as u64,
            },
        },
        FlowOption {
            key: "max_tool_calls",
            help: "tool calls per turn, 1 to 16 (default 5)",
            access: Access::Ceiling {
                default: DEFAULT_MAX_TOOL_CALLS as u64,
            },
        },
        FlowOption {
            key: "max_tool_rounds",
            help: "rounds of tool calls the model may make in llm mode, 1 to 7 (default 1, the seed)",
            access: Access::Ceiling {
                default: DEFAULT_MAX_TOOL_ROUNDS as u64,
            },
        },
        FlowOption {
            key: "tool_choice",
            help: "auto (the model decides; the default) or required (it must call a tool while a tool round is left), llm mode",
            access: Access::Client,
        },
        FlowOption {
            key: "max_tokens",
            help: "the most tokens of one model reply in llm mode, 16 to 4096 (default 200)",
            access: Access::Ceiling {
                default: nodes::MODEL_MAX_TOKENS as u64,
            },
        },
    ];

    fn demos() -> &'static [Demo] {
        &[
            Demo {
                name: "static_echo_es",
                turns: &["Repite: hola mundo"],
                options: &[("mode", "static")],
            },
            Demo {
                name: "static_calculation_and_time",
                turns: &["¿Cuánto es 12*(3+4) y qué hora es en Tokio?"],
                options: &[("mode", "static")],
            },
            Demo {
                name: "static_no_tool_ru",
                turns: &["Что такое ReAct?"],
                options: &[("mode", "static")],
            },
            Demo {
                name: "static_step_limit",
                turns: &["What is 2+2, and what time is it in Lima and Oslo?"],
                options: &[("mode", "static"), ("max_steps", "3")],
            },
            Demo {
                name: "static_failing_tool",
                turns: &["how much is 1/0?"],
                options: &[("mode", "static")],
            },
            Demo {
                name: "llm_echo_fallback_off",
                turns: &["echo \"hello, world\""],
                options: &[("mode", "llm")],
            },
            Demo {
                name: "llm_echo_fallback_on",
                turns: &["echo \"hello, world\""],
                options: &[("mode", "llm"), ("llm_fallback", "1")],
            },
            Demo {
                name: "llm_parallel_calls_two_turns",
                turns: &[
                    "¿Qué hora es en Madrid y en Buenos Aires?",
                    "Y repite: gracias",
                ],
                options: &[("mode", "llm")],
            },
            Demo {
                name: "llm_last_step_answers_without_tools",
                turns: &["Сколько будет 7 умножить на 6?"],
                options: &[("mode", "llm"), ("max_steps", "1")],
            },
            Demo {
                name: "llm_failing_tool",
                turns: &["Calculate 10 / (5 - 5)"],
                options: &[("mode", "llm")],
            },
            Demo {
                name: "llm_tool_call_cap",
                turns: &["what time is it in Tokyo, London, Paris and Sydney?"],
                options: &[("mode", "llm"), ("max_tool_calls", "3")],
            },
            Demo {
                name: "llm_direct_answer",
                turns: &["Hello! What can you do?"],
                options: &[("mode", "llm")],
            },
        ]
    }

    fn graph() -> StateGraph<ReactState, ReactContext> {
        graph()
    }

    fn context(env: &FlowEnv) -> Result<ReactContext, FlowError> {
        let mut context = ReactContext::new(env.model_or(offline::model), env.clock.clone())?;
        if !env.tools.is_empty() {
            // The environment's tools (an MCP server's) join the seed's registry.
            let setup = |e: agent_tools::ToolError| FlowError::Setup {
                flow: React::NAME,
                message: e.to_string(),
            };
            let mut registry = TOOL_REGISTRY
                .registry(&ToolDeps {
                    clock: env.clock.clone(),
                })
                .map_err(setup)?;
            for tool in &env.tools {
                registry.register_arc(tool.clone()).map_err(setup)?;
            }
            context = context.with_tools(registry);
        }
        if let Some(text) = env.option("max_tokens") {
            context = context.with_max_tokens(parse_option("max_tokens", text, &MAX_TOKENS_RANGE)?);
        }
        let choice = match env.option("tool_choice").map(str::trim) {
            None | Some("") => None,
            Some(c) if c.eq_ignore_ascii_case("auto") => None,
            Some(c) if c.eq_ignore_ascii_case("required") => Some(ToolChoice::Required),
            Some(other) => {
                return Err(FlowError::Option {
                    flow: React::NAME,
                    key: "tool_choice".to_owned(),
                    message: format!("`{other}` is not a tool choice; use auto or required"),
                });
            }
        };
        Ok(context.with_tool_choice(choice))
    }

    fn input(message: HumanMessage, env: &FlowEnv) -> Result<ReactStateUpdate, FlowError> {
        turn_input(message, TurnSettings::from_env(env)?)
    }

    fn response(state: &ReactState) -> String {
        response(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(options: &[(&str, &str)]) -> FlowEnv {
        options
            .iter()
            .fold(FlowEnv::offline(), |env, (k, v)| env.with_option(*k, *v))
    }

    #[test]
    fn settings_come_from_options_with_clear_errors() {
        let settings = TurnSettings::from_env(&env(&[])).unwrap();
        assert_eq!(settings, TurnSettings::default());
        let settings = TurnSettings::from_env(&env(&[
            ("mode", "LLM"),
            ("llm_fallback", "yes"),
            ("max_steps", "8"),
            ("max_tool_calls", "16"),
            ("max_tool_rounds", "3"),
        ]))
        .unwrap();
        assert_eq!(settings.mode, Mode::Llm);
        assert!(settings.llm_fallback);
        assert_eq!(
            (
                settings.max_steps,
                settings.max_tool_calls,
                settings.max_tool_rounds
            ),
            (8, 16, 3)
        );
        let error = TurnSettings::from_env(&env(&[("max_steps", "0")])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "flow `react`: option `max_steps`: 0 is out of range; it must be between 1 and 8"
        );
        let error = TurnSettings::from_env(&env(&[("max_steps", "many")])).unwrap_err();
        assert!(error.to_string().contains("`many` is not a whole number"));
        let error = TurnSettings::from_env(&env(&[("mode", "dynamic")])).unwrap_err();
        assert!(error.to_string().contains("use static or llm"), "{error}");
        let error = TurnSettings::from_env(&env(&[("llm_fallback", "maybe")])).unwrap_err();
        assert!(error.to_string().contains("`maybe` is not yes or no"));
    }

    #[test]
    fn max_tokens_is_a_checked_option_of_the_context() {
        let context = React::context(&env(&[("max_tokens", "64")])).unwrap();
        assert_eq!(context.max_tokens, 64);
        let context = React::context(&env(&[])).unwrap();
        assert_eq!(context.max_tokens, nodes::MODEL_MAX_TOKENS);
        let context = React::context(&env(&[("tool_choice", "required")])).unwrap();
        assert_eq!(context.tool_choice, Some(ToolChoice::Required));
        let error = React::context(&env(&[("tool_choice", "always")])).unwrap_err();
        assert!(
            error.to_string().contains("use auto or required"),
            "{error}"
        );
        let error = React::context(&env(&[("max_tokens", "5")])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "flow `react`: option `max_tokens`: 5 is out of range; it must be between 16 and 4096"
        );
    }

    #[test]
    fn a_named_model_defaults_to_llm_mode() {
        let model = offline::model();
        let settings = TurnSettings::from_env(&FlowEnv::offline().with_model(model)).unwrap();
        assert_eq!(settings.mode, Mode::Llm);
    }

    #[test]
    fn validation_names_the_field_and_never_clamps() {
        let ok = turn_input("echo hi", TurnSettings::default()).unwrap();
        assert_eq!(ok.user_query.as_deref(), Some("echo hi"));
        assert_eq!(ok.step, Some(0));

        let bad = ReactStateUpdate::default().confidence(1.5);
        assert_eq!(
            validate_update(&bad).unwrap_err().to_string(),
            "field `confidence`: 1.5 is out of range; it must be between 0 and 1"
        );
        let bad = ReactStateUpdate::default().confidence(f64::NAN);
        assert_eq!(validate_update(&bad).unwrap_err().field, "confidence");
        let bad = ReactStateUpdate::default().max_steps(9);
        assert_eq!(
            validate_update(&bad).unwrap_err().to_string(),
            "field `max_steps`: 9 is out of range; it must be between 1 and 8"
        );
        let bad = ReactStateUpdate::default().max_tool_calls(0);
        assert_eq!(validate_update(&bad).unwrap_err().field, "max_tool_calls");
        let bad = ReactStateUpdate::default().max_steps(2).step(3);
        assert_eq!(validate_update(&bad).unwrap_err().field, "step");
        let long = "x".repeat(MAX_QUERY_CHARS + 1);
        let error = turn_input(&long, TurnSettings::default()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("field `user_query`: it has 4001 characters"),
            "{error}"
        );
        let error = turn_input("  ", TurnSettings::default()).unwrap_err();
        assert!(error.to_string().contains("it is empty"), "{error}");

        let mut state = ReactState {
            user_query: "hi".into(),
            ..ReactState::default()
        };
        assert!(validate_state(&state).is_ok());
        state.confidence = -0.1;
        assert_eq!(validate_state(&state).unwrap_err().field, "confidence");
        state.confidence = 0.0;
        state.max_tool_rounds = 8;
        assert_eq!(validate_state(&state).unwrap_err().field, "max_tool_rounds");
    }

    #[test]
    fn the_graph_compiles_and_the_longest_static_run_fits_the_recursion_limit() {
        assert!(graph().compile().is_ok());
        // planner + (reasoner, tool_selector, tool_executor) per acting step + reasoner,
        // critic, finalizer.
        let longest_static = 1 + 3 * (MAX_STEPS as usize - 1) + 3;
        assert!(longest_static <= agent_core::DEFAULT_RECURSION_LIMIT);
        let longest_llm = 1 + MAX_STEPS as usize + (MAX_STEPS as usize - 1) + 3;
        assert!(longest_llm <= agent_core::DEFAULT_RECURSION_LIMIT);
    }
}
