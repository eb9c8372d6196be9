//! The verifier's rules: did this round's tool results answer the question, and if not,
//! plan again, ask the user, or give up.
//!
//! In order:
//!
//! 1. Every call of the round returned something -> [`Verdict::Success`], unless the
//!    relevance judgement ([`super::relevance`], applied by [`judged`]) finds that some of it
//!    does not answer the question: then as in 3 and 4.
//! 2. A call failed in a way only the user can fix
//!    ([`needs_user`](super::FailureKind::needs_user): the tool refuses the request by
//!    design, or the user's own expression does not evaluate) ->
//!    [`Verdict::Clarify`]: re-planning would only repeat it.
//! 3. Otherwise (no rows, no documents, a wrong column, a forbidden or unknown tool, a
//!    time-out) -> [`Verdict::Retry`] while `retry_count` is below the cap: the planner tries
//!    other words, another tool, or a corrected query.
//! 4. Past the cap -> [`Verdict::GiveUp`]: the generator says what could not be found.

use super::relevance::RelevanceVerdict;
use super::{Status, ToolRecord, Verdict, Verification};

/// One line about a record: what it returned or why it failed.
pub fn describe(id: &str, record: &ToolRecord) -> String {
    match (record.status, &record.error) {
        (Status::Ok, _) => {
            let what = match record.tool.as_str() {
                "sql_query" => format!(
                    "{} rows",
                    record.output["row_count"]
                        .as_u64()
                        .or_else(|| record.output["rows"].as_array().map(|r| r.len() as u64))
                        .unwrap_or(0)
                ),
                "doc_search" => format!(
                    "{} documents",
                    record.output["hits"].as_array().map_or(0, Vec::len)
                ),
                _ => "a result".to_owned(),
            };
            format!("{} `{id}` returned {what}", record.tool)
        }
        (Status::Empty, _) => match record.tool.as_str() {
            "sql_query" => format!("sql_query `{id}` returned no rows"),
            "doc_search" => format!(
                "doc_search `{id}` found no documents for \u{201c}{}\u{201d}",
                record.args["query"].as_str().unwrap_or("")
            ),
            tool => format!("{tool} `{id}` returned nothing"),
        },
        (Status::Error, Some(error)) => {
            let kind = serde_json::to_value(error.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            format!("{} `{id}` failed ({kind}): {}", record.tool, error.message)
        }
        (Status::Error, None) => format!("{} `{id}` failed", record.tool),
    }
}

/// The verdict after the relevance judgement of a round whose calls all returned something
/// (`verification` from [`decide`]): `success` with the judge's reason when the results
/// answer the question, else `retry` below the cap and `give_up` past it.
pub fn judged(
    verification: Verification,
    relevance: &RelevanceVerdict,
    retry_count: u32,
    max_retries: u32,
) -> Verification {
    let mut reasons = verification.reasons;
    if relevance.relevant {
        reasons.push(format!("relevant: {}", relevance.reason));
        return Verification {
            verdict: Verdict::Success,
            reasons,
        };
    }
    reasons.push(format!("not relevant: {}", relevance.reason));
    let verdict = if retry_count < max_retries {
        reasons.push(format!(
            "planning again (retry {} of {max_retries})",
            retry_count + 1
        ));
        Verdict::Retry
    } else {
        reasons.push(format!(
            "the retry cap ({max_retries}) is reached; answering with what was found"
        ));
        Verdict::GiveUp
    };
    Verification { verdict, reasons }
}

/// The verdict on a round's records (`(call id, record)`, in call order).
pub fn decide(records: &[(&str, &ToolRecord)], retry_count: u32, max_retries: u32) -> Verification {
    if records.is_empty() {
        return Verification {
            verdict: Verdict::Success,
            reasons: vec!["no tool ran in this round".to_owned()],
        };
    }
    let failures: Vec<&(&str, &ToolRecord)> = records
        .iter()
        .filter(|(_, r)| r.status != Status::Ok)
        .collect();
    if failures.is_empty() {
        return Verification {
            verdict: Verdict::Success,
            reasons: records.iter().map(|(id, r)| describe(id, r)).collect(),
        };
    }
    let mut reasons: Vec<String> = failures.iter().map(|(id, r)| describe(id, r)).collect();
    let needs_user = failures
        .iter()
        .any(|(_, r)| r.error.as_ref().is_some_and(|e| e.kind.needs_user()));
    let verdict = if needs_user {
        reasons.push("only the user can change this request".to_owned());
        Verdict::Clarify
    } else if retry_count < max_retries {
        reasons.push(format!(
            "planning again (retry {} of {max_retries})",
            retry_count + 1
        ));
        Verdict::Retry
    } else {
        reasons.push(format!(
            "the retry cap ({max_retries}) is reached; answering with what was found"
        ));
        Verdict::GiveUp
    };
    Verification { verdict, reasons }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::orchestrator::{FailureKind, ToolFailure};

    #[test]
    fn results_that_do_not_answer_retry_until_the_cap() {
        let a = ok("sql_query", json!({"rows": [[1]], "row_count": 1}));
        let round = decide(&[("c1", &a)], 0, 2);
        let off = RelevanceVerdict {
            relevant: false,
            reason: "`c1` returned infl, but the question asks for unemp".into(),
            off_calls: vec!["c1".into()],
        };
        let v = judged(round.clone(), &off, 0, 2);
        assert_eq!(v.verdict, Verdict::Retry);
        assert_eq!(
            v.reasons,
            [
                "sql_query `c1` returned 1 rows",
                "not relevant: `c1` returned infl, but the question asks for unemp",
                "planning again (retry 1 of 2)"
            ]
        );
        assert_eq!(judged(round.clone(), &off, 2, 2).verdict, Verdict::GiveUp);
        let fits = RelevanceVerdict {
            relevant: true,
            reason: "fine".into(),
            off_calls: Vec::new(),
        };
        let v = judged(round, &fits, 2, 2);
        assert_eq!(v.verdict, Verdict::Success);
        assert_eq!(v.reasons.last().map(String::as_str), Some("relevant: fine"));
    }

    fn ok(tool: &str, output: serde_json::Value) -> ToolRecord {
        ToolRecord {
            tool: tool.into(),
            output,
            ..ToolRecord::default()
        }
    }

    fn empty(tool: &str) -> ToolRecord {
        ToolRecord {
            tool: tool.into(),
            status: Status::Empty,
            args: json!({"query": "joblessness"}),
            ..ToolRecord::default()
        }
    }

    fn failed(tool: &str, kind: FailureKind) -> ToolRecord {
        ToolRecord {
            tool: tool.into(),
            status: Status::Error,
            error: Some(ToolFailure {
                kind,
                message: "it broke".into(),
            }),
            ..ToolRecord::default()
        }
    }

    #[test]
    fn all_results_is_success() {
        let a = ok("sql_query", json!({"rows": [[1]], "row_count": 1}));
        let b = ok("doc_search", json!({"hits": [{}, {}]}));
        let v = decide(&[("c1", &a), ("c2", &b)], 0, 2);
        assert_eq!(v.verdict, Verdict::Success);
        assert_eq!(
            v.reasons,
            [
                "sql_query `c1` returned 1 rows",
                "doc_search `c2` returned 2 documents"
            ]
        );
    }

    #[test]
    fn empty_and_fixable_errors_retry_until_the_cap() {
        let e = empty("doc_search");
        let v = decide(&[("c1", &e)], 0, 2);
        assert_eq!(v.verdict, Verdict::Retry);
        assert_eq!(
            v.reasons,
            [
                "doc_search `c1` found no documents for \u{201c}joblessness\u{201d}",
                "planning again (retry 1 of 2)"
            ]
        );
        for kind in [
            FailureKind::InvalidArgs,
            FailureKind::Forbidden,
            FailureKind::UnknownTool,
            FailureKind::Timeout,
            FailureKind::Failed,
        ] {
            let f = failed("sql_query", kind);
            assert_eq!(
                decide(&[("c", &f)], 1, 2).verdict,
                Verdict::Retry,
                "{kind:?}"
            );
            assert_eq!(
                decide(&[("c", &f)], 2, 2).verdict,
                Verdict::GiveUp,
                "{kind:?}"
            );
        }
        let v = decide(&[("c", &e)], 2, 2);
        assert_eq!(
            v.reasons.last().map(String::as_str),
            Some("the retry cap (2) is reached; answering with what was found")
        );
        assert_eq!(decide(&[("c", &e)], 0, 0).verdict, Verdict::GiveUp);
    }

    #[test]
    fn what_only_the_user_can_fix_is_a_question_for_them() {
        let good = ok("doc_search", json!({"hits": [{}]}));
        for kind in [FailureKind::Refused, FailureKind::InvalidInput] {
            let f = failed("sql_query", kind);
            assert_eq!(
                decide(&[("a", &good), ("b", &f)], 0, 2).verdict,
                Verdict::Clarify
            );
            // Even past the cap: a refusal is not something more attempts would change.
            assert_eq!(decide(&[("b", &f)], 2, 2).verdict, Verdict::Clarify);
        }
        let v = decide(
            &[("b", &failed("calculator", FailureKind::InvalidInput))],
            0,
            2,
        );
        assert_eq!(
            v.reasons[0],
            "calculator `b` failed (invalid_input): it broke"
        );
    }
}
