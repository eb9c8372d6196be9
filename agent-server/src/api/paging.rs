//! Reading what every resource shares: path ids, metadata containment, and pages of a
//! search (sorted, cut, with LangGraph's pagination headers).

use axum::http::{HeaderMap, HeaderValue};
use serde_json::{Map, Value};

use crate::error::ApiError;

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

/// A page of a search as the client asked: sorted by `sort_by` in `order`, cut to `page`,
/// keeping only the `select` fields.
pub(crate) struct Paging<'a> {
    pub(crate) page: super::models::Page,
    pub(crate) sort_by: &'a str,
    pub(crate) order: super::models::SortOrder,
    pub(crate) select: Option<&'a [String]>,
}

/// The page `paging` asks of `items`, with LangGraph's pagination headers.
pub(crate) fn page_of(
    limits: &crate::limits::Limits,
    mut items: Vec<Value>,
    paging: Paging<'_>,
) -> Result<(HeaderMap, Vec<Value>), ApiError> {
    let (limit, offset) = limits.page(
        usize::try_from(paging.page.limit).unwrap_or(usize::MAX),
        usize::try_from(paging.page.offset).unwrap_or(usize::MAX),
    )?;
    let key = |v: &Value| {
        v.get(paging.sort_by)
            .map(Value::to_string)
            .unwrap_or_default()
    };
    items.sort_by_key(key);
    if paging.order == super::models::SortOrder::Desc {
        items.reverse();
    }
    let total = items.len();
    let page: Vec<Value> = items
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|v| select(v, paging.select))
        .collect();
    Ok((pagination(total, offset, limit), page))
}

/// `x-pagination-total` and, when more follow, `x-pagination-next`.
pub(crate) fn pagination(total: usize, offset: usize, limit: usize) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("x-pagination-total", HeaderValue::from(total));
    if offset + limit < total {
        headers.insert("x-pagination-next", HeaderValue::from(offset + limit));
    }
    headers
}

/// Only the `keys` of an object (all of it without `keys`).
pub(crate) fn select(v: Value, keys: Option<&[String]>) -> Value {
    match (keys, v) {
        (Some(keys), Value::Object(m)) => {
            Value::Object(m.into_iter().filter(|(k, _)| keys.contains(k)).collect())
        }
        (_, v) => v,
    }
}
