//! What the form says, in Spanish and English: the three behaviours of `prompt_next` (redirect
//! after an off-topic message, explain the expected format after an invalid value, ask for the
//! next field), the escalation hand-over, the offline thanks of `complete`, and the replies to
//! a message after the end.

use super::escalation::Policy;
use super::rules::OffTopic;
use super::spec::FormSpec;
use super::state::ConversationState;
use crate::lang::Lang;

/// "nombre: Juan; email: juan@ejemplo.com", in form order.
pub fn summary(form: &FormSpec, conversation: &ConversationState, lang: Lang) -> String {
    form.fields
        .iter()
        .filter_map(|f| {
            conversation
                .values
                .get(&f.name)
                .map(|v| format!("{}: {v}", f.label(lang)))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// After an off-topic message: a kind word for what it was, then the field's question.
pub fn redirect(lang: Lang, kind: Option<OffTopic>, prompt: &str) -> String {
    let opening = match (lang, kind) {
        (Lang::Es, Some(OffTopic::Greeting)) => "¡Hola!",
        (Lang::Es, Some(OffTopic::TopicChange)) => {
            "Con gusto lo vemos después; primero terminemos el formulario."
        }
        (Lang::Es, _) => {
            "Ahora mismo no puedo ayudarte con eso: estoy recogiendo tus datos para el formulario."
        }
        (_, Some(OffTopic::Greeting)) => "Hello!",
        (_, Some(OffTopic::TopicChange)) => {
            "Happy to look at that afterwards; let's finish the form first."
        }
        _ => "I can't help with that right now: I'm collecting your details for the form.",
    };
    format!("{opening} {prompt}")
}

/// After an invalid value: what was wrong and how to write it, then the question again; when
/// this was the last attempt the policy allows, what happens next instead.
pub fn reprompt(
    lang: Lang,
    explanation: &str,
    prompt: &str,
    label: &str,
    last: Option<u32>,
) -> String {
    match (last, lang) {
        (Some(n), Lang::Es) => format!(
            "{explanation} No hemos podido validar tu {label} tras {n} intentos: con tu próximo mensaje te paso con un agente humano que te ayudará a terminar."
        ),
        (Some(n), _) => format!(
            "{explanation} We couldn't validate your {label} after {n} attempts: with your next message I'll pass you to a human agent who will help you finish."
        ),
        (None, _) => format!("{explanation} {prompt}"),
    }
}

/// How a valid value is acknowledged before the next question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ack<'a> {
    /// A person's name.
    Name(&'a str),
    /// A value saved.
    Saved {
        /// The field's label.
        label: &'a str,
        /// The value.
        value: &'a str,
    },
    /// A value replaced by a correction.
    Corrected {
        /// The field's label.
        label: &'a str,
        /// The value before.
        old: &'a str,
        /// The value now.
        new: &'a str,
    },
}

/// After a valid value: the acknowledgement, then the next field's question.
pub fn ask_next(lang: Lang, ack: &Ack<'_>, prompt: &str) -> String {
    let ack = match (lang, ack) {
        (Lang::Es, Ack::Name(name)) => format!("¡Encantado, {name}!"),
        (Lang::Es, Ack::Saved { label, value }) => format!("Gracias, anoté tu {label}: {value}."),
        (Lang::Es, Ack::Corrected { label, old, new }) => {
            format!("Listo, corregí tu {label}: ahora es {new} (antes {old}).")
        }
        (_, Ack::Name(name)) => format!("Nice to meet you, {name}!"),
        (_, Ack::Saved { label, value }) => format!("Thanks, I've noted your {label}: {value}."),
        (_, Ack::Corrected { label, old, new }) => {
            format!("Done, I've corrected your {label}: it is now {new} (it was {old}).")
        }
    };
    format!("{ack} {prompt}")
}

/// The hand-over to a human agent, by policy, with what was collected.
pub fn escalated(lang: Lang, policy: Policy, collected: &str) -> String {
    let opening = match (lang, policy) {
        (Lang::Es, Policy::Keyword | Policy::LlmIntent) => "Entendido, te paso con una persona.",
        (Lang::Es, Policy::Timeout) => {
            "Esta conversación lleva demasiado tiempo abierta, así que te paso con una persona."
        }
        (Lang::Es, Policy::Sentiment) => {
            "Siento las molestias. Te paso con una persona que pueda ayudarte mejor."
        }
        (Lang::Es, Policy::Completion) => {
            "No hemos logrado completar el formulario, así que te paso con una persona."
        }
        (_, Policy::Keyword | Policy::LlmIntent) => "Understood, I'll put you through to a person.",
        (_, Policy::Timeout) => {
            "This conversation has been open too long, so I'm passing you to a person."
        }
        (_, Policy::Sentiment) => {
            "I'm sorry about the trouble. I'm passing you to a person who can help you better."
        }
        (_, Policy::Completion) => {
            "We haven't managed to complete the form, so I'm passing you to a person."
        }
    };
    let body = lang.pick(
        "A human agent will answer you here shortly.",
        "Un agente humano te atenderá aquí en breve.",
        "",
    );
    if collected.is_empty() {
        format!("{opening} {body}")
    } else {
        let passing = lang.pick(
            "I'm passing on what we have:",
            "Le dejo lo que ya tenemos:",
            "",
        );
        format!("{opening} {body} {passing} {collected}.")
    }
}

/// A message after the hand-over.
pub fn already_escalated(lang: Lang) -> String {
    lang.pick(
        "This conversation is already with a human agent, who will answer you here shortly.",
        "Esta conversación ya está en manos de un agente humano, que te responderá aquí en breve.",
        "",
    )
    .to_owned()
}

/// A message after the form was completed (other than a correction).
pub fn already_completed(lang: Lang, collected: &str) -> String {
    match lang {
        Lang::Es => format!(
            "Tu formulario ya está completo ({collected}). No hace falta nada más; si algún dato no es correcto, dime el bueno (por ejemplo: «mi email es ...»)."
        ),
        _ => format!(
            "Your form is already complete ({collected}). Nothing else is needed; if something is wrong, tell me the right value (for example: \"my email is ...\")."
        ),
    }
}

/// A correction applied after the form was completed: what changed, then the updated summary.
pub fn corrected_after_completion(lang: Lang, ack: &Ack<'_>, collected: &str) -> String {
    let ack = match (lang, ack) {
        (Lang::Es, Ack::Corrected { label, old, new }) => {
            format!("Listo, corregí tu {label}: ahora es {new} (antes {old}).")
        }
        (Lang::Es, Ack::Saved { label, value }) => {
            format!("Tu {label} ya era {value}; no cambia nada.")
        }
        (Lang::Es, Ack::Name(name)) => format!("Ya te tenía como {name}; no cambia nada."),
        (_, Ack::Corrected { label, old, new }) => {
            format!("Done, I've corrected your {label}: it is now {new} (it was {old}).")
        }
        (_, Ack::Saved { label, value }) => {
            format!("Your {label} was already {value}; nothing changes.")
        }
        (_, Ack::Name(name)) => format!("I already had you as {name}; nothing changes."),
    };
    match lang {
        Lang::Es => format!("{ack} Tu formulario queda así: {collected}."),
        _ => format!("{ack} Your form now reads: {collected}."),
    }
}

/// A correction refused after the form was completed: what is wrong with the new value, the
/// value kept, and the question for the right one.
pub fn correction_refused(
    lang: Lang,
    explanation: &str,
    label: &str,
    kept: &str,
    prompt: &str,
) -> String {
    let kept = match lang {
        Lang::Es => format!("Mantengo tu {label} anterior ({kept})."),
        _ => format!("I'm keeping your previous {label} ({kept})."),
    };
    [explanation, &kept, prompt]
        .iter()
        .filter(|part| !part.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The offline thanks of `complete`.
pub fn thanks(lang: Lang, name: Option<&str>, collected: &str) -> String {
    match (lang, name) {
        (Lang::Es, Some(name)) => {
            format!("¡Gracias, {name}! Ya tenemos todo lo necesario: {collected}.")
        }
        (Lang::Es, None) => format!("¡Gracias! Ya tenemos todo lo necesario: {collected}."),
        (_, Some(name)) => format!("Thank you, {name}! We have everything we need: {collected}."),
        (_, None) => format!("Thank you! We have everything we need: {collected}."),
    }
}
