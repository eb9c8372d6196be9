//! The data flow's offline model: the three model decisions of the seed made by rules, in
//! Russian and English, from the same messages a real model gets.
//!
//! - `IntentDecision`: reads the conversation's user messages with [`reading`] (follow-ups
//!   resolved), classifies, detects the language, and writes the question in English.
//! - `ParsedQuery`: reads the original question the same way and answers its steps and
//!   thoughts.
//! - `handle_end`: a reply in the user's language — a glossary explanation for `concept`
//!   (from the glossary entry the node passes), or small talk and what the assistant can do.

use std::sync::Arc;

use agent_llm::{CallOptions, ChatModel, Message};

use super::glossary::{GLOSSARY, Measure, term};
use super::nodes::{GLOSSARY_BLOCK, INTENT_BLOCK, LANG_BLOCK, QUESTION_LINE};
use super::query::{Intent, IntentDecision, ParsedQuery};
use super::reading;
use super::tokens::{contains_any, tokenize};
use crate::lang::Lang;
use crate::offline::{OfflineModel, system_block};

/// The model's name in usage reports.
pub const MODEL_NAME: &str = "offline-data";

/// The offline model of the data flow.
pub fn model() -> Arc<dyn ChatModel> {
    OfflineModel::new(MODEL_NAME)
        .json("IntentDecision", |messages: &[Message], _: &CallOptions| {
            decide(messages)
        })
        .json("ParsedQuery", |messages: &[Message], _: &CallOptions| {
            parse(messages)
        })
        .text("handle_end", |messages: &[Message], _: &CallOptions| {
            reply(messages)
        })
        .build()
}

/// The user's messages, oldest first.
fn human_texts(messages: &[Message]) -> Vec<&str> {
    messages
        .iter()
        .filter(|m| m.kind() == "human")
        .map(Message::content)
        .collect()
}

/// The last user message, and the earlier ones (at most six).
fn split_history<'a>(texts: &[&'a str]) -> (Vec<&'a str>, &'a str) {
    match texts.split_last() {
        Some((last, earlier)) => {
            let skip = earlier.len().saturating_sub(6);
            (earlier[skip..].to_vec(), last)
        }
        None => (Vec::new(), ""),
    }
}

/// The `intent` rule.
pub fn decide(messages: &[Message]) -> IntentDecision {
    let texts = human_texts(messages);
    let (history, question) = split_history(&texts);
    let reading = reading::resolve(&history, question);
    IntentDecision {
        intent: reading.intent(),
        lang: reading.lang,
        internal_query: reading::english(&reading, question),
    }
}

/// The `parser` rule: the original question (the `Question:` line of the node's message),
/// read with the earlier questions as context.
pub fn parse(messages: &[Message]) -> ParsedQuery {
    let texts = human_texts(messages);
    let (history, last) = split_history(&texts);
    let question = last
        .lines()
        .find_map(|l| l.strip_prefix(QUESTION_LINE))
        .map(str::trim)
        .unwrap_or(last);
    let reading = reading::resolve(&history, question);
    ParsedQuery {
        thoughts: reading.thoughts(),
        steps: reading.steps(),
    }
}

/// The `handle_end` rule.
pub fn reply(messages: &[Message]) -> String {
    let lang = system_block(messages, LANG_BLOCK)
        .and_then(Lang::from_code)
        .unwrap_or_default();
    let intent = system_block(messages, INTENT_BLOCK).unwrap_or("chitchat");
    let question = human_texts(messages).last().copied().unwrap_or("");
    let glossary = system_block(messages, GLOSSARY_BLOCK).unwrap_or("");
    if intent == Intent::Concept.as_str() {
        let key = glossary
            .strip_prefix('[')
            .and_then(|rest| rest.split_once(']'))
            .map(|(key, _)| key);
        if let Some(term) = key.and_then(term) {
            return explain(term, lang);
        }
        return unknown_term(glossary, lang);
    }
    small_talk(question, lang)
}

/// A glossary term explained.
fn explain(term: &'static super::glossary::Term, lang: Lang) -> String {
    let text = term.text(lang);
    let mut out = format!("{}: {}.", capitalise(text.title), text.definition);
    if let Some(measure) = term.measure {
        out.push(' ');
        out.push_str(&match lang {
            Lang::Ru => format!(
                "В данных это столбец `{}` ({}), поквартально с 1 кв. 1959 по 3 кв. 2009. Например: «{}».",
                measure.column(),
                measure.unit(lang).trim_matches(['(', ')']),
                example(measure, lang)
            ),
            _ => format!(
                "In the data set it is the column `{}` ({}), quarterly from 1959 Q1 to 2009 Q3. Try: “{}”.",
                measure.column(),
                measure.unit(lang).trim_matches(['(', ')']),
                example(measure, lang)
            ),
        });
    }
    out
}

/// A question to try about `measure`.
fn example(measure: Measure, lang: Lang) -> String {
    let name = measure.name(lang);
    match lang {
        Lang::Ru => format!("{} в 2008 году, в среднем", capitalise(name)),
        _ => format!("average {name} in 2008"),
    }
}

/// A concept question about something the glossary lacks.
fn unknown_term(glossary: &str, lang: Lang) -> String {
    let terms: Vec<&str> = GLOSSARY.iter().map(|t| t.text(lang).name).collect();
    let missing = glossary
        .strip_prefix("missing:")
        .map(str::trim)
        .filter(|m| !m.is_empty());
    match (lang, missing) {
        (Lang::Ru, Some(name)) => format!(
            "Показателя «{name}» в этих данных нет, поэтому объяснить его по их глоссарию я не могу. Я объясняю термины данных: {}.",
            terms.join(", ")
        ),
        (Lang::Ru, None) => format!(
            "Этого термина нет в глоссарии данных. Я могу объяснить: {}.",
            terms.join(", ")
        ),
        (_, Some(name)) => format!(
            "The data set has no {name}, so its glossary does not explain it. I can explain the data set's terms: {}.",
            terms.join(", ")
        ),
        (_, None) => format!(
            "That term is not in the data set's glossary. I can explain: {}.",
            terms.join(", ")
        ),
    }
}

/// Small talk: greetings, thanks, goodbyes, how are you, who are you, and what the assistant
/// can do.
fn small_talk(question: &str, lang: Lang) -> String {
    let tokens = tokenize(question);
    let has = |phrases: &[&str]| contains_any(&tokens, phrases);
    let ru = lang == Lang::Ru;
    let mut parts: Vec<&str> = Vec::new();
    let thanks = has(&["thanks", "thank", "thx", "спасибо", "благодар*"]);
    let bye = has(&[
        "bye",
        "goodbye",
        "see you",
        "пока",
        "до свидания",
        "до встречи",
    ]);
    let greeting = has(&[
        "hello",
        "hi",
        "hey",
        "good morning",
        "good afternoon",
        "good evening",
        "привет*",
        "здравств*",
        "добр* день",
        "добр* утро",
        "добр* вечер",
    ]);
    let how_are_you = has(&[
        "how are you",
        "how s it going",
        "как дела",
        "как ты",
        "как поживаешь",
    ]);
    if thanks {
        parts.push(if ru {
            "Пожалуйста!"
        } else {
            "You're welcome!"
        });
    }
    if greeting {
        parts.push(if ru {
            "Здравствуйте!"
        } else {
            "Hello!"
        });
    }
    if how_are_you {
        parts.push(if ru {
            "У меня всё хорошо, данные на месте."
        } else {
            "I'm fine, and so is the data."
        });
    }
    if bye {
        parts.push(if ru {
            "До свидания!"
        } else {
            "Goodbye!"
        });
        return parts.join(" ");
    }
    if thanks && !greeting && !how_are_you && tokens.len() <= 4 {
        parts.push(if ru {
            "Спросите ещё что-нибудь о данных, если нужно."
        } else {
            "Ask me more about the data any time."
        });
        return parts.join(" ");
    }
    parts.push(if ru {
        "Я отвечаю на вопросы о макроэкономических данных США по кварталам с 1959 по 2009 год: ВВП, потребление, инвестиции, госрасходы, доходы, цены и инфляция, денежная масса M1, ставки, безработица, население. Например: «Какой была средняя безработица в 2008 году?», «Топ-5 кварталов по инфляции», «Как изменился ВВП с 2000 по 2008 год?». Ещё я объясняю термины: «Что такое ИПЦ?»."
    } else {
        "I answer questions about US quarterly macroeconomic data from 1959 to 2009: GDP, consumption, investment, government spending, income, prices and inflation, the M1 money stock, interest rates, unemployment and population. For example: “What was the average unemployment rate in 2008?”, “Top 5 quarters by inflation”, “How did GDP change from 2000 to 2008?”. I also explain the terms: “What is the CPI?”."
    });
    parts.join(" ")
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_talk_answers_in_the_users_language() {
        assert!(
            small_talk("Привет! Что ты умеешь?", Lang::Ru).starts_with("Здравствуйте! Я отвечаю")
        );
        assert!(small_talk("hi", Lang::En).starts_with("Hello! I answer"));
        assert_eq!(
            small_talk("thanks!", Lang::En),
            "You're welcome! Ask me more about the data any time."
        );
        assert_eq!(
            small_talk("Спасибо, пока", Lang::Ru),
            "Пожалуйста! До свидания!"
        );
    }

    #[test]
    fn concepts_come_from_the_glossary() {
        let text = explain(Measure::Cpi.term(), Lang::Ru);
        assert!(
            text.starts_with("Индекс потребительских цен (ИПЦ)"),
            "{text}"
        );
        assert!(text.contains("столбец `cpi`"), "{text}");
        let text = explain(term("saar").unwrap(), Lang::En);
        assert!(
            text.starts_with("Seasonally adjusted annual rate (SAAR): a quarter's flow"),
            "{text}"
        );
        assert!(
            unknown_term("missing: gold price", Lang::En)
                .starts_with("The data set has no gold price")
        );
    }
}
