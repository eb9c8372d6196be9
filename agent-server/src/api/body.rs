//! Reading requests: JSON bodies (also when sent as `text/plain`, as browsers do to skip a
//! preflight), path ids, field checks with messages that name the field, and the page a
//! search asks for (the store sorts, pages and counts; see [`crate::store::Query`]).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::store::Query;

/// A JSON body; an empty body reads as `{}`.
pub(crate) struct JsonBody(pub Value);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large")
            } else {
                ApiError::bad_request(e.body_text())
            }
        })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(JsonBody(Value::Object(Map::new())));
        }
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|_| ApiError::invalid("Invalid JSON in request body"))
    }
}

/// The body as an object, or a 422.
pub(crate) fn object(body: Value) -> Result<Map<String, Value>, ApiError> {
    match body {
        Value::Object(m) => Ok(m),
        other => Err(ApiError::invalid(format!(
            "the request body must be a JSON object, not {}",
            kind(&other)
        ))),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Typed reads of body fields; `null` counts as absent.
pub(crate) trait Fields {
    fn opt_str(&self, key: &str) -> Result<Option<String>, ApiError>;
    fn opt_object(&self, key: &str) -> Result<Option<Map<String, Value>>, ApiError>;
    fn opt_usize(&self, key: &str) -> Result<Option<usize>, ApiError>;
    fn opt_bool(&self, key: &str) -> Result<Option<bool>, ApiError>;
}

impl Fields for Map<String, Value> {
    fn opt_str(&self, key: &str) -> Result<Option<String>, ApiError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(ApiError::invalid(format!(
                "'{key}' must be a string, not {}",
                kind(other)
            ))),
        }
    }

    fn opt_object(&self, key: &str) -> Result<Option<Map<String, Value>>, ApiError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m.clone())),
            Some(other) => Err(ApiError::invalid(format!(
                "'{key}' must be an object, not {}",
                kind(other)
            ))),
        }
    }

    fn opt_usize(&self, key: &str) -> Result<Option<usize>, ApiError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64().map(|n| n as usize)),
            Some(other) => Err(ApiError::invalid(format!(
                "'{key}' must be a non-negative integer, not {}",
                kind(other)
            ))),
        }
    }

    fn opt_bool(&self, key: &str) -> Result<Option<bool>, ApiError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(ApiError::invalid(format!(
                "'{key}' must be true or false, not {}",
                kind(other)
            ))),
        }
    }
}

/// A path id that must be a UUID (`what`: "thread", "assistant", "run").
pub(crate) fn uuid_path(what: &str, id: &str) -> Result<String, ApiError> {
    uuid::Uuid::parse_str(id)
        .map(|u| u.to_string())
        .map_err(|_| ApiError::invalid(format!("Invalid {what} ID: must be a UUID")))
}

/// Whether `doc`'s `metadata` contains every entry of `filter` (LangGraph's containment).
pub(crate) fn contains(doc: &Value, filter: &Map<String, Value>) -> bool {
    filter.iter().all(|(k, v)| doc.get(k) == Some(v))
}

/// The order and page a search body asks for (`limit`, `offset`, `sort_by`, `sort_order`,
/// `select`), checked: the store sorts and pages, [`Page::respond`] answers.
pub(crate) struct Page {
    /// At most this many.
    pub(crate) limit: usize,
    /// Skipping this many.
    pub(crate) offset: usize,
    /// One of the route's sorts.
    pub(crate) sort_by: String,
    /// `sort_order` is `desc` (the default).
    pub(crate) descending: bool,
    /// Only these keys of each item, when asked.
    pub(crate) select: Option<Vec<String>>,
}

impl Page {
    /// The page `body` asks for, sorted by `default_sort` unless it names one of
    /// `allowed_sorts`.
    pub(crate) fn of(
        limits: &crate::limits::Limits,
        body: &Map<String, Value>,
        default_sort: &str,
        allowed_sorts: &[&str],
    ) -> Result<Page, ApiError> {
        let (limit, offset) = limits.page(
            body.opt_usize("limit")?.unwrap_or(10),
            body.opt_usize("offset")?.unwrap_or(0),
        )?;
        let sort_by = body
            .opt_str("sort_by")?
            .unwrap_or_else(|| default_sort.to_owned());
        if !allowed_sorts.contains(&sort_by.as_str()) {
            return Err(ApiError::invalid(format!(
                "'sort_by' must be one of: {}",
                allowed_sorts.join(", ")
            )));
        }
        let descending = match body.opt_str("sort_order")?.as_deref() {
            None | Some("desc") => true,
            Some("asc") => false,
            Some(other) => {
                return Err(ApiError::invalid(format!(
                    "'sort_order' must be asc or desc, not '{other}'"
                )));
            }
        };
        let select = match body.get("select") {
            Some(Value::Array(keys)) => Some(
                keys.iter()
                    .filter_map(|k| k.as_str().map(str::to_owned))
                    .collect(),
            ),
            _ => None,
        };
        Ok(Page {
            limit,
            offset,
            sort_by,
            descending,
            select,
        })
    }

    /// `query` asking for this page (ties in the order they were written).
    pub(crate) fn query(&self, query: &Query) -> Query {
        Query {
            sort_by: Some(self.sort_by.clone()),
            descending: self.descending,
            limit: Some(self.limit),
            offset: self.offset,
            ..query.clone()
        }
    }

    /// The page's `items` (only the `select` keys) with LangGraph's pagination headers:
    /// `total` matches, and the next page's offset when there is one.
    pub(crate) fn respond(&self, items: Vec<Value>, total: u64) -> Response {
        let page: Vec<Value> = items
            .into_iter()
            .map(|v| match (&self.select, v) {
                (Some(keys), Value::Object(m)) => {
                    Value::Object(m.into_iter().filter(|(k, _)| keys.contains(k)).collect())
                }
                (_, v) => v,
            })
            .collect();
        let mut headers = HeaderMap::new();
        headers.insert("x-pagination-total", HeaderValue::from(total));
        let next = self.offset.saturating_add(self.limit) as u64;
        if next < total {
            headers.insert("x-pagination-next", HeaderValue::from(next));
        }
        (headers, axum::Json(Value::Array(page))).into_response()
    }
}
