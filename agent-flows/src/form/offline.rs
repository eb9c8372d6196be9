//! The form's offline model: the decisions the seed gives to an LLM made by the rules of
//! [`super::rules`], in Spanish and English, from the same messages a real model gets.
//!
//! - `HumanIntent`: a request verb near a word for a person ("¿me puede atender alguien?",
//!   "put me through to someone real"), or a rejection of the machine ("no quiero hablar con
//!   un robot"); not a question about what the assistant is.
//! - `CorrectionCheck` (a correction marker with no field the node's rules could tell): the
//!   field whose type the message's value fits, or that it names, or that would accept the
//!   value after the marker ("en realidad, debería ser Pedro": the name; "actually, I'm 36":
//!   the one number field, rather than a free-text one); else the field filled last, else the
//!   one being asked; not a correction when the value belongs to no field given so far.
//! - `OffTopicCheck`: an attempt at the field (one token, digits, an `@`, the field named, a
//!   short answer to a text field) is on topic; longer talk is not.
//! - `FieldExtraction`: [`rules::extract`] — names after "me llamo" / "my name is" / "soy" /
//!   "I'm", emails (also spelled out: "juan arroba ejemplo punto com"), phones, URLs, numbers
//!   (digits or words), labelled text ("mi ciudad es X"), corrected values ("debería ser X");
//!   `NOT_PROVIDED` when there is none.
//! - `complete`: a thank-you in the conversation's language that repeats the values.

use std::sync::Arc;

use agent_llm::{CallOptions, ChatModel, Message};
use serde_json::Value;

use super::nodes::{CONTEXT, FieldBrief};
use super::replies;
use super::rules;
use super::spec::{FieldSpec, FieldType};
use super::validate;
use super::{CorrectionCheck, FieldExtraction, HumanIntent, OffTopicCheck};
use crate::lang::Lang;
use crate::offline::{OfflineModel, last_human, system_block};

/// The offline model of the form flow.
pub fn model() -> Arc<dyn ChatModel> {
    OfflineModel::new("offline-form")
        .json("HumanIntent", |messages: &[Message], _: &CallOptions| {
            HumanIntent {
                wants_human: rules::wants_human(last_human(messages)),
            }
        })
        .json(
            "CorrectionCheck",
            |messages: &[Message], _: &CallOptions| {
                correction(last_human(messages), &facts(messages))
            },
        )
        .json("OffTopicCheck", |messages: &[Message], _: &CallOptions| {
            OffTopicCheck {
                off_topic: brief(&facts(messages))
                    .is_some_and(|f| rules::looks_off_topic(last_human(messages), &f)),
            }
        })
        .json(
            "FieldExtraction",
            |messages: &[Message], _: &CallOptions| FieldExtraction {
                value: brief(&facts(messages))
                    .and_then(|f| rules::extract(last_human(messages), &f))
                    .unwrap_or_else(|| "NOT_PROVIDED".to_owned()),
            },
        )
        .text("complete", |messages: &[Message], _: &CallOptions| {
            let facts = facts(messages);
            let lang = facts["language"]
                .as_str()
                .and_then(Lang::from_code)
                .unwrap_or_default();
            replies::thanks(
                lang,
                facts["name"].as_str(),
                facts["values"].as_str().unwrap_or_default(),
            )
        })
        .build()
}

/// The call's facts (the JSON after [`CONTEXT`]).
fn facts(messages: &[Message]) -> Value {
    system_block(messages, CONTEXT)
        .and_then(|json| serde_json::from_str(json).ok())
        .unwrap_or(Value::Null)
}

/// The field in the facts.
fn brief(facts: &Value) -> Option<FieldSpec> {
    serde_json::from_value::<FieldBrief>(facts["field"].clone())
        .ok()
        .map(|b| b.to_spec())
}

/// The `CorrectionCheck` rule; see the module docs.
pub fn correction(message: &str, facts: &Value) -> CorrectionCheck {
    let fields: Vec<FieldSpec> = facts["fields"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| serde_json::from_value::<FieldBrief>(i["field"].clone()).ok())
                .map(|b| b.to_spec())
                .collect()
        })
        .unwrap_or_default();
    let yes = |field: &str| CorrectionCheck {
        is_correction: true,
        field: field.to_owned(),
    };
    let no = CorrectionCheck {
        is_correction: false,
        field: "none".to_owned(),
    };
    if let Some(f) = fields
        .iter()
        .find(|f| rules::typed_value(message, f.kind).is_some())
    {
        return yes(&f.name);
    }
    if let Some(f) = fields.iter().find(|f| rules::mentions(message, f)) {
        return yes(&f.name);
    }
    let foreign_value = [FieldType::Email, FieldType::Url, FieldType::Phone]
        .into_iter()
        .any(|kind| rules::typed_value(message, kind).is_some());
    if foreign_value || rules::correction_marker(message).is_none() {
        return no;
    }
    // The value after the marker fits one field's type ("debería ser Pedro": a name).
    let fits: Vec<&FieldSpec> = fields
        .iter()
        .filter(|f| {
            rules::extract(message, f).is_some_and(|v| validate::validate(f, Some(&v)).is_ok())
        })
        .collect();
    let named = |key: &str| facts[key].as_str().map(str::to_owned);
    if let [only] = fits.as_slice() {
        return yes(&only.name);
    }
    // A value of a type ("tengo 36 años": a number) says more than free text would.
    if let [only] = fits
        .iter()
        .filter(|f| f.kind != FieldType::Text)
        .collect::<Vec<_>>()
        .as_slice()
    {
        return yes(&only.name);
    }
    if let Some(f) = fits.iter().find(|f| {
        Some(&f.name) == named("last_filled").as_ref() || Some(&f.name) == named("asking").as_ref()
    }) {
        return yes(&f.name);
    }
    let given = |key: &str| {
        facts[key]
            .as_str()
            .filter(|name| fields.iter().any(|f| f.name == *name))
            .map(str::to_owned)
    };
    match given("last_filled").or_else(|| given("asking")) {
        Some(field) => yes(&field),
        None => no,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::form::spec::FormSpec;
    use serde_json::json;

    fn facts_for(names: &[&str], last: Option<&str>, asking: Option<&str>) -> Value {
        let form = FormSpec::builtin("contact").unwrap();
        json!({
            "fields": names.iter().map(|n| json!({"field": FieldBrief::of(form.field(n).unwrap())})).collect::<Vec<_>>(),
            "last_filled": last,
            "asking": asking,
        })
    }

    #[test]
    fn ambiguous_corrections() {
        let facts = facts_for(&["name", "email"], Some("name"), Some("email"));
        let check = |m: &str| correction(m, &facts);
        assert_eq!(check("En realidad, debería ser Pedro").field, "name");
        assert_eq!(check("Actually it should be peter@x.com").field, "email");
        assert_eq!(
            check("Sorry, my mistake: the correo is wrong").field,
            "email"
        );
        assert!(
            !check("sorry, it's +34 600 123 456").is_correction,
            "a phone was never given"
        );
        assert!(!check("hmm").is_correction);
        let first = facts_for(&["name"], None, Some("name"));
        assert_eq!(correction("Eso está mal", &first).field, "name");
        assert!(!correction("No, mi email es x@y.com", &first).is_correction);
    }

    #[tokio::test]
    async fn the_model_answers_every_task_from_the_messages() {
        let model = model();
        let form = FormSpec::builtin("contact").unwrap();
        let context = |facts: Value| Message::system(format!("{CONTEXT} {facts}"));
        let field = json!({ "field": FieldBrief::of(form.field("phone").unwrap()) });
        let reply = model
            .invoke(
                &[
                    context(field.clone()),
                    Message::human("my phone is +34 600 123 456"),
                ],
                &CallOptions::new().task("FieldExtraction"),
            )
            .await
            .unwrap();
        assert_eq!(reply.text(), r#"{"value":"+34 600 123 456"}"#);
        let reply = model
            .invoke(
                &[context(field.clone()), Message::human("no lo sé")],
                &CallOptions::new().task("FieldExtraction"),
            )
            .await
            .unwrap();
        assert_eq!(reply.text(), r#"{"value":"NOT_PROVIDED"}"#);
        let reply = model
            .invoke(
                &[Message::human("¿Me puede atender alguien?")],
                &CallOptions::new().task("HumanIntent"),
            )
            .await
            .unwrap();
        assert_eq!(reply.text(), r#"{"wants_human":true}"#);
        let reply = model
            .invoke(
                &[
                    context(field),
                    Message::human("me encantan los días de lluvia en otoño"),
                ],
                &CallOptions::new().task("OffTopicCheck"),
            )
            .await
            .unwrap();
        assert_eq!(reply.text(), r#"{"off_topic":true}"#);
        let reply = model
            .invoke(
                &[
                    context(json!({"language": "es", "values": "nombre: Juan; email: juan@ejemplo.com", "name": "Juan"})),
                    Message::human("juan@ejemplo.com"),
                ],
                &CallOptions::new().task("complete"),
            )
            .await
            .unwrap();
        assert_eq!(
            reply.text(),
            "¡Gracias, Juan! Ya tenemos todo lo necesario: nombre: Juan; email: juan@ejemplo.com."
        );
    }
}
