//! SQL for a [`DataRequest`] and its execution on the shipped data set.
//!
//! The text of every query is assembled only from fixed fragments and allow-listed names:
//! columns come from [`Measure::column`](super::glossary::Measure::column) / [`FilterColumn::column`](super::plan::FilterColumn::column), functions and operators
//! from enums. Every value — period bounds, filter values, limits — is a bound parameter
//! (`?1`, `?2`...). [`Dataset::select`] then runs it read-only within row and time limits.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::plan::{DataRequest, Edge, Operation};
use super::query::{Aggregation, Direction, Grouping};
use crate::dataset::{Dataset, Limits, TABLE, Table};

/// A query: text and its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SqlQuery {
    /// The statement, with `?N` placeholders.
    pub sql: String,
    /// The values bound to them, in order.
    pub params: Vec<Value>,
}

/// What running a request gave (the seed's `data`: one entry per request).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DataResult {
    /// The request's id.
    pub request: String,
    /// The statement run.
    pub sql: String,
    /// Its parameters.
    pub params: Vec<Value>,
    /// Column names.
    pub columns: Vec<String>,
    /// Rows.
    pub rows: Vec<Vec<Value>>,
    /// Whether rows were cut at the row limit.
    pub truncated: bool,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The SQL aggregate of a function.
fn sql_function(function: Aggregation) -> &'static str {
    match function {
        Aggregation::Sum => "SUM",
        Aggregation::Min => "MIN",
        Aggregation::Max => "MAX",
        Aggregation::Count => "COUNT",
        Aggregation::Avg | Aggregation::Change | Aggregation::First | Aggregation::Last => "AVG",
    }
}

/// Builds the query of `request`; `max_rows` bounds a listing without a limit.
pub fn build(request: &DataRequest, max_rows: usize) -> SqlQuery {
    let column = request.metric.column();
    let mut params = vec![
        Value::from(request.period.from.index()),
        Value::from(request.period.to.index()),
    ];
    let mut conditions = vec!["(year * 4 + quarter - 1) BETWEEN ?1 AND ?2".to_owned()];
    for filter in &request.filters {
        params.push(serde_json::Number::from_f64(filter.value).map_or(Value::Null, Value::Number));
        conditions.push(format!(
            "{} {} ?{}",
            filter.column.column(),
            filter.op.sql(),
            params.len()
        ));
    }
    let filter = conditions.join(" AND ");
    let mut limit = |rows: usize| {
        params.push(Value::from(rows as u64));
        format!("?{}", params.len())
    };
    let rows = request
        .limit
        .map_or(max_rows, |l| (l as usize).min(max_rows));
    let sql = match request.operation {
        Operation::Series { order } => {
            let by = match order {
                None => "year, quarter".to_owned(),
                Some(direction) => format!("{column} {}, year, quarter", keyword(direction)),
            };
            let limit = limit(rows);
            format!(
                "SELECT year, quarter, {column} FROM {TABLE} WHERE {filter} ORDER BY {by} LIMIT {limit}"
            )
        }
        Operation::Aggregate {
            function: Aggregation::Count,
        } => format!(
            "SELECT COUNT(*) AS quarters, COUNT(DISTINCT year) AS years FROM {TABLE} WHERE {filter}"
        ),
        Operation::Aggregate { function } => format!(
            "SELECT {}({column}) AS {}_{column}, COUNT(*) AS quarters FROM {TABLE} WHERE {filter}",
            sql_function(function),
            function.name()
        ),
        Operation::Grouped {
            by,
            function,
            order,
        } => {
            let (key, name) = match by {
                Grouping::Year => ("year", "year"),
                Grouping::Decade => ("(year / 10) * 10 AS decade", "decade"),
            };
            let value = match function {
                Aggregation::Count => "COUNT(*) AS quarters".to_owned(),
                f => format!(
                    "{}({column}) AS {}_{column}, COUNT(*) AS quarters",
                    sql_function(f),
                    f.name()
                ),
            };
            let sort_value = match function {
                Aggregation::Count => "quarters".to_owned(),
                f => format!("{}_{column}", f.name()),
            };
            let by_clause = match order {
                None => name.to_owned(),
                Some(direction) => format!("{sort_value} {}, {name}", keyword(direction)),
            };
            let limit = limit(rows);
            format!(
                "SELECT {key}, {value} FROM {TABLE} WHERE {filter} GROUP BY {name} ORDER BY {by_clause} LIMIT {limit}"
            )
        }
        Operation::Rank { direction } => {
            let limit = limit(rows);
            format!(
                "SELECT year, quarter, {column} FROM {TABLE} WHERE {filter} ORDER BY {column} {}, year, quarter LIMIT {limit}",
                keyword(direction)
            )
        }
        Operation::Change => format!(
            "SELECT year, quarter, {column} FROM (SELECT year, quarter, {column} FROM {TABLE} WHERE {filter} ORDER BY year, quarter LIMIT 1) \
             UNION ALL \
             SELECT year, quarter, {column} FROM (SELECT year, quarter, {column} FROM {TABLE} WHERE {filter} ORDER BY year DESC, quarter DESC LIMIT 1)"
        ),
        Operation::Point { at } => {
            let direction = match at {
                Edge::First => "ASC",
                Edge::Last => "DESC",
            };
            format!(
                "SELECT year, quarter, {column} FROM {TABLE} WHERE {filter} ORDER BY year {direction}, quarter {direction} LIMIT 1"
            )
        }
    };
    SqlQuery { sql, params }
}

fn keyword(direction: Direction) -> &'static str {
    match direction {
        Direction::Asc => "ASC",
        Direction::Desc => "DESC",
    }
}

/// Runs `request` on `dataset` within `limits`; a failure is the result's `error`.
pub fn execute(request: &DataRequest, dataset: &Dataset, limits: Limits) -> DataResult {
    let query = build(request, limits.max_rows);
    let outcome = dataset.select(&query.sql, &query.params, limits);
    let (table, error) = match outcome {
        Ok(table) => (table, None),
        Err(e) => (Table::default(), Some(e.to_string())),
    };
    DataResult {
        request: request.id.clone(),
        sql: query.sql,
        params: query.params,
        columns: table.columns,
        rows: table.rows,
        truncated: table.truncated,
        error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::glossary::Measure;
    use crate::data::period::Period;
    use crate::data::plan::{Condition, FilterColumn};
    use crate::data::query::Comparison;
    use serde_json::json;

    fn request(operation: Operation) -> DataRequest {
        DataRequest {
            id: "r1".into(),
            step: 1,
            metric: Measure::Unemp,
            period: Period::years(1980, 1989),
            filters: vec![Condition {
                column: FilterColumn::Measure(Measure::Infl),
                op: Comparison::Gt,
                value: 5.0,
            }],
            operation,
            limit: Some(3),
            notes: Vec::new(),
        }
    }

    #[test]
    fn values_are_parameters_and_names_come_from_the_allow_list() {
        let q = build(
            &request(Operation::Rank {
                direction: Direction::Desc,
            }),
            500,
        );
        assert_eq!(
            q.sql,
            "SELECT year, quarter, unemp FROM macrodata WHERE (year * 4 + quarter - 1) BETWEEN ?1 AND ?2 AND infl > ?3 ORDER BY unemp DESC, year, quarter LIMIT ?4"
        );
        assert_eq!(q.params, [json!(7920), json!(7959), json!(5.0), json!(3)]);
    }

    #[test]
    fn every_operation_runs() {
        let data = Dataset::shared().unwrap();
        for operation in [
            Operation::Series { order: None },
            Operation::Series {
                order: Some(Direction::Asc),
            },
            Operation::Aggregate {
                function: Aggregation::Avg,
            },
            Operation::Aggregate {
                function: Aggregation::Sum,
            },
            Operation::Aggregate {
                function: Aggregation::Count,
            },
            Operation::Grouped {
                by: Grouping::Year,
                function: Aggregation::Max,
                order: Some(Direction::Desc),
            },
            Operation::Grouped {
                by: Grouping::Decade,
                function: Aggregation::Count,
                order: None,
            },
            Operation::Rank {
                direction: Direction::Asc,
            },
            Operation::Change,
            Operation::Point { at: Edge::Last },
        ] {
            let result = execute(&request(operation), data, Limits::default());
            assert_eq!(result.error, None, "{operation:?}: {}", result.sql);
            assert!(!result.rows.is_empty(), "{operation:?}");
        }
        let change = execute(&request(Operation::Change), data, Limits::default());
        // 1980Q1 and the last quarter of the 1980s with inflation above 5.
        assert_eq!(change.rows.len(), 2);
        assert_eq!(change.rows[0][..2], [json!(1980), json!(1)]);
    }
}
