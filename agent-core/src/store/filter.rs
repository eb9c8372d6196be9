//! Search filters on item values, as LangGraph's stores apply them: each entry of the filter
//! names a field (a dotted path such as `profile.age` reaches into nested objects) and holds
//! either a value the field must equal (objects compare field by field, arrays element by
//! element, numbers by value: `1` equals `1.0`) or an object of operators `$eq`, `$ne`,
//! `$gt`, `$gte`, `$lt`, `$lte`, all of which must hold. Ordered operators compare numbers
//! with numbers and strings with strings; a missing field meets only `$ne`.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::StoreError;

/// The operators a filter may use.
const OPERATORS: [&str; 6] = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"];

/// Checks a filter before it is applied: known operators only, ordered ones against a number
/// or a string.
pub fn validate_filter(filter: &Map<String, Value>) -> Result<(), StoreError> {
    for (field, want) in filter {
        if field.is_empty() {
            return Err(StoreError::filter(field, "a filtered field needs a name"));
        }
        validate_condition(field, want)?;
    }
    Ok(())
}

fn validate_condition(field: &str, want: &Value) -> Result<(), StoreError> {
    let Value::Object(object) = want else {
        return Ok(());
    };
    if !object.keys().any(|k| k.starts_with('$')) {
        return object
            .iter()
            .try_for_each(|(k, v)| validate_condition(&format!("{field}.{k}"), v));
    }
    for (op, operand) in object {
        if !OPERATORS.contains(&op.as_str()) {
            return Err(StoreError::filter(
                field,
                format!(
                    "unknown operator `{op}` (use one of {})",
                    OPERATORS.join(", ")
                ),
            ));
        }
        let ordered = !matches!(op.as_str(), "$eq" | "$ne");
        if ordered && !matches!(operand, Value::Number(_) | Value::String(_)) {
            return Err(StoreError::filter(
                field,
                format!("`{op}` compares with a number or a string, not {operand}"),
            ));
        }
    }
    Ok(())
}

/// Whether `value` meets every condition of `filter` (checked by [`validate_filter`]).
pub fn matches(filter: &Map<String, Value>, value: &Map<String, Value>) -> bool {
    filter
        .iter()
        .all(|(field, want)| meets(lookup(value, field), want))
}

/// The field at `path`: the key itself when the object has it, else the dotted path.
pub(crate) fn lookup<'v>(value: &'v Map<String, Value>, path: &str) -> Option<&'v Value> {
    if let Some(found) = value.get(path) {
        return Some(found);
    }
    let mut parts = path.split('.');
    let mut current = value.get(parts.next()?)?;
    for part in parts {
        current = current.as_object()?.get(part)?;
    }
    Some(current)
}

fn meets(have: Option<&Value>, want: &Value) -> bool {
    match want {
        Value::Object(ops) if ops.keys().any(|k| k.starts_with('$')) => {
            ops.iter().all(|(op, operand)| apply(have, op, operand))
        }
        Value::Object(fields) => match have {
            Some(Value::Object(have)) => fields.iter().all(|(k, v)| meets(have.get(k), v)),
            _ => false,
        },
        _ => have.is_some_and(|have| equal(have, want)),
    }
}

fn apply(have: Option<&Value>, op: &str, operand: &Value) -> bool {
    match op {
        "$eq" => have.is_some_and(|h| equal(h, operand)),
        "$ne" => !have.is_some_and(|h| equal(h, operand)),
        _ => {
            let Some(order) = have.and_then(|h| compare(h, operand)) else {
                return false;
            };
            match op {
                "$gt" => order == Ordering::Greater,
                "$gte" => order != Ordering::Less,
                "$lt" => order == Ordering::Less,
                "$lte" => order != Ordering::Greater,
                _ => false,
            }
        }
    }
}

/// JSON equality with numbers compared by value.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

/// Numbers with numbers, strings with strings; nothing else has an order.
fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    }
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
    fn equality_operators_and_paths() {
        let value = obj(json!({"kind": "fact", "score": 3, "user": {"age": 41, "tags": ["a"]}}));
        let ok = |f: Value| matches(&obj(f), &value);
        assert!(ok(json!({"kind": "fact", "score": 3.0})));
        assert!(ok(json!({"user.age": {"$gte": 41, "$lt": 50}})));
        assert!(ok(json!({"user": {"tags": ["a"]}})));
        assert!(ok(json!({"missing": {"$ne": 1}})));
        assert!(!ok(json!({"missing": {"$gt": 1}})));
        assert!(!ok(json!({"kind": {"$gt": 3}})));
        assert!(ok(json!({"kind": {"$gt": "a", "$ne": "rule"}})));
        assert!(!ok(json!({"score": {"$ne": 3}})));
    }

    #[test]
    fn bad_filters_are_refused() {
        assert!(validate_filter(&obj(json!({"a": {"$like": 1}}))).is_err());
        assert!(validate_filter(&obj(json!({"a": {"$gt": [1]}}))).is_err());
        assert!(validate_filter(&obj(json!({"a": {"b": {"$in": 1}}}))).is_err());
        assert!(validate_filter(&obj(json!({"a": {"$lte": 2}, "b": [1]}))).is_ok());
    }
}
