//! `SqliteStore`: items in a SQLite file — its own tables (`store_items`, `store_vectors`,
//! `store_meta`), so it may share the checkpoints' file. Opened as the checkpointer opens
//! its file (WAL, a busy timeout, `synchronous=NORMAL`); every batch is one `BEGIN
//! IMMEDIATE` transaction on tokio's blocking pool, so batches from several processes
//! serialize instead of failing on a lock upgrade. Namespaces are stored as their labels
//! joined by `.`; a prefix search is a range of the primary key. Filters and ranking run in
//! Rust over the items under the prefix (vectors are read only for a query): a search reads
//! every live item under its prefix and parses only those its page can come from (see
//! `rank::parse_best`).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde_json::Value;

use super::embed::{from_bytes, to_bytes};
use super::namespace::{join, split};
use super::prepare::config_builders;
use super::prepare::{Prepared, Put, StoreConfig};
use super::rank::{self, to_item};
use super::{Op, OpResult, Store, StoreError, TtlConfig};

/// The store's schema version (`store_meta`).
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS store_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS store_items (
    prefix TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    ttl_ms INTEGER,
    expires_at_ms INTEGER,
    PRIMARY KEY (prefix, key)
);
CREATE INDEX IF NOT EXISTS store_items_expiry ON store_items (expires_at_ms)
    WHERE expires_at_ms IS NOT NULL;
CREATE TABLE IF NOT EXISTS store_vectors (
    prefix TEXT NOT NULL,
    key TEXT NOT NULL,
    field TEXT NOT NULL,
    embedding BLOB NOT NULL,
    PRIMARY KEY (prefix, key, field)
);
";

/// How long a batch waits for another connection's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Items in a SQLite file.
#[derive(Clone)]
pub struct SqliteStore {
    config: StoreConfig,
    conn: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Storage {
        backend: "sqlite",
        detail: e.to_string(),
    }
}

impl SqliteStore {
    /// Opens (or creates) the file at `path` and creates the store's tables. The file may be
    /// the one a `SqliteSaver::open` keeps checkpoints in (not one held by `open_exclusive`).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let conn =
            Connection::open(path).map_err(|e| err(format!("opening {}: {e}", path.display())))?;
        Self::setup(conn)
    }

    /// A private in-memory database (for tests).
    pub fn in_memory() -> Result<Self, StoreError> {
        Self::setup(Connection::open_in_memory().map_err(err)?)
    }

    fn setup(mut conn: Connection) -> Result<Self, StoreError> {
        conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
        conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
            .map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(err)?;
        tx.execute_batch(SCHEMA).map_err(err)?;
        let version: Option<String> = tx
            .query_row(
                "SELECT value FROM store_meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(err)?;
        match version.as_deref().map(str::parse::<i64>) {
            None => {
                tx.execute(
                    "INSERT INTO store_meta (key, value) VALUES ('schema_version', ?1)",
                    [SCHEMA_VERSION.to_string()],
                )
                .map_err(err)?;
            }
            Some(Ok(v)) if v <= SCHEMA_VERSION => {}
            Some(_) => {
                return Err(err(format!(
                    "the file's store schema is newer than this build's (version {SCHEMA_VERSION}); upgrade agentgraph"
                )));
            }
        }
        tx.commit().map_err(err)?;
        Ok(SqliteStore {
            config: StoreConfig::default(),
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    config_builders!();

    async fn with_tx<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = conn.lock().unwrap_or_else(|p| p.into_inner());
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(err)?;
            let out = f(&tx)?;
            tx.commit().map_err(err)?;
            Ok(out)
        })
        .await
        .map_err(|e| err(format!("the blocking task failed: {e}")))?
    }
}

/// The rows under a search's prefix (`?1`, with [`under`]'s bounds `?2` and `?3`; every row
/// for `all`, the empty prefix): one range of the primary key, from the prefix itself to the
/// byte after its `.`, less what sorts between the prefix and its `.` (`a-b` under `a`).
/// Two statements rather than an `OR` of the cases, which made SQLite scan the whole table.
fn under_prefix(all: bool) -> &'static str {
    match all {
        true => "1",
        false => "(prefix >= ?1 AND prefix < ?3 AND (prefix = ?1 OR prefix >= ?2))",
    }
}

/// The lower and upper bounds of the stored namespaces strictly under `prefix`.
pub(crate) fn under(prefix: &str) -> (String, String) {
    (format!("{prefix}."), format!("{prefix}/"))
}

const ITEM_COLUMNS: &str = "prefix, key, value, created_at_ms, updated_at_ms";

/// A row of [`ITEM_COLUMNS`].
type ItemRow = (String, String, String, i64, i64);

fn item_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ItemRow> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
    ))
}

fn refresh(tx: &Transaction<'_>, prefix: &str, key: &str, now: i64) -> Result<(), StoreError> {
    tx.prepare_cached(
        "UPDATE store_items SET expires_at_ms = ?3 + ttl_ms
          WHERE prefix = ?1 AND key = ?2 AND ttl_ms IS NOT NULL AND expires_at_ms > ?3",
    )
    .and_then(|mut s| s.execute(params![prefix, key, now]))
    .map_err(err)?;
    Ok(())
}

fn put(tx: &Transaction<'_>, put: Put, now: i64) -> Result<(), StoreError> {
    let prefix = join(&put.namespace);
    let Some(value) = put.value else {
        tx.prepare_cached("DELETE FROM store_items WHERE prefix = ?1 AND key = ?2")
            .and_then(|mut s| s.execute(params![prefix, put.key]))
            .map_err(err)?;
        tx.prepare_cached("DELETE FROM store_vectors WHERE prefix = ?1 AND key = ?2")
            .and_then(|mut s| s.execute(params![prefix, put.key]))
            .map_err(err)?;
        return Ok(());
    };
    let text = Value::Object(value).to_string();
    let expires = put.ttl_ms.map(|t| now.saturating_add(t));
    // An expired item's creation time is not kept: the put makes a new item.
    tx.prepare_cached(
        "INSERT INTO store_items (prefix, key, value, created_at_ms, updated_at_ms, ttl_ms, expires_at_ms)
         VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6)
         ON CONFLICT (prefix, key) DO UPDATE SET
             value = excluded.value,
             created_at_ms = CASE WHEN store_items.expires_at_ms IS NOT NULL
                                   AND store_items.expires_at_ms <= excluded.updated_at_ms
                                  THEN excluded.created_at_ms ELSE store_items.created_at_ms END,
             updated_at_ms = excluded.updated_at_ms,
             ttl_ms = excluded.ttl_ms,
             expires_at_ms = excluded.expires_at_ms",
    )
    .and_then(|mut s| s.execute(params![prefix, put.key, text, now, put.ttl_ms, expires]))
    .map_err(err)?;
    if let Some(vectors) = put.vectors {
        tx.prepare_cached("DELETE FROM store_vectors WHERE prefix = ?1 AND key = ?2")
            .and_then(|mut s| s.execute(params![prefix, put.key]))
            .map_err(err)?;
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO store_vectors (prefix, key, field, embedding) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(err)?;
        for (field, vector) in vectors {
            insert
                .execute(params![prefix, put.key, field, to_bytes(&vector)])
                .map_err(err)?;
        }
    }
    Ok(())
}

fn apply(tx: &Transaction<'_>, op: Prepared, now: i64) -> Result<OpResult, StoreError> {
    match op {
        Prepared::Get {
            namespace,
            key,
            refresh: again,
        } => {
            let prefix = join(&namespace);
            if again {
                refresh(tx, &prefix, &key, now)?;
            }
            let row = tx
                .prepare_cached(&format!(
                    "SELECT {ITEM_COLUMNS} FROM store_items
                      WHERE prefix = ?1 AND key = ?2 AND (expires_at_ms IS NULL OR expires_at_ms > ?3)"
                ))
                .and_then(|mut s| s.query_row(params![prefix, key, now], item_from_row).optional())
                .map_err(err)?;
            let item = row
                .map(|(p, k, v, c, u)| to_item(&p, k, &v, c, u))
                .transpose()?;
            Ok(OpResult::Item(item))
        }
        Prepared::Put(p) => put(tx, p, now).map(|()| OpResult::Done),
        Prepared::Search(search) => {
            let prefix = join(&search.prefix);
            let (low, high) = under(&prefix);
            let all = search.prefix.is_empty();
            let rows = tx
                .prepare_cached(&format!(
                    "SELECT {ITEM_COLUMNS} FROM store_items
                      WHERE {} AND (expires_at_ms IS NULL OR expires_at_ms > ?4)",
                    under_prefix(all)
                ))
                .and_then(|mut s| {
                    s.query_map(params![prefix, low, high, now], item_from_row)?
                        .collect::<Result<Vec<_>, _>>()
                })
                .map_err(err)?;
            // The vectors under the prefix in one query (a search with a query only).
            let mut vectors = rank::Vectors::default();
            if search.query.is_some() {
                let scope: &[&dyn rusqlite::ToSql] = match all {
                    true => &[],
                    false => &[&prefix, &low, &high],
                };
                let mut select = tx
                    .prepare_cached(&format!(
                        "SELECT prefix, key, embedding FROM store_vectors WHERE {}",
                        under_prefix(all)
                    ))
                    .map_err(err)?;
                let found = select
                    .query_map(scope, |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get::<_, Vec<u8>>(2)?))
                    })
                    .map_err(err)?;
                for row in found {
                    let (p, k, bytes) = row.map_err(err)?;
                    vectors.add(p, k, from_bytes(&bytes));
                }
            }
            let mut rows: Vec<rank::Row<()>> = rows
                .into_iter()
                .map(|(prefix, key, value, created, updated)| rank::Row {
                    prefix,
                    key,
                    value,
                    created,
                    updated,
                    extra: (),
                    vectors: Vec::new(),
                })
                .collect();
            vectors.attach(&mut rows);
            let owned = rank::parse_best(rows, &search)?;
            let candidates = owned
                .iter()
                .map(|(item, (), vectors)| (item, vectors.iter().map(Vec::as_slice)));
            let found = rank::rank(candidates, &search);
            if search.refresh {
                for hit in &found {
                    refresh(tx, &join(&hit.namespace), &hit.key, now)?;
                }
            }
            Ok(OpResult::Items(found))
        }
        Prepared::List(list) => {
            let prefixes = tx
                .prepare_cached(
                    "SELECT DISTINCT prefix FROM store_items
                      WHERE expires_at_ms IS NULL OR expires_at_ms > ?1",
                )
                .and_then(|mut s| {
                    s.query_map([now], |r| r.get::<_, String>(0))?
                        .collect::<Result<Vec<_>, _>>()
                })
                .map_err(err)?;
            Ok(OpResult::Namespaces(rank::list(
                prefixes.iter().map(|p| split(p)),
                &list,
            )))
        }
    }
}

#[async_trait::async_trait]
impl Store for SqliteStore {
    fn backend(&self) -> &str {
        "sqlite"
    }

    fn ttl_config(&self) -> Option<&TtlConfig> {
        self.config.ttl.as_ref()
    }

    async fn batch(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, StoreError> {
        let prepared = self.config.prepare(ops).await?;
        let now = self.config.now_ms();
        self.with_tx(move |tx| prepared.into_iter().map(|op| apply(tx, op, now)).collect())
            .await
    }

    async fn sweep_expired(&self) -> Result<usize, StoreError> {
        let now = self.config.now_ms();
        self.with_tx(move |tx| {
            tx.execute(
                "DELETE FROM store_vectors WHERE (prefix, key) IN
                   (SELECT prefix, key FROM store_items WHERE expires_at_ms <= ?1)",
                [now],
            )
            .map_err(err)?;
            tx.execute("DELETE FROM store_items WHERE expires_at_ms <= ?1", [now])
                .map_err(err)
        })
        .await
    }
}
