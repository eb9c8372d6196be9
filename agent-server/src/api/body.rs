//! Reading requests: JSON bodies (also when sent as `text/plain`, as browsers do to skip a
//! preflight), path ids, field checks with messages that name the field, and pagination.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use crate::error::ApiError;

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

/// Sorts by `sort_by` (a string field) in `sort_order`, then returns the page `offset`,
/// `limit` of `items` with LangGraph's pagination headers, keeping only `select` keys.
pub(crate) fn paged(
    limits: &crate::limits::Limits,
    mut items: Vec<Value>,
    body: &Map<String, Value>,
    default_sort: &str,
    allowed_sorts: &[&str],
) -> Result<Response, ApiError> {
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
    let key = |v: &Value| v.get(&sort_by).map(Value::to_string).unwrap_or_default();
    items.sort_by_key(key);
    if descending {
        items.reverse();
    }
    let total = items.len();
    let select: Option<Vec<String>> = match body.get("select") {
        Some(Value::Array(keys)) => Some(
            keys.iter()
                .filter_map(|k| k.as_str().map(str::to_owned))
                .collect(),
        ),
        _ => None,
    };
    let page: Vec<Value> = items
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|v| match (&select, v) {
            (Some(keys), Value::Object(m)) => {
                Value::Object(m.into_iter().filter(|(k, _)| keys.contains(k)).collect())
            }
            (_, v) => v,
        })
        .collect();
    let mut headers = HeaderMap::new();
    headers.insert("x-pagination-total", HeaderValue::from(total));
    if offset + limit < total {
        headers.insert("x-pagination-next", HeaderValue::from(offset + limit));
    }
    Ok((headers, axum::Json(Value::Array(page))).into_response())
}
