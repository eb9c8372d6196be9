//! Reading what every resource shares: path ids, metadata containment, and the page a search
//! asks for (the store sorts, pages and counts, see [`crate::store::Query`]; this answers
//! with LangGraph's pagination headers).

use axum::Json;
use axum::http::{HeaderMap, HeaderValue};
use serde_json::{Map, Value};

use super::App;
use crate::error::ApiError;
use crate::store::{Kind, Query};

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

/// A page of a search as the client asked: sorted by `sort_by` in `order`, cut to `page`.
pub(crate) struct Paging<'a> {
    pub(crate) page: super::models::Page,
    pub(crate) sort_by: &'a str,
    pub(crate) order: super::models::SortOrder,
}

/// What a search reads: the documents of a kind, or the crons.
pub(crate) enum Searched {
    Docs(Kind),
    Crons,
}

/// Where a page read from the store is among all that match.
pub(crate) struct Found {
    total: u64,
    offset: usize,
    limit: usize,
}

impl Found {
    /// `page` (its documents made public) with LangGraph's pagination headers.
    pub(crate) fn respond(&self, page: Vec<Value>) -> (HeaderMap, Json<Vec<Value>>) {
        (pagination(self.total, self.offset, self.limit), Json(page))
    }
}

impl Paging<'_> {
    /// The page of `query` (its limit and offset checked against the server's limits) and
    /// where it is among all that match (counted at once).
    pub(crate) async fn fetch(
        &self,
        app: &App,
        what: Searched,
        query: &Query,
    ) -> Result<(Vec<Value>, Found), ApiError> {
        let (limit, offset) = app.limits.page(
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
        let (docs, total) = match what {
            Searched::Docs(kind) => {
                tokio::try_join!(app.store.search(kind, &paged), app.store.count(kind, query),)?
            }
            Searched::Crons => {
                tokio::try_join!(app.store.search_crons(&paged), app.store.count_crons(query),)?
            }
        };
        Ok((
            docs,
            Found {
                total,
                offset,
                limit,
            },
        ))
    }
}

/// The names of a search's `select` fields (an enum of them, or strings), for [`select`].
pub(crate) fn field_names<T: serde::Serialize>(fields: Option<&Vec<T>>) -> Option<Vec<String>> {
    fields.map(|fields| {
        fields
            .iter()
            .filter_map(|f| super::models::as_value(f).as_str().map(str::to_owned))
            .collect()
    })
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
