//! The critic's review and the final block, as plain functions over the state: which
//! requests the evidence covers, what went wrong, and how confident the answer may be.
//!
//! Confidence moves by fixed rules (see the flow's module docs): [`raise`] per tool result,
//! [`lower`] per error, then the review scales it by coverage, lifts a fully supported answer,
//! halves it after a guard stop and caps it when no tool could answer. Every step keeps it in
//! 0..=1 without clamping.
//!
//! What counts as a request depends on who decided. In static mode the rules picked the
//! calls, so [`review`] holds the evidence against what the rules read in the message. In llm
//! mode the model picked them, from tools the rules may not know, so [`review_run`] holds the
//! run against itself: each call the model asked for is a request, met when it ran, returned
//! something, and — when the model wrote the answer — shows in that answer.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::answer::{Evidence, clean_error};
use super::intent::Intents;
use super::nodes::{NOT_RUN, episode};
use super::{ReactState, StopReason};
use crate::lang::{contains_phrase, words};
use agent_llm::Message;

/// How far the evidence supports the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every request is met, nothing failed, no guard stopped the loop.
    Supported,
    /// Some requests are met.
    Partial,
    /// Requests were made and none is met.
    Unsupported,
    /// The message asked for nothing a tool does.
    NoToolNeeded,
}

/// The critic's review.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Review {
    /// What the message asks for (`echo`, `calculate 2 + 2`, `time in Tokyo`).
    pub asked: Vec<String>,
    /// The requests no successful result meets.
    pub missing: Vec<String>,
    /// The keys of the successful results.
    pub evidence_keys: Vec<String>,
    /// How many errors were recorded.
    pub errors: usize,
    /// The verdict.
    pub verdict: Verdict,
    /// What the critic noticed.
    pub notes: Vec<String>,
    /// The confidence before the review.
    pub confidence_before: f64,
    /// The confidence after it.
    pub confidence: f64,
}

/// The final block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FinalBlock {
    /// The answer.
    pub summary: String,
    /// The evidence it rests on.
    pub evidence_keys: Vec<String>,
    /// How confident it is, 0 to 1.
    pub confidence: f64,
    /// Why the loop closed.
    pub stop: StopReason,
    /// The critic's verdict.
    pub verdict: Verdict,
}

/// The confidence after one more tool result: 60% of what is left is gained.
pub fn raise(confidence: f64) -> f64 {
    confidence + (1.0 - confidence) * 0.6
}

/// The confidence after an error: halved.
pub fn lower(confidence: f64) -> f64 {
    confidence * 0.5
}

/// The most confidence an answer no tool could give may have.
pub const NO_TOOL_CAP: f64 = 0.2;

/// Rounds to three decimals, for stable reports.
fn round(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

/// Reviews `state` against what `intents` asks for; see the module docs.
pub fn review(state: &ReactState, intents: &Intents) -> Review {
    let evidence = Evidence::from_artifacts(&state.artifacts);
    let needs = intents.needs();
    let missing: Vec<_> = needs
        .iter()
        .filter(|need| !evidence.iter().any(|e| e.meets(need)))
        .collect();
    let covered = needs.len() - missing.len();
    let evidence_keys: Vec<String> = evidence
        .iter()
        .filter(|e| e.is_ok())
        .map(|e| e.key.clone())
        .collect();
    let before = state.confidence;
    let mut confidence = before;
    let mut notes = Vec::new();
    if evidence_keys.is_empty() {
        notes.push("no evidence: no tool result backs the answer".to_owned());
    }
    let failed = evidence.iter().filter(|e| !e.is_ok()).count();
    if failed > 0 {
        notes.push(format!("{failed} tool call(s) failed"));
    }
    let stop = state.stop.unwrap_or(StopReason::Answered);
    let verdict = if needs.is_empty() {
        notes.push("the message asks for nothing the tools do".to_owned());
        confidence = confidence.min(NO_TOOL_CAP);
        Verdict::NoToolNeeded
    } else {
        confidence *= covered as f64 / needs.len() as f64;
        if !missing.is_empty() {
            let labels: Vec<String> = missing.iter().map(|n| n.label()).collect();
            notes.push(format!("not covered: {}", labels.join(", ")));
        }
        if missing.is_empty() && state.errors.is_empty() && !stop.is_guard() {
            confidence += (1.0 - confidence) * 0.5;
            Verdict::Supported
        } else if covered > 0 {
            Verdict::Partial
        } else {
            Verdict::Unsupported
        }
    };
    if stop.is_guard() {
        notes.push(format!("stopped by a guard: {}", stop_name(stop)));
        confidence = lower(confidence);
    }
    Review {
        asked: needs.iter().map(|n| n.label()).collect(),
        missing: missing.iter().map(|n| n.label()).collect(),
        evidence_keys,
        errors: state.errors.len(),
        verdict,
        notes,
        confidence_before: round(before),
        confidence: round(confidence),
    }
}

/// Reviews an llm-mode run from what the model and its tools did (see the module docs): the
/// calls the model asked for (those a guard kept from running count as unmet), their errors,
/// empty results, and results the model's answer leaves out. A run with no call at all has
/// nothing of its own to judge: the model answered alone, and [`review`] tells whether the
/// rules read a request a tool could have met.
pub fn review_run(state: &ReactState, intents: &Intents) -> Review {
    let stop = state.stop.unwrap_or(StopReason::Answered);
    let evidence = Evidence::from_artifacts(&state.artifacts);
    let not_run = if stop.is_guard() {
        not_run_calls(&state.messages)
    } else {
        Vec::new()
    };
    if evidence.is_empty() && not_run.is_empty() {
        let mut review = review(state, intents);
        review
            .notes
            .insert(0, "the model answered without calling a tool".to_owned());
        return review;
    }
    // The model's own words, when they are the answer (see `answer::summary`).
    let answer = state
        .working_memory
        .get("answer")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|a| !a.is_empty() && stop == StopReason::Answered);
    let mut asked = Vec::new();
    let mut missing = Vec::new();
    let mut evidence_keys = Vec::new();
    let mut notes = Vec::new();
    for e in &evidence {
        let label = call_label(&e.tool, &e.args);
        asked.push(label.clone());
        match &e.outcome {
            Err(error) => {
                notes.push(format!("{} failed: {}", e.key, clean_error(error)));
                missing.push(label);
            }
            Ok(output) if is_empty(output) => {
                notes.push(format!("{} returned nothing", e.key));
                missing.push(label);
            }
            Ok(output) => {
                if let Some(answer) = answer
                    && shows_in(answer, output, &e.args) == Some(false)
                {
                    notes.push(format!("the answer does not use {}", e.key));
                    missing.push(label);
                } else {
                    evidence_keys.push(e.key.clone());
                }
            }
        }
    }
    for label in not_run {
        notes.push(format!("not run: {label}"));
        asked.push(label.clone());
        missing.push(label);
    }
    if evidence_keys.is_empty() {
        notes.insert(0, "no evidence: no tool result backs the answer".to_owned());
    }
    let before = state.confidence;
    let covered = asked.len() - missing.len();
    let mut confidence = before * covered as f64 / asked.len() as f64;
    let verdict = if missing.is_empty() && state.errors.is_empty() && !stop.is_guard() {
        confidence += (1.0 - confidence) * 0.5;
        Verdict::Supported
    } else if covered > 0 {
        Verdict::Partial
    } else {
        Verdict::Unsupported
    };
    if stop.is_guard() {
        notes.push(format!("stopped by a guard: {}", stop_name(stop)));
        confidence = lower(confidence);
    }
    Review {
        asked,
        missing,
        evidence_keys,
        errors: state.errors.len(),
        verdict,
        notes,
        confidence_before: round(before),
        confidence: round(confidence),
    }
}

/// `echo {"text":"hi"}`: a call as reviews and guard messages write it.
fn call_label(tool: &str, args: &Value) -> String {
    if args.is_null() {
        tool.to_owned()
    } else {
        format!("{tool} {args}")
    }
}

/// `step_limit`, `tool_call_cap`...: a stop as the state writes it.
fn stop_name(stop: StopReason) -> String {
    serde_json::to_value(stop)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The calls of this turn answered "not run" (by a guard), as labels.
fn not_run_calls(messages: &[Message]) -> Vec<String> {
    let turn = episode(messages);
    turn.iter()
        .filter_map(|m| match m {
            Message::Tool(t) if t.is_error && t.content.starts_with(NOT_RUN) => {
                Some(t.tool_call_id.as_str())
            }
            _ => None,
        })
        .filter_map(|id| {
            turn.iter()
                .flat_map(Message::tool_calls)
                .find(|c| c.id == id)
                .map(|c| call_label(&c.name, &c.args))
        })
        .collect()
}

/// Whether a result holds nothing: null, blank text, or only empty lists and objects.
pub fn is_empty(output: &Value) -> bool {
    match output {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(items) => items.iter().all(is_empty),
        Value::Object(map) => map.values().all(is_empty),
        Value::Bool(_) | Value::Number(_) => false,
    }
}

/// Whether `answer` uses `output`: one of its numbers shows (as written, or rounded the way
/// the answer writes it: 0.30000000000000004 as 0.3, 2165423 as 2,165,423), or one of the
/// words of its texts that the call's arguments do not already hold (the model repeats
/// "Paris" whatever the tool said). A result whose texts only repeat the arguments (an echo)
/// is used when one of those texts shows whole. `None` when there is nothing to look for (a
/// bare boolean).
pub fn shows_in(answer: &str, output: &Value, args: &Value) -> Option<bool> {
    let mut numbers = Vec::new();
    let mut texts = Vec::new();
    leaves(output, &mut numbers, &mut texts);
    let mut arg_numbers = Vec::new();
    let mut arg_texts = Vec::new();
    leaves(args, &mut arg_numbers, &mut arg_texts);
    let known: Vec<String> = arg_texts.iter().flat_map(|t| words(t)).collect();
    let wanted: Vec<String> = texts
        .iter()
        .flat_map(|t| words(t))
        .filter(|w| {
            (w.chars().count() > 1 || w.chars().all(|c| c.is_ascii_digit())) && !known.contains(w)
        })
        .collect();
    let echoed: Vec<&String> = texts
        .iter()
        .filter(|t| !words(t).is_empty() && words(t).iter().all(|w| known.contains(w)))
        .collect();
    if numbers.is_empty() && wanted.is_empty() && echoed.is_empty() {
        return None;
    }
    let said = words(answer);
    let written = numbers_in(answer);
    let distinct = wanted.iter().any(|w| said.contains(w))
        || numbers.iter().any(|x| {
            written
                .iter()
                .any(|(v, decimals)| rounds_to(*x, *v, *decimals))
        });
    let echo = wanted.is_empty() && echoed.iter().any(|t| contains_phrase(&said, t));
    Some(distinct || echo)
}

/// The numbers and texts of a JSON value (keys left out).
fn leaves(value: &Value, numbers: &mut Vec<f64>, texts: &mut Vec<String>) {
    match value {
        Value::Number(n) => numbers.extend(n.as_f64()),
        Value::String(s) => texts.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| leaves(v, numbers, texts)),
        Value::Object(map) => map.values().for_each(|v| leaves(v, numbers, texts)),
        Value::Null | Value::Bool(_) => {}
    }
}

/// The numbers written in `text`, each with its decimals, read every way it may be meant:
/// "2,165,423" as 2165423, "3,14" as 3.14, "1.5" as 1.5.
fn numbers_in(text: &str) -> Vec<(f64, i32)> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let negative = i > 0 && chars[i - 1] == '-';
        let start = i;
        while i < chars.len()
            && (chars[i].is_ascii_digit()
                || (matches!(chars[i], '.' | ',')
                    && chars.get(i + 1).is_some_and(char::is_ascii_digit)))
        {
            i += 1;
        }
        let run: String = chars[start..i].iter().collect();
        let sign = if negative { -1.0 } else { 1.0 };
        let digits: String = run.chars().filter(char::is_ascii_digit).collect();
        if let Ok(v) = digits.parse::<f64>() {
            out.push((sign * v, 0));
        }
        for (decimal, thousands) in [('.', ','), (',', '.')] {
            let plain: String = run.chars().filter(|c| *c != thousands).collect();
            if let Some(at) = plain.rfind(decimal)
                && plain.matches(decimal).count() == 1
            {
                let decimals = i32::try_from(plain.len() - at - 1).unwrap_or(i32::MAX);
                if let Ok(v) = plain.replace(decimal, ".").parse::<f64>() {
                    out.push((sign * v, decimals));
                }
            }
        }
    }
    out
}

/// Whether `x`, rounded to `decimals`, is `written` (or its magnitude is: -5 written "minus
/// 5").
fn rounds_to(x: f64, written: f64, decimals: i32) -> bool {
    let scale = 10f64.powi(decimals.min(15));
    let close =
        |x: f64| ((x * scale).round() / scale - written).abs() <= 1e-9 * written.abs().max(1.0);
    close(x) || close(x.abs())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::{Value, json};

    use super::super::intent::analyze;
    use super::*;

    fn state(query: &str, artifacts: &[(&str, Value)], confidence: f64) -> ReactState {
        ReactState {
            user_query: query.into(),
            artifacts: artifacts
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect::<BTreeMap<_, _>>(),
            confidence,
            ..ReactState::default()
        }
    }

    #[test]
    fn confidence_stays_in_range() {
        let mut c = 0.0;
        for _ in 0..50 {
            c = raise(c);
            assert!((0.0..=1.0).contains(&c));
        }
        for _ in 0..50 {
            c = lower(c);
            assert!((0.0..=1.0).contains(&c));
        }
        assert_eq!(raise(0.0), 0.6);
    }

    #[test]
    fn a_fully_met_request_is_supported() {
        let query = "Repite: hola";
        let s = state(
            query,
            &[(
                "echo_1",
                json!({"tool": "echo", "args": {"text": "hola"}, "output": {"echo": "hola"}, "origin": "forced"}),
            )],
            0.6,
        );
        let r = review(&s, &analyze(query));
        assert_eq!(r.verdict, Verdict::Supported);
        assert_eq!(r.asked, ["echo"]);
        assert!(r.missing.is_empty());
        assert_eq!(r.evidence_keys, ["echo_1"]);
        assert_eq!(r.confidence, 0.8);
    }

    #[test]
    fn missing_requests_errors_and_guards_lower_it() {
        let query = "what is 2+2 and the time in Oslo?";
        let mut s = state(
            query,
            &[
                (
                    "echo_1",
                    json!({"tool": "echo", "args": {"text": query}, "output": {"echo": query}, "origin": "forced"}),
                ),
                (
                    "calculator_2",
                    json!({"tool": "calculator", "args": {"expression": "2 + 2"}, "output": 4, "origin": "rule:needs"}),
                ),
            ],
            0.84,
        );
        s.stop = Some(StopReason::StepLimit);
        let r = review(&s, &analyze(query));
        assert_eq!(r.verdict, Verdict::Partial);
        assert_eq!(r.missing, ["time in Oslo"]);
        assert_eq!(r.confidence, 0.21);
        assert!(
            r.notes
                .contains(&"stopped by a guard: step_limit".to_owned())
        );

        let query = "how much is 1/0?";
        let mut s = state(
            query,
            &[(
                "calculator_2",
                json!({"tool": "calculator", "args": {"expression": "1 / 0"}, "error": "division by zero", "origin": "rule:needs"}),
            )],
            0.3,
        );
        s.errors = vec!["calculator_2: division by zero".into()];
        let r = review(&s, &analyze(query));
        assert_eq!(r.verdict, Verdict::Unsupported);
        assert_eq!(r.confidence, 0.0);
        assert_eq!(r.errors, 1);
    }

    #[test]
    fn an_answer_uses_a_result_when_its_values_show() {
        let args = json!({"city": "Paris"});
        let weather = json!({"city": "Paris", "temp_c": 21.4, "sky": "sunny"});
        assert_eq!(shows_in("21 °C in Paris", &weather, &args), Some(true));
        assert_eq!(shows_in("Sunny!", &weather, &args), Some(true));
        assert_eq!(
            shows_in("No idea about Paris.", &weather, &args),
            Some(false)
        );
        let people = json!({"population": 2_165_423});
        assert_eq!(shows_in("2,165,423 people", &people, &args), Some(true));
        assert_eq!(shows_in("2.165.423 personas", &people, &args), Some(true));
        assert_eq!(shows_in("2,1 millones", &people, &args), Some(false));
        let sum = json!(0.30000000000000004);
        assert_eq!(shows_in("0.1 + 0.2 = 0.3", &sum, &json!({})), Some(true));
        assert_eq!(
            shows_in("It is minus 5.", &json!(-5), &json!({})),
            Some(true)
        );
        let echo = json!({"echo": "hello, world", "chars": 12});
        let said = json!({"text": "hello, world"});
        assert_eq!(shows_in("Echo: hello, world", &echo, &said), Some(true));
        assert_eq!(shows_in("Done.", &echo, &said), Some(false));
        assert_eq!(shows_in("Done.", &json!(true), &said), None);
        assert!(is_empty(&json!({"results": [], "next": null})));
        assert!(!is_empty(&json!({"total": 0})));
    }

    #[test]
    fn nothing_to_do_caps_confidence() {
        let query = "Что такое ReAct?";
        let s = state(
            query,
            &[(
                "echo_1",
                json!({"tool": "echo", "args": {"text": query}, "output": {"echo": query}, "origin": "forced"}),
            )],
            0.6,
        );
        let r = review(&s, &analyze(query));
        assert_eq!(r.verdict, Verdict::NoToolNeeded);
        assert_eq!(r.confidence, NO_TOOL_CAP);
    }
}
