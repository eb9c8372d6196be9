//! A PostgreSQL search's filter, narrowed in SQL: conditions on top-level value fields that
//! PostgreSQL checks while it scans, so that it sends back the items that may match rather
//! than every item under the prefix. They only narrow: each keeps every item the filter
//! matches (equal strings and booleans exactly; ordered comparisons non-strict, numbers with
//! a few ULPs of slack for float parsing), and [`matches`](super::matches) still decides.
//! Dotted paths, `$ne`, objects, arrays and numbers compared for equality are left to it.

use serde_json::{Map, Value};
use tokio_postgres::types::{ToSql, Type};

/// A parameter of a narrowing condition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Param {
    Text(String),
    Float(f64),
}

impl Param {
    /// The value and its type, for a statement sent with its parameters' types.
    pub(crate) fn typed(&self) -> (&(dyn ToSql + Sync), Type) {
        match self {
            Param::Text(text) => (text, Type::TEXT),
            Param::Float(x) => (x, Type::FLOAT8),
        }
    }
}

/// SQL conditions, each starting with ` AND `, numbered from `$first`, and their parameters.
pub(crate) fn narrow(filter: &Map<String, Value>, first: usize) -> (String, Vec<Param>) {
    let mut sql = String::new();
    let mut params = Vec::new();
    let mut add = |condition: &dyn Fn(usize, usize) -> String, field: &str, operand: Param| {
        let at = first + params.len();
        sql.push_str(" AND ");
        sql.push_str(&condition(at, at + 1));
        params.push(Param::Text(field.to_owned()));
        params.push(operand);
    };
    for (field, want) in filter {
        if field.contains('.') {
            continue;
        }
        let conditions: Vec<(&str, &Value)> = match want {
            Value::Object(ops) if ops.keys().any(|k| k.starts_with('$')) => {
                ops.iter().map(|(op, v)| (op.as_str(), v)).collect()
            }
            Value::Object(_) => Vec::new(),
            other => vec![("$eq", other)],
        };
        for (op, operand) in conditions {
            match (op, operand) {
                ("$eq", Value::String(_) | Value::Bool(_)) => add(
                    &|k, v| format!("value -> ${k}::text = ${v}::text::jsonb"),
                    field,
                    Param::Text(operand.to_string()),
                ),
                ("$gt" | "$gte" | "$lt" | "$lte", Value::Number(n)) => {
                    let Some(x) = n.as_f64() else { continue };
                    let above = op.starts_with("$g");
                    let bound =
                        (0..4).fold(x, |b, _| if above { b.next_down() } else { b.next_up() });
                    let cmp = if above { ">=" } else { "<=" };
                    add(
                        &|k, v| {
                            format!(
                                "CASE WHEN jsonb_typeof(value -> ${k}::text) = 'number' THEN (value ->> ${k}::text)::float8 {cmp} ${v}::float8 END"
                            )
                        },
                        field,
                        Param::Float(bound),
                    );
                }
                ("$gt" | "$gte" | "$lt" | "$lte", Value::String(s)) => {
                    let cmp = if op.starts_with("$g") { ">=" } else { "<=" };
                    add(
                        &|k, v| {
                            format!(
                                "jsonb_typeof(value -> ${k}::text) = 'string' AND (value ->> ${k}::text) COLLATE \"C\" {cmp} ${v}::text COLLATE \"C\""
                            )
                        },
                        field,
                        Param::Text(s.clone()),
                    );
                }
                _ => {}
            }
        }
    }
    (sql, params)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn narrows_what_it_can_decide_safely() {
        let (sql, params) = narrow(
            &obj(
                json!({"kind": "note", "n": {"$gt": 5, "$ne": 7}, "a.b": 1, "x": 3, "s": {"$lt": "m"}}),
            ),
            5,
        );
        assert_eq!(
            sql,
            " AND value -> $5::text = $6::text::jsonb AND CASE WHEN jsonb_typeof(value -> $7::text) = 'number' THEN (value ->> $7::text)::float8 >= $8::float8 END AND jsonb_typeof(value -> $9::text) = 'string' AND (value ->> $9::text) COLLATE \"C\" <= $10::text COLLATE \"C\""
        );
        assert_eq!(params[0], Param::Text("kind".into()));
        assert_eq!(params[1], Param::Text("\"note\"".into()));
        assert_eq!(params[2], Param::Text("n".into()));
        assert!(matches!(params[3], Param::Float(b) if b < 5.0 && b > 4.999_999));
        assert_eq!(params[5], Param::Text("m".into()));
        assert_eq!(narrow(&obj(json!({"a.b": "x", "o": {"p": 1}})), 1).0, "");
    }
}
