//! SQL the offline planner writes: one parameterised SELECT per question shape, and the
//! repairs it tries when a query fails (a column that does not exist, a table that is not
//! `macrodata`) or comes back empty (a period the data does not cover).
//!
//! Values always go in parameters; the text only ever holds column names from the data
//! set's own list.

use serde_json::{Value, json};

use super::super::lexicon::{Aggregate, SERIES, When, scan};
use crate::dataset::{COLUMNS, COVERAGE, TABLE};
use crate::lang::words;

/// A query and its parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// The SQL.
    pub sql: String,
    /// The values of `?1`, `?2`...
    pub params: Vec<Value>,
}

impl Query {
    /// The `sql_query` arguments.
    pub fn args(&self) -> Value {
        json!({ "sql": self.sql, "params": self.params })
    }
}

fn query(sql: String, params: Vec<Value>) -> Query {
    Query { sql, params }
}

/// Years of the whole data set.
fn all_years() -> (i64, i64) {
    (COVERAGE.0.0, COVERAGE.1.0)
}

/// Ranges of more than this many years are shown as annual averages.
const MAX_QUARTERLY_YEARS: i64 = 3;

/// The queries that answer `aggregate` of `series` over `when` (one per series for highest
/// and lowest, one for everything else).
pub fn build(series: &[&str], when: When, aggregate: Aggregate) -> Vec<Query> {
    if series.is_empty() {
        return Vec::new();
    }
    let cols = series.join(", ");
    let latest_first = "ORDER BY year DESC, quarter DESC";
    if let When::Pair(a, b) = when {
        // Two years compared: their annual averages side by side, whatever the aggregate.
        return vec![two_years(series, a, b)];
    }
    match aggregate {
        Aggregate::Values => match when {
            When::Unspecified | When::Latest => vec![query(
                format!("SELECT year, quarter, {cols} FROM {TABLE} {latest_first} LIMIT 1"),
                vec![],
            )],
            When::Quarter(y, q) => vec![query(
                format!(
                    "SELECT year, quarter, {cols} FROM {TABLE} WHERE year = ?1 AND quarter = ?2"
                ),
                vec![json!(y), json!(q)],
            )],
            When::Years(a, b) if b - a < MAX_QUARTERLY_YEARS => vec![query(
                format!(
                    "SELECT year, quarter, {cols} FROM {TABLE} WHERE year BETWEEN ?1 AND ?2 ORDER BY year, quarter"
                ),
                vec![json!(a), json!(b)],
            )],
            When::Years(a, b) | When::Pair(a, b) => vec![annual(series, a, b)],
        },
        Aggregate::Max | Aggregate::Min => {
            let (a, b) = when.years().unwrap_or_else(all_years);
            let order = if aggregate == Aggregate::Max {
                "DESC"
            } else {
                "ASC"
            };
            series
                .iter()
                .map(|col| {
                    query(
                        format!(
                            "SELECT year, quarter, {col} FROM {TABLE} WHERE year BETWEEN ?1 AND ?2 ORDER BY {col} {order}, year, quarter LIMIT 1"
                        ),
                        vec![json!(a), json!(b)],
                    )
                })
                .collect()
        }
        Aggregate::Avg => {
            let (a, b) = when.years().unwrap_or_else(all_years);
            let averages: Vec<String> = series
                .iter()
                .map(|c| format!("round(avg({c}), 3) AS avg_{c}"))
                .collect();
            vec![query(
                format!(
                    "SELECT {}, count(*) AS quarters FROM {TABLE} WHERE year BETWEEN ?1 AND ?2",
                    averages.join(", ")
                ),
                vec![json!(a), json!(b)],
            )]
        }
        Aggregate::Change => match when {
            When::Unspecified | When::Latest => vec![query(
                format!(
                    "SELECT * FROM (SELECT year, quarter, {cols} FROM {TABLE} {latest_first} LIMIT 2) ORDER BY year, quarter"
                ),
                vec![],
            )],
            When::Quarter(y, q) => vec![query(
                format!(
                    "SELECT year, quarter, {cols} FROM {TABLE} WHERE year * 4 + quarter BETWEEN ?1 * 4 + ?2 - 1 AND ?1 * 4 + ?2 ORDER BY year, quarter"
                ),
                vec![json!(y), json!(q)],
            )],
            When::Years(a, b) if a == b => vec![annual(series, a - 1, a)],
            When::Years(a, b) | When::Pair(a, b) => vec![query(
                format!(
                    "SELECT * FROM (SELECT year, quarter, {cols} FROM {TABLE} WHERE year BETWEEN ?1 AND ?2 ORDER BY year, quarter LIMIT 1) \
                     UNION ALL SELECT * FROM (SELECT year, quarter, {cols} FROM {TABLE} WHERE year BETWEEN ?1 AND ?2 {latest_first} LIMIT 1)"
                ),
                vec![json!(a), json!(b)],
            )],
        },
    }
}

/// Annual averages of `series`, years `a` to `b`.
fn annual(series: &[&str], a: i64, b: i64) -> Query {
    let averages: Vec<String> = series
        .iter()
        .map(|c| format!("round(avg({c}), 3) AS {c}"))
        .collect();
    query(
        format!(
            "SELECT year, {} FROM {TABLE} WHERE year BETWEEN ?1 AND ?2 GROUP BY year ORDER BY year",
            averages.join(", ")
        ),
        vec![json!(a), json!(b)],
    )
}

/// Annual averages of `series` for years `a` and `b` only.
fn two_years(series: &[&str], a: i64, b: i64) -> Query {
    let averages: Vec<String> = series
        .iter()
        .map(|c| format!("round(avg({c}), 3) AS {c}"))
        .collect();
    query(
        format!(
            "SELECT year, {} FROM {TABLE} WHERE year IN (?1, ?2) GROUP BY year ORDER BY year",
            averages.join(", ")
        ),
        vec![json!(a), json!(b)],
    )
}

/// The nearest quarter the data has for a period it does not cover: the last one for a
/// period after the data, the first one for a period before.
pub fn nearest(series: &[&str], when: When) -> Option<Query> {
    if series.is_empty() || !when.outside_coverage() {
        return None;
    }
    let cols = series.join(", ");
    let after = when.years().is_some_and(|(a, _)| a > COVERAGE.1.0)
        || matches!(when, When::Quarter(y, q) if (y, q) > COVERAGE.1);
    let order = if after {
        "ORDER BY year DESC, quarter DESC"
    } else {
        "ORDER BY year, quarter"
    };
    Some(query(
        format!("SELECT year, quarter, {cols} FROM {TABLE} {order} LIMIT 1"),
        vec![],
    ))
}

/// The column a wrong name most likely meant: a name people use for a series (`gdp`,
/// `unemployment`, `inflation_rate`), or a column one or two edits away (`unemployement`).
pub fn column_for(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    if let Some(column) = COLUMNS.iter().find(|c| c.name == lower) {
        return Some(column.name);
    }
    let spaced = lower.replace(['_', '-'], " ");
    let hits = scan(&words(&spaced), SERIES);
    if let Some(hit) = hits.first() {
        return Some(hit.value);
    }
    // A misspelling of a column or of a one-word series name.
    let names = COLUMNS.iter().map(|c| (c.name, c.name)).chain(
        SERIES
            .iter()
            .filter(|(p, _)| !p.contains(' ') && !p.ends_with('*'))
            .map(|(p, c)| (*p, *c)),
    );
    names
        .filter(|(name, _)| name.len() >= 5 && lower.len() >= 5)
        .map(|(name, column)| (edit_distance(&lower, name), column))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, column)| column)
}

/// Levenshtein distance.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            current[j + 1] = (previous[j] + cost)
                .min(previous[j + 1] + 1)
                .min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

/// `sql` with the identifier `from` replaced by `to` wherever it stands as a whole word
/// (outside quotes).
pub fn replace_identifier(sql: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let chars: Vec<char> = sql.chars().collect();
    let from_chars: Vec<char> = from.chars().collect();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut quote: Option<char> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if let Some(q) = quote {
            out.push(c);
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        if c == '\'' || c == '"' {
            quote = Some(c);
            out.push(c);
            i += 1;
            continue;
        }
        let matches = chars.len() - i >= from_chars.len()
            && chars[i..i + from_chars.len()]
                .iter()
                .zip(&from_chars)
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
            && (i == 0 || !ident(chars[i - 1]))
            && chars.get(i + from_chars.len()).is_none_or(|c| !ident(*c));
        if matches {
            out.push_str(to);
            i += from_chars.len();
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The SQL statement a message holds, when the user wrote one: from the first SQL keyword
/// that starts a statement to the end (quotes and a trailing `?` dropped).
pub fn written_statement(text: &str) -> Option<String> {
    const STARTS: &[&str] = &[
        "select ", "with ", "delete ", "update ", "insert ", "drop ", "create ", "alter ",
        "pragma ", "attach ", "replace ",
    ];
    let lower = text.to_ascii_lowercase();
    let start = STARTS
        .iter()
        .filter_map(|kw| {
            lower.match_indices(kw).find(|(i, _)| {
                *i == 0 || !lower[..*i].ends_with(|c: char| c.is_ascii_alphanumeric())
            })
        })
        .map(|(i, _)| i)
        .min()?;
    let statement = text[start..]
        .trim()
        .trim_end_matches(['`', '"', '\'', '?', '»', '\u{201d}'])
        .trim();
    // A statement has the shape of SQL: "select the best one" in prose is not.
    let lower = statement.to_ascii_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let second = words.get(1).copied().unwrap_or("");
    let sql_like = match words.first().copied().unwrap_or("") {
        "select" | "with" => lower.contains(TABLE) || lower.contains('*') || lower.contains('('),
        "delete" => second == "from",
        "insert" | "replace" => second == "into",
        "update" => words.get(2) == Some(&"set"),
        "drop" | "create" | "alter" => matches!(
            second,
            "table" | "view" | "index" | "trigger" | "temp" | "temporary" | "if" | "unique"
        ),
        "pragma" | "attach" => true,
        _ => false,
    };
    sql_like.then(|| statement.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{Dataset, Limits};

    fn run(q: &Query) -> crate::dataset::Table {
        Dataset::shared()
            .unwrap()
            .select(&q.sql, &q.params, Limits::default())
            .unwrap_or_else(|e| panic!("{}: {e}", q.sql))
    }

    #[test]
    fn every_shape_runs_on_the_data_set() {
        let gdp = ["realgdp"];
        let cases = [
            (When::Years(2008, 2008), Aggregate::Values, 4),
            (When::Quarter(2008, 3), Aggregate::Values, 1),
            (When::Years(1970, 1979), Aggregate::Values, 10),
            (When::Latest, Aggregate::Values, 1),
            (When::Years(1970, 1979), Aggregate::Max, 1),
            (When::Unspecified, Aggregate::Min, 1),
            (When::Years(1970, 1979), Aggregate::Avg, 1),
            (When::Years(2008, 2008), Aggregate::Change, 2),
            (When::Years(2000, 2008), Aggregate::Change, 2),
            (When::Quarter(2008, 4), Aggregate::Change, 2),
            (When::Latest, Aggregate::Change, 2),
            (When::Years(2012, 2012), Aggregate::Values, 0),
            (When::Pair(1975, 1982), Aggregate::Values, 2),
            (When::Pair(1975, 1982), Aggregate::Max, 2),
            (When::Pair(1975, 2015), Aggregate::Values, 1),
        ];
        for (when, aggregate, rows) in cases {
            for q in build(&gdp, when, aggregate) {
                assert_eq!(
                    run(&q).rows.len(),
                    rows,
                    "{when:?} {aggregate:?}: {}",
                    q.sql
                );
            }
        }
        let t = run(&build(&["unemp"], When::Unspecified, Aggregate::Max)[0]);
        assert_eq!(t.rows[0], [json!(1982), json!(4), json!(10.7)]);
        let t = run(&build(&["realgdp"], When::Years(2000, 2008), Aggregate::Change)[0]);
        assert_eq!(t.rows[0][0], json!(2000));
        assert_eq!(t.rows[1][..2], [json!(2008), json!(4)]);
        assert_eq!(
            build(&["unemp", "infl"], When::Unspecified, Aggregate::Max).len(),
            2
        );
        assert!(build(&[], When::Latest, Aggregate::Values).is_empty());
    }

    #[test]
    fn nearest_quarter_for_uncovered_periods() {
        let q = nearest(&["realgdp"], When::Years(2012, 2012)).unwrap();
        assert_eq!(run(&q).rows[0][..2], [json!(2009), json!(3)]);
        let q = nearest(&["unemp"], When::Years(1950, 1950)).unwrap();
        assert_eq!(run(&q).rows[0][..2], [json!(1959), json!(1)]);
        assert!(nearest(&["unemp"], When::Years(2000, 2000)).is_none());
    }

    #[test]
    fn wrong_names_find_their_column() {
        assert_eq!(column_for("gdp"), Some("realgdp"));
        assert_eq!(column_for("unemployment"), Some("unemp"));
        assert_eq!(column_for("inflation_rate"), Some("infl"));
        assert_eq!(column_for("unemployement"), Some("unemp"));
        assert_eq!(column_for("tbilrat"), Some("tbilrate"));
        assert_eq!(column_for("wages"), None);
        assert_eq!(column_for("xyz"), None);
    }

    #[test]
    fn identifiers_are_replaced_as_whole_words() {
        assert_eq!(
            replace_identifier(
                "SELECT gdp, gdp_x FROM t WHERE note = 'gdp'",
                "gdp",
                "realgdp"
            ),
            "SELECT realgdp, gdp_x FROM t WHERE note = 'gdp'"
        );
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn statements_written_in_messages() {
        assert_eq!(
            written_statement("Run this: SELECT max(unemp) FROM macrodata"),
            Some("SELECT max(unemp) FROM macrodata".into())
        );
        assert_eq!(
            written_statement("Ejecuta `DELETE FROM macrodata WHERE year < 1970`"),
            Some("DELETE FROM macrodata WHERE year < 1970".into())
        );
        assert_eq!(
            written_statement("drop table macrodata"),
            Some("drop table macrodata".into())
        );
        assert_eq!(
            written_statement("Which series should I select from the list?"),
            None
        );
        assert_eq!(written_statement("select the best one"), None);
        assert_eq!(written_statement("I will update you later"), None);
    }
}
