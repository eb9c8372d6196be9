//! Searching and listing over candidates a backend found, the same for every backend: the
//! filter, the ranking (by similarity to the query, else most recently updated first), the
//! page; for the SQL stores, which of the rows they read a page needs parsed; and the
//! namespace conditions, depth and page of `list_namespaces`.

use std::cmp::Ordering;
use std::collections::BTreeSet;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
use std::collections::HashMap;

use super::embed::cosine;
use super::prepare::Search;
use serde_json::{Map, Value};

use super::namespace::split;
use super::{Item, ListNamespacesOp, SearchItem, StoreError, matches};

/// The page of `candidates` (each an item and its vectors, only read when the search has a
/// query) that `search` returns. With a query, items with vectors come first by their best
/// field's similarity, then those without (by recency); without one, the most recently
/// updated first. Ties go to namespace and key order. Candidates are borrowed: only the
/// page's items are cloned, and only the page is sorted in full.
pub(crate) fn rank<'a, V>(
    candidates: impl IntoIterator<Item = (&'a Item, V)>,
    search: &Search,
) -> Vec<SearchItem>
where
    V: IntoIterator<Item = &'a [f32]>,
{
    let mut found: Vec<(Option<f32>, &Item)> = candidates
        .into_iter()
        .filter(|(item, _)| matches(&search.filter, &item.value))
        .map(|(item, vectors)| {
            let score = search.query.as_ref().and_then(|q| best_score(q, vectors));
            (score, item)
        })
        .collect();
    let order = |(sa, a): &(Option<f32>, &Item), (sb, b): &(Option<f32>, &Item)| {
        let by_score = match (sa, sb) {
            (Some(x), Some(y)) => y.total_cmp(x),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => b.updated_at_ms.cmp(&a.updated_at_ms),
        };
        by_score
            .then_with(|| a.namespace.cmp(&b.namespace))
            .then_with(|| a.key.cmp(&b.key))
    };
    // The order is total (namespace and key are unique): keeping the first `end` before
    // sorting them gives the same page as sorting everything.
    let end = search.offset.saturating_add(search.limit);
    if end < found.len() {
        found.select_nth_unstable_by(end, order);
        found.truncate(end);
    }
    found.sort_unstable_by(order);
    found
        .into_iter()
        .skip(search.offset)
        .map(|(score, item)| SearchItem {
            item: item.clone(),
            score,
        })
        .collect()
}

/// An item's score for a query: its best field's similarity, `None` without vectors.
fn best_score<'a>(query: &[f32], vectors: impl IntoIterator<Item = &'a [f32]>) -> Option<f32> {
    vectors
        .into_iter()
        .map(|v| cosine(query, v))
        .fold(None, |best: Option<f32>, s| {
            Some(best.map_or(s, |b| b.max(s)))
        })
}

/// An item as a SQL store reads it, its value not yet parsed, with what the store keeps
/// beside it (`extra`) and its vectors.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) struct Row<X> {
    pub prefix: String,
    pub key: String,
    pub value: String,
    pub created: i64,
    pub updated: i64,
    pub extra: X,
    pub vectors: Vec<Vec<f32>>,
}

/// The vectors a SQL store read for a search, by prefix and then key (so that a row finds
/// its own without copying its names).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[derive(Default)]
pub(crate) struct Vectors(HashMap<String, HashMap<String, Vec<Vec<f32>>>>);

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl Vectors {
    pub(crate) fn add(&mut self, prefix: String, key: String, vector: Vec<f32>) {
        self.0
            .entry(prefix)
            .or_default()
            .entry(key)
            .or_default()
            .push(vector);
    }

    /// Gives each row its vectors.
    pub(crate) fn attach<X>(mut self, rows: &mut [Row<X>]) {
        for row in rows {
            if let Some(found) = self
                .0
                .get_mut(&row.prefix)
                .and_then(|items| items.remove(&row.key))
            {
                row.vectors = found;
            }
        }
    }
}

/// Parsed rows: each item, what its store keeps beside it, and its vectors.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) type Parsed<X> = Vec<(Item, X, Vec<Vec<f32>>)>;

/// Where a row stands in [`rank`]'s order, before namespace and key: scored rows first, best
/// first, then the others, newest first.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[derive(Clone, Copy)]
enum Standing {
    Scored(f32),
    Unscored(i64),
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl Standing {
    fn order(self, other: Self) -> Ordering {
        match (self, other) {
            (Standing::Scored(a), Standing::Scored(b)) => b.total_cmp(&a),
            (Standing::Scored(_), Standing::Unscored(_)) => Ordering::Less,
            (Standing::Unscored(_), Standing::Scored(_)) => Ordering::Greater,
            (Standing::Unscored(a), Standing::Unscored(b)) => b.cmp(&a),
        }
    }
}

/// The rows a search's page can come from, parsed: in [`rank`]'s order (by score with a
/// query, else newest first), whole ties at a time, until as many pass the filter as the
/// page needs. Every row left out ranks after all of these, so the page is among them, and
/// only their JSON is parsed (parsing every item under the prefix was most of a search's
/// time). A stored value that is not a JSON object is an error when it is reached.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn parse_best<X>(rows: Vec<Row<X>>, search: &Search) -> Result<Parsed<X>, StoreError> {
    let needed = search.offset.saturating_add(search.limit);
    let mut ranked: Vec<(Standing, Row<X>)> = rows
        .into_iter()
        .map(|row| {
            let score = search
                .query
                .as_ref()
                .and_then(|q| best_score(q, row.vectors.iter().map(Vec::as_slice)));
            let standing = score.map_or(Standing::Unscored(row.updated), Standing::Scored);
            (standing, row)
        })
        .collect();
    ranked.sort_unstable_by(|(a, _), (b, _)| a.order(*b));
    let mut parsed = Vec::new();
    let mut passing = 0;
    let mut last: Option<Standing> = None;
    for (standing, row) in ranked {
        if passing >= needed && last.is_some_and(|l| l.order(standing) == Ordering::Less) {
            break;
        }
        let item = to_item(&row.prefix, row.key, &row.value, row.created, row.updated)?;
        passing += usize::from(matches(&search.filter, &item.value));
        parsed.push((item, row.extra, row.vectors));
        last = Some(standing);
    }
    Ok(parsed)
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
