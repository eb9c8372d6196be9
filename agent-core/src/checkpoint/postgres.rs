//! `PostgresSaver`: checkpoints in PostgreSQL, for many workers on many machines.
//!
//! Connections come from a deadpool pool. The saver creates and migrates its own schema
//! (versioned in `agentgraph_meta`, under an advisory lock so concurrent workers starting at
//! once do not race). Metadata is `jsonb`, so metadata filters run in the database. A batch
//! is one statement (one round trip, one transaction), and batches that arrive while one is on
//! the wire share the next statement (`group`): 64 runs at once with `sync` took 40% of the
//! time a step took with a statement each.
//!
//! A fenced saver ([`PostgresSaver::fenced`]) writes behind a precondition (a worker's lease
//! on its run): each of its write transactions is `BEGIN`, the fence, the batch's statement,
//! `COMMIT`, and stores nothing when the fence finds no row. Its batches share statements with
//! its own clones' only, so a refusal never takes another saver's batch with it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::Row;
use tokio_postgres::types::FromSql;

use super::group::{Group, Queued};
use super::postgres_connect;
use super::postgres_migrate::{self, Schema};
use super::{
    CheckpointRecord, Checkpointer, FieldBlob, ListFilter, LoadedCheckpoint, PendingWrite, StoreOp,
    StoredBytes, ThreadStorage, WriteKind, needed_blobs,
};
use crate::error::GraphError;

/// Advisory lock key for migrations ("agentgrf" in ASCII).
const MIGRATION_LOCK: i64 = 0x6167_656e_7467_7266;

const MIGRATIONS: [&str; 1] = ["
CREATE TABLE IF NOT EXISTS agentgraph_checkpoints (
    thread_id TEXT NOT NULL,
    ns TEXT NOT NULL,
    id TEXT NOT NULL,
    parent_id TEXT,
    step BIGINT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    metadata JSONB NOT NULL,
    versions JSONB NOT NULL,
    body BYTEA NOT NULL,
    PRIMARY KEY (thread_id, ns, id)
);
CREATE INDEX IF NOT EXISTS agentgraph_checkpoints_metadata ON agentgraph_checkpoints USING GIN (metadata);
CREATE TABLE IF NOT EXISTS agentgraph_blobs (
    thread_id TEXT NOT NULL,
    ns TEXT NOT NULL,
    field TEXT NOT NULL,
    version TEXT NOT NULL,
    base_version TEXT,
    base_len BIGINT,
    data BYTEA NOT NULL,
    PRIMARY KEY (thread_id, ns, field, version)
);
CREATE TABLE IF NOT EXISTS agentgraph_writes (
    thread_id TEXT NOT NULL,
    ns TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    kind SMALLINT NOT NULL,
    node TEXT NOT NULL,
    data BYTEA NOT NULL,
    seq BIGSERIAL,
    PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, kind)
);
"];

/// Checkpoints in PostgreSQL.
#[derive(Clone)]
pub struct PostgresSaver {
    pool: Pool,
    /// Batches waiting for a round trip (`put_batch`): those that arrive while one is stored
    /// share the next statement. A fenced saver has a queue of its own.
    group: Arc<Group<Vec<StoreOp>>>,
    /// The precondition of every write transaction ([`fenced`](Self::fenced)); `None` for a
    /// saver that writes unconditionally.
    fence: Option<Arc<Fence>>,
}

impl std::fmt::Debug for PostgresSaver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password: never print it.
        f.debug_struct("PostgresSaver")
            .field("fenced", &self.fence.is_some())
            .finish_non_exhaustive()
    }
}

/// A precondition for a [`PostgresSaver`]'s writes ([`PostgresSaver::fenced`]): a statement
/// run first in every write transaction, whose finding no row refuses the write.
///
/// A statement such as `SELECT 1 FROM leases WHERE id = $1 AND owner = $2 FOR SHARE`: it holds
/// the row for the transaction, so whoever changes it waits, and a write after the change is
/// refused. That is what keeps a worker that stalled past its lease (a stopped process, a long
/// pause, a network cut) from storing a single checkpoint once another worker took the run
/// over: the other worker's `UPDATE` of the lease waits for a write that holds the row, and
/// every write after it finds no row.
///
/// `params` are bound to `$1..$n` as `TEXT`: cast them in the statement where the column has
/// another type (`id = $1::uuid`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// The statement: a query that returns at least one row while writes may go on.
    pub sql: String,
    /// Its parameters, `$1..$n`, as text.
    pub params: Vec<String>,
}

fn err(e: impl std::fmt::Display) -> GraphError {
    GraphError::Storage {
        backend: "postgres",
        detail: e.to_string(),
    }
}

/// How long a caller waits for a connection when all of the pool's are busy.
const POOL_WAIT: Duration = Duration::from_secs(30);

/// How long a connection may take to be recycled (checked before reuse).
const RECYCLE: Duration = Duration::from_secs(10);

/// A pool of up to 16 connections to `url` (see [`PostgresSaver::connect`]); shared with the
/// PostgreSQL store.
pub(crate) fn pool_for(url: &str) -> Result<Pool, GraphError> {
    let settings = postgres_connect::settings(url).map_err(err)?;
    // The socket's timeout again for the rest: the TLS handshake, authentication.
    let create = 2 * settings
        .config
        .get_connect_timeout()
        .map_or(postgres_connect::CONNECT_TIMEOUT, |t| *t);
    let manager = Manager::from_config(
        settings.config,
        settings.tls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(16)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(POOL_WAIT))
        .create_timeout(Some(create))
        .recycle_timeout(Some(RECYCLE))
        .build()
        .map_err(|e| err(format!("building the pool: {e}")))
}

impl PostgresSaver {
    /// Connects with a URL such as `postgres://user:pass@host:5432/db?sslmode=verify-full` or
    /// a key-value string (`host=h user=u sslmode=require`): a pool of up to 16 connections.
    /// Migrates the schema.
    ///
    /// `sslmode` is honoured as libpq does, with rustls: `disable`, `prefer` (the default:
    /// TLS when the server offers it), `require` (TLS, certificate not checked), `verify-ca`
    /// (the chain checked against `sslrootcert=<PEM file>`, or the platform's roots) and
    /// `verify-full` (the host name too). Opening a socket times out after `connect_timeout`
    /// seconds (10 when the URL does not say), opening a connection (TLS, authentication
    /// included) after twice that, and a caller waits at most 30 s for a connection while all
    /// are busy.
    pub async fn connect(url: &str) -> Result<Self, GraphError> {
        let pool = pool_for(url)?;
        let saver = PostgresSaver {
            pool,
            group: Arc::new(Group::new("postgres")),
            fence: None,
        };
        saver.migrate().await?;
        Ok(saver)
    }

    /// A saver over the same pool and tables whose every write transaction first runs
    /// `fence` in the same transaction, and stores nothing when it returns no row: the write
    /// fails with [`GraphError::Fenced`] and the transaction rolls back. Every write: the
    /// checkpoints and pending writes a run stores (`put`, `put_writes`, `put_batch`), and
    /// `delete_thread`, `prune` and `delete_for_runs`. Reads are not fenced.
    ///
    /// Hand it to one run ([`RunConfig::checkpointer`](crate::RunConfig::checkpointer)) whose
    /// worker holds the row the fence names: once the row changes (the run was taken over or
    /// cancelled), the run's next store fails with `Fenced` and the run stops there with that
    /// error, nothing more of it written.
    ///
    /// Its batches are committed apart from every other saver's (its clones' excepted): a
    /// fenced batch never shares a transaction with an unfenced one or with another fence's,
    /// so a refusal refuses this saver's writes only. The saver it was made from stores as
    /// before, one statement a batch.
    pub fn fenced(&self, fence: Fence) -> PostgresSaver {
        PostgresSaver {
            pool: self.pool.clone(),
            group: Arc::new(Group::new("postgres")),
            fence: Some(Arc::new(fence)),
        }
    }

    /// The fence, if any, run in `tx`: `Fenced` when it finds no row.
    async fn check_fence(&self, tx: &deadpool_postgres::Transaction<'_>) -> Result<(), GraphError> {
        let Some(fence) = &self.fence else {
            return Ok(());
        };
        let types = vec![tokio_postgres::types::Type::TEXT; fence.params.len()];
        let statement = tx
            .prepare_typed_cached(&fence.sql, &types)
            .await
            .map_err(|e| err(format!("preparing the fence `{}`: {e}", fence.sql)))?;
        let params: Vec<Param<'_>> = fence.params.iter().map(|p| p as Param<'_>).collect();
        let rows = tx
            .query(&statement, &params)
            .await
            .map_err(|e| err(format!("running the fence `{}`: {e}", fence.sql)))?;
        if rows.is_empty() {
            return Err(GraphError::Fenced {
                backend: "postgres",
                detail: format!("the fence `{}` found no row", fence.sql),
            });
        }
        Ok(())
    }

    /// The saver's connection pool, for tables of your own next to the checkpoints (one
    /// database, one pool: the server keeps its run queue there).
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, GraphError> {
        self.pool
            .get()
            .await
            .map_err(|e| err(format!("connecting: {e}")))
    }

    /// Stores queued batches in one statement; a group that fails is stored again batch by
    /// batch, so that each caller gets its own batch's result. On a task of its own: the
    /// batches may be other callers' (the turn's holder stores whatever is queued), and a
    /// caller that goes away (its run cancelled) while the round trip is on the wire must not
    /// take them with it. A spawn is a few microseconds against a round trip's hundreds.
    async fn commit(&self, queued: Vec<Queued<Vec<StoreOp>>>) {
        let saver = self.clone();
        // A failed task drops the batches: their callers get an error.
        let _ = tokio::spawn(async move { saver.commit_group(queued).await }).await;
    }

    async fn commit_group(&self, queued: Vec<Queued<Vec<StoreOp>>>) {
        if queued.len() > 1
            && self
                .store(queued.iter().flat_map(|q| &q.batch))
                .await
                .is_ok()
        {
            return queued.into_iter().for_each(|q| q.finish(Ok(())));
        }
        for q in queued {
            let result = self.store(&q.batch).await;
            q.finish(result);
        }
    }

    /// Stores `ops` in one statement (one round trip, one transaction); a fenced saver's in a
    /// transaction that runs the fence first.
    async fn store<'a>(
        &self,
        ops: impl IntoIterator<Item = &'a StoreOp>,
    ) -> Result<(), GraphError> {
        let rows = BatchRows::new(ops)?;
        if self.fence.is_some() {
            return self.store_fenced(&rows).await;
        }
        let client = self.client().await?;
        let store = client.prepare_cached(STORE_BATCH).await.map_err(err)?;
        client.execute(&store, &rows.params()).await.map_err(err)?;
        Ok(())
    }

    /// [`store`](Self::store) behind the fence: `BEGIN`, the fence, the batch's statement,
    /// `COMMIT`; a fence that finds no row (or any failure) rolls it all back.
    async fn store_fenced(&self, rows: &BatchRows<'_>) -> Result<(), GraphError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(err)?;
        self.check_fence(&tx).await?;
        let store = tx.prepare_cached(STORE_BATCH).await.map_err(err)?;
        tx.execute(&store, &rows.params()).await.map_err(err)?;
        tx.commit().await.map_err(err)
    }

    async fn migrate(&self) -> Result<(), GraphError> {
        let mut client = self.client().await?;
        let schema = Schema {
            meta_table: "agentgraph_meta",
            lock: MIGRATION_LOCK,
            migrations: &MIGRATIONS,
            what: "checkpoint schema",
        };
        postgres_migrate::migrate(&mut client, &schema)
            .await
            .map_err(err)
    }

    /// Bytes of blob data stored for a thread (for storage measurements).
    pub async fn blob_bytes(&self, thread_id: &str) -> Result<u64, GraphError> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "SELECT COALESCE(SUM(LENGTH(data)), 0)::BIGINT FROM agentgraph_blobs WHERE thread_id = $1",
                &[&thread_id],
            )
            .await
            .map_err(err)?;
        Ok(row.try_get::<_, i64>(0).map_err(err)? as u64)
    }
}

/// A whole batch in one statement (one round trip, one implicit transaction): each table's
/// rows as parallel arrays, inserted by data-modifying CTEs. Writes keep their order (`seq`).
const STORE_BATCH: &str = "
WITH blobs AS (
    INSERT INTO agentgraph_blobs (thread_id, ns, field, version, base_version, base_len, data)
    SELECT * FROM unnest($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[], $6::BIGINT[], $7::BYTEA[])
    ON CONFLICT (thread_id, ns, field, version) DO NOTHING
), checkpoints AS (
    INSERT INTO agentgraph_checkpoints (thread_id, ns, id, parent_id, step, created_at_ms, metadata, versions, body)
    SELECT t, n, i, p, s, c, m::JSONB, v::JSONB, b
    FROM unnest($8::TEXT[], $9::TEXT[], $10::TEXT[], $11::TEXT[], $12::BIGINT[], $13::BIGINT[], $14::TEXT[], $15::TEXT[], $16::BYTEA[])
        AS x(t, n, i, p, s, c, m, v, b)
    ON CONFLICT (thread_id, ns, id) DO UPDATE SET
      parent_id = EXCLUDED.parent_id, step = EXCLUDED.step, created_at_ms = EXCLUDED.created_at_ms,
      metadata = EXCLUDED.metadata, versions = EXCLUDED.versions, body = EXCLUDED.body
), writes AS (
    INSERT INTO agentgraph_writes (thread_id, ns, checkpoint_id, task_id, kind, node, data)
    SELECT t, n, c, k, d, o, w
    FROM unnest($17::TEXT[], $18::TEXT[], $19::TEXT[], $20::TEXT[], $21::SMALLINT[], $22::TEXT[], $23::BYTEA[])
        WITH ORDINALITY AS x(t, n, c, k, d, o, w, ord)
    ORDER BY ord
    ON CONFLICT (thread_id, ns, checkpoint_id, task_id, kind)
    DO UPDATE SET node = EXCLUDED.node, data = EXCLUDED.data
)
SELECT 1";

/// A batch's rows as the columns [`STORE_BATCH`] binds.
#[derive(Default)]
struct BatchRows<'a> {
    blobs: BlobRows<'a>,
    checkpoints: CheckpointRows<'a>,
    writes: WriteRows<'a>,
}

#[derive(Default)]
struct BlobRows<'a> {
    thread: Vec<&'a str>,
    ns: Vec<&'a str>,
    field: Vec<&'a str>,
    version: Vec<&'a str>,
    base_version: Vec<Option<&'a str>>,
    base_len: Vec<Option<i64>>,
    data: Vec<&'a [u8]>,
}

#[derive(Default)]
struct CheckpointRows<'a> {
    thread: Vec<&'a str>,
    ns: Vec<&'a str>,
    id: Vec<&'a str>,
    parent: Vec<Option<&'a str>>,
    step: Vec<i64>,
    created: Vec<i64>,
    metadata: Vec<String>,
    versions: Vec<String>,
    body: Vec<&'a [u8]>,
}

#[derive(Default)]
struct WriteRows<'a> {
    thread: Vec<&'a str>,
    ns: Vec<&'a str>,
    checkpoint: Vec<&'a str>,
    task: Vec<&'a str>,
    kind: Vec<i16>,
    node: Vec<&'a str>,
    data: Vec<&'a [u8]>,
}

/// A pending write with the checkpoint it belongs to: (thread, ns, checkpoint, write).
type WriteOf<'a> = (&'a str, &'a str, &'a str, &'a PendingWrite);

/// A parameter of a statement.
type Param<'p> = &'p (dyn tokio_postgres::types::ToSql + Sync);

impl<'a> BatchRows<'a> {
    /// The parameters of [`STORE_BATCH`], `$1..$23`.
    fn params(&self) -> [Param<'_>; 23] {
        let (b, c, w) = (&self.blobs, &self.checkpoints, &self.writes);
        [
            &b.thread,
            &b.ns,
            &b.field,
            &b.version,
            &b.base_version,
            &b.base_len,
            &b.data,
            &c.thread,
            &c.ns,
            &c.id,
            &c.parent,
            &c.step,
            &c.created,
            &c.metadata,
            &c.versions,
            &c.body,
            &w.thread,
            &w.ns,
            &w.checkpoint,
            &w.task,
            &w.kind,
            &w.node,
            &w.data,
        ]
    }

    /// An `INSERT .. ON CONFLICT DO UPDATE` may not touch a row twice, so a checkpoint or
    /// write stored twice in one batch becomes one row: the later values, in the earlier
    /// one's place (what two statements in a row did).
    fn new(ops: impl IntoIterator<Item = &'a StoreOp>) -> Result<Self, GraphError> {
        let mut rows = BatchRows::default();
        let (mut checkpoints, mut checkpoint_at) = (Vec::new(), HashMap::new());
        let (mut writes, mut write_at) = (Vec::<WriteOf<'a>>::new(), HashMap::new());
        for op in ops {
            match op {
                StoreOp::Checkpoint { record, blobs } => {
                    let key = (&*record.thread_id, &*record.ns, &*record.id);
                    keep_last(&mut checkpoints, &mut checkpoint_at, key, record);
                    for blob in blobs {
                        rows.blobs.push(record, blob);
                    }
                }
                StoreOp::Writes {
                    thread_id,
                    ns,
                    checkpoint_id,
                    writes: list,
                } => {
                    for w in list {
                        let (t, n, c) = (&**thread_id, &**ns, &**checkpoint_id);
                        let key = (t, n, c, w.task_id.as_str(), w.kind);
                        keep_last(&mut writes, &mut write_at, key, (t, n, c, w));
                    }
                }
            }
        }
        for record in checkpoints {
            rows.checkpoints.push(record)?;
        }
        for write in writes {
            rows.writes.push(write);
        }
        Ok(rows)
    }
}

/// Appends `item` to `list`, or puts it in the place of the one with the same key.
fn keep_last<K: std::hash::Hash + Eq, T>(
    list: &mut Vec<T>,
    at: &mut HashMap<K, usize>,
    key: K,
    item: T,
) {
    match at.entry(key) {
        std::collections::hash_map::Entry::Occupied(e) => list[*e.get()] = item,
        std::collections::hash_map::Entry::Vacant(e) => {
            e.insert(list.len());
            list.push(item);
        }
    }
}

impl<'a> BlobRows<'a> {
    fn push(&mut self, record: &'a CheckpointRecord, blob: &'a FieldBlob) {
        self.thread.push(&record.thread_id);
        self.ns.push(&record.ns);
        self.field.push(&blob.field);
        self.version.push(&blob.version);
        self.base_version
            .push(blob.base.as_ref().map(|(v, _)| &**v));
        self.base_len
            .push(blob.base.as_ref().map(|(_, n)| *n as i64));
        self.data.push(&blob.data);
    }
}

impl<'a> CheckpointRows<'a> {
    fn push(&mut self, record: &'a CheckpointRecord) -> Result<(), GraphError> {
        self.metadata
            .push(serde_json::to_string(&record.metadata).map_err(err)?);
        self.versions
            .push(serde_json::to_string(&record.versions).map_err(err)?);
        self.thread.push(&record.thread_id);
        self.ns.push(&record.ns);
        self.id.push(&record.id);
        self.parent.push(record.parent_id.as_deref());
        self.step.push(record.step);
        self.created.push(record.created_at_ms);
        self.body.push(&record.body);
        Ok(())
    }
}

impl<'a> WriteRows<'a> {
    fn push(&mut self, (thread, ns, checkpoint, w): WriteOf<'a>) {
        self.thread.push(thread);
        self.ns.push(ns);
        self.checkpoint.push(checkpoint);
        self.task.push(&w.task_id);
        self.kind.push(w.kind.code());
        self.node.push(&w.node);
        self.data.push(&w.data);
    }
}

/// A checkpoint row's columns, in the order `record_from_row` reads them.
macro_rules! record_columns {
    () => {
        "thread_id, ns, id, parent_id, step, created_at_ms, metadata::TEXT, versions::TEXT, body"
    };
}
const GET_BY_ID: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM agentgraph_checkpoints WHERE thread_id = $1 AND ns = $2 AND id = $3"
);

const GET_LATEST: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM agentgraph_checkpoints WHERE thread_id = $1 AND ns = $2 ORDER BY id DESC LIMIT 1"
);

/// A thread's checkpoints, newest first, before an id and matching metadata.
const LIST: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM agentgraph_checkpoints
      WHERE thread_id = $1 AND ns = $2
        AND ($3::TEXT IS NULL OR id < $3)
        AND metadata @> $4::TEXT::JSONB
      ORDER BY id DESC
      LIMIT $5"
);

/// The blobs of a checkpoint's versions and, recursively, of their delta bases.
const GET_BLOBS: &str = "WITH RECURSIVE chain(field, version) AS (
         SELECT key, value FROM jsonb_each_text($3::TEXT::JSONB)
         UNION
         SELECT b.field, b.base_version FROM agentgraph_blobs b JOIN chain c
           ON b.thread_id = $1 AND b.ns = $2 AND b.field = c.field AND b.version = c.version
          WHERE b.base_version IS NOT NULL
     )
     SELECT b.field, b.version, b.base_version, b.base_len, b.data
       FROM agentgraph_blobs b JOIN chain c
         ON b.thread_id = $1 AND b.ns = $2 AND b.field = c.field AND b.version = c.version";

const GET_WRITES: &str = "SELECT task_id, kind, node, data FROM agentgraph_writes
      WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3 ORDER BY seq";

/// Column `index` (named `name` for the error) of a stored row: an error, never a panic, when
/// it does not read as a `T` (a NULL where the schema has none, a column altered to another
/// type).
fn column<'a, T: FromSql<'a>>(row: &'a Row, index: usize, name: &str) -> Result<T, String> {
    row.try_get(index)
        .map_err(|e| format!("its column `{name}` cannot be read: {e}"))
}

/// A checkpoint row of `thread_id` (the thread the query asked for, named in errors).
fn record_from_row(row: &Row, thread_id: &str) -> Result<CheckpointRecord, GraphError> {
    let id = column::<&str>(row, 2, "id");
    let corrupt = |detail: String| GraphError::CorruptCheckpoint {
        thread_id: thread_id.to_owned(),
        checkpoint_id: id.as_deref().unwrap_or("(unreadable)").to_owned(),
        detail: format!("a malformed checkpoint row: {detail}"),
    };
    let json = |what: &str, e: serde_json::Error| corrupt(format!("{what} is not valid JSON: {e}"));
    let text = |index, name| column::<&str>(row, index, name).map_err(&corrupt);
    let metadata = text(6, "metadata")?;
    let versions = text(7, "versions")?;
    Ok(CheckpointRecord {
        metadata: serde_json::from_str(metadata).map_err(|e| json("metadata", e))?,
        versions: serde_json::from_str(versions).map_err(|e| json("versions", e))?,
        thread_id: text(0, "thread_id")?.into(),
        ns: text(1, "ns")?.into(),
        id: id.clone().map_err(&corrupt)?.into(),
        parent_id: column::<Option<&str>>(row, 3, "parent_id")
            .map_err(&corrupt)?
            .map(Arc::from),
        step: column(row, 4, "step").map_err(&corrupt)?,
        created_at_ms: column(row, 5, "created_at_ms").map_err(&corrupt)?,
        body: column(row, 8, "body").map_err(&corrupt)?,
    })
}

/// A blob row (`GET_BLOBS`' columns).
fn blob_from_row(row: &Row) -> Result<FieldBlob, String> {
    let field: &str = column(row, 0, "field")?;
    let version: &str = column(row, 1, "version")?;
    let base: Option<&str> = column(row, 2, "base_version")?;
    let len: Option<i64> = column(row, 3, "base_len")?;
    let base = match (base, len) {
        (Some(base), Some(len)) => Some((base.into(), len as u64)),
        (None, _) => None,
        (Some(_), None) => {
            return Err(format!(
                "the blob of field `{field}` version `{version}` has a base but no base length"
            ));
        }
    };
    Ok(FieldBlob {
        field: field.to_owned().into(),
        version: version.into(),
        base,
        data: column(row, 4, "data")?,
    })
}

/// A pending write row (`GET_WRITES`' columns).
fn write_from_row(row: &Row) -> Result<PendingWrite, String> {
    let code: i16 = column(row, 1, "kind")?;
    Ok(PendingWrite {
        task_id: column(row, 0, "task_id")?,
        kind: WriteKind::from_code(i64::from(code))
            .ok_or_else(|| format!("unknown pending write kind {code}"))?,
        node: column(row, 2, "node")?,
        data: column(row, 3, "data")?,
    })
}

#[async_trait::async_trait]
impl Checkpointer for PostgresSaver {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    async fn put(&self, record: &CheckpointRecord, blobs: &[FieldBlob]) -> Result<(), GraphError> {
        self.put_batch(vec![StoreOp::Checkpoint {
            record: record.clone(),
            blobs: blobs.to_vec(),
        }])
        .await
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), GraphError> {
        self.put_batch(vec![StoreOp::Writes {
            thread_id: thread_id.into(),
            ns: ns.into(),
            checkpoint_id: checkpoint_id.into(),
            writes: writes.to_vec(),
        }])
        .await
    }

    /// The whole batch in one statement: one round trip, one transaction; batches that arrive
    /// while one is stored share the next (`group`).
    async fn put_batch(&self, ops: Vec<StoreOp>) -> Result<(), GraphError> {
        if ops.is_empty() {
            return Ok(());
        }
        self.group.submit(ops, |queued| self.commit(queued)).await
    }

    async fn get(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<LoadedCheckpoint, GraphError> {
        let client = self.client().await?;
        // Prepared once per connection (a query given as text is parsed in a round trip of
        // its own every time).
        let row = match checkpoint_id {
            Some(id) => {
                let by_id = client.prepare_cached(GET_BY_ID).await.map_err(err)?;
                client.query_opt(&by_id, &[&thread_id, &ns, &id]).await
            }
            None => {
                let latest = client.prepare_cached(GET_LATEST).await.map_err(err)?;
                client.query_opt(&latest, &[&thread_id, &ns]).await
            }
        }
        .map_err(err)?;
        let Some(row) = row else {
            return Ok(LoadedCheckpoint::default());
        };
        let record = record_from_row(&row, thread_id)?;
        let versions = serde_json::to_string(&record.versions).map_err(err)?;
        let (chain, pending) = futures::future::try_join(
            client.prepare_cached(GET_BLOBS),
            client.prepare_cached(GET_WRITES),
        )
        .await
        .map_err(err)?;
        // Both queries in one round trip.
        let (blob_rows, write_rows) = futures::future::try_join(
            client.query(&chain, &[&thread_id, &ns, &versions]),
            client.query(&pending, &[&thread_id, &ns, &&*record.id]),
        )
        .await
        .map_err(err)?;
        let corrupt = |what: &str, detail: String| GraphError::CorruptCheckpoint {
            thread_id: thread_id.to_owned(),
            checkpoint_id: record.id.to_string(),
            detail: format!("a malformed {what} row: {detail}"),
        };
        let blobs = blob_rows
            .iter()
            .map(|r| blob_from_row(r).map_err(|e| corrupt("blob", e)))
            .collect::<Result<_, _>>()?;
        let writes = write_rows
            .iter()
            .map(|r| write_from_row(r).map_err(|e| corrupt("pending write", e)))
            .collect::<Result<_, _>>()?;
        Ok(LoadedCheckpoint {
            record: Some(record),
            blobs,
            writes,
        })
    }

    async fn list(
        &self,
        thread_id: &str,
        ns: &str,
        filter: &ListFilter,
    ) -> Result<Vec<CheckpointRecord>, GraphError> {
        let client = self.client().await?;
        let metadata = serde_json::to_string(&filter.metadata).map_err(err)?;
        let before = filter.before.clone();
        let limit = filter.limit.map(|l| l as i64);
        let list = client.prepare_cached(LIST).await.map_err(err)?;
        let rows = client
            .query(&list, &[&thread_id, &ns, &before, &metadata, &limit])
            .await
            .map_err(err)?;
        rows.iter().map(|r| record_from_row(r, thread_id)).collect()
    }

    /// One statement (one snapshot), each part through the thread's key; bytes are the
    /// payloads' lengths (before PostgreSQL's own compression), as the other savers count.
    async fn storage(&self, thread_id: &str) -> Result<Option<ThreadStorage>, GraphError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT 'checkpoints', NULL::text, count(*),
                        coalesce(sum(octet_length(body)::bigint + octet_length(metadata::text)
                            + octet_length(versions::text)), 0)::bigint
                   FROM agentgraph_checkpoints WHERE thread_id = $1
                 UNION ALL
                 SELECT 'writes', NULL, count(*), coalesce(sum(octet_length(data)::bigint), 0)::bigint
                   FROM agentgraph_writes WHERE thread_id = $1
                 UNION ALL
                 SELECT 'values', field, count(*), coalesce(sum(octet_length(data)::bigint), 0)::bigint
                   FROM agentgraph_blobs WHERE thread_id = $1 GROUP BY field",
                &[&thread_id],
            )
            .await
            .map_err(err)?;
        let mut out = ThreadStorage::default();
        for row in rows {
            let part: &str = row.try_get(0).map_err(err)?;
            let field: Option<String> = row.try_get(1).map_err(err)?;
            let count = row.try_get::<_, i64>(2).map_err(err)?.max(0) as u64;
            let bytes = row.try_get::<_, i64>(3).map_err(err)?.max(0) as u64;
            match (part, field) {
                ("checkpoints", _) => out.checkpoints.add(count, bytes),
                ("writes", _) => out.writes.add(count, bytes),
                (_, Some(field)) => {
                    out.values.add(count, bytes);
                    out.by_field.insert(field, StoredBytes { count, bytes });
                }
                _ => {}
            }
        }
        Ok(Some(out))
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), GraphError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(err)?;
        self.check_fence(&tx).await?;
        for table in [
            "agentgraph_checkpoints",
            "agentgraph_blobs",
            "agentgraph_writes",
        ] {
            tx.execute(
                &format!("DELETE FROM {table} WHERE thread_id = $1"),
                &[&thread_id],
            )
            .await
            .map_err(err)?;
        }
        tx.commit().await.map_err(err)
    }

    /// One transaction: the runs' checkpoints deleted (found by their metadata), their
    /// writes, then in each namespace they were in, the blobs they reached (their versions'
    /// delta chains, and what they wrote) that no remaining checkpoint of it needs.
    async fn delete_for_runs(
        &self,
        thread_id: &str,
        run_ids: &[&str],
    ) -> Result<usize, GraphError> {
        if run_ids.is_empty() {
            return Ok(0);
        }
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(err)?;
        self.check_fence(&tx).await?;
        let doomed = tx
            .query(
                "DELETE FROM agentgraph_checkpoints
                  WHERE thread_id = $1 AND metadata->>'run_id' = ANY($2)
                  RETURNING ns, id, versions::TEXT, parent_id",
                &[&thread_id, &run_ids],
            )
            .await
            .map_err(err)?;
        if doomed.is_empty() {
            tx.commit().await.map_err(err)?;
            return Ok(0);
        }
        // By namespace: the deleted checkpoints' ids, and the versions they named.
        let mut spaces: BTreeMap<String, Space> = BTreeMap::new();
        let (mut doomed_ns, mut doomed_ids) = (Vec::new(), Vec::new());
        for row in &doomed {
            let (ns, id, versions): (String, String, &str) = (
                row.try_get(0).map_err(err)?,
                row.try_get(1).map_err(err)?,
                row.try_get(2).map_err(err)?,
            );
            let parent: Option<String> = row.try_get(3).map_err(err)?;
            let versions: BTreeMap<String, String> = serde_json::from_str(versions).map_err(err)?;
            let space = spaces.entry(ns.clone()).or_default();
            space.doomed_versions.extend(versions);
            space.doomed_ids.insert(id.clone());
            space.doomed_parents.insert(id.clone(), parent);
            doomed_ns.push(ns);
            doomed_ids.push(id);
        }
        tx.execute(
            "DELETE FROM agentgraph_writes w USING unnest($2::TEXT[], $3::TEXT[]) AS d(ns, id)
              WHERE w.thread_id = $1 AND w.ns = d.ns AND w.checkpoint_id = d.id",
            &[&thread_id, &doomed_ns, &doomed_ids],
        )
        .await
        .map_err(err)?;
        // Later checkpoints whose parent went (a run deleted from the middle of a history)
        // name their nearest remaining ancestor.
        for (ns, space) in &spaces {
            reparent(&tx, thread_id, ns, &space.doomed_parents).await?;
        }
        let names: Vec<&str> = spaces.keys().map(String::as_str).collect();
        let (kept, blobs) = futures::future::try_join(
            tx.query(
                "SELECT ns, versions::TEXT FROM agentgraph_checkpoints
                  WHERE thread_id = $1 AND ns = ANY($2)",
                &[&thread_id, &names],
            ),
            tx.query(
                "SELECT ns, field, version, base_version, base_len FROM agentgraph_blobs
                  WHERE thread_id = $1 AND ns = ANY($2)",
                &[&thread_id, &names],
            ),
        )
        .await
        .map_err(err)?;
        for row in &kept {
            let (ns, versions): (&str, &str) =
                (row.try_get(0).map_err(err)?, row.try_get(1).map_err(err)?);
            let versions: BTreeMap<String, String> = serde_json::from_str(versions).map_err(err)?;
            if let Some(space) = spaces.get_mut(ns) {
                space.kept_versions.extend(versions);
            }
        }
        for row in &blobs {
            let ns: &str = row.try_get(0).map_err(err)?;
            let Some(space) = spaces.get_mut(ns) else {
                continue;
            };
            let key: (String, String) =
                (row.try_get(1).map_err(err)?, row.try_get(2).map_err(err)?);
            if let Some(base) = row.try_get::<_, Option<String>>(3).map_err(err)? {
                let len: Option<i64> = row.try_get(4).map_err(err)?;
                space
                    .bases
                    .insert(key.clone(), (base, len.unwrap_or(0) as u64));
            }
            space.stored.push(key);
        }
        let (mut gone_ns, mut gone_fields, mut gone_versions) =
            (Vec::new(), Vec::new(), Vec::new());
        for (ns, space) in spaces {
            for (field, version) in space.unneeded() {
                gone_ns.push(ns.clone());
                gone_fields.push(field);
                gone_versions.push(version);
            }
        }
        if !gone_ns.is_empty() {
            tx.execute(
                "DELETE FROM agentgraph_blobs b
                  USING unnest($2::TEXT[], $3::TEXT[], $4::TEXT[]) AS d(ns, field, version)
                  WHERE b.thread_id = $1 AND b.ns = d.ns AND b.field = d.field
                    AND b.version = d.version",
                &[&thread_id, &gone_ns, &gone_fields, &gone_versions],
            )
            .await
            .map_err(err)?;
        }
        tx.commit().await.map_err(err)?;
        Ok(doomed.len())
    }

    async fn prune(
        &self,
        thread_id: &str,
        ns: &str,
        keep_last: usize,
    ) -> Result<usize, GraphError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(err)?;
        self.check_fence(&tx).await?;
        let doomed = prune_ns(&tx, thread_id, ns, keep_last).await?;
        tx.commit().await.map_err(err)?;
        Ok(doomed)
    }

    /// One transaction: every namespace of the thread pruned to its newest.
    async fn keep_latest(&self, thread_id: &str) -> Result<usize, GraphError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(err)?;
        self.check_fence(&tx).await?;
        let spaces = tx
            .query(
                "SELECT DISTINCT ns FROM agentgraph_checkpoints WHERE thread_id = $1",
                &[&thread_id],
            )
            .await
            .map_err(err)?;
        let mut doomed = 0;
        for row in &spaces {
            let ns: &str = row.try_get(0).map_err(err)?;
            doomed += prune_ns(&tx, thread_id, ns, 1).await?;
        }
        tx.commit().await.map_err(err)?;
        Ok(doomed)
    }

    async fn replace_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), GraphError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(err)?;
        self.check_fence(&tx).await?;
        let stored = tx
            .query_opt(
                "SELECT 1 FROM agentgraph_checkpoints WHERE thread_id = $1 AND ns = $2 AND id = $3
                  FOR UPDATE",
                &[&thread_id, &ns, &checkpoint_id],
            )
            .await
            .map_err(err)?;
        if stored.is_some() {
            tx.execute(
                "DELETE FROM agentgraph_writes WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3",
                &[&thread_id, &ns, &checkpoint_id],
            )
            .await
            .map_err(err)?;
            for w in writes {
                tx.execute(
                    "INSERT INTO agentgraph_writes (thread_id, ns, checkpoint_id, task_id, kind, node, data)
                     VALUES ($1, $2, $3, $4, $5, $6, $7)
                     ON CONFLICT (thread_id, ns, checkpoint_id, task_id, kind)
                     DO UPDATE SET node = EXCLUDED.node, data = EXCLUDED.data",
                    &[&thread_id, &ns, &checkpoint_id, &w.task_id, &w.kind.code(), &w.node, &w.data],
                )
                .await
                .map_err(err)?;
            }
        }
        tx.commit().await.map_err(err)
    }
}

/// Keeps the newest `keep_last` checkpoints of a namespace (inside the caller's transaction)
/// and deletes the rest with their writes and the blobs no kept one needs; the kept ones
/// whose parent goes name their nearest remaining ancestor. How many went.
async fn prune_ns(
    tx: &deadpool_postgres::Transaction<'_>,
    thread_id: &str,
    ns: &str,
    keep_last: usize,
) -> Result<usize, GraphError> {
    let keep = keep_last as i64;
    let doomed = tx
        .query(
            "SELECT id, parent_id FROM agentgraph_checkpoints WHERE thread_id = $1 AND ns = $2
                  ORDER BY id DESC OFFSET $3",
            &[&thread_id, &ns, &keep],
        )
        .await
        .map_err(err)?;
    let parents: HashMap<String, Option<String>> = doomed
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<Result<_, tokio_postgres::Error>>()
        .map_err(err)?;
    if parents.is_empty() {
        return Ok(0);
    }
    let doomed: Vec<&str> = parents.keys().map(String::as_str).collect();
    tx.execute(
        "DELETE FROM agentgraph_checkpoints WHERE thread_id = $1 AND ns = $2 AND id = ANY($3)",
        &[&thread_id, &ns, &doomed],
    )
    .await
    .map_err(err)?;
    tx.execute(
            "DELETE FROM agentgraph_writes WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = ANY($3)",
            &[&thread_id, &ns, &doomed],
        )
        .await
        .map_err(err)?;
    reparent(tx, thread_id, ns, &parents).await?;
    let kept = tx
        .query(
            "SELECT versions::TEXT FROM agentgraph_checkpoints WHERE thread_id = $1 AND ns = $2",
            &[&thread_id, &ns],
        )
        .await
        .map_err(err)?;
    let mut wanted = Vec::new();
    for row in kept {
        let text: &str = row.try_get(0).map_err(err)?;
        let map: BTreeMap<String, String> = serde_json::from_str(text).map_err(err)?;
        wanted.extend(map);
    }
    let rows = tx
            .query(
                "SELECT field, version, base_version, base_len FROM agentgraph_blobs WHERE thread_id = $1 AND ns = $2",
                &[&thread_id, &ns],
            )
            .await
            .map_err(err)?;
    let mut bases: HashMap<(String, String), (String, u64)> = HashMap::new();
    let mut all = Vec::with_capacity(rows.len());
    for r in &rows {
        let key: (String, String) = (r.try_get(0).map_err(err)?, r.try_get(1).map_err(err)?);
        let base: Option<String> = r.try_get(2).map_err(err)?;
        if let Some(base) = base {
            let len: Option<i64> = r.try_get(3).map_err(err)?;
            bases.insert(key.clone(), (base, len.unwrap_or(0) as u64));
        }
        all.push(key);
    }
    let needed = needed_blobs(wanted, |f, v| bases.get(&(f.to_owned(), v.to_owned())));
    let (fields, versions): (Vec<String>, Vec<String>) =
        all.into_iter().filter(|k| !needed.contains(k)).unzip();
    if !fields.is_empty() {
        tx.execute(
                "DELETE FROM agentgraph_blobs b USING unnest($3::TEXT[], $4::TEXT[]) AS d(field, version)
                  WHERE b.thread_id = $1 AND b.ns = $2 AND b.field = d.field AND b.version = d.version",
                &[&thread_id, &ns, &fields, &versions],
            )
            .await
            .map_err(err)?;
    }
    Ok(doomed.len())
}

/// After the checkpoints of `doomed` (id -> parent) went from `ns`: the remaining ones whose
/// parent was one of them name their nearest remaining ancestor (none when all went).
async fn reparent(
    tx: &deadpool_postgres::Transaction<'_>,
    thread_id: &str,
    ns: &str,
    doomed: &HashMap<String, Option<String>>,
) -> Result<(), GraphError> {
    let ids: Vec<&str> = doomed.keys().map(String::as_str).collect();
    let children = tx
        .query(
            "SELECT id, parent_id FROM agentgraph_checkpoints
              WHERE thread_id = $1 AND ns = $2 AND parent_id = ANY($3)",
            &[&thread_id, &ns, &ids],
        )
        .await
        .map_err(err)?;
    if children.is_empty() {
        return Ok(());
    }
    let mut parents = doomed.clone();
    for row in &children {
        parents.insert(row.try_get(0).map_err(err)?, row.try_get(1).map_err(err)?);
    }
    let gone: std::collections::HashSet<&str> = ids.into_iter().collect();
    for (id, parent) in super::reparent::reparented(&parents, &gone) {
        tx.execute(
            "UPDATE agentgraph_checkpoints SET parent_id = $4
              WHERE thread_id = $1 AND ns = $2 AND id = $3",
            &[&thread_id, &ns, &id, &parent],
        )
        .await
        .map_err(err)?;
    }
    Ok(())
}

/// One namespace of a [`delete_for_runs`](Checkpointer::delete_for_runs): what its deleted
/// and remaining checkpoints name, and its stored blobs.
#[derive(Default)]
struct Space {
    doomed_ids: std::collections::HashSet<String>,
    doomed_parents: HashMap<String, Option<String>>,
    doomed_versions: Vec<(String, String)>,
    kept_versions: Vec<(String, String)>,
    /// The stored blobs' keys (field, version), and the delta bases of those that have one.
    stored: Vec<(String, String)>,
    bases: HashMap<(String, String), (String, u64)>,
}

impl Space {
    /// The stored blobs the deleted checkpoints reached (their versions' chains, and what
    /// they wrote) that no remaining checkpoint needs.
    fn unneeded(self) -> Vec<(String, String)> {
        let base_of = |f: &str, v: &str| self.bases.get(&(f.to_owned(), v.to_owned()));
        let kept = needed_blobs(self.kept_versions, base_of);
        let reached = needed_blobs(self.doomed_versions, base_of);
        self.stored
            .into_iter()
            .filter(|key| reached.contains(key) || self.doomed_ids.contains(&key.1))
            .filter(|key| !kept.contains(key))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::group::checkpoint_op;
    use super::*;

    /// The server's URL; with `CI` set and none, a failure (the Postgres tests must run in CI).
    fn url() -> Option<String> {
        match std::env::var("AGENTGRAPH_POSTGRES_URL") {
            Ok(url) if !url.is_empty() => Some(url),
            _ => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "CI is set but AGENTGRAPH_POSTGRES_URL is not"
                );
                None
            }
        }
    }

    /// The test server's URL with `sslmode=mode` added.
    fn with_mode(url: &str, mode: &str) -> String {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}sslmode={mode}")
    }

    #[tokio::test]
    async fn sslmode_disable_connects_and_tls_to_a_plaintext_server_fails_clearly() {
        let Some(url) = url() else { return };
        let saver = PostgresSaver::connect(&with_mode(&url, "disable"))
            .await
            .unwrap();
        let row = saver
            .client()
            .await
            .unwrap()
            .query_one("SHOW ssl", &[])
            .await
            .unwrap();
        let ssl: String = row.get(0);
        assert_eq!(saver.blob_bytes("nobody").await.unwrap(), 0);
        // `prefer` falls back to plaintext.
        PostgresSaver::connect(&with_mode(&url, "prefer"))
            .await
            .unwrap();
        if ssl == "on" {
            eprintln!(
                "note: the test server has TLS on; a plaintext server's refusal is not checked"
            );
            return;
        }
        for mode in ["require", "verify-ca", "verify-full"] {
            let error = PostgresSaver::connect(&with_mode(&url, mode))
                .await
                .unwrap_err()
                .to_string();
            assert!(error.contains("TLS"), "{mode}: {error}");
        }
    }

    /// A server that accepts the socket and never answers: the connection fails after twice
    /// the URL's `connect_timeout`, with a clear error.
    #[tokio::test]
    async fn a_server_that_never_answers_times_out() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = format!("postgres://u@127.0.0.1:{port}/db?connect_timeout=1&sslmode=disable");
        let started = std::time::Instant::now();
        let error = PostgresSaver::connect(&url).await.unwrap_err().to_string();
        let took = started.elapsed();
        assert!(error.contains("Timeout"), "{error}");
        assert!(took < std::time::Duration::from_secs(6), "{took:?}");
        drop(listener);
    }

    /// Batches stored at once share statements; when a shared one fails (the server refuses
    /// one batch), each batch is stored again alone: only the refused one fails, and every
    /// other is stored.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refused_batch_fails_only_its_caller() {
        let Some(url) = url() else { return };
        let saver = PostgresSaver::connect(&url).await.unwrap();
        let prefix = format!("group-{}-{}", std::process::id(), line!());
        let refused = format!("{prefix}-refused");
        saver
            .client()
            .await
            .unwrap()
            .batch_execute(
                "CREATE OR REPLACE FUNCTION agentgraph_test_refuse() RETURNS trigger AS $$
                 BEGIN
                   IF NEW.thread_id LIKE 'group-%-refused' THEN RAISE EXCEPTION 'refused'; END IF;
                   RETURN NEW;
                 END $$ LANGUAGE plpgsql;
                 CREATE OR REPLACE TRIGGER agentgraph_test_refuse BEFORE INSERT
                   ON agentgraph_checkpoints FOR EACH ROW EXECUTE FUNCTION agentgraph_test_refuse();",
            )
            .await
            .unwrap();
        let threads: Vec<String> = (0..24)
            .map(|i| {
                if i == 7 {
                    refused.clone()
                } else {
                    format!("{prefix}-{i}")
                }
            })
            .collect();
        let callers: Vec<_> = threads
            .iter()
            .map(|thread| {
                let (saver, op) = (saver.clone(), checkpoint_op(thread, 1));
                tokio::spawn(async move { saver.put_batch(vec![op]).await })
            })
            .collect();
        for (thread, caller) in threads.iter().zip(callers) {
            let result = caller.await.unwrap();
            assert_eq!(result.is_err(), *thread == refused, "{thread}: {result:?}");
            let stored = saver.get(thread, "", None).await.unwrap();
            assert_eq!(stored.record.is_some(), *thread != refused, "{thread}");
            saver.delete_thread(thread).await.unwrap();
        }
        saver
            .client()
            .await
            .unwrap()
            .batch_execute(
                "DROP TRIGGER agentgraph_test_refuse ON agentgraph_checkpoints;
                 DROP FUNCTION agentgraph_test_refuse();",
            )
            .await
            .unwrap();
    }
}
