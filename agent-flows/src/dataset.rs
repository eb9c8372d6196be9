//! The data set the data flows query: US macroeconomic quarterly series, 1959Q1–2009Q3
//! (statsmodels' `macrodata`, public domain; `agent-flows/data/macrodata/SOURCE.md`), shipped
//! in the binary and loaded into an in-memory SQLite database on first use.
//!
//! Queries are read-only by construction: one statement, which SQLite itself reports as
//! read-only (`sqlite3_stmt_readonly`), on a connection with `query_only` set; values are
//! bound parameters, never spliced into the text. A query (which a model may write) is held
//! to [`Limits`]: its text, each value it makes (SQLite's `SQLITE_LIMIT_LENGTH`, so
//! `zeroblob(1e9)` fails instead of allocating a gigabyte), the rows and bytes it returns, and
//! its time, counted from the call (a query that waited for the connection has less left),
//! which a progress handler enforces inside SQLite. Anything else is a [`DataError`] that
//! says what was refused.

use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use rusqlite::limits::Limit;
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Connection, Statement, params_from_iter};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The CSV, as shipped.
pub const MACRODATA_CSV: &str = include_str!("../data/macrodata/macrodata.csv");

/// The table's name.
pub const TABLE: &str = "macrodata";

/// A column of the data set with what it means, in the flows' languages.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Column {
    /// The column name.
    pub name: &'static str,
    /// The unit.
    pub unit: &'static str,
    /// English description.
    pub en: &'static str,
    /// Spanish description.
    pub es: &'static str,
    /// Russian description.
    pub ru: &'static str,
}

/// Every column, in the CSV's order.
pub const COLUMNS: &[Column] = &[
    Column {
        name: "year",
        unit: "year",
        en: "year",
        es: "año",
        ru: "год",
    },
    Column {
        name: "quarter",
        unit: "1-4",
        en: "quarter of the year",
        es: "trimestre",
        ru: "квартал",
    },
    Column {
        name: "realgdp",
        unit: "billions of chained 2005 US$, SAAR",
        en: "real gross domestic product (GDP)",
        es: "producto interior bruto real (PIB)",
        ru: "реальный валовой внутренний продукт (ВВП)",
    },
    Column {
        name: "realcons",
        unit: "billions of chained 2005 US$, SAAR",
        en: "real personal consumption expenditures",
        es: "gasto real en consumo personal",
        ru: "реальные потребительские расходы",
    },
    Column {
        name: "realinv",
        unit: "billions of chained 2005 US$, SAAR",
        en: "real gross private domestic investment",
        es: "inversión privada interna bruta real",
        ru: "реальные валовые частные внутренние инвестиции",
    },
    Column {
        name: "realgovt",
        unit: "billions of chained 2005 US$, SAAR",
        en: "real federal government consumption and investment",
        es: "gasto e inversión real del gobierno federal",
        ru: "реальные расходы и инвестиции федерального правительства",
    },
    Column {
        name: "realdpi",
        unit: "billions of chained 2005 US$, SAAR",
        en: "real private disposable income",
        es: "renta disponible privada real",
        ru: "реальный располагаемый доход",
    },
    Column {
        name: "cpi",
        unit: "index, 1982-84 = 100",
        en: "consumer price index (CPI), end of quarter",
        es: "índice de precios al consumo (IPC)",
        ru: "индекс потребительских цен (ИПЦ)",
    },
    Column {
        name: "m1",
        unit: "billions of US$",
        en: "M1 money stock, end of quarter",
        es: "masa monetaria M1",
        ru: "денежная масса M1",
    },
    Column {
        name: "tbilrate",
        unit: "%",
        en: "3-month treasury bill rate",
        es: "tipo de las letras del Tesoro a 3 meses",
        ru: "ставка 3-месячных казначейских векселей",
    },
    Column {
        name: "unemp",
        unit: "%",
        en: "unemployment rate",
        es: "tasa de desempleo",
        ru: "уровень безработицы",
    },
    Column {
        name: "pop",
        unit: "millions",
        en: "population, end of quarter",
        es: "población",
        ru: "численность населения",
    },
    Column {
        name: "infl",
        unit: "% annualised",
        en: "inflation rate, ln(cpi/cpi previous quarter) * 400",
        es: "tasa de inflación",
        ru: "уровень инфляции",
    },
    Column {
        name: "realint",
        unit: "%",
        en: "real interest rate (treasury bill rate minus inflation)",
        es: "tipo de interés real",
        ru: "реальная процентная ставка",
    },
];

/// The column named `name`.
pub fn column(name: &str) -> Option<&'static Column> {
    COLUMNS.iter().find(|c| c.name == name)
}

/// The first and last quarter the data covers: (year, quarter).
pub const COVERAGE: ((i64, i64), (i64, i64)) = ((1959, 1), (2009, 3));

/// How much a query may return and take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most rows returned (more are cut, and the table says so).
    pub max_rows: usize,
    /// How long a query may take, from the call (waiting for the connection included),
    /// before it is interrupted.
    pub timeout: Duration,
    /// The longest query text, in bytes.
    pub max_sql_bytes: usize,
    /// The largest string or blob the query may make, in bytes (SQLite's
    /// `SQLITE_LIMIT_LENGTH`; past it the query fails).
    pub max_value_bytes: usize,
    /// The most bytes of values the rows returned may hold (numbers count 8); past it the
    /// query fails rather than returning part of a row set.
    pub max_result_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_rows: 500,
            timeout: Duration::from_secs(2),
            max_sql_bytes: 64 * 1024,
            max_value_bytes: 1024 * 1024,
            max_result_bytes: 1024 * 1024,
        }
    }
}

/// How many SQLite virtual-machine steps pass between two looks at the clock.
const PROGRESS_STEPS: i32 = 1000;

/// A query's result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// Column names, in order.
    pub columns: Vec<String>,
    /// Rows of JSON values (numbers, strings, null).
    pub rows: Vec<Vec<Value>>,
    /// Whether rows past [`Limits::max_rows`] were cut.
    pub truncated: bool,
}

/// Why a query was refused or failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum DataError {
    /// Not one read-only SELECT.
    #[error("refused: {0}; only one read-only SELECT over `macrodata` is allowed")]
    Refused(String),
    /// SQLite rejected the query.
    #[error("the query failed: {0}")]
    Sql(String),
    /// The query ran past its time limit.
    #[error("the query was stopped after {0:?}; ask for less data")]
    Timeout(Duration),
    /// The query's text is longer than [`Limits::max_sql_bytes`].
    #[error("the query is {length} bytes long, more than the {limit} allowed; write a shorter one")]
    TooLong {
        /// Its length in bytes.
        length: usize,
        /// The limit.
        limit: usize,
    },
    /// A value the query makes, or all it returns, is larger than its limit.
    #[error("the result is too large: {0}; ask for fewer rows or columns, or smaller values")]
    TooLarge(String),
    /// A parameter is not a number, text or null.
    #[error("parameter {index} must be a number, text or null, not {value}")]
    Parameter {
        /// 1-based position.
        index: usize,
        /// The value given.
        value: String,
    },
}

/// The loaded data set.
pub struct Dataset {
    connection: Mutex<Connection>,
}

impl std::fmt::Debug for Dataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dataset").field("table", &TABLE).finish()
    }
}

static SHARED: LazyLock<Result<Dataset, String>> =
    LazyLock::new(|| Dataset::load().map_err(|e| e.to_string()));

impl Dataset {
    /// The process-wide data set, loaded on first use.
    pub fn shared() -> Result<&'static Dataset, DataError> {
        SHARED
            .as_ref()
            .map_err(|e| DataError::Sql(format!("the data set did not load: {e}")))
    }

    /// Loads the CSV into a fresh in-memory database, then makes the connection read-only.
    pub fn load() -> Result<Dataset, DataError> {
        let sql = |e: rusqlite::Error| DataError::Sql(e.to_string());
        let mut connection = Connection::open_in_memory().map_err(sql)?;
        let columns: Vec<String> = COLUMNS
            .iter()
            .map(|c| {
                let kind = if matches!(c.name, "year" | "quarter") {
                    "INTEGER"
                } else {
                    "REAL"
                };
                format!("{} {kind} NOT NULL", c.name)
            })
            .collect();
        connection
            .execute_batch(&format!(
                "CREATE TABLE {TABLE} ({}, PRIMARY KEY (year, quarter)) WITHOUT ROWID;",
                columns.join(", ")
            ))
            .map_err(sql)?;
        let tx = connection.transaction().map_err(sql)?;
        {
            let placeholders = vec!["?"; COLUMNS.len()].join(", ");
            let mut insert = tx
                .prepare(&format!("INSERT INTO {TABLE} VALUES ({placeholders})"))
                .map_err(sql)?;
            for (number, line) in MACRODATA_CSV.lines().enumerate().skip(1) {
                let values: Vec<SqlValue> = line
                    .split(',')
                    .enumerate()
                    .map(|(i, field)| {
                        let field = field.trim().trim_matches('"');
                        if i < 2 {
                            field
                                .parse::<i64>()
                                .map(SqlValue::Integer)
                                .map_err(|e| e.to_string())
                        } else {
                            field
                                .parse::<f64>()
                                .map(SqlValue::Real)
                                .map_err(|e| e.to_string())
                        }
                    })
                    .collect::<Result<_, _>>()
                    .map_err(|e| {
                        DataError::Sql(format!("macrodata.csv line {}: {e}", number + 1))
                    })?;
                if values.len() != COLUMNS.len() {
                    return Err(DataError::Sql(format!(
                        "macrodata.csv line {}: {} fields, expected {}",
                        number + 1,
                        values.len(),
                        COLUMNS.len()
                    )));
                }
                insert.execute(params_from_iter(values)).map_err(sql)?;
            }
        }
        tx.commit().map_err(sql)?;
        connection
            .execute_batch("PRAGMA query_only = ON;")
            .map_err(sql)?;
        Ok(Dataset {
            connection: Mutex::new(connection),
        })
    }

    /// Runs one read-only SELECT with bound `params` (numbers, text, null) within `limits`.
    pub fn select(&self, sql: &str, params: &[Value], limits: Limits) -> Result<Table, DataError> {
        // No deadline when the limit is past what the clock can count.
        let deadline = Instant::now().checked_add(limits.timeout);
        let text = sql.trim().trim_end_matches(';').trim();
        if text.is_empty() {
            return Err(DataError::Refused("the query is empty".into()));
        }
        if text.len() > limits.max_sql_bytes {
            return Err(DataError::TooLong {
                length: text.len(),
                limit: limits.max_sql_bytes,
            });
        }
        let lower = text.to_ascii_lowercase();
        if !(lower.starts_with("select") || lower.starts_with("with")) {
            return Err(DataError::Refused(
                "the query does not start with SELECT".into(),
            ));
        }
        let values: Vec<SqlValue> = params
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::Null => Ok(SqlValue::Null),
                Value::Bool(b) => Ok(SqlValue::Integer(i64::from(*b))),
                Value::Number(n) => Ok(n
                    .as_i64()
                    .map(SqlValue::Integer)
                    .unwrap_or_else(|| SqlValue::Real(n.as_f64().unwrap_or(f64::NAN)))),
                Value::String(s) => Ok(SqlValue::Text(s.clone())),
                other => Err(DataError::Parameter {
                    index: i + 1,
                    value: other.to_string(),
                }),
            })
            .collect::<Result<_, _>>()?;
        let mut connection = self.connection.lock().unwrap_or_else(|p| p.into_inner());
        let sql = |e: rusqlite::Error| DataError::Sql(e.to_string());
        connection
            .set_limit(
                Limit::SQLITE_LIMIT_SQL_LENGTH,
                clamp_limit(limits.max_sql_bytes),
            )
            .map_err(sql)?;
        connection
            .set_limit(
                Limit::SQLITE_LIMIT_LENGTH,
                clamp_limit(limits.max_value_bytes),
            )
            .map_err(sql)?;
        // SQLite looks at the clock every few steps and stops the query at the deadline
        // (`interrupt` from another thread would not stop one long step).
        connection
            .progress_handler(
                PROGRESS_STEPS,
                Some(move || deadline.is_some_and(|d| Instant::now() >= d)),
            )
            .map_err(sql)?;
        let result = run(&connection, text, values, limits);
        let _ = connection.progress_handler(0, None::<fn() -> bool>);
        result
    }
}

/// A byte limit as SQLite takes it (an `int`).
fn clamp_limit(bytes: usize) -> i32 {
    i32::try_from(bytes).unwrap_or(i32::MAX)
}

/// Prepares and runs `text` on `connection`, its limits set.
fn run(
    connection: &Connection,
    text: &str,
    values: Vec<SqlValue>,
    limits: Limits,
) -> Result<Table, DataError> {
    let mut statement = connection.prepare(text).map_err(|e| sql_error(e, limits))?;
    if !statement.readonly() {
        return Err(DataError::Refused(
            "the statement would change the database".into(),
        ));
    }
    if statement.parameter_count() != values.len() {
        return Err(DataError::Sql(format!(
            "the query has {} parameters but {} values were given",
            statement.parameter_count(),
            values.len()
        )));
    }
    rows(&mut statement, values, limits).map_err(|e| sql_error(e, limits))
}

/// The rows of `statement`, within the row and byte limits.
fn rows(
    statement: &mut Statement<'_>,
    values: Vec<SqlValue>,
    limits: Limits,
) -> Result<Table, QueryError> {
    let columns: Vec<String> = statement.column_names().map(str::to_owned).collect();
    let mut rows = statement.query(params_from_iter(values))?;
    let mut table = Table {
        columns: columns.clone(),
        ..Table::default()
    };
    let mut bytes = 0usize;
    while let Some(row) = rows.next()? {
        if table.rows.len() == limits.max_rows {
            table.truncated = true;
            break;
        }
        let mut out = Vec::with_capacity(columns.len());
        for i in 0..columns.len() {
            let value = row.get_ref(i)?;
            bytes = bytes.saturating_add(match value {
                ValueRef::Text(t) | ValueRef::Blob(t) => t.len(),
                _ => 8,
            });
            if bytes > limits.max_result_bytes {
                return Err(QueryError::TooLarge);
            }
            out.push(match value {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(n) => Value::from(n),
                ValueRef::Real(x) => {
                    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
                }
                ValueRef::Text(t) | ValueRef::Blob(t) => {
                    Value::from(String::from_utf8_lossy(t).into_owned())
                }
            });
        }
        table.rows.push(out);
    }
    Ok(table)
}

/// Why reading rows stopped.
enum QueryError {
    Sqlite(rusqlite::Error),
    TooLarge,
}

impl From<rusqlite::Error> for QueryError {
    fn from(error: rusqlite::Error) -> Self {
        QueryError::Sqlite(error)
    }
}

/// The error of a failed query: its time limit, a value or result too large, more than one
/// statement, or what SQLite said.
fn sql_error(error: impl Into<QueryError>, limits: Limits) -> DataError {
    match error.into() {
        QueryError::TooLarge => DataError::TooLarge(format!(
            "the rows hold more than {} bytes",
            limits.max_result_bytes
        )),
        QueryError::Sqlite(error) => match error {
            rusqlite::Error::SqliteFailure(code, _)
                if code.code == rusqlite::ErrorCode::OperationInterrupted =>
            {
                DataError::Timeout(limits.timeout)
            }
            rusqlite::Error::SqliteFailure(code, _) if code.code == rusqlite::ErrorCode::TooBig => {
                DataError::TooLarge(format!(
                    "a value would be larger than {} bytes",
                    limits.max_value_bytes
                ))
            }
            rusqlite::Error::MultipleStatement => {
                DataError::Refused("the text holds more than one statement".into())
            }
            other => DataError::Sql(other.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn data() -> &'static Dataset {
        Dataset::shared().expect("the shipped CSV loads")
    }

    #[test]
    fn the_whole_csv_loads() {
        let t = data()
            .select(
                "SELECT count(*), min(year), max(year) FROM macrodata",
                &[],
                Limits::default(),
            )
            .unwrap();
        assert_eq!(t.rows, [[json!(203), json!(1959), json!(2009)]]);
        let t = data()
            .select(
                "SELECT realgdp, unemp FROM macrodata WHERE year = ?1 AND quarter = ?2",
                &[json!(2009), json!(3)],
                Limits::default(),
            )
            .unwrap();
        assert_eq!(t.columns, ["realgdp", "unemp"]);
        assert_eq!(t.rows, [[json!(12990.341), json!(9.6)]]);
    }

    #[test]
    fn only_one_read_only_select_runs() {
        for (sql, why) in [
            ("DELETE FROM macrodata", "does not start with SELECT"),
            ("select 1; drop table macrodata", "more than one statement"),
            ("WITH x AS (SELECT 1) DELETE FROM macrodata", "would change"),
            ("", "empty"),
        ] {
            let error = data().select(sql, &[], Limits::default()).unwrap_err();
            assert!(error.to_string().contains(why), "{sql}: {error}");
        }
        // Still all there.
        let t = data()
            .select("SELECT count(*) FROM macrodata", &[], Limits::default())
            .unwrap();
        assert_eq!(t.rows[0][0], json!(203));
    }

    #[test]
    fn values_are_bound_never_spliced() {
        let t = data()
            .select(
                "SELECT count(*) FROM macrodata WHERE year = ?1",
                &[json!("1960 OR 1=1")],
                Limits::default(),
            )
            .unwrap();
        assert_eq!(t.rows[0][0], json!(0));
        let error = data()
            .select("SELECT ?1", &[json!({"a": 1})], Limits::default())
            .unwrap_err();
        assert!(matches!(error, DataError::Parameter { index: 1, .. }));
    }

    #[test]
    fn rows_and_time_are_limited() {
        let limits = Limits {
            max_rows: 10,
            ..Limits::default()
        };
        let t = data()
            .select("SELECT year FROM macrodata", &[], limits)
            .unwrap();
        assert_eq!(t.rows.len(), 10);
        assert!(t.truncated);
        let slow = Limits {
            timeout: Duration::from_millis(50),
            ..Limits::default()
        };
        let error = data()
            .select(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n",
                &[],
                slow,
            )
            .unwrap_err();
        assert_eq!(error, DataError::Timeout(Duration::from_millis(50)));
    }
}
