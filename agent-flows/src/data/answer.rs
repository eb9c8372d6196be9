//! What the user sees after the executor: for each request a short sentence in their
//! language built from the rows the query returned (never from a model), a plain-text table
//! when there are several rows, the planner's notes, and the plan errors.
//!
//! Numbers are written with two decimals (a decimal comma in Russian); a table shows at most
//! [`SHOWN_ROWS`] rows and says how many more `data` holds.

use serde_json::Value;

use super::glossary::Measure;
use super::period::{Period, Quarter};
use super::plan::{Condition, DataRequest, Edge, Operation};
use super::query::{Aggregation, Comparison, Direction, Grouping};
use super::sql::DataResult;
use crate::lang::Lang;

/// The most table rows an answer shows.
pub const SHOWN_ROWS: usize = 40;

/// `x` with two decimals, a decimal comma in Russian.
pub fn number(x: f64, lang: Lang) -> String {
    let text = format!("{x:.2}");
    if lang == Lang::Ru {
        text.replace('.', ",")
    } else {
        text
    }
}

/// `x` with its measure's unit: `5.80%`, `5,80 %`, `12990.34 bn 2005 $`.
pub fn amount(measure: Measure, x: f64, lang: Lang) -> String {
    let n = number(x, lang);
    let unit = measure.unit(lang);
    match (measure.is_percent(), lang) {
        (true, Lang::Ru) => format!("{n} %"),
        (true, _) => format!("{n}%"),
        // An index has no unit; its base is in the table's header.
        (false, _) if unit.starts_with('(') => n,
        (false, _) => format!("{n} {unit}"),
    }
}

/// A signed change: `+2281.56`, `−0,40`.
fn signed(x: f64, lang: Lang) -> String {
    if x >= 0.0 {
        format!("+{}", number(x, lang))
    } else {
        format!("−{}", number(-x, lang))
    }
}

/// Russian plural: 1 квартал, 2 квартала, 5 кварталов.
fn plural_ru<'a>(n: u64, one: &'a str, few: &'a str, many: &'a str) -> &'a str {
    let (d10, d100) = (n % 10, n % 100);
    if d10 == 1 && d100 != 11 {
        one
    } else if (2..=4).contains(&d10) && !(12..=14).contains(&d100) {
        few
    } else {
        many
    }
}

fn quarters(n: u64, lang: Lang) -> String {
    match lang {
        Lang::Ru => format!("{n} {}", plural_ru(n, "квартал", "квартала", "кварталов")),
        _ if n == 1 => "1 quarter".to_owned(),
        _ => format!("{n} quarters"),
    }
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn op_symbol(op: Comparison) -> &'static str {
    match op {
        Comparison::Gt => ">",
        Comparison::Ge => "≥",
        Comparison::Lt => "<",
        Comparison::Le => "≤",
        Comparison::Eq => "=",
        Comparison::Ne => "≠",
    }
}

/// ", where unemployment rate > 8.00" / ", где уровень безработицы > 8,00".
fn conditions(filters: &[Condition], lang: Lang) -> String {
    if filters.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = filters
        .iter()
        .map(|f| {
            let value = match f.column {
                super::plan::FilterColumn::Measure(m) if m.is_percent() => amount(m, f.value, lang),
                super::plan::FilterColumn::Measure(_) => number(f.value, lang),
                _ => format!("{}", f.value),
            };
            format!("{} {} {value}", f.column.name(lang), op_symbol(f.op))
        })
        .collect();
    let and = if lang == Lang::Ru { " и " } else { " and " };
    let lead = if lang == Lang::Ru {
        ", где "
    } else {
        ", where "
    };
    format!("{lead}{}", parts.join(and))
}

fn as_f64(value: &Value) -> Option<f64> {
    value.as_f64()
}

fn as_u64(value: &Value) -> Option<u64> {
    value.as_u64().or_else(|| value.as_f64().map(|x| x as u64))
}

fn quarter_of(row: &[Value]) -> Option<Quarter> {
    let year = i32::try_from(row.first()?.as_i64()?).ok()?;
    let q = u8::try_from(row.get(1)?.as_i64()?).ok()?;
    Quarter::new(year, q)
}

/// The whole answer: one part per request, then the errors.
pub fn render(
    lang: Lang,
    requests: &[DataRequest],
    data: &[DataResult],
    errors: &[String],
) -> String {
    let mut parts = Vec::new();
    for request in requests {
        let Some(result) = data.iter().find(|d| d.request == request.id) else {
            continue;
        };
        let mut text = match &result.error {
            Some(error) => match lang {
                Lang::Ru => format!("Запрос {} не выполнен: {error}", request.id),
                _ => format!("Query {} failed: {error}", request.id),
            },
            None => describe(lang, request, result),
        };
        for note in &request.notes {
            text.push_str(&match lang {
                Lang::Ru => format!("\nПримечание: {note}."),
                _ => format!("\nNote: {note}."),
            });
        }
        parts.push(text);
    }
    if !errors.is_empty() {
        let head = match (lang, parts.is_empty()) {
            (Lang::Ru, true) => "Не удалось ответить:",
            (Lang::Ru, false) => "Не на всё удалось ответить:",
            (_, true) => "I could not answer this:",
            (_, false) => "I could not answer everything:",
        };
        let mut text = head.to_owned();
        for error in errors {
            text.push_str("\n- ");
            text.push_str(error);
        }
        parts.push(text);
    }
    if parts.is_empty() {
        parts.push(match lang {
            Lang::Ru => "Нечего показать: в плане нет запросов.".to_owned(),
            _ => "Nothing to show: the plan has no queries.".to_owned(),
        });
    }
    parts.join("\n\n")
}

/// One request's sentence (and table).
fn describe(lang: Lang, request: &DataRequest, result: &DataResult) -> String {
    let ru = lang == Lang::Ru;
    let metric = request.metric;
    let name = metric.name(lang);
    let period = request.period;
    let when = period.describe(lang);
    let filters = conditions(&request.filters, lang);
    let none = || {
        if ru {
            format!(
                "{} {when}{filters}: ни один квартал не подходит.",
                capitalise(name)
            )
        } else {
            format!("{} {when}{filters}: no quarter matches.", capitalise(name))
        }
    };
    let rows = &result.rows;
    match request.operation {
        Operation::Series { order } => {
            if rows.is_empty() {
                return none();
            }
            if rows.len() == 1 && request.filters.is_empty() {
                let row = &rows[0];
                let (q, v) = (quarter_of(row), row.get(2).and_then(as_f64));
                if let (Some(q), Some(v)) = (q, v) {
                    let at = Period::quarter(q).describe(lang);
                    return format!("{} {at}: {}.", capitalise(name), amount(metric, v, lang));
                }
            }
            let sorted = match (order, ru) {
                (Some(Direction::Desc), true) => ", по убыванию",
                (Some(Direction::Asc), true) => ", по возрастанию",
                (Some(Direction::Desc), false) => ", highest first",
                (Some(Direction::Asc), false) => ", lowest first",
                (None, _) => "",
            };
            let head = if ru {
                format!(
                    "{} {when}{filters}, по кварталам{sorted}: {}.",
                    capitalise(name),
                    quarters(rows.len() as u64, lang)
                )
            } else {
                format!(
                    "{} {when}{filters}, by quarter{sorted}: {}.",
                    capitalise(name),
                    quarters(rows.len() as u64, lang)
                )
            };
            format!("{head}\n{}", table(lang, metric, result))
        }
        Operation::Aggregate {
            function: Aggregation::Count,
        } => {
            let row = rows.first().map(Vec::as_slice).unwrap_or(&[]);
            let q = row.first().and_then(as_u64).unwrap_or(0);
            let y = row.get(1).and_then(as_u64).unwrap_or(0);
            let where_ = &filters;
            if ru {
                let years = match y {
                    1 => "в одном году".to_owned(),
                    n => format!(
                        "в {n} {}",
                        plural_ru(n, "году", "разных годах", "разных годах")
                    ),
                };
                format!("Число кварталов {when}{where_}: {q} ({years}).")
            } else {
                let years = if y == 1 {
                    "in 1 year".to_owned()
                } else {
                    format!("in {y} different years")
                };
                format!("Quarters {when}{where_}: {q} ({years}).")
            }
        }
        Operation::Aggregate { function } => {
            let row = rows.first().map(Vec::as_slice).unwrap_or(&[]);
            let (Some(v), Some(n)) = (row.first().and_then(as_f64), row.get(1).and_then(as_u64))
            else {
                return none();
            };
            let how = match (function, ru) {
                (Aggregation::Sum, true) => "сумма по кварталам",
                (Aggregation::Sum, false) => "sum over the quarters",
                (_, true) => "в среднем",
                (_, false) => "average",
            };
            let value = if function == Aggregation::Sum && metric.is_percent() {
                // A sum of rates has no unit of its own.
                number(v, lang)
            } else {
                amount(metric, v, lang)
            };
            format!(
                "{} {when}{filters}, {how}: {value} ({}).",
                capitalise(name),
                quarters(n, lang)
            )
        }
        Operation::Rank { direction } => {
            if rows.is_empty() {
                return none();
            }
            let high = direction == Direction::Desc;
            if rows.len() == 1 {
                let row = &rows[0];
                let (Some(q), Some(v)) = (quarter_of(row), row.get(2).and_then(as_f64)) else {
                    return none();
                };
                return if ru {
                    let which = if high {
                        "максимум"
                    } else {
                        "минимум"
                    };
                    format!(
                        "{} {when}{filters}: {which} {} — {}.",
                        capitalise(name),
                        amount(metric, v, lang),
                        q.label(lang)
                    )
                } else {
                    let which = if high { "Highest" } else { "Lowest" };
                    format!(
                        "{which} {name} {when}{filters}: {} in {}.",
                        amount(metric, v, lang),
                        q.label(lang)
                    )
                };
            }
            let head = if ru {
                let which = if high {
                    "наибольшими"
                } else {
                    "наименьшими"
                };
                format!(
                    "{} {when}{filters}: {} с {which} значениями.",
                    capitalise(name),
                    quarters(rows.len() as u64, lang)
                )
            } else {
                let which = if high { "highest" } else { "lowest" };
                format!(
                    "The {} with the {which} {name} {when}{filters}.",
                    quarters(rows.len() as u64, lang)
                )
            };
            format!("{head}\n{}", table(lang, metric, result))
        }
        Operation::Grouped {
            by,
            function,
            order,
        } => {
            if rows.is_empty() {
                return none();
            }
            let how = match (function, ru) {
                (Aggregation::Sum, true) => "сумма",
                (Aggregation::Max, true) => "максимум",
                (Aggregation::Min, true) => "минимум",
                (Aggregation::Count, true) => "число кварталов",
                (_, true) => "в среднем",
                (Aggregation::Sum, false) => "total",
                (Aggregation::Max, false) => "maximum",
                (Aggregation::Min, false) => "minimum",
                (Aggregation::Count, false) => "number of quarters",
                (_, false) => "average",
            };
            let unit = match (by, ru) {
                (Grouping::Year, true) => "годам",
                (Grouping::Decade, true) => "десятилетиям",
                (Grouping::Year, false) => "year",
                (Grouping::Decade, false) => "decade",
            };
            if rows.len() == 1 && order.is_some() && function != Aggregation::Count {
                let row = &rows[0];
                if let (Some(key), Some(v)) = (
                    row.first().and_then(Value::as_i64),
                    row.get(1).and_then(as_f64),
                ) {
                    let key = match by {
                        Grouping::Year => key.to_string(),
                        Grouping::Decade if ru => format!("{key}-е"),
                        Grouping::Decade => format!("the {key}s"),
                    };
                    let high = order == Some(Direction::Desc);
                    return if ru {
                        let which = if high {
                            "наибольшим"
                        } else {
                            "наименьшим"
                        };
                        let what = match by {
                            Grouping::Year => "Год",
                            Grouping::Decade => "Десятилетие",
                        };
                        format!(
                            "{what} с {which} значением ({name}, {how}) {when}{filters}: {key} — {}.",
                            amount(metric, v, lang)
                        )
                    } else {
                        let which = if high { "highest" } else { "lowest" };
                        format!(
                            "The {unit} with the {which} {how} {name} {when}{filters}: {key} ({}).",
                            amount(metric, v, lang)
                        )
                    };
                }
            }
            let sorted = match (order, ru) {
                (Some(Direction::Desc), true) => ", по убыванию",
                (Some(Direction::Asc), true) => ", по возрастанию",
                (Some(Direction::Desc), false) => ", highest first",
                (Some(Direction::Asc), false) => ", lowest first",
                (None, _) => "",
            };
            if let (Some(direction), Some(_)) = (order, request.limit)
                && function != Aggregation::Count
            {
                let n = rows.len() as u64;
                let high = direction == Direction::Desc;
                let head = if ru {
                    let what = match by {
                        Grouping::Year => plural_ru(n, "год", "года", "лет"),
                        Grouping::Decade => {
                            plural_ru(n, "десятилетие", "десятилетия", "десятилетий")
                        }
                    };
                    let which = if high {
                        "наибольшими"
                    } else {
                        "наименьшими"
                    };
                    format!(
                        "{} {when}{filters}: {n} {what} с {which} значениями ({how}):",
                        capitalise(name)
                    )
                } else {
                    let what = match (by, n) {
                        (Grouping::Year, 1) => "year",
                        (Grouping::Year, _) => "years",
                        (Grouping::Decade, 1) => "decade",
                        (Grouping::Decade, _) => "decades",
                    };
                    let which = if high { "highest" } else { "lowest" };
                    format!("The {n} {what} with the {which} {how} {name} {when}{filters}:")
                };
                return format!("{head}\n{}", table(lang, metric, result));
            }
            let head = if ru {
                format!(
                    "{} {when}{filters} по {unit}, {how}{sorted}:",
                    capitalise(name)
                )
            } else {
                format!(
                    "{} {name} by {unit} {when}{filters}{sorted}:",
                    capitalise(how)
                )
            };
            format!("{head}\n{}", table(lang, metric, result))
        }
        Operation::Change => {
            let points: Vec<(Quarter, f64)> = rows
                .iter()
                .filter_map(|row| Some((quarter_of(row)?, row.get(2).and_then(as_f64)?)))
                .collect();
            match points.as_slice() {
                [] => none(),
                [(q1, v1), (q2, v2), ..] if q1 != q2 => {
                    let d = v2 - v1;
                    let pct = if *v1 != 0.0 {
                        Some(d / v1.abs() * 100.0)
                    } else {
                        None
                    };
                    let pct = match (pct, metric.is_percent(), ru) {
                        // A change of a rate is in percentage points.
                        (_, true, true) => " п.п.".to_owned(),
                        (_, true, false) => " percentage points".to_owned(),
                        (Some(p), false, true) => format!(" ({} %)", signed(p, lang)),
                        (Some(p), false, false) => format!(" ({}%)", signed(p, lang)),
                        (None, false, _) => String::new(),
                    };
                    let unit = if metric.is_percent() || metric.unit(lang).starts_with('(') {
                        String::new()
                    } else {
                        format!(" {}", metric.unit(lang))
                    };
                    if ru {
                        format!(
                            "{} {when}{filters}: с {} ({}) до {} ({}), изменение {}{unit}{pct}.",
                            capitalise(name),
                            amount(metric, *v1, lang),
                            q1.label(lang),
                            amount(metric, *v2, lang),
                            q2.label(lang),
                            signed(d, lang)
                        )
                    } else {
                        format!(
                            "{} {when}{filters}: from {} in {} to {} in {}, a change of {}{unit}{pct}.",
                            capitalise(name),
                            amount(metric, *v1, lang),
                            q1.label(lang),
                            amount(metric, *v2, lang),
                            q2.label(lang),
                            signed(d, lang)
                        )
                    }
                }
                [(q, v), ..] => {
                    if ru {
                        format!(
                            "{} {when}{filters}: только один квартал ({}), {} — изменения нет.",
                            capitalise(name),
                            q.label(lang),
                            amount(metric, *v, lang)
                        )
                    } else {
                        format!(
                            "{} {when}{filters}: only one quarter ({}), {} — no change to measure.",
                            capitalise(name),
                            q.label(lang),
                            amount(metric, *v, lang)
                        )
                    }
                }
            }
        }
        Operation::Point { at } => {
            let Some((q, v)) = rows
                .first()
                .and_then(|row| Some((quarter_of(row)?, row.get(2).and_then(as_f64)?)))
            else {
                return none();
            };
            let whole = period == Period::coverage() && request.filters.is_empty();
            match (at, ru, whole) {
                (Edge::Last, true, true) => format!(
                    "{}, последнее значение в данных: {} ({}; данные заканчиваются на нём).",
                    capitalise(name),
                    amount(metric, v, lang),
                    q.label(lang)
                ),
                (Edge::Last, false, true) => format!(
                    "Latest {name} in the data: {} ({}; the data end there).",
                    amount(metric, v, lang),
                    q.label(lang)
                ),
                (_, true, _) => {
                    let which = if at == Edge::Last {
                        "последнее"
                    } else {
                        "первое"
                    };
                    format!(
                        "{} {when}{filters}, {which} значение: {} ({}).",
                        capitalise(name),
                        amount(metric, v, lang),
                        q.label(lang)
                    )
                }
                (_, false, _) => {
                    let which = if at == Edge::Last { "last" } else { "first" };
                    format!(
                        "{} {when}{filters}, {which} value: {} ({}).",
                        capitalise(name),
                        amount(metric, v, lang),
                        q.label(lang)
                    )
                }
            }
        }
    }
}

/// A column's header in `lang`.
fn header(column: &str, metric: Measure, lang: Lang) -> String {
    let ru = lang == Lang::Ru;
    let unit = metric.unit(lang);
    let named = |how: &str| {
        if how.is_empty() {
            format!("{}, {unit}", metric.name(lang))
        } else {
            format!("{how} {}, {unit}", metric.name(lang))
        }
    };
    match column {
        "year" => (if ru { "год" } else { "year" }).to_owned(),
        "quarter" => (if ru { "квартал" } else { "quarter" }).to_owned(),
        "decade" => (if ru {
            "десятилетие"
        } else {
            "decade"
        })
        .to_owned(),
        "quarters" => (if ru { "кварталов" } else { "quarters" }).to_owned(),
        "years" => (if ru { "лет" } else { "years" }).to_owned(),
        other => {
            let how = other.split('_').next().unwrap_or("");
            match (how, ru) {
                ("avg", true) => named("ср."),
                ("avg", false) => named("average"),
                ("sum", true) => named("сумма:"),
                ("sum", false) => named("total"),
                ("max", true) => named("макс."),
                ("max", false) => named("maximum"),
                ("min", true) => named("мин."),
                ("min", false) => named("minimum"),
                _ => named(""),
            }
        }
    }
}

/// The rows as an aligned plain-text table (at most [`SHOWN_ROWS`]).
fn table(lang: Lang, metric: Measure, result: &DataResult) -> String {
    let headers: Vec<String> = result
        .columns
        .iter()
        .map(|c| header(c, metric, lang))
        .collect();
    let integer = |c: &str| matches!(c, "year" | "quarter" | "decade" | "quarters" | "years");
    let cells: Vec<Vec<String>> = result
        .rows
        .iter()
        .take(SHOWN_ROWS)
        .map(|row| {
            row.iter()
                .zip(&result.columns)
                .map(|(value, column)| match value {
                    Value::Number(n) if column == "decade" => match (n.as_i64(), lang) {
                        (Some(d), Lang::Ru) => format!("{d}-е"),
                        (Some(d), _) => format!("{d}s"),
                        (None, _) => n.to_string(),
                    },
                    Value::Number(n) if integer(column) => {
                        n.as_i64().map_or_else(|| n.to_string(), |i| i.to_string())
                    }
                    Value::Number(n) => n.as_f64().map_or_else(String::new, |x| number(x, lang)),
                    Value::Null => "—".to_owned(),
                    other => other.to_string(),
                })
                .collect()
        })
        .collect();
    let widths: Vec<usize> = headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            cells
                .iter()
                .map(|row| row.get(i).map_or(0, |c| c.chars().count()))
                .chain([h.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |row: &[String]| {
        row.iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:>width$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_owned()
    };
    let mut out = vec![line(&headers)];
    out.extend(cells.iter().map(|row| line(row)));
    let hidden = result.rows.len().saturating_sub(SHOWN_ROWS);
    if hidden > 0 {
        out.push(match lang {
            Lang::Ru => format!(
                "… и ещё {hidden} {} (все строки — в поле `data`, например agent run data --json)",
                plural_ru(hidden as u64, "строка", "строки", "строк")
            ),
            _ => format!(
                "… and {hidden} more rows (all of them are in `data`, e.g. agent run data --json)"
            ),
        });
    }
    if result.truncated {
        out.push(match lang {
            Lang::Ru => "(результат обрезан по лимиту строк)".to_owned(),
            _ => "(the result was cut at the row limit)".to_owned(),
        });
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_plurals() {
        assert_eq!(number(5.8, Lang::En), "5.80");
        assert_eq!(number(5.8, Lang::Ru), "5,80");
        assert_eq!(amount(Measure::Unemp, 10.7, Lang::En), "10.70%");
        assert_eq!(amount(Measure::Unemp, 10.7, Lang::Ru), "10,70 %");
        assert_eq!(
            amount(Measure::Realgdp, 12990.341, Lang::En),
            "12990.34 bn 2005 $"
        );
        assert_eq!(signed(-0.4, Lang::Ru), "−0,40");
        assert_eq!(quarters(1, Lang::Ru), "1 квартал");
        assert_eq!(quarters(3, Lang::Ru), "3 квартала");
        assert_eq!(quarters(12, Lang::Ru), "12 кварталов");
        assert_eq!(quarters(21, Lang::Ru), "21 квартал");
        assert_eq!(quarters(1, Lang::En), "1 quarter");
    }

    #[test]
    fn tables_align_and_say_what_is_hidden() {
        let result = DataResult {
            request: "r1".into(),
            columns: vec!["year".into(), "quarter".into(), "unemp".into()],
            rows: (0..45)
                .map(|i| {
                    vec![
                        Value::from(1960 + i / 4),
                        Value::from(i % 4 + 1),
                        Value::from(5.5),
                    ]
                })
                .collect(),
            ..DataResult::default()
        };
        let text = table(Lang::En, Measure::Unemp, &result);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "year  quarter  unemployment rate, %");
        assert_eq!(lines[1], "1960        1                  5.50");
        assert_eq!(lines.len(), 1 + SHOWN_ROWS + 1);
        assert!(lines[41].contains("5 more rows"));
        let text = table(Lang::Ru, Measure::Unemp, &result);
        assert!(
            text.starts_with(" год  квартал  уровень безработицы, %"),
            "{text}"
        );
    }
}
