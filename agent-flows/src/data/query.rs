//! What the models decide, as types: the `intent` node's [`IntentDecision`] and the `parser`
//! node's [`ParsedQuery`] (steps made of [`Atom`]s), with the tight JSON schemas sent to
//! grammar-constrained models (enums of the known values, required fields, no extra
//! properties, bounded arrays and strings).
//!
//! Names of measures, columns and periods stay strings here on purpose: a model may name
//! something the data set does not have ("gold price", "country", "2008Q5"), and the planner
//! turns that into a plan error the user sees instead of forcing it onto a column.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};

use super::glossary::Measure;
use crate::lang::Lang;

/// What the user wants (the seed's `intent`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Intent {
    /// Numbers from the data set.
    Data,
    /// Small talk: greetings, thanks, what the assistant can do.
    Chitchat,
    /// What a term of the data set means.
    Concept,
}

impl Intent {
    /// The seed's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Data => "data",
            Intent::Chitchat => "chitchat",
            Intent::Concept => "concept",
        }
    }
}

/// The `intent` node's decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IntentDecision {
    /// data, chitchat or concept.
    pub intent: Intent,
    /// The language of the user's message: `ru` or `en`.
    #[schemars(with = "String")]
    pub lang: Lang,
    /// The question in English, follow-ups resolved from the conversation.
    pub internal_query: String,
}

/// How a filter compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Comparison {
    /// Greater than.
    Gt,
    /// Greater than or equal.
    Ge,
    /// Less than.
    Lt,
    /// Less than or equal.
    Le,
    /// Equal.
    Eq,
    /// Not equal.
    Ne,
}

impl Comparison {
    /// Every comparison.
    pub const ALL: [Comparison; 6] = [
        Comparison::Gt,
        Comparison::Ge,
        Comparison::Lt,
        Comparison::Le,
        Comparison::Eq,
        Comparison::Ne,
    ];

    /// The SQL operator.
    pub fn sql(self) -> &'static str {
        match self {
            Comparison::Gt => ">",
            Comparison::Ge => ">=",
            Comparison::Lt => "<",
            Comparison::Le => "<=",
            Comparison::Eq => "=",
            Comparison::Ne => "<>",
        }
    }

    /// The schema name (`gt`...).
    pub fn name(self) -> &'static str {
        match self {
            Comparison::Gt => "gt",
            Comparison::Ge => "ge",
            Comparison::Lt => "lt",
            Comparison::Le => "le",
            Comparison::Eq => "eq",
            Comparison::Ne => "ne",
        }
    }

    /// Whether a value passes.
    pub fn holds(self, left: f64, right: f64) -> bool {
        match self {
            Comparison::Gt => left > right,
            Comparison::Ge => left >= right,
            Comparison::Lt => left < right,
            Comparison::Le => left <= right,
            Comparison::Eq => left == right,
            Comparison::Ne => left != right,
        }
    }
}

/// How rows are grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Grouping {
    /// Per calendar year.
    Year,
    /// Per decade (1960s, 1970s...).
    Decade,
}

/// What to compute over the quarters of a period.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Aggregation {
    /// Mean.
    Avg,
    /// Sum.
    Sum,
    /// Smallest value (and when).
    Min,
    /// Largest value (and when).
    Max,
    /// How many quarters.
    Count,
    /// From the first quarter to the last: absolute and percent change.
    Change,
    /// The value of the first quarter.
    First,
    /// The value of the last quarter.
    Last,
}

impl Aggregation {
    /// Every aggregation.
    pub const ALL: [Aggregation; 8] = [
        Aggregation::Avg,
        Aggregation::Sum,
        Aggregation::Min,
        Aggregation::Max,
        Aggregation::Count,
        Aggregation::Change,
        Aggregation::First,
        Aggregation::Last,
    ];

    /// The schema name.
    pub fn name(self) -> &'static str {
        match self {
            Aggregation::Avg => "avg",
            Aggregation::Sum => "sum",
            Aggregation::Min => "min",
            Aggregation::Max => "max",
            Aggregation::Count => "count",
            Aggregation::Change => "change",
            Aggregation::First => "first",
            Aggregation::Last => "last",
        }
    }
}

/// Sort direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Smallest first.
    Asc,
    /// Largest first.
    Desc,
}

/// A filter's value: a number, or text the planner will refuse with a reason.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum FilterValue {
    /// A number (in the column's unit).
    Number(f64),
    /// Anything else the question compared with ("in 1980", "Germany").
    Text(String),
}

/// One piece of a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "atom", rename_all = "snake_case")]
pub enum Atom {
    /// The measure asked about (a column name, or what the user called it).
    Metric {
        /// Column or term.
        name: String,
    },
    /// Keep only quarters where `column op value`.
    Filter {
        /// A column (a measure, `year` or `quarter`) or what the user named.
        column: String,
        /// The comparison.
        op: Comparison,
        /// The value.
        value: FilterValue,
    },
    /// The period: years (`2008`), quarters (`2008Q3`) or decades (`1970s`), inclusive.
    TimeRange {
        /// First year or quarter.
        from: String,
        /// Last year or quarter.
        to: String,
    },
    /// Group quarters per year or decade.
    GroupBy {
        /// year or decade.
        by: Grouping,
    },
    /// What to compute.
    Aggregate {
        /// The function.
        function: Aggregation,
    },
    /// Sort by the value.
    Order {
        /// asc or desc.
        direction: Direction,
    },
    /// At most this many rows.
    Limit {
        /// How many.
        #[serde(deserialize_with = "saturating_count")]
        count: i64,
    },
}

/// A limit as any JSON number: huge ones saturate (the planner caps them), fractions are
/// refused.
fn saturating_count<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    let value = Value::deserialize(deserializer)?;
    let number = value
        .as_number()
        .ok_or_else(|| serde::de::Error::custom(format!("a limit is a number, not {value}")))?;
    if let Some(n) = number.as_i64() {
        return Ok(n);
    }
    if number.as_u64().is_some() {
        return Ok(i64::MAX);
    }
    match number.as_f64() {
        Some(x) if x.fract() == 0.0 => Ok(x.clamp(i64::MIN as f64, i64::MAX as f64) as i64),
        _ => Err(serde::de::Error::custom(format!(
            "a limit is a whole number, not {number}"
        ))),
    }
}

/// One question the data must answer: its atoms.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Step {
    /// The pieces.
    pub atoms: Vec<Atom>,
}

/// The `parser` node's result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ParsedQuery {
    /// How the question was read (the seed's `parser_thoughts`).
    pub thoughts: String,
    /// The steps, in the order asked.
    pub steps: Vec<Step>,
}

/// The most steps a parsed question may hold.
pub const MAX_STEPS: usize = 6;
/// The most atoms a step may hold.
pub const MAX_ATOMS: usize = 12;

/// The most steps the schema lets a model write: with [`SCHEMA_ATOMS`], the longest reply a
/// grammar-constrained model can produce still fits the parser's token budget (a degenerate
/// small model fills every array to its maximum). Two are enough: a step may hold several
/// `metric` and `time_range` atoms, and the planner makes a request of each combination.
pub const SCHEMA_STEPS: usize = 2;
/// The most atoms per step the schema lets a model write.
pub const SCHEMA_ATOMS: usize = 6;

/// A year or a quarter, as the schema asks models to write a period.
pub const PERIOD_PATTERN: &str = "^[0-9]{4}(Q[1-4])?$";

/// The schema sent with intent calls.
pub fn intent_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "intent": {
                "type": "string",
                "enum": ["data", "chitchat", "concept"],
                "description": "data: asks for numbers from the data set; concept: asks what a term means; chitchat: anything else"
            },
            "lang": { "type": "string", "enum": ["ru", "en"] },
            "internal_query": {
                "type": "string",
                "description": "the question in English",
                "maxLength": 160
            }
        },
        "required": ["intent", "lang", "internal_query"],
        "additionalProperties": false
    })
}

/// The schema sent with parser calls: each atom one of seven shapes, enums for the closed
/// sets, the measure names suggested but not forced (see the module docs).
pub fn parsed_query_schema() -> Value {
    let columns: Vec<&str> = Measure::ALL.iter().map(|m| m.column()).collect();
    let mut filter_columns = columns.clone();
    filter_columns.extend(["year", "quarter"]);
    let object = |atom: &str, properties: Value, required: &[&str]| {
        let mut props = properties.as_object().cloned().unwrap_or_default();
        props.insert("atom".into(), json!({ "type": "string", "enum": [atom] }));
        let mut req = vec!["atom"];
        req.extend_from_slice(required);
        json!({
            "type": "object",
            "properties": props,
            "required": req,
            "additionalProperties": false
        })
    };
    let atoms = vec![
        object(
            "metric",
            json!({ "name": { "type": "string", "description": format!("one of: {}", columns.join(", ")), "maxLength": 32 } }),
            &["name"],
        ),
        object(
            "filter",
            json!({
                "column": { "type": "string", "description": format!("one of: {}", filter_columns.join(", ")), "maxLength": 32 },
                "op": { "type": "string", "enum": Comparison::ALL.iter().map(|c| c.name()).collect::<Vec<_>>() },
                "value": { "type": "number" }
            }),
            &["column", "op", "value"],
        ),
        object(
            "time_range",
            json!({
                "from": { "type": "string", "description": "a year (1990) or a quarter (1990Q1)", "pattern": PERIOD_PATTERN },
                "to": { "type": "string", "description": "a year (2000) or a quarter (2000Q4)", "pattern": PERIOD_PATTERN }
            }),
            &["from", "to"],
        ),
        object(
            "group_by",
            json!({ "by": { "type": "string", "enum": ["year", "decade"] } }),
            &["by"],
        ),
        object(
            "aggregate",
            json!({ "function": { "type": "string", "enum": Aggregation::ALL.iter().map(|a| a.name()).collect::<Vec<_>>() } }),
            &["function"],
        ),
        object(
            "order",
            json!({ "direction": { "type": "string", "enum": ["asc", "desc"] } }),
            &["direction"],
        ),
        object(
            "limit",
            json!({ "count": { "type": "integer", "minimum": 1, "maximum": 1000 } }),
            &["count"],
        ),
    ];
    json!({
        "type": "object",
        "properties": {
            "thoughts": { "type": "string", "description": "one short sentence on how the question reads", "maxLength": 80 },
            "steps": {
                "type": "array",
                "minItems": 1,
                "maxItems": SCHEMA_STEPS,
                "items": {
                    "type": "object",
                    "properties": {
                        "atoms": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": SCHEMA_ATOMS,
                            "items": { "anyOf": atoms }
                        }
                    },
                    "required": ["atoms"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["thoughts", "steps"],
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atoms_read_as_the_schema_writes_them() {
        let step: Step = serde_json::from_value(json!({"atoms": [
            {"atom": "metric", "name": "unemp"},
            {"atom": "filter", "column": "infl", "op": "gt", "value": 5},
            {"atom": "filter", "column": "country", "op": "eq", "value": "Germany"},
            {"atom": "time_range", "from": "1970", "to": "1979Q4"},
            {"atom": "group_by", "by": "year"},
            {"atom": "aggregate", "function": "avg"},
            {"atom": "order", "direction": "desc"},
            {"atom": "limit", "count": 1},
        ]}))
        .unwrap();
        assert_eq!(step.atoms.len(), 8);
        assert_eq!(
            step.atoms[1],
            Atom::Filter {
                column: "infl".into(),
                op: Comparison::Gt,
                value: FilterValue::Number(5.0)
            }
        );
        assert!(
            matches!(&step.atoms[2], Atom::Filter { value: FilterValue::Text(t), .. } if t == "Germany")
        );
        let huge: Atom =
            serde_json::from_str(r#"{"atom": "limit", "count": 100000000000000000000}"#).unwrap();
        assert_eq!(huge, Atom::Limit { count: i64::MAX });
        let huge: Atom =
            serde_json::from_str(r#"{"atom": "limit", "count": 18446744073709551615}"#).unwrap();
        assert_eq!(huge, Atom::Limit { count: i64::MAX });
        let fraction = serde_json::from_value::<Atom>(json!({"atom": "limit", "count": 2.5}));
        assert!(fraction.unwrap_err().to_string().contains("whole number"));
        let unknown = serde_json::from_value::<Atom>(json!({"atom": "drop_table"}));
        assert!(unknown.is_err());
    }

    #[test]
    fn schemas_are_closed() {
        let schema = parsed_query_schema();
        assert_eq!(schema["additionalProperties"], false);
        let atoms =
            &schema["properties"]["steps"]["items"]["properties"]["atoms"]["items"]["anyOf"];
        assert_eq!(atoms.as_array().map(Vec::len), Some(7));
        for atom in atoms.as_array().unwrap() {
            assert_eq!(atom["additionalProperties"], false);
        }
        assert_eq!(
            intent_schema()["properties"]["lang"]["enum"],
            json!(["ru", "en"])
        );
    }
}
