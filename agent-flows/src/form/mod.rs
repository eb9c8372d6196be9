//! Seed 001, conversational form filling (`form`): each user message runs the seed's state
//! machine once, on a thread that carries the conversation — escalation policies first, then
//! corrections, off-topic messages, extraction and validation, and a reply that asks for the
//! next field, explains the expected format, redirects, hands over to a human or thanks.
//!
//! ```text
//! START -> check_escalation -(escalate)-> escalate -> END
//!              \-(check_correction)-> check_correction -(extract_field)-> extract_field -> validate
//!                                        \-(check_off_topic)-> check_off_topic
//! check_off_topic -(complete)-> complete -> END | -(prompt_next)-> prompt_next -> END
//!                 -(extract_field)-> extract_field
//! validate -(complete)-> complete -> END | -(prompt_next)-> prompt_next -> END
//! ```
//!
//! The state is the seed's `GraphState` ([`FormState`]) with a typed [`ConversationState`].
//! The form is data ([`spec`]): built-in `signup` (name, then email: the seed's traces) and
//! `contact` (name, email, phone), or a TOML / JSON file. The [`escalation::EscalationEngine`]
//! runs the five policies in the seed's order. Every decision the seed gives to an LLM goes
//! through the context's [`ChatModel`] — the `llm_intent` policy (`HumanIntent`), ambiguous
//! corrections (`CorrectionCheck`) and off-topic messages (`OffTopicCheck`), extraction
//! (`FieldExtraction`, every time) and the thanks of `complete` — and offline they are rules
//! ([`offline`], over [`rules`]) in Spanish and English.
//!
//! Where the seed is silent or inconsistent, decided here:
//! - One user message is one run. The turn's input resets the per-turn fields (the flags,
//!   `escalation_reason`, `correction_field`, `extracted_value`, `current_field`, `response`,
//!   `next_action`, `metadata`); `conversation` is written only by nodes and carries over.
//! - The conversation starts in `check_escalation` on the first message: the form's name and
//!   fields are recorded, and a thread continued with another form is refused with an error
//!   that says so. Timestamps come from the context's clock.
//! - After an escalation a message changes nothing: `check_escalation` routes to `escalate`
//!   again, which only says a human has it.
//! - After completion no policy runs, but `check_correction` still does (as in the seed's
//!   graph): a user corrects a field after the summary as naturally as before it, in either
//!   language, for any field of the form. The correction goes through `extract_field` and
//!   `validate` to `complete` (every field is collected), which says what changed and shows
//!   the updated summary (`next_action` `corrected`). A refused value keeps the old one and
//!   asks for that field again (`reprompt`); the answer to that question is the correction.
//!   Any other message reaches `complete` through `check_off_topic` (the seed's
//!   `all_fields_collected` edge), which repeats the summary and says how to change it
//!   (`closed`). The message still counts (`turns`, `last_message_at`, the language).
//! - The seed's correction trace ends in `prompt_next` "(siguiente campo)": a field is still
//!   missing after the corrected one. On the two-field `signup` form that cannot happen (the
//!   email is its last field), so that trace runs on `contact` (name, email, phone).
//! - A correction needs a marker ("No, ...", "en realidad", "debería ser", "actually",
//!   "that's wrong"...) and a field: the one it names, else the one its value's type fits.
//!   With a marker and no field, the model decides among the fields given so far. Restating
//!   a field already given ("mi email es otro@x.com" while the phone is asked) is a correction
//!   too. The current field counts as correctable (fixing a value just refused).
//! - A correction replaces the stored value only once the new value validates; an invalid one
//!   keeps the old value and re-asks that field.
//! - `extract_field` targets the correction's field, else the field being asked; the model's
//!   `NOT_PROVIDED`, `INVALID`, `none`, `null` and empty answers are `None`.
//! - Off-topic detection: a value of the field's type or a statement of the field ("me llamo
//!   X") is on topic; a bare greeting, a change of subject, a question, or talk about unrelated
//!   things (weather, sports, news...) is off topic; a short answer to a text field is on
//!   topic; the rest goes to the model.
//! - `completion` counts failed validations of one field in a row; it fires on the message
//!   after the limit is reached (the seed evaluates policies in `check_escalation`), and the
//!   reply to the last failed attempt says so.
//! - Replies follow the user's language once it shows (a bare email keeps the previous one);
//!   the flow answers in Spanish or English; other languages get the form's language.
//! - `next_action` records what the turn did (`ask_next`, `reprompt`, `redirect`,
//!   `escalated`, `completed`, `corrected`, `closed`); the routing functions read the flags, as
//!   the seed's.
//! - **The chat.** The seed's state has no history; [`FormState`] adds `messages` (LangGraph's
//!   chat contract, [`crate::chat`]) beside the seed's fields: the user's message as sent
//!   (its text is `user_message`) and the reply of `prompt_next`, `escalate` or `complete`
//!   (`response`) as an AI message — `complete`'s thanks under the id its tokens streamed
//!   with. The decisions the seed gives to a model (intent, correction, off topic,
//!   extraction) are tagged `nostream`: their JSON never streams as a chat message. The
//!   nodes read `user_message`, as the seed's.

pub mod escalation;
pub mod nodes;
pub mod offline;
pub mod replies;
pub mod rules;
pub mod sentiment;
pub mod spec;
pub mod state;
pub mod validate;

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_core::{Clock, END, START, StateGraph};
use agent_llm::{ChatModel, HumanMessage, Message};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::env::FlowEnv;
use crate::error::FlowError;
use crate::registry::{Access, Demo, FlowOption, FlowSpec, MAX_MESSAGE_CHARS, check_length};

pub use escalation::{EscalationConfig, EscalationEngine, Policy};
pub use spec::{FieldSpec, FieldType, FormSpec};
pub use state::{ConversationState, FormState, FormStateUpdate, Status};

/// The flow's registry name.
pub const FLOW: &str = "form";

// The nodes stay in their module: `#[node]` makes each fn a unit struct of the same name,
// which would shadow bindings in derives here.

/// `llm_intent`: does the user want a human?
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HumanIntent {
    /// Whether the message asks for a person instead of the assistant.
    pub wants_human: bool,
}

/// `check_correction`, ambiguous case: is it a correction, and of which field?
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CorrectionCheck {
    /// Whether the message corrects a value given before.
    pub is_correction: bool,
    /// The field corrected, or `none`.
    pub field: String,
}

/// `check_off_topic`, ambiguous case.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OffTopicCheck {
    /// Whether the message is not an attempt to give the field asked for.
    pub off_topic: bool,
}

/// `extract_field`: the value, or `NOT_PROVIDED` / `INVALID`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FieldExtraction {
    /// The value as the user wrote it, `NOT_PROVIDED` or `INVALID`.
    pub value: String,
}

/// What the nodes read beside the state.
pub struct FormContext {
    /// The form.
    pub form: FormSpec,
    /// The escalation policies.
    pub engine: EscalationEngine,
    /// The model for every decision the seed gives to an LLM.
    pub model: Arc<dyn ChatModel>,
    /// Where timestamps come from.
    pub clock: Arc<dyn Clock>,
}

impl FormContext {
    /// A context for `form` on `model` and `clock`.
    pub fn new(form: FormSpec, model: Arc<dyn ChatModel>, clock: Arc<dyn Clock>) -> Self {
        FormContext {
            engine: EscalationEngine::new(form.escalation.clone()),
            form,
            model,
            clock,
        }
    }
}

/// A new conversation on `form`, started at `now`.
pub fn start(form: &FormSpec, now: i64) -> ConversationState {
    ConversationState {
        form: form.name.clone(),
        fields: form.field_names(),
        language: form.language,
        current_field: form.fields.first().map(|f| f.name.clone()),
        started_at: Some(now),
        ..ConversationState::default()
    }
}

/// The graph, as the seed builds it.
pub fn graph() -> StateGraph<FormState, FormContext> {
    StateGraph::with_context_type()
        .add_named(nodes::check_escalation)
        .add_named(nodes::check_correction)
        .add_named(nodes::check_off_topic)
        .add_named(nodes::extract_field)
        .add_named(nodes::validate)
        .add_named(nodes::prompt_next)
        .add_named(nodes::escalate)
        .add_named(nodes::complete)
        .add_edge(START, "check_escalation")
        .add_conditional_edges(
            "check_escalation",
            nodes::route_after_escalation_check,
            [
                ("escalate", "escalate"),
                ("check_correction", "check_correction"),
            ],
        )
        .add_conditional_edges(
            "check_correction",
            nodes::route_after_correction_check,
            [
                ("extract_field", "extract_field"),
                ("check_off_topic", "check_off_topic"),
            ],
        )
        .add_conditional_edges(
            "check_off_topic",
            nodes::route_after_off_topic_check,
            [
                ("complete", "complete"),
                ("prompt_next", "prompt_next"),
                ("extract_field", "extract_field"),
            ],
        )
        .add_edge("extract_field", "validate")
        .add_conditional_edges(
            "validate",
            nodes::route_after_validate,
            [("complete", "complete"), ("prompt_next", "prompt_next")],
        )
        .add_edge("prompt_next", END)
        .add_edge("escalate", END)
        .add_edge("complete", END)
}

/// The compiled flow with `context` (no checkpointer).
pub fn build(
    context: FormContext,
) -> Result<agent_core::CompiledGraph<FormState, FormContext>, FlowError> {
    Ok(graph().compile()?.with_context(context))
}

/// The input of one turn: the message (its text in `user_message`, the message itself
/// appended to `messages` as it is), and every per-turn field reset.
pub fn turn_input(message: impl Into<HumanMessage>) -> FormStateUpdate {
    let message = message.into();
    FormStateUpdate::default()
        .user_message(message.content.trim().to_owned())
        .messages(vec![Message::Human(message)])
        .next_action(String::new())
        .should_escalate(false)
        .escalation_reason(None)
        .is_correction(false)
        .correction_field(None)
        .is_off_topic(false)
        .extracted_value(None)
        .is_valid(false)
        .current_field(None)
        .response(String::new())
        .metadata(BTreeMap::new())
}

/// The registry entry.
pub struct Form;

impl FlowSpec for Form {
    type State = FormState;
    type Context = FormContext;

    const NAME: &'static str = FLOW;
    const SEED: &'static str = "001";
    const SUMMARY: &'static str = "conversational form filling: escalation, corrections, off-topic, extraction, validation (es/en)";
    const DESCRIPTION: &'static str = "Seed 001: each message runs `check_escalation` (policies \
        keyword, timeout, sentiment, llm_intent, completion, in that order) -> `escalate`, or \
        `check_correction` -> `extract_field` (a correction) or `check_off_topic` -> \
        `prompt_next` (redirect), `complete` (every field collected) or `extract_field`; then \
        `validate` (email, phone, url, number, text, custom patterns) -> `prompt_next` (ask the \
        next field or explain the expected format) or `complete` (thanks). The conversation \
        carries over on a thread; the form is built in (`signup`, `contact`) or a TOML / JSON \
        file (`--form FILE`).";
    const OPTIONS: &'static [FlowOption] = &[FlowOption {
        key: "form",
        help: "the form to fill: a built-in form (signup: name then email, the default; contact: name, email, phone), a form as JSON in a form file's shape, or a TOML or JSON file",
        access: Access::Catalog(spec::BUILTIN_FORMS),
    }];

    fn demos() -> &'static [Demo] {
        &[
            Demo {
                name: "happy_path_es",
                turns: &["Mi nombre es Juan", "juan@ejemplo.com"],
                options: &[],
            },
            Demo {
                name: "happy_path_en",
                turns: &["My name is John", "john@example.com"],
                options: &[],
            },
            Demo {
                name: "correction_es",
                turns: &[
                    "Mi nombre es Juan",
                    "juan@ejemplo.com",
                    "No, mi email es juan.nuevo@ejemplo.com",
                ],
                options: &[("form", "contact")],
            },
            Demo {
                name: "correction_en",
                turns: &[
                    "My name is John",
                    "john@example.com",
                    "No, my email is john.new@example.com",
                ],
                options: &[("form", "contact")],
            },
            Demo {
                name: "off_topic_es",
                turns: &["¿Cómo está el clima?", "Me llamo Juan"],
                options: &[],
            },
            Demo {
                name: "off_topic_en",
                turns: &["What's the weather like?", "I'm John"],
                options: &[],
            },
            Demo {
                name: "escalation_es",
                turns: &["Necesito hablar con un humano", "¿Hola?"],
                options: &[],
            },
            Demo {
                name: "escalation_en",
                turns: &["I need to talk to a human"],
                options: &[],
            },
            Demo {
                name: "contact_with_mistakes_en",
                turns: &[
                    "Hi!",
                    "I'm Ana García",
                    "ana@example",
                    "ana@example.com",
                    "my phone is +34 600 123 456",
                    "thanks!",
                ],
                options: &[("form", "contact")],
            },
            Demo {
                name: "frustrated_es",
                turns: &[
                    "Mi nombre es Juan",
                    "Esto es horrible, no funciona nada y estoy harto",
                ],
                options: &[],
            },
            Demo {
                name: "cannot_complete_es",
                turns: &[
                    "Me llamo Juan",
                    "juan arroba",
                    "juan@ejemplo",
                    "juan@@ejemplo.com",
                    "juan@ejemplo.com",
                ],
                options: &[],
            },
            Demo {
                name: "ambiguous_correction_es",
                turns: &[
                    "Soy Juan",
                    "En realidad, debería ser Pedro",
                    "pedro@ejemplo.com",
                ],
                options: &[],
            },
        ]
    }

    fn graph() -> StateGraph<FormState, FormContext> {
        graph()
    }

    fn context(env: &FlowEnv) -> Result<FormContext, FlowError> {
        env.no_tools(Self::NAME)?;
        let form = FormSpec::load(env.option("form").unwrap_or(spec::DEFAULT_FORM))?;
        Ok(FormContext::new(
            form,
            env.model_or(offline::model),
            env.clock.clone(),
        ))
    }

    /// A form file is read now and kept as its form's JSON: runs read no file.
    fn prepare(env: FlowEnv) -> Result<FlowEnv, FlowError> {
        match env.option("form").map(spec::FormSpec::resolve) {
            Some(form) => Ok(env.with_option("form", form?)),
            None => Ok(env),
        }
    }

    fn input(message: HumanMessage, _env: &FlowEnv) -> Result<FormStateUpdate, FlowError> {
        check_length(Self::NAME, &message.content, MAX_MESSAGE_CHARS)?;
        Ok(turn_input(message))
    }

    fn response(state: &FormState) -> String {
        state.response.clone()
    }
}
