//! The form flow's state: the seed's `GraphState`, field for field, and the
//! [`ConversationState`] it carries from turn to turn on a thread.
//!
//! The per-turn fields (`user_message`, the flags, `extracted_value`, `response`...) are set
//! fresh by each turn's input ([`super::turn_input`]); `conversation` is written only by the
//! nodes, so it carries over through the checkpoint, and so does `messages`, the chat.

use std::collections::BTreeMap;

use agent_core::GraphState;
use agent_llm::Message;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::escalation::Policy;
use crate::lang::Lang;

/// Where a conversation stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Collecting fields.
    #[default]
    Active,
    /// Handed to a human agent; the flow no longer collects.
    Escalated,
    /// Every field collected.
    Completed,
}

/// Why and when a conversation was escalated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EscalationRecord {
    /// The policy that fired.
    pub policy: Policy,
    /// Its reason, for the operator.
    pub reason: String,
    /// When (Unix seconds, the flow's clock).
    pub at: i64,
}

/// The conversation: what the form has collected and where it stands.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConversationState {
    /// The form's name (a thread continues only on the same form).
    pub form: String,
    /// The form's fields, in the order asked.
    pub fields: Vec<String>,
    /// Active, escalated or completed.
    pub status: Status,
    /// The language replies are in: the user's, once it shows; the form's until then.
    pub language: Lang,
    /// The valid values collected, by field.
    pub values: BTreeMap<String, String>,
    /// The field being asked for (the next missing one, or one being re-asked or corrected).
    pub current_field: Option<String>,
    /// The field filled most recently (the likeliest target of "en realidad, debería ser...").
    pub last_field: Option<String>,
    /// Failed validations in a row, by field (reset when the field gets a valid value).
    pub failed_attempts: BTreeMap<String, u32>,
    /// User messages so far.
    pub turns: u32,
    /// Values replaced by corrections.
    pub corrections: u32,
    /// When the first message came (Unix seconds, the flow's clock).
    pub started_at: Option<i64>,
    /// When the latest message came.
    pub last_message_at: Option<i64>,
    /// When the form was completed or escalated.
    pub finished_at: Option<i64>,
    /// The escalation, once there is one.
    pub escalation: Option<EscalationRecord>,
}

impl ConversationState {
    /// Whether every field of the form has a value (the seed's `all_fields_collected`).
    pub fn all_fields_collected(&self) -> bool {
        !self.fields.is_empty() && self.fields.iter().all(|f| self.values.contains_key(f))
    }

    /// The first field without a value, in form order.
    pub fn next_missing(&self) -> Option<&String> {
        self.fields.iter().find(|f| !self.values.contains_key(*f))
    }

    /// The fields with a value, in form order.
    pub fn collected(&self) -> Vec<String> {
        self.fields
            .iter()
            .filter(|f| self.values.contains_key(*f))
            .cloned()
            .collect()
    }
}

/// The graph's state, as the seed's `GraphState`.
#[derive(GraphState, Clone, Default, Debug)]
pub struct FormState {
    /// The conversation (carries over between turns).
    pub conversation: ConversationState,
    /// This turn's message.
    pub user_message: String,
    /// What the turn did, for the caller: `ask_next`, `reprompt`, `redirect`, `escalated`,
    /// `completed`, `corrected` (a correction after completion), `closed` (any other message
    /// after the end).
    pub next_action: String,
    /// `check_escalation`'s verdict.
    pub should_escalate: bool,
    /// Why (the policy's reason).
    pub escalation_reason: Option<String>,
    /// `check_correction`'s verdict.
    pub is_correction: bool,
    /// The field being corrected.
    pub correction_field: Option<String>,
    /// `check_off_topic`'s verdict.
    pub is_off_topic: bool,
    /// `extract_field`'s value (`None` for the seed's `NOT_PROVIDED` / `INVALID`).
    pub extracted_value: Option<String>,
    /// `validate`'s verdict.
    pub is_valid: bool,
    /// The field `extract_field` worked on.
    pub current_field: Option<String>,
    /// The reply of the turn.
    pub response: String,
    /// What the nodes noted on the way (which rule or model decided, the validation error,
    /// the off-topic kind, the escalation policy...); merged key by key within a turn, cleared
    /// by the next turn's input.
    #[reducer(merge_or_clear)]
    pub metadata: BTreeMap<String, Value>,
    /// The chat, beside the seed's fields (see the flow's docs): each user message as sent
    /// and each reply, carried over on a thread.
    #[reducer(agent_llm::add_messages)]
    pub messages: Vec<Message>,
}

/// `metadata`'s reducer: merges key by key; an empty map clears it (a new turn).
pub fn merge_or_clear(current: &mut BTreeMap<String, Value>, update: BTreeMap<String, Value>) {
    if update.is_empty() {
        current.clear();
    } else {
        current.extend(update);
    }
}
