//! Whether a round's results answer the question (the seed's verifier: "check if tool
//! outputs answer the user's question"), beyond being non-empty and error-free.
//!
//! The verifier asks the context's model for a [`RelevanceVerdict`] (structured output,
//! task [`TASK`]): a real model judges the question against the results it is shown. The
//! offline model answers with [`judge`], rules over the lexicon and the data set:
//!
//! - **Series.** A query whose result columns name series of the data set (`unemp`,
//!   `avg_infl`, `max(realgdp)`), none of them a series the question asks about, does not
//!   answer it (asked about unemployment, got inflation).
//! - **Period.** A query whose rows carry a `year` (and `quarter`), none of them in the period
//!   asked (a year, a quarter, a range, two years compared), does not answer it. A period the
//!   data does not cover is not judged: the nearest quarter is the best answer there is.
//! - A statement the user wrote is run as written and always fits; documents, arithmetic and
//!   times have no series or period to compare, and the data set has no country or region
//!   column (it is US data only), so those are not judged by rules.
//!
//! The question is read with follow-ups resolved from the conversation summary ("and in
//! 2009?" asks about the previous series), as the offline planner reads it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lexicon::{Question, When};
use super::offline::planner::{SUMMARY_BLOCK, resolve_follow_up};
use super::offline::sql::written_statement;
use crate::dataset::COLUMNS;
use crate::offline::system_block;
use agent_llm::Message;

/// The structured-output task of the verifier's model call.
pub const TASK: &str = "RelevanceVerdict";

/// What the verifier's model is told.
pub const PROMPT: &str = "You check whether tool results answer the user's last message \
    about US macroeconomic data (quarterly, 1959Q1-2009Q3). Compare what was asked with \
    what came back: the series (GDP, inflation, unemployment...), the period (years, \
    quarters), the place. Results for another series or another period do not answer it; \
    a period the data does not cover is answered by the nearest quarter it has. Reply with \
    relevant, a one-sentence reason naming what was asked and what came back, and the ids \
    of the calls whose results do not answer it.";

/// The block of the verifier's prompt that lists the round's results (JSON array of
/// [`Judged`]).
pub const RESULTS_BLOCK: &str = "Results to judge:";

/// The block of the planner's prompt after results were judged not to answer the question:
/// why, and the ids of the calls to replace (a line `Calls to replace: id, id`).
pub const REPLAN_BLOCK: &str = "Verifier:";

/// The planner's [`REPLAN_BLOCK`] for the calls `off` (`(id, reason)`).
pub fn replan_block(off: &[(&str, &str)]) -> String {
    let mut lines = vec![format!(
        "{REPLAN_BLOCK} these results do not answer the question; plan calls that do."
    )];
    let mut reasons: Vec<&str> = Vec::new();
    for (_, reason) in off {
        if !reasons.contains(reason) {
            reasons.push(reason);
        }
    }
    lines.extend(reasons.iter().map(|r| format!("- {r}")));
    let ids: Vec<&str> = off.iter().map(|(id, _)| *id).collect();
    lines.push(format!("{REPLACE_LINE} {}", ids.join(", ")));
    lines.join("\n")
}

/// The line of a [`REPLAN_BLOCK`] that lists the calls to replace.
const REPLACE_LINE: &str = "Calls to replace:";

/// The call ids a [`REPLAN_BLOCK`] in `messages` asks to replace.
pub fn calls_to_replace(messages: &[Message]) -> Vec<String> {
    system_block(messages, REPLAN_BLOCK)
        .and_then(|block| {
            block
                .lines()
                .find_map(|line| line.trim().strip_prefix(REPLACE_LINE))
        })
        .map(|ids| {
            ids.split(',')
                .map(|id| id.trim().to_owned())
                .filter(|id| !id.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// The verifier's judgement of a round's results.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RelevanceVerdict {
    /// Whether the results answer the question.
    pub relevant: bool,
    /// Why: what was asked and what came back.
    pub reason: String,
    /// The ids of the calls whose results do not answer it (empty when relevant).
    #[serde(default)]
    pub off_calls: Vec<String>,
}

/// One result as the verifier's model is shown it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    /// The call id.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub args: Value,
    /// What it returned (redacted).
    pub output: Value,
}

/// The messages of the verifier's model call: the prompt, the summary, the question, the
/// results.
pub fn prompt(question: &str, summary: &str, results: &[Judged]) -> Vec<Message> {
    let mut messages = vec![Message::system(PROMPT)];
    if !summary.is_empty() {
        messages.push(Message::system(format!("{SUMMARY_BLOCK}\n{summary}")));
    }
    messages.push(Message::human(question));
    let listed = serde_json::to_string(results).unwrap_or_else(|_| "[]".to_owned());
    messages.push(Message::system(format!("{RESULTS_BLOCK} {listed}")));
    messages
}

/// The offline model's answer to a verifier call: [`judge`] over what the prompt holds.
pub fn reply(messages: &[Message]) -> RelevanceVerdict {
    let question = messages
        .iter()
        .rev()
        .find(|m| m.kind() == "human")
        .map(Message::content)
        .unwrap_or("");
    let results: Vec<Judged> = system_block(messages, RESULTS_BLOCK)
        .and_then(|json| serde_json::from_str(json).ok())
        .unwrap_or_default();
    judge(question, system_block(messages, SUMMARY_BLOCK), &results)
}

/// The rules' judgement of `results` against `question` (see the module docs).
pub fn judge(question: &str, summary: Option<&str>, results: &[Judged]) -> RelevanceVerdict {
    let asked = resolve_follow_up(question, Question::parse(question), summary);
    let written = written_statement(question);
    let mut off = Vec::new();
    let mut reasons = Vec::new();
    for result in results.iter().filter(|r| r.tool == "sql_query") {
        let sql = result.args["sql"].as_str().unwrap_or("").trim();
        if written.as_deref().map(str::trim) == Some(sql) {
            continue;
        }
        if let Some(why) = mismatch(&asked, &result.output) {
            reasons.push(format!("`{}` {why}", result.id));
            off.push(result.id.clone());
        }
    }
    if off.is_empty() {
        let what = match (asked.series.is_empty(), asked.when) {
            (true, When::Unspecified | When::Latest) => String::new(),
            (false, When::Unspecified | When::Latest) => format!(" ({})", asked.series.join(", ")),
            (true, when) => format!(" ({})", when.label()),
            (false, when) => format!(" ({} @ {})", asked.series.join(", "), when.label()),
        };
        let outside = if asked.when.outside_coverage() {
            format!(
                "; {} is outside the data, so the nearest quarter it has is the answer",
                asked.when.label()
            )
        } else {
            String::new()
        };
        RelevanceVerdict {
            relevant: true,
            reason: format!("the results fit what was asked{what}{outside}"),
            off_calls: Vec::new(),
        }
    } else {
        RelevanceVerdict {
            relevant: false,
            reason: reasons.join("; "),
            off_calls: off,
        }
    }
}

/// Why a query's `output` does not answer `asked`, if it does not.
fn mismatch(asked: &Question, output: &Value) -> Option<String> {
    let columns: Vec<&str> = output["columns"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let returned = series_of_columns(&columns);
    if !asked.series.is_empty()
        && !returned.is_empty()
        && !returned.iter().any(|s| asked.series.contains(s))
    {
        return Some(format!(
            "returned {}, but the question asks for {}",
            returned.join(", "),
            asked.series.join(", ")
        ));
    }
    if asked.when.years().is_none() || asked.when.outside_coverage() {
        return None;
    }
    let at = |name: &str| columns.iter().position(|c| c.eq_ignore_ascii_case(name));
    let year_at = at("year")?;
    let quarter_at = at("quarter");
    let cell = |row: &Value, i: usize, name: &str| {
        row.get(i).or_else(|| row.get(name)).and_then(Value::as_i64)
    };
    let periods: Vec<(i64, Option<i64>)> = output["rows"]
        .as_array()?
        .iter()
        .filter_map(|row| {
            let year = cell(row, year_at, "year")?;
            Some((year, quarter_at.and_then(|q| cell(row, q, "quarter"))))
        })
        .collect();
    if periods.is_empty() {
        return None;
    }
    let fits = |(year, quarter): &(i64, Option<i64>)| match asked.when {
        When::Quarter(y, q) => *year == y && quarter.is_none_or(|got| got == q),
        When::Years(a, b) => (a..=b).contains(year),
        When::Pair(a, b) => *year == a || *year == b,
        When::Unspecified | When::Latest => true,
    };
    if periods.iter().any(fits) {
        return None;
    }
    let first = periods.iter().map(|p| p.0).min().unwrap_or(0);
    let last = periods.iter().map(|p| p.0).max().unwrap_or(0);
    let got = match periods.as_slice() {
        [(y, Some(q))] => format!("{y}Q{q}"),
        _ if first == last => first.to_string(),
        _ => format!("{first}–{last}"),
    };
    Some(format!(
        "returned {got}, but the question asks about {}",
        asked.when.label()
    ))
}

/// The data set's series that result columns name, in order, each once: a column named for
/// a series, or an expression or alias holding its name (`avg_unemp`, `max(infl)`).
fn series_of_columns(columns: &[&str]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for column in columns {
        let lower = column.to_ascii_lowercase();
        for token in lower.split(|c: char| !c.is_ascii_alphanumeric()) {
            if let Some(found) = COLUMNS
                .iter()
                .find(|c| c.name == token && c.name != "year" && c.name != "quarter")
                && !out.contains(&found.name)
            {
                out.push(found.name);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn sql(id: &str, columns: Value, rows: Value) -> Judged {
        Judged {
            id: id.into(),
            tool: "sql_query".into(),
            args: json!({"sql": "SELECT ...", "params": []}),
            output: json!({"columns": columns, "rows": rows, "row_count": 1, "truncated": false}),
        }
    }

    #[test]
    fn the_series_and_the_period_must_be_the_ones_asked() {
        let right = sql(
            "c1",
            json!(["year", "quarter", "unemp"]),
            json!([[2008, 1, 5.0], [2008, 2, 5.3]]),
        );
        let v = judge("What was the unemployment rate in 2008?", None, &[right]);
        assert!(v.relevant, "{v:?}");
        assert_eq!(v.reason, "the results fit what was asked (unemp @ 2008)");

        let series = sql(
            "c1",
            json!(["year", "quarter", "infl"]),
            json!([[2008, 1, 3.0]]),
        );
        let v = judge("¿Cuál fue la tasa de paro en 2008?", None, &[series]);
        assert!(!v.relevant);
        assert_eq!(v.off_calls, ["c1"]);
        assert_eq!(
            v.reason,
            "`c1` returned infl, but the question asks for unemp"
        );

        let period = sql(
            "c2",
            json!(["year", "quarter", "realgdp"]),
            json!([[1982, 4, 1.0]]),
        );
        let v = judge(
            "Какой был ВВП в третьем квартале 2008 года?",
            None,
            &[period],
        );
        assert_eq!(
            v.reason,
            "`c2` returned 1982Q4, but the question asks about 2008Q3"
        );
        let avg = sql("c3", json!(["avg_realgdp", "quarters"]), json!([[1.0, 4]]));
        assert!(judge("Average GDP in the 1990s?", None, &[avg]).relevant);
        let expression = sql("c4", json!(["max(infl)"]), json!([[14.6]]));
        assert!(!judge("Highest unemployment?", None, &[expression]).relevant);
    }

    #[test]
    fn what_cannot_fit_better_is_not_held_against_it() {
        // Outside the data: the nearest quarter is the answer.
        let nearest = sql(
            "c1",
            json!(["year", "quarter", "realgdp"]),
            json!([[2009, 3, 1.0]]),
        );
        assert!(judge("GDP in 2012?", None, &[nearest]).relevant);
        // A change over a year reads the year before too.
        let change = sql(
            "c1",
            json!(["year", "unemp"]),
            json!([[2007, 4.6], [2008, 5.8]]),
        );
        assert!(judge("How did unemployment change in 2008?", None, &[change]).relevant);
        // The user's own statement.
        let mut written = sql("c1", json!(["year", "infl"]), json!([[1990, 1.0]]));
        written.args = json!({"sql": "SELECT year, infl FROM macrodata WHERE year = 1990"});
        assert!(
            judge(
                "Run SELECT year, infl FROM macrodata WHERE year = 1990 for unemployment in 2008",
                None,
                &[written]
            )
            .relevant
        );
        // No series, no period: nothing to compare.
        let docs = Judged {
            id: "d".into(),
            tool: "doc_search".into(),
            args: json!({"query": "m1"}),
            output: json!({"hits": [{"id": "x"}]}),
        };
        assert!(judge("What is M1?", None, &[docs]).relevant);
    }

    #[test]
    fn follow_ups_are_read_with_the_summary() {
        let summary = "Turn 1 (en): asked «Unemployment in 2008?»; sql_query unemp @ 2008 -> 4 rows; answered «…»";
        let wrong_year = sql(
            "c1",
            json!(["year", "quarter", "unemp"]),
            json!([[2008, 1, 5.0]]),
        );
        let v = judge(
            "And in 2009?",
            Some(summary),
            std::slice::from_ref(&wrong_year),
        );
        assert!(!v.relevant);
        assert_eq!(
            v.reason,
            "`c1` returned 2008Q1, but the question asks about 2009"
        );
        let wrong_series = sql(
            "c1",
            json!(["year", "quarter", "cpi"]),
            json!([[2008, 1, 5.0]]),
        );
        assert!(!judge("And in 2008?", Some(summary), &[wrong_series]).relevant);
    }

    #[test]
    fn the_planner_block_names_the_calls_to_replace() {
        let block = replan_block(&[("call_1", "wrong series"), ("call_2", "wrong series")]);
        assert_eq!(
            block,
            "Verifier: these results do not answer the question; plan calls that do.\n- wrong series\nCalls to replace: call_1, call_2"
        );
        let messages = [Message::system("prompt"), Message::system(block)];
        assert_eq!(calls_to_replace(&messages), ["call_1", "call_2"]);
        assert!(calls_to_replace(&messages[..1]).is_empty());
    }

    #[test]
    fn the_offline_reply_reads_the_prompt() {
        let results = [sql(
            "c9",
            json!(["year", "quarter", "pop"]),
            json!([[1970, 1, 1.0]]),
        )];
        let messages = prompt("What was inflation in 1970?", "", &results);
        let v = reply(&messages);
        assert_eq!(v.off_calls, ["c9"]);
        assert!(reply(&prompt("Population in 1970?", "", &results)).relevant);
    }
}
