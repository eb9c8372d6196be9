//! The offline generator: the answer from the tool results, in the user's language
//! (English, Spanish or Russian), with numbers formatted the way each language writes them.
//!
//! - Query results: one value ("Unemployment rate, 1982Q4: 10.7%"), a list of quarters or of
//!   annual averages, the highest or lowest value and when, an average over a span, a change
//!   between two points (percent for levels, percentage points for rates), or a plain table
//!   for a query the user wrote. A period the data does not cover is said so, with the
//!   nearest quarter it has.
//! - Document hits: the best passage with its document's title (two with `Detail: full`).
//! - Calculations and times as such.
//! - What was tried first when a re-plan succeeded (another search, a corrected query,
//!   another tool after a refusal of permission).
//! - `clarify`: a question to the user about what only they can change; `give_up` (and a
//!   planner that had nothing left to try): an honest list of what could not be found.
//! - No tools: a greeting by name, thanks, what was asked earlier (from the summary), or
//!   what the flow can do.

use agent_llm::Message;
use serde_json::Value;

use super::super::lexicon::{Aggregate, Question, When, has_any};
use super::super::memory::series_of_sql;
use super::planner::SUMMARY_BLOCK;
use super::profile_line;
use crate::dataset::COVERAGE;
use crate::lang::{self, Lang, words};
use crate::offline::{last_human, system_block};

/// The results block of the generator's prompt.
pub const RESULTS_BLOCK: &str = "Tool results:";
/// The verification block of the generator's prompt.
pub const VERIFICATION_BLOCK: &str = "Verification:";

/// One result as the generator's prompt lists it.
struct Result<'a> {
    tool: &'a str,
    args: &'a Value,
    round: u64,
    status: &'a str,
    output: &'a Value,
    error_kind: &'a str,
    error: &'a str,
}

fn results(value: &Value) -> Vec<Result<'_>> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|r| Result {
                    tool: r["tool"].as_str().unwrap_or(""),
                    args: &r["args"],
                    round: r["round"].as_u64().unwrap_or(0),
                    status: r["status"].as_str().unwrap_or("ok"),
                    output: &r["output"],
                    error_kind: r["error"]["kind"].as_str().unwrap_or(""),
                    error: r["error"]["message"].as_str().unwrap_or(""),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The generator's answer to `messages` (see the module docs).
pub fn reply(messages: &[Message]) -> String {
    let question = last_human(messages);
    let lang = profile_line(messages, "Answer language")
        .and_then(Lang::from_code)
        .unwrap_or_else(|| lang::detect(question));
    let name = profile_line(messages, "User")
        .map(|u| u.split(" (").next().unwrap_or(u).trim())
        .unwrap_or("");
    let role = profile_line(messages, "User")
        .and_then(|u| u.split("(role ").nth(1))
        .map(|r| r.trim_end_matches([')', '.']))
        .unwrap_or("");
    let full = profile_line(messages, "Detail") == Some("full");
    let results_value: Value = system_block(messages, RESULTS_BLOCK)
        .and_then(|json| serde_json::from_str(json).ok())
        .unwrap_or(Value::Null);
    let records = results(&results_value);
    let verification: Value = system_block(messages, VERIFICATION_BLOCK)
        .and_then(|json| serde_json::from_str(json).ok())
        .unwrap_or(Value::Null);
    let verdict = verification["verdict"].as_str().unwrap_or("none");
    let summary = system_block(messages, SUMMARY_BLOCK).unwrap_or("");
    if records.is_empty() {
        return direct(lang, question, name, summary);
    }
    let analysis = Question::parse(question);
    let mut lines: Vec<String> = Vec::new();
    let ok: Vec<&Result<'_>> = records.iter().filter(|r| r.status == "ok").collect();
    if let Some(note) = coverage_note(lang, &analysis, &ok) {
        lines.push(note);
    }
    for record in &ok {
        lines.push(render(lang, &analysis, record, full));
    }
    let last_round = records.iter().map(|r| r.round).max().unwrap_or(0);
    // What failed before a later round succeeded: say what was done instead.
    if !ok.is_empty() {
        for record in records
            .iter()
            .filter(|r| r.status != "ok" && r.round < last_round)
        {
            if let Some(note) = replan_note(lang, record, &records, role)
                && !lines.contains(&note)
            {
                lines.push(note);
            }
        }
    }
    let open: Vec<&Result<'_>> = records
        .iter()
        .filter(|r| r.status != "ok" && r.round == last_round)
        .collect();
    match verdict {
        "clarify" => {
            for record in records.iter().filter(|r| {
                r.status == "error" && matches!(r.error_kind, "refused" | "invalid_input")
            }) {
                lines.push(clarify(lang, record));
            }
        }
        "success" => {}
        _ if !open.is_empty() || ok.is_empty() => {
            let attempts = last_round + 1;
            lines.push(match (lang, verdict) {
                (Lang::Es, "give_up") => {
                    format!("No encontré una respuesta completa tras {attempts} intentos:")
                }
                (Lang::Ru, "give_up") => format!(
                    "Не удалось найти полный ответ за {attempts} {}:",
                    plural_ru(attempts, "попытку", "попытки", "попыток")
                ),
                (Lang::En, "give_up") => {
                    format!("I could not find a complete answer after {attempts} attempts:")
                }
                (Lang::Es, _) => "No pude completar esto:".to_owned(),
                (Lang::Ru, _) => "Не удалось выполнить запрос полностью:".to_owned(),
                (Lang::En, _) => "I could not complete this:".to_owned(),
            });
            let failures: Vec<&Result<'_>> = if open.is_empty() {
                records.iter().filter(|r| r.status != "ok").collect()
            } else {
                open
            };
            for record in failures {
                lines.push(format!("- {}", failure(lang, record, role)));
            }
            lines.push(
                lang.pick(
                    "Try rephrasing, or ask about another period or series.",
                    "Prueba a reformular la pregunta o a preguntar por otro periodo o serie.",
                    "Попробуйте переформулировать вопрос или спросить о другом периоде или показателе.",
                )
                .to_owned(),
            );
        }
        _ => {}
    }
    if lines.is_empty() {
        lines.push(
            lang.pick(
                "I found nothing to answer with.",
                "No encontré nada con qué responder.",
                "Мне нечем ответить.",
            )
            .to_owned(),
        );
    }
    lines.join("\n")
}

/// `text` ending with one full stop.
fn sentence(text: String) -> String {
    if text.ends_with('.') {
        text
    } else {
        format!("{text}.")
    }
}

fn plural_ru(n: u64, one: &'static str, few: &'static str, many: &'static str) -> &'static str {
    match (n % 10, n % 100) {
        (1, r) if r != 11 => one,
        (2..=4, r) if !(12..=14).contains(&r) => few,
        _ => many,
    }
}

/// A number as `lang` writes it: `13,366.9` / `13.366,9` / `13 366,9`; one decimal from 100
/// up, two (trailing zeros dropped) below.
pub fn number(lang: Lang, x: f64) -> String {
    let decimals = if x.abs() >= 100.0 { 1 } else { 2 };
    let text = format!("{:.*}", decimals, x.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let frac = if decimals == 2 {
        frac.trim_end_matches('0')
    } else {
        frac
    };
    let (group, point) = match lang {
        Lang::En => (",", "."),
        Lang::Es => (".", ","),
        Lang::Ru => ("\u{a0}", ","),
    };
    let digits: Vec<char> = int.chars().collect();
    let mut grouped = String::new();
    for (i, c) in digits.iter().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) && digits.len() > 4 {
            grouped.push_str(group);
        }
        grouped.push(*c);
    }
    let sign = if x < 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0') {
        "-"
    } else {
        ""
    };
    if frac.is_empty() {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped}{point}{frac}")
    }
}

/// A series' name in `lang`.
fn label(lang: Lang, column: &str) -> String {
    let (en, es, ru) = match column {
        "realgdp" => ("Real GDP", "PIB real", "Реальный ВВП"),
        "realcons" => ("Real consumption", "Consumo real", "Реальное потребление"),
        "realinv" => ("Real investment", "Inversión real", "Реальные инвестиции"),
        "realgovt" => (
            "Real federal spending",
            "Gasto federal real",
            "Реальные федеральные расходы",
        ),
        "realdpi" => (
            "Real disposable income",
            "Renta disponible real",
            "Реальный располагаемый доход",
        ),
        "cpi" => (
            "Consumer price index",
            "Índice de precios al consumo",
            "Индекс потребительских цен",
        ),
        "m1" => ("M1 money stock", "Masa monetaria M1", "Денежная масса M1"),
        "tbilrate" => (
            "3-month Treasury bill rate",
            "Tipo de las letras del Tesoro a 3 meses",
            "Ставка 3-месячных казначейских векселей",
        ),
        "unemp" => ("Unemployment rate", "Tasa de paro", "Уровень безработицы"),
        "pop" => ("Population", "Población", "Население"),
        "infl" => ("Inflation", "Inflación", "Инфляция"),
        "realint" => (
            "Real interest rate",
            "Tipo de interés real",
            "Реальная процентная ставка",
        ),
        other => return other.to_owned(),
    };
    lang.pick(en, es, ru).to_owned()
}

/// A series as the subject of a sentence: `The unemployment rate`, `La tasa de paro` (Russian
/// sentences put the name first, as a heading, and need no article).
fn subject(lang: Lang, column: &str) -> String {
    let (en, es) = match column {
        "realgdp" => ("Real GDP", "El PIB real"),
        "realcons" => ("Real consumption", "El consumo real"),
        "realinv" => ("Real investment", "La inversión real"),
        "realgovt" => ("Real federal spending", "El gasto federal real"),
        "realdpi" => ("Real disposable income", "La renta disponible real"),
        "cpi" => (
            "The consumer price index",
            "El índice de precios al consumo",
        ),
        "m1" => ("The M1 money stock", "La masa monetaria M1"),
        "tbilrate" => (
            "The 3-month Treasury bill rate",
            "El tipo de las letras del Tesoro a 3 meses",
        ),
        "unemp" => ("The unemployment rate", "La tasa de paro"),
        "pop" => ("The population", "La población"),
        "infl" => ("Inflation", "La inflación"),
        "realint" => ("The real interest rate", "El tipo de interés real"),
        _ => return label(lang, column),
    };
    match lang {
        Lang::En => en.to_owned(),
        Lang::Es => es.to_owned(),
        Lang::Ru => label(lang, column),
    }
}

fn is_rate(column: &str) -> bool {
    matches!(column, "tbilrate" | "unemp" | "infl" | "realint")
}

/// The unit of a series in `lang` (empty for rates, which carry `%`).
fn unit(lang: Lang, column: &str) -> &'static str {
    match column {
        "realgdp" | "realcons" | "realinv" | "realgovt" | "realdpi" => lang.pick(
            "billion chained 2005 dollars",
            "miles de millones de dólares encadenados de 2005",
            "млрд долл. в ценах 2005 г.",
        ),
        "cpi" => "1982–84 = 100",
        "m1" => lang.pick(
            "billion dollars",
            "miles de millones de dólares",
            "млрд долл.",
        ),
        "pop" => lang.pick("million", "millones", "млн"),
        _ => "",
    }
}

/// A value with its unit: `10.7%`, `13,366.9 billion chained 2005 dollars`.
fn value(lang: Lang, column: &str, x: f64) -> String {
    let n = number(lang, x);
    if is_rate(column) {
        match lang {
            Lang::En => format!("{n}%"),
            _ => format!("{n}\u{a0}%"),
        }
    } else if column == "cpi" {
        format!("{n} ({})", unit(lang, column))
    } else if unit(lang, column).is_empty() {
        n
    } else {
        format!("{n} {}", unit(lang, column))
    }
}

/// A value as a list or a comparison shows it: rates with `%`, the rest bare (the unit is in
/// the heading).
fn bare(lang: Lang, column: &str, x: f64) -> String {
    if is_rate(column) {
        value(lang, column, x)
    } else {
        number(lang, x)
    }
}

/// A series' name with what its bare numbers are: `Real GDP (annual averages, billion
/// chained 2005 dollars)`.
fn heading(lang: Lang, column: &str, annual: Option<(&str, &str, &str)>) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some((en, es, ru)) = annual {
        parts.push(lang.pick(en, es, ru).to_owned());
    }
    if is_rate(column) {
        parts.push("%".to_owned());
    } else if !unit(lang, column).is_empty() {
        parts.push(unit(lang, column).to_owned());
    }
    if parts.is_empty() {
        label(lang, column)
    } else {
        format!("{} ({})", label(lang, column), parts.join(", "))
    }
}

/// A quarter in `lang`: `2008Q3`, `T3 2008`, `III кв. 2008`.
fn quarter(lang: Lang, year: i64, q: i64) -> String {
    match lang {
        Lang::En => format!("{year}Q{q}"),
        Lang::Es => format!("T{q} {year}"),
        Lang::Ru => {
            let roman = ["I", "II", "III", "IV"]
                .get((q - 1).clamp(0, 3) as usize)
                .copied()
                .unwrap_or("?");
            format!("{roman} кв. {year}")
        }
    }
}

fn span(a: i64, b: i64) -> String {
    if a == b {
        a.to_string()
    } else {
        format!("{a}–{b}")
    }
}

/// The note about a period the data does not (fully) cover.
fn coverage_note(lang: Lang, analysis: &Question, ok: &[&Result<'_>]) -> Option<String> {
    let ((first, first_q), (last, last_q)) = COVERAGE;
    if !ok.iter().any(|r| r.tool == "sql_query") {
        return None;
    }
    let covered = format!(
        "{}–{}",
        quarter(lang, first, first_q),
        quarter(lang, last, last_q)
    );
    if analysis.when.outside_coverage() {
        let asked = analysis.when.label();
        return Some(match lang {
            Lang::En => format!(
                "The data set covers {covered}, so it has nothing for {asked}; the nearest quarter it has:"
            ),
            Lang::Es => format!(
                "Los datos cubren {covered}, así que no hay nada para {asked}; el trimestre más cercano que tienen:"
            ),
            Lang::Ru => format!(
                "Данные охватывают {covered}, поэтому за {asked} их нет; ближайший квартал, который есть:"
            ),
        });
    }
    let partly = analysis
        .when
        .years()
        .is_some_and(|(a, b)| (a < first && b >= first) || (b > last && a <= last));
    partly.then(|| {
        lang.pick(
            "(The data set covers 1959Q1–2009Q3 only; the rest of the period has no data.)",
            "(Los datos solo cubren T1 1959–T3 2009; el resto del periodo no tiene datos.)",
            "(Данные есть только за I кв. 1959 – III кв. 2009; за остальной период данных нет.)",
        )
        .to_owned()
    })
}

fn render(lang: Lang, analysis: &Question, record: &Result<'_>, full: bool) -> String {
    match record.tool {
        "sql_query" => render_table(lang, analysis, record, full),
        "doc_search" => render_docs(lang, record.output, full),
        "calculator" => format!(
            "{} = {}",
            record.args["expression"].as_str().unwrap_or("?"),
            match record.output {
                Value::Number(n) => n
                    .as_f64()
                    .filter(|x| x.fract() != 0.0)
                    .map_or_else(|| n.to_string(), |x| number(lang, x)),
                other => other.to_string(),
            }
        ),
        "datetime" => render_time(lang, record.output),
        tool => format!("{tool}: {}", record.output),
    }
}

fn f(value: &Value) -> Option<f64> {
    value.as_f64()
}

fn render_table(lang: Lang, analysis: &Question, record: &Result<'_>, full: bool) -> String {
    let columns: Vec<&str> = record.output["columns"]
        .as_array()
        .map(|c| c.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let rows: Vec<&Vec<Value>> = record.output["rows"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_array).collect())
        .unwrap_or_default();
    let index = |name: &str| columns.iter().position(|c| *c == name);
    let (year, q) = (index("year"), index("quarter"));
    let plain: Vec<(usize, &str)> = columns
        .iter()
        .enumerate()
        .filter(|(_, c)| crate::dataset::column(c).is_some() && !matches!(**c, "year" | "quarter"))
        .map(|(i, c)| (i, *c))
        .collect();
    let averages: Vec<(usize, &str)> = columns
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.strip_prefix("avg_").map(|base| (i, base)))
        .filter(|(_, base)| crate::dataset::column(base).is_some())
        .collect();
    let params: Vec<i64> = record.args["params"]
        .as_array()
        .map(|p| p.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    let period = match (analysis.when.years(), params.as_slice()) {
        (Some((a, b)), _) => span(a, b),
        (None, [a, b]) => span(*a, *b),
        _ => span(COVERAGE.0.0, COVERAGE.1.0),
    };
    let quarter_of = |row: &[Value]| -> Option<String> {
        Some(quarter(
            lang,
            row.get(year?)?.as_i64()?,
            row.get(q?)?.as_i64()?,
        ))
    };
    let mut out: Vec<String> = Vec::new();
    if !averages.is_empty() && rows.len() == 1 {
        let count = index("quarters")
            .and_then(|i| rows[0].get(i))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        for (i, col) in &averages {
            let Some(x) = rows[0].get(*i).and_then(f) else {
                continue;
            };
            let v = value(lang, col, x);
            let l = label(lang, col);
            let s = subject(lang, col);
            out.push(match lang {
                Lang::En => format!("{s} averaged {v} over {period} ({count} quarters)."),
                Lang::Es => format!("{s} promedió {v} en {period} ({count} trimestres)."),
                Lang::Ru => format!("{l}: в среднем {v} за {period} ({count} кв.)."),
            });
        }
        return out.join("\n");
    }
    if plain.is_empty() || year.is_none() {
        return generic_table(lang, &columns, &rows, record.output["truncated"].as_bool());
    }
    let with_quarters = q.is_some();
    let when_label = |row: &[Value]| -> String {
        match quarter_of(row) {
            Some(label) => label,
            None => row
                .get(year.unwrap_or(0))
                .and_then(Value::as_i64)
                .map(|y| y.to_string())
                .unwrap_or_default(),
        }
    };
    for (i, col) in &plain {
        let l = label(lang, col);
        let s = subject(lang, col);
        let points: Vec<(String, f64)> = rows
            .iter()
            .filter_map(|row| Some((when_label(row), row.get(*i).and_then(f)?)))
            .collect();
        let Some((first_when, first_x)) = points.first().cloned() else {
            continue;
        };
        if points.len() == 1 {
            let v = value(lang, col, first_x);
            out.push(match (analysis.aggregate, lang) {
                (Aggregate::Max, Lang::En) => {
                    format!("{s} peaked at {v} in {first_when} ({period}).")
                }
                (Aggregate::Max, Lang::Es) => {
                    format!("{s} alcanzó su máximo, {v}, en {first_when} ({period}).")
                }
                (Aggregate::Max, Lang::Ru) => {
                    format!("{l}: максимум {v} в {first_when} ({period}).")
                }
                (Aggregate::Min, Lang::En) => {
                    format!("{s} was lowest, {v}, in {first_when} ({period}).")
                }
                (Aggregate::Min, Lang::Es) => {
                    format!("{s} tocó su mínimo, {v}, en {first_when} ({period}).")
                }
                (Aggregate::Min, Lang::Ru) => {
                    format!("{l}: минимум {v} в {first_when} ({period}).")
                }
                _ if analysis.when == When::Latest => sentence(format!(
                    "{l}, {first_when} ({}): {v}",
                    lang.pick(
                        "the latest quarter in the data",
                        "el último trimestre de los datos",
                        "последний квартал в данных"
                    )
                )),
                _ => sentence(format!("{l}, {first_when}: {v}")),
            });
            continue;
        }
        let (last_when, last_x) = points.last().cloned().unwrap_or_default();
        if analysis.aggregate == Aggregate::Change {
            let (from, to) = (bare(lang, col, first_x), bare(lang, col, last_x));
            let change = if is_rate(col) {
                let d = last_x - first_x;
                let sign = if d >= 0.0 { "+" } else { "" };
                lang.pick(
                    &format!("{sign}{} percentage points", number(lang, d)),
                    &format!("{sign}{} puntos porcentuales", number(lang, d)),
                    &format!("{sign}{} п.п.", number(lang, d)),
                )
                .to_owned()
            } else {
                let pct = (last_x / first_x - 1.0) * 100.0;
                let sign = if pct >= 0.0 { "+" } else { "-" };
                let magnitude = format!("{:.1}", pct.abs());
                let magnitude = match lang {
                    Lang::En => magnitude,
                    _ => magnitude.replace('.', ","),
                };
                match lang {
                    Lang::En => format!("{sign}{magnitude}%"),
                    _ => format!("{sign}{magnitude}\u{a0}%"),
                }
            };
            let annual = (!with_quarters).then_some((
                "annual average",
                "media anual",
                "среднегодовое значение",
            ));
            // Rates carry their `%` in the values here.
            let s = subject(lang, col);
            let h = match (is_rate(col), annual) {
                (true, Some((en, es, ru))) => format!("{s} ({})", lang.pick(en, es, ru)),
                (true, None) => s,
                (false, _) => {
                    let rest = heading(lang, col, annual);
                    let parenthetical = rest.split_once(" (").map_or("", |(_, p)| p);
                    format!("{s} ({parenthetical}")
                }
            };
            out.push(match lang {
                Lang::En => format!(
                    "{h} went from {from} in {first_when} to {to} in {last_when}: {change}."
                ),
                Lang::Es => {
                    format!("{h} pasó de {from} en {first_when} a {to} en {last_when}: {change}.")
                }
                Lang::Ru => {
                    format!("{h}: с {from} ({first_when}) до {to} ({last_when}), {change}.")
                }
            });
            continue;
        }
        let shown = shown_points(&points, if full { 40 } else { 8 });
        let list: Vec<String> = shown
            .iter()
            .map(|p| match p {
                Some((w, x)) => format!("{w} {}", number(lang, *x)),
                None => "…".to_owned(),
            })
            .collect();
        let annual = (!with_quarters).then_some((
            "annual averages",
            "medias anuales",
            "среднегодовые значения",
        ));
        out.push(format!(
            "{}: {}.",
            heading(lang, col, annual),
            list.join("; ")
        ));
    }
    if record.output["truncated"].as_bool() == Some(true) {
        out.push(
            lang.pick(
                "(More rows matched than the 200 shown.)",
                "(Hay más filas que las 200 mostradas.)",
                "(Строк больше, чем показанные 200.)",
            )
            .to_owned(),
        );
    }
    out.join("\n")
}

/// At most `max` points: all of them, or the first and last halves around an ellipsis.
fn shown_points(points: &[(String, f64)], max: usize) -> Vec<Option<(String, f64)>> {
    if points.len() <= max {
        return points.iter().cloned().map(Some).collect();
    }
    let half = max / 2;
    let mut out: Vec<Option<(String, f64)>> = points[..half].iter().cloned().map(Some).collect();
    out.push(None);
    out.extend(points[points.len() - half..].iter().cloned().map(Some));
    out
}

/// A table of a query the user wrote: `column = value` for one cell, else rows.
fn generic_table(
    lang: Lang,
    columns: &[&str],
    rows: &[&Vec<Value>],
    truncated: Option<bool>,
) -> String {
    let cell = |v: &Value| match v {
        Value::Number(n) => n
            .as_f64()
            .filter(|x| x.fract() != 0.0)
            .map_or_else(|| n.to_string(), |x| number(lang, x)),
        Value::String(s) => s.clone(),
        Value::Null => "—".to_owned(),
        other => other.to_string(),
    };
    if rows.len() == 1 && columns.len() == 1 {
        let v = cell(&rows[0][0]);
        return lang
            .pick(
                &format!("The query returns {} = {v}.", columns[0]),
                &format!("La consulta devuelve {} = {v}.", columns[0]),
                &format!("Запрос возвращает {} = {v}.", columns[0]),
            )
            .to_owned();
    }
    let mut lines = vec![
        lang.pick(
            &format!("The query returns {} rows:", rows.len()),
            &format!("La consulta devuelve {} filas:", rows.len()),
            &format!("Запрос возвращает строк: {}.", rows.len()),
        )
        .to_owned(),
    ];
    lines.push(columns.join(" | "));
    for row in rows.iter().take(10) {
        lines.push(row.iter().map(cell).collect::<Vec<_>>().join(" | "));
    }
    if rows.len() > 10 || truncated == Some(true) {
        lines.push("…".to_owned());
    }
    lines.join("\n")
}

fn render_docs(lang: Lang, output: &Value, full: bool) -> String {
    let hits: Vec<&Value> = output["hits"]
        .as_array()
        .map(|h| h.iter().collect())
        .unwrap_or_default();
    hits.iter()
        .take(if full { 2 } else { 1 })
        .map(|hit| {
            let title = hit["title"].as_str().unwrap_or("");
            let snippet = hit["snippet"].as_str().unwrap_or("");
            match lang {
                Lang::En => format!("From the documentation, \u{201c}{title}\u{201d}: {snippet}"),
                Lang::Es => format!("Según la documentación («{title}», en inglés): {snippet}"),
                Lang::Ru => format!("Из документации («{title}», на английском): {snippet}"),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn weekday(lang: Lang, english: &str) -> String {
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
        .map_or(english, |d| lang.pick(d[0], d[1], d[2]))
        .to_owned()
}

fn render_time(lang: Lang, output: &Value) -> String {
    let zone = output["timezone"].as_str().unwrap_or("UTC");
    let local = output["local_time"].as_str().unwrap_or("");
    let (date, time) = local.split_once(' ').unwrap_or(("", local));
    let hhmm: String = time.chars().take(5).collect();
    let day = weekday(lang, output["weekday"].as_str().unwrap_or(""));
    let offset = output["utc_offset"].as_str().unwrap_or("");
    if zone == "UTC" {
        return match lang {
            Lang::En => format!("It is {hhmm} UTC ({day}, {date})."),
            Lang::Es => format!("Son las {hhmm} UTC ({day}, {date})."),
            Lang::Ru => format!("Сейчас {hhmm} UTC ({day}, {date})."),
        };
    }
    let city = zone.rsplit('/').next().unwrap_or(zone).replace('_', " ");
    match lang {
        Lang::En => format!("In {city} it is {hhmm} ({day}, {date}; {zone}, UTC{offset})."),
        Lang::Es => format!("En {city} son las {hhmm} ({day}, {date}; {zone}, UTC{offset})."),
        Lang::Ru => format!("{city}: сейчас {hhmm} ({day}, {date}; {zone}, UTC{offset})."),
    }
}

/// What was done instead of a call that failed in an earlier round.
fn replan_note(lang: Lang, failed: &Result<'_>, all: &[Result<'_>], role: &str) -> Option<String> {
    let later_ok = |tool: &str| {
        all.iter()
            .rev()
            .find(|r| r.round > failed.round && r.status == "ok" && r.tool == tool)
    };
    match (failed.tool, failed.status, failed.error_kind) {
        ("doc_search", "empty", _) => {
            let before = failed.args["query"].as_str().unwrap_or("");
            let after = later_ok("doc_search")?.args["query"].as_str().unwrap_or("");
            Some(match lang {
                Lang::En => format!(
                    "(Nothing matched \u{201c}{before}\u{201d}, so I searched for \u{201c}{after}\u{201d}.)"
                ),
                Lang::Es => format!("(Nada coincidía con «{before}», así que busqué «{after}».)"),
                Lang::Ru => {
                    format!("(По запросу «{before}» ничего не нашлось, поэтому я искал «{after}».)")
                }
            })
        }
        ("sql_query", "error", "invalid_args") => {
            later_ok("sql_query")?;
            Some(match lang {
                Lang::En => format!(
                    "(The first query failed: {}; I corrected it.)",
                    failed.error
                ),
                Lang::Es => format!("(La primera consulta falló: {}; la corregí.)", failed.error),
                Lang::Ru => format!(
                    "(Первый запрос не сработал: {}; я его исправил.)",
                    failed.error
                ),
            })
        }
        ("sql_query", "error", "irrelevant") => {
            later_ok("sql_query")?;
            Some(match lang {
                Lang::En => format!(
                    "(The first query did not answer the question ({}); I queried again.)",
                    failed.error
                ),
                Lang::Es => format!(
                    "(La primera consulta no respondía a la pregunta ({}); consulté de nuevo.)",
                    failed.error
                ),
                Lang::Ru => format!(
                    "(Первый запрос не отвечал на вопрос ({}); я запросил данные заново.)",
                    failed.error
                ),
            })
        }
        (tool, "error", "forbidden") => {
            let other = all
                .iter()
                .find(|r| r.round > failed.round && r.status == "ok")?
                .tool;
            Some(match lang {
                Lang::En => format!(
                    "(Your profile ({role}) may not use {tool}, so I used {other} instead.)"
                ),
                Lang::Es => {
                    format!("(Tu perfil ({role}) no permite usar {tool}, así que usé {other}.)")
                }
                Lang::Ru => format!(
                    "(Ваш профиль ({role}) не разрешает {tool}, поэтому я использовал {other}.)"
                ),
            })
        }
        _ => None,
    }
}

/// An honest line about a call that failed or found nothing.
fn failure(lang: Lang, record: &Result<'_>, role: &str) -> String {
    let tool = record.tool;
    match (record.status, record.error_kind, tool) {
        ("empty", _, "doc_search") => {
            let q = record.args["query"].as_str().unwrap_or("");
            match lang {
                Lang::En => format!("nothing in the documentation matches \u{201c}{q}\u{201d}."),
                Lang::Es => format!("nada en la documentación coincide con «{q}»."),
                Lang::Ru => format!("в документации нет ничего по запросу «{q}»."),
            }
        }
        ("empty", _, "sql_query") => {
            let series = series_of_sql(record.args["sql"].as_str().unwrap_or(""));
            let what = series
                .iter()
                .map(|s| label(lang, s))
                .collect::<Vec<_>>()
                .join(", ");
            match lang {
                Lang::En => format!("the data has no rows for this ({what})."),
                Lang::Es => format!("los datos no tienen filas para esto ({what})."),
                Lang::Ru => format!("в данных нет строк для этого ({what})."),
            }
        }
        (_, "timeout", _) => match lang {
            Lang::En => format!("{tool} ran out of time at every attempt: {}", record.error),
            Lang::Es => format!(
                "{tool} se quedó sin tiempo en cada intento: {}",
                record.error
            ),
            Lang::Ru => format!(
                "{tool} не уложился в лимит времени ни в одной попытке: {}",
                record.error
            ),
        },
        (_, "irrelevant", _) => match lang {
            Lang::En => format!(
                "{tool} returned data that does not answer the question: {}",
                record.error
            ),
            Lang::Es => format!(
                "{tool} devolvió datos que no responden a la pregunta: {}",
                record.error
            ),
            Lang::Ru => format!(
                "{tool} вернул данные, которые не отвечают на вопрос: {}",
                record.error
            ),
        },
        (_, "forbidden", _) => match lang {
            Lang::En => format!("your profile ({role}) may not use {tool}."),
            Lang::Es => format!("tu perfil ({role}) no permite usar {tool}."),
            Lang::Ru => format!("ваш профиль ({role}) не разрешает {tool}."),
        },
        _ => match lang {
            Lang::En => format!("{tool} failed: {}", record.error),
            Lang::Es => format!("{tool} falló: {}", record.error),
            Lang::Ru => format!("{tool}: ошибка: {}", record.error),
        },
    }
}

/// A question about what only the user can change.
fn clarify(lang: Lang, record: &Result<'_>) -> String {
    match record.error_kind {
        "refused" => {
            let sql = record.args["sql"].as_str().unwrap_or("");
            match lang {
                Lang::En => format!(
                    "I can only read the data set, with one SELECT, so I did not run `{sql}` ({}). What would you like to know from the data?",
                    record.error
                ),
                Lang::Es => format!(
                    "Solo puedo leer los datos, con una única consulta SELECT, así que no ejecuté `{sql}` ({}). ¿Qué te gustaría saber de los datos?",
                    record.error
                ),
                Lang::Ru => format!(
                    "Я могу только читать данные одним запросом SELECT, поэтому не выполнил `{sql}` ({}). Что вы хотите узнать из данных?",
                    record.error
                ),
            }
        }
        _ => {
            let what = record.args["expression"]
                .as_str()
                .or_else(|| record.args["sql"].as_str())
                .unwrap_or("");
            match lang {
                Lang::En => format!(
                    "I could not evaluate `{what}`: {}. Could you check it and write it again?",
                    record.error
                ),
                Lang::Es => format!(
                    "No pude calcular `{what}`: {}. ¿Puedes revisarlo y escribirlo de nuevo?",
                    record.error
                ),
                Lang::Ru => format!(
                    "Не удалось вычислить `{what}`: {}. Проверьте, пожалуйста, и напишите ещё раз.",
                    record.error
                ),
            }
        }
    }
}

const GREETINGS: &[&str] = &[
    "hello",
    "hi",
    "hey",
    "good morning",
    "good afternoon",
    "good evening",
    "hola",
    "buenos dias",
    "buenas tardes",
    "buenas noches",
    "buenas",
    "привет",
    "здравствуйте",
    "добрый день",
    "добрый вечер",
    "доброе утро",
];

const THANKS: &[&str] = &[
    "thanks",
    "thank you",
    "thx",
    "gracias",
    "спасибо",
    "благодарю",
];

const MEMORY: &[&str] = &[
    "what did i ask",
    "what have i asked",
    "what did we talk about",
    "what have we talked about",
    "what did we discuss",
    "my previous question",
    "my last question",
    "summarize our conversation",
    "que te pregunte",
    "que te he preguntado",
    "de que hablamos",
    "de que hemos hablado",
    "mi pregunta anterior",
    "mi ultima pregunta",
    "resume nuestra conversacion",
    "что я спрашивал*",
    "о чем мы говорил*",
    "мой предыдущий вопрос",
    "мой прошлый вопрос",
    "предыдущий вопрос",
];

/// An answer without tool results.
fn direct(lang: Lang, question: &str, name: &str, summary: &str) -> String {
    let words = words(question);
    if has_any(&words, MEMORY) {
        let asked: Vec<String> = summary
            .lines()
            .filter_map(|line| {
                let start = line.find("asked \u{ab}")? + "asked \u{ab}".len();
                let end = line[start..].find('\u{bb}')? + start;
                Some(format!("\u{ab}{}\u{bb}", &line[start..end]))
            })
            .collect();
        let refused = summary
            .lines()
            .filter(|l| l.contains(": refused ("))
            .count();
        if asked.is_empty() && refused == 0 {
            return lang
                .pick(
                    "This is the start of our conversation: nothing was asked before.",
                    "Es el comienzo de nuestra conversación: no me habías preguntado nada.",
                    "Это начало нашего разговора: раньше вы ничего не спрашивали.",
                )
                .to_owned();
        }
        let list = asked.join("; ");
        let mut text = match lang {
            Lang::En => format!("So far you asked: {list}."),
            Lang::Es => format!("Hasta ahora me preguntaste: {list}."),
            Lang::Ru => format!("До сих пор вы спрашивали: {list}."),
        };
        if summary.contains("Earlier (turns") {
            text.push(' ');
            text.push_str(lang.pick(
                "(Older turns are only summarized.)",
                "(Los turnos más antiguos solo están resumidos.)",
                "(Более ранние реплики сохранены только в кратком виде.)",
            ));
        }
        return text;
    }
    let capabilities = lang.pick(
        "I answer questions about US macroeconomic data from 1959 to 2009 (GDP, unemployment, inflation, interest rates, money, population: \u{201c}What was unemployment in 1982?\u{201d}), explain what the series mean (\u{201c}What is M1?\u{201d}), do arithmetic and tell the time.",
        "Respondo preguntas sobre datos macroeconómicos de EE. UU. de 1959 a 2009 (PIB, paro, inflación, tipos de interés, dinero, población: «¿Cuál fue el paro en 1982?»), explico qué significan las series («¿Qué es el IPC?»), hago cálculos y digo la hora.",
        "Я отвечаю на вопросы о макроэкономических данных США за 1959–2009 годы (ВВП, безработица, инфляция, ставки, деньги, население: «Какой была безработица в 1982 году?»), объясняю, что означают показатели («Что такое ИПЦ?»), считаю и говорю, который час.",
    );
    if has_any(&words, THANKS) {
        return lang
            .pick(
                "You're welcome! Ask me anything else about the data.",
                "¡De nada! Pregúntame lo que quieras sobre los datos.",
                "Пожалуйста! Спрашивайте ещё о данных.",
            )
            .to_owned();
    }
    if has_any(&words, GREETINGS) {
        let hello = match (lang, name.is_empty()) {
            (Lang::En, false) => format!("Hello, {name}!"),
            (Lang::Es, false) => format!("¡Hola, {name}!"),
            (Lang::Ru, false) => format!("Здравствуйте, {name}!"),
            (_, true) => lang.pick("Hello!", "¡Hola!", "Здравствуйте!").to_owned(),
        };
        return format!("{hello} {capabilities}");
    }
    let unsure = lang.pick(
        "I could not tell what to look up for that.",
        "No supe qué buscar para eso.",
        "Я не понял, что для этого искать.",
    );
    format!("{unsure} {capabilities}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ask(question: &str, lang: &str, results: Value, verdict: &str) -> String {
        reply(&[
            Message::system(format!(
                "prompt\nUser: Ana (role analyst)\nAnswer language: {lang}\nDetail: brief"
            )),
            Message::human(question),
            Message::system(format!("{RESULTS_BLOCK} {results}")),
            Message::system(format!(
                "{VERIFICATION_BLOCK} {}",
                json!({"verdict": verdict, "reasons": []})
            )),
        ])
    }

    fn sql(sql: &str, params: Value, columns: Value, rows: Value) -> Value {
        json!({"tool": "sql_query", "args": {"sql": sql, "params": params}, "round": 0,
               "status": "ok", "output": {"columns": columns, "rows": rows, "truncated": false}})
    }

    #[test]
    fn numbers_per_language() {
        assert_eq!(number(Lang::En, 13366.865), "13,366.9");
        assert_eq!(number(Lang::Es, 13366.865), "13.366,9");
        assert_eq!(number(Lang::Ru, 13366.865), "13\u{a0}366,9");
        assert_eq!(number(Lang::En, 5.8), "5.8");
        assert_eq!(number(Lang::En, 0.12), "0.12");
        assert_eq!(number(Lang::En, -8.79), "-8.79");
        assert_eq!(number(Lang::Es, 1234.0), "1234,0");
        assert_eq!(number(Lang::En, 214.0), "214.0");
        assert_eq!(number(Lang::En, -0.001), "0");
    }

    #[test]
    fn values_of_a_year_and_a_peak() {
        let year = sql(
            "SELECT year, quarter, unemp FROM macrodata WHERE year BETWEEN ?1 AND ?2",
            json!([1982, 1982]),
            json!(["year", "quarter", "unemp"]),
            json!([
                [1982, 1, 8.8],
                [1982, 2, 9.4],
                [1982, 3, 9.9],
                [1982, 4, 10.7]
            ]),
        );
        assert_eq!(
            ask(
                "¿Cuál fue la tasa de paro en 1982?",
                "es",
                json!([year]),
                "success"
            ),
            "Tasa de paro (%): T1 1982 8,8; T2 1982 9,4; T3 1982 9,9; T4 1982 10,7."
        );
        let peak = sql(
            "SELECT year, quarter, unemp FROM macrodata ORDER BY unemp DESC",
            json!([1959, 2009]),
            json!(["year", "quarter", "unemp"]),
            json!([[1982, 4, 10.7]]),
        );
        assert_eq!(
            ask(
                "What was the highest unemployment rate?",
                "en",
                json!([peak]),
                "success"
            ),
            "The unemployment rate peaked at 10.7% in 1982Q4 (1959–2009)."
        );
        assert_eq!(
            ask(
                "Какой была максимальная безработица?",
                "ru",
                json!([peak]),
                "success"
            ),
            "Уровень безработицы: максимум 10,7\u{a0}% в IV кв. 1982 (1959–2009)."
        );
    }

    #[test]
    fn averages_changes_and_coverage() {
        let avg = sql(
            "SELECT round(avg(infl), 3) AS avg_infl, count(*) AS quarters FROM macrodata WHERE year BETWEEN ?1 AND ?2",
            json!([1970, 1979]),
            json!(["avg_infl", "quarters"]),
            json!([[7.092, 40]]),
        );
        assert_eq!(
            ask(
                "Average inflation in the 1970s?",
                "en",
                json!([avg]),
                "success"
            ),
            "Inflation averaged 7.09% over 1970–1979 (40 quarters)."
        );
        let change = sql(
            "SELECT year, realgdp FROM macrodata GROUP BY year",
            json!([2008, 2009]),
            json!(["year", "realgdp"]),
            json!([[2008, 13312.155], [2009, 12939.085]]),
        );
        assert_eq!(
            ask(
                "How much did GDP change in 2009?",
                "en",
                json!([change]),
                "success"
            ),
            "Real GDP (annual average, billion chained 2005 dollars) went from 13,312.2 in 2008 to 12,939.1 in 2009: -2.8%."
        );
        let nearest = sql(
            "SELECT year, quarter, realgdp FROM macrodata ORDER BY year DESC, quarter DESC LIMIT 1",
            json!([]),
            json!(["year", "quarter", "realgdp"]),
            json!([[2009, 3, 12990.341]]),
        );
        assert_eq!(
            ask("What was GDP in 2012?", "en", json!([nearest]), "success"),
            "The data set covers 1959Q1–2009Q3, so it has nothing for 2012; the nearest quarter it has:\nReal GDP, 2009Q3: 12,990.3 billion chained 2005 dollars."
        );
    }

    #[test]
    fn documents_replans_and_failures() {
        let empty = json!({"tool": "doc_search", "args": {"query": "joblessness"}, "round": 0, "status": "empty", "output": {"hits": []}});
        let found = json!({"tool": "doc_search", "args": {"query": "unemployment rate"}, "round": 1, "status": "ok",
            "output": {"hits": [{"id": "unemp", "title": "Unemployment rate (unemp)", "snippet": "The unemployment rate is the number of unemployed people as a percentage of the labor force."}]}});
        assert_eq!(
            ask(
                "What do the docs say about joblessness?",
                "en",
                json!([empty, found]),
                "success"
            ),
            "From the documentation, “Unemployment rate (unemp)”: The unemployment rate is the number of unemployed people as a percentage of the labor force.\n(Nothing matched “joblessness”, so I searched for “unemployment rate”.)"
        );
        let slow = |round: u64| {
            json!({"tool": "sql_query", "args": {"sql": "SELECT count(*) FROM macrodata a, macrodata b"}, "round": round, "status": "error",
            "output": null, "error": {"kind": "timeout", "message": "the query was stopped after 200ms; ask for less data"}})
        };
        assert_eq!(
            ask(
                "Run SELECT count(*) FROM macrodata a, macrodata b",
                "en",
                json!([slow(0), slow(1), slow(2)]),
                "give_up"
            ),
            "I could not find a complete answer after 3 attempts:\n- sql_query ran out of time at every attempt: the query was stopped after 200ms; ask for less data\nTry rephrasing, or ask about another period or series."
        );
        let refused = json!({"tool": "sql_query", "args": {"sql": "DELETE FROM macrodata"}, "round": 0, "status": "error", "output": null,
            "error": {"kind": "refused", "message": "refused: the query does not start with SELECT"}});
        assert!(
            ask("Borra los datos: DELETE FROM macrodata", "es", json!([refused]), "clarify")
                .starts_with("Solo puedo leer los datos, con una única consulta SELECT, así que no ejecuté `DELETE FROM macrodata`")
        );
    }

    #[test]
    fn without_tools() {
        let none = |question: &str, summary: &str| {
            let mut messages = vec![Message::system("prompt\nUser: María (role analyst)")];
            if !summary.is_empty() {
                messages.push(Message::system(format!("{SUMMARY_BLOCK}\n{summary}")));
            }
            messages.push(Message::human(question));
            reply(&messages)
        };
        assert!(none("Hola", "").starts_with("¡Hola, María! Respondo preguntas"));
        assert!(none("спасибо", "").starts_with("Пожалуйста!"));
        assert_eq!(
            none(
                "What did I ask before?",
                "Turn 1 (en): asked «GDP in 2008?»; sql_query realgdp @ 2008 -> 4 rows; answered «…»"
            ),
            "So far you asked: «GDP in 2008?»."
        );
        assert_eq!(
            none("What did I ask before?", ""),
            "This is the start of our conversation: nothing was asked before."
        );
    }
}
