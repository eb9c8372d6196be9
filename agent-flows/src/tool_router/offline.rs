//! The tool router's offline model: the router's decision and the generator's answer made by
//! rules, in English, Spanish and Russian.
//!
//! - `RouterDecision`: a `datetime` call per place asked about (or one in UTC when the time is
//!   asked with no place), a `calculator` call for arithmetic, in the order the question
//!   mentions them; no call for anything else, nor for a place it does not know.
//! - `generator`: the answer in the question's language from the tool results — the local
//!   time with weekday and date per place, each calculation's result, each error — or, with no
//!   results, an honest direct answer (a greeting, an unknown place, what it can do).

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_llm::{CallOptions, ChatModel, Message};
use serde_json::{Value, json};

use super::nodes::TOOL_RESULTS;
use super::places::{self, zone_city};
use super::{PlannedCall, RouterDecision, arithmetic};
use crate::lang::{self, Lang, words};
use crate::offline::{OfflineModel, last_human, system_block};

/// The offline model of the tool router.
pub fn model() -> Arc<dyn ChatModel> {
    OfflineModel::new("offline-tool-router")
        .json("RouterDecision", |messages: &[Message], _: &CallOptions| {
            decide(last_human(messages))
        })
        .text("generator", |messages: &[Message], _: &CallOptions| {
            let results = system_block(messages, TOOL_RESULTS)
                .and_then(|json| serde_json::from_str(json).ok())
                .unwrap_or_default();
            answer(last_human(messages), &results)
        })
        .build()
}

/// Words that ask for the time.
const TIME_WORDS: &[&str] = &[
    "time",
    "clock",
    "hour",
    "hora",
    "horas",
    "час",
    "время",
    "времени",
    "часов",
];

/// The router's rules: see the module docs.
pub fn decide(question: &str) -> RouterDecision {
    let mut calls: Vec<(usize, PlannedCall)> = Vec::new();
    if let Some(expression) = arithmetic::expression(question) {
        let at = expression
            .split(|c: char| !c.is_ascii_digit())
            .find(|n| !n.is_empty())
            .and_then(|n| question.find(n))
            .unwrap_or(0);
        calls.push((
            at,
            PlannedCall {
                tool: "calculator".into(),
                args: json!({ "expression": expression }),
            },
        ));
    }
    let asks_time = words(question)
        .iter()
        .any(|w| TIME_WORDS.contains(&w.as_str()));
    if asks_time {
        let found = places::extract(question);
        for place in &found.known {
            calls.push((
                question.find(&place.written).unwrap_or(usize::MAX),
                PlannedCall {
                    tool: "datetime".into(),
                    args: json!({ "timezone": place.zone }),
                },
            ));
        }
        if found.known.is_empty() && found.unknown.is_empty() {
            calls.push((
                usize::MAX,
                PlannedCall {
                    tool: "datetime".into(),
                    args: json!({ "timezone": "UTC" }),
                },
            ));
        }
    }
    calls.sort_by_key(|(at, _)| *at);
    RouterDecision {
        calls: calls.into_iter().map(|(_, call)| call).collect(),
    }
}

/// The generator's rules: see the module docs.
pub fn answer(question: &str, results: &BTreeMap<String, Value>) -> String {
    let lang = lang::detect(question);
    let found = places::extract(question);
    let mut ordered: Vec<(&String, &Value)> = results.iter().collect();
    // Call ids end in their position: answer in the order asked.
    ordered.sort_by_key(|(id, _)| {
        id.rsplit('_')
            .next()
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(usize::MAX)
    });
    let mut lines: Vec<String> = ordered
        .iter()
        .map(|(_, result)| describe(lang, result, &found.known))
        .collect();
    for name in &found.unknown {
        lines.push(
            match lang {
                Lang::Es => format!(
                    "No conozco la zona horaria de «{name}»; pregúntame por una ciudad importante o por una zona IANA como Europe/Madrid."
                ),
                Lang::Ru => format!(
                    "Я не знаю часовой пояс для «{name}»; спросите о крупном городе или о зоне IANA, например Europe/Moscow."
                ),
                Lang::En => format!(
                    "I don't know a time zone for \u{201c}{name}\u{201d}; ask me about a major city or an IANA zone such as Europe/London."
                ),
            },
        );
    }
    if lines.is_empty() {
        lines.push(direct(lang, question));
    }
    lines.join("\n")
}

/// One result as a sentence.
fn describe(lang: Lang, result: &Value, places: &[places::Place]) -> String {
    let tool = result["tool"].as_str().unwrap_or("tool");
    match (tool, result.get("output"), result["error"].as_str()) {
        ("datetime", Some(output), _) => time_sentence(lang, output, places),
        ("calculator", Some(output), _) => {
            let expression = result["args"]["expression"].as_str().unwrap_or("?");
            format!("{expression} = {output}")
        }
        (_, _, Some(error)) => {
            let subject = match tool {
                "datetime" => {
                    let zone = result["args"]["timezone"].as_str().unwrap_or("?");
                    shown_name(zone, places)
                }
                "calculator" => result["args"]["expression"]
                    .as_str()
                    .unwrap_or("?")
                    .to_owned(),
                other => other.to_owned(),
            };
            match (lang, tool) {
                (Lang::Es, "datetime") => format!("No pude obtener la hora de {subject}: {error}"),
                (Lang::Es, "calculator") => format!("No pude calcular {subject}: {error}"),
                (Lang::Es, _) => format!("La herramienta {subject} falló: {error}"),
                (Lang::Ru, "datetime") => format!("Не удалось узнать время для {subject}: {error}"),
                (Lang::Ru, "calculator") => format!("Не удалось вычислить {subject}: {error}"),
                (Lang::Ru, _) => format!("Инструмент {subject} не сработал: {error}"),
                (Lang::En, "datetime") => {
                    format!("I could not get the time for {subject}: {error}")
                }
                (Lang::En, "calculator") => format!("I could not calculate {subject}: {error}"),
                (Lang::En, _) => format!("The tool {subject} failed: {error}"),
            }
        }
        _ => format!("{tool}: {result}"),
    }
}

/// "In Tokyo it is 21:04 (Monday, 23 November; Asia/Tokyo, UTC+09:00)." in `lang`.
fn time_sentence(lang: Lang, output: &Value, places: &[places::Place]) -> String {
    let zone = output["timezone"].as_str().unwrap_or("UTC");
    let place = shown_name(zone, places);
    let local = output["local_time"].as_str().unwrap_or("");
    let offset = output["utc_offset"].as_str().unwrap_or("");
    let weekday = output["weekday"].as_str().unwrap_or("");
    let (date, time) = local.split_once(' ').unwrap_or(("", local));
    let hhmm: String = time.chars().take(5).collect();
    let hour: u32 = hhmm
        .split(':')
        .next()
        .and_then(|h| h.parse().ok())
        .unwrap_or(0);
    let mut parts = date.splitn(3, '-').skip(1);
    let month: usize = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    let day: u32 = parts.next().and_then(|d| d.parse().ok()).unwrap_or(0);
    let day_name = weekday_name(lang, weekday);
    let month_name = month_name(lang, month);
    let zone_note = if zone == "UTC" {
        "UTC".to_owned()
    } else {
        format!("{zone}, UTC{offset}")
    };
    match lang {
        Lang::Es => {
            let verb = if hour == 1 { "es la" } else { "son las" };
            let time = hhmm.strip_prefix('0').unwrap_or(&hhmm);
            format!("En {place} {verb} {time} ({day_name} {day} de {month_name}; {zone_note}).")
        }
        Lang::Ru => {
            format!("В {place} сейчас {hhmm} ({day_name}, {day} {month_name}; {zone_note}).")
        }
        Lang::En => {
            format!("In {place} it is {hhmm} ({day_name}, {day} {month_name}; {zone_note}).")
        }
    }
}

/// The place as the user wrote it, else the zone's city.
fn shown_name(zone: &str, places: &[places::Place]) -> String {
    places
        .iter()
        .find(|p| p.zone == zone)
        .map(|p| p.written.clone())
        .unwrap_or_else(|| zone_city(zone))
}

fn weekday_name(lang: Lang, english: &str) -> &str {
    const DAYS: [[&str; 3]; 7] = [
        ["Monday", "lunes", "понедельник"],
        ["Tuesday", "martes", "вторник"],
        ["Wednesday", "miércoles", "среда"],
        ["Thursday", "jueves", "четверг"],
        ["Friday", "viernes", "пятница"],
        ["Saturday", "sábado", "суббота"],
        ["Sunday", "domingo", "воскресенье"],
    ];
    DAYS.iter()
        .find(|d| d[0] == english)
        .map(|d| lang.pick(d[0], d[1], d[2]))
        .unwrap_or(english)
}

fn month_name(lang: Lang, month: usize) -> &'static str {
    const MONTHS: [[&str; 3]; 12] = [
        ["January", "enero", "января"],
        ["February", "febrero", "февраля"],
        ["March", "marzo", "марта"],
        ["April", "abril", "апреля"],
        ["May", "mayo", "мая"],
        ["June", "junio", "июня"],
        ["July", "julio", "июля"],
        ["August", "agosto", "августа"],
        ["September", "septiembre", "сентября"],
        ["October", "octubre", "октября"],
        ["November", "noviembre", "ноября"],
        ["December", "diciembre", "декабря"],
    ];
    month
        .checked_sub(1)
        .and_then(|m| MONTHS.get(m))
        .map(|m| lang.pick(m[0], m[1], m[2]))
        .unwrap_or("")
}

/// An answer without tools: greetings, thanks, and what the flow can do.
fn direct(lang: Lang, question: &str) -> String {
    let words = words(question);
    let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    let greeting = has(&[
        "hola",
        "buenos",
        "buenas",
        "hello",
        "hi",
        "hey",
        "привет",
        "здравствуйте",
    ]);
    let thanks = has(&["gracias", "thanks", "thank", "спасибо"]);
    let opening = match (lang, greeting, thanks) {
        (Lang::Es, _, true) => "¡De nada! ",
        (Lang::Es, true, _) => "¡Hola! ",
        (Lang::Ru, _, true) => "Пожалуйста! ",
        (Lang::Ru, true, _) => "Здравствуйте! ",
        (Lang::En, _, true) => "You're welcome! ",
        (Lang::En, true, _) => "Hello! ",
        _ => "",
    };
    let body = match lang {
        Lang::Es => {
            "Puedo decirte la hora en cualquier ciudad o zona horaria (por ejemplo: «¿Qué hora es en Tokio y Londres?») y hacer cálculos («¿Cuánto es 12*(3+4)?»)."
        }
        Lang::Ru => {
            "Я могу сказать, который час в любом городе или часовом поясе (например: «Который час в Москве?»), и посчитать выражение («Сколько будет 12*(3+4)?»)."
        }
        Lang::En => {
            "I can tell you the time in any city or time zone (for example: \u{201c}What time is it in New York?\u{201d}) and do arithmetic (\u{201c}How much is 12*(3+4)?\u{201d})."
        }
    };
    format!("{opening}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(decision: &RouterDecision) -> Vec<(String, Value)> {
        decision
            .calls
            .iter()
            .map(|c| (c.tool.clone(), c.args.clone()))
            .collect()
    }

    #[test]
    fn one_call_per_place_in_order() {
        let d = decide("¿Qué hora es en Tokio y Londres?");
        assert_eq!(
            tools(&d),
            [
                ("datetime".into(), json!({"timezone": "Asia/Tokyo"})),
                ("datetime".into(), json!({"timezone": "Europe/London"})),
            ]
        );
        let d = decide("How much is 12*(3+4), and what time is it in Sydney?");
        assert_eq!(
            tools(&d),
            [
                ("calculator".into(), json!({"expression": "12 * (3 + 4)"})),
                ("datetime".into(), json!({"timezone": "Australia/Sydney"})),
            ]
        );
    }

    #[test]
    fn time_without_a_place_is_utc_and_unknown_places_get_no_call() {
        assert_eq!(
            tools(&decide("what time is it?")),
            [("datetime".into(), json!({"timezone": "UTC"}))]
        );
        assert!(decide("¿Qué hora es en Atlantis?").calls.is_empty());
        assert!(decide("Hola, ¿qué puedes hacer?").calls.is_empty());
        assert!(decide("I love Paris").calls.is_empty());
    }

    #[test]
    fn answers_in_the_questions_language() {
        let results: BTreeMap<String, Value> = [(
            "datetime_0".to_owned(),
            json!({"tool": "datetime", "args": {"timezone": "Asia/Tokyo"}, "output": {
                "timezone": "Asia/Tokyo", "local_time": "2026-11-23 21:04:05",
                "utc_offset": "+09:00", "weekday": "Monday"
            }}),
        )]
        .into();
        assert_eq!(
            answer("¿Qué hora es en Tokio?", &results),
            "En Tokio son las 21:04 (lunes 23 de noviembre; Asia/Tokyo, UTC+09:00)."
        );
        assert_eq!(
            answer("time in Tokyo?", &results),
            "In Tokyo it is 21:04 (Monday, 23 November; Asia/Tokyo, UTC+09:00)."
        );
        assert_eq!(
            answer("Который час в Токио?", &results),
            "В Токио сейчас 21:04 (понедельник, 23 ноября; Asia/Tokyo, UTC+09:00)."
        );
    }

    #[test]
    fn errors_and_unknown_places_are_said_honestly() {
        let results: BTreeMap<String, Value> = [(
            "datetime_0".to_owned(),
            json!({"tool": "datetime", "args": {"timezone": "Mars/Olympus"}, "error": "unknown time zone `Mars/Olympus`"}),
        )]
        .into();
        assert_eq!(
            answer("what time is it on Mars?", &results),
            "I could not get the time for Olympus: unknown time zone `Mars/Olympus`"
        );
        let none = BTreeMap::new();
        assert!(
            answer("¿Qué hora es en Atlantis?", &none)
                .starts_with("No conozco la zona horaria de «Atlantis»")
        );
        assert!(answer("hello", &none).starts_with("Hello! I can tell you the time"));
    }
}
