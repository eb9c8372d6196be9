//! The offline planner: which tools a message needs, and what to try when a call came back
//! empty or failed.
//!
//! First plan, from the last human message (every intent found becomes a call; independent
//! calls go out together):
//!
//! - a SQL statement the user wrote -> `sql_query` with it as written (nothing else: the user
//!   asked for that statement);
//! - arithmetic -> `calculator`;
//! - the time or date -> `datetime` per place named, else in the user's time zone;
//! - numbers about a series (a period, a highest/lowest/average/change, or just the series)
//!   -> `sql_query` built by [`sql::build`];
//! - an explanation, a definition or a topic only the documents cover (recessions, sources)
//!   -> `doc_search` with the message's content words;
//! - a follow-up ("and in 2009?", "¿y el paro?") -> the series or the period of the previous
//!   query, read from the conversation summary;
//! - anything else -> no tool (a greeting, thanks, a question about the conversation).
//!
//! Retry, for each call of the latest round that failed or came back empty (a call that
//! already failed this turn is never planned again, except after a time-out):
//!
//! - no documents -> the same search in the words the documents use (a thesaurus:
//!   joblessness -> unemployment rate, slump -> recession), else without the words that carry
//!   no topic ("happened", "pasó");
//! - no rows for a period the data does not cover -> the nearest quarter it has;
//! - `no such column: X` -> the column X most likely meant; `no such table` -> `macrodata`;
//!   a query it cannot repair -> the documents instead;
//! - a time-out -> the same call again;
//! - a forbidden tool -> another tool that can answer (`doc_search` for data questions);
//! - bad arguments or an unknown tool -> the first plan's call for that tool;
//! - a result the verifier judged not to answer the question (the prompt's
//!   [`REPLAN_BLOCK`](super::super::relevance::REPLAN_BLOCK) names the call: another series
//!   or period) -> the query the question asks for, built anew; for another tool, the first
//!   plan's call for it. The call judged is not made again.
//!
//! Permissions are not the planner's business: the router enforces them, and the planner
//! learns from a rejection. When nothing is left to try, the reply has no tool calls and the
//! flow goes to the generator.

use std::collections::BTreeSet;

use agent_llm::{CallOptions, Message, ToolCall};
use serde_json::{Value, json};

use super::super::lexicon::{
    Aggregate, Question, SERIES, When, has_any, key_terms, match_at, scan,
};
use super::super::relevance;
use super::super::{NextStep, PlannedCall, PlannerDecision};
use super::sql::{self, Query};
use super::{Attempt, Outcome, calls_reply, current_turn, profile_line};
use crate::lang::words;
use crate::offline::{RuleReply, system_block};
use crate::tool_router::{arithmetic, places};

/// The summary block the planner's prompt carries.
pub const SUMMARY_BLOCK: &str = "Conversation summary:";

/// Phrases that ask for the time or the date.
const TIME_PHRASES: &[&str] = &[
    "what time",
    "time is it",
    "current time",
    "local time",
    "what's the time",
    "what day",
    "today's date",
    "date today",
    "que hora",
    "hora es",
    "hora local",
    "que dia es",
    "fecha de hoy",
    "который час",
    "сколько времени",
    "какое время",
    "какой сегодня день",
    "какое сегодня число",
];

/// Phrases that ask for the time only when a known place follows ("time in Tokyo", not
/// "unemployment over time in the 1970s").
const TIME_IN_PLACE: &[&str] = &["time in", "hora en", "время в"];

/// Questions about where the data comes from (the documents' word for it is "source").
const PROVENANCE: &[&str] = &[
    "come from",
    "comes from",
    "who compiled",
    "who made",
    "provenance",
    "origin of the data",
    "de donde",
    "procedencia",
    "quien elaboro",
    "origen de los datos",
    "откуда",
    "кто составил",
    "происхождение",
];

/// Words that start a follow-up.
const FOLLOW_UP: &[&str] = &[
    "and",
    "what about",
    "how about",
    "same for",
    "also",
    "y",
    "e",
    "tambien",
    "и",
    "а",
    "а что",
    "а как",
];

/// Words of a search that carry no topic and can go when nothing is found.
const GENERIC: &[&str] = &[
    "come",
    "comes",
    "came",
    "vienen",
    "viene",
    "proceden",
    "берутся",
    "взяты",
    "happened",
    "happen",
    "happens",
    "going",
    "went",
    "things",
    "thing",
    "stuff",
    "like",
    "info",
    "information",
    "details",
    "anything",
    "something",
    "say",
    "says",
    "paso",
    "ocurrio",
    "sucedio",
    "cosas",
    "algo",
    "informacion",
    "произошло",
    "случилось",
    "было",
    "что-то",
    "информация",
    "информацию",
];

/// Words people use -> the words the documents use.
const THESAURUS: &[(&str, &str)] = &[
    ("joblessness", "unemployment rate"),
    ("jobless", "unemployment rate"),
    ("joblessness rate", "unemployment rate"),
    ("layoffs", "unemployment rate"),
    ("unemployed", "unemployment rate"),
    ("jobs", "unemployment labor force"),
    ("employment", "unemployment labor force"),
    ("slump", "recession"),
    ("downturn", "recession"),
    ("depression", "recession"),
    ("contraction", "recession"),
    ("crash", "recession financial crisis"),
    ("bust", "recession"),
    ("crisis", "recession financial crisis"),
    ("cost of living", "consumer price index"),
    ("prices", "consumer price index inflation"),
    ("price", "consumer price index inflation"),
    ("wages", "disposable income"),
    ("wage", "disposable income"),
    ("salaries", "disposable income"),
    ("earnings", "disposable income"),
    ("pay", "disposable income"),
    ("production", "gross domestic product"),
    ("economy", "gross domestic product"),
    ("output", "gross domestic product"),
    ("cash", "money stock M1"),
    ("currency", "money stock M1"),
    ("money", "money stock M1"),
    ("yield", "treasury bill interest rate"),
    ("borrowing", "interest rate"),
    ("fed", "Federal Reserve interest rate"),
    ("central bank", "Federal Reserve interest rate"),
    ("inhabitants", "population"),
    ("people", "population"),
    ("deficit", "federal government spending"),
    ("stimulus", "federal government spending"),
    ("spending", "consumption government spending"),
    ("paro", "desempleo"),
    ("sueldos", "renta disponible"),
    ("salarios", "renta disponible"),
    ("carestia", "inflacion precios"),
    ("зарплаты", "доход"),
    ("зарплата", "доход"),
    ("дороговизна", "инфляция цены"),
    ("безработные", "безработица"),
];

fn call_args_key(name: &str, args: &Value) -> String {
    format!("{name} {args}")
}

/// What the planner knows besides the question.
struct Context<'a> {
    /// The tools bound to the call.
    offered: BTreeSet<String>,
    /// The user's time zone, from the profile line.
    timezone: Option<&'a str>,
    /// The conversation summary.
    summary: Option<&'a str>,
}

impl Context<'_> {
    fn offers(&self, tool: &str) -> bool {
        self.offered.contains(tool)
    }
}

/// The tools a call offers: the ones bound to it, or, for the JSON planner, the names its
/// response schema allows.
fn offered(options: &CallOptions) -> BTreeSet<String> {
    let bound: BTreeSet<String> = options.tools.iter().map(|t| t.name.clone()).collect();
    if !bound.is_empty() {
        return bound;
    }
    options
        .response_format
        .as_ref()
        .and_then(|f| f.schema["properties"]["calls"]["items"]["anyOf"].as_array())
        .map(|shapes| {
            shapes
                .iter()
                .filter_map(|s| s["properties"]["tool"]["enum"][0].as_str())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The JSON planner's decision: the same rules as [`reply`], as a [`PlannerDecision`].
pub fn decision(messages: &[Message], options: &CallOptions) -> PlannerDecision {
    match reply(messages, options) {
        RuleReply::ToolCalls { calls, .. } => PlannerDecision {
            next_step: NextStep::ToolUse,
            calls: calls
                .into_iter()
                .map(|c| PlannedCall {
                    tool: c.name,
                    args: c.args,
                })
                .collect(),
        },
        _ => PlannerDecision {
            next_step: NextStep::Generate,
            calls: Vec::new(),
        },
    }
}

/// The planner's reply to `messages` (see the module docs).
pub fn reply(messages: &[Message], options: &CallOptions) -> RuleReply {
    let context = Context {
        offered: offered(options),
        timezone: profile_line(messages, "Time zone"),
        summary: system_block(messages, SUMMARY_BLOCK),
    };
    let (question, attempts) = current_turn(messages);
    let planned = if attempts.is_empty() {
        first_plan(question, &context)
    } else {
        let off = relevance::calls_to_replace(messages);
        replan(question, &attempts, &off, &context)
    };
    let seen = messages.iter().map(|m| m.tool_calls().len()).sum::<usize>();
    let calls = planned
        .into_iter()
        .enumerate()
        .map(|(i, (name, args))| ToolCall::new(format!("call_{}", seen + i + 1), name, args))
        .collect();
    let note = if attempts.is_empty() {
        "No tool is needed for this message."
    } else {
        "Nothing else to try; answering with what was found."
    };
    calls_reply(calls, note)
}

/// The first plan for `question`.
fn first_plan(question: &str, context: &Context<'_>) -> Vec<(String, Value)> {
    // Each call with the position (in words) of what asked for it: answers follow the
    // order of the question.
    let mut calls: Vec<(usize, String, Value)> = Vec::new();
    let push = |calls: &mut Vec<(usize, String, Value)>, at: usize, name: &str, args: Value| {
        if context.offers(name) && !calls.iter().any(|(_, n, a)| n == name && *a == args) {
            calls.push((at, name.to_owned(), args));
        }
    };
    if let Some(statement) = sql::written_statement(question) {
        push(
            &mut calls,
            0,
            "sql_query",
            json!({"sql": statement, "params": []}),
        );
        return calls.into_iter().map(|(_, n, a)| (n, a)).collect();
    }
    let words = words(question);
    if let Some(expression) = expression(question) {
        let first_number: String = expression
            .chars()
            .skip_while(|c| !c.is_ascii_digit())
            .take_while(char::is_ascii_digit)
            .collect();
        let at = words
            .iter()
            .position(|w| w.starts_with(&first_number))
            .unwrap_or(0);
        push(
            &mut calls,
            at,
            "calculator",
            json!({ "expression": expression }),
        );
    }
    let found = places::extract(question);
    let time_at = first_at(&words, TIME_PHRASES)
        .or_else(|| first_at(&words, TIME_IN_PLACE).filter(|_| !found.known.is_empty()));
    if let Some(at) = time_at {
        if found.known.is_empty() {
            let zone = context.timezone.unwrap_or("UTC");
            push(&mut calls, at, "datetime", json!({ "timezone": zone }));
        }
        for place in found.known {
            push(
                &mut calls,
                at,
                "datetime",
                json!({ "timezone": place.zone }),
            );
        }
    }
    let analysis = resolve_follow_up(question, Question::parse(question), context.summary);
    let subject_at = scan(&words, SERIES).first().map_or(0, |hit| hit.at);
    if analysis.wants_data() {
        for query in sql::build(&analysis.series, analysis.when, analysis.aggregate) {
            push(&mut calls, subject_at, "sql_query", query.args());
        }
    } else if has_any(&words, PROVENANCE) {
        let query = format!("source {}", doc_query(question));
        push(
            &mut calls,
            0,
            "doc_search",
            json!({ "query": query.trim() }),
        );
    } else if analysis.wants_docs() {
        let query = doc_query(question);
        if !query.is_empty() {
            push(
                &mut calls,
                subject_at,
                "doc_search",
                json!({ "query": query }),
            );
        }
    } else if calls.is_empty() && asks_about_a_year(&words) {
        // "What happened in 1982?": the documents know the years' events.
        let query = doc_query(question);
        push(&mut calls, 0, "doc_search", json!({ "query": query }));
    }
    calls.sort_by_key(|(at, _, _)| *at);
    calls.into_iter().map(|(_, n, a)| (n, a)).collect()
}

/// Where the first of `phrases` occurs in `words`.
fn first_at(words: &[String], phrases: &[&str]) -> Option<usize> {
    (0..words.len()).find(|&i| phrases.iter().any(|p| match_at(words, i, p) > 0))
}

/// Arithmetic in the question, unless it is only years joined by dashes (`2000-2005`).
fn expression(question: &str) -> Option<String> {
    let expression = arithmetic::expression(question)?;
    let numbers: Vec<i64> = expression
        .split(|c: char| !c.is_ascii_digit())
        .filter(|n| !n.is_empty())
        .filter_map(|n| n.parse().ok())
        .collect();
    let only_years = numbers.iter().all(|n| (1800..=2100).contains(n))
        && expression
            .chars()
            .all(|c| c.is_ascii_digit() || c == '-' || c == ' ');
    (!only_years).then_some(expression)
}

fn asks_about_a_year(words: &[String]) -> bool {
    words
        .iter()
        .any(|w| w.len() == 4 && w.parse::<i64>().is_ok_and(|y| (1900..=2100).contains(&y)))
}

/// The words of a document search: the content words and the years, as asked (words that
/// carry no topic, such as "happened", left out).
fn doc_query(question: &str) -> String {
    let keep: Vec<String> = key_terms(question);
    let mut out: Vec<String> = Vec::new();
    for word in words(question) {
        let is_year = word.len() == 4 && word.chars().all(|c| c.is_ascii_digit());
        let generic = GENERIC.contains(&word.as_str());
        if (is_year || keep.contains(&word)) && !generic && !out.contains(&word) {
            out.push(word);
        }
    }
    out.join(" ")
}

/// The series and period of the latest query in the summary.
fn previous_query(summary: &str) -> Option<(Vec<&'static str>, When)> {
    let part = summary.rsplit("sql_query ").find(|p| p.contains(" @ "))?;
    let (cols, rest) = part.split_once(" @ ")?;
    let series: Vec<&'static str> = cols
        .split(',')
        .filter_map(|c| {
            crate::dataset::COLUMNS
                .iter()
                .find(|col| col.name == c.trim())
                .map(|col| col.name)
        })
        .collect();
    let period = rest.split_whitespace().next().unwrap_or("");
    let when = if period == "latest" {
        When::Latest
    } else if let Some((y, q)) = period.split_once('Q') {
        match (y.parse(), q.parse()) {
            (Ok(y), Ok(q)) => When::Quarter(y, q),
            _ => When::Unspecified,
        }
    } else if let Some((a, b)) = period.split_once('–') {
        match (a.parse(), b.parse()) {
            (Ok(a), Ok(b)) => When::Years(a, b),
            _ => When::Unspecified,
        }
    } else {
        period
            .parse()
            .map(|y| When::Years(y, y))
            .unwrap_or(When::Unspecified)
    };
    (!series.is_empty()).then_some((series, when))
}

/// Fills what a follow-up leaves out from the previous query in `summary` (the conversation
/// summary block).
pub(crate) fn resolve_follow_up(
    question: &str,
    mut analysis: Question,
    summary: Option<&str>,
) -> Question {
    let Some((series, when)) = summary.and_then(previous_query) else {
        return analysis;
    };
    let words = words(question);
    let short = words.len() <= 7;
    let cue = FOLLOW_UP.iter().any(|cue| {
        let n = cue.split(' ').count();
        words.len() >= n && words[..n].join(" ") == *cue
    });
    if analysis.series.is_empty()
        && !analysis.explain
        && !analysis.doc_topic
        && short
        && (analysis.when != When::Unspecified || analysis.aggregate != Aggregate::Values)
    {
        // "And in 2009?", "¿Y el máximo?"
        analysis.series = series;
    } else if !analysis.series.is_empty()
        && !analysis.explain
        && analysis.when == When::Unspecified
        && analysis.aggregate == Aggregate::Values
        && short
        && cue
    {
        // "¿Y el paro?": the new series over the same period.
        analysis.when = when;
    }
    analysis
}

/// The calls a retry plans, with the rules that keep it from repeating itself.
struct Retry<'a> {
    calls: Vec<(String, Value)>,
    context: &'a Context<'a>,
    /// `tool args` of every call of the turn that failed or came back empty.
    failed: BTreeSet<String>,
    /// Tools the router refused this turn.
    forbidden: BTreeSet<String>,
    /// Searches already made this turn (folded words).
    tried_queries: Vec<String>,
}

impl Retry<'_> {
    /// Plans `name(args)` unless it is not offered, forbidden, already failed (`again`
    /// allows a repeat: a time-out), or already planned.
    fn push(&mut self, name: &str, args: Value, again: bool) {
        let key = call_args_key(name, &args);
        let allowed = self.context.offers(name) && !self.forbidden.contains(name);
        if allowed
            && (again || !self.failed.contains(&key))
            && !self.calls.iter().any(|(n, a)| n == name && *a == args)
        {
            self.calls.push((name.to_owned(), args));
        }
    }

    /// The documents, for the question's own words, unless that search was made.
    fn docs_instead(&mut self, question: &str) {
        let query = doc_query(question);
        if !query.is_empty() && !self.tried_queries.contains(&words(&query).join(" ")) {
            self.push("doc_search", json!({ "query": query }), false);
        }
    }
}

/// What to try after the latest round (see the module docs).
fn replan(
    question: &str,
    attempts: &[Attempt],
    off: &[String],
    context: &Context<'_>,
) -> Vec<(String, Value)> {
    let last_round = attempts.iter().map(|a| a.round).max().unwrap_or(0);
    let mut retry = Retry {
        calls: Vec::new(),
        context,
        failed: attempts
            .iter()
            .filter(|a| !matches!(a.outcome, Outcome::Ok(_)) || off.contains(&a.call.id))
            .map(|a| call_args_key(&a.call.name, &a.call.args))
            .collect(),
        forbidden: attempts
            .iter()
            .filter(|a| matches!(&a.outcome, Outcome::Error { kind, .. } if kind == "forbidden"))
            .map(|a| a.call.name.clone())
            .collect(),
        tried_queries: attempts
            .iter()
            .filter(|a| a.call.name == "doc_search")
            .filter_map(|a| a.call.args["query"].as_str())
            .map(|q| words(q).join(" "))
            .collect(),
    };
    let analysis = resolve_follow_up(question, Question::parse(question), context.summary);
    for attempt in attempts.iter().filter(|a| a.round == last_round) {
        let name = attempt.call.name.as_str();
        let args = &attempt.call.args;
        match (&attempt.outcome, name) {
            (Outcome::Ok(_), "sql_query") if off.contains(&attempt.call.id) => {
                for query in sql::build(&analysis.series, analysis.when, analysis.aggregate) {
                    retry.push("sql_query", query.args(), false);
                }
            }
            (Outcome::Ok(_), _) if off.contains(&attempt.call.id) => {
                for (tool, fresh) in first_plan(question, context) {
                    if tool == name {
                        retry.push(&tool, fresh, false);
                    }
                }
            }
            (Outcome::Ok(_), _) => {}
            (Outcome::Empty, "doc_search") => {
                let query = args["query"].as_str().unwrap_or("");
                if let Some(other) = other_words(query, &retry.tried_queries) {
                    retry.push("doc_search", json!({ "query": other }), false);
                }
            }
            (Outcome::Empty, "sql_query") => {
                if let Some(query) = sql::nearest(&analysis.series, analysis.when) {
                    retry.push("sql_query", query.args(), false);
                }
            }
            (Outcome::Error { kind, message }, "sql_query") => match kind.as_str() {
                "timeout" => retry.push(name, args.clone(), true),
                "forbidden" => retry.docs_instead(question),
                _ => match repair_sql(args, message) {
                    Some(query) => retry.push("sql_query", query.args(), false),
                    None if kind == "invalid_args" && analysis.wants_data() => {
                        for query in sql::build(&analysis.series, analysis.when, analysis.aggregate)
                        {
                            retry.push("sql_query", query.args(), false);
                        }
                        if retry.calls.is_empty() {
                            retry.docs_instead(question);
                        }
                    }
                    None => retry.docs_instead(question),
                },
            },
            (Outcome::Error { kind, .. }, "doc_search") if kind == "forbidden" => {
                for query in sql::build(&analysis.series, analysis.when, analysis.aggregate) {
                    retry.push("sql_query", query.args(), false);
                }
            }
            (Outcome::Error { kind, .. }, _) if kind == "timeout" => {
                retry.push(name, args.clone(), true);
            }
            (Outcome::Error { kind, .. }, _)
                if kind == "invalid_args" || kind == "unknown_tool" =>
            {
                // What the first plan would have called instead of the broken call.
                for (tool, fresh) in first_plan(question, context) {
                    if kind == "unknown_tool" || tool == name {
                        retry.push(&tool, fresh, false);
                    }
                }
            }
            _ => {}
        }
    }
    retry.calls
}

/// A query's words replaced by the documents' words, or its generic words dropped; `None`
/// when every variant was tried.
fn other_words(query: &str, tried: &[String]) -> Option<String> {
    let words = words(query);
    let mut replaced: Vec<String> = Vec::new();
    let mut changed = false;
    let mut i = 0;
    while i < words.len() {
        let two = words.get(i + 1).map(|n| format!("{} {n}", words[i]));
        if let Some((_, to)) = two
            .as_ref()
            .and_then(|t| THESAURUS.iter().find(|(from, _)| from == t))
        {
            replaced.push((*to).to_owned());
            changed = true;
            i += 2;
            continue;
        }
        match THESAURUS.iter().find(|(from, _)| *from == words[i]) {
            Some((_, to)) => {
                replaced.push((*to).to_owned());
                changed = true;
            }
            None => replaced.push(words[i].clone()),
        }
        i += 1;
    }
    let untried = |candidate: &str| {
        let folded = crate::lang::words(candidate).join(" ");
        (!folded.is_empty() && !tried.contains(&folded)).then(|| candidate.to_owned())
    };
    if changed && let Some(found) = untried(&replaced.join(" ")) {
        return Some(found);
    }
    // Only the subject: the words that name a series or a documented topic.
    let subject: Vec<&str> = scan(&words, SERIES)
        .iter()
        .flat_map(|hit| words[hit.at..hit.at + hit.len].iter().map(String::as_str))
        .collect();
    if !subject.is_empty()
        && subject.len() < words.len()
        && let Some(found) = untried(&subject.join(" "))
    {
        return Some(found);
    }
    let specific: Vec<&String> = words
        .iter()
        .filter(|w| !GENERIC.contains(&w.as_str()))
        .collect();
    if specific.len() < words.len() && !specific.is_empty() {
        let narrowed = specific
            .iter()
            .map(|w| w.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        if let Some(found) = untried(&narrowed) {
            return Some(found);
        }
    }
    None
}

/// The query with a wrong column or table replaced, when the error names one it can fix.
fn repair_sql(args: &Value, message: &str) -> Option<Query> {
    let statement = args["sql"].as_str()?;
    let params = args["params"].as_array().cloned().unwrap_or_default();
    let named = |marker: &str| -> Option<String> {
        let rest = message.split(marker).nth(1)?;
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
            .collect();
        let name = name.rsplit('.').next().unwrap_or(&name).to_owned();
        (!name.is_empty()).then_some(name)
    };
    if let Some(column) = named("no such column: ") {
        let to = sql::column_for(&column)?;
        let fixed = sql::replace_identifier(statement, &column, to);
        return (fixed != statement).then_some(Query { sql: fixed, params });
    }
    if let Some(table) = named("no such table: ") {
        let fixed = sql::replace_identifier(statement, &table, crate::dataset::TABLE);
        return (fixed != statement).then_some(Query { sql: fixed, params });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_llm::ToolSpec;

    fn options() -> CallOptions {
        CallOptions::new().task("planner").tools(
            ["sql_query", "doc_search", "calculator", "datetime"]
                .map(|name| ToolSpec::new(name, "", json!({"type": "object"}))),
        )
    }

    fn plan(messages: &[Message]) -> Vec<(String, Value)> {
        match reply(messages, &options()) {
            RuleReply::ToolCalls { calls, .. } => {
                calls.into_iter().map(|c| (c.name, c.args)).collect()
            }
            _ => Vec::new(),
        }
    }

    fn first(question: &str) -> Vec<(String, Value)> {
        plan(&[Message::system("prompt"), Message::human(question)])
    }

    fn sql_of(calls: &[(String, Value)]) -> Vec<(String, Value)> {
        calls
            .iter()
            .filter(|(n, _)| n == "sql_query")
            .map(|(_, a)| (a["sql"].as_str().unwrap().to_owned(), a["params"].clone()))
            .collect()
    }

    #[test]
    fn the_json_planner_decides_the_same_from_its_schema() {
        let registry = crate::orchestrator::tools::registry(
            std::sync::Arc::new(agent_core::ManualClock::at_unix_seconds(0)),
            std::sync::Arc::new(crate::orchestrator::docs::Corpus::bundled()),
            &crate::orchestrator::tools::ToolSettings::default(),
        )
        .unwrap();
        let options =
            CallOptions::new()
                .task("PlannerDecision")
                .response_format(agent_llm::ResponseFormat {
                    name: "PlannerDecision".into(),
                    description: None,
                    schema: crate::orchestrator::decision_schema(&registry),
                    strict: false,
                });
        let asked = [Message::system("prompt"), Message::human("GDP in 2008Q3?")];
        let d = decision(&asked, &options);
        assert_eq!(d.next_step, NextStep::ToolUse);
        assert_eq!(d.calls[0].tool, "sql_query");
        assert_eq!(d.calls[0].args["params"], json!([2008, 3]));
        let hello = [Message::system("prompt"), Message::human("hi")];
        assert_eq!(decision(&hello, &options).next_step, NextStep::Generate);
        // Nothing offered, nothing planned.
        assert!(decision(&asked, &CallOptions::new()).calls.is_empty());
    }

    #[test]
    fn data_questions_in_three_languages() {
        for (question, column, params) in [
            ("What was US GDP in 2008?", "realgdp", json!([2008, 2008])),
            (
                "¿Cuál fue la tasa de paro en 1982?",
                "unemp",
                json!([1982, 1982]),
            ),
            (
                "Какой была инфляция в 1980 году?",
                "infl",
                json!([1980, 1980]),
            ),
            ("unemployment in 2008Q4", "unemp", json!([2008, 4])),
        ] {
            let calls = sql_of(&first(question));
            assert_eq!(calls.len(), 1, "{question}");
            assert!(calls[0].0.contains(column), "{question}: {}", calls[0].0);
            assert_eq!(calls[0].1, params, "{question}");
        }
        let calls = first("What was the highest unemployment and the highest inflation?");
        assert_eq!(sql_of(&calls).len(), 2);
        assert!(sql_of(&calls)[1].0.contains("ORDER BY infl DESC"));
    }

    #[test]
    fn definitions_go_to_the_documents_and_small_talk_to_no_tool() {
        assert_eq!(
            first("What is M1?"),
            [("doc_search".to_owned(), json!({"query": "m1"}))]
        );
        assert_eq!(
            first("¿Qué es el IPC?"),
            [("doc_search".to_owned(), json!({"query": "ipc"}))]
        );
        assert_eq!(
            first("What happened in 1982?"),
            [("doc_search".to_owned(), json!({"query": "1982"}))]
        );
        assert_eq!(
            first("Where does the data come from?"),
            [("doc_search".to_owned(), json!({"query": "source"}))]
        );
        assert!(first("Hello!").is_empty());
        assert!(first("Thanks a lot").is_empty());
    }

    #[test]
    fn arithmetic_times_and_written_sql() {
        assert_eq!(
            first("How much is 12*(3+4)?"),
            [(
                "calculator".to_owned(),
                json!({"expression": "12 * (3 + 4)"})
            )]
        );
        assert_eq!(
            first("What time is it in Tokyo?"),
            [("datetime".to_owned(), json!({"timezone": "Asia/Tokyo"}))]
        );
        let with_zone = plan(&[
            Message::system("prompt\nTime zone: Europe/Madrid"),
            Message::human("¿Qué hora es?"),
        ]);
        assert_eq!(
            with_zone,
            [("datetime".to_owned(), json!({"timezone": "Europe/Madrid"}))]
        );
        assert_eq!(
            first("Run DELETE FROM macrodata WHERE year < 1970"),
            [(
                "sql_query".to_owned(),
                json!({"sql": "DELETE FROM macrodata WHERE year < 1970", "params": []})
            )]
        );
        // A range of years is not a subtraction.
        assert!(
            first("GDP 2000-2005")
                .iter()
                .all(|(n, _)| n != "calculator")
        );
    }

    #[test]
    fn follow_ups_read_the_summary() {
        let summary = "Conversation summary:\nTurn 1 (en): asked «GDP in 2008?»; sql_query realgdp @ 2008 -> 4 rows; answered «…»";
        let calls = plan(&[
            Message::system("prompt"),
            Message::system(summary),
            Message::human("And in 2009?"),
        ]);
        assert_eq!(sql_of(&calls)[0].1, json!([2009, 2009]));
        assert!(sql_of(&calls)[0].0.contains("realgdp"));
        let calls = plan(&[
            Message::system("prompt"),
            Message::system(summary),
            Message::human("¿Y el paro?"),
        ]);
        assert!(sql_of(&calls)[0].0.contains("unemp"));
        assert_eq!(sql_of(&calls)[0].1, json!([2008, 2008]));
    }

    fn retry(question: &str, call: (&str, Value), result: Message) -> Vec<(String, Value)> {
        plan(&[
            Message::system("prompt"),
            Message::human(question),
            Message::ai_tool_calls([ToolCall::new("call_1", call.0, call.1)]),
            result,
        ])
    }

    #[test]
    fn empty_searches_try_the_documents_words() {
        let calls = retry(
            "What do the docs say about joblessness?",
            ("doc_search", json!({"query": "joblessness"})),
            Message::tool("call_1", r#"{"query":"joblessness","hits":[]}"#),
        );
        assert_eq!(
            calls,
            [(
                "doc_search".to_owned(),
                json!({"query": "unemployment rate"})
            )]
        );
        let calls = retry(
            "What happened in 1982?",
            ("doc_search", json!({"query": "happened 1982"})),
            Message::tool("call_1", r#"{"query":"happened 1982","hits":[]}"#),
        );
        assert_eq!(calls, [("doc_search".to_owned(), json!({"query": "1982"}))]);
        let calls = retry(
            "Hm, what is M1?",
            ("doc_search", json!({"query": "hm m1"})),
            Message::tool("call_1", r#"{"query":"hm m1","hits":[]}"#),
        );
        assert_eq!(calls, [("doc_search".to_owned(), json!({"query": "m1"}))]);
        let calls = retry(
            "What about xyzzy?",
            ("doc_search", json!({"query": "xyzzy"})),
            Message::tool("call_1", r#"{"query":"xyzzy","hits":[]}"#),
        );
        assert!(calls.is_empty());
    }

    #[test]
    fn empty_rows_outside_the_data_ask_for_the_nearest_quarter() {
        let calls = retry(
            "What was GDP in 2012?",
            (
                "sql_query",
                json!({"sql": "SELECT year, quarter, realgdp FROM macrodata WHERE year BETWEEN ?1 AND ?2 ORDER BY year, quarter", "params": [2012, 2012]}),
            ),
            Message::tool(
                "call_1",
                r#"{"columns":["year","quarter","realgdp"],"rows":[],"row_count":0,"truncated":false}"#,
            ),
        );
        assert_eq!(
            sql_of(&calls),
            [(
                "SELECT year, quarter, realgdp FROM macrodata ORDER BY year DESC, quarter DESC LIMIT 1".to_owned(),
                json!([])
            )]
        );
    }

    #[test]
    fn results_judged_off_are_replaced_by_the_query_asked_for() {
        let wrong = json!({
            "sql": "SELECT year, quarter, infl FROM macrodata WHERE year BETWEEN ?1 AND ?2 ORDER BY year, quarter",
            "params": [1982, 1982],
        });
        let conversation = |block: Option<&str>| {
            let mut messages = vec![
                Message::system("prompt"),
                Message::human("¿Cuál fue la tasa de paro en 1982?"),
                Message::ai_tool_calls([ToolCall::new("call_1", "sql_query", wrong.clone())]),
                Message::tool(
                    "call_1",
                    r#"{"columns":["year","quarter","infl"],"rows":[[1982,1,1.0]],"row_count":1,"truncated":false}"#,
                ),
            ];
            if let Some(block) = block {
                messages.push(Message::system(block));
            }
            plan(&messages)
        };
        // Without the verifier's word, a result is a result.
        assert!(conversation(None).is_empty());
        let block = relevance::replan_block(&[(
            "call_1",
            "`call_1` returned infl, but the question asks for unemp",
        )]);
        let calls = sql_of(&conversation(Some(&block)));
        assert_eq!(calls.len(), 1);
        assert!(calls[0].0.contains("unemp"), "{}", calls[0].0);
        assert_eq!(calls[0].1, json!([1982, 1982]));
    }

    #[test]
    fn failed_queries_are_repaired_or_replaced() {
        let calls = retry(
            "Run SELECT year, gdp FROM macrodata WHERE year = 2008",
            (
                "sql_query",
                json!({"sql": "SELECT year, gdp FROM macrodata WHERE year = 2008", "params": []}),
            ),
            Message::tool_error(
                "call_1",
                "Error (invalid_args): tool `sql_query` failed: the query failed: no such column: gdp",
            ),
        );
        assert_eq!(
            sql_of(&calls)[0].0,
            "SELECT year, realgdp FROM macrodata WHERE year = 2008"
        );
        let calls = retry(
            "What was unemployment in 1982?",
            ("sql_query", json!({"sql": "SELECT 1", "params": []})),
            Message::tool_error(
                "call_1",
                "Error (forbidden): user `guest` may not use `sql_query`",
            ),
        );
        assert_eq!(
            calls,
            [(
                "doc_search".to_owned(),
                json!({"query": "unemployment 1982"})
            )]
        );
        let slow = json!({"sql": "SELECT count(*) FROM macrodata a, macrodata b", "params": []});
        let calls = retry(
            "Run SELECT count(*) FROM macrodata a, macrodata b",
            ("sql_query", slow.clone()),
            Message::tool_error("call_1", "Error (timeout): the query was stopped"),
        );
        assert_eq!(calls, [("sql_query".to_owned(), slow)]);
        // A failure it cannot do anything about: no more calls.
        let calls = retry(
            "How much is 1/0?",
            ("calculator", json!({"expression": "1 / 0"})),
            Message::tool_error("call_1", "Error (invalid_input): division by zero"),
        );
        assert!(calls.is_empty());
    }
}
