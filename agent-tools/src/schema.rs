//! Checks a tool call's arguments against the tool's JSON schema, before the call runs.
//!
//! Typed tools check their arguments by deserializing them ([`Tool::Args`](crate::Tool));
//! a tool that only has a schema (an MCP server's tool, a planner's call checked before it
//! runs) is checked here. It moved here from agent-flows' orchestrator, which still uses it.
//!
//! The subset of JSON Schema that tool schemas (schemars' output, OpenAI's function
//! parameters) use: `type` (one or a list, `integer` meaning a whole number), `enum`,
//! `const`, `properties`, `required`, `additionalProperties` (true, false or a schema),
//! `items`, `minItems` / `maxItems`, `minLength` / `maxLength`, `minimum` / `maximum` and
//! their exclusive forms, `anyOf` / `oneOf` / `allOf`, local references (`$ref` to
//! `#/$defs/...` or `#/definitions/...`, as pydantic and schemars write nested types), and the
//! boolean schemas `true` and `false`. Keywords outside the subset (`format`, `description`, `default`, `title`...) do
//! not constrain. Each violation names where (a JSON pointer such as `/params/1`) and what.

use serde_json::Value;

/// One way the arguments do not fit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Where, as a JSON pointer (`` (empty) for the root, `/sql`, `/params/0`).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        write!(f, "at `{path}`: {}", self.message)
    }
}

/// The violations of `schema` by `value` (empty when it fits), at most `limit`.
pub fn validate(schema: &Value, value: &Value, limit: usize) -> Vec<Violation> {
    let mut out = Vec::new();
    check(schema, schema, value, "", 0, &mut out);
    out.truncate(limit.max(1));
    out
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(value: &Value, expected: &str) -> bool {
    match (expected, value) {
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|x| x.fract() == 0.0)
        }
        ("number", Value::Number(_)) => true,
        (other, value) => other == type_name(value),
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

/// How deep `$ref`s may nest without consuming any of the value (a reference cycle).
const MAX_REF_DEPTH: usize = 32;

/// The schema a local `$ref` (`#/...`, a JSON pointer into the root) names.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    let pointer = pointer.replace("%24", "$");
    root.pointer(&pointer)
}

fn check(
    root: &Value,
    schema: &Value,
    value: &Value,
    path: &str,
    refs: usize,
    out: &mut Vec<Violation>,
) {
    let violation = |out: &mut Vec<Violation>, message: String| {
        out.push(Violation {
            path: path.to_owned(),
            message,
        });
    };
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        match resolve(root, reference) {
            Some(_) if refs >= MAX_REF_DEPTH => {
                violation(
                    out,
                    format!("`$ref` {reference} nests too deeply (a cycle?)"),
                );
            }
            Some(target) => check(root, target, value, path, refs + 1, out),
            // A reference outside the document cannot be checked here; it does not constrain.
            None => {}
        }
    }
    let schema = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => {
            violation(out, "no value is allowed here".to_owned());
            return;
        }
        Value::Object(schema) => schema,
        _ => return,
    };
    if let Some(types) = schema.get("type") {
        let expected: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !expected.is_empty() && !expected.iter().any(|t| has_type(value, t)) {
            violation(
                out,
                format!(
                    "expected {}, got {} {}",
                    expected.join(" or "),
                    type_name(value),
                    short(value)
                ),
            );
            return;
        }
    }
    if let Some(Value::Array(options)) = schema.get("enum")
        && !options.contains(value)
    {
        let names: Vec<String> = options.iter().map(short).collect();
        violation(
            out,
            format!("{} is not one of {}", short(value), names.join(", ")),
        );
    }
    if let Some(constant) = schema.get("const")
        && constant != value
    {
        violation(out, format!("must be {}", short(constant)));
    }
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            if let Some(Value::Array(required)) = schema.get("required") {
                for name in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(name) {
                        violation(out, format!("the required property `{name}` is missing"));
                    }
                }
            }
            for (key, item) in map {
                let item_path = format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"));
                match properties.and_then(|p| p.get(key)) {
                    Some(sub) => check(root, sub, item, &item_path, 0, out),
                    None => match schema.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            let known: Vec<&str> = properties
                                .map(|p| p.keys().map(String::as_str).collect())
                                .unwrap_or_default();
                            out.push(Violation {
                                path: item_path.clone(),
                                message: format!(
                                    "unknown property `{key}` (allowed: {})",
                                    if known.is_empty() {
                                        "none".to_owned()
                                    } else {
                                        known.join(", ")
                                    }
                                ),
                            });
                        }
                        Some(sub @ Value::Object(_)) => check(root, sub, item, &item_path, 0, out),
                        _ => {}
                    },
                }
            }
        }
        Value::Array(items) => {
            let count = items.len() as u64;
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && count < min
            {
                violation(out, format!("{count} items; at least {min} are needed"));
            }
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && count > max
            {
                violation(out, format!("{count} items; at most {max} are allowed"));
            }
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(root, item_schema, item, &format!("{path}/{i}"), 0, out);
                }
            }
        }
        Value::String(text) => {
            let length = text.chars().count() as u64;
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && length < min
            {
                violation(
                    out,
                    format!("{length} characters; at least {min} are needed"),
                );
            }
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
                && length > max
            {
                violation(
                    out,
                    format!("{length} characters; at most {max} are allowed"),
                );
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
            if let Some(min) = bound("minimum")
                && x < min
            {
                violation(out, format!("{x} is below the minimum {min}"));
            }
            if let Some(max) = bound("maximum")
                && x > max
            {
                violation(out, format!("{x} is above the maximum {max}"));
            }
            if let Some(min) = bound("exclusiveMinimum")
                && x <= min
            {
                violation(out, format!("{x} must be greater than {min}"));
            }
            if let Some(max) = bound("exclusiveMaximum")
                && x >= max
            {
                violation(out, format!("{x} must be less than {max}"));
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
    if let Some(Value::Array(all)) = schema.get("allOf") {
        for sub in all {
            check(root, sub, value, path, refs, out);
        }
    }
    for (key, exactly_one) in [("anyOf", false), ("oneOf", true)] {
        if let Some(Value::Array(options)) = schema.get(key) {
            let fitting = options
                .iter()
                .filter(|sub| {
                    let mut scratch = Vec::new();
                    check(root, sub, value, path, refs, &mut scratch);
                    scratch.is_empty()
                })
                .count();
            if fitting == 0 {
                violation(
                    out,
                    format!(
                        "{} fits none of the {} allowed shapes",
                        short(value),
                        options.len()
                    ),
                );
            } else if exactly_one && fitting > 1 {
                violation(
                    out,
                    format!(
                        "{} fits {fitting} shapes where exactly one is allowed",
                        short(value)
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sql_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "sql": {"type": "string", "minLength": 1},
                "params": {"type": "array", "items": {"type": ["string", "number", "null"]}, "maxItems": 3},
                "limit": {"type": "integer", "minimum": 1, "maximum": 200},
                "mode": {"enum": ["fast", "exact"]},
            },
            "required": ["sql"],
            "additionalProperties": false,
        })
    }

    fn messages(value: Value) -> Vec<String> {
        validate(&sql_schema(), &value, 10)
            .into_iter()
            .map(|v| v.to_string())
            .collect()
    }

    #[test]
    fn fitting_arguments_pass() {
        assert!(
            messages(json!({"sql": "SELECT 1", "params": [1, "a", null], "limit": 5})).is_empty()
        );
        assert!(messages(json!({"sql": "x", "limit": 5.0})).is_empty());
    }

    #[test]
    fn each_violation_says_where_and_what() {
        assert_eq!(
            messages(json!({"params": [{}], "limit": 0, "mode": "slow", "extra": 1})),
            [
                "at `/`: the required property `sql` is missing",
                "at `/extra`: unknown property `extra` (allowed: limit, mode, params, sql)",
                "at `/limit`: 0 is below the minimum 1",
                "at `/mode`: \"slow\" is not one of \"fast\", \"exact\"",
                "at `/params/0`: expected string or number or null, got object {}",
            ]
        );
        assert_eq!(
            messages(json!("SELECT 1")),
            ["at `/`: expected object, got string \"SELECT 1\""]
        );
        assert_eq!(
            messages(json!({"sql": "", "params": [1, 2, 3, 4], "limit": 2.5})),
            [
                "at `/limit`: expected integer, got number 2.5",
                "at `/params`: 4 items; at most 3 are allowed",
                "at `/sql`: 0 characters; at least 1 are needed",
            ]
        );
    }

    #[test]
    fn combinators_and_boolean_schemas() {
        let schema = json!({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]});
        assert!(validate(&schema, &json!("x"), 5).is_empty());
        assert!(validate(&schema, &json!(3), 5).is_empty());
        assert_eq!(
            validate(&schema, &json!(-1), 5)[0].message,
            "-1 fits none of the 2 allowed shapes"
        );
        let one = json!({"oneOf": [{"type": "number"}, {"type": "integer"}]});
        assert!(!validate(&one, &json!(3), 5).is_empty());
        assert!(validate(&json!(true), &json!({"a": 1}), 5).is_empty());
        assert!(!validate(&json!(false), &json!(1), 5).is_empty());
        let items_true = json!({"type": "array", "items": true});
        assert!(validate(&items_true, &json!([1, "a", {}]), 5).is_empty());
    }

    #[test]
    fn local_references_are_followed() {
        // pydantic's shape for a nested model
        let schema = json!({
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
            "type": "object",
            "properties": {"at": {"$ref": "#/$defs/Point"}, "path": {"type": "array", "items": {"$ref": "#/$defs/Point"}}},
        });
        assert!(validate(&schema, &json!({"at": {"x": 1}, "path": [{"x": 2}]}), 5).is_empty());
        let found: Vec<String> = validate(&schema, &json!({"at": {}, "path": [{"x": "a"}]}), 5)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            [
                "at `/at`: the required property `x` is missing",
                "at `/path/0/x`: expected integer, got string \"a\"",
            ]
        );
        let cycle = json!({"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"});
        assert!(
            validate(&cycle, &json!(1), 5)[0]
                .message
                .contains("nests too deeply")
        );
        let elsewhere = json!({"$ref": "https://example.invalid/schema.json"});
        assert!(validate(&elsewhere, &json!(1), 5).is_empty());
    }
}
