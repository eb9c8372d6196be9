//! `PostgresStore`: items in PostgreSQL — tables `store_items` (values as `jsonb`) and
//! `store_vectors` (floats as bytes), beside the checkpoints or alone, through a deadpool
//! pool like the `PostgresSaver`'s (or that very pool: [`PostgresStore::from_pool`]). Each op
//! is one statement (a put with vectors too), so a batch of one op is sent alone —
//! PostgreSQL makes a statement atomic, and `BEGIN`/`COMMIT` around it would be two more
//! round trips, the larger part of a get's time; other batches are one transaction. Fixed
//! statements are prepared once per connection (deadpool's statement cache); a search's,
//! built per filter, is sent with its parameters' types (one round trip, planned for its own
//! prefix).
//!
//! The `vector` extension is not needed: similarity is computed in Rust over the candidates'
//! vectors (exact search; see [`IndexConfig`]), and filters likewise: PostgreSQL narrows by
//! the filter's simple conditions (see `narrow`) and Rust decides. A search reads the items
//! under its prefix through an index on the prefixes' bytes; without a query (most recently
//! updated first) PostgreSQL walks the newest items and sends only the newest candidates
//! (see [`recent_first`]), with one every candidate and the vectors. Migrations run under an
//! advisory lock, once (`store_meta` holds the version).

use deadpool_postgres::{GenericClient, Pool};
use serde_json::Value;
use tokio_postgres::GenericClient as _;
use tokio_postgres::types::{ToSql, Type};

use super::namespace::{join, split};
use super::narrow::{Param, narrow};
use super::prepare::config_builders;
use super::prepare::{Prepared, Put, Search, StoreConfig};
use super::rank::{self, to_item};
use super::{Item, Op, OpResult, SearchItem, Store, StoreError, TtlConfig};
use crate::checkpoint::postgres_migrate::{self, Schema};

/// Held while migrating, so that processes starting together migrate one at a time.
const MIGRATION_LOCK: i64 = 0x6167_7374_6f72_6501;

const MIGRATIONS: [&str; 4] = [
    "
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
",
    "
-- A search reads the range of prefixes under its own (see `UNDER_PREFIX`).
CREATE INDEX IF NOT EXISTS store_items_prefix ON store_items (prefix COLLATE \"C\");
CREATE INDEX IF NOT EXISTS store_vectors_prefix ON store_vectors (prefix COLLATE \"C\");
",
    "
-- A search without a query over many items walks them newest first (see `read_recent`).
CREATE INDEX IF NOT EXISTS store_items_recent ON store_items (updated_at_ms);
",
    "
-- Vectors as bytes, each float big-endian as `float4send` writes it: PostgreSQL sends an
-- array element by element through the element type's send function, which made reading
-- 10,000 vectors of 256 dims take 300 ms; the bytes of a `bytea` are copied.
ALTER TABLE store_vectors ADD COLUMN vector BYTEA;
UPDATE store_vectors SET vector = COALESCE(
    (SELECT string_agg(float4send(x), ''::bytea ORDER BY i)
       FROM unnest(embedding) WITH ORDINALITY AS t(x, i)),
    ''::bytea);
ALTER TABLE store_vectors ALTER COLUMN vector SET NOT NULL, DROP COLUMN embedding;
",
];

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

/// The columns [`row_item`] reads, then `ttl_ms` (a read refreshes only items that have one).
const ITEM_COLUMNS: &str = "prefix, key, value::text, created_at_ms, updated_at_ms, ttl_ms";

fn row_item(row: &tokio_postgres::Row) -> Result<Item, StoreError> {
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

/// Whether the item in `row` (read with [`ITEM_COLUMNS`]) has a TTL.
fn row_has_ttl(row: &tokio_postgres::Row) -> Result<bool, StoreError> {
    Ok(row.try_get::<_, Option<i64>>(5).map_err(err)?.is_some())
}

/// A vector as the bytes `store_vectors.vector` holds: each float big-endian (`float4send`'s
/// order, which the migration from `real[]` wrote).
fn to_be_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_be_bytes()).collect()
}

/// A vector from [`to_be_bytes`]' form; `None` when the bytes are not whole floats.
fn from_be_bytes(bytes: &[u8]) -> Option<Vec<f32>> {
    let floats = bytes.chunks_exact(4);
    floats.remainder().is_empty().then(|| {
        floats
            .map(|c| f32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    })
}

/// The `tokio_postgres` client under each of deadpool's, for `query_typed`: a statement sent
/// with its parameters' types is parsed, planned with their values and run in one round trip
/// (`query` with a text is three: prepare, run, close). The searches' statements, built per
/// filter, go this way; the fixed ones are prepared once per connection instead.
trait Raw {
    type Client: tokio_postgres::GenericClient + Sync;
    fn raw(&self) -> &Self::Client;
}

impl Raw for deadpool_postgres::Client {
    type Client = tokio_postgres::Client;
    fn raw(&self) -> &Self::Client {
        self
    }
}

impl<'a> Raw for deadpool_postgres::Transaction<'a> {
    type Client = tokio_postgres::Transaction<'a>;
    fn raw(&self) -> &Self::Client {
        self
    }
}

/// Runs `sql` with `params`, its statement prepared once per connection (deadpool's cache).
async fn exec<C: GenericClient>(
    client: &C,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<u64, StoreError> {
    let statement = client.prepare_cached(sql).await.map_err(err)?;
    client.execute(&statement, params).await.map_err(err)
}

/// An item and its vectors, in one statement.
const DELETE_ITEM: &str =
    "WITH vectors AS (DELETE FROM store_vectors WHERE prefix = $1 AND key = $2)
    DELETE FROM store_items WHERE prefix = $1 AND key = $2";
/// Upserts an item (`$1` prefix, `$2` key, `$3` value, `$4` now, `$5` TTL, `$6` expiry).
macro_rules! upsert_item {
    () => {
        "INSERT INTO store_items (prefix, key, value, created_at_ms, updated_at_ms, ttl_ms, expires_at_ms)
         VALUES ($1, $2, $3::text::jsonb, $4, $4, $5, $6)
         ON CONFLICT (prefix, key) DO UPDATE SET
             value = EXCLUDED.value,
             created_at_ms = CASE WHEN store_items.expires_at_ms IS NOT NULL
                                   AND store_items.expires_at_ms <= EXCLUDED.updated_at_ms
                                  THEN EXCLUDED.created_at_ms ELSE store_items.created_at_ms END,
             updated_at_ms = EXCLUDED.updated_at_ms,
             ttl_ms = EXCLUDED.ttl_ms,
             expires_at_ms = EXCLUDED.expires_at_ms"
    };
}
const UPSERT_ITEM: &str = upsert_item!();
/// [`UPSERT_ITEM`] with the item's vectors replaced (`$7` fields, `$8` vectors), in one
/// statement: the fields it no longer has are deleted, the others upserted (the two touch
/// different rows).
const UPSERT_INDEXED_ITEM: &str = concat!(
    "WITH item AS (",
    upsert_item!(),
    " RETURNING 1
    ), gone AS (
        DELETE FROM store_vectors
         WHERE prefix = $1 AND key = $2 AND NOT (field = ANY($7::text[]))
    ), vectors AS (
        INSERT INTO store_vectors (prefix, key, field, vector)
        SELECT $1, $2, f, v FROM unnest($7::text[], $8::bytea[]) AS t(f, v)
        ON CONFLICT (prefix, key, field) DO UPDATE SET vector = EXCLUDED.vector
    )
    SELECT count(*) FROM item"
);
/// A live item (`$1` prefix, `$2` key, `$3` now), its TTL refreshed when `$4` and it has one,
/// in one statement.
const GET_ITEM: &str = "WITH hit AS (
        SELECT prefix, key, value, created_at_ms, updated_at_ms, ttl_ms FROM store_items
         WHERE prefix = $1 AND key = $2 AND (expires_at_ms IS NULL OR expires_at_ms > $3)
    ), touched AS (
        UPDATE store_items s SET expires_at_ms = $3 + s.ttl_ms FROM hit
         WHERE $4 AND s.prefix = hit.prefix AND s.key = hit.key AND s.ttl_ms IS NOT NULL
    )
    SELECT prefix, key, value::text, created_at_ms, updated_at_ms, ttl_ms FROM hit";
/// Refreshes the TTL of the live items whose prefixes are `$1` and keys `$2`, at `$3`.
const REFRESH_ITEMS: &str = "UPDATE store_items SET expires_at_ms = $3 + ttl_ms
    WHERE (prefix, key) IN (SELECT * FROM unnest($1::text[], $2::text[]))
      AND ttl_ms IS NOT NULL AND expires_at_ms > $3";

async fn put<C: GenericClient>(client: &C, put: Put, now: i64) -> Result<(), StoreError> {
    let prefix = join(&put.namespace);
    let Some(value) = put.value else {
        return exec(client, DELETE_ITEM, &[&prefix, &put.key])
            .await
            .map(drop);
    };
    let text = Value::Object(value).to_string();
    let expires = put.ttl_ms.map(|t| now.saturating_add(t));
    let item: [&(dyn ToSql + Sync); 6] = [&prefix, &put.key, &text, &now, &put.ttl_ms, &expires];
    let Some(vectors) = put.vectors else {
        return exec(client, UPSERT_ITEM, &item).await.map(drop);
    };
    let (fields, bytes): (Vec<String>, Vec<Vec<u8>>) = vectors
        .into_iter()
        .map(|(field, vector)| (field, to_be_bytes(&vector)))
        .unzip();
    let mut params = item.to_vec();
    params.extend([&fields as &(dyn ToSql + Sync), &bytes]);
    exec(client, UPSERT_INDEXED_ITEM, &params).await.map(drop)
}

/// Items under a search's prefix: `$1` the prefix, `$2` the prefix and `.`, `$3` whether the
/// prefix is empty, `$4` the prefix and `/` (the byte after `.`). The byte range from `$1`
/// to `$4` holds every namespace under the prefix (and a few others, such as `a-b` under
/// `a`, which the last condition removes): PostgreSQL reads it from the `C`-collated index.
const UNDER_PREFIX: &str = "($3 OR ((prefix COLLATE \"C\") >= $1 AND (prefix COLLATE \"C\") < $4
    AND (prefix = $1 OR starts_with(prefix, $2))))";
/// Live (`$5` now).
const LIVE: &str = "(expires_at_ms IS NULL OR expires_at_ms > $5)";

/// The values of [`UNDER_PREFIX`]'s parameters.
struct Scope {
    prefix: String,
    dotted: String,
    all: bool,
    upper: String,
}

impl Scope {
    fn new(search: &Search) -> Self {
        let prefix = join(&search.prefix);
        Scope {
            dotted: format!("{prefix}."),
            upper: format!("{prefix}/"),
            all: search.prefix.is_empty(),
            prefix,
        }
    }

    fn params(&self) -> Vec<(&(dyn ToSql + Sync), Type)> {
        vec![
            (&self.prefix, Type::TEXT),
            (&self.dotted, Type::TEXT),
            (&self.all, Type::BOOL),
            (&self.upper, Type::TEXT),
        ]
    }
}

/// A search's candidates: each item, whether it has a TTL, and its vectors (read only when
/// the search has a query).
type Candidates = rank::Parsed<bool>;

/// The live items under a search's prefix that its filter's narrowing leaves, unparsed, each
/// with whether it has a TTL.
async fn read_items<C: GenericClient + Raw>(
    client: &C,
    search: &Search,
    now: i64,
) -> Result<Vec<rank::Row<bool>>, StoreError> {
    let scope = Scope::new(search);
    let (narrowing, narrow_params) = narrow(&search.filter, 6);
    let mut params = scope.params();
    params.push((&now, Type::INT8));
    params.extend(narrow_params.iter().map(Param::typed));
    let sql = format!(
        "SELECT {ITEM_COLUMNS} FROM store_items WHERE {UNDER_PREFIX} AND {LIVE}{narrowing}"
    );
    let rows = client.raw().query_typed(&sql, &params).await.map_err(err)?;
    rows.iter()
        .map(|row| {
            Ok(rank::Row {
                prefix: row.try_get(0).map_err(err)?,
                key: row.try_get(1).map_err(err)?,
                value: row.try_get(2).map_err(err)?,
                created: row.try_get(3).map_err(err)?,
                updated: row.try_get(4).map_err(err)?,
                extra: row_has_ttl(row)?,
                vectors: Vec::new(),
            })
        })
        .collect()
}

/// What [`read_recent`] read: the newest narrowed candidates, and how many live items under
/// the prefix its window held.
struct Recent {
    found: Vec<(Item, bool)>,
    window: usize,
}

/// Among the `window` most recently updated live items under a search's prefix (and their
/// ties), the `k` newest that the filter's narrowing leaves (and their ties), and how many
/// the window held. The window is read first, by itself: PostgreSQL walks the index on
/// `updated_at_ms` backwards when the prefix holds many items (and reads the prefix's
/// range when it holds few), and stops after `window` rows instead of narrowing and sorting
/// every item under the prefix. The statement is not cached, so each one is planned with
/// its own prefix.
async fn read_recent<C: GenericClient + Raw>(
    client: &C,
    search: &Search,
    now: i64,
    window: i64,
    k: i64,
) -> Result<Recent, StoreError> {
    let scope = Scope::new(search);
    let (narrowing, narrow_params) = narrow(&search.filter, 8);
    let mut params = scope.params();
    params.push((&now, Type::INT8));
    params.push((&window, Type::INT8));
    params.push((&k, Type::INT8));
    params.extend(narrow_params.iter().map(Param::typed));
    let sql = format!(
        "WITH recent AS MATERIALIZED (
            SELECT prefix, key, value, created_at_ms, updated_at_ms, ttl_ms FROM store_items
             WHERE {UNDER_PREFIX} AND {LIVE}
             ORDER BY updated_at_ms DESC FETCH FIRST $6 ROWS WITH TIES)
        SELECT hit.prefix, hit.key, hit.value::text, hit.created_at_ms, hit.updated_at_ms,
               hit.ttl_ms, seen.n
          FROM (SELECT count(*) AS n FROM recent) seen
          LEFT JOIN LATERAL (
            SELECT * FROM recent WHERE TRUE{narrowing}
             ORDER BY updated_at_ms DESC FETCH FIRST $7 ROWS WITH TIES) hit ON TRUE"
    );
    let rows = client.raw().query_typed(&sql, &params).await.map_err(err)?;
    let mut recent = Recent {
        found: Vec::with_capacity(rows.len()),
        window: 0,
    };
    for row in &rows {
        let seen: i64 = row.try_get(6).map_err(err)?;
        recent.window = usize::try_from(seen).unwrap_or(usize::MAX);
        // One row with no item when nothing in the window passed the narrowing.
        if row.try_get::<_, Option<String>>(1).map_err(err)?.is_some() {
            recent.found.push((row_item(row)?, row_has_ttl(row)?));
        }
    }
    Ok(recent)
}

/// The candidates of a search without a query, newest first, enough of them for its page:
/// of the newest items under the prefix (a window of `8k`), the `k` newest that pass the
/// narrowing and their ties (`k` a little over `offset + limit`). PostgreSQL only narrows by
/// the filter, so some of them may fail it. The page is among them when as many pass as it
/// needs (every candidate left out is older than all of them), or when the window held
/// every item under the prefix and fewer than `k` passed the narrowing; otherwise `None`
/// (read them all).
async fn recent_first<C: GenericClient + Raw>(
    client: &C,
    search: &Search,
    now: i64,
) -> Result<Option<Candidates>, StoreError> {
    let needed = search.offset.saturating_add(search.limit);
    let k = needed.saturating_add(needed / 2).saturating_add(8);
    let window = k.saturating_mul(8);
    let sql_int = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let recent = read_recent(client, search, now, sql_int(window), sql_int(k)).await?;
    let passing = recent
        .found
        .iter()
        .filter(|(item, _)| super::matches(&search.filter, &item.value))
        .count();
    let whole = recent.window < window && recent.found.len() < k;
    Ok((whole || passing >= needed).then(|| {
        recent
            .found
            .into_iter()
            .map(|(item, ttl)| (item, ttl, Vec::new()))
            .collect()
    }))
}

/// The candidates of a search that its page can come from, with their vectors when the search
/// has a query: every item under the prefix is read, and only those are parsed (see
/// [`rank::parse_best`]).
async fn every_candidate<C: GenericClient + Raw>(
    client: &C,
    search: &Search,
    now: i64,
) -> Result<Candidates, StoreError> {
    let mut rows = read_items(client, search, now).await?;
    if search.query.is_some() {
        let mut vectors = rank::Vectors::default();
        let scope = Scope::new(search);
        for row in client
            .raw()
            .query_typed(
                &format!("SELECT prefix, key, vector FROM store_vectors WHERE {UNDER_PREFIX}"),
                &scope.params(),
            )
            .await
            .map_err(err)?
        {
            let (prefix, key): (String, String) =
                (row.try_get(0).map_err(err)?, row.try_get(1).map_err(err)?);
            let vector = from_be_bytes(row.try_get(2).map_err(err)?).ok_or_else(|| {
                err(format!(
                    "the stored vector of `{prefix}` / `{key}` is not whole 4-byte floats"
                ))
            })?;
            vectors.add(prefix, key, vector);
        }
        vectors.attach(&mut rows);
    }
    rank::parse_best(rows, search)
}

async fn search<C: GenericClient + Raw>(
    client: &C,
    search: Search,
    now: i64,
) -> Result<Vec<SearchItem>, StoreError> {
    let recent = match search.query {
        None => recent_first(client, &search, now).await?,
        Some(_) => None,
    };
    let candidates = match recent {
        Some(found) => found,
        None => every_candidate(client, &search, now).await?,
    };
    let found = rank::rank(
        candidates
            .iter()
            .map(|(item, _, vectors)| (item, vectors.iter().map(Vec::as_slice))),
        &search,
    );
    if search.refresh {
        // Only hits with a TTL have one to refresh: most searches write nothing.
        let with_ttl: std::collections::HashSet<(&[String], &str)> = candidates
            .iter()
            .filter(|(_, ttl, _)| *ttl)
            .map(|(item, _, _)| (item.namespace.as_slice(), item.key.as_str()))
            .collect();
        let (prefixes, keys): (Vec<String>, Vec<&str>) = found
            .iter()
            .filter(|hit| with_ttl.contains(&(hit.namespace.as_slice(), hit.key.as_str())))
            .map(|hit| (join(&hit.namespace), hit.key.as_str()))
            .unzip();
        if !keys.is_empty() {
            exec(client, REFRESH_ITEMS, &[&prefixes, &keys, &now]).await?;
        }
    }
    Ok(found)
}

async fn apply<C: GenericClient + Raw>(
    client: &C,
    op: Prepared,
    now: i64,
) -> Result<OpResult, StoreError> {
    match op {
        Prepared::Get {
            namespace,
            key,
            refresh,
        } => {
            let prefix = join(&namespace);
            let get = client.prepare_cached(GET_ITEM).await.map_err(err)?;
            let row = client
                .query_opt(&get, &[&prefix, &key, &now, &refresh])
                .await
                .map_err(err)?;
            Ok(OpResult::Item(row.as_ref().map(row_item).transpose()?))
        }
        Prepared::Put(p) => put(client, p, now).await.map(|()| OpResult::Done),
        Prepared::Search(s) => search(client, s, now).await.map(OpResult::Items),
        Prepared::List(list) => {
            let rows = client
                .raw()
                .query_typed(
                    "SELECT DISTINCT prefix FROM store_items WHERE expires_at_ms IS NULL OR expires_at_ms > $1",
                    &[(&now, Type::INT8)],
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
        let mut results = Vec::with_capacity(prepared.len());
        // One op is one statement (a search's reads and its TTL refresh need no common
        // transaction): sent alone, without `BEGIN`/`COMMIT`.
        if prepared.len() == 1 {
            for op in prepared {
                results.push(apply(&client, op, now).await?);
            }
            return Ok(results);
        }
        let tx = client.transaction().await.map_err(err)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_as_big_endian_bytes() {
        let v = [1.0f32, -0.5, f32::MIN_POSITIVE, 3.25e7];
        let bytes = to_be_bytes(&v);
        // `float4send`'s bytes for 1.0, as the migration from `real[]` wrote them.
        assert_eq!(bytes[..4], [0x3f, 0x80, 0x00, 0x00]);
        assert_eq!(from_be_bytes(&bytes).as_deref(), Some(&v[..]));
        assert_eq!(from_be_bytes(&[]), Some(Vec::new()));
        assert_eq!(from_be_bytes(&bytes[..6]), None);
    }
}
