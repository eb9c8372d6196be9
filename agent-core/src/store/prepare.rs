//! What every backend does before touching its storage, in one place: the store's settings
//! ([`StoreConfig`]: index, TTL, clock), checking a batch's ops, resolving their defaults
//! (TTL, refresh on read, index fields) and embedding the texts of its puts and the queries
//! of its searches, one call to the embedder for each.

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::embed::{texts_to_embed, validate_path};
use super::namespace::{validate_labels, validate_namespace};
use super::{
    IndexChoice, IndexConfig, ListNamespacesOp, Op, StoreError, Ttl, TtlConfig, validate_filter,
};
use crate::runtime::{Clock, SystemClock};

/// A backend's settings: its index (semantic search), TTL rules and clock.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Which fields are embedded, and with what (none: no semantic search).
    pub index: Option<IndexConfig>,
    /// TTL defaults (none: items live until deleted unless a put says otherwise).
    pub ttl: Option<TtlConfig>,
    /// Where the time comes from (a [`ManualClock`](crate::ManualClock) in tests).
    pub clock: Arc<dyn Clock>,
}

/// The builder methods every backend has over its `config: StoreConfig` field, written
/// once; expanded inside each backend's `impl`.
macro_rules! config_builders {
    () => {
        /// Uses `config` (index, TTL, clock) for everything.
        pub fn with_config(mut self, config: $crate::store::StoreConfig) -> Self {
            self.config = config;
            self
        }

        /// Embeds items for semantic search.
        pub fn with_index(mut self, index: $crate::store::IndexConfig) -> Self {
            self.config.index = Some(index);
            self
        }

        /// TTL defaults.
        pub fn with_ttl(mut self, ttl: $crate::store::TtlConfig) -> Self {
            self.config.ttl = Some(ttl);
            self
        }

        /// Reads the time from `clock` (expiry, timestamps).
        pub fn with_clock(mut self, clock: std::sync::Arc<dyn $crate::runtime::Clock>) -> Self {
            self.config.clock = clock;
            self
        }
    };
}
pub(crate) use config_builders;

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            index: None,
            ttl: None,
            clock: Arc::new(SystemClock),
        }
    }
}

/// A put with its defaults resolved and its vectors computed.
#[derive(Debug, Clone)]
pub(crate) struct Put {
    pub namespace: Vec<String>,
    pub key: String,
    /// `None` deletes.
    pub value: Option<Map<String, Value>>,
    pub ttl_ms: Option<i64>,
    /// The vectors replacing the item's (`None`: the store has no index).
    pub vectors: Option<Vec<(String, Vec<f32>)>>,
}

/// A search with its defaults resolved and its query embedded.
#[derive(Debug, Clone)]
pub(crate) struct Search {
    pub prefix: Vec<String>,
    pub filter: Map<String, Value>,
    pub query: Option<Vec<f32>>,
    pub limit: usize,
    pub offset: usize,
    pub refresh: bool,
}

/// One checked op.
#[derive(Debug, Clone)]
pub(crate) enum Prepared {
    Get {
        namespace: Vec<String>,
        key: String,
        refresh: bool,
    },
    Put(Put),
    Search(Search),
    List(ListNamespacesOp),
}

impl StoreConfig {
    /// Now, in milliseconds since the Unix epoch.
    pub(crate) fn now_ms(&self) -> i64 {
        match self.clock.now().duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
        }
    }

    /// Whether a read refreshes TTLs: as `asked`, else as the store's TTL rules say.
    pub(crate) fn refresh(&self, asked: Option<bool>) -> bool {
        asked.unwrap_or_else(|| self.ttl.as_ref().is_none_or(|t| t.refresh_on_read))
    }

    fn ttl_ms(&self, ttl: Ttl) -> Option<i64> {
        let duration = match ttl {
            Ttl::StoreDefault => self.ttl.as_ref().and_then(|t| t.default_ttl),
            Ttl::Never => None,
            Ttl::After(d) => Some(d),
        };
        duration.map(|d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }

    /// Checks `ops`, resolves their defaults and computes their vectors.
    pub(crate) async fn prepare(&self, ops: Vec<Op>) -> Result<Vec<Prepared>, StoreError> {
        let mut wanted = Wanted::default();
        let mut prepared = ops
            .into_iter()
            .enumerate()
            .map(|(at, op)| self.check(at, op, &mut wanted))
            .collect::<Result<Vec<_>, _>>()?;
        self.embed(&mut prepared, wanted).await?;
        Ok(prepared)
    }

    /// [`prepare`](Self::prepare) for one op, without the lists.
    pub(crate) async fn prepare_one(&self, op: Op) -> Result<Prepared, StoreError> {
        let mut wanted = Wanted::default();
        let mut prepared = [self.check(0, op, &mut wanted)?];
        self.embed(&mut prepared, wanted).await?;
        let [op] = prepared;
        Ok(op)
    }

    /// Checks the op at `at` and resolves its defaults; the texts it needs embedded go to
    /// `wanted`.
    fn check(&self, at: usize, op: Op, wanted: &mut Wanted) -> Result<Prepared, StoreError> {
        Ok(match op {
            Op::Get(get) => {
                validate_namespace(&get.namespace)?;
                Prepared::Get {
                    refresh: self.refresh(get.refresh_ttl),
                    namespace: get.namespace,
                    key: get.key,
                }
            }
            Op::Put(put) => {
                validate_namespace(&put.namespace)?;
                let vectors = match (&self.index, &put.value) {
                    (None, _) => {
                        if let IndexChoice::Fields(_) = put.index {
                            return Err(StoreError::NoIndex {
                                what: "a put with index fields",
                            });
                        }
                        None
                    }
                    (Some(_), None) => Some(Vec::new()),
                    (Some(index), Some(value)) => {
                        let paths = match &put.index {
                            IndexChoice::StoreDefault => index.fields.as_slice(),
                            IndexChoice::Off => &[],
                            IndexChoice::Fields(fields) => fields.as_slice(),
                        };
                        let found = texts_to_embed(value, paths).map_err(|reason| {
                            StoreError::InvalidValue {
                                key: put.key.clone(),
                                reason,
                            }
                        })?;
                        wanted
                            .texts
                            .extend(found.into_iter().map(|(name, text)| (at, name, text)));
                        Some(Vec::new())
                    }
                };
                if let IndexChoice::Fields(fields) = &put.index {
                    for path in fields {
                        validate_path(path).map_err(|reason| StoreError::InvalidValue {
                            key: put.key.clone(),
                            reason,
                        })?;
                    }
                }
                Prepared::Put(Put {
                    ttl_ms: if put.value.is_some() {
                        self.ttl_ms(put.ttl)
                    } else {
                        None
                    },
                    namespace: put.namespace,
                    key: put.key,
                    value: put.value,
                    vectors,
                })
            }
            Op::Search(search) => {
                validate_labels(&search.namespace_prefix)?;
                if search.filter.contains_key("") {
                    return Err(StoreError::filter(
                        "",
                        "a filter is a JSON object of field names and conditions",
                    ));
                }
                validate_filter(&search.filter)?;
                if let Some(query) = search.query.filter(|q| !q.is_empty()) {
                    if self.index.is_none() {
                        return Err(StoreError::NoIndex {
                            what: "a search with a query",
                        });
                    }
                    wanted.queries.push((at, query));
                }
                Prepared::Search(Search {
                    refresh: self.refresh(search.refresh_ttl),
                    prefix: search.namespace_prefix,
                    filter: search.filter,
                    query: None,
                    limit: search.limit,
                    offset: search.offset,
                })
            }
            Op::ListNamespaces(list) => {
                for condition in &list.match_conditions {
                    validate_labels(&condition.path)?;
                }
                Prepared::List(list)
            }
        })
    }

    /// Embeds what `wanted` lists, one call to the embedder, into the puts' vectors and the
    /// searches' queries of `prepared`.
    async fn embed(&self, prepared: &mut [Prepared], wanted: Wanted) -> Result<(), StoreError> {
        let Some(index) = &self.index else {
            return Ok(());
        };
        if wanted.texts.is_empty() && wanted.queries.is_empty() {
            return Ok(());
        }
        let mut all: Vec<String> = wanted.texts.iter().map(|(_, _, t)| t.clone()).collect();
        all.extend(wanted.queries.iter().map(|(_, q)| q.clone()));
        let mut vectors = index.embed_texts(&all).await?.into_iter();
        for ((at, name, _), vector) in wanted.texts.into_iter().zip(vectors.by_ref()) {
            if let Prepared::Put(Put {
                vectors: Some(list),
                ..
            }) = &mut prepared[at]
            {
                list.push((name, vector));
            }
        }
        for ((at, _), vector) in wanted.queries.into_iter().zip(vectors) {
            if let Prepared::Search(search) = &mut prepared[at] {
                search.query = Some(vector);
            }
        }
        Ok(())
    }
}

/// What a batch needs embedded: (op's place, vector name, text) for every text of its puts,
/// and (op's place, query) for its searches.
#[derive(Default)]
struct Wanted {
    texts: Vec<(usize, String, String)>,
    queries: Vec<(usize, String)>,
}
