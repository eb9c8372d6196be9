//! The `form` flow through the public API, as a program embedding it would: the seed's four
//! traces in Spanish and English on threads, the timeout policy on an injected clock, the
//! model behind `llm_intent` and extraction, form files (every field type, custom patterns,
//! escalation settings, errors that name the bad field), and threads that keep their form.

use std::sync::Arc;
use std::time::Duration;

use agent_core::{Checkpointer, InMemorySaver, ManualClock, StreamModes};
use agent_flows::offline::OfflineModel;
use agent_flows::{FlowEnv, FlowSession, TurnReport, find};
use agent_llm::{CallOptions, Message};
use serde_json::{Value, json};

const T0: i64 = 1_784_116_800;

fn env(clock: &Arc<ManualClock>) -> FlowEnv {
    FlowEnv::offline().with_clock(clock.clone())
}

fn open(env: &FlowEnv, saver: &Arc<InMemorySaver>) -> Box<dyn FlowSession> {
    find("form")
        .unwrap()
        .open(env, Some(saver.clone() as Arc<dyn Checkpointer>), None)
        .unwrap()
}

async fn say(session: &dyn FlowSession, thread: &str, message: &str) -> TurnReport {
    session
        .turn(message, Some(thread), StreamModes::NONE, &mut |_| {})
        .await
        .unwrap_or_else(|e| panic!("{message}: {e}"))
}

fn path(report: &TurnReport) -> Vec<&str> {
    report.path.iter().map(|step| step[0].as_str()).collect()
}

const ASK_NEXT: &[&str] = &[
    "check_escalation",
    "check_correction",
    "check_off_topic",
    "extract_field",
    "validate",
    "prompt_next",
];
const COMPLETE: &[&str] = &[
    "check_escalation",
    "check_correction",
    "check_off_topic",
    "extract_field",
    "validate",
    "complete",
];
const CORRECTION: &[&str] = &[
    "check_escalation",
    "check_correction",
    "extract_field",
    "validate",
    "prompt_next",
];
const OFF_TOPIC: &[&str] = &[
    "check_escalation",
    "check_correction",
    "check_off_topic",
    "prompt_next",
];
const ESCALATE: &[&str] = &["check_escalation", "escalate"];

#[tokio::test]
async fn the_seeds_four_traces_in_spanish_and_english() {
    let clock = Arc::new(ManualClock::at_unix_seconds(T0));
    let saver = Arc::new(InMemorySaver::new());
    let signup = open(&env(&clock), &saver);
    let contact = open(&env(&clock).with_option("form", "contact"), &saver);
    struct Lang {
        code: &'static str,
        name: &'static str,
        email: &'static str,
        corrected: &'static str,
        off_topic: &'static str,
        human: &'static str,
    }
    for lang in [
        Lang {
            code: "es",
            name: "Mi nombre es Juan",
            email: "juan@ejemplo.com",
            corrected: "No, mi email es juan.nuevo@ejemplo.com",
            off_topic: "¿Cómo está el clima?",
            human: "Necesito hablar con un humano",
        },
        Lang {
            code: "en",
            name: "My name is John",
            email: "john@example.com",
            corrected: "No, my email is john.new@example.com",
            off_topic: "What's the weather like?",
            human: "I need to talk to a human",
        },
    ] {
        // Happy path.
        let thread = format!("happy-{}", lang.code);
        let first = say(&*signup, &thread, lang.name).await;
        assert_eq!(path(&first), ASK_NEXT);
        assert_eq!(
            first.state["extracted_value"],
            lang.name.rsplit(' ').next().unwrap()
        );
        assert_eq!(first.state["is_valid"], true);
        let second = say(&*signup, &thread, lang.email).await;
        assert_eq!(path(&second), COMPLETE);
        assert_eq!(second.state["conversation"]["status"], "completed");
        assert_eq!(second.state["conversation"]["language"], lang.code);
        assert!(second.response.contains(lang.email), "{}", second.response);

        // Correction (on `contact`: a field is still missing after the email).
        let thread = format!("correction-{}", lang.code);
        say(&*contact, &thread, lang.name).await;
        say(&*contact, &thread, lang.email).await;
        let fixed = say(&*contact, &thread, lang.corrected).await;
        assert_eq!(path(&fixed), CORRECTION);
        assert_eq!(fixed.state["is_correction"], true);
        assert_eq!(fixed.state["correction_field"], "email");
        let new_email = lang.corrected.rsplit(' ').next().unwrap();
        assert_eq!(fixed.state["conversation"]["values"]["email"], new_email);
        assert_eq!(fixed.state["conversation"]["corrections"], 1);
        assert_eq!(fixed.state["conversation"]["current_field"], "phone");

        // Off topic.
        let thread = format!("off-topic-{}", lang.code);
        let off = say(&*signup, &thread, lang.off_topic).await;
        assert_eq!(path(&off), OFF_TOPIC);
        assert_eq!(off.state["is_off_topic"], true);
        assert_eq!(off.state["conversation"]["values"], json!({}));
        assert!(
            off.response.ends_with(if lang.code == "es" {
                "¿Cuál es tu nombre?"
            } else {
                "What is your name?"
            }),
            "{}",
            off.response
        );

        // Escalation.
        let thread = format!("escalation-{}", lang.code);
        let escalated = say(&*signup, &thread, lang.human).await;
        assert_eq!(path(&escalated), ESCALATE);
        let record = &escalated.state["conversation"]["escalation"];
        assert_eq!(record["policy"], "keyword");
        assert_eq!(record["at"], T0);
        assert_eq!(escalated.state["conversation"]["status"], "escalated");
    }
}

#[tokio::test]
async fn a_turn_starts_with_fresh_flags_and_the_conversation_carries_over() {
    let clock = Arc::new(ManualClock::at_unix_seconds(T0));
    let saver = Arc::new(InMemorySaver::new());
    let form = open(&env(&clock), &saver);
    let off = say(&*form, "t", "Hola").await;
    assert_eq!(off.state["is_off_topic"], true);
    assert_eq!(off.state["metadata"]["off_topic"], "greeting");
    clock.advance(Duration::from_secs(5));
    let next = say(&*form, "t", "Me llamo Ana").await;
    assert_eq!(next.state["is_off_topic"], false);
    assert!(next.state["metadata"].get("off_topic").is_none());
    assert_eq!(next.state["conversation"]["turns"], 2);
    assert_eq!(next.state["conversation"]["started_at"], T0);
    assert_eq!(next.state["conversation"]["last_message_at"], T0 + 5);
    assert_eq!(next.state["next_action"], "ask_next");
}

#[tokio::test]
async fn a_message_after_the_end_gets_a_reply_and_changes_nothing() {
    let clock = Arc::new(ManualClock::at_unix_seconds(T0));
    let saver = Arc::new(InMemorySaver::new());
    let form = open(&env(&clock), &saver);
    say(&*form, "done", "Mi nombre es Juan").await;
    let complete = say(&*form, "done", "juan@ejemplo.com").await;
    clock.advance(Duration::from_secs(7_200));
    for message in [
        "gracias",
        "quiero hablar con un humano",
        "¿Cómo está el clima?",
    ] {
        let after = say(&*form, "done", message).await;
        assert_eq!(
            path(&after),
            [
                "check_escalation",
                "check_correction",
                "check_off_topic",
                "complete"
            ]
        );
        let (before, now) = (
            &complete.state["conversation"],
            &after.state["conversation"],
        );
        for key in ["values", "status", "finished_at", "corrections"] {
            assert_eq!(now[key], before[key], "{message}: {key}");
        }
        assert!(
            after.response.starts_with("Tu formulario ya está completo"),
            "{}",
            after.response
        );
        assert!(after.response.contains("si algún dato no es correcto"));
        assert_eq!(after.state["next_action"], "closed");
    }
    let last = say(&*form, "done", "ok").await;
    assert_eq!(
        last.state["conversation"]["turns"], 6,
        "every message counts"
    );
    assert_eq!(last.state["conversation"]["last_message_at"], T0 + 7_200);
    say(&*form, "gone", "talk to a human").await;
    let escalated = say(&*form, "gone", "My name is John").await;
    assert_eq!(path(&escalated), ESCALATE);
    assert!(
        escalated
            .response
            .starts_with("This conversation is already with a human agent")
    );
    assert!(
        escalated.state["conversation"]["values"]
            .as_object()
            .unwrap()
            .is_empty()
    );
}

const CORRECTED_AFTER_END: &[&str] = &[
    "check_escalation",
    "check_correction",
    "extract_field",
    "validate",
    "complete",
];

#[tokio::test]
async fn a_correction_after_the_summary_is_applied_and_summarised() {
    let clock = Arc::new(ManualClock::at_unix_seconds(T0));
    let saver = Arc::new(InMemorySaver::new());
    let form = open(&env(&clock), &saver);
    say(&*form, "t", "Mi nombre es Juan").await;
    say(&*form, "t", "juan@ejemplo.com").await;
    let fixed = say(&*form, "t", "No, en realidad me llamo Ana Gómez").await;
    assert_eq!(path(&fixed), CORRECTED_AFTER_END);
    assert_eq!(fixed.state["is_correction"], true);
    assert_eq!(fixed.state["correction_field"], "name");
    let conversation = &fixed.state["conversation"];
    assert_eq!(conversation["values"]["name"], "Ana Gómez");
    assert_eq!(conversation["values"]["email"], "juan@ejemplo.com");
    assert_eq!(conversation["status"], "completed");
    assert_eq!(conversation["corrections"], 1);
    assert_eq!(fixed.state["next_action"], "corrected");
    assert_eq!(
        fixed.response,
        "Listo, corregí tu nombre: ahora es Ana Gómez (antes Juan). Tu formulario queda así: nombre: Ana Gómez; email: juan@ejemplo.com."
    );

    // A refused value keeps the old one and asks again; the answer is the correction.
    let refused = say(&*form, "t", "Mi email está mal").await;
    assert_eq!(path(&refused), CORRECTED_AFTER_END);
    assert_eq!(refused.state["next_action"], "reprompt");
    assert_eq!(
        refused.response,
        "No encontré tu email en ese mensaje. Mantengo tu email anterior (juan@ejemplo.com). ¿Cuál es tu email?"
    );
    assert_eq!(
        refused.state["conversation"]["values"]["email"],
        "juan@ejemplo.com"
    );
    let invalid = say(&*form, "t", "ana@ejemplo").await;
    assert_eq!(invalid.state["next_action"], "reprompt");
    assert!(
        invalid.response.contains("le falta un punto"),
        "{}",
        invalid.response
    );
    let answered = say(&*form, "t", "ana@ejemplo.com").await;
    assert_eq!(path(&answered), CORRECTED_AFTER_END);
    assert_eq!(answered.state["next_action"], "corrected");
    assert_eq!(
        answered.state["conversation"]["values"]["email"],
        "ana@ejemplo.com"
    );
    assert!(
        answered
            .response
            .ends_with("Tu formulario queda así: nombre: Ana Gómez; email: ana@ejemplo.com."),
        "{}",
        answered.response
    );
    // Pending text fields take a short answer the same way.
    say(&*form, "t", "Mi nombre está mal").await;
    let named = say(&*form, "t", "Ana María Gómez").await;
    assert_eq!(named.state["correction_field"], "name");
    assert_eq!(
        named.state["conversation"]["values"]["name"],
        "Ana María Gómez"
    );
    // After a correction, the rest is as after completion.
    let thanks = say(&*form, "t", "gracias").await;
    assert_eq!(thanks.state["next_action"], "closed");
    assert_eq!(thanks.state["conversation"]["corrections"], 3);
}

/// Fills a form on `thread` with `answers`, then sends `correction`: what went wrong, if
/// anything — `field` must become `value`, the rest stay, and the reply show the updated
/// summary.
async fn correct_after_the_end(
    session: &dyn FlowSession,
    thread: &str,
    answers: &[&str],
    correction: &str,
    field: &str,
    value: &str,
) -> Option<String> {
    for answer in answers {
        say(session, thread, answer).await;
    }
    let done = say(session, thread, "ok").await;
    assert_eq!(
        done.state["conversation"]["status"], "completed",
        "{thread}: {answers:?}"
    );
    let before = done.state["conversation"]["values"].clone();
    let fixed = say(session, thread, correction).await;
    let after = &fixed.state["conversation"]["values"];
    let mut wrong = Vec::new();
    if path(&fixed) != CORRECTED_AFTER_END {
        wrong.push(format!("path {:?}", path(&fixed)));
    }
    if fixed.state["correction_field"] != field {
        wrong.push(format!("field {}", fixed.state["correction_field"]));
    }
    if fixed.state["next_action"] != "corrected" {
        wrong.push(format!("action {}", fixed.state["next_action"]));
    }
    if after[field] != value {
        wrong.push(format!("value {}", after[field]));
    }
    for (key, old) in before.as_object().unwrap() {
        if key != field && &after[key] != old {
            wrong.push(format!("{key} changed to {}", after[key]));
        }
    }
    let summary = ["Tu formulario queda así: ", "Your form now reads: "]
        .iter()
        .find_map(|s| fixed.response.split(s).nth(1))
        .unwrap_or_default();
    for shown in after.as_object().unwrap().values() {
        if !summary.contains(shown.as_str().unwrap()) {
            wrong.push(format!("the summary lacks {shown}"));
        }
    }
    (!wrong.is_empty())
        .then(|| format!("{correction:?}: {} ({})", wrong.join(", "), fixed.response))
}

#[tokio::test]
async fn corrections_after_the_end_for_every_field_type_in_both_languages() {
    let clock = Arc::new(ManualClock::at_unix_seconds(T0));
    let saver = Arc::new(InMemorySaver::new());
    let contact = open(&env(&clock).with_option("form", "contact"), &saver);
    let es = ["Me llamo Juan Pérez", "juan@ejemplo.com", "600 123 456"];
    let en = [
        "My name is John Smith",
        "john@example.com",
        "+1 555 123 4567",
    ];
    let cases: &[(&[&str], &str, &str, &str)] = &[
        (
            &es,
            "No, en realidad me llamo Ana Gómez",
            "name",
            "Ana Gómez",
        ),
        (&es, "Perdón, mi nombre es Ana Gómez", "name", "Ana Gómez"),
        (&es, "Me llamo Ana Gómez", "name", "Ana Gómez"),
        (&es, "Mi nombre está mal, es Ana Gómez", "name", "Ana Gómez"),
        (&es, "No es Juan Pérez, es Ana Gómez", "name", "Ana Gómez"),
        (
            &es,
            "Me equivoqué, mi correo es ana@ejemplo.com",
            "email",
            "ana@ejemplo.com",
        ),
        (
            &es,
            "ana.gomez@ejemplo.com",
            "email",
            "ana.gomez@ejemplo.com",
        ),
        (
            &es,
            "No, mi teléfono es 611 222 333",
            "phone",
            "611 222 333",
        ),
        (
            &es,
            "En realidad el móvil es +34 699 888 777",
            "phone",
            "+34 699 888 777",
        ),
        (&en, "Actually, my name is Ann Smith", "name", "Ann Smith"),
        (&en, "Sorry, I'm Ann Smith", "name", "Ann Smith"),
        (&en, "My name is wrong, it's Ann Smith", "name", "Ann Smith"),
        (
            &en,
            "My email is wrong, it should be ann@example.com",
            "email",
            "ann@example.com",
        ),
        (
            &en,
            "Wrong number, my phone is 555 987 6543",
            "phone",
            "555 987 6543",
        ),
        (
            &en,
            "That's wrong: my phone number is (555) 111-2222",
            "phone",
            "(555) 111-2222",
        ),
    ];
    let mut failures = Vec::new();
    for (i, (answers, correction, field, value)) in cases.iter().enumerate() {
        let thread = format!("contact-{i}");
        failures.extend(
            correct_after_the_end(&*contact, &thread, answers, correction, field, value).await,
        );
    }

    let file = form_file("club-corrections.toml", CLUB_FORM);
    let club = open(&env(&clock).with_option("form", file), &saver);
    let answers: &[&str] = &["https://ejemplo.com", "35", "AB-1234", "+34 600 123 456"];
    let cases: &[(&str, &str, &str)] = &[
        (
            "No, mi web es https://otra.es",
            "website",
            "https://otra.es",
        ),
        (
            "Actually my website is https://other.com",
            "website",
            "https://other.com",
        ),
        ("En realidad tengo 36 años", "age", "36"),
        ("No, mi edad es 36", "age", "36"),
        ("Sorry, I'm 36", "age", "36"),
        ("Perdón, mi código de socio es CD-5678", "code", "CD-5678"),
        ("My member code is wrong, it's CD-5678", "code", "CD-5678"),
        (
            "Me equivoqué de teléfono: es 611 222 333",
            "phone",
            "611 222 333",
        ),
        (
            "Actually, my phone is +1 555 987 6543",
            "phone",
            "+1 555 987 6543",
        ),
    ];
    for (i, (correction, field, value)) in cases.iter().enumerate() {
        let thread = format!("club-{i}");
        failures.extend(
            correct_after_the_end(&*club, &thread, answers, correction, field, value).await,
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn after_the_end_an_ambiguous_correction_is_the_models_decision() {
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = asked.clone();
    let model = OfflineModel::new("test-model")
        .json(
            "HumanIntent",
            |_: &[Message], _: &CallOptions| json!({ "wants_human": false }),
        )
        .json("CorrectionCheck", move |_: &[Message], _: &CallOptions| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            json!({ "is_correction": true, "field": "name" })
        })
        .json(
            "OffTopicCheck",
            |_: &[Message], _: &CallOptions| json!({ "off_topic": false }),
        )
        .json(
            "FieldExtraction",
            |messages: &[Message], _: &CallOptions| {
                let message = agent_flows::offline::last_human(messages);
                json!({ "value": message.rsplit(' ').next().unwrap_or_default() })
            },
        )
        .text("complete", |_: &[Message], _: &CallOptions| {
            "Thanks from the model.".to_owned()
        })
        .build();
    let clock = Arc::new(ManualClock::at_unix_seconds(T0));
    let saver = Arc::new(InMemorySaver::new());
    let form = open(&env(&clock).with_model(model), &saver);
    say(&*form, "m", "Soy Juan").await;
    let done = say(&*form, "m", "juan@ejemplo.com").await;
    assert_eq!(done.response, "Thanks from the model.");
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 0);
    let fixed = say(&*form, "m", "Eso está mal, es Pedro").await;
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(path(&fixed), CORRECTED_AFTER_END);
    assert_eq!(fixed.state["metadata"]["correction_by"], "model");
    assert_eq!(fixed.state["conversation"]["values"]["name"], "Pedro");
    assert!(
        fixed
            .response
            .ends_with("nombre: Pedro; email: juan@ejemplo.com."),
        "{}",
        fixed.response
    );
}

#[tokio::test]
async fn the_timeout_policy_reads_the_injected_clock() {
    let clock = Arc::new(ManualClock::at_unix_seconds(T0));
    let saver = Arc::new(InMemorySaver::new());
    let form = open(&env(&clock), &saver);
    say(&*form, "idle", "Mi nombre es Juan").await;
    clock.advance(Duration::from_secs(14 * 60));
    let in_time = say(&*form, "idle", "hola").await;
    assert_eq!(in_time.state["should_escalate"], false);
    clock.advance(Duration::from_secs(16 * 60));
    let late = say(&*form, "idle", "juan@ejemplo.com").await;
    assert_eq!(path(&late), ESCALATE);
    assert_eq!(
        late.state["conversation"]["escalation"]["policy"],
        "timeout"
    );
    assert_eq!(
        late.state["escalation_reason"],
        "16 min without a message, over the 15 min limit"
    );
    assert!(
        late.response
            .starts_with("Esta conversación lleva demasiado tiempo abierta"),
        "{}",
        late.response
    );
}

fn form_file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("form-flow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[tokio::test]
async fn the_conversation_timeout_and_policies_come_from_the_form_file() {
    let file = form_file(
        "short.toml",
        "[[fields]]\nname = \"name\"\ntype = \"text\"\n[escalation]\npolicies = [\"timeout\", \"completion\"]\nconversation_timeout_secs = 60\nidle_timeout_secs = 0\n",
    );
    let clock = Arc::new(ManualClock::at_unix_seconds(T0));
    let saver = Arc::new(InMemorySaver::new());
    let form = open(&env(&clock).with_option("form", file), &saver);
    // Keyword is off: asking for a person is just an off-topic message here.
    let first = say(&*form, "t", "hablar con un humano").await;
    assert_eq!(first.state["should_escalate"], false);
    clock.advance(Duration::from_secs(61));
    let late = say(&*form, "t", "Soy Ana").await;
    assert_eq!(
        late.state["escalation_reason"],
        "the conversation has lasted 1 min, over the 1 min limit"
    );
}

/// A model whose rules are the test's: the flow must act on what the model says.
fn scripted(wants_human: bool, value: fn(&str) -> String) -> Arc<dyn agent_llm::ChatModel> {
    OfflineModel::new("test-model")
        .json("HumanIntent", move |_: &[Message], _: &CallOptions| {
            json!({ "wants_human": wants_human })
        })
        .json("CorrectionCheck", |_: &[Message], _: &CallOptions| {
            json!({ "is_correction": false, "field": "none" })
        })
        .json("OffTopicCheck", |_: &[Message], _: &CallOptions| {
            json!({ "off_topic": false })
        })
        .json("FieldExtraction", move |messages: &[Message], _: &CallOptions| {
            json!({ "value": value(agent_flows::offline::last_human(messages)) })
        })
        .text("complete", |_: &[Message], _: &CallOptions| "Thanks from the model.".to_owned())
        .build()
}

#[tokio::test]
async fn llm_intent_and_extraction_are_the_models_decisions() {
    let clock = Arc::new(ManualClock::at_unix_seconds(T0));
    let saver = Arc::new(InMemorySaver::new());
    let human = open(
        &env(&clock).with_model(scripted(true, |m| m.to_owned())),
        &saver,
    );
    let report = say(&*human, "a", "Juan").await;
    assert_eq!(path(&report), ESCALATE);
    assert_eq!(
        report.state["conversation"]["escalation"]["policy"],
        "llm_intent"
    );
    assert!(report.usage["input_tokens"] > 0, "the model was called");

    let extractor = open(
        &env(&clock).with_model(scripted(false, |_| "NOT_PROVIDED".to_owned())),
        &saver,
    );
    let report = say(&*extractor, "b", "Juan").await;
    assert_eq!(path(&report), ASK_NEXT);
    assert_eq!(
        report.state["extracted_value"],
        Value::Null,
        "NOT_PROVIDED is no value"
    );
    assert_eq!(report.state["is_valid"], false);
    assert_eq!(report.state["conversation"]["failed_attempts"]["name"], 1);
    assert_eq!(report.state["next_action"], "reprompt");

    let model_name = open(
        &env(&clock).with_model(scripted(false, |m| {
            if m.contains('@') {
                m.to_owned()
            } else {
                "Zoe".to_owned()
            }
        })),
        &saver,
    );
    say(&*model_name, "c", "whatever I say").await;
    let done = say(&*model_name, "c", "zoe@example.com").await;
    assert_eq!(done.state["conversation"]["values"]["name"], "Zoe");
    assert_eq!(done.response, "Thanks from the model.");
}

/// A Spanish form with every field type and a custom pattern (with its hint).
const CLUB_FORM: &str = r#"
        name = "club"
        language = "es"
        [[fields]]
        name = "website"
        type = "url"
        label = { es = "web", en = "website" }
        [[fields]]
        name = "age"
        type = "number"
        label = { es = "edad", en = "age" }
        prompt = { es = "¿Cuántos años tienes?", en = "How old are you?" }
        [[fields]]
        name = "code"
        type = "text"
        label = { es = "código de socio", en = "member code" }
        pattern = "[A-Z]{2}-[0-9]{4}"
        hint = { es = "dos mayúsculas, un guion y cuatro cifras (AB-1234)", en = "two capitals, a hyphen and four digits (AB-1234)" }
        [[fields]]
        name = "phone"
        type = "phone"
        "#;

#[tokio::test]
async fn a_form_file_with_every_field_type_and_a_custom_pattern() {
    let file = form_file("club.toml", CLUB_FORM);
    let clock = Arc::new(ManualClock::at_unix_seconds(T0));
    let saver = Arc::new(InMemorySaver::new());
    let club = open(&env(&clock).with_option("form", file), &saver);
    let steps: &[(&str, &str, &str)] = &[
        (
            "mi web es www.ejemplo.com",
            "reprompt",
            "debe empezar por http:// o https://",
        ),
        ("https://ejemplo.com", "ask_next", "¿Cuántos años tienes?"),
        (
            "treinta y cinco",
            "ask_next",
            "¿Cuál es tu código de socio?",
        ),
        (
            "mi código de socio es ab-1234",
            "reprompt",
            "dos mayúsculas, un guion y cuatro cifras",
        ),
        ("AB-1234", "ask_next", "¿Cuál es tu teléfono?"),
        ("12345", "reprompt", "tiene 5 dígitos y necesita al menos 7"),
        ("+34 600 123 456", "completed", "+34 600 123 456"),
    ];
    for (message, action, said) in steps {
        let report = say(&*club, "club", message).await;
        assert_eq!(
            report.state["next_action"], *action,
            "{message}: {}",
            report.response
        );
        assert!(
            report.response.contains(said),
            "{message}: {}",
            report.response
        );
    }
    let last = say(&*club, "club", "gracias").await;
    let values = &last.state["conversation"]["values"];
    assert_eq!(values["age"], "35");
    assert_eq!(values["code"], "AB-1234");
    assert_eq!(values["website"], "https://ejemplo.com");
}

#[test]
fn form_file_errors_name_the_bad_field() {
    let flow = find("form").unwrap();
    let bad = form_file(
        "bad.toml",
        "[[fields]]\nname = \"name\"\ntype = \"text\"\n[[fields]]\nname = \"mail\"\ntype = \"emial\"\n",
    );
    let error = match flow.open(&FlowEnv::offline().with_option("form", bad), None, None) {
        Ok(_) => panic!("a bad form opens"),
        Err(e) => e.to_string(),
    };
    assert!(error.starts_with("flow `form`: form file "), "{error}");
    assert!(
        error.ends_with(
            "field 2 (`mail`): unknown type `emial`; use email, phone, url, number or text"
        ),
        "{error}"
    );
    let json = form_file(
        "bad.json",
        r#"{"fields": [{"name": "web", "type": "url", "pattern": "("}]}"#,
    );
    let error = flow
        .open(&FlowEnv::offline().with_option("form", json), None, None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("field 1 (`web`): the pattern `(` is not a valid regular expression"),
        "{error}"
    );
    let error = flow
        .open(&FlowEnv::offline().with_option("form", "nope"), None, None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("or a built-in form (signup, contact)"),
        "{error}"
    );
}

#[tokio::test]
async fn a_thread_keeps_its_form() {
    let clock = Arc::new(ManualClock::at_unix_seconds(T0));
    let saver = Arc::new(InMemorySaver::new());
    let contact = open(&env(&clock).with_option("form", "contact"), &saver);
    say(&*contact, "mine", "Soy Ana").await;
    let signup = open(&env(&clock), &saver);
    let error = signup
        .turn("ana@x.com", Some("mine"), StreamModes::NONE, &mut |_| {})
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("this thread holds the form `contact`"),
        "{error}"
    );
}
