//! The eight nodes of seed 001 and its four routing functions, as the seed writes them.
//!
//! Model calls carry the instructions as a system message, the facts they need as a second
//! system message starting with [`CONTEXT`] (JSON: the field asked, the values given...), and
//! the user's message as the human message; the offline model reads the same messages.

use std::collections::BTreeMap;

use agent_core::{BoxError, Runtime, node};
use agent_llm::{CallOptions, ChatModelExt, Message, invoke_in_node};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::escalation::Policy;
use super::replies::{self, Ack};
use super::rules::{self, OffTopic, Topic};
use super::spec::{FieldSpec, FieldType, Texts};
use super::state::{EscalationRecord, Status};
use super::validate::validate as check_value;
use super::{
    CorrectionCheck, FieldExtraction, FormContext, FormState, FormStateUpdate, HumanIntent,
    OffTopicCheck,
};

/// How the facts of a call reach the model (a system message starting with this).
pub(crate) const CONTEXT: &str = "Context:";

/// What the `llm_intent` policy asks.
pub(crate) const INTENT_PROMPT: &str = "You decide whether the user of a form-filling \
    assistant wants to talk to a human agent instead of the assistant. Reply with JSON \
    {\"wants_human\": true} only when the message asks for a person (an agent, an operator, \
    someone real) or refuses to talk to a machine; otherwise {\"wants_human\": false}. Giving \
    a name, an email or other data is not asking for a person.";

/// What `check_correction` asks in ambiguous cases.
pub(crate) const CORRECTION_PROMPT: &str = "The user is filling in a form and has already \
    given the values in the context. Decide whether their message corrects one of them. Reply \
    with JSON {\"is_correction\": true or false, \"field\": the name of the field corrected, or \
    \"none\"}.";

/// What `check_off_topic` asks in ambiguous cases.
pub(crate) const OFF_TOPIC_PROMPT: &str = "The user is filling in a form and was asked for \
    the field in the context. Decide whether their message is off topic: a greeting, a \
    question or talk about something else instead of an attempt to give that field. Reply with \
    JSON {\"off_topic\": true or false}.";

/// What `extract_field` asks.
pub(crate) const EXTRACT_PROMPT: &str = "Extract the value of one form field from the user's \
    message; the field is in the context (name, type, label). Reply with JSON {\"value\": \
    ...}: the value exactly as the user wrote it, without other words; NOT_PROVIDED when the \
    message does not contain it; INVALID when it holds something that cannot be that field.";

/// What `complete` asks.
pub(crate) const COMPLETE_PROMPT: &str = "The user has just completed a form; the values are \
    in the context. Write one or two short sentences thanking them, in the language of the \
    context (es: Spanish, en: English), repeating the values so they can check them. Ask \
    nothing.";

/// A field as the model sees it (and the offline model rebuilds it from).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct FieldBrief {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: FieldType,
    pub label: Texts,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
}

impl FieldBrief {
    pub fn of(field: &FieldSpec) -> Self {
        FieldBrief {
            name: field.name.clone(),
            kind: field.kind,
            label: field.label.clone(),
            aliases: field.aliases.clone(),
        }
    }

    /// The field again (without its pattern: extraction does not need it).
    pub fn to_spec(&self) -> FieldSpec {
        let mut spec = FieldSpec::new(&self.name, self.kind, self.label.clone(), Texts::default());
        spec.aliases = self.aliases.clone();
        spec
    }
}

fn context_message(facts: Value) -> Message {
    Message::system(format!("{CONTEXT} {facts}"))
}

fn note(key: &str, value: impl Into<Value>) -> BTreeMap<String, Value> {
    BTreeMap::from([(key.to_owned(), value.into())])
}

fn field<'a>(ctx: &'a FormContext, name: &str) -> Result<&'a FieldSpec, BoxError> {
    ctx.form.field(name).ok_or_else(|| {
        format!(
            "the form `{}` has no field `{name}`; the thread was started on another version of the form: start a new thread",
            ctx.form.name
        )
        .into()
    })
}

/// Evaluates the escalation policies (starting the conversation on its first message).
#[node]
pub async fn check_escalation(
    state: &FormState,
    rt: &Runtime<FormContext>,
) -> Result<FormStateUpdate, BoxError> {
    let ctx = rt.context();
    let now = ctx.clock.unix_seconds();
    let mut conversation = state.conversation.clone();
    if conversation.fields.is_empty() {
        conversation = super::start(&ctx.form, now);
    } else if conversation.form != ctx.form.name || conversation.fields != ctx.form.field_names() {
        return Err(format!(
            "this thread holds the form `{}` ({}), not `{}` ({}); continue it with the same form, or start a new thread",
            conversation.form,
            conversation.fields.join(", "),
            ctx.form.name,
            ctx.form.field_names().join(", ")
        )
        .into());
    }
    let update = FormStateUpdate::default();
    match conversation.status {
        Status::Completed => {
            return Ok(update
                .should_escalate(false)
                .metadata(note("closed", "completed")));
        }
        Status::Escalated => {
            let reason = conversation.escalation.as_ref().map(|e| e.reason.clone());
            return Ok(update
                .should_escalate(true)
                .escalation_reason(reason)
                .metadata(note("closed", "escalated")));
        }
        Status::Active => {}
    }
    let message = state.user_message.as_str();
    if let Some(lang) = rules::language(message) {
        conversation.language = lang;
    }
    let decision = ctx
        .engine
        .evaluate(message, &conversation, now, || async {
            let reply = ctx
                .model
                .clone()
                .with_structured_output::<HumanIntent>()
                .with_schema(json!({
                    "type": "object",
                    "properties": { "wants_human": { "type": "boolean" } },
                    "required": ["wants_human"],
                    "additionalProperties": false,
                }))
                .invoke_in(
                    rt,
                    &[Message::system(INTENT_PROMPT), Message::human(message)],
                    &CallOptions::new().task("HumanIntent").max_tokens(20),
                )
                .await?;
            Ok::<_, BoxError>(
                reply
                    .value
                    .wants_human
                    .then(|| "the model judged that the user wants a person".to_owned()),
            )
        })
        .await?;
    conversation.turns += 1;
    conversation.last_message_at = Some(now);
    let mut metadata = note("language", conversation.language.code());
    if let Some(escalation) = &decision {
        metadata.insert(
            "escalation_policy".into(),
            escalation.policy.as_str().into(),
        );
    }
    Ok(update
        .should_escalate(decision.is_some())
        .escalation_reason(decision.map(|d| d.reason))
        .conversation(conversation)
        .metadata(metadata))
}

/// Detects a correction of a value given before (or of the value just refused).
#[node]
pub async fn check_correction(
    state: &FormState,
    rt: &Runtime<FormContext>,
) -> Result<FormStateUpdate, BoxError> {
    let ctx = rt.context();
    let conversation = &state.conversation;
    let none = FormStateUpdate::default()
        .is_correction(false)
        .correction_field(None);
    if conversation.status != Status::Active {
        return Ok(none);
    }
    let message = state.user_message.as_str();
    let collected = conversation.collected();
    let mut candidates = collected.clone();
    if let Some(current) = &conversation.current_field {
        if !candidates.contains(current) {
            candidates.push(current.clone());
        }
    }
    let found = |field: String, by: &str| {
        FormStateUpdate::default()
            .is_correction(true)
            .correction_field(Some(field))
            .metadata(note("correction_by", by))
    };
    let Some(marker) = rules::correction_marker(message) else {
        return Ok(
            match rules::restated_field(
                message,
                &ctx.form,
                &collected,
                conversation.current_field.as_deref(),
            ) {
                Some(field) => found(field, "restatement"),
                None => none,
            },
        );
    };
    if let Some(field) = rules::correction_target(message, &ctx.form, &candidates) {
        return Ok(found(field, "rules").metadata(note("correction_marker", marker)));
    }
    // A marker but no field the rules can tell: the seed's ambiguous case.
    let mut names = candidates.clone();
    names.push("none".to_owned());
    let facts = json!({
        "fields": candidates.iter().filter_map(|n| ctx.form.field(n)).map(|f| json!({
            "field": FieldBrief::of(f),
            "value": conversation.values.get(&f.name),
        })).collect::<Vec<_>>(),
        "asking": conversation.current_field,
        "last_filled": conversation.last_field,
    });
    let reply = ctx
        .model
        .clone()
        .with_structured_output::<CorrectionCheck>()
        .with_schema(json!({
            "type": "object",
            "properties": {
                "is_correction": { "type": "boolean" },
                "field": { "type": "string", "enum": names },
            },
            "required": ["is_correction", "field"],
            "additionalProperties": false,
        }))
        .invoke_in(
            rt,
            &[
                Message::system(CORRECTION_PROMPT),
                context_message(facts),
                Message::human(message),
            ],
            &CallOptions::new().task("CorrectionCheck").max_tokens(40),
        )
        .await?
        .value;
    Ok(
        if reply.is_correction && candidates.contains(&reply.field) {
            found(reply.field, "model").metadata(note("correction_marker", marker))
        } else {
            none.metadata(note("correction_by", "model"))
        },
    )
}

/// Detects greetings, unrelated questions and changes of subject.
#[node]
pub async fn check_off_topic(
    state: &FormState,
    rt: &Runtime<FormContext>,
) -> Result<FormStateUpdate, BoxError> {
    let ctx = rt.context();
    let conversation = &state.conversation;
    let update = FormStateUpdate::default();
    if conversation.status != Status::Active || conversation.all_fields_collected() {
        return Ok(update.is_off_topic(false));
    }
    let Some(asking) = conversation
        .current_field
        .clone()
        .or_else(|| conversation.next_missing().cloned())
    else {
        return Ok(update.is_off_topic(false));
    };
    let field = field(ctx, &asking)?;
    let message = state.user_message.as_str();
    Ok(match rules::classify_topic(message, field) {
        Topic::OnTopic(why) => update.is_off_topic(false).metadata(note("on_topic", why)),
        Topic::OffTopic(kind) => update
            .is_off_topic(true)
            .metadata(note("off_topic", kind.as_str())),
        Topic::Ambiguous => {
            let reply = ctx
                .model
                .clone()
                .with_structured_output::<OffTopicCheck>()
                .with_schema(json!({
                    "type": "object",
                    "properties": { "off_topic": { "type": "boolean" } },
                    "required": ["off_topic"],
                    "additionalProperties": false,
                }))
                .invoke_in(
                    rt,
                    &[
                        Message::system(OFF_TOPIC_PROMPT),
                        context_message(json!({ "field": FieldBrief::of(field) })),
                        Message::human(message),
                    ],
                    &CallOptions::new().task("OffTopicCheck").max_tokens(20),
                )
                .await?
                .value;
            let mut metadata = note("off_topic_by", "model");
            if reply.off_topic {
                metadata.insert("off_topic".into(), "model".into());
            }
            update.is_off_topic(reply.off_topic).metadata(metadata)
        }
    })
}

/// The seed's normalisation: `NOT_PROVIDED`, `INVALID` (and empty or null-ish answers) are
/// no value.
pub fn normalise(value: &str) -> Option<String> {
    let value = value
        .trim()
        .trim_matches(|c| matches!(c, '"' | '\'' | '`'))
        .trim();
    let upper = value.to_ascii_uppercase();
    if value.is_empty()
        || matches!(
            upper.as_str(),
            "NOT_PROVIDED" | "NOT PROVIDED" | "INVALID" | "NONE" | "NULL" | "N/A" | "UNKNOWN"
        )
    {
        None
    } else {
        Some(value.to_owned())
    }
}

/// Asks the model for the value of the field being corrected or asked.
#[node]
pub async fn extract_field(
    state: &FormState,
    rt: &Runtime<FormContext>,
) -> Result<FormStateUpdate, BoxError> {
    let ctx = rt.context();
    let conversation = &state.conversation;
    let target = state
        .correction_field
        .clone()
        .or_else(|| conversation.current_field.clone())
        .or_else(|| conversation.next_missing().cloned())
        .ok_or("extract_field: no field to extract (the form has every value)")?;
    let field = field(ctx, &target)?;
    let reply = ctx
        .model
        .clone()
        .with_structured_output::<FieldExtraction>()
        .with_schema(json!({
            "type": "object",
            "properties": { "value": { "type": "string", "maxLength": 120 } },
            "required": ["value"],
            "additionalProperties": false,
        }))
        .invoke_in(
            rt,
            &[
                Message::system(EXTRACT_PROMPT),
                context_message(json!({ "field": FieldBrief::of(field) })),
                Message::human(state.user_message.as_str()),
            ],
            &CallOptions::new().task("FieldExtraction").max_tokens(60),
        )
        .await?
        .value;
    Ok(FormStateUpdate::default()
        .extracted_value(normalise(&reply.value))
        .current_field(Some(target)))
}

/// Checks the extracted value against its field; a valid one is stored.
#[node]
pub async fn validate(
    state: &FormState,
    rt: &Runtime<FormContext>,
) -> Result<FormStateUpdate, BoxError> {
    let ctx = rt.context();
    let target = state
        .current_field
        .clone()
        .ok_or("validate: extract_field named no field")?;
    let field = field(ctx, &target)?;
    let mut conversation = state.conversation.clone();
    let mut metadata = BTreeMap::new();
    let valid = match check_value(field, state.extracted_value.as_deref()) {
        Ok(value) => {
            let previous = conversation.values.insert(target.clone(), value.clone());
            if let Some(previous) = previous.filter(|p| *p != value) {
                conversation.corrections += 1;
                metadata.insert("previous_value".to_owned(), previous.into());
            }
            conversation.failed_attempts.remove(&target);
            conversation.last_field = Some(target.clone());
            conversation.current_field = conversation.next_missing().cloned();
            true
        }
        Err(invalid) => {
            *conversation
                .failed_attempts
                .entry(target.clone())
                .or_default() += 1;
            conversation.current_field = Some(target.clone());
            metadata.insert("validation_error".to_owned(), invalid.code().into());
            false
        }
    };
    Ok(FormStateUpdate::default()
        .is_valid(valid)
        .conversation(conversation)
        .metadata(metadata))
}

/// Asks for the next field, explains the expected format, or redirects.
#[node]
pub async fn prompt_next(
    state: &FormState,
    rt: &Runtime<FormContext>,
) -> Result<FormStateUpdate, BoxError> {
    let ctx = rt.context();
    let conversation = &state.conversation;
    let lang = conversation.language;
    let update = FormStateUpdate::default();
    if state.is_off_topic {
        let asking = conversation
            .current_field
            .clone()
            .or_else(|| conversation.next_missing().cloned())
            .ok_or("prompt_next: no field to ask for")?;
        let kind = match state.metadata.get("off_topic").and_then(Value::as_str) {
            Some("greeting") => Some(OffTopic::Greeting),
            Some("topic_change") => Some(OffTopic::TopicChange),
            Some("question") => Some(OffTopic::Question),
            Some("unrelated") => Some(OffTopic::Unrelated),
            _ => None,
        };
        let prompt = field(ctx, &asking)?.prompt(lang);
        return Ok(update
            .response(replies::redirect(lang, kind, &prompt))
            .next_action("redirect".to_owned()));
    }
    if !state.is_valid {
        let target = state
            .current_field
            .clone()
            .ok_or("prompt_next: validate named no field")?;
        let field = field(ctx, &target)?;
        let explanation = match check_value(field, state.extracted_value.as_deref()) {
            Err(invalid) => invalid.explain(field, lang),
            Ok(_) => String::new(),
        };
        let failed = conversation
            .failed_attempts
            .get(&target)
            .copied()
            .unwrap_or(0);
        let limit = ctx.engine.config().max_failed_attempts;
        let last = (ctx.engine.is_enabled(Policy::Completion) && failed >= limit).then_some(failed);
        return Ok(update
            .response(replies::reprompt(
                lang,
                &explanation,
                &field.prompt(lang),
                &field.label(lang),
                last,
            ))
            .next_action("reprompt".to_owned()));
    }
    let saved = state.current_field.clone().unwrap_or_default();
    let asking = conversation
        .current_field
        .clone()
        .ok_or("prompt_next: every field has a value; the route should have been `complete`")?;
    let prompt = field(ctx, &asking)?.prompt(lang);
    let value = conversation.values.get(&saved).cloned().unwrap_or_default();
    let saved_field = field(ctx, &saved)?;
    let label = saved_field.label(lang);
    let previous = state.metadata.get("previous_value").and_then(Value::as_str);
    let ack = match previous {
        Some(old) => Ack::Corrected {
            label: &label,
            old,
            new: &value,
        },
        None if saved_field.is_person_name() => Ack::Name(&value),
        None => Ack::Saved {
            label: &label,
            value: &value,
        },
    };
    Ok(update
        .response(replies::ask_next(lang, &ack, &prompt))
        .next_action("ask_next".to_owned()))
}

/// Hands the conversation to a human agent (once; later messages are told so).
#[node]
pub async fn escalate(
    state: &FormState,
    rt: &Runtime<FormContext>,
) -> Result<FormStateUpdate, BoxError> {
    let ctx = rt.context();
    let mut conversation = state.conversation.clone();
    let lang = conversation.language;
    if conversation.status == Status::Escalated {
        return Ok(FormStateUpdate::default()
            .response(replies::already_escalated(lang))
            .next_action("closed".to_owned()));
    }
    let policy: Policy = state
        .metadata
        .get("escalation_policy")
        .cloned()
        .and_then(|p| serde_json::from_value(p).ok())
        .ok_or("escalate: check_escalation recorded no policy")?;
    let now = ctx.clock.unix_seconds();
    conversation.status = Status::Escalated;
    conversation.finished_at = Some(now);
    conversation.escalation = Some(EscalationRecord {
        policy,
        reason: state.escalation_reason.clone().unwrap_or_default(),
        at: now,
    });
    let collected = replies::summary(&ctx.form, &conversation, lang);
    Ok(FormStateUpdate::default()
        .response(replies::escalated(lang, policy, &collected))
        .conversation(conversation)
        .next_action("escalated".to_owned()))
}

/// Thanks the user (through the model) and closes the form.
#[node]
pub async fn complete(
    state: &FormState,
    rt: &Runtime<FormContext>,
) -> Result<FormStateUpdate, BoxError> {
    let ctx = rt.context();
    let mut conversation = state.conversation.clone();
    let lang = conversation.language;
    let collected = replies::summary(&ctx.form, &conversation, lang);
    if conversation.status == Status::Completed {
        return Ok(FormStateUpdate::default()
            .response(replies::already_completed(lang, &collected))
            .next_action("closed".to_owned()));
    }
    let name = ctx
        .form
        .fields
        .iter()
        .find(|f| f.is_person_name())
        .and_then(|f| conversation.values.get(&f.name));
    let facts = json!({
        "language": lang.code(),
        "values": collected,
        "name": name,
    });
    let reply = invoke_in_node(
        &*ctx.model,
        &[
            Message::system(COMPLETE_PROMPT),
            context_message(facts),
            Message::human(state.user_message.as_str()),
        ],
        &CallOptions::new().task("complete").max_tokens(120),
        rt,
    )
    .await?;
    let mut text = reply.text().trim().to_owned();
    if text.is_empty() {
        text = replies::thanks(lang, name.map(String::as_str), &collected);
    }
    let now = ctx.clock.unix_seconds();
    conversation.status = Status::Completed;
    conversation.finished_at = Some(now);
    conversation.current_field = None;
    Ok(FormStateUpdate::default()
        .response(text)
        .conversation(conversation)
        .next_action("completed".to_owned()))
}

/// `escalate` when a policy fired, else `check_correction`.
pub fn route_after_escalation_check(state: &FormState) -> &'static str {
    if state.should_escalate {
        "escalate"
    } else {
        "check_correction"
    }
}

/// `extract_field` for a correction, else `check_off_topic`.
pub fn route_after_correction_check(state: &FormState) -> &'static str {
    if state.is_correction {
        "extract_field"
    } else {
        "check_off_topic"
    }
}

/// `complete` when every field is collected, `prompt_next` when off topic, else
/// `extract_field`.
pub fn route_after_off_topic_check(state: &FormState) -> &'static str {
    if state.conversation.all_fields_collected() {
        "complete"
    } else if state.is_off_topic {
        "prompt_next"
    } else {
        "extract_field"
    }
}

/// `complete` when every field is collected, else `prompt_next`.
pub fn route_after_validate(state: &FormState) -> &'static str {
    if state.conversation.all_fields_collected() {
        "complete"
    } else {
        "prompt_next"
    }
}
