//! The orchestrator's tools and how they run: `sql_query` (read-only SQL over the macro data
//! set), `doc_search` (the bundled documentation), and agent-tools' `calculator` and
//! `datetime`, each with its own time limit and retry policy, and results redacted.
//!
//! Layers per tool, innermost first: the tool, a [`Timeout`] per attempt, a [`Retry`] of
//! transient failures (time-outs; a query SQLite stopped at its time limit), then
//! [`RedactOutput`]. agent-tools' `ToolNode` adds panic catching and the tool events.
//!
//! [`classify`] sorts a failed call into a [`FailureKind`], which is what the verifier
//! decides on.

use std::sync::Arc;
use std::time::Duration;

use agent_core::Clock;
use agent_tools::builtin::{Calculator, DateTime};
use agent_tools::{
    DynTool, HandleErrors, Retry, Timeout, Tool, ToolError, ToolNode, ToolRegistry, ToolRetryPolicy,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::docs::{Corpus, DocHit};
use super::redact::{RedactOutput, redact_text};
use crate::dataset::{DataError, Dataset, Limits};

/// The most rows `sql_query` returns.
pub const MAX_ROWS: usize = 200;

/// The default time limit of one SQL query.
pub const DEFAULT_SQL_TIMEOUT: Duration = Duration::from_secs(2);

/// A value bound to a query parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SqlParam {
    /// A whole number (a year, a quarter).
    Integer(i64),
    /// A number.
    Number(f64),
    /// Text.
    Text(String),
}

impl From<&SqlParam> for Value {
    fn from(param: &SqlParam) -> Value {
        match param {
            SqlParam::Integer(n) => Value::from(*n),
            SqlParam::Number(x) => Value::from(*x),
            SqlParam::Text(t) => Value::from(t.as_str()),
        }
    }
}

/// The arguments of `sql_query`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SqlQueryArgs {
    /// One SQLite SELECT over the table `macrodata`, with `?1`, `?2`... for values.
    pub sql: String,
    /// The values of `?1`, `?2`... in order (numbers or text).
    #[serde(default)]
    pub params: Vec<SqlParam>,
}

/// What `sql_query` returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SqlQueryOutput {
    /// Column names.
    pub columns: Vec<String>,
    /// The rows.
    pub rows: Vec<Vec<Value>>,
    /// How many rows.
    pub row_count: usize,
    /// Whether rows past the limit were cut.
    pub truncated: bool,
}

/// Why `sql_query` failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqlToolError {
    /// The data set refused or failed the query.
    #[error(transparent)]
    Data(#[from] DataError),
    /// The query's thread died.
    #[error("the query did not finish: {0}")]
    Join(String),
}

impl SqlToolError {
    /// Whether the same query might succeed if run again (it ran out of time).
    pub fn is_transient(&self) -> bool {
        matches!(self, SqlToolError::Data(DataError::Timeout(_)))
    }
}

/// `sql_query`: one read-only SELECT over the macro data set.
#[derive(Clone, Debug)]
pub struct SqlQuery {
    limits: Limits,
}

impl SqlQuery {
    /// The tool with `timeout` per query, [`MAX_ROWS`] rows, and the data set's default limits
    /// on the text, values and bytes of a query (see [`Limits`]).
    pub fn new(timeout: Duration) -> Self {
        SqlQuery {
            limits: Limits {
                max_rows: MAX_ROWS,
                timeout,
                ..Limits::default()
            },
        }
    }
}

impl Tool for SqlQuery {
    type Args = SqlQueryArgs;
    type Output = SqlQueryOutput;
    type Error = SqlToolError;

    fn name(&self) -> &str {
        "sql_query"
    }

    fn description(&self) -> &str {
        "Runs one read-only SQLite SELECT on the table `macrodata`: US quarterly macro data \
         1959Q1-2009Q3, one row per quarter. Columns: year, quarter (1-4), realgdp (real GDP, \
         billions of 2005 $), realcons (consumption), realinv (investment), realgovt (federal \
         spending), realdpi (disposable income), cpi (consumer price index), m1 (money stock), \
         tbilrate (3-month T-bill rate, %), unemp (unemployment rate, %), pop (population, \
         millions), infl (inflation, %), realint (real interest rate, %). Put values in \
         `params` and refer to them as ?1, ?2. Returns at most 200 rows."
    }

    async fn call(&self, args: SqlQueryArgs) -> Result<SqlQueryOutput, SqlToolError> {
        let limits = self.limits;
        let params: Vec<Value> = args.params.iter().map(Value::from).collect();
        let table = tokio::task::spawn_blocking(move || {
            Dataset::shared()?.select(&args.sql, &params, limits)
        })
        .await
        .map_err(|e| SqlToolError::Join(e.to_string()))??;
        Ok(SqlQueryOutput {
            row_count: table.rows.len(),
            columns: table.columns,
            rows: table.rows,
            truncated: table.truncated,
        })
    }
}

/// The arguments of `doc_search`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DocSearchArgs {
    /// The words to look for (English, Spanish or Russian).
    pub query: String,
    /// How many documents to return (1-5, default 3).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// What `doc_search` returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocSearchOutput {
    /// The query.
    pub query: String,
    /// The best documents, best first (empty when nothing matches).
    pub hits: Vec<DocHit>,
}

/// Why `doc_search` failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum DocSearchError {
    /// Nothing to look for.
    #[error("the query is empty; pass the words to look for")]
    EmptyQuery,
}

/// `doc_search`: the documentation of the data set.
#[derive(Clone, Debug)]
pub struct DocSearch {
    corpus: Arc<Corpus>,
}

impl DocSearch {
    /// The tool over `corpus`.
    pub fn new(corpus: Arc<Corpus>) -> Self {
        DocSearch { corpus }
    }
}

impl Tool for DocSearch {
    type Args = DocSearchArgs;
    type Output = DocSearchOutput;
    type Error = DocSearchError;

    fn name(&self) -> &str {
        "doc_search"
    }

    fn description(&self) -> &str {
        "Searches the documentation of the macro data set (what each series means and how it \
         is measured, US recessions 1960-2009, sources, glossary, how to query) and returns \
         the best passages. Use it for explanations and definitions, not for numbers."
    }

    async fn call(&self, args: DocSearchArgs) -> Result<DocSearchOutput, DocSearchError> {
        if args.query.trim().is_empty() {
            return Err(DocSearchError::EmptyQuery);
        }
        let limit = args.limit.unwrap_or(3).clamp(1, 5) as usize;
        Ok(DocSearchOutput {
            hits: self.corpus.search(&args.query, limit),
            query: args.query,
        })
    }
}

/// Time limits and retries of the tools.
#[derive(Clone, Debug)]
pub struct ToolSettings {
    /// The time limit of one SQL query (SQLite is interrupted at it).
    pub sql_timeout: Duration,
    /// Attempts per call for transient failures (the first included).
    pub attempts: u32,
    /// Wait before the second attempt (doubling after).
    pub backoff: Duration,
}

impl Default for ToolSettings {
    fn default() -> Self {
        ToolSettings {
            sql_timeout: DEFAULT_SQL_TIMEOUT,
            attempts: 2,
            backoff: Duration::from_millis(100),
        }
    }
}

/// Whether a failed attempt is worth another: time-outs, and queries SQLite stopped.
pub fn is_transient(error: &ToolError) -> bool {
    match error {
        ToolError::TimedOut { .. } => true,
        ToolError::Failed { source, .. } => source
            .downcast_ref::<SqlToolError>()
            .is_some_and(SqlToolError::is_transient),
        _ => false,
    }
}

/// `tool` with a per-attempt timeout, retries of transient failures, and results redacted.
pub fn layered(tool: impl DynTool, timeout: Duration, settings: &ToolSettings) -> Arc<dyn DynTool> {
    let policy = ToolRetryPolicy::new()
        .max_attempts(settings.attempts)
        .initial_interval(settings.backoff)
        .retry_on(is_transient);
    Arc::new(RedactOutput::new(Retry::new(
        Timeout::new(tool, timeout),
        policy,
    )))
}

/// The orchestrator's registry: `sql_query`, `doc_search`, `calculator`, `datetime` (on
/// `clock`), layered per [`layered`].
pub fn registry(
    clock: Arc<dyn Clock>,
    corpus: Arc<Corpus>,
    settings: &ToolSettings,
) -> Result<ToolRegistry, ToolError> {
    let mut registry = ToolRegistry::new();
    registry.register_arc(layered(
        SqlQuery::new(settings.sql_timeout),
        settings.sql_timeout + Duration::from_secs(1),
        settings,
    ))?;
    registry.register_arc(layered(
        DocSearch::new(corpus),
        Duration::from_secs(2),
        settings,
    ))?;
    registry.register_arc(layered(Calculator, Duration::from_secs(1), settings))?;
    registry.register_arc(layered(
        DateTime::with_clock(clock),
        Duration::from_secs(1),
        settings,
    ))?;
    Ok(registry)
}

/// A tool node over `registry` whose error texts (in results and events) are redacted.
pub fn tool_node(registry: ToolRegistry) -> ToolNode {
    ToolNode::new(registry).handle_errors(HandleErrors::with(|error| {
        Some(redact_text(&error.to_string()).0)
    }))
}

/// What kind of failure a call had; the verifier decides on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The tool is not in the registry.
    UnknownTool,
    /// The user may not use the tool.
    Forbidden,
    /// The arguments do not fit the tool (or the SQL does not compile): re-planning can fix
    /// it.
    InvalidArgs,
    /// The tool refuses this request by design (a statement that would change the data):
    /// only the user can change it.
    Refused,
    /// The user's own input cannot be used (an expression that does not evaluate): ask them.
    InvalidInput,
    /// Out of time, after the retries.
    Timeout,
    /// Anything else the tool reported.
    Failed,
    /// The call ran, but the verifier judged that what it returned does not answer the
    /// question (another series, another period): re-planning can fix it.
    Irrelevant,
}

impl FailureKind {
    /// Whether only the user can fix it (the verifier asks them instead of re-planning).
    pub fn needs_user(self) -> bool {
        matches!(self, FailureKind::Refused | FailureKind::InvalidInput)
    }
}

/// The kind of `error`.
pub fn classify(error: &ToolError) -> FailureKind {
    match error {
        ToolError::UnknownTool { .. } => FailureKind::UnknownTool,
        ToolError::InvalidArguments { .. } => FailureKind::InvalidArgs,
        ToolError::TimedOut { .. } => FailureKind::Timeout,
        ToolError::RetriesExhausted { last, .. } => classify(last),
        ToolError::Expression { .. } => FailureKind::InvalidInput,
        ToolError::UnknownTimeZone { .. } | ToolError::InvalidFormat { .. } => {
            FailureKind::InvalidArgs
        }
        ToolError::Failed { source, .. } => {
            if let Some(sql) = source.downcast_ref::<SqlToolError>() {
                match sql {
                    SqlToolError::Data(DataError::Refused(_)) => FailureKind::Refused,
                    SqlToolError::Data(DataError::Timeout(_)) => FailureKind::Timeout,
                    SqlToolError::Data(_) => FailureKind::InvalidArgs,
                    _ => FailureKind::Failed,
                }
            } else if source.downcast_ref::<DocSearchError>().is_some() {
                FailureKind::InvalidArgs
            } else if let Some(inner) = source.downcast_ref::<ToolError>() {
                classify(inner)
            } else {
                FailureKind::Failed
            }
        }
        _ => FailureKind::Failed,
    }
}

/// Whether a successful result holds nothing: no rows, no hits, an empty text or null.
pub fn is_empty_result(tool: &str, output: &Value) -> bool {
    match (tool, output) {
        (_, Value::Null) => true,
        ("sql_query", out) => out["rows"].as_array().is_some_and(Vec::is_empty),
        ("doc_search", out) => out["hits"].as_array().is_some_and(Vec::is_empty),
        (_, Value::String(text)) => text.trim().is_empty(),
        (_, Value::Array(items)) => items.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::ManualClock;
    use agent_llm::ToolCall;
    use serde_json::json;

    fn node(settings: &ToolSettings) -> ToolNode {
        tool_node(
            registry(
                Arc::new(ManualClock::at_unix_seconds(1_784_116_800)),
                Arc::new(Corpus::bundled()),
                settings,
            )
            .unwrap(),
        )
    }

    async fn call(node: &ToolNode, tool: &str, args: Value) -> Result<Value, ToolError> {
        node.invoke(&ToolCall::new("c", tool, args)).await
    }

    #[tokio::test]
    async fn sql_query_reads_the_data_set() {
        let node = node(&ToolSettings::default());
        let out = call(
            &node,
            "sql_query",
            json!({"sql": "SELECT year, quarter, unemp FROM macrodata WHERE year = ?1 ORDER BY quarter", "params": [1982]}),
        )
        .await
        .unwrap();
        assert_eq!(out["columns"], json!(["year", "quarter", "unemp"]));
        assert_eq!(out["row_count"], 4);
        assert_eq!(out["rows"][3], json!([1982, 4, 10.7]));
        assert!(!is_empty_result("sql_query", &out));
        let none = call(
            &node,
            "sql_query",
            json!({"sql": "SELECT unemp FROM macrodata WHERE year = ?1", "params": [2012]}),
        )
        .await
        .unwrap();
        assert!(is_empty_result("sql_query", &none));
    }

    #[tokio::test]
    async fn sql_failures_are_classified() {
        let node = node(&ToolSettings::default());
        let refused = call(&node, "sql_query", json!({"sql": "DELETE FROM macrodata"}))
            .await
            .unwrap_err();
        assert_eq!(classify(&refused), FailureKind::Refused, "{refused}");
        assert!(!is_transient(&refused));
        let bad = call(
            &node,
            "sql_query",
            json!({"sql": "SELECT gdp FROM macrodata"}),
        )
        .await
        .unwrap_err();
        assert_eq!(classify(&bad), FailureKind::InvalidArgs);
        assert!(bad.to_string().contains("no such column: gdp"), "{bad}");
        let args = call(&node, "sql_query", json!({"query": "SELECT 1"}))
            .await
            .unwrap_err();
        assert_eq!(classify(&args), FailureKind::InvalidArgs);
    }

    #[tokio::test]
    async fn slow_queries_are_stopped_and_retried_then_reported() {
        let settings = ToolSettings {
            sql_timeout: Duration::from_millis(50),
            attempts: 2,
            backoff: Duration::from_millis(1),
        };
        let node = node(&settings);
        let error = call(
            &node,
            "sql_query",
            json!({"sql": "SELECT count(*) FROM macrodata a, macrodata b, macrodata c, macrodata d"}),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&error, ToolError::RetriesExhausted { attempts: 2, .. }),
            "{error}"
        );
        assert_eq!(classify(&error), FailureKind::Timeout);
    }

    #[tokio::test]
    async fn doc_search_and_builtins() {
        let node = node(&ToolSettings::default());
        let out = call(
            &node,
            "doc_search",
            json!({"query": "desempleo", "limit": 1}),
        )
        .await
        .unwrap();
        assert_eq!(out["hits"][0]["id"], "unemp");
        let none = call(&node, "doc_search", json!({"query": "joblessness"}))
            .await
            .unwrap();
        assert!(is_empty_result("doc_search", &none));
        let empty = call(&node, "doc_search", json!({"query": "  "}))
            .await
            .unwrap_err();
        assert_eq!(classify(&empty), FailureKind::InvalidArgs);
        let division = call(&node, "calculator", json!({"expression": "1/0"}))
            .await
            .unwrap_err();
        assert_eq!(classify(&division), FailureKind::InvalidInput, "{division}");
        let zone = call(&node, "datetime", json!({"timezone": "Mars/Olympus"}))
            .await
            .unwrap_err();
        assert_eq!(classify(&zone), FailureKind::InvalidArgs);
        let time = call(&node, "datetime", json!({"timezone": "Europe/Madrid"}))
            .await
            .unwrap();
        assert_eq!(time["local_time"], "2026-07-15 14:00:00");
        let unknown = call(&node, "search_web", json!({})).await.unwrap_err();
        assert_eq!(classify(&unknown), FailureKind::UnknownTool);
    }
}
