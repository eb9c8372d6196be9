//! Searching and listing over candidates a backend found, the same for every backend: the
//! filter, the ranking (by similarity to the query, else most recently updated first), the
//! page; and the namespace conditions, depth and page of `list_namespaces`.

use std::collections::BTreeSet;

use super::embed::cosine;
use super::prepare::Search;
use serde_json::{Map, Value};

use super::namespace::split;
use super::{Item, ListNamespacesOp, SearchItem, StoreError, matches};

/// An item a search may return, with its vectors (only when the search has a query).
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub item: Item,
    pub vectors: Vec<Vec<f32>>,
}

/// The page of `candidates` that `search` returns. With a query, items with vectors come
/// first by their best field's similarity, then those without (by recency); without one,
/// the most recently updated first. Ties go to namespace and key order.
pub(crate) fn rank(candidates: Vec<Candidate>, search: &Search) -> Vec<SearchItem> {
    let mut found: Vec<SearchItem> = candidates
        .into_iter()
        .filter(|c| matches(&search.filter, &c.item.value))
        .map(|c| {
            let score = search.query.as_ref().and_then(|q| {
                c.vectors
                    .iter()
                    .map(|v| cosine(q, v))
                    .fold(None, |best: Option<f32>, s| {
                        Some(best.map_or(s, |b| b.max(s)))
                    })
            });
            SearchItem {
                item: c.item,
                score,
            }
        })
        .collect();
    found.sort_by(|a, b| {
        let by_score = match (a.score, b.score) {
            (Some(x), Some(y)) => y.total_cmp(&x),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => b.updated_at_ms.cmp(&a.updated_at_ms),
        };
        by_score
            .then_with(|| a.namespace.cmp(&b.namespace))
            .then_with(|| a.key.cmp(&b.key))
    });
    found
        .into_iter()
        .skip(search.offset)
        .take(search.limit)
        .collect()
}

/// The page of `namespaces` (each listed once, sorted) that `op` returns.
pub(crate) fn list(
    namespaces: impl IntoIterator<Item = Vec<String>>,
    op: &ListNamespacesOp,
) -> Vec<Vec<String>> {
    let kept: BTreeSet<Vec<String>> = namespaces
        .into_iter()
        .filter(|ns| op.match_conditions.iter().all(|c| c.matches(ns)))
        .map(|mut ns| {
            if let Some(depth) = op.max_depth {
                ns.truncate(depth);
            }
            ns
        })
        .collect();
    kept.into_iter().skip(op.offset).take(op.limit).collect()
}

/// An item from its stored columns (SQL backends).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn to_item(
    prefix: &str,
    key: String,
    value: &str,
    created: i64,
    updated: i64,
) -> Result<Item, StoreError> {
    let value: Map<String, Value> =
        serde_json::from_str(value).map_err(|e| StoreError::Storage {
            backend: "store",
            detail: format!("the stored value of `{prefix}` / `{key}` is not a JSON object: {e}"),
        })?;
    Ok(Item {
        namespace: split(prefix),
        key,
        value,
        created_at_ms: created,
        updated_at_ms: updated,
    })
}
