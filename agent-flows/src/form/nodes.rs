//! The eight nodes of seed 001 and its four routing functions, as the seed writes them.
//!
//! Model calls carry the instructions as a system message, the facts they need as a second
//! system message starting with `Context:` (JSON: the field asked, the values given...), and
//! the user's message as the human message; the offline model reads the same messages.

use std::collections::BTreeMap;

use agent_core::{BoxError, BoxResult, Runtime, node};
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
use crate::chat;

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
    /// The custom pattern the whole value must match, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
}

impl FieldBrief {
    pub fn of(field: &FieldSpec) -> Self {
        FieldBrief {
            name: field.name.clone(),
            kind: field.kind,
            label: field.label.clone(),
            aliases: field.aliases.clone(),
            pattern: field.pattern.as_ref().map(|p| p.as_str().to_owned()),
        }
    }

    /// The field again (a pattern that no longer compiles is left out: the node validates
    /// against the form's own).
    pub fn to_spec(&self) -> FieldSpec {
        let mut spec = FieldSpec::new(&self.name, self.kind, self.label.clone(), Texts::default());
        spec.aliases = self.aliases.clone();
        spec.pattern = self
            .pattern
            .as_deref()
            .and_then(|p| regex::Regex::new(p).ok());
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
    let message = state.user_message.as_str();
    match conversation.status {
        Status::Completed => {
            // No policy runs once the form is complete, but the conversation goes on: a
            // correction may still come, answered in the user's language.
            if let Some(lang) = rules::language(message) {
                conversation.language = lang;
            }
            conversation.turns += 1;
            conversation.last_message_at = Some(now);
            return Ok(update
                .should_escalate(false)
                .conversation(conversation)
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
                    &CallOptions::new()
                        .task("HumanIntent")
                        .max_tokens(20)
                        .nostream(),
                )
                .await?;
            BoxResult::Ok(
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

/// Detects a correction of a value given before (or of the value just refused), while the
/// form is filled and after it is complete alike.
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
    if conversation.status == Status::Escalated {
        return Ok(none);
    }
    let message = state.user_message.as_str();
    let collected = conversation.collected();
    let mut candidates = collected.clone();
    if let Some(current) = &conversation.current_field
        && !candidates.contains(current)
    {
        candidates.push(current.clone());
    }
    let found = |field: String, by: &str, marker: Option<&str>| {
        let mut metadata = note("correction_by", by);
        if let Some(marker) = marker {
            metadata.insert("correction_marker".to_owned(), marker.into());
        }
        FormStateUpdate::default()
            .is_correction(true)
            .correction_field(Some(field))
            .metadata(metadata)
    };
    let Some(marker) = rules::correction_marker(message) else {
        if let Some(field) = rules::restated_field(
            message,
            &ctx.form,
            &collected,
            conversation.current_field.as_deref(),
        ) {
            return Ok(found(field, "restatement", None));
        }
        // A completed form whose correction was refused asked for that field again: an
        // answer to it is the correction.
        if conversation.status == Status::Completed
            && let Some(pending) = &conversation.current_field
            && let Topic::OnTopic(_) = rules::classify_topic(message, field(ctx, pending)?)
        {
            return Ok(found(pending.clone(), "answer", None));
        }
        return Ok(none);
    };
    if let Some(field) = rules::correction_target(message, &ctx.form, &candidates) {
        return Ok(found(field, "rules", Some(&marker)));
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
            &CallOptions::new()
                .task("CorrectionCheck")
                .max_tokens(40)
                .nostream(),
        )
        .await?
        .value;
    Ok(
        if reply.is_correction && candidates.contains(&reply.field) {
            found(reply.field, "model", Some(&marker))
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
                    &CallOptions::new()
                        .task("OffTopicCheck")
                        .max_tokens(20)
                        .nostream(),
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
            &CallOptions::new()
                .task("FieldExtraction")
                .max_tokens(60)
                .nostream(),
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
    let update = FormStateUpdate::default()
        .is_valid(valid)
        .conversation(conversation);
    // An empty map would clear the turn's notes (see `merge_or_clear`).
    Ok(if metadata.is_empty() {
        update
    } else {
        update.metadata(metadata)
    })
}

/// Asks for the next field, explains the expected format, or redirects.
#[node]
pub async fn prompt_next(
    state: &FormState,
    rt: &Runtime<FormContext>,
) -> Result<FormStateUpdate, BoxError> {
    next_prompt(state, rt.context()).map(answered)
}

/// The reply `prompt_next` writes.
fn next_prompt(state: &FormState, ctx: &FormContext) -> Result<FormStateUpdate, BoxError> {
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
    hand_over(state, rt.context()).map(answered)
}

/// What `escalate` writes.
fn hand_over(state: &FormState, ctx: &FormContext) -> Result<FormStateUpdate, BoxError> {
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
        return after_completion(state, ctx, &collected).map(answered);
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
    // The thanks keep the id their tokens streamed under.
    Ok(FormStateUpdate::default()
        .messages(vec![chat::model_answer(reply.message, text.clone())])
        .response(text)
        .conversation(conversation)
        .next_action("completed".to_owned()))
}

/// `complete` on a form completed before: a correction applied (the change and the updated
/// summary), a correction refused (what is wrong with it, the value kept, the question), or
/// any other message (the summary, and how to change it).
fn after_completion(
    state: &FormState,
    ctx: &FormContext,
    collected: &str,
) -> Result<FormStateUpdate, BoxError> {
    let lang = state.conversation.language;
    let update = FormStateUpdate::default();
    let target = match (&state.current_field, state.is_correction) {
        (Some(target), true) => target,
        _ => {
            return Ok(update
                .response(replies::already_completed(lang, collected))
                .next_action("closed".to_owned()));
        }
    };
    let field = field(ctx, target)?;
    let label = field.label(lang);
    let value = state
        .conversation
        .values
        .get(target)
        .cloned()
        .unwrap_or_default();
    if state.is_valid {
        let ack = match state.metadata.get("previous_value").and_then(Value::as_str) {
            Some(old) => Ack::Corrected {
                label: &label,
                old,
                new: &value,
            },
            None => Ack::Saved {
                label: &label,
                value: &value,
            },
        };
        return Ok(update
            .response(replies::corrected_after_completion(lang, &ack, collected))
            .next_action("corrected".to_owned()));
    }
    let explanation = match check_value(field, state.extracted_value.as_deref()) {
        Err(invalid) => invalid.explain(field, lang),
        Ok(_) => String::new(),
    };
    Ok(update
        .response(replies::correction_refused(
            lang,
            &explanation,
            &label,
            &value,
            &field.prompt(lang),
        ))
        .next_action("reprompt".to_owned()))
}

/// `update` with its `response` added to the chat as the turn's answer.
fn answered(update: FormStateUpdate) -> FormStateUpdate {
    match update.response.clone() {
        Some(text) => update.messages(vec![chat::answer(text)]),
        None => update,
    }
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use agent_core::{ManualClock, NodeContext};

    use super::*;
    use crate::form::spec::FormSpec;
    use crate::form::state::ConversationState;
    use crate::form::{offline, start};
    use crate::lang::Lang;

    const NOW: i64 = 1_000_000;

    fn rt(form: &str, node: &str) -> Runtime<FormContext> {
        let context = FormContext::new(
            FormSpec::builtin(form).unwrap(),
            offline::model(),
            Arc::new(ManualClock::at_unix_seconds(NOW)),
        );
        Runtime::new(context, NodeContext::detached(node))
    }

    /// A conversation on `form` with `values` given and `asking` asked.
    fn conversation(
        form: &str,
        values: &[(&str, &str)],
        asking: Option<&str>,
    ) -> ConversationState {
        let mut c = start(&FormSpec::builtin(form).unwrap(), NOW - 60);
        c.values = values
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        c.current_field = asking.map(str::to_owned);
        c.last_field = values.last().map(|(k, _)| (*k).to_owned());
        c.last_message_at = Some(NOW - 30);
        c.turns = values.len() as u32;
        c
    }

    fn state(message: &str, conversation: ConversationState) -> FormState {
        FormState {
            user_message: message.to_owned(),
            conversation,
            ..FormState::default()
        }
    }

    #[tokio::test]
    async fn check_escalation_starts_the_conversation_and_fires_policies() {
        let rt = rt("signup", "check_escalation");
        let update = check_escalation::call(
            &state("Mi nombre es Juan", ConversationState::default()),
            &rt,
        )
        .await
        .unwrap();
        assert_eq!(update.should_escalate, Some(false));
        let c = update.conversation.unwrap();
        assert_eq!((c.form.as_str(), c.fields.len(), c.turns), ("signup", 2, 1));
        assert_eq!((c.started_at, c.last_message_at), (Some(NOW), Some(NOW)));
        assert_eq!(c.current_field.as_deref(), Some("name"));
        assert_eq!(c.language, Lang::Es);

        let update = check_escalation::call(
            &state("I need to talk to a human", ConversationState::default()),
            &rt,
        )
        .await
        .unwrap();
        assert_eq!(update.should_escalate, Some(true));
        assert!(
            update
                .escalation_reason
                .flatten()
                .unwrap()
                .contains("talk to a human")
        );
        assert_eq!(update.metadata.unwrap()["escalation_policy"], "keyword");

        // llm_intent through the model (offline: its rules).
        let update = check_escalation::call(
            &state(
                "¿Me puede atender alguien de carne y hueso?",
                conversation("signup", &[], Some("name")),
            ),
            &rt,
        )
        .await
        .unwrap();
        assert_eq!(update.metadata.unwrap()["escalation_policy"], "llm_intent");

        // Another form on the same thread is refused.
        let mut other = conversation("signup", &[], Some("name"));
        other.form = "contact".into();
        let error = check_escalation::call(&state("hola", other), &rt)
            .await
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("this thread holds the form `contact`"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn check_escalation_after_the_end_runs_no_policy() {
        let rt = rt("signup", "check_escalation");
        let mut done = conversation("signup", &[("name", "Juan"), ("email", "j@x.com")], None);
        done.status = Status::Completed;
        let update = check_escalation::call(&state("talk to a human", done.clone()), &rt)
            .await
            .unwrap();
        assert_eq!(update.should_escalate, Some(false));
        // The message counts, in its language; nothing else changes.
        let after = update.conversation.unwrap();
        assert_eq!(
            (after.turns, after.last_message_at),
            (done.turns + 1, Some(NOW))
        );
        assert_eq!(after.language, Lang::En);
        assert_eq!(
            (after.values, after.status),
            (done.values, Status::Completed)
        );
        let mut escalated = conversation("signup", &[], Some("name"));
        escalated.status = Status::Escalated;
        escalated.escalation = Some(EscalationRecord {
            policy: Policy::Keyword,
            reason: "asked".into(),
            at: NOW,
        });
        let update = check_escalation::call(&state("hola", escalated), &rt)
            .await
            .unwrap();
        assert_eq!(update.should_escalate, Some(true));
        assert_eq!(update.escalation_reason, Some(Some("asked".into())));
        assert!(update.conversation.is_none());
    }

    #[tokio::test]
    async fn check_correction_by_marker_field_type_model_and_restatement() {
        let rt = rt("contact", "check_correction");
        let given = conversation(
            "contact",
            &[("name", "Juan"), ("email", "juan@ejemplo.com")],
            Some("phone"),
        );
        for (message, expected, by) in [
            (
                "No, mi email es juan.nuevo@ejemplo.com",
                Some("email"),
                "rules",
            ),
            ("Perdón, es juan2@ejemplo.com", Some("email"), "rules"),
            ("En realidad, debería ser Pedro", Some("name"), "model"),
            ("mi email es otro@ejemplo.com", Some("email"), "restatement"),
            ("600 123 456", None, ""),
            ("Mi teléfono es 600 123 456", None, ""),
        ] {
            let update = check_correction::call(&state(message, given.clone()), &rt)
                .await
                .unwrap();
            assert_eq!(update.is_correction, Some(expected.is_some()), "{message}");
            assert_eq!(
                update.correction_field.flatten().as_deref(),
                expected,
                "{message}"
            );
            if expected.is_some() {
                assert_eq!(update.metadata.unwrap()["correction_by"], by, "{message}");
            }
        }
        // A completed form still takes corrections; an escalated one does not.
        let mut done = given;
        done.values.insert("phone".into(), "600 123 456".into());
        done.current_field = None;
        done.status = Status::Completed;
        let update = check_correction::call(&state("No, mi email es x@y.com", done.clone()), &rt)
            .await
            .unwrap();
        assert_eq!(update.correction_field, Some(Some("email".into())));
        let update = check_correction::call(&state("gracias", done.clone()), &rt)
            .await
            .unwrap();
        assert_eq!(update.is_correction, Some(false));
        let mut escalated = done;
        escalated.status = Status::Escalated;
        let update = check_correction::call(&state("No, mi email es x@y.com", escalated), &rt)
            .await
            .unwrap();
        assert_eq!(update.is_correction, Some(false));
    }

    #[tokio::test]
    async fn check_off_topic_by_rules_and_model() {
        let rt = rt("signup", "check_off_topic");
        let asking_name = conversation("signup", &[], Some("name"));
        for (message, off) in [
            ("¿Cómo está el clima?", true),
            ("Buenos días", true),
            ("Tengo otra pregunta", true),
            ("Me llamo Juan", false),
            ("Juan", false),
            (
                "Necesito que alguien me explique para qué sirve todo esto",
                true,
            ),
        ] {
            let update = check_off_topic::call(&state(message, asking_name.clone()), &rt)
                .await
                .unwrap();
            assert_eq!(update.is_off_topic, Some(off), "{message}");
        }
        let update = check_off_topic::call(
            &state(
                "Necesito que alguien me explique para qué sirve todo esto",
                asking_name,
            ),
            &rt,
        )
        .await
        .unwrap();
        assert_eq!(update.metadata.unwrap()["off_topic_by"], "model");
        let all = conversation("signup", &[("name", "Juan"), ("email", "j@x.com")], None);
        let update = check_off_topic::call(&state("¿Cómo está el clima?", all), &rt)
            .await
            .unwrap();
        assert_eq!(
            update.is_off_topic,
            Some(false),
            "a complete form goes to `complete`"
        );
    }

    #[tokio::test]
    async fn extract_field_targets_the_correction_else_the_field_asked() {
        let rt = rt("contact", "extract_field");
        let given = conversation(
            "contact",
            &[("name", "Juan"), ("email", "juan@ejemplo.com")],
            Some("phone"),
        );
        let update = extract_field::call(&state("my phone is +34 600 123 456", given.clone()), &rt)
            .await
            .unwrap();
        assert_eq!(update.extracted_value, Some(Some("+34 600 123 456".into())));
        assert_eq!(update.current_field, Some(Some("phone".into())));
        let mut correcting = state("No, mi email es juan.nuevo@ejemplo.com", given.clone());
        correcting.correction_field = Some("email".into());
        let update = extract_field::call(&correcting, &rt).await.unwrap();
        assert_eq!(
            update.extracted_value,
            Some(Some("juan.nuevo@ejemplo.com".into()))
        );
        assert_eq!(update.current_field, Some(Some("email".into())));
        let update = extract_field::call(&state("no lo tengo a mano", given), &rt)
            .await
            .unwrap();
        assert_eq!(
            update.extracted_value,
            Some(None),
            "NOT_PROVIDED is no value"
        );
    }

    #[test]
    fn normalise_drops_the_seeds_markers() {
        for none in ["NOT_PROVIDED", "invalid", " ", "\"\"", "null", "N/A"] {
            assert_eq!(normalise(none), None, "{none}");
        }
        assert_eq!(normalise(" \"juan@x.com\" ").as_deref(), Some("juan@x.com"));
    }

    #[tokio::test]
    async fn validate_stores_a_valid_value_or_counts_the_failure() {
        let rt = rt("signup", "validate");
        let mut s = state(
            "juan@ejemplo.com",
            conversation("signup", &[("name", "Juan")], Some("email")),
        );
        s.current_field = Some("email".into());
        s.extracted_value = Some("juan@ejemplo.com".into());
        let update = validate::call(&s, &rt).await.unwrap();
        assert_eq!(update.is_valid, Some(true));
        let c = update.conversation.unwrap();
        assert_eq!(c.values["email"], "juan@ejemplo.com");
        assert!(c.all_fields_collected());
        assert_eq!(c.current_field, None);

        s.extracted_value = Some("juan@ejemplo".into());
        let update = validate::call(&s, &rt).await.unwrap();
        assert_eq!(update.is_valid, Some(false));
        let c = update.conversation.unwrap();
        assert_eq!(c.failed_attempts["email"], 1);
        assert!(!c.values.contains_key("email"));
        assert_eq!(update.metadata.unwrap()["validation_error"], "email:no_dot");

        // A correction replaces the value and notes the old one.
        let mut s = state(
            "",
            conversation("signup", &[("name", "Juan"), ("email", "a@b.com")], None),
        );
        s.current_field = Some("email".into());
        s.extracted_value = Some("c@d.com".into());
        let update = validate::call(&s, &rt).await.unwrap();
        assert_eq!(update.conversation.unwrap().corrections, 1);
        assert_eq!(update.metadata.unwrap()["previous_value"], "a@b.com");
    }

    #[tokio::test]
    async fn prompt_next_redirects_explains_or_asks() {
        let rt = rt("signup", "prompt_next");
        let mut s = state(
            "¿Cómo está el clima?",
            conversation("signup", &[], Some("name")),
        );
        s.conversation.language = Lang::Es;
        s.is_off_topic = true;
        s.metadata = BTreeMap::from([("off_topic".to_owned(), Value::from("question"))]);
        let update = prompt_next::call(&s, &rt).await.unwrap();
        assert_eq!(
            update.response.as_deref(),
            Some(
                "Ahora mismo no puedo ayudarte con eso: estoy recogiendo tus datos para el formulario. ¿Cuál es tu nombre?"
            )
        );
        assert_eq!(update.next_action.as_deref(), Some("redirect"));

        let mut s = state(
            "juan@ejemplo",
            conversation("signup", &[("name", "Juan")], Some("email")),
        );
        s.current_field = Some("email".into());
        s.extracted_value = Some("juan@ejemplo".into());
        s.conversation.failed_attempts.insert("email".into(), 1);
        let update = prompt_next::call(&s, &rt).await.unwrap();
        let text = update.response.unwrap();
        assert!(
            text.starts_with(
                "That doesn't look like a valid email: the domain after the @ needs a dot"
            ),
            "{text}"
        );
        assert!(text.ends_with("What is your email?"), "{text}");
        s.conversation.failed_attempts.insert("email".into(), 3);
        let text = prompt_next::call(&s, &rt).await.unwrap().response.unwrap();
        assert!(text.contains("after 3 attempts"), "{text}");

        let mut s = state(
            "Juan",
            conversation("signup", &[("name", "Juan")], Some("email")),
        );
        s.is_valid = true;
        s.current_field = Some("name".into());
        let update = prompt_next::call(&s, &rt).await.unwrap();
        assert_eq!(
            update.response.as_deref(),
            Some("Nice to meet you, Juan! What is your email?")
        );
        assert_eq!(update.next_action.as_deref(), Some("ask_next"));
    }

    #[tokio::test]
    async fn escalate_records_the_policy_once() {
        let rt = rt("signup", "escalate");
        let mut s = state(
            "talk to a human",
            conversation("signup", &[("name", "John")], Some("email")),
        );
        s.should_escalate = true;
        s.escalation_reason = Some("the user asked".into());
        s.metadata = BTreeMap::from([("escalation_policy".to_owned(), Value::from("keyword"))]);
        let update = escalate::call(&s, &rt).await.unwrap();
        let c = update.conversation.unwrap();
        assert_eq!(c.status, Status::Escalated);
        assert_eq!(
            c.escalation,
            Some(EscalationRecord {
                policy: Policy::Keyword,
                reason: "the user asked".into(),
                at: NOW
            })
        );
        assert!(
            update
                .response
                .unwrap()
                .ends_with("I'm passing on what we have: name: John.")
        );
        let mut again = s;
        again.conversation = c;
        let update = escalate::call(&again, &rt).await.unwrap();
        assert!(update.conversation.is_none(), "changes nothing");
        assert_eq!(update.next_action.as_deref(), Some("closed"));
    }

    #[tokio::test]
    async fn complete_thanks_through_the_model_once() {
        let rt = rt("signup", "complete");
        let mut c = conversation(
            "signup",
            &[("name", "Juan"), ("email", "juan@ejemplo.com")],
            None,
        );
        c.language = Lang::Es;
        let update = complete::call(&state("juan@ejemplo.com", c.clone()), &rt)
            .await
            .unwrap();
        assert_eq!(
            update.response.as_deref(),
            Some(
                "¡Gracias, Juan! Ya tenemos todo lo necesario: nombre: Juan; email: juan@ejemplo.com."
            )
        );
        let done = update.conversation.unwrap();
        assert_eq!(
            (done.status, done.finished_at),
            (Status::Completed, Some(NOW))
        );
        let update = complete::call(&state("gracias", done), &rt).await.unwrap();
        assert!(update.conversation.is_none());
        assert!(
            update
                .response
                .unwrap()
                .starts_with("Tu formulario ya está completo")
        );
    }

    #[test]
    fn the_four_routes_as_the_seed_writes_them() {
        let mut s = FormState::default();
        assert_eq!(route_after_escalation_check(&s), "check_correction");
        s.should_escalate = true;
        assert_eq!(route_after_escalation_check(&s), "escalate");

        assert_eq!(route_after_correction_check(&s), "check_off_topic");
        s.is_correction = true;
        assert_eq!(route_after_correction_check(&s), "extract_field");

        s.conversation = conversation("signup", &[("name", "Juan")], Some("email"));
        assert_eq!(route_after_off_topic_check(&s), "extract_field");
        assert_eq!(route_after_validate(&s), "prompt_next");
        s.is_off_topic = true;
        assert_eq!(route_after_off_topic_check(&s), "prompt_next");
        s.conversation
            .values
            .insert("email".into(), "j@x.com".into());
        assert_eq!(
            route_after_off_topic_check(&s),
            "complete",
            "collected wins over off topic"
        );
        assert_eq!(route_after_validate(&s), "complete");
        // A conversation not started yet has nothing collected.
        assert!(!ConversationState::default().all_fields_collected());
    }
}
