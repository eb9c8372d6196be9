//! What a store holds and what its calls take: [`Item`], [`SearchItem`] and the four ops a
//! [`batch`](super::Store::batch) mixes (LangGraph's `GetOp`, `PutOp`, `SearchOp`,
//! `ListNamespacesOp`), with builders for their optional parts.

use std::ops::Deref;
use std::time::Duration;

use serde_json::{Map, Value};

use super::MatchCondition;

/// A stored value: a JSON object under a namespace and a key.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Item {
    /// Where it lives: a path of labels, like `["memories", "user-1"]`.
    pub namespace: Vec<String>,
    /// Its key, unique within the namespace.
    pub key: String,
    /// Its value.
    pub value: Map<String, Value>,
    /// When it was first stored (milliseconds since the Unix epoch).
    pub created_at_ms: i64,
    /// When it was last stored.
    pub updated_at_ms: i64,
}

/// An item a search found, with its similarity to the query when the search had one and the
/// item has vectors (cosine similarity of its best-matching field).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SearchItem {
    /// The item.
    #[serde(flatten)]
    pub item: Item,
    /// Its similarity to the query.
    pub score: Option<f32>,
}

impl Deref for SearchItem {
    type Target = Item;

    fn deref(&self) -> &Item {
        &self.item
    }
}

/// How long a put item lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ttl {
    /// The store's [`TtlConfig::default_ttl`](super::TtlConfig::default_ttl) (forever without one).
    #[default]
    StoreDefault,
    /// Forever.
    Never,
    /// Until this long after it was put (or last read, when reads refresh it).
    After(Duration),
}

/// Which fields of a put item are embedded for semantic search.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum IndexChoice {
    /// The store's [`IndexConfig::fields`](super::IndexConfig::fields).
    #[default]
    StoreDefault,
    /// None: the item is found by filters only.
    Off,
    /// These paths instead.
    Fields(Vec<String>),
}

/// Stores a value under a namespace and key, or deletes it (`value: None`).
#[derive(Debug, Clone, PartialEq)]
pub struct PutOp {
    /// The namespace.
    pub namespace: Vec<String>,
    /// The key.
    pub key: String,
    /// The value; `None` deletes the item.
    pub value: Option<Map<String, Value>>,
    /// Which fields are embedded.
    pub index: IndexChoice,
    /// How long it lives.
    pub ttl: Ttl,
}

impl PutOp {
    /// Puts `value` under `namespace` and `key`.
    pub fn new(namespace: Vec<String>, key: impl Into<String>, value: Map<String, Value>) -> Self {
        PutOp {
            namespace,
            key: key.into(),
            value: Some(value),
            index: IndexChoice::StoreDefault,
            ttl: Ttl::StoreDefault,
        }
    }

    /// Deletes the item under `namespace` and `key`.
    pub fn delete(namespace: Vec<String>, key: impl Into<String>) -> Self {
        PutOp {
            namespace,
            key: key.into(),
            value: None,
            index: IndexChoice::StoreDefault,
            ttl: Ttl::StoreDefault,
        }
    }

    /// Chooses which fields are embedded.
    pub fn index(mut self, index: IndexChoice) -> Self {
        self.index = index;
        self
    }

    /// Chooses how long the item lives.
    pub fn ttl(mut self, ttl: Ttl) -> Self {
        self.ttl = ttl;
        self
    }
}

/// Reads one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetOp {
    /// The namespace.
    pub namespace: Vec<String>,
    /// The key.
    pub key: String,
    /// Whether reading restarts the item's TTL (`None`: the store's `refresh_on_read`).
    pub refresh_ttl: Option<bool>,
}

impl GetOp {
    /// Reads the item under `namespace` and `key`.
    pub fn new(namespace: Vec<String>, key: impl Into<String>) -> Self {
        GetOp {
            namespace,
            key: key.into(),
            refresh_ttl: None,
        }
    }

    /// Says whether reading restarts the item's TTL.
    pub fn refresh_ttl(mut self, refresh: bool) -> Self {
        self.refresh_ttl = Some(refresh);
        self
    }
}

/// Finds items under a namespace prefix, by filter and (with an index) by meaning.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOp {
    /// The namespaces searched: those starting with these labels (all when empty).
    pub namespace_prefix: Vec<String>,
    /// Conditions on value fields (see [`validate_filter`](super::validate_filter)).
    pub filter: Map<String, Value>,
    /// A text to rank by similarity (needs an index).
    pub query: Option<String>,
    /// At most this many items (10 by default).
    pub limit: usize,
    /// After skipping this many.
    pub offset: usize,
    /// Whether reading restarts the found items' TTLs (`None`: the store's `refresh_on_read`).
    pub refresh_ttl: Option<bool>,
}

impl SearchOp {
    /// Searches the namespaces under `namespace_prefix`: the 10 most recently updated items.
    pub fn new(namespace_prefix: Vec<String>) -> Self {
        SearchOp {
            namespace_prefix,
            filter: Map::new(),
            query: None,
            limit: 10,
            offset: 0,
            refresh_ttl: None,
        }
    }

    /// Keeps items meeting `filter` (a JSON object; anything else matches nothing and is
    /// refused by the store).
    pub fn filter(mut self, filter: Value) -> Self {
        self.filter = match filter {
            Value::Object(map) => map,
            other => {
                let mut map = Map::new();
                map.insert(String::new(), other);
                map
            }
        };
        self
    }

    /// Ranks by similarity to `query`.
    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    /// Returns at most `limit` items.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Skips the first `offset` items.
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }

    /// Says whether reading restarts the found items' TTLs.
    pub fn refresh_ttl(mut self, refresh: bool) -> Self {
        self.refresh_ttl = Some(refresh);
        self
    }
}

/// Lists the namespaces items are stored under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListNamespacesOp {
    /// Conditions every listed namespace meets.
    pub match_conditions: Vec<MatchCondition>,
    /// Namespaces cut to this many labels (and listed once).
    pub max_depth: Option<usize>,
    /// At most this many (100 by default).
    pub limit: usize,
    /// After skipping this many.
    pub offset: usize,
}

impl Default for ListNamespacesOp {
    fn default() -> Self {
        ListNamespacesOp {
            match_conditions: Vec::new(),
            max_depth: None,
            limit: 100,
            offset: 0,
        }
    }
}

impl ListNamespacesOp {
    /// All namespaces, the first 100.
    pub fn new() -> Self {
        Self::default()
    }

    /// Namespaces starting with `prefix` (`*` matches any one label).
    pub fn prefix(mut self, prefix: Vec<String>) -> Self {
        self.match_conditions.push(MatchCondition::prefix(prefix));
        self
    }

    /// Namespaces ending with `suffix` (`*` matches any one label).
    pub fn suffix(mut self, suffix: Vec<String>) -> Self {
        self.match_conditions.push(MatchCondition::suffix(suffix));
        self
    }

    /// Cuts namespaces to `depth` labels.
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = Some(depth);
        self
    }

    /// Returns at most `limit`.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Skips the first `offset`.
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }
}

/// One op of a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Read an item.
    Get(GetOp),
    /// Store or delete an item.
    Put(PutOp),
    /// Find items.
    Search(SearchOp),
    /// List namespaces.
    ListNamespaces(ListNamespacesOp),
}

/// The result of one op of a batch, in the op's place.
#[derive(Debug, Clone, PartialEq)]
pub enum OpResult {
    /// A get's item, if it exists (and has not expired).
    Item(Option<Item>),
    /// A search's items.
    Items(Vec<SearchItem>),
    /// A list's namespaces.
    Namespaces(Vec<Vec<String>>),
    /// A put or delete was applied.
    Done,
}

impl From<GetOp> for Op {
    fn from(op: GetOp) -> Self {
        Op::Get(op)
    }
}

impl From<PutOp> for Op {
    fn from(op: PutOp) -> Self {
        Op::Put(op)
    }
}

impl From<SearchOp> for Op {
    fn from(op: SearchOp) -> Self {
        Op::Search(op)
    }
}

impl From<ListNamespacesOp> for Op {
    fn from(op: ListNamespacesOp) -> Self {
        Op::ListNamespaces(op)
    }
}
