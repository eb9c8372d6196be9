//! The node cache (LangGraph's `CachePolicy` and `InMemoryCache` / `SqliteCache`): a node
//! with a [`CachePolicy`] is not run again on an input it already answered; its writes come
//! from the cache until the entry expires.
//!
//! A policy gives the key (by default the node's whole input, encoded) and a time to live. The
//! store is a [`NodeCache`] given to the compiled graph with
//! [`CompiledGraph::with_cache`](crate::CompiledGraph::with_cache): [`InMemoryCache`] for one
//! process, [`SqliteCache`] to share across processes and restarts.
//!
//! ```
//! # use std::sync::Arc;
//! # use std::sync::atomic::{AtomicUsize, Ordering};
//! # use std::time::Duration;
//! use agent_core::{CachePolicy, GraphState, InMemoryCache, NodeExt, RunConfig, StateGraph, END, START};
//!
//! #[derive(GraphState, Clone, Default, Debug)]
//! struct S { question: String, answer: String }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_core::GraphError> {
//! let calls = Arc::new(AtomicUsize::new(0));
//! let counter = calls.clone();
//! let expensive = move |s: Arc<S>| {
//!     counter.fetch_add(1, Ordering::SeqCst);
//!     async move { SUpdate::default().answer(format!("{} -> 42", s.question)) }
//! };
//! let graph = StateGraph::<S>::new()
//!     .add_node("think", expensive.with_cache_policy(CachePolicy::new().ttl(Duration::from_secs(60))))
//!     .add_edge(START, "think")
//!     .add_edge("think", END)
//!     .compile()?
//!     .with_cache(Arc::new(InMemoryCache::new()));
//! let input = || SUpdate::default().question("meaning?".to_owned());
//! graph.invoke(input(), RunConfig::default()).await?;
//! let out = graph.invoke(input(), RunConfig::default()).await?;
//! assert_eq!(out.answer, "meaning? -> 42");
//! assert_eq!(calls.load(Ordering::SeqCst), 1, "the second run read the cache");
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::GraphError;
use crate::state::GraphState;

/// Makes a cache key of a node's input.
type KeyFn<S> = Arc<dyn Fn(&S) -> Vec<u8> + Send + Sync>;

/// Entries of an [`InMemoryCache`]: (namespace, key) -> (value, expiry in ms).
type Entries = HashMap<(String, Vec<u8>), (Vec<u8>, Option<i64>)>;

/// How a node's results are cached: the key of an input, and how long an entry lives.
pub struct CachePolicy<S> {
    pub(crate) key: Option<KeyFn<S>>,
    pub(crate) ttl: Option<Duration>,
}

impl<S> Clone for CachePolicy<S> {
    fn clone(&self) -> Self {
        CachePolicy {
            key: self.key.clone(),
            ttl: self.ttl,
        }
    }
}

impl<S> std::fmt::Debug for CachePolicy<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachePolicy")
            .field("custom_key", &self.key.is_some())
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl<S> Default for CachePolicy<S> {
    fn default() -> Self {
        CachePolicy {
            key: None,
            ttl: None,
        }
    }
}

impl<S> CachePolicy<S> {
    /// Entries keyed by the node's whole input, kept forever.
    pub fn new() -> Self {
        CachePolicy::default()
    }

    /// Entries expire `ttl` after they were written.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Keys entries by what `key` makes of the input (LangGraph's `key_func`): inputs with
    /// the same key share an entry. A node with its own input type
    /// ([`input_node`](crate::input_node)) is always keyed by that input's encoding.
    pub fn key(mut self, key: impl Fn(&S) -> Vec<u8> + Send + Sync + 'static) -> Self {
        self.key = Some(Arc::new(key));
        self
    }
}

impl<S: GraphState> CachePolicy<S> {
    /// The key of `input`: the policy's, or the input's encoding.
    pub(crate) fn key_of(&self, input: &S) -> Result<Vec<u8>, String> {
        match &self.key {
            Some(key) => Ok(key(input)),
            None => crate::checkpoint::codec::encode(&input.clone().into_update()),
        }
    }
}

impl<S> CachePolicy<S> {
    /// The key of a node's own input (a `Send::input`): its encoding.
    pub(crate) fn key_of_input(
        &self,
        input: &crate::node_input::AnyInput,
    ) -> Result<Vec<u8>, String> {
        input.encode()
    }
}

/// Where cached node results live. Object-safe: share one as `Arc<dyn NodeCache>`.
#[async_trait::async_trait]
pub trait NodeCache: Send + Sync + 'static {
    /// The entry of `key` in namespace `ns` (the node's name), unless missing or expired.
    async fn get(&self, ns: &str, key: &[u8]) -> Result<Option<Vec<u8>>, GraphError>;

    /// Stores an entry; it expires after `ttl` (never when `None`).
    async fn set(
        &self,
        ns: &str,
        key: &[u8],
        value: Vec<u8>,
        ttl: Option<Duration>,
    ) -> Result<(), GraphError>;

    /// Drops every entry of the namespaces (all of them when empty).
    async fn clear(&self, namespaces: &[&str]) -> Result<(), GraphError>;
}

/// Milliseconds since the Unix epoch, and the expiry of an entry written now.
fn expiry(ttl: Option<Duration>) -> Option<i64> {
    ttl.map(|ttl| now_ms().saturating_add(ttl.as_millis() as i64))
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Cached node results in a process-local map.
#[derive(Default)]
pub struct InMemoryCache {
    entries: Mutex<Entries>,
}

impl std::fmt::Debug for InMemoryCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryCache").finish_non_exhaustive()
    }
}

impl InMemoryCache {
    /// An empty cache.
    pub fn new() -> Self {
        InMemoryCache::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // Each method leaves the map consistent, so a poisoned lock is still usable.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait::async_trait]
impl NodeCache for InMemoryCache {
    async fn get(&self, ns: &str, key: &[u8]) -> Result<Option<Vec<u8>>, GraphError> {
        let mut entries = self.lock();
        let id = (ns.to_owned(), key.to_vec());
        match entries.get(&id) {
            Some((_, Some(expires))) if *expires <= now_ms() => {
                entries.remove(&id);
                Ok(None)
            }
            Some((value, _)) => Ok(Some(value.clone())),
            None => Ok(None),
        }
    }

    async fn set(
        &self,
        ns: &str,
        key: &[u8],
        value: Vec<u8>,
        ttl: Option<Duration>,
    ) -> Result<(), GraphError> {
        self.lock()
            .insert((ns.to_owned(), key.to_vec()), (value, expiry(ttl)));
        Ok(())
    }

    async fn clear(&self, namespaces: &[&str]) -> Result<(), GraphError> {
        let mut entries = self.lock();
        if namespaces.is_empty() {
            entries.clear();
        } else {
            entries.retain(|(ns, _), _| !namespaces.contains(&ns.as_str()));
        }
        Ok(())
    }
}

/// Cached node results in a SQLite file (a table of its own; it may share the checkpoints'
/// file), so they outlive the process.
#[cfg(feature = "sqlite")]
#[derive(Clone)]
pub struct SqliteCache {
    conn: Arc<Mutex<rusqlite::Connection>>,
}

#[cfg(feature = "sqlite")]
impl std::fmt::Debug for SqliteCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteCache").finish_non_exhaustive()
    }
}

#[cfg(feature = "sqlite")]
fn sqlite_error(e: impl std::fmt::Display) -> GraphError {
    GraphError::Storage {
        backend: "sqlite cache",
        detail: e.to_string(),
    }
}

#[cfg(feature = "sqlite")]
impl SqliteCache {
    /// Opens (or creates) the cache in the SQLite file at `path`.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self, GraphError> {
        let conn = rusqlite::Connection::open(path.as_ref())
            .map_err(|e| sqlite_error(format!("opening {}: {e}", path.as_ref().display())))?;
        conn.busy_timeout(Duration::from_secs(30))
            .map_err(sqlite_error)?;
        let _: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(sqlite_error)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS agentgraph_node_cache (
                 ns TEXT NOT NULL,
                 key BLOB NOT NULL,
                 value BLOB NOT NULL,
                 expires_at_ms INTEGER,
                 PRIMARY KEY (ns, key)
             )",
        )
        .map_err(sqlite_error)?;
        Ok(SqliteCache {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, GraphError> {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let guard = conn.lock().unwrap_or_else(|p| p.into_inner());
            f(&guard)
        })
        .await
        .map_err(|e| sqlite_error(format!("blocking task failed: {e}")))?
        .map_err(sqlite_error)
    }
}

#[cfg(feature = "sqlite")]
#[async_trait::async_trait]
impl NodeCache for SqliteCache {
    async fn get(&self, ns: &str, key: &[u8]) -> Result<Option<Vec<u8>>, GraphError> {
        use rusqlite::OptionalExtension;
        let (ns, key, now) = (ns.to_owned(), key.to_vec(), now_ms());
        self.with(move |c| {
            c.prepare_cached(
                "SELECT value FROM agentgraph_node_cache
                  WHERE ns = ?1 AND key = ?2 AND (expires_at_ms IS NULL OR expires_at_ms > ?3)",
            )?
            .query_row(rusqlite::params![ns, key, now], |r| r.get(0))
            .optional()
        })
        .await
    }

    async fn set(
        &self,
        ns: &str,
        key: &[u8],
        value: Vec<u8>,
        ttl: Option<Duration>,
    ) -> Result<(), GraphError> {
        let (ns, key, expires) = (ns.to_owned(), key.to_vec(), expiry(ttl));
        self.with(move |c| {
            c.prepare_cached(
                "INSERT OR REPLACE INTO agentgraph_node_cache (ns, key, value, expires_at_ms)
                 VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(rusqlite::params![ns, key, value, expires])
            .map(|_| ())
        })
        .await
    }

    async fn clear(&self, namespaces: &[&str]) -> Result<(), GraphError> {
        let namespaces: Vec<String> = namespaces.iter().map(|n| (*n).to_owned()).collect();
        self.with(move |c| {
            if namespaces.is_empty() {
                c.execute("DELETE FROM agentgraph_node_cache", [])?;
            }
            for ns in &namespaces {
                c.execute(
                    "DELETE FROM agentgraph_node_cache WHERE ns = ?1",
                    rusqlite::params![ns],
                )?;
            }
            Ok(())
        })
        .await
    }
}
