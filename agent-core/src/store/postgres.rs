//! `PostgresStore`: items in PostgreSQL — tables `store_items` (values as `jsonb`) and
//! `store_vectors` (`real[]`), beside the checkpoints or alone, through a deadpool pool like
//! the `PostgresSaver`'s (or that very pool: [`PostgresStore::from_pool`]). Every batch is
//! one transaction; its fixed statements are prepared once per connection (deadpool's
//! statement cache). The `vector` extension is not needed: similarity is computed in Rust over
//! the candidates' vectors (exact search; see [`IndexConfig`]), and filters likewise, so a
//! search reads every live item under its prefix that the filter's simple conditions, checked
//! by PostgreSQL, leave (see `narrow`). Migrations run under an advisory lock and may run
//! again (`store_meta` holds the version).

use std::collections::HashMap;

use deadpool_postgres::{Pool, Transaction};
use serde_json::Value;
use tokio_postgres::types::ToSql;

use super::namespace::{join, split};
use super::narrow::{Param, narrow};
use super::prepare::config_builders;
use super::prepare::{Prepared, Put, StoreConfig};
use super::rank::{self, to_item};
use super::{Op, OpResult, Store, StoreError, TtlConfig};
use crate::checkpoint::postgres_migrate::{self, Schema};

/// Held while migrating, so that processes starting together migrate one at a time.
const MIGRATION_LOCK: i64 = 0x6167_7374_6f72_6501;

const MIGRATIONS: [&str; 1] = ["
CREATE TABLE IF NOT EXISTS store_items (
    prefix TEXT NOT NULL,
    key TEXT NOT NULL,
    value JSONB NOT NULL,
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL,
    ttl_ms BIGINT,
    expires_at_ms BIGINT,
    PRIMARY KEY (prefix, key)
);
CREATE INDEX IF NOT EXISTS store_items_expiry ON store_items (expires_at_ms)
    WHERE expires_at_ms IS NOT NULL;
CREATE TABLE IF NOT EXISTS store_vectors (
    prefix TEXT NOT NULL,
    key TEXT NOT NULL,
    field TEXT NOT NULL,
    embedding REAL[] NOT NULL,
    PRIMARY KEY (prefix, key, field)
);
"];

/// Items in PostgreSQL.
#[derive(Clone)]
pub struct PostgresStore {
    config: StoreConfig,
    pool: Pool,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The pool's config holds the password: never print it.
        f.debug_struct("PostgresStore")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Storage {
        backend: "postgres",
        detail: e.to_string(),
    }
}

impl PostgresStore {
    /// Connects as [`PostgresSaver::connect`](crate::PostgresSaver::connect) does (same URL
    /// forms, `sslmode`, timeouts) and creates the store's tables.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let pool = crate::checkpoint::postgres::pool_for(url).map_err(|e| err(e.to_string()))?;
        Self::from_pool(pool).await
    }

    /// A store on an existing pool (a `PostgresSaver`'s: `PostgresStore::from_pool(saver.pool().clone())`).
    pub async fn from_pool(pool: Pool) -> Result<Self, StoreError> {
        let store = PostgresStore {
            config: StoreConfig::default(),
            pool,
        };
        store.migrate().await?;
        Ok(store)
    }

    config_builders!();

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool
            .get()
            .await
            .map_err(|e| err(format!("connecting: {e}")))
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let schema = Schema {
            meta_table: "store_meta",
            lock: MIGRATION_LOCK,
            migrations: &MIGRATIONS,
            what: "store schema",
        };
        postgres_migrate::migrate(&mut client, &schema)
            .await
            .map_err(err)
    }
}

const ITEM_COLUMNS: &str = "prefix, key, value::text, created_at_ms, updated_at_ms";

fn row_item(row: &tokio_postgres::Row) -> Result<super::Item, StoreError> {
    let prefix: String = row.try_get(0).map_err(err)?;
    let value: String = row.try_get(2).map_err(err)?;
    to_item(
        &prefix,
        row.try_get(1).map_err(err)?,
        &value,
        row.try_get(3).map_err(err)?,
        row.try_get(4).map_err(err)?,
    )
}

/// Runs `sql` with `params`, its statement prepared once per connection (deadpool's cache).
async fn exec(
    tx: &Transaction<'_>,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<u64, StoreError> {
    let statement = tx.prepare_cached(sql).await.map_err(err)?;
    tx.execute(&statement, params).await.map_err(err)
}

const DELETE_ITEM: &str = "DELETE FROM store_items WHERE prefix = $1 AND key = $2";
const DELETE_VECTORS: &str = "DELETE FROM store_vectors WHERE prefix = $1 AND key = $2";
const UPSERT_ITEM: &str = "INSERT INTO store_items (prefix, key, value, created_at_ms, updated_at_ms, ttl_ms, expires_at_ms)
         VALUES ($1, $2, $3::text::jsonb, $4, $4, $5, $6)
         ON CONFLICT (prefix, key) DO UPDATE SET
             value = EXCLUDED.value,
             created_at_ms = CASE WHEN store_items.expires_at_ms IS NOT NULL
                                   AND store_items.expires_at_ms <= EXCLUDED.updated_at_ms
                                  THEN EXCLUDED.created_at_ms ELSE store_items.created_at_ms END,
             updated_at_ms = EXCLUDED.updated_at_ms,
             ttl_ms = EXCLUDED.ttl_ms,
             expires_at_ms = EXCLUDED.expires_at_ms";
const INSERT_VECTOR: &str =
    "INSERT INTO store_vectors (prefix, key, field, embedding) VALUES ($1, $2, $3, $4)";

async fn refresh(
    tx: &Transaction<'_>,
    prefix: &str,
    key: &str,
    now: i64,
) -> Result<(), StoreError> {
    exec(
        tx,
        "UPDATE store_items SET expires_at_ms = $3 + ttl_ms
          WHERE prefix = $1 AND key = $2 AND ttl_ms IS NOT NULL AND expires_at_ms > $3",
        &[&prefix, &key, &now],
    )
    .await
    .map(drop)
}

async fn put(tx: &Transaction<'_>, put: Put, now: i64) -> Result<(), StoreError> {
    let prefix = join(&put.namespace);
    let Some(value) = put.value else {
        exec(tx, DELETE_ITEM, &[&prefix, &put.key]).await?;
        exec(tx, DELETE_VECTORS, &[&prefix, &put.key]).await?;
        return Ok(());
    };
    let text = Value::Object(value).to_string();
    let expires = put.ttl_ms.map(|t| now.saturating_add(t));
    exec(
        tx,
        UPSERT_ITEM,
        &[&prefix, &put.key, &text, &now, &put.ttl_ms, &expires],
    )
    .await?;
    if let Some(vectors) = put.vectors {
        exec(tx, DELETE_VECTORS, &[&prefix, &put.key]).await?;
        for (field, vector) in vectors {
            exec(tx, INSERT_VECTOR, &[&prefix, &put.key, &field, &vector]).await?;
        }
    }
    Ok(())
}

/// `$1` the prefix, `$2` the prefix and `.`, `$3` whether the prefix is empty.
const UNDER_PREFIX: &str = "($3 OR prefix = $1 OR starts_with(prefix, $2))";

async fn apply(tx: &Transaction<'_>, op: Prepared, now: i64) -> Result<OpResult, StoreError> {
    match op {
        Prepared::Get {
            namespace,
            key,
            refresh: again,
        } => {
            let prefix = join(&namespace);
            if again {
                refresh(tx, &prefix, &key, now).await?;
            }
            let get = tx
                .prepare_cached(&format!(
                    "SELECT {ITEM_COLUMNS} FROM store_items
                      WHERE prefix = $1 AND key = $2 AND (expires_at_ms IS NULL OR expires_at_ms > $3)"
                ))
                .await
                .map_err(err)?;
            let row = tx
                .query_opt(&get, &[&prefix, &key, &now])
                .await
                .map_err(err)?;
            Ok(OpResult::Item(row.as_ref().map(row_item).transpose()?))
        }
        Prepared::Put(p) => put(tx, p, now).await.map(|()| OpResult::Done),
        Prepared::Search(search) => {
            let prefix = join(&search.prefix);
            let dotted = format!("{prefix}.");
            let all = search.prefix.is_empty();
            // PostgreSQL narrows by the filter's simple conditions; `rank` applies all of it.
            let (narrowing, narrow_params) = narrow(&search.filter, 5);
            let mut params: Vec<&(dyn ToSql + Sync)> = vec![&prefix, &dotted, &all, &now];
            params.extend(narrow_params.iter().map(Param::as_sql));
            let rows = tx
                .query(
                    &format!(
                        "SELECT {ITEM_COLUMNS} FROM store_items
                          WHERE {UNDER_PREFIX} AND (expires_at_ms IS NULL OR expires_at_ms > $4){narrowing}"
                    ),
                    &params,
                )
                .await
                .map_err(err)?;
            let mut vectors: HashMap<(String, String), Vec<Vec<f32>>> = HashMap::new();
            if search.query.is_some() {
                for row in tx
                    .query(
                        &format!(
                            "SELECT prefix, key, embedding FROM store_vectors WHERE {UNDER_PREFIX}"
                        ),
                        &[&prefix, &dotted, &all],
                    )
                    .await
                    .map_err(err)?
                {
                    let key = (row.try_get(0).map_err(err)?, row.try_get(1).map_err(err)?);
                    vectors
                        .entry(key)
                        .or_default()
                        .push(row.try_get(2).map_err(err)?);
                }
            }
            let mut owned = Vec::with_capacity(rows.len());
            for row in &rows {
                let item = row_item(row)?;
                let item_vectors = match search.query {
                    Some(_) => vectors
                        .remove(&(join(&item.namespace), item.key.clone()))
                        .unwrap_or_default(),
                    None => Vec::new(),
                };
                owned.push((item, item_vectors));
            }
            let candidates = owned
                .iter()
                .map(|(item, vectors)| (item, vectors.iter().map(Vec::as_slice)));
            let found = rank::rank(candidates, &search);
            if search.refresh {
                for hit in &found {
                    refresh(tx, &join(&hit.namespace), &hit.key, now).await?;
                }
            }
            Ok(OpResult::Items(found))
        }
        Prepared::List(list) => {
            let rows = tx
                .query(
                    "SELECT DISTINCT prefix FROM store_items WHERE expires_at_ms IS NULL OR expires_at_ms > $1",
                    &[&now],
                )
                .await
                .map_err(err)?;
            let prefixes = rows
                .iter()
                .map(|r| r.try_get::<_, String>(0).map(|p| split(&p)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(err)?;
            Ok(OpResult::Namespaces(rank::list(prefixes, &list)))
        }
    }
}

#[async_trait::async_trait]
impl Store for PostgresStore {
    fn backend(&self) -> &str {
        "postgres"
    }

    fn ttl_config(&self) -> Option<&TtlConfig> {
        self.config.ttl.as_ref()
    }

    async fn batch(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, StoreError> {
        let prepared = self.config.prepare(ops).await?;
        let now = self.config.now_ms();
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(err)?;
        let mut results = Vec::with_capacity(prepared.len());
        for op in prepared {
            results.push(apply(&tx, op, now).await?);
        }
        tx.commit().await.map_err(err)?;
        Ok(results)
    }

    async fn sweep_expired(&self) -> Result<usize, StoreError> {
        let now = self.config.now_ms();
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(err)?;
        tx.execute(
            "DELETE FROM store_vectors v USING store_items i
              WHERE v.prefix = i.prefix AND v.key = i.key AND i.expires_at_ms <= $1",
            &[&now],
        )
        .await
        .map_err(err)?;
        let swept = tx
            .execute("DELETE FROM store_items WHERE expires_at_ms <= $1", &[&now])
            .await
            .map_err(err)?;
        tx.commit().await.map_err(err)?;
        Ok(swept as usize)
    }
}
