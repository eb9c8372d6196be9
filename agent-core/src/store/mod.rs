//! Long-term memory: the [`Store`] (LangGraph's `BaseStore`), which remembers across threads
//! what checkpoints remember for one — a user's profile, facts, preferences, summaries.
//!
//! Items are JSON objects under a namespace (a path of labels such as
//! `["memories", "user-1"]`) and a key. A store gets, puts (with an optional TTL and a choice
//! of fields to embed), deletes, searches a namespace prefix by filters on value fields and —
//! configured with an [`IndexConfig`] — by meaning (`query`), lists namespaces, and runs a
//! [`batch`](Store::batch) of mixed ops in order. Three stores ship: [`InMemoryStore`],
//! [`SqliteStore`] (its own tables, in the checkpoints' file if you like) and
//! [`PostgresStore`]; `testkit` (feature `testkit`) holds the cases every store passes.
//!
//! Nodes reach the store through their context (`ctx.store()`), given to the graph with
//! `CompiledGraph::with_store` or to one run with `RunConfig::store`.
//!
//! ```
//! use agent_core::store::{ns, InMemoryStore, SearchOp, Store};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_core::store::StoreError> {
//! let store = InMemoryStore::new();
//! let user = ns(["users", "ada"]);
//! store.put(&user, "profile", json!({"name": "Ada", "lang": "en"})).await?;
//! store.put(&user, "likes", json!({"topic": "engines", "weight": 3})).await?;
//! let heavy = store
//!     .search(SearchOp::new(ns(["users"])).filter(json!({"weight": {"$gte": 2}})))
//!     .await?;
//! assert_eq!(heavy[0].key, "likes");
//! assert_eq!(store.get(&user, "profile").await?.map(|i| i.value["name"].clone()), Some(json!("Ada")));
//! # Ok(()) }
//! ```

mod embed;
mod error;
mod filter;
mod item;
mod memory;
mod namespace;
#[cfg(feature = "postgres")]
mod narrow;
#[cfg(feature = "postgres")]
mod postgres;
mod prepare;
mod rank;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "testkit")]
pub mod testkit;
mod ttl;

use std::fmt;

use serde_json::Value;

pub use embed::{Embed, IndexConfig, cosine, texts_at_path, validate_path};
pub use error::StoreError;
pub use filter::{matches, validate_filter};
pub use item::{
    GetOp, IndexChoice, Item, ListNamespacesOp, Op, OpResult, PutOp, SearchItem, SearchOp, Ttl,
};
pub use memory::InMemoryStore;
pub use namespace::{MatchCondition, MatchType, RESERVED_ROOT, ns, validate_namespace};
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
pub use prepare::StoreConfig;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
pub use ttl::{Sweeper, TtlConfig};

/// Long-term memory shared across threads: items under namespaces, found by key, filter or
/// meaning. Implement [`batch`](Store::batch) (ops applied in order, each result in its op's
/// place) and [`sweep_expired`](Store::sweep_expired); the other calls are built on `batch`.
#[async_trait::async_trait]
pub trait Store: Send + Sync + fmt::Debug {
    /// The backend's name (`memory`, `sqlite`, `postgres`...).
    fn backend(&self) -> &str;

    /// Applies `ops` in order; a result per op.
    async fn batch(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, StoreError>;

    /// Deletes expired items; how many.
    async fn sweep_expired(&self) -> Result<usize, StoreError>;

    /// The store's TTL rules, if it has any.
    fn ttl_config(&self) -> Option<&TtlConfig> {
        None
    }

    /// Applies one op: a [`batch`](Store::batch) of one, which a backend may answer without
    /// the batch's lists. The calls below go through it.
    async fn apply(&self, op: Op) -> Result<OpResult, StoreError> {
        one(self.batch(vec![op]).await?)
    }

    /// The item under `namespace` and `key`, unless missing or expired.
    async fn get(&self, namespace: &[String], key: &str) -> Result<Option<Item>, StoreError> {
        match self
            .apply(GetOp::new(namespace.to_vec(), key).into())
            .await?
        {
            OpResult::Item(item) => Ok(item),
            other => Err(unexpected("get", &other)),
        }
    }

    /// Stores `value` (a JSON object) under `namespace` and `key`, with the store's default
    /// TTL and index fields.
    async fn put(&self, namespace: &[String], key: &str, value: Value) -> Result<(), StoreError> {
        let Value::Object(value) = value else {
            return Err(StoreError::InvalidValue {
                key: key.to_owned(),
                reason: format!("a stored value is a JSON object, not {value}"),
            });
        };
        self.put_op(PutOp::new(namespace.to_vec(), key, value))
            .await
    }

    /// Applies one put (or delete) with its own TTL and index choice.
    async fn put_op(&self, op: PutOp) -> Result<(), StoreError> {
        self.apply(op.into()).await.map(drop)
    }

    /// Deletes the item under `namespace` and `key` (nothing when there is none).
    async fn delete(&self, namespace: &[String], key: &str) -> Result<(), StoreError> {
        self.put_op(PutOp::delete(namespace.to_vec(), key)).await
    }

    /// The items `op` finds.
    async fn search(&self, op: SearchOp) -> Result<Vec<SearchItem>, StoreError> {
        match self.apply(op.into()).await? {
            OpResult::Items(items) => Ok(items),
            other => Err(unexpected("search", &other)),
        }
    }

    /// The namespaces `op` lists.
    async fn list_namespaces(&self, op: ListNamespacesOp) -> Result<Vec<Vec<String>>, StoreError> {
        match self.apply(op.into()).await? {
            OpResult::Namespaces(namespaces) => Ok(namespaces),
            other => Err(unexpected("list_namespaces", &other)),
        }
    }
}

fn one(results: Vec<OpResult>) -> Result<OpResult, StoreError> {
    let count = results.len();
    let mut results = results.into_iter();
    match (results.next(), count) {
        (Some(result), 1) => Ok(result),
        _ => Err(StoreError::Storage {
            backend: "store",
            detail: format!("a batch of one op answered {count} results"),
        }),
    }
}

fn unexpected(call: &str, result: &OpResult) -> StoreError {
    StoreError::Storage {
        backend: "store",
        detail: format!("`{call}` got the result of another op: {result:?}"),
    }
}
