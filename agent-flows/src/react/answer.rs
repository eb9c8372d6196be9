//! Answers written from evidence, in the request's language (English, Spanish, Russian): the
//! finalizer's summary in static mode and whenever the model left no answer, and the offline
//! model's final reply in llm mode — one composer, so both modes say the same thing for the
//! same results.
//!
//! Each piece of evidence becomes a sentence: an echo, a calculation with its result, the
//! local time of a place with weekday, date and offset, or an honest account of the tool's
//! error. The first pass's forced echo of a message that asked for no echo is evidence for
//! the critic but says nothing to the user, so it is left out. Places the gazetteer does not
//! know, loops a guard stopped and requests left undone are said too; with nothing to say, the
//! answer tells what the flow can do.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::intent::{Intents, Need, TimeAsk};
use super::{ReactState, StopReason};
use crate::lang::{Lang, words};
use crate::tool_router::places::zone_city;

/// One tool result.
#[derive(Clone, Debug, PartialEq)]
pub struct Evidence {
    /// Its key (`echo_1`...).
    pub key: String,
    /// The tool.
    pub tool: String,
    /// The arguments it was called with.
    pub args: Value,
    /// Its output, or its error's text.
    pub outcome: Result<Value, String>,
    /// `forced`, `rule:<name>`, `model` or `fallback`.
    pub origin: String,
    /// The step the call was made in.
    pub step: u32,
}

impl Evidence {
    /// The artifact stored for it.
    pub fn to_artifact(&self) -> Value {
        let mut entry = json!({
            "tool": self.tool,
            "args": self.args,
            "origin": self.origin,
            "step": self.step,
        });
        match &self.outcome {
            Ok(output) => entry["output"] = output.clone(),
            Err(error) => entry["error"] = Value::from(error.clone()),
        }
        entry
    }

    /// The evidence in `artifacts`, in call order (keys end in the call's number).
    pub fn from_artifacts(artifacts: &BTreeMap<String, Value>) -> Vec<Evidence> {
        let mut out: Vec<Evidence> = artifacts
            .iter()
            .map(|(key, entry)| Evidence {
                key: key.clone(),
                tool: entry["tool"].as_str().unwrap_or_default().to_owned(),
                args: entry["args"].clone(),
                outcome: match (entry.get("output"), entry["error"].as_str()) {
                    (Some(output), _) => Ok(output.clone()),
                    (None, Some(error)) => Err(error.to_owned()),
                    (None, None) => Err("no result".to_owned()),
                },
                origin: entry["origin"].as_str().unwrap_or_default().to_owned(),
                step: entry["step"]
                    .as_u64()
                    .and_then(|s| u32::try_from(s).ok())
                    .unwrap_or_default(),
            })
            .collect();
        out.sort_by_key(|e| call_number(&e.key));
        out
    }

    /// Whether it succeeded.
    pub fn is_ok(&self) -> bool {
        self.outcome.is_ok()
    }

    /// Whether this successful result meets `need`: same tool, and the same text, value or
    /// zone (a model may write `12*(3+4)` for `12 * (3 + 4)`).
    pub fn meets(&self, need: &Need) -> bool {
        let Ok(output) = &self.outcome else {
            return false;
        };
        if self.tool != need.tool() {
            return false;
        }
        match need {
            Need::Echo(text) => {
                output["echo"].as_str().or(output.as_str()).map(str::trim) == Some(text.trim())
            }
            Need::Calculate(expression) => {
                match (agent_tools::builtin::evaluate(expression), output.as_f64()) {
                    (Ok(expected), Some(got)) => {
                        (expected - got).abs() <= 1e-9 * expected.abs().max(1.0)
                    }
                    _ => false,
                }
            }
            Need::Time(ask) => output["timezone"].as_str() == Some(ask.zone.as_str()),
        }
    }
}

/// The number at the end of an evidence key (`datetime_3` -> 3).
pub fn call_number(key: &str) -> usize {
    key.rsplit('_')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX)
}

/// A tool error as the user reads it: without `ToolNode`'s "Error: " and its hint to the model.
pub fn clean_error(text: &str) -> String {
    let text = text.strip_prefix("Error: ").unwrap_or(text);
    let text = text
        .strip_suffix("\n Please fix your mistakes.")
        .unwrap_or(text);
    text.trim().to_owned()
}

/// The answer to `query` for `evidence`; see the module docs.
pub fn compose(query: &str, intents: &Intents, evidence: &[Evidence]) -> String {
    let lines = lines(intents, evidence);
    if lines.is_empty() {
        direct(intents, query)
    } else {
        lines.join("\n")
    }
}

/// A sentence per piece of evidence worth telling, and per unknown place.
fn lines(intents: &Intents, evidence: &[Evidence]) -> Vec<String> {
    let lang = intents.lang;
    let mut lines: Vec<String> = evidence
        .iter()
        .filter(|e| e.origin != "forced" || intents.asks_echo())
        .map(|e| sentence(intents, e))
        .collect();
    lines.extend(
        intents
            .unknown_places
            .iter()
            .map(|name| unknown_place(lang, name)),
    );
    lines
}

/// The summary of a finished turn: the model's answer when it gave one and nothing stopped
/// it, else the composed answer, and a sentence for a guard stop.
pub fn summary(state: &ReactState, intents: &Intents, missing: &[Need]) -> String {
    let evidence = Evidence::from_artifacts(&state.artifacts);
    let model_answer = state
        .working_memory
        .get("answer")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|a| !a.is_empty());
    let note = state
        .stop
        .and_then(|stop| stopped(intents.lang, stop, state, missing));
    let body = match (model_answer, state.stop) {
        (Some(answer), Some(StopReason::Answered) | None) => answer.to_owned(),
        _ => {
            let lines = lines(intents, &evidence);
            match (lines.is_empty(), &note) {
                // Stopped before anything could be said: the note says it all.
                (true, Some(_)) => String::new(),
                (true, None) => direct(intents, &state.user_query),
                (false, _) => lines.join("\n"),
            }
        }
    };
    match note {
        Some(note) if body.is_empty() => note,
        Some(note) => format!("{body}\n{note}"),
        None => body,
    }
}

/// One piece of evidence as a sentence.
fn sentence(intents: &Intents, evidence: &Evidence) -> String {
    let lang = intents.lang;
    match &evidence.outcome {
        Ok(output) => match evidence.tool.as_str() {
            "echo" => {
                let text = output["echo"]
                    .as_str()
                    .or(output.as_str())
                    .unwrap_or_default();
                format!("{}: {text}", lang.pick("Echo", "Eco", "Эхо"))
            }
            "calculator" => {
                let expression = evidence.args["expression"].as_str().unwrap_or("?");
                format!("{expression} = {}", number(output))
            }
            "datetime" => time_sentence(lang, output, &intents.times),
            tool => format!("{tool}: {}", agent_tools::content_of(output)),
        },
        Err(error) => {
            let error = clean_error(error);
            match evidence.tool.as_str() {
                "echo" => match lang {
                    Lang::En => format!("I could not echo the text: {error}"),
                    Lang::Es => format!("No pude repetir el texto: {error}"),
                    Lang::Ru => format!("Не удалось повторить текст: {error}"),
                },
                "calculator" => {
                    let expression = evidence.args["expression"].as_str().unwrap_or("?");
                    match lang {
                        Lang::En => format!("I could not calculate {expression}: {error}"),
                        Lang::Es => format!("No pude calcular {expression}: {error}"),
                        Lang::Ru => format!("Не удалось вычислить {expression}: {error}"),
                    }
                }
                "datetime" => {
                    let zone = evidence.args["timezone"].as_str().unwrap_or("?");
                    let place = place_name(zone, &intents.times);
                    match lang {
                        Lang::En => format!("I could not get the time for {place}: {error}"),
                        Lang::Es => format!("No pude obtener la hora de {place}: {error}"),
                        Lang::Ru => format!("Не удалось узнать время для {place}: {error}"),
                    }
                }
                tool => match lang {
                    Lang::En => format!("The tool {tool} failed: {error}"),
                    Lang::Es => format!("La herramienta {tool} falló: {error}"),
                    Lang::Ru => format!("Инструмент {tool} не сработал: {error}"),
                },
            }
        }
    }
}

/// A number as people write it: `84`, not `84.0`.
fn number(value: &Value) -> String {
    match value.as_f64() {
        Some(n) if n.fract() == 0.0 && n.abs() < 1e15 => format!("{}", n as i64),
        Some(n) => {
            let text = format!("{n:.10}");
            text.trim_end_matches('0').trim_end_matches('.').to_owned()
        }
        None => agent_tools::content_of(value),
    }
}

fn place_name(zone: &str, times: &[TimeAsk]) -> String {
    times
        .iter()
        .find(|t| t.zone == zone)
        .and_then(|t| t.place.clone())
        .unwrap_or_else(|| {
            if zone == "UTC" {
                "UTC".to_owned()
            } else {
                zone_city(zone)
            }
        })
}

/// "In Tokyo it is 21:00 (Wednesday, 2026-07-15; Asia/Tokyo, UTC+09:00)." in `lang`.
fn time_sentence(lang: Lang, output: &Value, times: &[TimeAsk]) -> String {
    let zone = output["timezone"].as_str().unwrap_or("UTC");
    let place = place_name(zone, times);
    let local = output["local_time"].as_str().unwrap_or_default();
    let (date, time) = local.split_once(' ').unwrap_or(("", local));
    let hhmm: String = time.chars().take(5).collect();
    let weekday = weekday(lang, output["weekday"].as_str().unwrap_or_default());
    let offset = output["utc_offset"].as_str().unwrap_or_default();
    let note = if zone == "UTC" {
        format!("{weekday}, {date}")
    } else {
        format!("{weekday}, {date}; {zone}, UTC{offset}")
    };
    match lang {
        Lang::En => format!("In {place} it is {hhmm} ({note})."),
        Lang::Es => {
            let short = hhmm.strip_prefix('0').unwrap_or(&hhmm);
            let verb = if short.starts_with("1:") {
                "es la"
            } else {
                "son las"
            };
            format!("En {place} {verb} {short} ({note}).")
        }
        Lang::Ru => format!("В {place} сейчас {hhmm} ({note})."),
    }
}

fn weekday(lang: Lang, english: &str) -> &str {
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

fn unknown_place(lang: Lang, name: &str) -> String {
    match lang {
        Lang::En => format!(
            "I don't know a time zone for \u{201c}{name}\u{201d}; ask about a major city or an IANA zone such as Europe/London."
        ),
        Lang::Es => format!(
            "No conozco la zona horaria de «{name}»; pregunta por una ciudad importante o una zona IANA como Europe/Madrid."
        ),
        Lang::Ru => format!(
            "Я не знаю часовой пояс для «{name}»; спросите о крупном городе или о зоне IANA, например Europe/Moscow."
        ),
    }
}

/// An answer without tools: a greeting back, what the flow can do, and — unless the message
/// was a greeting or asked what it can do — that no tool answers it.
pub fn direct(intents: &Intents, query: &str) -> String {
    let words = words(query);
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
    let help = has(&[
        "help",
        "ayuda",
        "ayudar",
        "помощь",
        "помоги",
        "умеешь",
        "можешь",
    ]) || crate::lang::contains_phrase(&words, "can you do")
        || crate::lang::contains_phrase(&words, "puedes hacer");
    let lang = intents.lang;
    let opening = if greeting {
        lang.pick("Hello! ", "¡Hola! ", "Здравствуйте! ")
    } else {
        ""
    };
    let nothing = if greeting || help {
        ""
    } else {
        lang.pick(
            "None of my tools answers that. ",
            "Ninguna de mis herramientas responde a eso. ",
            "Ни один из моих инструментов не отвечает на это. ",
        )
    };
    let can = lang.pick(
        "I can echo text (\u{201c}echo: hello\u{201d}), calculate (\u{201c}what is 12*(3+4)?\u{201d}) and tell the time in a city (\u{201c}what time is it in Tokyo?\u{201d}).",
        "Puedo repetir texto («repite: hola»), calcular («¿cuánto es 12*(3+4)?») y decir la hora en una ciudad («¿qué hora es en Tokio?»).",
        "Я умею повторять текст («повтори: привет»), считать («сколько будет 12*(3+4)?») и говорить, который час в городе («который час в Токио?»).",
    );
    format!("{opening}{nothing}{can}")
}

/// What a model asked to answer without tools says when the message needed them.
pub fn without_tools(intents: &Intents) -> String {
    let labels: Vec<String> = intents
        .needs()
        .iter()
        .map(|n| need_label(intents.lang, n))
        .collect();
    let labels = labels.join("; ");
    match intents.lang {
        Lang::En => format!("I have no tool call left for this, so I cannot: {labels}."),
        Lang::Es => format!(
            "No me queda ninguna llamada a herramientas para esto, así que no puedo: {labels}."
        ),
        Lang::Ru => format!(
            "У меня не осталось вызовов инструментов для этого, поэтому я не могу: {labels}."
        ),
    }
}

/// A need as the user reads it, in `lang`.
pub fn need_label(lang: Lang, need: &Need) -> String {
    match need {
        Need::Echo(_) => lang
            .pick("echo the text", "repetir el texto", "повторить текст")
            .to_owned(),
        Need::Calculate(expression) => match lang {
            Lang::En => format!("calculate {expression}"),
            Lang::Es => format!("calcular {expression}"),
            Lang::Ru => format!("вычислить {expression}"),
        },
        Need::Time(ask) => {
            let place = ask.place.clone().unwrap_or_else(|| ask.zone.clone());
            match lang {
                Lang::En => format!("the time in {place}"),
                Lang::Es => format!("la hora en {place}"),
                Lang::Ru => format!("время в {place}"),
            }
        }
    }
}

/// What a guard stop means to the user, with what was left undone; `None` when the loop was
/// not stopped by a guard.
pub fn stopped(
    lang: Lang,
    stop: StopReason,
    state: &ReactState,
    missing: &[Need],
) -> Option<String> {
    let left = if missing.is_empty() {
        String::new()
    } else {
        let labels: Vec<String> = missing.iter().map(|n| need_label(lang, n)).collect();
        match lang {
            Lang::En => format!(" Not done: {}.", labels.join("; ")),
            Lang::Es => format!(" Sin hacer: {}.", labels.join("; ")),
            Lang::Ru => format!(" Не сделано: {}.", labels.join("; ")),
        }
    };
    let reason = match (stop, lang) {
        (StopReason::StepLimit, Lang::En) => format!(
            "I stopped at the step limit ({} step{}).",
            state.max_steps,
            if state.max_steps == 1 { "" } else { "s" }
        ),
        (StopReason::StepLimit, Lang::Es) => {
            format!("Me detuve en el límite de pasos ({}).", state.max_steps)
        }
        (StopReason::StepLimit, Lang::Ru) => {
            format!("Я остановился на пределе шагов ({}).", state.max_steps)
        }
        (StopReason::ToolCallCap, Lang::En) => format!(
            "I stopped at the limit of tool calls ({} per turn).",
            state.max_tool_calls
        ),
        (StopReason::ToolCallCap, Lang::Es) => format!(
            "Me detuve en el límite de llamadas a herramientas ({} por turno).",
            state.max_tool_calls
        ),
        (StopReason::ToolCallCap, Lang::Ru) => format!(
            "Я остановился на пределе вызовов инструментов ({} за ход).",
            state.max_tool_calls
        ),
        (StopReason::RepeatedCall, Lang::En) => {
            "I stopped a repeated tool call to avoid a loop.".to_owned()
        }
        (StopReason::RepeatedCall, Lang::Es) => {
            "Detuve una llamada repetida a una herramienta para evitar un bucle.".to_owned()
        }
        (StopReason::RepeatedCall, Lang::Ru) => {
            "Я остановил повторный вызов инструмента, чтобы не зациклиться.".to_owned()
        }
        (StopReason::ToolRounds, Lang::En) => format!(
            "The model asked for more tools after the rounds allowed ({}); I answered with what I had.",
            state.max_tool_rounds
        ),
        (StopReason::ToolRounds, Lang::Es) => format!(
            "El modelo pidió más herramientas tras las rondas permitidas ({}); respondí con lo que tenía.",
            state.max_tool_rounds
        ),
        (StopReason::ToolRounds, Lang::Ru) => format!(
            "Модель запросила ещё инструменты после разрешённых раундов ({}); я ответил тем, что было.",
            state.max_tool_rounds
        ),
        (StopReason::Answered | StopReason::Fallback, _) => return None,
    };
    Some(format!("{reason}{left}"))
}

#[cfg(test)]
mod tests {
    use super::super::intent::analyze;
    use super::*;

    fn ok(key: &str, tool: &str, args: Value, output: Value, origin: &str) -> Evidence {
        Evidence {
            key: key.into(),
            tool: tool.into(),
            args,
            outcome: Ok(output),
            origin: origin.into(),
            step: 1,
        }
    }

    fn tokyo() -> Value {
        json!({
            "timezone": "Asia/Tokyo", "local_time": "2026-07-15 21:00:00",
            "utc_offset": "+09:00", "weekday": "Wednesday"
        })
    }

    #[test]
    fn answers_in_the_requests_language() {
        let evidence = [
            ok(
                "echo_1",
                "echo",
                json!({"text": "q"}),
                json!({"echo": "q"}),
                "forced",
            ),
            ok(
                "calculator_2",
                "calculator",
                json!({"expression": "12 * (3 + 4)"}),
                json!(84),
                "rule:needs",
            ),
            ok(
                "datetime_3",
                "datetime",
                json!({"timezone": "Asia/Tokyo"}),
                tokyo(),
                "rule:needs",
            ),
        ];
        assert_eq!(
            compose(
                "",
                &analyze("¿Cuánto es 12*(3+4) y qué hora es en Tokio?"),
                &evidence
            ),
            "12 * (3 + 4) = 84\nEn Tokio son las 21:00 (miércoles, 2026-07-15; Asia/Tokyo, UTC+09:00)."
        );
        assert_eq!(
            compose(
                "",
                &analyze("what is 12*(3+4) and the time in Tokyo"),
                &evidence
            ),
            "12 * (3 + 4) = 84\nIn Tokyo it is 21:00 (Wednesday, 2026-07-15; Asia/Tokyo, UTC+09:00)."
        );
        assert_eq!(
            compose(
                "",
                &analyze("сколько 12*(3+4) и который час в Токио"),
                &evidence
            ),
            "12 * (3 + 4) = 84\nВ Токио сейчас 21:00 (среда, 2026-07-15; Asia/Tokyo, UTC+09:00)."
        );
    }

    #[test]
    fn echoes_errors_and_unknown_places_are_said() {
        let intents = analyze("repite «hola»");
        let echo = ok(
            "echo_1",
            "echo",
            json!({"text": "hola"}),
            json!({"echo": "hola", "chars": 4, "words": 1}),
            "forced",
        );
        assert_eq!(compose("", &intents, &[echo]), "Eco: hola");
        let failed = Evidence {
            key: "calculator_2".into(),
            tool: "calculator".into(),
            args: json!({"expression": "1 / 0"}),
            outcome: Err(
                "Error: tool `calculator` failed: division by zero\n Please fix your mistakes."
                    .into(),
            ),
            origin: "model".into(),
            step: 1,
        };
        assert_eq!(
            compose("", &analyze("how much is 1/0?"), &[failed]),
            "I could not calculate 1 / 0: tool `calculator` failed: division by zero"
        );
        assert!(
            compose("", &analyze("¿Qué hora es en Atlantis?"), &[])
                .starts_with("No conozco la zona horaria de «Atlantis»")
        );
    }

    #[test]
    fn with_nothing_to_say_it_tells_what_it_can_do() {
        let intents = analyze("Что такое ReAct?");
        assert!(
            direct(&intents, "Что такое ReAct?")
                .starts_with("Ни один из моих инструментов не отвечает на это. Я умею")
        );
        let hello = "Hello! What can you do?";
        assert!(direct(&analyze(hello), hello).starts_with("Hello! I can echo text"));
    }

    #[test]
    fn evidence_meets_needs_by_value() {
        let calc = ok(
            "calculator_1",
            "calculator",
            json!({"expression": "12*(3+4)"}),
            json!(84.0),
            "model",
        );
        assert!(calc.meets(&Need::Calculate("12 * (3 + 4)".into())));
        assert!(!calc.meets(&Need::Calculate("12 * 3".into())));
        let time = ok("datetime_2", "datetime", json!({}), tokyo(), "model");
        assert!(time.meets(&Need::Time(TimeAsk {
            zone: "Asia/Tokyo".into(),
            place: None
        })));
        assert!(!time.meets(&Need::Echo("x".into())));
        assert_eq!(number(&json!(2.5)), "2.5");
        assert_eq!(number(&json!(84.0)), "84");
        assert_eq!(call_number("datetime_12"), 12);
    }

    #[test]
    fn artifacts_round_trip_in_call_order() {
        let a = ok("echo_1", "echo", json!({"text": "a"}), json!("a"), "forced");
        let b = Evidence {
            key: "calculator_10".into(),
            tool: "calculator".into(),
            args: json!({"expression": "1/0"}),
            outcome: Err("division by zero".into()),
            origin: "rule:needs".into(),
            step: 1,
        };
        let c = ok("datetime_2", "datetime", json!({}), tokyo(), "model");
        let artifacts: BTreeMap<String, Value> = [&a, &b, &c]
            .iter()
            .map(|e| (e.key.clone(), e.to_artifact()))
            .collect();
        let back = Evidence::from_artifacts(&artifacts);
        assert_eq!(back, [a, c, b]);
    }
}
