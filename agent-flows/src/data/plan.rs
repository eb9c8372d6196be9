//! The planner: parsed steps become typed [`DataRequest`]s checked against the data set's
//! schema. Every name is resolved through the glossary to a [`Measure`] (the column
//! allow-list) or refused; periods are parsed and clipped to the data's coverage; limits are
//! bounded. What cannot be planned becomes a plan error in the user's language — never a
//! panic, never a query on a column the user did not mean.
//!
//! A step may name several measures, periods or computations; each combination becomes a
//! request (at most [`MAX_REQUESTS`]). How atoms become an [`Operation`]:
//!
//! | atoms | operation |
//! | --- | --- |
//! | no computation, no grouping | `series`: the quarters, by time or by value (`order`), `limit` rows |
//! | `avg` / `sum` / `count` | `aggregate`: one number over the period |
//! | `max` / `min` without grouping | `rank`: the quarters with the highest / lowest values (`limit`, default 1), so the answer says when |
//! | `group_by` (+ computation, default `avg`) | `grouped`: one row per year or decade, by time or by value |
//! | `change` | `change`: first and last quarter of the period, absolute and percent |
//! | `first` / `last` | `point`: the value of the period's first / last quarter |

use serde::{Deserialize, Serialize};

use super::glossary::{COUNTRIES, GLOSSARY, MISSING, Measure};
use super::period::{Period, Quarter, parse_bound};
use super::query::{Aggregation, Atom, Comparison, Direction, FilterValue, Grouping, Step};
use super::tokens::{Tok, find_all, tokenize};
use crate::lang::Lang;

/// The most requests one question may become.
pub const MAX_REQUESTS: usize = 8;
/// The most rows a request may ask for (the data set has 203 quarters).
pub const MAX_LIMIT: u32 = 250;

/// A column a filter may compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum FilterColumn {
    /// A measure.
    Measure(Measure),
    /// The year.
    Year,
    /// The quarter of the year (1-4).
    Quarter,
}

impl FilterColumn {
    /// The SQL column (from the allow-list).
    pub fn column(self) -> &'static str {
        match self {
            FilterColumn::Measure(m) => m.column(),
            FilterColumn::Year => "year",
            FilterColumn::Quarter => "quarter",
        }
    }

    /// Its name in `lang`.
    pub fn name(self, lang: Lang) -> &'static str {
        match (self, lang) {
            (FilterColumn::Measure(m), _) => m.name(lang),
            (FilterColumn::Year, Lang::Ru) => "год",
            (FilterColumn::Year, _) => "year",
            (FilterColumn::Quarter, Lang::Ru) => "квартал",
            (FilterColumn::Quarter, _) => "quarter",
        }
    }
}

impl From<FilterColumn> for String {
    fn from(c: FilterColumn) -> String {
        c.column().to_owned()
    }
}

impl TryFrom<String> for FilterColumn {
    type Error = String;
    fn try_from(name: String) -> Result<FilterColumn, String> {
        match name.as_str() {
            "year" => Ok(FilterColumn::Year),
            "quarter" => Ok(FilterColumn::Quarter),
            other => Measure::from_column(other)
                .map(FilterColumn::Measure)
                .ok_or_else(|| format!("unknown column `{other}`")),
        }
    }
}

/// `column op value`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Condition {
    /// The column.
    pub column: FilterColumn,
    /// The comparison.
    pub op: Comparison,
    /// The value (bound as a parameter).
    pub value: f64,
}

/// The first or the last quarter of a period.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Edge {
    /// The first.
    First,
    /// The last.
    Last,
}

/// What a request computes; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Operation {
    /// The quarters themselves.
    Series {
        /// By value instead of by time.
        order: Option<Direction>,
    },
    /// One number over the period: `avg`, `sum` or `count`.
    Aggregate {
        /// The function.
        function: Aggregation,
    },
    /// One row per year or decade.
    Grouped {
        /// Year or decade.
        by: Grouping,
        /// The function per group (`avg`, `sum`, `min`, `max`, `count`).
        function: Aggregation,
        /// By value instead of by time.
        order: Option<Direction>,
    },
    /// The quarters with the highest (`desc`) or lowest (`asc`) values.
    Rank {
        /// Which end.
        direction: Direction,
    },
    /// From the first quarter of the period to the last.
    Change,
    /// The value of the first or last quarter.
    Point {
        /// Which.
        at: Edge,
    },
}

/// One query the executor runs: typed, checked, within the data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DataRequest {
    /// `r1`, `r2`...
    pub id: String,
    /// The step (1-based) it comes from.
    pub step: usize,
    /// The measure.
    pub metric: Measure,
    /// The quarters, within the data's coverage.
    pub period: Period,
    /// Conditions on each quarter.
    pub filters: Vec<Condition>,
    /// What to compute.
    pub operation: Operation,
    /// The most rows (series, grouped, rank).
    pub limit: Option<u32>,
    /// What the planner adjusted (a period cut to the data, a limit lowered), in the user's
    /// language.
    pub notes: Vec<String>,
}

/// The planner's output.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// The requests.
    pub requests: Vec<DataRequest>,
    /// What could not be planned, in the user's language.
    pub errors: Vec<String>,
}

/// What a name in a `metric` atom resolves to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Resolved {
    /// A measure of the data set.
    Known(Measure),
    /// An economic quantity the data set lacks (its English name).
    Missing(&'static str, &'static str),
    /// Nothing known.
    Unknown,
}

/// Words a measure's name may carry besides the glossary phrase ("the real GDP level").
const NAME_FILLER: &[&str] = &[
    "the",
    "of",
    "us",
    "u",
    "s",
    "real",
    "total",
    "level",
    "rate",
    "index",
    "series",
    "value",
    "values",
    "data",
    "usa",
    "american",
    "national",
    "уровень",
    "уровня",
    "показатель",
    "сша",
    "реальный",
    "реальная",
    "реальные",
    "общий",
    "общая",
];

/// Resolves what a model or the parser called a measure: the column name, or a glossary
/// phrase in English or Russian plus harmless filler ("real GDP", "уровень безработицы").
/// Anything with other words or symbols (`realgdp; DROP TABLE`) is unknown.
pub fn resolve_measure(name: &str) -> Resolved {
    if let Some(m) = Measure::from_column(name) {
        return Resolved::Known(m);
    }
    if name.chars().count() > 80 {
        return Resolved::Unknown;
    }
    let tokens = tokenize(name);
    if tokens
        .iter()
        .any(|t| matches!(&t.tok, Tok::Sym(c) if !matches!(c, '-' | '\'' | '&' | '/' | '.' | '(' | ')' | ',')))
    {
        return Resolved::Unknown;
    }
    #[derive(Clone, Copy)]
    enum Hit {
        Measure(Measure),
        Missing(&'static str, &'static str),
    }
    let mut phrases: Vec<(&str, Hit)> = Vec::new();
    for term in GLOSSARY {
        if let Some(m) = term.measure {
            phrases.extend(term.phrases().map(|p| (p, Hit::Measure(m))));
        }
    }
    for missing in MISSING {
        phrases.extend(
            missing
                .phrases
                .iter()
                .map(|p| (*p, Hit::Missing(missing.en, missing.ru))),
        );
    }
    let mut used = vec![false; tokens.len()];
    let hits = find_all(&tokens, &mut used, &phrases);
    let leftover = tokens.iter().zip(&used).any(|(t, used)| {
        !used
            && match &t.tok {
                Tok::Word(w) => !NAME_FILLER.contains(&w.as_str()),
                Tok::Num(..) => true,
                Tok::Sym(_) => false,
            }
    });
    if leftover || hits.is_empty() {
        return Resolved::Unknown;
    }
    if let Some(missing) = hits.iter().find_map(|h| match h.value {
        Hit::Missing(en, ru) => Some((en, ru)),
        Hit::Measure(_) => None,
    }) {
        return Resolved::Missing(missing.0, missing.1);
    }
    let mut measures: Vec<Measure> = hits
        .iter()
        .filter_map(|h| match h.value {
            Hit::Measure(m) => Some(m),
            Hit::Missing(..) => None,
        })
        .collect();
    measures.dedup();
    match measures.as_slice() {
        [m] => Resolved::Known(*m),
        _ => Resolved::Unknown,
    }
}

/// The data set's measures, for messages: "real GDP (realgdp), ...".
pub fn measure_list(lang: Lang) -> String {
    Measure::ALL
        .iter()
        .map(|m| format!("{} ({})", m.name(lang), m.column()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Messages in the user's language.
struct Say(Lang);

impl Say {
    fn ru(&self) -> bool {
        self.0 == Lang::Ru
    }

    fn step(&self, n: usize, text: String) -> String {
        let end = if text.ends_with('.') { "" } else { "." };
        if self.ru() {
            format!("Шаг {n}: {text}{end}")
        } else {
            format!("Step {n}: {text}{end}")
        }
    }

    fn coverage(&self) -> String {
        let all = Period::coverage();
        format!("{} – {}", all.from.label(self.0), all.to.label(self.0))
    }
}

/// Plans `steps` for a user writing in `lang`; see the module docs.
pub fn plan(steps: &[Step], lang: Lang) -> Plan {
    let say = Say(lang);
    let mut out = Plan::default();
    if steps.is_empty() {
        out.errors.push(if say.ru() {
            format!(
                "Вопрос не удалось превратить в запрос к данным. Спросите об одном из показателей: {}.",
                measure_list(lang)
            )
        } else {
            format!(
                "I could not turn the question into a query of the data. Ask about one of: {}.",
                measure_list(lang)
            )
        });
        return out;
    }
    let mut total = 0usize;
    for (index, step) in steps.iter().enumerate() {
        let n = index + 1;
        match plan_step(step, n, &say) {
            Ok(requests) => {
                for mut request in requests {
                    total += 1;
                    if out.requests.len() < MAX_REQUESTS {
                        request.id = format!("r{}", out.requests.len() + 1);
                        out.requests.push(request);
                    }
                }
            }
            Err(errors) => out.errors.extend(errors),
        }
    }
    if total > MAX_REQUESTS {
        out.errors.push(if say.ru() {
            format!(
                "Вопрос требует {total} запросов; выполнены первые {MAX_REQUESTS}. Задайте остальное отдельно."
            )
        } else {
            format!(
                "The question needs {total} queries; the first {MAX_REQUESTS} were run. Ask for the rest separately."
            )
        });
    }
    out
}

fn plan_step(step: &Step, n: usize, say: &Say) -> Result<Vec<DataRequest>, Vec<String>> {
    let lang = say.0;
    let mut errors = Vec::new();
    let mut notes = Vec::new();
    let mut metrics: Vec<Measure> = Vec::new();
    let mut periods: Vec<Period> = Vec::new();
    let mut filters: Vec<Condition> = Vec::new();
    let mut groups: Vec<Grouping> = Vec::new();
    let mut functions: Vec<Aggregation> = Vec::new();
    let mut orders: Vec<Direction> = Vec::new();
    let mut limits: Vec<i64> = Vec::new();
    for atom in &step.atoms {
        match atom {
            Atom::Metric { name } => match resolve_measure(name) {
                Resolved::Known(m) => {
                    if !metrics.contains(&m) {
                        metrics.push(m);
                    }
                }
                Resolved::Missing(en, ru) => errors.push(say.step(
                    n,
                    if say.ru() {
                        format!(
                            "в данных нет показателя «{ru}». Есть только макроэкономические ряды США: {}.",
                            measure_list(lang)
                        )
                    } else {
                        format!(
                            "the data set has no {en}. It holds US macroeconomic series only: {}.",
                            measure_list(lang)
                        )
                    },
                )),
                Resolved::Unknown => errors.push(say.step(
                    n,
                    if say.ru() {
                        format!(
                            "неизвестный показатель «{}». Доступны: {}.",
                            clip(name),
                            measure_list(lang)
                        )
                    } else {
                        format!(
                            "unknown measure “{}”. The data set has: {}.",
                            clip(name),
                            measure_list(lang)
                        )
                    },
                )),
            },
            Atom::Filter { column, op, value } => match filter(column, *op, value, say) {
                Ok(condition) => filters.push(condition),
                Err(message) => errors.push(say.step(n, message)),
            },
            Atom::TimeRange { from, to } => match period(from, to, say) {
                Ok((period, note)) => {
                    notes.extend(note);
                    periods.push(period);
                }
                Err(message) => errors.push(say.step(n, message)),
            },
            Atom::GroupBy { by } => {
                if !groups.contains(by) {
                    groups.push(*by);
                }
            }
            Atom::Aggregate { function } => {
                if !functions.contains(function) {
                    functions.push(*function);
                }
            }
            Atom::Order { direction } => {
                if !orders.contains(direction) {
                    orders.push(*direction);
                }
            }
            Atom::Limit { count } => {
                if !limits.contains(count) {
                    limits.push(*count);
                }
            }
        }
    }
    if metrics.is_empty() && errors.is_empty() {
        errors.push(say.step(
            n,
            if say.ru() {
                format!(
                    "не указан показатель. Спросите об одном из: {}.",
                    measure_list(lang)
                )
            } else {
                format!(
                    "no measure named. Ask about one of: {}.",
                    measure_list(lang)
                )
            },
        ));
    }
    if groups.len() > 1 {
        errors.push(say.step(
            n,
            if say.ru() {
                "две разные группировки (по годам и по десятилетиям); выберите одну".to_owned()
            } else {
                "two different groupings (by year and by decade); ask for one".to_owned()
            },
        ));
    }
    if orders.len() > 1 {
        errors.push(say.step(
            n,
            if say.ru() {
                "сортировка и по возрастанию, и по убыванию; выберите одну".to_owned()
            } else {
                "both ascending and descending order; ask for one".to_owned()
            },
        ));
    }
    if limits.len() > 1 {
        errors.push(say.step(
            n,
            if say.ru() {
                format!("несколько разных ограничений числа строк ({limits:?}); укажите одно")
            } else {
                format!("several different row limits ({limits:?}); give one")
            },
        ));
    }
    let limit = match limits.first() {
        None => None,
        Some(&count) if count < 1 => {
            errors.push(say.step(
                n,
                if say.ru() {
                    format!("число строк должно быть не меньше 1, а не {count}")
                } else {
                    format!("a row limit must be at least 1, not {count}")
                },
            ));
            None
        }
        Some(&count) if count > i64::from(MAX_LIMIT) => {
            notes.push(if say.ru() {
                format!("ограничение {count} снижено до {MAX_LIMIT} строк")
            } else {
                format!("the limit of {count} was lowered to {MAX_LIMIT} rows")
            });
            Some(MAX_LIMIT)
        }
        Some(&count) => u32::try_from(count).ok(),
    };
    let group = groups.first().copied();
    let order = orders.first().copied();
    let change = functions.contains(&Aggregation::Change);
    if change && functions.len() > 1 {
        let others: Vec<&str> = functions
            .iter()
            .filter(|f| **f != Aggregation::Change)
            .map(|f| f.name())
            .collect();
        errors.push(say.step(
            n,
            if say.ru() {
                format!(
                    "изменение за период нельзя совмещать с {} (ранжировать темпы роста я не умею); спросите по отдельности",
                    others.join(", ")
                )
            } else {
                format!(
                    "a change over the period cannot be combined with {} (growth rates are not ranked); ask for them separately",
                    others.join(", ")
                )
            },
        ));
    }
    if let Some(by) = group {
        for f in &functions {
            if matches!(
                f,
                Aggregation::Change | Aggregation::First | Aggregation::Last
            ) {
                let by = match (by, say.ru()) {
                    (Grouping::Year, true) => "годам",
                    (Grouping::Decade, true) => "десятилетиям",
                    (Grouping::Year, false) => "year",
                    (Grouping::Decade, false) => "decade",
                };
                errors.push(say.step(
                    n,
                    if say.ru() {
                        format!(
                            "«{}» считается по всему периоду и не группируется по {by}",
                            f.name()
                        )
                    } else {
                        format!(
                            "`{}` is computed over a whole period and cannot be grouped by {by}",
                            f.name()
                        )
                    },
                ));
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let operations: Vec<Operation> = if functions.is_empty() {
        vec![match group {
            Some(by) => Operation::Grouped {
                by,
                function: Aggregation::Avg,
                order,
            },
            None => Operation::Series { order },
        }]
    } else {
        functions
            .iter()
            .map(|&function| match (function, group) {
                (Aggregation::Change, _) => Operation::Change,
                (Aggregation::First, _) => Operation::Point { at: Edge::First },
                (Aggregation::Last, _) => Operation::Point { at: Edge::Last },
                (_, Some(by)) => Operation::Grouped {
                    by,
                    function,
                    order: order.or(match (function, limit) {
                        (Aggregation::Max, Some(_)) => Some(Direction::Desc),
                        (Aggregation::Min, Some(_)) => Some(Direction::Asc),
                        _ => None,
                    }),
                },
                (Aggregation::Max, None) => Operation::Rank {
                    direction: Direction::Desc,
                },
                (Aggregation::Min, None) => Operation::Rank {
                    direction: Direction::Asc,
                },
                (function, None) => Operation::Aggregate { function },
            })
            .collect()
    };
    if periods.is_empty() {
        periods.push(Period::coverage());
    }
    let mut requests = Vec::new();
    for metric in &metrics {
        for period in &periods {
            for operation in &operations {
                let mut notes = notes.clone();
                let takes_limit = matches!(
                    operation,
                    Operation::Series { .. } | Operation::Grouped { .. } | Operation::Rank { .. }
                );
                if limit.is_some() && !takes_limit {
                    notes.push(if say.ru() {
                        "ограничение числа строк не применяется к одному значению".to_owned()
                    } else {
                        "a row limit does not apply to a single value; ignored".to_owned()
                    });
                }
                requests.push(DataRequest {
                    id: String::new(),
                    step: n,
                    metric: *metric,
                    period: *period,
                    filters: filters.clone(),
                    operation: *operation,
                    limit: match operation {
                        Operation::Rank { .. } => Some(limit.unwrap_or(1)),
                        _ if takes_limit => limit,
                        _ => None,
                    },
                    notes,
                });
            }
        }
    }
    Ok(requests)
}

fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(60).collect();
    if text.chars().count() > 60 {
        out.push('…');
    }
    out
}

fn filter(
    column: &str,
    op: Comparison,
    value: &FilterValue,
    say: &Say,
) -> Result<Condition, String> {
    let folded = crate::lang::fold(column.trim());
    let resolved = match folded.as_str() {
        "year" | "год" | "years" => Ok(FilterColumn::Year),
        "quarter" | "квартал" => Ok(FilterColumn::Quarter),
        _ => match resolve_measure(column) {
            Resolved::Known(m) => Ok(FilterColumn::Measure(m)),
            Resolved::Missing(en, ru) => Err(if say.ru() {
                format!("в данных нет показателя «{ru}», по нему нельзя фильтровать")
            } else {
                format!("the data set has no {en} to filter on")
            }),
            Resolved::Unknown => {
                let place = match value {
                    FilterValue::Text(t) => COUNTRIES
                        .iter()
                        .find(|c| c.en.eq_ignore_ascii_case(t) || c.ru == t)
                        .map(|c| c.name(say.0).to_owned())
                        .or_else(|| Some(clip(t))),
                    FilterValue::Number(_) => None,
                };
                let geographic = matches!(
                    folded.as_str(),
                    "country" | "region" | "state" | "nation" | "страна" | "регион"
                );
                Err(match (geographic, place, say.ru()) {
                    (true, Some(place), true) => format!(
                        "данные есть только по США; по «{place}» их нет (столбца «{}» в данных нет)",
                        clip(column)
                    ),
                    (true, Some(place), false) => format!(
                        "the data set covers the United States only; there is nothing on {place} (it has no column “{}”)",
                        clip(column)
                    ),
                    (_, _, true) => format!(
                        "неизвестный столбец «{}»; фильтровать можно по показателям, году и кварталу",
                        clip(column)
                    ),
                    (_, _, false) => format!(
                        "unknown column “{}”; filters take a measure, year or quarter",
                        clip(column)
                    ),
                })
            }
        },
    }?;
    match value {
        FilterValue::Number(x) if x.is_finite() => Ok(Condition {
            column: resolved,
            op,
            value: *x,
        }),
        FilterValue::Number(_) => Err(if say.ru() {
            "значение фильтра должно быть конечным числом".to_owned()
        } else {
            "a filter's value must be a finite number".to_owned()
        }),
        FilterValue::Text(text) => Err(if say.ru() {
            format!(
                "«{}» можно сравнивать только с числом (например «выше 5»), а не с «{}»",
                resolved.name(say.0),
                clip(text)
            )
        } else {
            format!(
                "{} can only be compared with a number (say “above 5”), not with “{}”",
                resolved.name(say.0),
                clip(text)
            )
        }),
    }
}

fn period(from: &str, to: &str, say: &Say) -> Result<(Period, Option<String>), String> {
    let bound = |text: &str, first: bool| -> Result<Quarter, String> {
        if text.trim().is_empty() {
            return Ok(if first {
                Quarter::first()
            } else {
                Quarter::last()
            });
        }
        let (a, b) = parse_bound(text).map_err(|e| {
            if say.ru() {
                format!(
                    "период «{}» не распознан; пишите год (2008), квартал (2008Q3) или десятилетие (1970s)",
                    clip(text)
                )
            } else {
                e
            }
        })?;
        Ok(if first { a } else { b })
    };
    let mut a = bound(from, true)?;
    let mut b = bound(to, false)?;
    let mut notes = Vec::new();
    if a > b {
        std::mem::swap(&mut a, &mut b);
        // The swapped bounds are whole: the first quarter of the earlier, the last of the
        // later.
        if let (Ok((a2, _)), Ok((_, b2))) = (parse_bound(to), parse_bound(from)) {
            a = a2;
            b = b2;
        }
        notes.push(if say.ru() {
            "границы периода переставлены по порядку".to_owned()
        } else {
            "the period's bounds were put in order".to_owned()
        });
    }
    let asked = Period { from: a, to: b };
    let Some(inside) = asked.within_coverage() else {
        return Err(if say.ru() {
            format!(
                "период {} вне данных: они охватывают {}",
                bare_period(asked, say.0),
                say.coverage()
            )
        } else {
            format!(
                "{} is outside the data, which cover {}",
                bare_period(asked, say.0),
                say.coverage()
            )
        });
    };
    if inside != asked {
        notes.push(if say.ru() {
            format!(
                "данные охватывают {}: период сокращён до {}",
                say.coverage(),
                bare_period(inside, say.0)
            )
        } else {
            format!(
                "the data cover {}: the period was cut to {}",
                say.coverage(),
                bare_period(inside, say.0)
            )
        });
    }
    Ok((inside, (!notes.is_empty()).then(|| notes.join("; "))))
}

/// A period without its preposition: "2008", "2000–2008", "2008 Q3 – 2009 Q1".
pub fn bare_period(period: Period, lang: Lang) -> String {
    if period.from.q == 1 && period.to.q == 4 {
        if period.from.year == period.to.year {
            return period.from.year.to_string();
        }
        return format!("{}–{}", period.from.year, period.to.year);
    }
    if period.from == period.to {
        return period.from.label(lang);
    }
    format!("{} – {}", period.from.label(lang), period.to.label(lang))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(atoms: serde_json::Value) -> Step {
        serde_json::from_value(serde_json::json!({ "atoms": atoms })).unwrap()
    }

    #[test]
    fn names_resolve_through_the_glossary_or_not_at_all() {
        for (name, expected) in [
            ("unemp", Some(Measure::Unemp)),
            ("Unemployment rate", Some(Measure::Unemp)),
            ("the real GDP", Some(Measure::Realgdp)),
            ("уровень безработицы", Some(Measure::Unemp)),
            ("ВВП", Some(Measure::Realgdp)),
            ("3-month treasury bill rate", Some(Measure::Tbilrate)),
            ("real interest rate", Some(Measure::Realint)),
            ("M1", Some(Measure::M1)),
        ] {
            assert_eq!(
                resolve_measure(name),
                expected.map_or(Resolved::Unknown, Resolved::Known),
                "{name}"
            );
        }
        assert!(matches!(
            resolve_measure("gold price"),
            Resolved::Missing("gold price", _)
        ));
        for bad in [
            "realgdp; DROP TABLE macrodata",
            "unemp) OR 1=1 --",
            "GDP and unemployment",
            "weather",
            "",
            &"gdp ".repeat(100),
        ] {
            assert_eq!(resolve_measure(bad), Resolved::Unknown, "{bad}");
        }
    }

    #[test]
    fn atoms_become_operations() {
        let plan = plan(
            &[step(serde_json::json!([
                {"atom": "metric", "name": "unemp"},
                {"atom": "time_range", "from": "1980", "to": "1989"},
                {"atom": "aggregate", "function": "max"},
                {"atom": "aggregate", "function": "avg"},
            ]))],
            Lang::En,
        );
        assert!(plan.errors.is_empty(), "{:?}", plan.errors);
        let ops: Vec<Operation> = plan.requests.iter().map(|r| r.operation).collect();
        assert_eq!(
            ops,
            [
                Operation::Rank {
                    direction: Direction::Desc
                },
                Operation::Aggregate {
                    function: Aggregation::Avg
                }
            ]
        );
        assert_eq!(plan.requests[0].limit, Some(1));
        assert_eq!(plan.requests[1].id, "r2");
        assert_eq!(plan.requests[0].period, Period::years(1980, 1989));

        let plan = super::plan(
            &[step(serde_json::json!([
                {"atom": "metric", "name": "infl"},
                {"atom": "group_by", "by": "year"},
                {"atom": "aggregate", "function": "max"},
                {"atom": "limit", "count": 3},
            ]))],
            Lang::En,
        );
        assert_eq!(
            plan.requests[0].operation,
            Operation::Grouped {
                by: Grouping::Year,
                function: Aggregation::Max,
                order: Some(Direction::Desc)
            }
        );
        assert_eq!(plan.requests[0].period, Period::coverage());
    }

    #[test]
    fn what_cannot_be_planned_is_said_in_the_users_language() {
        let plan = plan(
            &[step(serde_json::json!([
                {"atom": "metric", "name": "gold price"},
                {"atom": "time_range", "from": "2015", "to": "2016"},
                {"atom": "filter", "column": "country", "op": "eq", "value": "Germany"},
                {"atom": "limit", "count": 0},
            ]))],
            Lang::Ru,
        );
        assert!(plan.requests.is_empty());
        let all = plan.errors.join("\n");
        assert!(all.contains("нет показателя «цена золота»"), "{all}");
        assert!(all.contains("вне данных"), "{all}");
        assert!(all.contains("только по США"), "{all}");
        assert!(all.contains("не меньше 1, а не 0"), "{all}");

        let plan = super::plan(
            &[step(serde_json::json!([
                {"atom": "metric", "name": "realgdp; DROP TABLE macrodata"},
                {"atom": "time_range", "from": "2008Q5", "to": "2008Q5"},
                {"atom": "filter", "column": "infl", "op": "gt", "value": "in 1980"},
            ]))],
            Lang::En,
        );
        let all = plan.errors.join("\n");
        assert!(
            all.contains("unknown measure “realgdp; DROP TABLE macrodata”"),
            "{all}"
        );
        assert!(all.contains("quarters 1 to 4"), "{all}");
        assert!(all.contains("compared with a number"), "{all}");
        assert_eq!(super::plan(&[], Lang::En).errors.len(), 1);
    }

    #[test]
    fn periods_are_cut_to_the_data_and_limits_bounded() {
        let plan = plan(
            &[step(serde_json::json!([
                {"atom": "metric", "name": "pop"},
                {"atom": "time_range", "from": "2012", "to": "2005"},
                {"atom": "limit", "count": 100000000},
            ]))],
            Lang::En,
        );
        let r = &plan.requests[0];
        assert_eq!(r.period.from, Quarter::new(2005, 1).unwrap());
        assert_eq!(r.period.to, Quarter::last());
        assert_eq!(r.limit, Some(MAX_LIMIT));
        assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
        assert!(r.notes[0].contains("put in order"), "{:?}", r.notes);
        assert!(
            r.notes[0].contains("cut to 2005 Q1 – 2009 Q3"),
            "{:?}",
            r.notes
        );
        assert!(r.notes[1].contains("lowered to 250"), "{:?}", r.notes);
    }

    #[test]
    fn many_combinations_are_capped() {
        let atoms: Vec<serde_json::Value> = Measure::ALL
            .iter()
            .map(|m| serde_json::json!({"atom": "metric", "name": m.column()}))
            .collect();
        let plan = plan(&[step(serde_json::Value::Array(atoms))], Lang::En);
        assert_eq!(plan.requests.len(), MAX_REQUESTS);
        assert!(
            plan.errors[0].contains("needs 12 queries"),
            "{:?}",
            plan.errors
        );
    }
}
