//! The summarizer's work: one line per turn in the conversation summary, and the messages
//! that no longer fit the token budget removed from the state.
//!
//! A summary line says what the user asked (quoted, cut at 120 characters), what the tools
//! looked up (the series and the period of each query, the words of each search, each
//! calculation) and the first sentence of the answer:
//!
//! ```text
//! Turn 2 (es): asked «¿Y en 2009?»; sql_query realgdp @ 2009 -> 4 rows; answered «En 2009 …»
//! ```
//!
//! The series and periods are written as the data set names them (`realgdp @ 2009`), so a
//! later turn's planner can resolve a follow-up ("and in 2010?", "¿y el paro?") from the
//! summary alone, after the messages themselves are gone. A refused turn is recorded without
//! its text. When the summary grows past [`MAX_SUMMARY_CHARS`], the oldest lines fold into
//! one "Earlier" line that keeps the series and searches they mentioned.

use agent_llm::{Message, TrimMessages, count_tokens_approximately};

use super::{SafetyCheck, Status, ToolRecord};
use crate::dataset::COLUMNS;
use crate::lang::Lang;

/// The longest summary kept, in characters.
pub const MAX_SUMMARY_CHARS: usize = 1600;

fn clip(text: &str, max: usize) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() <= max {
        text
    } else {
        let cut: String = text.chars().take(max).collect();
        format!("{}…", cut.trim_end())
    }
}

/// The first sentence of `text` (up to 160 characters): up to a `.`, `!` or `?` followed by
/// the end or by a capital letter, so abbreviations and numbers ("III кв. 2009", "13.4")
/// do not cut it.
pub fn first_sentence(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let chars: Vec<char> = line.chars().collect();
    let end = (0..chars.len())
        .find(|&i| {
            if !matches!(chars[i], '.' | '!' | '?') {
                return false;
            }
            let rest = &chars[i + 1..];
            let next = rest.iter().find(|c| !c.is_whitespace());
            let spaced = rest.first().is_none_or(|c| c.is_whitespace());
            spaced
                && next.is_none_or(|c| {
                    c.is_uppercase() || matches!(c, '(' | '\u{ab}' | '\u{201c}' | '¿' | '¡')
                })
        })
        .map_or(chars.len(), |i| i + 1);
    clip(&chars[..end].iter().collect::<String>(), 160)
}

/// The series a query names, in the data set's column names.
pub fn series_of_sql(sql: &str) -> Vec<&'static str> {
    let lower = sql.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    COLUMNS
        .iter()
        .map(|c| c.name)
        .filter(|name| !matches!(*name, "year" | "quarter"))
        .filter(|name| words.contains(name))
        .collect()
}

/// The period a query names: in its parameters (`2008`, `2008Q3`, `2000–2005`), else in
/// years written in the SQL, else `latest` for a newest-first query, else `all`.
pub fn period_of(sql: &str, params: &[serde_json::Value]) -> String {
    let from_params = period_of_params(params);
    if from_params != "all" {
        return from_params;
    }
    let literals: Vec<serde_json::Value> = sql
        .split(|c: char| !c.is_ascii_digit())
        .filter(|n| n.len() == 4)
        .filter_map(|n| n.parse::<i64>().ok())
        .map(serde_json::Value::from)
        .collect();
    let from_sql = period_of_params(&literals);
    if from_sql != "all" {
        return from_sql;
    }
    let lower = sql.to_ascii_lowercase();
    if lower.contains("year desc") && lower.contains("limit") {
        "latest".to_owned()
    } else {
        "all".to_owned()
    }
}

/// The period a query's parameters name: `2008`, `2008Q3`, `2000–2005`, or `all` without
/// years.
pub fn period_of_params(params: &[serde_json::Value]) -> String {
    let numbers: Vec<i64> = params
        .iter()
        .filter_map(serde_json::Value::as_i64)
        .collect();
    let years: Vec<i64> = numbers
        .iter()
        .copied()
        .filter(|n| (1800..=2100).contains(n))
        .collect();
    match (years.as_slice(), numbers.as_slice()) {
        ([year], [_, q]) if (1..=4).contains(q) => format!("{year}Q{q}"),
        ([year], _) => year.to_string(),
        ([first, .., last], _) if first == last => first.to_string(),
        ([first, .., last], _) => format!("{}–{}", first.min(last), first.max(last)),
        _ => "all".to_owned(),
    }
}

/// What one call looked up and got, for a summary line.
pub fn describe_call(record: &ToolRecord) -> String {
    let outcome = match record.status {
        Status::Ok => match record.tool.as_str() {
            "sql_query" => format!(
                "{} rows",
                record.output["rows"].as_array().map_or(0, Vec::len)
            ),
            "doc_search" => {
                let ids: Vec<&str> = record.output["hits"]
                    .as_array()
                    .map(|hits| hits.iter().filter_map(|h| h["id"].as_str()).collect())
                    .unwrap_or_default();
                format!("docs {}", ids.join(", "))
            }
            "calculator" => format!("= {}", record.output),
            "datetime" => record.output["local_time"]
                .as_str()
                .unwrap_or("a time")
                .to_owned(),
            _ => "a result".to_owned(),
        },
        Status::Empty => "nothing found".to_owned(),
        Status::Error => {
            let kind = record
                .error
                .as_ref()
                .and_then(|e| serde_json::to_value(e.kind).ok())
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_else(|| "error".to_owned());
            format!("failed ({kind})")
        }
    };
    let what = match record.tool.as_str() {
        "sql_query" => {
            let sql = record.args["sql"].as_str().unwrap_or("");
            let params = record.args["params"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let series = series_of_sql(sql);
            if series.is_empty() {
                "sql_query".to_owned()
            } else {
                format!(
                    "sql_query {} @ {}",
                    series.join(","),
                    period_of(sql, &params)
                )
            }
        }
        "doc_search" => format!(
            "doc_search \u{201c}{}\u{201d}",
            clip(record.args["query"].as_str().unwrap_or(""), 60)
        ),
        "calculator" => format!(
            "calculator {}",
            clip(record.args["expression"].as_str().unwrap_or(""), 60)
        ),
        "datetime" => format!(
            "datetime {}",
            record.args["timezone"].as_str().unwrap_or("UTC")
        ),
        other => other.to_owned(),
    };
    format!("{what} -> {outcome}")
}

/// The summary line of an answered turn.
pub fn turn_line(
    turn: u32,
    lang: Lang,
    question: &str,
    records: &[&ToolRecord],
    answer: &str,
) -> String {
    let mut parts = vec![format!("asked \u{ab}{}\u{bb}", clip(question, 120))];
    // The last record per call describes it; earlier rounds' failures show what was tried.
    parts.extend(records.iter().map(|r| describe_call(r)));
    parts.push(format!("answered \u{ab}{}\u{bb}", first_sentence(answer)));
    format!("Turn {turn} ({lang}): {}", parts.join("; "))
}

/// The summary line of a refused turn (its text is not kept).
pub fn refused_line(turn: u32, check: &SafetyCheck) -> String {
    let category = serde_json::to_value(check.category)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let rules: Vec<&str> = check.findings.iter().map(|f| f.rule.as_str()).collect();
    format!(
        "Turn {turn}: refused ({category}: {}); the message was withheld",
        rules.join(", ")
    )
}

/// `summary` with `line` added, the oldest lines folded when it grows past `max_chars`.
pub fn add_line(summary: &str, line: String, max_chars: usize) -> String {
    let mut lines: Vec<String> = summary
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    lines.push(line);
    let total = |lines: &[String]| lines.iter().map(|l| l.chars().count() + 1).sum::<usize>();
    while total(&lines) > max_chars && lines.len() > 2 {
        // Fold the two oldest lines (the first may already be a fold).
        let second = lines.remove(1);
        let first = lines.remove(0);
        lines.insert(0, fold(&first, &second));
    }
    lines.join("\n")
}

/// One "Earlier" line for two older lines: their turns and what they looked up.
fn fold(first: &str, second: &str) -> String {
    let turns: Vec<u32> = [first, second]
        .iter()
        .flat_map(|l| turn_numbers(l))
        .collect();
    let (from, to) = (
        turns.iter().copied().min().unwrap_or(0),
        turns.iter().copied().max().unwrap_or(0),
    );
    let mut topics: Vec<String> = Vec::new();
    for line in [first, second] {
        let body = line.split_once(": ").map_or(line, |(_, rest)| rest);
        for part in body.split("; ") {
            let part = part.strip_prefix("looked up ").unwrap_or(part);
            let topic = part.split(" -> ").next().unwrap_or("").trim();
            let useful = topic.starts_with("sql_query ")
                || topic.starts_with("doc_search ")
                || topic.starts_with("refused");
            if useful && !topics.iter().any(|t| t == topic) {
                topics.push(topic.to_owned());
            }
        }
    }
    let topics = if topics.is_empty() {
        "conversation".to_owned()
    } else {
        topics.join("; ")
    };
    format!("Earlier (turns {from}–{to}): looked up {topics}")
}

/// The turn numbers a line covers (`Turn 3` -> [3]; `Earlier (turns 1–4)` -> [1, 4]).
fn turn_numbers(line: &str) -> Vec<u32> {
    let head = line.split(':').next().unwrap_or("");
    head.split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect()
}

/// Removals for the messages that do not fit `budget` tokens: the latest turn always stays
/// (from its human message on), and the newest earlier messages that fit beside it, starting
/// on a human message so a window never opens on an orphaned tool result; nothing is removed
/// while the whole conversation fits.
pub fn trim_removals(messages: &[Message], budget: usize) -> Vec<Message> {
    if count_tokens_approximately(messages) <= budget {
        return Vec::new();
    }
    let start = messages
        .iter()
        .rposition(|m| m.kind() == "human")
        .unwrap_or(0);
    let left = budget.saturating_sub(count_tokens_approximately(&messages[start..]));
    let kept = TrimMessages::last(left)
        .start_on(["human"])
        .trim(&messages[..start]);
    let kept_ids: Vec<&str> = kept.iter().filter_map(Message::id).collect();
    messages[..start]
        .iter()
        .filter_map(Message::id)
        .filter(|id| !kept_ids.contains(id))
        .map(Message::remove)
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::orchestrator::{FailureKind, ToolFailure};

    fn sql(sql: &str, params: serde_json::Value, rows: usize) -> ToolRecord {
        ToolRecord {
            tool: "sql_query".into(),
            args: json!({"sql": sql, "params": params}),
            status: if rows == 0 { Status::Empty } else { Status::Ok },
            output: json!({"rows": vec![json!([1]); rows]}),
            ..ToolRecord::default()
        }
    }

    #[test]
    fn a_turn_line_names_series_periods_and_the_answer() {
        let r = sql(
            "SELECT year, quarter, realgdp FROM macrodata WHERE year BETWEEN ?1 AND ?2",
            json!([2008, 2008]),
            4,
        );
        let line = turn_line(
            2,
            Lang::Es,
            "¿Cuál fue el PIB en 2008?",
            &[&r],
            "En 2008 el PIB real fue de 13.312,2 miles de millones. Detalle: …",
        );
        assert_eq!(
            line,
            "Turn 2 (es): asked «¿Cuál fue el PIB en 2008?»; sql_query realgdp @ 2008 -> 4 rows; answered «En 2008 el PIB real fue de 13.312,2 miles de millones.»"
        );
        assert_eq!(period_of_params(&[json!(2008), json!(3)]), "2008Q3");
        assert_eq!(period_of_params(&[json!(2005), json!(2000)]), "2000–2005");
        assert_eq!(period_of_params(&[]), "all");
        assert_eq!(
            series_of_sql("SELECT avg(unemp) AS avg_unemp, max(infl) FROM macrodata"),
            ["unemp", "infl"]
        );
    }

    #[test]
    fn failures_and_searches_are_described() {
        let search = ToolRecord {
            tool: "doc_search".into(),
            args: json!({"query": "joblessness"}),
            status: Status::Empty,
            ..ToolRecord::default()
        };
        assert_eq!(
            describe_call(&search),
            "doc_search “joblessness” -> nothing found"
        );
        let failed = ToolRecord {
            tool: "sql_query".into(),
            args: json!({"sql": "SELECT count(*) FROM macrodata a, macrodata b"}),
            status: Status::Error,
            error: Some(ToolFailure {
                kind: FailureKind::Timeout,
                message: "stopped".into(),
            }),
            ..ToolRecord::default()
        };
        assert_eq!(describe_call(&failed), "sql_query -> failed (timeout)");
    }

    #[test]
    fn old_lines_fold_and_keep_their_topics() {
        let mut summary = String::new();
        for turn in 1..=6 {
            let r = sql(
                "SELECT year, unemp FROM macrodata WHERE year = ?1",
                json!([2000 + turn]),
                4,
            );
            summary = add_line(
                &summary,
                turn_line(
                    turn as u32,
                    Lang::En,
                    &"a long question ".repeat(5),
                    &[&r],
                    "An answer.",
                ),
                500,
            );
        }
        assert!(summary.chars().count() <= 500, "{summary}");
        let first = summary.lines().next().unwrap();
        assert!(first.starts_with("Earlier (turns 1–"), "{summary}");
        assert!(first.contains("sql_query unemp @ 2001"), "{summary}");
        assert!(summary.lines().last().unwrap().starts_with("Turn 6 (en)"));
    }

    #[test]
    fn trimming_removes_the_oldest_turns_only_past_the_budget() {
        let messages: Vec<Message> = (0..6)
            .flat_map(|i| {
                [
                    Message::human(format!("question {i} {}", "x".repeat(40)))
                        .with_id(format!("h{i}")),
                    Message::ai(format!("answer {i} {}", "y".repeat(40))).with_id(format!("a{i}")),
                ]
            })
            .collect();
        let all = count_tokens_approximately(&messages);
        assert!(trim_removals(&messages, all).is_empty());
        let removals = trim_removals(&messages, all / 2);
        let removed: Vec<&str> = removals.iter().filter_map(Message::id).collect();
        assert_eq!(removed, ["h0", "a0", "h1", "a1", "h2", "a2"]);
        // A latest turn bigger than the budget stays whole; everything before it goes.
        let mut big = messages.clone();
        big.push(Message::human("last").with_id("h9"));
        big.push(Message::tool("c", "z".repeat(4000)).with_id("t9"));
        let removed: Vec<String> = trim_removals(&big, 100)
            .iter()
            .filter_map(Message::id)
            .map(str::to_owned)
            .collect();
        assert_eq!(removed.len(), 12);
        assert!(!removed.contains(&"h9".to_owned()) && !removed.contains(&"t9".to_owned()));
    }

    #[test]
    fn first_sentences() {
        assert_eq!(
            first_sentence("GDP was 13.3 trillion. More."),
            "GDP was 13.3 trillion."
        );
        assert_eq!(first_sentence("\nHola! Qué tal"), "Hola!");
        assert_eq!(first_sentence("no stop"), "no stop");
        assert_eq!(
            first_sentence(
                "Реальный ВВП, III кв. 2009: 12 990,3 млрд долл. в ценах 2005 г. Далее."
            ),
            "Реальный ВВП, III кв. 2009: 12 990,3 млрд долл. в ценах 2005 г."
        );
        assert_eq!(first_sentence("Rate: 4.9; 5.4. Next"), "Rate: 4.9; 5.4.");
        assert_eq!(
            period_of("SELECT gdp FROM t WHERE year = 2008", &[]),
            "2008"
        );
        assert_eq!(
            period_of(
                "SELECT realgdp FROM macrodata ORDER BY year DESC, quarter DESC LIMIT 1",
                &[]
            ),
            "latest"
        );
    }
}
