//! Reading what every resource shares: path ids, metadata containment, and the page a search
//! asks for (the store sorts, pages and counts, see [`crate::store::Query`]; this answers
//! with LangGraph's pagination headers).

use axum::http::{HeaderMap, HeaderValue};
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::store::Query;

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

impl Paging<'_> {
    /// `query` asking the store for this page (the limit and offset checked against the
    /// server's limits), and the page's offset and limit for [`pagination`].
    pub(crate) fn query(
        &self,
        limits: &crate::limits::Limits,
        query: &Query,
    ) -> Result<(Query, usize, usize), ApiError> {
        let (limit, offset) = limits.page(
            usize::try_from(self.page.limit).unwrap_or(usize::MAX),
            usize::try_from(self.page.offset).unwrap_or(usize::MAX),
        )?;
        let paged = Query {
            sort_by: Some(self.sort_by.to_owned()),
            descending: self.order == super::models::SortOrder::Desc,
            limit: Some(limit),
            offset,
            ..query.clone()
        };
        Ok((paged, offset, limit))
    }

    /// The page's items (only the `select` fields) with LangGraph's pagination headers.
    pub(crate) fn respond(
        &self,
        items: Vec<Value>,
        total: u64,
        offset: usize,
        limit: usize,
    ) -> (HeaderMap, Vec<Value>) {
        let page = items.into_iter().map(|v| select(v, self.select)).collect();
        (pagination(total, offset, limit), page)
    }
}

/// `x-pagination-total` and, when more follow, `x-pagination-next`.
pub(crate) fn pagination(total: u64, offset: usize, limit: usize) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("x-pagination-total", HeaderValue::from(total));
    let next = offset.saturating_add(limit) as u64;
    if next < total {
        headers.insert("x-pagination-next", HeaderValue::from(next));
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
