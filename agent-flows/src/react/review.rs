//! The critic's review and the final block, as plain functions over the state: which
//! requests the evidence covers, what went wrong, and how confident the answer may be.
//!
//! Confidence moves by fixed rules (see the flow's module docs): [`raise`] per tool result,
//! [`lower`] per error, then [`review`] scales it by coverage, lifts a fully supported answer,
//! halves it after a guard stop and caps it when no tool could answer. Every step keeps it in
//! 0..=1 without clamping.

use serde::{Deserialize, Serialize};

use super::answer::Evidence;
use super::intent::Intents;
use super::{ReactState, StopReason};

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
        notes.push(format!(
            "stopped by a guard: {}",
            serde_json::to_value(stop)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        ));
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
