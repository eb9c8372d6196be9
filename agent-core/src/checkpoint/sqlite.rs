//! `SqliteSaver`: checkpoints in one SQLite file — the embedded default, zero set-up.
//!
//! The file is opened in WAL mode with a busy timeout, so several threads and processes can
//! share it (`open`), or held by one process (`open_exclusive`: SQLite's `unix-excl` VFS, no
//! file locks a commit, the log's index in the process's memory). The schema is created and
//! migrated by the saver (versioned in `agentgraph_meta`). SQLite is bundled (no system
//! library). Calls take the connection in turn, waiting for it asynchronously (a waiting call
//! holds no thread); loads, small batches of writes (up to 64 KiB) and deletes of short
//! threads then run on the caller's thread unless another connection holds the write lock,
//! which saves the hand-off to a blocking thread and back (most of a small checkpoint's
//! cost); the rest, and whatever must wait for another connection, run on tokio's blocking
//! pool. Every transaction begins and ends with cached statements (`Tx`),
//! and query plans are fixed per statement (`setup`): parsing SQL again was a tenth of a short
//! `sync` step. The file is SQLite's own business: its own VFS (`unix`, or `unix-excl`), and
//! its own checkpoint of the write-ahead log, called by a thread of the saver's
//! (`sqlite_log`) rather than in the commit that fills the log (which a run would wait for).
//! Blobs are a heap of rows that checkpoints point into by row number (`sqlite_rows`), so a commit writes no index of blob keys. Batches
//! that arrive while another commits wait for the next commit and share its transaction
//! (`group`): runs storing at once pay a commit's fixed cost once between them (64 runs at
//! once with `sync`: a third of the time a step took with a transaction each, and no blocking
//! thread parked per waiting run).

// The `let x = ...; x` blocks end statement borrows before their block does (borrowck).
#![allow(clippy::let_and_return)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::OwnedMutexGuard;

use super::group::{Group, Queued};
use super::sqlite_log;
use super::sqlite_rows::{self, BlobRows, Locator};
use super::{
    CheckpointRecord, Checkpointer, FieldBlob, ListFilter, LoadedCheckpoint, PendingWrite, StoreOp,
    StoredBytes, ThreadStorage, WriteKind,
};
use crate::error::GraphError;
use crate::sqlite::{Tx, wait_when_busy};

/// 2: blobs are a heap addressed by row (`checkpoints.blob_rows`, `blobs.base_row`), without
/// the key index of version 1, which `setup` migrates.
const SCHEMA_VERSION: i64 = 2;

/// The page size of a new database file. A commit writes every page it changed to the log,
/// whole: a `Sync` checkpoint of a small state changes a leaf of the checkpoints table and
/// one of its key index, and with 4 KiB pages most of those bytes were copies of rows already
/// stored. With 2 KiB pages, one process each, median of two, µs a step: `sequential_10`
/// `sync` 12.6 -> 10.4, `react_agent_10x` `sync` 27.1 -> 23.9, `wide_state_25x300` `sync`
/// 38.3 -> 34.3; what it cost, a hundred namespaces committing at once
/// (`fanout_to_subgraph_100x`) touching more pages of the key, `sync` 20.2 -> 24.2 and
/// `async` 13.0 -> 14.1, the key of [`SCHEMA`] (id before namespace) removes. 1 KiB pages
/// were faster still for small `sync` steps and slower for `async` fan-outs
/// (`fanout_to_subgraph_10x` `async` 14.6 -> 15.3).
const PAGE_SIZE: i64 = 2048;

/// How long opening waits for a connection that holds the file alone.
const OPEN_BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// A batch of writes up to this many bytes may be stored on the caller's thread.
const INLINE_BYTES: usize = 64 * 1024;

/// A thread of at most this many checkpoints is deleted on the caller's thread (a stateless
/// run's thread has a few); a longer one on the blocking pool.
const INLINE_DELETE: i64 = 16;

/// The tables of a new file. The checkpoints' key is (thread, id, ns), not (thread, ns, id):
/// ids are time-ordered, so a commit's checkpoints go to the key's last page whatever their
/// namespaces, where keyed by namespace first the checkpoints of a hundred sibling subgraphs
/// committed together went to a hundred pages of the key, each written to the log whole
/// (`fanout_to_subgraph_100x` `sync` 22.0 -> 20.3 µs a step, `10x` 21.6 -> 20.9; the other
/// shapes, one namespace each, within their noise, 6% either way at most). A namespace's
/// checkpoints are read through the thread's, newest first (its newest is among the thread's
/// newest). A file made with the earlier key keeps it: every statement here reads either.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS agentgraph_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
    thread_id TEXT NOT NULL,
    ns TEXT NOT NULL,
    id TEXT NOT NULL,
    parent_id TEXT,
    step INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,
    metadata TEXT NOT NULL,
    versions TEXT NOT NULL,
    body BLOB NOT NULL,
    blob_rows TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (thread_id, id, ns)
);
CREATE TABLE IF NOT EXISTS blobs (
    id INTEGER PRIMARY KEY,
    thread_id TEXT NOT NULL,
    ns TEXT NOT NULL,
    field TEXT NOT NULL,
    version TEXT NOT NULL,
    base_version TEXT,
    base_len INTEGER,
    base_row INTEGER,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS writes (
    thread_id TEXT NOT NULL,
    ns TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    kind INTEGER NOT NULL,
    node TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, kind)
);
";

/// Version 1 -> 2, before [`SCHEMA`] creates the new `blobs` table: each checkpoint gets the
/// rows of its fields (found through version 1's key index), and the old table steps aside.
const MIGRATE_1_TO_2: &str = "
ALTER TABLE checkpoints ADD COLUMN blob_rows TEXT NOT NULL DEFAULT '{}';
UPDATE checkpoints SET blob_rows = (
    SELECT COALESCE(json_group_object(v.key, b.rowid), '{}')
      FROM json_each(checkpoints.versions) v
      JOIN blobs b ON b.thread_id = checkpoints.thread_id AND b.ns = checkpoints.ns
                  AND b.field = v.key AND b.version = v.value
);
ALTER TABLE blobs RENAME TO blobs_1;
";

/// Version 1 -> 2, after [`SCHEMA`]: the blobs move to the new table with their row numbers as
/// `id` (which `VACUUM` does not renumber as it may a hidden rowid), each delta with its
/// base's row.
const MIGRATED_1_TO_2: &str = "
INSERT INTO blobs (id, thread_id, ns, field, version, base_version, base_len, base_row, data)
    SELECT b.rowid, b.thread_id, b.ns, b.field, b.version, b.base_version, b.base_len,
           (SELECT p.rowid FROM blobs_1 p
             WHERE p.thread_id = b.thread_id AND p.ns = b.ns
               AND p.field = b.field AND p.version = b.base_version),
           b.data
      FROM blobs_1 b;
DROP TABLE blobs_1;
UPDATE agentgraph_meta SET value = '2' WHERE key = 'schema_version';
";

/// Checkpoints in a SQLite file.
#[derive(Clone)]
pub struct SqliteSaver {
    /// Calls take it in turn, asynchronously (a waiting call holds no thread), in the order
    /// they asked.
    conn: Arc<tokio::sync::Mutex<Db>>,
    /// Batches waiting for a commit (`put_batch`): those that arrive while one commits share
    /// the next transaction.
    group: Arc<Group<Vec<StoreOp>>>,
}

/// The connection, and this process's claim on its file (dropped after it; none in memory).
struct Db {
    conn: Connection,
    _held: Option<OpenFile>,
}

/// SQLite's own VFS for a file the process shares (`unix`) or holds (`unix-excl`).
fn sqlite_vfs(exclusive: bool) -> &'static std::ffi::CStr {
    if exclusive { c"unix-excl" } else { c"unix" }
}

/// This process's savers' claims on their files: a file open through `unix-excl` must not be
/// open through `unix` in the same process too (each would keep its own index of the log, and
/// the process's file locks do not keep its own connections apart).
static OPEN_FILES: Mutex<BTreeMap<PathBuf, (usize, bool)>> = Mutex::new(BTreeMap::new());

/// A saver's claim on its file (released when dropped).
struct OpenFile(PathBuf);

impl OpenFile {
    fn hold(path: &Path, exclusive: bool) -> Result<OpenFile, GraphError> {
        let key = path
            .canonicalize()
            .map_err(|e| err(format!("opening {}: {e}", path.display())))?;
        let mut files = OPEN_FILES.lock().unwrap_or_else(|p| p.into_inner());
        let entry = files.entry(key.clone()).or_insert((0, exclusive));
        if entry.1 != exclusive {
            return Err(err(format!(
                "{} is held by a saver of this process opened with `SqliteSaver::{}` \
                 (`open_exclusive` holds its file until it is dropped; the two cannot share it)",
                path.display(),
                if entry.1 { "open_exclusive" } else { "open" },
            )));
        }
        entry.0 += 1;
        Ok(OpenFile(key))
    }
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        let mut files = OPEN_FILES.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = files.get_mut(&self.0) {
            entry.0 -= 1;
            if entry.0 == 0 {
                files.remove(&self.0);
            }
        }
    }
}

impl std::fmt::Debug for SqliteSaver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteSaver").finish_non_exhaustive()
    }
}

pub(super) fn err(e: impl std::fmt::Display) -> GraphError {
    GraphError::Storage {
        backend: "sqlite",
        detail: e.to_string(),
    }
}

impl SqliteSaver {
    /// Opens (or creates) the database file at `path` and migrates its schema. Other savers
    /// and processes may open the same file at the same time.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, GraphError> {
        Self::open_file(path.as_ref(), false)
    }

    /// Opens the file at `path` for this process alone: until the saver (its last clone) is
    /// dropped, no other process can open the file, nor a saver of this process with
    /// [`open`](Self::open) (both get an error saying it is held); other `open_exclusive`
    /// savers of this process share it. In exchange a commit takes no file locks (six `fcntl`
    /// calls a commit with `open`) and the log's index lives in the process's memory (SQLite's
    /// `unix-excl` VFS). For a process that owns its checkpoints (a server), the fastest way
    /// to store them in a file. A plain SQLite connection of this process must not open the
    /// file meanwhile (SQLite would keep a second index of the one log).
    pub fn open_exclusive(path: impl AsRef<Path>) -> Result<Self, GraphError> {
        Self::open_file(path.as_ref(), true)
    }

    fn open_file(path: &Path, exclusive: bool) -> Result<Self, GraphError> {
        let conn = Connection::open_with_flags_and_vfs(
            path,
            rusqlite::OpenFlags::default(),
            sqlite_vfs(exclusive),
        )
        .map_err(|e| err(format!("opening {}: {e}", path.display())))?;
        // SQLite created the file on opening it, without reading it yet.
        let held = OpenFile::hold(path, exclusive)?;
        Self::setup(conn, Some(path), Some(held), exclusive)
    }

    /// A private in-memory database (for tests).
    pub fn in_memory() -> Result<Self, GraphError> {
        Self::setup(
            Connection::open_in_memory().map_err(err)?,
            None,
            None,
            false,
        )
    }

    /// `path`: the database file (`None` in memory), opened through `unix-excl` when
    /// `exclusive`.
    fn setup(
        mut conn: Connection,
        path: Option<&Path>,
        held: Option<OpenFile>,
        exclusive: bool,
    ) -> Result<Self, GraphError> {
        // Reading the file's mode waits only on a connection that holds the file alone,
        // which gives it up when its saver is dropped: a second, not thirty.
        conn.busy_timeout(OPEN_BUSY_TIMEOUT).map_err(err)?;
        // Before the first table exists (a file made by an older saver keeps its pages).
        conn.pragma_update(None, "page_size", PAGE_SIZE)
            .map_err(err)?;
        // WAL lets readers and one writer work at once across processes; in-memory
        // databases answer "memory", which is fine.
        conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
            .map_err(|e| match (&e, path) {
                (rusqlite::Error::SqliteFailure(f, _), Some(path))
                    if f.code == rusqlite::ErrorCode::DatabaseBusy =>
                {
                    err(format!(
                        "{} is held by another process (a saver opened with \
                         `SqliteSaver::open_exclusive` holds its file until it is dropped): {e}",
                        path.display()
                    ))
                }
                _ => err(e),
            })?;
        wait_when_busy(&mut conn).map_err(err)?;
        // In WAL mode, `NORMAL` makes a commit survive the process's crash (the log is written
        // before COMMIT returns; only its `fsync` waits for a checkpoint): a power loss may
        // lose the last commits, never corrupt the file.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        // A file's log is checkpointed on a thread of its own (`sqlite_log`), in memory
        // there is no log.
        if let Some(path) = path {
            sqlite_log::checkpoint_off_path(&mut conn, path, sqlite_vfs(exclusive)).map_err(err)?;
        }
        // A fixed plan per statement: without it, SQLite (built with STAT4) re-prepares a
        // cached query each time a bound value changes, which is every call here.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .map_err(err)?;
        conn.execute_batch("BEGIN IMMEDIATE;").map_err(err)?;
        let migrate = || -> Result<(), GraphError> {
            conn.execute_batch(SCHEMA).map_err(err)?;
            let version: Option<String> = conn
                .query_row(
                    "SELECT value FROM agentgraph_meta WHERE key = 'schema_version'",
                    [],
                    |r| r.get(0),
                )
                .optional()
                .map_err(err)?;
            match version.as_deref().map(str::parse::<i64>) {
                None => {
                    conn.execute(
                        "INSERT INTO agentgraph_meta (key, value) VALUES ('schema_version', ?1)",
                        params![SCHEMA_VERSION.to_string()],
                    )
                    .map_err(err)?;
                }
                Some(Ok(v)) if v == SCHEMA_VERSION => {}
                Some(Ok(1)) => {
                    conn.execute_batch(MIGRATE_1_TO_2).map_err(err)?;
                    conn.execute_batch(SCHEMA).map_err(err)?;
                    conn.execute_batch(MIGRATED_1_TO_2).map_err(err)?;
                }
                Some(Ok(v)) if v > SCHEMA_VERSION => {
                    return Err(err(format!(
                        "database schema version {v} is newer than this program's ({SCHEMA_VERSION}); upgrade agent-core"
                    )));
                }
                Some(other) => {
                    return Err(err(format!("unknown schema version {other:?}")));
                }
            }
            Ok(())
        };
        match migrate() {
            Ok(()) => conn.execute_batch("COMMIT;").map_err(err)?,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK;");
                return Err(e);
            }
        }
        Ok(SqliteSaver {
            conn: Arc::new(tokio::sync::Mutex::new(Db { conn, _held: held })),
            group: Arc::new(Group::new("sqlite")),
        })
    }

    /// The connection, once this process's other calls on it are done.
    async fn db(&self) -> OwnedMutexGuard<Db> {
        self.conn.clone().lock_owned().await
    }

    /// Runs `f` with the connection on the blocking pool (long reads and writes).
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Db) -> Result<T, GraphError> + Send + 'static,
    ) -> Result<T, GraphError> {
        on_blocking_pool(self.db().await, f).await
    }

    /// Stores queued batches in one transaction: on this thread when they are small (once the
    /// connection is free: waiting for it holds no thread), unless another connection holds
    /// the write lock; else on the blocking pool. A group that fails is stored again batch by
    /// batch (on the blocking pool), so that each caller gets its own batch's result.
    async fn commit(&self, queued: Vec<Queued<Vec<StoreOp>>>) {
        let mut db = self.db().await;
        let mut together = true;
        if queued.iter().map(|q| batch_bytes(&q.batch)).sum::<usize>() <= INLINE_BYTES {
            match store_now(&mut db, queued.iter().flat_map(|q| &q.batch)) {
                None => {}
                Some(Ok(())) => return queued.into_iter().for_each(|q| q.finish(Ok(()))),
                Some(Err(e)) if queued.len() == 1 => {
                    if let Some(q) = queued.into_iter().next() {
                        q.finish(Err(e));
                    }
                    return;
                }
                Some(Err(_)) => together = false,
            }
        }
        // A failed blocking task drops the queued batches: their callers get an error.
        let _ = on_blocking_pool(db, move |db| {
            if together
                && queued.len() > 1
                && store(db, queued.iter().flat_map(|q| &q.batch)).is_ok()
            {
                queued.into_iter().for_each(|q| q.finish(Ok(())));
                return Ok(());
            }
            for q in queued {
                let result = store(db, &q.batch);
                q.finish(result);
            }
            Ok(())
        })
        .await;
    }

    /// Bytes of blob data stored for a thread (for storage measurements).
    pub async fn blob_bytes(&self, thread_id: &str) -> Result<u64, GraphError> {
        let thread = thread_id.to_owned();
        self.with(move |db| {
            let tx = Tx::read(&db.conn).map_err(err)?;
            let rows = sqlite_rows::thread_rows(&tx, &thread, None)?;
            let rows = serde_json::to_string(&rows).map_err(err)?;
            let bytes = tx
                .query_row(
                    "SELECT COALESCE(SUM(LENGTH(b.data)), 0)
                       FROM json_each(?1) r JOIN blobs b ON b.id = r.value",
                    params![rows],
                    |r| r.get::<_, i64>(0),
                )
                .map_err(err)?;
            tx.commit().map_err(err)?;
            Ok(bytes as u64)
        })
        .await
    }
}

fn record_from_row(
    row: &rusqlite::Row<'_>,
) -> rusqlite::Result<(CheckpointRecord, String, String)> {
    Ok((
        CheckpointRecord {
            thread_id: row.get(0)?,
            ns: row.get(1)?,
            id: row.get(2)?,
            parent_id: row.get(3)?,
            step: row.get(4)?,
            created_at_ms: row.get(5)?,
            metadata: Default::default(),
            versions: Default::default(),
            body: row.get(8)?,
        },
        row.get(6)?,
        row.get(7)?,
    ))
}

fn finish_record(
    (mut record, metadata, versions): (CheckpointRecord, String, String),
) -> Result<CheckpointRecord, GraphError> {
    let corrupt = |what: &str, e: serde_json::Error| GraphError::CorruptCheckpoint {
        thread_id: record.thread_id.to_string(),
        checkpoint_id: record.id.to_string(),
        detail: format!("{what} is not valid JSON: {e}"),
    };
    let metadata = serde_json::from_str(&metadata).map_err(|e| corrupt("metadata", e))?;
    let versions = serde_json::from_str(&versions).map_err(|e| corrupt("versions", e))?;
    record.metadata = metadata;
    record.versions = versions;
    Ok(record)
}

/// About how many bytes a batch writes.
fn batch_bytes(ops: &[StoreOp]) -> usize {
    ops.iter()
        .map(|op| match op {
            StoreOp::Checkpoint { record, blobs } => {
                record.body.len() + blobs.iter().map(|b| b.data.len() + 64).sum::<usize>() + 256
            }
            StoreOp::Writes { writes, .. } => {
                writes.iter().map(|w| w.data.len() + 128).sum::<usize>()
            }
        })
        .sum()
}

/// Runs `f` with the connection on the blocking pool, the caller's hold on it moving there
/// (released when `f` is done, even if the caller stopped waiting). A panic in `f` leaves
/// nothing half-done: its transaction rolls back (`Tx`'s drop).
async fn on_blocking_pool<T: Send + 'static>(
    mut db: OwnedMutexGuard<Db>,
    f: impl FnOnce(&mut Db) -> Result<T, GraphError> + Send + 'static,
) -> Result<T, GraphError> {
    tokio::task::spawn_blocking(move || f(&mut db))
        .await
        .map_err(|e| err(format!("blocking task failed: {e}")))?
}

/// Runs `f` in a write transaction begun here, unless another connection holds the write
/// lock (`None`: the caller waits for it on the blocking pool instead of stalling this
/// thread). `f` commits, or drops the transaction to roll it back.
fn write_now<T>(
    db: &mut Db,
    f: impl FnOnce(Tx<'_>) -> Result<T, GraphError>,
) -> Option<Result<T, GraphError>> {
    if db.conn.busy_timeout(std::time::Duration::ZERO).is_err() {
        return None;
    }
    let done = match Tx::write(&db.conn) {
        Err(rusqlite::Error::SqliteFailure(e, _))
            if e.code == rusqlite::ErrorCode::DatabaseBusy =>
        {
            None
        }
        Err(e) => Some(Err(err(e))),
        Ok(tx) => Some(f(tx)),
    };
    if let Err(e) = wait_when_busy(&mut db.conn) {
        tracing::warn!(error = %e, "could not restore the SQLite busy timeout");
    }
    done
}

/// Stores `ops` in one transaction, unless another connection holds the write lock (`None`).
fn store_now<'a>(
    db: &mut Db,
    ops: impl IntoIterator<Item = &'a StoreOp>,
) -> Option<Result<(), GraphError>> {
    write_now(db, |tx| {
        store_ops(&tx, ops)?;
        tx.commit().map_err(err)
    })
}

/// Stores `ops` in one transaction, waiting for another connection's write lock.
fn store<'a>(db: &mut Db, ops: impl IntoIterator<Item = &'a StoreOp>) -> Result<(), GraphError> {
    let tx = Tx::write(&db.conn).map_err(err)?;
    store_ops(&tx, ops).and_then(|()| tx.commit().map_err(err))
}

/// Inserts every operation of a batch (inside the caller's transaction). The blob rows found
/// or written are remembered for the transaction's later checkpoints only: nothing is
/// remembered across transactions, so nothing can outlive a rollback or another writer.
fn store_ops<'a>(
    tx: &Tx<'_>,
    ops: impl IntoIterator<Item = &'a StoreOp>,
) -> Result<(), GraphError> {
    let mut rows = BlobRows::default();
    for op in ops {
        match op {
            StoreOp::Checkpoint { record, blobs } => {
                insert_checkpoint(tx, &mut rows, record, blobs)?
            }
            StoreOp::Writes {
                thread_id,
                ns,
                checkpoint_id,
                writes,
            } => insert_writes(tx, thread_id, ns, checkpoint_id, writes)?,
        }
    }
    Ok(())
}

/// Inserts a checkpoint row and its new blobs (inside the caller's transaction): the blobs
/// first, each delta with its base's row, then the checkpoint with the row of every field's
/// version (`sqlite_rows`).
fn insert_checkpoint(
    tx: &Tx<'_>,
    rows: &mut BlobRows,
    record: &CheckpointRecord,
    blobs: &[FieldBlob],
) -> Result<(), GraphError> {
    let metadata = serde_json::to_string(&record.metadata).map_err(err)?;
    let versions = serde_json::to_string(&record.versions).map_err(err)?;
    let mut locate = Locator::new(
        tx,
        rows,
        &record.thread_id,
        &record.ns,
        record.parent_id.as_deref(),
    );
    let mut insert_blob = tx
        .prepare_cached(
            "INSERT INTO blobs (thread_id, ns, field, version, base_version, base_len, base_row, data)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )
        .map_err(err)?;
    let mut extras = Vec::new();
    for blob in blobs {
        let row = match locate.existing(&blob.field, &blob.version)? {
            Some(row) => row,
            None => {
                let (base, len, base_row) = match &blob.base {
                    Some((v, n)) => (Some(&**v), Some(*n as i64), locate.row(&blob.field, v)?),
                    None => (None, None, None),
                };
                insert_blob
                    .execute(params![
                        record.thread_id,
                        record.ns,
                        blob.field,
                        blob.version,
                        base,
                        len,
                        base_row,
                        blob.data
                    ])
                    .map_err(err)?;
                let row = tx.last_insert_rowid();
                locate.inserted(&blob.field, &blob.version, row);
                row
            }
        };
        if record.versions.get(&blob.field) != Some(&*blob.version) {
            // Listed apart, so deleting the checkpoint deletes it.
            extras.push((sqlite_rows::extra_key(&blob.field, &blob.version), row));
        }
    }
    let mut located: Vec<(&str, i64)> = Vec::with_capacity(record.versions.len());
    for (field, version) in record.versions.iter() {
        if let Some(row) = locate.row(field, version)? {
            located.push((field, row));
        }
    }
    located.extend(extras.iter().map(|(key, row)| (key.as_str(), *row)));
    let blob_rows = sqlite_rows::rows_json(&located)?;
    let insert = |sql: &str| {
        tx.prepare_cached(sql)?.execute(params![
            record.thread_id,
            record.ns,
            record.id,
            record.parent_id,
            record.step,
            record.created_at_ms,
            metadata,
            versions,
            record.body,
            blob_rows
        ])
    };
    match insert(
        "INSERT INTO checkpoints (thread_id, ns, id, parent_id, step, created_at_ms, metadata, versions, body, blob_rows)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    ) {
        Ok(_) => Ok(()),
        Err(rusqlite::Error::SqliteFailure(e, _))
            if e.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            // Stored before: the new one replaces it, and the blob rows only the old one
            // needed go with it.
            let before = sqlite_rows::checkpoint_rows(tx, &record.thread_id, &record.ns, &record.id)?;
            insert(
                "INSERT OR REPLACE INTO checkpoints (thread_id, ns, id, parent_id, step, created_at_ms, metadata, versions, body, blob_rows)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )
            .map_err(err)?;
            let needed = sqlite_rows::thread_rows(tx, &record.thread_id, Some(&record.ns))?;
            delete_blobs(tx, before.into_iter().filter(|row| !needed.contains(row)))
        }
        Err(e) => Err(err(e)),
    }
}

/// Inserts pending writes (inside the caller's transaction); a write with the same task id
/// and kind replaces the earlier one.
fn insert_writes(
    tx: &Tx<'_>,
    thread: &str,
    ns: &str,
    checkpoint_id: &str,
    writes: &[PendingWrite],
) -> Result<(), GraphError> {
    let mut stmt = tx
        .prepare_cached(
            "INSERT OR REPLACE INTO writes (thread_id, ns, checkpoint_id, task_id, kind, node, data)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .map_err(err)?;
    for w in writes {
        stmt.execute(params![
            thread,
            ns,
            checkpoint_id,
            w.task_id,
            w.kind.code(),
            w.node,
            w.data
        ])
        .map_err(err)?;
    }
    Ok(())
}

/// Keeps the newest `keep_last` checkpoints of a namespace (inside the caller's transaction)
/// and deletes the rest with their writes and the blob rows no kept one reaches; the kept
/// ones whose parent goes name their nearest remaining ancestor. How many went.
fn prune_ns(tx: &Tx<'_>, thread: &str, ns: &str, keep_last: usize) -> Result<usize, GraphError> {
    // Newest first: the first `keep_last` stay.
    let stored: Vec<(String, String, String)> = {
        let mut stmt = tx
            .prepare(
                "SELECT id, versions, blob_rows FROM checkpoints
                      WHERE thread_id = ?1 AND ns = ?2 ORDER BY id DESC",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map(params![thread, ns], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .map_err(err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        rows
    };
    let doomed = stored.len().saturating_sub(keep_last);
    if doomed == 0 {
        return Ok(0);
    }
    let ids: Vec<&str> = stored[keep_last..]
        .iter()
        .map(|(id, _, _)| id.as_str())
        .collect();
    reparent(tx, thread, ns, &ids)?;
    // The blob rows the pruned checkpoints need, less those the kept ones need too.
    let (mut kept_roots, mut doomed_roots) = (Vec::new(), Vec::new());
    for (i, (id, versions, blob_rows)) in stored.iter().enumerate() {
        let versions = serde_json::from_str(versions).map_err(err)?;
        let needs = sqlite_rows::wanted(&versions, blob_rows, true)?;
        if i < keep_last {
            kept_roots.extend(needs);
            continue;
        }
        doomed_roots.extend(needs);
        tx.execute(
            "DELETE FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id = ?3",
            params![thread, ns, id],
        )
        .map_err(err)?;
        tx.execute(
            "DELETE FROM writes WHERE thread_id = ?1 AND ns = ?2 AND checkpoint_id = ?3",
            params![thread, ns, id],
        )
        .map_err(err)?;
    }
    let kept = sqlite_rows::chains(tx, thread, ns, kept_roots)?;
    let gone = sqlite_rows::chains(tx, thread, ns, doomed_roots)?;
    delete_blobs(tx, gone.into_iter().filter(|row| !kept.contains(row)))?;
    Ok(doomed)
}

/// Points the checkpoints of `ns` whose parent is in `doomed` at their nearest ancestor not
/// in it (inside the caller's transaction, before `doomed` are deleted: their parents are
/// read).
fn reparent(tx: &Tx<'_>, thread: &str, ns: &str, doomed: &[&str]) -> Result<(), GraphError> {
    let parents: HashMap<String, Option<String>> = {
        let mut stmt = tx
            .prepare_cached(
                "SELECT id, parent_id FROM checkpoints WHERE thread_id = ?1 AND ns = ?2",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map(params![thread, ns], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(err)?
            .collect::<Result<HashMap<_, _>, _>>()
            .map_err(err)?;
        rows
    };
    let doomed: HashSet<&str> = doomed.iter().copied().collect();
    let mut stmt = tx
        .prepare_cached(
            "UPDATE checkpoints SET parent_id = ?4 WHERE thread_id = ?1 AND ns = ?2 AND id = ?3",
        )
        .map_err(err)?;
    for (id, parent) in super::reparent::reparented(&parents, &doomed) {
        stmt.execute(params![thread, ns, id, parent]).map_err(err)?;
    }
    Ok(())
}

const RECORD_COLUMNS: &str =
    "thread_id, ns, id, parent_id, step, created_at_ms, metadata, versions, body";

#[async_trait::async_trait]
impl Checkpointer for SqliteSaver {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    async fn put(&self, record: &CheckpointRecord, blobs: &[FieldBlob]) -> Result<(), GraphError> {
        let ops = [StoreOp::Checkpoint {
            record: record.clone(),
            blobs: blobs.to_vec(),
        }];
        self.with(move |db| store(db, &ops)).await
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), GraphError> {
        let (thread, ns, cp) = (
            thread_id.to_owned(),
            ns.to_owned(),
            checkpoint_id.to_owned(),
        );
        let writes = writes.to_vec();
        self.with(move |db| {
            let tx = Tx::write(&db.conn).map_err(err)?;
            insert_writes(&tx, &thread, &ns, &cp, &writes)?;
            tx.commit().map_err(err)
        })
        .await
    }

    /// One transaction for the whole batch (a super-step's writes and checkpoint).
    /// Batches that arrive while another commits share the next transaction (`group`).
    async fn put_batch(&self, ops: Vec<StoreOp>) -> Result<(), GraphError> {
        self.group.submit(ops, |queued| self.commit(queued)).await
    }

    async fn get(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<LoadedCheckpoint, GraphError> {
        let (thread, ns, id) = (
            thread_id.to_owned(),
            ns.to_owned(),
            checkpoint_id.map(str::to_owned),
        );
        // A read does not wait for other processes (WAL): on this thread, once the connection
        // is free (a run's start or step: one checkpoint and its blobs).
        load(&mut self.db().await.conn, thread, ns, id)
    }

    async fn list(
        &self,
        thread_id: &str,
        ns: &str,
        filter: &ListFilter,
    ) -> Result<Vec<CheckpointRecord>, GraphError> {
        let (thread, ns, filter) = (thread_id.to_owned(), ns.to_owned(), filter.clone());
        self.with(move |db| {
            let c = &db.conn;
            let mut sql = format!(
                "SELECT {RECORD_COLUMNS} FROM checkpoints WHERE thread_id = ?1 AND ns = ?2"
            );
            let mut args: Vec<Box<dyn rusqlite::ToSql>> = vec![Box::new(thread), Box::new(ns)];
            if let Some(before) = &filter.before {
                args.push(Box::new(before.clone()));
                sql.push_str(&format!(" AND id < ?{}", args.len()));
            }
            for (key, value) in &filter.metadata {
                let _ = value;
                args.push(Box::new(format!("$.\"{}\"", key.replace('"', ""))));
                sql.push_str(&format!(
                    " AND json_type(metadata, ?{}) IS NOT NULL",
                    args.len()
                ));
            }
            sql.push_str(" ORDER BY id DESC");
            // A page read in the key's order: without a metadata filter (checked below) the
            // statement stops at the page's end; with one, the loop stops once it is full.
            if let (Some(limit), true) = (filter.limit, filter.metadata.is_empty()) {
                args.push(Box::new(limit.min(i64::MAX as usize) as i64));
                sql.push_str(&format!(" LIMIT ?{}", args.len()));
            }
            let mut stmt = c.prepare(&sql).map_err(err)?;
            let rows = stmt
                .query_map(
                    rusqlite::params_from_iter(args.iter().map(|a| a.as_ref())),
                    record_from_row,
                )
                .map_err(err)?;
            let mut out = Vec::new();
            for row in rows {
                let record = finish_record(row.map_err(err)?)?;
                // Exact JSON comparison of metadata values happens here, after SQL narrowed
                // the rows to those that have the keys.
                if !filter.matches_metadata(&record.metadata) {
                    continue;
                }
                out.push(record);
                if filter.limit.is_some_and(|l| out.len() >= l) {
                    break;
                }
            }
            Ok(out)
        })
        .await
    }

    /// Three statements in one read transaction, each through the thread's key: the blobs
    /// are the rows its checkpoints point at and their delta bases (the blobs table has no
    /// thread index; a recursive query follows `blob_rows` and `base_row`).
    async fn storage(&self, thread_id: &str) -> Result<Option<ThreadStorage>, GraphError> {
        let thread = thread_id.to_owned();
        self.with(move |db| {
            let tx = db.conn.transaction().map_err(err)?;
            let mut out = ThreadStorage::default();
            let count = |n: i64| n.max(0) as u64;
            let (n, bytes): (i64, i64) = tx
                .prepare_cached(
                    "SELECT count(*), coalesce(sum(length(body) + length(metadata)
                        + length(versions) + length(blob_rows)), 0)
                       FROM checkpoints WHERE thread_id = ?1",
                )
                .map_err(err)?
                .query_row(params![thread], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(err)?;
            out.checkpoints.add(count(n), count(bytes));
            let (n, bytes): (i64, i64) = tx
                .prepare_cached(
                    "SELECT count(*), coalesce(sum(length(data)), 0)
                       FROM writes WHERE thread_id = ?1",
                )
                .map_err(err)?
                .query_row(params![thread], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(err)?;
            out.writes.add(count(n), count(bytes));
            let mut stmt = tx
                .prepare_cached(
                    "WITH RECURSIVE reached(id) AS (
                         SELECT j.value FROM checkpoints c, json_each(c.blob_rows) j
                          WHERE c.thread_id = ?1
                         UNION
                         SELECT b.base_row FROM blobs b JOIN reached r ON b.id = r.id
                          WHERE b.base_row IS NOT NULL
                     )
                     SELECT b.field, count(*), coalesce(sum(length(b.data)), 0)
                       FROM reached r JOIN blobs b ON b.id = r.id
                      WHERE b.thread_id = ?1
                      GROUP BY b.field",
                )
                .map_err(err)?;
            let fields = stmt
                .query_map(params![thread], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                    ))
                })
                .map_err(err)?;
            for field in fields {
                let (field, n, bytes) = field.map_err(err)?;
                out.values.add(count(n), count(bytes));
                out.by_field.insert(
                    field,
                    StoredBytes {
                        count: count(n),
                        bytes: count(bytes),
                    },
                );
            }
            Ok(Some(out))
        })
        .await
    }

    /// A thread of a few checkpoints (a stateless run's) is deleted on this thread; a longer
    /// one, or one that must wait for another connection's write lock, on the blocking pool.
    async fn delete_thread(&self, thread_id: &str) -> Result<(), GraphError> {
        let thread = thread_id.to_owned();
        let mut db = self.db().await;
        let deleted = write_now(&mut db, |tx| {
            let stored: i64 = tx
                .prepare_cached(
                    "SELECT COUNT(*) FROM (SELECT 1 FROM checkpoints WHERE thread_id = ?1 LIMIT ?2)",
                )
                .map_err(err)?
                .query_row(params![thread, INLINE_DELETE + 1], |r| r.get(0))
                .map_err(err)?;
            if stored > INLINE_DELETE {
                return Ok(false);
            }
            delete_thread_rows(&tx, &thread)?;
            tx.commit().map_err(err)?;
            Ok(true)
        });
        match deleted {
            Some(Ok(true)) => Ok(()),
            Some(Err(e)) => Err(e),
            Some(Ok(false)) | None => {
                on_blocking_pool(db, move |db| {
                    let tx = Tx::write(&db.conn).map_err(err)?;
                    delete_thread_rows(&tx, &thread)?;
                    tx.commit().map_err(err)
                })
                .await
            }
        }
    }

    /// One write transaction: the runs' checkpoints found by their metadata, deleted with
    /// their writes, then, namespace by namespace, the blob rows they reached that no
    /// remaining checkpoint reaches.
    async fn delete_for_runs(
        &self,
        thread_id: &str,
        run_ids: &[&str],
    ) -> Result<usize, GraphError> {
        if run_ids.is_empty() {
            return Ok(0);
        }
        let thread = thread_id.to_owned();
        let runs = serde_json::to_string(run_ids).map_err(err)?;
        self.with(move |db| {
            let tx = Tx::write(&db.conn).map_err(err)?;
            let doomed: Vec<(String, String, String, String)> = {
                let mut stmt = tx
                    .prepare(
                        "SELECT ns, id, versions, blob_rows FROM checkpoints
                          WHERE thread_id = ?1
                            AND json_extract(metadata, '$.run_id') IN (SELECT value FROM json_each(?2))",
                    )
                    .map_err(err)?;
                let rows = stmt
                    .query_map(params![thread, runs], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                    })
                    .map_err(err)?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(err)?;
                rows
            };
            // Later checkpoints of a namespace whose parent goes (a run deleted from the
            // middle of a history) name their nearest remaining ancestor.
            let mut by_ns: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for (ns, id, _, _) in &doomed {
                by_ns.entry(ns.as_str()).or_default().push(id.as_str());
            }
            for (ns, ids) in by_ns {
                reparent(&tx, &thread, ns, &ids)?;
            }
            // The blob rows each namespace's deleted checkpoints reached.
            let mut reached: BTreeMap<&str, Vec<sqlite_rows::Wanted>> = BTreeMap::new();
            for (ns, id, versions, blob_rows) in &doomed {
                let versions = serde_json::from_str(versions).map_err(err)?;
                reached
                    .entry(ns)
                    .or_default()
                    .extend(sqlite_rows::wanted(&versions, blob_rows, true)?);
                for sql in [
                    "DELETE FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id = ?3",
                    "DELETE FROM writes WHERE thread_id = ?1 AND ns = ?2 AND checkpoint_id = ?3",
                ] {
                    tx.prepare_cached(sql)
                        .map_err(err)?
                        .execute(params![thread, ns, id])
                        .map_err(err)?;
                }
            }
            for (ns, roots) in reached {
                let kept = sqlite_rows::thread_rows(&tx, &thread, Some(ns))?;
                let gone = sqlite_rows::chains(&tx, &thread, ns, roots)?;
                delete_blobs(&tx, gone.into_iter().filter(|row| !kept.contains(row)))?;
            }
            tx.commit().map_err(err)?;
            Ok(doomed.len())
        })
        .await
    }

    async fn prune(
        &self,
        thread_id: &str,
        ns: &str,
        keep_last: usize,
    ) -> Result<usize, GraphError> {
        let (thread, ns) = (thread_id.to_owned(), ns.to_owned());
        self.with(move |db| {
            let tx = Tx::write(&db.conn).map_err(err)?;
            let doomed = prune_ns(&tx, &thread, &ns, keep_last)?;
            tx.commit().map_err(err)?;
            Ok(doomed)
        })
        .await
    }

    /// One write transaction: every namespace of the thread pruned to its newest.
    async fn keep_latest(&self, thread_id: &str) -> Result<usize, GraphError> {
        let thread = thread_id.to_owned();
        self.with(move |db| {
            let tx = Tx::write(&db.conn).map_err(err)?;
            let spaces: Vec<String> = {
                let mut stmt = tx
                    .prepare("SELECT DISTINCT ns FROM checkpoints WHERE thread_id = ?1")
                    .map_err(err)?;
                let rows = stmt
                    .query_map(params![thread], |r| r.get(0))
                    .map_err(err)?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(err)?;
                rows
            };
            let mut doomed = 0;
            for ns in &spaces {
                doomed += prune_ns(&tx, &thread, ns, 1)?;
            }
            tx.commit().map_err(err)?;
            Ok(doomed)
        })
        .await
    }

    async fn replace_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), GraphError> {
        let (thread, ns, id) = (
            thread_id.to_owned(),
            ns.to_owned(),
            checkpoint_id.to_owned(),
        );
        let writes = writes.to_vec();
        self.with(move |db| {
            let tx = Tx::write(&db.conn).map_err(err)?;
            let stored = tx
                .query_row(
                    "SELECT 1 FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id = ?3",
                    params![thread, ns, id],
                    |_| Ok(()),
                )
                .optional()
                .map_err(err)?;
            if stored.is_some() {
                tx.execute(
                    "DELETE FROM writes WHERE thread_id = ?1 AND ns = ?2 AND checkpoint_id = ?3",
                    params![thread, ns, id],
                )
                .map_err(err)?;
                insert_writes(&tx, &thread, &ns, &id, &writes)?;
            }
            tx.commit().map_err(err)?;
            Ok(())
        })
        .await
    }
}

/// Deletes a thread's checkpoints, writes and blobs (inside the caller's transaction).
fn delete_thread_rows(tx: &Tx<'_>, thread: &str) -> Result<(), GraphError> {
    let rows = sqlite_rows::thread_rows(tx, thread, None)?;
    delete_blobs(tx, rows)?;
    for table in ["checkpoints", "writes"] {
        tx.prepare_cached(&format!("DELETE FROM {table} WHERE thread_id = ?1"))
            .map_err(err)?
            .execute(params![thread])
            .map_err(err)?;
    }
    Ok(())
}

/// Deletes blob rows.
fn delete_blobs(tx: &Tx<'_>, rows: impl IntoIterator<Item = i64>) -> Result<(), GraphError> {
    let rows: Vec<i64> = rows.into_iter().collect();
    if rows.is_empty() {
        return Ok(());
    }
    let rows = serde_json::to_string(&rows).map_err(err)?;
    tx.execute(
        "DELETE FROM blobs WHERE id IN (SELECT value FROM json_each(?1))",
        params![rows],
    )
    .map_err(err)?;
    Ok(())
}

/// The checkpoint (`id`, or the latest) of a thread and namespace, with the blobs and pending
/// writes it needs; one read transaction.
fn load(
    c: &mut Connection,
    thread: String,
    ns: String,
    id: Option<String>,
) -> Result<LoadedCheckpoint, GraphError> {
    let tx = Tx::read(c).map_err(err)?;
    let with_rows = |r: &rusqlite::Row<'_>| Ok((record_from_row(r)?, r.get::<_, String>(9)?));
    let row = match &id {
        Some(id) => tx
            .prepare_cached(&format!(
                "SELECT {RECORD_COLUMNS}, blob_rows FROM checkpoints \
                 WHERE thread_id = ?1 AND ns = ?2 AND id = ?3"
            ))
            .and_then(|mut stmt| {
                stmt.query_row(params![thread, ns, id], with_rows)
                    .optional()
            }),
        None => tx
            .prepare_cached(&format!(
                "SELECT {RECORD_COLUMNS}, blob_rows FROM checkpoints \
                 WHERE thread_id = ?1 AND ns = ?2 ORDER BY id DESC LIMIT 1"
            ))
            .and_then(|mut stmt| stmt.query_row(params![thread, ns], with_rows).optional()),
    }
    .map_err(err)?;
    let Some((row, blob_rows)) = row else {
        return Ok(LoadedCheckpoint::default());
    };
    let record = finish_record(row)?;
    let blobs = {
        let wanted = sqlite_rows::wanted(&record.versions, &blob_rows, false)?;
        let rows = sqlite_rows::chains(&tx, &thread, &ns, wanted)?;
        let rows = serde_json::to_string(&rows).map_err(err)?;
        let mut stmt = tx
            .prepare_cached(
                "SELECT b.field, b.version, b.base_version, b.base_len, b.data
                   FROM json_each(?1) r JOIN blobs b ON b.id = r.value",
            )
            .map_err(err)?;
        // Every row was checked against what points at it (`chains`).
        let blobs = stmt
            .query_map(params![rows], |r| {
                let base: Option<String> = r.get(2)?;
                let len: Option<i64> = r.get(3)?;
                Ok(FieldBlob {
                    field: r.get::<_, String>(0)?.into(),
                    version: r.get::<_, String>(1)?.into(),
                    base: base.map(|b| (b.into(), len.unwrap_or(0) as u64)),
                    data: r.get(4)?,
                })
            })
            .map_err(err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        blobs
    };
    let writes = {
        let mut stmt = tx
            .prepare_cached(
                "SELECT task_id, kind, node, data FROM writes
                      WHERE thread_id = ?1 AND ns = ?2 AND checkpoint_id = ?3 ORDER BY rowid",
            )
            .map_err(err)?;
        let writes = stmt
            .query_map(params![thread, ns, record.id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Vec<u8>>(3)?,
                ))
            })
            .map_err(err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?
            .into_iter()
            .map(|(task_id, kind, node, data)| {
                let kind =
                    WriteKind::from_code(kind).ok_or_else(|| GraphError::CorruptCheckpoint {
                        thread_id: thread.clone(),
                        checkpoint_id: record.id.to_string(),
                        detail: format!("unknown pending write kind {kind}"),
                    })?;
                Ok(PendingWrite {
                    task_id,
                    node,
                    kind,
                    data,
                })
            })
            .collect::<Result<Vec<_>, GraphError>>()?;
        writes
    };
    tx.commit().map_err(err)?;
    Ok(LoadedCheckpoint {
        record: Some(record),
        blobs,
        writes,
    })
}

#[cfg(test)]
mod tests {
    use super::super::group::checkpoint_op;
    use super::*;

    /// Batches queued while the connection is busy are committed together; when that group's
    /// transaction fails (one batch is refused), each batch is stored again alone: only the
    /// refused one fails, and every other is stored. Small batches (the group tried on the
    /// caller's thread) and large ones (on the blocking pool).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_group_is_stored_batch_by_batch() {
        for bytes in [1, 8 * 1024] {
            group_with_a_refused_batch(bytes).await;
        }
    }

    async fn group_with_a_refused_batch(bytes: usize) {
        let saver = SqliteSaver::in_memory().unwrap();
        saver
            .conn
            .lock()
            .await
            .conn
            .execute_batch(
                "CREATE TRIGGER refuse BEFORE INSERT ON checkpoints WHEN NEW.thread_id = 'bad'
                 BEGIN SELECT RAISE(ABORT, 'refused'); END;",
            )
            .unwrap();
        let threads: Vec<String> = (0..12)
            .map(|i| {
                if i == 5 {
                    "bad".into()
                } else {
                    format!("t{i}")
                }
            })
            .collect();
        // The connection is busy (a thread holds it until told): the first batch waits for it,
        // holding the turn, and the others queue behind it.
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (conn, (busy, taken)) = (saver.conn.clone(), std::sync::mpsc::channel());
        let holder = std::thread::spawn(move || {
            let _db = conn.blocking_lock();
            busy.send(()).unwrap();
            released.recv().unwrap();
        });
        taken.recv().unwrap();
        let callers: Vec<_> = threads
            .iter()
            .map(|thread| {
                let (saver, op) = (saver.clone(), checkpoint_op(thread, bytes));
                tokio::spawn(async move { saver.put_batch(vec![op]).await })
            })
            .collect();
        // Waits for them to queue (however slow the machine), not for a fixed time.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while saver.group.queued() < 10 && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert!(
            saver.group.queued() >= 10,
            "the batches did not queue: {}",
            saver.group.queued()
        );
        release.send(()).unwrap();
        holder.join().unwrap();
        for (thread, caller) in threads.iter().zip(callers) {
            let result = caller.await.unwrap();
            assert_eq!(
                result.is_err(),
                thread == "bad",
                "{bytes}, {thread}: {result:?}"
            );
            let stored = saver.get(thread, "", None).await.unwrap();
            assert_eq!(
                stored.record.is_some(),
                thread != "bad",
                "{bytes}, {thread}"
            );
        }
    }
}
